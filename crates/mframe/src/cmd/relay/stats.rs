//! The relay's counters, and `--stats`: one line per route on stdout when
//! something changed in the last second, or every 10 s when nothing did.

use crate::plural::count;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::queue::Queue;

/// When nothing changes, `--stats` prints this often.
pub(super) const IDLE_STATS: Duration = Duration::from_secs(10);

/// What happened to one route's frames.
#[derive(Debug, Default)]
pub(super) struct RouteCounters {
    /// Written whole to a live connection.
    pub(super) frames: AtomicU64,
    pub(super) bytes: AtomicU64,
    /// Dropped: the queue was full.
    pub(super) full: AtomicU64,
    /// Dropped: cut by a connection that failed while it was being
    /// written.
    pub(super) lost: AtomicU64,
    /// Dropped: still queued when the flush deadline passed at shutdown.
    pub(super) shutdown: AtomicU64,
}

/// One consumer's connection.
#[derive(Debug, Default)]
pub(super) struct ConsumerCounters {
    /// Connections made after the first.
    pub(super) reconnects: AtomicU64,
    pub(super) up: AtomicBool,
    /// Why the last connection (or attempt) failed.
    pub(super) last_error: Mutex<Option<String>>,
}

impl ConsumerCounters {
    pub(super) fn failed(&self, why: &str) {
        self.up.store(false, Ordering::Relaxed);
        if let Ok(mut last) = self.last_error.lock() {
            *last = Some(why.to_owned());
        }
    }
}

/// Every counter of the relay.
#[derive(Debug)]
pub(super) struct Stats {
    pub(super) routes: Vec<RouteCounters>,
    pub(super) consumers: Vec<ConsumerCounters>,
    pub(super) unroutable: AtomicU64,
    pub(super) rejected: AtomicU64,
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// Every `interval`, when something changed (or every [`IDLE_STATS`]), one
/// line per route on stdout: the frames/s and MB/s since the last line,
/// the totals, the drops by reason, the reconnects, the queue and the
/// connection's state.
pub(super) async fn print(
    stats: Arc<Stats>,
    names: Vec<String>,
    consumer_of: Vec<usize>,
    queues: Vec<Arc<Queue>>,
) {
    let snapshot = |stats: &Stats| -> Vec<u64> {
        let mut v: Vec<u64> = stats
            .routes
            .iter()
            .flat_map(|c| [&c.frames, &c.bytes, &c.full, &c.lost, &c.shutdown].map(get))
            .collect();
        v.extend(
            stats
                .consumers
                .iter()
                .flat_map(|c| [get(&c.reconnects), u64::from(c.up.load(Ordering::Relaxed))]),
        );
        v.push(get(&stats.unroutable));
        v.push(get(&stats.rejected));
        v
    };
    let mut last = snapshot(&stats);
    let mut last_totals: Vec<(u64, u64)> = vec![(0, 0); names.len()];
    let mut then = Instant::now();
    let mut printed = Instant::now();
    let mut first = true;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tick.tick().await;
        let now_values = snapshot(&stats);
        let quiet = now_values == last && !first;
        if quiet && printed.elapsed() < IDLE_STATS {
            continue;
        }
        first = false;
        last = now_values;
        let now = Instant::now();
        let secs = now.duration_since(then).as_secs_f64().max(1e-3);
        then = now;
        printed = now;
        let mut text = String::new();
        for (i, name) in names.iter().enumerate() {
            let c = &stats.routes[i];
            let (frames, bytes) = (get(&c.frames), get(&c.bytes));
            let (f0, b0) = last_totals[i];
            last_totals[i] = (frames, bytes);
            let consumer = &stats.consumers[consumer_of[i]];
            text.push_str(&format!(
                "{name}: {:.0} frames/s, {:.2} MB/s (total {frames} frames, {bytes} bytes; dropped {} queue full, {} connection lost, {} at shutdown; {} reconnects; {} bytes queued; {})\n",
                (frames - f0) as f64 / secs,
                (bytes - b0) as f64 / secs / 1e6,
                get(&c.full),
                get(&c.lost),
                get(&c.shutdown),
                get(&consumer.reconnects),
                queues[consumer_of[i]].queued(),
                if consumer.up.load(Ordering::Relaxed) { "connected" } else { "down" },
            ));
        }
        let unroutable = get(&stats.unroutable);
        if unroutable > 0 {
            text.push_str(&format!("unroutable: {}\n", count(unroutable, "frame")));
        }
        let mut out = io::stdout().lock();
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}

//! A producer's connection: its frames, read through the shared server
//! machinery (`crate::net`: slots, idle timeout, frame size limit, buffer
//! budget, TLS), found by the scanner, looked up by target, and handed to
//! their consumers' queues in runs of consecutive frames of one route,
//! straight from the read buffer.

use crate::plural::count;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::queue::Queue;
use super::stats::Stats;
use crate::net::conn::ConnError;
use crate::net::log::Kind;
use crate::net::server::Incoming;

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dest {
    Route(usize),
    Nowhere(u32),
}

/// What the producers share: the routing table and the queues.
pub(super) struct Routing {
    /// `(target, route)`, sorted by target; few entries, searched by
    /// bisection (producers also remember their last lookup).
    pub(super) table: Vec<(u32, usize)>,
    pub(super) default: Option<usize>,
    /// Route → consumer.
    pub(super) consumer_of: Vec<usize>,
    pub(super) queues: Vec<Arc<Queue>>,
    pub(super) stats: Arc<Stats>,
    /// Targets already reported as unroutable.
    pub(super) unroutable_seen: Mutex<HashSet<u32>>,
}

impl Routing {
    fn dest(&self, target: u32) -> Dest {
        let route = match self.table.binary_search_by_key(&target, |&(t, _)| t) {
            Ok(i) => Some(self.table[i].1),
            Err(_) => self.default,
        };
        match route {
            Some(route) => Dest::Route(route),
            None => Dest::Nowhere(target),
        }
    }

    /// Hands a run of frames (`ends`: where each ends in `bytes`) to its
    /// route's consumer, or counts it as unroutable.
    async fn forward(
        &self,
        dest: Dest,
        bytes: &[u8],
        ends: &[usize],
        abort: &mut watch::Receiver<bool>,
        log: &crate::net::log::RateLog,
    ) {
        match dest {
            Dest::Route(route) => {
                self.queues[self.consumer_of[route]]
                    .offer(route, bytes, ends, abort)
                    .await;
            }
            Dest::Nowhere(target) => {
                self.stats
                    .unroutable
                    .fetch_add(ends.len() as u64, Ordering::Relaxed);
                let first = self
                    .unroutable_seen
                    .lock()
                    .map(|mut seen| seen.insert(target))
                    .unwrap_or(false);
                if first {
                    log.line(
                        Kind::Other,
                        format_args!(
                            "no route for target {target} (and no --default): its frames are counted as unroutable"
                        ),
                    );
                }
            }
        }
    }
}

/// The frames a producer forwards in one go: consecutive frames of one
/// destination, back to back in its buffer (where each ends, relative to
/// the run's start, is in the producer's `ends`).
struct Pending {
    dest: Dest,
    range: Range<usize>,
}

/// One producer's connection, until it ends, `stop` (no more reading), or
/// `abort`.
pub(super) async fn run(
    incoming: Incoming,
    routing: Arc<Routing>,
    mut stop: watch::Receiver<bool>,
    mut abort: watch::Receiver<bool>,
) {
    let peer = incoming.peer();
    let opened = tokio::select! {
        biased;
        _ = stop.wait_for(|&s| s) => None,
        conn = incoming.open() => conn,
    };
    let Some(mut conn) = opened else {
        return;
    };
    let shared = conn.shared().clone();
    let log = &shared.log;
    log.line(Kind::Connection, format_args!("producer {peer}: connected"));
    // The last lookup: a producer's frames mostly repeat a target.
    let mut last: Option<(u32, Dest)> = None;
    // Where each frame of the current run ends (kept for the connection's
    // life: no allocation per run).
    let mut ends: Vec<usize> = Vec::new();
    loop {
        let mut run: Option<Pending> = None;
        let scanned = loop {
            let framed = match conn.next_frame() {
                Ok(Some(framed)) => framed,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            let target = framed.header.target();
            let dest = match last {
                Some((t, dest)) if t == target => dest,
                _ => {
                    let dest = routing.dest(target);
                    last = Some((target, dest));
                    dest
                }
            };
            match &mut run {
                Some(p) if p.dest == dest => {
                    p.range.end = framed.range.end;
                    ends.push(p.range.len());
                }
                _ => {
                    if let Some(p) = run.take() {
                        let bytes = conn.bytes(p.range);
                        routing.forward(p.dest, bytes, &ends, &mut abort, log).await;
                    }
                    ends.clear();
                    ends.push(framed.range.len());
                    run = Some(Pending {
                        dest,
                        range: framed.range,
                    });
                }
            }
        };
        if let Some(p) = run.take() {
            let bytes = conn.bytes(p.range);
            routing.forward(p.dest, bytes, &ends, &mut abort, log).await;
        }
        if let Err(e) = scanned {
            routing.stats.rejected.fetch_add(1, Ordering::Relaxed);
            log.line(
                Kind::Peer,
                format_args!("producer {peer}: {e}; connection closed"),
            );
            return;
        }
        let read = tokio::select! {
            biased;
            _ = stop.wait_for(|&s| s) => None,
            read = conn.fill() => Some(read),
        };
        match read {
            None => {
                if conn.partial() > 0 {
                    log.line(
                        Kind::Peer,
                        format_args!(
                            "producer {peer}: stopped inside frame {}; its first {} bytes are discarded",
                            conn.frames(),
                            conn.partial()
                        ),
                    );
                }
                return;
            }
            Some(Ok(true)) => {}
            Some(Ok(false)) => return,
            Some(Err(e @ ConnError::Frame { .. })) => {
                // The stream ended inside a frame.
                log.line(
                    Kind::Peer,
                    format_args!("producer {peer}: {e}; connection closed"),
                );
                return;
            }
            Some(Err(e)) => {
                log.line(
                    Kind::Peer,
                    format_args!(
                        "producer {peer}: {e}; connection closed after {}",
                        count(conn.frames(), "frame")
                    ),
                );
                return;
            }
        }
    }
}

//! Log lines at a bounded rate. A server that thousands of peers reach (or
//! one that runs out of descriptors) would otherwise write a line per
//! event, as fast as events come: gigabytes of log and a core busy writing
//! it. Each kind of line gets at most [`PER_WINDOW`] lines per second; the
//! rest are counted, and the count is printed with the next line of that
//! kind, or at the end ([`RateLog::flush`]).

use std::fmt::Display;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::failure::status;

/// Lines of one kind printed per window.
pub(crate) const PER_WINDOW: u32 = 20;

const WINDOW: Duration = Duration::from_secs(1);

/// What a line is about; each kind has its own allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A peer connected or closed normally.
    Connection,
    /// A peer refused: too many connections.
    Refused,
    /// `accept` failed (out of descriptors, typically).
    Accept,
    /// A peer closed for what it did (bad frame, idle, too large, TLS, no
    /// memory).
    Peer,
    /// Anything else that an event may repeat (a consumer reconnecting).
    Other,
}

const KINDS: [Kind; 5] = [
    Kind::Connection,
    Kind::Refused,
    Kind::Accept,
    Kind::Peer,
    Kind::Other,
];

impl Kind {
    fn index(self) -> usize {
        KINDS.iter().position(|&k| k == self).unwrap_or(0)
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Connection => "connection",
            Kind::Refused => "refused-connection",
            Kind::Accept => "accept-error",
            Kind::Peer => "peer-error",
            Kind::Other => "repeated",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Option<Instant>,
    printed: u32,
    suppressed: u64,
    since: Option<Instant>,
}

/// Log lines on stderr (`mframe: ` first, then the prefix), at most
/// [`PER_WINDOW`] a second of each [`Kind`].
#[derive(Debug)]
pub(crate) struct RateLog {
    prefix: String,
    windows: Mutex<[Window; KINDS.len()]>,
    /// Every line suppressed so far (for reports and tests).
    total_suppressed: std::sync::atomic::AtomicU64,
}

impl RateLog {
    /// `prefix` goes before every line (e.g. `"relay: "`).
    pub(crate) fn new(prefix: &str) -> RateLog {
        RateLog {
            prefix: prefix.to_owned(),
            windows: Mutex::new(
                [Window {
                    start: None,
                    printed: 0,
                    suppressed: 0,
                    since: None,
                }; KINDS.len()],
            ),
            total_suppressed: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Prints `msg` unless this kind's allowance for the current second is
    /// spent (then counts it).
    pub(crate) fn line(&self, kind: Kind, msg: impl Display) {
        let now = Instant::now();
        let summary = {
            let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
            let w = &mut windows[kind.index()];
            let expired = w.start.is_none_or(|s| now.duration_since(s) >= WINDOW);
            let mut summary = None;
            if expired {
                if w.suppressed > 0 {
                    summary = Some((w.suppressed, w.since));
                }
                *w = Window {
                    start: Some(now),
                    printed: 0,
                    suppressed: 0,
                    since: None,
                };
            }
            if w.printed >= PER_WINDOW {
                w.suppressed += 1;
                w.since.get_or_insert(now);
                self.total_suppressed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                drop(windows);
                if let Some(s) = summary {
                    self.summary(kind, s, now);
                }
                return;
            }
            w.printed += 1;
            summary
        };
        if let Some(s) = summary {
            self.summary(kind, s, now);
        }
        status(format_args!("{}{msg}", self.prefix));
    }

    fn summary(&self, kind: Kind, (count, since): (u64, Option<Instant>), now: Instant) {
        let secs = since.map_or(0.0, |s| now.duration_since(s).as_secs_f64());
        status(format_args!(
            "{}{count} more {} lines suppressed (in {secs:.1} s; at most {PER_WINDOW} a second are printed)",
            self.prefix,
            kind.noun(),
        ));
    }

    /// Prints the counts of lines suppressed and not reported yet.
    pub(crate) fn flush(&self) {
        let now = Instant::now();
        let pending: Vec<(Kind, u64, Option<Instant>)> = {
            let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
            KINDS
                .iter()
                .zip(windows.iter_mut())
                .filter(|(_, w)| w.suppressed > 0)
                .map(|(&k, w)| {
                    let p = (k, w.suppressed, w.since);
                    w.suppressed = 0;
                    w.since = None;
                    p
                })
                .collect()
        };
        for (kind, count, since) in pending {
            self.summary(kind, (count, since), now);
        }
    }

    /// Lines suppressed since the start.
    #[cfg(test)]
    pub(crate) fn suppressed(&self) -> u64 {
        self.total_suppressed
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_prints_at_most_its_allowance_a_second() {
        let log = RateLog::new("test: ");
        for i in 0..1000 {
            log.line(Kind::Refused, format_args!("refused {i}"));
        }
        assert_eq!(log.suppressed(), 1000 - u64::from(PER_WINDOW));
        // Another kind has its own allowance.
        log.line(Kind::Peer, "a peer error");
        assert_eq!(log.suppressed(), 1000 - u64::from(PER_WINDOW));
        log.flush();
        let w = log.windows.lock().unwrap()[Kind::Refused.index()];
        assert_eq!(w.suppressed, 0, "flushed");
    }
}

//! Connection events on stderr, for `pub`, `sub`, `record` and `replay`:
//! each kind said once with its cause, then rate-limited with a count of
//! what was not printed.
//!
//! While a server is down, async-nats reports every failed attempt to
//! reconnect as a client error whose text stops at its kind ("nats: IO
//! error"): after a restart, `sub` used to print that line ten times and
//! never why. Now the first failed attempt after a disconnection is
//! followed by one line with the cause, found by connecting to the
//! servers' addresses (connection refused, timed out, no route…); later
//! attempts are counted, reminded at most every [`REMINDER`], and summed
//! up when the connection is back. Other events of one kind (slow consumer,
//! server errors) print at most once per [`REMINDER`], with how many were
//! suppressed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use messageframe_nats::ConnectionEvent;

use super::nats::Servers;
use crate::failure::status;
use crate::plural::count;

/// The most often one kind of event is printed.
pub(crate) const REMINDER: Duration = Duration::from_secs(10);

/// How long the probe that finds why reconnecting fails may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The rate-limited log of one client's connection events.
pub(crate) struct EventLog {
    servers: Servers,
    /// Since when reconnecting fails, and how many attempts failed.
    disconnected_at: Option<Instant>,
    failed_attempts: u64,
    /// When each kind of event was last printed, and how many of that kind
    /// were suppressed since.
    printed: HashMap<&'static str, (Instant, u64)>,
    /// Messages the client dropped for a subscription that did not keep up
    /// (one event per message, as async-nats reports them).
    slow_consumer: u64,
}

impl EventLog {
    pub(crate) fn new(servers: &Servers) -> EventLog {
        EventLog {
            servers: servers.clone(),
            disconnected_at: None,
            failed_attempts: 0,
            printed: HashMap::new(),
            slow_consumer: 0,
        }
    }

    /// Messages the client reported dropping (slow consumer).
    pub(crate) fn slow_consumer_drops(&self) -> u64 {
        self.slow_consumer
    }

    /// Says `event` on stderr, or counts it.
    pub(crate) fn log(&mut self, event: &ConnectionEvent) {
        match event {
            ConnectionEvent::Disconnected => {
                self.disconnected_at = Some(Instant::now());
                self.failed_attempts = 0;
                status(format_args!(
                    "nats: disconnected from {}; reconnecting",
                    self.servers
                ));
            }
            ConnectionEvent::ClientError(error) if self.disconnected_at.is_some() => {
                self.failed_attempts += 1;
                if self.failed_attempts == 1 {
                    // The cause, once: the client's own text has none.
                    let servers = self.servers.clone();
                    let error = error.clone();
                    tokio::spawn(async move {
                        let cause = probe(&servers).await;
                        status(format_args!(
                            "nats: cannot reconnect: {cause} (client: {error}); retrying with \
                             backoff up to 4 s, failed attempts counted"
                        ));
                    });
                    self.printed.insert("reconnect", (Instant::now(), 0));
                } else if self.due("reconnect") {
                    let since = self.disconnected_at.map_or(0, |t| t.elapsed().as_secs());
                    status(format_args!(
                        "nats: still reconnecting after {since} s: {} failed so far",
                        count(self.failed_attempts, "attempt")
                    ));
                }
            }
            ConnectionEvent::Reconnected => {
                let after = self.disconnected_at.take().map_or(String::new(), |t| {
                    format!(" after {:.1} s", t.elapsed().as_secs_f64())
                });
                let attempts = std::mem::take(&mut self.failed_attempts);
                self.printed.remove("reconnect");
                if attempts == 0 {
                    status(format_args!("nats: reconnected{after}"));
                } else {
                    status(format_args!(
                        "nats: reconnected{after} ({} failed before)",
                        count(attempts, "attempt")
                    ));
                }
            }
            ConnectionEvent::SlowConsumer => {
                self.slow_consumer += 1;
                if let Some(suppressed) = self.take_due("slow consumer") {
                    status(format_args!(
                        "nats: slow consumer: the client's buffer was full and it dropped a \
                         message ({} dropped so far{})",
                        self.slow_consumer,
                        suppressed_note(suppressed)
                    ));
                }
            }
            other => {
                let kind = match other {
                    ConnectionEvent::ServerError(_) => "server error",
                    ConnectionEvent::ClientError(_) => "client error",
                    ConnectionEvent::Missed(_) => "missed",
                    _ => "other",
                };
                if let Some(suppressed) = self.take_due(kind) {
                    status(format_args!("nats: {other}{}", suppressed_note(suppressed)));
                }
            }
        }
    }

    /// Whether a line of `kind` may be printed now; if not, it is counted
    /// as suppressed.
    fn due(&mut self, kind: &'static str) -> bool {
        self.take_due(kind).is_some()
    }

    /// `Some(suppressed since the last line)` if a line of `kind` may be
    /// printed now.
    fn take_due(&mut self, kind: &'static str) -> Option<u64> {
        let now = Instant::now();
        match self.printed.get_mut(kind) {
            Some((last, suppressed)) if now.duration_since(*last) < REMINDER => {
                *suppressed += 1;
                None
            }
            Some((last, suppressed)) => {
                *last = now;
                Some(std::mem::take(suppressed))
            }
            None => {
                self.printed.insert(kind, (now, 0));
                Some(0)
            }
        }
    }

    /// The lines that were not printed, for the end of a command.
    pub(crate) fn flush_suppressed(&mut self) {
        for (kind, (_, suppressed)) in &mut self.printed {
            if *suppressed > 0 && *kind != "reconnect" {
                status(format_args!(
                    "nats: {} not printed (rate limit: one per {} s)",
                    count(*suppressed, &format!("more {kind} event")),
                    REMINDER.as_secs()
                ));
                *suppressed = 0;
            }
        }
    }
}

fn suppressed_note(suppressed: u64) -> String {
    if suppressed == 0 {
        String::new()
    } else {
        format!("; {} like it not printed", count(suppressed, "line"))
    }
}

/// Why the servers cannot be reached: a TCP connection to each address,
/// bounded, and what the system said.
async fn probe(servers: &Servers) -> String {
    let mut causes = Vec::new();
    for (shown, host, port) in servers.endpoints() {
        let attempt = tokio::time::timeout(
            PROBE_TIMEOUT,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await;
        causes.push(match attempt {
            Ok(Ok(_)) => {
                format!("{shown} accepts TCP connections (the NATS handshake, TLS or login failed)")
            }
            Ok(Err(e)) => format!("{shown}: {e}"),
            Err(_) => format!(
                "{shown}: no answer within {} s (host down or unreachable)",
                PROBE_TIMEOUT.as_secs()
            ),
        });
    }
    causes.join("; ")
}

//! `mframe sub nats://HOST:PORT [--prefix P] [--target T] [--type M]
//! [--source S] [--with-data | --pretty] [--count N] [--max-pending BYTES]`:
//! prints the frames published under a prefix as they arrive, exactly as
//! `dump` prints them.
//!
//! The server filters by subject (`Filter` → `P.T.M.S` with wildcards), and
//! each frame's own header is checked against the same filters: a frame
//! published raw under a subject that its header contradicts is skipped and
//! counted, never printed as passing. Payloads go from the client into a
//! queue bounded in bytes (`--max-pending`, [`output`](super::output)), and
//! a thread of their own checks, formats and writes them to stdout: a
//! stdout that does not keep up makes the queue full, and frames beyond it
//! are dropped and counted (core NATS has no flow control), never buffered
//! without end. stdout carries only frames; connection events and
//! malformed payloads are lines on stderr, and the command goes on. Ctrl-C
//! or SIGTERM stops it (exit 0) within a second or two, with its report,
//! even when stdout is blocked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use futures_util::StreamExt;
use messageframe::Header;
use messageframe_nats::{Client, Event, Filter, RawFrame};

use super::dump::Style;
use super::events::EventLog;
use super::nats::{self, FilterArgs, Server, Servers};
use super::output::{self, Output};
use super::sink::JsonOut;
use super::stop::{Stop, GRACE};
use crate::failure::{status, Failure};
use crate::plural::count;

#[derive(Args, Debug)]
pub(crate) struct SubArgs {
    #[command(flatten)]
    server: Server,
    #[command(flatten)]
    filter: FilterArgs,
    /// Add each attachment's bytes as base64 in a "data" field.
    #[arg(long, conflicts_with = "pretty")]
    with_data: bool,
    /// Print a view for people instead of JSON.
    #[arg(long)]
    pretty: bool,
    /// Stop after N frames (exit 0).
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    #[command(flatten)]
    pending: PendingArgs,
}

/// `--max-pending`, for `sub` and `record -o`.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct PendingArgs {
    /// At most this many bytes of received frames wait for stdout (or the
    /// file); beyond, frames are dropped and counted.
    #[arg(long, value_name = "BYTES", default_value_t = output::DEFAULT_MAX_PENDING,
          value_parser = clap::value_parser!(u64).range(1..=(u32::MAX as u64)))]
    pub(crate) max_pending: u64,
}

pub(crate) fn run(args: &SubArgs) -> Result<(), Failure> {
    let rt = super::runtime()?;
    let got = Arc::new(Written::default());
    let stop = Stop::install(&rt, got.last_words("sub"));
    rt.block_on(async {
        let url = &args.server.url;
        let client =
            nats::connect_with(url, &args.server.options, &args.server.auth, "sub").await?;
        let mut out = JsonOut::new(Style::new(args.with_data, args.pretty));
        let written = got.clone();
        let limit = args.count;
        let output = Output::start(
            args.pending.max_pending,
            Box::new(move |raw: &RawFrame| {
                let Some(view) = written.check(raw, "sub") else {
                    return Ok(true);
                };
                out.write(&view)?;
                // Flushed per frame: each line is out as soon as its frame
                // arrived.
                out.flush()?;
                Ok(written.wrote(limit))
            }),
            Box::new(|| Ok(())),
        );
        let subscription = Subscribe {
            client: &client,
            url,
            command: "sub",
            filter: args.filter.filter(),
            stop: &stop,
        };
        let result = receive(subscription, output, &got).await;
        stop.finished();
        result?;
        status(format_args!("sub: stopped: {}", got.summary()));
        Ok(())
    })
}

/// What the writer side did, shared with the network side, the report and
/// the signal watcher's last words.
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub(crate) frames: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) mismatched: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) dropped_bytes: AtomicU64,
    pub(crate) slow_consumer: AtomicU64,
    /// Frames received and queued but never written (stdout blocked at the
    /// end).
    pub(crate) unwritten: AtomicU64,
    /// Queued and not yet written, kept up to date for the last words.
    pub(crate) counts: std::sync::Mutex<Option<Arc<output::Counts>>>,
}

impl Written {
    /// The frame, checked in full (as `validate`), or `None` after saying
    /// on stderr why it is skipped.
    pub(crate) fn check<'a>(
        &self,
        raw: &'a RawFrame,
        command: &str,
    ) -> Option<messageframe::FrameView<'a>> {
        match raw.view() {
            Ok(view) => Some(view),
            Err(e) => {
                self.malformed.fetch_add(1, Ordering::Relaxed);
                status(format_args!("{command}: {e} (skipped)"));
                None
            }
        }
    }

    /// One more frame written; whether to go on (`limit`: `--count`).
    pub(crate) fn wrote(&self, limit: Option<u64>) -> bool {
        let frames = self.frames.fetch_add(1, Ordering::Relaxed) + 1;
        limit.is_none_or(|n| frames < n)
    }

    /// The report's counts: "3 frames, 0 malformed payloads skipped" and
    /// what else was skipped, dropped or left unwritten.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{}{}",
            count(self.frames.load(Ordering::Relaxed), "frame"),
            self.skipped()
        )
    }

    /// The report's counts of what was not written, each starting with
    /// ", ": the malformed payloads always, the rest when there were some.
    pub(crate) fn skipped(&self) -> String {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut text = format!(
            ", {} skipped",
            count(load(&self.malformed), "malformed payload")
        );
        let mismatched = load(&self.mismatched);
        if mismatched > 0 {
            text.push_str(&format!(
                ", {} skipped whose header does not pass the filters (published under a \
                 subject their header contradicts)",
                count(mismatched, "frame")
            ));
        }
        let dropped = load(&self.dropped);
        if dropped > 0 {
            text.push_str(&format!(
                ", {} ({} bytes) dropped because the output did not keep up (--max-pending)",
                count(dropped, "frame"),
                load(&self.dropped_bytes)
            ));
        }
        let slow = load(&self.slow_consumer);
        if slow > 0 {
            text.push_str(&format!(
                ", {} dropped by the NATS client (slow consumer)",
                count(slow, "message")
            ));
        }
        let waiting = self
            .counts
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(|c| c.waiting()))
            .unwrap_or(0)
            .max(load(&self.unwritten));
        if waiting > 0 {
            text.push_str(&format!(
                ", {} received but not written (the output was blocked)",
                count(waiting, "frame")
            ));
        }
        text
    }

    /// The report the signal watcher prints if the command is stuck.
    pub(crate) fn last_words(self: &Arc<Self>, command: &'static str) -> super::stop::LastWords {
        let me = self.clone();
        Box::new(move || {
            status(format_args!(
                "{command}: stopped (the output was blocked): {}",
                me.summary()
            ));
            0
        })
    }
}

/// What [`receive`] subscribes to, for which command.
pub(crate) struct Subscribe<'a> {
    pub(crate) client: &'a Client,
    pub(crate) url: &'a Servers,
    /// The command's name, first in its status lines.
    pub(crate) command: &'static str,
    pub(crate) filter: Filter,
    pub(crate) stop: &'a Stop,
}

/// Whether `header` passes `filter` (the subject was the server's check;
/// this is the frame's own say).
pub(crate) fn passes(filter: &Filter, header: &Header) -> bool {
    filter.matches(header)
}

/// Subscribes to `filter` and queues each frame whose header passes it into
/// `output`, until Ctrl-C / SIGTERM or the output stops (`--count`, an
/// error); then waits (bounded) for the output to be written. Connection
/// events are reported on stderr, rate-limited ([`EventLog`]). Used by
/// `sub` and `record -o`.
pub(crate) async fn receive(
    subscription: Subscribe<'_>,
    output: Output<RawFrame>,
    got: &Written,
) -> Result<(), Failure> {
    let Subscribe {
        client,
        url,
        command,
        filter,
        stop,
    } = subscription;
    let subject = client.subjects().filter(&filter);
    let mut frames = client
        .subscribe(filter)
        .await
        .map_err(|e| Failure::Bad(format!("{url}: {e}")))?
        .raw();
    if let Ok(mut counts) = got.counts.lock() {
        *counts = Some(output.counts());
    }
    let mut events = EventLog::new(url);
    status(format_args!(
        "{command}: subscribed to `{subject}` on {url}"
    ));
    let mut closed = false;
    loop {
        let item = tokio::select! {
            biased;
            () = stop.wait() => break,
            () = output.done() => break,
            item = frames.next() => item,
        };
        match item {
            Some(Ok(Event::Frame(raw))) => {
                if !passes(&filter, raw.header()) {
                    if got.mismatched.fetch_add(1, Ordering::Relaxed) == 0 {
                        let h = raw.header();
                        status(format_args!(
                            "{command}: a frame on subject `{}` has target {}, type {}, source {} \
                             in its header, which the filters do not pass: skipped (later ones \
                             are counted in the report)",
                            raw.subject(),
                            h.target(),
                            h.message_type(),
                            h.source()
                        ));
                    }
                    continue;
                }
                let len = raw.payload().len();
                output.try_push(raw, len);
            }
            Some(Ok(Event::Connection(event))) => events.log(&event),
            Some(Err(e)) => {
                got.malformed.fetch_add(1, Ordering::Relaxed);
                status(format_args!("{command}: {e} (skipped)"));
            }
            // Only after a `Closed` event: the client is gone for good.
            None => {
                closed = true;
                break;
            }
        }
    }
    events.flush_suppressed();
    let counts = output.counts();
    let (written, unwritten) = output.finish(Duration::from_secs(1).min(GRACE));
    got.dropped
        .store(counts.dropped.load(Ordering::Relaxed), Ordering::Relaxed);
    got.dropped_bytes.store(
        counts.dropped_bytes.load(Ordering::Relaxed),
        Ordering::Relaxed,
    );
    got.slow_consumer
        .store(events.slow_consumer_drops(), Ordering::Relaxed);
    got.unwritten.store(unwritten, Ordering::Relaxed);
    written?;
    if closed {
        return Err(Failure::Bad(format!(
            "{url}: the connection was closed after {}",
            got.summary()
        )));
    }
    Ok(())
}

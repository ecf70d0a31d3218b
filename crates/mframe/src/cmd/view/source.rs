//! The viewer's inputs: TCP producers, a NATS subscription, a file or pipe.
//! Each valid frame goes into the [`State`]; each bad one is a line on
//! stderr and an error on the page, and the viewer goes on: a connection
//! whose byte stream cannot be framed any more is closed (others stay), a
//! framed frame that does not decode is skipped, a file whose framing
//! breaks stops being read (the page stays).
//!
//! TCP producers come and go by the thousand (one connection per frame is
//! common): their connections are summarised on stderr ([`Producers`]), a
//! line at the first change and then at most one per
//! [`SUMMARY_EVERY`], instead of a line per connection; a connection's
//! error still has a line of its own.

use crate::plural::count;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use messageframe::{Decoder, FrameView, Header};
use messageframe_nats::{Event, Filter};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::state::State;
use super::{Origin, ViewArgs};
use crate::cmd::{export, nats};
use crate::failure::{status, Failure};
use crate::input::{self, End, Input};
use crate::net::conn::ConnError;
use crate::net::log::{Kind, RateLog};
use crate::net::server::{self, Incoming, Server};

/// Where the frames go: the state, behind its lock, and the filter of
/// `--target`/`--type`/`--source`.
#[derive(Clone)]
pub(crate) struct Feed {
    state: Arc<Mutex<State>>,
    filter: Filter,
    /// Error lines on stderr, at a bounded rate (every error is counted on
    /// the page).
    log: Arc<RateLog>,
}

impl Feed {
    pub(crate) fn new(state: Arc<Mutex<State>>, filter: Filter) -> Feed {
        Feed {
            state,
            filter,
            log: Arc::new(RateLog::new("view: ")),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves counts that are
        // still counts: go on with them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn frame(&self, view: &FrameView<'_>) {
        if self.filter.matches(view.header()) {
            self.lock().ingest(view);
        }
    }

    /// An error: on stderr and on the page.
    pub(crate) fn error(&self, origin: &str, message: &str) {
        self.log
            .line(Kind::Peer, format_args!("{origin}: {message}"));
        self.lock().error(origin, message);
    }
}

/// The shortest time between two status lines about producer connections.
pub(crate) const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// The TCP producers' connections and frames, counted for the status
/// lines.
#[derive(Debug, Default)]
pub(crate) struct Producers {
    opened: AtomicU64,
    closed: AtomicU64,
    frames: AtomicU64,
    changed: Notify,
}

impl Producers {
    fn opened(&self) {
        self.opened.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_one();
    }

    fn closed(&self) {
        self.closed.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_one();
    }

    fn frame(&self) {
        self.frames.fetch_add(1, Ordering::Relaxed);
    }

    /// (connections opened, closed, frames), all so far.
    fn totals(&self) -> (u64, u64, u64) {
        (
            self.opened.load(Ordering::Relaxed),
            self.closed.load(Ordering::Relaxed),
            self.frames.load(Ordering::Relaxed),
        )
    }

    /// The last line, at the end: every connection and frame.
    fn final_line(&self) -> Option<String> {
        let (opened, _, frames) = self.totals();
        (opened > 0).then(|| {
            format!(
                "producers: {} and {} in all",
                count(opened, "connection"),
                count(frames, "frame")
            )
        })
    }
}

/// Writes a line through `line` when connections opened or closed: at once
/// for the first change, then at most one per [`SUMMARY_EVERY`], each
/// counting what happened since the one before. Nothing while nothing
/// changes.
pub(crate) async fn summarise(producers: Arc<Producers>, mut line: impl FnMut(String)) {
    let mut reported = (0, 0);
    let mut last: Option<tokio::time::Instant> = None;
    loop {
        producers.changed.notified().await;
        if let Some(last) = last {
            tokio::time::sleep_until(last + SUMMARY_EVERY).await;
        }
        let (opened, closed, frames) = producers.totals();
        if (opened, closed) == reported {
            // Changes already in the last line woke us.
            continue;
        }
        line(format!(
            "producers: +{} connected, +{} closed; {} open, {} in all",
            opened - reported.0,
            closed - reported.1,
            opened - closed,
            count(frames, "frame")
        ));
        reported = (opened, closed);
        last = Some(tokio::time::Instant::now());
    }
}

/// An input being read.
pub(crate) struct Running {
    task: JoinHandle<()>,
    producers: Option<Arc<Producers>>,
}

impl Running {
    /// Stops reading (a file's thread ends with the process) and writes the
    /// producers' last line.
    pub(crate) fn stop(self) {
        self.task.abort();
        if let Some(line) = self.producers.and_then(|p| p.final_line()) {
            status(format_args!("view: {line}"));
        }
    }
}

/// Starts reading `origin` in the background, until [`Running::stop`].
pub(crate) async fn start(
    origin: Origin,
    args: &ViewArgs,
    state: Arc<Mutex<State>>,
) -> Result<Running, Failure> {
    let feed = Feed::new(state, args.filter.filter());
    let mut producers = None;
    let task = match origin {
        Origin::Tcp(addr) => {
            let tls = args.server.tls.load()?;
            let listener = TcpListener::bind(&addr)
                .await
                .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
            let local = listener
                .local_addr()
                .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
            let server = Server::new("view: ", args.server.limits(), tls);
            status(format_args!("view: frames: listening on {local}"));
            status(format_args!("view: frames: {}", server.describe()));
            let counts = Arc::new(Producers::default());
            producers = Some(counts.clone());
            tokio::spawn(async move {
                let summary =
                    summarise(counts.clone(), |line| status(format_args!("view: {line}")));
                // Until the task is aborted, with the viewer.
                let never = std::future::pending();
                let serving = server::serve(&server, &listener, never, |incoming| {
                    let (feed, counts) = (feed.clone(), counts.clone());
                    async move {
                        counts.opened();
                        connection(incoming, feed, &counts).await;
                        counts.closed();
                    }
                });
                tokio::select! {
                    _ = serving => {}
                    () = summary => {}
                }
            })
        }
        Origin::Nats(url) => {
            let client = nats::connect(&url, &args.connection, "view").await?;
            let filter = args.filter.filter();
            let subject = client.subjects().filter(&filter);
            let frames = client
                .subscribe(filter)
                .await
                .map_err(|e| Failure::Bad(format!("{url}: {e}")))?
                .raw();
            status(format_args!("view: subscribed to `{subject}` on {url}"));
            tokio::spawn(async move {
                // The client lives as long as the subscription is read.
                let _client = client;
                subscription(frames, feed).await;
            })
        }
        Origin::File(path) => {
            let speed = args.speed;
            let input = Input::new(path);
            // Opened here, so that a missing file is an error of the
            // command, not a line on the page.
            drop(input.open()?);
            // A thread of its own, not the runtime's blocking pool: the
            // runtime's end waits for those, and a pipe may never end.
            std::thread::spawn(move || replay(&input, speed, &feed));
            tokio::spawn(async {})
        }
    };
    Ok(Running { task, producers })
}

async fn connection(incoming: Incoming, feed: Feed, producers: &Producers) {
    let peer = incoming.peer();
    let Some(mut conn) = incoming.open().await else {
        return;
    };
    let decoder = Decoder::new();
    let origin = peer.to_string();
    loop {
        loop {
            let framed = match conn.next_frame() {
                Ok(Some(framed)) => framed,
                Ok(None) => break,
                Err(e) => return feed.error(&origin, &format!("{e}; connection closed")),
            };
            producers.frame();
            match decoder.view(conn.bytes(framed.range.clone())) {
                Ok(view) => feed.frame(&view),
                Err(e) => {
                    let start = framed.offset as usize;
                    feed.error(
                        &origin,
                        &format!(
                            "frame {} (starts at byte {start}): {} (skipped)",
                            framed.index,
                            e.with_base_offset(start)
                        ),
                    );
                }
            }
        }
        match conn.fill().await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e @ ConnError::Frame { .. }) => {
                return feed.error(&origin, &format!("{e}; connection closed"))
            }
            Err(e) => {
                return feed.error(
                    &origin,
                    &format!(
                        "{e}; connection closed after {}",
                        count(conn.frames(), "frame")
                    ),
                )
            }
        }
    }
}

async fn subscription(mut frames: messageframe_nats::RawSubscription, feed: Feed) {
    while let Some(item) = frames.next().await {
        match item {
            Ok(Event::Frame(raw)) => match raw.view() {
                Ok(view) => feed.frame(&view),
                Err(e) => feed.error(raw.subject(), &format!("{e} (skipped)")),
            },
            Ok(Event::Connection(event)) => status(format_args!("nats: {event}")),
            Err(e) => feed.error("nats", &format!("{e} (skipped)")),
        }
    }
    feed.error("nats", "the connection was closed for good");
}

/// Waits between the frames of a file as their header timestamps say,
/// `speed` times faster (0: no waiting).
struct Pacer {
    speed: f64,
    start: Option<(Instant, u64)>,
}

impl Pacer {
    fn wait(&mut self, header: &Header) {
        if self.speed == 0.0 {
            return;
        }
        let stamp = header.timestamp();
        match self.start {
            None => self.start = Some((Instant::now(), stamp)),
            Some((started, first)) => {
                // A timestamp earlier than the first waits nothing.
                let header_ms = stamp.saturating_sub(first) as f64;
                let due = started + Duration::from_secs_f64(header_ms / self.speed / 1_000.0);
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
        }
    }
}

/// Reads the file (or pipe) to its end, each frame when its time has
/// come. Runs on a blocking thread.
fn replay(input: &Input, speed: f64, feed: &Feed) {
    let name = input.name();
    let decoder = Decoder::new();
    let mut pacer = Pacer { speed, start: None };
    let mut frames = 0u64;
    // An MCAP file (written by `export`) or frames back to back.
    let reader = match export::source::sniff(input) {
        Ok((true, reader)) => return replay_mcap(reader, &name, &mut pacer, feed),
        Ok((false, reader)) => reader,
        Err(Failure::Bad(m) | Failure::Usage(m)) => return feed.error(&name, &m),
        Err(Failure::BrokenPipe) => return,
    };
    let end = input::frames_from(
        input,
        reader,
        &mut (),
        |(), index, start, header, bytes| {
            pacer.wait(&header);
            match decoder.view(bytes) {
                Ok(view) => {
                    feed.frame(&view);
                    frames += 1;
                }
                Err(e) => feed.error(
                    &name,
                    &format!(
                        "frame {index} (starts at byte {start}): {} (skipped)",
                        e.with_base_offset(start)
                    ),
                ),
            }
            Ok(())
        },
        |()| Ok(()),
    );
    match end {
        Ok(End::Clean { .. }) => {}
        // The framing broke: what the decoder says about the frames from
        // there (those still whole are shown), then nothing more.
        Ok(End::Rest { index, start, rest }) => {
            let got = input::whole(&rest, &name, decoder, index, start, |_, view| {
                pacer.wait(view.header());
                feed.frame(view);
                frames += 1;
                Ok(())
            });
            let message = match got {
                Err(Failure::Bad(m) | Failure::Usage(m)) => m,
                _ => format!("{name}: frame {index} (starts at byte {start}) is cut short"),
            };
            let message = message
                .strip_prefix(&format!("{name}: "))
                .unwrap_or(&message)
                .to_owned();
            feed.error(
                &name,
                &format!("{message}; the rest of the input is not read"),
            );
        }
        Err(Failure::Bad(m) | Failure::Usage(m)) => feed.error(&name, &m),
        Err(Failure::BrokenPipe) => {}
    }
    status(format_args!(
        "view: {name}: {} replayed; the page stays up until Ctrl-C",
        count(frames, "frame")
    ));
}

/// [`replay`] of an MCAP file: its frames as far as it is whole; where it
/// stops being whole is an error on the page.
fn replay_mcap(reader: Box<dyn std::io::Read>, name: &str, pacer: &mut Pacer, feed: &Feed) {
    let decoder = Decoder::new();
    let mut reader = std::io::BufReader::with_capacity(256 << 10, reader);
    let mut index = 0u64;
    let end = export::mcap_in::read(&mut reader, |frame| {
        match decoder.view(frame.data) {
            Ok(view) => {
                pacer.wait(view.header());
                feed.frame(&view);
            }
            Err(e) => feed.error(name, &format!("frame {index}: {e} (skipped)")),
        }
        index += 1;
        Ok::<(), ()>(())
    });
    let frames = match end {
        Ok(end) => {
            if let Some(stopped) = end.stopped {
                feed.error(
                    name,
                    &format!("read up to byte {}, then stopped: {stopped}", stopped.at),
                );
            }
            end.frames
        }
        Err(export::mcap_in::ReadError::Io(e)) => {
            feed.error(name, &format!("cannot read: {e}"));
            index
        }
        Err(export::mcap_in::ReadError::Each(())) => index,
    };
    status(format_args!(
        "view: {name}: {} replayed; the page stays up until Ctrl-C",
        count(frames, "frame")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1,000 connections in two (virtual) seconds, then quiet: one line at
    /// the first, one for the rest once ten seconds have passed, then
    /// nothing.
    #[tokio::test(start_paused = true)]
    async fn connections_are_summarised_not_logged_one_by_one() {
        let producers = Arc::new(Producers::default());
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = lines.clone();
        let reporter = tokio::spawn(summarise(producers.clone(), move |line| {
            out.lock()
                .unwrap()
                .push((tokio::time::Instant::now(), line));
        }));
        let started = tokio::time::Instant::now();
        for _ in 0..1_000 {
            producers.opened();
            for _ in 0..3 {
                producers.frame();
            }
            producers.closed();
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        producers.opened(); // still open
        tokio::time::sleep(Duration::from_secs(60)).await;
        reporter.abort();
        let lines = lines.lock().unwrap().clone();
        let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            text,
            [
                // The reporter runs after the first connection's frames.
                "producers: +1 connected, +1 closed; 0 open, 3 frames in all",
                "producers: +1000 connected, +999 closed; 1 open, 3000 frames in all",
            ]
        );
        assert!(
            lines[0].0 - started < Duration::from_millis(1),
            "the first at once"
        );
        assert_eq!(lines[1].0 - lines[0].0, SUMMARY_EVERY);
        assert_eq!(
            producers.final_line().as_deref(),
            Some("producers: 1001 connections and 3000 frames in all")
        );
        assert_eq!(Producers::default().final_line(), None);
    }
}

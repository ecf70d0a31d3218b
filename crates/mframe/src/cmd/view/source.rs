//! The viewer's inputs: TCP producers, a NATS subscription, a file or pipe.
//! Each valid frame goes into the [`State`]; each bad one is a line on
//! stderr and an error on the page, and the viewer goes on: a connection
//! whose byte stream cannot be framed any more is closed (others stay), a
//! framed frame that does not decode is skipped, a file whose framing
//! breaks stops being read (the page stays).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use messageframe::{Decoder, FrameView, Header};
use messageframe_nats::{Event, Filter};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::state::State;
use super::{Origin, ViewArgs};
use crate::cmd::nats;
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

/// Starts reading `origin` in the background; what is returned stops it
/// when aborted (a file is read by a thread of its own, which ends with the
/// process).
pub(crate) async fn start(
    origin: Origin,
    args: &ViewArgs,
    state: Arc<Mutex<State>>,
) -> Result<JoinHandle<()>, Failure> {
    let feed = Feed::new(state, args.filter.filter());
    Ok(match origin {
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
            tokio::spawn(async move {
                // Until the task is aborted, with the viewer.
                let never = std::future::pending();
                server::serve(&server, &listener, never, |incoming| {
                    connection(incoming, feed.clone())
                })
                .await;
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
    })
}

async fn connection(incoming: Incoming, feed: Feed) {
    let peer = incoming.peer();
    let Some(mut conn) = incoming.open().await else {
        return;
    };
    let log = &conn.shared().clone().log;
    log.line(Kind::Connection, format_args!("{peer}: connected"));
    let decoder = Decoder::new();
    let origin = peer.to_string();
    loop {
        loop {
            let framed = match conn.next_frame() {
                Ok(Some(framed)) => framed,
                Ok(None) => break,
                Err(e) => return feed.error(&origin, &format!("{e}; connection closed")),
            };
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
                    &format!("{e}; connection closed after {} frames", conn.frames()),
                )
            }
        }
    }
    log.line(
        Kind::Connection,
        format_args!("{peer}: closed after {} frames", conn.frames()),
    );
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
    let end = input::frames(
        input,
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
        "view: {name}: {frames} frames replayed; the page stays up until Ctrl-C"
    ));
}

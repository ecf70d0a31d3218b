//! The viewer's inputs: TCP producers, a NATS subscription, a file or pipe.
//! Each valid frame goes into the [`State`]; each bad one is a line on
//! stderr and an error on the page, and the viewer goes on: a connection
//! whose byte stream cannot be framed any more is closed (others stay), a
//! framed frame that does not decode is skipped, a file whose framing
//! breaks stops being read (the page stays).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use messageframe::codec::RawFrameCodec;
use messageframe::{Decoder, FrameView, Header, StreamError};
use messageframe_nats::{Event, Filter};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

use super::state::State;
use super::{Origin, ViewArgs};
use crate::cmd::{export, nats};
use crate::failure::{status, Failure};
use crate::input::{self, End, Input};

/// Where the frames go: the state, behind its lock, and the filter of
/// `--target`/`--type`/`--source`.
#[derive(Clone)]
pub(crate) struct Feed {
    state: Arc<Mutex<State>>,
    filter: Filter,
}

impl Feed {
    pub(crate) fn new(state: Arc<Mutex<State>>, filter: Filter) -> Feed {
        Feed { state, filter }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves counts that are
        // still counts: go on with them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn frame(&self, view: &FrameView<'_>, bytes: Option<&Bytes>) {
        if self.filter.matches(view.header()) {
            self.lock().ingest(view, bytes);
        }
    }

    /// An error: on stderr and on the page.
    pub(crate) fn error(&self, origin: &str, message: &str) {
        status(format_args!("view: {origin}: {message}"));
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
            let listener = TcpListener::bind(&addr)
                .await
                .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
            let local = listener
                .local_addr()
                .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
            status(format_args!("view: frames: listening on {local}"));
            tokio::spawn(accept(listener, feed))
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

async fn accept(listener: TcpListener, feed: Feed) {
    loop {
        match listener.accept().await {
            Ok((socket, peer)) => {
                tokio::spawn(connection(socket, peer, feed.clone()));
            }
            Err(e) => {
                status(format_args!("view: cannot accept a connection: {e}"));
                // Out of descriptors, typically: do not spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn connection(socket: TcpStream, peer: SocketAddr, feed: Feed) {
    status(format_args!("view: {peer}: connected"));
    let decoder = Decoder::new();
    let mut frames = FramedRead::new(socket, RawFrameCodec::with_decoder(decoder));
    let (mut index, mut start) = (0usize, 0usize);
    let origin = peer.to_string();
    while let Some(item) = frames.next().await {
        let raw = match item {
            Ok(raw) => raw,
            Err(StreamError::Decode(e)) => {
                let e = e.with_base_offset(start);
                feed.error(
                    &origin,
                    &format!("frame {index} (starts at byte {start}): {e}; connection closed"),
                );
                return;
            }
            Err(e) => {
                feed.error(
                    &origin,
                    &format!("{e}; connection closed after {index} frames"),
                );
                return;
            }
        };
        match decoder.view(&raw.bytes) {
            Ok(view) => feed.frame(&view, Some(&raw.bytes)),
            Err(e) => feed.error(
                &origin,
                &format!(
                    "frame {index} (starts at byte {start}): {} (skipped)",
                    e.with_base_offset(start)
                ),
            ),
        }
        start += raw.bytes.len();
        index += 1;
    }
    status(format_args!("view: {peer}: closed after {index} frames"));
}

async fn subscription(mut frames: messageframe_nats::RawSubscription, feed: Feed) {
    while let Some(item) = frames.next().await {
        match item {
            Ok(Event::Frame(raw)) => match raw.view() {
                Ok(view) => feed.frame(&view, Some(raw.payload())),
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
                    feed.frame(&view, None);
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
                feed.frame(view, None);
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
                feed.frame(&view, None);
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
        "view: {name}: {frames} frames replayed; the page stays up until Ctrl-C"
    ));
}

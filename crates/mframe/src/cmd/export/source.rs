//! Where `export` gets frames: a file or pipe (of frames, or an MCAP file,
//! told apart by its first bytes), TCP producers, a NATS subscription, or
//! a JetStream replay. Each source hands frames to the writer through one
//! queue bounded in bytes ([`Queue`]); bad input is a line on stderr.
//!
//! Sources check framing only (a frame's bytes are found, its structure
//! scanned); the writer decodes each frame in full and skips one that does
//! not decode, naming where it came from ([`Whence`]).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::StreamExt;
use messageframe::{DecodeError, Decoder, Header};
use messageframe_nats::{Event, ReplayOptions};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::mcap_in::{self, ReadError, MAGIC};
use super::{note, ExportArgs};
use crate::cmd::nats;
use crate::cmd::view::Origin;
use crate::failure::Failure;
use crate::input::{self, End, Input};
use crate::net::conn::ConnError;
use crate::net::log::Kind;
use crate::net::server::{self, Incoming as Peer, Server};
use crate::plural::count;

/// Bytes of frames queued for the writer at most (a larger frame takes the
/// whole budget): producers wait beyond it, so a slow disk slows the
/// sources instead of growing memory.
const QUEUE_BYTES: usize = 64 << 20;

/// The budget's unit, so that the semaphore's count fits its `u32`.
const UNIT: usize = 1024;

/// Batches queued at most, whatever their size.
const QUEUE_BATCHES: usize = 256;

/// How long the end of a JetStream replay (deleting its consumer) may take
/// once the writer is done.
const REPLAY_CLEANUP: Duration = Duration::from_secs(5);

/// How long the server keeps the export's own consumer once nobody reads
/// through it (when mframe was killed before deleting it).
const OWN_DURABLE_IDLE: Duration = Duration::from_secs(300);

/// One frame on its way to the writer.
pub(crate) struct Incoming {
    pub(crate) bytes: Bytes,
    /// The frame's header and number of parameters once the whole frame
    /// was checked (by the source, on its own thread: the writer's thread
    /// has enough to do), or why it is not valid.
    pub(crate) checked: Result<(Header, usize), DecodeError>,
    /// When it was received, in nanoseconds since the UNIX epoch (from a
    /// JetStream stream: when the server stored it; from an MCAP file: its
    /// publish time).
    pub(crate) received_ns: u64,
    pub(crate) whence: Whence,
}

/// Frames handed to the writer together: a source sends what it has at
/// hand in one go (one wake-up of the writer, not one per frame).
pub(crate) struct Batch {
    pub(crate) frames: Vec<Incoming>,
    /// Its share of the queue's byte budget, given back when dropped.
    _permit: OwnedSemaphorePermit,
}

/// What a source gathers before it sends a batch (it sends sooner when it
/// has nothing more at hand).
const BATCH_BYTES: usize = 256 << 10;
const BATCH_FRAMES: usize = 1024;

/// Frames gathered for the next batch: their bytes in one block (one
/// allocation per batch, not per frame).
#[derive(Default)]
struct Gather {
    block: Vec<u8>,
    frames: Vec<Gathered>,
}

/// A frame gathered: where its bytes are in the block, what checking it
/// said, when it was received and where it came from.
type Gathered = (
    usize,
    usize,
    Result<(Header, usize), DecodeError>,
    u64,
    Whence,
);

impl Gather {
    fn push(&mut self, bytes: &[u8], received_ns: u64, whence: Whence) {
        let at = self.block.len();
        self.block.extend_from_slice(bytes);
        self.frames
            .push((at, bytes.len(), check(bytes), received_ns, whence));
    }

    fn full(&self) -> bool {
        self.block.len() >= BATCH_BYTES || self.frames.len() >= BATCH_FRAMES
    }

    fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The frames gathered, each a slice of one shared block.
    fn take(&mut self) -> Vec<Incoming> {
        let block = Bytes::from(std::mem::take(&mut self.block));
        self.frames
            .drain(..)
            .map(|(at, len, checked, received_ns, whence)| Incoming {
                bytes: block.slice(at..at + len),
                checked,
                received_ns,
                whence,
            })
            .collect()
    }

    /// Sends what was gathered (if anything); `false` once the writer is
    /// gone.
    fn send(&mut self, queue: &Queue, rt: &tokio::runtime::Handle) -> bool {
        if self.frames.is_empty() {
            return true;
        }
        let frames = self.take();
        rt.block_on(queue.send(frames))
    }
}

/// Where a frame came from, for error lines.
pub(crate) enum Whence {
    /// Frame `index` of a file, at byte `start` (`None` in an MCAP file).
    File { index: u64, start: Option<u64> },
    /// Frame `index` of a TCP connection, at byte `start` of its stream.
    Peer {
        peer: Arc<str>,
        index: u64,
        start: u64,
    },
    /// A NATS message on this subject.
    Subject(String),
    /// A JetStream message with this stream sequence.
    Sequence(u64),
}

impl Whence {
    /// Where, for a message about the frame; `name` is the file's.
    pub(crate) fn describe(&self, name: &str) -> String {
        match self {
            Whence::File {
                index,
                start: Some(start),
            } => format!("{name}: frame {index} (starts at byte {start})"),
            Whence::File { index, start: None } => format!("{name}: frame {index}"),
            Whence::Peer { peer, index, start } => {
                format!("{peer}: frame {index} (starts at byte {start})")
            }
            Whence::Subject(subject) => format!("subject `{subject}`"),
            Whence::Sequence(seq) => format!("stream sequence {seq}"),
        }
    }

    /// The stream offset the decoder's byte offsets are relative to.
    pub(crate) fn base(&self) -> usize {
        match self {
            Whence::File {
                start: Some(start), ..
            }
            | Whence::Peer { start, .. } => *start as usize,
            _ => 0,
        }
    }
}

/// The queue from the sources to the writer: at most [`QUEUE_BATCHES`]
/// batches and [`QUEUE_BYTES`] bytes.
#[derive(Clone)]
pub(crate) struct Queue {
    tx: mpsc::Sender<Batch>,
    budget: Arc<Semaphore>,
}

impl Queue {
    pub(crate) fn new() -> (Queue, mpsc::Receiver<Batch>) {
        let (tx, rx) = mpsc::channel(QUEUE_BATCHES);
        let budget = Arc::new(Semaphore::new(QUEUE_BYTES / UNIT));
        (Queue { tx, budget }, rx)
    }

    fn units(len: usize) -> u32 {
        (len.div_ceil(UNIT)).clamp(1, QUEUE_BYTES / UNIT) as u32
    }

    /// Queues frames, waiting for room; `false` once the writer is gone.
    pub(crate) async fn send(&self, frames: Vec<Incoming>) -> bool {
        let bytes = frames.iter().map(|f| f.bytes.len()).sum();
        let Ok(permit) = self
            .budget
            .clone()
            .acquire_many_owned(Self::units(bytes))
            .await
        else {
            return false;
        };
        let batch = Batch {
            frames,
            _permit: permit,
        };
        self.tx.send(batch).await.is_ok()
    }
}

/// Checks a whole frame (the library's default decoder); its header and
/// number of parameters.
pub(crate) fn check(bytes: &[u8]) -> Result<(Header, usize), DecodeError> {
    Decoder::new()
        .view(bytes)
        .map(|view| (*view.header(), view.len()))
}

impl Incoming {
    fn new(bytes: Bytes, received_ns: u64, whence: Whence) -> Incoming {
        Incoming {
            checked: check(&bytes),
            bytes,
            received_ns,
            whence,
        }
    }
}

/// Nanoseconds since the UNIX epoch.
pub(crate) fn now_ns() -> u64 {
    ns_since_epoch(SystemTime::now())
}

fn ns_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// How a source that ends by itself ended.
pub(crate) enum Ended {
    /// The input was read to its end (`stopped`: where it stopped being
    /// whole, already reported).
    Read {
        frames: u64,
        stopped: Option<String>,
    },
    /// The source failed (a lost connection, a stream that cannot be
    /// read): the export ends with this error once the file is finished.
    Failed(Failure),
}

/// What a source leaves when it ends by itself.
pub(crate) type Outcome = Arc<Mutex<Option<Ended>>>;

fn set(outcome: &Outcome, ended: Ended) {
    *outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(ended);
}

/// A running source.
pub(crate) struct Running {
    /// How messages name the source.
    pub(crate) name: String,
    /// The task to wait for once the writer is done (a replay's cleanup).
    pub(crate) cleanup: Option<JoinHandle<()>>,
}

impl Running {
    /// Lets a JetStream replay delete its consumer, for a few seconds at
    /// most.
    pub(crate) fn finish(self, rt: &Runtime) {
        if let Some(task) = self.cleanup {
            let _ = rt.block_on(async { tokio::time::timeout(REPLAY_CLEANUP, task).await });
        }
    }
}

/// Starts the source `origin`.
pub(crate) fn start(
    origin: Origin,
    args: &ExportArgs,
    rt: &Runtime,
    queue: Queue,
    outcome: Outcome,
) -> Result<Running, Failure> {
    match origin {
        Origin::File(path) => {
            let input = Input::new(path);
            // Opened here, so that a missing file is the command's error at
            // once.
            drop(input.open()?);
            let name = input.name();
            let handle = rt.handle().clone();
            // A thread of its own: a pipe may block in a read for ever, and
            // the runtime's end would wait for a blocking task.
            std::thread::spawn(move || {
                let ended = match read_input(&input, &queue, &handle) {
                    Ok(ended) => ended,
                    Err(Failure::BrokenPipe) => return,
                    Err(failure) => Ended::Failed(failure),
                };
                set(&outcome, ended);
            });
            Ok(Running {
                name,
                cleanup: None,
            })
        }
        Origin::Tcp(addr) => {
            let tls = args.server.tls.load()?;
            let listener = rt
                .block_on(TcpListener::bind(&addr))
                .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
            let local = listener
                .local_addr()
                .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
            note(format_args!("export: listening on {local}"));
            let server = rt.block_on(async { Server::new("export: ", args.server.limits(), tls) });
            note(format_args!("export: {}", server.describe()));
            rt.spawn(async move {
                // Until the runtime ends, with the export.
                let never = std::future::pending();
                server::serve(&server, &listener, never, |peer| {
                    connection(peer, queue.clone())
                })
                .await;
            });
            Ok(Running {
                name: local.to_string(),
                cleanup: None,
            })
        }
        Origin::Nats(url) => match &args.stream {
            None => {
                let filter = args.filter.filter();
                let (client, frames, subject) = rt.block_on(async {
                    let client = nats::connect(&url, &args.connection, "export").await?;
                    let subject = client.subjects().filter(&filter);
                    let frames = client
                        .subscribe(filter)
                        .await
                        .map_err(|e| Failure::Bad(format!("{url}: {e}")))?
                        .raw();
                    Ok::<_, Failure>((client, frames, subject))
                })?;
                note(format_args!("export: subscribed to `{subject}` on {url}"));
                let name = url.to_string();
                rt.spawn(async move {
                    // The client lives as long as the subscription is read.
                    let _client = client;
                    if let Some(ended) = subscription(frames, queue).await {
                        set(&outcome, ended);
                    }
                });
                Ok(Running {
                    name,
                    cleanup: None,
                })
            }
            Some(stream) => {
                let task = rt.block_on(replay(&url, stream, args, queue, outcome))?;
                Ok(Running {
                    name: format!("stream `{stream}` on {url}"),
                    cleanup: Some(task),
                })
            }
        },
    }
}

/// Reads a file or pipe to its end: an MCAP file if it starts with the
/// MCAP magic, otherwise frames back to back.
fn read_input(input: &Input, queue: &Queue, rt: &tokio::runtime::Handle) -> Result<Ended, Failure> {
    let (is_mcap, reader) = sniff(input)?;
    let name = input.name();
    if is_mcap {
        let size = file_size(input);
        let mut reader = BufReader::with_capacity(256 << 10, reader);
        let mut index = 0u64;
        let mut gather = Gather::default();
        let end = mcap_in::read(&mut reader, |frame| {
            gather.push(
                frame.data,
                frame.publish_time,
                Whence::File { index, start: None },
            );
            index += 1;
            if !gather.full() || gather.send(queue, rt) {
                Ok(())
            } else {
                Err(Failure::BrokenPipe)
            }
        });
        if !gather.send(queue, rt) {
            return Err(Failure::BrokenPipe);
        }
        let end = match end {
            Ok(end) => end,
            Err(ReadError::Io(e)) => return Err(input.cannot_read(&e)),
            Err(ReadError::Each(f)) => return Err(f),
        };
        let stopped = end.stopped.map(|stopped| {
            let of = size.map_or(String::new(), |size| format!(" of {size}"));
            let message = format!(
                "{name}: read up to byte {}{of}, then stopped: {}; {} frames in {} whole chunks \
                 were read before it",
                stopped.at, stopped.reason, end.frames, end.chunks
            );
            note(format_args!("export: {message}"));
            message
        });
        return Ok(Ended::Read {
            frames: end.frames,
            stopped,
        });
    }
    let mut frames = 0u64;
    let mut gather = Gather::default();
    let mut send = |gather: &mut Gather, index: usize, start: usize, bytes: &[u8]| {
        let whence = Whence::File {
            index: index as u64,
            start: Some(start as u64),
        };
        frames += 1;
        gather.push(bytes, now_ns(), whence);
        if !gather.full() || gather.send(queue, rt) {
            Ok(())
        } else {
            Err(Failure::BrokenPipe)
        }
    };
    // What was gathered goes whenever the input has nothing more at hand:
    // frames from a pipe are not held back.
    let flush = |gather: &mut Gather| {
        if gather.send(queue, rt) {
            Ok(())
        } else {
            Err(Failure::BrokenPipe)
        }
    };
    let end = input::frames_from(
        input,
        reader,
        &mut gather,
        |gather, index, start, _, bytes| send(gather, index, start, bytes),
        flush,
    )?;
    flush(&mut gather)?;
    let stopped = match end {
        End::Clean { .. } => None,
        End::Rest { index, start, rest } => {
            // The frames still whole from there are handed over; the first
            // that is not is where the reading stops, with what the decoder
            // says about it.
            let decoder = Decoder::new();
            let whole = input::whole(&rest, &name, decoder, index, start, |index, view| {
                let at = start + view_offset(&rest, view.as_bytes());
                send(&mut gather, index, at, view.as_bytes())
            });
            flush(&mut gather)?;
            let message = match whole {
                Err(Failure::Bad(m) | Failure::Usage(m)) => m,
                Err(Failure::BrokenPipe) => return Err(Failure::BrokenPipe),
                Ok(_) => format!("{name}: frame {index} (starts at byte {start}) is cut short"),
            };
            let message = format!("{message}; the rest of the input is not read");
            note(format_args!("export: {message}"));
            Some(message)
        }
    };
    Ok(Ended::Read { frames, stopped })
}

/// Where `part` (a frame borrowed from `whole`) starts in it.
fn view_offset(whole: &[u8], part: &[u8]) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

/// The input, opened, and whether it is an MCAP file (its first 8 bytes
/// are read and handed back in front of the rest).
pub(crate) fn sniff(input: &Input) -> Result<(bool, Box<dyn Read>), Failure> {
    let mut reader = input.open()?;
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(input.cannot_read(&e)),
        }
    }
    let is_mcap = &head == MAGIC;
    let reader: Box<dyn Read> = Box::new(io::Cursor::new(head[..got].to_vec()).chain(reader));
    Ok((is_mcap, reader))
}

/// The size of a regular file, for messages.
fn file_size(input: &Input) -> Option<u64> {
    let name = input.name();
    if name == "<stdin>" {
        return None;
    }
    File::open(&name)
        .and_then(|f| f.metadata())
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// Reads one producer's frames into batches for the writer: every frame
/// complete in the read buffer goes into the batch, which is sent before
/// the next read waits (or sooner when it is full).
async fn connection(incoming: Peer, queue: Queue) {
    let peer = incoming.peer();
    let Some(mut conn) = incoming.open().await else {
        return;
    };
    let shared = conn.shared().clone();
    let log = &shared.log;
    log.line(Kind::Connection, format_args!("{peer}: connected"));
    let name: Arc<str> = peer.to_string().into();
    let mut gather = Gather::default();
    let ended = loop {
        let framing = loop {
            match conn.next_frame() {
                Ok(Some(framed)) => {
                    let whence = Whence::Peer {
                        peer: name.clone(),
                        index: framed.index,
                        start: framed.offset,
                    };
                    gather.push(conn.bytes(framed.range), now_ns(), whence);
                    if gather.full() && !queue.send(gather.take()).await {
                        return;
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        // The frames before an error are received too.
        if !gather.is_empty() && !queue.send(gather.take()).await {
            return;
        }
        if let Err(e) = framing {
            break Some(e);
        }
        match conn.fill().await {
            Ok(true) => {}
            Ok(false) => break None,
            Err(e) => break Some(e),
        }
    };
    match ended {
        None => log.line(
            Kind::Connection,
            format_args!("{peer}: closed after {}", count(conn.frames(), "frame")),
        ),
        Some(e @ ConnError::Frame { .. }) => {
            log.line(Kind::Peer, format_args!("{peer}: {e}; connection closed"));
        }
        Some(e) => log.line(
            Kind::Peer,
            format_args!(
                "{peer}: {e}; connection closed after {}",
                count(conn.frames(), "frame")
            ),
        ),
    }
}

/// Reads a subscription until the writer is gone (`None`) or the
/// connection is closed for good.
async fn subscription(
    mut frames: messageframe_nats::RawSubscription,
    queue: Queue,
) -> Option<Ended> {
    let mut got = 0u64;
    while let Some(item) = frames.next().await {
        match item {
            Ok(Event::Frame(raw)) => {
                let whence = Whence::Subject(raw.subject().to_owned());
                let frame = Incoming::new(raw.payload().clone(), now_ns(), whence);
                if !queue.send(vec![frame]).await {
                    return None;
                }
                got += 1;
            }
            Ok(Event::Connection(event)) => note(format_args!("nats: {event}")),
            Err(e) => note(format_args!("export: {e} (skipped)")),
        }
    }
    Some(Ended::Failed(Failure::Bad(format!(
        "the NATS connection was closed for good after {got} frames"
    ))))
}

/// Starts replaying the JetStream stream `name` through a consumer of the
/// export's own (deleted at the end), from its first frame to its last.
async fn replay(
    url: &nats::Servers,
    name: &str,
    args: &ExportArgs,
    queue: Queue,
    outcome: Outcome,
) -> Result<JoinHandle<()>, Failure> {
    let client = nats::connect(url, &args.connection, "export").await?;
    let archive = nats::open_archive(&client, name, url).await?;
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let durable = format!("mframe-export-{}-{nanos:x}", std::process::id());
    let options = ReplayOptions::new(&durable)
        .filter(args.filter.filter())
        .inactive_threshold(OWN_DURABLE_IDLE);
    let mut replay = archive
        .replay(options)
        .await
        .map_err(|e| Failure::Bad(format!("stream `{name}`: {e}")))?;
    note(format_args!("export: replaying stream `{name}` on {url}"));
    let name = name.to_owned();
    let url = url.clone();
    Ok(tokio::spawn(async move {
        let _events = nats::print_events(&client, &url);
        let mut frames = 0u64;
        let ended = loop {
            match replay.next().await {
                None => {
                    break Some(Ended::Read {
                        frames,
                        stopped: None,
                    })
                }
                Some(Ok(recorded)) => {
                    let stored = ns_since_epoch(recorded.stored_at());
                    let whence = Whence::Sequence(recorded.sequence());
                    let frame = Incoming::new(recorded.payload().clone(), stored, whence);
                    if !queue.send(vec![frame]).await {
                        break None;
                    }
                    frames += 1;
                }
                Some(Err(e @ messageframe_nats::Error::Malformed { .. })) => {
                    note(format_args!("export: stream `{name}`: {e} (skipped)"));
                }
                Some(Err(e)) => {
                    break Some(Ended::Failed(Failure::Bad(format!("stream `{name}`: {e}"))))
                }
            }
        };
        if let Some(ended) = ended {
            set(&outcome, ended);
        }
        // The queue goes before the consumer: the writer finishes the file
        // while the consumer is deleted.
        drop(queue);
        if let Err(e) = archive.delete_replay(&durable).await {
            note(format_args!(
                "export: cannot delete the consumer `{durable}` (the server drops it after {} idle minutes): {e}",
                OWN_DURABLE_IDLE.as_secs() / 60
            ));
        }
    }))
}

//! Where `pub`, `record` and `replay` put frames: `dump`'s JSON Lines (or
//! `--pretty`) on stdout, a file of concatenated frames, or a NATS server;
//! and the playing of a file (or stdin) into one of them, at a pace.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::ValueEnum;
use messageframe::{Decoder, FrameView, Header};
use messageframe_nats::{Client, Filter, Pace};
use tokio::runtime::Runtime;

use super::confirm::Confirmer;
use super::delivery::{Delivery, FrameId};
use super::dump::Style;
use super::nats::{self, Servers};
use super::stop::Stop;
use crate::failure::{empty_input, frame_error, status, Failure};
use crate::input::{self, End, Input};
use crate::plural::count;

/// `--pace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PaceArg {
    /// With the spacing the frames had: from a file, the differences of
    /// their header timestamps (milliseconds); from JetStream, the times the
    /// server stored them.
    Original,
    /// One after the other, without waiting.
    Fast,
}

impl From<PaceArg> for Pace {
    fn from(pace: PaceArg) -> Pace {
        match pace {
            PaceArg::Original => Pace::Original,
            PaceArg::Fast => Pace::AsFastAsPossible,
        }
    }
}

/// A frame's bytes as a source holds them: shared (from NATS) or borrowed
/// (from a file's read buffer). Only a NATS destination needs them owned.
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    Shared(&'a Bytes),
    Borrowed(&'a [u8]),
}

impl Payload<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Payload::Shared(b) => b,
            Payload::Borrowed(b) => b,
        }
    }

    fn to_bytes(self) -> Bytes {
        match self {
            Payload::Shared(b) => b.clone(),
            Payload::Borrowed(b) => Bytes::copy_from_slice(b),
        }
    }
}

/// A file of concatenated frames being written (`-o FILE`, `-o -` for
/// stdout): the payloads, unchanged.
pub(crate) struct FrameFile {
    out: BufWriter<Box<dyn Write + Send>>,
    name: String,
    frames: u64,
    bytes: u64,
}

impl FrameFile {
    /// Creates (or truncates) `path`; `-` is stdout, refused when it is a
    /// terminal (exit 2), as `encode` does.
    pub(crate) fn create(path: &Path) -> Result<FrameFile, Failure> {
        let (out, name): (Box<dyn Write + Send>, String) = if path.as_os_str() == "-" {
            if io::stdout().is_terminal() {
                return Err(Failure::Usage(
                    "refusing to write binary frames to a terminal; use -o FILE or redirect stdout"
                        .to_owned(),
                ));
            }
            (Box::new(io::stdout()), "<stdout>".to_owned())
        } else {
            let file = File::create(path)
                .map_err(|e| Failure::Bad(format!("cannot write {}: {e}", path.display())))?;
            (Box::new(file), path.display().to_string())
        };
        Ok(FrameFile {
            out: BufWriter::with_capacity(64 << 10, out),
            name,
            frames: 0,
            bytes: 0,
        })
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.out.write_all(bytes).map_err(|e| self.failed(e))?;
        self.frames += 1;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<(), Failure> {
        self.out.flush().map_err(|e| self.failed(e))
    }

    fn failed(&self, e: io::Error) -> Failure {
        if self.name == "<stdout>" {
            Failure::from(e)
        } else {
            Failure::Bad(format!("cannot write {}: {e}", self.name))
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// `dump`'s output (its formatter, `Style`), written frame by frame.
pub(crate) struct JsonOut {
    out: BufWriter<io::Stdout>,
    style: Style,
    line: Vec<u8>,
    index: usize,
}

impl JsonOut {
    pub(crate) fn new(style: Style) -> JsonOut {
        JsonOut {
            out: BufWriter::new(io::stdout()),
            style,
            line: Vec::new(),
            index: 0,
        }
    }

    pub(crate) fn write(&mut self, view: &FrameView<'_>) -> Result<(), Failure> {
        self.style.format(&mut self.line, self.index, view);
        self.out.write_all(&self.line)?;
        self.index += 1;
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<(), Failure> {
        Ok(self.out.flush()?)
    }

    pub(crate) fn frames(&self) -> usize {
        self.index
    }
}

/// Frames published to a NATS server, each on the subject of its header
/// under the client's prefix: on core NATS with checkpoints
/// ([`Delivery`]), or into JetStream with acknowledgements (`pub
/// --confirm`, [`Confirmer`]).
pub(crate) struct Publisher {
    /// Dropped before the client (fields drop in order).
    _events: nats::EventPrinter,
    client: Client,
    url: Servers,
    frames: u64,
    bytes: u64,
    mode: Mode,
}

enum Mode {
    Core(Box<Delivery>),
    Confirmed(Box<Confirmer>),
}

impl Publisher {
    /// Core NATS: checkpoints say which frames the server has.
    pub(crate) async fn new(client: Client, url: Servers) -> Result<Publisher, Failure> {
        let delivery = Delivery::new(&client)
            .await
            .map_err(|e| Failure::Bad(format!("{url}: {e}")))?;
        Ok(Publisher::with(client, url, Mode::Core(Box::new(delivery))))
    }

    /// JetStream: every frame acknowledged, retried until it is or
    /// `timeout` (the default when `None`) has passed.
    pub(crate) async fn confirmed(
        client: Client,
        url: Servers,
        timeout: Option<Duration>,
    ) -> Result<Publisher, Failure> {
        let confirmer = Confirmer::new(&client, &url, timeout).await?;
        Ok(Publisher::with(
            client,
            url,
            Mode::Confirmed(Box::new(confirmer)),
        ))
    }

    fn with(client: Client, url: Servers, mode: Mode) -> Publisher {
        Publisher {
            _events: nats::print_events(&client, &url),
            client,
            url,
            frames: 0,
            bytes: 0,
            mode,
        }
    }

    /// Publishes one frame; `index` names it if it may be lost (its place
    /// in the input, or its stream sequence), `context` in an error (the
    /// library's message follows: for an oversize frame, the limit and how
    /// to raise it).
    async fn publish(
        &mut self,
        index: u64,
        payload: Payload<'_>,
        header: &Header,
        context: impl FnOnce() -> String,
    ) -> Result<(), Failure> {
        let len = payload.as_slice().len();
        let id = FrameId::new(index, header);
        match &mut self.mode {
            Mode::Core(delivery) => {
                let full = delivery.published(&self.client, id, len);
                self.client
                    .publish_bytes(payload.to_bytes())
                    .await
                    .map_err(|e| Failure::Bad(format!("{}: {e}", context())))?;
                if full {
                    delivery.checkpoint(&self.client).await;
                }
            }
            Mode::Confirmed(confirmer) => {
                let max_payload = self.client.max_payload();
                if len > max_payload {
                    let e = messageframe_nats::Error::PayloadTooLarge {
                        size: len,
                        max_payload,
                    };
                    return Err(Failure::Bad(format!("{}: {e}", context())));
                }
                let subject = self.client.subjects().subject(header).into();
                confirmer
                    .publish(id, subject, payload.to_bytes(), header)
                    .await?;
            }
        }
        self.frames += 1;
        self.bytes += len as u64;
        Ok(())
    }

    /// The input has nothing more yet: what was published goes out, and a
    /// window open long enough is checked.
    async fn idle(&mut self) -> Result<(), Failure> {
        match &mut self.mode {
            Mode::Core(delivery) => {
                if delivery.idle_due() {
                    delivery.checkpoint(&self.client).await;
                } else {
                    self.client
                        .flush()
                        .await
                        .map_err(|e| Failure::Bad(format!("{}: {e}", self.url)))?;
                }
                Ok(())
            }
            Mode::Confirmed(_) => Ok(()),
        }
    }

    /// The last checkpoint, or every acknowledgement: fails naming the
    /// frames that may be lost.
    async fn finish(&mut self) -> Result<(), Failure> {
        match &mut self.mode {
            Mode::Core(delivery) => {
                delivery.checkpoint(&self.client).await;
                if delivery.lost.is_empty() {
                    let again = delivery.reconnections(&self.client);
                    if again > 0 {
                        status(format_args!(
                            "pub: the connection broke and was re-established {} during the \
                             run; no frame was in flight then: the server confirmed every one",
                            count(again, "time")
                        ));
                    }
                    return Ok(());
                }
                let lost = &delivery.lost;
                Err(Failure::Bad(format!(
                    "{}: the connection broke or the server did not confirm in time: {} of {} \
                     published may be lost (published while the connection was down or before \
                     it broke, and not confirmed by the server): {}. Publish them again, or use \
                     --confirm with a JetStream stream",
                    self.url,
                    count(lost.frames(), "frame"),
                    self.frames,
                    lost.describe("frame", 20)
                )))
            }
            Mode::Confirmed(confirmer) => confirmer.finish().await,
        }
    }

    /// For the report: what the frames became.
    fn outcome(&self) -> String {
        match &self.mode {
            Mode::Core(_) => String::new(),
            Mode::Confirmed(c) => format!(
                ", stored in stream `{}` (acknowledged; {}, {} the server had already stored)",
                c.stream,
                count(c.retries, "retry"),
                count(c.duplicates, "duplicate")
            ),
        }
    }
}

/// Where played frames go.
pub(crate) enum Sink {
    Json(JsonOut),
    File(FrameFile),
    // Boxed: a client is large, and there is one sink per command.
    Nats(Box<Publisher>),
}

impl Sink {
    /// Hands over one valid frame (`view` is `payload`, read); `index` is
    /// its place in the input or its stream sequence.
    pub(crate) async fn put(
        &mut self,
        index: u64,
        payload: Payload<'_>,
        view: &FrameView<'_>,
        context: impl FnOnce() -> String,
    ) -> Result<(), Failure> {
        match self {
            Sink::Json(json) => json.write(view),
            Sink::File(file) => file.write(payload.as_slice()),
            Sink::Nats(publisher) => {
                publisher
                    .publish(index, payload, view.header(), context)
                    .await
            }
        }
    }

    /// Nothing more is ready: what was handed over goes out now.
    pub(crate) async fn idle(&mut self) -> Result<(), Failure> {
        match self {
            Sink::Json(json) => json.flush(),
            Sink::File(file) => file.flush(),
            Sink::Nats(publisher) => publisher.idle().await,
        }
    }

    /// The end: flushed, and for NATS confirmed by the server.
    pub(crate) async fn finish(&mut self) -> Result<(), Failure> {
        match self {
            Sink::Json(json) => json.flush(),
            Sink::File(file) => file.flush(),
            Sink::Nats(publisher) => publisher.finish().await,
        }
    }

    /// Frames handed over so far.
    pub(crate) fn frames(&self) -> u64 {
        match self {
            Sink::Json(json) => json.frames() as u64,
            Sink::File(file) => file.frames(),
            Sink::Nats(publisher) => publisher.frames,
        }
    }

    /// Where the frames went, for the report on stderr.
    pub(crate) fn describe(&self) -> String {
        match self {
            Sink::Json(_) => "stdout".to_owned(),
            Sink::File(file) => format!("{} ({} bytes)", file.name(), file.bytes()),
            Sink::Nats(publisher) => format!(
                "{} under prefix `{}` ({} bytes){}",
                publisher.url,
                publisher.client.subjects().prefix(),
                publisher.bytes,
                publisher.outcome()
            ),
        }
    }
}

/// Waits between frames of a file as their header timestamps say.
struct Pacer {
    original: bool,
    start: Option<(Instant, u64)>,
}

impl Pacer {
    fn wait(&mut self, header: &Header) {
        if !self.original {
            return;
        }
        let stamp = header.timestamp();
        match self.start {
            None => self.start = Some((Instant::now(), stamp)),
            Some((started, first)) => {
                // A timestamp earlier than the first waits nothing.
                let due = started + Duration::from_millis(stamp.saturating_sub(first));
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
        }
    }
}

/// What [`play_input`] did.
pub(crate) struct Played {
    /// Frames read from the input.
    pub(crate) read: u64,
    /// Of those, frames that passed the filter and went to the sink.
    pub(crate) played: u64,
    /// Ctrl-C or SIGTERM stopped the reading.
    pub(crate) interrupted: bool,
}

/// Plays the frames of a file (or stdin) into `sink`, each as soon as it is
/// read: validated as `validate` does (an invalid frame stops with its
/// message, after the frames before it), those passing `filter` handed over
/// at `pace`; the sink is flushed whenever the input has nothing more yet.
/// The sink is finished (for NATS: confirmed) whatever happened.
pub(crate) fn play_input(
    rt: &Runtime,
    input: &Input,
    filter: Filter,
    pace: PaceArg,
    sink: &mut Sink,
    stop: Option<(&Stop, &AtomicU64)>,
) -> Result<Played, Failure> {
    let name = input.name();
    let decoder = Decoder::new();
    let mut pacer = Pacer {
        original: pace == PaceArg::Original,
        start: None,
    };
    let mut read = 0u64;
    let interrupted = std::cell::Cell::new(false);
    let check_stop = |sink: &Sink| match stop {
        Some((stop, published)) => {
            published.store(sink.frames(), Ordering::Relaxed);
            if stop.requested() {
                interrupted.set(true);
                Err(Failure::Bad("interrupted".to_owned()))
            } else {
                Ok(())
            }
        }
        None => Ok(()),
    };
    let mut play = |sink: &mut Sink, index: usize, start: Option<usize>, view: &FrameView<'_>| {
        check_stop(sink)?;
        read += 1;
        if !filter.matches(view.header()) {
            return Ok(());
        }
        pacer.wait(view.header());
        let context = || match start {
            Some(start) => format!("{name}: frame {index} (starts at byte {start})"),
            None => format!("{name}: frame {index}"),
        };
        rt.block_on(sink.put(
            index as u64,
            Payload::Borrowed(view.as_bytes()),
            view,
            context,
        ))
    };
    let end = input::frames(
        input,
        sink,
        |sink, index, start, _, bytes| {
            let view = decoder
                .view(bytes)
                .map_err(|e| frame_error(&name, index, start, e))?;
            play(sink, index, Some(start), &view)
        },
        |sink| {
            check_stop(sink)?;
            rt.block_on(sink.idle())
        },
    );
    let end = end.and_then(|end| match end {
        End::Clean { frames: 0, .. } => Err(empty_input(&name)),
        End::Clean { .. } => Ok(()),
        End::Rest { index, start, rest } => {
            input::whole(&rest, &name, decoder, index, start, |index, view| {
                play(sink, index, None, view)
            })
            .map(drop)
        }
    });
    // The frames accepted before an error go out too.
    let finished = rt.block_on(sink.finish());
    if let Some((_, published)) = stop {
        published.store(sink.frames(), Ordering::Relaxed);
    }
    if !interrupted.get() {
        end?;
    }
    finished?;
    Ok(Played {
        read,
        played: sink.frames(),
        interrupted: interrupted.get(),
    })
}

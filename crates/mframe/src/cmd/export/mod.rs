//! `mframe export SOURCE -o OUT`: frames into a recording that other tools
//! open: MCAP (PlotJuggler, Foxglove), Parquet (DuckDB, polars, pandas),
//! JSON Lines (as `dump` prints) or a file of frames.
//!
//! SOURCE is what `mframe view` takes (a file or pipe of frames, or an MCAP
//! file written by export; ADDR to accept TCP producers on; a NATS server,
//! with `--stream NAME` a JetStream replay). A file ends by itself; a live
//! source is recorded until Ctrl-C, SIGTERM, `--count` or `--duration`,
//! and the file is then finished properly (an MCAP summary, a Parquet
//! footer).
//!
//! - [`source`]: the sources, feeding one queue bounded in bytes;
//! - the writer (here): runs on the main thread, decodes each frame, writes
//!   it and flushes at least every `--flush-interval` (an MCAP chunk is
//!   closed then: a SIGKILL loses at most the last interval);
//! - [`mcap_out`], [`parquet_out`], [`attachments`], [`mirror`]: the
//!   formats; [`mcap_in`]: reading MCAP files as far as they are whole
//!   (the recovery of a killed recording, and `view FILE.mcap`).
//!
//! docs/export.md documents the command, the files and how to open them.

pub(crate) mod attachments;
pub(crate) mod mcap_in;
pub(crate) mod mcap_out;
pub(crate) mod mirror;
pub(crate) mod parquet_out;
pub(crate) mod source;

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use futures_util::FutureExt;
use messageframe::{Decoder, FrameView};
use messageframe_nats::Filter;
use tokio::sync::mpsc::error::TryRecvError;

use super::dump::Style;
use super::nats::{self, Connection, FilterArgs};
use super::view::Origin;
use crate::failure::{empty_input, status, Failure};
use crate::net::ServerArgs;
use attachments::Attachments;
use mcap_out::McapOut;
use parquet_out::ParquetOut;
use source::{Batch, Ended, Incoming, Queue};

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// Where frames come from: a FILE of frames or an .mcap file written by
    /// export (`-`: stdin), ADDR to accept TCP producers on (e.g.
    /// 127.0.0.1:7000), or nats://HOST:PORT (subscribes under --prefix; with
    /// --stream NAME, replays that JetStream stream).
    #[arg(value_name = "SOURCE")]
    input: String,
    /// The file to write. Its extension gives the format (.mcap, .parquet,
    /// .jsonl, .mfb) unless --format does; `-` is stdout (with --format).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// The format of OUT, whatever its extension.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// With a nats:// SOURCE: replay the JetStream stream NAME (from its
    /// first frame to its last) instead of subscribing.
    #[arg(long, value_name = "NAME", value_parser = nats::parse_name)]
    stream: Option<String>,
    #[command(flatten)]
    connection: Connection,
    /// The TCP input's limits and TLS (a TCP SOURCE only).
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    filter: FilterArgs,
    /// Stop after N frames.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this long (e.g. 90s, 30m, 12h, 1.5s, 500ms; a number
    /// alone is seconds).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Make what was received whole on disk at least this often: an MCAP
    /// chunk is closed, buffered output written (a killed recorder loses at
    /// most this much).
    #[arg(long, value_name = "D", default_value = "1s", value_parser = parse_duration)]
    flush_interval: Duration,
    /// MCAP: close a chunk once it holds this many bytes (uncompressed);
    /// smaller chunks are recovered more finely from a damaged file, larger
    /// ones compress better.
    #[arg(long, value_name = "BYTES", default_value_t = mcap_out::DEFAULT_CHUNK_SIZE,
          value_parser = clap::value_parser!(u64).range(1024..=1 << 30))]
    chunk_size: u64,
    /// MCAP: add, per channel, a JSON channel of the same frames as
    /// {"header": {...}, "<device>": {"<param>": value}} objects, which
    /// Foxglove and PlotJuggler plot.
    #[arg(long, value_enum, value_name = "FORMAT")]
    mirror: Option<MirrorFormat>,
    /// Parquet: rows per row group (memory holds one row group's pages).
    #[arg(long, value_name = "N", default_value_t = parquet_out::DEFAULT_ROW_GROUP_ROWS,
          value_parser = parse_rows)]
    row_group_rows: usize,
    /// Also write every attachment as a file in DIR, named
    /// <source>-<counter>-<name>, with an index, DIR/index.parquet.
    #[arg(long, value_name = "DIR")]
    attachments: Option<PathBuf>,
    /// JSON Lines: add each attachment's bytes as base64 (as dump --with-data).
    #[arg(long)]
    with_data: bool,
}

/// The formats `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// MCAP: a message per frame, its bytes unchanged.
    Mcap,
    /// Parquet: the long table, one row per parameter.
    Parquet,
    /// JSON Lines, as `mframe dump` prints them.
    Jsonl,
    /// Frames back to back, unchanged.
    Mfb,
}

impl Format {
    fn from_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "mcap" => Format::Mcap,
            "parquet" => Format::Parquet,
            "jsonl" => Format::Jsonl,
            "mfb" => Format::Mfb,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Format::Mcap => "mcap",
            Format::Parquet => "parquet",
            Format::Jsonl => "jsonl",
            Format::Mfb => "mfb",
        }
    }

    fn is_binary(self) -> bool {
        self != Format::Jsonl
    }
}

/// `--mirror`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MirrorFormat {
    /// Schemaful JSON (a JSON Schema of the channel's first frame).
    Json,
}

/// `--duration`, `--flush-interval`: a number with an optional unit (`ms`,
/// `s`, `m`, `h`; none: seconds), more than 0 and at most 366 days.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a duration such as 500ms, 1.5s, 30m or 12h");
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 366.0 * 86_400.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `--row-group-rows`: 1,024 to 2^30.
fn parse_rows(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1024..=1 << 30).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}` is not a number of rows from 1024 to 1073741824"
        )),
    }
}

/// Whether the progress line is on the terminal (and must be cleared
/// before another line is printed).
static PROGRESS_SHOWN: AtomicBool = AtomicBool::new(false);

/// A status line on stderr, clearing the progress line first if it is
/// shown (the next tick draws it again).
pub(crate) fn note(msg: impl std::fmt::Display) {
    if PROGRESS_SHOWN.swap(false, Ordering::Relaxed) {
        let _ = write!(io::stderr(), "\r\x1b[K");
    }
    status(msg);
}

/// Where the frames go.
enum Out {
    Mcap(McapOut<BufWriter<File>>),
    McapPipe(McapOut<mcap::write::NoSeek<BufWriter<io::Stdout>>>),
    Parquet(ParquetOut<BufWriter<Box<dyn Write + Send>>>),
    Jsonl {
        out: BufWriter<Box<dyn Write + Send>>,
        style: Style,
        line: Vec<u8>,
        index: usize,
    },
    Mfb(BufWriter<Box<dyn Write + Send>>),
}

/// Buffered output, as large as a chunk of input.
const BUFFER: usize = 256 << 10;

impl Out {
    fn create(path: &Path, format: Format, args: &ExportArgs) -> Result<Out, Failure> {
        let name = path.display();
        let failed = |e: String| Failure::Bad(format!("cannot write {name}: {e}"));
        let stdout = path.as_os_str() == "-";
        if stdout && format.is_binary() && io::stdout().is_terminal() {
            return Err(Failure::Usage(format!(
                "refusing to write {} to a terminal; use -o FILE or redirect stdout",
                format.name()
            )));
        }
        let writer = || -> Result<BufWriter<Box<dyn Write + Send>>, Failure> {
            let w: Box<dyn Write + Send> = if stdout {
                Box::new(io::stdout())
            } else {
                Box::new(File::create(path).map_err(|e| failed(e.to_string()))?)
            };
            Ok(BufWriter::with_capacity(BUFFER, w))
        };
        Ok(match format {
            Format::Mcap if stdout => {
                let out = mcap::write::NoSeek::new(BufWriter::with_capacity(BUFFER, io::stdout()));
                let mirror = args.mirror.is_some();
                Out::McapPipe(McapOut::new(out, false, mirror, args.chunk_size).map_err(failed)?)
            }
            Format::Mcap => {
                let file = File::create(path).map_err(|e| failed(e.to_string()))?;
                let out = BufWriter::with_capacity(BUFFER, file);
                let mirror = args.mirror.is_some();
                Out::Mcap(McapOut::new(out, true, mirror, args.chunk_size).map_err(failed)?)
            }
            Format::Parquet => {
                Out::Parquet(ParquetOut::new(writer()?, args.row_group_rows).map_err(failed)?)
            }
            Format::Jsonl => Out::Jsonl {
                out: writer()?,
                style: Style::new(args.with_data, false),
                line: Vec::new(),
                index: 0,
            },
            Format::Mfb => Out::Mfb(writer()?),
        })
    }

    /// Whether [`write`](Self::write) needs the frame read, not only its
    /// header.
    fn needs_view(&self) -> bool {
        match self {
            Out::Mcap(m) => m.needs_view(),
            Out::McapPipe(m) => m.needs_view(),
            Out::Parquet(_) | Out::Jsonl { .. } => true,
            Out::Mfb(_) => false,
        }
    }

    /// Writes one valid frame: its header, its bytes, and the frame read
    /// when [`needs_view`](Self::needs_view).
    fn write(
        &mut self,
        header: &messageframe::Header,
        bytes: &[u8],
        view: Option<&FrameView<'_>>,
        received_ns: u64,
    ) -> Result<(), String> {
        match (self, view) {
            (Out::Mcap(m), view) => m.write(header, bytes, view, received_ns),
            (Out::McapPipe(m), view) => m.write(header, bytes, view, received_ns),
            (Out::Parquet(p), Some(view)) => p.write(view),
            (
                Out::Jsonl {
                    out,
                    style,
                    line,
                    index,
                },
                Some(view),
            ) => {
                style.format(line, *index, view);
                *index += 1;
                out.write_all(line).map_err(|e| e.to_string())
            }
            (Out::Mfb(out), _) => out.write_all(bytes).map_err(|e| e.to_string()),
            (Out::Parquet(_) | Out::Jsonl { .. }, None) => {
                Err("internal: a frame to write was not read".to_owned())
            }
        }
    }

    /// What was written so far, whole on disk (for Parquet, nothing can
    /// be: a file is readable once its footer is written).
    fn flush(&mut self) -> Result<(), String> {
        match self {
            Out::Mcap(m) => m.flush(),
            Out::McapPipe(m) => m.flush(),
            Out::Parquet(_) => Ok(()),
            Out::Jsonl { out, .. } | Out::Mfb(out) => out.flush().map_err(|e| e.to_string()),
        }
    }

    /// Nothing more is waiting: line formats go out now (a reader of a
    /// pipe sees each frame as it comes); the others wait for the interval
    /// (a chunk per idle moment would be a chunk per frame).
    fn idle(&mut self) -> Result<(), String> {
        match self {
            Out::Jsonl { out, .. } | Out::Mfb(out) => out.flush().map_err(|e| e.to_string()),
            _ => Ok(()),
        }
    }

    fn finish(self) -> Result<(), String> {
        match self {
            Out::Mcap(m) => m.finish().map(drop),
            Out::McapPipe(m) => m.finish().map(drop),
            Out::Parquet(p) => p
                .finish()
                .and_then(|mut w| w.flush().map_err(|e| e.to_string())),
            Out::Jsonl { mut out, .. } | Out::Mfb(mut out) => {
                out.flush().map_err(|e| e.to_string())
            }
        }
    }
}

/// What the writer did.
#[derive(Default)]
struct Tally {
    frames: u64,
    params: u64,
    malformed: u64,
}

/// Why the writer stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The source ended by itself.
    SourceEnded,
    Signal,
    Count,
    Duration,
}

pub(crate) fn run(args: &ExportArgs) -> Result<(), Failure> {
    let origin = Origin::parse(&args.input)?;
    if args.stream.is_some() && !matches!(origin, Origin::Nats(_)) {
        return Err(Failure::Usage(format!(
            "--stream needs a NATS server as SOURCE (nats://HOST:PORT), not `{}`",
            args.input
        )));
    }
    let format = match (args.format, Format::from_extension(&args.output)) {
        (Some(f), _) | (None, Some(f)) => f,
        (None, None) => {
            return Err(Failure::Usage(format!(
                "cannot tell the format of `{}` from its extension: name it .mcap, .parquet, \
                 .jsonl or .mfb, or give --format",
                args.output.display()
            )))
        }
    };
    if args.mirror.is_some() && format != Format::Mcap {
        return Err(Failure::Usage(
            "--mirror is for MCAP output (.mcap or --format mcap)".to_owned(),
        ));
    }
    if args.with_data && format != Format::Jsonl {
        return Err(Failure::Usage(
            "--with-data is for JSON Lines output (.jsonl or --format jsonl)".to_owned(),
        ));
    }
    let out_name = if args.output.as_os_str() == "-" {
        "<stdout>".to_owned()
    } else {
        args.output.display().to_string()
    };
    // Before anything is started: an unwritable path fails at once.
    let mut out = Out::create(&args.output, format, args)?;
    let mut attachments = match &args.attachments {
        Some(dir) => Some(Attachments::create(dir, args.row_group_rows).map_err(Failure::Bad)?),
        None => None,
    };

    let rt = super::runtime()?;
    let (queue, mut rx) = Queue::new();
    let outcome = Arc::new(Mutex::new(None));
    let running = match source::start(origin, args, &rt, queue, outcome.clone()) {
        Ok(running) => running,
        Err(failure) => {
            // An empty file, but a whole one.
            let _ = out.finish();
            if let Some(a) = attachments {
                let _ = a.finish();
            }
            return Err(failure);
        }
    };
    let mut writer = Writer {
        out: &mut out,
        attachments: attachments.as_mut(),
        decoder: Decoder::new(),
        filter: args.filter.filter(),
        name: &running.name,
        tally: Tally::default(),
        progress: Progress::new(io::stderr().is_terminal()),
    };
    let stop = writer.record(&rt, &mut rx, args);
    let tally = std::mem::take(&mut writer.tally);
    writer.progress.clear();
    // The sources stop: their sends fail from now on.
    drop(rx);
    let finished = out
        .finish()
        .map_err(|e| Failure::Bad(format!("cannot write {out_name}: {e}")));
    let attachments_written = attachments.map(|a| a.finish().map_err(Failure::Bad));
    let source_name = running.name.clone();
    running.finish(&rt);
    rt.shutdown_background();
    let stop = stop?;
    finished?;
    let attachments_written = attachments_written.transpose()?;

    let ended = outcome.lock().unwrap_or_else(|e| e.into_inner()).take();
    let size = std::fs::metadata(&args.output)
        .ok()
        .filter(|m| m.is_file())
        .map_or(String::new(), |m| format!(", {} bytes", m.len()));
    let extra = match (attachments_written, &args.attachments) {
        (Some(n), Some(dir)) => format!(", {n} attachments to {}", dir.display()),
        _ => String::new(),
    };
    let why = match stop {
        Stop::SourceEnded => "",
        Stop::Signal => " (stopped by a signal)",
        Stop::Count => " (--count reached)",
        Stop::Duration => " (--duration reached)",
    };
    status(format_args!(
        "export: exported {} frames ({} parameters) from {source_name} to {out_name} ({}{size}){extra}{why}, {} malformed frames skipped",
        tally.frames,
        tally.params,
        format.name(),
        tally.malformed
    ));
    match (stop, ended) {
        (Stop::SourceEnded, Some(Ended::Failed(failure))) => Err(failure),
        // A file that held no frame at all (empty, or not frames from its
        // first byte) is bad input, as for `dump`.
        (Stop::SourceEnded, Some(Ended::Read { frames: 0, stopped })) => Err(match stopped {
            Some(message) => Failure::Bad(message),
            None => empty_input(&source_name),
        }),
        _ => Ok(()),
    }
}

/// The writer's state.
struct Writer<'a> {
    out: &'a mut Out,
    attachments: Option<&'a mut Attachments>,
    decoder: Decoder,
    filter: Filter,
    name: &'a str,
    tally: Tally,
    progress: Progress,
}

/// What the writer waits for when the queue is empty.
enum Wake {
    Item(Option<Batch>),
    Signal,
    Tick,
}

impl Writer<'_> {
    /// Takes frames from the queue until the source ends, a signal,
    /// `--count` or `--duration`.
    fn record(
        &mut self,
        rt: &tokio::runtime::Runtime,
        rx: &mut tokio::sync::mpsc::Receiver<Batch>,
        args: &ExportArgs,
    ) -> Result<Stop, Failure> {
        let _runtime = rt.enter();
        let mut shutdown = pin!(super::shutdown_signal().fuse());
        // Polled once so that the handlers are installed from the start.
        let _ = shutdown.as_mut().now_or_never();
        let started = Instant::now();
        let end = args.duration.map(|d| started + d);
        let mut flush_due: Option<Instant> = None;
        let far = Duration::from_secs(3600);
        loop {
            let now = Instant::now();
            if let Some(due) = flush_due {
                if now >= due {
                    self.out.flush().map_err(|e| self.failed(e))?;
                    flush_due = None;
                }
            }
            if end.is_some_and(|end| now >= end) {
                return Ok(Stop::Duration);
            }
            self.progress.tick(now, &self.tally);
            let batch = match rx.try_recv() {
                Ok(batch) => {
                    // Frames keep coming: the signal is looked at between
                    // batches.
                    if shutdown.as_mut().now_or_never().is_some() {
                        if self.batch(&batch, args)? {
                            self.drain(rx, args)?;
                        }
                        return Ok(Stop::Signal);
                    }
                    batch
                }
                Err(TryRecvError::Disconnected) => return Ok(Stop::SourceEnded),
                Err(TryRecvError::Empty) => {
                    self.out.idle().map_err(|e| self.failed(e))?;
                    let deadline = [flush_due, end, self.progress.next()]
                        .into_iter()
                        .flatten()
                        .min()
                        .unwrap_or(now + far);
                    let wake = rt.block_on(async {
                        tokio::select! {
                            () = shutdown.as_mut() => Wake::Signal,
                            item = rx.recv() => Wake::Item(item),
                            () = tokio::time::sleep_until(deadline.into()) => Wake::Tick,
                        }
                    });
                    match wake {
                        Wake::Item(Some(batch)) => batch,
                        Wake::Item(None) => return Ok(Stop::SourceEnded),
                        Wake::Signal => {
                            self.drain(rx, args)?;
                            return Ok(Stop::Signal);
                        }
                        Wake::Tick => continue,
                    }
                }
            };
            let written = self.tally.frames;
            if !self.batch(&batch, args)? {
                return Ok(Stop::Count);
            }
            if self.tally.frames > written && flush_due.is_none() {
                flush_due = Some(Instant::now() + args.flush_interval);
            }
        }
    }

    /// Writes the frames of a batch, up to `--count`; false once the count
    /// is reached.
    fn batch(&mut self, batch: &Batch, args: &ExportArgs) -> Result<bool, Failure> {
        for frame in &batch.frames {
            if args.count.is_some_and(|n| self.tally.frames >= n) {
                return Ok(false);
            }
            self.frame(frame)?;
        }
        Ok(args.count.is_none_or(|n| self.tally.frames < n))
    }

    /// After a signal: the frames already queued are written too (they
    /// were received).
    fn drain(
        &mut self,
        rx: &mut tokio::sync::mpsc::Receiver<Batch>,
        args: &ExportArgs,
    ) -> Result<(), Failure> {
        while let Ok(batch) = rx.try_recv() {
            if !self.batch(&batch, args)? {
                break;
            }
        }
        Ok(())
    }

    /// Writes one frame, checked by its source; whether it was written.
    fn frame(&mut self, item: &Incoming) -> Result<bool, Failure> {
        let (header, params) = match &item.checked {
            Ok(checked) => *checked,
            Err(e) => {
                self.tally.malformed += 1;
                note(format_args!(
                    "export: {}: {} (skipped)",
                    item.whence.describe(self.name),
                    e.clone().with_base_offset(item.whence.base())
                ));
                return Ok(false);
            }
        };
        if !self.filter.matches(&header) {
            return Ok(false);
        }
        let view = if self.out.needs_view() || self.attachments.is_some() {
            // Checked by the source: this cannot fail.
            match self.decoder.view(&item.bytes) {
                Ok(view) => Some(view),
                Err(e) => return Err(Failure::Bad(format!("internal: {e}"))),
            }
        } else {
            None
        };
        self.out
            .write(&header, &item.bytes, view.as_ref(), item.received_ns)
            .map_err(|e| self.failed(e))?;
        if let (Some(a), Some(view)) = (self.attachments.as_deref_mut(), &view) {
            a.write(view).map_err(Failure::Bad)?;
        }
        self.tally.frames += 1;
        self.tally.params += params as u64;
        self.progress.bytes += item.bytes.len() as u64;
        Ok(true)
    }

    fn failed(&self, e: String) -> Failure {
        Failure::Bad(format!("cannot write the output: {e}"))
    }
}

/// The progress line: frames, bytes and rate, once a second, when stderr
/// is a terminal.
struct Progress {
    enabled: bool,
    started: Instant,
    next: Instant,
    last_frames: u64,
    bytes: u64,
}

const TICK: Duration = Duration::from_secs(1);

impl Progress {
    fn new(enabled: bool) -> Progress {
        let now = Instant::now();
        Progress {
            enabled,
            started: now,
            next: now + TICK,
            last_frames: 0,
            bytes: 0,
        }
    }

    fn next(&self) -> Option<Instant> {
        self.enabled.then_some(self.next)
    }

    fn tick(&mut self, now: Instant, tally: &Tally) {
        if !self.enabled || now < self.next {
            return;
        }
        let elapsed = now.duration_since(self.next - TICK).as_secs_f64().max(1e-3);
        let rate = (tally.frames - self.last_frames) as f64 / elapsed;
        self.last_frames = tally.frames;
        self.next = now + TICK;
        let _ = write!(
            io::stderr(),
            "\r\x1b[Kmframe: export: {} frames, {}, {:.0} frames/s, {} s",
            tally.frames,
            human_bytes(self.bytes),
            rate,
            now.duration_since(self.started).as_secs()
        );
        PROGRESS_SHOWN.store(true, Ordering::Relaxed);
    }

    fn clear(&mut self) {
        if PROGRESS_SHOWN.swap(false, Ordering::Relaxed) {
            let _ = write!(io::stderr(), "\r\x1b[K");
        }
    }
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_have_units() {
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(43_200)));
        for bad in ["", "s", "0", "-1s", "1d", "1 s", "nan", "inf", "9999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_come_from_extensions() {
        let f = |p: &str| Format::from_extension(Path::new(p));
        assert_eq!(f("a.mcap"), Some(Format::Mcap));
        assert_eq!(f("dir/a.PARQUET"), Some(Format::Parquet));
        assert_eq!(f("a.jsonl"), Some(Format::Jsonl));
        assert_eq!(f("a.mfb"), Some(Format::Mfb));
        assert_eq!(f("a.json"), None);
        assert_eq!(f("-"), None);
    }

    #[test]
    fn sizes_are_shown_for_people() {
        assert_eq!(human_bytes(999), "999 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 20), "5.0 MiB");
    }
}

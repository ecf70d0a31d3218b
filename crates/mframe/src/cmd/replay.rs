//! `mframe replay`: plays recorded frames back, from a JetStream stream or
//! from a file of concatenated frames, to stdout (`dump`'s JSON Lines or
//! `--pretty`), to a file (`-o`) or to a NATS server (`--to`).
//!
//! ```text
//! mframe replay nats://HOST:PORT --stream NAME [--prefix P] [--durable D]
//!               [--from-seq N | --from-time RFC3339] [--follow] [filters] [--pace original|fast]
//!               [--to nats://… --to-prefix P2 | -o FILE | --with-data | --pretty]
//! mframe replay [FILE|-] [filters] [--pace original|fast]
//!               [--to nats://… [--prefix P2] | -o FILE | --with-data | --pretty]
//! ```
//!
//! From a stream, the library's `Archive::replay` reads through a durable
//! consumer. Without `--durable` the consumer is the command's own: named
//! for the process, deleted when it ends, and left for the server to delete
//! after 5 idle minutes if mframe is killed. With `--durable D` it is kept,
//! and a later replay under D resumes after the last frame it handed out.
//!
//! Republishing into the prefix a stream records would record every frame
//! again (and, with `--follow`, replay it again, without end): from a
//! stream, `--to` needs a `--to-prefix` outside the recorded prefix.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use clap::Args;
use futures_util::{FutureExt, StreamExt};
use messageframe::Decoder;
use messageframe_nats::{Error, Filter, Recorded, Replay, ReplayOptions};

use super::dump::Style;
use super::nats::{self, Auth, Connection, FilterArgs, Servers, ServersParser};
use super::output::{self, Output};
use super::sink::{self, FrameFile, JsonOut, PaceArg, Payload, Publisher, Sink};
use super::stop::Stop;
use super::subscribe::{passes, Written};
use crate::failure::{status, Failure};
use crate::input::Input;
use crate::plural::count;

/// How long the server keeps the command's own durable consumer once
/// nobody reads through it (when mframe was killed before deleting it).
const OWN_DURABLE_IDLE: Duration = Duration::from_secs(300);

#[derive(Args, Debug)]
pub(crate) struct ReplayArgs {
    /// With --stream: the NATS server holding it (nats://HOST:PORT).
    /// Without: a file of concatenated frames (`-` or none: stdin).
    #[arg(value_name = "URL|FILE")]
    origin: Option<String>,
    /// Replay the JetStream stream NAME (see `record --stream`).
    #[arg(long, value_name = "NAME", value_parser = nats::parse_name)]
    stream: Option<String>,
    #[command(flatten)]
    connection: Connection,
    #[command(flatten)]
    auth: Auth,
    /// Read through the durable consumer D, kept on the server: a later
    /// replay under D resumes after the last frame handed out (with the
    /// options D was created with).
    #[arg(long, value_name = "D", requires = "stream", value_parser = nats::parse_name)]
    durable: Option<String>,
    /// Start at this stream sequence number (1 is the first frame ever
    /// stored).
    #[arg(long, value_name = "N", requires = "stream", conflicts_with = "from_time",
          value_parser = clap::value_parser!(u64).range(1..))]
    from_seq: Option<u64>,
    /// Start at the first frame the server stored at or after this time
    /// (RFC 3339, e.g. 2024-05-01T12:00:00Z).
    #[arg(long, value_name = "TIME", requires = "stream", value_parser = parse_time)]
    from_time: Option<SystemTime>,
    /// Do not stop at the end of the stream: go on with frames recorded
    /// afterwards, until Ctrl-C.
    #[arg(long, requires = "stream")]
    follow: bool,
    #[command(flatten)]
    filter: FilterArgs,
    /// How fast to play the frames back.
    #[arg(long, value_enum, default_value = "fast")]
    pace: PaceArg,
    /// Publish the frames to this NATS server instead of printing them.
    #[arg(long, value_name = "URL", value_parser = ServersParser,
          conflicts_with_all = ["output", "with_data", "pretty"])]
    to: Option<Servers>,
    /// The prefix to publish under with --to (from a file, --prefix also
    /// does). From a stream it is required and must lie outside the
    /// recorded prefix.
    #[arg(long, value_name = "PREFIX", requires = "to", value_parser = nats::parse_prefix)]
    to_prefix: Option<String>,
    /// Write the frames to FILE (`-`: stdout) instead of printing them.
    #[arg(short, long, value_name = "FILE", conflicts_with_all = ["with_data", "pretty"])]
    output: Option<PathBuf>,
    /// Add each attachment's bytes as base64 in a "data" field.
    #[arg(long, conflicts_with = "pretty")]
    with_data: bool,
    /// Print a view for people instead of JSON.
    #[arg(long)]
    pretty: bool,
    /// From a stream to stdout or a file: at most this many bytes of frames
    /// wait to be written (and the server is asked for no more meanwhile).
    #[arg(long, value_name = "BYTES", default_value_t = output::DEFAULT_MAX_PENDING,
          value_parser = clap::value_parser!(u64).range(1..=(u32::MAX as u64)))]
    max_pending: u64,
}

/// `--from-time`.
fn parse_time(text: &str) -> Result<SystemTime, String> {
    use time::format_description::well_known::Rfc3339;
    time::OffsetDateTime::parse(text, &Rfc3339)
        .map(SystemTime::from)
        .map_err(|e| format!("`{text}` is not an RFC 3339 time such as 2024-05-01T12:00:00Z: {e}"))
}

fn looks_like_url(source: &str) -> bool {
    source.starts_with("nats://") || source.starts_with("tls://")
}

pub(crate) fn run(args: &ReplayArgs) -> Result<(), Failure> {
    // Checked before anything is opened or connected.
    let to_prefix = match (&args.stream, &args.to) {
        (Some(_), Some(_)) => Some(stream_to_prefix(args)?),
        (None, Some(_)) => Some(
            args.to_prefix
                .clone()
                .unwrap_or_else(|| args.connection.prefix.clone()),
        ),
        (_, None) => None,
    };
    let rt = super::runtime()?;
    // The sink's subscription is dropped last, inside the runtime (it
    // unsubscribes from a task).
    let _runtime = rt.enter();
    let got = Arc::new(Written::default());
    let stop = Stop::install(&rt, got.last_words("replay"));
    let mut sink = match &args.output {
        Some(path) => Sink::File(FrameFile::create(path)?),
        None => match (&args.to, &to_prefix) {
            (Some(url), Some(prefix)) => rt.block_on(async {
                let connection = Connection {
                    prefix: prefix.clone(),
                    connect_timeout: args.connection.connect_timeout,
                };
                let client = nats::connect_with(url, &connection, &args.auth, "replay").await?;
                let publisher = Publisher::new(client, url.clone()).await?;
                Ok::<_, Failure>(Sink::Nats(Box::new(publisher)))
            })?,
            _ => Sink::Json(JsonOut::new(Style::new(args.with_data, args.pretty))),
        },
    };
    let result = match &args.stream {
        Some(name) => rt.block_on(from_stream(args, name, sink, &stop, &got)),
        None => from_file(&rt, args, &mut sink, &stop, &got),
    };
    stop.finished();
    result
}

/// The destination prefix of a replay from a stream: given, and outside the
/// recorded prefix.
fn stream_to_prefix(args: &ReplayArgs) -> Result<String, Failure> {
    let recorded = &args.connection.prefix;
    let Some(to) = &args.to_prefix else {
        return Err(Failure::Usage(format!(
            "replay --stream --to needs --to-prefix: republishing under the recorded prefix \
             `{recorded}` would record every frame again"
        )));
    };
    if recorded_again(to, recorded) {
        return Err(Failure::Usage(format!(
            "--to-prefix `{to}` lies inside the recorded prefix `{recorded}`: the stream would \
             record every replayed frame again; choose a prefix outside it"
        )));
    }
    Ok(to.clone())
}

/// Whether frames published under `to` land in a stream that captures
/// `<recorded>.>`.
fn recorded_again(to: &str, recorded: &str) -> bool {
    to == recorded
        || to
            .strip_prefix(recorded)
            .is_some_and(|rest| rest.starts_with('.'))
}

fn from_file(
    rt: &tokio::runtime::Runtime,
    args: &ReplayArgs,
    sink: &mut Sink,
    stop: &Stop,
    got: &Written,
) -> Result<(), Failure> {
    if let Some(source) = &args.origin {
        if looks_like_url(source) {
            return Err(Failure::Usage(format!(
                "`{}` is a server: replaying from JetStream needs --stream NAME",
                nats::redact(source)
            )));
        }
    }
    let input = Input::new(args.origin.as_deref().map(PathBuf::from));
    // Frames handed on so far, for the report if a signal comes while
    // stdout is blocked.
    let played = sink::play_input(
        rt,
        &input,
        args.filter.filter(),
        args.pace,
        sink,
        Some((stop, &got.frames)),
    )?;
    status(format_args!(
        "replay: replayed {} of {} from {} to {}{}",
        played.played,
        count(played.read, "frame"),
        input.name(),
        sink.describe(),
        if played.interrupted {
            " (interrupted: the rest of the input was not read)"
        } else {
            ""
        }
    ));
    Ok(())
}

async fn from_stream(
    args: &ReplayArgs,
    name: &str,
    sink: Sink,
    stop: &Stop,
    got: &Arc<Written>,
) -> Result<(), Failure> {
    let url = match &args.origin {
        Some(source) => nats::parse_servers(source).map_err(Failure::Usage)?,
        None => {
            return Err(Failure::Usage(format!(
                "replay --stream {name} needs the server: mframe replay nats://HOST:PORT --stream {name}"
            )))
        }
    };
    let client = nats::connect_with(&url, &args.connection, &args.auth, "replay").await?;
    let _events = nats::print_events(&client, &url);
    let archive = nats::open_archive(&client, name, &url).await?;

    let (durable, own) = match &args.durable {
        Some(d) => (d.clone(), false),
        None => {
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            (
                format!("mframe-replay-{}-{nanos:x}", std::process::id()),
                true,
            )
        }
    };
    let filter = args.filter.filter();
    let mut options = ReplayOptions::new(&durable)
        .filter(filter)
        .pace(args.pace.into())
        .follow(args.follow);
    if let Some(seq) = args.from_seq {
        options = options.from_sequence(seq);
    }
    if let Some(time) = args.from_time {
        options = options.from_time(time);
    }
    if own {
        options = options.inactive_threshold(OWN_DURABLE_IDLE);
    }
    let mut to = Destination::new(sink, args.max_pending, got);
    let replay = archive.replay(options).await;
    let created = replay.is_ok();
    let played = match replay {
        Ok(replay) => play_stream(replay, name, filter, &mut to, stop, got).await,
        Err(e) => Err(Failure::Bad(format!("stream `{name}`: {e}"))),
    };
    if own && created {
        if let Err(e) = archive.delete_replay(&durable).await {
            status(format_args!(
                "replay: cannot delete the consumer `{durable}` (the server drops it after {} idle minutes): {e}",
                OWN_DURABLE_IDLE.as_secs() / 60
            ));
        }
    }
    let (finished, described) = to.finish(got).await;
    let (first, last) = played?;
    finished?;
    let range = match (first, last) {
        (Some(first), Some(last)) => format!(" (sequences {first}..={last})"),
        _ => String::new(),
    };
    status(format_args!(
        "replay: replayed {}{range} from stream `{name}` to {described}{}",
        count(got.frames.load(Ordering::Relaxed), "frame"),
        got.skipped()
    ));
    Ok(())
}

/// Where a replay from a stream goes: stdout or a file through the queue
/// bounded in bytes (a slow reader slows the replay: nothing is fetched
/// beyond the queue, nothing lost), or NATS.
enum Destination {
    Output {
        output: Output<Recorded>,
        describe: String,
    },
    Nats(Sink),
}

impl Destination {
    fn new(sink: Sink, max_pending: u64, got: &Arc<Written>) -> Destination {
        if let Sink::Nats(_) = sink {
            return Destination::Nats(sink);
        }
        let describe = sink.describe();
        let file_name = describe.clone();
        let decoder = Decoder::new();
        let written = got.clone();
        let shared = Arc::new(Mutex::new(sink));
        let flusher = shared.clone();
        let output = Output::start(
            max_pending,
            Box::new(move |recorded: &Recorded| {
                let payload = recorded.payload();
                let view = match decoder.view(payload) {
                    Ok(view) => view,
                    Err(e) => {
                        written.malformed.fetch_add(1, Ordering::Relaxed);
                        status(format_args!(
                            "replay: stream sequence {}, subject `{}`: {e} (skipped)",
                            recorded.sequence(),
                            recorded.subject()
                        ));
                        return Ok(true);
                    }
                };
                let mut sink = shared.lock().unwrap_or_else(PoisonError::into_inner);
                match &mut *sink {
                    Sink::Json(json) => json.write(&view)?,
                    Sink::File(file) => file.write(payload)?,
                    Sink::Nats(_) => unreachable!("NATS is not written from this thread"),
                }
                written
                    .bytes
                    .fetch_add(payload.len() as u64, Ordering::Relaxed);
                Ok(written.wrote(None))
            }),
            Box::new(
                move || match &mut *flusher.lock().unwrap_or_else(PoisonError::into_inner) {
                    Sink::Json(json) => json.flush(),
                    Sink::File(file) => file.flush(),
                    Sink::Nats(_) => Ok(()),
                },
            ),
        );
        if let Ok(mut counts) = got.counts.lock() {
            *counts = Some(output.counts());
        }
        let _ = file_name;
        Destination::Output { output, describe }
    }

    /// Ends the output (bounded) or confirms the publications; where the
    /// frames went, for the report.
    async fn finish(self, got: &Written) -> (Result<(), Failure>, String) {
        match self {
            Destination::Output { output, describe } => {
                let (result, unwritten) = output.finish(Duration::from_secs(1));
                got.unwritten.store(unwritten, Ordering::Relaxed);
                let describe = match describe.split_once(" (") {
                    // A file's size is known only now.
                    Some((file, _)) => {
                        format!("{file} ({} bytes)", got.bytes.load(Ordering::Relaxed))
                    }
                    None => describe,
                };
                (result, describe)
            }
            Destination::Nats(mut sink) => {
                let result = sink.finish().await;
                got.frames.store(sink.frames(), Ordering::Relaxed);
                (result, sink.describe())
            }
        }
    }
}

/// Reads the replay into the destination until its end (or Ctrl-C /
/// SIGTERM); returns the first and last sequence numbers played. Frames
/// whose header does not pass `filter` (the consumer filtered by subject)
/// are skipped and counted.
async fn play_stream(
    mut replay: Replay,
    name: &str,
    filter: Filter,
    to: &mut Destination,
    stop: &Stop,
    got: &Written,
) -> Result<(Option<u64>, Option<u64>), Failure> {
    let decoder = Decoder::new();
    let (mut first, mut last) = (None, None);
    loop {
        let item = match replay.next().now_or_never() {
            Some(item) => {
                if stop.requested() {
                    break;
                }
                item
            }
            None => {
                if let Destination::Nats(sink) = to {
                    sink.idle().await?;
                }
                tokio::select! {
                    () = stop.wait() => break,
                    item = replay.next() => item,
                }
            }
        };
        let recorded = match item {
            None => break,
            Some(Ok(recorded)) => recorded,
            Some(Err(e @ Error::Malformed { .. })) => {
                got.malformed.fetch_add(1, Ordering::Relaxed);
                status(format_args!("replay: {e} (skipped)"));
                continue;
            }
            Some(Err(e)) => return Err(Failure::Bad(format!("stream `{name}`: {e}"))),
        };
        let sequence = recorded.sequence();
        let header = *recorded.frame().header();
        if !passes(&filter, &header) {
            if got.mismatched.fetch_add(1, Ordering::Relaxed) == 0 {
                status(format_args!(
                    "replay: stream sequence {sequence} on subject `{}` has target {}, type {},                      source {} in its header, which the filters do not pass: skipped (later ones                      are counted in the report)",
                    recorded.subject(),
                    header.target(),
                    header.message_type(),
                    header.source()
                ));
            }
            continue;
        }
        match to {
            Destination::Output { output, .. } => {
                let len = recorded.payload().len();
                let pushed = tokio::select! {
                    () = stop.wait() => break,
                    pushed = output.push(recorded, len) => pushed,
                };
                if !pushed {
                    // The writer stopped (an error, said at the end).
                    break;
                }
            }
            Destination::Nats(sink) => {
                let payload = recorded.payload();
                // The replay decoded it already; the view is what the
                // checks read.
                let view = match decoder.view(payload) {
                    Ok(view) => view,
                    Err(e) => {
                        got.malformed.fetch_add(1, Ordering::Relaxed);
                        status(format_args!(
                            "replay: stream `{name}`, sequence {sequence}, subject `{}`: {e} (skipped)",
                            recorded.subject()
                        ));
                        continue;
                    }
                };
                sink.put(sequence, Payload::Shared(payload), &view, || {
                    format!("stream `{name}`, sequence {sequence}")
                })
                .await?;
            }
        }
        first.get_or_insert(sequence);
        last = Some(sequence);
    }
    Ok((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc_3339() {
        let t = parse_time("2024-05-01T12:00:00Z").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_714_564_800
        );
        let t = parse_time("2024-05-01T14:00:00.5+02:00").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
            1_714_564_800_500
        );
        for bad in ["", "2024-05-01", "yesterday", "2024-05-01 12:00:00"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefixes_inside_the_recorded_one_are_caught() {
        assert!(recorded_again("fleet", "fleet"));
        assert!(recorded_again("fleet.replay", "fleet"));
        assert!(recorded_again("a.b.c", "a.b"));
        assert!(!recorded_again("fleet2", "fleet"));
        assert!(!recorded_again("fleetx.a", "fleet"));
        // `fleet.replay.>` never holds `fleet.<target>.…`: a target is a
        // number, never `replay`.
        assert!(!recorded_again("fleet", "fleet.replay"));
    }
}

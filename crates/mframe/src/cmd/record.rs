//! `mframe record nats://HOST:PORT [--prefix P] (-o FILE [filters] [--count N]
//! | --stream NAME [stream settings])`: records the frames published under
//! a prefix, to a file of concatenated frames or into a JetStream stream.
//!
//! - `-o FILE` subscribes (the server filters by target, type and source)
//!   and writes each valid payload, unchanged, as it arrives, until Ctrl-C,
//!   SIGTERM or `--count` frames. Malformed payloads and connection events
//!   are lines on stderr; a malformed payload is not written (the file
//!   stays a valid stream of frames).
//! - `--stream NAME` creates the JetStream stream NAME capturing `P.>` (or
//!   checks that an existing one does) and returns: from then on the server
//!   records every frame published under the prefix, by anyone, whether or
//!   not mframe runs. Filters do not apply (the stream captures the whole
//!   prefix; `replay` filters).

use std::path::PathBuf;
use std::time::Duration;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use clap::Args;
use messageframe_nats::{ArchiveConfig, RawFrame};
use tokio::runtime::Runtime;

use super::nats::{self, FilterArgs, Server};
use super::output::Output;
use super::sink::FrameFile;
use super::stop::Stop;
use super::subscribe::{receive, PendingArgs, Subscribe, Written};
use crate::failure::{status, Failure};
use crate::plural::count;

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("into").required(true).args(["output", "stream"])))]
pub(crate) struct RecordArgs {
    #[command(flatten)]
    server: Server,
    #[command(flatten)]
    filter: FilterArgs,
    /// Write the frames to FILE (`-`: stdout), as they arrive.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Stop after N frames (with -o).
    #[arg(long, value_name = "N", requires = "output")]
    count: Option<u64>,
    #[command(flatten)]
    pending: PendingArgs,
    /// Record into the JetStream stream NAME (created if absent), which
    /// captures every frame under the prefix; returns at once, the server
    /// records.
    #[arg(long, value_name = "NAME", value_parser = nats::parse_name,
          conflicts_with_all = ["target", "message_type", "source"])]
    stream: Option<String>,
    /// A new stream's copies on different servers of a cluster (1 to 5).
    #[arg(long, value_name = "N", requires = "stream",
          value_parser = clap::value_parser!(u64).range(1..=5))]
    replicas: Option<u64>,
    /// Keep a new stream in memory instead of on disk.
    #[arg(long, requires = "stream")]
    memory: bool,
    /// A new stream drops frames older than this (e.g. 90s, 30m, 12h, 7d).
    #[arg(long, value_name = "AGE", requires = "stream", value_parser = parse_age)]
    max_age: Option<Duration>,
    /// A new stream drops its oldest frames beyond this many bytes.
    #[arg(long, value_name = "BYTES", requires = "stream")]
    max_bytes: Option<u64>,
    /// A new stream drops its oldest frames beyond this many frames.
    #[arg(long, value_name = "N", requires = "stream")]
    max_frames: Option<u64>,
}

impl RecordArgs {
    fn settings_given(&self) -> bool {
        self.replicas.is_some()
            || self.memory
            || self.max_age.is_some()
            || self.max_bytes.is_some()
            || self.max_frames.is_some()
    }
}

/// `--max-age`: a whole number with a unit, `s`, `m`, `h` or `d`.
fn parse_age(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not an age such as 90s, 30m, 12h or 7d");
    let unit = text.chars().last().ok_or_else(bad)?;
    let seconds = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(bad()),
    };
    let n: u64 = text[..text.len() - 1].parse().map_err(|_| bad())?;
    match n.checked_mul(seconds) {
        Some(s) if s > 0 => Ok(Duration::from_secs(s)),
        _ => Err(bad()),
    }
}

pub(crate) fn run(args: &RecordArgs) -> Result<(), Failure> {
    let rt = super::runtime()?;
    match (&args.output, &args.stream) {
        (Some(path), _) => {
            // Before connecting: an unwritable path fails at once.
            let file = FrameFile::create(path)?;
            to_file(&rt, args, file)
        }
        (None, Some(name)) => rt.block_on(to_stream(args, name)),
        (None, None) => unreachable!("clap requires -o or --stream"),
    }
}

fn to_file(rt: &Runtime, args: &RecordArgs, file: FrameFile) -> Result<(), Failure> {
    let got = Arc::new(Written::default());
    let stop = Stop::install(rt, got.last_words("record"));
    let file_name = file.name().to_owned();
    rt.block_on(async {
        let url = &args.server.url;
        let client =
            nats::connect_with(url, &args.server.options, &args.server.auth, "record").await?;
        let written = got.clone();
        let limit = args.count;
        let file = Arc::new(Mutex::new(file));
        let writer = file.clone();
        let flusher = file.clone();
        let output = Output::start(
            args.pending.max_pending,
            Box::new(move |raw: &RawFrame| {
                if written.check(raw, "record").is_none() {
                    return Ok(true);
                }
                let mut file = writer.lock().unwrap_or_else(PoisonError::into_inner);
                file.write(raw.payload())?;
                written
                    .bytes
                    .fetch_add(raw.payload().len() as u64, Ordering::Relaxed);
                Ok(written.wrote(limit))
            }),
            Box::new(move || {
                flusher
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .flush()
            }),
        );
        let subscription = Subscribe {
            client: &client,
            url,
            command: "record",
            filter: args.filter.filter(),
            stop: &stop,
        };
        let result = receive(subscription, output, &got).await;
        stop.finished();
        result?;
        status(format_args!(
            "record: recorded {} ({} bytes) to {file_name}{}",
            count(got.frames.load(Ordering::Relaxed), "frame"),
            got.bytes.load(Ordering::Relaxed),
            got.skipped()
        ));
        Ok(())
    })
}

async fn to_stream(args: &RecordArgs, name: &str) -> Result<(), Failure> {
    let url = &args.server.url;
    let client = nats::connect_with(url, &args.server.options, &args.server.auth, "record").await?;
    let captures = client.subjects().all();
    let existed = nats::find_stream(&client, name, url).await?.is_some();
    let mut config = ArchiveConfig::new(name);
    if let Some(replicas) = args.replicas {
        config = config.replicas(replicas as usize);
    }
    if args.memory {
        config = config.in_memory();
    }
    if let Some(age) = args.max_age {
        config = config.max_age(age);
    }
    if let Some(bytes) = args.max_bytes {
        config = config.max_bytes(bytes);
    }
    if let Some(frames) = args.max_frames {
        config = config.max_frames(frames);
    }
    let archive = client
        .archive(config)
        .await
        .map_err(|e| Failure::Bad(format!("{url}: {e}")))?;
    let state = archive
        .state()
        .await
        .map_err(|e| Failure::Bad(format!("{url}: {e}")))?;
    if existed {
        status(format_args!(
            "record: stream `{name}` exists and captures `{captures}`{}",
            if args.settings_given() {
                "; its own settings are kept (the stream settings given apply only to a new stream)"
            } else {
                ""
            }
        ));
    } else {
        status(format_args!(
            "record: created stream `{name}` capturing `{captures}` on {url}"
        ));
    }
    let held = if state.frames == 0 {
        "no frames".to_owned()
    } else {
        format!(
            "{} ({} bytes), sequences {}..={}",
            count(state.frames, "frame"),
            state.bytes,
            state.first_sequence,
            state.last_sequence
        )
    };
    status(format_args!(
        "record: stream `{name}` holds {held}; the server records every frame published \
         under `{captures}` from now on, whether or not mframe runs"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_age;
    use std::time::Duration;

    #[test]
    fn ages_have_a_unit() {
        assert_eq!(parse_age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_age("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(604_800)));
        for bad in [
            "",
            "s",
            "7",
            "7w",
            "-1h",
            "0s",
            "1.5h",
            "99999999999999999999d",
        ] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }
}

//! `mframe pub nats://HOST:PORT [--prefix P] [--confirm [--confirm-timeout
//! S]] [FILE|-]`: publishes the frames of a file or of stdin, each on the
//! subject of its header (`P.<target>.<message_type>.<source>`), its bytes
//! unchanged.
//!
//! The input is read as it arrives (`producer | mframe pub URL` publishes
//! live) and each frame is validated as `validate` does before it goes out.
//! An invalid frame, or one over the server's `max_payload`, stops the
//! command with its message (exit 1) after the frames before it were
//! published.
//!
//! `pub` never reports success it cannot vouch for. On core NATS (the
//! default), checkpoints through the server confirm the frames window by
//! window ([`delivery`](super::delivery)); a run during which the
//! connection broke, or a checkpoint did not come back, ends with the
//! frames that may be lost, by input index, source and counter, and exit 1.
//! With `--confirm`, every frame goes into the JetStream stream of the
//! prefix and is acknowledged, retried with its `Nats-Msg-Id` until it is
//! ([`confirm`](super::confirm)): stored exactly once, or exit 1 naming
//! what was not acknowledged. Ctrl-C or SIGTERM stops reading the input;
//! what was published is confirmed and reported.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use messageframe_nats::Filter;

use super::nats::{self, Server};
use super::sink::{self, PaceArg, Publisher, Sink};
use super::stop::Stop;
use crate::failure::{status, Failure};
use crate::input::Input;
use crate::plural::count;

#[derive(Args)]
pub(crate) struct PubArgs {
    #[command(flatten)]
    server: Server,
    /// Store every frame in the JetStream stream that captures the prefix,
    /// each acknowledged (retried until it is, stored exactly once through
    /// its Nats-Msg-Id).
    #[arg(long)]
    confirm: bool,
    /// With --confirm: give up on a frame not acknowledged within this many
    /// seconds of its first attempt (default 60, and at most the stream's
    /// duplicate window).
    #[arg(long, value_name = "SECONDS", requires = "confirm", value_parser = nats::parse_seconds)]
    confirm_timeout: Option<Duration>,
    #[command(flatten)]
    input: Input,
}

pub(crate) fn run(args: &PubArgs) -> Result<(), Failure> {
    let rt = super::runtime()?;
    // The sink's subscription is dropped last, inside the runtime (it
    // unsubscribes from a task).
    let _runtime = rt.enter();
    let url = &args.server.url;
    // For the watcher's report if the input blocks after a signal: what
    // was published (every frame then was confirmed by the checkpoint that
    // runs before each wait for input).
    let published = Arc::new(AtomicU64::new(0));
    let stop = {
        let published = published.clone();
        Stop::install(
            &rt,
            Box::new(move || {
                status(format_args!(
                    "pub: interrupted while waiting for input: {} published",
                    count(published.load(Ordering::Relaxed), "frame")
                ));
                0
            }),
        )
    };
    let mut sink = rt.block_on(async {
        let client =
            nats::connect_with(url, &args.server.options, &args.server.auth, "pub").await?;
        let publisher = if args.confirm {
            Publisher::confirmed(client, url.clone(), args.confirm_timeout).await?
        } else {
            Publisher::new(client, url.clone()).await?
        };
        Ok::<_, Failure>(Sink::Nats(Box::new(publisher)))
    })?;
    let played = sink::play_input(
        &rt,
        &args.input,
        Filter::any(),
        PaceArg::Fast,
        &mut sink,
        Some((&stop, &published)),
    );
    stop.finished();
    let played = played?;
    let interrupted = if played.interrupted {
        " (interrupted: the rest of the input was not read)"
    } else {
        ""
    };
    status(format_args!(
        "pub: published {} to {}{interrupted}",
        count(played.played, "frame"),
        sink.describe()
    ));
    Ok(())
}

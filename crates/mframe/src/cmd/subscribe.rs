//! `mframe sub nats://HOST:PORT [--prefix P] [--target T] [--type M]
//! [--source S] [--with-data | --pretty] [--count N]`: prints the frames
//! published under a prefix as they arrive, exactly as `dump` prints them.
//!
//! The server filters by subject (`Filter` → `P.T.M.S` with wildcards), so
//! frames that do not pass never reach the command. Each payload is read in
//! place (`RawFrame::view`, the whole frame checked) and printed with
//! `dump`'s formatter, stdout flushed after every frame. stdout carries only
//! frames; connection events (disconnected, reconnected, each failed
//! attempt, slow consumer) and malformed payloads (with their subject and
//! byte) are lines on stderr, and the command goes on. Ctrl-C or SIGTERM
//! stops it (exit 0).

use std::pin::pin;

use bytes::Bytes;
use clap::Args;
use futures_util::{FutureExt, StreamExt};
use messageframe::FrameView;
use messageframe_nats::{Client, Event, Filter};

use super::dump::Style;
use super::nats::{self, FilterArgs, Server, Servers};
use super::sink::JsonOut;
use crate::failure::{status, Failure};

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
}

pub(crate) fn run(args: &SubArgs) -> Result<(), Failure> {
    let rt = super::runtime()?;
    rt.block_on(async {
        let client = nats::connect(&args.server.url, &args.server.options, "sub").await?;
        let mut out = JsonOut::new(Style::new(args.with_data, args.pretty));
        let subscription = Subscribe {
            client: &client,
            url: &args.server.url,
            command: "sub",
            filter: args.filter.filter(),
            count: args.count,
        };
        let got = receive(
            subscription,
            &mut out,
            |out, view, _| {
                // Flushed per frame: each line is out as soon as its frame
                // arrived.
                out.write(view)?;
                out.flush()
            },
            |_| Ok(()),
        )
        .await?;
        status(format_args!(
            "sub: stopped: {} frames, {} malformed payloads skipped",
            got.frames, got.malformed
        ));
        Ok(())
    })
}

/// What [`receive`] subscribes to, for which command.
pub(crate) struct Subscribe<'a> {
    pub(crate) client: &'a Client,
    pub(crate) url: &'a Servers,
    /// The command's name, first in its status lines.
    pub(crate) command: &'static str,
    pub(crate) filter: Filter,
    /// Stop after this many frames.
    pub(crate) count: Option<u64>,
}

/// What [`receive`] got.
pub(crate) struct Got {
    pub(crate) frames: u64,
    pub(crate) malformed: u64,
}

/// Subscribes to `filter` and hands each valid frame (read, and its payload
/// as it arrived) to `each` with `state`, calling `idle` whenever no frame
/// is waiting,
/// until Ctrl-C / SIGTERM or `count` frames. Connection events and
/// malformed payloads are reported on stderr and skipped. Used by `sub` and
/// `record -o`.
pub(crate) async fn receive<S>(
    subscription: Subscribe<'_>,
    state: &mut S,
    mut each: impl FnMut(&mut S, &FrameView<'_>, &Bytes) -> Result<(), Failure>,
    mut idle: impl FnMut(&mut S) -> Result<(), Failure>,
) -> Result<Got, Failure> {
    let Subscribe {
        client,
        url,
        command,
        filter,
        count,
    } = subscription;
    let subject = client.subjects().filter(&filter);
    let mut frames = client
        .subscribe(filter)
        .await
        .map_err(|e| Failure::Bad(format!("{url}: {e}")))?
        .raw();
    // Polled once so the signal handlers are installed before the status
    // line says the command is ready.
    let mut shutdown = pin!(super::shutdown_signal());
    let _ = shutdown.as_mut().now_or_never();
    status(format_args!(
        "{command}: subscribed to `{subject}` on {url}"
    ));
    let mut got = Got {
        frames: 0,
        malformed: 0,
    };
    while count.is_none_or(|n| got.frames < n) {
        let item = match frames.next().now_or_never() {
            Some(item) => {
                // Frames keep coming: the signal is looked at between them.
                if shutdown.as_mut().now_or_never().is_some() {
                    break;
                }
                item
            }
            None => {
                idle(state)?;
                tokio::select! {
                    () = shutdown.as_mut() => break,
                    item = frames.next() => item,
                }
            }
        };
        match item {
            Some(Ok(Event::Frame(raw))) => match raw.view() {
                Ok(view) => {
                    each(state, &view, raw.payload())?;
                    got.frames += 1;
                }
                Err(e) => {
                    got.malformed += 1;
                    status(format_args!("{command}: {e} (skipped)"));
                }
            },
            Some(Ok(Event::Connection(event))) => status(format_args!("nats: {event}")),
            Some(Err(e)) => {
                got.malformed += 1;
                status(format_args!("{command}: {e} (skipped)"));
            }
            // Only after a `Closed` event: the client is gone for good.
            None => {
                idle(state)?;
                return Err(Failure::Bad(format!(
                    "{url}: the connection was closed after {} frames",
                    got.frames
                )));
            }
        }
    }
    idle(state)?;
    Ok(got)
}

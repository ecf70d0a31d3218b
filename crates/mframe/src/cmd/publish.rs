//! `mframe pub nats://HOST:PORT [--prefix P] [FILE|-]`: publishes the frames
//! of a file or of stdin, each on the subject of its header
//! (`P.<target>.<message_type>.<source>`), its bytes unchanged.
//!
//! The input is read as it arrives (`producer | mframe pub URL` publishes
//! live) and each frame is validated as `validate` does before it goes out;
//! the connection is flushed whenever the input has nothing more yet. An
//! invalid frame, or one over the server's `max_payload`, stops the command
//! with its message (exit 1) after the frames before it were published. At
//! the end the server is asked to confirm it has every frame (core NATS has
//! no acknowledgement; `record --stream` and `replay` give JetStream's).

use clap::Args;
use messageframe_nats::Filter;

use super::nats::{self, Server};
use super::sink::{self, PaceArg, Publisher, Sink};
use crate::failure::{status, Failure};
use crate::input::Input;

#[derive(Args)]
pub(crate) struct PubArgs {
    #[command(flatten)]
    server: Server,
    #[command(flatten)]
    input: Input,
}

pub(crate) fn run(args: &PubArgs) -> Result<(), Failure> {
    let rt = super::runtime()?;
    let url = &args.server.url;
    let mut sink = rt.block_on(async {
        let client = nats::connect(url, &args.server.options, "pub").await?;
        Ok::<_, Failure>(Sink::Nats(Box::new(Publisher::new(client, url.clone()))))
    })?;
    let played = sink::play_input(&rt, &args.input, Filter::any(), PaceArg::Fast, &mut sink)?;
    status(format_args!(
        "pub: published {} frames to {}",
        played.played,
        sink.describe()
    ));
    Ok(())
}

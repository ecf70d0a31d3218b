//! The command line: clap's definitions and the dispatch to `cmd::*`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cmd::{self, dump::Style, relay};
use crate::failure::Failure;
use crate::input::Input;
use crate::net::{ClientTlsArgs, ServerArgs};

#[derive(Parser)]
#[command(
    name = "mframe",
    version,
    about = "Dump, build, inspect and validate messageframe frames; send, receive and route them over TCP; \
             publish, subscribe, record and replay them through NATS",
    after_help = "FILE may be `-` or omitted for stdin; it may hold several concatenated frames.\n\
                  Exit codes: 0 success, 1 bad input or unreadable file, 2 bad usage."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print each frame as one JSON object per line (JSON Lines).
    Dump {
        #[command(flatten)]
        input: Input,
        /// Add each attachment's bytes as base64 in a "data" field.
        #[arg(long, conflicts_with = "pretty")]
        with_data: bool,
        /// Print a view for people instead of JSON.
        #[arg(long)]
        pretty: bool,
    },
    /// Build frames from JSON Lines in the dump schema (the inverse of dump).
    ///
    /// Each line is one JSON object in the schema `mframe dump` prints:
    ///
    ///   {"header": {"timestamp": u64, "counter": u64, "source": u32, "target": u32,
    ///               "message_id": i32, "message_type": i32, "version": u16, "flags": u16},
    ///    "params": [{"device": str, "param": str,
    ///                "type": "int64" | "double" | "string" | "bool", "value": ...},
    ///               {"device": str, "param": str, "type": "unknown", "tag": N, "raw": "<base64>"}],
    ///    "attachments": [{"name": str, "data": "<base64>"}]}
    ///
    /// Missing header fields take the library's defaults (version 1, the others 0,
    /// timestamp the time the line is read); a missing "params" or "attachments" is none.
    /// A field not in the schema, a wrong type or an out-of-range number is an error
    /// naming the line and the field.
    ///
    /// Each frame is written (and flushed) as soon as its line is read, so
    /// `producer | mframe encode | mframe send ADDR` streams; a bad line stops it
    /// (exit 1). With -o OUT, OUT is replaced only when every line was good.
    ///
    /// Every rule, with examples: docs/cli.md, "mframe encode".
    #[command(verbatim_doc_comment)]
    Encode {
        #[command(flatten)]
        input: Input,
        /// Write the frames to OUT instead of stdout (OUT is replaced once every
        /// line is encoded; a bad line leaves it as it was).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Print only the header of each frame, as JSON, without decoding parameters.
    Header {
        #[command(flatten)]
        input: Input,
        /// Read only the first frame's header and nothing after it.
        #[arg(long)]
        first: bool,
    },
    /// Exit 0 when every frame is valid, otherwise print the first error.
    Validate {
        #[command(flatten)]
        input: Input,
        /// Also reject duplicate keys (the default decoder accepts them and
        /// lookups find the first).
        #[arg(long)]
        strict: bool,
    },
    /// Accept TCP connections and print their frames as they arrive, as dump does.
    Listen {
        /// Address to listen on, e.g. 127.0.0.1:7000 (port 0: any free port;
        /// the address is printed on stderr).
        #[arg(value_name = "ADDR")]
        addr: String,
        /// Add each attachment's bytes as base64 in a "data" field.
        #[arg(long, conflicts_with = "pretty")]
        with_data: bool,
        /// Print a view for people instead of JSON.
        #[arg(long)]
        pretty: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Stream the frames of FILE (or stdin) to a listener at ADDR.
    Send {
        /// The listener's address, e.g. 127.0.0.1:7000.
        #[arg(value_name = "ADDR")]
        addr: String,
        #[command(flatten)]
        input: Input,
        #[command(flatten)]
        tls: ClientTlsArgs,
    },
    /// Forward frames to consumers by their header's target, reading only headers.
    Relay(relay::RelayArgs),
    /// Publish the frames of FILE (or stdin) to NATS, each on the subject of its header.
    Pub(cmd::publish::PubArgs),
    /// Print the frames published under a prefix as they arrive, as dump does.
    Sub(cmd::subscribe::SubArgs),
    /// Record the frames of a prefix to a file (-o) or into a JetStream stream (--stream).
    Record(cmd::record::RecordArgs),
    /// Play recorded frames back, from a JetStream stream or a file, to stdout, a file or NATS.
    Replay(cmd::replay::ReplayArgs),
    /// Serve a live web page of every parameter, from TCP producers, NATS or a file.
    View(cmd::view::ViewArgs),
    /// Write frames from a file, TCP, NATS or JetStream to MCAP, Parquet, JSON Lines or frames.
    Export(cmd::export::ExportArgs),
}

/// `mframe`'s `main`.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Bad(msg)) => {
            crate::failure::status(msg);
            ExitCode::from(1)
        }
        Err(Failure::Usage(msg)) => {
            crate::failure::status(msg);
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> Result<(), Failure> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match command {
        Command::Dump {
            input,
            with_data,
            pretty,
        } => cmd::dump::run(&input, Style::new(with_data, pretty), &mut out)?,
        Command::Encode { input, output } => {
            cmd::encode::run(&input, output.as_deref(), &mut out)?;
        }
        Command::Header { input, first } => cmd::header::run(&input, first, &mut out)?,
        Command::Validate { input, strict } => cmd::validate::run(&input, strict, &mut out)?,
        Command::Listen {
            addr,
            with_data,
            pretty,
            server,
        } => {
            // The listener writes stdout from its own thread.
            drop(out);
            return cmd::listen::run(&addr, Style::new(with_data, pretty), &server);
        }
        Command::Send { addr, input, tls } => cmd::send::run(&addr, &input, &tls)?,
        Command::Relay(args) => {
            drop(out);
            return relay::main(&args);
        }
        // These write stdout themselves, as frames come.
        Command::Pub(args) => {
            drop(out);
            return cmd::publish::run(&args);
        }
        Command::Sub(args) => {
            drop(out);
            return cmd::subscribe::run(&args);
        }
        Command::Record(args) => {
            drop(out);
            return cmd::record::run(&args);
        }
        Command::Replay(args) => {
            drop(out);
            return cmd::replay::run(&args);
        }
        Command::View(args) => {
            drop(out);
            return cmd::view::run(&args);
        }
        Command::Export(args) => {
            drop(out);
            return cmd::export::run(&args);
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own consistency checks (unique argument ids, valid
    /// `requires`/`conflicts_with` targets) run only when a command is
    /// parsed in a debug build; this runs them for every subcommand.
    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}

//! `mframe`: read and write messageframe frames by hand.
//!
//! Exit codes: 0 success, 1 bad input (or a file that cannot be read or
//! written), 2 bad usage (clap's parse errors, binary output to a terminal).
//! The whole input is read into memory first: frames are self-delimiting only
//! by walking them, and every command needs the bytes of a frame in one slice.

mod json_in;
mod json_out;
mod pretty;

use std::fs;
use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use messageframe::{DecodeError, Decoder, FrameView, Header};

#[derive(Parser)]
#[command(
    name = "mframe",
    version,
    about = "Dump, build, inspect and validate messageframe frames",
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
    Encode {
        #[command(flatten)]
        input: Input,
        /// Write the frames to OUT instead of stdout.
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
}

#[derive(Args)]
struct Input {
    /// Input file; `-` or none for stdin.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

impl Input {
    /// How messages name the input.
    fn name(&self) -> String {
        match &self.file {
            Some(p) if p.as_os_str() != "-" => p.display().to_string(),
            _ => "<stdin>".to_owned(),
        }
    }

    fn read(&self) -> Result<Vec<u8>, Failure> {
        let result = match &self.file {
            Some(p) if p.as_os_str() != "-" => fs::read(p),
            _ => {
                let mut buf = Vec::new();
                io::stdin().lock().read_to_end(&mut buf).map(|_| buf)
            }
        };
        result.map_err(|e| Failure::Bad(format!("cannot read {}: {e}", self.name())))
    }
}

/// Why a command stopped early.
#[derive(Debug)]
enum Failure {
    /// Bad input or a file error: one line for stderr, exit 1.
    Bad(String),
    /// Bad usage that clap cannot see: exit 2.
    Usage(String),
    /// The reader of stdout went away (`mframe dump | head -1`): nothing is
    /// wrong with the input, so stop quietly and successfully.
    BrokenPipe,
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Bad(format!("cannot write output: {e}"))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Bad(msg)) => {
            // eprintln! would panic if stderr is closed; a lost message is the
            // lesser evil.
            let _ = writeln!(io::stderr(), "mframe: {msg}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(msg)) => {
            let _ = writeln!(io::stderr(), "mframe: {msg}");
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
        } => {
            let bytes = input.read()?;
            let name = input.name();
            let mut line = Vec::new();
            for_each_frame(&bytes, &name, Decoder::new(), |index, view| {
                line.clear();
                if pretty {
                    pretty::write_frame(&mut line, index, view);
                } else {
                    json_out::write_frame(&mut line, view, with_data);
                }
                out.write_all(&line)
            })?;
        }
        Command::Encode { input, output } => {
            // Checked before reading, so nobody types JSON into a terminal
            // only to be refused at the end.
            if output.is_none() && io::stdout().is_terminal() {
                return Err(Failure::Usage(
                    "refusing to write binary frames to a terminal; use -o OUT or redirect stdout"
                        .to_owned(),
                ));
            }
            let text = input.read()?;
            let name = input.name();
            // Everything is encoded before anything is written, so a bad line
            // never leaves a partial OUT behind.
            let frames =
                json_in::encode_lines(&text).map_err(|e| Failure::Bad(format!("{name}: {e}")))?;
            match output {
                Some(path) => fs::write(&path, &frames)
                    .map_err(|e| Failure::Bad(format!("cannot write {}: {e}", path.display())))?,
                None => out.write_all(&frames)?,
            }
        }
        Command::Header { input, first } => {
            let bytes = input.read()?;
            let name = input.name();
            header_command(&bytes, &name, first, &mut out)?;
        }
        Command::Validate { input, strict } => {
            let bytes = input.read()?;
            let name = input.name();
            let mut count = 0usize;
            for_each_frame(&bytes, &name, Decoder::new().strict(strict), |_, _| {
                count += 1;
                Ok(())
            })?;
            let plural = if count == 1 { "" } else { "s" };
            writeln!(
                out,
                "{name}: {count} valid frame{plural}, {} bytes",
                bytes.len()
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Validates the frames of a stream one after the other and hands each to
/// `f`; stops at the first invalid frame with its index and stream offset.
fn for_each_frame(
    bytes: &[u8],
    name: &str,
    decoder: Decoder,
    mut f: impl FnMut(usize, &FrameView<'_>) -> io::Result<()>,
) -> Result<(), Failure> {
    if bytes.is_empty() {
        return Err(empty_input(name));
    }
    let mut pos = 0;
    let mut index = 0;
    while pos < bytes.len() {
        let view = decoder
            .view_prefix(&bytes[pos..])
            .map_err(|e| frame_error(name, index, pos, e))?;
        f(index, &view)?;
        pos += view.encoded_len();
        index += 1;
    }
    Ok(())
}

fn header_command(
    bytes: &[u8],
    name: &str,
    first: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    if bytes.is_empty() {
        return Err(empty_input(name));
    }
    let mut line = Vec::new();
    let mut pos = 0;
    let mut index = 0;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let header = Header::peek(rest).map_err(|e| frame_error(name, index, pos, e))?;
        line.clear();
        json_out::write_header(&mut line, &header);
        line.push(b'\n');
        out.write_all(&line)?;
        if first {
            break;
        }
        // The peek does not say where the frame ends; `peek_frame` finds it
        // with a structural skip, without decoding keys or values (see
        // docs/cli.md).
        let (_, len) = Header::peek_frame(rest).map_err(|e| {
            Failure::Bad(format!(
                "{name}: frame {index} (starts at byte {pos}): {} (while looking for the frame's end)",
                e.with_base_offset(pos)
            ))
        })?;
        pos += len;
        index += 1;
    }
    Ok(())
}

fn empty_input(name: &str) -> Failure {
    Failure::Bad(format!(
        "{name}: frame 0: input is empty at byte 0 (no frame)"
    ))
}

fn frame_error(name: &str, index: usize, start: usize, e: DecodeError) -> Failure {
    Failure::Bad(format!(
        "{name}: frame {index} (starts at byte {start}): {}",
        e.with_base_offset(start)
    ))
}

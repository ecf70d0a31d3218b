//! Why a command stopped early, and the messages for invalid frames.

use std::io::{self, Write};

use messageframe::DecodeError;

/// Why a command stopped early.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Bad input, a file or network error: one line for stderr, exit 1.
    Bad(String),
    /// Bad usage that clap cannot see: exit 2.
    Usage(String),
    /// The reader of stdout went away (`mframe dump | head -1`): nothing is
    /// wrong with the input, so stop quietly and successfully.
    BrokenPipe,
}

impl From<io::Error> for Failure {
    /// An error writing stdout.
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Bad(format!("cannot write output: {e}"))
        }
    }
}

/// One status or error line on stderr, `mframe: ` first. `eprintln!` would
/// panic if stderr is closed; a lost message is the lesser evil.
pub(crate) fn status(msg: impl std::fmt::Display) {
    let _ = writeln!(io::stderr(), "mframe: {msg}");
}

/// The input holds no frame at all: the library's own wording for it.
pub(crate) fn empty_input(name: &str) -> Failure {
    match messageframe::Decoder::new().view(&[]).err() {
        Some(e) => frame_error(name, 0, 0, e),
        None => Failure::Bad(format!("{name}: no frame")),
    }
}

/// Frame `index`, starting at stream offset `start`, is invalid.
pub(crate) fn frame_error(name: &str, index: usize, start: usize, e: DecodeError) -> Failure {
    Failure::Bad(format!(
        "{name}: frame {index} (starts at byte {start}): {}",
        e.with_base_offset(start)
    ))
}

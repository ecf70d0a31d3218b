//! The input of `dump`, `header`, `validate`, `encode` and `send`: a file or
//! stdin, read as it arrives (frame by frame; `encode` line by line).
//!
//! Frames are found with the library's `FrameReader` (its scanner), so each
//! one is handled as soon as its last byte is read: `mframe dump` on a pipe
//! prints a frame when it is complete, not at the end of the input.
//!
//! Error messages stay those of the whole-input decode: when the scanner
//! finds a frame malformed, or the input ends inside one, the rest of the
//! input is read to its end and handed to the decoder exactly as when
//! everything was read first ([`whole`]); what the decoder says about that
//! frame (which can depend on how much input follows it, e.g. a parameter
//! count the rest cannot hold is a truncation) is the message.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use clap::Args;
use messageframe::{Decoder, FrameReader, FrameView, Header, StreamError};

use crate::failure::{frame_error, Failure};

#[derive(Args)]
pub(crate) struct Input {
    /// Input file; `-` or none for stdin.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

impl Input {
    /// A file, or stdin for `None` and `-`.
    pub(crate) fn new(file: Option<PathBuf>) -> Input {
        Input { file }
    }

    /// How messages name the input.
    pub(crate) fn name(&self) -> String {
        match &self.file {
            Some(p) if p.as_os_str() != "-" => p.display().to_string(),
            _ => "<stdin>".to_owned(),
        }
    }

    pub(crate) fn cannot_read(&self, e: &io::Error) -> Failure {
        Failure::Bad(format!("cannot read {}: {e}", self.name()))
    }

    pub(crate) fn open(&self) -> Result<Box<dyn Read>, Failure> {
        Ok(match &self.file {
            Some(p) if p.as_os_str() != "-" => {
                Box::new(File::open(p).map_err(|e| self.cannot_read(&e))?)
            }
            _ => Box::new(io::stdin().lock()),
        })
    }
}

/// How the frames of an input ended.
pub(crate) enum End {
    /// The input ended after `frames` whole frames, `bytes` in all.
    Clean { frames: usize, bytes: u64 },
    /// Frame `index`, starting at byte `start`, is malformed or cut short:
    /// `rest` is the input from that frame to its end, for [`whole`] (or the
    /// command's own whole-input path) to report.
    Rest {
        index: usize,
        start: usize,
        rest: Vec<u8>,
    },
}

/// Hands each complete frame of `input` to `each` (index, stream offset,
/// header, bytes) as soon as it is read; calls `idle` just before waiting
/// for more input (to flush output, or a socket). The frames' structure and
/// the default limits are checked; decoding them is `each`'s business.
pub(crate) fn frames<S>(
    input: &Input,
    state: &mut S,
    each: impl FnMut(&mut S, usize, usize, Header, &[u8]) -> Result<(), Failure>,
    idle: impl FnMut(&mut S) -> Result<(), Failure>,
) -> Result<End, Failure> {
    frames_from(input, input.open()?, state, each, idle)
}

/// [`frames`] from `source`, the input already opened (and perhaps already
/// looked at: `export` and `view` check its first bytes for an MCAP file).
pub(crate) fn frames_from<S>(
    input: &Input,
    source: Box<dyn Read>,
    state: &mut S,
    mut each: impl FnMut(&mut S, usize, usize, Header, &[u8]) -> Result<(), Failure>,
    mut idle: impl FnMut(&mut S) -> Result<(), Failure>,
) -> Result<End, Failure> {
    let mut reader = FrameReader::new(source);
    let mut index = 0;
    loop {
        let start = reader.offset() as usize;
        let ready = match reader.has_buffered_frame() {
            Ok(ready) => ready,
            Err(e) => return rest(input, reader, index, start, e),
        };
        if !ready {
            idle(state)?;
        }
        match reader.read_raw() {
            Ok(Some((header, bytes))) => {
                each(state, index, start, header, bytes)?;
                index += 1;
            }
            Ok(None) => {
                return Ok(End::Clean {
                    frames: index,
                    bytes: reader.offset(),
                })
            }
            Err(e) => return rest(input, reader, index, start, e),
        }
    }
}

fn rest(
    input: &Input,
    mut reader: FrameReader<Box<dyn Read>>,
    index: usize,
    start: usize,
    e: StreamError,
) -> Result<End, Failure> {
    if let StreamError::Io(e) = e {
        return Err(input.cannot_read(&e));
    }
    let mut rest = reader.buffer().to_vec();
    reader
        .get_mut()
        .read_to_end(&mut rest)
        .map_err(|e| input.cannot_read(&e))?;
    Ok(End::Rest { index, start, rest })
}

/// The whole-input path: validates the frames of `bytes` (the input from
/// frame `first`, at stream offset `base`) one after the other and hands
/// each to `f`; stops at the first invalid frame with its index and stream
/// offset. Returns how many frames were valid.
pub(crate) fn whole(
    bytes: &[u8],
    name: &str,
    decoder: Decoder,
    first: usize,
    base: usize,
    mut f: impl FnMut(usize, &FrameView<'_>) -> Result<(), Failure>,
) -> Result<usize, Failure> {
    let mut pos = 0;
    let mut index = first;
    while pos < bytes.len() {
        let view = decoder
            .view_prefix(&bytes[pos..])
            .map_err(|e| frame_error(name, index, base + pos, e))?;
        f(index, &view)?;
        pos += view.encoded_len();
        index += 1;
    }
    Ok(index - first)
}

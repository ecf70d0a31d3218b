//! `mframe header [--first] [FILE]`: each frame's header as JSON, without
//! decoding parameters.

use std::io::{self, Read, Write};

use messageframe::{ErrorKind, Header};

use crate::failure::{empty_input, frame_error, Failure};
use crate::input::{self, End, Input};
use crate::json_out;

pub(crate) fn run(input: &Input, first: bool, out: &mut impl Write) -> Result<(), Failure> {
    let name = input.name();
    if first {
        return first_header(input, &name, out);
    }
    let mut line = Vec::new();
    let end = input::frames(
        input,
        out,
        |out, _, _, header, _| {
            line.clear();
            json_out::write_header(&mut line, &header);
            line.push(b'\n');
            Ok(out.write_all(&line)?)
        },
        |out| Ok(out.flush()?),
    )?;
    match end {
        End::Clean { frames: 0, .. } => Err(empty_input(&name)),
        End::Clean { .. } => Ok(()),
        // The scanner checks more than `header` promises to (the frame's
        // structure, not only its markers): the rest goes the whole-input
        // way, which prints what it always printed.
        End::Rest { index, start, rest } => headers_of(&rest, &name, index, start, out),
    }
}

/// The first frame's header: only the header's bytes are read, whatever
/// follows them (a frame cut short after its header included).
fn first_header(input: &Input, name: &str, out: &mut impl Write) -> Result<(), Failure> {
    let mut reader = input.open()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = loop {
            match reader.read(&mut chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Failure::Bad(format!("cannot read {name}: {e}"))),
            }
        };
        buf.extend_from_slice(&chunk[..n]);
        if buf.is_empty() {
            return Err(empty_input(name));
        }
        match Header::peek(&buf) {
            Ok(header) => {
                let mut line = Vec::new();
                json_out::write_header(&mut line, &header);
                line.push(b'\n');
                return Ok(out.write_all(&line)?);
            }
            Err(e) if n > 0 && matches!(e.kind(), ErrorKind::Truncated { .. }) => continue,
            Err(e) => return Err(frame_error(name, 0, 0, e)),
        }
    }
}

/// The whole-input path over `bytes`, the input from frame `first` at
/// stream offset `base`.
fn headers_of(
    bytes: &[u8],
    name: &str,
    first: usize,
    base: usize,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let mut line = Vec::new();
    let mut pos = 0;
    let mut index = first;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let header = Header::peek(rest).map_err(|e| frame_error(name, index, base + pos, e))?;
        line.clear();
        json_out::write_header(&mut line, &header);
        line.push(b'\n');
        out.write_all(&line)?;
        // The peek does not say where the frame ends; `peek_frame` finds it
        // with a structural skip, without decoding keys or values (see
        // docs/cli.md). Its errors say in which part of the frame they are.
        let (_, len) =
            Header::peek_frame(rest).map_err(|e| frame_error(name, index, base + pos, e))?;
        pos += len;
        index += 1;
    }
    Ok(())
}

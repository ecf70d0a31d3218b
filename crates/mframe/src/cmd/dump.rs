//! `mframe dump [--with-data | --pretty] [FILE]`: each frame as one JSON
//! line (or a view for people), printed as soon as the frame is read.

use std::io::Write;

use messageframe::{Decoder, FrameView};

use crate::failure::{empty_input, frame_error, Failure};
use crate::input::{self, End, Input};
use crate::{json_out, pretty};

/// How a frame is printed (shared with `listen`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Style {
    Json { with_data: bool },
    Pretty,
}

impl Style {
    pub(crate) fn new(with_data: bool, pretty: bool) -> Self {
        if pretty {
            Style::Pretty
        } else {
            Style::Json { with_data }
        }
    }

    /// Frame `index` into `line` (cleared first).
    pub(crate) fn format(self, line: &mut Vec<u8>, index: usize, view: &FrameView<'_>) {
        line.clear();
        match self {
            Style::Json { with_data } => json_out::write_frame(line, view, with_data),
            Style::Pretty => pretty::write_frame(line, index, view),
        }
    }
}

pub(crate) fn run(input: &Input, style: Style, out: &mut impl Write) -> Result<(), Failure> {
    let name = input.name();
    let decoder = Decoder::new();
    let mut line = Vec::new();
    let end = input::frames(
        input,
        out,
        |out, index, start, _, bytes| {
            let view = decoder
                .view(bytes)
                .map_err(|e| frame_error(&name, index, start, e))?;
            style.format(&mut line, index, &view);
            Ok(out.write_all(&line)?)
        },
        // Flushed whenever the input has nothing more yet: on a pipe each
        // frame shows as soon as it is complete; a file is written in
        // large pieces.
        |out| Ok(out.flush()?),
    )?;
    match end {
        End::Clean { frames: 0, .. } => Err(empty_input(&name)),
        End::Clean { .. } => Ok(()),
        End::Rest { index, start, rest } => {
            input::whole(&rest, &name, decoder, index, start, |index, view| {
                style.format(&mut line, index, view);
                Ok(out.write_all(&line)?)
            })?;
            Ok(())
        }
    }
}

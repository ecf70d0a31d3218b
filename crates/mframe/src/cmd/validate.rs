//! `mframe validate [--strict] [FILE]`: every frame fully decoded; a
//! summary, or the first error.

use std::io::Write;

use messageframe::Decoder;

use crate::failure::{empty_input, frame_error, Failure};
use crate::input::{self, End, Input};

pub(crate) fn run(input: &Input, strict: bool, out: &mut impl Write) -> Result<(), Failure> {
    let name = input.name();
    let decoder = Decoder::new().strict(strict);
    let end = input::frames(
        input,
        &mut (),
        |(), index, start, _, bytes| {
            decoder
                .view(bytes)
                .map_err(|e| frame_error(&name, index, start, e))?;
            Ok(())
        },
        |()| Ok(()),
    )?;
    let (count, bytes) = match end {
        End::Clean { frames: 0, .. } => return Err(empty_input(&name)),
        End::Clean { frames, bytes } => (frames, bytes as usize),
        End::Rest { index, start, rest } => {
            let valid = input::whole(&rest, &name, decoder, index, start, |_, _| Ok(()))?;
            (index + valid, start + rest.len())
        }
    };
    let plural = if count == 1 { "" } else { "s" };
    writeln!(out, "{name}: {count} valid frame{plural}, {bytes} bytes")?;
    Ok(())
}

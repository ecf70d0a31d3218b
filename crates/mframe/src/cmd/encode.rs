//! `mframe encode [FILE] [-o OUT]`: frames from JSON Lines in the dump
//! schema, all or nothing.

use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::Path;

use crate::failure::Failure;
use crate::input::Input;
use crate::json_in;

pub(crate) fn run(
    input: &Input,
    output: Option<&Path>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    // Checked before reading, so nobody types JSON into a terminal only to
    // be refused at the end.
    if output.is_none() && io::stdout().is_terminal() {
        return Err(Failure::Usage(
            "refusing to write binary frames to a terminal; use -o OUT or redirect stdout"
                .to_owned(),
        ));
    }
    let text = input.read_all()?;
    let name = input.name();
    // Everything is encoded before anything is written, so a bad line never
    // leaves a partial OUT behind.
    let frames = json_in::encode_lines(&text).map_err(|e| Failure::Bad(format!("{name}: {e}")))?;
    match output {
        Some(path) => fs::write(path, &frames)
            .map_err(|e| Failure::Bad(format!("cannot write {}: {e}", path.display())))?,
        None => out.write_all(&frames)?,
    }
    Ok(())
}

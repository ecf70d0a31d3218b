//! `mframe encode [FILE] [-o OUT]`: frames from JSON Lines in the dump
//! schema, one frame per line as the line is read.
//!
//! Each line is encoded when it arrives (a header without `timestamp` gets
//! the time of that moment) and its frame written at once; the output is
//! flushed whenever the input has no complete line waiting, so
//! `producer | mframe encode | mframe send ADDR` streams. A bad line stops
//! the command: on stdout the frames of the lines before it have gone out;
//! `-o OUT` is written to a temporary file beside OUT that replaces OUT only
//! when every line was good, so a bad line leaves OUT as it was (a FIFO or
//! a device, which cannot be replaced, is written to directly).

use std::fs;
use std::io::{self, BufRead, BufReader, IsTerminal, Write};
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
    let lines = BufReader::new(input.open()?);
    let Some(path) = output else {
        return encode(input, lines, out, Failure::from);
    };
    let cannot_write = |e: io::Error| Failure::Bad(format!("cannot write {}: {e}", path.display()));
    if fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        // A FIFO or a device: streamed into as stdout is.
        let file = fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(cannot_write)?;
        let mut file = io::BufWriter::new(file);
        encode(input, lines, &mut file, cannot_write)?;
        return file.flush().map_err(cannot_write);
    }
    let mut temp = temporary_beside(path).map_err(cannot_write)?;
    let mut file = io::BufWriter::new(temp.as_file_mut());
    // On an error the temporary file is dropped, and removed: OUT stays.
    encode(input, lines, &mut file, cannot_write)?;
    file.flush().map_err(cannot_write)?;
    drop(file);
    temp.persist(path).map_err(|e| cannot_write(e.error))?;
    Ok(())
}

/// Encodes each line of `lines` as it is read and writes its frame to
/// `out`, flushing `out` before waiting for input that has not arrived;
/// `write_error` says what a failed write means.
fn encode<R: io::Read, W: Write>(
    input: &Input,
    mut lines: BufReader<R>,
    out: &mut W,
    write_error: impl Fn(io::Error) -> Failure,
) -> Result<(), Failure> {
    let name = input.name();
    let mut line = Vec::new();
    let mut frame = Vec::new();
    let mut line_no = 0usize;
    loop {
        // No whole line buffered: the read below may wait, so what is
        // done goes out first.
        if !lines.buffer().contains(&b'\n') {
            out.flush().map_err(&write_error)?;
        }
        line.clear();
        let read = lines
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::Bad(format!("cannot read {name}: {e}")))?;
        if read == 0 {
            return Ok(());
        }
        line_no += 1;
        frame.clear();
        json_in::encode_line(&line, line_no, &mut frame)
            .map_err(|e| Failure::Bad(format!("{name}: {e}")))?;
        out.write_all(&frame).map_err(&write_error)?;
    }
}

/// A new file in OUT's directory, to be renamed over OUT: with the
/// permissions OUT has, or those of a new file (0666 under the umask).
fn temporary_beside(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".mframe-encode-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let temp = builder.tempfile_in(dir)?;
    if let Ok(existing) = fs::metadata(path) {
        fs::set_permissions(temp.path(), existing.permissions())?;
    }
    Ok(temp)
}

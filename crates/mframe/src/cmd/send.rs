//! `mframe send ADDR [FILE|-]`: streams the frames of a file or of stdin to
//! a listener (`mframe listen`, `mframe relay`, any program reading frames).
//!
//! Each frame is validated (`Decoder::view`) and sent as soon as it is read;
//! the socket is flushed whenever the input has nothing more yet, so
//! `producer | mframe send ADDR` forwards live. An invalid frame stops the
//! command with the same message `validate` gives, after the frames before
//! it were sent.

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};

use messageframe::{Decoder, FrameWriter};

use crate::failure::{empty_input, frame_error, status, Failure};
use crate::input::{self, End, Input};

struct Link {
    writer: FrameWriter<TcpStream>,
    addr: String,
    frames: usize,
    bytes: usize,
}

impl Link {
    fn lost(&self, e: &io::Error) -> Failure {
        Failure::Bad(format!(
            "{}: connection lost after {} frames: {e}",
            self.addr, self.frames
        ))
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.writer.write_raw(bytes).map_err(|e| self.lost(&e))?;
        self.frames += 1;
        self.bytes += bytes.len();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Failure> {
        self.writer.flush().map_err(|e| self.lost(&e))
    }
}

pub(crate) fn run(addr: &str, input: &Input) -> Result<(), Failure> {
    let name = input.name();
    let stream = TcpStream::connect(addr)
        .map_err(|e| Failure::Bad(format!("cannot connect to {addr}: {e}")))?;
    // Frames leave when flushed, not when Nagle's algorithm decides.
    let _ = stream.set_nodelay(true);
    let mut link = Link {
        writer: FrameWriter::new(stream),
        addr: addr.to_owned(),
        frames: 0,
        bytes: 0,
    };
    let decoder = Decoder::new();
    let end = input::frames(
        input,
        &mut link,
        |link, index, start, _, bytes| {
            decoder
                .view(bytes)
                .map_err(|e| frame_error(&name, index, start, e))?;
            link.send(bytes)
        },
        Link::flush,
    );
    // Whatever happened, the frames accepted so far go out.
    let flushed = link.flush();
    let result = match end? {
        End::Clean { frames: 0, .. } => Err(empty_input(&name)),
        End::Clean { .. } => Ok(()),
        End::Rest { index, start, rest } => {
            input::whole(&rest, &name, decoder, index, start, |_, view| {
                link.send(view.as_bytes())
            })
            .map(drop)
            .and_then(|()| link.flush())
        }
    };
    flushed?;
    let stream = link.writer.get_mut();
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    // On an invalid frame, its error is the one line on stderr.
    result?;
    status(format_args!(
        "sent {} frames ({} bytes) to {addr}",
        link.frames, link.bytes
    ));
    Ok(())
}

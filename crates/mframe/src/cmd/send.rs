//! `mframe send ADDR [FILE|-] [--tls-ca PEM [--tls-cert PEM --tls-key
//! PEM]]`: streams the frames of a file or of stdin to a listener (`mframe
//! listen`, `mframe relay`, `mframe view`, any program reading frames),
//! over TCP or TLS.
//!
//! Each frame is validated (`Decoder::view`) and sent as soon as it is read;
//! the socket is flushed whenever the input has nothing more yet, so
//! `producer | mframe send ADDR` forwards live. An invalid frame stops the
//! command with the same message `validate` gives, after the frames before
//! it were sent.
//!
//! At the end it closes its side and waits (at most [`CLOSE_WAIT`]) for the
//! server to close its own: a server that read everything closes cleanly,
//! one that refused the connection (a TLS alert, a reset) is an error, not
//! a success.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use messageframe::{Decoder, FrameWriter};
use tokio_rustls::rustls::{ClientConnection, StreamOwned};

use crate::failure::{empty_input, frame_error, status, Failure};
use crate::input::{self, End, Input};
use crate::net::tls::{peer_alert, ClientTls};
use crate::net::ClientTlsArgs;
use crate::plural::count;

/// How long `send` waits, at the end, for the server to close.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The connection: plain TCP or TLS.
enum Conn {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

/// How the server ended the connection.
enum Closed {
    /// It closed after reading everything.
    Clean,
    /// It did not close within [`CLOSE_WAIT`].
    Open,
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => &s.sock,
        }
    }

    /// After a failed write: the TLS alert the server sent, if it sent
    /// one (it says why better than a broken pipe), else `e`.
    fn why(&mut self, e: io::Error) -> io::Error {
        let Conn::Tls(s) = self else { return e };
        let _ = s.sock.set_read_timeout(Some(Duration::from_secs(1)));
        let mut sink = [0u8; 512];
        loop {
            match s.read(&mut sink) {
                Ok(n) if n > 0 => {}
                Err(alert) if peer_alert(&alert).is_some() => return alert,
                _ => return e,
            }
        }
    }

    /// Closes the sending side (TLS: `close_notify` first) and waits for
    /// the server to close its own.
    fn finish(&mut self) -> io::Result<Closed> {
        if let Conn::Tls(s) = self {
            s.conn.send_close_notify();
            if let Err(e) = s.flush() {
                return Err(self.why(e));
            }
        }
        self.tcp().shutdown(Shutdown::Write)?;
        self.tcp().set_read_timeout(Some(CLOSE_WAIT))?;
        let mut sink = [0u8; 4096];
        let mut first = true;
        loop {
            let read = match self {
                Conn::Plain(s) => s.read(&mut sink),
                Conn::Tls(s) => s.read(&mut sink),
            };
            match read {
                Ok(0) => return Ok(Closed::Clean),
                // A TLS alert record (content type 21, version 3.x) to a
                // plain client: a TLS server refusing it.
                Ok(n) if first && matches!(self, Conn::Plain(_)) && n >= 2 && sink[..2] == [0x15, 0x03] => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionRefused,
                        "the server speaks TLS and refused this plain-TCP connection (connect with --tls-ca)",
                    ))
                }
                Ok(_) => first = false,
                // A TLS server that closes without its own close_notify
                // (ours do) read everything all the same.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Closed::Clean),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(Closed::Open)
                }
                Err(e) => return Err(e),
            }
        }
    }
}

struct Link {
    writer: FrameWriter<Conn>,
    addr: String,
    frames: usize,
    bytes: usize,
}

impl Link {
    fn lost(&mut self, e: io::Error) -> Failure {
        let e = self.writer.get_mut().why(e);
        match peer_alert(&e) {
            Some(alert) => Failure::Bad(format!(
                "{}: the server refused the connection (TLS alert {alert}) after {}",
                self.addr,
                count(self.frames as u64, "frame")
            )),
            None => Failure::Bad(format!(
                "{}: connection lost after {}: {e}",
                self.addr,
                count(self.frames as u64, "frame")
            )),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        if let Err(e) = self.writer.write_raw(bytes) {
            return Err(self.lost(e));
        }
        self.frames += 1;
        self.bytes += bytes.len();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Failure> {
        match self.writer.flush() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.lost(e)),
        }
    }
}

fn connect(addr: &str, tls: Option<&ClientTls>) -> Result<Conn, Failure> {
    let stream = TcpStream::connect(addr)
        .map_err(|e| Failure::Bad(format!("cannot connect to {addr}: {e}")))?;
    // Frames leave when flushed, not when Nagle's algorithm decides.
    let _ = stream.set_nodelay(true);
    Ok(match tls {
        None => Conn::Plain(stream),
        Some(tls) => {
            // A server that never answers the handshake does not hold us.
            let _ = stream.set_read_timeout(Some(CLOSE_WAIT));
            let stream = tls.connect_blocking(stream, addr).map_err(|e| {
                Failure::Bad(format!("cannot connect to {addr}: TLS handshake: {e}"))
            })?;
            let _ = stream.sock.set_read_timeout(None);
            Conn::Tls(Box::new(stream))
        }
    })
}

pub(crate) fn run(addr: &str, input: &Input, tls: &ClientTlsArgs) -> Result<(), Failure> {
    let name = input.name();
    let tls = tls.load()?;
    let mut link = Link {
        writer: FrameWriter::new(connect(addr, tls.as_ref())?),
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
    let closed = link.writer.get_mut().finish();
    // On an invalid frame, its error is the one line on stderr.
    result?;
    match closed {
        Ok(Closed::Clean) => status(format_args!(
            "sent {} ({}) to {addr}",
            count(link.frames as u64, "frame"), count(link.bytes as u64, "byte")
        )),
        Ok(Closed::Open) => status(format_args!(
            "sent {} ({}) to {addr} (the server had not closed the connection {} s later)",
            count(link.frames as u64, "frame"),
            count(link.bytes as u64, "byte"),
            CLOSE_WAIT.as_secs()
        )),
        Err(e) => {
            return Err(match peer_alert(&e) {
                Some(alert) => Failure::Bad(format!(
                    "{addr}: the server refused the connection (TLS alert {alert}); {} written, none can be counted as received",
                    count(link.frames as u64, "frame")
                )),
                None if e.kind() == io::ErrorKind::ConnectionRefused => Failure::Bad(format!(
                    "{addr}: {e}; {} written, none can be counted as received",
                    count(link.frames as u64, "frame")
                )),
                None => Failure::Bad(format!(
                    "{addr}: the connection ended with an error after {} written ({e}); the server may not have read them all",
                    count(link.frames as u64, "frame")
                )),
            })
        }
    }
    Ok(())
}

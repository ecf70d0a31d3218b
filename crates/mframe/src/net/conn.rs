//! A peer's frames, read with bounded memory.
//!
//! The read buffer is a `Vec<u8>` grown with `try_reserve_exact` (a
//! `BytesMut` can only grow with `reserve`, which aborts the process when
//! the allocator says no), after charging the growth to the server's
//! [`Budget`](super::budget::Budget). It grows as bytes arrive, at most to
//! twice what was received plus 64 KiB, never to what a header announces:
//! a peer must send 8 MiB before 16 MiB are reserved for it. The scanner
//! checks the announced sizes against `--max-frame-bytes` as soon as it
//! reads them, so a larger frame closes the connection before its bytes
//! are read. A buffer that grew past 1 MiB is given back once it holds no
//! partial frame.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use messageframe::{DecodeError, ErrorKind, FrameScanner, Header, Limit, Limits, Scan};
use std::pin::Pin;
use tokio::io::AsyncReadExt;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};

use super::server::{Counters, Shared, Stream};

/// The first buffer of a connection, allocated at its first read.
const INITIAL: usize = 4 << 10;

/// Room for one read on a busy connection.
const READ: usize = 64 << 10;

/// A buffer larger than this is freed once it holds no partial frame.
const SHRINK_ABOVE: usize = 1 << 20;

/// A complete frame in the buffer.
#[derive(Debug, Clone)]
pub(crate) struct Framed {
    pub(crate) header: Header,
    /// Where it is in the buffer ([`FrameConn::bytes`]).
    pub(crate) range: Range<usize>,
    /// Its index in the connection's stream, from 0.
    pub(crate) index: u64,
    /// Its first byte's offset in the connection's stream.
    pub(crate) offset: u64,
}

/// Why a connection ends.
#[derive(Debug)]
pub(crate) enum ConnError {
    /// The socket failed.
    Io(io::Error),
    /// No frame was completed within the idle timeout.
    Idle(Duration),
    /// Its buffer would pass the process's budget of buffered bytes.
    Budget { wanted: usize, budget: usize },
    /// The allocator refused the buffer's growth.
    NoMemory { wanted: usize },
    /// A frame that cannot be valid (malformed, or over the limits), or the
    /// end of the stream inside a frame.
    Frame {
        index: u64,
        offset: u64,
        error: DecodeError,
        max_frame_bytes: usize,
    },
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "{e}"),
            ConnError::Idle(t) => write!(
                f,
                "no complete frame for {} s (--idle-timeout)",
                t.as_secs_f64()
            ),
            ConnError::Budget { wanted, budget } => write!(
                f,
                "its buffer cannot grow to {wanted} bytes: the connections' buffers would pass \
                 --max-buffered-bytes ({budget})"
            ),
            ConnError::NoMemory { wanted } => {
                write!(f, "no memory for a buffer of {wanted} bytes")
            }
            ConnError::Frame {
                index,
                offset,
                error,
                max_frame_bytes,
            } => {
                write!(f, "frame {index} (starts at byte {offset}): {error}")?;
                if matches!(error.kind(), ErrorKind::LimitExceeded(Limit::FrameBytes)) {
                    write!(f, " (--max-frame-bytes is {max_frame_bytes})")?;
                }
                Ok(())
            }
        }
    }
}

/// A peer's connection, read frame by frame.
pub(crate) struct FrameConn {
    io: Box<dyn Stream>,
    peer: SocketAddr,
    shared: Arc<Shared>,
    _slot: OwnedSemaphorePermit,
    buf: Vec<u8>,
    /// End of the last complete frame handed out; the scanner is at
    /// `buf[cursor..]`.
    cursor: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// Bytes the scanner needs at least to go on.
    need: usize,
    scanner: FrameScanner,
    /// Bytes of the budget this buffer holds.
    charged: usize,
    /// The idle timer: armed once, and moved only when it fires early (a
    /// frame completed since it was set), not at every read: a timer
    /// registered per read cost about a tenth of the relay's throughput.
    idle: Option<Pin<Box<Sleep>>>,
    /// When the last frame completed (or the connection opened).
    last_frame: Instant,
    /// A frame was completed since the last read.
    progressed: bool,
    /// The last read filled the buffer's room.
    busy: bool,
    frames: u64,
}

impl fmt::Debug for FrameConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameConn")
            .field("peer", &self.peer)
            .field("buffered", &self.buf.len())
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl FrameConn {
    pub(crate) fn new(
        io: Box<dyn Stream>,
        peer: SocketAddr,
        shared: Arc<Shared>,
        slot: OwnedSemaphorePermit,
    ) -> FrameConn {
        let limits = Limits::default().max_frame_bytes(shared.limits.max_frame_bytes);
        let now = Instant::now();
        let idle = shared
            .limits
            .idle_timeout
            .map(|t| Box::pin(tokio::time::sleep_until(now + t)));
        FrameConn {
            io,
            peer,
            _slot: slot,
            buf: Vec::new(),
            cursor: 0,
            base: 0,
            need: 1,
            scanner: FrameScanner::with_limits(limits),
            charged: 0,
            idle,
            last_frame: now,
            progressed: false,
            busy: false,
            frames: 0,
            shared,
        }
    }

    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The server's shared state (its log, its counters).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Frames completed so far.
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// The bytes of `range` (a [`Framed::range`], or several consecutive
    /// ones), valid until the next [`fill`](FrameConn::fill).
    #[inline]
    pub(crate) fn bytes(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// The next complete frame in the buffer, or `None` until more bytes
    /// are read.
    ///
    /// # Errors
    ///
    /// A frame that cannot be valid; the connection is then done.
    #[inline]
    pub(crate) fn next_frame(&mut self) -> Result<Option<Framed>, ConnError> {
        if self.cursor == self.buf.len() {
            return Ok(None);
        }
        match self.scanner.scan(&self.buf[self.cursor..]) {
            Ok(Scan::Complete { len, header }) => {
                let range = self.cursor..self.cursor + len;
                let framed = Framed {
                    header,
                    offset: self.base + range.start as u64,
                    range,
                    index: self.frames,
                };
                self.cursor += len;
                self.frames += 1;
                self.progressed = true;
                self.need = 1;
                Ok(Some(framed))
            }
            Ok(Scan::Incomplete { need }) => {
                self.need = need;
                Ok(None)
            }
            Err(e) => Err(self.frame_error(e)),
        }
    }

    #[cold]
    fn frame_error(&self, e: DecodeError) -> ConnError {
        let offset = self.base + self.cursor as u64;
        ConnError::Frame {
            index: self.frames,
            offset,
            error: e.with_base_offset(offset as usize),
            max_frame_bytes: self.shared.limits.max_frame_bytes,
        }
    }

    /// Bytes received of a frame not complete yet.
    pub(crate) fn partial(&self) -> usize {
        self.buf.len() - self.cursor
    }

    /// Drops the frames handed out (their ranges are no longer valid),
    /// makes room, and reads once: `Ok(true)` when bytes came, `Ok(false)`
    /// at the end of the stream between frames. Cancel-safe: nothing is
    /// lost if it is dropped before it completes.
    ///
    /// # Errors
    ///
    /// The socket failed, the stream ended inside a frame, no frame was
    /// completed within the idle timeout, or the buffer cannot grow.
    pub(crate) async fn fill(&mut self) -> Result<bool, ConnError> {
        if self.progressed {
            self.progressed = false;
            if self.idle.is_some() {
                self.last_frame = Instant::now();
            }
        }
        self.make_room()?;
        let room = self.buf.capacity() - self.buf.len();
        let read = loop {
            let Some(idle) = &mut self.idle else {
                break self.io.read_buf(&mut self.buf).await;
            };
            tokio::select! {
                biased;
                read = self.io.read_buf(&mut self.buf) => break read,
                () = idle.as_mut() => {
                    let timeout = self.shared.limits.idle_timeout.unwrap_or_default();
                    let due = self.last_frame + timeout;
                    if due > Instant::now() {
                        idle.as_mut().reset(due);
                        continue;
                    }
                    Counters::bump(&self.shared.counters.idle);
                    return Err(ConnError::Idle(timeout));
                }
            }
        };
        match read {
            Ok(0) => match self.scanner.truncation(&self.buf[self.cursor..]) {
                None => Ok(false),
                Some(e) => Err(self.frame_error(e)),
            },
            Ok(n) => {
                self.busy = n == room;
                Ok(true)
            }
            Err(e) => Err(ConnError::Io(e)),
        }
    }

    /// Drops what was handed out, then grows the buffer if the next read
    /// would have too little room: at most to twice its size (or by 64
    /// KiB), and no further than the current frame needs.
    fn make_room(&mut self) -> Result<(), ConnError> {
        if self.cursor > 0 {
            let len = self.buf.len();
            if self.cursor == len {
                self.buf.clear();
                if self.buf.capacity() > SHRINK_ABOVE {
                    self.buf = Vec::new();
                    self.shared.budget.release(self.charged);
                    self.charged = 0;
                }
            } else {
                self.buf.copy_within(self.cursor..len, 0);
                self.buf.truncate(len - self.cursor);
            }
            self.base += self.cursor as u64;
            self.cursor = 0;
        }
        let len = self.buf.len();
        let cap = self.buf.capacity();
        let need = self.need.max(1);
        let room = if self.busy { READ } else { need.min(READ) };
        if cap - len >= room {
            return Ok(());
        }
        let target = (len + room)
            .max(cap.saturating_mul(2).min(len.saturating_add(need)))
            .max(INITIAL);
        let extra = target - cap;
        if !self.shared.budget.charge(extra) {
            Counters::bump(&self.shared.counters.no_memory);
            return Err(ConnError::Budget {
                wanted: target,
                budget: self.shared.budget.max(),
            });
        }
        if self.buf.try_reserve_exact(target - len).is_err() {
            self.shared.budget.release(extra);
            Counters::bump(&self.shared.counters.no_memory);
            return Err(ConnError::NoMemory { wanted: target });
        }
        // `Vec` asks the allocator for exactly this capacity.
        self.charged += extra;
        Ok(())
    }
}

impl Drop for FrameConn {
    fn drop(&mut self) {
        self.shared.budget.release(self.charged);
    }
}

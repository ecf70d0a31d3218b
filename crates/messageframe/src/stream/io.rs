//! Frames over `std::io`: [`FrameReader`] and [`FrameWriter`].

use std::fmt;
use std::io::{self, IoSlice, Read, Write};

use bytes::Bytes;

use crate::decode::Decoder;
use crate::encode::encode_frame_with;
use crate::error::DecodeError;
use crate::error::EncodeError;
use crate::frame::Frame;
use crate::header::Header;
use crate::view::FrameView;
use crate::wire::write::append;

use super::scan::{FrameScanner, Scan};

/// Why reading or writing a stream of frames failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamError {
    /// The underlying reader or writer failed.
    Io(io::Error),
    /// A frame is malformed or exceeds a limit, or the stream ended inside
    /// a frame ([`ErrorKind::Truncated`](crate::ErrorKind::Truncated)). The
    /// error's offset counts from the start of the stream.
    Decode(DecodeError),
    /// A frame cannot be encoded (MessagePack cannot express it, or the
    /// buffer cannot grow): nothing of it was written.
    Encode(EncodeError),
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Io(e) => write!(f, "i/o error: {e}"),
            StreamError::Decode(e) => write!(f, "invalid frame: {e}"),
            StreamError::Encode(e) => write!(f, "cannot encode the frame: {e}"),
        }
    }
}

impl std::error::Error for StreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StreamError::Io(e) => Some(e),
            StreamError::Decode(e) => Some(e),
            StreamError::Encode(e) => Some(e),
        }
    }
}

impl From<io::Error> for StreamError {
    fn from(e: io::Error) -> Self {
        StreamError::Io(e)
    }
}

impl From<DecodeError> for StreamError {
    fn from(e: DecodeError) -> Self {
        StreamError::Decode(e)
    }
}

impl From<EncodeError> for StreamError {
    fn from(e: EncodeError) -> Self {
        StreamError::Encode(e)
    }
}

impl From<StreamError> for io::Error {
    /// An I/O error as it was; a decoding error as
    /// [`InvalidData`](io::ErrorKind::InvalidData); an encoding error as
    /// [`InvalidInput`](io::ErrorKind::InvalidInput).
    fn from(e: StreamError) -> Self {
        match e {
            StreamError::Io(e) => e,
            StreamError::Decode(e) => io::Error::new(io::ErrorKind::InvalidData, e),
            StreamError::Encode(e) => io::Error::new(io::ErrorKind::InvalidInput, e),
        }
    }
}

/// Smallest read: what a reader asks the OS for when a frame needs fewer
/// bytes (a read returns what has arrived, so this only bounds the syscalls).
const READ_CHUNK: usize = 64 << 10;

/// Reads frames from a byte stream (a socket, a pipe, a file of
/// concatenated frames) as they arrive.
///
/// Frames are found with a [`FrameScanner`] over one buffer that is reused
/// for the whole stream: each byte is scanned once, a frame's bytes are
/// read with as few `read` calls as the stream allows, and the buffer holds
/// at most one frame (plus what arrived after it) so memory is bounded by
/// the decoder's [`Limits::max_frame_bytes`](crate::Limits::max_frame_bytes).
/// A frame is returned as soon as its last byte is read: a reader on a live
/// stream never waits for more than the frame it returns.
///
/// Three ways to take frames:
/// - as an [`Iterator`] of `Result<Frame, StreamError>` (a new frame each);
/// - [`read_frame`](FrameReader::read_frame) into one reused [`Frame`]: in
///   the steady state no allocation at all;
/// - [`read_raw`](FrameReader::read_raw) (the frame's bytes and header, to
///   forward or route) or [`read_view`](FrameReader::read_view) (a
///   zero-copy [`FrameView`]), borrowed until the next call.
///
/// An error (a malformed frame, the stream ending inside one, an I/O error)
/// ends the stream: every later call returns nothing. Decoding errors carry
/// the offset from the start of the stream.
///
/// ```
/// use messageframe::{Frame, FrameReader, FrameWriter, Header};
///
/// let mut sent = Vec::new();
/// let mut writer = FrameWriter::new(&mut sent);
/// for i in 0..3 {
///     let mut frame = Frame::new(Header::new(1, 2, 3, 4).with_counter(i));
///     frame.add("dev", "i", i as i64);
///     writer.write_frame(&frame)?;
/// }
/// writer.flush()?;
/// drop(writer);
///
/// let mut reader = FrameReader::new(&sent[..]);
/// let mut frame = Frame::default();
/// let mut counters = Vec::new();
/// while reader.read_frame(&mut frame)? {
///     counters.push(frame.header().counter());
/// }
/// assert_eq!(counters, [0, 1, 2]);
/// # Ok::<(), messageframe::StreamError>(())
/// ```
pub struct FrameReader<R> {
    inner: R,
    /// Read buffer: `buf[start..end]` holds the bytes not yet returned;
    /// `buf.len()` is how much of it is initialised (grown geometrically as
    /// bytes arrive, never to a size a frame only announced).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The frame returned last: `buf[last..start]`.
    last: usize,
    /// A complete frame found at `buf[start..]` and not returned yet.
    ready: Option<(usize, Header)>,
    scanner: FrameScanner,
    decoder: Decoder,
    /// Stream offset of `buf[start]`.
    offset: u64,
    frames: u64,
    eof: bool,
    failed: bool,
}

impl<R> fmt::Debug for FrameReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameReader")
            .field("offset", &self.offset)
            .field("frames", &self.frames)
            .field("buffered", &(self.end - self.start))
            .field("eof", &self.eof)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl<R: Read> FrameReader<R> {
    /// A reader with the default [`Decoder`].
    pub fn new(inner: R) -> Self {
        FrameReader::with_decoder(inner, Decoder::new())
    }

    /// A reader that decodes with `decoder` and frames with its limits.
    pub fn with_decoder(inner: R, decoder: Decoder) -> Self {
        FrameReader {
            inner,
            buf: Vec::new(),
            start: 0,
            end: 0,
            last: 0,
            ready: None,
            scanner: FrameScanner::with_limits(*decoder.current_limits()),
            decoder,
            offset: 0,
            frames: 0,
            eof: false,
            failed: false,
        }
    }

    /// Reads the next frame into `frame`, reusing its capacity (see
    /// [`Frame::decode_from`]). Returns `false`, leaving `frame` untouched,
    /// when the stream ended cleanly between frames.
    ///
    /// # Errors
    ///
    /// As [`read_raw`](FrameReader::read_raw), and the frame's decoding
    /// errors (UTF-8, value ranges, duplicates if the decoder is strict);
    /// `frame` then holds no parameters and no attachments.
    pub fn read_frame(&mut self, frame: &mut Frame) -> Result<bool, StreamError> {
        let offset = self.offset;
        if self.next_complete()?.is_none() {
            return Ok(false);
        }
        if let Err(e) = self
            .decoder
            .decode_into(frame, &self.buf[self.last..self.start])
        {
            self.failed = true;
            return Err(StreamError::Decode(e.with_base_offset(offset as usize)));
        }
        Ok(true)
    }

    /// The next frame's bytes and header, without decoding its parameters:
    /// for forwarding or routing. The frame's structure and the limits were
    /// checked (see [`FrameScanner`]), not its strings or values. `None` when
    /// the stream ended cleanly between frames.
    ///
    /// # Errors
    ///
    /// An I/O error; a malformed frame or one exceeding the limits; the
    /// stream ending inside a frame ([`ErrorKind::Truncated`](crate::ErrorKind::Truncated)).
    pub fn read_raw(&mut self) -> Result<Option<(Header, &[u8])>, StreamError> {
        let header = match self.next_complete()? {
            Some((_, header)) => header,
            None => return Ok(None),
        };
        Ok(Some((header, &self.buf[self.last..self.start])))
    }

    /// The next frame as a zero-copy [`FrameView`] of the reader's buffer,
    /// fully validated. `None` when the stream ended cleanly.
    ///
    /// # Errors
    ///
    /// As [`read_frame`](FrameReader::read_frame).
    pub fn read_view(&mut self) -> Result<Option<FrameView<'_>>, StreamError> {
        let offset = self.offset;
        let decoder = self.decoder;
        if self.next_complete()?.is_none() {
            return Ok(None);
        }
        match decoder.view(&self.buf[self.last..self.start]) {
            Ok(view) => Ok(Some(view)),
            Err(e) => {
                self.failed = true;
                Err(StreamError::Decode(e.with_base_offset(offset as usize)))
            }
        }
    }

    /// Finds the next complete frame; on success it is `buf[last..start]`.
    fn next_complete(&mut self) -> Result<Option<(usize, Header)>, StreamError> {
        if self.failed {
            return Ok(None);
        }
        let result = self.scan_next();
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn scan_next(&mut self) -> Result<Option<(usize, Header)>, StreamError> {
        loop {
            if let Some((len, header)) = self.ready.take() {
                self.last = self.start;
                self.start += len;
                self.offset += len as u64;
                self.frames += 1;
                return Ok(Some((len, header)));
            }
            let need = self.scan_buffered()?;
            if self.ready.is_some() {
                continue;
            }
            if self.eof {
                let pending = &self.buf[self.start..self.end];
                return match self.scanner.truncation(pending) {
                    None => Ok(None),
                    Some(e) => Err(StreamError::Decode(
                        e.with_base_offset(self.offset as usize),
                    )),
                };
            }
            self.fill(need)?;
        }
    }

    /// Scans the buffered bytes (never reads): a complete frame goes to
    /// `ready`; otherwise returns how many more bytes the frame needs.
    fn scan_buffered(&mut self) -> Result<usize, StreamError> {
        if self.ready.is_some() {
            return Ok(0);
        }
        match self.scanner.scan(&self.buf[self.start..self.end]) {
            Ok(Scan::Complete { len, header }) => {
                self.ready = Some((len, header));
                Ok(0)
            }
            Ok(Scan::Incomplete { need }) => Ok(need),
            Err(e) => Err(StreamError::Decode(
                e.with_base_offset(self.offset as usize),
            )),
        }
    }

    /// Whether the next frame is already entirely in the buffer, so that
    /// the next read returns it without reading the stream. Only scans the
    /// bytes already buffered (work the next read does not repeat); never
    /// blocks. A program that forwards or prints frames flushes its output
    /// when this is `false`, just before the reader would wait.
    ///
    /// # Errors
    ///
    /// A malformed frame found in the buffer (the reader then stops, as
    /// after any error).
    pub fn has_buffered_frame(&mut self) -> Result<bool, StreamError> {
        if self.failed {
            return Ok(false);
        }
        match self.scan_buffered() {
            Ok(_) => Ok(self.ready.is_some()),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// One `read` into the buffer, with room for at least `need` more
    /// bytes reserved (the scanner's lower bound of the frame's rest, which
    /// the limits already bound): the buffer grows once per frame size.
    fn fill(&mut self, need: usize) -> io::Result<()> {
        let pending = self.end - self.start;
        // Move the partial frame to the front once per frame, when the
        // frames before it are a large part of the buffer or the room after
        // it is short.
        let min_room = need.clamp(READ_CHUNK / 8, READ_CHUNK);
        if self.start > 0
            && (self.start >= self.buf.len() / 2 || self.buf.len() - self.end < min_room)
        {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.last = 0;
            self.end = pending;
        }
        let wanted = self.end.saturating_add(need);
        if self.buf.capacity() < wanted {
            self.buf.reserve(wanted - self.buf.len());
        }
        // Initialise (zero) room to read into geometrically, not to the
        // announced size at once: a hostile announcement within the limits
        // costs address space, not touched memory, until its bytes arrive.
        if self.buf.len() - self.end < min_room {
            let grow = need.clamp(READ_CHUNK, self.end.max(READ_CHUNK));
            self.buf.resize(self.end + grow, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Frames returned so far.
    #[must_use]
    pub fn frames_read(&self) -> u64 {
        self.frames
    }

    /// Stream offset of the next frame (the bytes returned so far).
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes read from the stream and not returned yet: the start of the
    /// next frame (after an error, of the frame that failed).
    #[must_use]
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The underlying reader; reading from it directly loses the frame
    /// boundary.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The underlying reader; the bytes of [`buffer`](FrameReader::buffer)
    /// are lost.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Iterator for FrameReader<R> {
    type Item = Result<Frame, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut frame = Frame::blank();
        match self.read_frame(&mut frame) {
            Ok(true) => Some(Ok(frame)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl<R: Read> std::iter::FusedIterator for FrameReader<R> {}

/// Below this many buffered bytes, [`FrameWriter`] keeps frames to write
/// them together.
const WRITE_CHUNK: usize = 64 << 10;

/// Attachments at least this large are written from where they are, not
/// copied into [`FrameWriter`]'s buffer.
const SHARED_MIN: usize = 64 << 10;

/// Writes `parts` in order with vectored writes (`Write::write_all_vectored`
/// is not stable).
fn write_all_parts(w: &mut impl Write, parts: &[&[u8]]) -> io::Result<()> {
    const SLICES: usize = 16;
    let (mut i, mut at) = (0, 0);
    while i < parts.len() {
        let mut slices = [IoSlice::new(&[]); SLICES];
        let mut n = 0;
        for (k, part) in parts[i..].iter().take(SLICES).enumerate() {
            slices[n] = IoSlice::new(if k == 0 { &part[at..] } else { part });
            n += 1;
        }
        let mut written = match w.write_vectored(&slices[..n]) {
            Ok(0) if slices[..n].iter().any(|s| !s.is_empty()) => {
                return Err(io::ErrorKind::WriteZero.into())
            }
            Ok(written) => written,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        // Skip what was written, and empty parts.
        while i < parts.len() {
            let left = parts[i].len() - at;
            if written >= left {
                written -= left;
                i += 1;
                at = 0;
            } else {
                at += written;
                break;
            }
        }
    }
    Ok(())
}

/// Writes frames to a byte stream, encoding each straight into one reused
/// buffer.
///
/// Frames are buffered like a [`BufWriter`](std::io::BufWriter) does: small
/// ones are written together once 64 KiB are buffered, and
/// [`flush`](FrameWriter::flush) writes everything out (call it when a frame
/// must leave now, e.g. after each frame on a live link). Dropping the
/// writer flushes too, ignoring errors; [`into_inner`](FrameWriter::into_inner)
/// reports them.
///
/// Attachments of 64 KiB or more are not copied into the buffer: the frame
/// is written at once, its large attachments straight from their `Bytes`
/// (vectored writes).
///
/// ```
/// use messageframe::{Frame, FrameWriter, Header};
///
/// let mut frame = Frame::new(Header::new(7, 1, 2, 3));
/// frame.add("sensor", "temp", 21.5);
/// let mut writer = FrameWriter::new(Vec::new());
/// writer.write_frame(&frame)?;
/// let bytes = writer.into_inner()?;
/// assert_eq!(bytes, frame.encode()?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FrameWriter<W: Write> {
    /// `None` only while `into_inner` takes it out.
    inner: Option<W>,
    buf: Vec<u8>,
    /// Large attachments of the frame being written, with the offset in
    /// `buf` where each goes (reused: no allocation per frame).
    shared: Vec<(usize, Bytes)>,
    frames: u64,
}

impl<W: Write> fmt::Debug for FrameWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameWriter")
            .field("buffered", &self.buf.len())
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl<W: Write> FrameWriter<W> {
    /// A writer over `inner`.
    pub fn new(inner: W) -> Self {
        FrameWriter {
            inner: Some(inner),
            buf: Vec::new(),
            shared: Vec::new(),
            frames: 0,
        }
    }

    /// Encodes `frame` into the buffer; writes the buffer out once it holds
    /// 64 KiB or more.
    ///
    /// # Errors
    ///
    /// The underlying writer's errors. The frame is then still buffered
    /// (with any before it that were not written).
    pub fn write_frame(&mut self, frame: &Frame) -> io::Result<()> {
        self.frames += 1;
        if frame.attachments().all(|(_, data)| data.len() < SHARED_MIN) {
            frame
                .encode_into(&mut self.buf)
                .map_err(|e| io::Error::from(StreamError::Encode(e)))?;
            return self.write_if_full();
        }
        let (buf, shared) = (&mut self.buf, &mut self.shared);
        shared.clear();
        encode_frame_with(frame, buf, |buf, data| {
            if data.len() >= SHARED_MIN {
                shared.push((buf.len(), data.clone()));
            } else {
                append(buf, data);
            }
        })
        .map_err(|e| io::Error::from(StreamError::Encode(e)))?;
        // The buffer's bytes with the large attachments spliced in at
        // their offsets, in as few writes as the writer takes.
        let mut parts: Vec<&[u8]> = Vec::with_capacity(2 * self.shared.len() + 1);
        let mut at = 0;
        for (offset, data) in &self.shared {
            parts.push(&self.buf[at..*offset]);
            parts.push(data);
            at = *offset;
        }
        parts.push(&self.buf[at..]);
        let inner = self.inner.as_mut().expect("present until into_inner");
        write_all_parts(inner, &parts)?;
        self.shared.clear();
        self.buf.clear();
        Ok(())
    }

    /// Appends the bytes of one or more whole frames as they are (from
    /// [`FrameReader::read_raw`], a relay, a file): nothing is checked.
    ///
    /// # Errors
    ///
    /// As [`write_frame`](FrameWriter::write_frame).
    pub fn write_raw(&mut self, frame_bytes: &[u8]) -> io::Result<()> {
        if self.buf.is_empty() && frame_bytes.len() >= WRITE_CHUNK {
            // Large and nothing before it: no copy through the buffer.
            self.frames += 1;
            return self.writer().write_all(frame_bytes);
        }
        append(&mut self.buf, frame_bytes);
        self.frames += 1;
        self.write_if_full()
    }

    fn write_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() >= WRITE_CHUNK {
            self.write_buffer()?;
        }
        Ok(())
    }

    fn write_buffer(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let inner = self.inner.as_mut().expect("present until into_inner");
            inner.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn writer(&mut self) -> &mut W {
        self.inner.as_mut().expect("present until into_inner")
    }

    /// Writes the buffered frames out and flushes the underlying writer.
    ///
    /// # Errors
    ///
    /// The underlying writer's errors.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_buffer()?;
        self.writer().flush()
    }

    /// Frames written (or buffered) so far.
    #[must_use]
    pub fn frames_written(&self) -> u64 {
        self.frames
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        self.inner.as_ref().expect("present until into_inner")
    }

    /// The underlying writer; writing to it directly may split frames.
    pub fn get_mut(&mut self) -> &mut W {
        self.writer()
    }

    /// Flushes and returns the underlying writer.
    ///
    /// # Errors
    ///
    /// A failed flush; the buffered frames are then lost with the writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.inner.take().expect("present until into_inner"))
    }
}

impl<W: Write> Drop for FrameWriter<W> {
    fn drop(&mut self) {
        if self.inner.is_some() {
            // As BufWriter: a failed write on drop has nowhere to go.
            let _ = self.flush();
        }
    }
}

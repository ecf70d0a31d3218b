//! tokio-util codecs for frames on async byte streams (feature `tokio`).
//!
//! - [`FrameCodec`] decodes owned [`Frame`]s whose attachments share the
//!   read buffer (no attachment copy), and encodes `&Frame` straight into
//!   the write buffer;
//! - [`RawFrameCodec`] yields each frame's bytes with its header, without
//!   decoding the payload: for routers and relays;
//! - [`FrameSink`] sends frames like `FramedWrite<_, FrameCodec>`, but
//!   writes large attachments from where they are instead of copying them
//!   into the write buffer.
//!
//! Both find frames with a [`FrameScanner`]: each byte is scanned once, the
//! limits of the decoder are checked as soon as a frame announces a size
//! (before its bytes are buffered), and the read buffer is reserved for the
//! rest of the frame once that is known, so it grows once per frame size.
//!
//! ```
//! use futures_util::{SinkExt, StreamExt};
//! use messageframe::codec::FrameCodec;
//! use messageframe::{Frame, Header};
//! use tokio::net::{TcpListener, TcpStream};
//! use tokio_util::codec::{FramedRead, FramedWrite};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let listener = TcpListener::bind("127.0.0.1:0").await?;
//! let addr = listener.local_addr()?;
//! let sender = tokio::spawn(async move {
//!     let stream = TcpStream::connect(addr).await?;
//!     let mut sink = FramedWrite::new(stream, FrameCodec::new());
//!     let mut frame = Frame::new(Header::new(1, 2, 3, 4));
//!     frame.add("gps", "lat", 52.1);
//!     sink.send(&frame).await
//! });
//! let (socket, _) = listener.accept().await?;
//! let mut frames = FramedRead::new(socket, FrameCodec::new());
//! while let Some(frame) = frames.next().await {
//!     assert_eq!(frame?.find("gps", "lat").and_then(|v| v.as_f64()), Some(52.1));
//! }
//! sender.await??;
//! # Ok(())
//! # })
//! # }
//! ```

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures_sink::Sink;
use tokio::io::AsyncWrite;
use tokio_util::codec::{Decoder as TokioDecoder, Encoder};

use crate::decode::Decoder;
use crate::encode::{encode_frame, encode_frame_with};
use crate::error::EncodeError;
use crate::frame::Frame;
use crate::header::Header;
use crate::stream::{FrameScanner, Scan, StreamError};
use crate::wire::write::append;

/// Smallest room a decoder leaves for the next read.
const MIN_READ: usize = 64 << 10;

/// The framing both codecs share: a scanner and the stream offset.
#[derive(Debug, Clone)]
struct Framing {
    scanner: FrameScanner,
    /// Stream offset of the next frame.
    offset: u64,
}

impl Framing {
    fn new(decoder: &Decoder) -> Self {
        Framing {
            scanner: FrameScanner::with_limits(*decoder.current_limits()),
            offset: 0,
        }
    }

    /// The next complete frame of `src`: its length, header and stream
    /// offset. `None` after reserving room for the rest of the frame.
    fn next(&mut self, src: &mut BytesMut) -> Result<Option<(usize, Header, u64)>, StreamError> {
        match self.scanner.scan(src) {
            Ok(Scan::Complete { len, header }) => {
                let at = self.offset;
                self.offset += len as u64;
                Ok(Some((len, header, at)))
            }
            Ok(Scan::Incomplete { need }) => {
                // Room for the rest of the frame (bounded: the scanner has
                // checked the announced sizes against the limits), and at
                // least a read's worth: `FramedRead` reads into the spare
                // capacity, and the tail left after the last frame was
                // split off can be a few bytes.
                src.reserve(need.max(MIN_READ));
                Ok(None)
            }
            Err(e) => Err(StreamError::Decode(
                e.with_base_offset(self.offset as usize),
            )),
        }
    }

    /// At the end of the stream: nothing, or the truncation of the frame
    /// that `src` starts.
    fn at_eof(&self, src: &BytesMut) -> Result<(), StreamError> {
        // `decode` scanned all of `src` just before: the scanner is idle
        // exactly when `src` is empty.
        match self.scanner.truncation(src) {
            None => Ok(()),
            Some(e) => Err(StreamError::Decode(
                e.with_base_offset(self.offset as usize),
            )),
        }
    }
}

/// A codec of owned [`Frame`]s.
///
/// Decoding splits each complete frame off the read buffer
/// (`split_to(len).freeze()`) and decodes it with
/// [`Decoder::decode_shared_into`]: attachments are slices of the received
/// bytes, not copies. Encoding writes `&Frame` straight into the write
/// buffer (reserved once for the frame's size).
///
/// Encoding takes `&Frame` (the frame stays the caller's, to reuse).
/// Errors are [`StreamError`]s whose decoding offsets count from the start
/// of the stream. After an error, `FramedRead` ends the stream.
#[derive(Debug, Clone)]
pub struct FrameCodec {
    framing: Framing,
    decoder: Decoder,
    /// Text bytes (keys and strings) of the last frame: each new frame's
    /// text arena is reserved at that size once, instead of growing by
    /// doubling through the decode (streams repeat their shapes). The
    /// entry table and attachment list are sized exactly by the decode.
    text_hint: usize,
}

impl Default for FrameCodec {
    fn default() -> Self {
        FrameCodec::new()
    }
}

impl FrameCodec {
    /// A codec with the default [`Decoder`].
    #[must_use]
    pub fn new() -> Self {
        FrameCodec::with_decoder(Decoder::new())
    }

    /// A codec that decodes with `decoder` and frames with its limits.
    #[must_use]
    pub fn with_decoder(decoder: Decoder) -> Self {
        FrameCodec {
            framing: Framing::new(&decoder),
            decoder,
            text_hint: 0,
        }
    }
}

impl TokioDecoder for FrameCodec {
    type Item = Frame;
    type Error = StreamError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, StreamError> {
        let Some((len, _, at)) = self.framing.next(src)? else {
            return Ok(None);
        };
        let bytes = src.split_to(len).freeze();
        let mut frame = Frame::blank();
        // Bounded: the last frame's text, which its decode was allowed.
        frame.params_mut().reserve(0, self.text_hint.min(len));
        self.decoder
            .decode_shared_into(&mut frame, &bytes)
            .map_err(|e| StreamError::Decode(e.with_base_offset(at as usize)))?;
        self.text_hint = frame.params().text().len();
        Ok(Some(frame))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, StreamError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None => self.framing.at_eof(src).map(|()| None),
        }
    }
}

impl Encoder<&Frame> for FrameCodec {
    type Error = StreamError;

    fn encode(&mut self, frame: &Frame, dst: &mut BytesMut) -> Result<(), StreamError> {
        Ok(encode_frame(frame, dst)?)
    }
}

/// One frame as [`RawFrameCodec`] yields it: its bytes, undecoded, and its
/// header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    /// The frame's header, read while the frame was scanned.
    pub header: Header,
    /// The frame's bytes exactly as received (a slice of the read buffer).
    pub bytes: Bytes,
}

/// A codec of undecoded frames: each complete frame's bytes (`Bytes`, a
/// slice of the read buffer) and its header, for routing or forwarding
/// without decoding parameters. The frame's structure and the decoder's
/// limits are checked (see [`FrameScanner`]); its strings and values are
/// not.
///
/// Encoding writes a [`RawFrame`]'s bytes, as they are, into the write
/// buffer. (One `Encoder` impl per codec, so that `SinkExt::flush` needs no
/// type annotation.)
#[derive(Debug, Clone)]
pub struct RawFrameCodec {
    framing: Framing,
}

impl Default for RawFrameCodec {
    fn default() -> Self {
        RawFrameCodec::new()
    }
}

impl RawFrameCodec {
    /// A codec with the default [`Limits`](crate::Limits).
    #[must_use]
    pub fn new() -> Self {
        RawFrameCodec::with_decoder(Decoder::new())
    }

    /// A codec that frames with `decoder`'s limits.
    #[must_use]
    pub fn with_decoder(decoder: Decoder) -> Self {
        RawFrameCodec {
            framing: Framing::new(&decoder),
        }
    }
}

impl TokioDecoder for RawFrameCodec {
    type Item = RawFrame;
    type Error = StreamError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, StreamError> {
        Ok(self.framing.next(src)?.map(|(len, header, _)| RawFrame {
            header,
            bytes: src.split_to(len).freeze(),
        }))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<RawFrame>, StreamError> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None => self.framing.at_eof(src).map(|()| None),
        }
    }
}

impl Encoder<RawFrame> for RawFrameCodec {
    type Error = StreamError;

    fn encode(&mut self, frame: RawFrame, dst: &mut BytesMut) -> Result<(), StreamError> {
        append(dst, &frame.bytes);
        Ok(())
    }
}

/// Attachments at least this large are written from where they are by
/// [`FrameSink`], not copied into its buffer.
const SHARED_MIN: usize = 16 << 10;

/// Bytes [`FrameSink`] holds before `poll_ready` writes them out (as
/// `FramedWrite` does).
const SINK_BACKPRESSURE: usize = 128 << 10;

/// A `Sink<&Frame>` over any `AsyncWrite` that sends large attachments
/// without copying them.
///
/// `FramedWrite<_, FrameCodec>` encodes each frame, attachments included,
/// into its write buffer (tokio-util's `Encoder` writes into a `BytesMut`):
/// a 1 MiB attachment is copied once more before the socket copies it.
/// `FrameSink` encodes everything but the data of attachments of 16 KiB or
/// more, and writes that data straight from the frame's `Bytes` with
/// vectored writes, in order. The bytes on the wire are the same; read
/// them with [`FrameCodec`] or anything else.
///
/// ```
/// use futures_util::{SinkExt, StreamExt};
/// use messageframe::codec::{FrameCodec, FrameSink};
/// use messageframe::{Frame, Header};
/// use tokio_util::codec::FramedRead;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let (client, server) = tokio::io::duplex(1 << 16);
/// let mut frame = Frame::new(Header::new(1, 2, 3, 4));
/// frame.add_attachment("iq", vec![7u8; 1 << 20]);
/// let sent = frame.clone();
/// let sender = tokio::spawn(async move {
///     let mut sink = FrameSink::new(client);
///     sink.send(&sent).await
/// });
/// let mut frames = FramedRead::new(server, FrameCodec::new());
/// assert_eq!(frames.next().await.unwrap()?, frame);
/// sender.await??;
/// # Ok(())
/// # })
/// # }
/// ```
#[derive(Debug)]
pub struct FrameSink<W> {
    io: W,
    /// Encoded bytes not written yet, in order: parts of the encoding and
    /// attachment data; `buf` (the encoding since the last attachment
    /// taken as it is) follows them.
    queue: VecDeque<Bytes>,
    /// Bytes in `queue`.
    in_queue: usize,
    buf: BytesMut,
}

impl<W> FrameSink<W> {
    /// A sink writing to `io`.
    pub fn new(io: W) -> Self {
        FrameSink {
            io,
            queue: VecDeque::new(),
            in_queue: 0,
            buf: BytesMut::new(),
        }
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.io
    }

    /// The underlying writer; writing to it directly may split frames.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.io
    }

    /// The underlying writer; bytes not flushed yet are lost.
    pub fn into_inner(self) -> W {
        self.io
    }

    /// Bytes encoded and not written yet.
    fn pending(&self) -> usize {
        self.in_queue + self.buf.len()
    }

    fn encode(&mut self, frame: &Frame) -> Result<(), EncodeError> {
        let (buf, queue, in_queue) = (&mut self.buf, &mut self.queue, &mut self.in_queue);
        encode_frame_with(frame, buf, |buf, data| {
            if data.len() >= SHARED_MIN {
                let head = buf.split().freeze();
                *in_queue += head.len() + data.len();
                queue.push_back(head);
                queue.push_back(data.clone());
            } else {
                append(buf, data);
            }
        })
    }
}

impl<W: AsyncWrite + Unpin> FrameSink<W> {
    /// Writes everything encoded so far.
    fn poll_write_out(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        const SLICES: usize = 64;
        while !self.queue.is_empty() || !self.buf.is_empty() {
            let mut slices = [IoSlice::new(&[]); SLICES];
            let mut n = 0;
            for part in self.queue.iter().take(SLICES) {
                slices[n] = IoSlice::new(part);
                n += 1;
            }
            if n < SLICES && !self.buf.is_empty() {
                slices[n] = IoSlice::new(&self.buf);
                n += 1;
            }
            let mut written = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, &slices[..n]))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            while written > 0 {
                match self.queue.front_mut() {
                    Some(part) if part.len() <= written => {
                        written -= part.len();
                        self.in_queue -= part.len();
                        self.queue.pop_front();
                    }
                    Some(part) => {
                        part.advance(written);
                        self.in_queue -= written;
                        written = 0;
                    }
                    None => {
                        self.buf.advance(written);
                        written = 0;
                    }
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> Sink<&Frame> for FrameSink<W> {
    type Error = StreamError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), StreamError>> {
        if self.pending() >= SINK_BACKPRESSURE {
            ready!(self.poll_write_out(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(mut self: Pin<&mut Self>, frame: &Frame) -> Result<(), StreamError> {
        self.encode(frame)?;
        Ok(())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), StreamError>> {
        ready!(self.poll_write_out(cx))?;
        Poll::Ready(Ok(ready!(Pin::new(&mut self.io).poll_flush(cx))?))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), StreamError>> {
        ready!(self.poll_write_out(cx))?;
        Poll::Ready(Ok(ready!(Pin::new(&mut self.io).poll_shutdown(cx))?))
    }
}

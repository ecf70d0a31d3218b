//! The decoder: strict about structure, liberal about encodings (SPEC §3).
//!
//! One walk over the input ([`walk`]) checks the whole frame and hands each
//! parameter and attachment to a [`Sink`]: the owned decoder stores them in a
//! [`Frame`], the [`FrameView`](crate::FrameView) only counts them. Both get
//! the same validation because they share the walk.

use std::ops::Range;

use bytes::Bytes;

use crate::error::{Context, DecodeError, ErrorKind, Expected, Limit};
use crate::frame::Frame;
use crate::header::Header;
use crate::value::{UnknownValue, ValueRef, TAG_BOOL, TAG_DOUBLE, TAG_INT, TAG_STRING};

/// Upper bounds a decoder enforces, so that hostile input cannot make it
/// allocate or work without bound. Exceeding one is
/// [`ErrorKind::LimitExceeded`] naming the limit.
///
/// The defaults suit telemetry frames with bulk attachments; tighten them for
/// an endpoint that only expects small messages.
///
/// ```
/// use messageframe::{Decoder, ErrorKind, Frame, Limit, Limits};
///
/// let mut frame = Frame::default();
/// for k in 0..10 {
///     frame.add("dev", &format!("p{k}"), k);
/// }
/// let bytes = frame.encode();
/// let strict = Decoder::new().limits(Limits { max_params: 8, ..Limits::default() });
/// let err = strict.decode(&bytes).unwrap_err();
/// assert_eq!(err.kind(), &ErrorKind::LimitExceeded(Limit::Params));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame, in encoded bytes. Default 256 MiB; values above 1 GiB
    /// are treated as 1 GiB (the storage's offsets are 32-bit).
    pub max_frame_bytes: usize,
    /// Most parameters in one frame. Default 1,048,576.
    pub max_params: usize,
    /// Most attachments in one frame. Default 65,536.
    pub max_attachments: usize,
    /// Most attachment data bytes in one frame, all attachments together.
    /// Default 256 MiB.
    pub max_attachment_bytes: usize,
    /// Longest key, string value, attachment name or unknown raw value, in
    /// bytes. Default 16 MiB.
    pub max_string_len: usize,
    /// Longest parameter key (the flat key, `device` + U+001F + `param`), in
    /// bytes; keys must also fit `max_string_len`. Default 64 KiB.
    pub max_key_len: usize,
    /// Most bytes one decode may request from the allocator. An owned decode
    /// counts everything it stores: the entry table and its hash index, the
    /// key/string and raw-value arenas (which grow by doubling, counted at
    /// their new size each time they grow), the attachment table and names,
    /// and copied attachment data. A strict view counts its
    /// duplicate-detection set; a lenient view allocates nothing. Each
    /// allocation is charged *before* it is made, so a decode that fails
    /// with this limit has allocated at most this much. Not counted: the
    /// [`DecodeError`] itself (one box of 64 bytes, plus a copy of the key
    /// when the error is in a value). Default 1 GiB.
    pub max_alloc_bytes: usize,
}

/// The hard ceiling on `max_frame_bytes` (see [`Limits::max_frame_bytes`]).
const FRAME_BYTES_CEILING: usize = 1 << 30;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_bytes: 256 << 20,
            max_params: 1 << 20,
            max_attachments: 1 << 16,
            max_attachment_bytes: 256 << 20,
            max_string_len: 16 << 20,
            max_key_len: 64 << 10,
            max_alloc_bytes: 1 << 30,
        }
    }
}

impl Limits {
    /// No limits beyond the input's own size (and the 1 GiB frame ceiling).
    /// For trusted input only.
    #[must_use]
    pub const fn none() -> Self {
        Limits {
            max_frame_bytes: usize::MAX,
            max_params: usize::MAX,
            max_attachments: usize::MAX,
            max_attachment_bytes: usize::MAX,
            max_string_len: usize::MAX,
            max_key_len: usize::MAX,
            max_alloc_bytes: usize::MAX,
        }
    }
}

/// Decoding options and entry points: [`Limits`], and whether duplicate keys
/// are an error.
///
/// `Frame::decode`, `Frame::decode_from` and `FrameView::new` use
/// `Decoder::new()`; build your own to change the options.
///
/// Duplicate keys: by default a frame with a key twice decodes, keeps both
/// entries (both are re-encoded, so a relay loses nothing) and lookups find
/// the first occurrence, as the C++ library does. [`strict`](Decoder::strict)
/// makes them an [`ErrorKind::DuplicateKey`] instead.
///
/// ```
/// use messageframe::{Decoder, Frame};
///
/// let mut frame = Frame::default();
/// frame.add("gps", "lat", 52.1);
/// let mut stream = frame.encode();
/// stream.extend_from_slice(&frame.encode());
///
/// // Several frames in one buffer: decode them one after the other.
/// let decoder = Decoder::new().strict(true);
/// let mut rest = &stream[..];
/// let mut out = Frame::default();
/// while !rest.is_empty() {
///     let used = decoder.decode_prefix_into(&mut out, rest)?;
///     assert_eq!(out.find("gps", "lat").and_then(|v| v.as_f64()), Some(52.1));
///     rest = &rest[used..];
/// }
/// # Ok::<(), messageframe::DecodeError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decoder {
    limits: Limits,
    strict: bool,
}

impl Decoder {
    /// Default limits, duplicates allowed (first occurrence wins).
    #[must_use]
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Replaces the limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Makes duplicate keys an error ([`ErrorKind::DuplicateKey`]).
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The limits in force.
    #[must_use]
    pub fn current_limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether duplicate keys are an error.
    #[must_use]
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// Decodes exactly one frame (trailing bytes are an error) into a new
    /// [`Frame`].
    pub fn decode(&self, bytes: &[u8]) -> Result<Frame, DecodeError> {
        let mut frame = Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 0, 0));
        self.decode_into(&mut frame, bytes)?;
        Ok(frame)
    }

    /// Decodes exactly one frame into `frame`, reusing its capacity. On
    /// error `frame` holds no parameters and no attachments, and its header
    /// is unchanged.
    pub fn decode_into(&self, frame: &mut Frame, bytes: &[u8]) -> Result<(), DecodeError> {
        self.decode_owned(frame, bytes, None, true).map(drop)
    }

    /// Decodes the first frame of `bytes` into `frame` and returns how many
    /// bytes it used; what follows is left for the next call.
    pub fn decode_prefix_into(
        &self,
        frame: &mut Frame,
        bytes: &[u8],
    ) -> Result<usize, DecodeError> {
        self.decode_owned(frame, bytes, None, false)
    }

    /// Like [`decode_into`](Decoder::decode_into), but attachments share
    /// `bytes` (reference-counted) instead of being copied.
    pub fn decode_shared_into(&self, frame: &mut Frame, bytes: &Bytes) -> Result<(), DecodeError> {
        self.decode_owned(frame, bytes, Some(bytes), true).map(drop)
    }

    /// Like [`decode_prefix_into`](Decoder::decode_prefix_into), with
    /// attachments sharing `bytes`.
    pub fn decode_shared_prefix_into(
        &self,
        frame: &mut Frame,
        bytes: &Bytes,
    ) -> Result<usize, DecodeError> {
        self.decode_owned(frame, bytes, Some(bytes), false)
    }

    /// Decodes the first frame of `bytes` into `frame`; with `exact`, bytes
    /// after it are an error. On any error the frame is left cleared with its
    /// header unchanged.
    fn decode_owned(
        &self,
        frame: &mut Frame,
        bytes: &[u8],
        shared: Option<&Bytes>,
        exact: bool,
    ) -> Result<usize, DecodeError> {
        frame.clear();
        let mut sink = OwnedSink {
            frame,
            shared,
            input: bytes,
            budget: Budget::new(self.limits.max_alloc_bytes),
        };
        match walk(self, bytes, &mut sink) {
            Ok((_, layout)) if exact && layout.end != bytes.len() => {
                // The header is not set: a failed decode leaves it unchanged.
                sink.frame.clear();
                Err(DecodeError::new(
                    ErrorKind::TrailingBytes {
                        count: bytes.len() - layout.end,
                    },
                    layout.end,
                    Context::Frame,
                ))
            }
            Ok((header, layout)) => {
                sink.frame.set_header(header);
                Ok(layout.end)
            }
            Err(e) => {
                sink.frame.clear();
                Err(e)
            }
        }
    }
}

/// A bounded cursor over the input with MessagePack primitive readers.
/// Every reader checks a length against the remaining bytes before slicing,
/// and reports errors at the offset where the element starts.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// `min(buf.len(), max_frame_bytes)`.
    end: usize,
    max_str: usize,
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("pos", &self.pos)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

/// An integer as read: wide enough for every MessagePack integer.
type Int = i128;

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], limits: &Limits) -> Self {
        let max_frame = limits.max_frame_bytes.min(FRAME_BYTES_CEILING);
        Reader {
            buf,
            pos: 0,
            end: buf.len().min(max_frame),
            max_str: limits.max_string_len,
        }
    }

    /// A reader over bytes that a walk already validated, at `pos`.
    pub(crate) fn validated(buf: &'a [u8], pos: usize) -> Self {
        Reader {
            buf,
            pos,
            end: buf.len(),
            max_str: usize::MAX,
        }
    }

    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    #[cold]
    fn err(&self, kind: ErrorKind, at: usize) -> DecodeError {
        DecodeError::new(kind, at, Context::Frame)
    }

    #[cold]
    fn short(&self, at: usize, n: usize) -> DecodeError {
        // Past the frame-size limit but inside the input: the limit is what
        // stops us; past the input: it is truncated.
        if self.pos.saturating_add(n) <= self.buf.len() {
            self.err(ErrorKind::LimitExceeded(Limit::FrameBytes), at)
        } else {
            self.err(ErrorKind::Truncated, at)
        }
    }

    /// Takes `n` bytes; `at` is the element's start, for the error.
    #[inline]
    fn take(&mut self, n: usize, at: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.end - self.pos {
            return Err(self.short(at, n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, DecodeError> {
        match self.buf[..self.end].get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.short(self.pos, 1)),
        }
    }

    #[inline]
    fn be<const N: usize>(&mut self, at: usize) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, at)?;
        let mut b = [0u8; N];
        b.copy_from_slice(s);
        Ok(b)
    }

    /// Length after a 1/2/4-byte big-endian prefix.
    #[inline]
    fn len_prefix(&mut self, width: u8, at: usize) -> Result<usize, DecodeError> {
        Ok(match width {
            1 => usize::from(self.be::<1>(at)?[0]),
            2 => usize::from(u16::from_be_bytes(self.be(at)?)),
            _ => u32::from_be_bytes(self.be(at)?) as usize,
        })
    }

    #[cold]
    fn unexpected(&self, expected: Expected, found: u8, at: usize) -> DecodeError {
        self.err(ErrorKind::UnexpectedType { expected, found }, at)
    }

    #[inline]
    pub(crate) fn array_len(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            m @ 0x90..=0x9f => Ok(usize::from(m & 0x0f)),
            0xdc => self.len_prefix(2, at),
            0xdd => self.len_prefix(4, at),
            m => Err(self.unexpected(Expected::Array, m, at)),
        }
    }

    /// An array of at least `min` elements; returns how many extra elements
    /// follow the ones the layout requires.
    #[inline]
    pub(crate) fn array_at_least(&mut self, min: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = self.array_len()?;
        if n < min {
            return Err(self.err(
                ErrorKind::TooFewElements {
                    expected: min,
                    found: n,
                },
                at,
            ));
        }
        Ok(n - min)
    }

    #[inline]
    pub(crate) fn map_len(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            m @ 0x80..=0x8f => Ok(usize::from(m & 0x0f)),
            0xde => self.len_prefix(2, at),
            0xdf => self.len_prefix(4, at),
            m => Err(self.unexpected(Expected::Map, m, at)),
        }
    }

    /// Reads an integer of any width; `None` (with the marker) if the element
    /// is not an integer, so callers can accept floats where they may.
    #[inline]
    fn int_or_marker(&mut self) -> Result<Result<Int, u8>, DecodeError> {
        let at = self.pos;
        let m = self.byte()?;
        Ok(Ok(match m {
            0x00..=0x7f => Int::from(m),
            0xe0..=0xff => Int::from(m as i8),
            0xcc => Int::from(self.be::<1>(at)?[0]),
            0xcd => Int::from(u16::from_be_bytes(self.be(at)?)),
            0xce => Int::from(u32::from_be_bytes(self.be(at)?)),
            0xcf => Int::from(u64::from_be_bytes(self.be(at)?)),
            0xd0 => Int::from(self.be::<1>(at)?[0] as i8),
            0xd1 => Int::from(i16::from_be_bytes(self.be(at)?)),
            0xd2 => Int::from(i32::from_be_bytes(self.be(at)?)),
            0xd3 => Int::from(i64::from_be_bytes(self.be(at)?)),
            _ => return Ok(Err(m)),
        }))
    }

    #[inline]
    pub(crate) fn int(&mut self) -> Result<Int, DecodeError> {
        let at = self.pos;
        match self.int_or_marker()? {
            Ok(v) => Ok(v),
            Err(m) => {
                self.pos = at;
                Err(self.unexpected(Expected::Integer, m, at))
            }
        }
    }

    /// An integer that must fit `T`.
    #[inline]
    pub(crate) fn int_as<T: TryFrom<Int>>(&mut self) -> Result<T, DecodeError> {
        let at = self.pos;
        let v = self.int()?;
        T::try_from(v).map_err(|_| self.err(ErrorKind::IntegerOutOfRange, at))
    }

    /// A Double: float64, float32 or any integer (converted, as msgpack-c does).
    #[inline]
    fn number(&mut self) -> Result<f64, DecodeError> {
        let at = self.pos;
        match self.int_or_marker()? {
            Ok(v) => Ok(v as f64),
            Err(0xcb) => Ok(f64::from_bits(u64::from_be_bytes(self.be(at)?))),
            Err(0xca) => Ok(f64::from(f32::from_bits(u32::from_be_bytes(self.be(at)?)))),
            Err(m) => Err(self.unexpected(Expected::Number, m, at)),
        }
    }

    #[inline]
    fn boolean(&mut self) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            m => Err(self.unexpected(Expected::Bool, m, at)),
        }
    }

    /// A string, validated as UTF-8.
    #[inline]
    pub(crate) fn str(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let bytes = self.str_bytes()?;
        std::str::from_utf8(bytes).map_err(|_| self.err(ErrorKind::InvalidUtf8, at))
    }

    /// A string's bytes, not validated.
    #[inline]
    pub(crate) fn str_bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let at = self.pos;
        let len = match self.byte()? {
            m @ 0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => self.len_prefix(1, at)?,
            0xda => self.len_prefix(2, at)?,
            0xdb => self.len_prefix(4, at)?,
            m => return Err(self.unexpected(Expected::String, m, at)),
        };
        if len > self.max_str {
            return Err(self.err(ErrorKind::LimitExceeded(Limit::StringLen), at));
        }
        self.take(len, at)
    }

    /// Binary data; returns its range in the input.
    #[inline]
    pub(crate) fn bin(&mut self) -> Result<Range<usize>, DecodeError> {
        let at = self.pos;
        let len = match self.byte()? {
            0xc4 => self.len_prefix(1, at)?,
            0xc5 => self.len_prefix(2, at)?,
            0xc6 => self.len_prefix(4, at)?,
            m => return Err(self.unexpected(Expected::Binary, m, at)),
        };
        self.take(len, at)?;
        Ok(self.pos - len..self.pos)
    }

    /// Skips one complete value of any type. Iterative: a counter of values
    /// still to skip replaces recursion, so nesting depth costs no stack, and
    /// every step consumes at least one byte, so the loop ends with the input.
    pub(crate) fn skip(&mut self) -> Result<(), DecodeError> {
        let mut pending: u64 = 1;
        while pending > 0 {
            pending -= 1;
            let at = self.pos;
            let m = self.byte()?;
            let (skip, children): (usize, u64) = match m {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
                0x80..=0x8f => (0, 2 * u64::from(m & 0x0f)),
                0x90..=0x9f => (0, u64::from(m & 0x0f)),
                0xa0..=0xbf => (usize::from(m & 0x1f), 0),
                0xcc | 0xd0 => (1, 0),
                0xcd | 0xd1 => (2, 0),
                0xce | 0xd2 | 0xca => (4, 0),
                0xcf | 0xd3 | 0xcb => (8, 0),
                0xd4 => (2, 0),
                0xd5 => (3, 0),
                0xd6 => (5, 0),
                0xd7 => (9, 0),
                0xd8 => (17, 0),
                0xc4 | 0xd9 => (self.len_prefix(1, at)?, 0),
                0xc5 | 0xda => (self.len_prefix(2, at)?, 0),
                0xc6 | 0xdb => (self.len_prefix(4, at)?, 0),
                0xc7 => (self.len_prefix(1, at)? + 1, 0),
                0xc8 => (self.len_prefix(2, at)? + 1, 0),
                0xc9 => (self.len_prefix(4, at)? + 1, 0),
                0xdc => (0, self.len_prefix(2, at)? as u64),
                0xdd => (0, self.len_prefix(4, at)? as u64),
                0xde => (0, 2 * self.len_prefix(2, at)? as u64),
                0xdf => (0, 2 * self.len_prefix(4, at)? as u64),
                0xc1 => return Err(self.unexpected(Expected::Value, m, at)),
            };
            self.take(skip, at)?;
            pending += children;
            // Each pending element needs at least one more byte.
            if pending > (self.end - self.pos) as u64 {
                return Err(self.short(at, self.end - self.pos + 1));
            }
        }
        Ok(())
    }

    /// Skips `n` values.
    #[inline]
    pub(crate) fn skip_n(&mut self, n: usize) -> Result<(), DecodeError> {
        for _ in 0..n {
            self.skip()?;
        }
        Ok(())
    }

    pub(crate) fn remaining(&self) -> usize {
        self.end - self.pos
    }

    pub(crate) fn input(&self) -> &'a [u8] {
        self.buf
    }
}

/// Reads a `[tag, value, ...]` pair into a [`ValueRef`] borrowing the input.
#[inline]
pub(crate) fn read_value<'a>(r: &mut Reader<'a>) -> Result<ValueRef<'a>, DecodeError> {
    let extra = r.array_at_least(2)?;
    let tag_at = r.pos();
    let tag = r.int()?;
    let value = match tag {
        t if t == Int::from(TAG_INT) => ValueRef::Int(r.int_as::<i64>()?),
        t if t == Int::from(TAG_DOUBLE) => ValueRef::Double(r.number()?),
        t if t == Int::from(TAG_STRING) => ValueRef::String(r.str()?),
        t if t == Int::from(TAG_BOOL) => ValueRef::Bool(r.boolean()?),
        t => {
            let tag = i64::try_from(t).map_err(|_| {
                DecodeError::new(ErrorKind::IntegerOutOfRange, tag_at, Context::Frame)
            })?;
            let start = r.pos();
            r.skip()?;
            let raw = &r.input()[start..r.pos()];
            if raw.len() > r.max_str {
                return Err(DecodeError::new(
                    ErrorKind::LimitExceeded(Limit::StringLen),
                    start,
                    Context::Frame,
                ));
            }
            ValueRef::Unknown(UnknownValue::from_wire(tag, raw))
        }
    };
    if extra > 0 {
        r.skip_n(extra)?;
    }
    Ok(value)
}

/// Whether `raw` is exactly one complete MessagePack value.
pub(crate) fn is_one_value(raw: &[u8]) -> bool {
    let mut r = Reader::new(raw, &Limits::none());
    r.skip().is_ok() && r.pos() == raw.len()
}

const HEADER_FIELDS: [&str; 8] = [
    "timestamp",
    "counter",
    "source",
    "target",
    "message_id",
    "message_type",
    "version",
    "flags",
];

fn in_header(i: usize) -> impl Fn(DecodeError) -> DecodeError {
    move |mut e| {
        e.set_context(Context::Header(HEADER_FIELDS[i]));
        e
    }
}

/// Reads the top-level array header and the header array; returns the
/// header and how many extra top-level elements follow the three.
fn read_header(r: &mut Reader<'_>) -> Result<(Header, usize), DecodeError> {
    let extra_top = r.array_at_least(3)?;
    let extra = r.array_at_least(8).map_err(in_header(0))?;
    let header = Header::from_fields(
        r.int_as().map_err(in_header(0))?,
        r.int_as().map_err(in_header(1))?,
        r.int_as().map_err(in_header(2))?,
        r.int_as().map_err(in_header(3))?,
        r.int_as().map_err(in_header(4))?,
        r.int_as().map_err(in_header(5))?,
        r.int_as().map_err(in_header(6))?,
        r.int_as().map_err(in_header(7))?,
    );
    r.skip_n(extra).map_err(in_header(7))?;
    Ok((header, extra_top))
}

pub(crate) fn peek_header(bytes: &[u8]) -> Result<Header, DecodeError> {
    let mut r = Reader::new(bytes, &Limits::default());
    read_header(&mut r).map(|(h, _)| h)
}

/// Where the parts of a validated frame are in the input.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Layout {
    /// Offset of the first key (just after the map header).
    pub(crate) params_at: usize,
    pub(crate) params: usize,
    /// Offset of the first attachment pair (after the array header).
    pub(crate) attachments_at: usize,
    pub(crate) attachments: usize,
    /// Bytes the frame occupies.
    pub(crate) end: usize,
}

/// Receives what the walk finds.
pub(crate) trait Sink<'a> {
    /// `count` parameters follow (already checked against the input size and
    /// `max_params`).
    fn begin_params(&mut self, count: usize) -> Result<(), Limit>;
    /// One parameter. Returns whether its key occurred before (only needs to
    /// be exact when `detect_duplicates`).
    fn param(
        &mut self,
        key: &'a str,
        value: ValueRef<'a>,
        detect_duplicates: bool,
    ) -> Result<bool, Limit>;
    /// `count` attachments follow (already checked against the input size
    /// and `max_attachments`).
    fn begin_attachments(&mut self, count: usize) -> Result<(), Limit>;
    /// One attachment; `data` is its range in the input.
    fn attachment(&mut self, name: &'a str, data: Range<usize>) -> Result<(), Limit>;
}

/// Smallest encoding of one parameter: fixstr key (1), `0x92` (1), tag (1),
/// value (1).
const MIN_PARAM_BYTES: usize = 4;
/// Smallest attachment: `0x92`, fixstr name, bin8 header (2).
const MIN_ATTACHMENT_BYTES: usize = 4;

pub(crate) fn walk<'a, S: Sink<'a>>(
    dec: &Decoder,
    input: &'a [u8],
    sink: &mut S,
) -> Result<(Header, Layout), DecodeError> {
    let limits = &dec.limits;
    let mut r = Reader::new(input, limits);
    let (header, extra_top) = read_header(&mut r)?;
    let mut layout = Layout::default();

    // Parameters.
    let map_at = r.pos();
    let count = r.map_len().map_err(|mut e| {
        e.set_context(Context::Params);
        e
    })?;
    if count > limits.max_params {
        return Err(DecodeError::new(
            ErrorKind::LimitExceeded(Limit::Params),
            map_at,
            Context::Params,
        ));
    }
    // The claimed count must fit in what is left before anything is reserved.
    if count > r.remaining() / MIN_PARAM_BYTES {
        return Err(r
            .short(map_at, count.saturating_mul(MIN_PARAM_BYTES))
            .with_context(Context::Params));
    }
    layout.params_at = r.pos();
    layout.params = count;
    sink.begin_params(count).map_err(|limit| {
        DecodeError::new(ErrorKind::LimitExceeded(limit), map_at, Context::Params)
    })?;
    for i in 0..count {
        let key_at = r.pos();
        let key = r.str().map_err(|e| e.with_context(Context::Key(i)))?;
        if key.len() > limits.max_key_len {
            return Err(DecodeError::new(
                ErrorKind::LimitExceeded(Limit::KeyLen),
                key_at,
                Context::Key(i),
            ));
        }
        let value =
            read_value(&mut r).map_err(|e| e.with_context(Context::Value(key.to_owned())))?;
        match sink.param(key, value, dec.strict) {
            Ok(false) => {}
            Ok(true) if dec.strict => {
                return Err(DecodeError::new(
                    ErrorKind::DuplicateKey,
                    key_at,
                    Context::Key(i),
                ));
            }
            Ok(true) => {}
            Err(limit) => {
                return Err(DecodeError::new(
                    ErrorKind::LimitExceeded(limit),
                    key_at,
                    Context::Key(i),
                ));
            }
        }
    }

    // Attachments.
    let list_at = r.pos();
    let count = r
        .array_len()
        .map_err(|e| e.with_context(Context::Attachment(0)))?;
    if count > limits.max_attachments {
        return Err(DecodeError::new(
            ErrorKind::LimitExceeded(Limit::Attachments),
            list_at,
            Context::Attachment(0),
        ));
    }
    if count > r.remaining() / MIN_ATTACHMENT_BYTES {
        return Err(r
            .short(list_at, count.saturating_mul(MIN_ATTACHMENT_BYTES))
            .with_context(Context::Attachment(0)));
    }
    layout.attachments_at = r.pos();
    layout.attachments = count;
    sink.begin_attachments(count).map_err(|limit| {
        DecodeError::new(
            ErrorKind::LimitExceeded(limit),
            list_at,
            Context::Attachment(0),
        )
    })?;
    let mut data_total = 0usize;
    for i in 0..count {
        let at = r.pos();
        let ctx = |e: DecodeError| e.with_context(Context::Attachment(i));
        let extra = r.array_at_least(2).map_err(ctx)?;
        let name = r.str().map_err(ctx)?;
        let data = r.bin().map_err(ctx)?;
        data_total = data_total.saturating_add(data.len());
        if data_total > limits.max_attachment_bytes {
            return Err(DecodeError::new(
                ErrorKind::LimitExceeded(Limit::AttachmentBytes),
                at,
                Context::Attachment(i),
            ));
        }
        r.skip_n(extra).map_err(ctx)?;
        sink.attachment(name, data).map_err(|limit| {
            DecodeError::new(ErrorKind::LimitExceeded(limit), at, Context::Attachment(i))
        })?;
    }

    r.skip_n(extra_top)?;
    layout.end = r.pos();
    Ok((header, layout))
}

impl DecodeError {
    fn with_context(mut self, context: Context) -> Self {
        self.set_context(context);
        self
    }
}

/// The allocation budget of one decode ([`Limits::max_alloc_bytes`]):
/// every allocation is charged before it is made.
#[derive(Debug)]
pub(crate) struct Budget {
    spent: usize,
    max: usize,
}

impl Budget {
    pub(crate) fn new(max: usize) -> Self {
        Budget { spent: 0, max }
    }

    #[inline]
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<(), Limit> {
        let spent = self.spent.saturating_add(bytes);
        if spent > self.max {
            Err(Limit::AllocBytes)
        } else {
            self.spent = spent;
            Ok(())
        }
    }
}

/// Stores what the walk finds in a [`Frame`].
struct OwnedSink<'f, 'a> {
    frame: &'f mut Frame,
    /// When decoding from a `Bytes`, attachments are slices of it.
    shared: Option<&'a Bytes>,
    input: &'a [u8],
    budget: Budget,
}

impl<'a> Sink<'a> for OwnedSink<'_, 'a> {
    fn begin_params(&mut self, count: usize) -> Result<(), Limit> {
        let budget = &mut self.budget;
        self.frame
            .params_mut()
            .reserve_entries_charged(count, |bytes| budget.charge(bytes))
    }

    #[inline]
    fn param(
        &mut self,
        key: &'a str,
        value: ValueRef<'a>,
        detect_duplicates: bool,
    ) -> Result<bool, Limit> {
        let (text, raw) = match value {
            ValueRef::String(s) => (key.len() + s.len(), 0),
            ValueRef::Unknown(u) => (key.len(), 8 + u.raw().len()),
            _ => (key.len(), 0),
        };
        let budget = &mut self.budget;
        let params = self.frame.params_mut();
        params.reserve_payload_charged(text, raw, |bytes| budget.charge(bytes))?;
        let unique = params.push_flat(key, value);
        let i = params.len() - 1;
        Ok(!unique
            || (detect_duplicates
                && i < crate::params::LINEAR_MAX
                && params.has_earlier_duplicate(i)))
    }

    fn begin_attachments(&mut self, count: usize) -> Result<(), Limit> {
        let budget = &mut self.budget;
        self.frame
            .reserve_attachments_charged(count, |bytes| budget.charge(bytes))
    }

    fn attachment(&mut self, name: &'a str, data: Range<usize>) -> Result<(), Limit> {
        let budget = &mut self.budget;
        self.frame
            .reserve_attachment_name_charged(name.len(), |bytes| budget.charge(bytes))?;
        let data = match self.shared {
            Some(b) => b.slice(data),
            None => {
                self.budget.charge(data.len())?;
                Bytes::copy_from_slice(&self.input[data])
            }
        };
        self.frame.add_attachment(name, data);
        Ok(())
    }
}

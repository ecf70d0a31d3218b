//! The decoder: strict about structure, liberal about encodings (SPEC §3).
//!
//! One walk over the input ([`walk`]) checks the whole frame and hands each
//! parameter and attachment to a [`Sink`]: the owned decoder stores them in a
//! [`Frame`], the [`FrameView`](crate::FrameView) only counts them. Both get
//! the same validation because they share the walk.

use std::ops::Range;

use bytes::Bytes;

use std::collections::HashSet;

use crate::error::{Context, DecodeError, ErrorKind, Expected, Limit};
use crate::frame::{Attachments, Frame};
use crate::header::Header;
use crate::index::Index;
use crate::params::{
    grown_capacity, store_unknown, table_bytes_bound, to_u32, DecodeTarget, Entry, Slot,
};
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
    /// counts everything it stores: the entry table, the key/string and
    /// raw-value arenas (which grow by doubling, counted at their new size
    /// each time they grow), the attachment table and names, copied
    /// attachment data, and in strict mode the hash index it builds to find
    /// duplicates. A strict view counts its duplicate-detection set; a
    /// lenient view allocates nothing. Each allocation is charged *before*
    /// it is made, so a decode that fails with this limit has allocated at
    /// most this much. Not counted: the [`DecodeError`] itself (one box of
    /// 64 bytes, plus a copy of the key when the error is in a value).
    /// Default 1 GiB.
    pub max_alloc_bytes: usize,
}

/// The hard ceiling on `max_frame_bytes` (see [`Limits::max_frame_bytes`]).
const FRAME_BYTES_CEILING: usize = 1 << 30;

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
        let mut frame = Frame::blank();
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
    /// after it are an error. On any error the frame is left with no
    /// parameters and no attachments, and its header unchanged.
    fn decode_owned(
        &self,
        frame: &mut Frame,
        bytes: &[u8],
        shared: Option<&Bytes>,
        exact: bool,
    ) -> Result<usize, DecodeError> {
        frame.clear_attachments();
        let (params, attachments) = frame.decode_parts();
        let mut sink = OwnedSink {
            target: params.begin_decode(),
            attachments,
            shared,
            input: bytes,
            budget: Budget::new(self.limits.max_alloc_bytes),
            utf8_ok: true,
        };
        let mut result = walk(self, bytes, &mut sink);
        if let Ok((_, layout)) = &result {
            if exact && layout.end() != bytes.len() {
                result = Err(DecodeError::new(
                    ErrorKind::TrailingBytes {
                        count: bytes.len() - layout.end(),
                    },
                    layout.end(),
                    Context::Frame,
                ));
            }
        }
        let mut fine = result.is_ok() && sink.utf8_ok;
        if fine && self.strict {
            // Duplicates are looked for once, with the index lookups build
            // anyway (charged to the budget first).
            let DecodeTarget { table, text, .. } = &sink.target;
            fine = sink.budget.charge(Index::bytes_for(table.len())).is_ok()
                && table.first_duplicate(text).is_none();
        }
        let kept = sink.target.finish(fine);
        let budget = sink.budget;
        match result {
            Ok((header, layout)) if kept => {
                frame.set_header(header);
                Ok(layout.end())
            }
            other => {
                frame.clear();
                // The owned walk defers UTF-8 and duplicate checks to the
                // end; the validating walk finds the first error in input
                // order, the one the view reports. It spends what is left
                // of the budget, so that both walks together stay within
                // max_alloc_bytes.
                let mut check = CheckSink::with_budget(self, budget);
                match walk(self, bytes, &mut check) {
                    Err(e) => Err(e),
                    Ok(_) => Err(other.err().unwrap_or_else(|| {
                        DecodeError::new(
                            ErrorKind::LimitExceeded(Limit::AllocBytes),
                            0,
                            Context::Frame,
                        )
                    })),
                }
            }
        }
    }
}

/// A bounded cursor over the input with MessagePack primitive readers.
/// Every reader checks a length against the remaining bytes before slicing,
/// and reports errors at the offset where the element starts.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    /// The input, cut to `max_frame_bytes`.
    data: &'a [u8],
    pos: usize,
    /// Length of the whole input: reading past `data` but not past this is
    /// a limit error, past this a truncation.
    input_len: usize,
    max_str: usize,
    /// Longest key the fast path takes (`max_key_len`, within `max_str`);
    /// longer ones go the general way, which reports the limit.
    max_key: usize,
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("pos", &self.pos)
            .field("len", &self.data.len())
            .finish_non_exhaustive()
    }
}

/// A big-endian unsigned integer of 1, 2, 4 or 8 bytes.
#[inline(always)]
fn be_uint(b: &[u8]) -> Option<u64> {
    Some(match *b {
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_be_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_be_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => u64::from_be_bytes([a, b, c, d, e, f, g, h]),
        _ => return None,
    })
}

/// A non-negative integer in a positive fixint or an unsigned marker, at
/// `*p`; advances `*p`.
#[inline(always)]
fn fast_uint(d: &[u8], p: &mut usize) -> Option<u64> {
    let m = *d.get(*p)?;
    let n = match m {
        0x00..=0x7f => {
            *p += 1;
            return Some(u64::from(m));
        }
        0xcc => 1,
        0xcd => 2,
        0xce => 4,
        0xcf => 8,
        _ => return None,
    };
    let v = be_uint(d.get(*p + 1..*p + 1 + n)?)?;
    *p += 1 + n;
    Some(v)
}

/// An integer as read: wide enough for every MessagePack integer.
type Int = i128;

/// A value as the walk reads it: strings still unvalidated bytes (each sink
/// validates them its own way).
#[derive(Debug, Clone, Copy)]
pub(crate) enum WireValue<'a> {
    Int(i64),
    Double(f64),
    Bool(bool),
    Str(&'a [u8]),
    Unknown(i64, &'a [u8]),
}

/// Reads the `[tag, value]` pair at `v` in the forms encoders write:
/// fixarray(2), fixint tag, and a value in a common encoding (strings up to
/// `max_str` bytes). Returns the value and where it ends; `None` for
/// anything else, which the general readers then handle (with exact
/// errors). No `Result` plumbing: this is the hot path of the walk and of
/// the view's lookups.
#[inline(always)]
pub(crate) fn fast_value(d: &[u8], v: usize, max_str: usize) -> Option<(WireValue<'_>, usize)> {
    let &[0x92, tag, vm] = d.get(v..v + 3)? else {
        return None;
    };
    let at = v + 3; // first byte after the value's marker
    let be = |n: usize| -> Option<u64> { be_uint(d.get(at..at + n)?) };
    Some(match (tag, vm) {
        (TAG_INT, 0x00..=0x7f) => (WireValue::Int(i64::from(vm)), at),
        (TAG_INT, 0xe0..=0xff) => (WireValue::Int(i64::from(vm as i8)), at),
        (TAG_INT, 0xcc) => (WireValue::Int(be(1)? as i64), at + 1),
        (TAG_INT, 0xcd) => (WireValue::Int(be(2)? as i64), at + 2),
        (TAG_INT, 0xce) => (WireValue::Int(be(4)? as i64), at + 4),
        (TAG_INT, 0xd0) => (WireValue::Int(i64::from(be(1)? as u8 as i8)), at + 1),
        (TAG_INT, 0xd1) => (WireValue::Int(i64::from(be(2)? as u16 as i16)), at + 2),
        (TAG_INT, 0xd2) => (WireValue::Int(i64::from(be(4)? as u32 as i32)), at + 4),
        (TAG_INT, 0xd3) => (WireValue::Int(be(8)? as i64), at + 8),
        (TAG_DOUBLE, 0xcb) => (WireValue::Double(f64::from_bits(be(8)?)), at + 8),
        (TAG_DOUBLE, 0x00..=0x7f) => (WireValue::Double(f64::from(vm)), at),
        (TAG_DOUBLE, 0xe0..=0xff) => (WireValue::Double(f64::from(vm as i8)), at),
        (TAG_DOUBLE, 0xcc) => (WireValue::Double(be(1)? as f64), at + 1),
        (TAG_DOUBLE, 0xcd) => (WireValue::Double(be(2)? as f64), at + 2),
        (TAG_DOUBLE, 0xce) => (WireValue::Double(be(4)? as f64), at + 4),
        (TAG_STRING, 0xa0..=0xbf) => {
            let n = usize::from(vm & 0x1f);
            if n > max_str {
                return None;
            }
            (WireValue::Str(d.get(at..at + n)?), at + n)
        }
        (TAG_STRING, 0xd9) => {
            let n = usize::from(*d.get(at)?);
            if n > max_str {
                return None;
            }
            (WireValue::Str(d.get(at + 1..at + 1 + n)?), at + 1 + n)
        }
        (TAG_BOOL, 0xc2) => (WireValue::Bool(false), at),
        (TAG_BOOL, 0xc3) => (WireValue::Bool(true), at),
        _ => return None,
    })
}

/// The size of a value whose marker is `m` when it is a scalar or a
/// fixstr (marker included); 0 for anything else.
#[inline(always)]
pub(crate) fn scalar_size(m: u8) -> usize {
    match m {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => 1,
        0xa0..=0xbf => 1 + usize::from(m & 0x1f),
        0xcc | 0xd0 => 2,
        0xcd | 0xd1 => 3,
        0xca | 0xce | 0xd2 => 5,
        0xcb | 0xcf | 0xd3 => 9,
        _ => 0,
    }
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], limits: &Limits) -> Self {
        let max_frame = limits.max_frame_bytes.min(FRAME_BYTES_CEILING);
        Reader {
            data: &buf[..buf.len().min(max_frame)],
            pos: 0,
            input_len: buf.len(),
            max_str: limits.max_string_len,
            max_key: limits.max_key_len.min(limits.max_string_len),
        }
    }

    /// A reader over bytes that a walk already validated, at `pos`.
    pub(crate) fn validated(buf: &'a [u8], pos: usize) -> Self {
        Reader {
            data: buf,
            pos,
            input_len: buf.len(),
            max_str: usize::MAX,
            max_key: usize::MAX,
        }
    }

    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub(crate) fn input(&self) -> &'a [u8] {
        self.data
    }

    #[cold]
    fn err(&self, kind: ErrorKind, at: usize) -> DecodeError {
        DecodeError::new(kind, at, Context::Frame)
    }

    /// The error for needing `n` more bytes than `data` has from `pos`.
    #[cold]
    fn short(&self, at: usize, n: usize) -> DecodeError {
        if self.pos.saturating_add(n) <= self.input_len {
            self.err(ErrorKind::LimitExceeded(Limit::FrameBytes), at)
        } else {
            self.err(ErrorKind::Truncated, at)
        }
    }

    /// Takes `n` bytes; `at` is the element's start, for the error.
    #[inline(always)]
    fn take(&mut self, n: usize, at: usize) -> Result<&'a [u8], DecodeError> {
        match self.data.get(self.pos..self.pos.wrapping_add(n)) {
            Some(s) if n <= self.data.len() => {
                self.pos += n;
                Ok(s)
            }
            _ => Err(self.short(at, n)),
        }
    }

    #[inline(always)]
    fn byte(&mut self) -> Result<u8, DecodeError> {
        match self.data.get(self.pos) {
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
    #[inline(always)]
    pub(crate) fn array_at_least(&mut self, min: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        // Fast path: the fixarray of exactly the size encoders write.
        if self.data.get(at) == Some(&(0x90 | min as u8)) && min < 16 {
            self.pos += 1;
            return Ok(0);
        }
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

    /// The length of a fixmap (`base` 0x80) or fixarray (0x90), the forms
    /// encoders write for small counts; `None`, consuming nothing, for any
    /// other byte (the general reader then takes it, with exact errors).
    #[inline(always)]
    pub(crate) fn fix_len(&mut self, base: u8) -> Option<usize> {
        let m = *self.data.get(self.pos)?;
        if m & 0xf0 == base {
            self.pos += 1;
            Some(usize::from(m & 0x0f))
        } else {
            None
        }
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

    /// The integer after marker `m` (already consumed), or `Err(m)` if `m`
    /// is not an integer marker, so callers can accept floats where they may.
    #[inline]
    fn int_after(&mut self, m: u8, at: usize) -> Result<Result<Int, u8>, DecodeError> {
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
        let m = self.byte()?;
        match self.int_after(m, at)? {
            Ok(v) => Ok(v),
            Err(m) => {
                self.pos = at;
                Err(self.unexpected(Expected::Integer, m, at))
            }
        }
    }

    /// An integer that must fit `T`.
    #[inline(always)]
    pub(crate) fn int_as<T: TryFrom<Int> + TryFrom<u64>>(&mut self) -> Result<T, DecodeError> {
        // Fast path: a positive fixint or an unsigned marker, read straight
        // into a u64; anything else (negative, or an error) goes the general
        // way.
        let at = self.pos;
        let mut p = at;
        match fast_uint(self.data, &mut p) {
            Some(v) => {
                self.pos = p;
                T::try_from(v).map_err(|_| self.err(ErrorKind::IntegerOutOfRange, at))
            }
            None => self.int_as_slow(),
        }
    }

    #[inline(never)]
    fn int_as_slow<T: TryFrom<Int>>(&mut self) -> Result<T, DecodeError> {
        let at = self.pos;
        let v = self.int()?;
        T::try_from(v).map_err(|_| self.err(ErrorKind::IntegerOutOfRange, at))
    }

    /// A string's bytes, not validated as UTF-8 (the caller does that).
    #[inline(always)]
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

    /// A string, validated as UTF-8.
    #[inline]
    pub(crate) fn str(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let bytes = self.str_bytes()?;
        crate::utf8::str_from(bytes).map_err(|_| self.err(ErrorKind::InvalidUtf8, at))
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
            if pending > self.remaining() as u64 {
                return Err(self.short(at, self.remaining() + 1));
            }
        }
        Ok(())
    }

    /// Reads one parameter (`key`, `[tag, value]`) in the forms encoders
    /// write: fixstr key within the key limit, fixarray(2), fixint tag, and
    /// a value in a common encoding. Returns `None`, consuming nothing, for
    /// anything else, which the general readers then handle (with exact
    /// errors). No `Result` plumbing: this is the decoders' hot path.
    #[inline(always)]
    pub(crate) fn fast_param(&mut self) -> Option<(&'a [u8], WireValue<'a>)> {
        let d = self.data;
        let p = self.pos;
        let m = *d.get(p)?;
        if !(0xa0..=0xbf).contains(&m) {
            return None;
        }
        let klen = usize::from(m & 0x1f);
        let key = d.get(p + 1..p + 1 + klen)?;
        if klen > self.max_key {
            return None;
        }
        let (value, end) = fast_value(d, p + 1 + klen, self.max_str)?;
        self.pos = end;
        Some((key, value))
    }

    /// Reads `[[8 header fields], ` when the frame is `fixarray(3)`, the
    /// header `fixarray(8)`, and every field a non-negative integer in range;
    /// `None`, consuming nothing, otherwise (the general path then reads it,
    /// with exact errors).
    #[inline(always)]
    fn fast_header(&mut self) -> Option<Header> {
        let d = self.data;
        let mut p = self.pos;
        if d.get(p) != Some(&0x93) || d.get(p + 1) != Some(&0x98) {
            return None;
        }
        p += 2;
        let timestamp = fast_uint(d, &mut p)?;
        let counter = fast_uint(d, &mut p)?;
        let source = u32::try_from(fast_uint(d, &mut p)?).ok()?;
        let target = u32::try_from(fast_uint(d, &mut p)?).ok()?;
        let message_id = i32::try_from(fast_uint(d, &mut p)?).ok()?;
        let message_type = i32::try_from(fast_uint(d, &mut p)?).ok()?;
        let version = u16::try_from(fast_uint(d, &mut p)?).ok()?;
        let flags = u16::try_from(fast_uint(d, &mut p)?).ok()?;
        self.pos = p;
        Some(Header::from_fields(
            timestamp,
            counter,
            source,
            target,
            message_id,
            message_type,
            version,
            flags,
        ))
    }

    /// Skips one `[tag, value]` pair of a validated frame: the forms
    /// encoders write (fixarray(2), fixint tag, a scalar or short string) in
    /// a few instructions, anything else through [`skip`](Reader::skip).
    #[inline(always)]
    pub(crate) fn skip_pair(&mut self) -> Result<(), DecodeError> {
        let p = self.pos;
        if let Some(&[0x92, tag, m]) = self.data.get(p..p + 3) {
            if tag < 0x80 {
                let size = scalar_size(m);
                if size > 0 && p + 2 + size <= self.data.len() {
                    self.pos = p + 2 + size;
                    return Ok(());
                }
            }
        }
        self.skip()
    }

    /// Skips `n` values.
    #[inline]
    pub(crate) fn skip_n(&mut self, n: usize) -> Result<(), DecodeError> {
        for _ in 0..n {
            self.skip()?;
        }
        Ok(())
    }

    /// Reads a `[tag, value, ...]` pair. Fast paths for the forms encoders
    /// write (fixarray(2), fixint tags and small ints, float64, fixstr);
    /// every other valid encoding goes through the general readers.
    #[inline(always)]
    pub(crate) fn wire_value(&mut self) -> Result<WireValue<'a>, DecodeError> {
        let extra = self.array_at_least(2)?;
        let tag_at = self.pos;
        let tag = match self.data.get(self.pos) {
            Some(&t) if t < 0x80 => {
                self.pos += 1;
                Int::from(t)
            }
            _ => self.int()?,
        };
        let value = match tag {
            t if t == Int::from(TAG_INT) => WireValue::Int(self.int_as::<i64>()?),
            t if t == Int::from(TAG_DOUBLE) => WireValue::Double(self.number()?),
            t if t == Int::from(TAG_STRING) => WireValue::Str(self.str_bytes()?),
            t if t == Int::from(TAG_BOOL) => WireValue::Bool(self.boolean()?),
            t => {
                let tag =
                    i64::try_from(t).map_err(|_| self.err(ErrorKind::IntegerOutOfRange, tag_at))?;
                let start = self.pos;
                self.skip()?;
                let raw = &self.data[start..self.pos];
                if raw.len() > self.max_str {
                    return Err(self.err(ErrorKind::LimitExceeded(Limit::StringLen), start));
                }
                WireValue::Unknown(tag, raw)
            }
        };
        if extra > 0 {
            self.skip_n(extra)?;
        }
        Ok(value)
    }

    /// A Double: float64, float32 or any integer (converted, as msgpack-c does).
    #[inline(always)]
    fn number(&mut self) -> Result<f64, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            0xcb => Ok(f64::from_bits(u64::from_be_bytes(self.be(at)?))),
            0xca => Ok(f64::from(f32::from_bits(u32::from_be_bytes(self.be(at)?)))),
            m => match self.int_after(m, at)? {
                // Through i64/u64: an i128 to f64 conversion is a software
                // routine, and every MessagePack integer fits one of them.
                Ok(v) => Ok(match i64::try_from(v) {
                    Ok(i) => i as f64,
                    Err(_) => v as u64 as f64,
                }),
                Err(m) => Err(self.unexpected(Expected::Number, m, at)),
            },
        }
    }

    #[inline(always)]
    fn boolean(&mut self) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            m => Err(self.unexpected(Expected::Bool, m, at)),
        }
    }
}

/// Reads a `[tag, value, ...]` pair from validated bytes into a
/// [`ValueRef`] borrowing the input.
#[inline]
pub(crate) fn read_value<'a>(r: &mut Reader<'a>) -> Result<ValueRef<'a>, DecodeError> {
    let at = r.pos();
    let value = match fast_value(r.data, at, r.max_str) {
        Some((value, end)) => {
            r.pos = end;
            value
        }
        None => r.wire_value()?,
    };
    Ok(match value {
        WireValue::Int(v) => ValueRef::Int(v),
        WireValue::Double(v) => ValueRef::Double(v),
        WireValue::Bool(v) => ValueRef::Bool(v),
        WireValue::Str(b) => ValueRef::String(
            crate::utf8::str_from(b).map_err(|_| r.err(ErrorKind::InvalidUtf8, at))?,
        ),
        WireValue::Unknown(tag, raw) => ValueRef::Unknown(UnknownValue::from_wire(tag, raw)),
    })
}

/// Whether `raw` is exactly one complete MessagePack value.
pub(crate) fn is_one_value(raw: &[u8]) -> bool {
    let mut r = Reader::new(raw, &Limits::none());
    r.skip().is_ok() && r.pos() == raw.len()
}

/// Where the string of the `[tag, string, ...]` pair at `at` (already read
/// once) starts: past the array header and the tag, whatever forms they
/// were written in. Only error reports need it.
#[cold]
fn string_marker_at(data: &[u8], at: usize) -> usize {
    let mut r = Reader::validated(data, at);
    match r.array_len().and_then(|_| r.skip()) {
        Ok(()) => r.pos(),
        Err(_) => at,
    }
}

fn in_header(i: usize) -> impl Fn(DecodeError) -> DecodeError {
    move |mut e| {
        e.set_context(Context::Header(Header::FIELD_NAMES[i]));
        e
    }
}

/// Reads the top-level array header and the header array; returns the
/// header and how many extra top-level elements follow the three.
#[inline(always)]
fn read_header(r: &mut Reader<'_>) -> Result<(Header, usize), DecodeError> {
    if let Some(header) = r.fast_header() {
        return Ok((header, 0));
    }
    read_header_general(r)
}

/// [`read_header`] for any valid encoding, with exact errors.
#[inline(never)]
fn read_header_general(r: &mut Reader<'_>) -> Result<(Header, usize), DecodeError> {
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

pub(crate) fn peek_frame(bytes: &[u8]) -> Result<(Header, usize), DecodeError> {
    let header = peek_header(bytes)?;
    let mut r = Reader::new(bytes, &Limits::default());
    r.skip()?;
    Ok((header, r.pos()))
}

pub(crate) fn peek_header(bytes: &[u8]) -> Result<Header, DecodeError> {
    let mut r = Reader::new(bytes, &Limits::default());
    read_header(&mut r).map(|(h, _)| h)
}

/// Where the parts of a validated frame are in the input. Offsets and counts
/// are `u32` (a frame is at most [`FRAME_BYTES_CEILING`] bytes), which keeps
/// a [`FrameView`](crate::FrameView) small to return and copy.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Layout {
    /// Offset of the first key (just after the map header).
    pub(crate) params_at: u32,
    pub(crate) params: u32,
    /// Offset of the first attachment pair (after the array header).
    pub(crate) attachments_at: u32,
    pub(crate) attachments: u32,
    /// Bytes the frame occupies.
    pub(crate) end: u32,
    /// Offsets of the first [`KEYS_RECORDED`] keys, recorded when the sink
    /// asks ([`Sink::RECORDS_KEYS`]: the view's). A lookup in a view then
    /// reads those keys independently of one another, instead of a chain
    /// where each key's position depends on the load of the value before it
    /// (which made a 4-parameter `FrameView::find` twice as slow as
    /// `Frame::find`). Offsets fit `u32`: a frame is at most
    /// [`FRAME_BYTES_CEILING`].
    pub(crate) first_keys: [u32; KEYS_RECORDED],
}

impl Layout {
    pub(crate) fn params_at(&self) -> usize {
        self.params_at as usize
    }
    pub(crate) fn params(&self) -> usize {
        self.params as usize
    }
    pub(crate) fn attachments_at(&self) -> usize {
        self.attachments_at as usize
    }
    pub(crate) fn attachments(&self) -> usize {
        self.attachments as usize
    }
    pub(crate) fn end(&self) -> usize {
        self.end as usize
    }
}

/// How many key offsets a [`Layout`] records.
pub(crate) const KEYS_RECORDED: usize = 8;

/// Why a sink refused an element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The key occurred before and the decoder is strict.
    Duplicate,
    /// A limit was exceeded.
    Limit(Limit),
    /// The key (`in_key`) or the string value is not UTF-8.
    Utf8 { in_key: bool },
}

/// Receives what the walk finds. Strings arrive as unvalidated bytes: each
/// sink checks UTF-8 its own way (the owned decoder in one pass at the end).
pub(crate) trait Sink<'a> {
    /// Whether the walk records the first keys' offsets in the
    /// [`Layout`] (for a view's lookups; a decode into a frame has no use
    /// for them).
    const RECORDS_KEYS: bool = false;
    /// `count` parameters follow (already checked against the input size and
    /// `max_params`).
    fn begin_params(&mut self, count: usize) -> Result<(), Limit>;
    /// One parameter.
    fn param(&mut self, key: &'a [u8], value: WireValue<'a>) -> Result<(), Refusal>;
    /// `count` attachments follow (already checked against the input size
    /// and `max_attachments`).
    fn begin_attachments(&mut self, count: usize) -> Result<(), Limit>;
    /// One attachment; `data` is its range in the input.
    fn attachment(&mut self, name: &'a [u8], data: Range<usize>) -> Result<(), Refusal>;
}

/// Smallest encoding of one parameter: fixstr key (1), `0x92` (1), tag (1),
/// value (1).
const MIN_PARAM_BYTES: usize = 4;
/// Smallest attachment: `0x92`, fixstr name, bin8 header (2).
const MIN_ATTACHMENT_BYTES: usize = 4;

impl DecodeError {
    fn with_context(mut self, context: Context) -> Self {
        self.set_context(context);
        self
    }
}

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
    let count = match r.fix_len(0x80) {
        Some(n) => n,
        None => r.map_len().map_err(|e| e.with_context(Context::Params))?,
    };
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
    layout.params_at = r.pos() as u32;
    layout.params = count as u32;
    sink.begin_params(count).map_err(|limit| {
        DecodeError::new(ErrorKind::LimitExceeded(limit), map_at, Context::Params)
    })?;
    for i in 0..count {
        let key_at = r.pos();
        if S::RECORDS_KEYS {
            if let Some(slot) = layout.first_keys.get_mut(i) {
                *slot = key_at as u32;
            }
        }
        let (key, value, value_at) = match r.fast_param() {
            // A fast-path key is a fixstr (one header byte) within the key
            // limit.
            Some((key, value)) => (key, value, key_at + 1 + key.len()),
            None => {
                let key = r.str_bytes().map_err(|e| e.with_context(Context::Key(i)))?;
                if key.len() > limits.max_key_len {
                    return Err(DecodeError::new(
                        ErrorKind::LimitExceeded(Limit::KeyLen),
                        key_at,
                        Context::Key(i),
                    ));
                }
                let value_at = r.pos();
                let value = r.wire_value().map_err(|e| {
                    e.with_context(Context::Value(String::from_utf8_lossy(key).into_owned()))
                })?;
                (key, value, value_at)
            }
        };
        if let Err(refusal) = sink.param(key, value) {
            let (kind, at, context) = match refusal {
                Refusal::Duplicate => (ErrorKind::DuplicateKey, key_at, Context::Key(i)),
                Refusal::Limit(l) => (ErrorKind::LimitExceeded(l), key_at, Context::Key(i)),
                Refusal::Utf8 { in_key: true } => (ErrorKind::InvalidUtf8, key_at, Context::Key(i)),
                Refusal::Utf8 { in_key: false } => (
                    ErrorKind::InvalidUtf8,
                    string_marker_at(r.input(), value_at),
                    Context::Value(String::from_utf8_lossy(key).into_owned()),
                ),
            };
            return Err(DecodeError::new(kind, at, context));
        }
    }

    // Attachments.
    let list_at = r.pos();
    let count = match r.fix_len(0x90) {
        Some(n) => n,
        None => r
            .array_len()
            .map_err(|e| e.with_context(Context::Attachment(0)))?,
    };
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
    layout.attachments_at = r.pos() as u32;
    layout.attachments = count as u32;
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
        let name_at = r.pos();
        let name = r.str_bytes().map_err(ctx)?;
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
        sink.attachment(name, data).map_err(|refusal| {
            let (kind, at) = match refusal {
                Refusal::Limit(l) => (ErrorKind::LimitExceeded(l), at),
                Refusal::Utf8 { .. } | Refusal::Duplicate => (ErrorKind::InvalidUtf8, name_at),
            };
            DecodeError::new(kind, at, Context::Attachment(i))
        })?;
    }

    r.skip_n(extra_top)?;
    layout.end = r.pos() as u32;
    Ok((header, layout))
}

/// Validates every string as it arrives and stores nothing: the view's sink,
/// and the owned decoder's way to find the first error in input order.
pub(crate) struct CheckSink<'a> {
    strict: bool,
    /// Keys seen, as `(device, param)`; only strict decoding pays for it.
    seen: Option<HashSet<(&'a [u8], &'a [u8])>>,
    budget: Budget,
}

impl CheckSink<'_> {
    pub(crate) fn new(dec: &Decoder) -> Self {
        Self::with_budget(dec, Budget::new(dec.limits.max_alloc_bytes))
    }

    /// A validating sink that spends what is left of `budget`.
    fn with_budget(dec: &Decoder, budget: Budget) -> Self {
        CheckSink {
            strict: dec.strict,
            seen: None,
            budget,
        }
    }
}

fn split_key(key: &[u8]) -> (&[u8], &[u8]) {
    match crate::key::find_separator(key) {
        Some(i) => (&key[..i], &key[i + 1..]),
        None => (&[], key),
    }
}

impl<'a> Sink<'a> for CheckSink<'a> {
    const RECORDS_KEYS: bool = true;

    fn begin_params(&mut self, count: usize) -> Result<(), Limit> {
        if self.strict && count > 0 {
            // Only strict decoding pays for this set, sized once.
            let slot = std::mem::size_of::<(&[u8], &[u8])>();
            self.budget.charge(table_bytes_bound(count, slot))?;
            self.seen = Some(HashSet::with_capacity(count));
        }
        Ok(())
    }

    #[inline]
    fn param(&mut self, key: &'a [u8], value: WireValue<'a>) -> Result<(), Refusal> {
        if !crate::utf8::is_valid(key) {
            return Err(Refusal::Utf8 { in_key: true });
        }
        if let WireValue::Str(s) = value {
            if !crate::utf8::is_valid(s) {
                return Err(Refusal::Utf8 { in_key: false });
            }
        }
        if let Some(seen) = &mut self.seen {
            if !seen.insert(split_key(key)) {
                return Err(Refusal::Duplicate);
            }
        }
        Ok(())
    }

    fn begin_attachments(&mut self, _count: usize) -> Result<(), Limit> {
        Ok(())
    }

    fn attachment(&mut self, name: &'a [u8], _data: Range<usize>) -> Result<(), Refusal> {
        if crate::utf8::is_valid(name) {
            Ok(())
        } else {
            Err(Refusal::Utf8 { in_key: false })
        }
    }
}

/// Stores what the walk finds in a [`Frame`]'s storage. Keys and string
/// values are appended to the text arena as bytes; the arena is validated as
/// UTF-8 in one pass at the end ([`DecodeTarget::finish`]). That is sound
/// because every string starts at a char boundary: each string's first byte
/// is checked not to be a UTF-8 continuation byte, so a valid arena means
/// every string in it is valid. Every allocation is charged to the budget
/// before it is made.
struct OwnedSink<'f, 'a> {
    target: DecodeTarget<'f>,
    attachments: &'f mut Attachments,
    /// When decoding from a `Bytes`, attachments are slices of it.
    shared: Option<&'a Bytes>,
    input: &'a [u8],
    budget: Budget,
    /// Cleared when a string starts with a continuation byte.
    utf8_ok: bool,
}

impl OwnedSink<'_, '_> {
    /// Appends a string's bytes to the text arena (room was reserved);
    /// returns its offset.
    #[inline]
    fn push_text(&mut self, s: &[u8]) -> usize {
        if let Some(&first) = s.first() {
            // A continuation byte cannot start a valid string.
            self.utf8_ok &= (first & 0xc0) != 0x80;
        }
        let text = &mut self.target.text;
        let start = text.len();
        if !crate::key::append_short(text, s) {
            text.extend_from_slice(s);
        }
        start
    }

    /// Makes room for `text` more arena bytes and `raw` more raw bytes,
    /// charging growth first.
    #[inline]
    fn reserve_payload(&mut self, text: usize, raw: usize) -> Result<(), Refusal> {
        let t = &self.target.text;
        let r = &*self.target.raw;
        if text <= t.capacity() - t.len() && raw <= r.capacity() - r.len() {
            return Ok(());
        }
        self.grow_payload(text, raw)
    }

    #[cold]
    fn grow_payload(&mut self, text: usize, raw: usize) -> Result<(), Refusal> {
        let t = &mut self.target.text;
        let text_cap = grown_capacity(t.capacity(), t.len(), text);
        let r = &mut *self.target.raw;
        let raw_cap = grown_capacity(r.capacity(), r.len(), raw);
        let mut bytes = 0;
        if text_cap > t.capacity() {
            bytes += text_cap;
        }
        if raw_cap > r.capacity() {
            bytes += raw_cap;
        }
        self.budget.charge(bytes).map_err(Refusal::Limit)?;
        t.reserve_exact(text_cap - t.len());
        r.reserve_exact(raw_cap - r.len());
        Ok(())
    }
}

impl<'a> Sink<'a> for OwnedSink<'_, 'a> {
    fn begin_params(&mut self, count: usize) -> Result<(), Limit> {
        let budget = &mut self.budget;
        self.target
            .table
            .reserve_entries_charged(count, |bytes| budget.charge(bytes))
    }

    #[inline]
    fn param(&mut self, key: &'a [u8], value: WireValue<'a>) -> Result<(), Refusal> {
        let (text, raw) = match value {
            WireValue::Str(s) => (key.len() + s.len(), 0),
            WireValue::Unknown(_, raw) => (key.len(), 8 + raw.len()),
            _ => (key.len(), 0),
        };
        self.reserve_payload(text, raw)?;
        let key_start = self.push_text(key);
        let slot = match value {
            WireValue::Int(v) => Slot::Int(v),
            WireValue::Double(v) => Slot::Double(v),
            WireValue::Bool(v) => Slot::Bool(v),
            WireValue::Str(s) => {
                let start = self.push_text(s);
                Slot::Str {
                    start: to_u32(start),
                    len: to_u32(s.len()),
                }
            }
            WireValue::Unknown(tag, raw) => store_unknown(self.target.raw, tag, raw),
        };
        let entry = Entry::for_wire_key(key_start, key, slot);
        // Duplicates (strict mode) are looked for once, after the walk.
        self.target.table.push_decoded(entry);
        Ok(())
    }

    fn begin_attachments(&mut self, count: usize) -> Result<(), Limit> {
        let budget = &mut self.budget;
        self.attachments
            .reserve_charged(count, |bytes| budget.charge(bytes))
    }

    fn attachment(&mut self, name: &'a [u8], data: Range<usize>) -> Result<(), Refusal> {
        let name = crate::utf8::str_from(name).map_err(|_| Refusal::Utf8 { in_key: false })?;
        let budget = &mut self.budget;
        self.attachments
            .reserve_name_charged(name.len(), |bytes| budget.charge(bytes))
            .map_err(Refusal::Limit)?;
        let (data, own_copy) = match self.shared {
            Some(b) => (b.slice(data), false),
            None => {
                // Charged whether or not a spare buffer takes the copy, so
                // that what a decode may do depends on its input alone.
                self.budget.charge(data.len()).map_err(Refusal::Limit)?;
                (self.attachments.copy_of(&self.input[data]), true)
            }
        };
        self.attachments.push(name, data, own_copy);
        Ok(())
    }
}

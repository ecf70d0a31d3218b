//! The frame walk: one pass over a frame's bytes that checks its whole
//! structure and hands each parameter and attachment to a [`Sink`].

#[allow(unused_imports)]
use crate::prelude::*;

use core::ops::Range;

use crate::error::{Context, DecodeError, ErrorKind, Expected, Limit};
use crate::header::Header;
use crate::value::{UnknownValue, ValueRef, TAG_BOOL, TAG_DOUBLE, TAG_INT, TAG_STRING};
use crate::wire::read::{be_uint, fast_uint, scalar_size, Int, Reader};

use super::Decoder;

/// A value as the walk reads it: strings still unvalidated bytes (each sink
/// validates them its own way).
#[derive(Debug, Clone, Copy)]
pub(crate) enum WireValue<'a> {
    Int(i64),
    Double(f64),
    Bool(bool),
    Str(&'a [u8]),
    /// Any integer tag but the four known ones, and the value's bytes.
    Unknown(Int, &'a [u8]),
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

/// The bytes within which the serde bridge's fast path reads a parameter.
#[cfg(feature = "serde")]
const WINDOW: usize = 80;

/// The parameter at byte `p` of `d` in the forms encoders write (see
/// [`Reader::fast_param`]): its key, its value and where it ends.
#[inline(always)]
fn fast_param_at(
    d: &[u8],
    p: usize,
    max_key: usize,
    max_str: usize,
) -> Option<(&[u8], WireValue<'_>, usize)> {
    let m = *d.get(p)?;
    let klen = usize::from(m & 0x1f);
    if m & 0xe0 != 0xa0 || klen > max_key {
        return None;
    }
    let key = d.get(p + 1..p + 1 + klen)?;
    let (value, end) = fast_value(d, p + 1 + klen, max_str)?;
    Some((key, value, end))
}

/// The frame-shaped reads: parameters, values and the header.
impl<'a> Reader<'a> {
    /// Reads one parameter (`key`, `[tag, value]`) in the forms encoders
    /// write: fixstr key within the key limit, fixarray(2), fixint tag, and
    /// a value in a common encoding. Returns `None`, consuming nothing, for
    /// anything else, which the general readers then handle (with exact
    /// errors). No `Result` plumbing: this is the decoders' hot path.
    #[inline(always)]
    pub(crate) fn fast_param(&mut self, max_key: usize) -> Option<(&'a [u8], WireValue<'a>)> {
        let (key, value, end) = fast_param_at(self.data, self.pos, max_key, self.max_str)?;
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

    /// Reads a `[tag, value, ...]` pair. Fast paths for the forms encoders
    /// write (fixarray(2), fixint tags and small ints, float64, fixstr);
    /// every other valid encoding goes through the general readers.
    #[inline(always)]
    pub(crate) fn wire_value(&mut self) -> Result<WireValue<'a>, DecodeError> {
        let extra = self.array_at_least(2)?;
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
            // Every other integer (i64::MIN..=u64::MAX) is an unknown tag.
            tag => {
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
pub(super) fn read_header(r: &mut Reader<'_>) -> Result<(Header, usize), DecodeError> {
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

/// Where the parts of a validated frame are in the input. Offsets are
/// `usize` (a frame may be as large as MessagePack allows); counts are `u32`,
/// which every MessagePack count fits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Layout {
    /// Offset of the first key (just after the map header).
    pub(crate) params_at: usize,
    /// Offset of the first attachment pair (after the array header).
    pub(crate) attachments_at: usize,
    /// Bytes the frame occupies.
    pub(crate) end: usize,
    pub(crate) params: u32,
    pub(crate) attachments: u32,
    /// Offsets of the first [`KEYS_RECORDED`] keys, recorded when the sink
    /// asks ([`Sink::RECORDS_KEYS`]: the view's). A lookup in a view then
    /// reads those keys independently of one another, instead of a chain
    /// where each key's position depends on the load of the value before it
    /// (which made a 4-parameter `FrameView::find` twice as slow as
    /// `Frame::find`). `u32`, which keeps a [`FrameView`](crate::FrameView)
    /// small to return and copy: when the parameters end past 4 GiB (so that
    /// a key among the first may start past it), none is recorded,
    /// `first_keys[0]` is 0 (no key is ever at byte 0), and lookups read
    /// every key in turn.
    pub(crate) first_keys: [u32; KEYS_RECORDED],
}

impl Layout {
    pub(crate) fn params_at(&self) -> usize {
        self.params_at
    }
    pub(crate) fn params(&self) -> usize {
        self.params as usize
    }
    pub(crate) fn attachments_at(&self) -> usize {
        self.attachments_at
    }
    pub(crate) fn attachments(&self) -> usize {
        self.attachments as usize
    }
    pub(crate) fn end(&self) -> usize {
        self.end
    }
    /// Whether the first keys' offsets were recorded (see `first_keys`).
    pub(crate) fn keys_recorded(&self) -> bool {
        self.first_keys[0] != 0
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
    /// The parameter does not fit a frame's storage
    /// ([`ErrorKind::CapacityExceeded`]).
    Capacity,
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

/// Inlined into its callers: with the walk in its own module, LLVM no longer
/// inlined it into the owned decode on its own, which cost about 50
/// instructions per 4-parameter message (callgrind).
#[inline(always)]
pub(crate) fn walk<'a, S: Sink<'a>>(
    dec: &Decoder,
    input: &'a [u8],
    sink: &mut S,
) -> Result<(Header, Layout), DecodeError> {
    let (mut w, header) = Walk::start(dec, input, sink)?;
    for i in 0..w.params() {
        w.param(i, sink)?;
    }
    let layout = w.finish(sink)?;
    Ok((header, layout))
}

/// The walk, one step at a time: [`walk`] runs it in one go; the serde
/// bridge's `from_bytes` takes parameters as it needs them, so that the
/// frame is checked and read in one pass.
pub(crate) struct Walk<'a, 'd> {
    dec: &'d Decoder,
    r: Reader<'a>,
    /// Longest key the fast path takes (within the string limit); longer
    /// ones go the general way, which reports the limit.
    max_key: usize,
    extra_top: usize,
    layout: Layout,
}

impl<'a, 'd> Walk<'a, 'd> {
    /// Reads the header and the parameter map's header, and tells the sink
    /// how many parameters follow.
    #[inline(always)]
    pub(crate) fn start<S: Sink<'a>>(
        dec: &'d Decoder,
        input: &'a [u8],
        sink: &mut S,
    ) -> Result<(Self, Header), DecodeError> {
        let limits = &dec.limits;
        let mut r = limits.reader(input);
        let max_key = limits.max_key_len.min(limits.max_string_len);
        let (header, extra_top) = read_header(&mut r)?;
        let mut layout = Layout::default();

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
        // The claimed count must fit in what is left before anything is
        // reserved.
        if count > r.remaining() / MIN_PARAM_BYTES {
            return Err(r
                .short(map_at, count.saturating_mul(MIN_PARAM_BYTES), Expected::Map)
                .with_context(Context::Params));
        }
        layout.params_at = r.pos();
        // A map's count is at most u32::MAX (map32).
        layout.params = count as u32;
        sink.begin_params(count).map_err(|limit| {
            DecodeError::new(ErrorKind::LimitExceeded(limit), map_at, Context::Params)
        })?;
        let walk = Walk {
            dec,
            r,
            max_key,
            extra_top,
            layout,
        };
        Ok((walk, header))
    }

    /// How many parameters the map holds.
    #[inline(always)]
    pub(crate) fn params(&self) -> usize {
        self.layout.params()
    }

    /// Where the next element starts.
    #[cfg(feature = "serde")]
    #[inline(always)]
    pub(crate) fn pos(&self) -> usize {
        self.r.pos()
    }

    /// The next parameter if it is in the forms encoders write (see
    /// [`Reader::fast_param`]), read without telling the sink, so only for
    /// a sink that checks what its caller checks (the serde bridge's; its
    /// decoder is lenient, so UTF-8 is all there is to check). `None`,
    /// consuming nothing, otherwise: [`param`](Walk::param) then reads it.
    #[cfg(feature = "serde")]
    #[inline(always)]
    pub(crate) fn fast_param(&mut self) -> Option<(&'a [u8], WireValue<'a>)> {
        let d = self.r.data;
        let p = self.r.pos;
        // Any parameter the fast path reads (a fixstr key, the pair's
        // header, a value of up to 9 bytes or a fixstr) lies within 80
        // bytes of its start: read within such a window, whose length is
        // known, its reads need no bounds checks. The last 80 bytes of a
        // frame go the usual way.
        let Some(w) = d.get(p..p + WINDOW) else {
            return self.r.fast_param(self.max_key);
        };
        let (key, value, end) = fast_param_at(w, 0, self.max_key, self.r.max_str)?;
        self.r.pos = p + end;
        Some((key, value))
    }

    /// Back to `pos`, where a parameter that [`fast_param`](Walk::fast_param)
    /// read starts, so that [`param`](Walk::param) reads it again (and
    /// reports what is wrong with it).
    #[cfg(feature = "serde")]
    #[inline(always)]
    pub(crate) fn rewind(&mut self, pos: usize) {
        self.r.pos = pos;
    }

    /// Reads parameter `i` (the next one) and hands it to the sink.
    #[inline(always)]
    pub(crate) fn param<S: Sink<'a>>(&mut self, i: usize, sink: &mut S) -> Result<(), DecodeError> {
        let r = &mut self.r;
        let limits = &self.dec.limits;
        let key_at = r.pos();
        if S::RECORDS_KEYS {
            if let Some(slot) = self.layout.first_keys.get_mut(i) {
                // Checked in `finish`: offsets only grow.
                *slot = key_at as u32;
            }
        }
        let (key, value, value_at) = match r.fast_param(self.max_key) {
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
                let value = r
                    .wire_value()
                    .map_err(|e| e.with_context(Context::value_of_key(key)))?;
                (key, value, value_at)
            }
        };
        if let Err(refusal) = sink.param(key, value) {
            let (kind, at, context) = match refusal {
                Refusal::Duplicate => (ErrorKind::DuplicateKey, key_at, Context::Key(i)),
                Refusal::Limit(l) => (ErrorKind::LimitExceeded(l), key_at, Context::Key(i)),
                Refusal::Capacity => (ErrorKind::CapacityExceeded, key_at, Context::Key(i)),
                Refusal::Utf8 { in_key: true } => (ErrorKind::InvalidUtf8, key_at, Context::Key(i)),
                Refusal::Utf8 { in_key: false } => (
                    ErrorKind::InvalidUtf8,
                    string_marker_at(r.input(), value_at),
                    Context::value_of_key(key),
                ),
            };
            return Err(DecodeError::new(kind, at, context));
        }
        Ok(())
    }

    /// After the last parameter: the attachments and the rest of the frame.
    #[inline(always)]
    pub(crate) fn finish<S: Sink<'a>>(&mut self, sink: &mut S) -> Result<Layout, DecodeError> {
        let limits = &self.dec.limits;
        let r = &mut self.r;
        let layout = &mut self.layout;
        if S::RECORDS_KEYS && r.pos() > u32::MAX as usize {
            // Some recorded key may start past 4 GiB: record none (see
            // `Layout::first_keys`).
            layout.first_keys[0] = 0;
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
                .short(
                    list_at,
                    count.saturating_mul(MIN_ATTACHMENT_BYTES),
                    Expected::Array,
                )
                .with_context(Context::Attachment(0)));
        }
        layout.attachments_at = r.pos();
        // An array's count is at most u32::MAX (array32).
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
                    Refusal::Capacity => (ErrorKind::CapacityExceeded, at),
                    Refusal::Utf8 { .. } | Refusal::Duplicate => (ErrorKind::InvalidUtf8, name_at),
                };
                DecodeError::new(kind, at, Context::Attachment(i))
            })?;
        }

        r.skip_n(self.extra_top)?;
        layout.end = r.pos();
        Ok(self.layout)
    }
}

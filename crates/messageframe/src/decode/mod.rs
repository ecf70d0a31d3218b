//! The decoder: strict about structure, liberal about encodings (SPEC §3).
//!
//! One walk over the input ([`walk`](walk::walk)) checks the whole frame and
//! hands each parameter and attachment to a [`Sink`](walk::Sink): the owned
//! decoder stores them in a [`Frame`], the [`FrameView`](crate::FrameView)
//! only counts them. Both get the same validation because they share the
//! walk. This module holds the options ([`Limits`], [`Decoder`]) and the
//! owned decode; `walk` the pass itself, `sink` what receives it.

#[allow(unused_imports)]
use crate::prelude::*;

mod sink;
mod walk;

use bytes::Bytes;

use crate::error::{Context, DecodeError, ErrorKind, Limit};
use crate::frame::Frame;
use crate::header::Header;
use crate::params::DecodeTarget;
use crate::wire::read::Reader;

pub(crate) use sink::CheckSink;
use sink::OwnedSink;
use walk::read_header;
pub(crate) use walk::{fast_value, read_value, walk, Layout, WireValue, KEYS_RECORDED};
#[cfg(feature = "serde")]
pub(crate) use walk::{Refusal, Sink, Walk};

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
/// let bytes = frame.encode()?;
/// let strict = Decoder::new().limits(Limits::default().max_params(8));
/// let err = strict.decode(&bytes).unwrap_err();
/// assert_eq!(err.kind(), &ErrorKind::LimitExceeded(Limit::Params));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Build limits from [`Limits::default`] or [`Limits::none`] with the setters
/// (one per field, named after it, `const` so that limits can be a
/// `const`); the fields can be read and assigned. `#[non_exhaustive]`: a
/// later version may add limits, so a struct literal is not possible outside
/// this crate:
///
/// ```compile_fail
/// use messageframe::Limits;
/// let limits = Limits { max_params: 8, ..Limits::default() };
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest frame, in encoded bytes. Default 256 MiB. No other ceiling:
    /// with `usize::MAX` a frame may be as large as MessagePack allows
    /// (several attachments of up to 4 GiB − 1 bytes each).
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
    /// Default 1 GiB. Values above `isize::MAX` count as `isize::MAX`, the
    /// most any Rust allocation may be (so a request beyond what the target
    /// can address is this limit's error, never a panic).
    pub max_alloc_bytes: usize,
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
        Budget {
            spent: 0,
            max: max.min(isize::MAX as usize),
        }
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

macro_rules! limit_setters {
    ($($field:ident),*) => {$(
        #[doc = concat!("Sets [`", stringify!($field), "`](Limits::", stringify!($field), ").")]
        #[must_use]
        pub const fn $field(mut self, value: usize) -> Self {
            self.$field = value;
            self
        }
    )*};
}

impl Limits {
    limit_setters!(
        max_frame_bytes,
        max_params,
        max_attachments,
        max_attachment_bytes,
        max_string_len,
        max_key_len,
        max_alloc_bytes
    );

    /// A reader of the frame at the start of `bytes` within these limits.
    pub(crate) fn reader<'a>(&self, bytes: &'a [u8]) -> Reader<'a> {
        Reader::new(bytes, self.max_frame_bytes, self.max_string_len)
    }

    /// No limits beyond the format's own maxima and the input's size: every
    /// frame MessagePack can express decodes, given the memory (an owned
    /// [`Frame`] holds at most 4 GiB − 1 bytes of keys and strings:
    /// [`ErrorKind::CapacityExceeded`]). For trusted input only.
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
/// let mut stream = frame.encode()?;
/// stream.extend_from_slice(&frame.encode()?);
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
/// # Ok::<(), Box<dyn std::error::Error>>(())
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

    /// Reads the header of the frame at the start of `bytes` and the length
    /// of the whole frame, within these limits: what
    /// [`Header::peek_frame`] does with the default ones. A stream holding
    /// frames larger than the default `max_frame_bytes` (256 MiB) is walked
    /// with a decoder whose limits allow them.
    ///
    /// ```
    /// use messageframe::{Decoder, Frame, Header, Limits};
    ///
    /// let mut frame = Frame::new(Header::new(1, 2, 3, 4));
    /// frame.add_attachment("capture", vec![0u8; 4096]);
    /// let bytes = frame.encode()?;
    /// let small = Decoder::new().limits(Limits::default().max_frame_bytes(1024));
    /// assert!(small.peek_frame(&bytes).is_err());
    /// let (header, len) = Decoder::new().limits(Limits::none()).peek_frame(&bytes)?;
    /// assert_eq!((header.target(), len), (4, bytes.len()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_frame(&self, bytes: &[u8]) -> Result<(Header, usize), DecodeError> {
        peek_frame(&self.limits, bytes)
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
        if self.strict {
            self.decode_owned_as::<true>(frame, bytes, shared, exact)
        } else {
            self.decode_owned_as::<false>(frame, bytes, shared, exact)
        }
    }

    /// [`decode_into`](Decoder::decode_into) of a lenient decoder, the
    /// strictness known at compile time: `Frame::decode` and
    /// `Frame::decode_from` hold no code of the strict decode's duplicate
    /// check.
    pub(crate) fn decode_lenient_into(
        &self,
        frame: &mut Frame,
        bytes: &[u8],
    ) -> Result<(), DecodeError> {
        debug_assert!(!self.strict);
        self.decode_owned_as::<false>(frame, bytes, None, true)
            .map(drop)
    }

    /// [`decode_owned`](Decoder::decode_owned) with the strictness a
    /// constant.
    fn decode_owned_as<const STRICT: bool>(
        &self,
        frame: &mut Frame,
        bytes: &[u8],
        shared: Option<&Bytes>,
        exact: bool,
    ) -> Result<usize, DecodeError> {
        frame.clear_attachments();
        // The sink borrows the frame's storage: it is gone at the end of
        // this block, before the frame is used again.
        let (result, kept, budget) = {
            let (params, attachments) = frame.decode_parts();
            let target = params.begin_decode();
            let mut sink = OwnedSink {
                text_end: sink::arena_end(target.text.capacity()),
                raw_end: sink::arena_end(target.raw.capacity()),
                target,
                attachments,
                shared,
                input: bytes,
                budget: Budget::new(self.limits.max_alloc_bytes),
                utf8_ok: true,
                claimed: 0,
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
            if STRICT && fine {
                // Duplicates are looked for once, with the index lookups
                // build anyway (charged to the budget first).
                let DecodeTarget { table, text, .. } = &sink.target;
                fine = sink.budget.charge(table.bytes_to_index()).is_ok()
                    && table.first_duplicate(text.bytes()).is_none();
            }
            let OwnedSink { target, budget, .. } = sink;
            (result, target.finish(fine), budget)
        };
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
                let mut check = CheckSink::<STRICT>::with_budget(self, budget);
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

/// The header of the frame at the start of `bytes` and the frame's length,
/// the rest only skipped by its markers and length prefixes. Each part is
/// skipped on its own, so that an error says where it is: in the
/// parameter map (in a key, or in the value of a key), in an attachment,
/// or after them in the frame.
pub(crate) fn peek_frame(limits: &Limits, bytes: &[u8]) -> Result<(Header, usize), DecodeError> {
    let mut r = limits.reader(bytes);
    let (header, extra_top) = read_header(&mut r)?;
    skip_params(&mut r)?;
    skip_attachments(&mut r)?;
    r.skip_n(extra_top)?;
    Ok((header, r.pos()))
}

fn with(context: Context) -> impl FnOnce(DecodeError) -> DecodeError {
    move |mut e| {
        e.set_context(context);
        e
    }
}

/// Skips the parameter map: pair by pair when it is a map, else as one
/// value (no type check: that is the walk's job).
fn skip_params(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    if !matches!(r.data.get(r.pos()), Some(0x80..=0x8f | 0xde | 0xdf)) {
        return r.skip().map_err(with(Context::Params));
    }
    let count = r.map_len().map_err(with(Context::Params))?;
    for i in 0..count {
        let key_at = r.pos();
        r.skip().map_err(with(Context::Key(i)))?;
        r.skip().map_err(|e| {
            // The key, for the message, if it is a string.
            let mut k = Reader::validated(r.input(), key_at);
            let context = match k.str_bytes() {
                Ok(key) => Context::value_of_key(key),
                Err(_) => Context::Key(i),
            };
            with(context)(e)
        })?;
    }
    Ok(())
}

/// Skips the attachment list: attachment by attachment when it is an
/// array, else as one value.
fn skip_attachments(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    if !matches!(r.data.get(r.pos()), Some(0x90..=0x9f | 0xdc | 0xdd)) {
        return r.skip().map_err(with(Context::Attachment(0)));
    }
    let count = r.array_len().map_err(with(Context::Attachment(0)))?;
    for i in 0..count {
        r.skip().map_err(with(Context::Attachment(i)))?;
    }
    Ok(())
}

pub(crate) fn peek_header(bytes: &[u8]) -> Result<Header, DecodeError> {
    let mut r = Limits::default().reader(bytes);
    read_header(&mut r).map(|(h, _)| h)
}

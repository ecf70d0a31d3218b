//! The decoding error: what went wrong, and at which byte.

#[allow(unused_imports)]
use crate::prelude::*;

use core::fmt;

#[cfg(all(not(feature = "std"), core_error))]
pub(crate) use core::error::Error as ErrorTrait;
/// The `Error` trait the error types implement: `std::error::Error` with
/// the `std` feature; without it `core::error::Error`, which compilers from
/// 1.81 on have (`build.rs` detects it and sets `core_error`). An older
/// compiler builds the `no_std` crate without the trait impls: the types
/// keep `Debug` and `Display` (docs/no_std.md).
#[cfg(feature = "std")]
pub(crate) use std::error::Error as ErrorTrait;

use crate::key::InvalidKey;

/// Which part of a frame was being read when decoding failed.
///
/// Carried by [`DecodeError`] so that a message can say "in header field
/// `source`" or "in the value of `sdr_1.rx_gain`" (keys as
/// [`KeyDisplay`](crate::KeyDisplay) prints them).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Context {
    /// The top-level `[header, params, attachments]` array.
    Frame,
    /// One of the eight header fields, by name (`"timestamp"`, `"source"`…).
    Header(&'static str),
    /// The parameter map itself (its length prefix).
    Params,
    /// A parameter key (index in the map).
    Key(usize),
    /// The value of the parameter with this flat key (lossily decoded; as
    /// on the wire, with U+001F between device and parameter: the message
    /// prints it as [`KeyDisplay`](crate::KeyDisplay) does).
    Value(String),
    /// The attachment list or one attachment (index in the list).
    Attachment(usize),
}

impl Context {
    /// The context of a value whose key is `key` (as it came from the wire),
    /// decoded lossily: each invalid sequence becomes one U+FFFD, as
    /// `String::from_utf8_lossy` does, with the `from_utf8` every decoder
    /// links anyway (`from_utf8_lossy` added 650 bytes to a Cortex-M
    /// binary for an error message).
    #[cold]
    pub(crate) fn value_of_key(key: &[u8]) -> Context {
        let mut out = String::with_capacity(key.len());
        let mut rest = key;
        loop {
            match core::str::from_utf8(rest) {
                Ok(s) => {
                    out.push_str(s);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    out.push_str(core::str::from_utf8(valid).unwrap_or(""));
                    out.push('\u{fffd}');
                    match e.error_len() {
                        Some(n) => rest = &after[n..],
                        None => break,
                    }
                }
            }
        }
        Context::Value(out)
    }
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Context::Frame => f.write_str("frame"),
            Context::Header(field) => write!(f, "header field `{field}`"),
            Context::Params => f.write_str("parameter map"),
            Context::Key(i) => write!(f, "key of parameter #{i}"),
            Context::Value(key) => write!(f, "value of `{}`", crate::KeyDisplay::from_flat(key)),
            Context::Attachment(i) => write!(f, "attachment #{i}"),
        }
    }
}

/// The MessagePack type a decoder expected at some position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expected {
    /// An array (`fixarray`, `array16`, `array32`).
    Array,
    /// A map (`fixmap`, `map16`, `map32`).
    Map,
    /// An integer in any width.
    Integer,
    /// An integer or a float (a Double value).
    Number,
    /// A string (`fixstr`, `str8/16/32`).
    String,
    /// A binary blob (`bin8/16/32`).
    Binary,
    /// `true` or `false`.
    Bool,
    /// Any valid MessagePack value (the marker byte is reserved: `0xc1`).
    Value,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::Array => "an array",
            Expected::Map => "a map",
            Expected::Integer => "an integer",
            Expected::Number => "a number",
            Expected::String => "a string",
            Expected::Binary => "binary data",
            Expected::Bool => "a bool",
            Expected::Value => "a MessagePack value",
        })
    }
}

/// A decoding limit of [`Limits`](crate::Limits) that an input exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// [`Limits::max_frame_bytes`](crate::Limits::max_frame_bytes).
    FrameBytes,
    /// [`Limits::max_params`](crate::Limits::max_params).
    Params,
    /// [`Limits::max_attachments`](crate::Limits::max_attachments).
    Attachments,
    /// [`Limits::max_attachment_bytes`](crate::Limits::max_attachment_bytes).
    AttachmentBytes,
    /// [`Limits::max_string_len`](crate::Limits::max_string_len).
    StringLen,
    /// [`Limits::max_key_len`](crate::Limits::max_key_len).
    KeyLen,
    /// [`Limits::max_alloc_bytes`](crate::Limits::max_alloc_bytes).
    AllocBytes,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::FrameBytes => "max_frame_bytes",
            Limit::Params => "max_params",
            Limit::Attachments => "max_attachments",
            Limit::AttachmentBytes => "max_attachment_bytes",
            Limit::StringLen => "max_string_len",
            Limit::KeyLen => "max_key_len",
            Limit::AllocBytes => "max_alloc_bytes",
        })
    }
}

/// What was wrong with the input. Match on it through [`DecodeError::kind`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ends inside an element, or a length prefix claims more bytes
    /// than remain. The error's [offset](DecodeError::offset) is where the
    /// element starts.
    ///
    /// `needed - available` is a lower bound of the bytes missing: a
    /// stream reader that waits for that many more bytes makes progress,
    /// though the frame may need more after this element.
    #[non_exhaustive]
    Truncated {
        /// The element that does not fit: what the frame layout expects
        /// where it starts (a string, binary data, a MessagePack value…).
        element: Expected,
        /// Bytes the element needs from its start, as far as its marker and
        /// length prefix tell (at least this many: a container's elements
        /// may need more).
        needed: usize,
        /// Bytes the input has from the element's start.
        available: usize,
    },
    /// A MessagePack element of the wrong type for its place (`found` is its
    /// marker byte).
    UnexpectedType {
        /// What the frame layout requires here.
        expected: Expected,
        /// The marker byte actually found.
        found: u8,
    },
    /// An array has fewer elements than the layout requires.
    TooFewElements {
        /// Elements required.
        expected: usize,
        /// Elements present.
        found: usize,
    },
    /// An integer does not fit the type of its field (a header field, an
    /// Int64 value, or a tag).
    IntegerOutOfRange,
    /// A string (key, string value or attachment name) is not valid UTF-8.
    InvalidUtf8,
    /// A key occurs twice and the decoder is strict
    /// ([`Decoder::strict`](crate::Decoder::strict)).
    DuplicateKey,
    /// Bytes follow the frame where exactly one frame was expected.
    TrailingBytes {
        /// How many bytes follow the frame.
        count: usize,
    },
    /// A configured [`Limits`](crate::Limits) value was exceeded.
    LimitExceeded(Limit),
    /// The frame is valid, but an owned [`Frame`](crate::Frame) cannot hold
    /// it: its keys and string values together, or its unknown values
    /// together, reach 4 GiB, past the 32-bit offsets of a frame's storage
    /// (only a frame larger than 4 GiB can). A
    /// [`FrameView`](crate::FrameView) reads it; the error's offset is the
    /// key of the parameter that does not fit.
    CapacityExceeded,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Truncated {
                element,
                needed,
                available,
            } => write!(
                f,
                "input is truncated: {element} needs {needed} {}, only {available} {} left",
                bytes(*needed),
                if *available == 1 { "is" } else { "are" }
            ),
            ErrorKind::UnexpectedType { expected, found } => {
                write!(f, "expected {expected}, found marker 0x{found:02x}")
            }
            ErrorKind::TooFewElements { expected, found } => {
                write!(
                    f,
                    "array has {found} elements, at least {expected} required"
                )
            }
            ErrorKind::IntegerOutOfRange => f.write_str("integer out of range for its field"),
            ErrorKind::InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            ErrorKind::DuplicateKey => f.write_str("duplicate key"),
            ErrorKind::TrailingBytes { count } => {
                write!(f, "{count} trailing bytes after the frame")
            }
            ErrorKind::LimitExceeded(limit) => write!(f, "decode limit `{limit}` exceeded"),
            ErrorKind::CapacityExceeded => f.write_str(
                "the frame's keys and strings reach 4 GiB, more than a Frame holds \
                 (FrameView reads it)",
            ),
        }
    }
}

/// Why [`Frame::try_add`](crate::Frame::try_add) refused a parameter. The
/// frame is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddError {
    /// The frame already holds this key ([`Frame::set`](crate::Frame::set)
    /// replaces its value instead).
    DuplicateKey,
    /// The device name contains the key separator U+001F, so the key would
    /// split differently when decoded.
    InvalidKey(InvalidKey),
    /// The frame's keys and string values would exceed 4 GiB − 1 bytes in
    /// all (or its unknown values would), what one frame holds; a single
    /// string that long is beyond MessagePack's `str32` anyway.
    CapacityExceeded,
    /// The value is an integer outside Int64's range (a `u64` or `usize`
    /// above `i64::MAX`), which the wire format cannot carry.
    IntOutOfRange(IntOutOfRange),
}

impl From<IntOutOfRange> for AddError {
    fn from(e: IntOutOfRange) -> Self {
        AddError::IntOutOfRange(e)
    }
}

/// An unsigned integer above `i64::MAX`, refused where a parameter value
/// (an Int64) was to be made from it: by `Value::try_from`,
/// `ValueRef::try_from` and [`Frame::try_add`](crate::Frame::try_add).
///
/// ```
/// use messageframe::{IntOutOfRange, Value};
///
/// assert_eq!(Value::try_from(7u64), Ok(Value::Int(7)));
/// let err: IntOutOfRange = Value::try_from(u64::MAX).unwrap_err();
/// assert_eq!(err.value(), u64::MAX);
/// assert_eq!(err.to_string(), "18446744073709551615 is outside the Int64 range");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntOutOfRange {
    value: u64,
}

impl IntOutOfRange {
    pub(crate) fn new(value: u64) -> Self {
        IntOutOfRange { value }
    }

    /// The integer that was refused.
    #[must_use]
    pub fn value(&self) -> u64 {
        self.value
    }
}

impl fmt::Display for IntOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is outside the Int64 range", self.value)
    }
}

#[cfg(any(feature = "std", core_error))]
impl ErrorTrait for IntOutOfRange {}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddError::DuplicateKey => f.write_str("the frame already holds this key"),
            AddError::InvalidKey(e) => write!(f, "{e}"),
            AddError::CapacityExceeded => {
                f.write_str("the frame's keys and strings would exceed 4 GiB, what one frame holds")
            }
            AddError::IntOutOfRange(e) => write!(f, "{e}"),
        }
    }
}

#[cfg(any(feature = "std", core_error))]
impl ErrorTrait for AddError {
    fn source(&self) -> Option<&(dyn ErrorTrait + 'static)> {
        match self {
            AddError::InvalidKey(e) => Some(e),
            AddError::IntOutOfRange(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a frame could not be encoded: it holds something MessagePack cannot
/// express, or its encoding does not fit in memory. Nothing was written: the
/// output buffer is as it was.
///
/// Every parameter a [`Frame`](crate::Frame) holds can be encoded (a frame
/// holds at most 4 GiB of keys and strings); attachments are kept as
/// [`Bytes`](crate::Bytes) of any size, and one longer than `bin32` can say
/// is refused here.
///
/// ```
/// use messageframe::{EncodeError, Frame};
///
/// let mut frame = Frame::default();
/// frame.add_attachment("iq", vec![0u8; 16]);
/// let mut buf = Vec::new();
/// frame.encode_into(&mut buf)?;
/// assert_eq!(buf.len(), frame.encoded_len());
/// # Ok::<(), EncodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// An attachment's data is longer than MessagePack's `bin32` can say
    /// (at most 4,294,967,295 bytes).
    AttachmentTooLarge {
        /// The attachment's position in the frame.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// An attachment's name is longer than a `str32` can say.
    AttachmentNameTooLarge {
        /// The attachment's position in the frame.
        index: usize,
        /// The name's length in bytes.
        len: usize,
    },
    /// More parameters than a `map32` can count (4,294,967,295).
    TooManyParams {
        /// How many the frame holds.
        count: usize,
    },
    /// More attachments than an `array32` can count (4,294,967,295).
    TooManyAttachments {
        /// How many the frame holds.
        count: usize,
    },
    /// The output buffer could not grow by the `needed` bytes the encoding
    /// may take: more than the allocator gives, or than the target can
    /// address (a frame holding the same large [`Bytes`](crate::Bytes)
    /// several times can need more than a 32-bit address space).
    OutOfMemory {
        /// Bytes the encoder asked to reserve (an upper bound of the
        /// encoded size; `usize::MAX` if even that overflows).
        needed: usize,
    },
    /// A buffer that cannot grow has less room than the frame takes
    /// ([`Frame::encode_to_buf`](crate::Frame::encode_to_buf)); nothing was
    /// written.
    BufferTooSmall {
        /// Bytes the encoded frame takes.
        needed: usize,
        /// Room the buffer had (`BufMut::remaining_mut`).
        available: usize,
    },
    /// A parameter given to a [`FrameEncoder`](crate::FrameEncoder) after
    /// an attachment: the wire puts every parameter before the first
    /// attachment.
    ParamAfterAttachment,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::AttachmentTooLarge { index, len } => write!(
                f,
                "attachment #{index} is {len} bytes; MessagePack's bin32 holds at most {}",
                u32::MAX
            ),
            EncodeError::AttachmentNameTooLarge { index, len } => write!(
                f,
                "the name of attachment #{index} is {len} bytes; MessagePack's str32 holds at \
                 most {}",
                u32::MAX
            ),
            EncodeError::TooManyParams { count } => write!(
                f,
                "{count} parameters; MessagePack's map32 holds at most {}",
                u32::MAX
            ),
            EncodeError::TooManyAttachments { count } => write!(
                f,
                "{count} attachments; MessagePack's array32 holds at most {}",
                u32::MAX
            ),
            EncodeError::OutOfMemory { needed } => {
                write!(f, "cannot reserve {needed} bytes for the encoded frame")
            }
            EncodeError::BufferTooSmall { needed, available } => write!(
                f,
                "the frame takes {needed} bytes, the buffer has room for {available}"
            ),
            EncodeError::ParamAfterAttachment => f.write_str(
                "a parameter after an attachment: the frame's parameters come before its \
                 attachments",
            ),
        }
    }
}

#[cfg(any(feature = "std", core_error))]
impl ErrorTrait for EncodeError {}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    kind: ErrorKind,
    offset: usize,
    context: Context,
}

/// Why a frame could not be decoded: a [kind](ErrorKind), the byte offset in
/// the input where the problem was found, and the [part of the frame](Context)
/// being read.
///
/// The error is one pointer wide, so `Result<_, DecodeError>` stays small on
/// the hot path.
///
/// ```
/// use messageframe::{ErrorKind, Frame};
///
/// let err = Frame::decode(&[0x93, 0x98, 0xcf, 0x00]).unwrap_err();
/// assert!(matches!(
///     err.kind(),
///     ErrorKind::Truncated { needed: 9, available: 2, .. }
/// ));
/// assert_eq!(err.offset(), 2);
/// assert_eq!(
///     err.to_string(),
///     "input is truncated: an integer at byte 2 needs 9 bytes, only 2 are left \
///      (in header field `timestamp`)"
/// );
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct DecodeError(Box<Inner>);

impl DecodeError {
    #[cold]
    pub(crate) fn new(kind: ErrorKind, offset: usize, context: Context) -> Self {
        DecodeError(Box::new(Inner {
            kind,
            offset,
            context,
        }))
    }

    /// What was wrong.
    #[must_use]
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Byte offset in the input (from the start of the slice given to the
    /// decoder) of the element that failed.
    #[must_use]
    pub fn offset(&self) -> usize {
        self.0.offset
    }

    /// Which part of the frame was being decoded.
    #[must_use]
    pub fn context(&self) -> &Context {
        &self.0.context
    }

    /// Shifts the offset, for callers that decode a slice taken from a larger
    /// buffer (a stream of frames) and want stream offsets.
    #[must_use]
    pub fn with_base_offset(mut self, base: usize) -> Self {
        self.0.offset = self.0.offset.saturating_add(base);
        self
    }

    pub(crate) fn set_context(&mut self, context: Context) {
        self.0.context = context;
    }

    /// A truncation names `element` (what the marker at its start says);
    /// any other error is returned as it is.
    #[cold]
    pub(crate) fn in_element(mut self, element: Expected) -> Self {
        if let ErrorKind::Truncated { element: e, .. } = &mut self.0.kind {
            *e = element;
        }
        self
    }
}

impl fmt::Debug for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecodeError")
            .field("kind", &self.0.kind)
            .field("offset", &self.0.offset)
            .field("context", &self.0.context)
            .finish()
    }
}

fn bytes(n: usize) -> &'static str {
    if n == 1 {
        "byte"
    } else {
        "bytes"
    }
}

impl DecodeError {
    /// Whether the input holds no byte at all where a frame should start:
    /// the one wording for an empty input, in the library and in `mframe`.
    fn is_empty_input(&self) -> bool {
        matches!(
            self.0.kind,
            ErrorKind::Truncated {
                element: Expected::Array,
                available: 0,
                ..
            }
        ) && self.0.context == Context::Frame
    }
}

impl fmt::Display for DecodeError {
    /// One line: what, where and in which part of the frame. A truncation
    /// names the element, where it starts, and how many bytes it needs and
    /// has (``input is truncated: binary data at byte 160 needs 1048581
    /// bytes, only 1840 are left (in attachment #0)``); an empty input says
    /// so (`input is empty: no frame at byte 0`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Inner {
            kind,
            offset,
            context,
        } = &*self.0;
        if self.is_empty_input() {
            return write!(f, "input is empty: no frame at byte {offset}");
        }
        match kind {
            ErrorKind::Truncated {
                element,
                needed,
                available,
            } => write!(
                f,
                "input is truncated: {element} at byte {offset} needs {needed} {}, \
                 only {available} {} left (in {context})",
                bytes(*needed),
                if *available == 1 { "is" } else { "are" }
            ),
            _ => write!(f, "{kind} at byte {offset} (in {context})"),
        }
    }
}

#[cfg(any(feature = "std", core_error))]
impl ErrorTrait for DecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_decoded_lossily_as_std_does() {
        for key in [
            &b"sdr_1\x1fgain"[..],
            b"",
            b"\xff",
            b"a\xffb",
            b"caf\xc3",
            b"caf\xc3\xa9",
            b"\xe2\x82x\xf0\x9f\x98",
            b"\xed\xa0\x80z",
        ] {
            let want = String::from_utf8_lossy(key).into_owned();
            assert_eq!(Context::value_of_key(key), Context::Value(want), "{key:?}");
        }
    }
}

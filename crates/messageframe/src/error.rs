//! The decoding error: what went wrong, and at which byte.

use std::fmt;

/// Which part of a frame was being read when decoding failed.
///
/// Carried by [`DecodeError`] so that a message can say "in header field
/// `source`" or "in the value of key `sdr_1␟rx_gain`".
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
    /// The value of the parameter with this flat key (lossily decoded).
    Value(String),
    /// The attachment list or one attachment (index in the list).
    Attachment(usize),
}

impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Context::Frame => f.write_str("frame"),
            Context::Header(field) => write!(f, "header field `{field}`"),
            Context::Params => f.write_str("parameter map"),
            Context::Key(i) => write!(f, "key of parameter #{i}"),
            Context::Value(key) => write!(f, "value of `{}`", key.replace('\x1f', "␟")),
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
    /// The input ended inside an element, or a length prefix claims more bytes
    /// than remain.
    Truncated,
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
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Truncated => f.write_str("input is truncated"),
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
        }
    }
}

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
/// let err = Frame::decode(&[0x93, 0x98]).unwrap_err();
/// assert_eq!(err.kind(), &ErrorKind::Truncated);
/// assert_eq!(err.offset(), 2);
/// println!("{err}"); // "input is truncated at byte 2 (in header field `timestamp`)"
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

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {} (in {})",
            self.0.kind, self.0.offset, self.0.context
        )
    }
}

impl std::error::Error for DecodeError {}

//! The bridge's error: what went wrong, and at which field path.

use std::fmt;

/// An error of [`to_frame`](super::to_frame) or
/// [`from_frame`](super::from_frame) (and their siblings): what went wrong
/// and the field path where it did (`sdr_1.tx_gain`, `items.3.sku`; empty
/// for the top level).
///
/// ```
/// use messageframe::serde::{from_frame, ErrorKind};
/// use messageframe::Frame;
///
/// #[derive(Debug, serde::Deserialize)]
/// struct Sdr { #[allow(dead_code)] tx_gain: f64 }
/// #[derive(Debug, serde::Deserialize)]
/// struct Telemetry { #[allow(dead_code)] sdr_1: Sdr }
///
/// let mut frame = Frame::default();
/// frame.add("sdr_1", "tx_gain", "high");
/// let err = from_frame::<Telemetry>(&frame).unwrap_err();
/// assert_eq!(err.to_string(), "sdr_1.tx_gain: expected f64, found string");
/// assert_eq!(err.path(), "sdr_1.tx_gain");
/// assert!(matches!(err.kind(), ErrorKind::TypeMismatch { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    // Boxed: every `Result` of the serializer and deserializer carries it,
    // and one pointer keeps those results small on the success path.
    inner: Box<Inner>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    path: String,
    kind: ErrorKind,
}

/// What went wrong, without the path ([`Error::kind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A value of another type than the field's: `expected f64, found
    /// string`. `found` is a frame value type (`int64`, `double`, `string`,
    /// `bool`, `unknown`), `a device` (parameters under a device where a
    /// single value belongs) or `an attachment`.
    TypeMismatch {
        /// What the field needs (`f64`, `u8`, `a string`, …).
        expected: &'static str,
        /// What the frame holds there.
        found: &'static str,
    },
    /// An integer that the target type cannot hold: a `u64` above
    /// `i64::MAX` on the way in (the wire's Int64 cannot carry it), or an
    /// Int64 outside a narrower field's range on the way out. Never wrapped.
    IntegerOutOfRange {
        /// The integer.
        value: i128,
        /// The type it does not fit (`int64` when serializing).
        target: &'static str,
    },
    /// A required value is absent from the frame.
    Missing,
    /// A map key or field name that cannot be part of a key: it is empty
    /// or contains `.` where it names a device, or it contains U+001F.
    InvalidKey(String),
    /// A sequence's recorded length is negative or larger than the frame
    /// could hold.
    InvalidLength(i64),
    /// A Rust shape the mapping has no place for (an enum variant with
    /// data, a unit value, a top level that is not a struct or map, a map
    /// key that is not a string or integer).
    Unsupported(&'static str),
    /// A string (a key or a value) longer than MessagePack's `str32` can
    /// say (4,294,967,295 bytes): [`to_bytes`](super::to_bytes) only; a
    /// frame cannot hold one either.
    StringTooLong(usize),
    /// What MessagePack cannot express, found by
    /// [`to_bytes`](super::to_bytes): an attachment of 4 GiB or more, or
    /// more parameters or attachments than a 32-bit count.
    Encode(crate::EncodeError),
    /// Bytes that are not a valid frame, found by
    /// [`from_bytes`](super::from_bytes): what and at which byte offset.
    Decode(crate::DecodeError),
    /// Containers nested deeper than the reader follows (128: a key may
    /// hold thousands of names, and a recursive type would recurse once
    /// per name).
    TooDeep {
        /// The deepest nesting read.
        limit: usize,
    },
    /// A message from a `Serialize` or `Deserialize` implementation
    /// (serde's `custom`, `missing_field`, `unknown_variant`, …).
    Message(String),
}

impl Error {
    #[cold]
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Error {
            inner: Box::new(Inner {
                path: String::new(),
                kind,
            }),
        }
    }

    pub(crate) fn mismatch(expected: &'static str, found: &'static str) -> Self {
        Error::new(ErrorKind::TypeMismatch { expected, found })
    }

    /// Gives the error its path, unless an inner value already did (the
    /// innermost path is the precise one).
    #[cold]
    pub(crate) fn at(mut self, path: impl FnOnce() -> String) -> Self {
        if self.inner.path.is_empty() {
            self.inner.path = path();
        }
        self
    }

    /// The field path: segments joined by `.` (`sdr_1.tx_gain`,
    /// `items.0.sku`); empty for the top level.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// What went wrong.
    #[must_use]
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::TypeMismatch { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            ErrorKind::IntegerOutOfRange { value, target } => {
                write!(f, "integer {value} out of the range of {target}")
            }
            ErrorKind::Missing => f.write_str("missing from the frame"),
            ErrorKind::InvalidKey(key) => write!(
                f,
                "{key:?} cannot be part of a key (empty, or contains '.' where it names a device, or contains U+001F)"
            ),
            ErrorKind::InvalidLength(n) => {
                write!(f, "sequence length {n} is not possible in this frame")
            }
            ErrorKind::Unsupported(what) => write!(f, "unsupported: {what}"),
            ErrorKind::StringTooLong(len) => write!(
                f,
                "a string of {len} bytes: MessagePack's str32 holds at most 4,294,967,295"
            ),
            ErrorKind::Encode(e) => write!(f, "cannot encode: {e}"),
            ErrorKind::Decode(e) => write!(f, "invalid frame: {e}"),
            ErrorKind::TooDeep { limit } => {
                write!(f, "containers nested deeper than {limit}")
            }
            ErrorKind::Message(msg) => f.write_str(msg),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.inner.path.is_empty() {
            write!(f, "{}", self.inner.kind)
        } else {
            write!(f, "{}: {}", self.inner.path, self.inner.kind)
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.inner.kind {
            ErrorKind::Encode(e) => Some(e),
            ErrorKind::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl ::serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(ErrorKind::Message(msg.to_string()))
    }
}

impl ::serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(ErrorKind::Message(msg.to_string()))
    }
}

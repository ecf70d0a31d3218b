//! `messageframe.DecodeError` and the mapping of the library's errors.

use messageframe::{DecodeError as RustDecodeError, EncodeError, ErrorKind};
use pyo3::exceptions::{PyOverflowError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    messageframe,
    DecodeError,
    PyValueError,
    "A frame that cannot be decoded: truncated, malformed or hostile input.\n\n\
     `offset` is the byte where the problem is (from the start of the\n\
     buffer, or of the stream for `iter_frames`), `kind` names it:\n\
     'truncated', 'unexpected_type', 'too_few_elements',\n\
     'integer_out_of_range', 'invalid_utf8', 'duplicate_key',\n\
     'trailing_bytes', 'limit_exceeded', 'capacity_exceeded'.\n\
     str(error) says what and where, e.g. \"input is truncated: binary data\n\
     at byte 160 needs 1048581 bytes, only 1840 are left (in attachment #0)\"."
);

/// The stable name of an error kind (`DecodeError.kind`).
pub(crate) fn kind_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Truncated { .. } => "truncated",
        ErrorKind::UnexpectedType { .. } => "unexpected_type",
        ErrorKind::TooFewElements { .. } => "too_few_elements",
        ErrorKind::IntegerOutOfRange => "integer_out_of_range",
        ErrorKind::InvalidUtf8 => "invalid_utf8",
        ErrorKind::DuplicateKey => "duplicate_key",
        ErrorKind::TrailingBytes { .. } => "trailing_bytes",
        ErrorKind::LimitExceeded(_) => "limit_exceeded",
        ErrorKind::CapacityExceeded => "capacity_exceeded",
        _ => "other",
    }
}

/// A `DecodeError` with `offset` and `kind` set.
pub(crate) fn decode_error(py: Python<'_>, message: String, offset: usize, kind: &str) -> PyErr {
    let err = DecodeError::new_err(message);
    let value = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail but for
    // lack of memory, which the error then reports instead.
    if let Err(e) = value
        .setattr("offset", offset)
        .and_then(|()| value.setattr("kind", kind))
    {
        return e;
    }
    err
}

/// The library's decoding error as `DecodeError` (an empty input is a
/// truncation at byte 0: "input is empty: no frame at byte 0").
pub(crate) fn from_decode(py: Python<'_>, e: &RustDecodeError) -> PyErr {
    decode_error(py, e.to_string(), e.offset(), kind_name(e.kind()))
}

/// The library's encoding error: only a frame too large for MessagePack
/// (4 GiB attachments or names, 2^32 parameters) can fail to encode.
pub(crate) fn from_encode(e: &EncodeError) -> PyErr {
    PyOverflowError::new_err(format!("cannot encode the frame: {e}"))
}

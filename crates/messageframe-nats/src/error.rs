//! The one error type of the crate.

use std::fmt;

use messageframe::{DecodeError, EncodeError};

use crate::InvalidPrefix;

/// What went wrong talking to NATS, or with a frame on its way through it.
///
/// ```
/// use messageframe_nats::Error;
///
/// let err = Error::PayloadTooLarge { size: 2_000_000, max_payload: 1_048_576 };
/// assert!(err.to_string().contains("max_payload"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The frame is larger than the `max_payload` the server announced: it
    /// was not sent. Raise `max_payload` in the nats-server configuration,
    /// or send smaller frames.
    PayloadTooLarge {
        /// Encoded size of the frame, in bytes.
        size: usize,
        /// The server's limit, in bytes.
        max_payload: usize,
    },
    /// A received message is not a valid frame. The subscription goes on
    /// with the next message.
    Malformed {
        /// The subject the message arrived on.
        subject: String,
        /// What is wrong with it, and at which byte.
        error: DecodeError,
    },
    /// Bytes given to be published are not one valid frame (only the header
    /// and the frame's extent are checked before publishing).
    InvalidFrame {
        /// Where the frame starts in the input: 0 for a single buffer, the
        /// byte offset for a stream of concatenated frames.
        offset: u64,
        /// What is wrong with it; its offset is within the frame.
        error: DecodeError,
    },
    /// The frame cannot be encoded (MessagePack cannot express it): it was
    /// not sent.
    Encode(EncodeError),
    /// The subject prefix is not valid.
    InvalidPrefix(InvalidPrefix),
    /// An operation of the NATS client or of JetStream failed.
    Nats {
        /// What was being done (`"connect"`, `"publish"`, `"create stream"`…).
        operation: &'static str,
        /// The client's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Reading a file (or any byte stream) of frames failed.
    Io(std::io::Error),
}

impl Error {
    #[cold]
    pub(crate) fn nats(
        operation: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        Error::Nats {
            operation,
            source: source.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::PayloadTooLarge { size, max_payload } => write!(
                f,
                "frame of {size} bytes exceeds the server's max_payload of {max_payload} bytes \
                 and was not sent: raise `max_payload` in the nats-server configuration \
                 (for example `max_payload: 8MB`; the server accepts at most 64MB) \
                 or send smaller frames"
            ),
            Error::Malformed { subject, error } => {
                write!(f, "malformed frame on subject `{subject}`: {error}")
            }
            Error::InvalidFrame { offset, error } => {
                write!(f, "invalid frame at input offset {offset}: {error}")
            }
            Error::Encode(e) => write!(f, "cannot encode the frame: {e}"),
            Error::InvalidPrefix(e) => e.fmt(f),
            Error::Nats { operation, source } => write!(f, "NATS {operation} failed: {source}"),
            Error::Io(e) => write!(f, "reading frames: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Malformed { error, .. } | Error::InvalidFrame { error, .. } => Some(error),
            Error::Encode(e) => Some(e),
            Error::InvalidPrefix(e) => Some(e),
            Error::Nats { source, .. } => Some(source.as_ref()),
            Error::Io(e) => Some(e),
            Error::PayloadTooLarge { .. } => None,
        }
    }
}

impl From<InvalidPrefix> for Error {
    fn from(e: InvalidPrefix) -> Self {
        Error::InvalidPrefix(e)
    }
}

impl From<EncodeError> for Error {
    fn from(e: EncodeError) -> Self {
        Error::Encode(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

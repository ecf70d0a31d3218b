//! Files of concatenated frames: read one frame at a time, for publishing
//! and recording; and the pace of a playback.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use messageframe::{ErrorKind, Header};
use tokio::io::{AsyncRead, AsyncReadExt as _};
use tokio::time::Instant;

use crate::Error;

/// The most any NATS server accepts as a payload (`max_payload` may not be
/// set higher): a frame larger than this can never be published, so a
/// reader gives up on it instead of buffering more.
pub const NATS_MAX_PAYLOAD_CEILING: usize = 64 << 20;

/// How much a [`FrameSplitter`] reads at a time.
const READ_CHUNK: usize = 64 << 10;

/// Reads a byte stream of concatenated frames (a recording, a file written
/// by `mframe encode`, stdin) one frame at a time, without decoding them:
/// each frame's header is read and its extent found by its length prefixes,
/// and its bytes are handed out unchanged, sharing one read buffer.
///
/// Memory is bounded: a frame is buffered whole, and one larger than
/// [`NATS_MAX_PAYLOAD_CEILING`] (more than any NATS server accepts) is an
/// error before more is read.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), messageframe_nats::Error> {
/// use messageframe::{Frame, Header};
/// use messageframe_nats::FrameSplitter;
///
/// let mut file = Vec::new();
/// for counter in 0..3 {
///     file.extend(Frame::new(Header::new(1, 2, 3, 4).with_counter(counter)).encode().expect("the frame encodes"));
/// }
/// let mut frames = FrameSplitter::new(&file[..]);
/// let mut counters = Vec::new();
/// while let Some((header, bytes)) = frames.next_frame().await? {
///     assert_eq!(Header::peek(&bytes).ok(), Some(header));
///     counters.push(header.counter());
/// }
/// assert_eq!(counters, [0, 1, 2]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FrameSplitter<R> {
    reader: R,
    buffer: BytesMut,
    /// Input offset of `buffer[0]`.
    offset: u64,
    eof: bool,
}

impl<R: AsyncRead + Unpin> FrameSplitter<R> {
    /// Frames from `reader`.
    ///
    /// ```
    /// # use messageframe_nats::FrameSplitter;
    /// let frames = FrameSplitter::new(tokio::io::empty());
    /// assert_eq!(frames.offset(), 0);
    /// ```
    pub fn new(reader: R) -> Self {
        FrameSplitter {
            reader,
            buffer: BytesMut::new(),
            offset: 0,
            eof: false,
        }
    }

    /// The input offset where the next frame starts.
    ///
    /// ```
    /// # use messageframe_nats::FrameSplitter;
    /// assert_eq!(FrameSplitter::new(&b""[..]).offset(), 0);
    /// ```
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next frame: its header and its bytes, or `None` at the end of
    /// the input. Errors: [`Error::InvalidFrame`] with the frame's input
    /// offset (bytes that are not a frame, or a frame cut short by the end
    /// of the input), [`Error::Io`] for a read error or a frame larger than
    /// [`NATS_MAX_PAYLOAD_CEILING`]. After an error the splitter is not
    /// resynchronised: stop reading.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use messageframe_nats::{Error, FrameSplitter};
    ///
    /// let mut frames = FrameSplitter::new(&b"\x93\x98"[..]);
    /// match frames.next_frame().await {
    ///     Err(Error::InvalidFrame { offset: 0, .. }) => {}
    ///     other => panic!("{other:?}"),
    /// }
    /// # }
    /// ```
    pub async fn next_frame(&mut self) -> Result<Option<(Header, Bytes)>, Error> {
        loop {
            if !self.buffer.is_empty() {
                match Header::peek_frame(&self.buffer) {
                    Ok((header, len)) => {
                        let bytes = self.buffer.split_to(len).freeze();
                        self.offset += len as u64;
                        return Ok(Some((header, bytes)));
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::Truncated { .. }) && !self.eof => {}
                    Err(error) => {
                        return Err(Error::InvalidFrame {
                            offset: self.offset,
                            error,
                        })
                    }
                }
            } else if self.eof {
                return Ok(None);
            }
            if self.buffer.len() > NATS_MAX_PAYLOAD_CEILING {
                return Err(Error::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "the frame at input offset {} is larger than {} bytes, \
                         more than any NATS server accepts as a payload",
                        self.offset, NATS_MAX_PAYLOAD_CEILING
                    ),
                )));
            }
            self.buffer.reserve(READ_CHUNK);
            if self.reader.read_buf(&mut self.buffer).await? == 0 {
                self.eof = true;
            }
        }
    }
}

/// How fast frames are played back.
///
/// ```
/// use messageframe_nats::Pace;
/// assert_eq!(Pace::default(), Pace::AsFastAsPossible);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pace {
    /// One after the other, without waiting.
    #[default]
    AsFastAsPossible,
    /// With the time between frames they originally had. From a file: the
    /// differences of the frames' header timestamps (a timestamp earlier
    /// than the one before waits nothing). From JetStream: the times the
    /// server stored them (JetStream's `replay_policy: original`).
    Original,
}

/// Sleeps between frames according to their header timestamps.
#[derive(Debug)]
pub(crate) struct Pacer {
    pace: Pace,
    start: Option<(Instant, u64)>,
}

impl Pacer {
    pub(crate) fn new(pace: Pace) -> Self {
        Pacer { pace, start: None }
    }

    pub(crate) async fn wait(&mut self, header: &Header) {
        if self.pace == Pace::AsFastAsPossible {
            return;
        }
        let stamp = header.timestamp();
        match self.start {
            None => self.start = Some((Instant::now(), stamp)),
            Some((started, first)) => {
                let offset = Duration::from_millis(stamp.saturating_sub(first));
                tokio::time::sleep_until(started + offset).await;
            }
        }
    }
}

//! Encoding into any [`BufMut`].

use bytes::BufMut;

use crate::encode;
use crate::error::EncodeError;
use crate::frame::Frame;
use crate::wire::write::AnyBuf;

/// Buffers that report at least this much room grow by themselves (`Vec`,
/// `BytesMut` report about `isize::MAX`), so the frame's size need not be
/// computed first.
const GROWS: usize = isize::MAX as usize / 2;

impl Frame {
    /// Appends the encoded frame to any [`BufMut`]: a `BytesMut`, a
    /// `&mut [u8]`, a chain of buffers. Returns the number of bytes written.
    ///
    /// A buffer that cannot grow is checked for room first: if it has less
    /// than [`encoded_len`](Frame::encoded_len) bytes, nothing is written
    /// and the error ([`EncodeError::BufferTooSmall`]) says how much was
    /// needed; the other [`EncodeError`]s are [`encode_into`](Frame::encode_into)'s.
    /// For a `Vec<u8>`,
    /// [`encode_into`](Frame::encode_into) is the faster path; the tokio
    /// codec (`tokio` feature) writes into its `BytesMut` directly.
    ///
    /// ```
    /// use messageframe::{EncodeError, Frame, Header};
    ///
    /// let mut frame = Frame::new(Header::new(1, 2, 3, 4).with_timestamp(0));
    /// frame.add("gps", "lat", 52.1);
    ///
    /// let mut storage = [0u8; 64];
    /// let mut out = &mut storage[..];
    /// let written = frame.encode_to_buf(&mut out)?;
    /// assert_eq!(&storage[..written], &frame.encode()?[..]);
    ///
    /// let mut tiny = [0u8; 8];
    /// let err = frame.encode_to_buf(&mut &mut tiny[..]).unwrap_err();
    /// assert_eq!(err, EncodeError::BufferTooSmall { needed: written, available: 8 });
    /// # Ok::<(), EncodeError>(())
    /// ```
    pub fn encode_to_buf<B: BufMut + ?Sized>(&self, buf: &mut B) -> Result<usize, EncodeError> {
        let available = buf.remaining_mut();
        if available < GROWS {
            let needed = self.encoded_len();
            if needed > available {
                return Err(EncodeError::BufferTooSmall { needed, available });
            }
        }
        encode::encode_frame(self, &mut AnyBuf(buf))?;
        Ok(available - buf.remaining_mut())
    }
}

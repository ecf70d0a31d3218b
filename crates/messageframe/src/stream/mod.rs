//! Frames over byte streams: TCP, serial links, pipes, files of
//! concatenated frames.
//!
//! - [`FrameScanner`] finds where each frame ends in a growing buffer,
//!   resumably and within the decoder's limits (`core` and `alloc` only);
//! - `FrameReader` and `FrameWriter` put it to work on `std::io` (feature
//!   `std`);
//! - [`Frame::encode_to_buf`](crate::Frame::encode_to_buf) encodes into any
//!   `bytes::BufMut`;
//! - the tokio codecs are in [`codec`](crate::codec) (feature `tokio`).
//!
//! `docs/architecture.md` describes the scanner's state machine and bounds.

mod buf;
#[cfg(feature = "std")]
mod io;
mod scan;
mod shape;

#[cfg(feature = "std")]
pub use io::{FrameReader, FrameWriter, StreamError};
pub use scan::{FrameScanner, Scan};

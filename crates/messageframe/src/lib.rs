//! # messageframe
//!
//! Schema-free, typed telemetry and control messages on a plain MessagePack
//! wire format, byte-compatible with the C++17 MessageFrame library.
//!
//! A [`Frame`] has a fixed [`Header`] (timestamp, counter, source, target,
//! message id and type, version, flags), parameters addressed by a two-part
//! key `(device, parameter)` with typed values (int64, double, string, bool),
//! and named binary attachments that never go through the key/value store.
//!
//! ```
//! use messageframe::{Frame, FrameView, Header};
//!
//! // Build a frame: message id 1001, type 1, from node 50 to node 99.
//! let mut frame = Frame::new(Header::new(1001, 1, 50, 99).with_counter(1));
//! frame.add("sensor_alpha", "voltage", 12.6);
//! frame.add("device_core", "fw_version", "v3.2.1");
//! frame.add_attachment("raw_iq", vec![0u8; 4096]);
//!
//! // Encode into a reused buffer.
//! let mut buf = Vec::new();
//! frame.encode_into(&mut buf)?;
//!
//! // A router reads only the header.
//! assert_eq!(Header::peek(&buf)?.target(), 99);
//!
//! // A receiver decodes into an owned frame...
//! let received = Frame::decode(&buf)?;
//! assert_eq!(received.find("sensor_alpha", "voltage").and_then(|v| v.as_f64()), Some(12.6));
//!
//! // ...or reads it in place, without copying anything.
//! let view = FrameView::new(&buf)?;
//! assert_eq!(view.find("device_core", "fw_version").and_then(|v| v.as_str()), Some("v3.2.1"));
//! assert_eq!(view.attachment("raw_iq").map(<[u8]>::len), Some(4096));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Frames on byte streams (TCP, serial links, pipes, files of concatenated
//! frames): `FrameReader` and `FrameWriter` over `std::io` (feature `std`),
//! built on the incremental [`FrameScanner`]; with the `tokio` feature, the `codec` module
//! has codecs for tokio-util's `FramedRead` and `FramedWrite`.
//!
//! Features:
//! - `std` (default): `std::io` streams, the clock (`now_millis`,
//!   `Header::new`, `update_timestamp`), `std::error::Error`, and `Frame:
//!   Sync`. Without it the crate is `#![no_std]` + `alloc` and still builds,
//!   encodes (into a `Vec` or a fixed `&mut [u8]`) and decodes frames, with
//!   views, header peeks, limits and typed errors (`docs/no_std.md`);
//! - `tokio` (implies `std`): the `codec` module;
//! - `serde` (implies `std`): the `messageframe::serde` module maps typed
//!   structs to frames and back, and frames serialize to the JSON that
//!   `mframe dump` prints.
//!
//! The wire format is specified in `docs/wire-format.md`; the storage design
//! in `docs/architecture.md`.

// `unsafe` only where a comment proves it sound and a benchmark shows the
// gain: one small block in the `utf8` module and one in `arena`
// (docs/architecture.md).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![doc(test(attr(deny(warnings))))]

extern crate alloc;

/// What `std`'s prelude gives and `no_std` code imports from `alloc`.
mod prelude {
    #[allow(unused_imports)]
    pub(crate) use alloc::{
        borrow::ToOwned,
        boxed::Box,
        format,
        string::{String, ToString},
        vec,
        vec::Vec,
    };
}

mod arena;
mod attachment;
#[cfg(feature = "tokio")]
pub mod codec;
mod decode;
mod encode;
mod encoder;
mod error;
mod frame;
mod header;
mod hooks;
mod index;
mod inline;
mod key;
mod params;
#[cfg(feature = "serde")]
pub mod serde;
mod stream;
mod sync;
mod utf8;
mod value;
mod view;
mod wire;

pub use bytes::Bytes;
pub use decode::{Decoder, Limits};
pub use encoder::FrameEncoder;
pub use error::{
    AddError, Context, DecodeError, EncodeError, ErrorKind, Expected, IntOutOfRange, Limit,
};
pub use frame::{Frame, FrameAttachments, FrameConfig, FrameParams};
#[cfg(feature = "std")]
pub use header::now_millis;
pub use header::{Header, HeaderBuilder};
pub use key::{FlatKey, InvalidKey, KeyDisplay, SEPARATOR};
#[cfg(feature = "std")]
pub use stream::{FrameReader, FrameWriter, StreamError};
pub use stream::{FrameScanner, Scan};
pub use value::{
    ToValueRef, TryToValueRef, UnknownValue, UnknownValueBuf, Value, ValueRef, ValueType,
};
pub use view::{FrameView, ViewAttachments, ViewParams};

/// Instrumentation for the crate's own hash-flooding tests (feature
/// `test-hooks`, never for production: it lets a test fix the hash seed).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub use hooks::test_hooks;

/// The README's examples, compiled and run as doc tests so they cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

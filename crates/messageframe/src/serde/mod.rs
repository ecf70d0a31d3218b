//! The serde bridge (feature `serde`): typed Rust structs to frames and
//! back, and the JSON form of frames.
//!
//! [`to_frame`] writes any `Serialize` struct or map as the parameters (and
//! attachments) of a frame; [`from_frame`] and [`from_view`] read them back
//! into any `Deserialize` type, the view borrowing `&str` and `&[u8]` fields
//! from the received bytes.
//!
//! ```
//! use messageframe::serde::{from_view, to_frame};
//! use messageframe::FrameView;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Debug, PartialEq, Serialize, Deserialize)]
//! struct Sdr { tx_gain: f64, locked: bool }
//! #[derive(Debug, PartialEq, Serialize, Deserialize)]
//! struct Core<'a> { firmware: &'a str }
//! #[derive(Debug, PartialEq, Serialize, Deserialize)]
//! struct Telemetry<'a> {
//!     seq: u32,
//!     sdr_1: Sdr,
//!     #[serde(borrow)]
//!     core: Core<'a>,
//!     note: Option<String>,
//! }
//!
//! let t = Telemetry {
//!     seq: 7,
//!     sdr_1: Sdr { tx_gain: 30.5, locked: true },
//!     core: Core { firmware: "v3.2.1" },
//!     note: None,
//! };
//! let frame = to_frame(&t)?;
//! assert_eq!(frame.find("", "seq").and_then(|v| v.as_i64()), Some(7));
//! assert_eq!(frame.find("sdr_1", "tx_gain").and_then(|v| v.as_f64()), Some(30.5));
//! assert_eq!(frame.find("core", "firmware").and_then(|v| v.as_str()), Some("v3.2.1"));
//! assert_eq!(frame.len(), 4); // `note: None` is absent
//!
//! let bytes = frame.encode()?;
//! let view = FrameView::new(&bytes)?;
//! let back: Telemetry<'_> = from_view(&view)?;
//! assert_eq!(back, t);
//! // The string borrows from the received bytes.
//! assert!(bytes.as_ptr_range().contains(&back.core.firmware.as_ptr()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The mapping
//!
//! A field's *path* is the names from the top level down to it, joined by
//! `.`: map keys and sequence indices are names too. A value goes to the
//! parameter whose device is its path without the last name, and whose
//! parameter name is the last name.
//!
//! | Rust | frame | example |
//! |---|---|---|
//! | the top level | a struct or a map (or a newtype of one); anything else is an error | |
//! | top-level scalar field `f` | parameter `("", "f")` | `seq: 7` → `("", "seq") = 7` |
//! | field `f` of a nested struct or map `s` | parameter `("s", "f")` | `sdr_1.tx_gain` → `("sdr_1", "tx_gain")` |
//! | deeper nesting | the device is the whole path but its last name, joined by `.` | `a.b.c` → `("a.b", "c")` |
//! | `None` | absent (and an absent field reads back as `None`) | |
//! | integers (`i8`…`i64`, `u8`…`u64`, `i128`, `u128`) | Int64; outside `i64`'s range an error, never a wrap | `u64::MAX` → error `integer 18446744073709551615 out of the range of int64` |
//! | `f32`, `f64` | Double | |
//! | `bool` | Bool | |
//! | `String`, `&str`, `char` | String | |
//! | unit enum variant | String: the variant's name (after `rename`) | `Mode::Rx` → `"Rx"` |
//! | bytes (`serde_bytes`, `&[u8]` with `#[serde(with = "serde_bytes")]`) | an attachment named by the whole path | `raw_iq` → attachment `"raw_iq"`, `sdr_1.iq` → `"sdr_1.iq"` |
//! | sequence, tuple, tuple struct `v` | its length as Int64 at `v`'s own key, the elements at the indices `0`, `1`, … below `v` | `items: Vec<Item>` → `("", "items") = 2`, `("items.0", "sku")`, `("items.1", "sku")`; `tags: Vec<String>` → `("", "tags") = 2`, `("tags", "0")`, `("tags", "1")` |
//! | map `m` nested in a struct | its length as Int64 at `m`'s own key, then its entries as fields | `meta: BTreeMap` → `("", "meta") = 3`, `("meta", "channel")` |
//! | map keys | strings, chars and integers (as decimal text); others are an error | |
//! | `Vec<u8>` without `serde_bytes` | a sequence of integers (use `serde_bytes` for an attachment) | |
//!
//! Not mapped, an error naming the path: enum variants with data (use
//! `#[serde(tag = "kind")]`, which makes them structs), unit values and
//! unit structs, and names that cannot be part of a key: a name that
//! becomes part of a device must not be empty or contain `.` (the reader
//! could not tell `a.b` nested from `a.b` as one name), and no name may
//! contain U+001F (the key separator).
//!
//! Reading back is by name, not by position: parameters may come in any
//! order, and a frame written by another program (a C++ producer) reads
//! into a struct as long as the keys match. Fields the struct does not have
//! are ignored; fields it has and the frame does not are `None` (for
//! `Option`), their `#[serde(default)]`, or an error naming the path. A
//! sequence without its length parameter is read up to the first absent
//! index; its recorded length may not exceed the frame's parameters and
//! attachments in all (a hostile length cannot make the reader loop), so a
//! sequence of `None`s longer than that does not read back. A struct nested
//! in a sequence or map whose fields are all `None` writes nothing, so it
//! reads back as absent: make it an `Option` or give it a default. Values
//! are not converted between types: an `f64` field reads a Double only, an
//! `i32` field an Int64 in `i32`'s range.
//!
//! A duplicate key's first occurrence wins. Containers are followed 128
//! deep at most ([`ErrorKind::TooDeep`]); a device with an empty name in it
//! (`.x`, `a..b`), which no path names, is passed over.
//!
//! Speed: the reader keeps a cursor, so a frame whose parameters come in
//! field order (as `to_frame` writes them) is read front to back with one
//! comparison per field. Parameters out of that order, absent fields and
//! containers away from the cursor cost a lookup each: O(1) by key in a
//! [`Frame`], otherwise a binary search in a sorted list of the frame's
//! keys, built by the first such lookup. Reading n parameters costs
//! O(n log n) whatever their order, so a hostile order cannot make it
//! quadratic. `to_frame_into` fills a reused frame
//! without allocating (keys are built in a reused buffer), except for
//! attachments, which are copied.
//!
//! # JSON: `Serialize` for frames
//!
//! [`Frame`], [`FrameView`], [`Header`],
//! [`Value`](crate::Value) and [`ValueRef`](crate::ValueRef) implement
//! `Serialize`; `serde_json::to_string(&frame)` gives the JSON line that
//! `mframe dump` prints for the frame (without its newline), and
//! [`WithData`] the one `mframe dump --with-data` prints, with one
//! difference of notation: doubles go through the serializer's own float
//! formatting, and serde_json's writes `1e+16` where `mframe dump` writes
//! Rust's `1e16` (magnitudes from 1e16 up) and `0.00001234` where it writes
//! `1.234e-5` (magnitudes in `[1e-5, 1e-4)`); both read back as the same
//! double. `Header`, `Value` and `Frame` implement `Deserialize` for the
//! same form (a frame from the form with attachment data, [`WithData`]'s):
//! `serde_json::from_str::<Frame>(&line)` reads a line of
//! `mframe dump --with-data` back into the frame.
//!
//! The whole mapping, with more examples: docs/serde.md.

/// docs/serde.md's examples, compiled and run as doc tests so they cannot
/// rot.
#[doc = include_str!("../../../../docs/serde.md")]
#[cfg(doctest)]
pub struct SerdeDocDoctests;

mod de;
mod error;
mod impls;
mod lookup;
mod out;
mod path;
mod ser;
mod source;

pub use error::{Error, ErrorKind};
pub use impls::WithData;

use ::serde::{Deserialize, Serialize};

use crate::frame::Frame;
use crate::header::Header;
use crate::view::FrameView;

/// Serializes `value` (a struct or a map) into a new frame with
/// [`Header::default`](crate::Header::default)'s header.
///
/// # Errors
///
/// [`Error`] (with the field's path) for what the mapping has no place for:
/// an integer outside `i64`, an enum variant with data, a name that cannot
/// be part of a key, a top level that is not a struct or map.
pub fn to_frame<T: ?Sized + Serialize>(value: &T) -> Result<Frame, Error> {
    let mut frame = Frame::default();
    ser::to_frame_into(value, &mut frame)?;
    Ok(frame)
}

/// Serializes `value` into `frame`, replacing its parameters and
/// attachments and keeping its header (set the counter or timestamp
/// yourself). Reuse one frame across messages and nothing is allocated
/// once it is large enough (attachments aside, which are copied in).
///
/// ```
/// use messageframe::serde::to_frame_into;
/// use messageframe::Frame;
///
/// #[derive(serde::Serialize)]
/// struct Reading { volts: f64 }
///
/// let mut frame = Frame::default();
/// for v in [12.5, 12.6] {
///     to_frame_into(&Reading { volts: v }, &mut frame)?;
///     assert_eq!(frame.find("", "volts").and_then(|x| x.as_f64()), Some(v));
/// }
/// assert_eq!(frame.len(), 1);
/// # Ok::<(), messageframe::serde::Error>(())
/// ```
///
/// # Errors
///
/// As [`to_frame`]; the frame is then left empty, never half-filled.
pub fn to_frame_into<T: ?Sized + Serialize>(value: &T, frame: &mut Frame) -> Result<(), Error> {
    ser::to_frame_into(value, frame)
}

/// Serializes `value` (a struct or a map) with `header` straight into a
/// frame's MessagePack bytes: the same bytes as
/// [`to_frame`] followed by [`Frame::encode`], without building the frame.
/// The fastest way from a typed struct to the wire.
///
/// ```
/// use messageframe::serde::{from_bytes, to_bytes, to_frame};
/// use messageframe::Header;
///
/// #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Reading { volts: f64, channel: u8 }
///
/// let r = Reading { volts: 12.6, channel: 3 };
/// let header = Header::builder().message_id(7).source(50).build();
/// let bytes = to_bytes(&r, &header)?;
///
/// let mut frame = to_frame(&r)?;
/// *frame.header_mut() = header;
/// assert_eq!(bytes, frame.encode()?);
/// assert_eq!(from_bytes::<Reading>(&bytes)?, r);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`to_frame`], and what MessagePack cannot express
/// ([`ErrorKind::Encode`], [`ErrorKind::StringTooLong`]).
pub fn to_bytes<T: ?Sized + Serialize>(value: &T, header: &Header) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    ser::to_bytes_into(value, header, &mut out)?;
    Ok(out)
}

/// [`to_bytes`], appending to `out`: reuse one buffer across messages
/// (`out.clear()` first) and nothing is allocated once it is large enough
/// (attachments aside, which are copied through a reused scratch buffer).
///
/// ```
/// use messageframe::serde::to_bytes_into;
/// use messageframe::{FrameView, Header};
///
/// #[derive(serde::Serialize)]
/// struct Reading { volts: f64 }
///
/// let mut buf = Vec::with_capacity(64);
/// for v in [12.5, 12.6] {
///     buf.clear();
///     to_bytes_into(&Reading { volts: v }, &Header::default(), &mut buf)?;
///     let view = FrameView::new(&buf)?;
///     assert_eq!(view.find("", "volts").and_then(|x| x.as_f64()), Some(v));
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`to_bytes`]; `out` is then as it was before the call.
pub fn to_bytes_into<T: ?Sized + Serialize>(
    value: &T,
    header: &Header,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    ser::to_bytes_into(value, header, out)
}

/// Deserializes a `T` from a frame's parameters and attachments (the header
/// is not part of it). `&str` and `&[u8]` fields borrow from the frame.
///
/// # Errors
///
/// [`Error`] naming the field's path: a value of another type than the
/// field's, an integer out of the field's range, a required field absent.
pub fn from_frame<'de, T: Deserialize<'de>>(frame: &'de Frame) -> Result<T, Error> {
    de::from_source(source::FrameSource::new(frame))
}

/// Deserializes a `T` from a validated view: `&str` and `&[u8]` fields
/// borrow from the received bytes, nothing is copied for them.
///
/// # Errors
///
/// As [`from_frame`].
pub fn from_view<'de, T: Deserialize<'de>>(view: &FrameView<'de>) -> Result<T, Error> {
    de::from_source(source::ViewSource::new(view))
}

/// Deserializes a `T` from a frame's bytes (one frame, nothing after it),
/// checking the frame and reading it in one pass: the fastest way from the
/// wire to a typed struct. `&str` and `&[u8]` fields borrow from `bytes`.
/// The header is not part of `T`: read it with
/// [`Decoder::peek_frame`](crate::Decoder::peek_frame) if needed.
///
/// The frame is checked as [`FrameView::new`] checks it (default
/// [`Limits`](crate::Limits)), all of it, also what `T` does not read. A
/// frame whose parameters come in the order `T` reads them (as
/// [`to_bytes`] and [`to_frame`] write them) is read front to back; the
/// first parameter out of that order, or the first attachment, costs a
/// check of the whole frame, and reading goes on as [`from_view`] does.
///
/// ```
/// use messageframe::serde::{from_bytes, to_bytes, ErrorKind};
/// use messageframe::Header;
///
/// #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Status<'a> { mode: &'a str, temp_c: f64 }
///
/// let bytes = to_bytes(&Status { mode: "rx", temp_c: 41.5 }, &Header::default())?;
/// let s: Status<'_> = from_bytes(&bytes)?;
/// assert_eq!(s, Status { mode: "rx", temp_c: 41.5 });
///
/// // A truncated frame is an error with its byte offset, not a partial value.
/// let err = from_bytes::<Status<'_>>(&bytes[..bytes.len() - 1]).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::Decode(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::Decode`] for bytes that are not exactly one valid frame
/// (what and where, as [`FrameView::new`] says it); otherwise as
/// [`from_frame`].
pub fn from_bytes<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Error> {
    de::from_bytes(bytes)
}

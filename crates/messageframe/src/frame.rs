//! The owned frame: header, parameters and attachments.

#[allow(unused_imports)]
use crate::prelude::*;

use core::fmt;

use bytes::Bytes;

use crate::attachment::{name_in, AttachmentSlot, Attachments};
use crate::decode::Decoder;
use crate::encode;
use crate::error::{AddError, EncodeError};
use crate::header::Header;
use crate::key::{FlatKey, InvalidKey};
use crate::params::{Entry, Params, TEXT_BYTES_PER_PARAM};
use crate::value::{ToValueRef, TryToValueRef, Value, ValueRef};
use crate::DecodeError;

/// A sizing hint for a new frame (`FrameConfig{initial_reserve}` in C++).
///
/// A frame built with a hint for `n` parameters holds `n` parameters (with the
/// hinted text bytes) and the hinted attachments without any growth: entry
/// vector, text arena and hash index are all sized up front.
///
/// ```
/// use messageframe::{Frame, FrameConfig, Header};
///
/// let config = FrameConfig::for_params(1024).text_bytes(16 * 1024);
/// let mut frame = Frame::with_config(Header::default(), config);
/// for k in 0..1024 {
///     frame.add("dev", &format!("p{k}"), k);
/// }
/// assert_eq!(frame.len(), 1024);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameConfig {
    params: usize,
    text_bytes: usize,
    attachments: usize,
}

impl FrameConfig {
    /// Room for `params` parameters, assuming 32 bytes of key and string value
    /// text each (override with [`text_bytes`](Self::text_bytes)).
    #[must_use]
    pub const fn for_params(params: usize) -> Self {
        FrameConfig {
            params,
            text_bytes: params.saturating_mul(TEXT_BYTES_PER_PARAM),
            attachments: 0,
        }
    }

    /// Total bytes of keys (device + 1 + param) and string values expected.
    #[must_use]
    pub const fn text_bytes(mut self, bytes: usize) -> Self {
        self.text_bytes = bytes;
        self
    }

    /// Number of attachments expected.
    #[must_use]
    pub const fn attachments(mut self, count: usize) -> Self {
        self.attachments = count;
        self
    }

    /// The hinted parameter count.
    #[must_use]
    pub const fn params(&self) -> usize {
        self.params
    }
}

/// One message: a [`Header`], parameters addressed by `(device, param)` with
/// typed values, and named binary attachments.
///
/// Parameters keep insertion order (iteration and the wire use it, so equal
/// frames encode to equal bytes). Keys and string values are copied into one
/// text arena, so filling a [`clear`](Frame::clear)ed frame allocates nothing.
///
/// ```
/// use messageframe::{Frame, Header};
///
/// let mut frame = Frame::new(Header::new(1001, 1, 50, 99));
/// frame.add("sensor_alpha", "voltage", 12.6);
/// frame.add("device_core", "fw_version", "v3.2.1");
/// frame.add_attachment("raw", vec![1u8, 2, 3]);
///
/// let bytes = frame.encode()?;
/// let back = Frame::decode(&bytes)?;
/// assert_eq!(back.find("sensor_alpha", "voltage").and_then(|v| v.as_f64()), Some(12.6));
/// assert_eq!(back, frame);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Frame {
    header: Header,
    params: Params,
    attachments: Attachments,
}

impl Default for Frame {
    /// An empty frame with [`Header::default`]: ids 0, version 1, and
    /// timestamp 0. It does not read the clock (a `Default` has no side
    /// inputs, and builds without `std` have no clock): set the timestamp
    /// with `update_timestamp` (with `std`) or the header's setters, or
    /// build with `Header::new` (with `std`), which reads it.
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let frame = Frame::default();
    /// assert_eq!(frame.header().timestamp(), 0);
    /// assert_eq!(frame.header().version(), 1);
    /// ```
    fn default() -> Self {
        Frame::new(Header::default())
    }
}

impl TryFrom<&[u8]> for Frame {
    type Error = DecodeError;

    /// Decodes exactly one frame, as [`Frame::decode`] (default
    /// [`Limits`](crate::Limits), attachment data copied).
    ///
    /// ```
    /// use messageframe::Frame;
    ///
    /// let mut frame = Frame::default();
    /// frame.add("d", "p", 1);
    /// let bytes = frame.encode()?;
    /// assert_eq!(Frame::try_from(&bytes[..])?, frame);
    /// assert!(Frame::try_from(&b"\x93"[..]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn try_from(bytes: &[u8]) -> Result<Self, DecodeError> {
        Frame::decode(bytes)
    }
}

impl Frame {
    /// An empty frame with this header.
    #[must_use]
    #[inline]
    pub fn new(header: Header) -> Self {
        Frame {
            header,
            params: Params::default(),
            attachments: Attachments::default(),
        }
    }

    /// An empty frame sized by `config`: filling it up to the hint does no
    /// growth at all.
    #[must_use]
    pub fn with_config(header: Header, config: FrameConfig) -> Self {
        Frame {
            header,
            params: Params::with_capacity(config.params, config.text_bytes),
            attachments: Attachments::with_capacity(config.attachments),
        }
    }

    /// Grows the frame's storage for `config` more parameters, text bytes
    /// and attachments.
    pub fn reserve(&mut self, config: FrameConfig) {
        self.params.reserve(config.params, config.text_bytes);
        self.attachments.reserve(config.attachments);
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The header, for changing fields in place.
    pub fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    /// Replaces the header.
    pub fn set_header(&mut self, header: Header) {
        self.header = header;
    }

    /// Sets the header's timestamp to the current time
    /// ([`Header::update_timestamp`], the C++ `updateTimestamp()`).
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// frame.update_timestamp();
    /// assert!(frame.header().timestamp() > 0);
    /// ```
    #[cfg(feature = "std")]
    pub fn update_timestamp(&mut self) {
        self.header.update_timestamp();
    }

    /// Appends `(device, param) = value` in O(1) without looking the key up
    /// (the C++ `add`). Use [`set`](Frame::set) to upsert, or
    /// [`try_add`](Frame::try_add) for an insert that checks.
    ///
    /// `add` behaves the same in debug and release builds: it never checks
    /// for an existing key and never panics on one. Adding a key twice keeps
    /// both entries (both are encoded, as a relay keeps the duplicates it
    /// receives; lookups find the first). A `device` containing U+001F (the
    /// key separator) is stored as given, and a decoder splits that key at
    /// its first separator, so it comes back as another `(device, param)`
    /// ([`FlatKey::new`] and `try_add` refuse such a device). (The C++
    /// library asserts on duplicates in debug builds only; a check that only
    /// debug builds make, with a lookup that builds the index, made debug
    /// tests exercise other code than release builds run.)
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// frame.add("sdr_1", "rx_gain", 30.0);
    /// frame.add("sdr_1", "rx_gain", 31.0); // a caller bug, but no panic
    /// assert_eq!(frame.len(), 2);
    /// assert_eq!(frame.find("sdr_1", "rx_gain").unwrap().as_f64(), Some(30.0));
    /// ```
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// frame.add("sdr_1", "rx_gain", 30.0);
    /// frame.add("sdr_1", "locked", true);
    /// frame.add("sdr_1", "fw", "v1.3.5");
    /// frame.add("sdr_1", "samples", 4096);
    /// assert_eq!(frame.len(), 4);
    /// ```
    ///
    /// # Panics
    ///
    /// If the frame's keys and string values would exceed 4 GiB − 1 bytes in
    /// all (or its unknown values would): one frame's capacity, whose
    /// offsets are 32-bit, as `Vec::push` panics past a `Vec`'s. A single
    /// string that long is beyond MessagePack's `str32` anyway.
    /// [`try_add`](Frame::try_add) returns an error instead. `set`, `update`
    /// and their `_flat` forms have the same capacity.
    #[inline(always)]
    pub fn add(&mut self, device: &str, param: &str, value: impl ToValueRef) {
        self.params.push(device, param, None, value.to_value_ref());
    }

    /// [`add`](Frame::add) that checks first, and changes nothing when it
    /// refuses: [`AddError::DuplicateKey`] if the frame holds the key
    /// already, [`AddError::InvalidKey`] if `device` contains U+001F,
    /// [`AddError::CapacityExceeded`] if the frame's text would pass 4 GiB
    /// (where `add` panics), [`AddError::IntOutOfRange`] for a `u64` or
    /// `usize` above `i64::MAX`: unlike `add`, it takes those two (see
    /// [`TryToValueRef`]), so `frame.try_add(.., vec.len())` works. It
    /// looks the key up, so it costs a lookup more than `add` (O(1)
    /// amortized: see [`find`](Frame::find)).
    ///
    /// ```
    /// use messageframe::{AddError, Frame};
    ///
    /// let mut frame = Frame::default();
    /// frame.try_add("sdr_1", "rx_gain", 30.0)?;
    /// assert_eq!(frame.try_add("sdr_1", "rx_gain", 31.0), Err(AddError::DuplicateKey));
    /// assert!(matches!(frame.try_add("a\u{1f}b", "c", 1), Err(AddError::InvalidKey(_))));
    /// assert_eq!(frame.len(), 1);
    /// assert_eq!(frame.find("sdr_1", "rx_gain").unwrap().as_f64(), Some(30.0));
    /// # Ok::<(), AddError>(())
    /// ```
    pub fn try_add(
        &mut self,
        device: &str,
        param: &str,
        value: impl TryToValueRef,
    ) -> Result<(), AddError> {
        let value = value.try_to_value_ref()?;
        InvalidKey::check(device).map_err(AddError::InvalidKey)?;
        if self.contains(device, param) {
            return Err(AddError::DuplicateKey);
        }
        if !self.params.fits(device, param, value) {
            return Err(AddError::CapacityExceeded);
        }
        self.params.push(device, param, None, value);
        Ok(())
    }

    /// [`add`](Frame::add) with a pre-composed key: the key's hash is reused.
    pub fn add_flat(&mut self, key: &FlatKey, value: impl ToValueRef) {
        self.params.push(
            key.device(),
            key.param(),
            Some(key.hash()),
            value.to_value_ref(),
        );
    }

    /// Sets `(device, param)` to `value`, inserting it at the end if absent
    /// (upsert). An existing key keeps its position.
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// frame.set("sdr_1", "rx_gain", 30.0);
    /// frame.set("sdr_1", "rx_gain", 31.5);
    /// assert_eq!(frame.len(), 1);
    /// assert_eq!(frame.find("sdr_1", "rx_gain").unwrap().as_f64(), Some(31.5));
    /// ```
    ///
    /// # Panics
    ///
    /// Past a frame's capacity, as [`add`](Frame::add).
    pub fn set(&mut self, device: &str, param: &str, value: impl ToValueRef) {
        self.upsert(device, param, None, value.to_value_ref());
    }

    /// [`set`](Frame::set) with a pre-composed key.
    pub fn set_flat(&mut self, key: &FlatKey, value: impl ToValueRef) {
        self.upsert(
            key.device(),
            key.param(),
            Some(key.hash()),
            value.to_value_ref(),
        );
    }

    /// `set`, with the key's hash when the caller has it.
    fn upsert(&mut self, device: &str, param: &str, hash: Option<u64>, value: ValueRef<'_>) {
        match self.params.position(device, param, hash) {
            Some(i) => self.params.replace(i, value),
            None => {
                self.params.push(device, param, hash, value);
            }
        }
    }

    /// Changes the value of an existing key. Returns `false`, and changes
    /// nothing, if the key is absent.
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// assert!(!frame.update("sdr_1", "rx_gain", 30.0));
    /// assert!(frame.is_empty());
    /// frame.add("sdr_1", "rx_gain", 30.0);
    /// assert!(frame.update("sdr_1", "rx_gain", 12));
    /// assert_eq!(frame.find("sdr_1", "rx_gain").unwrap().as_i64(), Some(12));
    /// ```
    ///
    /// # Panics
    ///
    /// Past a frame's capacity, as [`add`](Frame::add).
    #[must_use = "update changes nothing when the key is absent; use set() to insert"]
    pub fn update(&mut self, device: &str, param: &str, value: impl ToValueRef) -> bool {
        self.update_at(device, param, None, value.to_value_ref())
    }

    /// [`update`](Frame::update) with a pre-composed key.
    #[must_use = "update changes nothing when the key is absent; use set_flat() to insert"]
    pub fn update_flat(&mut self, key: &FlatKey, value: impl ToValueRef) -> bool {
        self.update_at(
            key.device(),
            key.param(),
            Some(key.hash()),
            value.to_value_ref(),
        )
    }

    /// `update`, with the key's hash when the caller has it.
    fn update_at(
        &mut self,
        device: &str,
        param: &str,
        hash: Option<u64>,
        value: ValueRef<'_>,
    ) -> bool {
        match self.params.position(device, param, hash) {
            Some(i) => {
                self.params.replace(i, value);
                true
            }
            None => false,
        }
    }

    /// The value of `(device, param)`, without allocating. With duplicate
    /// keys (from the wire, or `add` misuse in release builds) the first
    /// occurrence is found.
    #[inline]
    #[must_use]
    pub fn find(&self, device: &str, param: &str) -> Option<ValueRef<'_>> {
        self.find_at(device, param, None)
    }

    /// [`find`](Frame::find) with a pre-composed key: no hashing at all.
    #[inline]
    #[must_use]
    pub fn find_flat(&self, key: &FlatKey) -> Option<ValueRef<'_>> {
        self.find_at(key.device(), key.param(), Some(key.hash()))
    }

    /// `find`, with the key's hash when the caller has it.
    #[inline]
    fn find_at(&self, device: &str, param: &str, hash: Option<u64>) -> Option<ValueRef<'_>> {
        self.params
            .position(device, param, hash)
            .map(|i| self.params.get(i))
    }

    /// Whether `(device, param)` is present.
    #[inline]
    #[must_use]
    pub fn contains(&self, device: &str, param: &str) -> bool {
        self.params.position(device, param, None).is_some()
    }

    /// Number of parameters (`parameters_size()`).
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// Whether the frame has no parameters.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.params.len() == 0
    }

    /// The parameters as `(device, param, value)`, in insertion order
    /// (`iterate_parameters`).
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// frame.add("a", "x", 1);
    /// frame.add("b", "y", "two");
    /// let listed: Vec<String> = frame.iter().map(|(d, p, v)| format!("{d}.{p}={v}")).collect();
    /// assert_eq!(listed, ["a.x=1", "b.y=two"]);
    /// ```
    pub fn iter(&self) -> FrameParams<'_> {
        FrameParams {
            params: &self.params,
            entries: self.params.entries().iter(),
        }
    }

    /// Removes every parameter with this key and returns the value the first
    /// one held (the one [`find`](Frame::find) returned), or `None`, and
    /// changes nothing, if the key is absent. The other parameters keep
    /// their order. After it, `find` and `contains` report the key absent,
    /// even when the frame held it more than once (from the wire, or from
    /// [`add`](Frame::add)).
    ///
    /// It costs O(n) in the number of parameters, as `Vec::remove` does: the
    /// parameters after it move up, and the lookup index is rebuilt by the
    /// next lookups (see [`find`](Frame::find)).
    ///
    /// ```
    /// use messageframe::{Frame, Value};
    ///
    /// let mut frame = Frame::default();
    /// frame.add("a", "x", 1);
    /// frame.add("b", "y", "two");
    /// frame.add("c", "z", 3.0);
    /// assert_eq!(frame.remove("b", "y"), Some(Value::from("two")));
    /// assert_eq!(frame.remove("b", "y"), None);
    /// let keys: Vec<_> = frame.iter().map(|(d, p, _)| (d, p)).collect();
    /// assert_eq!(keys, [("a", "x"), ("c", "z")]);
    /// ```
    pub fn remove(&mut self, device: &str, param: &str) -> Option<Value> {
        self.remove_at(device, param, None)
    }

    /// [`remove`](Frame::remove) with a pre-composed key.
    pub fn remove_flat(&mut self, key: &FlatKey) -> Option<Value> {
        self.remove_at(key.device(), key.param(), Some(key.hash()))
    }

    fn remove_at(&mut self, device: &str, param: &str, hash: Option<u64>) -> Option<Value> {
        let i = self.params.position(device, param, hash)?;
        let value = self.params.get(i).to_value();
        self.params.retain(|d, p, _| d != device || p != param);
        Some(value)
    }

    /// Keeps only the parameters for which `keep(device, param, value)`
    /// returns `true`, in their order, and returns how many were removed
    /// (`Vec::retain`). Each parameter is visited once, in order.
    ///
    /// ```
    /// use messageframe::Frame;
    ///
    /// let mut frame = Frame::default();
    /// for k in 0..10 {
    ///     frame.add("dev", &format!("p{k}"), k);
    /// }
    /// let removed = frame.retain(|_, _, v| v.as_i64().is_some_and(|k| k % 3 == 0));
    /// assert_eq!(removed, 6);
    /// let kept: Vec<_> = frame.iter().map(|(_, p, _)| p).collect();
    /// assert_eq!(kept, ["p0", "p3", "p6", "p9"]);
    /// assert!(frame.contains("dev", "p6") && !frame.contains("dev", "p5"));
    /// ```
    pub fn retain(&mut self, keep: impl FnMut(&str, &str, ValueRef<'_>) -> bool) -> usize {
        self.params.retain(keep)
    }

    /// Appends an attachment. The data is moved in, never copied: a
    /// `Vec<u8>` becomes a [`Bytes`] without copying, and a `Bytes` is kept
    /// as it is.
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// let iq = vec![0u8; 4096];
    /// let ptr = iq.as_ptr();
    /// frame.add_attachment("raw_iq", iq);
    /// let (name, data) = frame.attachments().next().unwrap();
    /// assert_eq!((name, data.len(), data.as_ptr()), ("raw_iq", 4096, ptr));
    /// ```
    ///
    /// Data of any size is kept; MessagePack's `bin32` holds at most
    /// 4 GiB − 1 bytes, so [`encode_into`](Frame::encode_into) returns
    /// [`EncodeError::AttachmentTooLarge`] for a larger one (nothing
    /// panics).
    pub fn add_attachment(&mut self, name: &str, data: impl Into<Bytes>) {
        self.attachments.store_mut().push(name, data.into(), false);
    }

    /// Appends a copy of `data` as an attachment, for data the caller keeps
    /// (a capture buffer that is refilled, say). The copy goes into the
    /// buffer of an attachment this frame copied before and that was
    /// cleared (by [`clear`](Frame::clear) or a decode into the frame)
    /// with no one else holding it, so a reused frame copies without
    /// allocating. To hand data over without any copy, use
    /// [`add_attachment`](Frame::add_attachment).
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let capture = vec![0xABu8; 4096];
    /// let mut frame = Frame::default();
    /// frame.add_attachment_copy("iq", &capture);
    /// let first = frame.attachment("iq").unwrap().as_ptr();
    /// frame.clear();
    /// frame.add_attachment_copy("iq", &capture);
    /// // The second copy went into the first one's buffer.
    /// assert_eq!(frame.attachment("iq").unwrap().as_ptr(), first);
    /// ```
    ///
    /// As with [`add_attachment`](Frame::add_attachment), data of any size is
    /// kept and the encoder refuses what MessagePack cannot express.
    pub fn add_attachment_copy(&mut self, name: &str, data: &[u8]) {
        let store = self.attachments.store_mut();
        let data = store.copy_of(data);
        store.push(name, data, true);
    }

    /// The attachments as `(name, data)`, in insertion order
    /// (`get_attachments()`). Clone a [`Bytes`] to keep it: that shares the
    /// data, it does not copy it.
    pub fn attachments(&self) -> FrameAttachments<'_> {
        FrameAttachments {
            names: self.attachments.names(),
            slots: self.attachments.slots().iter(),
        }
    }

    /// The data of the first attachment with this name.
    #[must_use]
    pub fn attachment(&self, name: &str) -> Option<&Bytes> {
        self.attachments().find(|(n, _)| *n == name).map(|(_, d)| d)
    }

    /// Number of attachments.
    #[must_use]
    pub fn attachment_count(&self) -> usize {
        self.attachments.slots().len()
    }

    /// Removes all parameters and attachments, keeping the capacity of every
    /// container, so the next message fills the frame without allocating.
    /// The header is kept (set the new counter or timestamp yourself).
    ///
    /// Attachment buffers the frame made itself (a decode's copies,
    /// [`add_attachment_copy`](Frame::add_attachment_copy)) and that no one
    /// else holds are kept too, for the next copies. Attachments handed in
    /// with [`add_attachment`](Frame::add_attachment) or shared by
    /// [`decode_shared`](Frame::decode_shared) are simply released.
    pub fn clear(&mut self) {
        self.params.clear();
        self.attachments.clear();
    }

    /// Appends the encoded frame to `out`. Reuse one buffer across messages
    /// (`out.clear()` first) and nothing is allocated once it is large enough.
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut frame = Frame::default();
    /// let mut buf = Vec::with_capacity(256);
    /// for i in 0..3 {
    ///     frame.clear();
    ///     frame.add("dev", "i", i);
    ///     buf.clear();
    ///     frame.encode_into(&mut buf)?;
    ///     assert_eq!(buf.len(), frame.encoded_len());
    /// }
    /// # Ok::<(), messageframe::EncodeError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`EncodeError`] when MessagePack cannot express the frame (an
    /// attachment or its name of 4 GiB or more, more than 4,294,967,295
    /// parameters or attachments) or its encoding does not fit in memory.
    /// `out` is then unchanged. Parameters never cause an error: a frame
    /// only holds what can be encoded (see [`add`](Frame::add)).
    pub fn encode_into(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        encode::encode_frame(self, out)
    }

    /// Encodes into a new `Vec` (one allocation).
    ///
    /// # Errors
    ///
    /// As [`encode_into`](Frame::encode_into).
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        encode::encode_frame(self, &mut out)?;
        Ok(out)
    }

    /// The exact number of bytes [`encode`](Frame::encode) produces (for a
    /// frame it can encode).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        encode::encoded_len(self)
    }

    /// Decodes exactly one frame from `bytes` (trailing bytes are an error)
    /// with the default [`Decoder`]. Attachment data is copied; see
    /// [`Frame::decode_shared`] to share it instead, or
    /// [`FrameView`](crate::FrameView) to borrow everything.
    #[inline]
    pub fn decode(bytes: &[u8]) -> Result<Frame, DecodeError> {
        let mut frame = Frame::blank();
        Decoder::new().decode_lenient_into(&mut frame, bytes)?;
        Ok(frame)
    }

    /// Decodes exactly one frame into this one, reusing its capacity: in the
    /// steady state (same message shapes) this allocates nothing, attachment
    /// copies included (they go into the buffers the frame kept, see
    /// [`clear`](Frame::clear)). On error the frame holds no parameters and
    /// no attachments, and its header is unchanged.
    ///
    /// ```
    /// # use messageframe::Frame;
    /// let mut out = Frame::default();
    /// out.add("a", "x", 1);
    /// let mut src = Frame::default();
    /// src.add("b", "y", 2.5);
    /// out.decode_from(&src.encode()?)?;
    /// assert_eq!(out, src);
    /// assert!(out.decode_from(b"\x93junk").is_err());
    /// assert!(out.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decode_from(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        Decoder::new().decode_lenient_into(self, bytes)
    }

    /// Decodes one frame from a [`Bytes`] buffer; attachments share the
    /// buffer instead of being copied.
    pub fn decode_shared(bytes: &Bytes) -> Result<Frame, DecodeError> {
        let mut frame = Frame::blank();
        Decoder::new().decode_shared_into(&mut frame, bytes)?;
        Ok(frame)
    }

    /// An empty frame for a decode to fill: an all-zero header (version 0,
    /// unlike `Frame::default`'s 1), since the decode replaces it.
    #[inline]
    pub(crate) fn blank() -> Frame {
        Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 0, 0))
    }

    pub(crate) fn params(&self) -> &Params {
        &self.params
    }

    pub(crate) fn params_mut(&mut self) -> &mut Params {
        &mut self.params
    }

    pub(crate) fn attachment_slots(&self) -> &[AttachmentSlot] {
        self.attachments.slots()
    }

    pub(crate) fn attachment_name(&self, a: &AttachmentSlot) -> &str {
        name_in(self.attachments.names(), a)
    }

    pub(crate) fn attachment_names_len(&self) -> usize {
        self.attachments.names().len()
    }

    pub(crate) fn clear_attachments(&mut self) {
        self.attachments.clear();
    }

    /// The storage a decode fills.
    pub(crate) fn decode_parts(&mut self) -> (&mut Params, &mut Attachments) {
        (&mut self.params, &mut self.attachments)
    }
}

/// Iterator over a frame's parameters, `(device, param, value)` in insertion
/// order: what [`Frame::iter`] returns, and `for (d, p, v) in &frame` uses.
///
/// ```
/// use messageframe::Frame;
///
/// let mut frame = Frame::default();
/// frame.add("a", "x", 1);
/// frame.add("b", "y", true);
/// let mut n = 0;
/// for (device, param, value) in &frame {
///     assert!(frame.contains(device, param));
///     assert!(value.as_i64().is_some() || value.as_bool().is_some());
///     n += 1;
/// }
/// assert_eq!(n, 2);
/// assert_eq!(frame.iter().rev().next().map(|(d, _, _)| d), Some("b"));
/// ```
#[derive(Clone)]
pub struct FrameParams<'a> {
    params: &'a Params,
    entries: core::slice::Iter<'a, Entry>,
}

impl<'a> Iterator for FrameParams<'a> {
    type Item = (&'a str, &'a str, ValueRef<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.entries.next().map(|e| self.params.item(e))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }

    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        self.entries.nth(n).map(|e| self.params.item(e))
    }
}

impl DoubleEndedIterator for FrameParams<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.entries.next_back().map(|e| self.params.item(e))
    }
}

impl ExactSizeIterator for FrameParams<'_> {}

impl core::iter::FusedIterator for FrameParams<'_> {}

impl fmt::Debug for FrameParams<'_> {
    /// The parameters not yet visited.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

/// Iterator over a frame's attachments, `(name, data)` in insertion order:
/// what [`Frame::attachments`] returns.
///
/// ```
/// use messageframe::Frame;
///
/// let mut frame = Frame::default();
/// frame.add_attachment("a", vec![1u8]);
/// frame.add_attachment("b", vec![2u8, 3]);
/// let sizes: Vec<(&str, usize)> = frame.attachments().map(|(n, d)| (n, d.len())).collect();
/// assert_eq!(sizes, [("a", 1), ("b", 2)]);
/// assert_eq!(frame.attachments().len(), 2);
/// ```
#[derive(Clone)]
pub struct FrameAttachments<'a> {
    names: &'a str,
    slots: core::slice::Iter<'a, AttachmentSlot>,
}

impl<'a> Iterator for FrameAttachments<'a> {
    type Item = (&'a str, &'a Bytes);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let names = self.names;
        self.slots.next().map(|a| (name_in(names, a), &a.data))
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl DoubleEndedIterator for FrameAttachments<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        let names = self.names;
        self.slots.next_back().map(|a| (name_in(names, a), &a.data))
    }
}

impl ExactSizeIterator for FrameAttachments<'_> {}

impl core::iter::FusedIterator for FrameAttachments<'_> {}

impl fmt::Debug for FrameAttachments<'_> {
    /// The attachments not yet visited, as `(name, length)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.clone().map(|(n, d)| (n, d.len())))
            .finish()
    }
}

impl<'a> IntoIterator for &'a Frame {
    type Item = (&'a str, &'a str, ValueRef<'a>);
    type IntoIter = FrameParams<'a>;

    fn into_iter(self) -> FrameParams<'a> {
        self.iter()
    }
}

impl<D, P, V> Extend<(D, P, V)> for Frame
where
    D: AsRef<str>,
    P: AsRef<str>,
    V: ToValueRef,
{
    /// Appends each `(device, param, value)` with [`add`](Frame::add), in
    /// order: no duplicate check, so extending a frame with another's
    /// [`iter`](Frame::iter) copies its parameters exactly, duplicates
    /// included. (Use [`set`](Frame::set) in a loop to upsert.)
    ///
    /// ```
    /// use messageframe::{Frame, ValueRef};
    ///
    /// let mut frame = Frame::default();
    /// frame.extend([("a", "x", 1), ("a", "y", 2)]);
    /// frame.extend(vec![(String::from("b"), String::from("z"), ValueRef::from("on"))]);
    /// assert_eq!(frame.len(), 3);
    ///
    /// let mut copy = Frame::default();
    /// copy.extend(&frame);
    /// assert_eq!(copy, frame);
    /// ```
    ///
    /// # Panics
    ///
    /// Past a frame's capacity, as [`add`](Frame::add).
    fn extend<I: IntoIterator<Item = (D, P, V)>>(&mut self, iter: I) {
        for (d, p, v) in iter {
            self.add(d.as_ref(), p.as_ref(), v);
        }
    }
}

impl<D, P, V> FromIterator<(D, P, V)> for Frame
where
    D: AsRef<str>,
    P: AsRef<str>,
    V: ToValueRef,
{
    /// A [`Frame::default`] (all-zero header but version 1, timestamp 0)
    /// with these parameters, appended as by [`Extend`].
    ///
    /// ```
    /// use messageframe::Frame;
    ///
    /// let frame: Frame = (0..4).map(|k| ("dev", format!("p{k}"), k)).collect();
    /// assert_eq!(frame.len(), 4);
    /// assert_eq!(frame.find("dev", "p3").and_then(|v| v.as_i64()), Some(3));
    /// ```
    fn from_iter<I: IntoIterator<Item = (D, P, V)>>(iter: I) -> Self {
        let mut frame = Frame::default();
        frame.extend(iter);
        frame
    }
}

impl PartialEq for Frame {
    /// Same header, same parameters in the same order, same attachments.
    /// Doubles compare with `==` (so a frame holding NaN is not equal to
    /// itself; compare [`encode`](Frame::encode)d bytes for that).
    fn eq(&self, other: &Self) -> bool {
        self.header == other.header
            && self.len() == other.len()
            && self.iter().eq(other.iter())
            && self.attachments().eq(other.attachments())
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Params<'a>(&'a Frame);
        impl fmt::Debug for Params<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list().entries(self.0.iter()).finish()
            }
        }
        struct Atts<'a>(&'a Frame);
        impl fmt::Debug for Atts<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list()
                    .entries(self.0.attachments().map(|(n, d)| (n, d.len())))
                    .finish()
            }
        }
        f.debug_struct("Frame")
            .field("header", &self.header)
            .field("params", &Params(self))
            .field("attachments", &Atts(self))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::write::{
        copy_cached, copy_in_pieces, copy_to_slice, ALIASED_PIECE, CACHED_COPY_CHUNK,
        CACHED_COPY_MAX, WHOLE_FROM_ON_ZEN,
    };

    #[test]
    fn a_frame_stays_small_enough_to_move_cheaply() {
        // Every move of a new or decoded frame copies it whole (a fresh
        // round trip moves one about 4 times, docs/performance.md); the
        // lookup index lives behind a pointer for that reason.
        let size = core::mem::size_of::<Frame>();
        assert!(size <= 336, "a Frame takes {size} bytes");
    }

    #[test]
    fn attachments_copied_in_pieces_arrive_whole_in_the_frame_and_the_wire() {
        let chunk = CACHED_COPY_CHUNK;
        for len in [
            0,
            1,
            chunk - 1,
            chunk,
            chunk + 1,
            3 * chunk + 7,
            CACHED_COPY_MAX + 1,
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 + i / 251) as u8).collect();
            // In 64 KiB pieces where the host needs them, whole where it
            // does not (AMD Zen), whole past CACHED_COPY_MAX either way.
            let mut largest = [0; 2];
            for (chunked, largest) in [true, false].into_iter().zip(&mut largest) {
                let mut copied = Vec::new();
                copy_in_pieces(&data, None, chunked, |p| {
                    *largest = (*largest).max(p.len());
                    copied.extend_from_slice(p);
                });
                assert_eq!(copied, data, "{len} bytes");
            }
            let pieces = if len > CACHED_COPY_MAX {
                len
            } else {
                len.min(chunk)
            };
            assert_eq!(largest, [pieces, len], "{len} bytes");
            let mut by_host = 0;
            copy_cached(&data, None, |p| by_host = by_host.max(p.len()));
            assert!([pieces, len].contains(&by_host), "{len} bytes");
            let mut frame = Frame::default();
            frame.add("d", "p", 1);
            frame.add_attachment_copy("a", &data);
            assert_eq!(frame.attachment("a").map(|b| &b[..]), Some(&data[..]));
            let wire = frame.encode().expect("the frame encodes");
            let back = Frame::decode(&wire).expect("valid frame");
            assert_eq!(
                back.attachment("a").map(|b| &b[..]),
                Some(&data[..]),
                "{len} bytes"
            );
        }
    }

    /// Where the destination is 1 to 15 bytes past the source, modulo
    /// 4 KiB, a copy of more than `ALIASED_PIECE` bytes goes in pieces of at
    /// most that (on x86, where `rep movsb` makes it slow), on hosts that
    /// take 64 KiB pieces and on those that do not; at any other distance,
    /// or with no destination known, as the host's choice says; every byte
    /// arrives, in order.
    #[test]
    fn copies_at_an_aliasing_distance_go_in_small_pieces_and_arrive_whole() {
        let x86 = cfg!(any(target_arch = "x86_64", target_arch = "x86"));
        let chunk = CACHED_COPY_CHUNK;
        // Under Miri (CI's i686 run takes the x86 branch), lengths that
        // cover both branches without its minutes per 64 KiB copy.
        let lens: Vec<usize> = if cfg!(miri) {
            vec![ALIASED_PIECE, ALIASED_PIECE + 1, 4 * ALIASED_PIECE + 3]
        } else {
            vec![
                ALIASED_PIECE,
                ALIASED_PIECE + 1,
                16 << 10,
                chunk + 1,
                3 * chunk + 7,
                WHOLE_FROM_ON_ZEN - 1,
                WHOLE_FROM_ON_ZEN,
            ]
        };
        let longest = lens.iter().max().copied().unwrap_or(0);
        let backing: Vec<u8> = (0..longest).map(|i| (i * 13 + i / 509) as u8).collect();
        for &len in &lens {
            let data = &backing[..len];
            for distance in [
                None,
                Some(0),
                Some(1),
                Some(5),
                Some(15),
                Some(16),
                Some(40),
            ]
            .into_iter()
            .chain([
                Some(4095),
                Some(4096),
                Some(4096 + 7),
                Some(usize::MAX - 4090),
            ]) {
                let dst = distance.map(|d: usize| (data.as_ptr() as usize).wrapping_add(d));
                let hazard = distance.is_some_and(|d| (1..16).contains(&(d % 4096)));
                for chunked in [true, false] {
                    let mut copied = Vec::new();
                    let mut largest = 0;
                    copy_in_pieces(data, dst, chunked, |p| {
                        largest = largest.max(p.len());
                        copied.extend_from_slice(p);
                    });
                    let at = format!("{len} bytes at {distance:?}, chunked: {chunked}");
                    assert_eq!(copied, data, "{at}");
                    // A whole copy past the L2 size (an AMD Zen host's)
                    // is left to glibc's vector loop even when aliased.
                    let whole_past_l2 = !chunked && len >= WHOLE_FROM_ON_ZEN;
                    let want = if x86 && hazard && len > ALIASED_PIECE && !whole_past_l2 {
                        ALIASED_PIECE
                    } else if chunked && len > chunk {
                        chunk
                    } else {
                        len
                    };
                    assert_eq!(largest, want, "{at}");
                }
            }
        }
    }

    /// Where in `backing` a source goes so that a copy of it to `dst` lands
    /// `distance` bytes past it, modulo 4 KiB.
    fn source_at(backing: &[u8], dst: usize, distance: usize) -> usize {
        dst.wrapping_sub(distance)
            .wrapping_sub(backing.as_ptr() as usize)
            % 4096
    }

    /// A long string copied into a frame's text at every distance from its
    /// source, the 4 KiB aliasing ones included, arrives whole: directly,
    /// and through a frame that adds it and one decoded from the wire.
    #[test]
    fn long_strings_copied_at_every_distance_arrive_whole() {
        let len = 3 * ALIASED_PIECE + 5;
        let text: String = (0..len)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let mut dst = vec![0u8; len];
        for distance in [0, 1, 5, 15, 16, 100] {
            let mut backing = vec![0u8; len + 8192];
            let at = source_at(&backing, dst.as_ptr() as usize, distance);
            backing[at..at + len].copy_from_slice(text.as_bytes());
            dst.fill(0);
            copy_to_slice(&mut dst, &backing[at..at + len]);
            assert_eq!(dst, text.as_bytes(), "distance {distance}");
            let src = core::str::from_utf8(&backing[at..at + len]).expect("ASCII");
            let mut frame = Frame::default();
            frame.add("log", "line", src);
            let back = Frame::decode(&frame.encode().expect("encodes")).expect("decodes");
            for f in [&frame, &back] {
                assert_eq!(f.find("log", "line"), Some(ValueRef::String(&text)));
            }
        }
    }

    /// A shared attachment encoded into the wire at every distance from its
    /// source, the 4 KiB aliasing ones included, gives the same bytes; the
    /// owned decode and a copy in (at whatever distance they land) give the
    /// content back.
    #[test]
    fn attachments_copied_at_every_distance_arrive_whole() {
        let len = 5 * ALIASED_PIECE + 3;
        let content: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut reference = Frame::new(Header::from_fields(
            1_733_390_000_000,
            0,
            1,
            2,
            200,
            7,
            1,
            0,
        ));
        reference.add("sdr", "gain", 30.5);
        reference.add_attachment_copy("iq", &content);
        let want = reference.encode().expect("the frame encodes");
        let mut wire = Vec::with_capacity(want.len() + 8192);
        for distance in [0, 1, 5, 15, 16, 100] {
            // The shared source placed so that its bytes land `distance`
            // bytes past it (modulo 4 KiB) in `wire`.
            let data_at = wire.as_ptr() as usize + want.len() - len;
            let mut backing = vec![0u8; len + 8192];
            let at = source_at(&backing, data_at, distance);
            backing[at..at + len].copy_from_slice(&content);
            let mut frame = Frame::new(*reference.header());
            frame.add("sdr", "gain", 30.5);
            frame.add_attachment("iq", Bytes::from(backing).slice(at..at + len));
            wire.clear();
            frame.encode_into(&mut wire).expect("the frame encodes");
            assert_eq!(wire, want, "distance {distance}");
            let back = Frame::decode(&wire).expect("valid frame");
            assert_eq!(back.attachment("iq").map(|b| &b[..]), Some(&content[..]));
            let mut copied = Frame::default();
            copied.add_attachment_copy("iq", &wire[want.len() - len..]);
            assert_eq!(copied.attachment("iq").map(|b| &b[..]), Some(&content[..]));
        }
    }

    #[test]
    fn add_never_looks_a_key_up_in_any_build() {
        // A lookup past 8 entries (after a few scans) builds the index;
        // `add` never looks keys up, so neither a debug nor a release build
        // ever builds it, even for duplicates.
        let mut frame = Frame::default();
        for round in 0..3 {
            for k in 0..20 {
                frame.add("d", &format!("p{k}"), round);
            }
        }
        assert_eq!(frame.len(), 60);
        assert!(!frame.params.index_built());
        // A lookup does build it, eventually; `try_add` looks up.
        for _ in 0..crate::params::SCAN_BUDGET + 1 {
            assert!(frame.try_add("d", "p0", 1).is_err());
        }
        assert!(frame.params.index_built());
    }

    #[test]
    fn spare_attachment_buffers_never_outnumber_the_attachments_held() {
        // Every message's attachment is larger than any buffer kept so far,
        // so no spare ever fits: the frame must not keep them all.
        let mut frame = Frame::default();
        let mut most_held = 0;
        for k in 1..=50usize {
            frame.clear();
            for j in 0..(k % 3 + 1) {
                frame.add_attachment_copy(&format!("a{j}"), &vec![0u8; k * 100]);
            }
            most_held = most_held.max(frame.attachment_count());
            let spare = frame.attachments.spare_count();
            assert!(
                spare + frame.attachment_count() <= most_held,
                "message {k}: {spare} spare + {} live buffers",
                frame.attachment_count()
            );
        }
        frame.clear();
        assert!(frame.attachments.spare_count() <= most_held);
        assert!(
            frame.attachments.spare_count() > 0,
            "cleared copies are kept"
        );
    }
}

//! The fixed frame header: what a router reads without touching the payload.

use crate::DecodeError;

/// The fixed header of a frame: eight plain integers.
///
/// A router can read it with [`Header::peek`] without decoding parameters or
/// attachments. Message id and type are `i32` on the wire; any type that
/// converts into `i32` (your own `#[repr(i32)]` enum with a `From` impl) can be
/// passed in, and [`message_id_as`](Header::message_id_as) converts back.
///
/// ```
/// use messageframe::Header;
///
/// #[derive(Debug, PartialEq)]
/// enum Msg { Telemetry = 1001 }
/// impl From<Msg> for i32 { fn from(m: Msg) -> i32 { m as i32 } }
/// impl TryFrom<i32> for Msg {
///     type Error = i32;
///     fn try_from(v: i32) -> Result<Self, i32> {
///         if v == 1001 { Ok(Msg::Telemetry) } else { Err(v) }
///     }
/// }
///
/// let mut h = Header::new(Msg::Telemetry, 1, 50, 99).with_counter(7);
/// assert_eq!(h.message_id_as::<Msg>(), Ok(Msg::Telemetry));
/// assert_eq!((h.source(), h.target(), h.counter(), h.version()), (50, 99, 7, 1));
/// h.set_flags(0x8000);
/// assert_eq!(h.flags(), 0x8000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    timestamp: u64,
    counter: u64,
    source: u32,
    target: u32,
    message_id: i32,
    message_type: i32,
    version: u16,
    flags: u16,
}

/// Milliseconds since the UNIX epoch (0 if the clock is before it). Needs
/// the `std` feature: a `no_std` build has no clock, and sets timestamps
/// from its own time source ([`Header::set_timestamp`]).
#[cfg(feature = "std")]
#[must_use]
pub fn now_millis() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Default for Header {
    /// All ids zero, version 1, flags 0, and timestamp 0: it does not read
    /// the clock (see `update_timestamp`, with `std`). `Header::new`
    /// (with `std`) is the constructor that reads it, as the C++ one does.
    fn default() -> Self {
        Header::builder().build()
    }
}

/// Builds a [`Header`] field by field: [`Header::builder`].
///
/// Every field starts at its default: ids, counter and flags 0, version 1,
/// and timestamp 0. The builder does not read the clock: set the timestamp
/// with [`timestamp`](HeaderBuilder::timestamp), or with
/// `timestamp_now` (with `std`).
///
/// ```
/// use messageframe::Header;
///
/// let header = Header::builder()
///     .message_id(1001)
///     .message_type(1)
///     .source(50)
///     .target(99)
///     .counter(7)
///     .flags(0x8000)
///     .timestamp(1_700_000_000_000)
///     .build();
/// assert_eq!(header, Header::from_fields(1_700_000_000_000, 7, 50, 99, 1001, 1, 1, 0x8000));
/// assert_eq!(Header::builder().build(), Header::default());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct HeaderBuilder {
    header: Header,
}

impl HeaderBuilder {
    /// Sets the timestamp (milliseconds since the UNIX epoch).
    pub const fn timestamp(mut self, timestamp: u64) -> Self {
        self.header.timestamp = timestamp;
        self
    }
    /// Sets the timestamp to the current time ([`now_millis`]). Needs the
    /// `std` feature.
    #[cfg(feature = "std")]
    pub fn timestamp_now(mut self) -> Self {
        self.header.timestamp = now_millis();
        self
    }
    /// Sets the message counter.
    pub const fn counter(mut self, counter: u64) -> Self {
        self.header.counter = counter;
        self
    }
    /// Sets the source id.
    pub const fn source(mut self, source: u32) -> Self {
        self.header.source = source;
        self
    }
    /// Sets the target id.
    pub const fn target(mut self, target: u32) -> Self {
        self.header.target = target;
        self
    }
    /// Sets the message id from anything that converts into `i32` (your
    /// own enum, see [`Header`]).
    pub fn message_id(mut self, id: impl Into<i32>) -> Self {
        self.header.message_id = id.into();
        self
    }
    /// Sets the message type from anything that converts into `i32`.
    pub fn message_type(mut self, ty: impl Into<i32>) -> Self {
        self.header.message_type = ty.into();
        self
    }
    /// Sets the protocol version (default [`Header::DEFAULT_VERSION`]).
    pub const fn version(mut self, version: u16) -> Self {
        self.header.version = version;
        self
    }
    /// Sets the flags.
    pub const fn flags(mut self, flags: u16) -> Self {
        self.header.flags = flags;
        self
    }
    /// The header.
    #[must_use]
    pub const fn build(self) -> Header {
        self.header
    }
}

impl Header {
    /// The protocol version a new header carries.
    pub const DEFAULT_VERSION: u16 = 1;

    /// The header's fields in wire order, by the names errors
    /// ([`Context::Header`](crate::Context::Header)) and `mframe` use.
    pub const FIELD_NAMES: [&'static str; 8] = [
        "timestamp",
        "counter",
        "source",
        "target",
        "message_id",
        "message_type",
        "version",
        "flags",
    ];

    /// A builder starting from the defaults (ids, counter, flags and
    /// timestamp 0, version 1): see [`HeaderBuilder`].
    pub const fn builder() -> HeaderBuilder {
        HeaderBuilder {
            header: Header::from_fields(0, 0, 0, 0, 0, 0, Self::DEFAULT_VERSION, 0),
        }
    }

    /// A header with the given ids, counter 0, version 1, flags 0, and the
    /// current time as timestamp (the C++ constructor's defaults). It reads
    /// the clock, so it needs the `std` feature; [`Header::builder`] and
    /// [`Header::default`] do not read it.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn new(
        message_id: impl Into<i32>,
        message_type: impl Into<i32>,
        source: u32,
        target: u32,
    ) -> Self {
        Header {
            timestamp: now_millis(),
            counter: 0,
            source,
            target,
            message_id: message_id.into(),
            message_type: message_type.into(),
            version: Self::DEFAULT_VERSION,
            flags: 0,
        }
    }

    /// A header with every field given, timestamp included. Used by decoders
    /// and by tests that need fixed bytes.
    #[allow(clippy::too_many_arguments)]
    #[must_use]
    pub const fn from_fields(
        timestamp: u64,
        counter: u64,
        source: u32,
        target: u32,
        message_id: i32,
        message_type: i32,
        version: u16,
        flags: u16,
    ) -> Self {
        Header {
            timestamp,
            counter,
            source,
            target,
            message_id,
            message_type,
            version,
            flags,
        }
    }

    /// Reads only the header of the frame at the start of `bytes`, without
    /// walking its parameters or attachments: the cost does not depend on the
    /// payload size. This is a router's fast path.
    ///
    /// The rest of the frame is not validated; a frame whose header peeks fine
    /// may still fail a full decode.
    ///
    /// ```
    /// use messageframe::{Frame, Header};
    ///
    /// let frame = Frame::new(Header::new(42, 7, 1, 2).with_timestamp(5));
    /// let bytes = frame.encode()?;
    /// let header = Header::peek(&bytes)?;
    /// assert_eq!(header, *frame.header());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek(bytes: &[u8]) -> Result<Header, DecodeError> {
        crate::decode::peek_header(bytes)
    }

    /// Reads the header of the frame at the start of `bytes` and the length
    /// of the whole frame, without decoding its parameters or attachments:
    /// the rest of the frame is only skipped by its MessagePack markers and
    /// length prefixes (strings and binaries are jumped over, nothing is
    /// UTF-8-checked or type-checked). A router uses it to forward a frame,
    /// or to walk a stream of frames, reading only headers.
    ///
    /// It uses the default [`Limits`](crate::Limits): a frame larger than
    /// 256 MiB is [`ErrorKind::LimitExceeded`](crate::ErrorKind::LimitExceeded).
    /// [`Decoder::peek_frame`](crate::Decoder::peek_frame) takes yours.
    ///
    /// ```
    /// use messageframe::{Frame, Header};
    ///
    /// let mut frame = Frame::new(Header::new(1, 2, 3, 4));
    /// frame.add_attachment("iq", vec![0u8; 100_000]);
    /// let mut stream = frame.encode()?;
    /// stream.extend_from_slice(&frame.encode()?);
    ///
    /// let (header, len) = Header::peek_frame(&stream)?;
    /// assert_eq!((header.target(), len), (4, stream.len() / 2));
    /// let (_, len2) = Header::peek_frame(&stream[len..])?;
    /// assert_eq!(len + len2, stream.len());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn peek_frame(bytes: &[u8]) -> Result<(Header, usize), DecodeError> {
        crate::decode::peek_frame(&crate::Limits::default(), bytes)
    }

    /// Builder: sets the timestamp (ms since the UNIX epoch).
    #[must_use]
    pub const fn with_timestamp(mut self, timestamp: u64) -> Self {
        self.timestamp = timestamp;
        self
    }
    /// Builder: sets the message counter.
    #[must_use]
    pub const fn with_counter(mut self, counter: u64) -> Self {
        self.counter = counter;
        self
    }
    /// Builder: sets the protocol version.
    #[must_use]
    pub const fn with_version(mut self, version: u16) -> Self {
        self.version = version;
        self
    }
    /// Builder: sets the flags.
    #[must_use]
    pub const fn with_flags(mut self, flags: u16) -> Self {
        self.flags = flags;
        self
    }

    /// Timestamp, milliseconds since the UNIX epoch.
    #[must_use]
    pub const fn timestamp(&self) -> u64 {
        self.timestamp
    }
    /// Message counter.
    #[must_use]
    pub const fn counter(&self) -> u64 {
        self.counter
    }
    /// Source id.
    #[must_use]
    pub const fn source(&self) -> u32 {
        self.source
    }
    /// Target id.
    #[must_use]
    pub const fn target(&self) -> u32 {
        self.target
    }
    /// Message id as a raw `i32`.
    #[must_use]
    pub const fn message_id(&self) -> i32 {
        self.message_id
    }
    /// Message type as a raw `i32`.
    #[must_use]
    pub const fn message_type(&self) -> i32 {
        self.message_type
    }
    /// Protocol version.
    #[must_use]
    pub const fn version(&self) -> u16 {
        self.version
    }
    /// Flags.
    #[must_use]
    pub const fn flags(&self) -> u16 {
        self.flags
    }

    /// Message id converted to the caller's type (`getMessageId<Enum>()`).
    pub fn message_id_as<E: TryFrom<i32>>(&self) -> Result<E, E::Error> {
        E::try_from(self.message_id)
    }
    /// Message type converted to the caller's type.
    pub fn message_type_as<E: TryFrom<i32>>(&self) -> Result<E, E::Error> {
        E::try_from(self.message_type)
    }

    /// Sets the timestamp (ms since the UNIX epoch).
    pub fn set_timestamp(&mut self, timestamp: u64) {
        self.timestamp = timestamp;
    }
    /// Sets the timestamp to the current time (`updateTimestamp()`). Needs
    /// the `std` feature (it reads the clock).
    #[cfg(feature = "std")]
    pub fn update_timestamp(&mut self) {
        self.timestamp = now_millis();
    }
    /// Sets the message counter.
    pub fn set_counter(&mut self, counter: u64) {
        self.counter = counter;
    }
    /// Sets the source id.
    pub fn set_source(&mut self, source: u32) {
        self.source = source;
    }
    /// Sets the target id.
    pub fn set_target(&mut self, target: u32) {
        self.target = target;
    }
    /// Sets the message id from anything that converts into `i32`.
    pub fn set_message_id(&mut self, id: impl Into<i32>) {
        self.message_id = id.into();
    }
    /// Sets the message type from anything that converts into `i32`.
    pub fn set_message_type(&mut self, ty: impl Into<i32>) {
        self.message_type = ty.into();
    }
    /// Sets the protocol version.
    pub fn set_version(&mut self, version: u16) {
        self.version = version;
    }
    /// Sets the flags.
    pub fn set_flags(&mut self, flags: u16) {
        self.flags = flags;
    }
}

//! The incremental frame scanner: where each frame of a byte stream ends.
//!
//! Only `core` and `alloc` are used here (errors are boxed): the scanner is
//! the part of the stream support that a `no_std` build keeps.
//!
//! # State
//!
//! A frame is one MessagePack value, so its end is only known by walking its
//! structure. The scanner walks it once, resumably:
//!
//! - `pending` counts the values that containers read so far announced and
//!   that have not started yet (a map of `n` pairs announces `2n`). The frame
//!   itself is the first; the frame is complete when `pending` and `payload`
//!   are both zero. Each pending value needs at least one more byte, so
//!   `pending + payload` is a lower bound of the bytes still to come: the
//!   "need at least K more bytes" answer, and what the frame-size limit is
//!   checked against the moment a count or a length is read.
//! - `payload` is what is left of a string, binary or extension payload:
//!   passed over by length, never looked at.
//! - `head` holds the marker and length prefix of an element split across
//!   two calls (at most 9 bytes), so no byte is read twice.
//! - `phase` says where in the frame layout the next element is (top-level
//!   array, header field `i`, key, tag, value, attachment name, ...), which
//!   decides what type it must have and which limit applies. Values the
//!   layout does not look into (unknown-tag values, extra trailing
//!   elements) are skipped by `pending` alone: nesting depth needs no stack
//!   and no recursion, whatever the depth.

use core::fmt;

use crate::decode::Limits;
use crate::error::{Context, DecodeError, ErrorKind, Expected, Limit};
use crate::header::Header;
use crate::value::{TAG_BOOL, TAG_DOUBLE, TAG_INT, TAG_STRING};
use crate::wire::read::{be_uint, fast_uint, head_size, scalar_size, Int, Reader};

use super::shape::Shape;

/// Smallest encoding of one parameter: fixstr key, `0x92`, tag, value (the
/// decoder's walk uses the same bound).
const MIN_PARAM_BYTES: u64 = 4;
/// Smallest attachment: `0x92`, fixstr name, bin8 header (2).
const MIN_ATTACHMENT_BYTES: u64 = 4;

/// The fast path's tags, one bit each (0: left to the general path).
const TAG_BIT: [u8; 256] = {
    let mut t = [0u8; 256];
    t[TAG_INT as usize] = 1;
    t[TAG_DOUBLE as usize] = 2;
    t[TAG_STRING as usize] = 4;
    t[TAG_BOOL as usize] = 8;
    t
};

/// For each value marker, the tags (bits of [`TAG_BIT`]) under which the
/// fast path takes it: integers but uint64 under tag 10 (it may not fit
/// i64), any number under tag 20, fixstrs under tag 30, true and false
/// under tag 40. Anything else goes the general way.
const FITS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut m = 0;
    while m < 256 {
        let marker = m as u8;
        let mut bits = 0;
        if matches!(marker, 0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xce | 0xd0..=0xd3) {
            bits |= 1;
        }
        if matches!(marker, 0x00..=0x7f | 0xe0..=0xff | 0xca..=0xd3) {
            bits |= 2;
        }
        if matches!(marker, 0xa0..=0xbf) {
            bits |= 4;
        }
        if matches!(marker, 0xc2 | 0xc3) {
            bits |= 8;
        }
        t[m] = bits;
        m += 1;
    }
    t
};

/// What [`FrameScanner::scan`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Scan {
    /// The first `len` bytes of the buffer are one complete frame, whose
    /// header is `header`. Its structure and the decoder's limits were
    /// checked; UTF-8, value ranges and duplicate keys are the decode's.
    Complete {
        /// Length of the frame in bytes.
        len: usize,
        /// The frame's header, read on the way.
        header: Header,
    },
    /// The buffer holds the start of a frame, valid so far: at least `need`
    /// (≥ 1) more bytes are needed before it can be complete.
    Incomplete {
        /// A lower bound of the bytes still missing.
        need: usize,
    },
}

/// Where the next element is in the frame's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The top-level `[header, params, attachments, ...]` array.
    Top,
    /// The header array.
    HeaderArray,
    /// Header field `field`.
    HeaderField,
    /// The parameter map's length.
    Params,
    /// The key of parameter `index`.
    Key,
    /// The `[tag, value, ...]` array of parameter `index`.
    Pair,
    /// The tag.
    Tag,
    /// The value, of the type `tag` says.
    Value,
    /// The attachment list's length.
    Attachments,
    /// The `[name, data, ...]` array of attachment `index`.
    AttPair,
    /// The attachment's name.
    AttName,
    /// The attachment's data.
    AttData,
    /// Values the layout does not look into, until `pending` falls to
    /// `skip_to`; then what follows.
    Skip(Then),
}

/// What follows a skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// The header's extra elements are done: the parameter map.
    Params,
    /// An unknown-tag value is done: its size is checked, then the pair's
    /// extra elements.
    Unknown,
    /// A parameter is done: the next one, or the attachments.
    Param,
    /// An attachment is done: the next one, or the frame's extra elements.
    Attachment,
    /// The frame's extra elements are done: the frame is complete.
    Frame,
}

/// Finds where each frame of a byte stream ends, fed a growing buffer.
///
/// Give [`scan`](FrameScanner::scan) the bytes received so far, starting at
/// the first byte of the current frame. It answers
/// [`Scan::Complete`] (the frame's length and header),
/// [`Scan::Incomplete`] (how many more bytes at least), or an error if the
/// bytes can no longer become a valid frame. Call it again with the same
/// buffer grown by what arrived since: it resumes where it stopped and never
/// reads a byte twice, so the total work is proportional to the stream's
/// length however it is chunked, one byte at a time included
/// ([`steps`](FrameScanner::steps) counts it). After a complete frame, drop
/// its bytes from the front of the buffer; the scanner is ready for the next.
///
/// It checks the frame's structure (every element has the type its place
/// requires, header fields fit their types) and the [`Limits`] of the
/// decoder it is built with, *as soon as a count or length is read*: a frame
/// announcing more bytes than `max_frame_bytes` (or more parameters,
/// attachments, attachment bytes or a longer string than allowed) fails
/// before its bytes are received, so a reader buffers at most
/// `max_frame_bytes` per frame. Nesting depth costs nothing (no stack).
/// UTF-8, value ranges and duplicate keys are left to the decode of the
/// complete frame.
///
/// "Truncated so far" and "malformed" are distinct: the first is
/// `Ok(Scan::Incomplete)`, the second an `Err`. After an error the scanner
/// starts over (the stream cannot be resynchronised: close it).
///
/// ```
/// use messageframe::{Frame, FrameScanner, Header, Scan};
///
/// let mut frame = Frame::new(Header::new(1, 2, 3, 4));
/// frame.add("gps", "lat", 52.1);
/// let bytes = frame.encode()?;
///
/// let mut scanner = FrameScanner::new();
/// let mut received = Vec::new();
/// for chunk in bytes.chunks(5) {
///     received.extend_from_slice(chunk);
///     match scanner.scan(&received)? {
///         Scan::Incomplete { need } => assert!(received.len() + need <= bytes.len()),
///         Scan::Complete { len, header } => {
///             assert_eq!((len, header.target()), (bytes.len(), 4));
///             let decoded = Frame::decode(&received[..len])?;
///             assert_eq!(decoded, frame);
///         }
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FrameScanner {
    limits: Limits,
    /// `max_frame_bytes`, as a `u64` (the scanner counts in `u64`).
    max_frame: u64,
    /// Bytes of the current frame scanned so far.
    pos: usize,
    /// Values announced and not yet started.
    pending: u64,
    /// Payload bytes of the current element still to pass over.
    payload: u64,
    /// An element's head gathered across calls.
    head: [u8; 9],
    /// Bytes of `head` gathered; 0 when no element is in progress.
    have: u8,
    /// Size of the head being gathered.
    size: u8,
    phase: Phase,
    /// Where the current skip ends.
    skip_to: u64,
    /// `pending` once the current parameter's or attachment's pair is done.
    pair_done: u64,
    /// Header field being read.
    field: u8,
    /// Index of the current parameter or attachment.
    index: usize,
    /// Parameters or attachments after the current one, itself included.
    left: usize,
    /// The current parameter's tag.
    tag: Int,
    /// Where the current parameter's key bytes are (for error contexts).
    key_at: usize,
    key_len: usize,
    /// Start of the current unknown value or attachment pair.
    elem_at: usize,
    /// Start of the element whose payload is being passed over.
    payload_at: usize,
    /// Attachment data bytes so far.
    att_bytes: u64,
    header: Header,
    steps: u64,
    /// The layout of the parameters walked last (kept across frames).
    shape: Shape,
    /// Whether a parameter of this frame did not agree with `shape`.
    shape_missed: bool,
}

impl fmt::Debug for FrameScanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameScanner")
            .field("scanned", &self.pos)
            .field("pending", &self.pending)
            .field("payload", &self.payload)
            .field("phase", &self.phase)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl Default for FrameScanner {
    fn default() -> Self {
        FrameScanner::new()
    }
}

/// Rebases an error found in an element's head (offsets from 0) to the
/// element's offset in the frame, in `context`.
fn rebase(at: usize, context: Context) -> impl FnOnce(DecodeError) -> DecodeError {
    move |e| {
        let mut e = e.with_base_offset(at);
        e.set_context(context);
        e
    }
}

impl FrameScanner {
    /// A scanner with the default [`Limits`].
    #[must_use]
    pub fn new() -> Self {
        FrameScanner::with_limits(Limits::default())
    }

    /// A scanner that enforces `limits` (use the decoder's:
    /// [`Decoder::current_limits`](crate::Decoder::current_limits)).
    #[must_use]
    pub fn with_limits(limits: Limits) -> Self {
        FrameScanner {
            limits,
            max_frame: u64::try_from(limits.max_frame_bytes).unwrap_or(u64::MAX),
            pos: 0,
            pending: 1,
            payload: 0,
            head: [0; 9],
            have: 0,
            size: 0,
            phase: Phase::Top,
            skip_to: 0,
            pair_done: 0,
            field: 0,
            index: 0,
            left: 0,
            tag: 0,
            key_at: 0,
            key_len: 0,
            elem_at: 0,
            payload_at: 0,
            att_bytes: 0,
            header: Header::from_fields(0, 0, 0, 0, 0, 0, 0, 0),
            steps: 0,
            shape: Shape::default(),
            shape_missed: false,
        }
    }

    /// The limits enforced.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Bytes of the current frame scanned so far (0 between frames).
    #[must_use]
    pub fn scanned(&self) -> usize {
        self.pos
    }

    /// Whether the scanner is between frames: nothing of a frame scanned.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.pos == 0
    }

    /// The work done since the scanner was created: one step per call, per
    /// element read and per piece of a payload passed over. Every element is
    /// at least one byte and a payload is split at most once per call, so
    /// over any stream `steps() <= bytes + 2 * calls`: linear, however the
    /// input was chunked.
    #[must_use]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Forgets the current frame; the next call starts a new one.
    pub fn reset(&mut self) {
        let steps = self.steps;
        let shape = core::mem::take(&mut self.shape);
        *self = FrameScanner {
            steps,
            shape,
            ..FrameScanner::with_limits(self.limits)
        };
    }

    /// The error for an input that ends here: `None` between frames, else
    /// [`ErrorKind::Truncated`] at the element being read. `buf` is the
    /// buffer of the last [`scan`](FrameScanner::scan) (for the key a value
    /// error names).
    #[must_use]
    pub fn truncation(&self, buf: &[u8]) -> Option<DecodeError> {
        if self.pos == 0 {
            return None;
        }
        // The element cut short, as the decoder reports it: the one whose
        // head or payload is incomplete (with what its head says it
        // needs), else the first missing one (at least its marker).
        let (at, needed) = if self.have > 0 {
            (self.pos - usize::from(self.have), usize::from(self.size))
        } else if self.payload > 0 {
            let rest = usize::try_from(self.payload).unwrap_or(usize::MAX);
            (
                self.payload_at,
                (self.pos - self.payload_at).saturating_add(rest),
            )
        } else {
            (self.pos, 1)
        };
        Some(DecodeError::new(
            ErrorKind::Truncated {
                element: self.expected(),
                needed,
                available: self.pos - at,
            },
            at,
            self.context(buf),
        ))
    }

    /// Scans `buf`, which starts at the current frame's first byte and
    /// extends the buffer of the previous call (the bytes scanned before
    /// must be unchanged; if not, the answers are unspecified, but nothing
    /// panics). Bytes after a complete frame are not looked at.
    ///
    /// On [`Scan::Complete`] the scanner is ready for the next frame (give
    /// it the bytes after this one). On an error (malformed structure, or a
    /// limit exceeded; offsets count from `buf`'s start) it is reset.
    pub fn scan(&mut self, buf: &[u8]) -> Result<Scan, DecodeError> {
        self.steps += 1;
        match self.run(buf) {
            Ok(Scan::Complete { len, header }) => {
                self.reset();
                Ok(Scan::Complete { len, header })
            }
            Ok(incomplete) => Ok(incomplete),
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }

    fn incomplete(&self) -> Scan {
        let head = if self.have > 0 {
            // The element being gathered is still counted in `pending`.
            u64::from(self.size - self.have) + self.pending.saturating_sub(1)
        } else {
            self.payload + self.pending
        };
        Scan::Incomplete {
            need: usize::try_from(head.max(1)).unwrap_or(usize::MAX),
        }
    }

    fn run(&mut self, buf: &[u8]) -> Result<Scan, DecodeError> {
        if self.phase == Phase::Top && self.pos == 0 && self.have == 0 {
            self.fast_header(buf);
        }
        loop {
            if self.payload > 0 {
                let avail = buf.len().saturating_sub(self.pos) as u64;
                if avail == 0 {
                    return Ok(self.incomplete());
                }
                self.steps += 1;
                let n = avail.min(self.payload);
                self.pos += n as usize;
                self.payload -= n;
                if self.payload > 0 {
                    return Ok(self.incomplete());
                }
            }
            if self.pending == 0 {
                // Only the frame's extra elements can end in a skip to 0.
                return Ok(Scan::Complete {
                    len: self.pos,
                    header: self.header,
                });
            }
            if let Phase::Skip(then) = self.phase {
                if self.pending == self.skip_to {
                    self.after_skip(then);
                    continue;
                }
            }
            if self.phase == Phase::Key && self.have == 0 {
                self.fast_params(buf);
                if self.phase != Phase::Key {
                    continue;
                }
            }
            if self.phase == Phase::Attachments
                && self.pending == 1
                && self.have == 0
                && buf.get(self.pos) == Some(&0x90)
            {
                // The empty attachment list that ends most frames.
                self.steps += 1;
                self.pos += 1;
                self.pending = 0;
                continue;
            }
            // Gather the next element's head (copied only when it is split
            // across calls).
            let size;
            let mut head = [0u8; 9];
            if self.have == 0 {
                let rest = buf.get(self.pos..).unwrap_or(&[]);
                let Some(&m) = rest.first() else {
                    return Ok(self.incomplete());
                };
                size = head_size(m);
                if rest.len() < size {
                    self.head[..rest.len()].copy_from_slice(rest);
                    self.have = rest.len() as u8;
                    self.size = size as u8;
                    self.pos += rest.len();
                    return Ok(self.incomplete());
                }
                head[..size].copy_from_slice(&rest[..size]);
                self.pos += size;
            } else {
                size = usize::from(self.size);
                let have = usize::from(self.have);
                let rest = buf.get(self.pos..).unwrap_or(&[]);
                let n = (size - have).min(rest.len());
                self.head[have..have + n].copy_from_slice(&rest[..n]);
                self.pos += n;
                if have + n < size {
                    self.have = (have + n) as u8;
                    return Ok(self.incomplete());
                }
                head = self.head;
                self.have = 0;
            }
            self.steps += 1;
            self.pending -= 1;
            let at = self.pos - size;
            let phase = self.phase;
            self.element(&head[..size], at, buf)?;
            if self.payload > 0 {
                self.payload_at = at;
            }
            // Every element, at its smallest, must leave the frame within
            // the limit (reported in the context it was read in).
            if self.too_big() {
                return Err(DecodeError::new(
                    ErrorKind::LimitExceeded(Limit::FrameBytes),
                    at,
                    self.context_in(phase, buf),
                ));
            }
        }
    }

    /// Reads the top-level array and the header in one go when they have
    /// the shape encoders write (`fixarray(3)`, `fixarray(8)`, non-negative
    /// fields in range) and are all in `buf`; anything else is left to the
    /// general path, which reads it element by element with exact errors.
    fn fast_header(&mut self, buf: &[u8]) {
        if buf.len() < 2 || buf[0] != 0x93 || buf[1] != 0x98 {
            return;
        }
        let mut p = 2;
        let mut f = [0u64; 8];
        for v in &mut f {
            match fast_uint(buf, &mut p) {
                Some(x) => *v = x,
                None => return,
            }
        }
        let (Ok(source), Ok(target), Ok(id), Ok(ty), Ok(version), Ok(flags)) = (
            u32::try_from(f[2]),
            u32::try_from(f[3]),
            i32::try_from(f[4]),
            i32::try_from(f[5]),
            u16::try_from(f[6]),
            u16::try_from(f[7]),
        ) else {
            return;
        };
        self.header = Header::from_fields(f[0], f[1], source, target, id, ty, version, flags);
        // Ten elements read: the frame (announcing 3), the header (8), its
        // fields; the parameter map and the attachment list remain.
        self.steps += 10;
        self.pos = p;
        self.pending = 2;
        self.phase = Phase::Params;
        // The map's length, when it is a fixmap or map16 within the limits
        // (the general path reads anything else, with exact errors).
        let count = match buf.get(p..p + 3) {
            Some(&[m @ 0x80..=0x8f, ..]) => (usize::from(m & 0x0f), 1),
            Some(&[0xde, a, b]) => (usize::from(u16::from_be_bytes([a, b])), 3),
            _ => return,
        };
        let (count, head) = count;
        let after = (p + head) as u64;
        if count > self.limits.max_params || after + count as u64 * MIN_PARAM_BYTES > self.max_frame
        {
            return;
        }
        self.steps += 1;
        self.pos = p + head;
        self.pending = 1 + 2 * count as u64;
        self.index = 0;
        self.left = count;
        self.phase = if count > 0 {
            Phase::Key
        } else {
            Phase::Attachments
        };
    }

    /// Reads whole parameters in the forms encoders write (fixstr key,
    /// `fixarray(2)`, fixint tag, a scalar or fixstr value of the tag's
    /// type) while they are entirely in `buf` and within the frame limit;
    /// stops, having consumed nothing of it, at the first one that is not,
    /// for the general path. Only when the limits admit every fixstr (the
    /// key and string checks then cannot fail).
    ///
    /// First the parameters that agree with the [`Shape`] of the last ones
    /// walked are passed over in one comparison; then the rest are walked
    /// one by one, and recorded in the shape for the next frame (see
    /// [`Shape::missed`] for when not).
    fn fast_params(&mut self, buf: &[u8]) {
        if self.limits.max_key_len.min(self.limits.max_string_len) < 31 {
            return;
        }
        // The general path checks, after each element, that the frame at
        // its smallest fits the limit: after a parameter, `next` plus the
        // values still pending (two per parameter left, then the
        // attachments and the frame's extras). `room` is that bound on
        // `next`; it grows by 2 per parameter. The scanner's state keeps
        // `pos + pending <= max_frame`, so it cannot underflow.
        let room = (self.max_frame - self.pending + 2) as usize;
        if self.shape.len() > self.index {
            let rest = buf.get(self.pos..).unwrap_or(&[]);
            // `room` bounds the first parameter's end; it only grows for
            // the next ones, so it is a safe bound for all of them.
            let limit = room.saturating_sub(self.pos);
            let (n, bytes) = self.shape.check(rest, self.index, self.left, limit);
            self.advance(n, self.pos + bytes);
            if self.left == 0 {
                if !self.shape_missed {
                    self.shape.agreed();
                }
                return;
            }
            // The rest is walked; the shape learns it, unless layouts
            // keep changing (one miss a frame: after a parameter of the
            // general path, the shape may agree again, or not).
            let first = !core::mem::replace(&mut self.shape_missed, true);
            if first && self.shape.missed() {
                self.shape.truncate(self.index);
            }
        }
        let room = (self.max_frame - self.pending + 2) as usize;
        let (p, left) = walk_params(
            buf,
            self.pos,
            self.left,
            room,
            (self.shape.len() == self.index).then_some(&mut self.shape),
        );
        self.advance(self.left - left, p);
    }

    /// `done` parameters were read; the next element is at `p`.
    #[inline]
    fn advance(&mut self, done: usize, p: usize) {
        self.steps += done as u64;
        self.index += done;
        self.pending -= 2 * done as u64;
        self.left -= done;
        self.pos = p;
        if self.left == 0 {
            self.phase = Phase::Attachments;
        }
    }

    /// Context for an error in the current phase.
    /// What the layout expects in the current phase, for truncation errors.
    fn expected(&self) -> Expected {
        match self.phase {
            Phase::Top | Phase::HeaderArray | Phase::Attachments | Phase::Pair | Phase::AttPair => {
                Expected::Array
            }
            Phase::HeaderField | Phase::Tag => Expected::Integer,
            Phase::Params => Expected::Map,
            Phase::Key | Phase::AttName => Expected::String,
            Phase::AttData => Expected::Binary,
            Phase::Value | Phase::Skip(_) => Expected::Value,
        }
    }

    fn context(&self, buf: &[u8]) -> Context {
        self.context_in(self.phase, buf)
    }

    fn context_in(&self, phase: Phase, buf: &[u8]) -> Context {
        match phase {
            Phase::Top | Phase::Skip(Then::Frame) => Context::Frame,
            Phase::HeaderArray => Context::Header(Header::FIELD_NAMES[0]),
            Phase::HeaderField => Context::Header(Header::FIELD_NAMES[usize::from(self.field)]),
            Phase::Skip(Then::Params) => Context::Header(Header::FIELD_NAMES[7]),
            Phase::Params => Context::Params,
            Phase::Key => Context::Key(self.index),
            Phase::Pair
            | Phase::Tag
            | Phase::Value
            | Phase::Skip(Then::Unknown)
            | Phase::Skip(Then::Param) => {
                let key = buf
                    .get(self.key_at..self.key_at + self.key_len)
                    .unwrap_or(&[]);
                Context::value_of_key(key)
            }
            Phase::Attachments => Context::Attachment(0),
            Phase::AttPair | Phase::AttName | Phase::AttData | Phase::Skip(Then::Attachment) => {
                Context::Attachment(self.index)
            }
        }
    }

    #[cold]
    fn error(&self, kind: ErrorKind, at: usize, buf: &[u8]) -> DecodeError {
        DecodeError::new(kind, at, self.context(buf))
    }

    /// Whether the frame, at its smallest from here, exceeds
    /// `max_frame_bytes`.
    #[inline]
    fn too_big(&self) -> bool {
        self.pos as u64 + self.payload + self.pending > self.max_frame
    }

    /// Fails if [`too_big`](Self::too_big), where the decoder reports that
    /// before another error of the same element.
    #[inline]
    fn check_size(&self, at: usize, buf: &[u8]) -> Result<(), DecodeError> {
        if self.too_big() {
            return Err(self.error(ErrorKind::LimitExceeded(Limit::FrameBytes), at, buf));
        }
        Ok(())
    }

    /// The length in a string head, or an error if `head` is not a string.
    fn str_len(&self, head: &[u8], at: usize, buf: &[u8]) -> Result<u64, DecodeError> {
        let m = head[0];
        let len = match m {
            0xa0..=0xbf => u64::from(m & 0x1f),
            0xd9..=0xdb => be_uint(&head[1..]).unwrap_or(0),
            _ => {
                return Err(self.error(
                    ErrorKind::UnexpectedType {
                        expected: Expected::String,
                        found: m,
                    },
                    at,
                    buf,
                ))
            }
        };
        if len > self.limits.max_string_len as u64 {
            return Err(self.error(ErrorKind::LimitExceeded(Limit::StringLen), at, buf));
        }
        Ok(len)
    }

    /// Reads one element whose head is `head`, at offset `at`, in the
    /// current phase. `pending` no longer counts it.
    fn element(&mut self, head: &[u8], at: usize, buf: &[u8]) -> Result<(), DecodeError> {
        let mut r = Reader::validated(head, 0);
        match self.phase {
            Phase::Top => {
                let extra = r.array_at_least(3).map_err(rebase(at, Context::Frame))?;
                self.pending += 3 + extra as u64;
                self.skip_to = 0;
                self.phase = Phase::HeaderArray;
            }
            Phase::HeaderArray => {
                let ctx = Context::Header(Header::FIELD_NAMES[0]);
                let extra = r.array_at_least(8).map_err(rebase(at, ctx))?;
                // The header's extra elements end when the values after the
                // header are all that is left.
                self.skip_to = self.pending;
                self.pending += 8 + extra as u64;
                self.field = 0;
                self.phase = Phase::HeaderField;
            }
            Phase::HeaderField => {
                let i = usize::from(self.field);
                let ctx = || rebase(at, Context::Header(Header::FIELD_NAMES[i]));
                let h = &mut self.header;
                match i {
                    0 => h.set_timestamp(r.int_as().map_err(ctx())?),
                    1 => h.set_counter(r.int_as().map_err(ctx())?),
                    2 => h.set_source(r.int_as().map_err(ctx())?),
                    3 => h.set_target(r.int_as().map_err(ctx())?),
                    4 => h.set_message_id(r.int_as::<i32>().map_err(ctx())?),
                    5 => h.set_message_type(r.int_as::<i32>().map_err(ctx())?),
                    6 => h.set_version(r.int_as().map_err(ctx())?),
                    _ => h.set_flags(r.int_as().map_err(ctx())?),
                }
                self.field += 1;
                if self.field == 8 {
                    self.phase = Phase::Skip(Then::Params);
                }
            }
            Phase::Params => {
                let count = r.map_len().map_err(rebase(at, Context::Params))?;
                if count > self.limits.max_params {
                    return Err(self.error(ErrorKind::LimitExceeded(Limit::Params), at, buf));
                }
                // As the decoder: the count must fit the frame before
                // anything is reserved for it.
                if (self.pos as u64).saturating_add((count as u64).saturating_mul(MIN_PARAM_BYTES))
                    > self.max_frame
                {
                    return Err(self.error(ErrorKind::LimitExceeded(Limit::FrameBytes), at, buf));
                }
                self.pending += 2 * count as u64;
                self.index = 0;
                self.left = count;
                self.phase = if count > 0 {
                    Phase::Key
                } else {
                    Phase::Attachments
                };
            }
            Phase::Key => {
                let len = self.str_len(head, at, buf)?;
                self.payload = len;
                self.check_size(at, buf)?;
                if len > self.limits.max_key_len as u64 {
                    return Err(self.error(ErrorKind::LimitExceeded(Limit::KeyLen), at, buf));
                }
                self.key_at = self.pos;
                self.key_len = len as usize;
                self.phase = Phase::Pair;
            }
            Phase::Pair => {
                let extra = match r.array_at_least(2) {
                    Ok(extra) => extra,
                    Err(e) => return Err(rebase(at, self.context(buf))(e)),
                };
                self.pair_done = self.pending;
                self.pending += 2 + extra as u64;
                self.phase = Phase::Tag;
            }
            Phase::Tag => {
                // Any integer is a tag (i64::MIN..=u64::MAX, as the
                // decoder reads it): all but the four known are unknown.
                self.tag = match r.int() {
                    Ok(t) => t,
                    Err(e) => return Err(rebase(at, self.context(buf))(e)),
                };
                self.phase = Phase::Value;
            }
            Phase::Value => {
                let checked = match self.tag {
                    t if t == Int::from(TAG_INT) => r.int_as::<i64>().map(drop),
                    t if t == Int::from(TAG_DOUBLE) => r.number().map(drop),
                    t if t == Int::from(TAG_BOOL) => r.boolean().map(drop),
                    t if t == Int::from(TAG_STRING) => {
                        self.payload = self.str_len(head, at, buf)?;
                        Ok(())
                    }
                    _ => {
                        // An unknown tag: any one value, kept raw by the
                        // decoder, so at most `max_string_len` bytes.
                        self.elem_at = at;
                        self.skip_to = self.pending;
                        self.phase = Phase::Skip(Then::Unknown);
                        return self.generic(head, at, buf);
                    }
                };
                if let Err(e) = checked {
                    return Err(rebase(at, self.context(buf))(e));
                }
                self.skip_to = self.pair_done;
                self.phase = Phase::Skip(Then::Param);
            }
            Phase::Attachments => {
                let count = r.array_len().map_err(rebase(at, Context::Attachment(0)))?;
                if count > self.limits.max_attachments {
                    return Err(self.error(ErrorKind::LimitExceeded(Limit::Attachments), at, buf));
                }
                if (self.pos as u64)
                    .saturating_add((count as u64).saturating_mul(MIN_ATTACHMENT_BYTES))
                    > self.max_frame
                {
                    return Err(self.error(ErrorKind::LimitExceeded(Limit::FrameBytes), at, buf));
                }
                self.pending += count as u64;
                self.index = 0;
                self.left = count;
                if count > 0 {
                    self.phase = Phase::AttPair;
                } else {
                    self.skip_to = 0;
                    self.phase = Phase::Skip(Then::Frame);
                }
            }
            Phase::AttPair => {
                let extra = r
                    .array_at_least(2)
                    .map_err(rebase(at, Context::Attachment(self.index)))?;
                self.pair_done = self.pending;
                self.pending += 2 + extra as u64;
                self.elem_at = at;
                self.phase = Phase::AttName;
            }
            Phase::AttName => {
                self.payload = self.str_len(head, at, buf)?;
                self.phase = Phase::AttData;
            }
            Phase::AttData => {
                let len = match head[0] {
                    0xc4..=0xc6 => be_uint(&head[1..]).unwrap_or(0),
                    m => {
                        return Err(self.error(
                            ErrorKind::UnexpectedType {
                                expected: Expected::Binary,
                                found: m,
                            },
                            at,
                            buf,
                        ))
                    }
                };
                self.payload = len;
                self.check_size(at, buf)?;
                self.att_bytes = self.att_bytes.saturating_add(len);
                if self.att_bytes > self.limits.max_attachment_bytes as u64 {
                    return Err(self.error(
                        ErrorKind::LimitExceeded(Limit::AttachmentBytes),
                        self.elem_at,
                        buf,
                    ));
                }
                self.skip_to = self.pair_done;
                self.phase = Phase::Skip(Then::Attachment);
            }
            Phase::Skip(_) => self.generic(head, at, buf)?,
        }
        Ok(())
    }

    /// Reads any one MessagePack element by its head: a scalar is whole, a
    /// container announces its children, a string, binary or extension its
    /// payload.
    fn generic(&mut self, head: &[u8], at: usize, buf: &[u8]) -> Result<(), DecodeError> {
        let m = head[0];
        let len = || be_uint(&head[1..]).unwrap_or(0);
        let (payload, children) = match m {
            0x80..=0x8f => (0, 2 * u64::from(m & 0x0f)),
            0x90..=0x9f => (0, u64::from(m & 0x0f)),
            0xa0..=0xbf => (u64::from(m & 0x1f), 0),
            0xc4..=0xc6 | 0xd9..=0xdb => (len(), 0),
            0xc7..=0xc9 => (len() + 1, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xdc | 0xdd => (0, len()),
            0xde | 0xdf => (0, 2 * len()),
            0xc1 => {
                return Err(self.error(
                    ErrorKind::UnexpectedType {
                        expected: Expected::Value,
                        found: m,
                    },
                    at,
                    buf,
                ))
            }
            _ => (0, 0),
        };
        self.payload = payload;
        self.pending += children;
        self.check_size(at, buf)?;
        if self.phase == Phase::Skip(Then::Unknown) {
            // The raw value, at its smallest from here.
            let raw =
                (self.pos - self.elem_at) as u64 + self.payload + (self.pending - self.skip_to);
            if raw > self.limits.max_string_len as u64 {
                return Err(self.error(
                    ErrorKind::LimitExceeded(Limit::StringLen),
                    self.elem_at,
                    buf,
                ));
            }
        }
        Ok(())
    }

    /// Moves on once a skip has reached its end.
    fn after_skip(&mut self, then: Then) {
        match then {
            Then::Params => self.phase = Phase::Params,
            Then::Unknown => {
                self.skip_to = self.pair_done;
                self.phase = Phase::Skip(Then::Param);
            }
            Then::Param => {
                self.index += 1;
                self.left -= 1;
                self.phase = if self.left > 0 {
                    Phase::Key
                } else {
                    Phase::Attachments
                };
            }
            Then::Attachment => {
                self.index += 1;
                self.left -= 1;
                if self.left > 0 {
                    self.phase = Phase::AttPair;
                } else {
                    self.skip_to = 0;
                    self.phase = Phase::Skip(Then::Frame);
                }
            }
            // `pending` is 0: the loop has reported the frame complete.
            Then::Frame => {}
        }
    }
}

/// Walks at most `left` parameters from `p` in the forms encoders write,
/// while they are entirely in `buf` and end within `room` (which grows by 2
/// per parameter); records each in `shape` if given. Returns where it
/// stopped and how many parameters are left.
///
/// Not inlined: on its own, the loop keeps its few values in registers.
/// Each parameter's position depends on the previous one's key length and
/// value size: a chain of loads. The size is computed from the value's
/// marker with branches a predictor learns (the common markers first), and
/// the tag/type check hangs off the chain, so the chain is two loads and a
/// few additions long.
#[inline(never)]
fn walk_params(
    buf: &[u8],
    mut p: usize,
    mut left: usize,
    mut room: usize,
    mut shape: Option<&mut Shape>,
) -> (usize, usize) {
    let end = buf.len();
    while left > 0 {
        let Some(&m) = buf.get(p) else { break };
        let klen = usize::from(m ^ 0xa0);
        let v = p + 1 + klen;
        if v + 3 > end {
            break;
        }
        let (array, tag, vm) = (buf[v], buf[v + 1], buf[v + 2]);
        let size = if !(0x80..0xe0).contains(&vm) {
            1
        } else if vm & 0xe0 == 0xa0 {
            1 + usize::from(vm & 0x1f)
        } else {
            scalar_size(vm)
        };
        let next = v + 2 + size;
        // One branch for every check (each rarely fails).
        let fits = (klen < 32)
            & (array == 0x92)
            & (FITS[usize::from(vm)] & TAG_BIT[usize::from(tag)] != 0)
            & (next <= end)
            & (next <= room);
        if !fits {
            break;
        }
        if let Some(s) = &mut shape {
            if !s.push(klen, tag, vm, next - p) {
                shape = None;
            }
        }
        p = next;
        room += 2;
        left -= 1;
    }
    (p, left)
}

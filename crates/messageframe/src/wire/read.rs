//! MessagePack reading primitives: a bounded cursor over the input that
//! knows MessagePack's markers and length prefixes and nothing about frames.
//!
//! Every reader checks a length against the remaining bytes before slicing,
//! and reports errors at the offset where the element starts. The frame walk
//! (`decode::walk`) builds on it.

use core::ops::Range;

use crate::error::{Context, DecodeError, ErrorKind, Expected, Limit};

/// A bounded cursor over the input with MessagePack primitive readers.
/// Every reader checks a length against the remaining bytes before slicing,
/// and reports errors at the offset where the element starts.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    /// The input, cut to the caller's size limit.
    pub(crate) data: &'a [u8],
    pub(crate) pos: usize,
    /// Length of the whole input: reading past `data` but not past this is
    /// a limit error, past this a truncation.
    input_len: usize,
    /// Longest string (and unknown raw value) accepted.
    pub(crate) max_str: usize,
}

impl core::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reader")
            .field("pos", &self.pos)
            .field("len", &self.data.len())
            .finish_non_exhaustive()
    }
}

/// A big-endian unsigned integer of 1, 2, 4 or 8 bytes.
#[inline(always)]
pub(crate) fn be_uint(b: &[u8]) -> Option<u64> {
    Some(match *b {
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_be_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_be_bytes([a, b, c, d])),
        [a, b, c, d, e, f, g, h] => u64::from_be_bytes([a, b, c, d, e, f, g, h]),
        _ => return None,
    })
}

/// A non-negative integer in a positive fixint or an unsigned marker, at
/// `*p`; advances `*p`.
#[inline(always)]
pub(crate) fn fast_uint(d: &[u8], p: &mut usize) -> Option<u64> {
    let m = *d.get(*p)?;
    let n = match m {
        0x00..=0x7f => {
            *p += 1;
            return Some(u64::from(m));
        }
        0xcc => 1,
        0xcd => 2,
        0xce => 4,
        0xcf => 8,
        _ => return None,
    };
    let v = be_uint(d.get(*p + 1..*p + 1 + n)?)?;
    *p += 1 + n;
    Some(v)
}

/// A float32 as a double, bit-exactly the same on every target: a NaN
/// keeps its sign and payload and is made quiet (what x86's `cvtss2sd`
/// does). `f64::from(f32)` leaves a NaN's sign and payload unspecified (Miri
/// picks them at random, some hardware returns one canonical NaN), so two
/// decoders of the same bytes could disagree on its bits.
#[inline]
pub(crate) fn widen_f32(bits: u32) -> f64 {
    let f = f32::from_bits(bits);
    if f.is_nan() {
        let sign = u64::from(bits >> 31) << 63;
        let payload = u64::from(bits & 0x003f_ffff) << 29;
        f64::from_bits(sign | 0x7ff8_0000_0000_0000 | payload)
    } else {
        f64::from(f)
    }
}

/// What the MessagePack marker `m` starts, for error messages.
#[cold]
fn element_of(m: u8) -> Expected {
    match m {
        0x80..=0x8f | 0xde | 0xdf => Expected::Map,
        0x90..=0x9f | 0xdc | 0xdd => Expected::Array,
        0xa0..=0xbf | 0xd9..=0xdb => Expected::String,
        0xc4..=0xc6 => Expected::Binary,
        0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xcf | 0xd0..=0xd3 => Expected::Integer,
        0xca | 0xcb => Expected::Number,
        0xc2 | 0xc3 => Expected::Bool,
        _ => Expected::Value,
    }
}

/// An integer as read: wide enough for every MessagePack integer.
pub(crate) type Int = i128;

/// The size of a value whose marker is `m` when it is a scalar or a
/// fixstr (marker included); 0 for anything else.
#[inline(always)]
pub(crate) const fn scalar_size(m: u8) -> usize {
    match m {
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => 1,
        // `as`: `usize::from` is not callable in a const fn.
        0xa0..=0xbf => 1 + (m & 0x1f) as usize,
        0xcc | 0xd0 => 2,
        0xcd | 0xd1 => 3,
        0xca | 0xce | 0xd2 => 5,
        0xcb | 0xcf | 0xd3 => 9,
        _ => 0,
    }
}

/// The size of a value's head: its marker and length prefix (the ext
/// type byte is payload, not head), or for a scalar the whole value. At
/// most 9 bytes. A stream scanner gathers this many bytes before it looks
/// at an element, so that it never reads a byte twice.
#[inline(always)]
pub(crate) fn head_size(m: u8) -> usize {
    match m {
        0xc4 | 0xc7 | 0xd9 => 2,
        0xc5 | 0xc8 | 0xda | 0xdc | 0xde => 3,
        0xc6 | 0xc9 | 0xdb | 0xdd | 0xdf => 5,
        0xa0..=0xbf => 1,
        _ => scalar_size(m).max(1),
    }
}

impl<'a> Reader<'a> {
    /// A reader of at most `max_bytes` of `buf` (reading past them is
    /// [`Limit::FrameBytes`]) and strings of at most `max_str` bytes.
    pub(crate) fn new(buf: &'a [u8], max_bytes: usize, max_str: usize) -> Self {
        Reader {
            data: &buf[..buf.len().min(max_bytes)],
            pos: 0,
            input_len: buf.len(),
            max_str,
        }
    }

    /// A reader over bytes that a walk already validated, at `pos`.
    pub(crate) fn validated(buf: &'a [u8], pos: usize) -> Self {
        Reader {
            data: buf,
            pos,
            input_len: buf.len(),
            max_str: usize::MAX,
        }
    }

    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub(crate) fn input(&self) -> &'a [u8] {
        self.data
    }

    #[cold]
    pub(crate) fn err(&self, kind: ErrorKind, at: usize) -> DecodeError {
        DecodeError::new(kind, at, Context::Frame)
    }

    /// The error for the element `what` that starts at `at` and needs `n`
    /// more bytes than `data` has from `pos`: past the caller's frame limit
    /// but within the input, a limit error; else a truncation that says how
    /// many bytes the element needs from its start and how many the input
    /// has from there.
    #[cold]
    pub(crate) fn short(&self, at: usize, n: usize, what: Expected) -> DecodeError {
        if self.pos.saturating_add(n) <= self.input_len {
            self.err(ErrorKind::LimitExceeded(Limit::FrameBytes), at)
        } else {
            self.truncated(at, n, what)
        }
    }

    /// The truncation of the element `what` that starts at `at` and needs
    /// `n` more bytes from `pos`.
    #[cold]
    fn truncated(&self, at: usize, n: usize, what: Expected) -> DecodeError {
        let kind = ErrorKind::Truncated {
            element: what,
            needed: (self.pos - at).saturating_add(n),
            available: self.input_len - at,
        };
        self.err(kind, at)
    }

    /// Takes `n` bytes of the element `what` that starts at `at` (for the
    /// error).
    #[inline(always)]
    pub(crate) fn take(
        &mut self,
        n: usize,
        at: usize,
        what: Expected,
    ) -> Result<&'a [u8], DecodeError> {
        match self.data.get(self.pos..self.pos.wrapping_add(n)) {
            Some(s) if n <= self.data.len() => {
                self.pos += n;
                Ok(s)
            }
            _ => Err(self.short(at, n, what)),
        }
    }

    /// The marker byte of the element `what`.
    #[inline(always)]
    pub(crate) fn byte(&mut self, what: Expected) -> Result<u8, DecodeError> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.short(self.pos, 1, what)),
        }
    }

    #[inline]
    pub(crate) fn be<const N: usize>(
        &mut self,
        at: usize,
        what: Expected,
    ) -> Result<[u8; N], DecodeError> {
        let s = self.take(N, at, what)?;
        let mut b = [0u8; N];
        b.copy_from_slice(s);
        Ok(b)
    }

    /// Length after a 1/2/4-byte big-endian prefix of the element `what`.
    #[inline]
    pub(crate) fn len_prefix(
        &mut self,
        width: u8,
        at: usize,
        what: Expected,
    ) -> Result<usize, DecodeError> {
        Ok(match width {
            1 => usize::from(self.be::<1>(at, what)?[0]),
            2 => usize::from(u16::from_be_bytes(self.be(at, what)?)),
            _ => u32::from_be_bytes(self.be(at, what)?) as usize,
        })
    }

    #[cold]
    pub(crate) fn unexpected(&self, expected: Expected, found: u8, at: usize) -> DecodeError {
        self.err(ErrorKind::UnexpectedType { expected, found }, at)
    }

    #[inline]
    pub(crate) fn array_len(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        match self.byte(Expected::Array)? {
            m @ 0x90..=0x9f => Ok(usize::from(m & 0x0f)),
            0xdc => self.len_prefix(2, at, Expected::Array),
            0xdd => self.len_prefix(4, at, Expected::Array),
            m => Err(self.unexpected(Expected::Array, m, at)),
        }
    }

    /// An array of at least `min` elements; returns how many extra elements
    /// follow the ones the layout requires.
    #[inline(always)]
    pub(crate) fn array_at_least(&mut self, min: usize) -> Result<usize, DecodeError> {
        let at = self.pos;
        // Fast path: the fixarray of exactly the size encoders write.
        if self.data.get(at) == Some(&(0x90 | min as u8)) && min < 16 {
            self.pos += 1;
            return Ok(0);
        }
        let n = self.array_len()?;
        if n < min {
            return Err(self.err(
                ErrorKind::TooFewElements {
                    expected: min,
                    found: n,
                },
                at,
            ));
        }
        Ok(n - min)
    }

    /// The length of a fixmap (`base` 0x80) or fixarray (0x90), the forms
    /// encoders write for small counts; `None`, consuming nothing, for any
    /// other byte (the general reader then takes it, with exact errors).
    #[inline(always)]
    pub(crate) fn fix_len(&mut self, base: u8) -> Option<usize> {
        let m = *self.data.get(self.pos)?;
        if m & 0xf0 == base {
            self.pos += 1;
            Some(usize::from(m & 0x0f))
        } else {
            None
        }
    }

    #[inline]
    pub(crate) fn map_len(&mut self) -> Result<usize, DecodeError> {
        let at = self.pos;
        match self.byte(Expected::Map)? {
            m @ 0x80..=0x8f => Ok(usize::from(m & 0x0f)),
            0xde => self.len_prefix(2, at, Expected::Map),
            0xdf => self.len_prefix(4, at, Expected::Map),
            m => Err(self.unexpected(Expected::Map, m, at)),
        }
    }

    /// The integer after marker `m` (already consumed) of the element
    /// `what` (an integer, or a number), or `Err(m)` if `m` is not an
    /// integer marker, so callers can accept floats where they may.
    #[inline]
    pub(crate) fn int_after(
        &mut self,
        m: u8,
        at: usize,
        what: Expected,
    ) -> Result<Result<Int, u8>, DecodeError> {
        Ok(Ok(match m {
            0x00..=0x7f => Int::from(m),
            0xe0..=0xff => Int::from(m as i8),
            0xcc => Int::from(self.be::<1>(at, what)?[0]),
            0xcd => Int::from(u16::from_be_bytes(self.be(at, what)?)),
            0xce => Int::from(u32::from_be_bytes(self.be(at, what)?)),
            0xcf => Int::from(u64::from_be_bytes(self.be(at, what)?)),
            0xd0 => Int::from(self.be::<1>(at, what)?[0] as i8),
            0xd1 => Int::from(i16::from_be_bytes(self.be(at, what)?)),
            0xd2 => Int::from(i32::from_be_bytes(self.be(at, what)?)),
            0xd3 => Int::from(i64::from_be_bytes(self.be(at, what)?)),
            _ => return Ok(Err(m)),
        }))
    }

    #[inline]
    pub(crate) fn int(&mut self) -> Result<Int, DecodeError> {
        let at = self.pos;
        let m = self.byte(Expected::Integer)?;
        match self.int_after(m, at, Expected::Integer)? {
            Ok(v) => Ok(v),
            Err(m) => {
                self.pos = at;
                Err(self.unexpected(Expected::Integer, m, at))
            }
        }
    }

    /// An integer that must fit `T`.
    #[inline(always)]
    pub(crate) fn int_as<T: TryFrom<Int> + TryFrom<u64>>(&mut self) -> Result<T, DecodeError> {
        // Fast path: a positive fixint or an unsigned marker, read straight
        // into a u64; anything else (negative, or an error) goes the general
        // way.
        let at = self.pos;
        let mut p = at;
        match fast_uint(self.data, &mut p) {
            Some(v) => {
                self.pos = p;
                T::try_from(v).map_err(|_| self.err(ErrorKind::IntegerOutOfRange, at))
            }
            None => {
                let v = self.int_slow()?;
                T::try_from(v).map_err(|_| self.err(ErrorKind::IntegerOutOfRange, at))
            }
        }
    }

    /// [`int`](Reader::int) out of line, one copy for every type
    /// [`int_as`](Reader::int_as) reads.
    #[inline(never)]
    fn int_slow(&mut self) -> Result<Int, DecodeError> {
        self.int()
    }

    /// A string's bytes, not validated as UTF-8 (the caller does that).
    #[inline(always)]
    pub(crate) fn str_bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let at = self.pos;
        let len = match self.byte(Expected::String)? {
            m @ 0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => self.len_prefix(1, at, Expected::String)?,
            0xda => self.len_prefix(2, at, Expected::String)?,
            0xdb => self.len_prefix(4, at, Expected::String)?,
            m => return Err(self.unexpected(Expected::String, m, at)),
        };
        if len > self.max_str {
            return Err(self.err(ErrorKind::LimitExceeded(Limit::StringLen), at));
        }
        self.take(len, at, Expected::String)
    }

    /// A string, validated as UTF-8.
    #[inline]
    pub(crate) fn str(&mut self) -> Result<&'a str, DecodeError> {
        let at = self.pos;
        let bytes = self.str_bytes()?;
        crate::utf8::str_from(bytes).map_err(|_| self.err(ErrorKind::InvalidUtf8, at))
    }

    /// Binary data; returns its range in the input.
    #[inline]
    pub(crate) fn bin(&mut self) -> Result<Range<usize>, DecodeError> {
        let at = self.pos;
        let len = match self.byte(Expected::Binary)? {
            0xc4 => self.len_prefix(1, at, Expected::Binary)?,
            0xc5 => self.len_prefix(2, at, Expected::Binary)?,
            0xc6 => self.len_prefix(4, at, Expected::Binary)?,
            m => return Err(self.unexpected(Expected::Binary, m, at)),
        };
        self.take(len, at, Expected::Binary)?;
        Ok(self.pos - len..self.pos)
    }

    /// Skips one complete value of any type. Iterative: a counter of values
    /// still to skip replaces recursion, so nesting depth costs no stack, and
    /// every step consumes at least one byte, so the loop ends with the input.
    pub(crate) fn skip(&mut self) -> Result<(), DecodeError> {
        let mut pending: u64 = 1;
        while pending > 0 {
            pending -= 1;
            let at = self.pos;
            const V: Expected = Expected::Value;
            let m = self.byte(V)?;
            // A truncation inside the element names what its marker says.
            let named = |e: DecodeError| e.in_element(element_of(m));
            let (skip, children): (usize, u64) = match m {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
                0x80..=0x8f => (0, 2 * u64::from(m & 0x0f)),
                0x90..=0x9f => (0, u64::from(m & 0x0f)),
                0xa0..=0xbf => (usize::from(m & 0x1f), 0),
                0xcc | 0xd0 => (1, 0),
                0xcd | 0xd1 => (2, 0),
                0xce | 0xd2 | 0xca => (4, 0),
                0xcf | 0xd3 | 0xcb => (8, 0),
                0xd4 => (2, 0),
                0xd5 => (3, 0),
                0xd6 => (5, 0),
                0xd7 => (9, 0),
                0xd8 => (17, 0),
                0xc4 | 0xd9 => (self.len_prefix(1, at, V).map_err(named)?, 0),
                0xc5 | 0xda => (self.len_prefix(2, at, V).map_err(named)?, 0),
                0xc6 | 0xdb => (self.len_prefix(4, at, V).map_err(named)?, 0),
                // An ext's type byte follows its length. Saturating: on a
                // 32-bit target an ext32 of length u32::MAX plus that byte
                // is past `usize::MAX` (and past any input).
                0xc7 => (
                    self.len_prefix(1, at, V).map_err(named)?.saturating_add(1),
                    0,
                ),
                0xc8 => (
                    self.len_prefix(2, at, V).map_err(named)?.saturating_add(1),
                    0,
                ),
                0xc9 => (
                    self.len_prefix(4, at, V).map_err(named)?.saturating_add(1),
                    0,
                ),
                0xdc => (0, self.len_prefix(2, at, V).map_err(named)? as u64),
                0xdd => (0, self.len_prefix(4, at, V).map_err(named)? as u64),
                0xde => (0, 2 * self.len_prefix(2, at, V).map_err(named)? as u64),
                0xdf => (0, 2 * self.len_prefix(4, at, V).map_err(named)? as u64),
                0xc1 => return Err(self.unexpected(Expected::Value, m, at)),
            };
            self.take(skip, at, V).map_err(named)?;
            pending += children;
            // Each pending element needs at least one more byte.
            if pending > self.remaining() as u64 {
                // Past a cut frame window a limit, as for one byte past it;
                // else a truncation whose elements need at least a byte each.
                return Err(if self.data.len() < self.input_len {
                    self.err(ErrorKind::LimitExceeded(Limit::FrameBytes), at)
                } else {
                    self.truncated(
                        at,
                        usize::try_from(pending).unwrap_or(usize::MAX),
                        element_of(m),
                    )
                });
            }
        }
        Ok(())
    }

    /// Skips `n` values.
    #[inline]
    pub(crate) fn skip_n(&mut self, n: usize) -> Result<(), DecodeError> {
        for _ in 0..n {
            self.skip()?;
        }
        Ok(())
    }

    /// A Double: float64, float32 or any integer (converted, as msgpack-c does).
    #[inline(always)]
    pub(crate) fn number(&mut self) -> Result<f64, DecodeError> {
        let at = self.pos;
        const N: Expected = Expected::Number;
        match self.byte(N)? {
            0xcb => Ok(f64::from_bits(u64::from_be_bytes(self.be(at, N)?))),
            0xca => Ok(widen_f32(u32::from_be_bytes(self.be(at, N)?))),
            m => match self.int_after(m, at, N)? {
                // Through i64/u64: an i128 to f64 conversion is a software
                // routine, and every MessagePack integer fits one of them.
                Ok(v) => Ok(match i64::try_from(v) {
                    Ok(i) => i as f64,
                    Err(_) => v as u64 as f64,
                }),
                Err(m) => Err(self.unexpected(Expected::Number, m, at)),
            },
        }
    }

    #[inline(always)]
    pub(crate) fn boolean(&mut self) -> Result<bool, DecodeError> {
        let at = self.pos;
        match self.byte(Expected::Bool)? {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            m => Err(self.unexpected(Expected::Bool, m, at)),
        }
    }
}

/// The integer at the start of `b` and its size in bytes; `None` if `b`
/// does not start with one.
pub(crate) fn leading_int(b: &[u8]) -> Option<(Int, usize)> {
    let mut r = Reader::validated(b, 0);
    let v = r.int().ok()?;
    Some((v, r.pos()))
}

/// Whether `raw` is exactly one complete MessagePack value.
pub(crate) fn is_one_value(raw: &[u8]) -> bool {
    let mut r = Reader::new(raw, usize::MAX, usize::MAX);
    r.skip().is_ok() && r.pos() == raw.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float32_widens_bit_exactly_nan_included() {
        for bits in [
            0x0000_0000u32,
            0x8000_0000,
            0x3fc0_0000, // 1.5
            0x7f80_0000, // inf
            0xff80_0000, // -inf
            0x0000_0001, // the smallest subnormal
        ] {
            let f = f32::from_bits(bits);
            assert_eq!(
                widen_f32(bits).to_bits(),
                f64::from(f).to_bits(),
                "{bits:08x}"
            );
        }
        // NaNs: quiet, with the sign and the payload kept.
        assert_eq!(widen_f32(0x7fc0_0000).to_bits(), 0x7ff8_0000_0000_0000);
        assert_eq!(widen_f32(0xffc0_0000).to_bits(), 0xfff8_0000_0000_0000);
        assert_eq!(widen_f32(0x7f80_0001).to_bits(), 0x7ff8_0000_2000_0000);
        assert_eq!(widen_f32(0xffc0_1234).to_bits(), 0xfff8_0246_8000_0000);
        // What the x86 hardware conversion gives.
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        for bits in [0x7fc0_0000u32, 0xffc0_0000, 0x7f80_0001, 0xffc0_1234] {
            let hw = f64::from(core::hint::black_box(f32::from_bits(bits)));
            assert_eq!(widen_f32(bits).to_bits(), hw.to_bits(), "{bits:08x}");
        }
    }
}

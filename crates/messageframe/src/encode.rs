//! The encoder: a frame into MessagePack bytes, exactly as the C++ library
//! (msgpack-c) writes them.
//!
//! The MessagePack primitives are in [`crate::wire::write`]; this module
//! holds the frame's layout and msgpack-c's double rule (integral doubles as
//! integers), which is not rmp's. In the benchmark crate the raw-MessagePack
//! rows' serialize phase is rmp's writer on the same parameters (without
//! header and tags); this encoder's serialize phase is at or below it
//! (docs/performance.md, per-phase table).

use crate::error::EncodeError;
use crate::frame::Frame;
use crate::header::Header;
use crate::params::Slot;
use crate::value::{TAG_BOOL, TAG_DOUBLE, TAG_INT, TAG_STRING};
use bytes::Bytes;

use crate::wire::write::{
    append, int_len, len_prefix_len, uint_len, write_array_len, write_bin_len, write_int,
    write_map_len, write_str, write_uint, Out,
};

/// How msgpack-c ≥ 4.1.2 puts a double on the wire.
pub(crate) enum DoubleRepr {
    Uint(u64),
    Int(i64),
    Float(f64),
}

/// Integral values become integers, everything else float64 — except `-0.0`
/// (kept as float64 so its sign survives) and values ≥ 2^64 (float64; C++
/// converts those with undefined behaviour), or below `i64::MIN`.
///
/// Decided from the bits (exponent and fraction) with integer operations
/// only: a microcontroller without a double-precision FPU (Cortex-M4F)
/// would otherwise link about 1 KB of software floating point for the
/// comparisons and conversions (docs/performance.md, "Code size").
#[inline]
pub(crate) fn double_repr(v: f64) -> DoubleRepr {
    let bits = v.to_bits();
    let negative = bits >> 63 != 0;
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let fraction = bits & ((1 << 52) - 1);
    if exponent < 0 {
        // Below 1 in magnitude (or a subnormal): integral only as +0.0.
        return if bits == 0 {
            DoubleRepr::Uint(0)
        } else {
            DoubleRepr::Float(v)
        };
    }
    // Infinities and NaNs (exponent 1024), and magnitudes from 2^64 up.
    if exponent >= 64 {
        return DoubleRepr::Float(v);
    }
    let significand = fraction | 1 << 52;
    let magnitude = if exponent >= 52 {
        significand << (exponent - 52)
    } else {
        let drop = 52 - exponent;
        if significand & ((1 << drop) - 1) != 0 {
            return DoubleRepr::Float(v);
        }
        significand >> drop
    };
    if !negative {
        DoubleRepr::Uint(magnitude)
    } else if magnitude <= 1 << 63 {
        DoubleRepr::Int((magnitude as i64).wrapping_neg())
    } else {
        DoubleRepr::Float(v)
    }
}

pub(crate) fn write_header(out: &mut impl Out, h: &Header) {
    // The common shape: a millisecond timestamp (uint64) and small ids, all
    // positive fixints: one write of 18 bytes.
    let small = [
        h.counter(),
        u64::from(h.source()),
        u64::from(h.target()),
        u64::from(h.message_id() as u32),
        u64::from(h.message_type() as u32),
        u64::from(h.version()),
        u64::from(h.flags()),
    ];
    if h.timestamp() > u64::from(u32::MAX) && small.iter().all(|&v| v < 0x80) {
        let t = h.timestamp().to_be_bytes();
        out.extend_from_slice(&[
            0x98,
            0xcf,
            t[0],
            t[1],
            t[2],
            t[3],
            t[4],
            t[5],
            t[6],
            t[7],
            small[0] as u8,
            small[1] as u8,
            small[2] as u8,
            small[3] as u8,
            small[4] as u8,
            small[5] as u8,
            small[6] as u8,
        ]);
        return;
    }
    out.push(0x98);
    write_uint(out, h.timestamp());
    write_uint(out, h.counter());
    write_uint(out, u64::from(h.source()));
    write_uint(out, u64::from(h.target()));
    write_int(out, i64::from(h.message_id()));
    write_int(out, i64::from(h.message_type()));
    write_uint(out, u64::from(h.version()));
    write_uint(out, u64::from(h.flags()));
}

/// The longest string, bin, array or map MessagePack can express (its
/// 32-bit length prefix).
const MAX_LEN: usize = u32::MAX as usize;

/// Upper bounds of a frame's encoded size, so that the output is reserved
/// once: in all, and without the attachments' data (for writers that send
/// the data from where it is).
#[derive(Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) total: usize,
    // Used by the writers that send attachment data from where it is
    // (`std::io`, tokio), not by a `no_std` build.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) without_data: usize,
}

/// Checks that MessagePack can express the frame, and returns the upper
/// bounds of its encoded size.
///
/// Parameters need no check of their own: a frame's text and raw arenas
/// hold less than 4 GiB (their offsets are `u32`), so no key, string or
/// unknown value is longer than `str32` can say. Attachments, kept as
/// `Bytes` of any size, are checked one by one; the counts once.
pub(crate) fn max_encoded_len(frame: &Frame) -> Result<Bounds, EncodeError> {
    let params = frame.params();
    let attachments = frame.attachment_slots();
    // One comparison for both counts: both are below 2^32 exactly when
    // their OR is.
    if (params.len() | attachments.len()) > MAX_LEN {
        return Err(too_many(params.len(), attachments.len()));
    }
    // Header ≤ 2 + 8 * 9; map and array headers ≤ 5 each; per entry: key
    // header 5, `0x92` + tag 2, value header or scalar 9 (an unknown value's
    // tag and value are its bytes in the raw arena); per attachment: pair 1,
    // name header 5, bin header 5. The parameters' part cannot overflow: an
    // entry (24 bytes) and the arenas live in this address space. The
    // attachments may share one buffer many times, so on a 32-bit target
    // their sizes can add up past `usize::MAX`: they saturate, and reserving
    // `usize::MAX` bytes fails.
    let mut n = 80 + params.text().len() + params.raw().len() + params.len() * 17;
    n = n.saturating_add(frame.attachment_names_len());
    let mut data = 0usize;
    for (index, a) in attachments.iter().enumerate() {
        let len = a.data.len();
        if len > MAX_LEN {
            return Err(EncodeError::AttachmentTooLarge { index, len });
        }
        let name = frame.attachment_name(a).len();
        if name > MAX_LEN {
            return Err(EncodeError::AttachmentNameTooLarge { index, len: name });
        }
        n = n.saturating_add(11);
        data = data.saturating_add(len);
    }
    Ok(Bounds {
        total: n.saturating_add(data),
        without_data: n,
    })
}

/// Which count is past what MessagePack can say.
#[cold]
fn too_many(params: usize, attachments: usize) -> EncodeError {
    if params > MAX_LEN {
        EncodeError::TooManyParams { count: params }
    } else {
        EncodeError::TooManyAttachments { count: attachments }
    }
}

/// Makes room for `n` more bytes, or says the frame is too large for memory
/// (`try_reserve`, not `reserve`: an error, not a panic or an abort).
#[inline]
fn reserve(out: &mut impl Out, n: usize) -> Result<(), EncodeError> {
    if out.try_reserve(n) {
        Ok(())
    } else {
        Err(EncodeError::OutOfMemory { needed: n })
    }
}

/// Appends the encoded frame to `out`; on error `out` is unchanged.
pub(crate) fn encode_frame(frame: &Frame, out: &mut impl Out) -> Result<(), EncodeError> {
    let bounds = max_encoded_len(frame)?;
    reserve(out, bounds.total)?;
    write_frame(frame, out, |out, data| append(out, data));
    Ok(())
}

/// [`encode_frame`], with each attachment's data handed to `data` right
/// after its bin header instead of copied into `out`, so that a writer can
/// send it from where it is; only the rest is reserved in `out`.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) fn encode_frame_with<O: Out>(
    frame: &Frame,
    out: &mut O,
    data: impl FnMut(&mut O, &Bytes),
) -> Result<(), EncodeError> {
    let bounds = max_encoded_len(frame)?;
    reserve(out, bounds.without_data)?;
    write_frame(frame, out, data);
    Ok(())
}

/// The `[tag, value]` pair of an Int64.
#[inline(always)]
pub(crate) fn write_int_pair(out: &mut impl Out, v: i64) {
    if (0..0x80).contains(&v) {
        out.extend_from_slice(&[0x92, TAG_INT, v as u8]);
    } else {
        out.extend_from_slice(&[0x92, TAG_INT]);
        write_int(out, v);
    }
}

/// The `[tag, value]` pair of a Double, in msgpack-c's form
/// ([`double_repr`]).
#[inline(always)]
pub(crate) fn write_double_pair(out: &mut impl Out, v: f64) {
    match double_repr(v) {
        DoubleRepr::Float(f) => {
            let b = f.to_bits().to_be_bytes();
            out.extend_from_slice(&[
                0x92, TAG_DOUBLE, 0xcb, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ]);
        }
        DoubleRepr::Uint(u) => {
            out.extend_from_slice(&[0x92, TAG_DOUBLE]);
            write_uint(out, u);
        }
        DoubleRepr::Int(i) => {
            out.extend_from_slice(&[0x92, TAG_DOUBLE]);
            write_int(out, i);
        }
    }
}

/// The `[tag, value]` pair of a Bool.
#[inline(always)]
pub(crate) fn write_bool_pair(out: &mut impl Out, v: bool) {
    out.extend_from_slice(&[0x92, TAG_BOOL, if v { 0xc3 } else { 0xc2 }]);
}

/// The size of [`write_double_pair`]'s bytes.
pub(crate) fn double_pair_len(v: f64) -> usize {
    2 + match double_repr(v) {
        DoubleRepr::Uint(u) => uint_len(u),
        DoubleRepr::Int(i) => int_len(i),
        DoubleRepr::Float(_) => 9,
    }
}

/// The `[tag, value]` pair of a String.
#[inline(always)]
pub(crate) fn write_str_pair(out: &mut impl Out, s: &[u8]) {
    out.extend_from_slice(&[0x92, TAG_STRING]);
    write_str(out, s);
}

/// Writes a frame that [`max_encoded_len`] accepted.
#[inline]
fn write_frame<O: Out>(frame: &Frame, out: &mut O, mut data: impl FnMut(&mut O, &Bytes)) {
    out.push(0x93);
    write_header(out, frame.header());

    let params = frame.params();
    write_map_len(out, params.len());
    let text = params.text().as_bytes();
    for e in params.entries() {
        write_str(out, e.key_in(text));
        match e.slot {
            Slot::Int(v) => write_int_pair(out, v.i64()),
            Slot::Double(v) => write_double_pair(out, v.f64()),
            Slot::Bool(v) => write_bool_pair(out, v),
            Slot::Str { start, len } => {
                let start = start as usize;
                write_str_pair(out, &text[start..start + len as usize]);
            }
            Slot::Unknown { start, len } => {
                // The arena holds the tag, already in its shortest form,
                // and the value: the pair's bytes after its `0x92`.
                out.push(0x92);
                out.extend_from_slice(params.unknown_wire(start, len));
            }
        }
    }

    let attachments = frame.attachment_slots();
    write_array_len(out, attachments.len());
    for a in attachments {
        out.push(0x92);
        write_str(out, frame.attachment_name(a).as_bytes());
        write_bin_len(out, a.data.len());
        data(out, &a.data);
    }
}

/// Exact size of a header's array marker and 8 integers.
pub(crate) fn header_len(h: &Header) -> usize {
    1 + uint_len(h.timestamp())
        + uint_len(h.counter())
        + uint_len(u64::from(h.source()))
        + uint_len(u64::from(h.target()))
        + int_len(i64::from(h.message_id()))
        + int_len(i64::from(h.message_type()))
        + uint_len(u64::from(h.version()))
        + uint_len(u64::from(h.flags()))
}

/// Exact encoded size of a frame, without encoding it (saturating at
/// `usize::MAX`, which only a 32-bit target can reach: see
/// [`EncodeError::OutOfMemory`]).
pub(crate) fn encoded_len(frame: &Frame) -> usize {
    let mut n = 1 + header_len(frame.header());
    let params = frame.params();
    n += len_prefix_len(params.len(), Some(15), false);
    let text = params.text().as_bytes();
    for e in params.entries() {
        let key = e.key_in(text).len();
        n += len_prefix_len(key, Some(31), true) + key + 2;
        n += match e.slot {
            Slot::Int(v) => int_len(v.i64()),
            Slot::Double(v) => match double_repr(v.f64()) {
                DoubleRepr::Uint(u) => uint_len(u),
                DoubleRepr::Int(i) => int_len(i),
                DoubleRepr::Float(_) => 9,
            },
            Slot::Bool(_) => 1,
            Slot::Str { len, .. } => len_prefix_len(len as usize, Some(31), true) + len as usize,
            // The tag and value bytes, less the one tag byte counted above.
            Slot::Unknown { len, .. } => len as usize - 1,
        };
    }
    // Parameters live in this address space, attachments may share one
    // buffer many times: their sizes are added with saturation.
    let attachments = frame.attachment_slots();
    n += len_prefix_len(attachments.len(), Some(15), false);
    for a in attachments {
        let name = frame.attachment_name(a).len();
        let pair =
            (1 + len_prefix_len(name, Some(31), true) + len_prefix_len(a.data.len(), None, true))
                .saturating_add(name)
                .saturating_add(a.data.len());
        n = n.saturating_add(pair);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::prelude::*;

    /// Every header field at each boundary of MessagePack's integer forms
    /// (the rest at another boundary, so that both of `write_header`'s paths
    /// and every mix of widths run) is written as rmp's shortest-form writers
    /// write it: msgpack-c's bytes.
    #[test]
    fn header_fields_are_written_in_their_shortest_forms() {
        let unsigned: [u64; 12] = [
            0,
            0x7f,
            0x80,
            0xff,
            0x100,
            0xffff,
            0x1_0000,
            0xffff_ffff,
            0x1_0000_0000,
            1_733_390_000_000,
            u64::MAX - 1,
            u64::MAX,
        ];
        let signed: [i64; 14] = [
            0,
            0x7f,
            0x80,
            0xffff,
            0x1_0000,
            -1,
            -32,
            -33,
            -128,
            -129,
            -32768,
            -32769,
            i64::from(i32::MIN),
            i64::from(i32::MAX),
        ];
        // The common shape first: a millisecond timestamp, small ids.
        let mut headers = vec![Header::from_fields(1_733_390_000_000, 5, 1, 2, 7, 3, 1, 0)];
        for (i, &u) in unsigned.iter().enumerate() {
            for (j, &v) in signed.iter().enumerate() {
                let other = unsigned[(i + j + 1) % unsigned.len()];
                headers.push(Header::from_fields(
                    u,
                    other,
                    u as u32,
                    other as u32,
                    v as i32,
                    (-v) as i32,
                    u as u16,
                    other as u16,
                ));
            }
        }
        assert_eq!(headers.len(), 1 + 12 * 14);
        for h in headers {
            let mut want = vec![0x98];
            rmp::encode::write_uint(&mut want, h.timestamp()).unwrap();
            rmp::encode::write_uint(&mut want, h.counter()).unwrap();
            rmp::encode::write_uint(&mut want, u64::from(h.source())).unwrap();
            rmp::encode::write_uint(&mut want, u64::from(h.target())).unwrap();
            rmp::encode::write_sint(&mut want, i64::from(h.message_id())).unwrap();
            rmp::encode::write_sint(&mut want, i64::from(h.message_type())).unwrap();
            rmp::encode::write_uint(&mut want, u64::from(h.version())).unwrap();
            rmp::encode::write_uint(&mut want, u64::from(h.flags())).unwrap();
            let mut got = Vec::new();
            write_header(&mut got, &h);
            assert_eq!(got, want, "{h:?}");
        }
    }

    /// 2^64 as a double: the first value msgpack-c would convert with
    /// undefined behaviour; it and everything above stay float64.
    const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

    /// The rule as it was written with float comparisons and conversions.
    fn by_floats(v: f64) -> DoubleRepr {
        if (0.0..TWO_POW_64).contains(&v) && !(v == 0.0 && v.is_sign_negative()) {
            let u = v as u64;
            if u as f64 == v {
                return DoubleRepr::Uint(u);
            }
        } else if v < 0.0 && v >= i64::MIN as f64 {
            let i = v as i64;
            if i as f64 == v {
                return DoubleRepr::Int(i);
            }
        }
        DoubleRepr::Float(v)
    }

    fn same(a: DoubleRepr, b: DoubleRepr) -> bool {
        match (a, b) {
            (DoubleRepr::Uint(a), DoubleRepr::Uint(b)) => a == b,
            (DoubleRepr::Int(a), DoubleRepr::Int(b)) => a == b,
            (DoubleRepr::Float(a), DoubleRepr::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }

    #[test]
    fn the_bit_rule_is_the_float_rule() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            10.0,
            1e19,
            -1e19,
            TWO_POW_64,
            -TWO_POW_64,
            TWO_POW_64 - 4096.0,
            i64::MIN as f64,
            -9_223_372_036_854_777_856.0,
            9_223_372_036_854_775_808.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            4_503_599_627_370_496.5,
            4_503_599_627_370_497.0,
            9_007_199_254_740_993.0,
        ];
        // Every exponent, with a random fraction and the same fraction cut
        // to an integral value, both signs.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let per = if cfg!(miri) { 1 } else { 4 };
        for e in 0..2047u64 {
            for _ in 0..per {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let fraction = x & ((1 << 52) - 1);
                let keep = (e.saturating_sub(1023)).min(52);
                let integral = fraction >> (52 - keep) << (52 - keep);
                for sign in [0, 1u64 << 63] {
                    values.push(f64::from_bits(sign | e << 52 | fraction));
                    values.push(f64::from_bits(sign | e << 52 | integral));
                }
            }
        }
        for v in values {
            assert!(
                same(double_repr(v), by_floats(v)),
                "{v:e} ({:#x})",
                v.to_bits()
            );
        }
    }
}

//! The encoder: a frame into MessagePack bytes, exactly as the C++ library
//! (msgpack-c) writes them.
//!
//! The MessagePack primitives are written here by hand rather than through
//! `rmp::encode`: every element is a marker plus a big-endian payload pushed
//! into a `Vec` whose capacity was reserved once for the whole frame, and the
//! double rule (integral doubles as integers) is msgpack-c's, not rmp's. In
//! the benchmark crate the raw-MessagePack rows' serialize phase is rmp's
//! writer on the same parameters (without header and tags); this encoder's
//! serialize phase is at or below it (docs/performance.md, per-phase table).

use crate::frame::Frame;
use crate::header::Header;
use crate::params::Slot;
use crate::value::{TAG_BOOL, TAG_DOUBLE, TAG_INT, TAG_STRING};

#[inline(always)]
pub(crate) fn write_uint(out: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        out.push(v as u8);
    } else if v <= u64::from(u8::MAX) {
        out.extend_from_slice(&[0xcc, v as u8]);
    } else if v <= u64::from(u16::MAX) {
        let b = (v as u16).to_be_bytes();
        out.extend_from_slice(&[0xcd, b[0], b[1]]);
    } else if v <= u64::from(u32::MAX) {
        let b = (v as u32).to_be_bytes();
        out.extend_from_slice(&[0xce, b[0], b[1], b[2], b[3]]);
    } else {
        out.push(0xcf);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Shortest form; non-negative values use the unsigned markers (msgpack-c).
#[inline(always)]
pub(crate) fn write_int(out: &mut Vec<u8>, v: i64) {
    if v >= 0 {
        write_uint(out, v as u64);
    } else if v >= -32 {
        out.push(v as u8);
    } else if v >= i64::from(i8::MIN) {
        out.extend_from_slice(&[0xd0, v as u8]);
    } else if v >= i64::from(i16::MIN) {
        let b = (v as i16).to_be_bytes();
        out.extend_from_slice(&[0xd1, b[0], b[1]]);
    } else if v >= i64::from(i32::MIN) {
        let b = (v as i32).to_be_bytes();
        out.extend_from_slice(&[0xd2, b[0], b[1], b[2], b[3]]);
    } else {
        out.push(0xd3);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// 2^64 as a double: the first value msgpack-c would convert with undefined
/// behaviour. We keep it (and everything above) as float64.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// How msgpack-c ≥ 4.1.2 puts a double on the wire.
enum DoubleRepr {
    Uint(u64),
    Int(i64),
    Float(f64),
}

/// Integral values become integers, everything else float64 — except `-0.0`
/// (kept as float64 so its sign survives) and values ≥ 2^64 (float64; C++
/// converts those with undefined behaviour).
#[inline]
fn double_repr(v: f64) -> DoubleRepr {
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

#[inline]
fn write_len(
    out: &mut Vec<u8>,
    len: usize,
    fix: Option<(u8, usize)>,
    m8: Option<u8>,
    m16: u8,
    m32: u8,
) {
    match fix {
        Some((base, max)) if len <= max => return out.push(base | len as u8),
        _ => {}
    }
    match m8 {
        Some(m) if len <= usize::from(u8::MAX) => return out.extend_from_slice(&[m, len as u8]),
        _ => {}
    }
    if len <= usize::from(u16::MAX) {
        let b = (len as u16).to_be_bytes();
        out.extend_from_slice(&[m16, b[0], b[1]]);
    } else {
        // Lengths are bounded to u32 where they enter a frame (add_attachment,
        // the text arena), so this conversion cannot truncate.
        let b = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
        out.extend_from_slice(&[m32, b[0], b[1], b[2], b[3]]);
    }
}

#[inline(always)]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    let n = s.len();
    // Keys and most string values are fixstrs: one marker byte. Up to 7
    // bytes, marker and string go out as one fixed-size 8-byte write (then
    // the length is cut back), not a call to `memcpy`.
    if n < 8 && out.capacity() - out.len() >= 8 {
        let word = 0xa0 | n as u64 | crate::key::le_value(s) << 8;
        let len = out.len();
        out.extend_from_slice(&word.to_le_bytes());
        out.truncate(len + 1 + n);
        return;
    }
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else {
        write_str_len(out, n);
    }
    out.extend_from_slice(s);
}

#[inline(never)]
fn write_str_len(out: &mut Vec<u8>, len: usize) {
    write_len(out, len, Some((0xa0, 31)), Some(0xd9), 0xda, 0xdb);
}

#[inline]
pub(crate) fn write_bin(out: &mut Vec<u8>, b: &[u8]) {
    write_len(out, b.len(), None, Some(0xc4), 0xc5, 0xc6);
    out.extend_from_slice(b);
}

#[inline]
pub(crate) fn write_array_len(out: &mut Vec<u8>, len: usize) {
    write_len(out, len, Some((0x90, 15)), None, 0xdc, 0xdd);
}

#[inline]
pub(crate) fn write_map_len(out: &mut Vec<u8>, len: usize) {
    write_len(out, len, Some((0x80, 15)), None, 0xde, 0xdf);
}

pub(crate) fn write_header(out: &mut Vec<u8>, h: &Header) {
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

/// Upper bound of the encoded size, so that the output is reserved once.
pub(crate) fn max_encoded_len(frame: &Frame) -> usize {
    let params = frame.params();
    // Header ≤ 2 + 8 * 9; map and array headers ≤ 5 each; per entry: key
    // header 5, `0x92` + tag 2, value header or scalar 9 (an unknown value's
    // tag ≤ 9 is covered by the 8 tag bytes it takes in the raw arena plus 1);
    // per attachment: pair 1, name header 5, bin header 5.
    80 + params.text().len()
        + params.raw().len()
        + params.len() * 17
        + frame
            .attachment_slots()
            .iter()
            .map(|a| a.data.len() + 11)
            .sum::<usize>()
        + frame.attachment_names_len()
}

pub(crate) fn encode_frame(frame: &Frame, out: &mut Vec<u8>) {
    out.reserve(max_encoded_len(frame));
    out.push(0x93);
    write_header(out, frame.header());

    let params = frame.params();
    write_map_len(out, params.len());
    for e in params.entries() {
        write_str(out, params.key_bytes(e));
        match e.slot {
            Slot::Int(v) => {
                if (0..0x80).contains(&v) {
                    out.extend_from_slice(&[0x92, TAG_INT, v as u8]);
                } else {
                    out.extend_from_slice(&[0x92, TAG_INT]);
                    write_int(out, v);
                }
            }
            Slot::Double(v) => match double_repr(v) {
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
            },
            Slot::Bool(v) => {
                out.extend_from_slice(&[0x92, TAG_BOOL, if v { 0xc3 } else { 0xc2 }]);
            }
            Slot::Str { start, len } => {
                out.extend_from_slice(&[0x92, TAG_STRING]);
                let start = start as usize;
                write_str(out, &params.text().as_bytes()[start..start + len as usize]);
            }
            Slot::Unknown { start, len } => {
                let (tag, raw) = params.unknown(start, len);
                out.push(0x92);
                write_int(out, tag);
                out.extend_from_slice(raw);
            }
        }
    }

    let attachments = frame.attachment_slots();
    write_array_len(out, attachments.len());
    for a in attachments {
        out.push(0x92);
        write_str(out, frame.attachment_name(a).as_bytes());
        write_bin(out, &a.data);
    }
}

/// Exact encoded size of a frame, without encoding it.
pub(crate) fn encoded_len(frame: &Frame) -> usize {
    fn uint_len(v: u64) -> usize {
        match v {
            0..=0x7f => 1,
            0x80..=0xff => 2,
            0x100..=0xffff => 3,
            0x1_0000..=0xffff_ffff => 5,
            _ => 9,
        }
    }
    fn int_len(v: i64) -> usize {
        if v >= 0 {
            uint_len(v as u64)
        } else if v >= -32 {
            1
        } else if v >= i64::from(i8::MIN) {
            2
        } else if v >= i64::from(i16::MIN) {
            3
        } else if v >= i64::from(i32::MIN) {
            5
        } else {
            9
        }
    }
    fn len_prefix(len: usize, fix_max: Option<usize>, has8: bool) -> usize {
        if fix_max.is_some_and(|max| len <= max) {
            1
        } else if has8 && len <= 0xff {
            2
        } else if len <= 0xffff {
            3
        } else {
            5
        }
    }
    let h = frame.header();
    let mut n = 2
        + uint_len(h.timestamp())
        + uint_len(h.counter())
        + uint_len(u64::from(h.source()))
        + uint_len(u64::from(h.target()))
        + int_len(i64::from(h.message_id()))
        + int_len(i64::from(h.message_type()))
        + uint_len(u64::from(h.version()))
        + uint_len(u64::from(h.flags()));
    let params = frame.params();
    n += len_prefix(params.len(), Some(15), false);
    for e in params.entries() {
        let key = params.key_bytes(e).len();
        n += len_prefix(key, Some(31), true) + key + 2;
        n += match e.slot {
            Slot::Int(v) => int_len(v),
            Slot::Double(v) => match double_repr(v) {
                DoubleRepr::Uint(u) => uint_len(u),
                DoubleRepr::Int(i) => int_len(i),
                DoubleRepr::Float(_) => 9,
            },
            Slot::Bool(_) => 1,
            Slot::Str { len, .. } => len_prefix(len as usize, Some(31), true) + len as usize,
            Slot::Unknown { start, len } => {
                let (tag, raw) = params.unknown(start, len);
                int_len(tag) - 1 + raw.len()
            }
        };
    }
    let attachments = frame.attachment_slots();
    n += len_prefix(attachments.len(), Some(15), false);
    for a in attachments {
        let name = frame.attachment_name(a).len();
        n += 1
            + len_prefix(name, Some(31), true)
            + name
            + len_prefix(a.data.len(), None, true)
            + a.data.len();
    }
    n
}

//! An independent reading of a frame, for the `differential` fuzz target.
//!
//! MessagePack is read by rmpv (each element into an owned `rmpv::Value`)
//! and rmp (the array and map headers of the frame's skeleton, whose
//! elements are then read one by one, so that each element's byte range is
//! known); the frame layout is interpreted here from SPEC sections 2 and 3
//! alone. Nothing here uses messageframe: no reader, walk, UTF-8 check or
//! integer conversion is shared with the decoder under test. The reference
//! encoder ([`encode`]) writes SPEC section 2's forms with rmp's writers.
//!
//! The rules as read from the spec:
//! - the frame is an array of at least 3 elements, and nothing follows it;
//! - the header an array of at least 8 integers fitting `u64, u64, u32, u32,
//!   i32, i32, u16, u16`;
//! - the parameters a map of UTF-8 string keys to arrays of at least 2
//!   elements, an integer tag first: 10 takes an integer fitting `i64`, 20 a
//!   float64, float32 or any integer (converted), 30 a UTF-8 string, 40 a
//!   bool; any other integer tag, `u64` range included, keeps its value as
//!   raw bytes, whatever it is;
//! - the attachments an array of arrays of at least 2 elements, a UTF-8
//!   string name and bin data;
//! - extra elements in the frame, header, value and attachment arrays are
//!   any MessagePack values, skipped;
//! - a key splits at its first U+001F into device and parameter; without
//!   one, the device is `""` and the whole key the parameter; duplicate
//!   `(device, parameter)` pairs are kept, the first one wins lookups.
//!
//! rmpv deviates from MessagePack in one way: it reads the reserved marker
//! `0xc1` (never used, so invalid) as nil. The reference finds reserved
//! markers itself, by substitution ([`reserved_marker`]), and rejects them.

use std::collections::HashSet;
use std::ops::Range;

use rmpv::Value;

/// How deep rmpv may recurse (it counts two per level of array nesting, so
/// this is 128 levels). Deeper input makes the reading
/// [`Reading::Undecided`]: rmpv recurses, and in a debug build each level
/// takes about 4 KiB of stack, so its default (1,024) overflows the 2 MiB
/// stack of a test thread.
const MAX_DEPTH: usize = 256;

/// The wire tags of the known value types.
const TAG_INT: i128 = 10;
const TAG_DOUBLE: i128 = 20;
const TAG_STRING: i128 = 30;
const TAG_BOOL: i128 = 40;

/// The eight header fields, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefHeader {
    /// Field 0, `u64`.
    pub timestamp: u64,
    /// Field 1, `u64`.
    pub counter: u64,
    /// Field 2, `u32`.
    pub source: u32,
    /// Field 3, `u32`.
    pub target: u32,
    /// Field 4, `i32`.
    pub message_id: i32,
    /// Field 5, `i32`.
    pub message_type: i32,
    /// Field 6, `u16`.
    pub version: u16,
    /// Field 7, `u16`.
    pub flags: u16,
}

/// A parameter value as the spec defines it.
#[derive(Debug, Clone)]
pub enum RefValue {
    /// Tag 10.
    Int(i64),
    /// Tag 20, converted to `f64` if it arrived as float32 or an integer.
    Double(f64),
    /// Tag 30.
    Str(String),
    /// Tag 40.
    Bool(bool),
    /// Any other tag, with the value's bytes exactly as they arrived.
    Unknown {
        /// The tag, any MessagePack integer.
        tag: i128,
        /// The value element's bytes.
        raw: Vec<u8>,
    },
}

/// Doubles compare by bits, except that any NaN equals any NaN (the payload
/// of a float32 NaN converted to `f64` is not specified by Rust).
pub fn same_double(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// One parameter.
#[derive(Debug, Clone)]
pub struct RefParam {
    /// The flat key as it arrived.
    pub key: String,
    /// Its value.
    pub value: RefValue,
}

impl RefParam {
    /// `(device, parameter)`: the key split at its first U+001F, or `""` and
    /// the whole key.
    pub fn parts(&self) -> (&str, &str) {
        self.key.split_once('\u{1f}').unwrap_or(("", &self.key))
    }
}

/// A frame as the reference reads it.
#[derive(Debug, Clone)]
pub struct RefFrame {
    /// The header.
    pub header: RefHeader,
    /// Every parameter, in wire order, duplicates included.
    pub params: Vec<RefParam>,
    /// Every attachment, `(name, data)`, in wire order.
    pub attachments: Vec<(String, Vec<u8>)>,
}

impl RefFrame {
    /// The index of the first parameter whose `(device, parameter)` occurred
    /// before, if any.
    pub fn first_duplicate(&self) -> Option<usize> {
        let mut seen = HashSet::new();
        self.params.iter().position(|p| !seen.insert(p.parts()))
    }
}

/// The reference's verdict on some bytes.
#[derive(Debug)]
pub enum Reading {
    /// One valid frame, exactly.
    Valid(RefFrame),
    /// Not a valid frame: the first violation found, and where its element
    /// starts.
    Invalid {
        /// Offset of the element.
        at: usize,
        /// What is wrong.
        why: String,
    },
    /// Nested deeper than rmpv reads ([`MAX_DEPTH`]): no verdict.
    Undecided,
}

/// Why reading stopped.
enum Stop {
    Invalid(usize, String),
    Undecided,
}

type Read<T> = Result<T, Stop>;

fn invalid<T>(at: usize, why: impl Into<String>) -> Read<T> {
    Err(Stop::Invalid(at, why.into()))
}

/// A position in the input; every element is read by rmp or rmpv from there.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// One whole element, by rmpv, and its byte range.
    fn value(&mut self, what: &str) -> Read<(Value, Range<usize>)> {
        let start = self.pos;
        let mut rd = &self.data[start..];
        match rmpv::decode::read_value_with_max_depth(&mut rd, MAX_DEPTH) {
            Ok(v) => {
                self.pos = self.data.len() - rd.len();
                if let Some(k) = reserved_marker(&self.data[start..self.pos], &v)? {
                    return invalid(start + k, format!("{what}: reserved marker 0xc1"));
                }
                Ok((v, start..self.pos))
            }
            Err(rmpv::decode::Error::DepthLimitExceeded) => Err(Stop::Undecided),
            Err(e) => invalid(start, format!("{what}: {e}")),
        }
    }

    /// Skips `n` elements of any type.
    fn skip(&mut self, n: usize, what: &str) -> Read<()> {
        for _ in 0..n {
            self.value(what)?;
        }
        Ok(())
    }

    /// An array header with at least `min` elements; returns the count.
    fn array(&mut self, min: usize, what: &str) -> Read<usize> {
        let start = self.pos;
        let mut rd = &self.data[start..];
        let n = rmp::decode::read_array_len(&mut rd)
            .map_err(|e| Stop::Invalid(start, format!("{what}: not an array header: {e:?}")))?
            as usize;
        self.pos = self.data.len() - rd.len();
        if n < min {
            return invalid(
                start,
                format!("{what}: {n} elements, at least {min} needed"),
            );
        }
        Ok(n)
    }

    /// A map header; returns the count.
    fn map(&mut self, what: &str) -> Read<usize> {
        let start = self.pos;
        let mut rd = &self.data[start..];
        let n = rmp::decode::read_map_len(&mut rd)
            .map_err(|e| Stop::Invalid(start, format!("{what}: not a map header: {e:?}")))?;
        self.pos = self.data.len() - rd.len();
        Ok(n as usize)
    }

    /// An integer element, any width.
    fn int(&mut self, what: &str) -> Read<(i128, usize)> {
        let (v, range) = self.value(what)?;
        match integer(&v) {
            Some(i) => Ok((i, range.start)),
            None => invalid(range.start, format!("{what}: not an integer: {}", kind(&v))),
        }
    }

    /// An integer element that must fit `T`.
    fn int_as<T: TryFrom<i128>>(&mut self, what: &str) -> Read<T> {
        let (i, at) = self.int(what)?;
        T::try_from(i).or_else(|_| invalid(at, format!("{what}: {i} out of range")))
    }

    /// A UTF-8 string element.
    fn string(&mut self, what: &str) -> Read<String> {
        let (v, range) = self.value(what)?;
        match v {
            Value::String(s) => match s.into_str() {
                Some(s) => Ok(s),
                None => invalid(range.start, format!("{what}: invalid UTF-8")),
            },
            other => invalid(
                range.start,
                format!("{what}: not a string: {}", kind(&other)),
            ),
        }
    }
}

/// Most `0xc1` bytes [`reserved_marker`] probes in one element; more make
/// the reading [`Reading::Undecided`] (each probe reads the element again).
const MAX_PROBES: usize = 64;

/// Where the first reserved marker `0xc1` of an element is, if it has one.
///
/// rmpv reads `0xc1` as nil, so only an element holding a nil can hide one.
/// Each `0xc1` byte of it is replaced by `0xc0` (nil) in turn: if rmpv then
/// reads the same value (compared by its encoding, so doubles by bits), the
/// byte was a marker; a data byte changed would change a number, a string,
/// bin or ext data, an ext type or a length.
fn reserved_marker(bytes: &[u8], v: &Value) -> Read<Option<usize>> {
    if !bytes.contains(&0xc1) || !has_nil(v) {
        return Ok(None);
    }
    let encoding = |v: &Value| {
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, v).expect("writing to a Vec");
        out
    };
    let original = encoding(v);
    let mut copy = bytes.to_vec();
    let positions: Vec<usize> = (0..bytes.len()).filter(|&k| bytes[k] == 0xc1).collect();
    if positions.len() > MAX_PROBES {
        return Err(Stop::Undecided);
    }
    for k in positions {
        copy[k] = 0xc0;
        let mut rd = &copy[..];
        if let Ok(w) = rmpv::decode::read_value_with_max_depth(&mut rd, MAX_DEPTH) {
            if rd.is_empty() && encoding(&w) == original {
                return Ok(Some(k));
            }
        }
        copy[k] = 0xc1;
    }
    Ok(None)
}

/// Whether a value is or holds a nil.
fn has_nil(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Array(items) => items.iter().any(has_nil),
        Value::Map(entries) => entries.iter().any(|(k, v)| has_nil(k) || has_nil(v)),
        _ => false,
    }
}

/// A MessagePack integer as `i128` (every one fits).
fn integer(v: &Value) -> Option<i128> {
    let Value::Integer(i) = v else { return None };
    i.as_i64()
        .map(i128::from)
        .or_else(|| i.as_u64().map(i128::from))
}

/// The MessagePack type of a value, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "bool",
        Value::Integer(_) => "integer",
        Value::F32(_) => "float32",
        Value::F64(_) => "float64",
        Value::String(_) => "str",
        Value::Binary(_) => "bin",
        Value::Array(_) => "array",
        Value::Map(_) => "map",
        Value::Ext(..) => "ext",
    }
}

/// Reads `data` as exactly one frame.
pub fn read_frame(data: &[u8]) -> Reading {
    let mut c = Cursor { data, pos: 0 };
    match frame(&mut c) {
        Ok(frame) if c.pos == data.len() => Reading::Valid(frame),
        Ok(_) => Reading::Invalid {
            at: c.pos,
            why: format!("{} bytes after the frame", data.len() - c.pos),
        },
        Err(Stop::Invalid(at, why)) => Reading::Invalid { at, why },
        Err(Stop::Undecided) => Reading::Undecided,
    }
}

fn frame(c: &mut Cursor<'_>) -> Read<RefFrame> {
    let top = c.array(3, "frame")?;
    let fields = c.array(8, "header")?;
    let header = RefHeader {
        timestamp: c.int_as("timestamp")?,
        counter: c.int_as("counter")?,
        source: c.int_as("source")?,
        target: c.int_as("target")?,
        message_id: c.int_as("message id")?,
        message_type: c.int_as("message type")?,
        version: c.int_as("version")?,
        flags: c.int_as("flags")?,
    };
    c.skip(fields - 8, "extra header element")?;

    let count = c.map("parameters")?;
    // No capacity from the claimed count: it is not checked yet.
    let mut params = Vec::new();
    for _ in 0..count {
        let key = c.string("key")?;
        let n = c.array(2, "value pair")?;
        let (tag, _) = c.int("tag")?;
        let (v, range) = c.value("value")?;
        let at = range.start;
        let value = match tag {
            TAG_INT => match v {
                Value::Integer(i) => match i.as_i64() {
                    Some(i) => RefValue::Int(i),
                    None => return invalid(at, format!("Int64 value {i} out of range")),
                },
                other => {
                    return invalid(at, format!("Int64 value: not an integer: {}", kind(&other)))
                }
            },
            TAG_DOUBLE => match v {
                Value::F64(f) => RefValue::Double(f),
                Value::F32(f) => RefValue::Double(f64::from(f)),
                Value::Integer(i) => match (i.as_i64(), i.as_u64()) {
                    (Some(i), _) => RefValue::Double(i as f64),
                    (None, Some(u)) => RefValue::Double(u as f64),
                    (None, None) => unreachable!("a MessagePack integer fits i64 or u64"),
                },
                other => {
                    return invalid(at, format!("Double value: not a number: {}", kind(&other)))
                }
            },
            TAG_STRING => match v {
                Value::String(s) => match s.into_str() {
                    Some(s) => RefValue::Str(s),
                    None => return invalid(at, "String value: invalid UTF-8"),
                },
                other => {
                    return invalid(at, format!("String value: not a string: {}", kind(&other)))
                }
            },
            TAG_BOOL => match v {
                Value::Boolean(b) => RefValue::Bool(b),
                other => return invalid(at, format!("Bool value: not a bool: {}", kind(&other))),
            },
            _ => RefValue::Unknown {
                tag,
                raw: c.data[range].to_vec(),
            },
        };
        c.skip(n - 2, "extra value element")?;
        params.push(RefParam { key, value });
    }

    let count = c.array(0, "attachments")?;
    let mut attachments = Vec::new();
    for _ in 0..count {
        let n = c.array(2, "attachment")?;
        let name = c.string("attachment name")?;
        let (v, range) = c.value("attachment data")?;
        let Value::Binary(data) = v else {
            return invalid(
                range.start,
                format!("attachment data: not bin: {}", kind(&v)),
            );
        };
        c.skip(n - 2, "extra attachment element")?;
        attachments.push((name, data));
    }

    c.skip(top - 3, "extra frame element")?;
    Ok(RefFrame {
        header,
        params,
        attachments,
    })
}

/// Encodes a frame as SPEC section 2 says msgpack-c does, with rmp's
/// writers (which choose the shortest form of every integer and length, as
/// msgpack-c does): header fields, tags and Int64 values as the shortest
/// integer, a Double that is integral (and not -0.0) within `[-2^63, 2^64)`
/// as an integer, any other as float64, keys as they arrived, unknown values
/// byte for byte, extra elements dropped.
pub fn encode(frame: &RefFrame) -> Vec<u8> {
    use rmp::encode as w;
    let h = &frame.header;
    let mut out = Vec::new();
    let o = &mut out;
    let len = |n: usize| u32::try_from(n).expect("a length beyond MessagePack");
    w::write_array_len(o, 3).unwrap();
    w::write_array_len(o, 8).unwrap();
    w::write_uint(o, h.timestamp).unwrap();
    w::write_uint(o, h.counter).unwrap();
    w::write_uint(o, u64::from(h.source)).unwrap();
    w::write_uint(o, u64::from(h.target)).unwrap();
    w::write_sint(o, i64::from(h.message_id)).unwrap();
    w::write_sint(o, i64::from(h.message_type)).unwrap();
    w::write_uint(o, u64::from(h.version)).unwrap();
    w::write_uint(o, u64::from(h.flags)).unwrap();

    let write_int = |o: &mut Vec<u8>, i: i128| {
        if i >= 0 {
            w::write_uint(o, u64::try_from(i).unwrap()).unwrap();
        } else {
            w::write_sint(o, i64::try_from(i).unwrap()).unwrap();
        }
    };
    w::write_map_len(o, len(frame.params.len())).unwrap();
    for p in &frame.params {
        w::write_str(o, &p.key).unwrap();
        w::write_array_len(o, 2).unwrap();
        match &p.value {
            RefValue::Int(i) => {
                write_int(o, TAG_INT);
                write_int(o, i128::from(*i));
            }
            RefValue::Double(d) => {
                write_int(o, TAG_DOUBLE);
                let integral = d.is_finite() && d.fract() == 0.0;
                let negative_zero = *d == 0.0 && d.is_sign_negative();
                if integral && !negative_zero && (-(2f64.powi(63))..2f64.powi(64)).contains(d) {
                    // Exact: integral and within range.
                    write_int(o, *d as i128);
                } else {
                    w::write_f64(o, *d).unwrap();
                }
            }
            RefValue::Str(s) => {
                write_int(o, TAG_STRING);
                w::write_str(o, s).unwrap();
            }
            RefValue::Bool(b) => {
                write_int(o, TAG_BOOL);
                w::write_bool(o, *b).unwrap();
            }
            RefValue::Unknown { tag, raw } => {
                write_int(o, *tag);
                o.extend_from_slice(raw);
            }
        }
    }

    w::write_array_len(o, len(frame.attachments.len())).unwrap();
    for (name, data) in &frame.attachments {
        w::write_array_len(o, 2).unwrap();
        w::write_str(o, name).unwrap();
        w::write_bin(o, data).unwrap();
    }
    out
}

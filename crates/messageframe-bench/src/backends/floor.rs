//! The raw MessagePack floor: rmp's low-level functions with no framework
//! on top (no header, no value tags, no two-part keys, no document). One map
//! of the flat keys with native values (doubles as float64, integers in
//! their shortest form, the attachment as bin under
//! [`ATTACHMENT_FIELD`]).
//!
//! - [`RmpBorrowed`], the reference floor: rmp's read functions record each
//!   pair as offsets into the receive buffer, in a `Vec` that the reused
//!   group keeps: no allocation at all.
//! - [`RmpCopying`], its copying equivalent (what an owned decode costs with
//!   nothing on top): the attachment is copied in before the write, as an
//!   owned message must hold its own copy; keys, strings and bins are copied
//!   out into one arena.
//! - [`RmpvValue`] and [`RmpvRef`], context: the generic owned and borrowed
//!   values a Rust user reaches for first.
//! - [`Memcpy`]: three copies of the attachment and nothing else.

use std::mem;

use rmp::Marker;

use super::{att_len, Backend, Read, ATTACHMENT_FIELD};
use crate::scenario::{InputValue, Inputs, Probe};

/// A byte range of a buffer (the receive buffer or an arena).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// Length.
    pub len: u32,
}

impl Span {
    /// The bytes of this span in `buf`.
    #[inline]
    #[must_use]
    pub fn of(self, buf: &[u8]) -> &[u8] {
        &buf[self.start as usize..(self.start + self.len) as usize]
    }

    /// The span of `part`, a subslice of `base`.
    #[inline]
    pub(crate) fn within(base: &[u8], part: &[u8]) -> Span {
        Span {
            start: (part.as_ptr() as usize - base.as_ptr() as usize) as u32,
            len: part.len() as u32,
        }
    }
}

/// A decoded value: scalars inline, strings and bins as spans.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// float32 or float64.
    F64(f64),
    /// Any integer that fits i64.
    I64(i64),
    /// true / false.
    Bool(bool),
    /// A UTF-8-checked str.
    Str(Span),
    /// A bin.
    Bin(Span),
    /// nil.
    Nil,
}

/// One decoded pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// The key (a UTF-8-checked str).
    pub key: Span,
    /// The value.
    pub value: Scalar,
}

/// Linear search for `key` (as a user of a pair list does), then the
/// probe's read of the value; `text` is the buffer the spans point into.
#[inline]
pub(crate) fn pairs_probe(pairs: &[Pair], text: &[u8], inputs: &Inputs) -> Probe {
    let find = |k: &str| {
        pairs
            .iter()
            .find(|p| p.key.of(text) == k.as_bytes())
            .map(|p| p.value)
    };
    let (_, _, key) = inputs.last_key();
    let value = match find(key) {
        Some(Scalar::F64(x)) => Read::F(x),
        Some(Scalar::I64(x)) => Read::I(x),
        Some(Scalar::Bool(x)) => Read::B(x),
        Some(Scalar::Str(s)) => Read::SB(s.of(text)),
        _ => Read::Missing,
    };
    let att = if inputs.attachment.is_some() {
        match find(ATTACHMENT_FIELD) {
            Some(Scalar::Bin(s)) => Some(s.len as usize),
            _ => None,
        }
    } else {
        None
    };
    Probe {
        value: value.fingerprint(),
        attachment: att_len(inputs, att),
    }
}

/// Writes the floor's message with rmp's write functions, the attachment
/// from `attachment`.
#[inline]
pub fn rmp_write_with(buf: &mut Vec<u8>, inputs: &Inputs, attachment: Option<&[u8]>) {
    use rmp::encode;
    let entries = inputs.len() + usize::from(attachment.is_some());
    encode::write_map_len(buf, entries as u32).expect("a Vec grows");
    for (key, v) in inputs.flat.iter().zip(&inputs.values) {
        encode::write_str(buf, key).expect("a Vec grows");
        match v {
            InputValue::Double(x) => encode::write_f64(buf, *x).expect("a Vec grows"),
            InputValue::Int(i) => {
                encode::write_sint(buf, *i).expect("a Vec grows");
            }
            InputValue::Bool(b) => encode::write_bool(buf, *b).expect("a Vec grows"),
            InputValue::Str(s) => encode::write_str(buf, s).expect("a Vec grows"),
        }
    }
    if let Some(a) = attachment {
        encode::write_str(buf, ATTACHMENT_FIELD).expect("a Vec grows");
        encode::write_bin(buf, a).expect("a Vec grows");
    }
}

/// Writes the floor's message straight from the inputs into `buf`
/// (cleared first).
#[inline]
pub fn rmp_write(buf: &mut Vec<u8>, inputs: &Inputs) {
    buf.clear();
    rmp_write_with(buf, inputs, inputs.attachment.as_deref());
}

/// Decodes a flat map with rmp's read functions into `out` (cleared first);
/// `keep` turns each str or bin of `buf` into a span (of `buf` itself, or of
/// an arena it copies into).
///
/// # Errors
///
/// A description of the first thing that is not a map of str keys to
/// scalar, str or bin values.
#[inline]
pub fn rmp_decode(
    buf: &[u8],
    out: &mut Vec<Pair>,
    mut keep: impl FnMut(&[u8], &[u8]) -> Span,
) -> Result<(), &'static str> {
    use rmp::decode;
    out.clear();
    let mut rd = buf;
    let len = decode::read_map_len(&mut rd).map_err(|_| "map")? as usize;
    // Each pair takes at least two bytes: never reserve more than the input
    // can hold.
    out.reserve(len.min(rd.len() / 2));
    for _ in 0..len {
        let (key, rest) = decode::read_str_from_slice(rd).map_err(|_| "key")?;
        let key = keep(buf, key.as_bytes());
        rd = rest;
        let first = *rd.first().ok_or("truncated")?;
        let value = match Marker::from_u8(first) {
            Marker::F64 => Scalar::F64(decode::read_f64(&mut rd).map_err(|_| "f64")?),
            Marker::F32 => Scalar::F64(f64::from(decode::read_f32(&mut rd).map_err(|_| "f32")?)),
            Marker::True | Marker::False => {
                Scalar::Bool(decode::read_bool(&mut rd).map_err(|_| "bool")?)
            }
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let (s, rest) = decode::read_str_from_slice(rd).map_err(|_| "str")?;
                rd = rest;
                Scalar::Str(keep(buf, s.as_bytes()))
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                let n = decode::read_bin_len(&mut rd).map_err(|_| "bin")? as usize;
                if rd.len() < n {
                    return Err("bin");
                }
                let (b, rest) = rd.split_at(n);
                rd = rest;
                Scalar::Bin(keep(buf, b))
            }
            Marker::Null => {
                decode::read_nil(&mut rd).map_err(|_| "nil")?;
                Scalar::Nil
            }
            _ => Scalar::I64(decode::read_int(&mut rd).map_err(|_| "int")?),
        };
        out.push(Pair { key, value });
    }
    if rd.is_empty() {
        Ok(())
    } else {
        Err("trailing bytes")
    }
}

/// Decodes with every str and bin borrowed (spans of `buf`).
///
/// # Errors
///
/// As [`rmp_decode`].
pub fn rmp_decode_borrowed(buf: &[u8], out: &mut Vec<Pair>) -> Result<(), &'static str> {
    rmp_decode(buf, out, Span::within)
}

/// Decodes with every str and bin copied into `arena` (cleared first).
///
/// # Errors
///
/// As [`rmp_decode`].
pub fn rmp_decode_copying(
    buf: &[u8],
    out: &mut Vec<Pair>,
    arena: &mut Vec<u8>,
) -> Result<(), &'static str> {
    arena.clear();
    rmp_decode(buf, out, |_, part| {
        let start = arena.len() as u32;
        arena.extend_from_slice(part);
        Span {
            start,
            len: part.len() as u32,
        }
    })
}

/// [`super::Format::RmpBorrowed`].
#[derive(Debug)]
pub struct RmpBorrowed<const FRESH: bool> {
    buf: Vec<u8>,
    pairs: Vec<Pair>,
}

impl<const FRESH: bool> RmpBorrowed<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpBorrowed {
            buf: Vec::new(),
            pairs: Vec::new(),
        }
    }
}

impl<const FRESH: bool> Backend for RmpBorrowed<FRESH> {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {
        // No document: the writer reads the inputs directly.
    }

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        if FRESH {
            self.buf = Vec::new();
        }
        rmp_write(&mut self.buf, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.buf);
            let mut pairs = Vec::new();
            rmp_decode_borrowed(&buf, &mut pairs).expect("valid msgpack");
            pairs_probe(&pairs, &buf, inputs)
        } else {
            rmp_decode_borrowed(&self.buf, &mut self.pairs).expect("valid msgpack");
            pairs_probe(&self.pairs, &self.buf, inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::RmpCopying`].
#[derive(Debug)]
pub struct RmpCopying<const FRESH: bool> {
    att: Vec<u8>,
    buf: Vec<u8>,
    pairs: Vec<Pair>,
    arena: Vec<u8>,
}

impl<const FRESH: bool> RmpCopying<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpCopying {
            att: Vec::new(),
            buf: Vec::new(),
            pairs: Vec::new(),
            arena: Vec::new(),
        }
    }
}

impl<const FRESH: bool> Backend for RmpCopying<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        // The message's own copy of the attachment (what messageframe's
        // `add_attachment_copy` and prost's `Vec<u8>` field hold).
        if let Some(a) = &inputs.attachment {
            if FRESH {
                self.att = a.clone();
            } else {
                self.att.clear();
                self.att.extend_from_slice(a);
            }
        }
    }

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        if FRESH {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        let att = inputs.attachment.as_ref().map(|_| self.att.as_slice());
        rmp_write_with(&mut self.buf, inputs, att);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.buf);
            let (mut pairs, mut arena) = (Vec::new(), Vec::new());
            rmp_decode_copying(&buf, &mut pairs, &mut arena).expect("valid msgpack");
            drop(buf);
            pairs_probe(&pairs, &arena, inputs)
        } else {
            rmp_decode_copying(&self.buf, &mut self.pairs, &mut self.arena).expect("valid msgpack");
            pairs_probe(&self.pairs, &self.arena, inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::RmpvValue`]: `rmpv::decode::read_value`, then a linear
/// search of the map's pairs.
#[derive(Debug)]
pub struct RmpvValue<const FRESH: bool> {
    buf: Vec<u8>,
}

impl<const FRESH: bool> RmpvValue<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpvValue { buf: Vec::new() }
    }
}

impl<const FRESH: bool> Backend for RmpvValue<FRESH> {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {}

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        if FRESH {
            self.buf = Vec::new();
        }
        rmp_write(&mut self.buf, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        use rmpv::Value;
        let value = rmpv::decode::read_value(&mut self.buf.as_slice()).expect("valid msgpack");
        if FRESH {
            self.buf = Vec::new();
        }
        let Value::Map(entries) = value else {
            return Probe::default();
        };
        let get = |k: &str| {
            entries
                .iter()
                .find(|(ek, _)| ek.as_str() == Some(k))
                .map(|(_, v)| v)
        };
        let (_, _, key) = inputs.last_key();
        let value = match get(key) {
            Some(Value::F64(x)) => Read::F(*x),
            Some(Value::Integer(i)) => i.as_i64().map_or(Read::Missing, Read::I),
            Some(Value::Boolean(b)) => Read::B(*b),
            Some(Value::String(s)) => s.as_str().map_or(Read::Missing, Read::S),
            _ => Read::Missing,
        };
        let att = match get(ATTACHMENT_FIELD) {
            Some(Value::Binary(b)) => Some(b.len()),
            _ => None,
        };
        Probe {
            value: value.fingerprint(),
            attachment: att_len(inputs, att),
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::RmpvRef`]: `rmpv::decode::read_value_ref`, borrowed.
#[derive(Debug)]
pub struct RmpvRef<const FRESH: bool> {
    buf: Vec<u8>,
}

impl<const FRESH: bool> RmpvRef<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpvRef { buf: Vec::new() }
    }
}

impl<const FRESH: bool> Backend for RmpvRef<FRESH> {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {}

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        if FRESH {
            self.buf = Vec::new();
        }
        rmp_write(&mut self.buf, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        use rmpv::ValueRef;
        let buf = if FRESH {
            mem::take(&mut self.buf)
        } else {
            Vec::new()
        };
        let bytes = if FRESH { &buf } else { &self.buf };
        let value = rmpv::decode::read_value_ref(&mut bytes.as_slice()).expect("valid msgpack");
        let ValueRef::Map(entries) = value else {
            return Probe::default();
        };
        let get = |k: &str| {
            entries
                .iter()
                .find(|(ek, _)| matches!(ek, ValueRef::String(s) if s.as_str() == Some(k)))
                .map(|(_, v)| v)
        };
        let (_, _, key) = inputs.last_key();
        let value = match get(key) {
            Some(ValueRef::F64(x)) => Read::F(*x),
            Some(ValueRef::Integer(i)) => i.as_i64().map_or(Read::Missing, Read::I),
            Some(ValueRef::Boolean(b)) => Read::B(*b),
            Some(ValueRef::String(s)) => s.as_str().map_or(Read::Missing, Read::S),
            _ => Read::Missing,
        };
        let att = match get(ATTACHMENT_FIELD) {
            Some(ValueRef::Binary(b)) => Some(b.len()),
            _ => None,
        };
        Probe {
            value: value.fingerprint(),
            attachment: att_len(inputs, att),
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::Memcpy`]: the attachment copied into a message buffer
/// (add), into the output buffer (serialize) and out again (deserialize),
/// each into a kept buffer. Its serialize phase is one memcpy measured under
/// the cache conditions of messageframe's serialize: its source was just
/// written by the add phase, as the frame's copy was.
#[derive(Debug)]
pub struct Memcpy<const FRESH: bool> {
    msg: Vec<u8>,
    buf: Vec<u8>,
    out: Vec<u8>,
}

impl<const FRESH: bool> Memcpy<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        Memcpy {
            msg: Vec::new(),
            buf: Vec::new(),
            out: Vec::new(),
        }
    }
}

#[inline]
fn copy_into<const FRESH: bool>(dst: &mut Vec<u8>, src: &[u8]) {
    if FRESH {
        *dst = src.to_vec();
    } else {
        dst.clear();
        dst.extend_from_slice(src);
    }
}

impl<const FRESH: bool> Backend for Memcpy<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        copy_into::<FRESH>(&mut self.msg, inputs.attachment.as_deref().unwrap_or(&[]));
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        copy_into::<FRESH>(&mut self.buf, &self.msg);
    }

    #[inline]
    fn deserialize(&mut self, _inputs: &Inputs) -> Probe {
        copy_into::<FRESH>(&mut self.out, &self.buf);
        Probe {
            value: 0,
            attachment: self.out.len(),
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

//! CBOR, schema-free: one map of the flat keys with native values (doubles
//! as float64, integers in their shortest form), the attachment as a byte
//! string under [`ATTACHMENT_FIELD`]. Two
//! libraries, each used the way it is meant to be:
//! - minicbor has no document type: its `Encoder` writes straight from the
//!   data, and its `Decoder` hands out borrowed items, recorded here as
//!   spans in a pair list (the same shape as the MessagePack floor's);
//! - ciborium's `Value` is its document: built, serialized with serde,
//!   deserialized with serde into a new `Value`.

use std::mem;

use minicbor::data::Type;

use super::floor::{pairs_probe, Pair, Scalar, Span};
use super::{att_len, Backend, Read, ATTACHMENT_FIELD};
use crate::scenario::{InputValue, Inputs, Probe};

/// Writes the message with minicbor's `Encoder` into `buf` (appending).
pub fn minicbor_write(buf: &mut Vec<u8>, inputs: &Inputs) {
    let mut e = minicbor::Encoder::new(buf);
    let entries = inputs.len() + usize::from(inputs.attachment.is_some());
    e.map(entries as u64).expect("a Vec grows");
    for (key, v) in inputs.flat.iter().zip(&inputs.values) {
        e.str(key).expect("a Vec grows");
        match v {
            InputValue::Double(x) => e.f64(*x),
            InputValue::Int(i) => e.i64(*i),
            InputValue::Bool(b) => e.bool(*b),
            InputValue::Str(s) => e.str(s),
        }
        .expect("a Vec grows");
    }
    if let Some(a) = &inputs.attachment {
        e.str(ATTACHMENT_FIELD)
            .and_then(|e| e.bytes(a))
            .expect("a Vec grows");
    }
}

/// Decodes a flat map with minicbor's `Decoder` into `out` (cleared first),
/// every str and bytes borrowed (spans of `buf`).
///
/// # Errors
///
/// minicbor's error for the first thing that is not a definite map of
/// text keys to scalar, text or bytes values, or trailing bytes.
pub fn minicbor_decode(buf: &[u8], out: &mut Vec<Pair>) -> Result<(), minicbor::decode::Error> {
    use minicbor::decode::Error;
    let span = |part: &[u8]| Span {
        start: (part.as_ptr() as usize - buf.as_ptr() as usize) as u32,
        len: part.len() as u32,
    };
    out.clear();
    let mut d = minicbor::Decoder::new(buf);
    let n = d.map()?.ok_or_else(|| Error::message("indefinite map"))? as usize;
    out.reserve(n.min(buf.len() / 2));
    for _ in 0..n {
        let key = span(d.str()?.as_bytes());
        let value = match d.datatype()? {
            Type::F64 | Type::F32 => Scalar::F64(d.f64()?),
            Type::Bool => Scalar::Bool(d.bool()?),
            Type::String => Scalar::Str(span(d.str()?.as_bytes())),
            Type::Bytes => Scalar::Bin(span(d.bytes()?)),
            Type::Null => {
                d.null()?;
                Scalar::Nil
            }
            Type::U8
            | Type::U16
            | Type::U32
            | Type::U64
            | Type::I8
            | Type::I16
            | Type::I32
            | Type::I64
            | Type::Int => Scalar::I64(d.i64()?),
            t => return Err(Error::type_mismatch(t)),
        };
        out.push(Pair { key, value });
    }
    if d.position() == buf.len() {
        Ok(())
    } else {
        Err(Error::message("trailing bytes"))
    }
}

/// [`super::Format::Minicbor`].
#[derive(Debug)]
pub struct Minicbor<const FRESH: bool> {
    buf: Vec<u8>,
    pairs: Vec<Pair>,
}

impl<const FRESH: bool> Minicbor<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        Minicbor {
            buf: Vec::new(),
            pairs: Vec::new(),
        }
    }
}

impl<const FRESH: bool> Backend for Minicbor<FRESH> {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {
        // No document: the encoder reads the inputs directly.
    }

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        if FRESH {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        minicbor_write(&mut self.buf, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.buf);
            let mut pairs = Vec::new();
            minicbor_decode(&buf, &mut pairs).expect("valid CBOR");
            pairs_probe(&pairs, &buf, inputs)
        } else {
            minicbor_decode(&self.buf, &mut self.pairs).expect("valid CBOR");
            pairs_probe(&self.pairs, &self.buf, inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::Ciborium`]: a `Value::Map` built, `ciborium::into_writer`,
/// `ciborium::from_reader` into a new `Value`. Reused: the pair vector and
/// the attachment's byte buffer of the built map are kept.
#[derive(Debug)]
pub struct Ciborium<const FRESH: bool> {
    pairs: Vec<(ciborium::Value, ciborium::Value)>,
    doc: ciborium::Value,
    att: Vec<u8>,
    buf: Vec<u8>,
}

impl<const FRESH: bool> Ciborium<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        Ciborium {
            pairs: Vec::new(),
            doc: ciborium::Value::Null,
            att: Vec::new(),
            buf: Vec::new(),
        }
    }
}

fn read_cbor(v: Option<&ciborium::Value>) -> Read<'_> {
    use ciborium::Value;
    match v {
        Some(Value::Float(x)) => Read::F(*x),
        Some(Value::Integer(i)) => i64::try_from(*i).map_or(Read::Missing, Read::I),
        Some(Value::Bool(b)) => Read::B(*b),
        Some(Value::Text(s)) => Read::S(s),
        _ => Read::Missing,
    }
}

impl<const FRESH: bool> Backend for Ciborium<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        use ciborium::Value;
        let mut pairs = if FRESH {
            Vec::new()
        } else {
            let mut p = mem::take(&mut self.pairs);
            for (_, v) in p.drain(..) {
                if let Value::Bytes(b) = v {
                    self.att = b;
                }
            }
            p
        };
        for (key, v) in inputs.flat.iter().zip(&inputs.values) {
            let v = match v {
                InputValue::Double(x) => Value::Float(*x),
                InputValue::Int(i) => Value::Integer((*i).into()),
                InputValue::Bool(b) => Value::Bool(*b),
                InputValue::Str(s) => Value::Text(s.clone()),
            };
            pairs.push((Value::Text(key.clone()), v));
        }
        if let Some(a) = &inputs.attachment {
            let bytes = if FRESH {
                a.clone()
            } else {
                let mut b = mem::take(&mut self.att);
                b.clear();
                b.extend_from_slice(a);
                b
            };
            pairs.push((
                Value::Text(ATTACHMENT_FIELD.to_owned()),
                Value::Bytes(bytes),
            ));
        }
        self.doc = Value::Map(pairs);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        let doc = mem::replace(&mut self.doc, ciborium::Value::Null);
        if FRESH {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        ciborium::into_writer(&doc, &mut self.buf).expect("a Vec grows");
        if !FRESH {
            if let ciborium::Value::Map(p) = doc {
                self.pairs = p;
            }
        }
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        use ciborium::Value;
        let buf = if FRESH {
            mem::take(&mut self.buf)
        } else {
            Vec::new()
        };
        let bytes = if FRESH { &buf } else { &self.buf };
        let doc: Value = ciborium::from_reader(bytes.as_slice()).expect("valid CBOR");
        let Value::Map(pairs) = &doc else {
            return Probe::default();
        };
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(ek, _)| ek.as_text() == Some(k))
                .map(|(_, v)| v)
        };
        let (_, _, key) = inputs.last_key();
        let att = match get(ATTACHMENT_FIELD) {
            Some(Value::Bytes(b)) => Some(b.len()),
            _ => None,
        };
        Probe {
            value: read_cbor(get(key)).fingerprint(),
            attachment: att_len(inputs, att),
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

//! JSON: serde_json (the one a Rust user reaches for first) and the two SIMD
//! libraries, sonic-rs and simd-json, each with its own document model: an
//! object of the flat keys with native JSON values, the attachment
//! base64-encoded (standard alphabet) into a string field and decoded back.
//!
//! Reused: the document is cleared and refilled, the output buffer and the
//! base64 buffers are kept; simd-json also keeps its parser `Buffers`. None
//! of the three decodes into an existing document (serde_json's and
//! sonic-rs's `Deserialize` have no in-place form; simd-json builds a new
//! borrowed tree), so their decode allocates in both groups. Fresh: a new
//! document, `to_vec`, a new decoded document.

use std::mem;

use base64::prelude::{Engine, BASE64_STANDARD};

use super::{att_len, Backend, Read, ATTACHMENT_FIELD};
use crate::scenario::{InputValue, Inputs, Probe};

/// Base64 of the attachment into `kept` (reused) or a new string (fresh).
#[inline]
fn encode_b64<const FRESH: bool>(a: &[u8], kept: &mut String) -> String {
    if FRESH {
        BASE64_STANDARD.encode(a)
    } else {
        let mut s = mem::take(kept);
        s.clear();
        BASE64_STANDARD.encode_string(a, &mut s);
        s
    }
}

/// Decodes the base64 attachment into `kept` (reused) or a new `Vec`
/// (fresh); returns its length.
#[inline]
fn decode_b64<const FRESH: bool>(s: Option<&str>, kept: &mut Vec<u8>) -> Option<usize> {
    let s = s?;
    if FRESH {
        Some(BASE64_STANDARD.decode(s).expect("valid base64").len())
    } else {
        kept.clear();
        BASE64_STANDARD.decode_vec(s, kept).expect("valid base64");
        Some(kept.len())
    }
}

/// [`super::Format::SerdeJson`]: `serde_json::Map<String, Value>` (its
/// default `BTreeMap`).
#[derive(Debug)]
pub struct SerdeJson<const FRESH: bool> {
    map: serde_json::Map<String, serde_json::Value>,
    buf: Vec<u8>,
    b64: String,
    att: Vec<u8>,
}

impl<const FRESH: bool> SerdeJson<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        SerdeJson {
            map: serde_json::Map::new(),
            buf: Vec::new(),
            b64: String::new(),
            att: Vec::new(),
        }
    }
}

fn read_serde(v: Option<&serde_json::Value>) -> Read<'_> {
    use serde_json::Value;
    match v {
        Some(Value::Number(n)) if n.is_f64() => n.as_f64().map_or(Read::Missing, Read::F),
        Some(Value::Number(n)) => n.as_i64().map_or(Read::Missing, Read::I),
        Some(Value::Bool(b)) => Read::B(*b),
        Some(Value::String(s)) => Read::S(s),
        _ => Read::Missing,
    }
}

impl<const FRESH: bool> Backend for SerdeJson<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        use serde_json::Value;
        if FRESH {
            self.map = serde_json::Map::new();
        } else {
            // Keep the base64 string's buffer for the next message.
            if let Some(Value::String(s)) = self.map.remove(ATTACHMENT_FIELD) {
                self.b64 = s;
            }
            self.map.clear();
        }
        for (key, v) in inputs.flat.iter().zip(&inputs.values) {
            let v = match v {
                InputValue::Double(x) => Value::from(*x),
                InputValue::Int(i) => Value::from(*i),
                InputValue::Bool(b) => Value::Bool(*b),
                InputValue::Str(s) => Value::String(s.clone()),
            };
            self.map.insert(key.clone(), v);
        }
        if let Some(a) = &inputs.attachment {
            let s = encode_b64::<FRESH>(a, &mut self.b64);
            self.map
                .insert(ATTACHMENT_FIELD.to_owned(), Value::String(s));
        }
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        if FRESH {
            let map = mem::take(&mut self.map);
            self.buf = serde_json::to_vec(&map).expect("serializable");
        } else {
            self.buf.clear();
            serde_json::to_writer(&mut self.buf, &self.map).expect("a Vec grows");
        }
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let buf = if FRESH {
            mem::take(&mut self.buf)
        } else {
            Vec::new()
        };
        let bytes = if FRESH { &buf } else { &self.buf };
        let msg: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(bytes).expect("valid JSON");
        let (_, _, key) = inputs.last_key();
        let att = match msg.get(ATTACHMENT_FIELD) {
            Some(serde_json::Value::String(s)) => Some(s.as_str()),
            _ => None,
        };
        Probe {
            value: read_serde(msg.get(key)).fingerprint(),
            attachment: att_len(inputs, decode_b64::<FRESH>(att, &mut self.att)),
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::SonicRs`]: `sonic_rs::Object` built, `sonic_rs::Value`
/// decoded. Built without `-C target-cpu=native` (like every backend), so
/// sonic-rs uses its portable SIMD paths.
#[derive(Debug)]
pub struct SonicRs<const FRESH: bool> {
    obj: sonic_rs::Object,
    buf: Vec<u8>,
    b64: String,
    att: Vec<u8>,
}

impl<const FRESH: bool> SonicRs<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        SonicRs {
            obj: sonic_rs::Object::new(),
            buf: Vec::new(),
            b64: String::new(),
            att: Vec::new(),
        }
    }
}

fn read_sonic(v: Option<&sonic_rs::Value>) -> Read<'_> {
    use sonic_rs::JsonValueTrait;
    let Some(v) = v else {
        return Read::Missing;
    };
    if let Some(s) = v.as_str() {
        Read::S(s)
    } else if let Some(b) = v.as_bool() {
        Read::B(b)
    } else if v.is_f64() {
        v.as_f64().map_or(Read::Missing, Read::F)
    } else {
        v.as_i64().map_or(Read::Missing, Read::I)
    }
}

impl<const FRESH: bool> Backend for SonicRs<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        use sonic_rs::Value;
        if FRESH {
            self.obj = sonic_rs::Object::new();
        } else {
            self.obj.clear();
        }
        for (key, v) in inputs.flat.iter().zip(&inputs.values) {
            let v = match v {
                InputValue::Double(x) => Value::new_f64(*x).expect("finite"),
                InputValue::Int(i) => Value::from(*i),
                InputValue::Bool(b) => Value::from(*b),
                InputValue::Str(s) => Value::from(s.as_str()),
            };
            self.obj.insert(key, v);
        }
        if let Some(a) = &inputs.attachment {
            // sonic-rs copies the string into its own value.
            let s = encode_b64::<FRESH>(a, &mut self.b64);
            self.obj.insert(ATTACHMENT_FIELD, s.as_str());
            if !FRESH {
                self.b64 = s;
            }
        }
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        if FRESH {
            let obj = mem::take(&mut self.obj);
            self.buf = sonic_rs::to_vec(&obj).expect("serializable");
        } else {
            self.buf.clear();
            sonic_rs::to_writer(&mut self.buf, &self.obj).expect("a Vec grows");
        }
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        use sonic_rs::JsonValueTrait;
        let buf = if FRESH {
            mem::take(&mut self.buf)
        } else {
            Vec::new()
        };
        let bytes = if FRESH { &buf } else { &self.buf };
        let msg: sonic_rs::Value = sonic_rs::from_slice(bytes).expect("valid JSON");
        let (_, _, key) = inputs.last_key();
        let att = msg.get(ATTACHMENT_FIELD).and_then(|v| v.as_str());
        Probe {
            value: read_sonic(msg.get(key)).fingerprint(),
            attachment: att_len(inputs, decode_b64::<FRESH>(att, &mut self.att)),
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::SimdJson`]: an `OwnedValue` object built and written
/// with simd-json's own writer; decoded in place (simd-json rewrites its
/// input) into a `BorrowedValue`, with kept parser `Buffers` when reused.
/// simd-json picks its SIMD code at run time (its default
/// `runtime-detection` feature).
pub struct SimdJson<const FRESH: bool> {
    doc: simd_json::OwnedValue,
    buf: Vec<u8>,
    b64: String,
    att: Vec<u8>,
    buffers: simd_json::Buffers,
}

impl<const FRESH: bool> std::fmt::Debug for SimdJson<FRESH> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimdJson").field("doc", &self.doc).finish()
    }
}

impl<const FRESH: bool> SimdJson<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        SimdJson {
            doc: simd_json::OwnedValue::from(simd_json::owned::Object::new()),
            buf: Vec::new(),
            b64: String::new(),
            att: Vec::new(),
            buffers: simd_json::Buffers::default(),
        }
    }
}

fn read_simd<'a>(v: Option<&'a simd_json::BorrowedValue<'_>>) -> Read<'a> {
    use simd_json::prelude::*;
    use simd_json::ValueType;
    let Some(v) = v else {
        return Read::Missing;
    };
    match v.value_type() {
        ValueType::F64 => v.as_f64().map_or(Read::Missing, Read::F),
        ValueType::I64 | ValueType::U64 => v.as_i64().map_or(Read::Missing, Read::I),
        ValueType::Bool => v.as_bool().map_or(Read::Missing, Read::B),
        ValueType::String => v.as_str().map_or(Read::Missing, Read::S),
        _ => Read::Missing,
    }
}

impl<const FRESH: bool> Backend for SimdJson<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        use simd_json::prelude::*;
        use simd_json::OwnedValue;
        if FRESH {
            self.doc = OwnedValue::from(simd_json::owned::Object::new());
        } else {
            let obj = self.doc.as_object_mut().expect("an object");
            if let Some(OwnedValue::String(s)) = obj.remove(ATTACHMENT_FIELD) {
                self.b64 = s;
            }
            obj.clear();
        }
        let obj = self.doc.as_object_mut().expect("an object");
        for (key, v) in inputs.flat.iter().zip(&inputs.values) {
            let v = match v {
                InputValue::Double(x) => OwnedValue::from(*x),
                InputValue::Int(i) => OwnedValue::from(*i),
                InputValue::Bool(b) => OwnedValue::from(*b),
                InputValue::Str(s) => OwnedValue::from(s.clone()),
            };
            obj.insert(key.clone(), v);
        }
        if let Some(a) = &inputs.attachment {
            let s = encode_b64::<FRESH>(a, &mut self.b64);
            obj.insert(ATTACHMENT_FIELD.to_owned(), OwnedValue::from(s));
        }
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        use simd_json::prelude::*;
        if FRESH {
            let doc = mem::replace(
                &mut self.doc,
                simd_json::OwnedValue::Static(simd_json::StaticNode::Null),
            );
            let mut buf = Vec::new();
            doc.write(&mut buf).expect("a Vec grows");
            self.buf = buf;
        } else {
            self.buf.clear();
            self.doc.write(&mut self.buf).expect("a Vec grows");
        }
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        use simd_json::prelude::*;
        let mut buf = if FRESH {
            mem::take(&mut self.buf)
        } else {
            Vec::new()
        };
        let bytes = if FRESH { &mut buf } else { &mut self.buf };
        let msg = if FRESH {
            simd_json::to_borrowed_value(bytes)
        } else {
            simd_json::to_borrowed_value_with_buffers(bytes, &mut self.buffers)
        }
        .expect("valid JSON");
        let (_, _, key) = inputs.last_key();
        let att = msg.get(ATTACHMENT_FIELD).and_then(|v| v.as_str());
        Probe {
            value: read_simd(msg.get(key)).fingerprint(),
            attachment: att_len(inputs, decode_b64::<FRESH>(att, &mut self.att)),
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

//! The logical message a backend's bytes carry, read back with a decoder
//! independent of the backend where one exists (rmpv for every MessagePack
//! row, messageframe's included; serde_json for the SIMD JSON libraries;
//! ciborium for minicbor), so that every backend is checked to carry the
//! same keys, values and attachment as the inputs.

use base64::prelude::{Engine, BASE64_STANDARD};
use prost::Message;

use super::{Format, ATTACHMENT_FIELD};
use crate::scenario::{InputValue, Inputs};

/// A value, as any format carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum LValue {
    /// Double.
    F(f64),
    /// Integer.
    I(i64),
    /// Bool.
    B(bool),
    /// String.
    S(String),
}

/// A message: its parameters under their flat keys (`device.param`, sorted)
/// and its attachment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Logical {
    /// Parameters, sorted by flat key.
    pub params: Vec<(String, LValue)>,
    /// The attachment's bytes.
    pub attachment: Option<Vec<u8>>,
}

impl Logical {
    fn sorted(mut self) -> Self {
        self.params.sort_by(|a, b| a.0.cmp(&b.0));
        self
    }
}

/// What every backend must carry for these inputs.
#[must_use]
pub fn expected(inputs: &Inputs) -> Logical {
    Logical {
        params: inputs
            .flat
            .iter()
            .zip(&inputs.values)
            .map(|(k, v)| {
                let v = match v {
                    InputValue::Double(x) => LValue::F(*x),
                    InputValue::Int(x) => LValue::I(*x),
                    InputValue::Bool(x) => LValue::B(*x),
                    InputValue::Str(x) => LValue::S(x.clone()),
                };
                (k.clone(), v)
            })
            .collect(),
        attachment: inputs.attachment.clone(),
    }
    .sorted()
}

/// Checks that `wire`, produced by `format`, carries what `inputs` hold
/// (only the attachment for the memcpy row).
///
/// # Errors
///
/// What differs, or why the bytes do not decode.
pub fn check(format: Format, wire: &[u8], inputs: &Inputs) -> Result<(), String> {
    let got = decode(format, wire, inputs.attachment_name)?;
    let mut want = expected(inputs);
    if !format.carries_message() {
        want.params.clear();
    }
    if got == want {
        return Ok(());
    }
    if got.attachment != want.attachment {
        return Err(format!(
            "{}: attachment of {:?} bytes, expected {:?}",
            format.id(),
            got.attachment.as_ref().map(Vec::len),
            want.attachment.as_ref().map(Vec::len)
        ));
    }
    let first = got
        .params
        .iter()
        .zip(&want.params)
        .find(|(a, b)| a != b)
        .map_or_else(
            || {
                format!(
                    "{} parameters, expected {}",
                    got.params.len(),
                    want.params.len()
                )
            },
            |(a, b)| format!("{a:?}, expected {b:?}"),
        );
    Err(format!("{}: {first}", format.id()))
}

/// The logical message in `wire`, written by `format`; `attachment_name` is
/// the name messageframe's rows give the attachment.
///
/// # Errors
///
/// Why the bytes do not decode to a message of this shape.
pub fn decode(format: Format, wire: &[u8], attachment_name: &str) -> Result<Logical, String> {
    let m = match format {
        Format::Mf
        | Format::MfView
        | Format::MfSet
        | Format::MfShared
        | Format::MfViewShared
        | Format::RmpWire => frame(wire, attachment_name)?,
        Format::Prost | Format::ProstShared => protobuf(wire)?,
        Format::SerdeJson | Format::SonicRs | Format::SimdJson => json(wire)?,
        Format::Minicbor | Format::Ciborium => cbor(wire)?,
        Format::Flexbuffers => flex(wire)?,
        Format::RmpBorrowed | Format::RmpCopying | Format::RmpvValue | Format::RmpvRef => {
            msgpack_map(wire)?
        }
        Format::Memcpy => Logical {
            params: Vec::new(),
            attachment: Some(wire.to_vec()),
        },
    };
    Ok(m.sorted())
}

fn rmpv_whole(wire: &[u8]) -> Result<rmpv::Value, String> {
    let mut rd = wire;
    let v = rmpv::decode::read_value(&mut rd).map_err(|e| e.to_string())?;
    if rd.is_empty() {
        Ok(v)
    } else {
        Err(format!("{} trailing bytes", rd.len()))
    }
}

fn rmpv_scalar(v: &rmpv::Value) -> Result<LValue, String> {
    use rmpv::Value;
    Ok(match v {
        Value::F64(x) => LValue::F(*x),
        Value::F32(x) => LValue::F(f64::from(*x)),
        Value::Integer(i) => LValue::I(i.as_i64().ok_or("integer beyond i64")?),
        Value::Boolean(b) => LValue::B(*b),
        Value::String(s) => LValue::S(s.as_str().ok_or("invalid UTF-8")?.to_owned()),
        other => return Err(format!("unexpected value {other}")),
    })
}

/// A messageframe frame read with rmpv: `[header, {key: [tag, value]},
/// [[name, bin]]]`.
fn frame(wire: &[u8], attachment_name: &str) -> Result<Logical, String> {
    use rmpv::Value;
    let Value::Array(top) = rmpv_whole(wire)? else {
        return Err("not an array".into());
    };
    let [Value::Array(header), Value::Map(params), Value::Array(atts)] = top.as_slice() else {
        return Err("not [header, params, attachments]".into());
    };
    if header.len() != 8 {
        return Err(format!("header of {} fields", header.len()));
    }
    let mut out = Logical::default();
    for (k, v) in params {
        let key = k.as_str().ok_or("key not a str")?;
        let (device, param) = key.split_once('\x1f').ok_or("key without 0x1F")?;
        let Value::Array(tv) = v else {
            return Err("value not [tag, value]".into());
        };
        let (Some(tag), Some(value)) = (tv.first().and_then(Value::as_i64), tv.get(1)) else {
            return Err("value not [tag, value]".into());
        };
        let value = match (tag, rmpv_scalar(value)?) {
            (10, v @ LValue::I(_)) | (20, v @ LValue::F(_)) | (40, v @ LValue::B(_)) => v,
            (30, v @ LValue::S(_)) => v,
            (tag, v) => return Err(format!("tag {tag} with {v:?}")),
        };
        out.params.push((format!("{device}.{param}"), value));
    }
    match atts.as_slice() {
        [] => {}
        [Value::Array(pair)] => match pair.as_slice() {
            [Value::String(name), Value::Binary(data)]
                if name.as_str() == Some(attachment_name) =>
            {
                out.attachment = Some(data.clone());
            }
            _ => return Err("attachment not [name, bin]".into()),
        },
        _ => return Err(format!("{} attachments", atts.len())),
    }
    Ok(out)
}

/// The floor's flat map read with rmpv.
fn msgpack_map(wire: &[u8]) -> Result<Logical, String> {
    use rmpv::Value;
    let Value::Map(pairs) = rmpv_whole(wire)? else {
        return Err("not a map".into());
    };
    let mut out = Logical::default();
    for (k, v) in &pairs {
        let key = k.as_str().ok_or("key not a str")?;
        match v {
            Value::Binary(b) if key == ATTACHMENT_FIELD => out.attachment = Some(b.clone()),
            v => out.params.push((key.to_owned(), rmpv_scalar(v)?)),
        }
    }
    Ok(out)
}

fn protobuf(wire: &[u8]) -> Result<Logical, String> {
    use crate::proto::bench::{telemetry_value::V, TelemetryFrame};
    let msg = TelemetryFrame::decode(wire).map_err(|e| e.to_string())?;
    let mut out = Logical::default();
    for (k, v) in msg.params {
        let v = match v.v.ok_or("empty oneof")? {
            V::D(x) => LValue::F(x),
            V::I(x) => LValue::I(x),
            V::B(x) => LValue::B(x),
            V::S(x) => LValue::S(x),
        };
        out.params.push((k, v));
    }
    out.attachment = (!msg.attachment.is_empty()).then_some(msg.attachment);
    Ok(out)
}

fn json(wire: &[u8]) -> Result<Logical, String> {
    use serde_json::Value;
    let Value::Object(map) = serde_json::from_slice(wire).map_err(|e| e.to_string())? else {
        return Err("not an object".into());
    };
    let mut out = Logical::default();
    for (k, v) in map {
        let v = match v {
            Value::String(s) if k == ATTACHMENT_FIELD => {
                out.attachment = Some(BASE64_STANDARD.decode(s).map_err(|e| e.to_string())?);
                continue;
            }
            Value::Number(n) if n.is_f64() => LValue::F(n.as_f64().ok_or("number")?),
            Value::Number(n) => LValue::I(n.as_i64().ok_or("integer beyond i64")?),
            Value::Bool(b) => LValue::B(b),
            Value::String(s) => LValue::S(s),
            other => return Err(format!("unexpected {other}")),
        };
        out.params.push((k, v));
    }
    Ok(out)
}

fn cbor(wire: &[u8]) -> Result<Logical, String> {
    use ciborium::Value;
    let mut rd = wire;
    let Value::Map(pairs) = ciborium::from_reader(&mut rd).map_err(|e| e.to_string())? else {
        return Err("not a map".into());
    };
    if !rd.is_empty() {
        return Err(format!("{} trailing bytes", rd.len()));
    }
    let mut out = Logical::default();
    for (k, v) in pairs {
        let Value::Text(k) = k else {
            return Err("key not text".into());
        };
        let v = match v {
            Value::Bytes(b) if k == ATTACHMENT_FIELD => {
                out.attachment = Some(b);
                continue;
            }
            Value::Float(x) => LValue::F(x),
            Value::Integer(i) => LValue::I(i64::try_from(i).map_err(|e| e.to_string())?),
            Value::Bool(b) => LValue::B(b),
            Value::Text(s) => LValue::S(s),
            other => return Err(format!("unexpected {other:?}")),
        };
        out.params.push((k, v));
    }
    Ok(out)
}

fn flex(wire: &[u8]) -> Result<Logical, String> {
    use flexbuffers::{FlexBufferType as T, Reader};
    let map = Reader::get_root(wire)
        .and_then(|r| r.get_map())
        .map_err(|e| e.to_string())?;
    let mut out = Logical::default();
    for (k, r) in map.iter_keys().zip(map.iter_values()) {
        let v = match r.flexbuffer_type() {
            T::Blob if k == ATTACHMENT_FIELD => {
                out.attachment = Some(r.get_blob().map_err(|e| e.to_string())?.0.to_vec());
                continue;
            }
            T::Float => LValue::F(r.get_f64().map_err(|e| e.to_string())?),
            T::Int | T::UInt => LValue::I(r.get_i64().map_err(|e| e.to_string())?),
            T::Bool => LValue::B(r.get_bool().map_err(|e| e.to_string())?),
            T::String => LValue::S(r.get_str().map_err(|e| e.to_string())?.to_owned()),
            t => return Err(format!("unexpected {t:?}")),
        };
        out.params.push((k.to_owned(), v));
    }
    Ok(out)
}

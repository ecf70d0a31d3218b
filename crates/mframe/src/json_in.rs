//! `mframe encode`: JSON Lines in the dump schema back into frames.
//!
//! Strict on purpose: a misspelt field or a value of the wrong JSON type is
//! an error naming the line and the field, not a silent default, because a
//! hand-written frame that quietly differs from what was meant is worse than
//! no frame.

use std::collections::HashSet;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use messageframe::{now_millis, Frame, Header, KeyDisplay, UnknownValue, ValueRef, SEPARATOR};
use serde_json::{Map, Value};

/// MessagePack's length limit; the CLI refuses longer attachments and texts
/// first, naming the JSON field (the library's encoder would refuse them too).
const MAX_WIRE_LEN: u64 = u32::MAX as u64;

/// Encodes line `line_no` (1-based, for messages) into one frame appended
/// to `out`; a blank line makes none.
pub fn encode_line(line: &[u8], line_no: usize, out: &mut Vec<u8>) -> Result<(), String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| format!("line {line_no}: {}", json_syntax_error(&e)))?;
    let frame = frame_from_json(&value).map_err(|e| format!("line {line_no}: {e}"))?;
    frame
        .encode_into(out)
        .map_err(|e| format!("line {line_no}: {e}"))
}

/// serde_json's message says "at line 1 column N" about the single line it
/// was given; only the column is worth keeping.
fn json_syntax_error(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = msg.strip_suffix(&suffix).unwrap_or(&msg);
    // A pretty-printed object spread over lines ends early on its first line.
    let hint = if e.is_eof() {
        " (encode reads one JSON object per line)"
    } else {
        ""
    };
    format!("invalid JSON at column {}: {msg}{hint}", e.column())
}

fn frame_from_json(v: &Value) -> Result<Frame, String> {
    let obj = object(v, "the frame")?;
    known_fields(obj, &["header", "params", "attachments"], "the frame")?;
    let header = match obj.get("header") {
        Some(h) => header_from_json(h)?,
        None => default_header(),
    };
    let mut frame = Frame::new(header);
    let mut text_len = 0u64;
    if let Some(params) = obj.get("params") {
        let mut seen = HashSet::new();
        for (i, p) in array(params, "params")?.iter().enumerate() {
            add_param(
                &mut frame,
                p,
                &format!("params[{i}]"),
                &mut seen,
                &mut text_len,
            )?;
        }
    }
    if let Some(atts) = obj.get("attachments") {
        let mut names_len = 0u64;
        for (i, a) in array(atts, "attachments")?.iter().enumerate() {
            add_attachment(&mut frame, a, &format!("attachments[{i}]"), &mut names_len)?;
        }
    }
    Ok(frame)
}

/// The library's defaults (SPEC §1): ids 0, version 1, flags 0, now.
fn default_header() -> Header {
    Header::from_fields(now_millis(), 0, 0, 0, 0, 0, Header::DEFAULT_VERSION, 0)
}

fn header_from_json(v: &Value) -> Result<Header, String> {
    let obj = object(v, "header")?;
    known_fields(obj, &Header::FIELD_NAMES, "header")?;
    let mut h = default_header();
    // `integer` checks the field's range, so the narrowing `try_from`
    // cannot fail; it is there to avoid an `as` cast.
    macro_rules! field {
        ($name:literal, $ty:ty, $set:ident) => {
            if let Some(x) = obj.get($name) {
                let at = concat!("header.", $name);
                let n = integer(x, <$ty>::MIN.into(), <$ty>::MAX.into(), at)?;
                h.$set(<$ty>::try_from(n).map_err(|_| format!("{at}: out of range"))?);
            }
        };
    }
    field!("timestamp", u64, set_timestamp);
    field!("counter", u64, set_counter);
    field!("source", u32, set_source);
    field!("target", u32, set_target);
    field!("message_id", i32, set_message_id);
    field!("message_type", i32, set_message_type);
    field!("version", u16, set_version);
    field!("flags", u16, set_flags);
    Ok(h)
}

fn add_param(
    frame: &mut Frame,
    v: &Value,
    at: &str,
    seen: &mut HashSet<(String, String)>,
    text_len: &mut u64,
) -> Result<(), String> {
    let obj = object(v, at)?;
    let device = string(field(obj, "device", at)?, &format!("{at}.device"))?;
    let param = string(field(obj, "param", at)?, &format!("{at}.param"))?;
    let ty = string(field(obj, "type", at)?, &format!("{at}.type"))?;
    if device.contains(SEPARATOR) {
        // The key would split at that separator when decoded, giving a
        // different device; Frame::add treats it as a caller bug.
        return Err(format!(
            "{at}.device: {device:?} contains the key separator U+001F"
        ));
    }
    if !seen.insert((device.to_owned(), param.to_owned())) {
        return Err(format!(
            "{at}: duplicate key `{}`; frames built by mframe encode hold each key once",
            KeyDisplay::new(device, param)
        ));
    }
    *text_len += device.len() as u64 + 1 + param.len() as u64;

    let value_at = format!("{at}.value");
    let raw;
    let value = match ty {
        "int64" => {
            known_fields(obj, &["device", "param", "type", "value"], at)?;
            let n = integer(field(obj, "value", at)?, i64::MIN.into(), i64::MAX.into(), &value_at)?;
            ValueRef::Int(i64::try_from(n).map_err(|_| format!("{value_at}: out of range"))?)
        }
        "double" => {
            known_fields(obj, &["device", "param", "type", "value"], at)?;
            ValueRef::Double(double(field(obj, "value", at)?, &value_at)?)
        }
        "string" => {
            known_fields(obj, &["device", "param", "type", "value"], at)?;
            let s = string(field(obj, "value", at)?, &value_at)?;
            *text_len += s.len() as u64;
            ValueRef::String(s)
        }
        "bool" => {
            known_fields(obj, &["device", "param", "type", "value"], at)?;
            match field(obj, "value", at)? {
                Value::Bool(b) => ValueRef::Bool(*b),
                other => return Err(format!("{value_at}: expected true or false, found {}", found(other))),
            }
        }
        "unknown" => {
            known_fields(obj, &["device", "param", "type", "tag", "raw"], at)?;
            let tag_at = format!("{at}.tag");
            // Any MessagePack integer is a tag.
            let tag = integer(field(obj, "tag", at)?, i64::MIN.into(), u64::MAX.into(), &tag_at)?;
            if matches!(tag, 10 | 20 | 30 | 40) {
                return Err(format!(
                    "{tag_at}: {tag} is the tag of a known type; write it with that \"type\" instead"
                ));
            }
            raw = base64(field(obj, "raw", at)?, &format!("{at}.raw"))?;
            *text_len += raw.len() as u64;
            let unknown = UnknownValue::new(tag, &raw).ok_or_else(|| {
                format!("{at}.raw: the bytes are not exactly one MessagePack value")
            })?;
            ValueRef::Unknown(unknown)
        }
        other => {
            return Err(format!(
                "{at}.type: unknown type {other:?} (expected \"int64\", \"double\", \"string\", \"bool\" or \"unknown\")"
            ))
        }
    };
    if *text_len >= MAX_WIRE_LEN {
        return Err(format!("{at}: the frame's keys and strings exceed 4 GiB"));
    }
    frame.add(device, param, value);
    Ok(())
}

fn add_attachment(
    frame: &mut Frame,
    v: &Value,
    at: &str,
    names_len: &mut u64,
) -> Result<(), String> {
    let obj = object(v, at)?;
    known_fields(obj, &["name", "len", "data"], at)?;
    let name = string(field(obj, "name", at)?, &format!("{at}.name"))?;
    let data = match obj.get("data") {
        Some(d) => base64(d, &format!("{at}.data"))?,
        None => {
            return Err(format!(
                "{at}: missing field \"data\" (dump with --with-data to include attachment bytes)"
            ))
        }
    };
    if let Some(len) = obj.get("len") {
        let len = integer(len, 0, u64::MAX.into(), &format!("{at}.len"))?;
        if len != data.len() as i128 {
            return Err(format!(
                "{at}.len: {len} does not match the {} bytes of \"data\"",
                data.len()
            ));
        }
    }
    *names_len += name.len() as u64;
    if data.len() as u64 >= MAX_WIRE_LEN || *names_len >= MAX_WIRE_LEN {
        return Err(format!("{at}: larger than MessagePack's 4 GiB limit"));
    }
    frame.add_attachment(name, data);
    Ok(())
}

fn field<'v>(obj: &'v Map<String, Value>, name: &str, at: &str) -> Result<&'v Value, String> {
    obj.get(name)
        .ok_or_else(|| format!("{at}: missing field \"{name}\""))
}

fn known_fields(obj: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), String> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(format!(
            "{at}: unknown field {k:?} (expected {})",
            allowed
                .iter()
                .map(|a| format!("\"{a}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn object<'v>(v: &'v Value, at: &str) -> Result<&'v Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("{at}: expected a JSON object, found {}", found(v)))
}

fn array<'v>(v: &'v Value, at: &str) -> Result<&'v Vec<Value>, String> {
    v.as_array()
        .ok_or_else(|| format!("{at}: expected a JSON array, found {}", found(v)))
}

fn string<'v>(v: &'v Value, at: &str) -> Result<&'v str, String> {
    v.as_str()
        .ok_or_else(|| format!("{at}: expected a string, found {}", found(v)))
}

/// An integer in `min..=max`. i128 holds every u64 and i64, so one function
/// checks every width. JSON numbers with a fraction or exponent (`10.0`,
/// `1e3`) are not integers here: the dump never writes them for integer
/// fields, so they are a mistake.
fn integer(v: &Value, min: i128, max: i128, at: &str) -> Result<i128, String> {
    let n = match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        _ => None,
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(n) => Err(format!("{at}: integer {n} out of range {min}..={max}")),
        None => Err(format!(
            "{at}: expected an integer in {min}..={max}, found {}",
            found(v)
        )),
    }
}

/// Any JSON number, or one of the strings the dump writes for non-finite
/// values.
fn double(v: &Value, at: &str) -> Result<f64, String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| format!("{at}: {n} is not representable as a double")),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(format!(
                "{at}: expected a number or \"NaN\", \"Infinity\", \"-Infinity\", found {}",
                found(v)
            )),
        },
        _ => Err(format!(
            "{at}: expected a number or \"NaN\", \"Infinity\", \"-Infinity\", found {}",
            found(v)
        )),
    }
}

fn base64(v: &Value, at: &str) -> Result<Vec<u8>, String> {
    let s = string(v, at)?;
    BASE64
        .decode(s)
        .map_err(|e| format!("{at}: invalid base64: {e}"))
}

/// A short description of a JSON value for error messages.
fn found(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() <= 40 => format!("the string {s:?}"),
        Value::String(_) => "a string".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

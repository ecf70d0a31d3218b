//! `--mirror json`: a frame as a JSON object that Foxglove and PlotJuggler
//! plot, `{"header": {...}, "<device>": {"<param>": value, ...}, ...}`,
//! and the JSON Schema of a channel's first frame.
//!
//! - Values: int64 and double as JSON numbers (NaN and the infinities,
//!   which JSON cannot hold, as `null`), strings, booleans. Values of an
//!   unknown tag are left out (their bytes are in the frame on the
//!   `msgpack` channel).
//! - A key that repeats in a frame: the first occurrence is written (what
//!   lookups find, SPEC section 3).
//! - Devices keep the order of their first parameter, parameters their
//!   wire order. A device named `header` shares the header's object: its
//!   parameters are added after the header fields, except those named like
//!   one (left out).

use std::collections::{HashMap, HashSet};

use messageframe::{FrameView, Header, ValueRef};

/// The names of the header's fields, in wire order.
const HEADER_FIELDS: [&str; 8] = Header::FIELD_NAMES;

/// The parameters of one frame grouped by device, first occurrences only.
struct Grouped<'a> {
    /// Each device with the indexes (into `params`) of its parameters.
    devices: Vec<(&'a str, Vec<usize>)>,
    params: Vec<(&'a str, ValueRef<'a>)>,
}

fn group<'a>(view: &FrameView<'a>) -> Grouped<'a> {
    let mut devices: Vec<(&'a str, Vec<usize>)> = Vec::new();
    let mut index: HashMap<&'a str, usize> = HashMap::new();
    let mut seen: HashSet<(&'a str, &'a str)> = HashSet::new();
    let mut params = Vec::with_capacity(view.len());
    for (device, param, value) in view.iter() {
        if matches!(value, ValueRef::Unknown(_)) || !seen.insert((device, param)) {
            continue;
        }
        if device == "header" && HEADER_FIELDS.contains(&param) {
            continue;
        }
        let d = *index.entry(device).or_insert_with(|| {
            devices.push((device, Vec::new()));
            devices.len() - 1
        });
        devices[d].1.push(params.len());
        params.push((param, value));
    }
    Grouped { devices, params }
}

/// The JSON message of `view` into `out` (cleared first).
pub(crate) fn message(out: &mut Vec<u8>, view: &FrameView<'_>) {
    out.clear();
    let grouped = group(view);
    out.extend_from_slice(b"{\"header\":{");
    write_header(out, view.header());
    let own = grouped.devices.iter().find(|(d, _)| *d == "header");
    if let Some((_, params)) = own {
        for &p in params {
            out.push(b',');
            write_param(out, grouped.params[p]);
        }
    }
    out.push(b'}');
    for (device, params) in &grouped.devices {
        if *device == "header" {
            continue;
        }
        out.push(b',');
        write_str(out, device);
        out.extend_from_slice(b":{");
        for (i, &p) in params.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_param(out, grouped.params[p]);
        }
        out.push(b'}');
    }
    out.push(b'}');
}

fn write_header(out: &mut Vec<u8>, h: &Header) {
    let values: [i128; 8] = [
        h.timestamp().into(),
        h.counter().into(),
        h.source().into(),
        h.target().into(),
        h.message_id().into(),
        h.message_type().into(),
        h.version().into(),
        h.flags().into(),
    ];
    for (i, (name, value)) in HEADER_FIELDS.iter().zip(values).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, name);
        out.push(b':');
        out.extend_from_slice(value.to_string().as_bytes());
    }
}

fn write_param(out: &mut Vec<u8>, (param, value): (&str, ValueRef<'_>)) {
    write_str(out, param);
    out.push(b':');
    match value {
        ValueRef::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        ValueRef::Double(d) if d.is_finite() => {
            // serde_json's shortest round-trip form.
            let _ = serde_json::to_writer(&mut *out, &d);
        }
        ValueRef::Double(_) => out.extend_from_slice(b"null"),
        ValueRef::String(s) => write_str(out, s),
        ValueRef::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        // Left out by `group`.
        _ => out.extend_from_slice(b"null"),
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// The JSON Schema (draft 2020-12) of the mirror messages of a channel, from
/// its first frame: the header's fields, and each device with the
/// parameters that frame has. Later parameters are not in it (a channel's
/// schema is written before its first message); `additionalProperties` is
/// left open so that they are valid.
pub(crate) fn schema(view: &FrameView<'_>, title: &str) -> Vec<u8> {
    use serde_json::{json, Map, Value};
    let grouped = group(view);
    let integer = || json!({"type": "integer"});
    let mut header = Map::new();
    for name in HEADER_FIELDS {
        header.insert(name.to_owned(), integer());
    }
    let kind = |value: ValueRef<'_>| match value {
        ValueRef::Int(_) => json!({"type": "integer"}),
        ValueRef::Double(_) => json!({"type": ["number", "null"]}),
        ValueRef::String(_) => json!({"type": "string"}),
        ValueRef::Bool(_) => json!({"type": "boolean"}),
        _ => json!({}),
    };
    let mut properties = Map::new();
    for (device, params) in &grouped.devices {
        let mut fields = Map::new();
        for &p in params {
            let (param, value) = grouped.params[p];
            fields.insert(param.to_owned(), kind(value));
        }
        if *device == "header" {
            header.extend(fields);
        } else {
            properties.insert(
                (*device).to_owned(),
                json!({"type": "object", "properties": fields}),
            );
        }
    }
    let mut all = Map::new();
    all.insert(
        "header".to_owned(),
        json!({"type": "object", "properties": header}),
    );
    all.extend(properties);
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "properties": Value::Object(all),
    });
    serde_json::to_vec(&schema).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use messageframe::{Decoder, Frame, Header};

    fn frame() -> Vec<u8> {
        let mut f = Frame::new(
            Header::builder()
                .timestamp(1_700_000_000_123)
                .counter(9)
                .source(7)
                .target(8)
                .message_id(5)
                .message_type(3)
                .build(),
        );
        f.add("sdr", "gain", 30.5);
        f.add("sdr", "locked", true);
        f.add("gps", "fix", 3i64);
        f.add("sdr", "gain", 99.0);
        f.add("sdr", "name", "rx \"1\"");
        f.add("sdr", "nan", f64::NAN);
        f.add("header", "counter", 1i64);
        f.add("header", "note", "x");
        f.encode().unwrap()
    }

    #[test]
    fn a_mirror_message_groups_parameters_by_device_after_the_header() {
        let bytes = frame();
        let view = Decoder::new().view(&bytes).unwrap();
        let mut out = Vec::new();
        message(&mut out, &view);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\"header\":{\"timestamp\":1700000000123,\"counter\":9,\"source\":7,\"target\":8,\
             \"message_id\":5,\"message_type\":3,\"version\":1,\"flags\":0,\"note\":\"x\"},\
             \"sdr\":{\"gain\":30.5,\"locked\":true,\"name\":\"rx \\\"1\\\"\",\"nan\":null},\
             \"gps\":{\"fix\":3}}"
        );
        // Valid JSON, read back by serde_json.
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["sdr"]["gain"], 30.5);
    }

    #[test]
    fn the_schema_lists_the_first_frames_parameters() {
        let bytes = frame();
        let view = Decoder::new().view(&bytes).unwrap();
        let schema: serde_json::Value = serde_json::from_slice(&schema(&view, "t")).unwrap();
        let props = &schema["properties"];
        assert_eq!(props["sdr"]["properties"]["gain"]["type"][0], "number");
        assert_eq!(props["sdr"]["properties"]["locked"]["type"], "boolean");
        assert_eq!(props["gps"]["properties"]["fix"]["type"], "integer");
        assert_eq!(
            props["header"]["properties"]["timestamp"]["type"],
            "integer"
        );
        assert_eq!(props["header"]["properties"]["note"]["type"], "string");
        assert_eq!(schema["type"], "object");
    }
}

//! The dump schema, written by hand into a byte buffer.
//!
//! Writing directly (rather than building a `serde_json::Value`) keeps the
//! field order of the documented schema, streams large attachments without an
//! intermediate tree, and has no failure path: nothing here can panic or
//! return an error, whatever the frame holds.

use std::fmt::Write as _;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use messageframe::{FrameView, Header, ValueRef};

/// One frame as one JSON line (with its newline).
pub fn write_frame(out: &mut Vec<u8>, view: &FrameView<'_>, with_data: bool) {
    out.extend_from_slice(b"{\"header\":");
    write_header(out, view.header());
    out.extend_from_slice(b",\"params\":[");
    for (i, (device, param, value)) in view.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"device\":");
        write_str(out, device);
        out.extend_from_slice(b",\"param\":");
        write_str(out, param);
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(value.value_type().name().as_bytes());
        out.push(b'"');
        match value {
            ValueRef::Unknown(u) => {
                push_fmt(out, format_args!(",\"tag\":{},\"raw\":\"", u.tag()));
                write_base64(out, u.raw());
                out.push(b'"');
            }
            known => {
                out.extend_from_slice(b",\"value\":");
                write_value(out, known);
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"attachments\":[");
    for (i, (name, data)) in view.attachments().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        write_str(out, name);
        push_fmt(out, format_args!(",\"len\":{}", data.len()));
        if with_data {
            out.extend_from_slice(b",\"data\":\"");
            write_base64(out, data);
            out.push(b'"');
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}\n");
}

/// The header object, in wire field order.
pub fn write_header(out: &mut Vec<u8>, h: &Header) {
    push_fmt(
        out,
        format_args!(
            "{{\"timestamp\":{},\"counter\":{},\"source\":{},\"target\":{},\
             \"message_id\":{},\"message_type\":{},\"version\":{},\"flags\":{}}}",
            h.timestamp(),
            h.counter(),
            h.source(),
            h.target(),
            h.message_id(),
            h.message_type(),
            h.version(),
            h.flags()
        ),
    );
}

fn write_value(out: &mut Vec<u8>, value: ValueRef<'_>) {
    match value {
        ValueRef::Int(v) => push_fmt(out, format_args!("{v}")),
        ValueRef::Double(v) => write_double(out, v),
        ValueRef::String(s) => write_str(out, s),
        ValueRef::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        // Unknown values are handled by the caller (they have their own
        // fields); `ValueRef` is non-exhaustive.
        _ => out.extend_from_slice(b"null"),
    }
}

/// Finite doubles in Rust's shortest round-trip form, which is always a
/// valid JSON number (`10.0`, `1e19`, `-0.0`, `5e-324`); JSON has no
/// non-finite numbers, so those become the strings the interop JSON uses.
pub fn write_double(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if v == f64::INFINITY {
        out.extend_from_slice(b"\"Infinity\"");
    } else if v == f64::NEG_INFINITY {
        out.extend_from_slice(b"\"-Infinity\"");
    } else {
        push_fmt(out, format_args!("{v:?}"));
    }
}

/// A JSON string literal. Only `"`, `\` and control characters need escaping;
/// everything else is valid UTF-8 already and is copied as is.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: Option<&[u8]> = match c {
            '"' => Some(b"\\\""),
            '\\' => Some(b"\\\\"),
            '\n' => Some(b"\\n"),
            '\r' => Some(b"\\r"),
            '\t' => Some(b"\\t"),
            c if u32::from(c) < 0x20 => None,
            _ => continue,
        };
        out.extend_from_slice(&s.as_bytes()[start..i]);
        match esc {
            Some(e) => out.extend_from_slice(e),
            None => push_fmt(out, format_args!("\\u{:04x}", u32::from(c))),
        }
        start = i + c.len_utf8();
    }
    out.extend_from_slice(&s.as_bytes()[start..]);
    out.push(b'"');
}

fn write_base64(out: &mut Vec<u8>, data: &[u8]) {
    let mut s = String::new();
    BASE64.encode_string(data, &mut s);
    out.extend_from_slice(s.as_bytes());
}

/// `write!` into a `Vec<u8>` without an `io::Result` to ignore: formatting
/// into a `String` cannot fail.
fn push_fmt(out: &mut Vec<u8>, args: std::fmt::Arguments<'_>) {
    let mut s = String::new();
    let _ = s.write_fmt(args);
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_valid_json_that_parses_back() {
        for text in ["", "plain", "q\"b\\s", "\u{1f}\u{0}\n\r\t\u{7f}", "é✓🚀"] {
            let json = s(|o| write_str(o, text));
            let back: String = serde_json::from_str(&json).unwrap();
            assert_eq!(back, text, "{json}");
        }
        assert_eq!(s(|o| write_str(o, "a\u{1f}b")), "\"a\\u001fb\"");
    }

    #[test]
    fn doubles_round_trip_exactly() {
        for v in [
            0.0,
            -0.0,
            10.0,
            1e19,
            0.1,
            -2.5e-300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
        ] {
            let json = s(|o| write_double(o, v));
            let back: f64 = serde_json::from_str(&json).unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{json}");
        }
        assert_eq!(s(|o| write_double(o, 10.0)), "10.0");
        assert_eq!(s(|o| write_double(o, f64::NAN)), "\"NaN\"");
        assert_eq!(s(|o| write_double(o, f64::NEG_INFINITY)), "\"-Infinity\"");
    }
}

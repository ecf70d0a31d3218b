//! The dump schema: messageframe's own `Serialize` impls for frames and
//! headers (feature `serde`), through serde_json with the formatter below.
//!
//! The formatter keeps the bytes `mframe dump` has always printed where
//! serde_json's compact formatter would differ: doubles in Rust's shortest
//! round-trip form (`1e16` and `1.234e-5`, where serde_json writes `1e+16`
//! and `0.00001234`), and
//! backspace and form feed as `\u0008` and `\u000c` (serde_json writes
//! `\b` and `\f`). Attachment data is base64-encoded piecewise straight
//! into the output (serde_json streams `collect_str`), not through a copy.
//! Writing into a `Vec` cannot fail and the impls have no error path of
//! their own, so nothing here can fail or panic, whatever the frame holds.

use std::io;

use messageframe::serde::WithData;
use messageframe::{FrameView, Header};
use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter, Serializer};

/// serde_json's compact output, with the dump's notation for doubles and
/// two control characters.
struct DumpFormatter;

impl Formatter for DumpFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        // Finite only: the impls write non-finite doubles as strings.
        write!(writer, "{value:?}")
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        char_escape: CharEscape,
    ) -> io::Result<()> {
        match char_escape {
            CharEscape::Backspace => writer.write_all(b"\\u0008"),
            CharEscape::FormFeed => writer.write_all(b"\\u000c"),
            other => CompactFormatter.write_char_escape(writer, other),
        }
    }
}

/// Serializes `value` onto `out` with the dump's formatter.
fn write_json(out: &mut Vec<u8>, value: &impl Serialize) {
    let mut ser = Serializer::with_formatter(out, DumpFormatter);
    // Infallible: see the module's comment.
    let _ = value.serialize(&mut ser);
}

/// One frame as one JSON line (with its newline).
pub fn write_frame(out: &mut Vec<u8>, view: &FrameView<'_>, with_data: bool) {
    if with_data {
        write_json(out, &WithData(view));
    } else {
        write_json(out, view);
    }
    out.push(b'\n');
}

/// The header object, in wire field order.
pub fn write_header(out: &mut Vec<u8>, h: &Header) {
    write_json(out, h);
}

/// A JSON string literal, escaped as the dump escapes strings.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    write_json(out, &s);
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
        assert_eq!(
            s(|o| write_str(o, "\u{8}\u{c}\u{0}\"\\\n")),
            "\"\\u0008\\u000c\\u0000\\\"\\\\\\n\""
        );
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
            let json = s(|o| write_json(o, &messageframe::Value::Double(v)));
            let json = json
                .strip_prefix(r#"{"type":"double","value":"#)
                .and_then(|j| j.strip_suffix('}'))
                .unwrap();
            let back: f64 = serde_json::from_str(json).unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{json}");
        }
        let value = |v: f64| s(|o| write_json(o, &messageframe::Value::Double(v)));
        assert_eq!(value(10.0), r#"{"type":"double","value":10.0}"#);
        assert_eq!(value(1.234e-5), r#"{"type":"double","value":1.234e-5}"#);
        assert_eq!(value(1e19), r#"{"type":"double","value":1e19}"#);
        assert_eq!(value(f64::NAN), r#"{"type":"double","value":"NaN"}"#);
        assert_eq!(
            value(f64::NEG_INFINITY),
            r#"{"type":"double","value":"-Infinity"}"#
        );
    }
}

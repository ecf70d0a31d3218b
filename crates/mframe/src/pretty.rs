//! `mframe dump --pretty`: a view for people, not for programs (its layout
//! may change; scripts should use the JSON Lines output).

use std::collections::HashMap;
use std::fmt::Write as _;

use messageframe::{FrameView, Header, KeyDisplay, ValueRef};

use crate::json_out::write_str;

/// Attachment and unknown-value bytes shown before the preview is cut.
const PREVIEW_BYTES: usize = 16;

/// The header on one line, the parameters grouped by device (devices in
/// order of first appearance, parameters in wire order within a device), then
/// the attachments; a blank line after the frame.
pub fn write_frame(out: &mut Vec<u8>, index: usize, view: &FrameView<'_>) {
    let mut s = String::new();
    write_header_line(&mut s, index, view.header());

    let mut groups: Vec<(&str, Vec<(&str, ValueRef<'_>)>)> = Vec::new();
    let mut by_device: HashMap<&str, usize> = HashMap::new();
    for (device, param, value) in view.iter() {
        let g = *by_device.entry(device).or_insert_with(|| {
            groups.push((device, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push((param, value));
    }
    for (device, params) in &groups {
        for (param, value) in params {
            // The one human form of a key, as errors and the viewer print it.
            let _ = write!(s, "  {} = ", KeyDisplay::new(device, param));
            push_value(&mut s, *value);
            s.push('\n');
        }
    }
    for (name, data) in view.attachments() {
        s.push_str("  attachment ");
        push_name(&mut s, name);
        let _ = write!(s, ": {} bytes", data.len());
        if !data.is_empty() {
            s.push_str("  ");
            push_hex_preview(&mut s, data);
        }
        s.push('\n');
    }
    s.push('\n');
    out.extend_from_slice(s.as_bytes());
}

fn write_header_line(s: &mut String, index: usize, h: &Header) {
    let _ = write!(s, "frame {index}: timestamp {}", h.timestamp());
    if let Some(date) = utc_date(h.timestamp()) {
        let _ = write!(s, " ({date})");
    }
    let _ = writeln!(
        s,
        ", counter {}, source {}, target {}, message_id {}, message_type {}, version {}, flags 0x{:04x}",
        h.counter(),
        h.source(),
        h.target(),
        h.message_id(),
        h.message_type(),
        h.version(),
        h.flags()
    );
}

/// Attachment names print as they are unless they are empty or hold a
/// control character, which would make the line ambiguous or mess up the
/// terminal.
fn push_name(s: &mut String, name: &str) {
    if name.is_empty() || name.chars().any(char::is_control) {
        push_quoted(s, name);
    } else {
        s.push_str(name);
    }
}

fn push_quoted(s: &mut String, text: &str) {
    let mut buf = Vec::new();
    write_str(&mut buf, text);
    s.push_str(&String::from_utf8_lossy(&buf));
}

/// Integers bare, doubles always with a `.` or an exponent (so 10.0 is not
/// mistaken for an int64), strings quoted.
fn push_value(s: &mut String, value: ValueRef<'_>) {
    match value {
        ValueRef::Int(v) => {
            let _ = write!(s, "{v}");
        }
        ValueRef::Double(v) if v.is_nan() => s.push_str("NaN"),
        ValueRef::Double(v) if v.is_infinite() => {
            s.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
        }
        ValueRef::Double(v) => {
            let _ = write!(s, "{v:?}");
        }
        ValueRef::String(text) => push_quoted(s, text),
        ValueRef::Bool(b) => {
            let _ = write!(s, "{b}");
        }
        ValueRef::Unknown(u) => {
            let n = u.raw().len();
            let _ = write!(
                s,
                "<unknown tag {}, {n} byte{}: ",
                u.tag(),
                if n == 1 { "" } else { "s" }
            );
            push_hex_preview(s, u.raw());
            s.push('>');
        }
        // `ValueRef` is non-exhaustive: a type added later prints as itself.
        other => {
            let _ = write!(s, "{other}");
        }
    }
}

fn push_hex_preview(s: &mut String, data: &[u8]) {
    for (i, b) in data.iter().take(PREVIEW_BYTES).enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    if data.len() > PREVIEW_BYTES {
        s.push_str(" …");
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for timestamps up to the year 9999; `None`
/// beyond, where the field is probably not a time at all.
fn utc_date(ms: u64) -> Option<String> {
    const MAX_MS: u64 = 253_402_300_800_000; // 10000-01-01T00:00:00Z
    if ms >= MAX_MS {
        return None;
    }
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).ok()?;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    ))
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// algorithm), to avoid a date-time dependency for one line of output.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_date(0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(
            utc_date(1_700_000_000_123).as_deref(),
            Some("2023-11-14T22:13:20.123Z")
        );
        assert_eq!(
            utc_date(951_782_400_000).as_deref(),
            Some("2000-02-29T00:00:00.000Z")
        );
        assert_eq!(
            utc_date(253_402_300_799_999).as_deref(),
            Some("9999-12-31T23:59:59.999Z")
        );
        assert_eq!(utc_date(u64::MAX), None);
    }
}

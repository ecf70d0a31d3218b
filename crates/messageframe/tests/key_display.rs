//! Keys print one way for people: `device.param`, a part quoted as a JSON
//! string when printing it bare could mislead (`KeyDisplay`), in error
//! messages and through `FlatKey`'s `Display`.

use messageframe::{Context, FlatKey, Frame, Header, KeyDisplay};
use proptest::prelude::*;

#[test]
fn plain_parts_print_bare_and_the_others_quoted() {
    let cases = [
        (("sdr_1", "rx_gain"), "sdr_1.rx_gain"),
        (("Grüße", "📡 level"), "Grüße.📡 level"),
        (("items.10", "price"), r#""items.10".price"#),
        (("gps", "fix.lat"), r#"gps."fix.lat""#),
        (("", "fw"), r#""".fw"#),
        (("d", ""), r#"d."""#),
        (("say \"hi\"", "x"), r#""say \"hi\"".x"#),
        (("a\\b", "x"), r"a\b.x"),
        (("core", "a\u{1f}b"), r#"core."a\u001fb""#),
        (("line\nbreak", "tab\there"), r#""line\nbreak"."tab\there""#),
        (("nul\0", "\u{7f}\u{85}"), r#""nul\u0000"."\u007f\u0085""#),
        ((" padded", "x "), r#"" padded"."x ""#),
        (
            ("zero\u{200b}width", "rtl\u{202e}"),
            r#""zero\u200bwidth"."rtl\u202e""#,
        ),
        (("bom\u{feff}", "x"), r#""bom\ufeff".x"#),
    ];
    for ((device, param), shown) in cases {
        assert_eq!(
            KeyDisplay::new(device, param).to_string(),
            shown,
            "{device:?} {param:?}"
        );
    }
    // A flat key splits at its first separator; without one the device is
    // empty, as the decoders read it.
    assert_eq!(
        KeyDisplay::from_flat("a\u{1f}b\u{1f}c").to_string(),
        r#"a."b\u001fc""#
    );
    assert_eq!(KeyDisplay::from_flat("nosep").to_string(), r#""".nosep"#);
    assert_eq!(
        FlatKey::new("items.0", "sku").unwrap().to_string(),
        r#""items.0".sku"#
    );
}

#[test]
fn errors_name_the_key_in_the_human_form_never_with_the_raw_separator() {
    let mut frame = Frame::new(Header::from_fields(1, 0, 0, 0, 0, 0, 1, 0));
    frame.add("core", "fw", "y".repeat(300).as_str());
    frame.add("items.10", "price", 2.5);
    let bytes = frame.encode().unwrap();
    // Cut inside the string's length prefix, then inside the double.
    let string_at = bytes.windows(2).position(|w| w == [0xda, 0x01]).unwrap();
    let err = Frame::decode(&bytes[..string_at + 2]).unwrap_err();
    assert_eq!(err.context(), &Context::Value("core\u{1f}fw".to_owned()));
    let message = err.to_string();
    assert!(message.ends_with("(in value of `core.fw`)"), "{message}");
    let double_at = bytes.iter().rposition(|&b| b == 0xcb).unwrap();
    let message = Frame::decode(&bytes[..double_at + 3])
        .unwrap_err()
        .to_string();
    assert!(
        message.ends_with(r#"(in value of `"items.10".price`)"#),
        "{message}"
    );
    assert!(!message.contains('\u{1f}') && !message.contains('␟'));
}

/// Reads a displayed key back: each part bare up to the first `.`, or a
/// JSON string.
fn parse(shown: &str) -> (String, String) {
    let (device, rest) = if shown.starts_with('"') {
        let mut stream = serde_json::Deserializer::from_str(shown).into_iter::<String>();
        let device = stream.next().unwrap().unwrap();
        (device, &shown[stream.byte_offset()..])
    } else {
        let dot = shown.find('.').unwrap();
        (shown[..dot].to_owned(), &shown[dot..])
    };
    let rest = rest.strip_prefix('.').expect("a dot after the device");
    let param = if rest.starts_with('"') {
        serde_json::from_str(rest).unwrap()
    } else {
        rest.to_owned()
    };
    (device, param)
}

fn part() -> impl Strategy<Value = String> {
    proptest::string::string_regex(
        "[a-z.\"\\\\ \u{1f}\u{0}\n\u{7f}\u{85}\u{200b}\u{202e}\u{2028}é🚀]{0,8}",
    )
    .unwrap()
}

proptest! {
    /// Any key reads back from its displayed form, which holds no control
    /// or invisible character.
    #[test]
    fn every_key_reads_back_from_its_displayed_form(device in part(), param in part()) {
        let shown = KeyDisplay::new(&device, &param).to_string();
        prop_assert_eq!(parse(&shown), (device, param));
        prop_assert!(!shown.chars().any(|c| c.is_control()
            || matches!(c, '\u{200b}' | '\u{202e}' | '\u{2028}')), "{}", shown);
    }
}

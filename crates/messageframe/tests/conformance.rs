//! Every encoding of every int, float, string, bool and binary case of the
//! cross-language msgpack-test-suite, placed where that kind of value is
//! allowed in a frame, decodes to the right value (SPEC §3: any valid
//! encoding is accepted).

mod common;

use messageframe::{ErrorKind, Frame, FrameView, ValueRef};
use serde_json::Value as Json;

fn hex(s: &str) -> Vec<u8> {
    s.split('-')
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn suite() -> serde_json::Map<String, Json> {
    let path = common::data_dir().join("conformance/msgpack-test-suite.json");
    let json: Json = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    json.as_object().unwrap().clone()
}

/// A frame whose only parameter `d.p` is `[tag, <encoding>]`.
fn with_value(tag: u8, encoding: &[u8]) -> Vec<u8> {
    let mut v = vec![
        0x93, 0x98, 1, 2, 3, 4, 5, 6, 1, 0, 0x81, 0xa3, b'd', 0x1f, b'p', 0x92, tag,
    ];
    v.extend_from_slice(encoding);
    v.push(0x90);
    v
}

/// A frame whose timestamp header field is `encoding`.
fn with_timestamp(encoding: &[u8]) -> Vec<u8> {
    let mut v = vec![0x93, 0x98];
    v.extend_from_slice(encoding);
    v.extend_from_slice(&[2, 3, 4, 5, 6, 1, 0, 0x80, 0x90]);
    v
}

fn decode_value(bytes: &[u8]) -> Result<ValueRef<'_>, messageframe::DecodeError> {
    let view = FrameView::new(bytes)?;
    let owned = Frame::decode(bytes)?;
    let v = view.find("d", "p").unwrap();
    // Owned and view agree (compare through Debug so NaN-free values match).
    assert_eq!(
        format!("{:?}", owned.find("d", "p").unwrap()),
        format!("{v:?}")
    );
    Ok(v)
}

fn is_float_marker(enc: &[u8]) -> bool {
    matches!(enc[0], 0xca | 0xcb)
}

#[test]
fn every_number_encoding_decodes_where_numbers_are_allowed() {
    let suite = suite();
    let mut checked = 0;
    for file in [
        "20.number-positive.yaml",
        "21.number-negative.yaml",
        "22.number-float.yaml",
        "23.number-bignum.yaml",
    ] {
        for case in suite[file].as_array().unwrap() {
            // Exact integer value where the suite gives one as a string.
            let exact: Option<i128> = case
                .get("bignum")
                .and_then(Json::as_str)
                .map(|s| s.parse().unwrap())
                .or_else(|| case["number"].as_i64().map(i128::from))
                .or_else(|| case["number"].as_u64().map(i128::from));
            // Cases with only a bignum have no float encodings.
            let as_f64 = case
                .get("number")
                .and_then(Json::as_f64)
                .unwrap_or_else(|| exact.unwrap() as f64);
            for enc in case["msgpack"].as_array().unwrap() {
                let enc = hex(enc.as_str().unwrap());
                // Under tag 20 (Double) every number encoding is accepted.
                let as_double = with_value(20, &enc);
                let v = decode_value(&as_double).unwrap_or_else(|e| panic!("{enc:02x?}: {e}"));
                let expected = match exact {
                    Some(i) if !is_float_marker(&enc) => i as f64,
                    _ => as_f64,
                };
                assert_eq!(v, ValueRef::Double(expected), "{file} {enc:02x?}");

                // Under tag 10 (Int64): integers that fit, never floats.
                let as_int = with_value(10, &enc);
                let r = decode_value(&as_int);
                match (
                    is_float_marker(&enc),
                    exact.and_then(|i| i64::try_from(i).ok()),
                ) {
                    (true, _) => assert!(
                        matches!(r.unwrap_err().kind(), ErrorKind::UnexpectedType { .. }),
                        "{enc:02x?}: a float under tag 10"
                    ),
                    (false, Some(i)) => assert_eq!(r.unwrap(), ValueRef::Int(i), "{enc:02x?}"),
                    (false, None) => {
                        assert_eq!(r.unwrap_err().kind(), &ErrorKind::IntegerOutOfRange)
                    }
                }

                // In the header (timestamp is u64): non-negative integers.
                let r = Frame::decode(&with_timestamp(&enc));
                match (
                    is_float_marker(&enc),
                    exact.and_then(|i| u64::try_from(i).ok()),
                ) {
                    (true, _) => assert!(r.is_err()),
                    (false, Some(u)) => {
                        assert_eq!(r.unwrap().header().timestamp(), u, "{enc:02x?}")
                    }
                    (false, None) => {
                        assert_eq!(r.unwrap_err().kind(), &ErrorKind::IntegerOutOfRange)
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} encodings checked");
}

#[test]
fn every_bool_encoding_decodes_under_tag_40() {
    for case in suite()["11.bool.yaml"].as_array().unwrap() {
        let b = case["bool"].as_bool().unwrap();
        for enc in case["msgpack"].as_array().unwrap() {
            let enc = hex(enc.as_str().unwrap());
            let bytes = with_value(40, &enc);
            assert_eq!(decode_value(&bytes).unwrap(), ValueRef::Bool(b));
        }
    }
}

#[test]
fn every_string_encoding_decodes_as_value_key_and_attachment_name() {
    let suite = suite();
    let mut checked = 0;
    for file in [
        "30.string-ascii.yaml",
        "31.string-utf8.yaml",
        "32.string-emoji.yaml",
    ] {
        for case in suite[file].as_array().unwrap() {
            let s = case["string"].as_str().unwrap();
            for enc in case["msgpack"].as_array().unwrap() {
                let enc = hex(enc.as_str().unwrap());
                // As a string value.
                let bytes = with_value(30, &enc);
                assert_eq!(decode_value(&bytes).unwrap(), ValueRef::String(s));
                // As a key (no separator: device "", the whole key as param).
                let mut key = vec![0x93, 0x98, 1, 2, 3, 4, 5, 6, 1, 0, 0x81];
                key.extend_from_slice(&enc);
                key.extend_from_slice(&[0x92, 0x0a, 0x07, 0x90]);
                let f = Frame::decode(&key).unwrap();
                assert_eq!(f.iter().next().map(|(d, p, _)| (d, p)), Some(("", s)));
                assert_eq!(
                    FrameView::new(&key).unwrap().find("", s),
                    Some(ValueRef::Int(7))
                );
                // As an attachment name.
                let mut att = vec![0x93, 0x98, 1, 2, 3, 4, 5, 6, 1, 0, 0x80, 0x91, 0x92];
                att.extend_from_slice(&enc);
                att.extend_from_slice(&[0xc4, 0x00]);
                assert_eq!(
                    Frame::decode(&att).unwrap().attachments().next().unwrap().0,
                    s
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20);
}

#[test]
fn every_binary_encoding_decodes_as_attachment_data() {
    for case in suite()["12.binary.yaml"].as_array().unwrap() {
        let data = match case["binary"].as_str().unwrap() {
            "" => vec![],
            h => hex(h),
        };
        for enc in case["msgpack"].as_array().unwrap() {
            let enc = hex(enc.as_str().unwrap());
            let mut bytes = vec![
                0x93, 0x98, 1, 2, 3, 4, 5, 6, 1, 0, 0x80, 0x91, 0x92, 0xa1, b'a',
            ];
            bytes.extend_from_slice(&enc);
            let f = Frame::decode(&bytes).unwrap();
            assert_eq!(&f.attachment("a").unwrap()[..], &data[..], "{enc:02x?}");
            assert_eq!(
                FrameView::new(&bytes).unwrap().attachment("a"),
                Some(&data[..])
            );
            // A binary where a string belongs is an error, not a conversion.
            assert!(Frame::decode(&with_value(30, &enc)).is_err());
        }
    }
}

#[test]
fn every_array_and_map_encoding_is_accepted_for_the_frame_structure() {
    // The top-level array, the header array, the parameter map and the
    // attachment list in their 16- and 32-bit forms.
    let bytes = [
        &[0xdd, 0, 0, 0, 3][..],
        &[0xdc, 0, 8, 1, 2, 3, 4, 5, 6, 1, 0],
        &[
            0xdf, 0, 0, 0, 1, 0xa3, b'd', 0x1f, b'p', 0xdc, 0, 2, 0x0a, 0x05,
        ],
        &[0xdd, 0, 0, 0, 1, 0xdc, 0, 2, 0xa1, b'a', 0xc4, 0x01, 0x09],
    ]
    .concat();
    let f = Frame::decode(&bytes).unwrap();
    assert_eq!(f.find("d", "p"), Some(ValueRef::Int(5)));
    assert_eq!(&f.attachment("a").unwrap()[..], &[9]);
    assert_eq!(f.header().flags(), 0);
    assert_eq!(
        FrameView::new(&bytes).unwrap().find("d", "p"),
        Some(ValueRef::Int(5))
    );
}

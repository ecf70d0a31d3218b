//! The public API behaves as the C++ library's does (SPEC section 4), and
//! the decoder follows the rules of SPEC section 3.

use bytes::Bytes;
use messageframe::{
    AddError, Context, DecodeError, Decoder, ErrorKind, Expected, FlatKey, Frame, FrameConfig,
    FrameView, Header, UnknownValue, UnknownValueBuf, Value, ValueRef, ValueType,
};

fn fixed_header() -> Header {
    Header::from_fields(1_700_000_000_000, 3, 10, 20, 1002, 2, 1, 0)
}

/// Hand-assembles a frame's bytes: header ints as given, then the raw map
/// body and attachment list.
fn frame_bytes(map: &[u8], attachments: &[u8]) -> Vec<u8> {
    let mut out = vec![0x93, 0x98, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x01, 0x00];
    out.extend_from_slice(map);
    out.extend_from_slice(attachments);
    out
}

fn fixstr(s: &str) -> Vec<u8> {
    assert!(s.len() < 32);
    let mut v = vec![0xa0 | s.len() as u8];
    v.extend_from_slice(s.as_bytes());
    v
}

/// `{key: [tag, value]}` entries concatenated, with a fixmap header.
fn map_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut v = vec![0x80 | entries.len() as u8];
    for (k, val) in entries {
        v.extend(fixstr(k));
        v.extend_from_slice(val);
    }
    v
}

fn err_of(r: Result<Frame, DecodeError>) -> DecodeError {
    r.expect_err("input must be rejected")
}

#[test]
fn add_then_find_returns_each_typed_value() {
    let mut f = Frame::new(fixed_header());
    f.add("sdr_1", "rx_gain", 30.5);
    f.add("sdr_1", "samples", 4096);
    f.add("sdr_1", "locked", true);
    f.add("core", "fw", "v1.3.5");
    f.add("core", "big", i64::MAX);
    f.add("core", "u32", u32::MAX);
    f.add("core", "f32", 0.5f32);
    let owned = String::from("owned");
    f.add("core", "string_ref", &owned);

    assert_eq!(f.len(), 8);
    assert_eq!(f.find("sdr_1", "rx_gain"), Some(ValueRef::Double(30.5)));
    assert_eq!(f.find("sdr_1", "samples"), Some(ValueRef::Int(4096)));
    assert_eq!(f.find("sdr_1", "locked"), Some(ValueRef::Bool(true)));
    assert_eq!(f.find("core", "fw"), Some(ValueRef::String("v1.3.5")));
    assert_eq!(f.find("core", "big").unwrap().as_i64(), Some(i64::MAX));
    assert_eq!(
        f.find("core", "u32").unwrap().as_i64(),
        Some(i64::from(u32::MAX))
    );
    assert_eq!(f.find("core", "f32").unwrap().as_f64(), Some(0.5));
    assert_eq!(
        f.find("core", "string_ref").unwrap().as_str(),
        Some("owned")
    );
    assert_eq!(f.find("core", "missing"), None);
    assert_eq!(f.find("sdr_2", "rx_gain"), None);
    assert!(f.contains("core", "fw"));
}

#[test]
fn typed_accessors_return_none_on_a_type_mismatch() {
    let v = ValueRef::from("text");
    assert_eq!(v.as_i64(), None);
    assert_eq!(v.as_f64(), None);
    assert_eq!(v.as_bool(), None);
    assert_eq!(v.as_str(), Some("text"));
    assert_eq!(v.value_type(), ValueType::String);
    let i = ValueRef::from(5);
    assert_eq!(i.as_f64(), None, "an int is not silently a double");
    assert_eq!(ValueRef::from(5.0).as_i64(), None);
    assert_eq!(ValueRef::from(true).as_str(), None);
}

#[test]
fn values_display_and_convert() {
    assert_eq!(ValueRef::from(42).to_string(), "42");
    assert_eq!(ValueRef::from(10.0).to_string(), "10.0");
    assert_eq!(ValueRef::from(f64::NAN).to_string(), "NaN");
    assert_eq!(ValueRef::from(false).to_string(), "false");
    assert_eq!(ValueRef::from("hi").to_string(), "hi");
    assert_eq!(Value::from(String::from("s")), ValueRef::String("s"));
    assert_eq!(Value::from(7u32).as_i64(), Some(7));
    assert_eq!(Value::from(1.5f32).as_f64(), Some(1.5));
    assert_eq!(ValueRef::from(3i32).to_value(), Value::Int(3));
    assert_eq!(ValueType::Double.tag(), Some(20));
    assert_eq!(ValueType::Unknown.tag(), None);
    assert_eq!(ValueRef::from(1).tag(), 10);
}

#[test]
fn set_upserts_and_keeps_the_position_of_an_existing_key() {
    let mut f = Frame::default();
    f.set("a", "x", 1);
    f.set("b", "y", 2);
    f.set("a", "x", "replaced");
    assert_eq!(f.len(), 2);
    let order: Vec<_> = f.iter().map(|(d, p, v)| format!("{d}.{p}={v}")).collect();
    assert_eq!(order, ["a.x=replaced", "b.y=2"]);
}

#[test]
fn update_changes_only_an_existing_key() {
    let mut f = Frame::default();
    assert!(!f.update("a", "x", 1));
    assert!(f.is_empty());
    f.add("a", "x", 1);
    assert!(f.update("a", "x", 2.5));
    assert_eq!(f.find("a", "x"), Some(ValueRef::Double(2.5)));
    let key = FlatKey::new("a", "x").unwrap();
    assert!(f.update_flat(&key, false));
    assert_eq!(f.find_flat(&key), Some(ValueRef::Bool(false)));
    let absent = FlatKey::new("a", "nope").unwrap();
    assert!(!f.update_flat(&absent, 1));
    assert_eq!(f.len(), 1);
}

#[test]
fn lookups_find_first_and_last_keys_below_and_above_the_index_threshold() {
    for n in [1usize, 4, 8, 9, 10, 127, 150, 1024] {
        let mut f = Frame::with_config(Header::default(), FrameConfig::for_params(n));
        for k in 0..n {
            f.add(&format!("d{}", k % 8), &format!("p{k}"), k as i64);
        }
        for k in [0, n / 2, n - 1] {
            let dev = format!("d{}", k % 8);
            let param = format!("p{k}");
            assert_eq!(
                f.find(&dev, &param),
                Some(ValueRef::Int(k as i64)),
                "n={n} k={k}"
            );
            let key = FlatKey::new(&dev, &param).unwrap();
            assert_eq!(f.find_flat(&key), Some(ValueRef::Int(k as i64)));
        }
        assert_eq!(f.find("d0", &format!("p{n}")), None);
        assert_eq!(f.find("d9", "p0"), None);
        // Insertion order is kept at every size.
        assert!(f
            .iter()
            .enumerate()
            .all(|(k, (_, p, _))| p == format!("p{k}")));
    }
}

#[test]
fn flat_keys_carry_the_separator_and_reject_devices_containing_it() {
    let k = FlatKey::new("sdr_1", "rx_gain").unwrap();
    assert_eq!(k.as_str(), "sdr_1\u{1f}rx_gain");
    assert_eq!((k.device(), k.param()), ("sdr_1", "rx_gain"));
    assert_eq!(k.to_string(), "sdr_1.rx_gain");
    assert!(FlatKey::new("bad\u{1f}dev", "p").is_err());
    // A separator in the parameter is fine: keys split at the first one.
    let k = FlatKey::new("dev", "a\u{1f}b").unwrap();
    let mut f = Frame::default();
    f.add_flat(&k, 1);
    let back = Frame::decode(&f.encode().unwrap()).unwrap();
    assert_eq!(back.find("dev", "a\u{1f}b"), Some(ValueRef::Int(1)));
}

#[test]
fn flat_key_operations_match_the_two_part_ones() {
    let keys: Vec<FlatKey> = (0..20)
        .map(|k| FlatKey::new("dev", &format!("p{k}")).unwrap())
        .collect();
    let mut f = Frame::default();
    for (k, key) in keys.iter().enumerate() {
        f.add_flat(key, k as i64);
    }
    for (k, key) in keys.iter().enumerate() {
        assert_eq!(
            f.find("dev", &format!("p{k}")),
            Some(ValueRef::Int(k as i64))
        );
        f.set_flat(key, "s");
    }
    f.set_flat(&FlatKey::new("new", "one").unwrap(), 1.5);
    assert_eq!(f.len(), 21);
    assert_eq!(f.find("new", "one"), Some(ValueRef::Double(1.5)));
    assert!(f
        .iter()
        .take(20)
        .all(|(_, _, v)| v == ValueRef::String("s")));
}

#[test]
fn add_of_a_duplicate_key_keeps_both_in_debug_and_release_builds_alike() {
    // No panic, no lookup, in any build: both entries are kept and encoded,
    // lookups find the first, as after decoding a frame with a duplicate.
    let mut f = Frame::new(fixed_header());
    f.add("a", "x", 1);
    f.add("a", "x", 2);
    let key = FlatKey::new("a", "x").unwrap();
    f.add_flat(&key, 3);
    assert_eq!(f.len(), 3);
    assert_eq!(f.find("a", "x"), Some(ValueRef::Int(1)));
    let back = Frame::decode(&f.encode().unwrap()).unwrap();
    assert_eq!(back, f);
    assert_eq!(
        Decoder::new()
            .strict(true)
            .decode(&f.encode().unwrap())
            .unwrap_err()
            .kind(),
        &ErrorKind::DuplicateKey
    );
    // A device holding the separator is stored as given; decoding splits
    // the key at its first separator.
    let mut f = Frame::new(fixed_header());
    f.add("a\u{1f}b", "c", 1);
    assert_eq!(f.find("a\u{1f}b", "c"), Some(ValueRef::Int(1)));
    let back = Frame::decode(&f.encode().unwrap()).unwrap();
    assert_eq!(back.find("a", "b\u{1f}c"), Some(ValueRef::Int(1)));
}

#[test]
fn try_add_refuses_duplicates_and_bad_devices_and_changes_nothing() {
    let mut f = Frame::new(fixed_header());
    for k in 0..20 {
        f.try_add("d", &format!("p{k}"), k).unwrap();
    }
    let before = f.encode().unwrap();
    for k in [0, 8, 19] {
        assert_eq!(
            f.try_add("d", &format!("p{k}"), "other"),
            Err(AddError::DuplicateKey)
        );
    }
    let err = f.try_add("a\u{1f}b", "c", 1).unwrap_err();
    assert!(matches!(err, AddError::InvalidKey(_)));
    assert_eq!(
        err.to_string(),
        "device name \"a\\u{1f}b\" contains the key separator U+001F"
    );
    assert!(std::error::Error::source(&err).is_some());
    assert_eq!(
        f.encode().unwrap(),
        before,
        "a refused try_add changes nothing"
    );
    f.try_add("d", "p20", 20.5).unwrap();
    assert_eq!(f.find("d", "p20"), Some(ValueRef::Double(20.5)));
    assert_eq!(
        AddError::DuplicateKey.to_string(),
        "the frame already holds this key"
    );
}

#[test]
fn clear_empties_the_frame_and_keeps_the_header() {
    let mut f = Frame::new(fixed_header());
    for k in 0..200 {
        f.add("d", &format!("p{k}"), "v");
    }
    f.add_attachment("a", vec![1, 2, 3]);
    f.clear();
    assert!(f.is_empty());
    assert_eq!(f.attachment_count(), 0);
    assert_eq!(f.find("d", "p0"), None);
    assert_eq!(*f.header(), fixed_header());
    f.add("d", "p0", 1);
    assert_eq!(f.find("d", "p0"), Some(ValueRef::Int(1)));
    assert_eq!(f.len(), 1);
}

#[test]
fn attachments_are_moved_in_and_listed_in_order() {
    let mut f = Frame::default();
    let v = vec![7u8; 100];
    let vp = v.as_ptr();
    let b = Bytes::from_static(b"static bytes");
    let bp = b.as_ptr();
    f.add_attachment("first", v);
    f.add_attachment("second", b);
    f.add_attachment("empty", Vec::new());
    let listed: Vec<_> = f
        .attachments()
        .map(|(n, d)| (n, d.len(), d.as_ptr()))
        .collect();
    assert_eq!(listed[0], ("first", 100, vp));
    assert_eq!(listed[1], ("second", 12, bp));
    assert_eq!(listed[2].0, "empty");
    assert_eq!(
        f.attachment("second").map(|d| &d[..]),
        Some(&b"static bytes"[..])
    );
    assert_eq!(f.attachment("none"), None);

    let back = Frame::decode(&f.encode().unwrap()).unwrap();
    assert_eq!(back, f);
}

#[test]
fn decode_shared_attachments_point_into_the_input_buffer() {
    let mut f = Frame::default();
    f.add_attachment("iq", vec![0xAB; 1 << 16]);
    let wire = Bytes::from(f.encode().unwrap());
    let back = Frame::decode_shared(&wire).unwrap();
    let data = back.attachment("iq").unwrap();
    assert!(wire.as_ptr_range().contains(&data.as_ptr()));
    assert_eq!(back, f);
}

// `Header::new` and the clock need `std`.
#[cfg(feature = "std")]
#[test]
fn header_defaults_match_the_cpp_constructor() {
    let before = messageframe::now_millis();
    let h = Header::new(5, 6, 7, 8);
    let after = messageframe::now_millis();
    assert!((before..=after).contains(&h.timestamp()));
    assert_eq!(
        (
            h.message_id(),
            h.message_type(),
            h.source(),
            h.target(),
            h.counter(),
            h.version(),
            h.flags()
        ),
        (5, 6, 7, 8, 0, 1, 0)
    );
    let mut h = h.with_timestamp(1);
    h.update_timestamp();
    assert!(h.timestamp() >= after);
    h.set_counter(9);
    h.set_source(1);
    h.set_target(2);
    h.set_message_id(-3);
    h.set_message_type(4);
    h.set_version(2);
    h.set_flags(0xffff);
    assert_eq!(
        h,
        Header::from_fields(h.timestamp(), 9, 1, 2, -3, 4, 2, 0xffff)
    );
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Msg {
    Status = 7,
}
impl From<Msg> for i32 {
    fn from(m: Msg) -> i32 {
        m as i32
    }
}
impl TryFrom<i32> for Msg {
    type Error = i32;
    fn try_from(v: i32) -> Result<Self, i32> {
        (v == 7).then_some(Msg::Status).ok_or(v)
    }
}

#[cfg(feature = "std")]
#[test]
fn message_ids_accept_and_return_user_enums() {
    let mut f = Frame::new(Header::new(Msg::Status, Msg::Status, 1, 2));
    assert_eq!(f.header().message_id_as::<Msg>(), Ok(Msg::Status));
    assert_eq!(f.header().message_type_as::<Msg>(), Ok(Msg::Status));
    f.header_mut().set_message_id(8);
    assert_eq!(f.header().message_id_as::<Msg>(), Err(8));
}

#[test]
fn encoded_len_is_exact() {
    let mut f = Frame::new(fixed_header());
    assert_eq!(f.encoded_len(), f.encode().unwrap().len());
    for k in 0..300 {
        match k % 5 {
            0 => f.add("d", &format!("p{k}"), k as f64 * 1.5),
            1 => f.add("d", &format!("p{k}"), -(k as i64) * 100_000),
            2 => f.add("d", &format!("p{k}"), "x".repeat(k)),
            3 => f.add("d", &format!("p{k}"), f64::NAN),
            _ => f.add("d", &format!("p{k}"), k % 2 == 0),
        }
        assert_eq!(f.encoded_len(), f.encode().unwrap().len(), "after {k}");
    }
    f.add_attachment("big", vec![0; 70_000]);
    f.add_attachment("", vec![]);
    assert_eq!(f.encoded_len(), f.encode().unwrap().len());
}

#[test]
fn doubles_follow_the_msgpack_c_rule_with_the_two_documented_differences() {
    let cases: &[(f64, &[u8])] = &[
        (10.0, &[0x0a]),
        (-1.0, &[0xff]),
        (0.0, &[0x00]),
        (
            1e19,
            &[0xcf, 0x8a, 0xc7, 0x23, 0x04, 0x89, 0xe8, 0x00, 0x00],
        ),
        // Differences from C++: -0.0 keeps its sign, 2^64 stays a float.
        (-0.0, &[0xcb, 0x80, 0, 0, 0, 0, 0, 0, 0]),
        (
            18_446_744_073_709_551_616.0,
            &[0xcb, 0x43, 0xf0, 0, 0, 0, 0, 0, 0],
        ),
        (0.5, &[0xcb, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0]),
        (f64::INFINITY, &[0xcb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0]),
        (
            -9_223_372_036_854_775_808.0,
            &[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0],
        ),
    ];
    for &(v, wire) in cases {
        let mut f = Frame::new(fixed_header());
        f.add("d", "p", v);
        let bytes = f.encode().unwrap();
        let expected_tail: Vec<u8> = [&[0x92, 20][..], wire, &[0x90]].concat();
        assert!(bytes.ends_with(&expected_tail), "{v}: {bytes:02x?}");
        let back = Frame::decode(&bytes)
            .unwrap()
            .find("d", "p")
            .unwrap()
            .as_f64()
            .unwrap();
        assert_eq!(back.to_bits(), v.to_bits(), "{v} round trip");
    }
}

#[test]
fn unknown_tags_are_kept_and_written_back_unchanged() {
    // Tag 50 with a nested map value, tag 0 with nil (what C++ writes for an
    // unset value), and a negative tag.
    let nested: &[u8] = &[
        0x92, 0x32, 0x81, 0xa1, b'k', 0x93, 0x01, 0xc0, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let unset: &[u8] = &[0x92, 0x00, 0xc0];
    let negative: &[u8] = &[0x92, 0xd0, 0x80, 0xa2, b'h', b'i'];
    let bytes = frame_bytes(
        &map_of(&[
            ("d\u{1f}a", nested),
            ("d\u{1f}b", unset),
            ("d\u{1f}c", negative),
        ]),
        &[0x90],
    );
    let f = Frame::decode(&bytes).unwrap();
    let a = f.find("d", "a").unwrap().as_unknown().unwrap();
    assert_eq!((a.tag(), a.raw()), (50, &nested[2..]));
    let b = f.find("d", "b").unwrap();
    assert_eq!(b.value_type(), ValueType::Unknown);
    assert_eq!(b.tag(), 0);
    assert_eq!(f.find("d", "c").unwrap().as_unknown().unwrap().tag(), -128);
    assert_eq!(
        f.encode().unwrap(),
        bytes,
        "a relay writes unknown values back unchanged"
    );
    let view = FrameView::new(&bytes).unwrap();
    assert_eq!(view.find("d", "a"), f.find("d", "a"));
    assert_eq!(view.to_frame().encode().unwrap(), bytes);
}

#[test]
fn unknown_tags_are_any_messagepack_integer_and_are_written_back_unchanged() {
    // Issue 10's 27-byte frame: key "d\x1fx", tag 2^63 as uint64, value nil.
    let bytes: Vec<u8> = [
        &[0x93, 0x98, 0, 0, 0, 0, 0, 0, 0, 0][..],
        &[0x81, 0xa3, b'd', 0x1f, b'x'],
        &[0x92, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0, 0xc0],
        &[0x90],
    ]
    .concat();
    assert_eq!(bytes.len(), 27);
    let f = Frame::decode(&bytes).expect("a u64 tag is an unknown tag, not an error");
    let u = f.find("d", "x").unwrap().as_unknown().unwrap();
    assert_eq!((u.tag(), u.raw()), (1 << 63, &[0xc0][..]));
    assert_eq!(f.find("d", "x").unwrap().tag(), 1 << 63);
    assert_eq!(f.encode().unwrap(), bytes, "written back byte for byte");
    let view = FrameView::new(&bytes).unwrap();
    assert_eq!(view.find("d", "x"), f.find("d", "x"));
    assert_eq!(view.to_frame().encode().unwrap(), bytes);
    assert_eq!(
        Frame::decode_shared(&Bytes::from(bytes.clone()))
            .unwrap()
            .encode()
            .unwrap(),
        bytes
    );

    // Both ends of the range, from any encoding of the tag: the value is kept
    // and the tag re-encoded in its shortest form (as every integer is).
    for (tag_bytes, tag, shortest) in [
        (
            &[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..],
            i128::from(u64::MAX),
            &[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..],
        ),
        (
            &[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0][..],
            i128::from(i64::MIN),
            &[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0][..],
        ),
        (&[0xd3, 0, 0, 0, 0, 0, 0, 0, 0x32][..], 50, &[0x32][..]),
        (&[0xcd, 0xff, 0xff][..], 65535, &[0xcd, 0xff, 0xff][..]),
        (&[0xd1, 0xff, 0x80][..], -128, &[0xd0, 0x80][..]),
    ] {
        let pair = |t: &[u8]| [&[0x92][..], t, &[0xa1, b'v']].concat();
        let input = frame_bytes(&map_of(&[("d\u{1f}t", &pair(tag_bytes))]), &[0x90]);
        let f = Frame::decode(&input).unwrap();
        let u = f.find("d", "t").unwrap().as_unknown().unwrap();
        assert_eq!((u.tag(), u.raw()), (tag, &[0xa1, b'v'][..]));
        let expected = frame_bytes(&map_of(&[("d\u{1f}t", &pair(shortest))]), &[0x90]);
        assert_eq!(f.encode().unwrap(), expected, "tag {tag}");
        assert_eq!(f.encoded_len(), expected.len());
        let mut built = Frame::new(*f.header());
        built.add(
            "d",
            "t",
            ValueRef::Unknown(UnknownValue::new(tag, &[0xa1, b'v']).unwrap()),
        );
        assert_eq!(built.encode().unwrap(), expected, "tag {tag} added by hand");
    }
    assert!(UnknownValue::new(i128::from(u64::MAX) + 1, &[0xc0]).is_none());
    assert!(UnknownValue::new(i128::from(i64::MIN) - 1, &[0xc0]).is_none());
}

#[test]
fn unknown_values_must_be_one_valid_value_under_an_unknown_tag() {
    assert!(UnknownValue::new(50, &[0xc0]).is_some());
    assert!(UnknownValue::new(20, &[0xc0]).is_none());
    assert!(UnknownValue::new(50, &[]).is_none());
    assert!(UnknownValue::new(50, &[0xc0, 0xc0]).is_none());
    assert!(UnknownValue::new(50, &[0xc1]).is_none());
    assert!(UnknownValue::new(50, &[0xd9, 0x05, b'a']).is_none());
}

#[test]
fn an_owned_unknown_value_is_checked_so_every_value_encodes_to_a_decodable_frame() {
    // The three values of issue 10 that safe code could put in a frame,
    // which then encoded to bytes `Frame::decode` rejected: none can be
    // made any more (`Value::Unknown` holds an `UnknownValueBuf`, whose
    // only constructors check; the compile_fail example on it shows the old
    // tuple variant is gone).
    assert_eq!(UnknownValueBuf::new(10, vec![0xa1, b'x']), None);
    assert_eq!(UnknownValueBuf::new(50, vec![0x92, 0x01]), None);
    assert_eq!(UnknownValueBuf::new(50, vec![]), None);
    assert_eq!(UnknownValueBuf::new(50, vec![0xc0, 0xc0]), None);

    let good = UnknownValueBuf::new(50, vec![0x92, 0x01, 0xc0]).unwrap();
    assert_eq!((good.tag(), good.raw()), (50, &[0x92, 0x01, 0xc0][..]));
    let values = [
        Value::from(7),
        Value::from(2.5),
        Value::from("s"),
        Value::from(true),
        Value::from(good.clone()),
        Value::from(
            UnknownValue::new(-3, &[0xa1, b'x'])
                .unwrap()
                .to_owned_value(),
        ),
    ];
    let mut frame = Frame::default();
    for (i, v) in values.iter().enumerate() {
        frame.add("d", &format!("p{i}"), v);
    }
    let back =
        Frame::decode(&frame.encode().unwrap()).expect("every value a caller can build decodes");
    for (i, v) in values.iter().enumerate() {
        let found = back.find("d", &format!("p{i}")).unwrap();
        assert_eq!(found, *v);
        assert_eq!(found.to_value(), *v, "owned copy of #{i}");
    }
    assert_eq!(values[4].as_unknown(), Some(good.as_unknown_value()));
    assert_eq!(UnknownValueBuf::from(good.as_unknown_value()), good);
}

#[test]
fn a_key_without_separator_is_device_empty_and_the_whole_key_as_param() {
    let bytes = frame_bytes(&map_of(&[("plainkey", &[0x92, 0x0a, 0x07])]), &[0x90]);
    let f = Frame::decode(&bytes).unwrap();
    assert_eq!(
        f.iter().next().map(|(d, p, _)| (d, p)),
        Some(("", "plainkey"))
    );
    assert_eq!(f.find("", "plainkey"), Some(ValueRef::Int(7)));
    assert_eq!(
        f.encode().unwrap(),
        bytes,
        "the key is written back as it came"
    );
    let view = FrameView::new(&bytes).unwrap();
    assert_eq!(view.find("", "plainkey"), Some(ValueRef::Int(7)));
    assert_eq!(
        view.iter().next().map(|(d, p, _)| (d, p)),
        Some(("", "plainkey"))
    );
}

/// A frame with `n_before` int parameters `d.p{k} = k`, then `d.p0 = 999`
/// again as the last entry.
fn frame_with_duplicate(n_before: usize) -> Vec<u8> {
    let n = n_before + 1;
    let mut map = if n < 16 {
        vec![0x80 | n as u8]
    } else {
        vec![0xde, (n >> 8) as u8, n as u8]
    };
    for k in 0..n_before {
        map.extend(fixstr(&format!("d\u{1f}p{k}")));
        map.extend_from_slice(&[0x92, 0x0a]);
        if k < 128 {
            map.push(k as u8);
        } else {
            map.extend_from_slice(&[0xcc, k as u8]);
        }
    }
    map.extend(fixstr("d\u{1f}p0"));
    map.extend_from_slice(&[0x92, 0x0a, 0xcd, 0x03, 0xe7]);
    frame_bytes(&map, &[0x90])
}

#[test]
fn duplicate_keys_decode_with_the_first_occurrence_winning() {
    for n_before in [3usize, 8, 20, 200] {
        let bytes = frame_with_duplicate(n_before);
        let f = Frame::decode(&bytes).unwrap_or_else(|e| panic!("{n_before}: {e}"));
        assert_eq!(f.len(), n_before + 1, "both entries are kept");
        assert_eq!(
            f.find("d", "p0"),
            Some(ValueRef::Int(0)),
            "first wins, n={n_before}"
        );
        assert_eq!(f.encode().unwrap(), bytes, "a relay loses nothing");
        let view = FrameView::new(&bytes).unwrap();
        assert_eq!(view.find("d", "p0"), Some(ValueRef::Int(0)));
    }
}

#[test]
fn strict_decoding_rejects_duplicate_keys_with_their_offset() {
    for n_before in [3usize, 8, 20, 200] {
        let bytes = frame_with_duplicate(n_before);
        let strict = Decoder::new().strict(true);
        let err = strict.decode(&bytes).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::DuplicateKey, "n={n_before}");
        assert_eq!(err.context(), &Context::Key(n_before));
        // The duplicate entry is the last one: 1 (0x90) + its length from the end.
        let entry_len = 1 + "d\u{1f}p0".len() + 5; // fixstr key + 92 0a cd 03 e7
        assert_eq!(err.offset(), bytes.len() - 1 - entry_len);
        let view_err = strict.view(&bytes).unwrap_err();
        assert_eq!(view_err.kind(), &ErrorKind::DuplicateKey);
        assert_eq!(view_err.offset(), err.offset());
    }
}

#[test]
fn extra_trailing_elements_are_skipped() {
    // Top level of 4 elements, a header of 9, a value array of 3 and an
    // attachment pair of 3: the extras are ignored.
    let mut bytes = vec![0x94, 0x99, 1, 2, 3, 4, 5, 6, 1, 0, 0xa1, b'x'];
    bytes.extend(map_of(&[("d\u{1f}p", &[0x93, 0x0a, 0x05, 0x91, 0xc0])]));
    bytes.extend_from_slice(&[0x91, 0x93, 0xa1, b'n', 0xc4, 0x01, 0xff, 0xc3]);
    bytes.extend_from_slice(&[0x81, 0x01, 0x02]); // the fourth top-level element
    let f = Frame::decode(&bytes).unwrap();
    assert_eq!(*f.header(), Header::from_fields(1, 2, 3, 4, 5, 6, 1, 0));
    assert_eq!(f.find("d", "p"), Some(ValueRef::Int(5)));
    assert_eq!(f.attachment("n").map(|d| &d[..]), Some(&[0xff][..]));
    let view = FrameView::new(&bytes).unwrap();
    assert_eq!(view.find("d", "p"), Some(ValueRef::Int(5)));
    assert_eq!(view.attachment("n"), Some(&[0xff][..]));
}

#[test]
fn missing_elements_are_an_error() {
    let err = err_of(Frame::decode(&[
        0x93, 0x97, 1, 2, 3, 4, 5, 6, 1, 0x80, 0x90,
    ]));
    assert_eq!(
        err.kind(),
        &ErrorKind::TooFewElements {
            expected: 8,
            found: 7
        }
    );
    assert_eq!(err.offset(), 1);
    let err = err_of(Frame::decode(&[0x92, 0x98, 1, 2, 3, 4, 5, 6, 1, 0, 0x80]));
    assert_eq!(
        err.kind(),
        &ErrorKind::TooFewElements {
            expected: 3,
            found: 2
        }
    );
    assert_eq!(err.offset(), 0);
    let bytes = frame_bytes(&map_of(&[("d\u{1f}p", &[0x91, 0x0a])]), &[0x90]);
    let err = err_of(Frame::decode(&bytes));
    assert_eq!(
        err.kind(),
        &ErrorKind::TooFewElements {
            expected: 2,
            found: 1
        }
    );
    assert_eq!(err.context(), &Context::Value("d\u{1f}p".into()));
}

#[test]
fn a_value_of_the_wrong_type_for_its_place_is_an_error_at_its_offset() {
    let value_at = 10 + 1 + 4 + 2; // header, fixmap, key "d\x1fp", 0x92 + tag
    let cases: &[(&[u8], Expected, u8)] = &[
        (
            &[0x92, 0x0a, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0],
            Expected::Integer,
            0xcb,
        ), // float under tag 10
        (&[0x92, 0x0a, 0xa1, b'1'], Expected::Integer, 0xa1), // string under tag 10
        (&[0x92, 0x14, 0xa1, b'1'], Expected::Number, 0xa1),  // string under tag 20
        (&[0x92, 0x1e, 0xc4, 0x01, b'x'], Expected::String, 0xc4), // bin under tag 30
        (&[0x92, 0x28, 0x01], Expected::Bool, 0x01),          // int under tag 40
        (&[0x92, 0x28, 0xc0], Expected::Bool, 0xc0),          // nil under tag 40
    ];
    for (value, expected, found) in cases {
        let bytes = frame_bytes(&map_of(&[("d\u{1f}p", value)]), &[0x90]);
        let err = err_of(Frame::decode(&bytes));
        assert_eq!(
            err.kind(),
            &ErrorKind::UnexpectedType {
                expected: *expected,
                found: *found
            },
            "{value:02x?}"
        );
        assert_eq!(err.offset(), value_at, "{value:02x?}");
        assert_eq!(err.context(), &Context::Value("d\u{1f}p".into()));
        assert_eq!(FrameView::new(&bytes).unwrap_err(), err);
    }
    // A non-integer tag.
    let bytes = frame_bytes(
        &map_of(&[("d\u{1f}p", &[0x92, 0xca, 0x41, 0x20, 0, 0, 0x01])]),
        &[0x90],
    );
    let err = err_of(Frame::decode(&bytes));
    assert_eq!(
        err.kind(),
        &ErrorKind::UnexpectedType {
            expected: Expected::Integer,
            found: 0xca
        }
    );
    // A bin key, and a str where attachment data belongs.
    let bytes = frame_bytes(&[0x81, 0xc4, 0x01, b'k', 0x92, 0x0a, 0x01], &[0x90]);
    let err = err_of(Frame::decode(&bytes));
    assert_eq!(
        err.kind(),
        &ErrorKind::UnexpectedType {
            expected: Expected::String,
            found: 0xc4
        }
    );
    assert_eq!((err.offset(), err.context()), (11, &Context::Key(0)));
    let bytes = frame_bytes(&[0x80], &[0x91, 0x92, 0xa1, b'n', 0xa1, b'x']);
    let err = err_of(Frame::decode(&bytes));
    assert_eq!(
        err.kind(),
        &ErrorKind::UnexpectedType {
            expected: Expected::Binary,
            found: 0xa1
        }
    );
    assert_eq!((err.offset(), err.context()), (15, &Context::Attachment(0)));
}

#[test]
fn header_fields_out_of_range_are_an_error_naming_the_field() {
    // flags = 70000 (uint32), source = -1.
    let flags = [
        0x93, 0x98, 1, 2, 3, 4, 5, 6, 1, 0xce, 0x00, 0x01, 0x11, 0x70, 0x80, 0x90,
    ];
    let err = err_of(Frame::decode(&flags));
    assert_eq!(err.kind(), &ErrorKind::IntegerOutOfRange);
    assert_eq!(
        (err.offset(), err.context()),
        (9, &Context::Header("flags"))
    );
    assert!(err.to_string().contains("flags"), "{err}");
    let source = [0x93, 0x98, 1, 2, 0xff, 4, 5, 6, 1, 0, 0x80, 0x90];
    let err = err_of(Frame::decode(&source));
    assert_eq!(
        (err.kind(), err.offset()),
        (&ErrorKind::IntegerOutOfRange, 4)
    );
    assert_eq!(err.context(), &Context::Header("source"));
    // message_id is i32: -1 is fine, 2^31 is not.
    let ok = [0x93, 0x98, 1, 2, 3, 4, 0xff, 6, 1, 0, 0x80, 0x90];
    assert_eq!(Frame::decode(&ok).unwrap().header().message_id(), -1);
    let big = [
        0x93, 0x98, 1, 2, 3, 4, 0xce, 0x80, 0, 0, 0, 6, 1, 0, 0x80, 0x90,
    ];
    assert_eq!(
        err_of(Frame::decode(&big)).context(),
        &Context::Header("message_id")
    );
}

#[test]
fn int64_values_beyond_i64_are_an_error() {
    let v: &[u8] = &[0x92, 0x0a, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0];
    let bytes = frame_bytes(&map_of(&[("d\u{1f}p", v)]), &[0x90]);
    assert_eq!(
        err_of(Frame::decode(&bytes)).kind(),
        &ErrorKind::IntegerOutOfRange
    );
    // ... but the same uint64 under tag 20 is a double.
    let v: &[u8] = &[0x92, 0x14, 0xcf, 0x80, 0, 0, 0, 0, 0, 0, 0];
    let bytes = frame_bytes(&map_of(&[("d\u{1f}p", v)]), &[0x90]);
    assert_eq!(
        Frame::decode(&bytes).unwrap().find("d", "p"),
        Some(ValueRef::Double(9_223_372_036_854_775_808.0))
    );
}

#[test]
fn invalid_utf8_is_an_error_in_keys_values_and_names() {
    let key = frame_bytes(&[0x81, 0xa2, 0xff, 0xfe, 0x92, 0x0a, 0x01], &[0x90]);
    assert_eq!(err_of(Frame::decode(&key)).kind(), &ErrorKind::InvalidUtf8);
    let value = frame_bytes(&map_of(&[("d\u{1f}p", &[0x92, 0x1e, 0xa1, 0xc3])]), &[0x90]);
    let err = err_of(Frame::decode(&value));
    assert_eq!((err.kind(), err.offset()), (&ErrorKind::InvalidUtf8, 17));
    let name = frame_bytes(&[0x80], &[0x91, 0x92, 0xa1, 0x80, 0xc4, 0x00]);
    assert_eq!(err_of(Frame::decode(&name)).kind(), &ErrorKind::InvalidUtf8);
}

#[test]
fn trailing_bytes_after_one_frame_are_an_error_but_prefix_decoding_reports_the_length() {
    let mut f = Frame::new(fixed_header());
    f.add("a", "b", 1);
    let one = f.encode().unwrap();
    let mut two = one.clone();
    two.extend_from_slice(&one);
    let err = err_of(Frame::decode(&two));
    assert_eq!(err.kind(), &ErrorKind::TrailingBytes { count: one.len() });
    assert_eq!(err.offset(), one.len());
    assert_eq!(FrameView::new(&two).unwrap_err(), err);

    let mut out = Frame::default();
    let used = Decoder::new().decode_prefix_into(&mut out, &two).unwrap();
    assert_eq!(used, one.len());
    assert_eq!(out, f);
    let view = Decoder::new().view_prefix(&two[used..]).unwrap();
    assert_eq!(view.encoded_len(), one.len());
}

#[test]
fn a_failed_decode_leaves_the_destination_empty_with_its_header_unchanged() {
    let mut dest = Frame::new(fixed_header());
    dest.add("keep", "me", 1);
    dest.add_attachment("att", vec![1]);
    let mut src = Frame::new(Header::from_fields(1, 1, 1, 1, 1, 1, 1, 1));
    for k in 0..50 {
        src.add("d", &format!("p{k}"), k);
    }
    let bytes = src.encode().unwrap();
    // Truncated in the middle of the parameters: half of them were stored.
    let err = dest.decode_from(&bytes[..bytes.len() / 2]).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
    assert!(dest.is_empty());
    assert_eq!(dest.attachment_count(), 0);
    assert_eq!(*dest.header(), fixed_header());
    // The frame is usable afterwards.
    dest.decode_from(&bytes).unwrap();
    assert_eq!(dest, src);
}

#[test]
fn errors_display_what_and_where() {
    let err = err_of(Frame::decode(&[0x93, 0x98, 1, 2]));
    assert_eq!(
        err.to_string(),
        "input is truncated: an integer at byte 4 needs 1 byte, only 0 are left \
         (in header field `source`)"
    );
    let err = err_of(Frame::decode(&[0x80]));
    assert_eq!(
        err.to_string(),
        "expected an array, found marker 0x80 at byte 0 (in frame)"
    );
    assert_eq!(
        std::mem::size_of::<DecodeError>(),
        std::mem::size_of::<usize>()
    );
    let e: Box<dyn std::error::Error> = Box::new(err);
    assert!(e.to_string().contains("byte 0"));
}

#[test]
fn a_truncation_says_which_element_where_it_starts_and_what_it_needs_and_has() {
    // Issue 10: a frame with a 1 MiB attachment, cut at byte 2,000. The
    // error used to read "input is truncated at byte 160 (in attachment
    // #0)", which looks like a frame cut at byte 160.
    let mut f = Frame::new(fixed_header());
    for k in 0..4 {
        f.add("d", &format!("p{k}"), "x".repeat(20).as_str());
    }
    f.add_attachment("iq", vec![0xAB; 1 << 20]);
    let bytes = f.encode().unwrap();
    let data_at = bytes.len() - (1 << 20) - 5; // the bin32 marker
    let cut = &bytes[..2000];
    let expected = format!(
        "input is truncated: binary data at byte {data_at} needs 1048581 bytes, \
         only {} are left (in attachment #0)",
        2000 - data_at
    );
    for err in [
        Frame::decode(cut).unwrap_err(),
        FrameView::new(cut).unwrap_err(),
        Decoder::new().strict(true).decode(cut).unwrap_err(),
        Header::peek_frame(cut).unwrap_err(),
    ] {
        assert_eq!(err.to_string(), expected);
        assert_eq!(err.offset(), data_at);
        assert!(matches!(
            *err.kind(),
            ErrorKind::Truncated { element: Expected::Binary, needed: 1_048_581, available, .. }
                if available == 2000 - data_at
        ));
    }

    // A string value cut inside its length prefix: the string, from its
    // marker.
    let mut f = Frame::new(fixed_header());
    f.add("d", "long", "y".repeat(300).as_str());
    let bytes = f.encode().unwrap();
    let value_at = bytes.windows(2).position(|w| w == [0xda, 0x01]).unwrap();
    let err = Frame::decode(&bytes[..value_at + 2]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "input is truncated: a string at byte {value_at} needs 3 bytes, only 2 are left \
             (in value of `d.long`)"
        )
    );

    // An empty input: one wording everywhere (mframe prints it too).
    for err in [
        Frame::decode(&[]).unwrap_err(),
        FrameView::new(&[]).unwrap_err(),
        Header::peek(&[]).unwrap_err(),
        Header::peek_frame(&[]).unwrap_err(),
        Decoder::new()
            .decode_prefix_into(&mut Frame::default(), &[])
            .unwrap_err(),
    ] {
        assert_eq!(err.to_string(), "input is empty: no frame at byte 0");
        assert!(matches!(
            err.kind(),
            ErrorKind::Truncated {
                needed: 1,
                available: 0,
                ..
            }
        ));
    }
}

#[test]
fn peek_frame_errors_say_which_part_of_the_frame_they_are_in() {
    let mut f = Frame::new(fixed_header());
    f.add("d", "p", "text");
    f.add_attachment("a", vec![1, 2, 3]);
    f.add_attachment("b", vec![4, 5, 6]);
    let bytes = f.encode().unwrap();
    let text_at = bytes.windows(5).position(|w| w == b"\xa4text").unwrap();
    let err = Header::peek_frame(&bytes[..text_at + 2]).unwrap_err();
    assert_eq!(err.context(), &Context::Value("d\u{1f}p".into()));
    assert_eq!(err.offset(), text_at);
    let b_at = bytes
        .windows(3)
        .position(|w| w == [0x92, 0xa1, b'b'])
        .unwrap();
    let err = Header::peek_frame(&bytes[..b_at + 1]).unwrap_err();
    assert_eq!(err.context(), &Context::Attachment(1));
    assert_eq!(
        err.to_string(),
        format!(
            "input is truncated: an array at byte {b_at} needs 3 bytes, only 1 is left \
             (in attachment #1)"
        )
    );
}

#[test]
fn header_peek_reads_only_the_header() {
    // Small header values: the header takes exactly 10 bytes.
    let small = Header::from_fields(1, 2, 3, 4, 5, 6, 1, 0);
    let mut f = Frame::new(small);
    f.add("d", "p", 1);
    let mut bytes = f.encode().unwrap();
    assert_eq!(Header::peek(&bytes).unwrap(), small);
    // Corrupt the payload: the peek does not look at it.
    let n = bytes.len();
    bytes[n - 2] = 0xc1;
    assert_eq!(Header::peek(&bytes).unwrap(), small);
    assert!(Frame::decode(&bytes).is_err());
    // Only the header bytes are needed.
    assert_eq!(Header::peek(&bytes[..10]).unwrap(), small);
    assert!(matches!(
        Header::peek(&bytes[..9]).unwrap_err().kind(),
        ErrorKind::Truncated { .. }
    ));
}

#[test]
fn repeated_string_replacement_keeps_values_right() {
    let mut f = Frame::default();
    for k in 0..20 {
        f.add("d", &format!("p{k}"), "initial");
    }
    for i in 0..20_000 {
        let k = i % 20;
        let v = "x".repeat(i % 37);
        f.set("d", &format!("p{k}"), v.as_str());
        assert_eq!(
            f.find("d", &format!("p{k}")).unwrap().as_str(),
            Some(v.as_str())
        );
    }
    let back = Frame::decode(&f.encode().unwrap()).unwrap();
    assert_eq!(back, f);
    assert_eq!(f.len(), 20);
}

#[test]
fn peek_frame_gives_the_frame_length_without_validating_parameters() {
    let mut f = Frame::new(fixed_header());
    f.add("d", "p", "text");
    f.add_attachment("iq", vec![7; 1000]);
    let mut bytes = f.encode().unwrap();
    let (header, len) = Header::peek_frame(&bytes).unwrap();
    assert_eq!((header, len), (fixed_header(), f.encoded_len()));
    // Invalid UTF-8 in the string value: a full decode fails, the peek does
    // not look at it.
    let at = bytes.windows(4).position(|w| w == b"text").unwrap();
    bytes[at] = 0xff;
    assert_eq!(
        Frame::decode(&bytes).unwrap_err().kind(),
        &ErrorKind::InvalidUtf8
    );
    assert_eq!(Header::peek_frame(&bytes).unwrap().1, len);
    // A truncated frame has no length.
    let err = Header::peek_frame(&bytes[..len - 1]).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Truncated { .. }), "{err}");
    assert_eq!(err.context(), &Context::Attachment(0));
}

/// Without `std` a frame's lazily built index sits in a `OnceCell` and a
/// `RefCell` (src/sync.rs): a frame is `Send` but not `Sync` then.
#[cfg(not(feature = "std"))]
#[test]
fn without_std_frames_are_send_and_views_and_errors_send_and_sync() {
    fn send<T: Send>() {}
    fn check<T: Send + Sync>() {}
    send::<Frame>();
    check::<FrameView<'static>>();
    check::<DecodeError>();
    check::<FlatKey>();
}

#[cfg(feature = "std")]
#[test]
fn frames_views_and_errors_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Frame>();
    check::<FrameView<'static>>();
    check::<DecodeError>();
    check::<FlatKey>();
    // A frame shared between threads can be looked up from all of them
    // (the lookup index is built once, safely, by whichever comes first).
    let mut f = Frame::default();
    for k in 0..100 {
        f.add("d", &format!("p{k}"), k);
    }
    std::thread::scope(|s| {
        for t in 0..4 {
            let f = &f;
            s.spawn(move || {
                for _ in 0..20 {
                    for k in 0..100 {
                        assert_eq!(
                            f.find("d", &format!("p{k}")),
                            Some(ValueRef::Int(k)),
                            "thread {t}"
                        );
                    }
                }
            });
        }
    });
}

/// A decoder whose only non-default limit is `max_string_len`.
fn string_limited(max_string_len: usize) -> Decoder {
    Decoder::new().limits(messageframe::Limits::default().max_string_len(max_string_len))
}

#[test]
fn small_string_limits_apply_to_the_usual_encodings_too() {
    // A 20-byte key and a 20-byte string value, both fixstr: the forms the
    // decoder reads on its fast path must obey the limits like any other.
    let string_len = ErrorKind::LimitExceeded(messageframe::Limit::StringLen);
    let mut f = Frame::new(fixed_header());
    f.add("device_name_x", "param_ab", "twenty bytes long!!!");
    let bytes = f.encode().unwrap();
    let err = string_limited(10).decode(&bytes).unwrap_err();
    assert_eq!(err.kind(), &string_len);
    assert_eq!(string_limited(10).view(&bytes).unwrap_err(), err);
    let err = string_limited(21).decode(&bytes).unwrap_err();
    assert_eq!(err.kind(), &string_len);
    assert_eq!(err.context(), &Context::Key(0));
    assert!(string_limited(22).decode(&bytes).is_ok());
    // A short key and a long value: the value is what exceeds the limit.
    let mut f = Frame::new(fixed_header());
    f.add("d", "p", "twenty bytes long!!!");
    let bytes = f.encode().unwrap();
    let err = string_limited(10).decode(&bytes).unwrap_err();
    assert_eq!(err.kind(), &string_len);
    assert_eq!(err.context(), &Context::Value("d\u{1f}p".into()));
    assert_eq!(string_limited(10).view(&bytes).unwrap_err(), err);
}

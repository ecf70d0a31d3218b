//! The serde bridge (feature `serde`): every row of the mapping table of
//! `messageframe::serde` (docs/serde.md), every error with its path, the
//! JSON forms, and the round trip struct → frame → bytes → struct as a
//! property.
// The library's own run without `std` (.ci/run, "no_std") has no `serde`.
#![cfg(feature = "serde")]

use std::collections::{BTreeMap, HashMap};

use messageframe::serde::{
    from_bytes, from_frame, from_view, to_bytes, to_bytes_into, to_frame, to_frame_into, ErrorKind,
    WithData,
};
use messageframe::{Frame, FrameView, Header, UnknownValue, UnknownValueBuf, Value, ValueRef};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// The frame's parameters as `(device, param, value)` strings, in order.
fn params(frame: &Frame) -> Vec<(String, String, String)> {
    frame
        .iter()
        .map(|(d, p, v)| (d.to_owned(), p.to_owned(), format!("{v:?}")))
        .collect()
}

fn p(d: &str, k: &str, v: ValueRef<'_>) -> (String, String, String) {
    (d.to_owned(), k.to_owned(), format!("{v:?}"))
}

/// Both readers (owned frame, and view of the encoded bytes) give `want`.
fn reads_back<T>(frame: &Frame, want: &T)
where
    T: for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
{
    let owned: T = from_frame(frame).expect("from_frame");
    assert_eq!(&owned, want);
    let bytes = frame.encode().expect("encodes");
    let view = FrameView::new(&bytes).expect("valid");
    let viewed: T = from_view(&view).expect("from_view");
    assert_eq!(&viewed, want);
    let direct: T = from_bytes(&bytes).expect("from_bytes");
    assert_eq!(&direct, want);
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sdr {
    tx_gain: f64,
    locked: bool,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Core {
    firmware: String,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Telemetry {
    seq: u32,
    sdr_1: Sdr,
    core: Core,
}

fn telemetry() -> Telemetry {
    Telemetry {
        seq: 7,
        sdr_1: Sdr {
            tx_gain: 30.5,
            locked: true,
        },
        core: Core {
            firmware: "v3.2.1".into(),
        },
    }
}

#[test]
fn top_level_scalars_go_to_device_empty_and_nested_structs_name_the_device() {
    let t = telemetry();
    let frame = to_frame(&t).unwrap();
    assert_eq!(
        params(&frame),
        [
            p("", "seq", ValueRef::Int(7)),
            p("sdr_1", "tx_gain", ValueRef::Double(30.5)),
            p("sdr_1", "locked", ValueRef::Bool(true)),
            p("core", "firmware", ValueRef::String("v3.2.1")),
        ]
    );
    reads_back(&frame, &t);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Chain {
    gain: i64,
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Radio {
    rx: Chain,
    name: String,
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Deep {
    radio: Radio,
}

#[test]
fn deeper_nesting_joins_the_path_with_dots() {
    let d = Deep {
        radio: Radio {
            rx: Chain { gain: -3 },
            name: "r".into(),
        },
    };
    let frame = to_frame(&d).unwrap();
    assert_eq!(
        params(&frame),
        [
            p("radio.rx", "gain", ValueRef::Int(-3)),
            p("radio", "name", ValueRef::String("r")),
        ]
    );
    reads_back(&frame, &d);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Optional {
    a: Option<i64>,
    b: Option<String>,
    nested: Option<Chain>,
}

#[test]
fn none_is_absent_and_absent_reads_as_none() {
    let none = Optional {
        a: None,
        b: None,
        nested: None,
    };
    let frame = to_frame(&none).unwrap();
    assert!(frame.is_empty());
    reads_back(&frame, &none);
    let some = Optional {
        a: Some(1),
        b: None,
        nested: Some(Chain { gain: 2 }),
    };
    let frame = to_frame(&some).unwrap();
    assert_eq!(
        params(&frame),
        [
            p("", "a", ValueRef::Int(1)),
            p("nested", "gain", ValueRef::Int(2))
        ]
    );
    reads_back(&frame, &some);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Ints {
    a: i8,
    b: i16,
    c: i32,
    d: i64,
    e: u8,
    f: u16,
    g: u32,
    h: u64,
    i: i128,
    j: u128,
}

#[test]
fn every_integer_width_is_an_int64() {
    let v = Ints {
        a: -128,
        b: i16::MIN,
        c: i32::MAX,
        d: i64::MIN,
        e: 255,
        f: u16::MAX,
        g: u32::MAX,
        h: i64::MAX as u64,
        i: -5,
        j: 9,
    };
    let frame = to_frame(&v).unwrap();
    assert_eq!(frame.find("", "h"), Some(ValueRef::Int(i64::MAX)));
    assert_eq!(frame.find("", "g"), Some(ValueRef::Int(u32::MAX.into())));
    assert!(frame.iter().all(|(_, _, v)| v.as_i64().is_some()));
    reads_back(&frame, &v);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Big {
    big: u64,
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Wide {
    w: u128,
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct InSdr {
    sdr_1: Big,
}

#[test]
fn integers_outside_i64_are_an_error_naming_the_path_not_a_wrap() {
    let err = to_frame(&InSdr {
        sdr_1: Big { big: u64::MAX },
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "sdr_1.big: integer 18446744073709551615 out of the range of int64"
    );
    assert_eq!(err.path(), "sdr_1.big");
    let err = to_frame(&Big {
        big: i64::MAX as u64 + 1,
    })
    .unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::IntegerOutOfRange {
            value: 9_223_372_036_854_775_808,
            target: "int64"
        }
    ));
    assert!(to_frame(&Wide { w: u128::MAX }).is_err());
    // On the way back, a field narrower than the Int64 refuses what it
    // cannot hold.
    let mut frame = Frame::default();
    frame.add("", "a", 300);
    #[derive(Debug, Deserialize)]
    struct Narrow {
        #[allow(dead_code)]
        a: u8,
    }
    let err = from_frame::<Narrow>(&frame).unwrap_err();
    assert_eq!(err.to_string(), "a: integer 300 out of the range of u8");
    frame.clear();
    frame.add("", "big", -1);
    assert_eq!(
        from_frame::<Big>(&frame).unwrap_err().to_string(),
        "big: integer -1 out of the range of u64"
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Scalars {
    f: f32,
    d: f64,
    b: bool,
    c: char,
    s: String,
}

#[test]
fn floats_bools_chars_and_strings() {
    let v = Scalars {
        f: 1.1,
        d: -0.0,
        b: false,
        c: 'é',
        s: "text".into(),
    };
    let frame = to_frame(&v).unwrap();
    assert_eq!(
        params(&frame),
        [
            p("", "f", ValueRef::Double(f64::from(1.1f32))),
            p("", "d", ValueRef::Double(-0.0)),
            p("", "b", ValueRef::Bool(false)),
            p("", "c", ValueRef::String("é")),
            p("", "s", ValueRef::String("text")),
        ]
    );
    reads_back(&frame, &v);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Mode {
    Rx,
    #[serde(rename = "transmit")]
    Tx,
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct WithMode {
    mode: Mode,
    other: Mode,
}

#[test]
fn unit_enum_variants_are_strings() {
    let v = WithMode {
        mode: Mode::Rx,
        other: Mode::Tx,
    };
    let frame = to_frame(&v).unwrap();
    assert_eq!(frame.find("", "mode"), Some(ValueRef::String("Rx")));
    assert_eq!(frame.find("", "other"), Some(ValueRef::String("transmit")));
    reads_back(&frame, &v);
    let mut frame = Frame::default();
    frame.add("", "mode", "Off");
    frame.add("", "other", "Rx");
    let err = from_frame::<WithMode>(&frame).unwrap_err();
    assert_eq!(err.path(), "mode");
    assert!(err.to_string().contains("unknown variant `Off`"), "{err}");
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Shape {
    Circle(f64),
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct HasShape {
    shape: Shape,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
enum Tagged {
    Circle { r: f64 },
    Square { side: f64 },
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct HasTagged {
    shape: Tagged,
}

#[test]
fn variants_with_data_are_an_error_and_internally_tagged_enums_are_structs() {
    let err = to_frame(&HasShape {
        shape: Shape::Circle(1.0),
    })
    .unwrap_err();
    assert_eq!(err.path(), "shape");
    assert!(err
        .to_string()
        .starts_with("shape: unsupported: an enum variant with data"));
    let v = HasTagged {
        shape: Tagged::Square { side: 2.0 },
    };
    let frame = to_frame(&v).unwrap();
    assert_eq!(
        frame.find("shape", "kind"),
        Some(ValueRef::String("Square"))
    );
    assert_eq!(frame.find("shape", "side"), Some(ValueRef::Double(2.0)));
    reads_back(&frame, &v);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Capture {
    #[serde(with = "serde_bytes")]
    raw_iq: Vec<u8>,
    sdr_1: IqHolder,
    // serde's rule for `with` fields: an absent one needs `default`.
    #[serde(default, with = "serde_bytes")]
    maybe: Option<Vec<u8>>,
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct IqHolder {
    #[serde(with = "serde_bytes")]
    iq: Vec<u8>,
    gain: i64,
}

#[test]
fn bytes_become_attachments_named_by_their_path() {
    let v = Capture {
        raw_iq: vec![1, 2, 3],
        sdr_1: IqHolder {
            iq: vec![0xAB; 10],
            gain: 4,
        },
        maybe: None,
    };
    let frame = to_frame(&v).unwrap();
    let atts: Vec<(&str, usize)> = frame.attachments().map(|(n, d)| (n, d.len())).collect();
    assert_eq!(atts, [("raw_iq", 3), ("sdr_1.iq", 10)]);
    assert_eq!(params(&frame), [p("sdr_1", "gain", ValueRef::Int(4))]);
    reads_back(&frame, &v);
    let v = Capture {
        maybe: Some(vec![9]),
        ..v
    };
    reads_back(&to_frame(&v).unwrap(), &v);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct BorrowedBytes<'a> {
    #[serde(borrow, with = "serde_bytes")]
    iq: &'a [u8],
    name: &'a str,
}

#[test]
fn a_view_lends_strings_and_attachments_from_the_bytes() {
    let frame = to_frame(&BorrowedBytes {
        iq: &[5; 64],
        name: "sdr",
    })
    .unwrap();
    let bytes = frame.encode().unwrap();
    let view = FrameView::new(&bytes).unwrap();
    let back: BorrowedBytes<'_> = from_view(&view).unwrap();
    let range = bytes.as_ptr_range();
    assert!(range.contains(&back.iq.as_ptr()) && range.contains(&back.name.as_ptr()));
    assert_eq!((back.iq, back.name), (&[5u8; 64][..], "sdr"));
    // And from an owned frame, they borrow from the frame.
    let back: BorrowedBytes<'_> = from_frame(&frame).unwrap();
    assert_eq!(back.name, "sdr");
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Item {
    sku: String,
    qty: i32,
}
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Sequences {
    items: Vec<Item>,
    tags: Vec<String>,
    empty: Vec<i64>,
    pair: (i64, bool),
    grid: Vec<Vec<u8>>,
}

#[test]
fn sequences_record_their_length_and_number_their_elements() {
    let v = Sequences {
        items: vec![
            Item {
                sku: "A".into(),
                qty: 1,
            },
            Item {
                sku: "B".into(),
                qty: 2,
            },
        ],
        tags: vec!["x".into(), "y".into()],
        empty: vec![],
        pair: (5, true),
        grid: vec![vec![1], vec![]],
    };
    let frame = to_frame(&v).unwrap();
    assert_eq!(
        params(&frame),
        [
            p("", "items", ValueRef::Int(2)),
            p("items.0", "sku", ValueRef::String("A")),
            p("items.0", "qty", ValueRef::Int(1)),
            p("items.1", "sku", ValueRef::String("B")),
            p("items.1", "qty", ValueRef::Int(2)),
            p("", "tags", ValueRef::Int(2)),
            p("tags", "0", ValueRef::String("x")),
            p("tags", "1", ValueRef::String("y")),
            p("", "empty", ValueRef::Int(0)),
            p("", "pair", ValueRef::Int(2)),
            p("pair", "0", ValueRef::Int(5)),
            p("pair", "1", ValueRef::Bool(true)),
            p("", "grid", ValueRef::Int(2)),
            p("grid", "0", ValueRef::Int(1)),
            p("grid.0", "0", ValueRef::Int(1)),
            p("grid", "1", ValueRef::Int(0)),
        ]
    );
    reads_back(&frame, &v);
}

#[test]
fn a_sequence_without_its_length_reads_up_to_the_first_gap() {
    // As a C++ producer might write it: numbered devices, no length.
    let mut frame = Frame::default();
    frame.add("items.0", "sku", "A");
    frame.add("items.0", "qty", 1);
    frame.add("items.1", "sku", "B");
    frame.add("items.1", "qty", 2);
    frame.add("items.3", "sku", "after a gap");
    frame.add("items.3", "qty", 4);
    #[derive(Debug, PartialEq, Deserialize)]
    struct Order {
        items: Vec<Item>,
    }
    let want = Order {
        items: vec![
            Item {
                sku: "A".into(),
                qty: 1,
            },
            Item {
                sku: "B".into(),
                qty: 2,
            },
        ],
    };
    reads_back(&frame, &want);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Maps {
    meta: BTreeMap<String, String>,
    by_id: BTreeMap<u32, Chain>,
    empty: BTreeMap<String, i64>,
}

#[test]
fn maps_are_devices_with_their_length_and_integer_keys_are_decimal() {
    let v = Maps {
        meta: [("channel", "web"), ("region", "eu")]
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        by_id: [(7, Chain { gain: 1 }), (12, Chain { gain: 2 })]
            .into_iter()
            .collect(),
        empty: BTreeMap::new(),
    };
    let frame = to_frame(&v).unwrap();
    assert_eq!(
        params(&frame),
        [
            p("", "meta", ValueRef::Int(2)),
            p("meta", "channel", ValueRef::String("web")),
            p("meta", "region", ValueRef::String("eu")),
            p("", "by_id", ValueRef::Int(2)),
            p("by_id.7", "gain", ValueRef::Int(1)),
            p("by_id.12", "gain", ValueRef::Int(2)),
            p("", "empty", ValueRef::Int(0)),
        ]
    );
    reads_back(&frame, &v);
}

#[test]
fn a_top_level_map_has_no_length_and_reads_every_device() {
    let mut v: HashMap<String, BTreeMap<String, f64>> = HashMap::new();
    v.insert(
        "sdr_1".into(),
        [("gain".to_owned(), 1.5)].into_iter().collect(),
    );
    v.insert(
        "sdr_2".into(),
        [("gain".to_owned(), 2.5)].into_iter().collect(),
    );
    let frame = to_frame(&v).unwrap();
    assert_eq!(frame.find("", "sdr_1"), Some(ValueRef::Int(1)));
    assert_eq!(frame.find("sdr_2", "gain"), Some(ValueRef::Double(2.5)));
    reads_back(&frame, &v);
    let mut flat: BTreeMap<String, i64> = BTreeMap::new();
    flat.insert("a".into(), 1);
    flat.insert("b.c".into(), 2); // a '.' in a parameter name is fine
    let frame = to_frame(&flat).unwrap();
    assert_eq!(frame.find("", "b.c"), Some(ValueRef::Int(2)));
    reads_back(&frame, &flat);
}

#[test]
fn parameters_in_any_order_read_the_same() {
    // Interleaved devices, fields in reverse, unknown extras: found by name.
    let mut frame = Frame::default();
    frame.add("core", "firmware", "v3.2.1");
    frame.add("sdr_1", "locked", true);
    frame.add("extra", "ignored", 1);
    frame.add("", "seq", 7);
    frame.add("sdr_1", "tx_gain", 30.5);
    frame.add("sdr_1", "unknown_field", "x");
    reads_back(&frame, &telemetry());
    // A map whose entries are not together.
    let mut frame = Frame::default();
    frame.add("meta", "channel", "web");
    frame.add("", "x", 1);
    frame.add("meta", "region", "eu");
    #[derive(Debug, PartialEq, Deserialize)]
    struct M {
        x: i64,
        meta: BTreeMap<String, String>,
    }
    let want = M {
        x: 1,
        meta: [("channel", "web"), ("region", "eu")]
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
    };
    reads_back(&frame, &want);
    // A run of more than 8 entries (the reader keeps 8 run keys inline,
    // the rest spill), then another device, then more of the map and a
    // repeat of a key of the run (first occurrence wins).
    let mut frame = Frame::default();
    for i in 0..12 {
        frame.add("meta", &format!("k{i:02}"), i.to_string().as_str());
    }
    frame.add("", "x", 1);
    frame.add("meta", "k10", "repeat");
    frame.add("meta", "k03", "repeat");
    frame.add("meta", "late", "yes");
    let mut meta: BTreeMap<String, String> = (0..12)
        .map(|i| (format!("k{i:02}"), i.to_string()))
        .collect();
    meta.insert("late".into(), "yes".into());
    reads_back(&frame, &M { x: 1, meta });
}

#[test]
fn a_frame_checked_whole_partway_is_read_on_at_the_cursor_first_occurrences_winning() {
    // `from_bytes` checks the whole frame at the first read away from its
    // cursor (here an attachment, which comes after every parameter) and
    // reads on at the same parameter through the checked view; a field in
    // order is still found at the cursor, and later duplicates lose.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Inner {
        x: f64,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct R {
        raw: serde_bytes::ByteBuf,
        a: i64,
        b: String,
        inner: Inner,
        c: bool,
    }
    let mut frame = Frame::default();
    frame.add("", "a", 1);
    frame.add("", "b", "two");
    frame.add("inner", "x", 1.5);
    frame.add("", "c", true);
    frame.add("", "a", 99);
    frame.add("", "b", "later");
    frame.add("inner", "x", -1.0);
    frame.add_attachment_copy("raw", &[7, 8, 9]);
    let want = R {
        raw: serde_bytes::ByteBuf::from(vec![7, 8, 9]),
        a: 1,
        b: "two".into(),
        inner: Inner { x: 1.5 },
        c: true,
    };
    reads_back(&frame, &want);
    // A field out of order moves the cursor: from there every field is
    // looked up, and the first occurrence still wins.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Late {
        c: bool,
        a: i64,
        inner: Inner,
        b: String,
    }
    reads_back(
        &frame,
        &Late {
            c: true,
            a: 1,
            inner: Inner { x: 1.5 },
            b: "two".into(),
        },
    );
}

#[test]
fn type_mismatches_name_the_path_and_both_types() {
    let mut frame = Frame::default();
    frame.add("", "seq", 7);
    frame.add("sdr_1", "tx_gain", "high");
    frame.add("sdr_1", "locked", true);
    frame.add("core", "firmware", "v1");
    let err = from_frame::<Telemetry>(&frame).unwrap_err();
    assert_eq!(err.to_string(), "sdr_1.tx_gain: expected f64, found string");
    assert_eq!(
        err.kind(),
        &ErrorKind::TypeMismatch {
            expected: "f64",
            found: "string"
        }
    );
    let bytes = frame.encode().unwrap();
    let view_err = from_view::<Telemetry>(&FrameView::new(&bytes).unwrap()).unwrap_err();
    assert_eq!(view_err, err);

    // A scalar where a struct belongs, a device where a scalar belongs.
    let mut frame = Frame::default();
    frame.add("", "seq", 7);
    frame.add("", "sdr_1", 1.0);
    frame.add("seq", "x", 1);
    frame.add("core", "firmware", "v1");
    let err = from_frame::<Telemetry>(&frame).unwrap_err();
    assert_eq!(
        err.to_string(),
        "sdr_1: expected a struct (a device), found double"
    );
    let mut frame = Frame::default();
    frame.add("seq", "x", 1);
    #[derive(Debug, Deserialize)]
    struct S {
        #[allow(dead_code)]
        seq: i64,
    }
    let err = from_frame::<S>(&frame).unwrap_err();
    assert_eq!(err.to_string(), "seq: expected i64, found a device");
    // Deep in a sequence.
    let mut frame = Frame::default();
    frame.add("", "items", 2);
    frame.add("items.0", "sku", "A");
    frame.add("items.0", "qty", 1);
    frame.add("items.1", "sku", 5);
    frame.add("items.1", "qty", 1);
    #[derive(Debug, Deserialize)]
    struct O {
        #[allow(dead_code)]
        items: Vec<Item>,
    }
    let err = from_frame::<O>(&frame).unwrap_err();
    assert_eq!(
        err.to_string(),
        "items.1.sku: expected a string, found int64"
    );
}

#[test]
fn missing_fields_name_the_struct_that_misses_them() {
    let mut frame = Frame::default();
    frame.add("", "seq", 7);
    frame.add("sdr_1", "locked", true);
    frame.add("core", "firmware", "v1");
    let err = from_frame::<Telemetry>(&frame).unwrap_err();
    assert_eq!(err.to_string(), "sdr_1: missing field `tx_gain`");
    let err = from_frame::<Telemetry>(&Frame::default()).unwrap_err();
    assert_eq!(err.to_string(), "missing field `seq`");
    // With a recorded length, a missing element is named by its index.
    let mut frame = Frame::default();
    frame.add("", "v", 2);
    frame.add("v", "0", 1);
    #[derive(Debug, Deserialize)]
    struct V {
        #[allow(dead_code)]
        v: Vec<i64>,
    }
    assert_eq!(
        from_frame::<V>(&frame).unwrap_err().to_string(),
        "v.1: missing from the frame"
    );
}

#[test]
fn defaults_fill_absent_fields() {
    #[derive(Debug, PartialEq, Deserialize)]
    struct D {
        #[serde(default)]
        n: i64,
        #[serde(default)]
        v: Vec<String>,
        s: String,
    }
    let mut frame = Frame::default();
    frame.add("", "s", "x");
    reads_back(
        &frame,
        &D {
            n: 0,
            v: vec![],
            s: "x".into(),
        },
    );
}

#[test]
fn hostile_lengths_are_refused_not_looped_over() {
    let mut frame = Frame::default();
    frame.add("", "v", i64::MAX);
    #[derive(Debug, Deserialize)]
    struct V {
        #[allow(dead_code)]
        v: Vec<Option<i64>>,
    }
    let err = from_frame::<V>(&frame).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::InvalidLength(i64::MAX));
    assert_eq!(err.path(), "v");
    frame.clear();
    frame.add("", "v", -1);
    assert_eq!(
        from_frame::<V>(&frame).unwrap_err().to_string(),
        "v: sequence length -1 is not possible in this frame"
    );
}

#[test]
fn names_that_cannot_be_keys_are_errors_naming_the_path() {
    let mut m: BTreeMap<String, Chain> = BTreeMap::new();
    m.insert("a.b".into(), Chain { gain: 1 });
    #[derive(Serialize)]
    struct W {
        m: BTreeMap<String, Chain>,
    }
    let err = to_frame(&W { m }).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::InvalidKey("a.b".into()));
    assert_eq!(err.path(), "m.a.b");
    let mut m: BTreeMap<String, i64> = BTreeMap::new();
    m.insert("x\u{1f}y".into(), 1);
    assert!(matches!(
        to_frame(&m).unwrap_err().kind(),
        ErrorKind::InvalidKey(_)
    ));
    let mut m: BTreeMap<String, Chain> = BTreeMap::new();
    m.insert(String::new(), Chain { gain: 1 });
    assert!(matches!(
        to_frame(&m).unwrap_err().kind(),
        ErrorKind::InvalidKey(k) if k.is_empty()
    ));
    let mut m: BTreeMap<(i32, i32), i64> = BTreeMap::new();
    m.insert((1, 2), 3);
    assert!(matches!(
        to_frame(&m).unwrap_err().kind(),
        ErrorKind::Unsupported(_)
    ));
}

#[test]
fn the_top_level_must_be_a_struct_or_a_map() {
    for err in [
        to_frame(&5).unwrap_err(),
        to_frame(&vec![1, 2]).unwrap_err(),
        to_frame("text").unwrap_err(),
    ] {
        assert!(matches!(err.kind(), ErrorKind::Unsupported(_)), "{err}");
        assert_eq!(err.path(), "");
    }
    assert!(from_frame::<i64>(&Frame::default()).is_err());
    #[derive(Serialize)]
    struct Unit {
        u: (),
    }
    assert_eq!(
        to_frame(&Unit { u: () }).unwrap_err().to_string(),
        "u: unsupported: a unit value"
    );
}

#[test]
fn to_frame_into_reuses_the_frame_keeps_the_header_and_is_empty_after_an_error() {
    let mut frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    frame.add("old", "x", 1);
    to_frame_into(&telemetry(), &mut frame).unwrap();
    assert_eq!(*frame.header(), Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    assert_eq!(frame.len(), 4);
    assert!(frame.find("old", "x").is_none());
    let err = to_frame_into(
        &InSdr {
            sdr_1: Big { big: u64::MAX },
        },
        &mut frame,
    );
    assert!(err.is_err());
    assert!(frame.is_empty() && frame.attachment_count() == 0);
}

#[test]
fn unknown_values_are_reported_as_such() {
    let mut frame = Frame::default();
    frame.add(
        "",
        "seq",
        ValueRef::Unknown(UnknownValue::new(50, &[0xc0]).unwrap()),
    );
    #[derive(Debug, Deserialize)]
    struct S {
        #[allow(dead_code)]
        seq: i64,
    }
    assert_eq!(
        from_frame::<S>(&frame).unwrap_err().to_string(),
        "seq: expected i64, found unknown"
    );
}

#[test]
fn errors_are_std_errors_and_serde_errors() {
    fn takes<E: std::error::Error + serde::ser::Error + serde::de::Error>(_: &E) {}
    let err = to_frame(&5).unwrap_err();
    takes(&err);
    let custom = <messageframe::serde::Error as serde::de::Error>::custom("boom");
    assert_eq!(custom.to_string(), "boom");
    assert_eq!(custom.kind(), &ErrorKind::Message("boom".into()));
}

#[test]
fn values_and_headers_serialize_to_the_dump_forms_and_read_back() {
    let h = Header::from_fields(1_700_000_000_000, 13, 3, 4, -5, 1, 1, 0x8000);
    let json = serde_json::to_string(&h).unwrap();
    assert_eq!(
        json,
        r#"{"timestamp":1700000000000,"counter":13,"source":3,"target":4,"message_id":-5,"message_type":1,"version":1,"flags":32768}"#
    );
    assert_eq!(serde_json::from_str::<Header>(&json).unwrap(), h);
    // Compact MessagePack writes structs as arrays: that reads back too.
    let packed = rmp_serde_like_array(&h);
    assert_eq!(serde_json::from_str::<Header>(&packed).unwrap(), h);
    assert!(serde_json::from_str::<Header>(r#"{"timestamp":1}"#).is_err());
    assert!(serde_json::from_str::<Header>(&json.replace("32768", "65536")).is_err());
    assert!(serde_json::from_str::<Header>(&json.replace("\"flags\"", "\"flag\"")).is_err());

    for (v, text) in [
        (Value::Int(-3), r#"{"type":"int64","value":-3}"#),
        (Value::Double(10.0), r#"{"type":"double","value":10.0}"#),
        (
            Value::Double(f64::NEG_INFINITY),
            r#"{"type":"double","value":"-Infinity"}"#,
        ),
        (
            Value::String("a\"b".into()),
            r#"{"type":"string","value":"a\"b"}"#,
        ),
        (Value::Bool(true), r#"{"type":"bool","value":true}"#),
        (
            Value::Unknown(UnknownValueBuf::new(50, vec![0x92, 1, 2]).unwrap()),
            r#"{"type":"unknown","tag":50,"raw":"kgEC"}"#,
        ),
    ] {
        assert_eq!(serde_json::to_string(&v).unwrap(), text);
        assert_eq!(serde_json::to_string(&v.as_value_ref()).unwrap(), text);
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), v, "{text}");
    }
    let nan: Value = serde_json::from_str(r#"{"value":"NaN","type":"double"}"#).unwrap();
    assert!(nan.as_f64().unwrap().is_nan());
    for bad in [
        r#"{"type":"int64","value":1.5}"#,
        r#"{"type":"int64","value":18446744073709551615}"#,
        r#"{"type":"bool","value":1}"#,
        r#"{"type":"float","value":1}"#,
        r#"{"type":"unknown","tag":10,"raw":"AQ=="}"#,
        r#"{"type":"unknown","tag":50,"raw":"kgE="}"#,
        r#"{"type":"string"}"#,
        r#"{"type":"string","value":"x","extra":1}"#,
    ] {
        assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
    }
}

/// A header as a JSON array in wire order, the shape of formats that write
/// structs as sequences.
fn rmp_serde_like_array(h: &Header) -> String {
    format!(
        "[{},{},{},{},{},{},{},{}]",
        h.timestamp(),
        h.counter(),
        h.source(),
        h.target(),
        h.message_id(),
        h.message_type(),
        h.version(),
        h.flags()
    )
}

#[test]
fn frames_and_views_serialize_to_the_same_dump_json() {
    let mut frame = Frame::new(Header::from_fields(5, 6, 1, 2, 3, 4, 1, 0));
    frame.add("sdr_1", "rx_gain", 30.5);
    frame.add("", "nan", f64::NAN);
    frame.add("d", "s", "q\"\\\n");
    frame.add(
        "future",
        "x",
        ValueRef::Unknown(UnknownValue::new(-7, &[0xc0]).unwrap()),
    );
    frame.add_attachment("iq", vec![0xAB; 4]);
    let json = serde_json::to_string(&frame).unwrap();
    assert_eq!(
        json,
        concat!(
            r#"{"header":{"timestamp":5,"counter":6,"source":1,"target":2,"message_id":3,"message_type":4,"version":1,"flags":0},"#,
            r#""params":[{"device":"sdr_1","param":"rx_gain","type":"double","value":30.5},"#,
            r#"{"device":"","param":"nan","type":"double","value":"NaN"},"#,
            r#"{"device":"d","param":"s","type":"string","value":"q\"\\\n"},"#,
            r#"{"device":"future","param":"x","type":"unknown","tag":-7,"raw":"wA=="}],"#,
            r#""attachments":[{"name":"iq","len":4}]}"#
        )
    );
    let bytes = frame.encode().unwrap();
    let view = FrameView::new(&bytes).unwrap();
    assert_eq!(serde_json::to_string(&view).unwrap(), json);
    let with = serde_json::to_string(&WithData(&view)).unwrap();
    assert_eq!(with, serde_json::to_string(&WithData(&frame)).unwrap());
    assert!(with.ends_with(r#"[{"name":"iq","len":4,"data":"q6urqw=="}]}"#));
}

// The round trip struct → frame → bytes → struct, as a property.

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PItem {
    sku: String,
    qty: i32,
    price: f64,
    note: Option<String>,
    flag: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum PKind {
    Retail,
    Wholesale,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct POrder {
    id: i64,
    small: u8,
    wide: u64,
    customer: String,
    kind: PKind,
    total: f64,
    items: Vec<PItem>,
    tags: Vec<String>,
    meta: BTreeMap<String, String>,
    counts: BTreeMap<u16, i64>,
    inner: Option<Sdr>,
    #[serde(with = "serde_bytes")]
    blob: Vec<u8>,
    pair: (i16, String),
}

fn text() -> impl Strategy<Value = String> {
    // Any text, control characters, U+001F and '.' included: values carry
    // anything.
    proptest::string::string_regex("[a-z\\.\u{1f}\u{0}é🚀 ]{0,12}").unwrap()
}

fn key() -> impl Strategy<Value = String> {
    // Map keys whose values are scalars may hold '.', not U+001F.
    "[a-z0-9_.]{0,8}"
}

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("comparable", |v| !v.is_nan()),
        Just(-0.0),
        Just(1e19)
    ]
}

prop_compose! {
    fn item()(sku in text(), qty in any::<i32>(), price in finite(), note in proptest::option::of(text()), flag in any::<bool>()) -> PItem {
        PItem { sku, qty, price, note, flag }
    }
}

prop_compose! {
    fn order()(
        id in any::<i64>(),
        small in any::<u8>(),
        wide in 0..=i64::MAX as u64,
        customer in text(),
        retail in any::<bool>(),
        total in finite(),
        items in proptest::collection::vec(item(), 0..6),
        tags in proptest::collection::vec(text(), 0..4),
        meta in proptest::collection::btree_map(key(), text(), 0..4),
        counts in proptest::collection::btree_map(any::<u16>(), any::<i64>(), 0..4),
        inner in proptest::option::of((finite(), any::<bool>())),
        blob in proptest::collection::vec(any::<u8>(), 0..40),
        pair in (any::<i16>(), text()),
    ) -> POrder {
        POrder {
            id, small, wide, customer,
            kind: if retail { PKind::Retail } else { PKind::Wholesale },
            total, items, tags, meta, counts,
            inner: inner.map(|(tx_gain, locked)| Sdr { tx_gain, locked }),
            blob, pair,
        }
    }
}

proptest! {
    #[test]
    fn struct_to_frame_to_bytes_to_struct_is_the_identity(o in order()) {
        let frame = to_frame(&o).unwrap();
        let bytes = frame.encode().unwrap();
        // Both readers, and an owned decode of the bytes.
        let view = FrameView::new(&bytes).unwrap();
        let from_v: POrder = from_view(&view).unwrap();
        prop_assert_eq!(&from_v, &o);
        let decoded = Frame::decode(&bytes).unwrap();
        let from_f: POrder = from_frame(&decoded).unwrap();
        prop_assert_eq!(&from_f, &o);
        // A reused frame gives the same bytes.
        let mut reused = Frame::new(*frame.header());
        reused.add("stale", "x", 1);
        to_frame_into(&o, &mut reused).unwrap();
        prop_assert_eq!(&reused.encode().unwrap(), &bytes);
        // Straight to bytes: the same bytes, appended after what the
        // buffer held; and back in one pass.
        let mut direct = b"kept".to_vec();
        to_bytes_into(&o, frame.header(), &mut direct).unwrap();
        prop_assert_eq!(&direct[..4], b"kept");
        prop_assert_eq!(&direct[4..], &bytes[..]);
        let from_b: POrder = from_bytes(&bytes).unwrap();
        prop_assert_eq!(&from_b, &o);
    }

    #[test]
    fn from_bytes_refuses_what_the_view_refuses(o in order(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), bits in 1u8..) {
        let bytes = to_bytes(&o, &Header::default()).unwrap();
        // Every truncation is an invalid frame, found wherever it cuts.
        let truncated = &bytes[..cut.index(bytes.len())];
        match from_bytes::<POrder>(truncated) {
            Err(e) => prop_assert!(matches!(e.kind(), ErrorKind::Decode(_)), "{e}"),
            Ok(_) => prop_assert!(false, "a truncated frame read back"),
        }
        // A corrupted byte: an error exactly when the view refuses the
        // frame, and then the view's error.
        let mut bad = bytes.clone();
        bad[flip.index(bytes.len())] ^= bits;
        let view = FrameView::new(&bad);
        let direct = from_bytes::<POrder>(&bad);
        if let Err(view_err) = view {
            match direct {
                Err(e) => prop_assert_eq!(e.kind(), &ErrorKind::Decode(view_err)),
                Ok(_) => prop_assert!(false, "an invalid frame read back"),
            }
        } else if let Ok(view) = view {
            // A valid frame: whatever it reads as, the same as the view.
            let via_view = from_view::<POrder>(&view);
            prop_assert_eq!(
                direct.is_ok(),
                via_view.is_ok(),
                "from_bytes: {:?}, from_view: {:?}",
                direct.as_ref().err(),
                via_view.as_ref().err()
            );
            if let (Ok(a), Ok(b)) = (direct, via_view) {
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn shuffled_parameters_read_back_the_same(o in order(), seed in any::<u64>()) {
        // Another producer's order: same keys, any order.
        let frame = to_frame(&o).unwrap();
        let mut entries: Vec<(String, String, Value)> =
            frame.iter().map(|(d, p, v)| (d.to_owned(), p.to_owned(), v.to_value())).collect();
        let mut s = seed | 1;
        for i in (1..entries.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            entries.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let mut shuffled = Frame::new(*frame.header());
        for (d, p, v) in &entries {
            shuffled.add(d, p, v);
        }
        for (n, d) in frame.attachments() {
            shuffled.add_attachment(n, d.clone());
        }
        let back: POrder = from_frame(&shuffled).unwrap();
        prop_assert_eq!(&back, &o);
        let bytes = shuffled.encode().unwrap();
        let back: POrder = from_view(&FrameView::new(&bytes).unwrap()).unwrap();
        prop_assert_eq!(&back, &o);
        let back: POrder = from_bytes(&bytes).unwrap();
        prop_assert_eq!(&back, &o);
    }
}

#[test]
fn a_recorded_length_past_the_frame_is_refused_by_every_reader() {
    // Found by the proptest above: `from_bytes` must not accept a length
    // the other readers refuse (it counts the attachments only when it
    // must, and the count must be the same).
    #[derive(Debug, PartialEq, Deserialize)]
    struct T {
        pair: (i16, String),
    }
    let mut frame = Frame::default();
    frame.add("", "pair", 22);
    frame.add("pair", "0", 1);
    frame.add("pair", "1", "x");
    let bytes = frame.encode().unwrap();
    let view = FrameView::new(&bytes).unwrap();
    for err in [
        from_frame::<T>(&frame).unwrap_err(),
        from_view::<T>(&view).unwrap_err(),
        from_bytes::<T>(&bytes).unwrap_err(),
    ] {
        assert_eq!(err.kind(), &ErrorKind::InvalidLength(22));
        assert_eq!(err.path(), "pair");
    }
    // Within parameters and attachments in all: read.
    frame.add_attachment("a", vec![0; 3]);
    let mut exact = Frame::default();
    exact.add("", "pair", 2);
    exact.add("pair", "0", 1);
    exact.add("pair", "1", "x");
    let want = T {
        pair: (1, "x".into()),
    };
    assert_eq!(from_bytes::<T>(&exact.encode().unwrap()).unwrap(), want);
}

#[test]
fn from_bytes_wants_exactly_one_frame() {
    let t = telemetry();
    let mut bytes = to_bytes(&t, &Header::default()).unwrap();
    assert_eq!(from_bytes::<Telemetry>(&bytes).unwrap(), t);
    bytes.push(0xc0);
    let err = from_bytes::<Telemetry>(&bytes).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid frame: 1 trailing byte"),
        "{err}"
    );
    // An invalid frame is reported even where the type reads nothing.
    #[derive(Debug, Deserialize)]
    struct Nothing {}
    assert!(matches!(
        from_bytes::<Nothing>(&bytes).unwrap_err().kind(),
        ErrorKind::Decode(_)
    ));
    assert!(from_bytes::<Nothing>(&bytes[..bytes.len() - 1]).is_ok());
    assert!(matches!(
        from_bytes::<Nothing>(&[]).unwrap_err().kind(),
        ErrorKind::Decode(_)
    ));
}

#[test]
fn to_bytes_leaves_the_buffer_as_it_was_on_error() {
    #[derive(Serialize)]
    struct Wide {
        ok: i64,
        blob: serde_bytes::ByteBuf,
        too_big: u64,
    }
    let mut buf = b"earlier frame".to_vec();
    let err = to_bytes_into(
        &Wide {
            ok: 1,
            blob: serde_bytes::ByteBuf::from(vec![1, 2, 3]),
            too_big: u64::MAX,
        },
        &Header::default(),
        &mut buf,
    )
    .unwrap_err();
    assert_eq!(err.path(), "too_big");
    assert_eq!(buf, b"earlier frame");
    // The attachment scratch of the failed call does not leak into the next.
    #[derive(Serialize)]
    struct Plain {
        ok: i64,
    }
    to_bytes_into(&Plain { ok: 2 }, &Header::default(), &mut buf).unwrap();
    let view = FrameView::new(&buf[13..]).unwrap();
    assert_eq!(view.attachment_count(), 0);
    assert_eq!(view.find("", "ok"), Some(ValueRef::Int(2)));
}

#[test]
fn to_bytes_counts_sixteen_parameters_and_more_with_the_shortest_map_header() {
    // fixmap up to 15 parameters, map16 from 16: the parameters move up
    // behind the header, byte for byte what the frame's encoder writes.
    for n in [0usize, 1, 15, 16, 17, 300, 70_000] {
        let m: BTreeMap<String, i64> = (0..n).map(|i| (format!("k{i}"), i as i64)).collect();
        let bytes = to_bytes(&m, &Header::default()).unwrap();
        let frame = to_frame(&m).unwrap();
        assert_eq!(bytes, frame.encode().unwrap(), "{n} parameters");
        let back: BTreeMap<String, i64> = from_bytes(&bytes).unwrap();
        assert_eq!(back, m);
    }
}

#[test]
fn long_keys_and_long_strings_take_the_views_general_path() {
    // Keys past 31 bytes are str8 on the wire, strings past 31 bytes too:
    // the view's cursor reads them through the general reader.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Inner {
        a_parameter_name_well_past_thirty_one_bytes: String,
        n: i64,
    }
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Outer {
        a_device_name_that_is_long_enough_for_str8: Inner,
        after: bool,
    }
    let v = Outer {
        a_device_name_that_is_long_enough_for_str8: Inner {
            a_parameter_name_well_past_thirty_one_bytes: "x".repeat(300),
            n: -70_000,
        },
        after: true,
    };
    let frame = to_frame(&v).unwrap();
    reads_back(&frame, &v);
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::Int),
        finite().prop_map(Value::Double),
        text().prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
        // An unknown tag with one MessagePack value (a fixint).
        (50i128..60, 0u8..0x80)
            .prop_map(|(tag, b)| Value::Unknown(UnknownValueBuf::new(tag, vec![b]).unwrap())),
    ]
}

proptest! {
    #[test]
    fn frames_go_to_json_and_back(
        header in any::<(u64, u64, u32, u32, i32, i32, u16, u16)>(),
        params in proptest::collection::vec(("[a-z_.é]{0,6}", text(), value()), 0..12),
        dup in any::<bool>(),
        attachments in proptest::collection::vec((text(), proptest::collection::vec(any::<u8>(), 0..40)), 0..3),
    ) {
        let (t, c, s, g, m, y, v, f) = header;
        let mut frame = Frame::new(Header::from_fields(t, c, s, g, m, y, v, f));
        for (d, p, v) in &params {
            frame.add(d, p, v);
        }
        if dup {
            // Duplicates are kept, in order, as the wire keeps them.
            if let Some((d, p, _)) = params.first() {
                frame.add(d, p, 1);
            }
        }
        for (name, data) in &attachments {
            frame.add_attachment(name, data.clone());
        }
        let json = serde_json::to_string(&WithData(&frame)).unwrap();
        let back: Frame = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&back, &frame);
        prop_assert_eq!(back.encode().unwrap(), frame.encode().unwrap());
    }
}

#[test]
fn a_frame_reads_back_only_from_json_that_can_rebuild_it() {
    let mut frame = Frame::new(Header::from_fields(5, 0, 1, 2, 3, 4, 1, 0));
    frame.add("sdr_1", "rx_gain", 30.5);
    frame.add_attachment("iq", vec![1, 2, 3]);
    // The plain dump form has the attachment's length only.
    let plain = serde_json::to_string(&frame).unwrap();
    let err = serde_json::from_str::<Frame>(&plain).unwrap_err();
    assert!(
        err.to_string().contains("attachment \"iq\" has no `data`"),
        "{err}"
    );
    let header = r#""header":{"timestamp":5,"counter":0,"source":1,"target":2,"message_id":3,"message_type":4,"version":1,"flags":0}"#;
    for (json, want) in [
        (r#"{"params":[]}"#.to_owned(), "missing field `header`"),
        (format!("{{{header},\"extra\":1}}"), "unknown field `extra`"),
        (format!("{{{header},{header}}}"), "duplicate field `header`"),
        (
            format!(
                r#"{{{header},"params":[{{"device":"a\u001fb","param":"p","type":"int64","value":1}}]}}"#
            ),
            "U+001F",
        ),
        (
            format!(
                r#"{{{header},"params":[{{"device":"a","param":"p","type":"int64","value":"x"}}]}}"#
            ),
            "expected an int64",
        ),
        (
            format!(r#"{{{header},"attachments":[{{"name":"iq","len":4,"data":"AQID"}}]}}"#),
            "the attachment's `len`",
        ),
    ] {
        let err = serde_json::from_str::<Frame>(&json).unwrap_err();
        assert!(err.to_string().contains(want), "{json}: {err}");
    }
    // Parameters and attachments may be absent; the header may come last.
    let json = format!("{{{header}}}");
    let back: Frame = serde_json::from_str(&json).unwrap();
    assert_eq!((back.len(), back.attachment_count()), (0, 0));
    let json =
        format!(r#"{{"params":[{{"param":"x","device":"","value":2,"type":"int64"}}],{header}}}"#);
    let back: Frame = serde_json::from_str(&json).unwrap();
    assert_eq!(back.find("", "x"), Some(ValueRef::Int(2)));
    assert_eq!(back.header().message_id(), 3);
}

/// docs/serde.md's dependency snippet names no version that was never
/// published (the crate is a path dependency, as in the README), and gives
/// the crates its examples use: serde with its derive, and serde_bytes.
#[test]
fn the_docs_dependency_snippet_is_one_a_user_can_paste() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/serde.md")).unwrap();
    let snippet = doc
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a toml block");
    let line = |name: &str| {
        snippet
            .lines()
            .find(|l| l.starts_with(&format!("{name} =")))
            .unwrap_or_else(|| panic!("no {name} line in\n{snippet}"))
    };
    let ours = line("messageframe");
    assert!(!ours.contains("version"), "{ours}");
    assert!(ours.contains(r#"features = ["serde"]"#), "{ours}");
    let path = ours
        .split("path = \"")
        .nth(1)
        .and_then(|p| p.split('"').next())
        .expect("a path dependency");
    let manifest = std::fs::read_to_string(root.join(path).join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"messageframe\""), "{path}");
    assert!(line("serde").contains(r#"features = ["derive"]"#));
    line("serde_bytes");
    // Every crate the examples use is in the snippet.
    for used in ["use serde::", "serde_bytes", "use messageframe::"] {
        assert!(doc.contains(used), "the examples use {used}");
    }
}

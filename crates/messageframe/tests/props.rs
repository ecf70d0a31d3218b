//! Property tests: arbitrary frames round-trip through the owned decode, the
//! decode into a reused frame and the zero-copy view, encode identically
//! after the round trip, and read correctly with an independent decoder
//! (rmpv).

use messageframe::{Decoder, Frame, FrameView, Header, UnknownValue, ValueRef};
use proptest::prelude::*;
use rmpv::Value as Mp;

#[derive(Debug, Clone)]
enum V {
    Int(i64),
    Double(f64),
    Str(String),
    Bool(bool),
    Unknown(i128, Vec<u8>),
}

impl V {
    fn as_ref(&self) -> ValueRef<'_> {
        match self {
            V::Int(i) => ValueRef::Int(*i),
            V::Double(d) => ValueRef::Double(*d),
            V::Str(s) => ValueRef::String(s),
            V::Bool(b) => ValueRef::Bool(*b),
            V::Unknown(t, raw) => ValueRef::Unknown(UnknownValue::new(*t, raw).unwrap()),
        }
    }
}

/// Same value, doubles compared by bit pattern (NaN, -0.0).
fn same(a: ValueRef<'_>, b: ValueRef<'_>) -> bool {
    match (a, b) {
        (ValueRef::Double(x), ValueRef::Double(y)) => x.to_bits() == y.to_bits(),
        (a, b) => a == b,
    }
}

fn mp_value() -> impl Strategy<Value = Mp> {
    let leaf = prop_oneof![
        Just(Mp::Nil),
        any::<bool>().prop_map(Mp::Boolean),
        any::<i64>().prop_map(Mp::from),
        any::<u64>().prop_map(Mp::from),
        any::<f64>().prop_map(Mp::F64),
        any::<f32>().prop_map(Mp::F32),
        ".{0,10}".prop_map(Mp::from),
        prop::collection::vec(any::<u8>(), 0..10).prop_map(Mp::Binary),
        (any::<i8>(), prop::collection::vec(any::<u8>(), 0..6)).prop_map(|(t, d)| Mp::Ext(t, d)),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Mp::Array),
            prop::collection::vec((inner.clone(), inner), 0..3).prop_map(Mp::Map),
        ]
    })
}

fn value() -> impl Strategy<Value = V> {
    prop_oneof![
        any::<i64>().prop_map(V::Int),
        prop_oneof![
            any::<f64>(),
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(1e19),
            Just(18_446_744_073_709_551_616.0),
            (-1_000_000i64..1_000_000).prop_map(|i| i as f64),
        ]
        .prop_map(V::Double),
        "\\PC{0,40}".prop_map(V::Str),
        any::<bool>().prop_map(V::Bool),
        (
            // Tags are any MessagePack integer, u64 range included.
            prop_oneof![
                any::<i64>().prop_map(i128::from),
                any::<u64>().prop_map(i128::from)
            ]
            .prop_filter("unknown tag", |t| ![10, 20, 30, 40].contains(t)),
            mp_value()
        )
            .prop_map(|(t, v)| {
                let mut raw = Vec::new();
                rmpv::encode::write_value(&mut raw, &v).unwrap();
                V::Unknown(t, raw)
            }),
    ]
}

#[derive(Debug, Clone)]
struct Spec {
    header: Header,
    params: Vec<(String, String, V)>,
    attachments: Vec<(String, Vec<u8>)>,
}

fn spec() -> impl Strategy<Value = Spec> {
    let header = (
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        any::<i32>(),
        any::<i32>(),
        any::<u16>(),
        any::<u16>(),
    )
        .prop_map(|(a, b, c, d, e, f, g, h)| Header::from_fields(a, b, c, d, e, f, g, h));
    // Devices never contain the separator; parameters may.
    let param = ("[a-z_0-9é📡]{0,10}", "[a-zA-Z0-9_\u{1f} ]{0,12}", value());
    (
        header,
        prop::collection::vec(param, 0..40),
        prop::collection::vec(
            ("\\PC{0,8}", prop::collection::vec(any::<u8>(), 0..300)),
            0..3,
        ),
    )
        .prop_map(|(header, mut params, attachments)| {
            // Keys are unique (add() requires it); keep first occurrences.
            let mut seen = std::collections::HashSet::new();
            params.retain(|(d, p, _)| seen.insert((d.clone(), p.clone())));
            Spec {
                header,
                params,
                attachments,
            }
        })
}

fn build(s: &Spec) -> Frame {
    let mut f = Frame::new(s.header);
    for (d, p, v) in &s.params {
        f.add(d, p, v.as_ref());
    }
    for (n, data) in &s.attachments {
        f.add_attachment(n, data.clone());
    }
    f
}

fn assert_content(s: &Spec, params: Vec<(&str, &str, ValueRef<'_>)>, atts: Vec<(&str, &[u8])>) {
    assert_eq!(params.len(), s.params.len());
    for ((d, p, v), (ed, ep, ev)) in params.into_iter().zip(&s.params) {
        assert_eq!((d, p), (ed.as_str(), ep.as_str()));
        assert!(same(v, ev.as_ref()), "{d}.{p}: {v:?} != {ev:?}");
    }
    assert_eq!(atts.len(), s.attachments.len());
    for ((n, d), (en, ed)) in atts.into_iter().zip(&s.attachments) {
        assert_eq!((n, d), (en.as_str(), ed.as_slice()));
    }
}

/// Reads our bytes with rmpv into the structure SPEC §2 documents.
fn check_with_rmpv(s: &Spec, bytes: &[u8]) {
    let mut rd = bytes;
    let top = rmpv::decode::read_value(&mut rd).unwrap();
    assert!(rd.is_empty(), "one value, no trailing bytes");
    let top = top.as_array().unwrap();
    assert_eq!(top.len(), 3);
    let h = top[0].as_array().unwrap();
    let want = [
        i128::from(s.header.timestamp()),
        i128::from(s.header.counter()),
        i128::from(s.header.source()),
        i128::from(s.header.target()),
        i128::from(s.header.message_id()),
        i128::from(s.header.message_type()),
        i128::from(s.header.version()),
        i128::from(s.header.flags()),
    ];
    let got: Vec<i128> = h
        .iter()
        .map(|v| {
            v.as_u64()
                .map(i128::from)
                .or(v.as_i64().map(i128::from))
                .unwrap()
        })
        .collect();
    assert_eq!(got, want);
    let map = top[1].as_map().unwrap();
    assert_eq!(map.len(), s.params.len());
    for ((k, v), (d, p, ev)) in map.iter().zip(&s.params) {
        assert_eq!(k.as_str().unwrap(), format!("{d}\u{1f}{p}"));
        let pair = v.as_array().unwrap();
        assert_eq!(pair.len(), 2);
        let tag = pair[0]
            .as_i64()
            .map(i128::from)
            .or(pair[0].as_u64().map(i128::from))
            .unwrap();
        match ev {
            V::Int(i) => assert_eq!((tag, pair[1].as_i64()), (10, Some(*i))),
            V::Double(x) => {
                assert_eq!(tag, 20);
                let got = match &pair[1] {
                    Mp::F64(f) => *f,
                    Mp::Integer(i) => i
                        .as_u64()
                        .map(|u| u as f64)
                        .or(i.as_i64().map(|i| i as f64))
                        .unwrap(),
                    other => panic!("double as {other:?}"),
                };
                assert!(
                    got.to_bits() == x.to_bits() || (x.is_nan() && got.is_nan()),
                    "{got} {x}"
                );
            }
            V::Str(st) => assert_eq!((tag, pair[1].as_str()), (30, Some(st.as_str()))),
            V::Bool(b) => assert_eq!((tag, pair[1].as_bool()), (40, Some(*b))),
            V::Unknown(t, raw) => {
                assert_eq!(tag, *t);
                let mut expect = &raw[..];
                assert_eq!(pair[1], rmpv::decode::read_value(&mut expect).unwrap());
            }
        }
    }
    let atts = top[2].as_array().unwrap();
    assert_eq!(atts.len(), s.attachments.len());
    for (a, (n, d)) in atts.iter().zip(&s.attachments) {
        let pair = a.as_array().unwrap();
        assert_eq!(pair[0].as_str(), Some(n.as_str()));
        assert_eq!(pair[1].as_slice(), Some(d.as_slice()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn frames_round_trip_through_every_decoder(s in spec()) {
        let frame = build(&s);
        let bytes = frame.encode().unwrap();
        prop_assert_eq!(bytes.len(), frame.encoded_len());
        assert_content(&s, frame.iter().collect(), frame.attachments().map(|(n, d)| (n, &d[..])).collect());

        // Owned decode.
        let owned = Frame::decode(&bytes).unwrap();
        assert_content(&s, owned.iter().collect(), owned.attachments().map(|(n, d)| (n, &d[..])).collect());
        prop_assert_eq!(*owned.header(), s.header);
        prop_assert!(owned.encode().unwrap() == bytes, "re-encode differs");
        for (d, p, v) in &s.params {
            prop_assert!(same(owned.find(d, p).unwrap(), v.as_ref()));
        }

        // Decode into a reused, dirty frame.
        let mut reused = Frame::default();
        reused.add("old", "stuff", "to be replaced");
        reused.add_attachment("old", vec![1, 2, 3]);
        reused.decode_from(&bytes).unwrap();
        prop_assert!(reused.encode().unwrap() == bytes);

        // Zero-copy view.
        let view = FrameView::new(&bytes).unwrap();
        prop_assert_eq!(*view.header(), s.header);
        assert_content(&s, view.iter().collect(), view.attachments().collect());
        for (d, p, v) in &s.params {
            prop_assert!(same(view.find(d, p).unwrap(), v.as_ref()));
        }
        prop_assert!(view.to_frame().encode().unwrap() == bytes);

        // Header peek, strict decoding, independent decoder.
        prop_assert_eq!(Header::peek(&bytes).unwrap(), s.header);
        prop_assert!(Decoder::new().strict(true).decode(&bytes).is_ok());
        check_with_rmpv(&s, &bytes);
    }

    #[test]
    fn set_and_update_agree_with_a_model(ops in prop::collection::vec((0u8..3, 0usize..24, value()), 0..120)) {
        // A plain Vec as the model of an insertion-ordered map.
        let mut model: Vec<(String, V)> = Vec::new();
        let mut frame = Frame::default();
        for (op, k, v) in ops {
            let key = format!("p{k}");
            let pos = model.iter().position(|(mk, _)| *mk == key);
            match op {
                0 => {
                    frame.set("dev", &key, v.as_ref());
                    match pos {
                        Some(i) => model[i].1 = v,
                        None => model.push((key, v)),
                    }
                }
                1 => {
                    let changed = frame.update("dev", &key, v.as_ref());
                    prop_assert_eq!(changed, pos.is_some());
                    if let Some(i) = pos {
                        model[i].1 = v;
                    }
                }
                _ => {
                    let found = frame.find("dev", &key);
                    prop_assert_eq!(found.is_some(), pos.is_some());
                    if let (Some(f), Some(i)) = (found, pos) {
                        prop_assert!(same(f, model[i].1.as_ref()));
                    }
                }
            }
        }
        prop_assert_eq!(frame.len(), model.len());
        let back = Frame::decode(&frame.encode().unwrap()).unwrap();
        for ((d, p, v), (mk, mv)) in back.iter().zip(&model) {
            prop_assert_eq!((d, p), ("dev", mk.as_str()));
            prop_assert!(same(v, mv.as_ref()));
        }
    }
}

//! The collection API of `Frame` (issue 11, item 3): `remove` and `retain`
//! against a model (a plain `Vec` of `(device, param, value)`), past the
//! size where pushes start indexing (64 parameters) and with duplicate keys;
//! the named iterators, `IntoIterator for &Frame`, `Extend` and
//! `FromIterator`.

use messageframe::{FlatKey, Frame, FrameAttachments, FrameParams, Value, ValueRef};
use proptest::prelude::*;

type Model = Vec<(String, String, Value)>;

#[derive(Debug, Clone)]
enum Op {
    /// `add` (duplicates allowed).
    Add(usize, usize, i64),
    /// `add` of this many fresh keys, to pass the indexing thresholds.
    Bulk(usize),
    Set(usize, usize, i64),
    Update(usize, usize, i64),
    Remove(usize, usize),
    RemoveFlat(usize, usize),
    /// `retain` keeping the parameters whose number is not `r` modulo `m`.
    Retain(i64, i64),
    /// Several lookups of the same key (lookups spend the scan budget,
    /// then build the index).
    Find(usize, usize),
    /// Encode, then decode into the same frame (a decoded table indexes
    /// only on lookups, and keys without a device come back without the
    /// separator).
    Reload,
    Clear,
}

const DEVICES: [&str; 4] = ["", "d", "sdr_1", "a_device_name_longer_than_16"];

fn param(p: usize) -> String {
    format!("p{p}")
}

/// String values for odd numbers, so the arenas get garbage to compact.
fn value(n: i64) -> Value {
    if n % 2 == 0 {
        Value::Int(n)
    } else {
        Value::String(format!(
            "value_{n}_{}",
            "x".repeat(n.rem_euclid(7) as usize * 300)
        ))
    }
}

fn number(v: ValueRef<'_>) -> i64 {
    match v {
        ValueRef::Int(n) => n,
        ValueRef::String(s) => s.split('_').nth(1).unwrap().parse().unwrap(),
        other => panic!("unexpected value {other:?}"),
    }
}

fn op() -> impl Strategy<Value = Op> {
    let dev = 0..DEVICES.len();
    let par = 0..24usize;
    prop_oneof![
        6 => (dev.clone(), par.clone(), any::<i16>()).prop_map(|(d, p, v)| Op::Add(d, p, v.into())),
        1 => (1..80usize).prop_map(Op::Bulk),
        2 => (dev.clone(), par.clone(), any::<i16>()).prop_map(|(d, p, v)| Op::Set(d, p, v.into())),
        1 => (dev.clone(), par.clone(), any::<i16>()).prop_map(|(d, p, v)| Op::Update(d, p, v.into())),
        3 => (dev.clone(), par.clone()).prop_map(|(d, p)| Op::Remove(d, p)),
        1 => (1..DEVICES.len(), par.clone()).prop_map(|(d, p)| Op::RemoveFlat(d, p)),
        1 => (2..5i64, 0..5i64).prop_map(|(m, r)| Op::Retain(m, r % m)),
        3 => (dev, par).prop_map(|(d, p)| Op::Find(d, p)),
        1 => Just(Op::Reload),
        1 => Just(Op::Clear),
    ]
}

fn model_find<'m>(model: &'m Model, d: &str, p: &str) -> Option<&'m Value> {
    model
        .iter()
        .find(|(md, mp, _)| md == d && mp == p)
        .map(|(_, _, v)| v)
}

fn model_first_mut<'m>(model: &'m mut Model, d: &str, p: &str) -> Option<&'m mut Value> {
    model
        .iter_mut()
        .find(|(md, mp, _)| md == d && mp == p)
        .map(|(_, _, v)| v)
}

fn check(frame: &Frame, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(frame.len(), model.len());
    let listed: Vec<(String, String, Value)> = frame
        .iter()
        .map(|(d, p, v)| (d.to_owned(), p.to_owned(), v.to_value()))
        .collect();
    prop_assert_eq!(&listed, model);
    // Every key the model holds is found at its first occurrence, through
    // both lookups, and some absent keys are absent.
    for (d, p, _) in model {
        let expected = model_find(model, d, p).map(Value::as_value_ref);
        prop_assert_eq!(frame.find(d, p), expected);
        if !d.is_empty() {
            let key = FlatKey::new(d, p).unwrap();
            prop_assert_eq!(frame.find_flat(&key), expected);
        }
    }
    prop_assert_eq!(frame.find("d", "absent"), None);
    prop_assert!(!frame.contains("nobody", "p0"));
    Ok(())
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut frame = Frame::default();
    let mut model: Model = Vec::new();
    let mut fresh = 0usize;
    let mut buf = Vec::new();
    for op in ops {
        match *op {
            Op::Add(d, p, n) => {
                frame.add(DEVICES[d], &param(p), value(n));
                model.push((DEVICES[d].into(), param(p), value(n)));
            }
            Op::Bulk(count) => {
                for _ in 0..count {
                    let p = format!("bulk{fresh}");
                    let n = fresh as i64;
                    fresh += 1;
                    frame.add("d", &p, value(n));
                    model.push(("d".into(), p, value(n)));
                }
            }
            Op::Set(d, p, n) => {
                frame.set(DEVICES[d], &param(p), value(n));
                match model_first_mut(&mut model, DEVICES[d], &param(p)) {
                    Some(v) => *v = value(n),
                    None => model.push((DEVICES[d].into(), param(p), value(n))),
                }
            }
            Op::Update(d, p, n) => {
                let updated = frame.update(DEVICES[d], &param(p), value(n));
                let slot = model_first_mut(&mut model, DEVICES[d], &param(p));
                prop_assert_eq!(updated, slot.is_some());
                if let Some(v) = slot {
                    *v = value(n);
                }
            }
            Op::Remove(d, p) | Op::RemoveFlat(d, p) => {
                let (d, p) = (DEVICES[d], param(p));
                let got = if matches!(op, Op::Remove(..)) {
                    frame.remove(d, &p)
                } else {
                    frame.remove_flat(&FlatKey::new(d, &p).unwrap())
                };
                let expected = model_find(&model, d, &p).cloned();
                model.retain(|(md, mp, _)| md != d || *mp != p);
                prop_assert_eq!(got, expected);
                prop_assert!(!frame.contains(d, &p));
            }
            Op::Retain(m, r) => {
                let mut visited = Vec::new();
                let removed = frame.retain(|d, p, v| {
                    visited.push((d.to_owned(), p.to_owned()));
                    number(v).rem_euclid(m) != r
                });
                let order: Vec<(String, String)> = model
                    .iter()
                    .map(|(d, p, _)| (d.clone(), p.clone()))
                    .collect();
                prop_assert_eq!(
                    visited,
                    order,
                    "retain visits each parameter once, in order"
                );
                let before = model.len();
                model.retain(|(_, _, v)| number(v.as_value_ref()).rem_euclid(m) != r);
                prop_assert_eq!(removed, before - model.len());
            }
            Op::Find(d, p) => {
                let expected = model_find(&model, DEVICES[d], &param(p)).map(Value::as_value_ref);
                for _ in 0..6 {
                    prop_assert_eq!(frame.find(DEVICES[d], &param(p)), expected);
                }
            }
            Op::Reload => {
                buf.clear();
                frame.encode_into(&mut buf).unwrap();
                frame.decode_from(&buf).unwrap();
            }
            Op::Clear => {
                frame.clear();
                model.clear();
            }
        }
        // Lookups after every step, so that indexes built (or kept by
        // pushes) before a removal are exercised after it.
        for (d, p, _) in model.iter().rev().take(3) {
            let expected = model_find(&model, d, p).map(Value::as_value_ref);
            prop_assert_eq!(frame.find(d, p), expected);
        }
    }
    check(&frame, &model)?;
    // What remains encodes and decodes to the same parameters.
    let back = Frame::decode(&frame.encode().unwrap()).unwrap();
    check(&back, &model)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn remove_and_retain_agree_with_a_vec_model(ops in prop::collection::vec(op(), 1..120)) {
        run(&ops)?;
    }
}

#[test]
fn remove_and_retain_past_the_index_threshold_with_duplicates() {
    // A deterministic run through the paths the property test reaches by
    // chance: a frame indexing on push (past 64), an index in use, then
    // removals and more pushes.
    let mut ops = vec![Op::Bulk(100), Op::Add(1, 3, 1), Op::Add(1, 3, 2)];
    ops.extend((0..10).map(|_| Op::Find(1, 3)));
    ops.extend([
        Op::Remove(1, 3),
        Op::Find(1, 3),
        Op::Bulk(70),
        Op::Retain(3, 0),
        Op::Add(0, 5, 4),
        Op::Add(0, 5, 6),
        Op::Find(0, 5),
        Op::Reload,
        Op::Find(0, 5),
        Op::Retain(2, 1),
        Op::Bulk(10),
        Op::RemoveFlat(1, 0),
    ]);
    run(&ops).unwrap();
}

#[test]
fn remove_of_a_wire_key_without_separator_removes_both_spellings() {
    // ("", "x") arrives without a separator; `remove("", "x")` finds it,
    // and removes a later ("", "x") added with one too.
    let mut wire = vec![0x93, 0x98, 0, 0, 0, 0, 0, 0, 1, 0, 0x82];
    wire.extend_from_slice(&[0xa1, b'x', 0x92, 10, 1]);
    wire.extend_from_slice(&[0xa2, 0x1f, b'x', 0x92, 10, 2]);
    wire.push(0x90);
    let mut frame = Frame::decode(&wire).unwrap();
    frame.add("d", "y", 3);
    assert_eq!(frame.len(), 3);
    assert_eq!(frame.remove("", "x"), Some(Value::Int(1)));
    assert_eq!(frame.len(), 1);
    assert_eq!(frame.find("d", "y"), Some(ValueRef::Int(3)));
}

#[test]
fn named_iterators_are_exact_double_ended_and_fused() {
    let mut frame = Frame::default();
    for k in 0..5u8 {
        frame.add("d", &format!("p{k}"), k);
        frame.add_attachment(&format!("a{k}"), vec![k; usize::from(k)]);
    }
    let mut it: FrameParams<'_> = frame.iter();
    assert_eq!(it.len(), 5);
    assert_eq!(it.next().map(|(_, p, _)| p), Some("p0"));
    assert_eq!(it.next_back().map(|(_, p, _)| p), Some("p4"));
    assert_eq!(it.len(), 3);
    assert_eq!(it.nth(1).map(|(_, p, _)| p), Some("p2"));
    assert_eq!(format!("{it:?}"), r#"[("d", "p3", Int(3))]"#);
    assert!(it.next().is_some());
    assert!(it.next().is_none() && it.next().is_none());

    let mut atts: FrameAttachments<'_> = frame.attachments();
    assert_eq!(atts.len(), 5);
    assert_eq!(atts.next_back().map(|(n, d)| (n, d.len())), Some(("a4", 4)));
    assert_eq!(atts.clone().count(), 4);
    assert_eq!(
        format!("{:?}", atts.clone().skip(3)),
        "Skip { iter: [(\"a0\", 0), (\"a1\", 1), (\"a2\", 2), (\"a3\", 3)], n: 3 }"
    );
    assert_eq!(atts.map(|(_, d)| d.len()).sum::<usize>(), 6);

    let by_ref: Vec<i64> = (&frame)
        .into_iter()
        .map(|(_, _, v)| v.as_i64().unwrap())
        .collect();
    assert_eq!(by_ref, [0, 1, 2, 3, 4]);
}

#[test]
fn extend_and_collect_append_in_order_keeping_duplicates() {
    let mut frame: Frame = [("a", "x", 1), ("a", "x", 2)].into_iter().collect();
    assert_eq!(frame.header().timestamp(), 0);
    assert_eq!(frame.len(), 2);
    assert_eq!(frame.find("a", "x"), Some(ValueRef::Int(1)));
    frame.extend([("b".to_string(), "y".to_string(), Value::from("s"))]);
    frame.extend([("c", "z", ValueRef::Bool(true))]);
    let listed: Vec<String> = frame
        .iter()
        .map(|(d, p, v)| format!("{d}.{p}={v}"))
        .collect();
    assert_eq!(listed, ["a.x=1", "a.x=2", "b.y=s", "c.z=true"]);

    // A copy through `Extend` encodes to the same bytes.
    let mut copy = Frame::new(*frame.header());
    copy.extend(&frame);
    assert_eq!(copy.encode().unwrap(), frame.encode().unwrap());
}

#[test]
fn flat_keys_hash_order_and_borrow_as_their_parts() {
    use std::collections::{BTreeMap, HashSet};
    let k = |d: &str, p: &str| FlatKey::new(d, p).unwrap();
    // Ordered by device, then parameter: ("a", _) before ("a\u{1}", _),
    // though the flat string "a\u{1f}.." sorts after "a\u{1}\u{1f}..".
    let mut keys = [k("a\u{1}", "b"), k("a", "z"), k("", "q"), k("a", "b")];
    keys.sort();
    let parts: Vec<(&str, &str)> = keys.iter().map(|k| (k.device(), k.param())).collect();
    assert_eq!(parts, [("", "q"), ("a", "b"), ("a", "z"), ("a\u{1}", "b")]);
    assert!(k("a", "z").as_str() > k("a\u{1}", "b").as_str());

    let set: HashSet<FlatKey> = [k("d", "p"), k("d", "p"), k("d", "q")].into();
    assert_eq!(set.len(), 2);
    assert!(set.contains(&k("d", "p")));
    let map: BTreeMap<FlatKey, i32> = [(k("d", "q"), 2), (k("d", "p"), 1)].into();
    assert_eq!(map.values().copied().collect::<Vec<_>>(), [1, 2]);
    let key = k("d", "p");
    let flat: &str = key.as_ref();
    assert_eq!(flat, "d\u{1f}p");
    fn takes_str(s: impl AsRef<str>) -> usize {
        s.as_ref().len()
    }
    assert_eq!(takes_str(k("dev", "param")), 9);
}

//! The serde bridge's reader does work linear in the frame however the
//! frame is ordered: parameters out of order, absent fields, a map spread
//! over the frame, many attachments, duplicate keys. Counted, not timed
//! (`test_hooks::Work::reads`: parameters the reader read, at its cursor,
//! by a pass, or to build its lookup; `comparisons`: keys compared, by the
//! frame's index and by a map's check that each key is given once).
//!
//! Before the reader had a lookup (src/serde/lookup.rs), each lookup away
//! from the cursor walked the frame: these shapes read about n²/2
//! parameters, and a reversed sequence of 20,000 elements took 2 s through
//! `from_bytes`; a `Vec` of 4,000 structs with an absent `Option`, as
//! `to_bytes` writes it, 0.4 s.
#![cfg(all(feature = "serde", feature = "test-hooks"))]

use std::collections::BTreeMap;

use messageframe::serde::{from_bytes, from_frame, from_view, to_frame};
use messageframe::test_hooks;
use messageframe::{Frame, FrameView, Header};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

const N: usize = 20_000;

/// Key comparisons allowed per parameter: a map's set of given keys is
/// searched in about log2(N) = 15 steps.
const COMPARISONS_PER_PARAM: u64 = 32;

/// Asserts the work counted since the last reset is within the bounds.
fn assert_linear(what: &str, frame: &Frame, per_param: u64) {
    let n = frame.len() as u64 + 1;
    let work = test_hooks::work();
    assert!(
        work.reads <= per_param * n,
        "{what}: {} reads, bound {}",
        work.reads,
        per_param * n
    );
    assert!(
        work.comparisons <= COMPARISONS_PER_PARAM * n,
        "{what}: {} comparisons, bound {}",
        work.comparisons,
        COMPARISONS_PER_PARAM * n
    );
}

/// Reads `frame` into a `T` through each reader; asserts each read at most
/// `per_param` parameters per parameter of the frame (and a bounded number
/// of key comparisons), and gives back what the owned reader read.
fn read_linear<T: DeserializeOwned + PartialEq + std::fmt::Debug>(
    what: &str,
    frame: &Frame,
    per_param: u64,
) -> T {
    let bytes = frame.encode().unwrap();
    test_hooks::reset_work();
    let owned: T = from_frame(frame).unwrap();
    assert_linear(&format!("{what}, from_frame"), frame, per_param);
    let view = FrameView::new(&bytes).unwrap();
    test_hooks::reset_work();
    let viewed: T = from_view(&view).unwrap();
    assert_linear(&format!("{what}, from_view"), frame, per_param);
    test_hooks::reset_work();
    let direct: T = from_bytes(&bytes).unwrap();
    assert_linear(&format!("{what}, from_bytes"), frame, per_param);
    assert_eq!(viewed, owned, "{what}");
    assert_eq!(direct, owned, "{what}");
    owned
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Seq {
    v: Vec<i64>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Item {
    a: i64,
    b: Option<i64>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Items {
    items: Vec<Item>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Spread {
    m: BTreeMap<String, i64>,
    x: BTreeMap<String, i64>,
}

#[test]
fn a_sequence_in_reverse_reads_each_parameter_a_bounded_number_of_times() {
    let mut frame = Frame::new(Header::default());
    frame.add("", "v", N as i64);
    for i in (0..N).rev() {
        frame.add("v", &i.to_string(), i as i64);
    }
    let got: Seq = read_linear("reversed sequence", &frame, 6);
    assert_eq!(got.v, (0..N as i64).collect::<Vec<_>>());
}

#[test]
fn absent_fields_of_many_structs_cost_a_lookup_each_not_a_pass() {
    let items = Items {
        items: (0..N as i64).map(|a| Item { a, b: None }).collect(),
    };
    // As `to_frame` and `to_bytes` write it: no parameter for `b`.
    let frame = to_frame(&items).unwrap();
    assert_eq!(frame.len(), N + 1);
    let got: Items = read_linear("absent Option fields", &frame, 6);
    assert_eq!(got, items);
}

#[test]
fn structs_in_reverse_are_found_by_lookup() {
    let mut frame = Frame::new(Header::default());
    frame.add("", "items", (N / 2) as i64);
    for i in (0..N / 2).rev() {
        frame.add(&format!("items.{i}"), "b", -(i as i64));
        frame.add(&format!("items.{i}"), "a", i as i64);
    }
    let got: Items = read_linear("reversed structs", &frame, 6);
    assert_eq!(got.items.len(), N / 2);
    assert_eq!(got.items[7], Item { a: 7, b: Some(-7) });
}

#[test]
fn a_map_spread_over_the_frame_is_gathered_once() {
    let mut frame = Frame::new(Header::default());
    for i in 0..N / 2 {
        frame.add("m", &format!("k{i}"), i as i64);
        frame.add("x", &format!("k{i}"), -(i as i64));
    }
    // Later occurrences of keys already given: the first wins.
    frame.add("m", "k3", 333);
    frame.add("x", "k4", 444);
    let got: Spread = read_linear("spread maps", &frame, 6);
    assert_eq!(got.m.len(), N / 2);
    assert_eq!(got.m["k3"], 3);
    assert_eq!(got.x["k4"], -4);
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Capture {
    #[serde(default, with = "serde_bytes")]
    iq: Option<Vec<u8>>,
    n: i64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Captures {
    c: Vec<Capture>,
}

#[test]
fn many_attachments_are_looked_up_by_name() {
    // Every capture's `iq` is looked up among N / 10 attachments, and
    // most are absent.
    let mut frame = Frame::new(Header::default());
    frame.add("", "c", (N / 2) as i64);
    for i in 0..N / 2 {
        frame.add(&format!("c.{i}"), "n", i as i64);
    }
    for i in (0..N / 2).step_by(5) {
        frame.add_attachment(&format!("c.{i}.iq"), vec![i as u8; 3]);
    }
    let got: Captures = read_linear("attachments", &frame, 6);
    assert_eq!(got.c[5].iq.as_deref(), Some(&[5u8; 3][..]));
    assert_eq!(got.c[6].iq, None);
}

#[test]
fn after_an_out_of_order_read_the_first_occurrence_of_a_key_still_wins() {
    #[derive(Debug, PartialEq, Deserialize)]
    struct Inner {
        x: i64,
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct Outer {
        y: i64,
        a: Inner,
    }
    // `y` is found by lookup past `a.x = 1`; the cursor then stands on
    // `a.x = 3`, a later occurrence of the key.
    let mut frame = Frame::new(Header::default());
    frame.add("a", "x", 1);
    frame.add("", "y", 2);
    frame.add("a", "x", 3);
    let got: Outer = read_linear("duplicates", &frame, 8);
    assert_eq!(
        got,
        Outer {
            y: 2,
            a: Inner { x: 1 }
        }
    );
}

/// Any frame as nested maps: what `serde_json::Value` and other recursive
/// types do with a frame.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
enum Tree {
    Int(i64),
    Text(String),
    Device(BTreeMap<String, Tree>),
}

#[test]
fn a_device_with_an_empty_name_is_passed_over_not_recursed_into() {
    // `.x` below the top level, `a..b` below `a`: no path names them. Read
    // as containers, the first read the top level again, for ever (found
    // by the `serde` fuzz target: a stack overflow from 208 bytes).
    let mut frame = Frame::new(Header::default());
    frame.add(".x", "p", 1);
    frame.add("a", "q", 2);
    frame.add("a..b", "r", 3);
    frame.add("a.", "s", 4);
    frame.add("", "t", "top");
    let got: BTreeMap<String, Tree> = read_linear("empty names", &frame, 8);
    let want: BTreeMap<String, Tree> = [
        (
            "a".to_owned(),
            Tree::Device([("q".to_owned(), Tree::Int(2))].into_iter().collect()),
        ),
        ("t".to_owned(), Tree::Text("top".into())),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
}

#[test]
fn nesting_deeper_than_the_limit_is_an_error_not_a_stack_overflow() {
    // One key of 5,000 nested names, read into a recursive type.
    let device = vec!["a"; 5_000].join(".");
    let mut frame = Frame::new(Header::default());
    frame.add(&device, "leaf", 1);
    let bytes = frame.encode().unwrap();
    let view = FrameView::new(&bytes).unwrap();
    for err in [
        from_frame::<BTreeMap<String, Tree>>(&frame).unwrap_err(),
        from_view::<BTreeMap<String, Tree>>(&view).unwrap_err(),
        from_bytes::<BTreeMap<String, Tree>>(&bytes).unwrap_err(),
    ] {
        assert_eq!(
            err.kind(),
            &messageframe::serde::ErrorKind::TooDeep { limit: 128 }
        );
        assert!(err.to_string().contains("nested deeper than 128"), "{err}");
    }
    // 128 levels of maps below the top level read.
    let device = vec!["a"; 128].join(".");
    let mut frame = Frame::new(Header::default());
    frame.add(&device, "leaf", 1);
    let mut tree: BTreeMap<String, Tree> = from_frame(&frame).unwrap();
    for _ in 0..128 {
        match tree.remove("a") {
            Some(Tree::Device(inner)) => tree = inner,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(tree.get("leaf"), Some(&Tree::Int(1)));
}

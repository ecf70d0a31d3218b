//! Runs the crossbench logic in quick mode and checks its output: every
//! backend present, sane fields, the JSON document complete, the chart drawn.
//!
//! One test function on purpose: the counting allocator is process-wide, so
//! a second test running in parallel would add its allocations to the
//! counts checked here.

use messageframe_bench::backends::BackendKind;
use messageframe_bench::{run, Options};
use serde_json::Value;

fn quick(scenario: &str) -> messageframe_bench::report::Report {
    let opts = Options {
        quick: true,
        scenario: Some(scenario.to_owned()),
        passes: 1,
        command: format!("test --quick --scenario {scenario}"),
    };
    run(&opts, &mut |_| {}).expect("known scenario")
}

fn num(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {v}"))
}

#[test]
fn quick_runs_produce_complete_sane_results() {
    // Unknown names are refused up front.
    let bad = Options {
        scenario: Some("nope".into()),
        ..Options::default()
    };
    assert!(run(&bad, &mut |_| {}).unwrap_err().contains("small"));

    let report = quick("small");
    let json = serde_json::to_value(&report).expect("serializes");
    assert_eq!(json["meta"]["schema"], "messageframe-crossbench/1");
    assert_eq!(json["meta"]["quick"], true);
    let scenarios = json["scenarios"].as_array().expect("array");
    assert_eq!(scenarios.len(), 1);
    let s = &scenarios[0];
    assert_eq!(s["name"], "small");
    assert_eq!(s["params"], 4);
    assert_eq!(s["iterations"], 2000);

    let backends = s["backends"].as_array().expect("array");
    let ids: Vec<&str> = backends.iter().map(|b| b["id"].as_str().unwrap()).collect();
    let expected: Vec<&str> = BackendKind::ALL
        .iter()
        .filter(|k| !matches!(k, BackendKind::MfShared | BackendKind::ProstShared))
        .map(|k| k.id())
        .collect();
    assert_eq!(
        ids, expected,
        "every backend except the attachment-only ones"
    );

    for b in backends {
        let id = b["id"].as_str().unwrap();
        let total = num(b, "total_us");
        assert!(total > 0.0 && total < 1000.0, "{id}: total {total} µs");
        for phase in ["add_us", "serialize_us", "deserialize_us"] {
            let t = num(b, phase);
            assert!((0.0..1000.0).contains(&t), "{id}: {phase} {t}");
        }
        assert!(
            num(b, "deserialize_us") > 0.0,
            "{id}: deserialize takes time"
        );
        assert_eq!(b["pass_totals_us"].as_array().unwrap().len(), 1);
        let wire = num(b, "wire_bytes");
        assert!((40.0..200.0).contains(&wire), "{id}: {wire} bytes");
        assert!(num(b, "zstd_bytes") > 0.0);
        for phase in ["add", "serialize", "deserialize"] {
            assert!(num(&b["allocs"][phase], "count") >= 0.0);
            assert!(num(&b["allocs"][phase], "bytes") >= 0.0);
        }
    }

    // The allocation counter sees what it should: a reused frame and buffer
    // allocate nothing (SPEC 4), prost's fresh message does.
    let get = |id: &str| backends.iter().find(|b| b["id"] == id).unwrap();
    for phase in ["add", "serialize", "deserialize"] {
        assert_eq!(
            num(&get("messageframe")["allocs"][phase], "count"),
            0.0,
            "{phase}"
        );
    }
    assert!(num(&get("prost")["allocs"]["add"], "count") >= 4.0);
    assert!(num(&get("serde_json")["allocs"]["deserialize"], "count") >= 4.0);
    // Same content, different encodings: JSON and msgpack sizes differ.
    assert_ne!(
        num(get("serde_json"), "wire_bytes"),
        num(get("rmpv-value"), "wire_bytes")
    );

    // Targets are judged and the markdown carries the tables.
    assert!(!report.targets.is_empty());
    let md = report.markdown();
    for needle in [
        "minimum of 1 passes",
        "| 4 params |",
        "prost",
        "serde_json",
        "rmpv ValueRef",
        "Targets",
    ] {
        assert!(md.contains(needle), "markdown lacks {needle:?}");
    }

    // The chart is an SVG with one legend entry per series drawn.
    let svg = std::env::temp_dir().join(format!("crossbench-test-{}.svg", std::process::id()));
    messageframe_bench::plot::write_svg(&svg, &report.scenarios, "test").expect("drawn");
    let text = std::fs::read_to_string(&svg).expect("written");
    let _ = std::fs::remove_file(&svg);
    assert!(text.starts_with("<svg") && text.contains("prost") && text.contains("serde_json"));

    // The attachment scenario: every backend, the shared rows among them;
    // sharing the attachment takes the 1 MiB copies out of add and
    // deserialize (the allocation counts show it), and the report shows the
    // shared row and judges both serde_json targets.
    let att = quick("attachment");
    let s = &att.scenarios[0];
    assert_eq!(s.backends.len(), BackendKind::ALL.len());
    let get = |k: BackendKind| s.backend(k).expect("ran");
    for k in [BackendKind::MfShared, BackendKind::ProstShared] {
        let a = &get(k).allocs;
        assert!(
            a.add.bytes < 4096.0 && a.deserialize.bytes < 4096.0,
            "{k:?}: {a:?}"
        );
    }
    assert!(get(BackendKind::Prost).allocs.deserialize.bytes > 1e6);
    let md = att.markdown();
    assert!(md.contains("| 4 params + 1 MiB, shared† |"), "{md}");
    assert!(md.contains("attachment copied in and out"));
    assert!(md.contains("≥ 50x faster than serde_json (attachment shared"));

    // The Order comparison: six backends per size, sizes as the article's
    // shape implies (protobuf smaller than JSON).
    let order = quick("order");
    assert!(order.scenarios.is_empty());
    assert_eq!(order.order.len(), 3);
    for o in &order.order {
        assert_eq!(o.backends.len(), 6);
        let size = |id: &str| o.backends.iter().find(|b| b.id == id).unwrap().bytes;
        assert!(size("prost") < size("serde_json"), "{} items", o.items);
        for b in &o.backends {
            assert!(b.encode_ns > 0.0 && b.decode_ns > 0.0, "{}", b.id);
        }
    }
}

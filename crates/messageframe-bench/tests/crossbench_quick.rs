//! Runs the crossbench logic in quick mode and checks its output: every
//! backend of both groups present with plausible figures, the allocation
//! counter seeing what each mode implies, the JSON complete and readable
//! back, the markdown and the chart drawn.
//!
//! One test function on purpose: the counting allocator is process-wide, so
//! a second test running in parallel would add its allocations to the
//! counts checked here.

use messageframe_bench::backends::{formats_for, Format, Group, CBOR, FAST_JSON};
use messageframe_bench::report::Report;
use messageframe_bench::runner::BackendResult;
use messageframe_bench::scenario::SCENARIOS;
use messageframe_bench::{run, Options};

fn quick(scenario: &str) -> Report {
    let opts = Options {
        quick: true,
        scenario: Some(scenario.to_owned()),
        passes: 1,
        command: format!("test --quick --scenario {scenario}"),
        note: "test".to_owned(),
    };
    run(&opts, &mut |_| {}).expect("known scenario")
}

fn get(r: &Report, g: Group, f: Format) -> &BackendResult {
    r.scenarios[0]
        .backend(g, f)
        .unwrap_or_else(|| panic!("{} ({}) did not run", f.id(), g.id()))
}

#[test]
fn quick_runs_produce_complete_plausible_results() {
    // Unknown names are refused up front.
    let bad = Options {
        scenario: Some("nope".into()),
        ..Options::default()
    };
    assert!(run(&bad, &mut |_| {}).unwrap_err().contains("telemetry"));

    let report = quick("small");
    // The JSON round-trips into the same report (the `report` command reads
    // it back).
    let text = serde_json::to_string(&report).expect("serializes");
    let back: Report = serde_json::from_str(&text).expect("reads back");
    assert_eq!(back, report);
    let m = &report.meta;
    assert_eq!(m.schema, "messageframe-crossbench/2");
    assert!(m.quick && m.passes == 1 && m.note == "test");
    assert!(!m.commit.is_empty() && !m.cpu.is_empty() && m.cpus >= 1);
    assert!(m.rustc.starts_with("rustc "), "{}", m.rustc);
    assert!(!m.build.profile.is_empty() && !m.build.opt_level.is_empty());
    assert!(m.build.target_features.contains("sse2"), "{:?}", m.build);

    assert_eq!(report.scenarios.len(), 1);
    let s = &report.scenarios[0];
    assert_eq!(
        (s.name.as_str(), s.params, s.iterations),
        ("small", 4, 2000)
    );
    let def = SCENARIOS[0];
    let expected: Vec<(Group, &str)> = Group::ALL
        .into_iter()
        .flat_map(|g| formats_for(&def, g).into_iter().map(move |f| (g, f.id())))
        .collect();
    let ran: Vec<(Group, &str)> = s
        .backends
        .iter()
        .map(|b| (b.group, b.id.as_str()))
        .collect();
    assert_eq!(ran, expected);
    for b in &s.backends {
        let id = format!("{} ({})", b.id, b.group.id());
        assert!(
            b.total_us > 0.0 && b.total_us < 1000.0,
            "{id}: total {}",
            b.total_us
        );
        for t in [b.add_us, b.serialize_us, b.deserialize_us] {
            assert!((0.0..1000.0).contains(&t), "{id}: phase {t}");
        }
        assert!(b.deserialize_us > 0.0, "{id}: deserialize takes time");
        assert!((1..=2000).contains(&b.iterations), "{id}: {}", b.iterations);
        assert_eq!(b.pass_totals_us.len(), 1, "{id}");
        assert!(
            (40..200).contains(&b.wire_bytes),
            "{id}: {} bytes",
            b.wire_bytes
        );
        assert!(b.zstd_bytes > 0, "{id}");
    }

    // What the allocation counter sees follows from each mode.
    let (re, fr) = (Group::Reused, Group::Fresh);
    for f in [
        Format::Mf,
        Format::MfView,
        Format::MfSet,
        Format::RmpWire,
        Format::RmpBorrowed,
        CBOR,
        Format::Flexbuffers,
    ] {
        let a = get(&report, re, f).allocs.total();
        assert_eq!(a.count, 0.0, "{} reused allocates {a:?}", f.id());
    }
    // prost reused keeps its maps' tables but allocates each key `String`.
    let prost_reused = get(&report, re, Format::Prost).allocs;
    let prost_fresh = get(&report, fr, Format::Prost).allocs;
    assert!(prost_reused.add.count >= 4.0 && prost_fresh.add.count > prost_reused.add.count);
    assert!(
        prost_fresh.serialize.count >= 1.0,
        "encode_to_vec allocates"
    );
    // A new 4-parameter frame holds its entries and text in place (issue
    // 23): the encoded `Vec` is the fresh round trip's one allocation.
    let mf_fresh = get(&report, fr, Format::Mf).allocs;
    assert_eq!(mf_fresh.add.count, 0.0, "{mf_fresh:?}");
    assert_eq!(mf_fresh.serialize.count, 1.0, "{mf_fresh:?}");
    assert_eq!(mf_fresh.deserialize.count, 0.0, "{mf_fresh:?}");
    assert_eq!(
        get(&report, fr, Format::MfView).allocs.deserialize.count,
        0.0
    );
    assert!(get(&report, re, Format::SerdeJson).allocs.deserialize.count >= 4.0);
    // Same content, different encodings.
    let size = |f| get(&report, re, f).wire_bytes;
    assert_ne!(size(Format::SerdeJson), size(Format::RmpBorrowed));
    assert_eq!(
        size(Format::RmpBorrowed),
        size(Format::RmpvValue),
        "one writer"
    );
    assert_eq!(size(Format::SerdeJson), size(FAST_JSON), "same JSON text");
    assert_eq!(size(Format::Mf), size(Format::RmpWire), "the same wire");

    let l = s.lookups.expect("lookups measured");
    assert!(l.build_us > 0.0 && l.build_find_us > 0.0 && l.repeated_find_ns > 0.0);

    // Targets are judged and the markdown carries both groups' tables.
    assert!(report.targets.iter().any(|t| t.group == "reused"));
    assert!(report.targets.iter().any(|t| t.group == "fresh"));
    let md = report.markdown();
    for needle in [
        "minimum of 1 passes",
        "#### Reused",
        "#### Fresh",
        "| 4 params |",
        "CBOR (minicbor)",
        "--quick",
        "targets met",
    ] {
        assert!(md.contains(needle), "markdown lacks {needle:?}");
    }

    // The chart says it is quick, has both panels, and joins no points with
    // lines (its only polylines are two-point separators and axes).
    let svg = messageframe_bench::plot::svg(&report).expect("drawn");
    assert!(svg.starts_with("<svg") && svg.contains("QUICK RUN"));
    assert!(svg.contains("reused: ") && svg.contains("fresh: "));
    for line in svg.lines().filter(|l| l.contains("<polyline")) {
        let points = line
            .split("points=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .unwrap_or("");
        assert!(
            points.split_whitespace().count() <= 2,
            "a series line: {line}"
        );
    }

    // The attachment scenario: sharing the attachment takes the 1 MiB
    // copies out of add and deserialize; a reused prost message keeps its
    // `bytes` field's capacity when built, a fresh one allocates it again.
    let att = quick("attachment");
    let a = |g, f| get(&att, g, f).allocs;
    for f in [Format::MfShared, Format::ProstShared] {
        let x = a(re, f);
        assert!(
            x.add.bytes < 4096.0 && x.deserialize.bytes < 4096.0,
            "{f:?}: {x:?}"
        );
    }
    assert!(a(re, Format::Prost).add.bytes < 4096.0);
    assert!(a(fr, Format::Prost).add.bytes > 1e6);
    assert_eq!(a(re, Format::Memcpy).total().count, 0.0);
    assert_eq!(a(re, Format::RmpCopying).total().count, 0.0);
    let md = att.markdown();
    assert!(md.contains("| 4 params + 1 MiB, shared† |"), "{md}");
    assert!(md.contains("memcpy ×3"));
    for needle in [
        "rmp's writer of the same bin",
        "one memcpy",
        "view decode",
        "shared path",
    ] {
        assert!(
            att.targets.iter().any(|t| t.requirement.contains(needle)),
            "{needle}"
        );
    }

    // The Order comparison: nine backends per size; named fields cost
    // bytes over the compact form, and protobuf is smaller than JSON.
    let order = quick("order");
    assert!(order.scenarios.is_empty());
    assert_eq!(order.order.len(), 3);
    for o in &order.order {
        assert_eq!(o.backends.len(), 9);
        let size = |id: &str| o.backends.iter().find(|b| b.id == id).unwrap().bytes;
        assert!(size("prost") < size("serde_json"), "{} items", o.items);
        assert!(
            size("rmp-serde") < size("rmp-serde-named"),
            "{} items",
            o.items
        );
        for b in &o.backends {
            assert!(b.encode_ns > 0.0 && b.decode_ns > 0.0, "{}", b.id);
        }
    }
}

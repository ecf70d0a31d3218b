//! The committed fuzz corpus (`fuzz/corpus/<target>/`) and the regression
//! inputs (`fuzz/regressions/`), replayed by a stable `cargo test` through
//! every decoder with exactly the checks the fuzz targets run: the checks
//! live in `fuzz/src/checks.rs`, included here by path. No nightly toolchain
//! and no cargo-fuzz needed.
//!
//! A missing or empty corpus directory is a failure, not a skip: a replay
//! that silently checks nothing would hide a deleted corpus. For the same
//! reason the `differential` target's independent reader is checked here
//! too: against the C++ interop frames, and for deciding the corpus rather
//! than abstaining.

#[path = "../../../fuzz/src/checks.rs"]
mod checks;
mod common;

use std::collections::HashSet;
use std::path::PathBuf;

use checks::reference::{self, Reading, RefValue};
use common::{files_in, header_from_json, interop_frames, json_double, sha256_hex};
use serde_json::Value as Json;

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs `check` on every input, naming the input in the panic message.
fn replay(files: &[(String, Vec<u8>)], check: fn(&[u8])) {
    for (name, bytes) in files {
        if let Err(panic) = std::panic::catch_unwind(|| check(bytes)) {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            panic!("{name}: {msg}");
        }
    }
}

#[test]
fn every_fuzz_target_has_a_committed_corpus() {
    for target in checks::TARGETS {
        let files = files_in(&fuzz_dir().join("corpus").join(target));
        assert!(!files.is_empty(), "{target}");
    }
}

#[test]
fn every_corpus_input_passes_every_fuzz_check() {
    // The corpora overlap; each distinct input is replayed once, through the
    // checks of every target.
    replay(&distinct_corpus_inputs(), checks::check_all);
}

/// Every distinct input of every target's corpus, named by its first file.
fn distinct_corpus_inputs() -> Vec<(String, Vec<u8>)> {
    let mut seen = HashSet::new();
    let mut distinct = Vec::new();
    for target in checks::TARGETS {
        for (name, bytes) in files_in(&fuzz_dir().join("corpus").join(target)) {
            if seen.insert(bytes.clone()) {
                distinct.push((name, bytes));
            }
        }
    }
    distinct
}

#[test]
fn every_regression_input_passes_every_fuzz_check() {
    replay(
        &files_in(&fuzz_dir().join("regressions")),
        checks::check_all,
    );
}

/// Whether the reference's value is the one the interop JSON describes.
fn ref_value_matches(p: &Json, v: &RefValue) -> bool {
    match (p["type"].as_str().unwrap(), v) {
        ("int64", RefValue::Int(i)) => p["value"].as_i64() == Some(*i),
        ("double", RefValue::Double(d)) => reference::same_double(json_double(&p["value"]), *d),
        ("string", RefValue::Str(s)) => p["value"].as_str() == Some(s.as_str()),
        ("bool", RefValue::Bool(b)) => p["value"].as_bool() == Some(*b),
        _ => false,
    }
}

#[test]
fn the_differential_reference_reads_every_interop_frame_as_its_json_says() {
    for f in interop_frames() {
        let Reading::Valid(r) = reference::read_frame(&f.bytes) else {
            panic!("{}: the reference does not read it", f.name);
        };
        let h = &r.header;
        let json = &f.json;
        assert_eq!(
            messageframe::Header::from_fields(
                h.timestamp,
                h.counter,
                h.source,
                h.target,
                h.message_id,
                h.message_type,
                h.version,
                h.flags
            ),
            header_from_json(&json["header"]),
            "{}",
            f.name
        );
        // In wire order, which is the JSON's order except for map_mode (C++
        // wrote it in hash-table order): there, compare as a set.
        let params = json["parameters"].as_array().unwrap();
        assert_eq!(r.params.len(), params.len(), "{}", f.name);
        for (i, p) in params.iter().enumerate() {
            let key = (p["device"].as_str().unwrap(), p["param"].as_str().unwrap());
            let found = if f.name == "map_mode" {
                r.params.iter().find(|q| q.parts() == key)
            } else {
                r.params.get(i).filter(|q| q.parts() == key)
            };
            let found = found.unwrap_or_else(|| panic!("{}: {p} not read", f.name));
            assert!(
                ref_value_matches(p, &found.value),
                "{}: {p} read as {:?}",
                f.name,
                found.value
            );
        }
        let atts = json["attachments"].as_array().unwrap();
        assert_eq!(r.attachments.len(), atts.len(), "{}", f.name);
        for ((name, data), a) in r.attachments.iter().zip(atts) {
            assert_eq!(name, a["name"].as_str().unwrap());
            assert_eq!(sha256_hex(data), a["sha256"].as_str().unwrap());
        }
        // The reference encoder writes the C++ library's bytes (in the order
        // read, so map_mode's hash-table order too).
        assert!(
            reference::encode(&r) == f.bytes,
            "{}: the reference encoder writes other bytes",
            f.name
        );
    }
}

#[test]
fn the_differential_reference_decides_the_corpus() {
    // A reader that abstained (nesting beyond rmpv's depth, too many 0xc1
    // bytes to probe) on much of the corpus would make the differential
    // check vacuous.
    let inputs = distinct_corpus_inputs();
    let (mut valid, mut invalid, mut undecided) = (0, 0, 0);
    for (_, bytes) in &inputs {
        match reference::read_frame(bytes) {
            Reading::Valid(_) => valid += 1,
            Reading::Invalid { .. } => invalid += 1,
            Reading::Undecided => undecided += 1,
        }
    }
    let n = inputs.len();
    assert!(
        undecided * 100 <= n && valid * 10 >= n && invalid * 10 >= n,
        "{n} inputs: {valid} frames, {invalid} not frames, {undecided} undecided"
    );
}

//! The committed fuzz corpus (`fuzz/corpus/<target>/`) and the regression
//! inputs (`fuzz/regressions/`), replayed by a stable `cargo test` through
//! every decoder with exactly the checks the fuzz targets run: the checks
//! live in `fuzz/src/checks.rs`, included here by path. No nightly toolchain
//! and no cargo-fuzz needed.
//!
//! A missing or empty corpus directory is a failure, not a skip: a replay
//! that silently checks nothing would hide a deleted corpus.

#[path = "../../../fuzz/src/checks.rs"]
mod checks;
mod common;

use std::collections::HashSet;
use std::path::PathBuf;

use common::files_in;

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
    // checks of all six targets.
    let mut seen = HashSet::new();
    let mut distinct = Vec::new();
    for target in checks::TARGETS {
        for (name, bytes) in files_in(&fuzz_dir().join("corpus").join(target)) {
            if seen.insert(bytes.clone()) {
                distinct.push((name, bytes));
            }
        }
    }
    replay(&distinct, checks::check_all);
}

#[test]
fn every_regression_input_passes_every_fuzz_check() {
    replay(
        &files_in(&fuzz_dir().join("regressions")),
        checks::check_all,
    );
}

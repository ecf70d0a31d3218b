//! Writes the seeds of every fuzz target into `fuzz/seeds/<target>/`: the
//! interop frames written by the C++ library, the crafted hostile inputs of
//! `fuzz/regressions/`, and generated frames (see `messageframe_fuzz::gen`).
//!
//! `fuzz/seeds/` is generated output, ignored by git and rewritten on every
//! run; only what adds coverage reaches the committed corpus
//! (`fuzz/corpus/<target>/`), through a libFuzzer merge. From `fuzz/`:
//!
//! ```sh
//! cargo run --example gen_corpus
//! cargo +nightly fuzz run decode corpus/decode seeds/decode -- -merge=1
//! ```
//!
//! (`fuzz/README.md` has the whole campaign.)

use std::fs;
use std::path::{Path, PathBuf};

use messageframe_fuzz::checks::TARGETS;
use messageframe_fuzz::gen;

fn files(dir: &Path, ext: Option<&str>) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_file() && (ext.is_none() || path.extension().and_then(|e| e.to_str()) == ext) {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((name, fs::read(&path).unwrap()));
        }
    }
    out.sort();
    out
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let interop = files(
        &root.join("../crates/messageframe/tests/data/interop"),
        Some("mfb"),
    );
    assert!(interop.len() >= 11, "interop frames not found");
    let regressions = files(&root.join("regressions"), None);

    let mut seeds: Vec<(String, Vec<u8>)> = Vec::new();
    seeds.extend(
        interop
            .iter()
            .map(|(n, b)| (format!("interop_{n}"), b.clone())),
    );
    seeds.extend(
        regressions
            .iter()
            .map(|(n, b)| (format!("regression_{n}"), b.clone())),
    );
    for (i, f) in gen::frames(0x6d66_7a31, 300).into_iter().enumerate() {
        seeds.push((format!("gen_{i:03}"), f));
    }

    for target in TARGETS {
        let dir = root.join("seeds").join(target);
        // Rewritten from scratch: no stale seeds from an older generator.
        if dir.exists() {
            fs::remove_dir_all(&dir).unwrap();
        }
        fs::create_dir_all(&dir).unwrap();
        let mut written = 0;
        let mut put = |name: &str, bytes: &[u8]| {
            fs::write(dir.join(name), bytes).unwrap();
            written += 1;
        };
        for (name, bytes) in &seeds {
            put(name, bytes);
        }
        if target == "stream" {
            for (i, s) in gen::streams(0x5354_5245, 60).into_iter().enumerate() {
                put(&format!("gen_stream_{i:03}"), &s);
            }
            // Interop frames back to back.
            let all: Vec<u8> = interop
                .iter()
                .filter(|(n, _)| n != "strings")
                .flat_map(|(_, b)| b.clone())
                .collect();
            put("interop_all_back_to_back", &all);
        }
        println!("{target}: {written} seeds in {}", dir.display());
    }
}

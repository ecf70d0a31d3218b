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
        if target == "serde" {
            for (i, f) in serde_frames().into_iter().enumerate() {
                put(&format!("gen_serde_{i:03}"), &f);
            }
        }
        println!("{target}: {written} seeds in {}", dir.display());
    }
}

/// Frames shaped like the serde bridge's (`checks::Typed` and nested
/// devices): in the order `to_frame` writes, reversed, shuffled by a fixed
/// permutation, with duplicates, and with a type wrong here and there.
fn serde_frames() -> Vec<Vec<u8>> {
    use messageframe::{Frame, Header};
    let mut base: Vec<(String, String, Option<&str>, i64)> = vec![
        ("".into(), "seq".into(), None, 7),
        ("".into(), "gain".into(), None, 2),
        ("".into(), "name".into(), Some("sdr-1"), 0),
        ("sdr".into(), "x".into(), None, 5),
        ("sdr".into(), "label".into(), Some("rx"), 0),
        ("".into(), "items".into(), None, 3),
        ("".into(), "meta".into(), None, 2),
        ("meta".into(), "region".into(), Some("eu"), 0),
        ("meta".into(), "site".into(), Some("b7"), 0),
    ];
    for i in 0..3 {
        base.push((format!("items.{i}"), "x".into(), None, i));
        base.push((format!("items.{i}"), "label".into(), Some("item"), 0));
    }
    let build = |order: &[usize], extra: &[(&str, &str, i64)], raw: bool| {
        let mut f = Frame::new(Header::default());
        for &i in order {
            let (d, p, s, v) = &base[i];
            match (p.as_str(), s) {
                ("gain", _) => f.add(d, p, *v as f64 + 0.5),
                (_, Some(s)) => f.add(d, p, *s),
                _ => f.add(d, p, *v),
            }
        }
        for (d, p, v) in extra {
            f.add(d, p, *v);
        }
        if raw {
            f.add_attachment("raw", vec![1u8, 2, 3]);
            f.add_attachment("items.1.raw", vec![4u8]);
        }
        f.encode().unwrap()
    };
    let n = base.len();
    let forward: Vec<usize> = (0..n).collect();
    let reverse: Vec<usize> = (0..n).rev().collect();
    let shuffled: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % n).collect();
    vec![
        build(&forward, &[], false),
        build(&forward, &[], true),
        build(&reverse, &[], true),
        build(&shuffled, &[], false),
        // Duplicates, before and after the cursor.
        build(
            &forward,
            &[("sdr", "x", 9), ("", "seq", 8), ("meta", "k", 1)],
            false,
        ),
        build(&shuffled, &[("items.1", "x", 9), ("", "items", 9)], true),
        // Wrong types: a string where an int belongs, a length below 0.
        build(&forward[..4], &[("", "ok", 3), ("", "items", -1)], false),
    ]
}

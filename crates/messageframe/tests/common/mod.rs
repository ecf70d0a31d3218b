//! Shared test helpers: the interop frames and their JSON descriptions.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use messageframe::{Frame, Header, ValueRef};
use serde_json::Value as Json;
use sha2::{Digest, Sha256};

/// Every file of `dir` as `(path, bytes)`, sorted by path; panics if the
/// directory is missing or holds no file.
pub fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{} is missing: {e}", dir.display()));
    let mut files: Vec<(String, Vec<u8>)> = entries
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_file())
        .map(|path| {
            let bytes = std::fs::read(&path).expect("readable file");
            (path.display().to_string(), bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} is empty", dir.display());
    files
}

/// Test data directory (a copy of `shared/interop` and `shared/conformance`).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// One interop frame: its name, bytes and JSON description.
pub struct Interop {
    pub name: String,
    pub bytes: Vec<u8>,
    pub json: Json,
}

pub fn interop_frames() -> Vec<Interop> {
    let dir = data_dir().join("interop");
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("interop dir") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read(&path).unwrap();
        if cfg!(miri) && too_large_for_miri(&path, &text) {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            left_out.push(stem);
            continue;
        }
        let json: Json = serde_json::from_slice(&text).unwrap();
        let file = json["file"].as_str().unwrap();
        let bytes = std::fs::read(dir.join(file)).unwrap();
        out.push(Interop {
            name: json["name"].as_str().unwrap().to_owned(),
            bytes,
            json,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(
        out.len() + left_out.len() >= 11,
        "expected the 11 interop frames, found {}",
        out.len() + left_out.len()
    );
    if !left_out.is_empty() {
        // Said on stderr, past the test harness's capture, so that no run
        // leaves frames out silently (docs/security.md lists what Miri runs).
        left_out.sort();
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("note: under Miri, interop frames over 1 KiB are left out: {left_out:?}\n")
                .as_bytes(),
        );
    }
    out
}

/// Under Miri, which interprets every instruction, the interop frames
/// larger than 1 KiB (long strings, a 4 KiB attachment, 127 and 150
/// parameters) would take most of the CI job's time, parsing their JSON
/// descriptions alone, and exercise no code that the smaller ones (every
/// value type, every integer width, map16) and the other tests Miri runs
/// do not. Judged before the description is parsed: the frame file is
/// named after it.
fn too_large_for_miri(json_path: &Path, json: &[u8]) -> bool {
    let frame = std::fs::metadata(json_path.with_extension("mfb")).map_or(0, |m| m.len());
    frame > 1024 || json.len() > 4096
}

pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn header_from_json(h: &Json) -> Header {
    Header::from_fields(
        h["timestamp"].as_u64().unwrap(),
        h["msg_cnt"].as_u64().unwrap(),
        h["source"].as_u64().unwrap() as u32,
        h["target"].as_u64().unwrap() as u32,
        h["msg_id"].as_i64().unwrap() as i32,
        h["msg_type"].as_i64().unwrap() as i32,
        h["version"].as_u64().unwrap() as u16,
        h["flags"].as_u64().unwrap() as u16,
    )
}

/// A JSON double: a number, or "NaN" / "Infinity" / "-Infinity".
pub fn json_double(v: &Json) -> f64 {
    match v {
        Json::String(s) if s == "NaN" => f64::NAN,
        Json::String(s) if s == "Infinity" => f64::INFINITY,
        Json::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        other => other.as_f64().unwrap(),
    }
}

/// Whether a decoded value equals the JSON description `{type, value}`.
/// Doubles compare by bits (NaN equals NaN).
pub fn value_matches(p: &Json, v: ValueRef<'_>) -> bool {
    match (p["type"].as_str().unwrap(), v) {
        ("int64", ValueRef::Int(i)) => p["value"].as_i64() == Some(i),
        ("double", ValueRef::Double(d)) => {
            let want = json_double(&p["value"]);
            want.to_bits() == d.to_bits() || (want.is_nan() && d.is_nan())
        }
        ("string", ValueRef::String(s)) => p["value"].as_str() == Some(s),
        ("bool", ValueRef::Bool(b)) => p["value"].as_bool() == Some(b),
        _ => false,
    }
}

/// Adds a JSON-described parameter to a frame.
pub fn add_json_param(frame: &mut Frame, p: &Json) {
    let d = p["device"].as_str().unwrap();
    let k = p["param"].as_str().unwrap();
    match p["type"].as_str().unwrap() {
        "int64" => frame.add(d, k, p["value"].as_i64().unwrap()),
        "double" => frame.add(d, k, json_double(&p["value"])),
        "string" => frame.add(d, k, p["value"].as_str().unwrap()),
        "bool" => frame.add(d, k, p["value"].as_bool().unwrap()),
        t => panic!("unknown type {t}"),
    }
}

/// Same bytes for equal doubles even when NaN: compare frames by encoding.
pub fn same_frame(a: &Frame, b: &Frame) -> bool {
    a.encode().unwrap() == b.encode().unwrap()
}

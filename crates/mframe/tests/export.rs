//! `mframe export` as a real process, its files read by readers written by
//! others: Python's `mcap` package (Foxglove's), DuckDB, pyarrow, pandas
//! and polars (from PyPI: scripts/test installs
//! scripts/python-requirements.txt into target/py and sets $PYTHON), and
//! the `mcap` crate for the layout of chunks. The tests fail, never skip,
//! when a Python package is missing, and say which.
//!
//! Live sources are real: TCP producers on loopback, a real nats-server
//! (messageframe-testkit), a recorder killed with SIGKILL. Every wait is
//! bounded (support::WAIT).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use messageframe::{Decoder, Frame, Header, UnknownValue, ValueRef};
use serde_json::Value;
use support::{wait_until, Proc, WAIT};

// ---------------------------------------------------------------- helpers

/// A finished `mframe` run.
struct Run {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn ok(self) -> Run {
        assert!(self.status.success(), "{:?}: {}", self.status, self.stderr);
        self
    }

    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Runs `program ARGS` with `stdin` to its end, within [`WAIT`].
fn run_program(program: &str, args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let read_all = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut out = Vec::new();
            let _ = r.read_to_end(&mut out);
            out
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{program} {args:?} did not finish within {WAIT:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    writer.join().unwrap();
    Run {
        status,
        stdout: stdout.join().unwrap(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
    }
}

fn mframe(args: &[&str]) -> Run {
    run_program(env!("CARGO_BIN_EXE_mframe"), args, b"")
}

fn mframe_with_stdin(args: &[&str], stdin: &[u8]) -> Run {
    run_program(env!("CARGO_BIN_EXE_mframe"), args, stdin)
}

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("export-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

/// The golden frames written by the C++ library, with their descriptions,
/// in name order.
fn golden() -> Vec<(Vec<u8>, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../messageframe/tests/data/interop");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mfb"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            let json: Value =
                serde_json::from_slice(&std::fs::read(p.with_extension("json")).unwrap()).unwrap();
            (bytes, json)
        })
        .collect()
}

/// A telemetry frame as the benchmarks build them (SPEC 5.2: parameter k
/// on device `d{k%8}`, the type cycling with k), numbered by `i`.
fn telemetry(i: u64, source: u32, message_type: i32, params: usize) -> Vec<u8> {
    let header = Header::builder()
        .timestamp(1_700_000_000_000 + i * 10)
        .counter(i)
        .source(source)
        .target(2)
        .message_id(100 + message_type)
        .message_type(message_type)
        .build();
    let mut f = Frame::new(header);
    for k in 0..params {
        let (device, param) = (format!("d{}", k % 8), format!("p{k}"));
        match k % 4 {
            0 => f.add(&device, &param, k as f64 * 1.5 + i as f64),
            1 => f.add(&device, &param, (k * 1000) as i64 + i as i64),
            2 => f.add(&device, &param, (k as u64 + i).is_multiple_of(3)),
            _ => f.add(&device, &param, format!("value_{k}_{i}").as_str()),
        }
    }
    f.encode().unwrap()
}

fn concat(frames: &[Vec<u8>]) -> Vec<u8> {
    frames.concat()
}

/// Nanoseconds since the UNIX epoch.
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The Python that has the test packages: $PYTHON (scripts/test sets it to
/// target/py/bin/python), else python3. Fails, naming what is missing,
/// when it cannot import `modules`.
fn python(modules: &[&str]) -> String {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let missing: Vec<&str> = modules
        .iter()
        .copied()
        .filter(|m| {
            !Command::new(&python)
                .args(["-c", &format!("import {m}")])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the Python at `{python}` ($PYTHON, default python3) cannot import {missing:?}, which \
         this test needs to read what `mframe export` writes with readers written by others. \
         Run the tests through scripts/test (it installs scripts/python-requirements.txt from \
         PyPI into target/py and sets PYTHON), or `python3 -m pip install -r \
         scripts/python-requirements.txt`, or set PYTHON to an interpreter that has them."
    );
    python
}

/// Runs one of tests/python/*.py; its stdout.
fn python_script(modules: &[&str], script: &str, args: &[&str], stdin: &[u8]) -> String {
    let python = python(modules);
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let mut all = vec![script.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = run_program(&python, &all, stdin);
    assert!(
        run.status.success(),
        "{} {all:?} failed: {}",
        python,
        run.stderr
    );
    String::from_utf8(run.stdout).unwrap()
}

/// What Python's `mcap` package reads from an MCAP file.
fn read_mcap(file: &str) -> Value {
    serde_json::from_str(&python_script(&["mcap"], "read_mcap.py", &[file], b"")).unwrap()
}

/// A double from JSON, where non-finite ones are strings.
fn json_f64(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "NaN" => f64::NAN,
        Value::String(s) if s == "Infinity" => f64::INFINITY,
        Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
        other => other
            .as_f64()
            .unwrap_or_else(|| panic!("not a number: {other}")),
    }
}

fn same_double(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

// ---------------------------------------------------------- the formats

#[test]
fn every_format_written_from_a_file_keeps_the_frames() {
    let dir = scratch("formats");
    let frames: Vec<Vec<u8>> = golden().into_iter().map(|(b, _)| b).collect();
    let input = path(&dir, "golden.mfb");
    std::fs::write(&input, concat(&frames)).unwrap();
    for out in ["copy.mfb", "rec.mcap", "rec.jsonl", "rec.parquet"] {
        let run = mframe(&["export", &input, "-o", &path(&dir, out)]).ok();
        assert!(
            run.stderr.contains(&format!(
                "export: exported 11 frames (515 parameters) from {input} to {}",
                path(&dir, out)
            )),
            "{}",
            run.stderr
        );
    }
    // Frames are copied unchanged; an MCAP file gives them back unchanged.
    assert_eq!(
        std::fs::read(path(&dir, "copy.mfb")).unwrap(),
        concat(&frames)
    );
    mframe(&[
        "export",
        &path(&dir, "rec.mcap"),
        "-o",
        &path(&dir, "back.mfb"),
    ])
    .ok();
    assert_eq!(
        std::fs::read(path(&dir, "back.mfb")).unwrap(),
        concat(&frames)
    );
    // JSON Lines are dump's, byte for byte.
    let dump = mframe(&["dump", &input]).ok();
    assert_eq!(std::fs::read(path(&dir, "rec.jsonl")).unwrap(), dump.stdout);
    let with_data = mframe(&["dump", "--with-data", &input]).ok();
    let jsonl = mframe(&[
        "export",
        &path(&dir, "rec.mcap"),
        "-o",
        "-",
        "--format",
        "jsonl",
        "--with-data",
    ])
    .ok();
    assert_eq!(jsonl.stdout, with_data.stdout);
    // stdin, to stdout, with --format whatever the name says.
    let piped = mframe_with_stdin(
        &["export", "-", "-o", "-", "--format", "mfb"],
        &concat(&frames),
    )
    .ok();
    assert_eq!(piped.stdout, concat(&frames));
    // An MCAP file written to a pipe reads back the same.
    let mcap = mframe(&["export", &input, "-o", "-", "--format", "mcap"]).ok();
    let back = mframe_with_stdin(&["export", "-", "-o", "-", "--format", "mfb"], &mcap.stdout).ok();
    assert_eq!(back.stdout, concat(&frames));
    // The format comes from --format over the extension.
    mframe(&[
        "export",
        &input,
        "-o",
        &path(&dir, "odd.bin"),
        "--format",
        "mcap",
    ])
    .ok();
    assert_eq!(
        &std::fs::read(path(&dir, "odd.bin")).unwrap()[..8],
        b"\x89MCAP0\r\n"
    );
}

#[test]
fn pythons_mcap_reads_every_message_byte_for_byte_and_the_json_mirror() {
    let dir = scratch("mcap-python");
    let mut frames: Vec<Vec<u8>> = golden().into_iter().map(|(b, _)| b).collect();
    for i in 0..40 {
        frames.push(telemetry(i, 1 + (i % 2) as u32, 1 + (i % 3) as i32, 12));
    }
    let input = path(&dir, "in.mfb");
    std::fs::write(&input, concat(&frames)).unwrap();
    let out = path(&dir, "rec.mcap");
    let before = now_ns();
    mframe(&["export", &input, "-o", &out, "--mirror", "json"]).ok();
    let after = now_ns();
    let read = read_mcap(&out);

    assert!(read["header"]["library"]
        .as_str()
        .unwrap()
        .starts_with("mframe "));
    let meta = &read["metadata"]["mframe"];
    assert_eq!(meta["format"], "messageframe");
    assert!(meta["wire_format"]
        .as_str()
        .unwrap()
        .contains("[header, params, attachments]"));
    assert_eq!(read["statistics"]["message_count"], 2 * frames.len());

    let channels = read["channels"].as_object().unwrap();
    let messages = read["messages"].as_array().unwrap();
    let raw: Vec<&Value> = messages
        .iter()
        .filter(|m| channels[&m["channel"].to_string()]["message_encoding"] == "msgpack")
        .collect();
    assert_eq!(raw.len(), frames.len());
    let decoder = Decoder::new();
    let mut pairs = BTreeSet::new();
    for (m, bytes) in raw.iter().zip(&frames) {
        // Byte for byte, in order.
        assert_eq!(m["data"].as_str().unwrap(), hex(bytes));
        let h = *decoder.view(bytes).unwrap().header();
        assert_eq!(m["log_time"], h.timestamp() * 1_000_000);
        let publish = m["publish_time"].as_u64().unwrap();
        assert!((before..=after).contains(&publish), "{publish}");
        assert_eq!(m["sequence"], h.counter() as u32);
        let topic = format!("/source/{}/type/{}", h.source(), h.message_type());
        assert_eq!(m["topic"], topic.as_str());
        pairs.insert((h.source(), h.message_type()));
    }
    // A channel per (source, message_type), and its JSON mirror.
    assert_eq!(channels.len(), 2 * pairs.len());
    for (source, message_type) in &pairs {
        let topic = format!("/source/{source}/type/{message_type}");
        let frames_channel = channels
            .values()
            .find(|c| c["topic"] == topic.as_str())
            .unwrap();
        assert_eq!(frames_channel["message_encoding"], "msgpack");
        assert_eq!(frames_channel["metadata"]["source"], source.to_string());
        assert_eq!(
            frames_channel["metadata"]["message_type"],
            message_type.to_string()
        );
        assert_eq!(frames_channel["schema_name"], "messageframe.Frame");
        assert_eq!(frames_channel["schema_encoding"], "mframe");
        let json_channel = channels
            .values()
            .find(|c| c["topic"] == format!("{topic}/json").as_str())
            .unwrap();
        assert_eq!(json_channel["message_encoding"], "json");
        assert_eq!(json_channel["schema_encoding"], "jsonschema");
        let schema: Value =
            serde_json::from_str(json_channel["schema_data"].as_str().unwrap()).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["properties"]["header"]["properties"]["timestamp"]["type"],
            "integer"
        );
    }
    // The mirror: each frame as {"header": ..., device: {param: value}}.
    let mirrored: Vec<Value> = messages
        .iter()
        .filter(|m| channels[&m["channel"].to_string()]["message_encoding"] == "json")
        .map(|m| serde_json::from_slice(&unhex(m["data"].as_str().unwrap())).unwrap())
        .collect();
    assert_eq!(mirrored.len(), frames.len());
    for (json, bytes) in mirrored.iter().zip(&frames) {
        let view = decoder.view(bytes).unwrap();
        assert_eq!(json["header"]["timestamp"], view.header().timestamp());
        assert_eq!(json["header"]["counter"], view.header().counter());
        assert_eq!(json["header"]["source"], view.header().source());
        for (device, param, value) in view.iter() {
            if device == "header" || view.find(device, param) != Some(value) {
                continue;
            }
            let got = &json[device][param];
            match value {
                ValueRef::Int(i) => assert_eq!(got, i, "{device}/{param}"),
                ValueRef::Double(d) if d.is_finite() => {
                    assert!(
                        same_double(got.as_f64().unwrap(), d),
                        "{device}/{param}: {got}"
                    )
                }
                ValueRef::Double(_) => assert!(got.is_null()),
                ValueRef::String(s) => assert_eq!(got, s),
                ValueRef::Bool(b) => assert_eq!(got, b),
                _ => {}
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// The long table's rows of a file as DuckDB reads them, in file order.
fn duckdb_rows(file: &str) -> Vec<Value> {
    python_script(&["duckdb"], "read_parquet.py", &["rows", file], b"")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A row's value as (type, value) for comparison.
fn row_value(row: &Value) -> (String, Value) {
    let kind = row[8].as_str().unwrap().to_owned();
    let columns = [&row[9], &row[10], &row[11], &row[12]];
    let which = match kind.as_str() {
        "int64" => Some(0),
        "double" => Some(1),
        "string" => Some(2),
        "bool" => Some(3),
        _ => None,
    };
    for (i, c) in columns.iter().enumerate() {
        if Some(i) != which {
            assert!(c.is_null(), "{row}: column {} should be null", 9 + i);
        }
    }
    (kind, which.map_or(Value::Null, |i| columns[i].clone()))
}

#[test]
fn duckdb_finds_every_parameter_of_the_golden_frames_with_its_header() {
    let dir = scratch("parquet-golden");
    let golden = golden();
    let mut frames: Vec<Vec<u8>> = golden.iter().map(|(b, _)| b.clone()).collect();
    // One frame of ours with a value of an unknown tag and a repeated key.
    let mut extra = Frame::new(
        Header::builder()
            .timestamp(1_700_000_123_456)
            .counter(u64::MAX)
            .source(u32::MAX)
            .target(9)
            .message_id(i32::MIN)
            .message_type(-7)
            .build(),
    );
    extra.add(
        "x",
        "unknown",
        ValueRef::Unknown(UnknownValue::new(77, &[0xc0]).unwrap()),
    );
    extra.add("x", "n", 1i64);
    extra.add("x", "n", 2i64);
    frames.push(extra.encode().unwrap());
    let input = path(&dir, "in.mfb");
    std::fs::write(&input, concat(&frames)).unwrap();
    let out = path(&dir, "rec.parquet");
    mframe(&["export", &input, "-o", &out]).ok();

    let rows = duckdb_rows(&out);
    let mut at = 0;
    for (_, json) in &golden {
        let h = &json["header"];
        let params = json["parameters"].as_array().unwrap();
        let mine = &rows[at..at + params.len()];
        at += params.len();
        let mut expected: BTreeMap<(String, String), (String, Value)> = BTreeMap::new();
        for p in params {
            let key = (
                p["device"].as_str().unwrap().to_owned(),
                p["param"].as_str().unwrap().to_owned(),
            );
            expected.insert(
                key,
                (p["type"].as_str().unwrap().to_owned(), p["value"].clone()),
            );
        }
        for row in mine {
            // Every row carries its frame's header.
            assert_eq!(row[0], h["timestamp"], "{row}");
            assert_eq!(row[1], h["source"]);
            assert_eq!(row[2], h["target"]);
            assert_eq!(row[3], h["msg_type"]);
            assert_eq!(row[4], h["msg_id"]);
            assert_eq!(row[5], h["msg_cnt"]);
            let key = (
                row[6].as_str().unwrap().to_owned(),
                row[7].as_str().unwrap().to_owned(),
            );
            let (kind, value) = row_value(row);
            let (want_kind, want) = expected
                .remove(&key)
                .unwrap_or_else(|| panic!("{} has no row {key:?} twice", json["name"]));
            assert_eq!(kind, want_kind, "{key:?}");
            if kind == "double" {
                assert!(
                    same_double(json_f64(&value), json_f64(&want)),
                    "{key:?}: {value} != {want}"
                );
            } else {
                assert_eq!(value, want, "{key:?}");
            }
        }
        assert!(
            expected.is_empty(),
            "{}: missing {expected:?}",
            json["name"]
        );
    }
    // Ours: the unknown value has a row with no value, both occurrences of
    // the repeated key are rows.
    let ours = &rows[at..];
    assert_eq!(ours.len(), 3);
    assert_eq!(ours[0][0], 1_700_000_123_456u64);
    assert_eq!(ours[0][1], u32::MAX);
    assert_eq!(ours[0][3], -7);
    assert_eq!(ours[0][4], i32::MIN);
    assert_eq!(ours[0][5], u64::MAX);
    assert_eq!(row_value(&ours[0]), ("unknown".to_owned(), Value::Null));
    assert_eq!(row_value(&ours[1]).1, 1);
    assert_eq!(row_value(&ours[2]).1, 2);

    // The column types, as pyarrow reads them: the interface of the issue.
    let schema = python_script(&["pyarrow"], "read_parquet.py", &["schema", &out], b"");
    let schema: Value = serde_json::from_str(schema.lines().next().unwrap()).unwrap();
    let fields = &schema["fields"];
    let expected = [
        ("time", "timestamp[ms, tz=UTC]", false),
        ("source", "uint32", false),
        ("target", "uint32", false),
        ("message_type", "int32", false),
        ("message_id", "int32", false),
        ("counter", "uint64", false),
        (
            "device",
            "dictionary<values=string, indices=int32, ordered=0>",
            false,
        ),
        (
            "param",
            "dictionary<values=string, indices=int32, ordered=0>",
            false,
        ),
        ("type", "string", false),
        ("value_i64", "int64", true),
        ("value_f64", "double", true),
        ("value_str", "string", true),
        ("value_bool", "bool", true),
    ];
    assert_eq!(fields.as_object().unwrap().len(), expected.len());
    for (name, kind, nullable) in expected {
        assert_eq!(fields[name], serde_json::json!([kind, nullable]), "{name}");
    }
    assert!(schema["metadata"]["mframe"]
        .as_str()
        .unwrap()
        .contains("long table"));
}

#[test]
fn row_groups_are_bounded_by_row_group_rows() {
    let dir = scratch("row-groups");
    let frames: Vec<Vec<u8>> = (0..2000).map(|i| telemetry(i, 1, 1, 32)).collect();
    let input = path(&dir, "in.mfb");
    std::fs::write(&input, concat(&frames)).unwrap();
    let out = path(&dir, "rec.parquet");
    mframe(&["export", &input, "-o", &out, "--row-group-rows", "10000"]).ok();
    let schema = python_script(&["pyarrow"], "read_parquet.py", &["schema", &out], b"");
    let groups: Value = serde_json::from_str(schema.lines().nth(1).unwrap()).unwrap();
    // 64,000 rows.
    assert_eq!(groups["row_groups"], 7);
    assert_eq!(duckdb_rows(&out).len(), 64_000);
}

/// The Python one-liners of docs/export.md, by name (the block after each
/// `<!-- pivot: NAME -->` marker).
fn doc_pivots() -> BTreeMap<String, String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/export.md"))
            .unwrap();
    let mut out = BTreeMap::new();
    for piece in doc.split("<!-- pivot: ").skip(1) {
        let name = piece.split(' ').next().unwrap().to_owned();
        let code = piece
            .split("```python\n")
            .nth(1)
            .unwrap()
            .split("\n```")
            .next()
            .unwrap()
            .to_owned();
        out.insert(name, code);
    }
    out
}

#[test]
fn the_pivot_one_liners_of_the_docs_give_a_column_per_parameter() {
    let pivots = doc_pivots();
    assert_eq!(
        pivots.keys().collect::<Vec<_>>(),
        ["duckdb", "pandas", "polars"]
    );
    let dir = scratch("pivot");
    let frames: Vec<Vec<u8>> = (0..30)
        .map(|i| telemetry(i, 1 + (i % 2) as u32, 1, 12))
        .collect();
    let input = path(&dir, "in.mfb");
    std::fs::write(&input, concat(&frames)).unwrap();
    let out = path(&dir, "rec.parquet");
    mframe(&["export", &input, "-o", &out]).ok();
    let stdin = serde_json::to_vec(&pivots).unwrap();
    let got: Value = serde_json::from_str(&python_script(
        &["duckdb", "pandas", "polars", "pyarrow"],
        "read_parquet.py",
        &["pivot", &out],
        &stdin,
    ))
    .unwrap();
    // What each frame's numeric parameters are, as numbers.
    let mut expected = Vec::new();
    for bytes in &frames {
        let view = Decoder::new().view(bytes).unwrap();
        let mut cells = BTreeMap::new();
        for (device, param, value) in view.iter() {
            let x = match value {
                ValueRef::Int(i) => i as f64,
                ValueRef::Double(d) => d,
                ValueRef::Bool(b) => f64::from(u8::from(b)),
                _ => continue,
            };
            cells.insert(format!("{device}/{param}"), x);
        }
        expected.push((view.header().timestamp(), view.header().source(), cells));
    }
    for (name, result) in got.as_object().unwrap() {
        let rows = result.as_array().unwrap();
        assert_eq!(rows.len(), frames.len(), "{name}");
        for (row, (time, source, cells)) in rows.iter().zip(&expected) {
            assert_eq!(row[0], *time, "{name}");
            assert_eq!(row[1], *source, "{name}");
            let got: BTreeMap<String, f64> = row[2]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
                .collect();
            assert_eq!(&got, cells, "{name} at {time}");
        }
    }
}

#[test]
fn attachments_go_to_files_with_an_index() {
    let dir = scratch("attachments");
    let sdr = golden()
        .into_iter()
        .find(|(_, j)| j["name"] == "sdr")
        .unwrap()
        .0;
    let mut frames = vec![sdr.clone()];
    let mut f = Frame::new(
        Header::builder()
            .timestamp(1_700_000_000_500)
            .counter(3)
            .source(4)
            .build(),
    );
    f.add("d", "p", 1i64);
    f.add_attachment("../../escape", vec![1u8, 2, 3]);
    f.add_attachment("", vec![]);
    frames.push(f.encode().unwrap());
    // The same (source, counter, name) again.
    frames.push(f.encode().unwrap());
    let input = path(&dir, "in.mfb");
    std::fs::write(&input, concat(&frames)).unwrap();
    let files = dir.join("files");
    let run = mframe(&[
        "export",
        &input,
        "-o",
        &path(&dir, "rec.parquet"),
        "--attachments",
        files.to_str().unwrap(),
    ])
    .ok();
    assert!(run.stderr.contains(", 5 attachments to "), "{}", run.stderr);
    let index = python_script(
        &["duckdb"],
        "read_parquet.py",
        &["index", files.join("index.parquet").to_str().unwrap()],
        b"",
    );
    let rows: Vec<Value> = index
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let view = Decoder::new().view(&sdr).unwrap();
    let (name, data) = view.attachments().next().unwrap();
    let h = view.header();
    let first = format!("{}-{}-{name}", h.source(), h.counter());
    assert_eq!(
        rows[0],
        serde_json::json!([
            h.timestamp(),
            h.source(),
            h.counter(),
            name,
            data.len(),
            first
        ])
    );
    assert_eq!(std::fs::read(files.join(&first)).unwrap(), data);
    let expected = [
        ("../../escape", 3, "4-3-.._.._escape"),
        ("", 0, "4-3-_"),
        ("../../escape", 3, "4-3-.._.._escape.1"),
        ("", 0, "4-3-_.1"),
    ];
    for (row, (name, len, file)) in rows[1..].iter().zip(expected) {
        assert_eq!(
            *row,
            serde_json::json!([1_700_000_000_500u64, 4, 3, name, len, file])
        );
        assert_eq!(std::fs::read(files.join(file)).unwrap().len(), len);
    }
    assert_eq!(rows.len(), 5);
    // Nothing outside the directory.
    assert!(!dir.join("escape").exists());
}

// ------------------------------------------------------- damage, recovery

/// Frames and their MCAP recording with small chunks.
fn small_chunks(dir: &Path) -> (Vec<Vec<u8>>, Vec<u8>) {
    let frames: Vec<Vec<u8>> = (0..1200)
        .map(|i| telemetry(i, 1 + (i % 3) as u32, 1, 24))
        .collect();
    let input = path(dir, "in.mfb");
    std::fs::write(&input, concat(&frames)).unwrap();
    let out = path(dir, "rec.mcap");
    mframe(&["export", &input, "-o", &out, "--chunk-size", "4096"]).ok();
    (frames, std::fs::read(&out).unwrap())
}

#[test]
fn a_file_cut_at_every_997th_byte_gives_back_every_whole_chunk() {
    let dir = scratch("cut");
    let (frames, mcap) = small_chunks(&dir);
    // Where the chunks are, and how many frames each holds, as the `mcap`
    // crate reads the whole file's summary.
    let summary = mcap::Summary::read(&mcap).unwrap().expect("a summary");
    let mut chunks = Vec::new();
    for index in &summary.chunk_indexes {
        let count = summary
            .stream_chunk(&mcap, index)
            .unwrap()
            .filter(|m| m.as_ref().unwrap().channel.message_encoding == "msgpack")
            .count();
        chunks.push((index.chunk_start_offset + index.chunk_length, count));
    }
    assert!(chunks.len() > 20, "{} chunks", chunks.len());
    // The summary starts right after the data end record.
    let data_end = mcap::read::footer(&mcap).unwrap().summary_start;
    let cut_file = path(&dir, "cut.mcap");
    let out = path(&dir, "out.mfb");
    let mut cut = 997;
    let mut checked = 0;
    while cut < mcap.len() {
        std::fs::write(&cut_file, &mcap[..cut]).unwrap();
        let whole: usize = chunks
            .iter()
            .filter(|(end, _)| *end <= cut as u64)
            .map(|(_, n)| n)
            .sum();
        let run = mframe(&["export", &cut_file, "-o", &out]);
        assert_eq!(
            run.code(),
            Some(if whole == 0 { 1 } else { 0 }),
            "cut at {cut}: {}",
            run.stderr
        );
        assert_eq!(
            std::fs::read(&out).unwrap(),
            concat(&frames[..whole]),
            "cut at {cut}: {}",
            run.stderr
        );
        // Cut in the summary, after the data end record: nothing is
        // missing, nothing to say.
        if cut as u64 >= data_end {
            assert_eq!(whole, frames.len());
            assert!(!run.stderr.contains("then stopped"), "{}", run.stderr);
            cut += 997;
            continue;
        }
        // The line says where it stopped: at the cut, or at the start of
        // the record the cut is in.
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains("then stopped"))
            .unwrap_or_else(|| panic!("no stop line at {cut}: {}", run.stderr));
        let at: usize = line
            .split("read up to byte ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(at <= cut, "{line}");
        assert!(
            line.contains(&format!(" of {cut}, then stopped: ")),
            "{line}"
        );
        assert!(line.contains(&format!("; {whole} frames in ")), "{line}");
        checked += 1;
        cut += 997;
    }
    assert!(checked > 100, "{checked} cuts");
}

#[test]
fn a_damaged_chunk_stops_the_reading_there_and_nothing_of_it_is_used() {
    let dir = scratch("damaged");
    let (frames, mut mcap) = small_chunks(&dir);
    let summary = mcap::Summary::read(&mcap).unwrap().unwrap();
    let third = &summary.chunk_indexes[2];
    let before: usize = summary.chunk_indexes[..2]
        .iter()
        .map(|i| {
            summary
                .stream_chunk(&mcap, i)
                .unwrap()
                .filter(|m| m.as_ref().unwrap().channel.message_encoding == "msgpack")
                .count()
        })
        .sum();
    // A byte in the middle of the third chunk's compressed data.
    let middle = (third.chunk_start_offset + third.chunk_length / 2) as usize;
    mcap[middle] ^= 0x55;
    let damaged = path(&dir, "damaged.mcap");
    std::fs::write(&damaged, &mcap).unwrap();
    let out = path(&dir, "ok.mcap");
    let run = mframe(&["export", &damaged, "-o", &out]).ok();
    assert!(
        run.stderr
            .contains(&format!("read up to byte {}", third.chunk_start_offset)),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("the chunk record at byte"),
        "{}",
        run.stderr
    );
    // The recovered file is whole: Python's mcap reads it, summary and all.
    let read = read_mcap(&out);
    let data: Vec<String> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["data"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = frames[..before].iter().map(|f| hex(f)).collect();
    assert_eq!(data, expected);
}

#[test]
fn damaged_frames_are_skipped_and_a_cut_frame_file_ends_the_reading() {
    let dir = scratch("bad-frames");
    let good: Vec<Vec<u8>> = (0..3).map(|i| telemetry(i, 1, 1, 4)).collect();
    // A frame whose structure is sound but whose key is not UTF-8.
    let mut bad = Frame::new(Header::builder().counter(9).build());
    bad.add("dev", "xx", 1i64);
    let mut bad = bad.encode().unwrap();
    let at = bad.windows(2).position(|w| w == b"xx").unwrap();
    bad[at] = 0xff;
    let mut bytes = concat(&[good[0].clone(), bad.clone(), good[1].clone()]);
    let start_of_bad = good[0].len();
    std::fs::write(path(&dir, "bad.mfb"), &bytes).unwrap();
    let run = mframe(&["export", &path(&dir, "bad.mfb"), "-o", &path(&dir, "a.mfb")]).ok();
    assert_eq!(
        std::fs::read(path(&dir, "a.mfb")).unwrap(),
        concat(&[good[0].clone(), good[1].clone()])
    );
    assert!(
        run.stderr
            .contains(&format!("frame 1 (starts at byte {start_of_bad})")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("(skipped)"), "{}", run.stderr);
    assert!(
        run.stderr.contains(", 1 malformed frames skipped"),
        "{}",
        run.stderr
    );

    // A file cut inside its last frame: the whole ones, and where it stopped.
    bytes.extend_from_slice(&good[2][..good[2].len() / 2]);
    std::fs::write(path(&dir, "cut.mfb"), &bytes).unwrap();
    let run = mframe(&[
        "export",
        &path(&dir, "cut.mfb"),
        "-o",
        &path(&dir, "b.mcap"),
    ])
    .ok();
    assert!(
        run.stderr.contains("frame 3 (starts at byte"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("the rest of the input is not read"),
        "{}",
        run.stderr
    );
    mframe(&["export", &path(&dir, "b.mcap"), "-o", &path(&dir, "b.mfb")]).ok();
    assert_eq!(
        std::fs::read(path(&dir, "b.mfb")).unwrap(),
        concat(&[good[0].clone(), good[1].clone()])
    );

    // Nothing at all: bad input (exit 1), the output still a whole file.
    std::fs::write(path(&dir, "empty.mfb"), b"").unwrap();
    let run = mframe(&[
        "export",
        &path(&dir, "empty.mfb"),
        "-o",
        &path(&dir, "e.parquet"),
    ]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("input is empty"), "{}", run.stderr);
    assert!(duckdb_rows(&path(&dir, "e.parquet")).is_empty());
    let run = mframe(&["export", "/nonexistent/x.mfb", "-o", &path(&dir, "x.mcap")]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
}

#[test]
fn bad_usage_is_exit_2_with_a_clear_message() {
    let dir = scratch("usage");
    let input = path(&dir, "in.mfb");
    std::fs::write(&input, telemetry(0, 1, 1, 2)).unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["export", &input, "-o", "x.csv"],
            "cannot tell the format of `x.csv`",
        ),
        (
            &["export", &input, "-o", "x.parquet", "--mirror", "json"],
            "--mirror is for MCAP output",
        ),
        (
            &["export", &input, "-o", "x.mcap", "--with-data"],
            "--with-data is for JSON Lines",
        ),
        (
            &["export", &input, "-o", "x.mcap", "--stream", "S"],
            "--stream needs a NATS server",
        ),
        (
            &["export", &input, "-o", "x.mcap", "--flush-interval", "0"],
            "is not a duration",
        ),
        (
            &[
                "export",
                &input,
                "-o",
                "x.parquet",
                "--row-group-rows",
                "10",
            ],
            "is not a number of rows",
        ),
    ];
    for (args, message) in cases {
        let run = mframe(args);
        assert_eq!(run.code(), Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
    }
}

// ------------------------------------------------------------ live sources

/// Starts `mframe export ADDR ...` on a free loopback port; its address.
fn export_tcp(args: &[&str]) -> (Proc, String) {
    let mut all = vec!["export", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let proc = Proc::spawn(&all);
    let addr = proc.listening_on();
    (proc, addr)
}

fn send(addr: &str, frames: &[Vec<u8>]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&concat(frames)).unwrap();
    s.flush().unwrap();
    s
}

#[test]
fn a_recorder_killed_with_sigkill_loses_at_most_the_last_flush_interval() {
    let dir = scratch("sigkill");
    let rec = path(&dir, "live.mcap");
    let (recorder, addr) = export_tcp(&["-o", &rec, "--flush-interval", "200ms"]);
    let first: Vec<Vec<u8>> = (0..300).map(|i| telemetry(i, 1, 1, 16)).collect();
    let second: Vec<Vec<u8>> = (300..600).map(|i| telemetry(i, 1, 1, 16)).collect();
    let _conn = send(&addr, &first);
    // With no frame after them, the first frames reach the file within
    // the interval: the recorder's own timer closes the chunk.
    let probe = path(&dir, "probe.mfb");
    wait_until("the first frames in the file", || {
        mframe(&["export", &rec, "-o", &probe]);
        std::fs::read(&probe).is_ok_and(|b| b == concat(&first))
    });
    let mut conn = send(&addr, &second);
    conn.flush().unwrap();
    recorder.signal("KILL");
    drop(recorder);

    // The recovery: every first frame, then a prefix of the second ones.
    let recovered = path(&dir, "recovered.mcap");
    let run = mframe(&["export", &rec, "-o", &recovered]).ok();
    assert!(run.stderr.contains("then stopped"), "{}", run.stderr);
    let back = path(&dir, "back.mfb");
    mframe(&["export", &recovered, "-o", &back]).ok();
    let back = std::fs::read(&back).unwrap();
    let all = concat(&[concat(&first), concat(&second)]);
    assert!(back.len() >= concat(&first).len());
    assert_eq!(&all[..back.len()], &back[..], "a prefix of what was sent");
    // The recovered file is finished: Python's mcap reads its summary.
    let read = read_mcap(&recovered);
    assert!(read["statistics"]["message_count"].as_u64().unwrap() >= 300);
}

#[test]
fn sigterm_and_ctrl_c_finish_the_file_with_every_frame_received() {
    let dir = scratch("signals");
    for (sig, out) in [("TERM", "term.parquet"), ("INT", "int.mcap")] {
        let rec = path(&dir, out);
        let (recorder, addr) = export_tcp(&["-o", &rec]);
        // More frames than a batch holds (1,024), more bytes too (256 KiB).
        let frames: Vec<Vec<u8>> = (0..3000).map(|i| telemetry(i, 3, 2, 8)).collect();
        assert!(concat(&frames).len() > 256 << 10);
        drop(send(&addr, &frames));
        // The connection's task has queued every frame when it says so.
        recorder.stderr_line("closed after 3000 frames");
        recorder.signal(sig);
        let mut recorder = recorder;
        assert!(recorder.wait().success(), "{}", recorder.stderr_text());
        let log = recorder.stderr_text();
        assert!(
            log.contains("exported 3000 frames (24000 parameters)")
                && log.contains("(stopped by a signal)"),
            "{log}"
        );
        // No progress line: stderr is not a terminal.
        assert!(!log.contains("frames/s"), "{log}");
        if out.ends_with(".parquet") {
            assert_eq!(duckdb_rows(&rec).len(), 24_000);
        } else {
            // Every frame, in order.
            let back = path(&dir, "back.mfb");
            mframe(&["export", &rec, "-o", &back]).ok();
            assert_eq!(std::fs::read(&back).unwrap(), concat(&frames));
        }
    }
}

#[test]
fn a_tcp_source_has_the_servers_limits() {
    let dir = scratch("limits");
    let rec = path(&dir, "limited.mfb");
    let (recorder, addr) = export_tcp(&["-o", &rec, "--max-frame-bytes", "64KiB"]);
    // A header announcing a 250 MiB attachment: refused on the header, its
    // connection closed before its bytes are read.
    let mut bomb_frame = Frame::new(messageframe::Header::new(1, 2, 1, 1));
    bomb_frame.add_attachment("iq", vec![0u8; 1]);
    let mut bomb = bomb_frame.encode().unwrap();
    let at = bomb.len() - 3;
    assert_eq!(
        &bomb[at..at + 2],
        &[0xc4, 0x01],
        "bin8 of one byte at the end"
    );
    bomb.truncate(at);
    bomb.push(0xc6);
    bomb.extend_from_slice(&(250u32 << 20).to_be_bytes());
    let mut bomber = TcpStream::connect(&addr).unwrap();
    bomber.write_all(&bomb).unwrap();
    bomber
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(bomber.read(&mut [0u8; 1]).unwrap_or(0), 0, "closed");
    // Another producer's frames are recorded.
    let frames: Vec<Vec<u8>> = (0..20).map(|i| telemetry(i, 1, 1, 4)).collect();
    drop(send(&addr, &frames));
    recorder.stderr_line("closed after 20 frames");
    recorder.signal("TERM");
    let mut recorder = recorder;
    assert!(recorder.wait().success(), "{}", recorder.stderr_text());
    let log = recorder.stderr_text();
    assert!(
        log.contains("decode limit `max_frame_bytes` exceeded"),
        "{log}"
    );
    assert_eq!(std::fs::read(&rec).unwrap(), concat(&frames));
}

#[test]
fn count_and_duration_stop_a_live_recording() {
    let dir = scratch("count");
    let rec = path(&dir, "count.mfb");
    let (mut recorder, addr) = export_tcp(&["-o", &rec, "--count", "50"]);
    let frames: Vec<Vec<u8>> = (0..100).map(|i| telemetry(i, 1, 1, 4)).collect();
    let _conn = send(&addr, &frames);
    assert!(recorder.wait().success(), "{}", recorder.stderr_text());
    assert!(recorder.stderr_text().contains("(--count reached)"));
    assert_eq!(std::fs::read(&rec).unwrap(), concat(&frames[..50]));

    let rec = path(&dir, "duration.jsonl");
    let started = Instant::now();
    let (mut recorder, _addr) = export_tcp(&["-o", &rec, "--duration", "1s"]);
    assert!(recorder.wait().success(), "{}", recorder.stderr_text());
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(recorder.stderr_text().contains("exported 0 frames"));
    assert!(recorder.stderr_text().contains("(--duration reached)"));
}

#[test]
fn the_progress_line_is_shown_only_on_a_terminal() {
    let dir = scratch("progress");
    let rec = path(&dir, "p.mfb");
    // script(1) gives the command a pseudo-terminal; what it printed there
    // comes out on script's stdout.
    let command = format!(
        "{} export 127.0.0.1:0 -o {rec} --duration 2.5s",
        env!("CARGO_BIN_EXE_mframe")
    );
    let run = run_program("script", &["-qefc", &command, "/dev/null"], b"");
    assert!(run.status.success(), "{}", run.stderr);
    let screen = String::from_utf8_lossy(&run.stdout);
    assert!(
        screen.contains("mframe: export: 0 frames, 0 B, 0 frames/s"),
        "{screen}"
    );
    // Cleared before the summary.
    assert!(
        screen.contains("\r\x1b[Kmframe: export: exported 0 frames"),
        "{screen:?}"
    );
}

#[test]
fn nats_subscriptions_and_jetstream_replays_are_exported() {
    use messageframe_testkit::{NatsServer, ServerOptions};
    let dir = scratch("nats");
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let url = server.url();
    let mine: Vec<Vec<u8>> = (0..20).map(|i| telemetry(i, 5, 1, 6)).collect();
    let others: Vec<Vec<u8>> = (0..20).map(|i| telemetry(i, 6, 1, 6)).collect();
    let mixed: Vec<Vec<u8>> = mine
        .iter()
        .zip(&others)
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let input = path(&dir, "mixed.mfb");
    std::fs::write(&input, concat(&mixed)).unwrap();

    // A subscription, filtered by the server, until --count.
    let sub_out = path(&dir, "sub.mfb");
    let mut sub = Proc::spawn(&[
        "export", &url, "--prefix", "ex", "--source", "5", "-o", &sub_out, "--count", "20",
    ]);
    sub.stderr_line("subscribed to `ex.*.*.5`");
    mframe(&["pub", &url, &input, "--prefix", "ex"]).ok();
    assert!(sub.wait().success(), "{}", sub.stderr_text());
    assert_eq!(std::fs::read(&sub_out).unwrap(), concat(&mine));

    // A JetStream stream, replayed from its first frame to its last.
    mframe(&["record", &url, "--stream", "EXPORT", "--prefix", "js"]).ok();
    let published = now_ns();
    mframe(&["pub", &url, &input, "--prefix", "js"]).ok();
    let js_out = path(&dir, "js.mcap");
    let run = mframe(&[
        "export", &url, "--stream", "EXPORT", "--prefix", "js", "--source", "6", "-o", &js_out,
    ])
    .ok();
    assert!(run.stderr.contains("exported 20 frames"), "{}", run.stderr);
    let read = read_mcap(&js_out);
    let messages = read["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 20);
    for (m, bytes) in messages.iter().zip(&others) {
        assert_eq!(m["data"].as_str().unwrap(), hex(bytes));
        // publish_time: when the server stored it.
        let stored = m["publish_time"].as_u64().unwrap();
        assert!(
            stored + 1_000_000_000 >= published && stored <= now_ns(),
            "{stored}"
        );
    }
}

//! Python's `msgpack` package decodes frames that we write, with a reader
//! written from the wire-format document (tests/python/read_frames.py).
//!
//! The test installs `msgpack` into a directory under the target dir on
//! first use (`pip install --target`, from PyPI), so it runs on a fresh
//! machine. When Python or the package cannot be had (offline, say), it
//! fails with a message that says what is missing, how to get it, and how
//! to opt out: `MESSAGEFRAME_SKIP_PYTHON=1` makes it pass without running,
//! after saying so loudly on stderr. It never skips silently.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use messageframe::{Frame, Header, UnknownValue, ValueRef};
use serde_json::{json, Value as Json};

/// Set to `1` to skip the Python interop test on purpose (offline runs).
const SKIP_VAR: &str = "MESSAGEFRAME_SKIP_PYTHON";

/// The package the test needs, as pip and the import statement name it.
const MSGPACK: (&str, &str) = ("msgpack>=1.0,<2", "msgpack");

/// Why the interop test cannot run. Its `Debug` is the message itself, so
/// that a test returning it prints the message as written (no quoting, no
/// backtrace).
struct Missing(String);

impl fmt::Debug for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// What to do about a missing piece, appended to every [`Missing`].
fn remedy(requirement: &str) -> String {
    format!(
        "To run this test, make `{requirement}` importable by the Python in $PYTHON \
         (default python3): give it access to PyPI (or a mirror through PIP_INDEX_URL), \
         or install it yourself (Debian: `apt-get install python3-msgpack`; anywhere: \
         `python3 -m pip install msgpack`), or set PYTHON to an interpreter that has it.\n\
         To run the other tests without this one (offline, say), set {SKIP_VAR}=1: the test \
         then passes without running and says so on stderr."
    )
}

/// A directory that makes `module` importable (through `PYTHONPATH`) by
/// `python`, installing `requirement` into `dir` with pip if needed, with
/// `pip_env` added to pip's environment.
fn python_package(
    python: &str,
    dir: &Path,
    requirement: &str,
    module: &str,
    pip_env: &[(&str, &str)],
) -> Result<PathBuf, Missing> {
    let import = |dir: &Path| {
        Command::new(python)
            .args(["-c", &format!("import {module}")])
            .env("PYTHONPATH", dir)
            .output()
    };
    match import(dir) {
        Ok(out) if out.status.success() => return Ok(dir.to_owned()),
        Ok(_) => {}
        Err(e) => {
            return Err(Missing(format!(
                "The Python interop test needs Python 3, and `{python}` cannot be run: {e}.\n{}",
                remedy(requirement)
            )))
        }
    }
    let pip = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(dir)
        .arg(requirement)
        .envs(pip_env.iter().copied())
        .output()
        .map_err(|e| {
            Missing(format!(
                "cannot run `{python} -m pip`: {e}.\n{}",
                remedy(requirement)
            ))
        })?;
    if !pip.status.success() {
        let said = String::from_utf8_lossy(&pip.stderr);
        let tail: Vec<&str> = said.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Missing(format!(
            "The Python interop test needs the Python package `{requirement}`, which `{python}` \
             cannot import, and installing it failed: `{python} -m pip install --target {} \
             '{requirement}'` exited with {} (no network or no PyPI?). pip said:\n    {}\n{}",
            dir.display(),
            pip.status,
            tail.join("\n    "),
            remedy(requirement)
        )));
    }
    match import(dir) {
        Ok(out) if out.status.success() => Ok(dir.to_owned()),
        _ => Err(Missing(format!(
            "pip installed `{requirement}` into {}, but `{python}` still cannot import `{module}`.\n{}",
            dir.display(),
            remedy(requirement)
        ))),
    }
}

/// Whether the test is to be skipped on purpose; if so, says so on stderr,
/// past the test harness's output capture, so that the skip shows in every
/// `cargo test` run.
fn skipped_on_purpose(test: &str) -> bool {
    if std::env::var(SKIP_VAR).as_deref() != Ok("1") {
        return false;
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED {test}: {SKIP_VAR}=1 is set, so Python's msgpack was NOT checked \
         against the frames we write. Unset it to run this test. ***\n"
    );
    true
}

/// Unknown values for the interop frames: `(param, tag, raw value)`.
const UNKNOWNS: &[(&str, i128, &[u8])] = &[
    ("array", 77, &[0x92, 0x01, 0xa1, b'x']),
    ("unset", 0, &[0xc0]),
    ("u64_tag", 1 << 63, &[0xc3]),
    ("max_tag", u64::MAX as i128, &[0xc4, 0x02, 0xde, 0xad]),
    ("min_tag", i64::MIN as i128, &[0xcd, 0x12, 0x34]),
    (
        "negative",
        -1,
        &[
            0x81, 0xa1, b'k', 0x92, 0xff, 0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0,
        ],
    ),
    // A str8 where a fixstr would do: Python re-packs it as a fixstr, so the
    // bytes differ and the content must be compared, not the bytes.
    ("str8", 50, &[0xd9, 0x02, b'h', b'i']),
    ("ext", 51, &[0xd5, 0x07, 0x01, 0x02]),
];

fn frames() -> Vec<Frame> {
    let mut out = Vec::new();

    let mut f = Frame::new(Header::from_fields(
        1_700_000_000_000,
        1,
        50,
        99,
        1001,
        1,
        1,
        0,
    ));
    f.add("sensor_alpha", "voltage", 12.6);
    f.add("device_core", "fw_version", "v3.2.1");
    out.push(f);

    let mut f = Frame::new(Header::from_fields(
        u64::MAX,
        u64::MAX,
        u32::MAX,
        0,
        i32::MIN,
        i32::MAX,
        u16::MAX,
        0x8001,
    ));
    f.add("t", "i_min", i64::MIN);
    f.add("t", "i_max", i64::MAX);
    f.add("t", "neg", -33);
    f.add("t", "integral", 10.0);
    f.add("t", "neg_zero", -0.0);
    f.add("t", "nan", f64::NAN);
    f.add("t", "inf", f64::NEG_INFINITY);
    f.add("t", "big", 1e19);
    f.add("t", "huge", 1e300);
    f.add("t", "tiny", 5e-324);
    f.add("t", "utf8", "Grüße 📡");
    f.add("t", "empty", "");
    f.add("t", "long", "x".repeat(70_000).as_str());
    f.add("t", "yes", true);
    f.add("t", "no", false);
    f.add("t", "sep\u{1f}in_param", 1);
    f.add("", "no_device", 2);
    // Unknown values of several shapes, tags across the whole integer range.
    for (param, tag, raw) in UNKNOWNS {
        f.add(
            "u",
            param,
            ValueRef::Unknown(UnknownValue::new(*tag, raw).unwrap()),
        );
    }
    f.add_attachment("iq", vec![0xAB; 70_000]);
    f.add_attachment("empty", Vec::new());
    out.push(f);

    let mut f = Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 1, 0));
    for k in 0..1024 {
        let (d, p) = (format!("d{}", k % 8), format!("p{k}"));
        match k % 4 {
            0 => f.add(&d, &p, k as f64 * 1.5),
            1 => f.add(&d, &p, k as i64 * 1000),
            2 => f.add(&d, &p, k % 3 == 0),
            _ => f.add(&d, &p, format!("value_{k}")),
        }
    }
    out.push(f);
    out
}

/// What read_frames.py should print for a frame.
fn expected(f: &Frame) -> Json {
    let h = f.header();
    let params: Vec<Json> = f
        .iter()
        .map(|(d, p, v)| {
            let (ty, value) = match v {
                ValueRef::Int(i) => ("int64", json!(i)),
                // -0.0 is written as float64, so its bits survive.
                ValueRef::Double(x) => (
                    "double",
                    json!(if x.is_nan() {
                        f64::NAN.to_bits()
                    } else {
                        x.to_bits()
                    }),
                ),
                ValueRef::String(s) => ("string", json!(s)),
                ValueRef::Bool(b) => ("bool", json!(b)),
                ValueRef::Unknown(u) => (
                    "unknown",
                    json!({"tag": tag_json(u.tag()), "raw": hex(u.raw())}),
                ),
                other => panic!("a value type this test does not know: {other:?}"),
            };
            json!({"device": d, "param": p, "type": ty, "value": value})
        })
        .collect();
    let atts: Vec<Json> = f
        .attachments()
        .map(|(n, d)| {
            let prefix: String = d.iter().take(16).map(|b| format!("{b:02x}")).collect();
            json!({"name": n, "len": d.len(), "hex_prefix": prefix})
        })
        .collect();
    json!({
        "header": [h.timestamp(), h.counter(), h.source(), h.target(), h.message_id(), h.message_type(), h.version(), h.flags()],
        "params": params,
        "attachments": atts,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A tag as JSON: an exact integer (`json!` has no `i128`).
fn tag_json(tag: i128) -> Json {
    match (i64::try_from(tag), u64::try_from(tag)) {
        (Ok(t), _) => json!(t),
        (_, Ok(t)) => json!(t),
        _ => panic!("tag {tag} is not a MessagePack integer"),
    }
}

/// The MessagePack value that `hex` spells, read by rmpv.
fn mp_value(hex: &str) -> rmpv::Value {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let mut rest = &bytes[..];
    let value = rmpv::decode::read_value(&mut rest).unwrap();
    assert!(rest.is_empty(), "{hex}: one value");
    value
}

#[test]
fn python_msgpack_reads_the_frames_we_write() -> Result<(), Missing> {
    if skipped_on_purpose("python_msgpack_reads_the_frames_we_write") {
        return Ok(());
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-msgpack");
    let lib = python_package(&python(), &dir, MSGPACK.0, MSGPACK.1, &[])?;
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-frames");
    std::fs::create_dir_all(&tmp).unwrap();
    let frames = frames();
    let mut paths = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let path = tmp.join(format!("frame{i}.mfb"));
        std::fs::write(&path, f.encode().unwrap()).unwrap();
        paths.push(path);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/read_frames.py");
    let out = Command::new(python())
        .arg(&script)
        .args(&paths)
        .env("PYTHONPATH", &lib)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Json> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), frames.len());
    for (f, got) in frames.iter().zip(&lines) {
        let want = expected(f);
        assert_eq!(got["header"], want["header"]);
        assert_eq!(got["attachments"], want["attachments"]);
        let (g, w) = (
            got["params"].as_array().unwrap(),
            want["params"].as_array().unwrap(),
        );
        assert_eq!(g.len(), w.len());
        for (g, w) in g.iter().zip(w) {
            if w["type"] == "unknown" {
                // Python re-packs the value: the same content, possibly in
                // other widths. The tag is exact; the values are compared
                // as rmpv reads them.
                assert_eq!(
                    (&g["device"], &g["param"], &g["type"], &g["value"]["tag"]),
                    (&w["device"], &w["param"], &w["type"], &w["value"]["tag"])
                );
                let (got, want) = (&g["value"]["raw"], &w["value"]["raw"]);
                assert_eq!(
                    mp_value(got.as_str().unwrap()),
                    mp_value(want.as_str().unwrap()),
                    "{}: Python read {got}, we wrote {want}",
                    w["param"]
                );
            } else {
                assert_eq!(g, w);
            }
        }
    }
    let unknowns = lines[1]["params"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "unknown")
        .count();
    assert_eq!(unknowns, UNKNOWNS.len());
    Ok(())
}

#[test]
fn without_python_or_pypi_the_test_says_what_is_missing_and_how_to_opt_out() {
    // No interpreter at all.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-none");
    let Missing(msg) =
        python_package("/nonexistent/python3", &dir, MSGPACK.0, MSGPACK.1, &[]).unwrap_err();
    assert!(msg.contains("cannot be run"), "{msg}");
    assert!(msg.contains("MESSAGEFRAME_SKIP_PYTHON=1"), "{msg}");
    assert!(msg.contains("set PYTHON"), "{msg}");

    // An interpreter whose pip cannot reach a package index (PIP_NO_INDEX,
    // as offline), for a package no machine has: the message names it,
    // quotes pip, says how to install it another way and how to opt out.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-offline");
    let requirement = "messageframe-no-such-package==0.0.0";
    let result = python_package(
        &python(),
        &dir,
        requirement,
        "messageframe_no_such_package",
        &[("PIP_NO_INDEX", "1")],
    );
    let Missing(msg) = result.unwrap_err();
    assert!(msg.contains(requirement), "{msg}");
    assert!(msg.contains("MESSAGEFRAME_SKIP_PYTHON=1"), "{msg}");
    assert!(msg.contains("apt-get install python3-msgpack"), "{msg}");
    // Where pip runs, its own words are quoted (it says why it failed).
    if !msg.contains("cannot be run") {
        assert!(msg.contains("pip said:"), "{msg}");
    }
}

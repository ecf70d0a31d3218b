//! Python's `msgpack` package decodes frames that we write, with a reader
//! written from the wire-format document (tests/python/read_frames.py).
//!
//! The test installs `msgpack` into a directory under the target dir on
//! first use (`pip install --target`), so it runs on a fresh machine; it
//! fails, never skips, when Python or the package cannot be had.

use std::path::{Path, PathBuf};
use std::process::Command;

use messageframe::{Frame, Header, UnknownValue, ValueRef};
use serde_json::{json, Value as Json};

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A directory holding the `msgpack` package, installed if missing.
fn msgpack_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-msgpack");
    let works = |dir: &Path| {
        Command::new(python())
            .args(["-c", "import msgpack; assert msgpack.version >= (1, 0)"])
            .env("PYTHONPATH", dir)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !works(&dir) {
        let status = Command::new(python())
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--target",
            ])
            .arg(&dir)
            .arg("msgpack>=1.0,<2")
            .status()
            .unwrap_or_else(|e| panic!("cannot run {} (set PYTHON to a Python 3): {e}", python()));
        assert!(status.success(), "pip install msgpack failed");
        assert!(
            works(&dir),
            "msgpack still not importable from {}",
            dir.display()
        );
    }
    dir
}

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
    f.add(
        "t",
        "unknown",
        ValueRef::Unknown(UnknownValue::new(77, &[0x92, 0x01, 0xa1, b'x']).unwrap()),
    );
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
                    json!(u
                        .raw()
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()),
                ),
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

#[test]
fn python_msgpack_reads_the_frames_we_write() {
    let lib = msgpack_dir();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-frames");
    std::fs::create_dir_all(&tmp).unwrap();
    let frames = frames();
    let mut paths = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let path = tmp.join(format!("frame{i}.mfb"));
        std::fs::write(&path, f.encode()).unwrap();
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
                // Python re-packs the value: same content, maybe other widths.
                assert_eq!(
                    (&g["device"], &g["param"], &g["type"]),
                    (&w["device"], &w["param"], &w["type"])
                );
            } else {
                assert_eq!(g, w);
            }
        }
    }
}

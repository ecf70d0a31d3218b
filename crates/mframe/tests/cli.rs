//! End-to-end tests of the `mframe` binary: every interop frame, the
//! `dump | encode` round trip, streams, stdin, and bad input of every kind.

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use assert_cmd::Command;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use messageframe::{Frame, FrameReader, FrameView, Header, UnknownValue, ValueRef};
use predicates::prelude::*;
use serde_json::Value;

fn mframe() -> Command {
    Command::cargo_bin("mframe").expect("the mframe binary is built")
}

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../messageframe/tests/data/interop")
}

struct Interop {
    name: String,
    path: PathBuf,
    bytes: Vec<u8>,
    json: Value,
}

fn interop_frames() -> Vec<Interop> {
    let mut frames: Vec<Interop> = fs::read_dir(interop_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mfb"))
        .map(|path| {
            let json = fs::read_to_string(path.with_extension("json")).unwrap();
            Interop {
                name: path.file_stem().unwrap().to_string_lossy().into_owned(),
                bytes: fs::read(&path).unwrap(),
                json: serde_json::from_str(&json).unwrap(),
                path,
            }
        })
        .collect();
    frames.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(frames.len(), 11, "all interop frames are found");
    frames
}

fn interop(name: &str) -> Interop {
    interop_frames()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap()
}

/// Runs `mframe ARGS` on `stdin`, expects success, returns stdout.
fn run_ok(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = mframe().args(args).write_stdin(stdin).output().unwrap();
    assert!(
        out.status.success(),
        "mframe {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    std::str::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The interop description's header, with the dump schema's key names.
fn expected_header(json: &Value) -> Value {
    let h = &json["header"];
    serde_json::json!({
        "timestamp": h["timestamp"], "counter": h["msg_cnt"], "source": h["source"],
        "target": h["target"], "message_id": h["msg_id"], "message_type": h["msg_type"],
        "version": h["version"], "flags": h["flags"],
    })
}

/// A dumped parameter equals a described one (doubles compared as numbers,
/// so `10` and `10.0` match and `-0.0`, which C++ writes as `0`, matches 0).
fn same_param(dumped: &Value, described: &Value) -> bool {
    if dumped["device"] != described["device"]
        || dumped["param"] != described["param"]
        || dumped["type"] != described["type"]
    {
        return false;
    }
    match (
        described["type"].as_str(),
        &dumped["value"],
        &described["value"],
    ) {
        (Some("double"), Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (_, a, b) => a == b,
    }
}

#[test]
fn dump_of_every_interop_frame_matches_its_description() {
    for f in interop_frames() {
        let lines = json_lines(&run_ok(&["dump", f.path.to_str().unwrap()], b""));
        assert_eq!(lines.len(), 1, "{}", f.name);
        let dump = &lines[0];
        assert_eq!(
            dump.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["attachments", "header", "params"],
            "{}",
            f.name
        );
        assert_eq!(dump["header"], expected_header(&f.json), "{}", f.name);

        let dumped = dump["params"].as_array().unwrap();
        let described = f.json["parameters"].as_array().unwrap();
        assert_eq!(dumped.len(), described.len(), "{}", f.name);
        if f.name == "map_mode" {
            // C++ wrote it in hash order; dump prints wire order. Same set.
            for p in described {
                assert!(dumped.iter().any(|d| same_param(d, p)), "map_mode: {p}");
            }
            let keys: HashSet<_> = dumped
                .iter()
                .map(|d| (d["device"].to_string(), d["param"].to_string()))
                .collect();
            assert_eq!(keys.len(), described.len());
            // ...and wire order is exactly the library's iteration order.
            let view = FrameView::new(&f.bytes).unwrap();
            for ((d, p, _), j) in view.iter().zip(dumped) {
                assert_eq!(
                    (d, p),
                    (j["device"].as_str().unwrap(), j["param"].as_str().unwrap())
                );
            }
        } else {
            for (d, p) in dumped.iter().zip(described) {
                assert!(same_param(d, p), "{}: dumped {d}, described {p}", f.name);
            }
        }

        let atts = dump["attachments"].as_array().unwrap();
        let described = f.json["attachments"].as_array().unwrap();
        assert_eq!(atts.len(), described.len(), "{}", f.name);
        for (a, d) in atts.iter().zip(described) {
            assert_eq!(a["name"], d["name"]);
            assert_eq!(a["len"], d["len"]);
            assert!(a.get("data").is_none(), "no data without --with-data");
        }
    }
}

#[test]
fn dump_with_data_carries_the_attachment_bytes() {
    let f = interop("sdr");
    let lines = json_lines(&run_ok(
        &["dump", "--with-data", f.path.to_str().unwrap()],
        b"",
    ));
    let att = &lines[0]["attachments"][0];
    let data = BASE64.decode(att["data"].as_str().unwrap()).unwrap();
    let view = FrameView::new(&f.bytes).unwrap();
    assert_eq!(data, view.attachment("raw_iq").unwrap());
    assert_eq!(att["len"], 4096);
}

#[test]
fn doubles_keep_their_type_and_exact_value() {
    let f = interop("doubles");
    let lines = json_lines(&run_ok(&["dump", f.path.to_str().unwrap()], b""));
    let text = String::from_utf8(run_ok(&["dump", f.path.to_str().unwrap()], b"")).unwrap();
    // Integral doubles (integers on the wire) are still typed and printed as doubles.
    assert!(
        text.contains(r#""param":"one","type":"double","value":1.0}"#),
        "{text}"
    );
    assert!(text.contains(r#""value":1e19}"#), "{text}");
    assert!(text.contains(r#""param":"nan","type":"double","value":"NaN"}"#));
    assert!(text.contains(r#""value":"Infinity"}"#));
    assert!(text.contains(r#""value":"-Infinity"}"#));
    let params = lines[0]["params"].as_array().unwrap();
    let tiny = params.iter().find(|p| p["param"] == "tiny").unwrap();
    assert_eq!(tiny["value"].as_f64().unwrap().to_bits(), 1);
}

#[test]
fn dump_prints_what_serde_json_makes_of_the_library_serialize_impls() {
    // `mframe dump` is messageframe's `Serialize` through serde_json: the
    // line for every interop frame is `serde_json::to_string` of the frame
    // (owned or view), and with --with-data of `WithData`. Byte for byte,
    // except where serde_json's float notation differs from the dump's
    // (doubles of magnitude 1e16 and up, `1e+16` against `1e16`, and in
    // [1e-5, 1e-4), `0.00001234` against `1.234e-5`): there the same
    // numbers, as the parsed JSON shows.
    use messageframe::serde::WithData;
    let notation_differs = |frame: &Frame| {
        frame.iter().any(|(_, _, v)| {
            v.as_f64().is_some_and(|x| {
                x.is_finite() && (x.abs() >= 1e16 || (1e-5..1e-4).contains(&x.abs()))
            })
        })
    };
    let mut byte_exact = 0;
    for f in interop_frames() {
        let path = f.path.to_str().unwrap();
        let frame = Frame::decode(&f.bytes).unwrap();
        let view = FrameView::new(&f.bytes).unwrap();
        let dump = String::from_utf8(run_ok(&["dump", path], b"")).unwrap();
        let with = String::from_utf8(run_ok(&["dump", "--with-data", path], b"")).unwrap();
        let owned = serde_json::to_string(&frame).unwrap() + "\n";
        let viewed = serde_json::to_string(&view).unwrap() + "\n";
        let with_data = serde_json::to_string(&WithData(&frame)).unwrap() + "\n";
        assert_eq!(owned, viewed, "{}", f.name);
        if notation_differs(&frame) {
            assert_ne!(dump, owned, "{}", f.name);
        } else {
            assert_eq!(dump, owned, "{}", f.name);
            assert_eq!(with, with_data, "{}", f.name);
            byte_exact += 1;
        }
        assert_eq!(
            json_lines(dump.as_bytes()),
            json_lines(owned.as_bytes()),
            "{}",
            f.name
        );
        assert_eq!(
            json_lines(with.as_bytes()),
            json_lines(with_data.as_bytes()),
            "{}",
            f.name
        );
        let header = String::from_utf8(run_ok(&["header", path], b"")).unwrap();
        assert_eq!(
            header,
            serde_json::to_string(frame.header()).unwrap() + "\n"
        );
        assert_eq!(
            serde_json::from_str::<Header>(&header).unwrap(),
            *frame.header()
        );
    }
    assert_eq!(byte_exact, 9, "the interop frames without such doubles");
}

#[test]
fn dump_keeps_its_notation_where_serde_json_would_differ() {
    // Built by hand: a double in [1e-5, 1e-4) and the two control
    // characters serde_json escapes by name. The dump's bytes are pinned.
    let mut frame = Frame::new(Header::from_fields(1, 0, 0, 0, 0, 0, 1, 0));
    frame.add("d", "small", 1.234e-5);
    frame.add("d", "ctl", "\u{8}\u{c}\u{1f}");
    let bytes = frame.encode().unwrap();
    let dump = String::from_utf8(run_ok(&["dump"], &bytes)).unwrap();
    assert_eq!(
        dump,
        concat!(
            r#"{"header":{"timestamp":1,"counter":0,"source":0,"target":0,"message_id":0,"message_type":0,"version":1,"flags":0},"#,
            r#""params":[{"device":"d","param":"small","type":"double","value":1.234e-5},"#,
            r#"{"device":"d","param":"ctl","type":"string","value":"\u0008\u000c\u001f"}],"attachments":[]}"#,
            "\n"
        )
    );
    let plain = serde_json::to_string(&frame).unwrap();
    assert!(plain.contains(r#""value":0.00001234}"#), "{plain}");
    assert!(plain.contains(r#""value":"\b\f\u001f"}"#), "{plain}");
    frame.clear();
    frame.add("d", "big", 1e16);
    let bytes = frame.encode().unwrap();
    let dump = String::from_utf8(run_ok(&["dump"], &bytes)).unwrap();
    assert!(dump.contains(r#""value":1e16}"#), "{dump}");
    let plain = serde_json::to_string(&frame).unwrap();
    assert!(plain.contains(r#""value":1e+16}"#), "{plain}");
}

#[test]
fn header_of_every_interop_frame_matches_its_description() {
    for f in interop_frames() {
        let lines = json_lines(&run_ok(&["header", f.path.to_str().unwrap()], b""));
        assert_eq!(lines, [expected_header(&f.json)], "{}", f.name);
        let first = json_lines(&run_ok(
            &["header", "--first", f.path.to_str().unwrap()],
            b"",
        ));
        assert_eq!(first, lines, "{}", f.name);
    }
}

#[test]
fn validate_passes_every_interop_frame() {
    for f in interop_frames() {
        for strict in [false, true] {
            let mut args = vec!["validate", f.path.to_str().unwrap()];
            if strict {
                args.push("--strict");
            }
            let out = String::from_utf8(run_ok(&args, b"")).unwrap();
            assert!(out.contains("1 valid frame,"), "{}: {out}", f.name);
        }
    }
}

/// MessagePack carries no checksum (docs/wire-format.md, "Integrity"): a
/// bit flipped inside a double passes `validate`, strict or not, and dumps
/// as another value.
#[test]
fn validate_cannot_see_a_flipped_bit_inside_a_double() {
    let mut frame = Frame::new(Header::from_fields(1, 0, 0, 0, 0, 0, 1, 0));
    frame.add("sdr_1", "rx_gain", 30.5);
    let mut bytes = frame.encode().unwrap();
    let at = bytes.iter().position(|&b| b == 0xcb).unwrap();
    bytes[at + 8] ^= 0x01; // the lowest bit of the mantissa
    for args in [&["validate"][..], &["validate", "--strict"]] {
        let out = String::from_utf8(run_ok(args, &bytes)).unwrap();
        assert!(out.contains("1 valid frame"), "{out}");
    }
    let dumped = json_lines(&run_ok(&["dump"], &bytes));
    let value = dumped[0]["params"][0]["value"].as_f64().unwrap();
    assert_eq!(value.to_bits(), 30.5f64.to_bits() ^ 1);
}

#[test]
fn dump_encode_round_trip_is_byte_exact_for_every_interop_frame() {
    for f in interop_frames() {
        let json = run_ok(&["dump", "--with-data", f.path.to_str().unwrap()], b"");
        let bytes = run_ok(&["encode"], &json);
        assert!(bytes == f.bytes, "{}: re-encoded bytes differ", f.name);
    }
}

#[test]
fn encode_writes_to_the_output_file() {
    let f = interop("sdr");
    let dir = tempdir("encode_out");
    let json_path = dir.join("sdr.jsonl");
    let out_path = dir.join("sdr.mfb");
    fs::write(
        &json_path,
        run_ok(&["dump", "--with-data", f.path.to_str().unwrap()], b""),
    )
    .unwrap();
    let stdout = run_ok(
        &[
            "encode",
            json_path.to_str().unwrap(),
            "-o",
            out_path.to_str().unwrap(),
        ],
        b"",
    );
    assert!(stdout.is_empty());
    assert_eq!(fs::read(&out_path).unwrap(), f.bytes);
}

/// Several interop frames back to back.
fn stream(names: &[&str]) -> (Vec<u8>, Vec<Interop>) {
    let frames: Vec<Interop> = names.iter().map(|n| interop(n)).collect();
    let bytes = frames.iter().flat_map(|f| f.bytes.clone()).collect();
    (bytes, frames)
}

#[test]
fn a_stream_of_several_frames() {
    let (bytes, frames) = stream(&["basic", "sdr", "empty", "doubles", "strings", "basic"]);
    let dir = tempdir("stream");
    let path = dir.join("stream.mfb");
    fs::write(&path, &bytes).unwrap();
    let path = path.to_str().unwrap();

    let dumped = json_lines(&run_ok(&["dump", path], b""));
    assert_eq!(dumped.len(), frames.len());
    for (d, f) in dumped.iter().zip(&frames) {
        let single = json_lines(&run_ok(&["dump", f.path.to_str().unwrap()], b""));
        assert_eq!(*d, single[0], "{}", f.name);
    }

    let headers = json_lines(&run_ok(&["header", path], b""));
    let expected: Vec<Value> = frames.iter().map(|f| expected_header(&f.json)).collect();
    assert_eq!(headers, expected);
    assert_eq!(
        json_lines(&run_ok(&["header", "--first", path], b"")),
        expected[..1]
    );

    let msg = String::from_utf8(run_ok(&["validate", path], b"")).unwrap();
    assert_eq!(
        msg,
        format!("{path}: 6 valid frames, {} bytes\n", bytes.len())
    );

    let json = run_ok(&["dump", "--with-data", path], b"");
    assert!(run_ok(&["encode"], &json) == bytes, "stream round trip");

    let pretty = String::from_utf8(run_ok(&["dump", "--pretty", path], b"")).unwrap();
    for i in 0..frames.len() {
        assert!(
            pretty.contains(&format!("frame {i}: timestamp ")),
            "{pretty}"
        );
    }
}

#[test]
fn stdin_input_with_dash_or_no_file() {
    let f = interop("all_types");
    let from_file = run_ok(&["dump", f.path.to_str().unwrap()], b"");
    assert_eq!(run_ok(&["dump", "-"], &f.bytes), from_file);
    assert_eq!(run_ok(&["dump"], &f.bytes), from_file);
    assert_eq!(
        json_lines(&run_ok(&["header"], &f.bytes)),
        [expected_header(&f.json)]
    );
    mframe()
        .arg("validate")
        .write_stdin(f.bytes.clone())
        .assert()
        .success()
        .stdout(format!("<stdin>: 1 valid frame, {} bytes\n", f.bytes.len()));
    let json = run_ok(&["dump", "--with-data", "-"], &f.bytes);
    assert!(run_ok(&["encode", "-"], &json) == f.bytes);
}

#[test]
fn pretty_view_of_sdr() {
    let f = interop("sdr");
    mframe()
        .args(["dump", "--pretty", f.path.to_str().unwrap()])
        .assert()
        .success()
        .stdout(
            "frame 0: timestamp 1700000000000 (2023-11-14T22:13:20.000Z), counter 3, source 10, \
             target 20, message_id 1002, message_type 2, version 1, flags 0x0000\n\
             \x20 sdr_1.tx_gain = 10.0\n\
             \x20 sdr_1.sample_rate = 2000000.0\n\
             \x20 sdr_2.rx_gain = 25.0\n\
             \x20 sdr_2.center_freq = 433000000.0\n\
             \x20 core.firmware = \"v1.3.5\"\n\
             \x20 channel_1.status_ok = true\n\
             \x20 attachment raw_iq: 4096 bytes  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f …\n\
             \n",
        );
}

#[test]
fn pretty_groups_parameters_by_device() {
    let mut frame = Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 1, 0));
    frame.add("a", "x", 1);
    frame.add("b", "y", 2.5);
    frame.add("a", "z", "s\u{1}");
    frame.add(
        "b",
        "w",
        ValueRef::Unknown(UnknownValue::new(50, &[0xc0]).unwrap()),
    );
    let out = String::from_utf8(run_ok(&["dump", "--pretty"], &frame.encode().unwrap())).unwrap();
    let body: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        body,
        [
            "  a.x = 1",
            "  a.z = \"s\\u0001\"",
            "  b.y = 2.5",
            "  b.w = <unknown tag 50, 1 byte: c0>",
            ""
        ]
    );
}

/// Keys print as the library's `KeyDisplay` does (the form of error
/// messages and the viewer): `device.param`, a part quoted as a JSON
/// string when it is empty or holds a dot, a quote or a control character.
#[test]
fn pretty_prints_keys_in_the_one_human_form() {
    let mut frame = Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 1, 0));
    frame.add("items.10", "price", 2);
    frame.add("gps", "fix.lat", 3);
    frame.add("", "no_device", 4);
    frame.add("core", "a\u{1f}b", 5);
    let out = String::from_utf8(run_ok(&["dump", "--pretty"], &frame.encode().unwrap())).unwrap();
    let body: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(
        body,
        [
            r#"  "items.10".price = 2"#,
            r#"  gps."fix.lat" = 3"#,
            r#"  "".no_device = 4"#,
            r#"  core."a\u001fb" = 5"#,
            ""
        ]
    );
    for (device, param) in [
        ("items.10", "price"),
        ("gps", "fix.lat"),
        ("", "no_device"),
        ("core", "a\u{1f}b"),
    ] {
        assert!(out.contains(&messageframe::KeyDisplay::new(device, param).to_string()));
    }
}

#[test]
fn unknown_tags_dump_as_raw_and_encode_back() {
    let mut frame = Frame::new(Header::from_fields(1, 2, 3, 4, -5, 6, 7, 8));
    let raw = [0x92, 0x01, 0xa2, b'h', b'i'];
    frame.add(
        "future",
        "thing",
        ValueRef::Unknown(UnknownValue::new(50, &raw).unwrap()),
    );
    frame.add(
        "future",
        "unset",
        ValueRef::Unknown(UnknownValue::new(0, &[0xc0]).unwrap()),
    );
    frame.add("d", "neg_zero", -0.0);
    frame.add("d", "ctl", "line\nbreak\u{1f}\"quoted\"");
    frame.add("", "no_device", true);
    frame.add_attachment("empty", Vec::new());
    let bytes = frame.encode().unwrap();

    let lines = json_lines(&run_ok(&["dump"], &bytes));
    let p = &lines[0]["params"];
    assert_eq!(
        p[0],
        serde_json::json!({"device":"future","param":"thing","type":"unknown","tag":50,
                           "raw": BASE64.encode(raw)})
    );
    assert_eq!(p[1]["raw"], "wA==");
    assert!(p[2]["value"].as_f64().unwrap().is_sign_negative());
    assert_eq!(lines[0]["header"]["message_id"], -5);

    let json = run_ok(&["dump", "--with-data"], &bytes);
    assert!(run_ok(&["encode"], &json) == bytes);
}

#[test]
fn unknown_tags_in_the_whole_messagepack_integer_range_dump_exactly() {
    // Issue 10's frame: tag 2^63 (uint64), value nil. Dump prints the exact
    // integer (not a float, not an error), and encode writes the same bytes.
    let bytes = hex_bytes("9398000000000000000081a3641f7892cf8000000000000000c090");
    let lines = json_lines(&run_ok(&["dump"], &bytes));
    let dumped = String::from_utf8(run_ok(&["dump"], &bytes)).unwrap();
    assert!(
        dumped.contains(r#""tag":9223372036854775808,"raw":"wA==""#),
        "{dumped}"
    );
    assert_eq!(lines[0]["params"][0]["tag"].as_u64(), Some(1 << 63));
    assert!(run_ok(&["encode"], dumped.as_bytes()) == bytes);

    // Both ends of the range, and the same through --pretty.
    let mut frame = Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 1, 0));
    for (p, tag) in [("max", i128::from(u64::MAX)), ("min", i128::from(i64::MIN))] {
        frame.add(
            "d",
            p,
            ValueRef::Unknown(UnknownValue::new(tag, &[0xc0]).unwrap()),
        );
    }
    let bytes = frame.encode().unwrap();
    let dumped = String::from_utf8(run_ok(&["dump"], &bytes)).unwrap();
    assert!(
        dumped.contains(r#""tag":18446744073709551615,"#),
        "{dumped}"
    );
    assert!(
        dumped.contains(r#""tag":-9223372036854775808,"#),
        "{dumped}"
    );
    assert!(run_ok(&["encode"], dumped.as_bytes()) == bytes);
    let pretty = String::from_utf8(run_ok(&["dump", "--pretty"], &bytes)).unwrap();
    assert!(
        pretty.contains("d.max = <unknown tag 18446744073709551615, 1 byte: c0>"),
        "{pretty}"
    );

    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"unknown","tag":18446744073709551616,"raw":"wA=="}]}"#,
        &["params[0].tag"],
    );
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn encode_fills_missing_header_fields_with_the_library_defaults() {
    let before = messageframe::now_millis();
    let bytes = run_ok(
        &["encode"],
        b"{}\n\n{\"header\":{\"source\":5,\"timestamp\":7}}\n",
    );
    let after = messageframe::now_millis();
    // The first frame's length, from its header (`Frame::default()` has
    // timestamp 0, a shorter encoding than the current time's).
    let (_, first_len) = Header::peek_frame(&bytes).unwrap();
    let first = FrameView::new(&bytes[..first_len]).unwrap();
    let h = first.header();
    assert!(
        (before..=after).contains(&h.timestamp()),
        "timestamp defaults to now"
    );
    assert_eq!(
        (
            h.counter(),
            h.source(),
            h.target(),
            h.message_id(),
            h.message_type(),
            h.version(),
            h.flags()
        ),
        (0, 0, 0, 0, 0, 1, 0)
    );
    let rest = &bytes[first.encoded_len()..];
    assert_eq!(
        *FrameView::new(rest).unwrap().header(),
        Header::from_fields(7, 0, 5, 0, 0, 0, 1, 0)
    );
}

#[test]
fn encode_of_empty_input_writes_nothing() {
    assert!(run_ok(&["encode"], b"").is_empty());
    assert!(run_ok(&["encode"], b"\n  \n").is_empty());
}

/// `mframe encode` on `input` fails with exit 1 and a message containing
/// each of `needles`; stdout holds exactly the frames of the lines before
/// the bad one (encode streams).
fn encode_fails(input: &str, needles: &[&str]) {
    let out = mframe().arg("encode").write_stdin(input).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{input}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("mframe: <stdin>: "), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{input}: {stderr:?} lacks {n:?}");
    }
    let bad_line: usize = stderr["mframe: <stdin>: line ".len()..]
        .split(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no line number in {stderr}"));
    let good_lines = input
        .split('\n')
        .take(bad_line - 1)
        .filter(|l| !l.trim().is_empty())
        .count();
    let frames: Vec<Frame> = FrameReader::new(&out.stdout[..])
        .collect::<Result<_, _>>()
        .expect("whole frames on stdout");
    assert_eq!(
        frames.len(),
        good_lines,
        "{input}: the frames before line {bad_line}"
    );
}

#[test]
fn encode_help_names_the_schema_and_the_docs() {
    let help = String::from_utf8(run_ok(&["encode", "--help"], b"")).unwrap();
    for needle in [
        r#""header": {"timestamp": u64"#,
        r#""type": "int64" | "double" | "string" | "bool""#,
        r#""attachments": [{"name": str, "data": "<base64>"}]"#,
        "docs/cli.md",
    ] {
        assert!(help.contains(needle), "{needle:?} is not in:\n{help}");
    }
}

/// `producer | mframe encode | consumer` streams: each line's frame comes
/// out (flushed) while the next line has not been written yet, with its
/// timestamp taken when its line was read.
#[test]
fn encode_writes_each_frame_as_its_line_arrives() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mframe"))
        .arg("encode")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for frame in FrameReader::new(stdout) {
            if tx.send(frame).is_err() {
                return;
            }
        }
    });
    let deadline = std::time::Duration::from_secs(30);
    let line = |n: i64| {
        format!("{{\"params\":[{{\"device\":\"d\",\"param\":\"n\",\"type\":\"int64\",\"value\":{n}}}]}}\n")
    };

    let before = messageframe::now_millis();
    stdin.write_all(line(1).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let first = rx
        .recv_timeout(deadline)
        .expect("frame 1 comes out before line 2 is written")
        .unwrap();
    assert_eq!(first.find("d", "n"), Some(ValueRef::Int(1)));
    let between = messageframe::now_millis();
    stdin.write_all(line(2).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let second = rx.recv_timeout(deadline).expect("frame 2").unwrap();
    assert_eq!(second.find("d", "n"), Some(ValueRef::Int(2)));
    // Each timestamp is the moment its line was read, not the end of input.
    assert!((before..=between).contains(&first.header().timestamp()));
    assert!(second.header().timestamp() >= between);

    drop(stdin);
    assert!(rx.recv_timeout(deadline).is_err(), "nothing more");
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
}

#[test]
fn encode_rejects_bad_lines_naming_the_line_and_the_problem() {
    let good = r#"{"params":[{"device":"d","param":"p","type":"int64","value":1}]}"#;
    encode_fails(
        &format!("{good}\n{{\"header\":"),
        &["line 2:", "invalid JSON at column"],
    );
    encode_fails(
        "[1,2]",
        &[
            "line 1:",
            "the frame: expected a JSON object, found an array",
        ],
    );
    encode_fails(
        &format!("{good}\n\n{}", r#"{"header":{"source":4294967296}}"#),
        &[
            "line 3:",
            "header.source: integer 4294967296 out of range 0..=4294967295",
        ],
    );
    encode_fails(
        r#"{"header":{"version":-1}}"#,
        &["header.version: integer -1 out of range 0..=65535"],
    );
    encode_fails(
        r#"{"header":{"counter":1.5}}"#,
        &["header.counter: expected an integer", "found 1.5"],
    );
    encode_fails(
        r#"{"header":{"flags":"1"}}"#,
        &[
            "header.flags: expected an integer",
            "found the string \"1\"",
        ],
    );
    encode_fails(
        r#"{"header":{"msg_id":1}}"#,
        &["header: unknown field \"msg_id\""],
    );
    encode_fails(
        r#"{"parameters":[]}"#,
        &["the frame: unknown field \"parameters\""],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"int64","value":9223372036854775808}]}"#,
        &["params[0].value: integer 9223372036854775808 out of range"],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"int64","value":"7"}]}"#,
        &["params[0].value: expected an integer"],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"double","value":"fast"}]}"#,
        &["params[0].value: expected a number or \"NaN\""],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"bool","value":1}]}"#,
        &["params[0].value: expected true or false, found 1"],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"string","value":null}]}"#,
        &["params[0].value: expected a string, found null"],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"float","value":1.0}]}"#,
        &["params[0].type: unknown type \"float\""],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"int64"}]}"#,
        &["params[0]: missing field \"value\""],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"int64","value":1,"tag":3}]}"#,
        &["params[0]: unknown field \"tag\""],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"unknown","tag":50,"raw":"!!"}]}"#,
        &["params[0].raw: invalid base64"],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"unknown","tag":50,"raw":"kgE="}]}"#,
        &["params[0].raw: the bytes are not exactly one MessagePack value"],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"unknown","tag":50,"raw":""}]}"#,
        &["params[0].raw: the bytes are not exactly one MessagePack value"],
    );
    encode_fails(
        r#"{"params":[{"device":"d","param":"p","type":"unknown","tag":20,"raw":"AQ=="}]}"#,
        &["params[0].tag: 20 is the tag of a known type"],
    );
    encode_fails(
        &format!(
            "{{\"params\":[{},{}]}}",
            &good[11..good.len() - 2],
            &good[11..good.len() - 2]
        ),
        &["params[1]: duplicate key `d.p`"],
    );
    encode_fails(
        r#"{"params":[{"device":"a\u001fb","param":"p","type":"bool","value":true}]}"#,
        &["params[0].device: \"a\\u{1f}b\" contains the key separator U+001F"],
    );
    encode_fails(
        r#"{"attachments":[{"name":"iq","len":3}]}"#,
        &["attachments[0]: missing field \"data\" (dump with --with-data"],
    );
    encode_fails(
        r#"{"attachments":[{"name":"iq","data":"AAE=","len":3}]}"#,
        &["attachments[0].len: 3 does not match the 2 bytes of \"data\""],
    );
    encode_fails(
        r#"{"attachments":[{"name":"iq","data":"A=AE"}]}"#,
        &["attachments[0].data: invalid base64"],
    );
    encode_fails("{\"header\":{}}\n\u{ff}", &["line 2:", "invalid JSON"]);
}

#[test]
fn encode_leaves_no_partial_output_file() {
    let dir = tempdir("partial");
    let out = dir.join("out.mfb");
    mframe()
        .args(["encode", "-o", out.to_str().unwrap()])
        .write_stdin("{}\n{\"header\":5}\n")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "line 2: header: expected a JSON object, found 5",
        ));
    assert!(!out.exists());

    // An existing OUT is left as it was, and no temporary file stays.
    fs::write(&out, b"before").unwrap();
    mframe()
        .args(["encode", "-o", out.to_str().unwrap()])
        .write_stdin("{}\nnot json\n")
        .assert()
        .code(1);
    assert_eq!(fs::read(&out).unwrap(), b"before");
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["out.mfb"]);

    // A good input replaces it, keeping its permissions.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&out, fs::Permissions::from_mode(0o640)).unwrap();
        mframe()
            .args(["encode", "-o", out.to_str().unwrap()])
            .write_stdin("{\"header\":{\"timestamp\":1}}\n")
            .assert()
            .success();
        assert_eq!(
            fs::read(&out).unwrap(),
            Frame::new(Header::from_fields(1, 0, 0, 0, 0, 0, 1, 0))
                .encode()
                .unwrap()
        );
        assert_eq!(
            fs::metadata(&out).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }
}

/// `mframe ARGS` on `stdin` fails with exit 1 and a one-line message
/// containing each of `needles`; returns stdout.
fn fails(args: &[&str], stdin: &[u8], needles: &[&str]) -> String {
    let out = mframe().args(args).write_stdin(stdin).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: {stderr:?} lacks {n:?}");
    }
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn truncated_input() {
    let f = interop("sdr");
    let cut = &f.bytes[..2000];
    // The attachment's data (the frame's last element: 4,096 bytes, bin16:
    // marker and 2 length bytes) is what is cut: the message says so, where
    // it starts, what it needs and has.
    let data_len = f.json["attachments"][0]["len"].as_u64().unwrap() as usize;
    assert_eq!(data_len, 4096);
    let data_at = f.bytes.len() - data_len - 3;
    let message = format!(
        "mframe: <stdin>: frame 0 (starts at byte 0): input is truncated: binary data at byte \
         {data_at} needs {} bytes, only {} are left (in attachment #0)\n",
        data_len + 3,
        2000 - data_at
    );
    for cmd in ["dump", "validate"] {
        let stdout = fails(&[cmd], cut, &[&message]);
        assert!(stdout.is_empty());
    }
    // header reads the header (intact), then cannot find the frame's end:
    // the same message, about the same element.
    let stdout = fails(&["header"], cut, &[&message]);
    assert_eq!(json_lines(stdout.as_bytes()), [expected_header(&f.json)]);
    // --first never looks past the header.
    assert_eq!(
        json_lines(&run_ok(&["header", "--first"], cut)),
        [expected_header(&f.json)]
    );
    // Cut inside the header.
    fails(
        &["header"],
        &f.bytes[..5],
        &[
            "frame 0 (starts at byte 0): input is truncated: an integer at byte 2 needs 9 bytes, \
           only 3 are left (in header field `timestamp`)\n",
        ],
    );
}

#[test]
fn truncated_frame_in_a_stream_names_its_index_and_stream_offset() {
    let (mut bytes, frames) = stream(&["basic", "all_types", "sdr"]);
    bytes.truncate(bytes.len() - 10);
    let start = frames[0].bytes.len() + frames[1].bytes.len();
    let needle = format!("frame 2 (starts at byte {start}): input is truncated: ");
    let stdout = fails(&["dump"], &bytes, &[&needle]);
    assert_eq!(
        json_lines(stdout.as_bytes()).len(),
        2,
        "frames before the error are dumped"
    );
    let stdout = fails(&["validate"], &bytes, &[&needle]);
    assert!(stdout.is_empty());
    let stdout = fails(&["header"], &bytes, &[&needle, "(in attachment #0)\n"]);
    assert_eq!(json_lines(stdout.as_bytes()).len(), 3);
}

#[test]
fn trailing_garbage_after_a_frame_is_the_next_frame_and_invalid() {
    let f = interop("basic");
    let mut bytes = f.bytes.clone();
    bytes.extend_from_slice(b"hello");
    let at = f.bytes.len();
    fails(
        &["validate"],
        &bytes,
        &[&format!("frame 1 (starts at byte {at}): expected an array, found marker 0x68 at byte {at} (in frame)")],
    );
}

#[test]
fn garbage_input() {
    for cmd in ["dump", "header", "validate"] {
        fails(
            &[cmd],
            b"\x00garbage",
            &["mframe: <stdin>: frame 0 (starts at byte 0): expected an array, found marker 0x00 at byte 0"],
        );
    }
    fails(
        &["dump"],
        b"{\"json\": true}\n",
        &["found marker 0x7b at byte 0"],
    );
}

#[test]
fn empty_input() {
    let dir = tempdir("empty");
    let path = dir.join("empty.mfb");
    fs::write(&path, b"").unwrap();
    for cmd in ["dump", "header", "validate"] {
        let out = fails(
            &[cmd, path.to_str().unwrap()],
            b"",
            &[&format!(
                "mframe: {}: frame 0 (starts at byte 0): input is empty: no frame at byte 0\n",
                path.display()
            )],
        );
        assert!(out.is_empty());
        // The library's wording (`Frame::decode(&[])` says the same).
        let library = messageframe::Frame::decode(&[]).unwrap_err().to_string();
        assert_eq!(library, "input is empty: no frame at byte 0");
        fails(
            &[cmd],
            b"",
            &[&format!(
                "mframe: <stdin>: frame 0 (starts at byte 0): {library}\n"
            )],
        );
    }
}

#[test]
fn header_does_not_decode_parameters() {
    // A string under tag 10: structurally fine MessagePack, invalid frame.
    let mut frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    frame.add("d", "p", "xx");
    let mut bytes = frame.encode().unwrap();
    let tag_at = bytes.iter().position(|&b| b == 30).unwrap();
    bytes[tag_at] = 10;
    fails(
        &["validate"],
        &bytes,
        &[
            "expected an integer, found marker 0xa2",
            "(in value of `d.p`)",
        ],
    );
    fails(&["dump"], &bytes, &["frame 0"]);
    let headers = json_lines(&run_ok(&["header"], &bytes));
    assert_eq!(headers[0]["flags"], 8);
}

/// A frame with the key `d␟a` twice: encode `d␟a`, `d␟b`, rename the second.
fn frame_with_duplicate_keys() -> Vec<u8> {
    let mut frame = Frame::new(Header::from_fields(1, 0, 0, 0, 0, 0, 1, 0));
    frame.add("d", "a", 1);
    frame.add("d", "b", 2);
    let mut bytes = frame.encode().unwrap();
    let b_at = bytes.iter().rposition(|&b| b == b'b').unwrap();
    bytes[b_at] = b'a';
    bytes
}

#[test]
fn duplicate_keys_are_valid_unless_strict() {
    let bytes = frame_with_duplicate_keys();
    run_ok(&["validate"], &bytes);
    fails(
        &["validate", "--strict"],
        &bytes,
        &["frame 0 (starts at byte 0): duplicate key at byte"],
    );
    let dump = json_lines(&run_ok(&["dump"], &bytes));
    assert_eq!(dump[0]["params"].as_array().unwrap().len(), 2);
    // The library cannot build such a frame, so encode refuses it.
    let json = run_ok(&["dump", "--with-data"], &bytes);
    encode_fails(
        std::str::from_utf8(&json).unwrap(),
        &["params[1]: duplicate key"],
    );
}

#[test]
fn unreadable_file_is_bad_input() {
    let dir = tempdir("missing");
    let path = dir.join("nope.mfb");
    for cmd in ["dump", "header", "validate", "encode"] {
        fails(
            &[cmd, path.to_str().unwrap()],
            b"",
            &[&format!("mframe: cannot read {}: ", path.display())],
        );
    }
    fails(
        &["dump", dir.to_str().unwrap()],
        b"",
        &["mframe: cannot read "],
    );
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &[][..],
        &["frobnicate"],
        &["dump", "--bogus"],
        &["dump", "--pretty", "--with-data"],
        &["dump", "a", "b"],
        &["encode", "-o"],
    ] {
        mframe()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("panicked").not());
    }
    mframe()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("dump"));
    mframe().arg("--version").assert().success();
}

#[test]
fn never_panics_on_damaged_frames() {
    // Every prefix, and every byte of a frame set to a few telling values:
    // each command exits 0 or 1 with at most one line on stderr.
    let f = interop("all_types");
    let mut inputs: Vec<Vec<u8>> = (0..f.bytes.len()).map(|n| f.bytes[..n].to_vec()).collect();
    for i in (0..f.bytes.len()).step_by(3) {
        for v in [0x00, 0x7f, 0xc1, 0xdd, 0xff] {
            let mut b = f.bytes.clone();
            b[i] = v;
            inputs.push(b);
        }
    }
    for input in &inputs {
        for cmd in ["dump", "header", "validate"] {
            let out = mframe()
                .arg(cmd)
                .write_stdin(input.clone())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(matches!(out.status.code(), Some(0 | 1)), "{cmd}: {stderr}");
            assert!(
                stderr.lines().count() <= 1 && !stderr.contains("panicked"),
                "{stderr}"
            );
        }
    }
}

#[test]
fn broken_pipe_is_not_an_error() {
    // Far more than a pipe buffer: the reader leaves after one line.
    let sdr = interop("strings");
    let dir = tempdir("pipe");
    let path = dir.join("big.mfb");
    fs::write(&path, sdr.bytes.repeat(50)).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mframe"))
        .args(["dump", "--with-data", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("{\"header\":"));
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(stderr.is_empty(), "{stderr}");
    assert!(status.success(), "{status}");
}

/// A fresh directory under the build's target directory, unique per test.
fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mframe-cli-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

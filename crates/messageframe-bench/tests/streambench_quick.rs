//! Runs `streambench --quick` end to end: every row of every scenario
//! runs (each receiver checks what it reads back), and the report has its
//! tables and the three target lines. Speed is not judged here.

use std::process::Command;

#[test]
fn quick_run_reports_every_row_and_target() {
    let out = Command::new(env!("CARGO_BIN_EXE_streambench"))
        .args(["--quick", "--passes", "1"])
        .output()
        .expect("streambench runs");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for scenario in [
        "Small frame (4 params)",
        "Medium frame (32 params)",
        "Large frame (1,024 params)",
        "1 MiB attachment (4 params)",
    ] {
        for row in [
            "raw bytes (limit)",
            "messageframe codec (FramedWrite)",
            "messageframe FrameSink",
            "prost + LengthDelimitedCodec",
            "serde_json + LinesCodec",
        ] {
            assert!(
                stdout.contains(&format!("| {scenario} | {row} |")),
                "{scenario} / {row} missing:\n{stdout}"
            );
        }
    }
    for row in ["byte-forwarding proxy", "mframe relay"] {
        assert!(stdout.contains(&format!("| Medium frame (32 params) | {row} |")));
    }
    for target in [
        "- 1 MiB frame, FrameSink → FrameCodec ÷ raw-bytes limit: ",
        "- 1 MiB frame, FramedWrite → FrameCodec ÷ raw-bytes limit: ",
        "- 32 params, codec ÷ prost frames/s: ",
        "- 32 params, relay ÷ raw proxy frames/s: ",
    ] {
        assert!(stdout.contains(target), "{target} missing:\n{stdout}");
    }
    // The unknown-scenario path is a usage error.
    let bad = Command::new(env!("CARGO_BIN_EXE_streambench"))
        .args(["--scenario", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

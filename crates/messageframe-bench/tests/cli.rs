//! The `crossbench` binary refuses bad output paths before it measures
//! anything, and its `report` command checks and regenerates the docs.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn crossbench(args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_crossbench"))
        .args(args)
        .output()
        .expect("runs");
    (out, t.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_output_paths_are_refused_before_running() {
    let dir = std::env::temp_dir().join(format!("crossbench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("no/such/dir/run.json");
    let png = dir.join("chart.png");
    let missing_svg = missing.with_extension("svg");
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["--json", missing.to_str().unwrap()], "no directory"),
        (vec!["--plot", png.to_str().unwrap()], ".svg"),
        (vec!["--json", dir.to_str().unwrap()], "is a directory"),
        (vec!["--scenario", "nope"], "valid: small"),
        (
            vec!["--plot", missing_svg.to_str().unwrap()],
            "no directory",
        ),
    ];
    for (args, needle) in cases {
        let (out, took) = crossbench(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}: nothing measured");
        assert!(took < Duration::from_secs(20), "{args:?} took {took:?}");
    }
    assert!(!png.exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_checks_the_committed_docs_and_reports_unreadable_runs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let json = root.join("docs/crossbench.json");
    let (out, _) = crossbench(&[
        "report",
        json.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--check",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (out, _) = crossbench(&["report", "/no/such/run.json", "--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

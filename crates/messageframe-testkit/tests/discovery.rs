//! `scripts/test` and the test kit look for nats-server and chromium in the
//! same order: the script (`--print-discovery`) and
//! `messageframe_testkit::discover` are run on the same fake machine (a
//! temporary root for the usual places, fake programs on a given `PATH`),
//! step by step, and must name the same binaries.
#![cfg(unix)]

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use messageframe_testkit::discover::{Program, CHROMIUM, NATS_SERVER};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test")
}

/// A fake program at `root/rel`.
fn fake(root: &Path, rel: &str) -> PathBuf {
    let path = root.join(rel.trim_start_matches('/'));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// What the script prints for each program ("missing" as `None`), and
/// whether it exited 0. Nothing from this machine's environment: only
/// `PATH`, the root and the given variables.
fn script_finds(
    path: &OsStr,
    root: &Path,
    vars: &[(&str, &str)],
) -> (Option<String>, Option<String>, bool) {
    let out = Command::new("/bin/bash")
        .arg(script())
        .arg("--print-discovery")
        .env_clear()
        .env("PATH", path)
        .env("MESSAGEFRAME_DISCOVERY_ROOT", root)
        .envs(vars.iter().copied())
        .output()
        .expect("run scripts/test --print-discovery");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |prefix: &str| {
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| {
                panic!(
                    "no `{prefix}` line in {text:?}; stderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        (value != "missing").then(|| value.to_owned())
    };
    (
        line("nats-server: "),
        line("chromium: "),
        out.status.success(),
    )
}

fn rust_finds(
    program: &Program,
    path: &OsStr,
    root: &Path,
    vars: &[(&str, &str)],
) -> Option<String> {
    let env = vars
        .iter()
        .find(|(k, _)| *k == program.env)
        .map(|(_, v)| OsStr::new(*v));
    program
        .find_in(env, Some(path), root)
        .map(|p| p.to_str().unwrap().to_owned())
}

/// Both searches on the current fake machine: they agree, and give
/// `expected` (paths relative to `root`, or absolute when they start
/// with `=`).
fn check(
    path: &OsStr,
    root: &Path,
    vars: &[(&str, &str)],
    nats: Option<&str>,
    chromium: Option<&str>,
) {
    let full = |e: Option<&str>| {
        e.map(|e| match e.strip_prefix('=') {
            Some(absolute) => absolute.to_owned(),
            None => root
                .join(e.trim_start_matches('/'))
                .to_str()
                .unwrap()
                .to_owned(),
        })
    };
    let (script_nats, script_chromium, ok) = script_finds(path, root, vars);
    assert_eq!(script_nats, full(nats), "the script's nats-server");
    assert_eq!(script_chromium, full(chromium), "the script's chromium");
    assert_eq!(
        rust_finds(&NATS_SERVER, path, root, vars),
        full(nats),
        "the kit's nats-server"
    );
    assert_eq!(
        rust_finds(&CHROMIUM, path, root, vars),
        full(chromium),
        "the kit's chromium"
    );
    assert_eq!(ok, nats.is_some() && chromium.is_some(), "exit status");
}

#[test]
fn the_script_and_the_kit_find_the_same_programs_in_the_same_order() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let (first, second) = (root.join("home/me/bin"), root.join("opt/bin"));
    std::fs::create_dir_all(&first).unwrap();
    std::fs::create_dir_all(&second).unwrap();
    let path = std::env::join_paths([&first, &second]).unwrap();
    let path = path.as_os_str();

    check(path, root, &[], None, None);

    // Debian's nats-server, off a normal user's PATH.
    fake(root, "/usr/local/sbin/nats-server");
    check(path, root, &[], Some("/usr/local/sbin/nats-server"), None);
    fake(root, "/usr/sbin/nats-server");
    check(path, root, &[], Some("/usr/sbin/nats-server"), None);

    // A file that cannot run is not a chromium.
    let plain = root.join("snap/bin/chromium");
    std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
    std::fs::write(&plain, "").unwrap();
    check(path, root, &[], Some("/usr/sbin/nats-server"), None);
    fake(root, "/opt/google/chrome/chrome");
    check(
        path,
        root,
        &[],
        Some("/usr/sbin/nats-server"),
        Some("/opt/google/chrome/chrome"),
    );
    fake(root, "/usr/lib/chromium/chromium");
    check(
        path,
        root,
        &[],
        Some("/usr/sbin/nats-server"),
        Some("/usr/lib/chromium/chromium"),
    );

    // Names on PATH beat the usual places; an earlier name beats a later
    // one; an earlier directory beats a later one.
    fake(&second, "chromium-browser");
    check(
        path,
        root,
        &[],
        Some("/usr/sbin/nats-server"),
        Some("opt/bin/chromium-browser"),
    );
    fake(&second, "chromium");
    check(
        path,
        root,
        &[],
        Some("/usr/sbin/nats-server"),
        Some("opt/bin/chromium"),
    );
    fake(&first, "chromium");
    fake(&second, "nats-server");
    check(
        path,
        root,
        &[],
        Some("opt/bin/nats-server"),
        Some("home/me/bin/chromium"),
    );

    // The variables win, as given.
    let vars = [
        ("NATS_SERVER", "/elsewhere/nats"),
        ("CHROMIUM", "/elsewhere/chrome"),
    ];
    check(
        path,
        root,
        &vars,
        Some("=/elsewhere/nats"),
        Some("=/elsewhere/chrome"),
    );
}

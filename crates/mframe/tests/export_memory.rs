//! A long recording does not grow `mframe export`'s memory: 10 million
//! parameters go through a pipe into a Parquet long table, and the peak
//! resident set of the process (`VmHWM` in /proc/PID/status, read until it
//! exits) stays under a bound far below what the rows take in memory.
//!
//! Its own test binary, so that no other test's processes run beside it
//! and its timing is its own. Bounded in time (3 × support::WAIT). It
//! takes about 40 s in a debug build on two cores: the arrow and parquet
//! crates unoptimised are most of it. Building them optimised in debug
//! builds (a `[profile.dev.package]` override) made it 20 s but added
//! about 290 s to a clean `cargo build -p mframe`, which CI pays on every
//! run.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use messageframe::{Frame, Header};

/// Frames and parameters per frame: 10,000 × 1,000 = 10 million rows.
const FRAMES: u64 = 10_000;
const PARAMS: usize = 1_000;

/// The bound on the peak resident set (74 MiB measured in a debug build).
/// The
/// rows alone are about 50 bytes each in Arrow's columns (500 MB for 10
/// million); what export holds is bounded by counts: the queue from the
/// reading thread (64 MiB at most), a batch of 65,536 rows being built,
/// two on their way to the Parquet thread, and one row group of 1,048,576
/// rows (the default) encoded.
const BOUND_MIB: u64 = 128;

/// The peak resident set of `pid` so far, in KiB (`None` once it is gone).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[test]
fn ten_million_parameters_to_parquet_in_bounded_memory() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("export-memory");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("long.parquet");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mframe"))
        .args(["export", "-", "-o", out.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    // The frames are made and written on a thread while this one watches
    // the peak.
    let writer = std::thread::spawn(move || {
        let names: Vec<(String, String)> = (0..PARAMS)
            .map(|k| (format!("d{}", k % 8), format!("p{k}")))
            .collect();
        // Strings from a set made once: the generator (a debug build, like
        // the export it feeds) formats nothing per frame.
        let strings: Vec<String> = (0..4096).map(|n| format!("v{n}")).collect();
        let mut frame = Frame::new(Header::new(1, 2, 3, 4));
        let mut bytes = Vec::new();
        for i in 0..FRAMES {
            frame.clear();
            let header = frame.header_mut();
            header.set_timestamp(1_700_000_000_000 + i);
            header.set_counter(i);
            for (k, (device, param)) in names.iter().enumerate() {
                // Values that change with the frame: nothing repeats.
                match k % 4 {
                    0 => frame.add(device, param, (i * 1000 + k as u64) as f64 * 0.5),
                    1 => frame.add(device, param, (i * 1000 + k as u64) as i64),
                    2 => frame.add(device, param, (i + k as u64).is_multiple_of(3)),
                    _ => frame.add(device, param, strings[(i as usize * 7 + k) % 4096].as_str()),
                }
            }
            bytes.clear();
            frame.encode_into(&mut bytes).unwrap();
            stdin.write_all(&bytes).unwrap();
        }
    });
    let started = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < support::WAIT * 3,
            "the export took more than {:?}",
            support::WAIT * 3
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    writer.join().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "exported {FRAMES} frames ({} parameters)",
            FRAMES * PARAMS as u64
        )),
        "{stderr}"
    );
    let peak_mib = peak / 1024;
    eprintln!(
        "export of {} parameters to Parquet: peak RSS {peak_mib} MiB, {:.1} s, file {} MiB",
        FRAMES * PARAMS as u64,
        started.elapsed().as_secs_f64(),
        std::fs::metadata(&out).unwrap().len() >> 20
    );
    assert!(peak > 0, "VmHWM was never read");
    assert!(
        peak_mib < BOUND_MIB,
        "peak RSS {peak_mib} MiB, more than {BOUND_MIB} MiB"
    );
}

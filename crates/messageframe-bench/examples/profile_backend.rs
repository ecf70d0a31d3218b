//! Runs one backend's cycle of one scenario in a loop, for a profiler:
//!
//! ```text
//! cargo build --profile profiling -p messageframe-bench --example profile_backend
//! valgrind --tool=callgrind target/profiling/examples/profile_backend medium messageframe 2000
//! valgrind --tool=callgrind target/profiling/examples/profile_backend medium prost:fresh 2000
//! ```
//!
//! Instruction counts stay stable on a noisy machine where timings do not;
//! the difference between two iteration counts gives instructions per
//! message. `BACKEND` is a backend id (see `Format::id`), optionally with
//! `:fresh` for the fresh group (the reused group otherwise), or one of the
//! lookup modes, each of which
//! keeps the measured lookups in one function that is never inlined, so
//! that callgrind counts them alone (`--toggle-collect=<that function>`,
//! divided by the iteration count) within one process, with one hash seed:
//!
//! - `find-last`: repeated lookups of the last key of the scenario's frame
//!   (built once), the criterion `find_last` case (`lookup_loop`);
//! - `build-find`: each iteration clears a reused frame, adds every
//!   parameter, then looks the last key up once: the first lookup after
//!   building (`first_find`);
//! - `decode-find`: each iteration decodes the scenario's frame into a
//!   reused frame, then looks the last key up once: the first lookup after
//!   decoding (`first_find`);
//! - `decode-index`: each iteration decodes, then looks the last key up
//!   six times (`six_finds`): a decoded frame's first lookups scan, the
//!   fifth builds the index, the sixth uses it;
//! - `find-all`: a frame built once, then every key looked up once per
//!   iteration (`lookup_all`): the average lookup, less dependent on where
//!   one key's hash puts it than `find-last`.
//!
//! - `scan`: each iteration finds the end of the scenario's frame with a
//!   `FrameScanner` (what a relay or a `FrameReader` does per frame);
//! - `decode`: each iteration decodes it into a reused frame, nothing
//!   else (the scanner's counterpart: streambench compares their bytes/s).
//! - `scan-alternating`: the scanner on the scenario's frame and the same
//!   parameters reversed, alternately: a layout change every frame.
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*first_find*' \
//!     target/profiling/examples/profile_backend large build-find 2000
//! ```

use std::hint::black_box;

use messageframe::Frame;
use messageframe_bench::backends::{mf_fill, mf_value, Backend, Format, Group};
use messageframe_bench::scenario::{Inputs, SCENARIOS};
use messageframe_bench::with_backend;

fn drive<B: Backend>(mut b: B, inputs: &Inputs, iterations: u64) {
    for i in 0..iterations {
        b.add(inputs, i);
        b.serialize(inputs);
        black_box(b.deserialize(inputs));
    }
}

/// The last key of the scenario.
fn last(inputs: &Inputs) -> (&str, &str) {
    let n = inputs.len() - 1;
    (&inputs.devices[n], &inputs.params[n])
}

/// `n` lookups of one key in one frame.
#[inline(never)]
fn lookup_loop(frame: &Frame, device: &str, param: &str, n: u64) {
    for _ in 0..n {
        black_box(frame.find(black_box(device), black_box(param)));
    }
}

/// One lookup, the first since the frame was filled.
#[inline(never)]
fn first_find(frame: &Frame, device: &str, param: &str) {
    black_box(frame.find(black_box(device), black_box(param)));
}

/// Six lookups of one key, the first since the frame was filled.
#[inline(never)]
fn six_finds(frame: &Frame, device: &str, param: &str) {
    for _ in 0..6 {
        black_box(frame.find(black_box(device), black_box(param)));
    }
}

/// One lookup of every key.
#[inline(never)]
fn lookup_all(frame: &Frame, inputs: &Inputs) {
    for (d, p) in inputs.devices.iter().zip(&inputs.params) {
        black_box(frame.find(black_box(d), black_box(p)));
    }
}

fn decode_index(inputs: &Inputs, iterations: u64) {
    let mut frame = Frame::default();
    mf_fill(&mut frame, inputs);
    let bytes = frame.encode().expect("the frame encodes");
    let (d, p) = last(inputs);
    for _ in 0..iterations {
        frame.decode_from(black_box(&bytes)).expect("valid frame");
        six_finds(&frame, d, p);
    }
}

fn find_all(inputs: &Inputs, iterations: u64) {
    let mut frame = Frame::default();
    mf_fill(&mut frame, inputs);
    let (d, p) = last(inputs);
    black_box(frame.find(d, p));
    for _ in 0..iterations {
        lookup_all(&frame, inputs);
    }
}

fn find_last(inputs: &Inputs, iterations: u64) {
    let mut frame = Frame::default();
    for ((d, p), v) in inputs
        .devices
        .iter()
        .zip(&inputs.params)
        .zip(&inputs.values)
    {
        frame.add(d, p, mf_value(v));
    }
    let (d, p) = last(inputs);
    lookup_loop(&frame, d, p, iterations);
}

fn build_find(inputs: &Inputs, iterations: u64) {
    let mut frame = Frame::default();
    let (d, p) = last(inputs);
    for _ in 0..iterations {
        frame.clear();
        mf_fill(&mut frame, inputs);
        first_find(&frame, d, p);
    }
}

fn decode_find(inputs: &Inputs, iterations: u64) {
    let mut frame = Frame::default();
    mf_fill(&mut frame, inputs);
    let bytes = frame.encode().expect("the frame encodes");
    let (d, p) = last(inputs);
    for _ in 0..iterations {
        frame.decode_from(black_box(&bytes)).expect("valid frame");
        first_find(&frame, d, p);
    }
}

fn scenario_bytes(inputs: &Inputs) -> Vec<u8> {
    let mut frame = Frame::default();
    mf_fill(&mut frame, inputs);
    frame.encode().expect("the frame encodes")
}

fn scan(inputs: &Inputs, iterations: u64) {
    let bytes = scenario_bytes(inputs);
    let mut scanner = messageframe::FrameScanner::new();
    for _ in 0..iterations {
        let found = scanner.scan(black_box(&bytes)).expect("valid frame");
        let _ = black_box(found);
    }
}

/// The scanner on two layouts alternating: the scenario's frame and the
/// same parameters in reverse order (streambench's worst case for it).
fn scan_alternating(inputs: &Inputs, iterations: u64) {
    let bytes = scenario_bytes(inputs);
    let frame = Frame::decode(&bytes).expect("valid frame");
    let mut other = Frame::default();
    let params: Vec<_> = frame.iter().collect();
    for &(device, param, value) in params.iter().rev() {
        other.add(device, param, value);
    }
    let other = other.encode().expect("the frame encodes");
    let mut scanner = messageframe::FrameScanner::new();
    for i in 0..iterations {
        let b = if i % 2 == 0 { &bytes } else { &other };
        let found = scanner.scan(black_box(b)).expect("valid frame");
        let _ = black_box(found);
    }
}

fn decode_only(inputs: &Inputs, iterations: u64) {
    let bytes = scenario_bytes(inputs);
    let mut frame = Frame::default();
    for _ in 0..iterations {
        frame.decode_from(black_box(&bytes)).expect("valid frame");
        black_box(frame.len());
    }
}

fn lookup_mode(name: &str) -> Option<fn(&Inputs, u64)> {
    match name {
        "scan" => Some(scan),
        "scan-alternating" => Some(scan_alternating),
        "decode" => Some(decode_only),
        "find-last" => Some(find_last),
        "build-find" => Some(build_find),
        "decode-find" => Some(decode_find),
        "decode-index" => Some(decode_index),
        "find-all" => Some(find_all),
        _ => None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: profile_backend SCENARIO BACKEND[:fresh] ITERATIONS";
    let scenario = SCENARIOS
        .iter()
        .find(|s| Some(s.name) == args.get(1).map(String::as_str))
        .expect(usage);
    let iterations: u64 = args.get(3).and_then(|s| s.parse().ok()).expect(usage);
    let inputs = Inputs::new(scenario);
    let backend = args.get(2).expect(usage);
    if let Some(mode) = lookup_mode(backend) {
        mode(&inputs, iterations);
        return;
    }
    let (id, group) = match backend.strip_suffix(":fresh") {
        Some(id) => (id, Group::Fresh),
        None => (backend.as_str(), Group::Reused),
    };
    let format = Format::from_id(id).expect(usage);
    with_backend!(format, group, &inputs, |b| drive(b, &inputs, iterations));
}

//! `mframe export` throughput and file sizes, side by side in one run:
//! for each scenario, the same file of frames goes through
//! `mframe dump > /dev/null`, `export -o x.mfb` (a plain copy of the
//! frames), `export -o x.mcap` and `export -o x.parquet`, as real
//! processes of the release binary, pass after pass in rotating order.
//!
//! ```text
//! cargo build --release -p mframe
//! cargo run --release -p mframe --example export_bench -- [--passes 5] [--scale 1.0] [--keep DIR]
//! ```
//!
//! The binary is target/release/mframe (`--mframe PATH` for another).
//! Scenarios (inputs generated here, deterministic):
//! - `32 params`: SPEC 5.2's parameters (device `d{k%8}`, name `p{k}`, the
//!   type cycling with `k % 4`), each value moved by the frame's index so
//!   that no two frames are alike; 200,000 frames;
//! - `1,024 params`: the same with 1,024 parameters; 6,000 frames;
//! - `telemetry`: 4 sources at 100 Hz each, 64 parameters over 8 devices
//!   (frequencies, levels and temperatures drifting with noise, counters
//!   counting, flags and status strings that change now and then), no
//!   attachment (the long table leaves attachments out, so a file of frames
//!   with them would not be like for like); 100,000 frames.
//!
//! Printed: per scenario and command, the median and the minimum wall time
//! over the passes, frames/s and parameters/s from the median, the output's
//! size, and the targets as ratios of this run: MCAP export at least 0.8×
//! the rate of the `.mfb` export, Parquet export at least the rate of
//! `dump`, Parquet at most 0.5× the `.mfb` size on the telemetry scenario.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use messageframe::{Frame, Header};

struct Options {
    mframe: PathBuf,
    passes: usize,
    scale: f64,
    keep: Option<PathBuf>,
}

fn options() -> Options {
    let mut o = Options {
        mframe: std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.parent()?.parent()?.join("mframe")))
            .unwrap_or_else(|| PathBuf::from("target/release/mframe")),
        passes: 5,
        scale: 1.0,
        keep: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the option");
        match arg.as_str() {
            "--mframe" => o.mframe = PathBuf::from(value()),
            "--passes" => o.passes = value().parse().expect("a number of passes"),
            "--scale" => o.scale = value().parse().expect("a scale factor"),
            "--keep" => o.keep = Some(PathBuf::from(value())),
            other => {
                panic!("unknown option {other} (--mframe PATH, --passes N, --scale X, --keep DIR)")
            }
        }
    }
    o
}

/// A tiny deterministic generator (xorshift64*), so that every run gets the
/// same inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// SPEC 5.2's frame `i` with `params` parameters, values moved by `i`.
fn synthetic(i: u64, params: usize, names: &[(String, String)], frame: &mut Frame) {
    frame.clear();
    let h = frame.header_mut();
    h.set_timestamp(1_700_000_000_000 + i);
    h.set_counter(i);
    h.set_source(1 + (i % 4) as u32);
    for (k, (device, param)) in names.iter().take(params).enumerate() {
        match k % 4 {
            0 => frame.add(device, param, k as f64 * 1.5 + 0.25 + i as f64),
            1 => frame.add(device, param, (k * 1000) as i64 + i as i64),
            2 => frame.add(device, param, (k as u64 + i).is_multiple_of(3)),
            _ => frame.add(device, param, format!("value_{}", k as u64 + i).as_str()),
        }
    }
}

/// The telemetry of 4 sources: per source, 64 parameters on 8 devices.
struct Telemetry {
    rng: Rng,
    state: Vec<SourceState>,
}

/// A source's drifting values, counters, flags and statuses.
type SourceState = ([f64; 32], [i64; 16], [bool; 8], [usize; 8]);

const DEVICES: [&str; 8] = [
    "sdr_rx_1", "sdr_tx_2", "gnss", "power", "thermal", "link", "imu", "storage",
];
const DOUBLES: [&str; 4] = ["level", "frequency_hz", "temperature_c", "voltage_v"];
const INTS: [&str; 2] = ["packets", "errors"];
const STATUS: [&str; 4] = [
    "ok",
    "degraded: retrying",
    "locked, streaming",
    "calibrating",
];

impl Telemetry {
    fn new() -> Telemetry {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let state = (0..4)
            .map(|_| {
                let mut d = [0.0; 32];
                for (j, x) in d.iter_mut().enumerate() {
                    *x = match j % 4 {
                        0 => -80.0 + rng.unit() * 10.0,
                        1 => 433_920_000.0 + rng.unit() * 1e6,
                        2 => 40.0 + rng.unit() * 5.0,
                        _ => 12.0 + rng.unit(),
                    };
                }
                (d, [0i64; 16], [true; 8], [0usize; 8])
            })
            .collect();
        Telemetry { rng, state }
    }

    /// Frame `i`: source `i % 4`, 10 ms after the previous frame of that
    /// source.
    fn frame(&mut self, i: u64, frame: &mut Frame) {
        let source = (i % 4) as usize;
        let tick = i / 4;
        frame.clear();
        let h = frame.header_mut();
        h.set_timestamp(1_700_000_000_000 + tick * 10 + source as u64);
        h.set_counter(tick);
        h.set_source(100 + source as u32);
        h.set_message_type(1);
        let rng = &mut self.rng;
        let (doubles, ints, flags, status) = &mut self.state[source];
        for (d, device) in DEVICES.iter().enumerate() {
            for (j, name) in DOUBLES.iter().enumerate() {
                let x = &mut doubles[d * 4 + j];
                // A drift and a noise of its own scale.
                let scale = [0.05, 50.0, 0.01, 0.002][j];
                *x += rng.unit() * scale;
                let noisy = *x + rng.unit() * scale;
                frame.add(device, name, noisy);
            }
            for (j, name) in INTS.iter().enumerate() {
                let n = &mut ints[d * 2 + j];
                *n += if j == 0 {
                    1 + (rng.next() % 3) as i64
                } else {
                    i64::from(rng.next().is_multiple_of(1000))
                };
                frame.add(device, name, *n);
            }
            if rng.next().is_multiple_of(500) {
                flags[d] = !flags[d];
            }
            frame.add(device, "enabled", flags[d]);
            if rng.next().is_multiple_of(2000) {
                status[d] = (status[d] + 1) % STATUS.len();
            }
            frame.add(device, "status", STATUS[status[d]]);
        }
    }
}

struct Scenario {
    name: &'static str,
    frames: u64,
    params: u64,
    file: PathBuf,
}

fn write_inputs(dir: &Path, scale: f64) -> Vec<Scenario> {
    let names: Vec<(String, String)> = (0..1024)
        .map(|k| (format!("d{}", k % 8), format!("p{k}")))
        .collect();
    let mut out = Vec::new();
    let mut frame = Frame::new(Header::new(1, 7, 1, 2));
    let mut bytes = Vec::new();
    let n = |x: f64| (x * scale).max(1.0) as u64;
    let mut telemetry = Telemetry::new();
    for (name, frames, params) in [
        ("32 params", n(200_000.0), 32usize),
        ("1,024 params", n(6_000.0), 1024),
        ("telemetry", n(100_000.0), 64),
    ] {
        let file = dir.join(format!("{}.mfb", name.replace([' ', ','], "")));
        let mut data = Vec::new();
        for i in 0..frames {
            if name == "telemetry" {
                telemetry.frame(i, &mut frame);
            } else {
                synthetic(i, params, &names, &mut frame);
            }
            bytes.clear();
            frame.encode_into(&mut bytes).unwrap();
            data.extend_from_slice(&bytes);
        }
        std::fs::write(&file, &data).unwrap();
        out.push(Scenario {
            name,
            frames,
            params: frames * params as u64,
            file,
        });
    }
    out
}

/// The commands compared, by name.
const COMMANDS: [&str; 4] = ["dump", ".mfb", ".mcap", ".parquet"];

/// Runs one command over `input`; its wall time and output size.
fn run(mframe: &Path, command: &str, input: &Path, dir: &Path) -> (Duration, u64) {
    let (args, out): (Vec<String>, Option<PathBuf>) = if command == "dump" {
        (vec!["dump".into(), input.display().to_string()], None)
    } else {
        let out = dir.join(format!("out{command}"));
        (
            vec![
                "export".into(),
                input.display().to_string(),
                "-o".into(),
                out.display().to_string(),
            ],
            Some(out),
        )
    };
    let started = Instant::now();
    let status = Command::new(mframe)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("mframe runs (cargo build --release -p mframe)");
    let took = started.elapsed();
    assert!(status.success(), "{mframe:?} {args:?} failed");
    let size = out.map_or(0, |o| std::fs::metadata(o).unwrap().len());
    (took, size)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let o = options();
    assert!(
        o.mframe.exists(),
        "{} is missing: cargo build --release -p mframe",
        o.mframe.display()
    );
    let dir = o.keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("mframe-export-bench-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).unwrap();
    let scenarios = write_inputs(&dir, o.scale);
    println!(
        "mframe export benchmark: {} passes, median (and minimum) wall time of the real process, {}",
        o.passes,
        o.mframe.display()
    );
    let mut verdicts = Vec::new();
    for s in &scenarios {
        let input_size = std::fs::metadata(&s.file).unwrap().len();
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); COMMANDS.len()];
        let mut sizes = [0u64; COMMANDS.len()];
        for pass in 0..o.passes {
            // A rotating order: no command always runs first (cold) or last.
            for j in 0..COMMANDS.len() {
                let c = (j + pass) % COMMANDS.len();
                let (took, size) = run(&o.mframe, COMMANDS[c], &s.file, &dir);
                times[c].push(took);
                sizes[c] = size;
            }
        }
        println!(
            "\n### {} ({} frames, {} parameters, {:.1} MB of frames)\n",
            s.name,
            s.frames,
            s.params,
            input_size as f64 / 1e6
        );
        println!("| command | median s (min) | frames/s | params/s | output bytes | × .mfb size |");
        println!("|---|---:|---:|---:|---:|---:|");
        let mut rates = [0.0f64; COMMANDS.len()];
        for (c, name) in COMMANDS.iter().enumerate() {
            let med = median(times[c].clone());
            let min = times[c].iter().min().copied().unwrap();
            let rate = s.frames as f64 / med.as_secs_f64();
            rates[c] = rate;
            let label = if *name == "dump" {
                "`mframe dump > /dev/null`".to_owned()
            } else {
                format!("`mframe export -o x{name}`")
            };
            let (size, ratio) = if *name == "dump" {
                ("-".to_owned(), "-".to_owned())
            } else {
                (
                    sizes[c].to_string(),
                    format!("{:.3}", sizes[c] as f64 / sizes[1] as f64),
                )
            };
            println!(
                "| {label} | {:.3} ({:.3}) | {:.0} | {:.3e} | {size} | {ratio} |",
                med.as_secs_f64(),
                min.as_secs_f64(),
                rate,
                s.params as f64 / med.as_secs_f64()
            );
        }
        let mcap_vs_mfb = rates[2] / rates[1];
        let parquet_vs_dump = rates[3] / rates[0];
        verdicts.push(format!(
            "{}: MCAP export {:.2}× the .mfb export's rate (target >= 0.8: {}); Parquet export {:.2}× dump's rate (target >= 1: {})",
            s.name,
            mcap_vs_mfb,
            if mcap_vs_mfb >= 0.8 { "met" } else { "NOT met" },
            parquet_vs_dump,
            if parquet_vs_dump >= 1.0 { "met" } else { "NOT met" },
        ));
        if s.name == "telemetry" {
            let size = sizes[3] as f64 / sizes[1] as f64;
            verdicts.push(format!(
                "telemetry: Parquet {:.3}× the .mfb size (target <= 0.5: {}); MCAP {:.3}×",
                size,
                if size <= 0.5 { "met" } else { "NOT met" },
                sizes[2] as f64 / sizes[1] as f64
            ));
        }
    }
    println!("\n### Targets, as ratios of this run\n");
    for v in verdicts {
        println!("- {v}");
    }
    if o.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! `standalone`: the C++ `benchmarks/benchmark.cpp` of SPEC 5.1, same flags
//! and same printout.
//!
//! Each iteration: a new frame (header 200/7/1/2, counter = iteration, the
//! sizing hint when `--reserve` is given), `--params` Int64 parameters on
//! device `dev`, a lookup of the last-inserted key (the worst case for a
//! scan), serialize into a reused buffer, deserialize into a fresh frame.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use messageframe::{Frame, FrameConfig, Header};

/// messageframe standalone benchmark (the C++ benchmark's flags and output).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Messages to build, serialize and deserialize.
    #[arg(long, default_value_t = 1_000_000)]
    iterations: u64,
    /// Parameters per message.
    #[arg(long, default_value_t = 4)]
    params: usize,
    /// Sizing hint (`FrameConfig::for_params`); 0 for none.
    #[arg(long, default_value_t = 0)]
    reserve: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.params == 0 || cli.iterations == 0 {
        eprintln!("standalone: --params and --iterations must be at least 1");
        return ExitCode::from(2);
    }
    // Names are built once, outside the timed loop, as in the C++ benchmark.
    let names: Vec<String> = (0..cli.params).map(|p| format!("param_{p}")).collect();
    let last = names.last().expect("params >= 1");
    let expected = (cli.params - 1) as i64;

    let mut buf: Vec<u8> = Vec::new();
    let (mut add, mut find, mut ser, mut de) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let mut ok = 0u64;
    let mut packed = 0u64;

    let start = Instant::now();
    for i in 0..cli.iterations {
        let t0 = Instant::now();
        let header = Header::new(200, 7, 1, 2).with_counter(i);
        let mut frame = if cli.reserve > 0 {
            Frame::with_config(header, FrameConfig::for_params(cli.reserve))
        } else {
            Frame::new(header)
        };
        for (p, name) in names.iter().enumerate() {
            frame.add("dev", name, p as i64);
        }
        let t1 = Instant::now();
        black_box(frame.find("dev", last));
        let t2 = Instant::now();
        buf.clear();
        frame
            .encode_into(&mut buf)
            .expect("the benchmark frames encode");
        let t3 = Instant::now();
        let decoded = Frame::decode(&buf);
        let t4 = Instant::now();
        if let Ok(d) = decoded {
            if d.len() == cli.params
                && d.find("dev", last).and_then(|v| v.as_i64()) == Some(expected)
            {
                ok += 1;
            }
        }
        packed += buf.len() as u64;
        add += t1 - t0;
        find += t2 - t1;
        ser += t3 - t2;
        de += t4 - t3;
    }
    let total = start.elapsed();

    let n = cli.iterations as f64;
    let secs = total.as_secs_f64();
    let us = |d: Duration| d.as_secs_f64() * 1e6 / n;
    println!("=== messageframe standalone benchmark ===");
    println!("Iterations:              {}", cli.iterations);
    println!("Params per message:      {}", cli.params);
    println!("Total time:              {:.2} ms", secs * 1e3);
    println!("Avg time per message:    {:.3} us", secs * 1e6 / n);
    println!("Throughput:              {:.0} messages/sec", n / secs);
    println!(
        "Throughput:              {:.2} MB/sec",
        packed as f64 / secs / 1e6
    );
    println!("Success rate:            {:.2}%", ok as f64 * 100.0 / n);
    println!("Avg packed size:         {:.0} bytes", packed as f64 / n);
    println!("Reserve hint:            {}", cli.reserve);
    println!("--- average per message ---");
    println!("sum_add:                 {:.3} us", us(add));
    println!("sum_find:                {:.3} us", us(find));
    println!("sum_serialize:           {:.3} us", us(ser));
    println!("sum_deserialize:         {:.3} us", us(de));
    if ok == cli.iterations {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

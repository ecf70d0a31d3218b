//! `crossbench`: messageframe against prost, serde_json and raw MessagePack
//! on the scenarios of SPEC 5.2 and the Order message of SPEC 5.3.
//!
//! Markdown tables go to stdout, progress to stderr.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Cross-format benchmark: messageframe vs prost vs serde_json vs raw
/// MessagePack. Every figure is the minimum of 3 passes.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Divide every iteration count by 100 (a smoke test: CI runs this).
    #[arg(long)]
    quick: bool,
    /// Run only this scenario: small, medium, vector-ceiling, hash-map,
    /// hash-map-hint, large, large-hint, attachment, or order.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Write machine-readable results here (schema in docs/performance.md).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write an SVG chart of time per message (log scale) here.
    #[arg(long, value_name = "PATH.svg")]
    plot: Option<PathBuf>,
    /// Passes per measurement; the minimum is reported. The published
    /// figures use the default.
    #[arg(long, default_value_t = 3)]
    passes: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let opts = messageframe_bench::Options {
        quick: cli.quick,
        scenario: cli.scenario.clone(),
        passes: cli.passes,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; run with --release for meaningful figures");
    }
    let tty = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut progress = |msg: &str| {
        let mut err = std::io::stderr().lock();
        let elapsed = started.elapsed().as_secs();
        if tty {
            let _ = write!(err, "\r\x1b[K[{elapsed:>4}s] {msg}");
        } else {
            let _ = writeln!(err, "[{elapsed:>4}s] {msg}");
        }
        let _ = err.flush();
    };
    let report = match messageframe_bench::run(&opts, &mut progress) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("crossbench: {e}");
            return ExitCode::from(2);
        }
    };
    if tty {
        eprintln!();
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    print!("{}", report.markdown());

    if let Some(path) = &cli.json {
        let text = serde_json::to_string_pretty(&report).expect("the report serializes");
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!("crossbench: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = &cli.plot {
        let subtitle = format!("{}, {}", report.meta.cpu, report.meta.date);
        if let Err(e) = messageframe_bench::plot::write_svg(path, &report.scenarios, &subtitle) {
            eprintln!("crossbench: cannot draw {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

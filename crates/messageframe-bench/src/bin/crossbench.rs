//! `crossbench`: messageframe against prost, JSON (serde_json and a SIMD
//! library), CBOR, FlexBuffers and raw MessagePack, in two groups (reused
//! and fresh), on the scenarios of SPEC 5.2, a telemetry message and the
//! Order record of SPEC 5.3.
//!
//! `crossbench report RUN.json` regenerates the docs from a run's JSON.
//!
//! Markdown tables go to stdout, progress to stderr.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use messageframe_bench::publish::{self, Targets};

/// Cross-format benchmark of messageframe. Every figure is the minimum of 3
/// passes; ratios are computed within one group (reused or fresh).
#[derive(Debug, Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Divide every iteration count by 100 (a smoke test: CI runs this).
    #[arg(long)]
    quick: bool,
    /// Run only this scenario: small, medium, vector-ceiling, hash-map,
    /// hash-map-hint, large, large-hint, attachment, telemetry, or order.
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
    /// What to say about the machine in the report (for example "quiet
    /// 8-core desktop, nothing else running").
    #[arg(long, value_name = "TEXT", default_value = "")]
    note: String,
    /// Publish: a full run written to docs/crossbench.json, then README.md,
    /// docs/performance.md and docs/crossbench.svg regenerated from it. Run
    /// from the repository root.
    #[arg(long, conflicts_with_all = ["quick", "scenario", "json", "plot"])]
    publish: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Regenerate the tables of README.md and docs/performance.md (between
    /// their `crossbench:` marker comments) and docs/crossbench.svg from a
    /// run's JSON.
    Report {
        /// The run (usually docs/crossbench.json).
        json: PathBuf,
        /// The repository root holding README.md and docs/.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// Only check: exit 1 if a file differs from what the JSON generates.
        #[arg(long)]
        check: bool,
        /// Judge the run's targets again with this harness's rules (from
        /// the figures the JSON holds) and write them into the JSON before
        /// regenerating the docs: for when the targets changed and the run
        /// has not been made again yet. Targets whose rows the run lacks
        /// are absent.
        #[arg(long, conflicts_with = "check")]
        rejudge: bool,
    },
}

/// Checks that `path` can be written, before minutes of measuring: its
/// directory exists and takes a new file, and it is not a directory.
fn check_writable(path: &Path, what: &str) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("--{what} {}: is a directory", path.display()));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "--{what} {}: no directory {}",
            path.display(),
            dir.display()
        ));
    }
    let probe = dir.join(format!(".crossbench-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| {
            format!(
                "--{what} {}: cannot write in {}: {e}",
                path.display(),
                dir.display()
            )
        })?;
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| format!("--{what} {}: {e}", path.display()))?;
    }
    Ok(())
}

fn check_paths(cli: &Cli) -> Result<(), String> {
    if let Some(name) = &cli.scenario {
        messageframe_bench::check_scenario(name)?;
    }
    if let Some(p) = &cli.json {
        check_writable(p, "json")?;
    }
    if let Some(p) = &cli.plot {
        let svg = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg"));
        if !svg {
            return Err(format!(
                "--plot {}: the chart is SVG; give a path ending in .svg",
                p.display()
            ));
        }
        check_writable(p, "plot")?;
    }
    if cli.publish {
        let t = Targets::in_repo(Path::new("."));
        for p in [&t.readme, &t.performance] {
            if !p.is_file() {
                return Err(format!(
                    "--publish: no {} here; run from the repository root",
                    p.display()
                ));
            }
            check_writable(p, "publish")?;
        }
        check_writable(Path::new("docs/crossbench.json"), "publish")?;
    }
    Ok(())
}

fn report_command(json: &Path, root: &Path, check: bool, rejudge: bool) -> ExitCode {
    let targets = Targets::in_repo(root);
    let result = publish::load(json).and_then(|mut r| {
        if r.meta.quick {
            eprintln!("crossbench: warning: {} is a --quick run", json.display());
        }
        if rejudge && publish::rejudge(&mut r) {
            publish::save(&r, json)?;
            eprintln!("crossbench: judged the targets of {} again", json.display());
        }
        if check {
            publish::stale(&r, &targets)
        } else {
            publish::write(&r, &targets)
        }
    });
    match result {
        Ok(files) if check && !files.is_empty() => {
            for f in files {
                eprintln!(
                    "crossbench: {} differs from what {} generates",
                    f.display(),
                    json.display()
                );
            }
            ExitCode::FAILURE
        }
        Ok(files) => {
            for f in files {
                eprintln!("crossbench: rewrote {}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crossbench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Report {
        json,
        root,
        check,
        rejudge,
    }) = &cli.command
    {
        return report_command(json, root, *check, *rejudge);
    }
    if let Err(e) = check_paths(&cli) {
        eprintln!("crossbench: {e}");
        return ExitCode::from(2);
    }
    let opts = messageframe_bench::Options {
        quick: cli.quick,
        scenario: cli.scenario.clone(),
        passes: cli.passes,
        command: std::env::args()
            .map(|a| {
                // Quoted when needed, so that the recorded command can be
                // run again as it stands.
                if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "\"'$`\\".contains(c))
                {
                    format!("'{}'", a.replace('\'', "'\\''"))
                } else {
                    a
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        note: cli.note.clone(),
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

    let json_path = if cli.publish {
        Some(PathBuf::from("docs/crossbench.json"))
    } else {
        cli.json.clone()
    };
    if let Some(path) = &json_path {
        if let Err(e) = publish::save(&report, path) {
            eprintln!("crossbench: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = &cli.plot {
        if let Err(e) = messageframe_bench::plot::write_svg(path, &report) {
            eprintln!("crossbench: {e}");
            return ExitCode::FAILURE;
        }
    }
    if cli.publish {
        // The docs come from the JSON just written, exactly as `report`
        // makes them.
        return report_command(
            Path::new("docs/crossbench.json"),
            Path::new("."),
            false,
            false,
        );
    }
    ExitCode::SUCCESS
}

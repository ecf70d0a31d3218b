//! Compiles the benchmark schemas with protox (a pure-Rust protobuf
//! compiler), so building the harness needs no system `protoc`, and records
//! how the harness is built (compiler, profile, LTO, target CPU and
//! features) for the report's meta block.

use std::env;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["proto/telemetry.proto", "proto/order.proto"];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    record_build();
    let descriptors = protox::compile(files, ["proto"])?;
    // The same telemetry schema once more with `bytes::Bytes` for `bytes`
    // fields (prost's documented option for zero-copy binary fields), for
    // the shared-attachment comparison.
    let shared_dir = std::path::PathBuf::from(env::var("OUT_DIR")?).join("shared");
    std::fs::create_dir_all(&shared_dir)?;
    prost_build::Config::new()
        .bytes(["."])
        .out_dir(&shared_dir)
        .compile_fds(protox::compile(["proto/telemetry.proto"], ["proto"])?)?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}

fn record_build() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown rustc".to_owned(), |s| s.trim().to_owned());
    println!("cargo:rustc-env=BENCH_RUSTC_VERSION={version}");

    let var = |k: &str| env::var(k).unwrap_or_default();
    // Cargo's PROFILE says only `release` or `debug`; a custom profile
    // (`profiling`: release with debug info) is named by the directory the
    // build goes to, OUT_DIR = <target>/<profile>/build/<package>-<hash>/out.
    let profile = std::path::Path::new(&var("OUT_DIR"))
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .map_or_else(|| var("PROFILE"), str::to_owned);
    println!("cargo:rustc-env=BENCH_PROFILE={profile}");
    println!("cargo:rustc-env=BENCH_OPT_LEVEL={}", var("OPT_LEVEL"));
    println!("cargo:rustc-env=BENCH_DEBUG={}", var("DEBUG"));

    // Build scripts are not told LTO or codegen-units: read the profile from
    // the workspace manifest, and the environment overrides cargo honours.
    let manifest = format!("{}/../../Cargo.toml", var("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed={manifest}");
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    let setting = |key: &str, default: &str| {
        let env_key = format!(
            "CARGO_PROFILE_{}_{}",
            profile.to_uppercase(),
            key.to_uppercase().replace('-', "_")
        );
        println!("cargo:rerun-if-env-changed={env_key}");
        env::var(&env_key)
            .ok()
            .or_else(|| profile_setting(&text, &profile, key))
            .or_else(|| {
                let parent = profile_setting(&text, &profile, "inherits")?;
                profile_setting(&text, &parent, key)
            })
            .unwrap_or_else(|| default.to_owned())
    };
    println!("cargo:rustc-env=BENCH_LTO={}", setting("lto", "false"));
    println!(
        "cargo:rustc-env=BENCH_CODEGEN_UNITS={}",
        setting("codegen-units", "default")
    );

    let flags: Vec<String> = var("CARGO_ENCODED_RUSTFLAGS")
        .split('\x1f')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let target_cpu = flags
        .iter()
        .enumerate()
        .find_map(|(i, f)| {
            let f = if f == "-C" {
                flags.get(i + 1)?.as_str()
            } else {
                f.strip_prefix("-C")?
            };
            f.strip_prefix("target-cpu=").map(str::to_owned)
        })
        .unwrap_or_else(|| "none".to_owned());
    println!("cargo:rustc-env=BENCH_TARGET_CPU={target_cpu}");
    println!("cargo:rustc-env=BENCH_RUSTFLAGS={}", flags.join(" "));
    println!(
        "cargo:rustc-env=BENCH_TARGET_FEATURES={}",
        var("CARGO_CFG_TARGET_FEATURE")
    );
}

/// `key = value` in `[profile.NAME]` of a Cargo.toml (a line-based read:
/// the workspace manifest is plain).
fn profile_setting(toml: &str, profile: &str, key: &str) -> Option<String> {
    let header = format!("[profile.{profile}]");
    let mut inside = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == header;
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                if k.trim() == key {
                    return Some(v.trim().trim_matches('"').to_owned());
                }
            }
        }
    }
    None
}

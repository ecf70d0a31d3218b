//! Compiles the benchmark schemas with protox (a pure-Rust protobuf
//! compiler), so building the harness needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["proto/telemetry.proto", "proto/order.proto"];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    // The report states which compiler built the harness.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "unknown rustc".to_owned(), |s| s.trim().to_owned());
    println!("cargo:rustc-env=BENCH_RUSTC_VERSION={version}");
    let descriptors = protox::compile(files, ["proto"])?;
    // The same telemetry schema once more with `bytes::Bytes` for `bytes`
    // fields (prost's documented option for zero-copy binary fields), for
    // the shared-attachment comparison.
    let shared_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("shared");
    std::fs::create_dir_all(&shared_dir)?;
    prost_build::Config::new()
        .bytes(["."])
        .out_dir(&shared_dir)
        .compile_fds(protox::compile(["proto/telemetry.proto"], ["proto"])?)?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}

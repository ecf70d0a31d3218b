//! Sets `--cfg core_error` when the compiler has `core::error::Error`
//! (Rust 1.81 and later), so that a `no_std` build implements it on the
//! crate's error types; with the `std` feature they implement
//! `std::error::Error` on every supported compiler (1.70 on). A probe of
//! `rustc --version` rather than a `rust-version` bump: the crate's MSRV
//! stays 1.70 for both configurations, and only the trait impls of a
//! `no_std` build need the newer compiler (docs/no_std.md).

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rustc-check-cfg=cfg(core_error)");
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let minor = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|v| {
            v.split_whitespace()
                .nth(1)?
                .split('.')
                .nth(1)?
                .parse::<u32>()
                .ok()
        });
    if minor.is_some_and(|m| m >= 81) {
        println!("cargo:rustc-cfg=core_error");
    }
}

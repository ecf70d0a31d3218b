//! Shared code of the fuzz targets: the checks (also replayed by the stable
//! `cargo test` of the main workspace) and the seed-corpus generator.

pub mod checks;
pub mod gen;

//! Benchmark harness (work in progress).

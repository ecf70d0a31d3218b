//! `mframe`: read, write, send, receive and route messageframe frames;
//! publish, subscribe, record and replay them through NATS.
//!
//! The command-line tool (`src/main.rs` only calls [`main`]). It is a
//! library too so that the benchmark harness can run the relay in process:
//! [`cmd::relay::run`]. docs/cli.md documents every command.
//!
//! Exit codes: 0 success, 1 bad input (or a file, connection or server that
//! fails), 2 bad usage (clap's parse errors, binary output to a terminal, a
//! bad NATS URL or prefix).

mod cli;
pub mod cmd;
mod failure;
mod input;
mod json_in;
mod json_out;
pub mod net;
mod plural;
mod pretty;

pub use cli::main;

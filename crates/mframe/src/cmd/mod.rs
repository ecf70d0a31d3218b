//! One module per subcommand. `relay` is public: the benchmark harness runs
//! the relay in process. The NATS commands (`pub` in `publish`, `sub` in
//! `subscribe`, `record`, `replay`) share `nats` (URLs, prefix, filters,
//! connecting, credentials, TLS), `sink` (where frames go: dump's JSON, a
//! file, NATS), `output` (the queue to stdout or a file, bounded in bytes,
//! and its writer thread), `stop` (Ctrl-C and SIGTERM: the report, always,
//! within a second or two) and `events` (connection events on stderr,
//! rate-limited).
//! `view` serves a live web page of every parameter, `export` writes
//! recordings other tools open (MCAP, Parquet): each has its own directory.

pub(crate) mod confirm;
pub(crate) mod delivery;
pub(crate) mod dump;
pub(crate) mod encode;
pub(crate) mod events;
pub(crate) mod export;
pub(crate) mod header;
pub(crate) mod listen;
pub(crate) mod nats;
pub(crate) mod output;
pub(crate) mod publish;
pub(crate) mod record;
pub mod relay;
pub(crate) mod replay;
pub(crate) mod send;
pub(crate) mod sink;
pub(crate) mod stop;
pub(crate) mod subscribe;
pub(crate) mod validate;
pub(crate) mod view;

/// Shutdown on Ctrl-C (SIGINT) or SIGTERM, for the long-running commands.
pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A tokio runtime for one command: two workers (the machine this runs on
/// may be small; the work is I/O).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, crate::failure::Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| crate::failure::Failure::Bad(format!("cannot start the runtime: {e}")))
}

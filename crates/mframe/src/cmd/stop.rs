//! Ctrl-C and SIGTERM for `pub`, `sub`, `record` and `replay`: the process
//! always ends within [`GRACE`] of the signal, with its report.
//!
//! The first signal asks the command to stop: its loop sees it
//! ([`Stop::requested`], [`Stop::wait`]), writes out what it can and prints
//! its report as usual. A command that cannot get there (blocked writing a
//! stdout nobody reads, or reading a stdin that says nothing) is ended by
//! the watcher [`GRACE`] later: it prints the command's last words (its
//! report, from counters shared with it) and exits the process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::Notify;

/// How long a command has, after Ctrl-C or SIGTERM, to stop by itself.
pub(crate) const GRACE: Duration = Duration::from_millis(1500);

/// The report printed if the command does not stop by itself, and the
/// exit code then.
pub(crate) type LastWords = Box<dyn Fn() -> u8 + Send + Sync>;

/// The signal, as the command sees it.
#[derive(Clone)]
pub(crate) struct Stop {
    requested: Arc<AtomicBool>,
    notify: Arc<Notify>,
    finished: Arc<AtomicBool>,
}

impl Stop {
    /// Installs the handlers (before this returns: a signal from now on is
    /// caught) and the watcher on `rt`.
    pub(crate) fn install(rt: &Runtime, last_words: LastWords) -> Stop {
        let stop = Stop {
            requested: Arc::new(AtomicBool::new(false)),
            notify: Arc::new(Notify::new()),
            finished: Arc::new(AtomicBool::new(false)),
        };
        let signals = rt.block_on(async { Signals::new() });
        let watcher = stop.clone();
        rt.spawn(async move {
            signals.recv().await;
            watcher.requested.store(true, Ordering::Release);
            watcher.notify.notify_waiters();
            tokio::time::sleep(GRACE).await;
            if !watcher.finished.load(Ordering::Acquire) {
                let code = last_words();
                std::process::exit(i32::from(code));
            }
        });
        stop
    }

    /// Whether Ctrl-C or SIGTERM came.
    pub(crate) fn requested(&self) -> bool {
        self.requested.load(Ordering::Acquire)
    }

    /// Resolves once Ctrl-C or SIGTERM came.
    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.requested() {
                return;
            }
            notified.await;
        }
    }

    /// The command is printing its own report: the watcher stays quiet.
    pub(crate) fn finished(&self) {
        self.finished.store(true, Ordering::Release);
    }
}

/// SIGINT and SIGTERM.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Signals {}
        }
    }

    async fn recv(self) {
        #[cfg(unix)]
        {
            let Signals { mut term, mut int } = self;
            let term = async {
                match &mut term {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let int = async {
                match &mut int {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = term => {}
                () = int => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

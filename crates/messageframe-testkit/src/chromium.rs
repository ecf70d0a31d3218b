//! A real headless `chromium` on loopback, for the browser tests of
//! `mframe view`: started with a DevTools (CDP) port it picks itself, read
//! back from its stderr, with a fresh profile in a temporary directory;
//! killed (and the profile removed) when dropped.
//!
//! The binary is the `CHROMIUM` environment variable, else `chromium` (or
//! `chromium-browser`, `google-chrome`) on `PATH`, else one of the places
//! those are usually installed in ([`crate::discover::CHROMIUM`]); Debian's
//! package is installed by `scripts/test` when it is nowhere. Missing,
//! [`Chromium::start`] panics saying what to install: a browser test
//! fails, it never skips.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use tempfile::TempDir;

/// How long chromium may take to open its DevTools port.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One running headless chromium, killed when dropped.
#[derive(Debug)]
pub struct Chromium {
    child: Child,
    ws_url: String,
    _profile: TempDir,
}

impl Chromium {
    /// Starts chromium headless (`--no-sandbox`: the tests run as root),
    /// with a 1400×900 window, and waits (bounded) for its DevTools
    /// address. Panics if it cannot start.
    #[must_use]
    pub fn start() -> Chromium {
        // Not found: run the bare name, whose error says so.
        let binary = crate::discover::CHROMIUM
            .find()
            .unwrap_or_else(|| "chromium".into());
        let profile = tempfile::Builder::new()
            .prefix("chromium-")
            .tempdir()
            .expect("create a temporary profile directory for chromium");
        let mut command = Command::new(&binary);
        // Its own process group: the renderer and helper processes go with
        // it when it is killed.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-sync",
                "--mute-audio",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1400,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `{}` ({e}; looked on PATH and in {}): the browser tests need \
                     Debian's chromium (`apt-get install -y chromium`, as scripts/test does) \
                     or CHROMIUM=/path/to/it",
                    binary.display(),
                    crate::discover::CHROMIUM.places.join(", ")
                )
            });
        let stderr = child.stderr.take().expect("chromium's stderr is piped");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut sent = false;
            // Read to the end, so that chromium never blocks on a full pipe.
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if !sent {
                    if let Some(at) = line.find("ws://") {
                        sent = tx.send(Ok(line[at..].trim().to_owned())).is_ok();
                    } else {
                        let _ = tx.send(Err(line));
                    }
                }
            }
        });
        let mut log = Vec::new();
        let deadline = std::time::Instant::now() + START_TIMEOUT;
        let ws_url = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(Ok(url)) => break url,
                Ok(Err(line)) => log.push(line),
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "chromium did not open its DevTools port within {START_TIMEOUT:?}; its stderr:\n{}",
                        log.join("\n")
                    );
                }
            }
        };
        Chromium {
            child,
            ws_url,
            _profile: profile,
        }
    }

    /// The browser's DevTools WebSocket address
    /// (`ws://127.0.0.1:PORT/devtools/browser/…`), for a CDP client.
    #[must_use]
    pub fn ws_url(&self) -> &str {
        &self.ws_url
    }

    /// The process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        #[cfg(unix)]
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

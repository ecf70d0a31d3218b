//! Real `mframe` processes for the network tests: spawned with piped
//! streams, their output read line by line on threads, every wait bounded
//! by a timeout, and the process killed if a test leaves it running.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use messageframe::{Frame, Header};

/// The longest any single wait of these tests may take.
pub const WAIT: Duration = Duration::from_secs(60);

pub struct Proc {
    pub name: String,
    child: Child,
    pub stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// Every stderr line so far.
    pub stderr_log: Arc<Mutex<Vec<String>>>,
    /// The thread reading stderr: joined once the process has exited, so
    /// that its last lines are in the log.
    stderr_reader: Option<thread::JoinHandle<()>>,
}

fn lines(
    stream: impl Read + Send + 'static,
    log: Option<Arc<Mutex<Vec<String>>>>,
) -> (Receiver<String>, thread::JoinHandle<()>) {
    let (tx, rx) = channel();
    let reader = thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if let Some(log) = &log {
                log.lock().unwrap().push(line.clone());
            }
            if tx.send(line).is_err() {
                // Nobody listens any more; keep draining so the child never
                // blocks on a full pipe.
                continue;
            }
        }
    });
    (rx, reader)
}

impl Proc {
    /// Starts `mframe ARGS` with stdin piped.
    pub fn spawn(args: &[&str]) -> Proc {
        Proc::spawn_env(args, &[])
    }

    /// Starts `mframe ARGS` with stdin piped and these environment
    /// variables (the NATS login variables of the test's own environment
    /// removed).
    pub fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Proc {
        Proc::start(args, env, false)
    }

    fn start(args: &[&str], env: &[(&str, &str)], blocked_stdout: bool) -> Proc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mframe"))
            .args(args)
            .env_remove("NATS_USER")
            .env_remove("NATS_PASSWORD")
            .env_remove("NATS_TOKEN")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mframe starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stdout_pipe = child.stdout.take().unwrap();
        let stdout = if blocked_stdout {
            // The pipe is kept open and never read.
            let (tx, rx) = channel::<String>();
            thread::spawn(move || {
                let _keep = (stdout_pipe, tx);
                thread::sleep(WAIT);
            });
            rx
        } else {
            lines(stdout_pipe, None).0
        };
        let (stderr, stderr_reader) = lines(child.stderr.take().unwrap(), Some(log.clone()));
        Proc {
            name: args.join(" "),
            stdin: child.stdin.take(),
            stdout,
            stderr,
            stderr_log: log,
            stderr_reader: Some(stderr_reader),
            child,
        }
    }

    /// Starts `mframe ARGS` with a stdout nobody reads: the pipe fills and
    /// every write blocks.
    pub fn spawn_blocked_stdout(args: &[&str]) -> Proc {
        Proc::start(args, &[], true)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next stdout line, or `None` if none comes within `timeout` (or
    /// stdout ended).
    pub fn stdout_line(&self, timeout: Duration) -> Option<String> {
        self.stdout.recv_timeout(timeout).ok()
    }

    /// `n` stdout lines; panics if they do not all come within [`WAIT`].
    pub fn stdout_lines(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        (0..n)
            .map(|i| {
                let left = deadline.saturating_duration_since(Instant::now());
                self.stdout.recv_timeout(left).unwrap_or_else(|e| {
                    panic!(
                        "{}: stdout line {i} of {n}: {e:?}; stderr {:?}",
                        self.name,
                        self.stderr_log.lock().unwrap()
                    )
                })
            })
            .collect()
    }

    /// Whether stdout stays silent for `quiet`.
    pub fn stdout_quiet(&self, quiet: Duration) -> bool {
        matches!(
            self.stdout.recv_timeout(quiet),
            Err(RecvTimeoutError::Timeout)
        )
    }

    /// The rest of stdout until the process closes it (within [`WAIT`]).
    pub fn stdout_rest(&self) -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(line) => out.push(line),
                Err(RecvTimeoutError::Disconnected) => return out,
                Err(RecvTimeoutError::Timeout) => panic!("{}: stdout did not end", self.name),
            }
        }
    }

    /// The first stderr line (from now) containing `needle`; panics after
    /// [`WAIT`].
    pub fn stderr_line(&self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!(
                    "{}: no stderr line with {needle:?} ({e:?}); stderr {:?}",
                    self.name,
                    self.stderr_log.lock().unwrap()
                ),
            }
        }
    }

    /// The address a `listen` or `relay` reports on stderr.
    pub fn listening_on(&self) -> String {
        let line = self.stderr_line("listening on ");
        line.rsplit(' ').next().unwrap().to_owned()
    }

    /// Sends a signal (`INT`, `TERM`, `KILL`) with `kill(1)`.
    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .args([&format!("-{sig}"), &self.pid().to_string()])
            .status()
            .expect("kill(1) runs");
        assert!(status.success(), "kill -{sig} {}", self.pid());
    }

    /// Waits for the process to exit, within [`WAIT`]; kills it and panics
    /// otherwise.
    pub fn wait(&mut self) -> ExitStatus {
        self.stdin.take();
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The pipe closed with the process: the reader ends.
                if let Some(reader) = self.stderr_reader.take() {
                    let _ = reader.join();
                }
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("{} did not exit within {WAIT:?}", self.name);
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stderr so far, joined.
    pub fn stderr_text(&self) -> String {
        self.stderr_log.lock().unwrap().join("\n")
    }

    pub fn write_stdin(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until `done()` holds, within [`WAIT`]; panics with `what`
/// otherwise.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// A loopback listener on a free port.
pub fn free_listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").expect("a free loopback port")
}

/// The frame a load test's producer sends: its id as `source`, its
/// sequence number as `counter`, and a target.
pub fn numbered_frame(producer: u32, seq: u64, target: u32) -> Frame {
    let mut frame = Frame::new(
        Header::new(1, 2, producer, target)
            .with_counter(seq)
            .with_timestamp(1_700_000_000_000 + seq),
    );
    frame.add("load", "seq", seq as i64);
    frame.add("load", "label", "payload");
    frame
}

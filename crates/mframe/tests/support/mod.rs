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
        Proc::start(&[], args, &[], false)
    }

    /// Starts `mframe ARGS` with stdin piped and these environment
    /// variables (the NATS login variables of the test's own environment
    /// removed).
    pub fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Proc {
        Proc::start(&[], args, env, false)
    }

    /// Starts `mframe ARGS` under `prlimit LIMITS` (e.g. `--nofile=128`,
    /// `--as=536870912`): prlimit sets the limits and execs mframe, so the
    /// process (and its pid) is mframe's.
    pub fn spawn_limited(limits: &[&str], args: &[&str]) -> Proc {
        Proc::start(limits, args, &[], false)
    }

    fn start(limits: &[&str], args: &[&str], env: &[(&str, &str)], blocked_stdout: bool) -> Proc {
        let mut command = if limits.is_empty() {
            Command::new(env!("CARGO_BIN_EXE_mframe"))
        } else {
            let mut c = Command::new("prlimit");
            c.args(limits).arg("--").arg(env!("CARGO_BIN_EXE_mframe"));
            c
        };
        let mut child = command
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
        LIVE.lock().unwrap().push(child.id());
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
        Proc::start(&[], args, &[], true)
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

    /// The first stderr line (from now) containing every one of `needles`;
    /// panics after [`WAIT`].
    pub fn stderr_line_with(&self, needles: &[&str]) -> String {
        loop {
            let line = self.stderr_line(needles[0]);
            if needles.iter().all(|n| line.contains(n)) {
                return line;
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
        LIVE.lock().unwrap().retain(|&p| p != self.child.id());
    }
}

/// The processes started and not dropped yet, for [`within`].
static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A finished run of a program: what [`run_to_end`] returns.
pub struct Run {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// The run itself, after asserting it succeeded (its stderr otherwise).
    pub fn ok(self) -> Run {
        assert!(self.status.success(), "{:?}: {}", self.status, self.stderr);
        self
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Stdout then stderr, for assertion messages and searches.
    pub fn text(&self) -> String {
        format!("{}{}", String::from_utf8_lossy(&self.stdout), self.stderr)
    }
}

/// Runs `command` with `stdin` written to it, to its end within [`WAIT`]
/// (killed and failed otherwise). Stdout and stderr are read on threads, so
/// a program that writes more than a pipe holds before reading its input
/// cannot deadlock the test.
pub fn run_to_end(mut command: Command, stdin: &[u8]) -> Run {
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let read_all = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut out = Vec::new();
            let _ = r.read_to_end(&mut out);
            out
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {WAIT:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let _ = writer.join();
    Run {
        status,
        stdout: stdout.join().unwrap(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
    }
}

/// Runs `test` with a hard deadline: past `limit` the test fails and every
/// process it started is killed (a hung test then costs `limit`, not the
/// CI job).
pub fn within<T: Send + 'static>(limit: Duration, test: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = channel();
    let runner = thread::spawn(move || {
        let out = test();
        let _ = tx.send(());
        out
    });
    match rx.recv_timeout(limit) {
        Ok(()) => runner.join().unwrap(),
        // The test panicked: its own message.
        Err(RecvTimeoutError::Disconnected) => match runner.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(RecvTimeoutError::Timeout) => {
            for pid in LIVE.lock().unwrap().iter() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            panic!("the test did not finish within {limit:?}");
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

/// Waits until `progress` (a count a writer thread keeps) stops moving for
/// `quiet`, and is not 0; returns it.
pub fn wait_stalled(progress: &std::sync::atomic::AtomicUsize, quiet: Duration) -> usize {
    use std::sync::atomic::Ordering;
    let mut last = 0;
    wait_until("the writer to stall", || {
        thread::sleep(quiet);
        let now = progress.load(Ordering::SeqCst);
        let stalled = now == last && now > 0;
        last = now;
        stalled
    });
    last
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

/// One route's line of a relay's final report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteLine {
    pub delivered: u64,
    pub bytes: u64,
    pub dropped: u64,
    pub queue_full: u64,
    pub connection_lost: u64,
    pub shutdown: u64,
    pub reconnects: u64,
}

/// The report line of route `target` (a number or `default`), from a
/// relay's stderr: "route T -> ADDR: N frames (B bytes) delivered, D
/// dropped (F queue full, L connection lost, S at shutdown), R reconnects".
pub fn route_report(report: &str, target: &str) -> RouteLine {
    let prefix = format!("mframe: relay: route {target} -> ");
    let line = report
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no report for route {target}: {report}"));
    let after = &line[prefix.len()..];
    let after = &after[after.find(": ").expect("a colon after the address") + 2..];
    let numbers: Vec<u64> = after
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(numbers.len(), 7, "{line}");
    let r = RouteLine {
        delivered: numbers[0],
        bytes: numbers[1],
        dropped: numbers[2],
        queue_full: numbers[3],
        connection_lost: numbers[4],
        shutdown: numbers[5],
        reconnects: numbers[6],
    };
    assert_eq!(
        r.dropped,
        r.queue_full + r.connection_lost + r.shutdown,
        "{line}"
    );
    r
}

/// A process's peak resident memory (VmHWM), in bytes.
pub fn peak_rss_bytes(pid: u32) -> u64 {
    proc_status_kib(pid, "VmHWM:") * 1024
}

/// A field of /proc/PID/status, in KiB.
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The CPU time (user + system) a process has used so far, from
/// /proc/PID/stat.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name (which is in parentheses and may
    // hold spaces): state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / clock_ticks() as f64
}

/// `getconf CLK_TCK` (100 on Linux).
fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// One line of figures a fault test measured, on stdout (`cargo test --
/// --nocapture` shows them; docs/security.md's table is made from them).
pub fn figures(test: &str, pairs: &[(&str, String)]) {
    let body: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("FIGURES {test}: {}", body.join(" "));
}

//! Test support for the messageframe workspace: real `nats-server`
//! processes on loopback, started and stopped by the tests themselves, and
//! a real headless `chromium` ([`Chromium`]) for the browser tests of
//! `mframe view`.
//!
//! Never a mock: every server is the `nats-server` binary named by the
//! `NATS_SERVER` environment variable, else found on `PATH` or where it is
//! usually installed (`/usr/sbin`, which is not on a normal user's `PATH`,
//! `/usr/local/sbin`…: [`discover`]), installed from Debian by
//! `scripts/test` when it is nowhere. When it is missing,
//! [`NatsServer::start`] panics with what to install: a test that needs a
//! server fails, it never skips.
//!
//! Every server listens on 127.0.0.1 only, on ports it picks itself
//! (`-1` in its configuration, read back from its log) or, for cluster
//! routes that must be known in advance, on ports reserved just before it
//! starts. Its configuration, log and JetStream store live in a temporary
//! directory. Dropping a [`NatsServer`] (or a [`Cluster`]) kills the process
//! and removes the directory. Every wait is bounded.
//!
//! ```no_run
//! use messageframe_testkit::{Cluster, NatsServer, ServerOptions};
//!
//! let server = NatsServer::start(ServerOptions::new().jetstream());
//! println!("connect to {}", server.url());
//!
//! let cluster = Cluster::start(3, ServerOptions::new().jetstream());
//! println!("node 3 is {}", cluster.node(2).url());
//! ```

#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]

use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

mod auth;
mod chromium;
pub mod discover;
mod netns;
mod proxy;
mod tls;
pub use auth::{NkeyUser, Operator};
pub use chromium::Chromium;
pub use netns::{netns_available, NetnsCluster, SKIP_NETNS};
pub use proxy::Proxy;
pub use tls::Certificates;

/// How long a server may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a cluster may take to elect its JetStream leaders.
const HEALTHY_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a start is retried when a reserved port was taken meanwhile,
/// or a cluster's routes did not form.
const START_ATTEMPTS: usize = 3;

/// How long a new cluster's nodes may take to route to each other before
/// the cluster is started again (on loopback they take well under a second).
const ROUTES_TIMEOUT: Duration = Duration::from_secs(10);

/// What a server runs with.
///
/// ```
/// use messageframe_testkit::ServerOptions;
///
/// let options = ServerOptions::new().jetstream().mqtt().max_payload(4096);
/// let locked = ServerOptions::new().user_password("ground", "s3cret");
/// # let _ = (options, locked);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerOptions {
    jetstream: bool,
    mqtt: bool,
    max_payload: Option<usize>,
    authorization: Option<Authorization>,
    tls: Option<Tls>,
}

/// How clients must authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Authorization {
    UserPassword(String, String),
    Token(String),
    /// Users by NKey public key.
    Nkey(String),
    /// Decentralized authentication: the configuration lines.
    Operator(String),
}

/// TLS files and whether client certificates are required.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tls {
    cert: PathBuf,
    key: PathBuf,
    ca: PathBuf,
    verify: bool,
}

impl ServerOptions {
    /// A plain server: core NATS, default limits.
    #[must_use]
    pub fn new() -> Self {
        ServerOptions::default()
    }

    /// With JetStream (store in the server's temporary directory, at most
    /// 256 MiB of memory and 1 GiB of disk).
    #[must_use]
    pub fn jetstream(mut self) -> Self {
        self.jetstream = true;
        self
    }

    /// With the MQTT listener (which needs JetStream, so this enables it).
    #[must_use]
    pub fn mqtt(mut self) -> Self {
        self.mqtt = true;
        self.jetstream = true;
        self
    }

    /// With this `max_payload` instead of the default 1 MiB.
    #[must_use]
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = Some(bytes);
        self
    }

    /// Clients must log in with this user and password (plain ASCII
    /// letters and digits: they go into the configuration as they are).
    #[must_use]
    pub fn user_password(mut self, user: &str, password: &str) -> Self {
        self.authorization = Some(Authorization::UserPassword(
            user.to_owned(),
            password.to_owned(),
        ));
        self
    }

    /// Clients must present this token (plain ASCII letters and digits).
    #[must_use]
    pub fn token(mut self, token: &str) -> Self {
        self.authorization = Some(Authorization::Token(token.to_owned()));
        self
    }

    /// Clients must sign the server's challenge with this user's NKey.
    #[must_use]
    pub fn nkey_user(mut self, user: &NkeyUser) -> Self {
        self.authorization = Some(Authorization::Nkey(user.public_key()));
        self
    }

    /// Decentralized authentication: the server trusts `operator`, and
    /// clients log in with its user's `.creds`.
    #[must_use]
    pub fn operator(mut self, operator: &Operator) -> Self {
        self.authorization = Some(Authorization::Operator(operator.server_config()));
        self
    }

    /// TLS on the client port with `certs`' server certificate; with
    /// `verify`, clients must present a certificate signed by its CA.
    #[must_use]
    pub fn tls(mut self, certs: &Certificates, verify: bool) -> Self {
        let (cert, key) = certs.server();
        self.tls = Some(Tls {
            cert,
            key,
            ca: certs.ca(),
            verify,
        });
        self
    }
}

/// The ports a running server listens on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Ports {
    client: u16,
    monitor: u16,
    mqtt: Option<u16>,
    cluster: Option<u16>,
}

/// How a node joins a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClusterSpec {
    name: String,
    port: u16,
    routes: Vec<u16>,
}

/// One running `nats-server` process, killed when dropped.
#[derive(Debug)]
pub struct NatsServer {
    name: String,
    options: ServerOptions,
    cluster: Option<ClusterSpec>,
    dir: TempDir,
    child: Option<Child>,
    ports: Ports,
    /// Starts so far (a restart writes a new log file).
    generation: u32,
}

impl NatsServer {
    /// Starts a server and waits until it is ready (bounded). Panics, with
    /// the server's log, if it cannot start.
    #[must_use]
    pub fn start(options: ServerOptions) -> NatsServer {
        NatsServer::launch("mf-test", options, None)
    }

    fn launch(name: &str, options: ServerOptions, cluster: Option<ClusterSpec>) -> NatsServer {
        let dir = tempfile::Builder::new()
            .prefix("nats-server-")
            .tempdir()
            .expect("create a temporary directory for nats-server");
        let mut server = NatsServer {
            name: name.to_owned(),
            options,
            cluster,
            dir,
            child: None,
            ports: Ports::default(),
            generation: 0,
        };
        server.spawn(Ports::default());
        server
    }

    /// `nats://127.0.0.1:PORT`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.ports.client)
    }

    /// The client port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.ports.client
    }

    /// The monitoring (HTTP) port: `/varz`, `/connz`, `/healthz`…
    #[must_use]
    pub fn monitor_port(&self) -> u16 {
        self.ports.monitor
    }

    /// The MQTT port (servers started with [`ServerOptions::mqtt`]).
    #[must_use]
    pub fn mqtt_port(&self) -> u16 {
        self.ports
            .mqtt
            .expect("this server was started without MQTT")
    }

    /// The server's name (`server_name`), as JetStream reports leaders.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the process is running.
    #[must_use]
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Kills the process (SIGKILL: a crash, not a shutdown) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again after [`kill`](NatsServer::kill), on the same
    /// ports and with the same JetStream store.
    pub fn restart(&mut self) {
        self.kill();
        let ports = self.ports;
        self.spawn(ports);
    }

    /// Waits (bounded) until the server's `/healthz` says it is healthy: in
    /// a JetStream cluster, until the JetStream leaders are elected.
    pub fn wait_healthy(&self) {
        let deadline = Instant::now() + HEALTHY_TIMEOUT;
        loop {
            let (status, body) = http_get(self.ports.monitor, "/healthz");
            if status == Some(200) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server {} not healthy after {HEALTHY_TIMEOUT:?}: {status:?} {body}\n{}",
                self.name,
                self.log_tail()
            );
            sleep(Duration::from_millis(100));
        }
    }

    /// The number of routes to other servers, from the monitoring port.
    #[must_use]
    pub fn routes(&self) -> usize {
        let (_, body) = http_get(self.ports.monitor, "/routez");
        json_number(&body, "num_routes").unwrap_or(0) as usize
    }

    /// The end of the server's log, for failure messages.
    #[must_use]
    pub fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn log_path(&self) -> PathBuf {
        self.dir
            .path()
            .join(format!("server-{}.log", self.generation))
    }

    /// Starts the process with `ports` (0 = let the server pick) and waits
    /// until it is ready.
    fn spawn(&mut self, ports: Ports) {
        let binary = nats_server_binary();
        self.generation += 1;
        let config_path = self.dir.path().join("server.conf");
        fs::write(&config_path, self.config(ports)).expect("write nats-server.conf");
        let log_path = self.log_path();
        let log = fs::File::create(&log_path).expect("create the nats-server log");
        let child = Command::new(binary)
            .arg("-c")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let text = fs::read_to_string(&log_path).unwrap_or_default();
            if text.contains("Server is ready") {
                self.ports = parse_ports(&text);
                assert!(self.ports.client != 0, "no client port in the log:\n{text}");
                return;
            }
            if !self.is_running() || Instant::now() > deadline {
                self.kill();
                panic!(
                    "nats-server {} did not start (within {START_TIMEOUT:?}):\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            sleep(Duration::from_millis(20));
        }
    }

    fn config(&self, ports: Ports) -> String {
        let dir = self.dir.path();
        let mut c = String::new();
        let _ = writeln!(c, "server_name: {}", self.name);
        let _ = writeln!(c, "listen: 127.0.0.1:{}", port_or_any(ports.client));
        let _ = writeln!(c, "http: 127.0.0.1:{}", port_or_any(ports.monitor));
        if let Some(max) = self.options.max_payload {
            let _ = writeln!(c, "max_payload: {max}");
        }
        match &self.options.authorization {
            Some(Authorization::UserPassword(user, password)) => {
                let _ = writeln!(c, "authorization {{ user: {user}, password: {password} }}");
            }
            Some(Authorization::Token(token)) => {
                let _ = writeln!(c, "authorization {{ token: {token} }}");
            }
            Some(Authorization::Nkey(key)) => {
                let _ = writeln!(c, "authorization {{ users: [ {{ nkey: {key} }} ] }}");
            }
            Some(Authorization::Operator(lines)) => c.push_str(lines),
            None => {}
        }
        if let Some(tls) = &self.options.tls {
            let _ = writeln!(
                c,
                "tls {{ cert_file: {}, key_file: {}, ca_file: {}, verify: {}, timeout: 5 }}",
                quoted(&tls.cert),
                quoted(&tls.key),
                quoted(&tls.ca),
                tls.verify
            );
        }
        if self.options.jetstream {
            let _ = writeln!(
                c,
                "jetstream {{ store_dir: {}, max_memory_store: 256MB, max_file_store: 1GB }}",
                quoted(&dir.join("jetstream"))
            );
        }
        if self.options.mqtt {
            let port = ports.mqtt.map_or(-1, i32::from);
            let _ = writeln!(c, "mqtt {{ listen: 127.0.0.1:{port} }}");
        }
        if let Some(cluster) = &self.cluster {
            let routes: Vec<String> = cluster
                .routes
                .iter()
                .map(|p| format!("nats-route://127.0.0.1:{p}"))
                .collect();
            let _ = writeln!(
                c,
                "cluster {{ name: {}, listen: 127.0.0.1:{}, routes: [{}] }}",
                cluster.name,
                cluster.port,
                routes.join(", ")
            );
        }
        c
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three (or any number of) `nats-server`s routed to each other on
/// loopback, JetStream clustered if the options ask for it. Killed when
/// dropped.
#[derive(Debug)]
pub struct Cluster {
    nodes: Vec<NatsServer>,
}

impl Cluster {
    /// Starts `size` servers named `n1`, `n2`… with routes to every other,
    /// and waits until each has its routes and (with JetStream) until the
    /// cluster is healthy. Bounded; panics with the logs on failure.
    ///
    /// Should the routes not form within 10 s, the cluster is started again
    /// on new ports (twice at most): when two nodes dial each other at
    /// once, nats-server 2.9 (Debian 12's) can close both connections as
    /// "Duplicate Route" and never route the pair (CI saw a node with 1 of
    /// 2 routes after 30 s). Every node must list routes for a JetStream
    /// cluster to start, so the pairs cannot be made to dial one way only.
    #[must_use]
    pub fn start(size: usize, options: ServerOptions) -> Cluster {
        for attempt in 1..=START_ATTEMPTS {
            let last = attempt == START_ATTEMPTS;
            let ports: Vec<u16> = (0..size).map(|_| reserve_port()).collect();
            let mut nodes = Vec::with_capacity(size);
            let mut taken = false;
            for (i, &port) in ports.iter().enumerate() {
                let spec = ClusterSpec {
                    name: "mf-test-cluster".to_owned(),
                    port,
                    routes: ports.clone(),
                };
                let name = format!("n{}", i + 1);
                match std::panic::catch_unwind(|| {
                    NatsServer::launch(&name, options.clone(), Some(spec))
                }) {
                    Ok(node) => nodes.push(node),
                    Err(panic) if !last => {
                        // A reserved route port may have been taken between
                        // the reservation and the start: try new ones.
                        drop(panic);
                        taken = true;
                        break;
                    }
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            if taken {
                continue;
            }
            let cluster = Cluster { nodes };
            if let Err(report) = cluster.wait_routes(size - 1) {
                assert!(!last, "{report}");
                eprintln!("testkit: starting the cluster again: {report}");
                continue;
            }
            if options.jetstream {
                for node in &cluster.nodes {
                    node.wait_healthy();
                }
            }
            return cluster;
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Node `i` (from 0).
    #[must_use]
    pub fn node(&self, i: usize) -> &NatsServer {
        &self.nodes[i]
    }

    /// Node `i` (from 0), to kill or restart it.
    pub fn node_mut(&mut self, i: usize) -> &mut NatsServer {
        &mut self.nodes[i]
    }

    /// The node named `name` (`n1`, `n2`…).
    pub fn node_named(&mut self, name: &str) -> Option<&mut NatsServer> {
        self.nodes.iter_mut().find(|n| n.name == name)
    }

    /// Every node's URL.
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(NatsServer::url).collect()
    }

    /// Waits (bounded by [`ROUTES_TIMEOUT`]) until every node has
    /// `expected` routes; else says which node lacks them, with its log.
    fn wait_routes(&self, expected: usize) -> Result<(), String> {
        let deadline = Instant::now() + ROUTES_TIMEOUT;
        for node in &self.nodes {
            while node.routes() < expected {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "nats-server {} has {} of {expected} routes after {ROUTES_TIMEOUT:?}:\n{}",
                        node.name,
                        node.routes(),
                        node.log_tail()
                    ));
                }
                sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }
}

/// The `nats-server` binary: `$NATS_SERVER`, else `nats-server` on `PATH`,
/// else in `/usr/sbin`, `/usr/local/sbin`… ([`discover::NATS_SERVER`]).
/// Checked once: it must run and be at least version 2.2 (JetStream
/// clustering, MQTT). Panics with what to install otherwise: tests that
/// need it fail loudly, never skip.
pub fn nats_server_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        // Not found: run the bare name, whose error says so.
        let binary = discover::NATS_SERVER
            .find()
            .unwrap_or_else(|| PathBuf::from("nats-server"));
        let output = Command::new(&binary).arg("--version").output();
        let version = match output {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            Ok(out) => panic!(
                "`{} --version` failed ({}): {}",
                binary.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => panic!(
                "nats-server is required by these tests and was not found ({}: {e}; \
                 looked on PATH and in {}). Install it: `apt-get install -y nats-server` \
                 (Debian; scripts/test does this when it is absent), or set NATS_SERVER \
                 to its path. The tests never skip.",
                binary.display(),
                discover::NATS_SERVER.places.join(", ")
            ),
        };
        let (major, minor) = parse_version(&version)
            .unwrap_or_else(|| panic!("cannot read the nats-server version from {version:?}"));
        assert!(
            (major, minor) >= (2, 2),
            "nats-server {major}.{minor} is too old: JetStream clustering and MQTT need 2.2 or later"
        );
        binary
    })
}

fn parse_version(text: &str) -> Option<(u32, u32)> {
    let at = text.find(" v")?;
    let mut parts = text[at + 2..].trim().split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The ports announced in a server's log.
fn parse_ports(log: &str) -> Ports {
    let port_after = |marker: &str| -> Option<u16> {
        let line = log.lines().find(|l| l.contains(marker))?;
        line.rsplit(':').next()?.trim().parse().ok()
    };
    Ports {
        client: port_after("Listening for client connections on").unwrap_or(0),
        monitor: port_after("Starting http monitor on").unwrap_or(0),
        mqtt: port_after("Listening for MQTT clients on"),
        cluster: port_after("Listening for route connections on"),
    }
}

fn port_or_any(port: u16) -> i32 {
    if port == 0 {
        -1
    } else {
        i32::from(port)
    }
}

fn quoted(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

/// A loopback port that was free a moment ago.
fn reserve_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind a loopback port")
}

/// A bounded HTTP/1.0 GET on 127.0.0.1: the status and the body.
fn http_get(port: u16, path: &str) -> (Option<u16>, String) {
    http_get_at(SocketAddr::from((Ipv4Addr::LOCALHOST, port)), path)
}

/// A bounded HTTP/1.0 GET: the status and the body.
fn http_get_at(addr: SocketAddr, path: &str) -> (Option<u16>, String) {
    let attempt = || -> std::io::Result<String> {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.set_write_timeout(Some(Duration::from_secs(2)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut response = String::new();
        stream.take(1 << 20).read_to_string(&mut response)?;
        Ok(response)
    };
    match attempt() {
        Ok(response) => {
            let status = response
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok());
            let body = response
                .split_once("\r\n\r\n")
                .map_or(String::new(), |(_, b)| b.to_owned());
            (status, body)
        }
        Err(e) => (None, e.to_string()),
    }
}

/// The number after `"key":` in a JSON text (enough for the monitoring
/// endpoints' flat counters).
fn json_number(json: &str, key: &str) -> Option<u64> {
    let at = json.find(&format!("\"{key}\""))?;
    let rest = json[at + key.len() + 2..].trim_start().strip_prefix(':')?;
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_from_the_log() {
        let log = "[1] [INF] Starting http monitor on 127.0.0.1:32779\n\
                   [1] [INF] Listening for MQTT clients on mqtt://127.0.0.1:44665\n\
                   [1] [INF] Listening for client connections on 127.0.0.1:42139\n\
                   [1] [INF] Listening for route connections on 127.0.0.1:6222\n";
        assert_eq!(
            parse_ports(log),
            Ports {
                client: 42139,
                monitor: 32779,
                mqtt: Some(44665),
                cluster: Some(6222)
            }
        );
    }

    #[test]
    fn version_and_json_numbers_parse() {
        assert_eq!(parse_version("nats-server: v2.9.10\n"), Some((2, 9)));
        assert_eq!(
            json_number(r#"{"a": 1, "num_routes": 2}"#, "num_routes"),
            Some(2)
        );
        assert_eq!(json_number(r#"{"num_routes":0}"#, "num_routes"), Some(0));
    }

    #[test]
    fn a_server_starts_restarts_and_is_killed() {
        let mut server = NatsServer::start(ServerOptions::new());
        let port = server.port();
        assert!(TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok());
        server.kill();
        assert!(!server.is_running());
        server.restart();
        assert_eq!(server.port(), port);
        assert!(TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok());
    }
}

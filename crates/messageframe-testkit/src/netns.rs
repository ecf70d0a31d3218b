//! A NATS cluster whose nodes are separate hosts: each `nats-server` in a
//! network namespace of its own, linked to a bridge (in one more namespace)
//! by a veth pair, so that one node's link can be cut for real
//! ([`NetnsCluster::cut`]: its side of the bridge goes down, packets
//! vanish, no connection is reset) and healed. The test process reaches
//! the nodes through one more veth pair from its own namespace to the
//! bridge.
//!
//! Needs root and iproute2's `ip`. Names are unique per cluster (process
//! id and a counter), so parallel runs do not collide, and everything is
//! deleted on drop, a failed test included.

use std::fmt::Write as _;
use std::fs;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tempfile::TempDir;

use crate::{http_get_at, nats_server_binary, ServerOptions, HEALTHY_TIMEOUT, START_TIMEOUT};

/// The environment variable that skips the partition tests, loudly, where
/// there is no root or no `ip netns` (CI runs as root and never sets it).
pub const SKIP_NETNS: &str = "MESSAGEFRAME_SKIP_NETNS";

const CLIENT_PORT: u16 = 4222;
const ROUTE_PORT: u16 = 6222;
const MONITOR_PORT: u16 = 8222;

/// Whether network namespaces can be made here: `Err` says why not.
pub fn netns_available() -> Result<(), String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("cannot run `id -u`: {e}"))?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Err("not running as root".to_owned());
    }
    let probe = format!("mfprobe{}", std::process::id());
    ip(&["netns", "add", &probe]).map_err(|e| format!("`ip netns add` fails: {e}"))?;
    let _ = ip(&["netns", "del", &probe]);
    Ok(())
}

/// Runs `ip ARGS`; the error holds its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn must(args: &[&str]) {
    if let Err(e) = ip(args) {
        panic!("{e}");
    }
}

/// One node: its namespace, address and process.
#[derive(Debug)]
struct Node {
    name: String,
    namespace: String,
    /// The bridge's end of the node's link, in the switch namespace.
    switch_end: String,
    addr: Ipv4Addr,
    child: Option<Child>,
    log: PathBuf,
}

/// A JetStream-capable cluster of `nats-server`s on separate network
/// namespaces; deleted (processes killed, namespaces and links removed)
/// when dropped.
#[derive(Debug)]
pub struct NetnsCluster {
    id: String,
    switch: String,
    root_end: String,
    nodes: Vec<Node>,
    dir: TempDir,
}

impl NetnsCluster {
    /// Builds the namespaces and links, starts `size` servers (`n1`…)
    /// routed to each other, and waits (bounded) until each is healthy.
    /// Panics (after cleaning up) if anything fails.
    #[must_use]
    pub fn start(size: usize, options: &ServerOptions) -> NetnsCluster {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let pid = std::process::id();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let id = format!("{:05x}{n:x}", (pid ^ nanos) & 0xfffff);
        // 10.A.B.0/24, A in 100..=199: unlikely to meet another run's.
        let hash = pid.wrapping_mul(2_654_435_761) ^ nanos ^ n;
        let subnet = (100 + (hash % 100) as u8, ((hash >> 8) & 0xff) as u8);
        let dir = tempfile::Builder::new()
            .prefix("nats-netns-")
            .tempdir()
            .expect("create a temporary directory for the cluster");
        let mut cluster = NetnsCluster {
            switch: format!("mf{id}sw"),
            root_end: format!("mf{id}r"),
            id,
            nodes: Vec::new(),
            dir,
        };
        let addr = |host: u8| Ipv4Addr::new(10, subnet.0, subnet.1, host);
        // The switch: a bridge in a namespace of its own.
        let sw = cluster.switch.clone();
        must(&["netns", "add", &sw]);
        must(&["-n", &sw, "link", "set", "lo", "up"]);
        must(&["-n", &sw, "link", "add", "br0", "type", "bridge"]);
        must(&["-n", &sw, "link", "set", "br0", "up"]);
        // The test's own way in.
        let root = cluster.root_end.clone();
        let root_peer = format!("{root}s");
        must(&[
            "link", "add", &root, "type", "veth", "peer", "name", &root_peer,
        ]);
        must(&["link", "set", &root_peer, "netns", &sw]);
        must(&["-n", &sw, "link", "set", &root_peer, "master", "br0", "up"]);
        must(&["addr", "add", &format!("{}/24", addr(1)), "dev", &root]);
        must(&["link", "set", &root, "up"]);
        for i in 0..size {
            let name = format!("n{}", i + 1);
            let namespace = format!("mf{}{name}", cluster.id);
            let inner = format!("mf{}i{}", cluster.id, i + 1);
            let switch_end = format!("mf{}s{}", cluster.id, i + 1);
            must(&["netns", "add", &namespace]);
            cluster.nodes.push(Node {
                name,
                namespace: namespace.clone(),
                switch_end: switch_end.clone(),
                addr: addr(10 + i as u8),
                child: None,
                log: cluster.dir.path().join(format!("n{}.log", i + 1)),
            });
            must(&["-n", &namespace, "link", "set", "lo", "up"]);
            must(&[
                "link",
                "add",
                &inner,
                "type",
                "veth",
                "peer",
                "name",
                &switch_end,
            ]);
            must(&["link", "set", &inner, "netns", &namespace]);
            must(&["link", "set", &switch_end, "netns", &sw]);
            must(&["-n", &sw, "link", "set", &switch_end, "master", "br0", "up"]);
            let cidr = format!("{}/24", addr(10 + i as u8));
            must(&["-n", &namespace, "addr", "add", &cidr, "dev", &inner]);
            must(&["-n", &namespace, "link", "set", &inner, "up"]);
        }
        let routes: Vec<String> = cluster
            .nodes
            .iter()
            .map(|n| format!("nats-route://{}:{ROUTE_PORT}", n.addr))
            .collect();
        for i in 0..size {
            cluster.spawn(i, options, &routes);
        }
        cluster.wait_healthy();
        cluster
    }

    fn spawn(&mut self, i: usize, options: &ServerOptions, routes: &[String]) {
        let dir = self.dir.path().to_path_buf();
        let node = &mut self.nodes[i];
        let mut c = String::new();
        let _ = writeln!(c, "server_name: {}", node.name);
        let _ = writeln!(c, "listen: {}:{CLIENT_PORT}", node.addr);
        let _ = writeln!(c, "http: {}:{MONITOR_PORT}", node.addr);
        if options.jetstream {
            let _ = writeln!(
                c,
                "jetstream {{ store_dir: {:?}, max_memory_store: 256MB, max_file_store: 1GB }}",
                dir.join(format!("js-{}", node.name)).display().to_string()
            );
        }
        let _ = writeln!(
            c,
            "cluster {{ name: mf-netns, listen: {}:{ROUTE_PORT}, routes: [{}] }}",
            node.addr,
            routes.join(", ")
        );
        let config = dir.join(format!("{}.conf", node.name));
        fs::write(&config, c).expect("write the node's configuration");
        let log = fs::File::create(&node.log).expect("create the node's log");
        let child = Command::new("ip")
            .args(["netns", "exec", &node.namespace])
            .arg(nats_server_binary())
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .spawn()
            .expect("start nats-server in its namespace");
        node.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let text = fs::read_to_string(&node.log).unwrap_or_default();
            if text.contains("Server is ready") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server {} did not start in its namespace:\n{text}",
                node.name
            );
            sleep(Duration::from_millis(20));
        }
    }

    /// Waits (bounded) until every node whose link is up says it is
    /// healthy (JetStream leaders elected).
    pub fn wait_healthy(&self) {
        let deadline = Instant::now() + HEALTHY_TIMEOUT;
        for node in &self.nodes {
            loop {
                let (status, body) =
                    http_get_at(SocketAddr::from((node.addr, MONITOR_PORT)), "/healthz");
                if status == Some(200) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {} not healthy after {HEALTHY_TIMEOUT:?}: {status:?} {body}\n{}",
                    node.name,
                    self.log_tail(&node.name)
                );
                sleep(Duration::from_millis(100));
            }
        }
    }

    /// Node `i`'s URL (`nats://10.A.B.C:4222`), from the test's namespace.
    #[must_use]
    pub fn url(&self, i: usize) -> String {
        format!("nats://{}:{CLIENT_PORT}", self.nodes[i].addr)
    }

    /// Node `i`'s name (`n1`…), as JetStream reports leaders.
    #[must_use]
    pub fn name(&self, i: usize) -> &str {
        &self.nodes[i].name
    }

    /// The index of the node named `name`.
    #[must_use]
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Cuts node `i`'s link to everyone (its end of the bridge goes down):
    /// packets to and from it vanish, nothing is reset.
    pub fn cut(&self, i: usize) {
        self.set_link(i, "down");
    }

    /// Brings node `i`'s link back.
    pub fn heal(&self, i: usize) {
        self.set_link(i, "up");
    }

    fn set_link(&self, i: usize, state: &str) {
        let end = &self.nodes[i].switch_end;
        must(&["-n", &self.switch, "link", "set", end, state]);
    }

    /// The end of node `name`'s log, for failure messages.
    #[must_use]
    pub fn log_tail(&self, name: &str) -> String {
        let Some(node) = self.nodes.iter().find(|n| n.name == name) else {
            return String::new();
        };
        let log = fs::read_to_string(&node.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for NetnsCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        // Deleting a namespace deletes the veth ends in it, and with them
        // their peers.
        for node in &self.nodes {
            let _ = ip(&["netns", "del", &node.namespace]);
        }
        let _ = ip(&["netns", "del", &self.switch]);
        let _ = ip(&["link", "del", &self.root_end]);
    }
}

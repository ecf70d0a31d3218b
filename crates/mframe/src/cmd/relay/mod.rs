//! `mframe relay --listen ADDR --route TARGET=ADDR ... [--default ADDR]`:
//! forwards each frame to the consumer of its header's `target`, reading
//! only what framing needs (the header and the markers that say where the
//! frame ends; no key, string or value is decoded).
//!
//! # Design (docs/architecture.md has the full account)
//!
//! - **Producers** (`producer.rs`) connect through the shared server
//!   machinery (`crate::net`: `--max-connections`, `--idle-timeout`,
//!   `--max-frame-bytes`, the buffer budget, TLS). Each one's task scans
//!   its frames and hands each run of consecutive frames of one route to
//!   that route's consumer queue, straight from its read buffer.
//! - **Queues** (`queue.rs`): one per consumer address, bounded in bytes
//!   (`--route-buffer`). Frames for a consumer that is down or slow wait
//!   there; beyond it they are dropped and counted (`--when-full drop`, the
//!   default), so a route never blocks another route or the producers. With
//!   `--when-full block` the producers wait instead (no loss, and a slow
//!   consumer slows every route of the producers that feed it).
//! - **Consumers** (`consumer.rs`): each has one task that connects in the
//!   background (the relay starts when its consumers are down), reconnects
//!   with capped exponential backoff, reads the socket to notice at once a
//!   consumer that goes away, and disconnects one whose writes make no
//!   progress for `--write-timeout`.
//! - **Accounting** (`stats.rs`): every frame routed is, in the end,
//!   delivered (written whole to a connection that had not failed), or
//!   dropped for a reason: its queue was full, it was cut by a connection
//!   that failed while it was being written, or it was still queued when
//!   the flush deadline passed at shutdown. Frames with no route are
//!   unroutable. TCP cannot say whether bytes written to a connection were
//!   read: frames in a socket's kernel buffers when its consumer dies were
//!   delivered by this definition and are lost (docs/security.md).
//! - **Shutdown.** On Ctrl-C (or SIGTERM) the relay stops accepting and
//!   reading, forwards the complete frames it has read, writes every queue
//!   to its consumer (reconnecting if need be), closes the connections and
//!   prints its report. What is not written within `flush_timeout` (5 s),
//!   or when a second signal comes, is dropped and counted.

mod consumer;
mod producer;
mod queue;
mod stats;

use crate::plural::count;
use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Args, ValueEnum};
use messageframe::Limits;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::failure::{status, Failure};
use crate::net::log::RateLog;
use crate::net::server::{Counters, Server};
use crate::net::tls::{ClientTls, ServerTls};
use crate::net::{parse_bytes, parse_seconds, ServerArgs, ServerLimits};
use consumer::Dialer;
use producer::Routing;
use queue::Queue;
use stats::{ConsumerCounters, RouteCounters, Stats};

/// What a route does with a frame that does not fit its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum WhenFull {
    /// Drop it and count it: a route never blocks another one or the
    /// producers.
    #[default]
    Drop,
    /// Wait for room: nothing is dropped for want of room, and the
    /// producers that feed a slow consumer slow down (and so do their
    /// frames for every other route).
    Block,
}

/// The default `--route-buffer`: 16 MiB per consumer.
pub const DEFAULT_ROUTE_BUFFER: usize = 16 << 20;

/// The default `--write-timeout`.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How the relay runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// `(target, consumer address)`: frames whose header `target` is the
    /// first go to the second. Several targets may share a consumer (one
    /// connection and one queue).
    pub routes: Vec<(u32, String)>,
    /// Where frames of any other target go; without it they are counted as
    /// unroutable.
    pub default: Option<String>,
    /// Print per-route statistics on stdout (every second while something
    /// changes, every 10 s otherwise).
    pub stats: bool,
    /// Bytes each consumer's queue holds (default 16 MiB; a run of frames
    /// larger than this passes when nothing else is queued).
    pub route_buffer: usize,
    /// What a full queue does with more frames (default: drop them).
    pub when_full: WhenFull,
    /// A consumer whose writes make no progress for this long is
    /// disconnected and connected again (default 10 s).
    pub write_timeout: Duration,
    /// How long one attempt to connect to a consumer may take (default
    /// 5 s).
    pub connect_timeout: Duration,
    /// How long a shutdown waits for the queues to be written (default
    /// 5 s).
    pub flush_timeout: Duration,
    /// The producers' side: connections, idle timeout, frame size, buffers.
    pub server: ServerLimits,
    /// TLS for producers (the relay's certificate), if any.
    pub tls: Option<ServerTls>,
    /// TLS to the consumers (the CA that signs theirs, the relay's client
    /// certificate), if any.
    pub consumer_tls: Option<ClientTls>,
}

impl Config {
    /// A configuration with the defaults, and no statistics.
    #[must_use]
    pub fn new(routes: Vec<(u32, String)>, default: Option<String>) -> Self {
        Config {
            routes,
            default,
            stats: false,
            route_buffer: DEFAULT_ROUTE_BUFFER,
            when_full: WhenFull::Drop,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            connect_timeout: Duration::from_secs(5),
            flush_timeout: Duration::from_secs(5),
            server: ServerLimits::default(),
            tls: None,
            consumer_tls: None,
        }
    }
}

/// Frames of a route that were not delivered, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    /// The route's queue was full (`--route-buffer`).
    pub queue_full: u64,
    /// Cut by a consumer connection that failed while the frame was being
    /// written (its start went to a dead connection).
    pub connection_lost: u64,
    /// Still queued when the shutdown's flush deadline passed.
    pub shutdown: u64,
}

impl Drops {
    /// All of them.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.queue_full + self.connection_lost + self.shutdown
    }
}

/// What happened to the frames of one route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteReport {
    /// The route's target; `None` for `--default`.
    pub target: Option<u32>,
    /// Its consumer's address.
    pub addr: String,
    /// Frames delivered: written whole to a consumer connection that had
    /// not failed.
    pub frames: u64,
    /// Bytes of those frames.
    pub bytes: u64,
    /// Frames dropped, by reason.
    pub dropped: Drops,
    /// Times the consumer's connection was made again.
    pub reconnects: u64,
    /// Why the consumer's last connection (or attempt) failed, if one did.
    pub last_error: Option<String>,
}

/// What the relay did, at shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// One entry per route, `--route`s in order, then `--default`.
    pub routes: Vec<RouteReport>,
    /// Frames with no route and no default.
    pub unroutable: u64,
    /// Producer connections accepted.
    pub producers: u64,
    /// Producer connections closed for an invalid frame.
    pub rejected: u64,
    /// Producer connections refused (`--max-connections`).
    pub refused: u64,
    /// Producer connections closed for completing no frame within the
    /// idle timeout.
    pub idle: u64,
    /// Producer connections closed because their buffer could not grow.
    pub no_memory: u64,
}

/// `mframe relay`'s options.
#[derive(Args, Debug)]
pub(crate) struct RelayArgs {
    /// Address to accept producers on (port 0: any free port; the address
    /// is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// Send frames whose header target is TARGET to the consumer at ADDR
    /// (repeat for more routes).
    #[arg(long = "route", value_name = "TARGET=ADDR", value_parser = parse_route,
          required_unless_present = "default")]
    routes: Vec<(u32, String)>,
    /// Send frames of every other target to the consumer at ADDR (without
    /// it they are counted as unroutable).
    #[arg(long, value_name = "ADDR")]
    default: Option<String>,
    /// Print per-route statistics on stdout: every second while something
    /// changes, every 10 s otherwise.
    #[arg(long)]
    stats: bool,
    /// Bytes each consumer's queue holds while it is down or slow (e.g.
    /// 16MiB); beyond it, see --when-full.
    #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = parse_bytes)]
    route_buffer: usize,
    /// What a full queue does with more frames: drop (count them; no route
    /// ever blocks another) or block (the producers wait).
    #[arg(long, value_name = "POLICY", value_enum, default_value_t = WhenFull::Drop)]
    when_full: WhenFull,
    /// Disconnect (and connect again to) a consumer whose writes make no
    /// progress for this many seconds.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_positive_seconds)]
    write_timeout: Duration,
    #[command(flatten)]
    server: ServerArgs,
    /// Connect to the consumers with TLS, trusting the CAs of this PEM file.
    #[arg(long, value_name = "PEM")]
    consumer_tls_ca: Option<PathBuf>,
    /// Present this certificate chain (PEM) to consumers that ask for one;
    /// needs --consumer-tls-key and --consumer-tls-ca.
    #[arg(long, value_name = "PEM", requires_all = ["consumer_tls_key", "consumer_tls_ca"])]
    consumer_tls_cert: Option<PathBuf>,
    /// The private key of --consumer-tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires = "consumer_tls_cert")]
    consumer_tls_key: Option<PathBuf>,
}

fn parse_positive_seconds(text: &str) -> Result<Duration, String> {
    match parse_seconds(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("`{text}` is not a number of seconds (> 0)")),
    }
}

/// Runs the relay on `listener` until `shutdown` completes, then flushes
/// and returns what happened. Consumers are connected in the background:
/// it starts whether they are up or not.
///
/// # Errors
///
/// None today; the `Result` is kept for the errors of binding a future
/// listener.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> io::Result<Report> {
    run_until(listener, config, shutdown, std::future::pending(), false).await
}

/// [`run`], and `abort` (polled once `shutdown` completed) cuts the flush
/// short.
async fn run_until(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
    abort_signal: impl Future<Output = ()>,
    announce: bool,
) -> io::Result<Report> {
    // Routes in order, then the default; consumers by distinct address.
    let mut routes: Vec<(Option<u32>, String)> = config
        .routes
        .iter()
        .map(|(t, a)| (Some(*t), a.clone()))
        .collect();
    if let Some(addr) = &config.default {
        routes.push((None, addr.clone()));
    }
    let mut addrs: Vec<String> = Vec::new();
    let consumer_of: Vec<usize> = routes
        .iter()
        .map(|(_, addr)| match addrs.iter().position(|a| a == addr) {
            Some(i) => i,
            None => {
                addrs.push(addr.clone());
                addrs.len() - 1
            }
        })
        .collect();
    let stats = Arc::new(Stats {
        routes: routes.iter().map(|_| RouteCounters::default()).collect(),
        consumers: addrs.iter().map(|_| ConsumerCounters::default()).collect(),
        unroutable: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
    });
    let server = Server::new("relay: ", config.server.clone(), config.tls.clone());
    let log = Arc::new(RateLog::new("relay: "));
    if announce {
        status(format_args!(
            "relay: producers: {}; consumers: {}; route buffer {} bytes, when full: {}",
            server.describe(),
            if config.consumer_tls.is_some() {
                "TLS"
            } else {
                "plain TCP"
            },
            config.route_buffer,
            match config.when_full {
                WhenFull::Drop => "drop",
                WhenFull::Block => "block",
            }
        ));
    }
    let (abort_tx, abort_rx) = watch::channel(false);
    let (stop_tx, stop_rx) = watch::channel(false);
    let limits = Limits::default().max_frame_bytes(config.server.max_frame_bytes);
    let dialer = Dialer {
        tls: config.consumer_tls.clone(),
        connect_timeout: config.connect_timeout,
        write_timeout: config.write_timeout,
        log: log.clone(),
    };

    let mut queues = Vec::new();
    let mut consumers = JoinSet::new();
    for (i, addr) in addrs.iter().enumerate() {
        let targets: Vec<String> = routes
            .iter()
            .zip(&consumer_of)
            .filter(|(_, &c)| c == i)
            .map(|((t, _), _)| t.map_or_else(|| "default".to_owned(), |t| t.to_string()))
            .collect();
        let queue = Arc::new(Queue::new(
            format!("{addr} (targets {})", targets.join(", ")),
            addr.clone(),
            i,
            stats.clone(),
            config.route_buffer,
            config.when_full,
            config.write_timeout,
            limits,
            log.clone(),
        ));
        queues.push(queue.clone());
        consumers.spawn(consumer::run(queue, dialer.clone(), abort_rx.clone()));
    }
    let mut table: Vec<(u32, usize)> = Vec::new();
    for (route, (target, _)) in routes.iter().enumerate() {
        if let Some(t) = target {
            // The first --route for a target wins.
            if !table.iter().any(|&(seen, _)| seen == *t) {
                table.push((*t, route));
            }
        }
    }
    table.sort_unstable();
    let routing = Arc::new(Routing {
        table,
        default: config.default.as_ref().map(|_| routes.len() - 1),
        consumer_of: consumer_of.clone(),
        queues: queues.clone(),
        stats: stats.clone(),
        unroutable_seen: Mutex::new(HashSet::new()),
    });

    let printer = config.stats.then(|| {
        let names: Vec<String> = routes
            .iter()
            .map(|(t, a)| match t {
                Some(t) => format!("route {t} -> {a}"),
                None => format!("route default -> {a}"),
            })
            .collect();
        tokio::spawn(stats::print(
            stats.clone(),
            names,
            consumer_of.clone(),
            queues.clone(),
        ))
    });

    let mut producers = crate::net::server::serve(&server, &listener, shutdown, |incoming| {
        producer::run(incoming, routing.clone(), stop_rx.clone(), abort_rx.clone())
    })
    .await;

    // Graceful shutdown: no new producers, no more reading; the frames read
    // are queued, the queues written, within the flush deadline.
    drop(listener);
    let _ = stop_tx.send(true);
    drop(routing);
    let flush = async {
        while producers.join_next().await.is_some() {}
        // No producer is left: the consumers end once their queues are
        // written.
        for queue in &queues {
            queue.close();
        }
        while consumers.join_next().await.is_some() {}
    };
    let cut = tokio::select! {
        () = flush => None,
        () = tokio::time::sleep(config.flush_timeout) => Some(format!(
            "the queues were not written within {:?}",
            config.flush_timeout
        )),
        () = abort_signal => Some("stopped again".to_owned()),
    };
    if let Some(why) = cut {
        status(format_args!(
            "relay: {why}; what is left is counted as dropped at shutdown"
        ));
        let _ = abort_tx.send(true);
        for queue in &queues {
            queue.abort();
        }
        while producers.join_next().await.is_some() {}
        while consumers.join_next().await.is_some() {}
    }
    if let Some(printer) = printer {
        printer.abort();
    }
    server.shared().log.flush();
    log.flush();

    let c = &server.shared().counters;
    Ok(Report {
        routes: routes
            .iter()
            .zip(&stats.routes)
            .zip(&consumer_of)
            .map(|(((target, addr), r), &consumer)| {
                let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
                let cc = &stats.consumers[consumer];
                RouteReport {
                    target: *target,
                    addr: addr.clone(),
                    frames: get(&r.frames),
                    bytes: get(&r.bytes),
                    dropped: Drops {
                        queue_full: get(&r.full),
                        connection_lost: get(&r.lost),
                        shutdown: get(&r.shutdown),
                    },
                    reconnects: get(&cc.reconnects),
                    last_error: cc.last_error.lock().map(|g| g.clone()).unwrap_or_default(),
                }
            })
            .collect(),
        unroutable: stats.unroutable.load(Ordering::Relaxed),
        producers: Counters::get(&c.accepted),
        rejected: stats.rejected.load(Ordering::Relaxed),
        refused: Counters::get(&c.refused),
        idle: Counters::get(&c.idle),
        no_memory: Counters::get(&c.no_memory),
    })
}

/// Parses `TARGET=ADDR`.
pub(crate) fn parse_route(s: &str) -> Result<(u32, String), String> {
    let (target, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("expected TARGET=ADDR, got {s:?}"))?;
    let target = target
        .trim()
        .parse::<u32>()
        .map_err(|e| format!("target {target:?}: {e} (a header target is a u32)"))?;
    if addr.trim().is_empty() {
        return Err(format!("no address for target {target}"));
    }
    Ok((target, addr.trim().to_owned()))
}

/// The command: binds, reports the address on stderr, runs until Ctrl-C
/// (a second one cuts the flush short), prints the report on stderr.
pub(crate) fn main(args: &RelayArgs) -> Result<(), Failure> {
    let mut config = Config::new(args.routes.clone(), args.default.clone());
    config.stats = args.stats;
    config.route_buffer = args.route_buffer;
    config.when_full = args.when_full;
    config.write_timeout = args.write_timeout;
    config.server = args.server.limits();
    config.tls = args.server.tls.load()?;
    if let Some(ca) = &args.consumer_tls_ca {
        let identity = args
            .consumer_tls_cert
            .as_deref()
            .zip(args.consumer_tls_key.as_deref());
        config.consumer_tls = Some(ClientTls::from_pem_files(ca, identity).map_err(Failure::Bad)?);
    }
    let listen = &args.listen;
    super::runtime()?.block_on(async {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| Failure::Bad(format!("cannot listen on {listen}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| Failure::Bad(format!("cannot listen on {listen}: {e}")))?;
        status(format_args!("relay: listening on {local}"));
        let report = run_until(
            listener,
            config,
            super::shutdown_signal(),
            super::shutdown_signal(),
            true,
        )
        .await
        .map_err(|e| Failure::Bad(format!("relay: {e}")))?;
        for r in &report.routes {
            let target = r
                .target
                .map_or_else(|| "default".to_owned(), |t| t.to_string());
            status(format_args!(
                "relay: route {target} -> {}: {} ({}) delivered, {} dropped ({} queue full, {} connection lost, {} at shutdown), {}",
                r.addr,
                count(r.frames, "frame"),
                count(r.bytes, "byte"),
                r.dropped.total(),
                r.dropped.queue_full,
                r.dropped.connection_lost,
                r.dropped.shutdown,
                count(r.reconnects, "reconnect")
            ));
        }
        let mut line = format!(
            "relay: {} unroutable; {}, {} closed for invalid frames",
            count(report.unroutable, "frame"),
            count(report.producers, "producer connection"),
            report.rejected
        );
        for (n, what) in [
            (report.refused, "refused (--max-connections)"),
            (report.idle, "closed idle (--idle-timeout)"),
            (report.no_memory, "closed for want of buffer memory"),
        ] {
            if n > 0 {
                line.push_str(&format!(", {n} {what}"));
            }
        }
        status(line);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::parse_route;

    #[test]
    fn routes_parse_as_target_equals_address() {
        assert_eq!(
            parse_route("7=127.0.0.1:9000"),
            Ok((7, "127.0.0.1:9000".to_owned()))
        );
        assert_eq!(
            parse_route("4294967295=[::1]:1"),
            Ok((u32::MAX, "[::1]:1".to_owned()))
        );
        for bad in ["7", "x=127.0.0.1:1", "-1=a:1", "4294967296=a:1", "7="] {
            assert!(parse_route(bad).is_err(), "{bad}");
        }
    }
}

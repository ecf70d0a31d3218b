//! `mframe relay --listen ADDR --route TARGET=ADDR ... [--default ADDR]
//! [--stats]`: forwards each frame to the consumer of its header's
//! `target`, reading only what framing needs (the header and the markers
//! that say where the frame ends; no key, string or value is decoded).
//!
//! # Design (docs/architecture.md has the full account)
//!
//! - **Consumers.** The relay connects to each distinct consumer address at
//!   start. Each consumer has a queue (a byte buffer, and the list of runs
//!   of frames in it with their routes) and one task that takes everything
//!   queued at once and writes it to the socket in one call, in order; the
//!   task also watches the socket's read side, so a consumer that goes
//!   away is noticed even when nothing is being written.
//! - **Producers.** Each accepted connection has one task: it reads into
//!   its buffer (reused for the connection's life), scans the complete
//!   frames with the library's `FrameScanner`, and hands each run of
//!   consecutive frames for one route to that route's consumer. When the
//!   consumer's queue is empty and nobody is writing to it, the producer
//!   writes the run itself, straight from its read buffer, as a proxy
//!   would (no copy, no hand-off to another task); otherwise it appends the
//!   run to the queue (one copy) for the consumer's task. A `writing` flag
//!   lets one writer at a time use the connection, so runs are written in
//!   the order they were handed over. Queued runs are copied rather than
//!   kept as `Bytes` slices of the read buffer: slices made every read
//!   allocate a new buffer while the previous one was still queued, which
//!   cost more than the copy (docs/architecture.md).
//! - **Backpressure.** A consumer's queue is bounded in bytes (a semaphore
//!   of `queue_bytes` permits, taken before a run is queued and given back
//!   when it is written). A producer whose consumer is slow waits for room,
//!   stops reading its socket, and TCP flow control slows the sender. One
//!   slow consumer therefore slows the producers that feed it, and only as
//!   far as they send it frames.
//! - **Nothing dropped silently.** Every frame is counted once: delivered
//!   (written to its consumer's socket), undelivered (its consumer went
//!   away, or the shutdown's flush deadline passed), or unroutable (no
//!   route for its target and no `--default`). A malformed frame closes
//!   only its producer's connection, with an error line; the frames before
//!   it were forwarded. A consumer that goes away is reported, and its
//!   frames from then on are drained from the queue and counted as
//!   undelivered, so its producers are not blocked and other routes are
//!   unaffected. (Frames already handed to the kernel before the consumer
//!   vanished count as delivered: TCP does not say whether they arrived.)
//! - **Shutdown.** On Ctrl-C (or SIGTERM) the relay stops accepting and
//!   reading, forwards the complete frames it has read, flushes every queue
//!   to its consumer, closes the consumer connections and prints its
//!   report. A flush that does not finish within `flush_timeout` (10 s) is
//!   cut short and its frames are counted as undelivered.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use messageframe::{FrameScanner, Limits, Scan};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinSet;

use crate::failure::{status, Failure};

/// Smallest read from a producer.
const READ: usize = 64 << 10;

/// How the relay runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// `(target, consumer address)`: frames whose header `target` is the
    /// first go to the second. Several targets may share a consumer.
    pub routes: Vec<(u32, String)>,
    /// Where frames of any other target go; without it they are counted as
    /// unroutable.
    pub default: Option<String>,
    /// Print frames/s and bytes/s per route every second, on stdout.
    pub stats: bool,
    /// Bytes each consumer's queue holds before its producers wait
    /// (default 4 MiB; a frame larger than this is queued alone).
    pub queue_bytes: usize,
    /// How long a shutdown waits for the queues to be written (default
    /// 10 s).
    pub flush_timeout: Duration,
    /// Limits frames must keep (default: the decoder's defaults).
    pub limits: Limits,
}

impl Config {
    /// A configuration with the default queue size, flush timeout and
    /// limits, and no statistics.
    #[must_use]
    pub fn new(routes: Vec<(u32, String)>, default: Option<String>) -> Self {
        Config {
            routes,
            default,
            stats: false,
            queue_bytes: 4 << 20,
            flush_timeout: Duration::from_secs(10),
            limits: Limits::default(),
        }
    }
}

/// What happened to the frames of one route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteReport {
    /// The route's target; `None` for `--default`.
    pub target: Option<u32>,
    /// Its consumer's address.
    pub addr: String,
    /// Frames written to the consumer.
    pub frames: u64,
    /// Bytes written to the consumer.
    pub bytes: u64,
    /// Frames not written: the consumer went away, or the shutdown's flush
    /// deadline passed.
    pub undelivered: u64,
    /// Why the consumer went away, if it did.
    pub gone: Option<String>,
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
}

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dest {
    Route(usize),
    Nowhere(u32),
}

#[derive(Debug, Default)]
struct Counters {
    frames: AtomicU64,
    bytes: AtomicU64,
    undelivered: AtomicU64,
}

/// The counters, shared with the statistics task.
#[derive(Debug)]
struct Stats {
    routes: Vec<Counters>,
    /// Why each consumer went away, if it did.
    gone: Vec<Mutex<Option<String>>>,
    unroutable: AtomicU64,
    rejected: AtomicU64,
}

/// A consumer: its connection's write half, and its queue of runs of
/// frames waiting to be written, in order.
struct Queue {
    /// How messages name the consumer, and its index in the statistics.
    name: String,
    index: usize,
    stats: Arc<Stats>,
    state: Mutex<Queued>,
    /// Wakes the consumer's task: a run was queued, a producer stopped
    /// writing, or the queue closed.
    ready: Notify,
    /// Room in bytes: `queue_bytes` permits, taken by a producer before it
    /// hands over a run and given back when the run is written (or
    /// counted).
    room: Semaphore,
    /// The connection's write half; only whoever set `Queued::writing`
    /// uses it, so the lock is never contended.
    out: tokio::sync::Mutex<OwnedWriteHalf>,
}

#[derive(Default)]
struct Queued {
    /// The runs' bytes, back to back.
    bytes: BytesMut,
    /// Each run: its route, frames, length in `bytes`, and the permits it
    /// holds.
    runs: VecDeque<Run>,
    /// Someone (a producer writing its run directly, or the consumer's
    /// task) is writing to the connection: the others queue.
    writing: bool,
    /// No producer will queue more (shutdown).
    closed: bool,
    /// The consumer went away or the relay is aborting: runs are counted as
    /// undelivered instead of queued.
    refused: bool,
}

/// A run of consecutive frames of one route.
#[derive(Debug, Clone, Copy)]
struct Run {
    route: usize,
    frames: u64,
    len: usize,
    permits: u32,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queued> {
        // A panic while holding it cannot leave it inconsistent (plain
        // pushes and takes): keep going.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn delivered(&self, route: usize, frames: u64, bytes: usize) {
        let c = &self.stats.routes[route];
        c.frames.fetch_add(frames, Ordering::Relaxed);
        c.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn undelivered(&self, route: usize, frames: u64) {
        self.stats.routes[route]
            .undelivered
            .fetch_add(frames, Ordering::Relaxed);
    }

    /// Counts runs as undelivered and gives their room back.
    fn drop_runs(&self, runs: &mut VecDeque<Run>) {
        for run in runs.drain(..) {
            self.undelivered(run.route, run.frames);
            self.room.add_permits(run.permits as usize);
        }
    }

    /// From now on runs are counted, not queued; the queued ones are
    /// counted now. Returns whether it was the first refusal.
    fn refuse(&self) -> bool {
        let mut q = self.lock();
        let first = !q.refused;
        q.refused = true;
        q.bytes.clear();
        let mut runs = std::mem::take(&mut q.runs);
        drop(q);
        self.drop_runs(&mut runs);
        self.ready.notify_one();
        first
    }

    /// The consumer went away: reported once, and its runs refused.
    fn went_away(&self, reason: &str) {
        if self.refuse() {
            status(format_args!(
                "relay: consumer {} went away: {reason}; its frames are counted as undelivered",
                self.name
            ));
            if let Ok(mut gone) = self.stats.gone[self.index].lock() {
                *gone = Some(reason.to_owned());
            }
        }
    }

    /// Gives up the connection, and wakes the consumer's task if runs were
    /// queued meanwhile (only then: a producer writing directly would
    /// otherwise wake it for nothing after every run).
    fn done_writing(&self) {
        let waiting = {
            let mut q = self.lock();
            q.writing = false;
            !q.runs.is_empty() || q.closed
        };
        if waiting {
            self.ready.notify_one();
        }
    }
}

/// What the producers share. Dropping the last handle drops the queues'
/// senders, which tells the consumers that no more frames will come.
struct Shared {
    /// `(target, route)`, sorted by target; few entries, searched by
    /// bisection (producers also remember their last lookup).
    table: Vec<(u32, usize)>,
    default: Option<usize>,
    /// Route → consumer.
    consumer_of: Vec<usize>,
    queues: Vec<Arc<Queue>>,
    queue_bytes: usize,
    limits: Limits,
    stats: Arc<Stats>,
    /// Targets already reported as unroutable.
    unroutable_seen: Mutex<HashSet<u32>>,
}

impl Shared {
    fn dest(&self, target: u32) -> Dest {
        let route = match self.table.binary_search_by_key(&target, |&(t, _)| t) {
            Ok(i) => Some(self.table[i].1),
            Err(_) => self.default,
        };
        match route {
            Some(route) => Dest::Route(route),
            None => Dest::Nowhere(target),
        }
    }

    /// Queues a run of frames, waiting for room (backpressure). Returns
    /// `false` if the relay is being aborted (the frames are then counted
    /// as undelivered).
    async fn forward(
        &self,
        dest: Dest,
        bytes: &[u8],
        frames: u64,
        abort: &mut watch::Receiver<bool>,
    ) -> bool {
        let route = match dest {
            Dest::Route(route) => route,
            Dest::Nowhere(target) => {
                self.stats.unroutable.fetch_add(frames, Ordering::Relaxed);
                let first = self
                    .unroutable_seen
                    .lock()
                    .map(|mut seen| seen.insert(target))
                    .unwrap_or(false);
                if first {
                    status(format_args!(
                        "relay: no route for target {target} (and no --default): its frames are counted as unroutable"
                    ));
                }
                return true;
            }
        };
        let queue = &self.queues[self.consumer_of[route]];
        let permits = bytes.len().clamp(1, self.queue_bytes) as u32;
        let room = tokio::select! {
            biased;
            _ = abort.wait_for(|&a| a) => None,
            room = queue.room.acquire_many(permits) => room.ok(),
        };
        let Some(room) = room else {
            queue.undelivered(route, frames);
            return false;
        };
        let mut room = Some(room);
        let direct = {
            let mut q = queue.lock();
            if q.refused {
                drop(q);
                queue.undelivered(route, frames);
                return true;
            }
            if q.runs.is_empty() && !q.writing {
                // Nothing is waiting and nobody writes: write this run
                // straight from the read buffer, as a proxy would.
                q.writing = true;
                true
            } else {
                // Given back by the consumer's task once written.
                if let Some(room) = room.take() {
                    room.forget();
                }
                q.bytes.extend_from_slice(bytes);
                q.runs.push_back(Run {
                    route,
                    frames,
                    len: bytes.len(),
                    permits,
                });
                false
            }
        };
        if !direct {
            queue.ready.notify_one();
            return true;
        }
        let written = tokio::select! {
            biased;
            _ = abort.wait_for(|&a| a) => None,
            written = async { queue.out.lock().await.write_all(bytes).await } => Some(written),
        };
        drop(room);
        let going_on = match written {
            Some(Ok(())) => {
                queue.delivered(route, frames, bytes.len());
                true
            }
            Some(Err(e)) => {
                // What a failed write took is unknown: it counts as
                // undelivered.
                queue.undelivered(route, frames);
                queue.went_away(&e.to_string());
                true
            }
            None => {
                queue.undelivered(route, frames);
                false
            }
        };
        queue.done_writing();
        going_on
    }
}

/// Runs the relay on `listener` until `shutdown` completes, then flushes
/// and returns what happened. Connects to every consumer first.
///
/// # Errors
///
/// A consumer that cannot be connected to.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
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
        routes: routes.iter().map(|_| Counters::default()).collect(),
        gone: addrs.iter().map(|_| Mutex::new(None)).collect(),
        unroutable: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
    });
    let (abort_tx, abort_rx) = watch::channel(false);
    let (stop_tx, stop_rx) = watch::channel(false);

    let mut queues = Vec::new();
    let mut consumers = JoinSet::new();
    for (i, addr) in addrs.iter().enumerate() {
        let stream = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr))
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")))
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot connect to consumer {addr}: {e}"))
            })?;
        let _ = stream.set_nodelay(true);
        let (read_half, write_half) = stream.into_split();
        let targets: Vec<String> = routes
            .iter()
            .zip(&consumer_of)
            .filter(|(_, &c)| c == i)
            .map(|((t, _), _)| t.map_or_else(|| "default".to_owned(), |t| t.to_string()))
            .collect();
        let queue = Arc::new(Queue {
            name: format!("{addr} (targets {})", targets.join(", ")),
            index: i,
            stats: stats.clone(),
            state: Mutex::new(Queued::default()),
            ready: Notify::new(),
            room: Semaphore::new(config.queue_bytes.clamp(1, u32::MAX as usize)),
            out: tokio::sync::Mutex::new(write_half),
        });
        queues.push(queue.clone());
        consumers.spawn(consumer(read_half, queue, abort_rx.clone()));
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
    let shared = Arc::new(Shared {
        table,
        default: config.default.as_ref().map(|_| routes.len() - 1),
        consumer_of: consumer_of.clone(),
        queues: queues.clone(),
        queue_bytes: config.queue_bytes.clamp(1, u32::MAX as usize),
        limits: config.limits,
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
        tokio::spawn(print_stats(stats.clone(), names))
    });

    let mut producers = JoinSet::new();
    let mut accepted = 0u64;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            conn = listener.accept() => match conn {
                Ok((socket, peer)) => {
                    accepted += 1;
                    let _ = socket.set_nodelay(true);
                    producers.spawn(producer(
                        socket,
                        peer,
                        shared.clone(),
                        stop_rx.clone(),
                        abort_rx.clone(),
                    ));
                }
                Err(e) => status(format_args!("relay: cannot accept a connection: {e}")),
            },
            Some(_) = producers.join_next(), if !producers.is_empty() => {}
        }
    }

    // Graceful shutdown: no new producers, no more reading; the frames read
    // are queued, the queues written, within the flush deadline.
    drop(listener);
    let _ = stop_tx.send(true);
    drop(shared);
    let flush = async {
        while producers.join_next().await.is_some() {}
        // No producer is left: the consumers end once their queues are
        // written.
        for queue in &queues {
            queue.lock().closed = true;
            queue.ready.notify_one();
        }
        while consumers.join_next().await.is_some() {}
    };
    if tokio::time::timeout(config.flush_timeout, flush)
        .await
        .is_err()
    {
        status(format_args!(
            "relay: the queues were not written within {:?}; what is left is counted as undelivered",
            config.flush_timeout
        ));
        let _ = abort_tx.send(true);
        while producers.join_next().await.is_some() {}
        while consumers.join_next().await.is_some() {}
    }
    if let Some(printer) = printer {
        printer.abort();
    }

    Ok(Report {
        routes: routes
            .iter()
            .zip(&stats.routes)
            .zip(&consumer_of)
            .map(|(((target, addr), c), &consumer)| RouteReport {
                target: *target,
                addr: addr.clone(),
                frames: c.frames.load(Ordering::Relaxed),
                bytes: c.bytes.load(Ordering::Relaxed),
                undelivered: c.undelivered.load(Ordering::Relaxed),
                gone: stats.gone[consumer]
                    .lock()
                    .map(|g| g.clone())
                    .unwrap_or_default(),
            })
            .collect(),
        unroutable: stats.unroutable.load(Ordering::Relaxed),
        producers: accepted,
        rejected: stats.rejected.load(Ordering::Relaxed),
    })
}

/// The frames a producer forwards in one go: consecutive frames of one
/// destination, at the front of its buffer.
#[derive(Default)]
struct Pending {
    len: usize,
    frames: u64,
    dest: Option<Dest>,
}

async fn producer(
    mut socket: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    mut abort: watch::Receiver<bool>,
) {
    let mut buf = BytesMut::with_capacity(READ);
    let mut scanner = FrameScanner::with_limits(shared.limits);
    // Stream offset of `buf[0]`, and index of the next frame.
    let (mut offset, mut index) = (0usize, 0u64);
    // The last lookup: a producer's frames mostly repeat a target.
    let mut last: Option<(u32, Dest)> = None;
    loop {
        let mut run = Pending::default();
        let scanned = loop {
            match scanner.scan(&buf[run.len..]) {
                Ok(Scan::Complete { len, header }) => {
                    let target = header.target();
                    let dest = match last {
                        Some((t, dest)) if t == target => dest,
                        _ => {
                            let dest = shared.dest(target);
                            last = Some((target, dest));
                            dest
                        }
                    };
                    if run.frames > 0 && run.dest != Some(dest) {
                        let sent = shared
                            .forward(
                                run.dest.unwrap_or(dest),
                                &buf[..run.len],
                                run.frames,
                                &mut abort,
                            )
                            .await;
                        buf.advance(run.len);
                        offset += run.len;
                        if !sent {
                            return;
                        }
                        run = Pending::default();
                    }
                    run.dest = Some(dest);
                    run.len += len;
                    run.frames += 1;
                    index += 1;
                }
                Ok(Scan::Incomplete { need }) => break Ok(need),
                Err(e) => break Err(e),
            }
        };
        if let Some(dest) = run.dest {
            let sent = shared
                .forward(dest, &buf[..run.len], run.frames, &mut abort)
                .await;
            buf.advance(run.len);
            offset += run.len;
            if !sent {
                return;
            }
        }
        let need = match scanned {
            Ok(need) => need,
            Err(e) => {
                shared.stats.rejected.fetch_add(1, Ordering::Relaxed);
                status(format_args!(
                    "relay: producer {peer}: frame {index} (starts at byte {offset}): {}; connection closed",
                    e.with_base_offset(offset)
                ));
                return;
            }
        };
        buf.reserve(need.max(READ));
        let read = tokio::select! {
            biased;
            _ = stop.wait_for(|&s| s) => None,
            r = socket.read_buf(&mut buf) => Some(r),
        };
        match read {
            None => {
                if !buf.is_empty() {
                    status(format_args!(
                        "relay: producer {peer}: stopped inside frame {index}; its first {} bytes are discarded",
                        buf.len()
                    ));
                }
                return;
            }
            Some(Ok(0)) => {
                if !buf.is_empty() {
                    status(format_args!(
                        "relay: producer {peer}: connection ended inside frame {index} (starts at byte {offset}); {} bytes discarded",
                        buf.len()
                    ));
                }
                return;
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                status(format_args!(
                    "relay: producer {peer}: {e}; connection closed after {index} frames"
                ));
                return;
            }
        }
    }
}

/// Writes a consumer's queue to it, in order, until every producer is done
/// (or the relay is aborted), whenever no producer is writing to it
/// directly; watches the connection for the consumer going away.
async fn consumer(
    mut read_half: OwnedReadHalf,
    queue: Arc<Queue>,
    mut abort: watch::Receiver<bool>,
) {
    // A consumer sends nothing: the end of its stream (or an error) means
    // it went away.
    let watch = async move {
        let mut sink = [0u8; 256];
        loop {
            match read_half.read(&mut sink).await {
                Ok(0) => return "it closed the connection".to_owned(),
                Ok(_) => {}
                Err(e) => return e.to_string(),
            }
        }
    };
    tokio::pin!(watch);
    let mut runs = VecDeque::new();
    // Two buffers trade places: the queue fills one while this task writes
    // the other, so neither is reallocated in the steady state.
    let mut bytes = BytesMut::new();
    loop {
        // Everything queued, taken at once, unless a producer is writing.
        bytes.clear();
        let (taken, done) = {
            let mut q = queue.lock();
            if q.refused {
                return;
            }
            if q.writing || q.runs.is_empty() {
                (false, q.closed && q.runs.is_empty() && !q.writing)
            } else {
                q.writing = true;
                std::mem::swap(&mut runs, &mut q.runs);
                std::mem::swap(&mut bytes, &mut q.bytes);
                (true, false)
            }
        };
        if done {
            break;
        }
        if !taken {
            tokio::select! {
                biased;
                _ = abort.wait_for(|&a| a) => {
                    queue.refuse();
                    return;
                }
                reason = &mut watch => {
                    queue.went_away(&reason);
                    return;
                }
                () = queue.ready.notified() => continue,
            }
        }
        let written = tokio::select! {
            biased;
            _ = abort.wait_for(|&a| a) => {
                queue.drop_runs(&mut runs);
                queue.refuse();
                return;
            }
            reason = &mut watch => Err(reason),
            written = async { queue.out.lock().await.write_all(&bytes).await } => {
                written.map_err(|e| e.to_string())
            }
        };
        match written {
            Ok(()) => {
                for run in runs.drain(..) {
                    queue.delivered(run.route, run.frames, run.len);
                    queue.room.add_permits(run.permits as usize);
                }
                queue.done_writing();
            }
            Err(reason) => {
                // What a failed write took is unknown: all of it counts as
                // undelivered.
                queue.drop_runs(&mut runs);
                queue.went_away(&reason);
                return;
            }
        }
    }
    let _ = queue.out.lock().await.shutdown().await;
}

/// Every second, one line per route on stdout: the last second's frames/s
/// and MB/s, and the totals.
async fn print_stats(stats: Arc<Stats>, names: Vec<String>) {
    use std::io::Write;
    let mut last: Vec<(u64, u64)> = vec![(0, 0); names.len()];
    let mut then = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tick.tick().await;
        let now = Instant::now();
        let secs = now.duration_since(then).as_secs_f64().max(1e-3);
        then = now;
        let mut text = String::new();
        for (i, name) in names.iter().enumerate() {
            let c = &stats.routes[i];
            let (frames, bytes) = (
                c.frames.load(Ordering::Relaxed),
                c.bytes.load(Ordering::Relaxed),
            );
            let (f0, b0) = last[i];
            last[i] = (frames, bytes);
            text.push_str(&format!(
                "{name}: {:.0} frames/s, {:.2} MB/s (total {frames} frames, {bytes} bytes, {} undelivered)\n",
                (frames - f0) as f64 / secs,
                (bytes - b0) as f64 / secs / 1e6,
                c.undelivered.load(Ordering::Relaxed)
            ));
        }
        let unroutable = stats.unroutable.load(Ordering::Relaxed);
        if unroutable > 0 {
            text.push_str(&format!("unroutable: {unroutable} frames\n"));
        }
        let mut out = io::stdout().lock();
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
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

/// The command: binds, reports the address on stderr, runs until Ctrl-C,
/// prints the report on stderr.
pub(crate) fn main(listen: &str, config: Config) -> Result<(), Failure> {
    super::runtime()?.block_on(async {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| Failure::Bad(format!("cannot listen on {listen}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| Failure::Bad(format!("cannot listen on {listen}: {e}")))?;
        status(format_args!("relay: listening on {local}"));
        let report = run(listener, config, super::shutdown_signal())
            .await
            .map_err(|e| Failure::Bad(format!("relay: {e}")))?;
        for r in &report.routes {
            let target = r
                .target
                .map_or_else(|| "default".to_owned(), |t| t.to_string());
            status(format_args!(
                "relay: route {target} -> {}: {} frames ({} bytes) delivered, {} undelivered",
                r.addr, r.frames, r.bytes, r.undelivered
            ));
        }
        status(format_args!(
            "relay: {} frames unroutable; {} producer connections, {} closed for invalid frames",
            report.unroutable, report.producers, report.rejected
        ));
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

//! A consumer's queue: the frames waiting for its connection, bounded in
//! bytes (`--route-buffer`), and the accounting of every frame that passes
//! through it: delivered, or dropped for a reason.
//!
//! Producers [`offer`](Queue::offer) runs of consecutive frames of one
//! route. When nothing is queued and the connection is plain TCP and idle,
//! the producer writes the run itself with a non-blocking `try_write`,
//! straight from its read buffer, as a proxy would: what the socket takes
//! is delivered, the rest is queued (never waited for). Otherwise the run is
//! appended to the queue, or, when the queue is full, dropped and counted
//! (`--when-full drop`, the default) or waited for (`--when-full block`).
//!
//! The consumer's task ([`super::consumer`]) takes everything queued at
//! once, writes it, and reports progress as it goes, so frames are counted
//! delivered as their last byte is written. When the connection fails
//! part-way, [`fail`](Queue::fail) sorts the batch: frames written whole
//! are delivered, the frame cut by the failure is lost (its start went to a
//! dead connection; the next connection must begin with a whole frame), and
//! the rest go back to the front of the queue for the next connection.
//! Frame boundaries inside a run are found again with the scanner, only on
//! those rare paths.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::BytesMut;
use messageframe::{FrameScanner, Limits, Scan};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};

use super::stats::Stats;
use super::WhenFull;
use crate::net::log::{Kind, RateLog};

/// A run of consecutive frames of one route, in the queue's bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Run {
    pub(super) route: usize,
    pub(super) frames: u64,
    pub(super) len: usize,
    /// `false`: the tail of one frame whose start was written to the
    /// connection (it can only follow that start on the same connection).
    pub(super) whole: bool,
}

#[derive(Default)]
struct Queued {
    /// The runs' bytes, back to back.
    bytes: BytesMut,
    runs: VecDeque<Run>,
    /// Bytes the consumer's task has taken and not written yet (they count
    /// against the buffer too).
    inflight: usize,
    /// The consumer's task has taken a batch: producers queue behind it.
    busy: bool,
    /// A producer is writing a run to the connection itself (`--when-full
    /// block`): the others, and the consumer's task, queue behind it.
    producer_writing: bool,
    /// The connection, when it is plain TCP and up: producers may write to
    /// it directly when nothing is queued.
    direct: Option<Arc<TcpStream>>,
    /// No producer will offer more (shutdown).
    closed: bool,
    /// The flush deadline passed: everything is counted, nothing queued.
    aborted: bool,
    /// Frames are being dropped for want of room (for the log line).
    dropping: bool,
}

/// What [`Queue::try_offer`] did.
enum Offered {
    /// Written, queued, or dropped and counted.
    Done,
    /// `--when-full block` and no room: wait.
    Full,
    /// `--when-full block`: the producer writes the rest itself.
    Writing {
        socket: Arc<TcpStream>,
        written: usize,
    },
}

/// What the consumer's task gets from [`Queue::take`].
pub(super) enum Take {
    /// A batch to write (in the buffers passed in).
    Batch,
    /// Nothing queued; wait.
    Empty,
    /// Nothing queued and nothing more will come.
    Done,
}

/// A consumer's queue.
pub(super) struct Queue {
    /// How messages name the consumer: its address and its targets.
    pub(super) name: String,
    pub(super) addr: String,
    /// Its index among the consumers.
    pub(super) index: usize,
    pub(super) stats: Arc<Stats>,
    capacity: usize,
    when_full: WhenFull,
    write_timeout: std::time::Duration,
    /// The producers' scanner limits, to find frames again in a run.
    limits: Limits,
    log: Arc<RateLog>,
    state: Mutex<Queued>,
    /// Wakes the consumer's task: a run was queued, or the queue closed.
    pub(super) ready: Notify,
    /// Wakes producers waiting for room (`--when-full block`).
    room: Notify,
}

impl Queue {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        name: String,
        addr: String,
        index: usize,
        stats: Arc<Stats>,
        capacity: usize,
        when_full: WhenFull,
        write_timeout: std::time::Duration,
        limits: Limits,
        log: Arc<RateLog>,
    ) -> Queue {
        Queue {
            name,
            addr,
            index,
            stats,
            capacity: capacity.max(1),
            when_full,
            write_timeout,
            limits,
            log,
            state: Mutex::new(Queued::default()),
            ready: Notify::new(),
            room: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queued> {
        // Plain pushes and takes: a panic while holding it cannot leave it
        // inconsistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn delivered(&self, route: usize, frames: u64, bytes: usize) {
        let c = &self.stats.routes[route];
        c.frames.fetch_add(frames, Ordering::Relaxed);
        c.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Bytes queued and in flight (for the statistics).
    pub(super) fn queued(&self) -> usize {
        let q = self.lock();
        q.bytes.len() + q.inflight
    }

    /// Hands a run of frames of `route` (`bytes`; `ends`: where each frame
    /// ends in it) to the consumer: written directly, queued, dropped when
    /// the queue is full (or waited for, with `--when-full block`, until
    /// `abort`).
    pub(super) async fn offer(
        &self,
        route: usize,
        bytes: &[u8],
        ends: &[usize],
        abort: &mut watch::Receiver<bool>,
    ) {
        let frames = ends.len() as u64;
        let mut offered = self.try_offer(route, bytes, ends);
        loop {
            match offered {
                Offered::Done => return,
                Offered::Writing { socket, written } => {
                    return self
                        .write_on(route, bytes, ends, socket, written, abort)
                        .await
                }
                Offered::Full => {}
            }
            // `--when-full block`: wait for room. Registered before the
            // check, so that room made between the check and the wait is
            // not missed.
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            offered = self.try_offer(route, bytes, ends);
            if matches!(offered, Offered::Full) {
                tokio::select! {
                    biased;
                    _ = abort.wait_for(|&a| a) => {
                        self.stats.routes[route].shutdown.fetch_add(frames, Ordering::Relaxed);
                        return;
                    }
                    () = room => {}
                }
            }
        }
    }

    /// `--when-full block`, the connection idle and nothing queued: the
    /// producer writes the rest of its run itself (`written` bytes are
    /// out), waiting for the socket as a proxy would, at most
    /// `--write-timeout` without progress. If the connection fails, the
    /// frame cut is lost and the frames not started go to the front of the
    /// queue, for the next connection.
    async fn write_on(
        &self,
        route: usize,
        bytes: &[u8],
        ends: &[usize],
        socket: Arc<TcpStream>,
        mut written: usize,
        abort: &mut watch::Receiver<bool>,
    ) {
        // Frames of the run delivered so far.
        let mut done = ends.partition_point(|&end| end <= written);
        // One timer for the run, moved only when it fires after progress.
        let mut progressed = tokio::time::Instant::now();
        let stall = tokio::time::sleep_until(progressed + self.write_timeout);
        tokio::pin!(stall);
        let failed = loop {
            if written == bytes.len() {
                break None;
            }
            let ready = tokio::select! {
                biased;
                _ = abort.wait_for(|&a| a) => break Some(true),
                ready = socket.writable() => Ok(ready),
                () = stall.as_mut() => {
                    let due = progressed + self.write_timeout;
                    if due > tokio::time::Instant::now() {
                        stall.as_mut().reset(due);
                        continue;
                    }
                    Err(())
                }
            };
            match ready {
                Ok(Ok(())) => match socket.try_write(&bytes[written..]) {
                    Ok(n) => {
                        progressed = tokio::time::Instant::now();
                        written += n;
                        let now = ends.partition_point(|&end| end <= written);
                        if now > done {
                            let from = if done == 0 { 0 } else { ends[done - 1] };
                            self.delivered(route, (now - done) as u64, ends[now - 1] - from);
                            done = now;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break Some(false),
                },
                // No progress for --write-timeout, or the socket failed:
                // the consumer's task finds out and connects again.
                Ok(Err(_)) | Err(_) => break Some(false),
            }
        };
        let mut q = self.lock();
        q.producer_writing = false;
        if let Some(aborted) = failed {
            let start = if done == 0 { 0 } else { ends[done - 1] };
            let mut rest = done;
            if written > start {
                // Its start went to this connection.
                self.stats.routes[route]
                    .lost
                    .fetch_add(1, Ordering::Relaxed);
                rest += 1;
            }
            let rest_frames = (ends.len() - rest) as u64;
            if rest_frames > 0 {
                if aborted || q.aborted {
                    self.stats.routes[route]
                        .shutdown
                        .fetch_add(rest_frames, Ordering::Relaxed);
                } else {
                    let from = if rest == 0 { 0 } else { ends[rest - 1] };
                    let mut back = BytesMut::with_capacity(bytes.len() - from + q.bytes.len());
                    back.extend_from_slice(&bytes[from..]);
                    back.extend_from_slice(&q.bytes);
                    q.bytes = back;
                    q.runs.push_front(Run {
                        route,
                        frames: rest_frames,
                        len: bytes.len() - from,
                        whole: true,
                    });
                }
            }
            if q.direct.as_ref().is_some_and(|d| Arc::ptr_eq(d, &socket)) {
                q.direct = None;
            }
        }
        drop(q);
        self.ready.notify_one();
        self.room.notify_waiters();
    }

    /// [`offer`](Queue::offer) without waiting.
    fn try_offer(&self, route: usize, bytes: &[u8], ends: &[usize]) -> Offered {
        let frames = ends.len() as u64;
        let mut q = self.lock();
        if q.aborted {
            drop(q);
            self.stats.routes[route]
                .shutdown
                .fetch_add(frames, Ordering::Relaxed);
            return Offered::Done;
        }
        let held = q.bytes.len() + q.inflight;
        // A run larger than the whole buffer passes when nothing waits.
        if held > 0 && held + bytes.len() > self.capacity {
            if self.when_full == WhenFull::Block {
                return Offered::Full;
            }
            let first = !q.dropping;
            q.dropping = true;
            drop(q);
            self.stats.routes[route]
                .full
                .fetch_add(frames, Ordering::Relaxed);
            if first {
                self.log.line(
                    Kind::Other,
                    format_args!(
                        "consumer {}: its queue is full ({} bytes, --route-buffer): frames are dropped and counted",
                        self.name, self.capacity
                    ),
                );
            }
            return Offered::Done;
        }
        q.dropping = false;
        let mut rest = bytes;
        let mut rest_frames = frames;
        if q.runs.is_empty() && !q.busy && !q.producer_writing {
            if let Some(socket) = &q.direct {
                let block = self.when_full == WhenFull::Block;
                match socket.try_write(bytes) {
                    Ok(n) if n == bytes.len() => {
                        drop(q);
                        self.delivered(route, frames, n);
                        return Offered::Done;
                    }
                    // Blocking is the policy: the producer goes on writing
                    // its run itself, as a proxy would.
                    Ok(n) if block => {
                        let socket = socket.clone();
                        q.producer_writing = true;
                        drop(q);
                        let (whole, _) = split_at(ends, n);
                        self.delivered(route, whole.frames, whole.bytes);
                        return Offered::Writing { socket, written: n };
                    }
                    Err(e) if block && e.kind() == std::io::ErrorKind::WouldBlock => {
                        let socket = socket.clone();
                        q.producer_writing = true;
                        return Offered::Writing { socket, written: 0 };
                    }
                    Ok(n) => {
                        let (whole, cut) = split_at(ends, n);
                        self.delivered(route, whole.frames, whole.bytes);
                        rest_frames -= whole.frames;
                        if let Some(tail) = cut {
                            rest_frames -= 1;
                            q.bytes.extend_from_slice(&bytes[n..tail]);
                            q.runs.push_back(Run {
                                route,
                                frames: 1,
                                len: tail - n,
                                whole: false,
                            });
                            rest = &bytes[tail..];
                        } else {
                            rest = &bytes[n..];
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    // The consumer's task finds out why, on its next write
                    // or from the read side.
                    Err(_) => q.direct = None,
                }
            }
        }
        if !rest.is_empty() {
            q.bytes.extend_from_slice(rest);
            q.runs.push_back(Run {
                route,
                frames: rest_frames,
                len: rest.len(),
                whole: true,
            });
        }
        drop(q);
        self.ready.notify_one();
        Offered::Done
    }

    /// Takes everything queued into `bytes` and `runs` (which must be
    /// empty; their buffers trade places with the queue's, so neither is
    /// reallocated in the steady state).
    pub(super) fn take(&self, bytes: &mut BytesMut, runs: &mut VecDeque<Run>) -> Take {
        let mut q = self.lock();
        if q.producer_writing {
            return Take::Empty;
        }
        if q.runs.is_empty() {
            return if q.closed || q.aborted {
                Take::Done
            } else {
                Take::Empty
            };
        }
        std::mem::swap(bytes, &mut q.bytes);
        std::mem::swap(runs, &mut q.runs);
        q.inflight = bytes.len();
        q.busy = true;
        Take::Batch
    }

    /// `written` more bytes of the batch went out: the runs now written
    /// whole are delivered and leave `runs`; `*front` is how much of the
    /// first remaining run is written.
    pub(super) fn progress(&self, runs: &mut VecDeque<Run>, front: &mut usize, written: usize) {
        *front += written;
        while let Some(run) = runs.front() {
            if *front < run.len {
                break;
            }
            *front -= run.len;
            self.delivered(run.route, run.frames, run.len);
            runs.pop_front();
        }
        let mut q = self.lock();
        q.inflight = q.inflight.saturating_sub(written);
        drop(q);
        self.room.notify_waiters();
    }

    /// The batch is written.
    pub(super) fn batch_done(&self) {
        let mut q = self.lock();
        q.busy = false;
        q.inflight = 0;
        let more = !q.runs.is_empty();
        drop(q);
        if more {
            self.ready.notify_one();
        }
        self.room.notify_waiters();
    }

    /// The connection failed with `runs` (the rest of a batch, from `rest`
    /// in `batch`) not written, `front` bytes of the first one written:
    /// the frame cut is lost, the others go back to the front of the queue
    /// (or, after the flush deadline, are counted as dropped at shutdown).
    pub(super) fn fail(&self, batch: &[u8], rest: usize, runs: &mut VecDeque<Run>, front: usize) {
        let mut back = BytesMut::new();
        let mut back_runs = VecDeque::new();
        let mut at = rest;
        let mut first = true;
        while let Some(run) = runs.pop_front() {
            let bytes = &batch[at..at + run.len];
            at += run.len;
            let written = if first { front } else { 0 };
            first = false;
            if written == 0 && run.whole {
                back.extend_from_slice(bytes);
                back_runs.push_back(run);
                continue;
            }
            if !run.whole {
                self.stats.routes[run.route]
                    .lost
                    .fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let (whole, cut) = split(bytes, written, self.limits);
            self.delivered(run.route, whole.frames, whole.bytes);
            let from = match cut {
                Some(end) => {
                    self.stats.routes[run.route]
                        .lost
                        .fetch_add(1, Ordering::Relaxed);
                    end
                }
                None => written,
            };
            if from < bytes.len() {
                back.extend_from_slice(&bytes[from..]);
                back_runs.push_back(Run {
                    route: run.route,
                    frames: count_frames(&bytes[from..], self.limits),
                    len: bytes.len() - from,
                    whole: true,
                });
            }
        }
        let mut q = self.lock();
        q.busy = false;
        q.inflight = 0;
        q.direct = None;
        if q.aborted {
            drop(q);
            for run in back_runs {
                self.stats.routes[run.route]
                    .shutdown
                    .fetch_add(run.frames, Ordering::Relaxed);
            }
            return;
        }
        // A tail left at the front (from a direct write to the connection
        // that failed) cannot go to the next one.
        self.drop_tails(&mut q);
        if !back_runs.is_empty() {
            back.extend_from_slice(&q.bytes);
            q.bytes = back;
            back_runs.extend(q.runs.drain(..));
            q.runs = back_runs;
        }
        drop(q);
        self.room.notify_waiters();
    }

    /// The connection is up: producers may write to it directly (plain
    /// TCP) or not (`None`: TLS).
    pub(super) fn connected(&self, direct: Option<Arc<TcpStream>>) {
        let mut q = self.lock();
        // A tail of a frame cut on the previous connection cannot start
        // this one.
        self.drop_tails(&mut q);
        q.direct = direct;
    }

    /// Drops (as lost) the tails of frames at the front of the queue: their
    /// starts went to a connection that is gone.
    fn drop_tails(&self, q: &mut Queued) {
        while q.runs.front().is_some_and(|r| !r.whole) {
            if let Some(run) = q.runs.pop_front() {
                let _ = q.bytes.split_to(run.len);
                self.stats.routes[run.route]
                    .lost
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The connection is gone: no direct writes.
    pub(super) fn disconnected(&self) {
        self.lock().direct = None;
    }

    /// No producer will offer more: the consumer's task ends once the queue
    /// is written.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// The flush deadline passed: what is queued is counted as dropped at
    /// shutdown, and so is whatever comes.
    pub(super) fn abort(&self) {
        let mut q = self.lock();
        q.aborted = true;
        q.bytes.clear();
        q.direct = None;
        let runs: Vec<Run> = q.runs.drain(..).collect();
        drop(q);
        for run in runs {
            self.stats.routes[run.route]
                .shutdown
                .fetch_add(run.frames, Ordering::Relaxed);
        }
        self.ready.notify_one();
        self.room.notify_waiters();
    }

    /// Counts the runs of an unwritten batch as dropped at shutdown.
    pub(super) fn drop_at_shutdown(&self, runs: &mut VecDeque<Run>) {
        for run in runs.drain(..) {
            self.stats.routes[run.route]
                .shutdown
                .fetch_add(run.frames, Ordering::Relaxed);
        }
        let mut q = self.lock();
        q.busy = false;
        q.inflight = 0;
    }

    /// Closed (or aborted) with nothing left to write: the consumer's task
    /// is done.
    pub(super) fn done_if_idle(&self) -> bool {
        let q = self.lock();
        (q.closed || q.aborted) && q.runs.is_empty() && q.inflight == 0 && !q.producer_writing
    }

    /// Completes once [`done_if_idle`](Queue::done_if_idle) holds (for the
    /// consumer's task while it has no connection).
    pub(super) async fn closed_and_empty(&self) {
        loop {
            let ready = self.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            if self.done_if_idle() {
                return;
            }
            ready.await;
        }
    }
}

/// Frames and bytes of the whole frames at the start of a run.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Whole {
    pub(super) frames: u64,
    pub(super) bytes: usize,
}

/// Splits the run `bytes` (whole frames) at `written`: the frames written
/// whole, and, if `written` falls inside a frame, where that frame ends.
pub(super) fn split(bytes: &[u8], written: usize, limits: Limits) -> (Whole, Option<usize>) {
    let mut whole = Whole::default();
    let mut scanner = FrameScanner::with_limits(limits);
    let mut at = 0;
    while at < written {
        let len = match scanner.scan(&bytes[at..]) {
            Ok(Scan::Complete { len, .. }) => len,
            // Not whole frames (cannot happen: they were scanned before):
            // the rest counts as one frame cut.
            _ => return (whole, Some(bytes.len())),
        };
        if at + len > written {
            return (whole, Some(at + len));
        }
        at += len;
        whole.frames += 1;
        whole.bytes = at;
    }
    (whole, None)
}

/// [`split`] when the frames' ends are known.
pub(super) fn split_at(ends: &[usize], written: usize) -> (Whole, Option<usize>) {
    let k = ends.partition_point(|&end| end <= written);
    let whole = Whole {
        frames: k as u64,
        bytes: if k == 0 { 0 } else { ends[k - 1] },
    };
    let cut = (whole.bytes < written).then(|| ends[k]);
    (whole, cut)
}

/// The number of whole frames in `bytes`.
pub(super) fn count_frames(bytes: &[u8], limits: Limits) -> u64 {
    split(bytes, bytes.len(), limits).0.frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use messageframe::{Frame, Header};

    #[test]
    fn a_run_splits_the_same_with_known_ends_and_by_scanning() {
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for i in 0..5u64 {
            let mut f = Frame::new(Header::new(1, 2, 3, 4).with_counter(i));
            f.add("d", "p", i as i64);
            f.add_attachment("a", vec![0u8; (i * 37) as usize]);
            bytes.extend(f.encode().unwrap());
            ends.push(bytes.len());
        }
        for written in 0..bytes.len() {
            let scanned = split(&bytes, written, Limits::default());
            assert_eq!(scanned, split_at(&ends, written), "at {written}");
            let (whole, cut) = scanned;
            assert!(whole.bytes <= written);
            assert_eq!(cut.is_some(), whole.bytes < written);
        }
        assert_eq!(count_frames(&bytes, Limits::default()), 5);
    }
}

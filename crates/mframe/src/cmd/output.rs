//! The way out to stdout or a file for `sub`, `record -o` and `replay
//! --stream`: a queue bounded in bytes, emptied by a thread of its own.
//!
//! Writing stdout blocks when its reader does not read. Done on the
//! runtime, that stopped everything: the command could neither take
//! messages out of the client (whose buffer then grew to gigabytes) nor see
//! Ctrl-C. Here the network side only moves payloads (shared `Bytes`, not
//! copied) into the queue, and the writer thread checks, formats and writes
//! them. The queue holds at most `--max-pending` bytes of payloads; beyond
//! that the network side either waits ([`Output::push`], for JetStream,
//! which then stops fetching: nothing is lost) or drops the frame and counts
//! it ([`Output::try_push`], for core NATS, which has no flow control: as
//! the NATS clients' own pending limits do).
//!
//! When the command stops, [`Output::finish`] waits a bounded time for the
//! writer: a reader that never reads again cannot hold the process.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use crate::failure::Failure;

/// `--max-pending`'s default: 64 MiB, as the NATS clients' default pending
/// limit for a subscription.
pub(crate) const DEFAULT_MAX_PENDING: u64 = 64 << 20;

/// What the writer does with one payload: `Ok(true)` to go on, `Ok(false)`
/// when it has written enough (`--count`).
pub(crate) type Write<T> = Box<dyn FnMut(&T) -> Result<bool, Failure> + Send>;

/// Writes out what was written so far (when the queue is empty, and at
/// the end).
pub(crate) type Flush = Box<dyn FnMut() -> Result<(), Failure> + Send>;

/// Counters shared by the two sides.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    /// Payloads handed to the queue.
    pub(crate) queued: AtomicU64,
    /// Payloads the writer has taken (written, or reported malformed).
    pub(crate) handled: AtomicU64,
    /// Payloads dropped because the queue was full.
    pub(crate) dropped: AtomicU64,
    pub(crate) dropped_bytes: AtomicU64,
}

impl Counts {
    /// Payloads queued and not yet handled by the writer.
    pub(crate) fn waiting(&self) -> u64 {
        self.queued
            .load(Ordering::Acquire)
            .saturating_sub(self.handled.load(Ordering::Acquire))
    }
}

/// The queue and its writer thread.
pub(crate) struct Output<T> {
    sender: Option<mpsc::Sender<(T, u32)>>,
    space: Arc<Semaphore>,
    budget: u32,
    counts: Arc<Counts>,
    /// Set by the writer when it stops (enough frames, or an error).
    done: Arc<(AtomicBool, Notify)>,
    error: Arc<Mutex<Option<Failure>>>,
    finished: mpsc::Receiver<()>,
}

impl<T: Send + 'static> Output<T> {
    /// Starts the writer thread with `write`; at most `max_pending` bytes
    /// of payloads wait for it.
    pub(crate) fn start(max_pending: u64, mut write: Write<T>, mut flush: Flush) -> Output<T> {
        // Semaphore permits are counted in u32 per acquisition.
        let budget = u32::try_from(max_pending.max(1)).unwrap_or(u32::MAX);
        let space = Arc::new(Semaphore::new(budget as usize));
        let counts = Arc::new(Counts::default());
        let done = Arc::new((AtomicBool::new(false), Notify::new()));
        let error = Arc::new(Mutex::new(None));
        let (sender, receiver) = mpsc::channel::<(T, u32)>();
        let (finished_tx, finished) = mpsc::channel();
        {
            let space = space.clone();
            let counts = counts.clone();
            let done = done.clone();
            let error = error.clone();
            thread::Builder::new()
                .name("mframe-output".to_owned())
                .spawn(move || {
                    let stop = |failure: Option<Failure>| {
                        if let Some(failure) = failure {
                            *error.lock().unwrap_or_else(PoisonError::into_inner) = Some(failure);
                        }
                        done.0.store(true, Ordering::Release);
                        done.1.notify_waiters();
                        // Wakes a network side waiting for space.
                        space.close();
                    };
                    loop {
                        let next = match receiver.try_recv() {
                            Ok(item) => Some(item),
                            Err(mpsc::TryRecvError::Empty) => {
                                // Nothing waits: what was written goes out.
                                if let Err(e) = flush() {
                                    stop(Some(e));
                                    break;
                                }
                                receiver.recv().ok()
                            }
                            Err(mpsc::TryRecvError::Disconnected) => None,
                        };
                        let Some((payload, cost)) = next else {
                            if let Err(e) = flush() {
                                stop(Some(e));
                            } else {
                                stop(None);
                            }
                            break;
                        };
                        let result = write(&payload);
                        counts.handled.fetch_add(1, Ordering::AcqRel);
                        space.add_permits(cost as usize);
                        match result {
                            Ok(true) => {}
                            Ok(false) => {
                                stop(flush().err());
                                break;
                            }
                            Err(e) => {
                                stop(Some(e));
                                break;
                            }
                        }
                    }
                    let _ = finished_tx.send(());
                })
                .expect("start the output thread");
        }
        Output {
            sender: Some(sender),
            space,
            budget,
            counts,
            done,
            error,
            finished,
        }
    }

    pub(crate) fn counts(&self) -> Arc<Counts> {
        self.counts.clone()
    }

    /// Whether the writer has stopped (enough frames written, or an error).
    pub(crate) fn is_done(&self) -> bool {
        self.done.0.load(Ordering::Acquire)
    }

    /// Resolves once the writer has stopped.
    pub(crate) async fn done(&self) {
        loop {
            let notified = self.done.1.notified();
            if self.is_done() {
                return;
            }
            notified.await;
        }
    }

    fn cost(&self, len: usize) -> u32 {
        // A payload larger than the whole budget takes all of it: it waits
        // until the queue is empty, and then goes alone.
        u32::try_from(len).unwrap_or(u32::MAX).clamp(1, self.budget)
    }

    fn send(&self, payload: T, cost: u32) {
        if let Some(sender) = &self.sender {
            self.counts.queued.fetch_add(1, Ordering::AcqRel);
            if sender.send((payload, cost)).is_err() {
                self.counts.handled.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// Queues `payload` if it fits, else drops it and counts it; returns
    /// whether it was queued.
    pub(crate) fn try_push(&self, payload: T, len: usize) -> bool {
        let cost = self.cost(len);
        match self.space.try_acquire_many(cost) {
            Ok(permit) => {
                permit.forget();
                self.send(payload, cost);
                true
            }
            Err(_) => {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                self.counts
                    .dropped_bytes
                    .fetch_add(len as u64, Ordering::Relaxed);
                false
            }
        }
    }

    /// Queues `payload`, waiting for space; `false` if the writer stopped.
    pub(crate) async fn push(&self, payload: T, len: usize) -> bool {
        let cost = self.cost(len);
        match self.space.acquire_many(cost).await {
            Ok(permit) => {
                permit.forget();
                self.send(payload, cost);
                true
            }
            Err(_) => false,
        }
    }

    /// Closes the queue and waits up to `limit` for the writer to write
    /// what it holds. Returns the writer's error, and how many payloads
    /// were left unwritten (a reader that stopped reading).
    pub(crate) fn finish(mut self, limit: Duration) -> (Result<(), Failure>, u64) {
        self.sender = None;
        let left = match self.finished.recv_timeout(limit) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => 0,
            Err(mpsc::RecvTimeoutError::Timeout) => self.counts.waiting(),
        };
        let error = self
            .error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        (error.map_or(Ok(()), Err), left)
    }
}

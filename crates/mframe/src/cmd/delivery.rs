//! What `pub` (and `replay --to`) can vouch for on core NATS, which has no
//! acknowledgement: checkpoints through the server.
//!
//! A checkpoint is a message to an inbox of mframe's own that comes back
//! through the server on the same connection. When it comes back and the
//! client has not connected again since the first frame of the window was
//! published (async-nats counts connections, `Statistics::connects`), the
//! server has processed every frame of the window, in order, and passed
//! each on to the subscribers it had. Otherwise (the connection broke, was
//! re-established, or the checkpoint did not come back in time) the window's
//! frames *may be lost*: some were in the socket's buffers when the
//! connection broke, and core NATS does not say which. They are kept in a
//! list of ranges, named at the end, and the command exits 1.
//!
//! A window closes every [`WINDOW_FRAMES`] frames or [`WINDOW_BYTES`] bytes
//! (so at most that much is ever unconfirmed: the publish queue is bounded
//! in bytes through it), when the input pauses and the window is older than
//! [`IDLE_CHECKPOINT`], and at the end.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use messageframe::Header;
use messageframe_nats::async_nats::Subscriber;
use messageframe_nats::Client;

use crate::plural::count;

/// The most frames a window holds.
pub(crate) const WINDOW_FRAMES: usize = 4096;
/// The most bytes a window holds (the last frame may cross it).
pub(crate) const WINDOW_BYTES: usize = 4 << 20;
/// A pause in the input closes a window at least this old.
pub(crate) const IDLE_CHECKPOINT: Duration = Duration::from_millis(200);
/// How long a checkpoint waits for its message to come back.
pub(crate) const CHECKPOINT_WAIT: Duration = Duration::from_secs(10);

/// A frame published: its place in the input (or its stream sequence) and
/// its header's source and counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameId {
    pub(crate) index: u64,
    pub(crate) source: u32,
    pub(crate) counter: u64,
}

impl FrameId {
    pub(crate) fn new(index: u64, header: &Header) -> FrameId {
        FrameId {
            index,
            source: header.source(),
            counter: header.counter(),
        }
    }
}

/// Consecutive frames: indices one after the other, one source, counters
/// one after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) first: FrameId,
    pub(crate) last: FrameId,
}

impl Run {
    fn frames(&self) -> u64 {
        self.last.index - self.first.index + 1
    }

    fn extends(&self, next: &FrameId) -> bool {
        next.index == self.last.index + 1
            && next.source == self.last.source
            && next.counter == self.last.counter.wrapping_add(1)
    }
}

/// Frames that may be lost, as runs.
#[derive(Debug, Default)]
pub(crate) struct Lost {
    runs: Vec<Run>,
    frames: u64,
}

impl Lost {
    pub(crate) fn add(&mut self, id: FrameId) {
        self.frames += 1;
        match self.runs.last_mut() {
            Some(run) if run.extends(&id) => run.last = id,
            _ => self.runs.push(Run {
                first: id,
                last: id,
            }),
        }
    }

    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.frames == 0
    }

    /// The frames, by runs: "#12..=#20 (source 60, counters 12..=20)";
    /// at most `shown` runs, then how many more.
    pub(crate) fn describe(&self, what: &str, shown: usize) -> String {
        let mut text = String::new();
        for (i, run) in self.runs.iter().take(shown).enumerate() {
            if i > 0 {
                text.push_str(", ");
            }
            let (a, b) = (run.first, run.last);
            if run.frames() == 1 {
                let _ = write!(
                    text,
                    "{what} #{} (source {}, counter {})",
                    a.index, a.source, a.counter
                );
            } else {
                let _ = write!(
                    text,
                    "{what}s #{}..=#{} (source {}, counters {}..={})",
                    a.index, b.index, a.source, a.counter, b.counter
                );
            }
        }
        if self.runs.len() > shown {
            let rest: u64 = self.runs[shown..].iter().map(Run::frames).sum();
            let _ = write!(
                text,
                ", and {} in {}",
                count(rest, what),
                count((self.runs.len() - shown) as u64, "more run")
            );
        }
        text
    }
}

/// The frames published since the last checkpoint, and what the
/// checkpoints found.
pub(crate) struct Delivery {
    echo: Option<Subscriber>,
    inbox: String,
    checkpoints: u64,
    window: Vec<FrameId>,
    window_bytes: usize,
    window_started: Instant,
    /// `Statistics::connects` when the window's first frame was published.
    window_connects: u64,
    pub(crate) lost: Lost,
    /// Frames confirmed by a checkpoint.
    pub(crate) confirmed: u64,
    /// `Statistics::connects` when the command connected.
    connects_at_start: u64,
}

impl Delivery {
    pub(crate) async fn new(client: &Client) -> Result<Delivery, String> {
        let nats = client.nats();
        let inbox = nats.new_inbox();
        let echo = nats
            .subscribe(format!("{inbox}.*"))
            .await
            .map_err(|e| format!("cannot subscribe to its checkpoint inbox: {e}"))?;
        Ok(Delivery {
            echo: Some(echo),
            inbox,
            checkpoints: 0,
            window: Vec::with_capacity(WINDOW_FRAMES),
            window_bytes: 0,
            window_started: Instant::now(),
            window_connects: 0,
            lost: Lost::default(),
            confirmed: 0,
            connects_at_start: Delivery::connects(client),
        })
    }

    /// How often the client connected again since the start.
    pub(crate) fn reconnections(&self, client: &Client) -> u64 {
        Delivery::connects(client).saturating_sub(self.connects_at_start)
    }

    fn connects(client: &Client) -> u64 {
        client.nats().statistics().connects.load(Ordering::Acquire)
    }

    /// Notes a frame about to be published; whether the window is full.
    pub(crate) fn published(&mut self, client: &Client, id: FrameId, len: usize) -> bool {
        if self.window.is_empty() {
            self.window_connects = Delivery::connects(client);
            self.window_started = Instant::now();
        }
        self.window.push(id);
        self.window_bytes += len;
        self.window.len() >= WINDOW_FRAMES || self.window_bytes >= WINDOW_BYTES
    }

    /// Whether a pause in the input should close the window.
    pub(crate) fn idle_due(&self) -> bool {
        !self.window.is_empty() && self.window_started.elapsed() >= IDLE_CHECKPOINT
    }

    /// Closes the window: confirmed, or every frame of it may be lost.
    /// Returns whether it was confirmed.
    pub(crate) async fn checkpoint(&mut self, client: &Client) -> bool {
        if self.window.is_empty() {
            return true;
        }
        let back = self.round_trip(client).await;
        let confirmed = back && Delivery::connects(client) == self.window_connects;
        if confirmed {
            self.confirmed += self.window.len() as u64;
        } else {
            for id in &self.window {
                self.lost.add(*id);
            }
        }
        self.window.clear();
        self.window_bytes = 0;
        confirmed
    }

    /// Sends a message to the checkpoint inbox and waits (bounded) until it
    /// comes back.
    async fn round_trip(&mut self, client: &Client) -> bool {
        let Some(echo) = &mut self.echo else {
            return false;
        };
        self.checkpoints += 1;
        let n = self.checkpoints;
        let subject = format!("{}.{n}", self.inbox);
        let nats = client.nats();
        if nats.publish(subject, Bytes::new()).await.is_err() || nats.flush().await.is_err() {
            return false;
        }
        let wanted = n.to_string();
        let waited = tokio::time::timeout(CHECKPOINT_WAIT, async {
            while let Some(message) = echo.next().await {
                // An earlier checkpoint's message, late: not this one.
                if message.subject.as_str().rsplit('.').next() == Some(wanted.as_str()) {
                    return true;
                }
            }
            false
        })
        .await;
        matches!(waited, Ok(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(index: u64, source: u32, counter: u64) -> FrameId {
        FrameId {
            index,
            source,
            counter,
        }
    }

    #[test]
    fn lost_frames_are_named_by_runs() {
        let mut lost = Lost::default();
        for i in 10..15 {
            lost.add(id(i, 60, 100 + i));
        }
        lost.add(id(15, 61, 7));
        lost.add(id(30, 61, 8));
        assert_eq!(lost.frames(), 7);
        assert_eq!(
            lost.describe("frame", 10),
            "frames #10..=#14 (source 60, counters 110..=114), frame #15 (source 61, counter 7), \
             frame #30 (source 61, counter 8)"
        );
        assert_eq!(
            lost.describe("frame", 1),
            "frames #10..=#14 (source 60, counters 110..=114), and 2 frames in 2 more runs"
        );
    }
}

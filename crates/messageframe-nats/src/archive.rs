//! JetStream: record every frame of a prefix, and replay from a time or a
//! sequence number.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy, ReplayPolicy};
use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::stream::{Config as StreamConfig, StorageType};
use async_nats::jetstream::{self, Context as JetStream};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt as _};
use messageframe::{Decoder, Frame, Header};
use tokio::io::AsyncRead;

use crate::split::{FrameSplitter, Pacer};
use crate::subscription::check_extent;
use crate::{Client, Error, Filter, Pace, Received};

/// How many acknowledgements [`Archive::publish_all`] waits for at once: a
/// window deep enough to keep the server busy, small enough to bound what
/// is in flight.
const ACK_WINDOW: usize = 256;

/// How long the server waits for a replayed frame's acknowledgement before
/// it sends the frame again (JetStream's default).
const ACK_WAIT: Duration = Duration::from_secs(30);

/// The most bytes of frames a replay asks the server for at once (each pull
/// request's `max_bytes`), unless the server's `max_payload` is larger: the
/// frames fetched ahead and not yet handed out are bounded in bytes, not
/// only in count (200 per pull).
pub(crate) const BATCH_BYTES: usize = 4 << 20;

/// The frames a replay fetches per pull request.
const BATCH_FRAMES: usize = 200;

/// The `max_bytes` of a replay's pull requests: [`BATCH_BYTES`], or the
/// largest frame the server accepts (a frame larger than a pull's
/// `max_bytes` would never be delivered).
fn batch_bytes(max_payload: usize) -> usize {
    BATCH_BYTES.max(max_payload)
}

/// Starts pulling frames through `consumer`, bounded per request.
async fn pull(
    consumer: &jetstream::consumer::Consumer<pull::Config>,
    batch_bytes: usize,
) -> Result<pull::Stream, Error> {
    consumer
        .stream()
        .max_messages_per_batch(BATCH_FRAMES)
        .max_bytes_per_batch(batch_bytes)
        .messages()
        .await
        .map_err(|e| Error::nats("replay", e))
}

/// How long a replay waits for the next frame before it asks the server how
/// its consumer stands (done, or waiting for a lost pull request).
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// How the JetStream stream of a prefix is set up when
/// [`Client::archive`] creates it. An existing stream of that name is used
/// as it is (its settings are not changed), provided it captures the
/// prefix.
///
/// ```
/// use std::time::Duration;
/// use messageframe_nats::ArchiveConfig;
///
/// let config = ArchiveConfig::new("FLEET")
///     .replicas(3)
///     .max_age(Duration::from_secs(7 * 24 * 3600))
///     .max_bytes(50 << 30);
/// assert_eq!(config.name(), "FLEET");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveConfig {
    name: String,
    replicas: usize,
    memory: bool,
    max_age: Option<Duration>,
    max_bytes: Option<u64>,
    max_frames: Option<u64>,
}

impl ArchiveConfig {
    /// A stream named `name` (letters, digits, `-`, `_`; no dots or
    /// spaces), one replica, on disk, no limits.
    ///
    /// ```
    /// # use messageframe_nats::ArchiveConfig;
    /// let config = ArchiveConfig::new("TELEMETRY");
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn new(name: &str) -> Self {
        ArchiveConfig {
            name: name.to_owned(),
            replicas: 1,
            memory: false,
            max_age: None,
            max_bytes: None,
            max_frames: None,
        }
    }

    /// The stream's name.
    ///
    /// ```
    /// # use messageframe_nats::ArchiveConfig;
    /// assert_eq!(ArchiveConfig::new("A").name(), "A");
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Copies kept on different servers of a cluster (1 to 5): with 3, a
    /// frame is acknowledged once two servers have it, and the stream goes
    /// on when one server dies.
    ///
    /// ```
    /// # use messageframe_nats::ArchiveConfig;
    /// let config = ArchiveConfig::new("A").replicas(3);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas;
        self
    }

    /// Keeps the stream in memory instead of on disk (lost when the servers
    /// stop).
    ///
    /// ```
    /// # use messageframe_nats::ArchiveConfig;
    /// let config = ArchiveConfig::new("A").in_memory();
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn in_memory(mut self) -> Self {
        self.memory = true;
        self
    }

    /// Drops frames older than this.
    ///
    /// ```
    /// # use messageframe_nats::ArchiveConfig;
    /// let config = ArchiveConfig::new("A").max_age(std::time::Duration::from_secs(3600));
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = Some(age);
        self
    }

    /// Drops the oldest frames beyond this many bytes.
    ///
    /// ```
    /// # use messageframe_nats::ArchiveConfig;
    /// let config = ArchiveConfig::new("A").max_bytes(1 << 30);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = Some(bytes);
        self
    }

    /// Drops the oldest frames beyond this many.
    ///
    /// ```
    /// # use messageframe_nats::ArchiveConfig;
    /// let config = ArchiveConfig::new("A").max_frames(1_000_000);
    /// # let _ = config;
    /// ```
    #[must_use]
    pub fn max_frames(mut self, frames: u64) -> Self {
        self.max_frames = Some(frames);
        self
    }

    fn stream_config(&self, subject: String) -> StreamConfig {
        let limit = |v: Option<u64>| v.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX));
        StreamConfig {
            name: self.name.clone(),
            subjects: vec![subject],
            num_replicas: self.replicas,
            storage: if self.memory {
                StorageType::Memory
            } else {
                StorageType::File
            },
            max_age: self.max_age.unwrap_or_default(),
            max_bytes: limit(self.max_bytes),
            max_messages: limit(self.max_frames),
            ..StreamConfig::default()
        }
    }
}

/// The JetStream stream of a prefix: it records every frame published under
/// `<prefix>.>` (by [`Client::publish`], by MQTT devices, by anyone), and
/// replays them from a sequence number or a time through durable consumers.
/// Made by [`Client::archive`].
///
/// ```no_run
/// # async fn run() -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe::{Frame, Header};
/// use messageframe_nats::{ArchiveConfig, Client, ReplayOptions};
///
/// let client = Client::connect("nats://127.0.0.1:4222", "fleet").await?;
/// let archive = client.archive(ArchiveConfig::new("FLEET")).await?;
///
/// // Recorded once JetStream acknowledges it.
/// let sequence = archive.publish(&Frame::new(Header::new(1, 7, 50, 99))).await?;
///
/// // Played back from that sequence number, then the replay ends.
/// let mut replay = archive.replay(ReplayOptions::new("player").from_sequence(sequence)).await?;
/// while let Some(recorded) = replay.next().await {
///     let recorded = recorded?;
///     println!("#{} {:?}", recorded.sequence(), recorded.frame().header());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Archive {
    client: Client,
    js: JetStream,
    stream: jetstream::stream::Stream,
}

impl Archive {
    pub(crate) async fn open(client: Client, config: ArchiveConfig) -> Result<Archive, Error> {
        let js = jetstream::new(client.nats().clone());
        let subject = client.subjects().all();
        let stream = js
            .get_or_create_stream(config.stream_config(subject.clone()))
            .await
            .map_err(|e| Error::nats("create stream", e))?;
        let captures = stream.cached_info().config.subjects.contains(&subject);
        if !captures {
            return Err(Error::nats(
                "open stream",
                format!(
                    "stream `{}` exists but does not capture `{subject}` (its subjects: {:?})",
                    config.name,
                    stream.cached_info().config.subjects
                ),
            ));
        }
        Ok(Archive { client, js, stream })
    }

    /// The stream's name.
    ///
    /// ```no_run
    /// # fn f(archive: messageframe_nats::Archive) { assert_eq!(archive.name(), "FLEET"); }
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.stream.cached_info().config.name
    }

    /// Publishes `frame` on the subject of its header and waits until
    /// JetStream has stored it (on a majority of the replicas); returns its
    /// sequence number in the stream. A frame larger than the server's
    /// `max_payload` is [`Error::PayloadTooLarge`] and is not sent.
    ///
    /// ```no_run
    /// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
    /// use messageframe::{Frame, Header};
    /// let sequence = archive.publish(&Frame::new(Header::new(1, 2, 3, 4))).await?;
    /// # let _ = sequence; Ok(()) }
    /// ```
    pub async fn publish(&self, frame: &Frame) -> Result<u64, Error> {
        let payload = self.client.encode(frame)?;
        self.client.check_size(payload.len())?;
        let ack = self.send(frame.header(), payload).await?;
        wait_ack(ack).await
    }

    /// Publishes bytes that hold one encoded frame, unchanged (only the
    /// header and the extent are checked, as [`Client::publish_bytes`]),
    /// and waits until JetStream has stored it; returns its sequence
    /// number.
    ///
    /// ```no_run
    /// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
    /// use messageframe::{Frame, Header};
    /// let sequence = archive.publish_bytes(Frame::new(Header::new(1, 2, 3, 4)).encode().expect("the frame encodes")).await?;
    /// # let _ = sequence; Ok(()) }
    /// ```
    pub async fn publish_bytes(&self, bytes: impl Into<Bytes>) -> Result<u64, Error> {
        let bytes = bytes.into();
        let header =
            check_extent(&bytes).map_err(|error| Error::InvalidFrame { offset: 0, error })?;
        self.client.check_size(bytes.len())?;
        let ack = self.send(&header, bytes).await?;
        wait_ack(ack).await
    }

    /// Records every frame of a byte stream of concatenated frames (a file),
    /// unchanged, each on the subject of its header, at the given pace;
    /// returns how many JetStream acknowledged, after all of them were.
    /// Up to 256 acknowledgements are awaited at once. Stops at the first
    /// invalid or oversize frame, or failed publish.
    ///
    /// ```no_run
    /// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
    /// use messageframe_nats::Pace;
    /// let file = tokio::fs::File::open("capture.mfb").await?;
    /// let stored = archive.publish_all(file, Pace::AsFastAsPossible).await?;
    /// # let _ = stored; Ok(()) }
    /// ```
    pub async fn publish_all(
        &self,
        reader: impl AsyncRead + Unpin,
        pace: Pace,
    ) -> Result<u64, Error> {
        let mut frames = FrameSplitter::new(reader);
        let mut pacer = Pacer::new(pace);
        let mut in_flight = VecDeque::with_capacity(ACK_WINDOW);
        let mut stored = 0;
        let max_payload = self.client.max_payload();
        while let Some((header, bytes)) = frames.next_frame().await? {
            if bytes.len() > max_payload {
                return Err(Error::PayloadTooLarge {
                    size: bytes.len(),
                    max_payload,
                });
            }
            pacer.wait(&header).await;
            if in_flight.len() == ACK_WINDOW {
                if let Some(ack) = in_flight.pop_front() {
                    wait_ack(ack).await?;
                    stored += 1;
                }
            }
            in_flight.push_back(self.send(&header, bytes).await?);
        }
        for ack in in_flight {
            wait_ack(ack).await?;
            stored += 1;
        }
        Ok(stored)
    }

    /// Replays recorded frames through a durable consumer (see
    /// [`ReplayOptions`] and [`Replay`]).
    ///
    /// ```no_run
    /// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
    /// use std::time::{Duration, SystemTime};
    /// use messageframe_nats::{Filter, Pace, ReplayOptions};
    ///
    /// let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    /// let options = ReplayOptions::new("last-hour")
    ///     .from_time(hour_ago)
    ///     .filter(Filter::any().source(50))
    ///     .pace(Pace::Original);
    /// let replay = archive.replay(options).await?;
    /// # let _ = replay; Ok(()) }
    /// ```
    pub async fn replay(&self, options: ReplayOptions) -> Result<Replay, Error> {
        let filter_subject = if options.filter == Filter::any() {
            String::new()
        } else {
            self.client.subjects().filter(&options.filter)
        };
        let config = pull::Config {
            durable_name: Some(options.durable.clone()),
            deliver_policy: match options.start {
                Start::First => DeliverPolicy::All,
                Start::Sequence(start_sequence) => DeliverPolicy::ByStartSequence {
                    start_sequence: start_sequence.max(1),
                },
                Start::Time(time) => DeliverPolicy::ByStartTime {
                    start_time: time.into(),
                },
                Start::New => DeliverPolicy::New,
            },
            ack_policy: AckPolicy::Explicit,
            ack_wait: options.ack_wait,
            replay_policy: match options.pace {
                Pace::AsFastAsPossible => ReplayPolicy::Instant,
                Pace::Original => ReplayPolicy::Original,
            },
            filter_subject,
            inactive_threshold: options.inactive_threshold.unwrap_or_default(),
            ..pull::Config::default()
        };
        let consumer: jetstream::consumer::Consumer<pull::Config> = self
            .stream
            .get_or_create_consumer(&options.durable, config)
            .await
            .map_err(|e| Error::nats("create consumer", e))?;
        let info = consumer.cached_info();
        let nothing_left = info.num_pending == 0 && info.num_ack_pending == 0;
        let batch_bytes = batch_bytes(self.client.max_payload());
        let messages = pull(&consumer, batch_bytes).await?;
        Ok(Replay::new(ReplayState {
            consumer,
            messages,
            batch_bytes,
            decoder: self.client.decoder(),
            follow: options.follow,
            done: nothing_left && !options.follow,
        }))
    }

    /// Deletes a durable consumer: the next replay under that name starts
    /// afresh from its own options.
    ///
    /// ```no_run
    /// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
    /// archive.delete_replay("player").await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_replay(&self, durable: &str) -> Result<(), Error> {
        self.stream
            .delete_consumer(durable)
            .await
            .map(drop)
            .map_err(|e| Error::nats("delete consumer", e))
    }

    /// What the stream holds now.
    ///
    /// ```no_run
    /// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
    /// let state = archive.state().await?;
    /// println!("{} frames, sequences {}..={}", state.frames, state.first_sequence, state.last_sequence);
    /// # Ok(()) }
    /// ```
    pub async fn state(&self) -> Result<ArchiveState, Error> {
        let info = self
            .stream
            .get_info()
            .await
            .map_err(|e| Error::nats("stream info", e))?;
        Ok(ArchiveState {
            frames: info.state.messages,
            bytes: info.state.bytes,
            first_sequence: info.state.first_sequence,
            last_sequence: info.state.last_sequence,
            leader: info.cluster.and_then(|c| c.leader),
        })
    }

    async fn send(&self, header: &Header, payload: Bytes) -> Result<PublishAckFuture, Error> {
        self.js
            .publish(self.client.subject(header), payload)
            .await
            .map_err(|e| Error::nats("publish", e))
    }
}

async fn wait_ack(ack: PublishAckFuture) -> Result<u64, Error> {
    ack.await
        .map(|ack| ack.sequence)
        .map_err(|e| Error::nats("publish acknowledgement", e))
}

/// What an [`Archive`] holds, from [`Archive::state`].
///
/// ```no_run
/// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
/// let state = archive.state().await?;
/// assert!(state.first_sequence <= state.last_sequence + 1);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveState {
    /// Frames stored.
    pub frames: u64,
    /// Bytes stored.
    pub bytes: u64,
    /// Sequence number of the oldest frame stored.
    pub first_sequence: u64,
    /// Sequence number of the newest frame stored.
    pub last_sequence: u64,
    /// The server that leads the stream, in a cluster.
    pub leader: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    First,
    Sequence(u64),
    Time(SystemTime),
    New,
}

/// Where and how a [`Replay`] reads: the durable consumer's name, the first
/// frame, a subject filter, the pace, and whether to stop once caught up.
///
/// The consumer is durable: it remembers what was acknowledged, so a replay
/// that stops (or crashes) and is started again under the same name goes
/// on where it left off, with the options it was first created with. To
/// start over, [`Archive::delete_replay`] first.
///
/// ```
/// use messageframe_nats::{Filter, Pace, ReplayOptions};
///
/// let options = ReplayOptions::new("ground-3")
///     .from_sequence(1_000)
///     .filter(Filter::any().target(99))
///     .pace(Pace::Original)
///     .follow(true);
/// assert_eq!(options.durable(), "ground-3");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOptions {
    durable: String,
    start: Start,
    filter: Filter,
    pace: Pace,
    follow: bool,
    ack_wait: Duration,
    inactive_threshold: Option<Duration>,
}

impl ReplayOptions {
    /// A replay under the durable consumer name `durable` (letters, digits,
    /// `-`, `_`), from the first frame stored, every frame, as fast as
    /// possible, ending once caught up.
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// let options = ReplayOptions::new("player");
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn new(durable: &str) -> Self {
        ReplayOptions {
            durable: durable.to_owned(),
            start: Start::First,
            filter: Filter::any(),
            pace: Pace::AsFastAsPossible,
            follow: false,
            ack_wait: ACK_WAIT,
            inactive_threshold: None,
        }
    }

    /// The durable consumer's name.
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// assert_eq!(ReplayOptions::new("p").durable(), "p");
    /// ```
    #[must_use]
    pub fn durable(&self) -> &str {
        &self.durable
    }

    /// Starts at this stream sequence number (1 is the first frame ever
    /// stored).
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// let options = ReplayOptions::new("p").from_sequence(42);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn from_sequence(mut self, sequence: u64) -> Self {
        self.start = Start::Sequence(sequence);
        self
    }

    /// Starts at the first frame the server stored at or after `time`.
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// let options = ReplayOptions::new("p").from_time(std::time::SystemTime::now());
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn from_time(mut self, time: SystemTime) -> Self {
        self.start = Start::Time(time);
        self
    }

    /// Skips what is stored: only frames recorded from now on (live
    /// tailing with [`follow`](ReplayOptions::follow)).
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// let options = ReplayOptions::new("p").only_new().follow(true);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn only_new(mut self) -> Self {
        self.start = Start::New;
        self
    }

    /// Only frames whose subject passes `filter`.
    ///
    /// ```
    /// # use messageframe_nats::{Filter, ReplayOptions};
    /// let options = ReplayOptions::new("p").filter(Filter::any().message_type(7));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// As fast as possible (the default), or with the original spacing.
    ///
    /// ```
    /// # use messageframe_nats::{Pace, ReplayOptions};
    /// let options = ReplayOptions::new("p").pace(Pace::Original);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn pace(mut self, pace: Pace) -> Self {
        self.pace = pace;
        self
    }

    /// With `false` (the default) the replay ends after the last frame
    /// stored when it reaches it; with `true` it goes on with frames
    /// recorded afterwards, without end.
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// let options = ReplayOptions::new("p").follow(true);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn follow(mut self, follow: bool) -> Self {
        self.follow = follow;
        self
    }

    /// How long the server keeps frames it sent but that were not handed
    /// out (a replay dropped with frames fetched ahead) before it sends them
    /// again to the next replay under this name. Default 30 s. Set when the
    /// durable consumer is created.
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// let options = ReplayOptions::new("p").ack_wait(std::time::Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn ack_wait(mut self, ack_wait: Duration) -> Self {
        self.ack_wait = ack_wait;
        self
    }

    /// Lets the server delete the durable consumer once nobody has read
    /// through it for this long (JetStream's `inactive_threshold`; without
    /// it the consumer stays until [`Archive::delete_replay`]). For replays
    /// meant to be thrown away, so that one whose program died before
    /// deleting it does not stay on the server for ever. Set when the
    /// durable consumer is created.
    ///
    /// ```
    /// # use messageframe_nats::ReplayOptions;
    /// let options = ReplayOptions::new("p").inactive_threshold(std::time::Duration::from_secs(300));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn inactive_threshold(mut self, threshold: Duration) -> Self {
        self.inactive_threshold = Some(threshold);
        self
    }
}

/// A frame played back from an [`Archive`]: the frame as a subscription
/// delivers it ([`Received`]), with its place in the stream.
///
/// ```no_run
/// # fn f(recorded: messageframe_nats::Recorded) {
/// println!("#{} stored at {:?}: {:?}", recorded.sequence(), recorded.stored_at(), recorded.frame());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Recorded {
    sequence: u64,
    stored_at: SystemTime,
    pending: u64,
    received: Received,
}

impl Recorded {
    /// Its sequence number in the stream.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Recorded) { assert!(r.sequence() >= 1); }
    /// ```
    #[must_use]
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// When the server stored it.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Recorded) { let _ = r.stored_at(); }
    /// ```
    #[must_use]
    pub fn stored_at(&self) -> SystemTime {
        self.stored_at
    }

    /// How many frames of the replay come after this one (as the server
    /// counted when it sent it).
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Recorded) { let _ = r.pending(); }
    /// ```
    #[must_use]
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// The decoded frame.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Recorded) { let _ = r.frame().header(); }
    /// ```
    #[must_use]
    pub fn frame(&self) -> &Frame {
        self.received.frame()
    }

    /// The subject it was published on.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Recorded) { let _ = r.subject(); }
    /// ```
    #[must_use]
    pub fn subject(&self) -> &str {
        self.received.subject()
    }

    /// The frame's bytes as stored, unchanged (to write to a file of
    /// concatenated frames).
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Recorded) { let _ = r.payload().len(); }
    /// ```
    #[must_use]
    pub fn payload(&self) -> &Bytes {
        self.received.payload()
    }

    /// The frame with its subject and payload.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Recorded) { let frame = r.into_received().into_frame(); let _ = frame; }
    /// ```
    #[must_use]
    pub fn into_received(self) -> Received {
        self.received
    }
}

/// Recorded frames played back, oldest first, as a [`Stream`] of
/// `Result<Recorded, Error>`.
///
/// Each frame is acknowledged as it is handed out, so the durable
/// consumer's position is the last frame handed out: a replay started
/// again under the same name goes on after it. Frames the client had
/// fetched ahead but not handed out when a replay was dropped are sent
/// again once the consumer's [`ack_wait`](ReplayOptions::ack_wait) has
/// passed. A payload that is not a valid frame is an [`Error::Malformed`]
/// item; the replay goes on. Without [`follow`](ReplayOptions::follow) the
/// stream ends once the consumer has nothing left to deliver (nothing
/// pending, nothing awaiting acknowledgement), as the server says when asked
/// after the frame that reported nothing pending, or after a second without
/// frames. A second without frames while some are pending and no pull
/// request is waiting at the server (one lost during a leader election)
/// starts the pulls again.
///
/// ```no_run
/// # async fn run(archive: messageframe_nats::Archive) -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe_nats::ReplayOptions;
/// use tokio::io::AsyncWriteExt;
///
/// // Recording to a file of concatenated frames: the payloads, unchanged.
/// let mut file = tokio::fs::File::create("recording.mfb").await?;
/// let mut replay = archive.replay(ReplayOptions::new("to-file")).await?;
/// while let Some(recorded) = replay.next().await {
///     file.write_all(recorded?.payload()).await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "a replay does nothing unless polled"]
pub struct Replay {
    inner: BoxStream<'static, Result<Recorded, Error>>,
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replay").finish_non_exhaustive()
    }
}

struct ReplayState {
    consumer: jetstream::consumer::Consumer<pull::Config>,
    messages: pull::Stream,
    /// Each pull request's `max_bytes`.
    batch_bytes: usize,
    decoder: Decoder,
    follow: bool,
    done: bool,
}

impl Replay {
    fn new(state: ReplayState) -> Self {
        let inner = futures_util::stream::unfold(state, |mut state| async move {
            loop {
                if state.done {
                    return None;
                }
                // A quiet consumer is asked how it stands, because neither
                // the stream of pulls nor the "pending" count a frame
                // carries can be relied on alone after a failover.
                let next = match tokio::time::timeout(IDLE_CHECK, state.messages.next()).await {
                    Ok(next) => next,
                    Err(_) => match state.idle().await {
                        Ok(()) => continue,
                        Err(e) => return Some((Err(e), state)),
                    },
                };
                let item = match next? {
                    Ok(message) => state.recorded(message).await,
                    Err(e) => Err(Error::nats("replay", e)),
                };
                return Some((item, state));
            }
        });
        Replay {
            inner: inner.boxed(),
        }
    }
}

impl ReplayState {
    /// Whether the consumer has nothing left to deliver: nothing pending,
    /// nothing awaiting acknowledgement or redelivery.
    async fn nothing_left(&mut self) -> Result<bool, Error> {
        let info = self.info().await?;
        Ok(info.num_pending == 0 && info.num_ack_pending == 0)
    }

    /// No frame for a while: the replay ends if the consumer has nothing
    /// left (and does not follow); if frames are pending but no pull
    /// request of ours is waiting at the server (one was lost while a
    /// consumer leader was being elected: seen in the failover test, where
    /// the client's own retry comes only after missed heartbeats, tens of
    /// seconds later), the pulls start again.
    async fn idle(&mut self) -> Result<(), Error> {
        let info = self.info().await?;
        let (pending, acks, waiting) = (info.num_pending, info.num_ack_pending, info.num_waiting);
        if pending == 0 && acks == 0 {
            self.done = !self.follow;
        } else if pending > 0 && waiting == 0 {
            self.messages = pull(&self.consumer, self.batch_bytes).await?;
        }
        Ok(())
    }

    async fn info(&mut self) -> Result<&async_nats::jetstream::consumer::Info, Error> {
        self.consumer
            .info()
            .await
            .map_err(|e| Error::nats("consumer info", e))
    }

    async fn recorded(&mut self, message: jetstream::Message) -> Result<Recorded, Error> {
        let (sequence, stored_at, pending) = match message.info() {
            Ok(info) => (
                info.stream_sequence,
                SystemTime::from(info.published),
                info.pending,
            ),
            Err(e) => return Err(Error::nats("replay metadata", e)),
        };
        if !self.follow && pending == 0 {
            // Possibly the last one: once the server has this
            // acknowledgement, ask it whether anything is left (frames
            // awaiting redelivery do not count as pending).
            message
                .double_ack()
                .await
                .map_err(|e| Error::nats("acknowledge", e))?;
            self.done = self.nothing_left().await?;
        } else {
            message
                .ack()
                .await
                .map_err(|e| Error::nats("acknowledge", e))?;
        }
        let subject = message.message.subject.clone();
        let payload = message.message.payload.clone();
        let mut frame = Frame::default();
        match self.decoder.decode_shared_into(&mut frame, &payload) {
            Ok(()) => Ok(Recorded {
                sequence,
                stored_at,
                pending,
                received: Received::new(subject, payload, frame),
            }),
            Err(error) => Err(Error::Malformed {
                subject: subject.as_str().to_owned(),
                error,
            }),
        }
    }
}

impl Stream for Replay {
    type Item = Result<Recorded, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.poll_next_unpin(cx)
    }
}

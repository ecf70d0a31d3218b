//! The client: publish frames on subjects built from their headers,
//! subscribe to them with header-based filters.

use std::sync::Arc;

use async_nats::client::PublishErrorKind;
use async_nats::{ConnectOptions, Subject, ToServerAddrs};
use bytes::Bytes;
use futures_util::StreamExt as _;
use messageframe::{Decoder, Frame, Header};
use tokio::io::AsyncRead;

use crate::event::{ConnectionEvents, EventHub};
use crate::publish::{PayloadPool, SubjectCache};
use crate::split::{FrameSplitter, Pacer};
use crate::subscription::check_extent;
use crate::{Archive, ArchiveConfig, Error, Filter, Pace, Subjects, Subscription};

/// The longest [`Client::subscribe`] waits for the server to confirm a
/// subscription.
const ROUND_TRIP_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A connection to NATS that speaks frames: [`publish`](Client::publish) puts
/// a frame on the subject built from its header
/// (`<prefix>.<target>.<message_type>.<source>`, see [`Subjects`]),
/// [`subscribe`](Client::subscribe) yields the frames of a [`Filter`].
///
/// The payload of every message is the frame's bytes, unchanged: any
/// MessagePack reader decodes it, and NATS tools see it as it is.
///
/// The client reconnects on its own when the server goes away (to any
/// server of a cluster it knows of), and reports it as
/// [`ConnectionEvent`](crate::ConnectionEvent)s in every subscription and in
/// [`events`](Client::events). Cloning is cheap and shares the connection.
///
/// ```no_run
/// # async fn run() -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe::{Frame, Header};
/// use messageframe_nats::{Client, Event, Filter};
///
/// let client = Client::connect("nats://127.0.0.1:4222", "fleet").await?;
/// let mut frames = client.subscribe(Filter::any().target(99)).await?;
///
/// let mut frame = Frame::new(Header::new(1001, 7, 50, 99)); // on fleet.99.7.50
/// frame.add("battery", "voltage", 12.6);
/// client.publish(&frame).await?;
///
/// if let Some(Ok(Event::Frame(received))) = frames.next().await {
///     assert_eq!(received.frame(), &frame);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    nats: async_nats::Client,
    subjects: Subjects,
    events: EventHub,
    decoder: Decoder,
    /// Frames are encoded into payloads split off a reused buffer.
    payloads: Arc<PayloadPool>,
    /// Subjects by (target, type, source): formatted once.
    subject_cache: Arc<SubjectCache>,
}

impl Client {
    /// Connects with async-nats' default options (reconnects forever, with
    /// a backoff of up to 4 s between attempts). `addrs` is one URL
    /// (`nats://host:4222`, `tls://…`) or several (the servers of a
    /// cluster); `prefix` starts every subject ([`Subjects::new`]).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), messageframe_nats::Error> {
    /// use messageframe_nats::Client;
    ///
    /// let one = Client::connect("nats://127.0.0.1:4222", "fleet").await?;
    /// let cluster = Client::connect(
    ///     vec!["nats://10.0.0.1:4222", "nats://10.0.0.2:4222"],
    ///     "fleet",
    /// ).await?;
    /// # let _ = (one, cluster); Ok(()) }
    /// ```
    pub async fn connect(addrs: impl ToServerAddrs, prefix: &str) -> Result<Client, Error> {
        Client::connect_with(ConnectOptions::new(), addrs, prefix).await
    }

    /// Connects with your options (credentials, TLS, buffer sizes, a client
    /// name…). The options' event callback is replaced by the one that
    /// feeds [`ConnectionEvent`](crate::ConnectionEvent)s to subscriptions.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), messageframe_nats::Error> {
    /// use async_nats::ConnectOptions;
    /// use messageframe_nats::Client;
    ///
    /// let options = ConnectOptions::new()
    ///     .name("ground-station-3")
    ///     .subscription_capacity(200_000);
    /// let client = Client::connect_with(options, "nats://127.0.0.1:4222", "fleet").await?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub async fn connect_with(
        options: ConnectOptions,
        addrs: impl ToServerAddrs,
        prefix: &str,
    ) -> Result<Client, Error> {
        let subjects = Subjects::new(prefix)?;
        let events = EventHub::new();
        let hub = events.clone();
        let options = options.event_callback(move |event| {
            hub.send(event);
            std::future::ready(())
        });
        let nats = options
            .connect(addrs)
            .await
            .map_err(|e| Error::nats("connect", e))?;
        Ok(Client {
            nats,
            subjects,
            events,
            decoder: Decoder::new(),
            payloads: Arc::default(),
            subject_cache: Arc::default(),
        })
    }

    /// Decodes received frames with this decoder (limits, strict duplicate
    /// keys) instead of the default one; subscriptions made afterwards use
    /// it.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) {
    /// use messageframe::Decoder;
    /// let strict = client.with_decoder(Decoder::new().strict(true));
    /// # let _ = strict; }
    /// ```
    #[must_use]
    pub fn with_decoder(mut self, decoder: Decoder) -> Self {
        self.decoder = decoder;
        self
    }

    /// The subject scheme of this client's prefix.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) {
    /// assert_eq!(client.subjects().prefix(), "fleet");
    /// # }
    /// ```
    #[must_use]
    pub fn subjects(&self) -> &Subjects {
        &self.subjects
    }

    /// The async-nats client underneath, for what this crate does not wrap
    /// (requests, key-value stores, raw subjects).
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// client.nats().publish("other.subject", "hello".into()).await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn nats(&self) -> &async_nats::Client {
        &self.nats
    }

    /// The largest payload the server accepts, in bytes, as it announced on
    /// connecting (its `max_payload` setting; 1 MiB unless configured).
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) {
    /// println!("frames up to {} bytes", client.max_payload());
    /// # }
    /// ```
    #[must_use]
    pub fn max_payload(&self) -> usize {
        self.nats.server_info().max_payload
    }

    /// Publishes `frame` on the subject of its header. The frame is encoded
    /// into a new buffer that becomes the payload (no further copy); a
    /// frame larger than the server's `max_payload` is
    /// [`Error::PayloadTooLarge`] and is not sent.
    ///
    /// Core NATS delivers at most once: this returns when the frame is
    /// queued for sending. [`flush`](Client::flush) waits until it is
    /// written to the socket; [`Archive::publish`] until JetStream has
    /// stored it.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// use messageframe::{Frame, Header};
    ///
    /// let mut frame = Frame::new(Header::new(1001, 7, 50, 99));
    /// frame.add("gps", "lat", 52.52);
    /// client.publish(&frame).await?;
    /// # Ok(()) }
    /// ```
    pub async fn publish(&self, frame: &Frame) -> Result<(), Error> {
        let payload = self.encode(frame)?;
        self.send(self.subject(frame.header()), payload).await
    }

    /// Publishes bytes that hold one encoded frame, unchanged, on the
    /// subject of its header. Only the header is read and the frame's
    /// extent checked (the bytes must be exactly one frame,
    /// [`Error::InvalidFrame`] otherwise); parameters are not decoded.
    /// Returns the header.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// use messageframe::{Frame, Header};
    ///
    /// let bytes = Frame::new(Header::new(1001, 7, 50, 99)).encode().expect("the frame encodes");
    /// let header = client.publish_bytes(bytes).await?;
    /// assert_eq!(header.target(), 99);
    /// # Ok(()) }
    /// ```
    pub async fn publish_bytes(&self, bytes: impl Into<Bytes>) -> Result<Header, Error> {
        let bytes = bytes.into();
        let header =
            check_extent(&bytes).map_err(|error| Error::InvalidFrame { offset: 0, error })?;
        self.send(self.subject(&header), bytes).await?;
        Ok(header)
    }

    /// Publishes every frame of a byte stream of concatenated frames (a
    /// recording, a file written by `mframe encode`), unchanged, each on the
    /// subject of its header, at the given [`Pace`]; then flushes. Returns
    /// how many frames were published. Stops at the first invalid or
    /// oversize frame ([`Error::InvalidFrame`] with its input offset,
    /// [`Error::PayloadTooLarge`]); the frames before it were published.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// use messageframe_nats::Pace;
    ///
    /// let file = tokio::fs::File::open("recording.mfb").await?;
    /// let count = client.publish_all(file, Pace::Original).await?;
    /// println!("{count} frames played back");
    /// # Ok(()) }
    /// ```
    pub async fn publish_all(
        &self,
        reader: impl AsyncRead + Unpin,
        pace: Pace,
    ) -> Result<u64, Error> {
        let mut frames = FrameSplitter::new(reader);
        let mut pacer = Pacer::new(pace);
        let mut count = 0;
        loop {
            let Some((header, bytes)) = frames.next_frame().await? else {
                break;
            };
            pacer.wait(&header).await;
            self.send(self.subject(&header), bytes).await?;
            count += 1;
        }
        self.flush().await?;
        Ok(count)
    }

    /// Waits until everything published so far is written to the
    /// connection (the socket), as async-nats' `flush` does. It does not
    /// wait for the server to process it: [`Archive::publish`] waits until
    /// JetStream has stored a frame.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// client.flush().await?;
    /// # Ok(()) }
    /// ```
    pub async fn flush(&self) -> Result<(), Error> {
        self.nats.flush().await.map_err(|e| Error::nats("flush", e))
    }

    /// Subscribes to the frames that pass `filter` (see [`Subscription`]).
    /// The server filters by subject, so frames that do not pass never
    /// reach this client.
    ///
    /// When the client is connected, this returns once the server has the
    /// subscription (a round trip through the server on this connection,
    /// at most 5 s), so that a frame published after it, by anyone on this
    /// server, is delivered. In a cluster, servers learn of it from each
    /// other a moment later. While the client is reconnecting, it returns
    /// after that wait and the subscription starts with the connection.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// use messageframe_nats::Filter;
    ///
    /// // Everything for node 99 from node 50, any message type.
    /// let frames = client.subscribe(Filter::any().target(99).source(50)).await?;
    /// # let _ = frames; Ok(()) }
    /// ```
    pub async fn subscribe(&self, filter: Filter) -> Result<Subscription, Error> {
        // Events first: nothing that happens once the subscription exists
        // is missed.
        let events = self.events.listen();
        let messages = self
            .nats
            .subscribe(self.subjects.filter(&filter))
            .await
            .map_err(|e| Error::nats("subscribe", e))?;
        self.round_trip().await?;
        Ok(Subscription::new(messages, events, self.decoder))
    }

    /// Waits (at most 5 s) until the server has processed everything this
    /// client sent before: a message to a fresh inbox of its own comes back.
    /// async-nats' `flush` only empties the socket buffer, so it does not
    /// say that the server has a subscription yet.
    async fn round_trip(&self) -> Result<(), Error> {
        let inbox = self.nats.new_inbox();
        let mut echo = self
            .nats
            .subscribe(inbox.clone())
            .await
            .map_err(|e| Error::nats("subscribe", e))?;
        self.nats
            .publish(inbox, Bytes::new())
            .await
            .map_err(|e| Error::nats("subscribe", e))?;
        // A timeout is not an error: the client may be reconnecting, and the
        // subscription is renewed when it is back.
        let _ = tokio::time::timeout(ROUND_TRIP_LIMIT, echo.next()).await;
        Ok(())
    }

    /// The connection events of this client as a stream of their own (see
    /// [`ConnectionEvents`]); every subscription also carries them.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) {
    /// let events = client.events();
    /// # let _ = events; }
    /// ```
    pub fn events(&self) -> ConnectionEvents {
        self.events.listen()
    }

    /// The JetStream stream of this prefix, created if it does not exist
    /// (see [`Archive`] and [`ArchiveConfig`]): it records every frame
    /// published under `<prefix>.>`, by anyone.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// use messageframe_nats::ArchiveConfig;
    ///
    /// let archive = client.archive(ArchiveConfig::new("FLEET").replicas(3)).await?;
    /// # let _ = archive; Ok(()) }
    /// ```
    pub async fn archive(&self, config: ArchiveConfig) -> Result<Archive, Error> {
        Archive::open(self.clone(), config).await
    }

    /// The decoder subscriptions use.
    pub(crate) fn decoder(&self) -> Decoder {
        self.decoder
    }

    /// The subject of `header` ([`Subjects::subject`]), formatted once per
    /// (target, type, source).
    pub(crate) fn subject(&self, header: &Header) -> Subject {
        self.subject_cache.subject(&self.subjects, header)
    }

    /// Encodes `frame` into a payload of the client's pool.
    pub(crate) fn encode(&self, frame: &Frame) -> Result<Bytes, Error> {
        Ok(self.payloads.encode(frame)?)
    }

    /// Publishes a checked payload. async-nats refuses a payload above the
    /// server's `max_payload` before sending it (it keeps the limit in an
    /// atomic, updated from every INFO); that refusal becomes
    /// [`Error::PayloadTooLarge`], so the limit costs nothing per frame
    /// here (`server_info()` clones the whole INFO).
    async fn send(&self, subject: Subject, payload: Bytes) -> Result<(), Error> {
        let size = payload.len();
        self.nats.publish(subject, payload).await.map_err(|e| {
            if e.kind() == PublishErrorKind::MaxPayloadExceeded {
                Error::PayloadTooLarge {
                    size,
                    max_payload: self.max_payload(),
                }
            } else {
                Error::nats("publish", e)
            }
        })
    }

    /// Refuses a payload larger than the server's `max_payload`.
    pub(crate) fn check_size(&self, size: usize) -> Result<(), Error> {
        let max_payload = self.max_payload();
        if size > max_payload {
            return Err(Error::PayloadTooLarge { size, max_payload });
        }
        Ok(())
    }
}

//! Connection events: what a subscriber sees instead of a silent gap.

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::{Stream, StreamExt as _};
use tokio::sync::broadcast;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;

/// How many events a slow listener may fall behind before it is told it
/// missed some ([`ConnectionEvent::Missed`]).
const EVENT_BACKLOG: usize = 256;

/// Something that happened to the connection. Core NATS delivers at most
/// once: frames published while a client is disconnected do not reach it,
/// so a subscriber gets these in its stream to know where a gap may be.
///
/// ```
/// use messageframe_nats::ConnectionEvent;
///
/// assert_eq!(ConnectionEvent::Reconnected.to_string(), "reconnected");
/// assert!(ConnectionEvent::Disconnected.may_lose_frames());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionEvent {
    /// The connection is lost; the client reconnects on its own (to any
    /// server it knows of in a cluster).
    Disconnected,
    /// The connection is back after a [`Disconnected`](Self::Disconnected)
    /// and every subscription is renewed. Frames published in between were
    /// not delivered.
    Reconnected,
    /// The server is shutting down gracefully (lame duck mode): the client
    /// will move to another server.
    LameDuckMode,
    /// The client is draining: subscriptions end after the messages in
    /// flight.
    Draining,
    /// The connection is closed for good; the subscription ends after this.
    Closed,
    /// A subscription of this client could not keep up and the client
    /// dropped messages for it (its buffer of
    /// `ConnectOptions::subscription_capacity` messages was full).
    SlowConsumer,
    /// The server reported an error (authorization, a protocol violation…).
    ServerError(String),
    /// The client reported an error: among others, each failed attempt to
    /// reconnect (the server refused or did not answer).
    ClientError(String),
    /// This listener fell behind on events and this many were lost; what
    /// they said is unknown.
    Missed(u64),
}

impl ConnectionEvent {
    /// Whether frames may have been lost around this event: the connection
    /// was down, a buffer overflowed, or events themselves were missed.
    ///
    /// ```
    /// # use messageframe_nats::ConnectionEvent;
    /// assert!(ConnectionEvent::SlowConsumer.may_lose_frames());
    /// assert!(!ConnectionEvent::LameDuckMode.may_lose_frames());
    /// ```
    #[must_use]
    pub fn may_lose_frames(&self) -> bool {
        matches!(
            self,
            ConnectionEvent::Disconnected
                | ConnectionEvent::Reconnected
                | ConnectionEvent::Closed
                | ConnectionEvent::SlowConsumer
                | ConnectionEvent::Missed(_)
        )
    }
}

impl fmt::Display for ConnectionEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectionEvent::Disconnected => f.write_str("disconnected"),
            ConnectionEvent::Reconnected => f.write_str("reconnected"),
            ConnectionEvent::LameDuckMode => f.write_str("server entered lame duck mode"),
            ConnectionEvent::Draining => f.write_str("draining"),
            ConnectionEvent::Closed => f.write_str("connection closed"),
            ConnectionEvent::SlowConsumer => {
                f.write_str("slow consumer: the client dropped messages")
            }
            ConnectionEvent::ServerError(e) => write!(f, "server error: {e}"),
            ConnectionEvent::ClientError(e) => write!(f, "client error: {e}"),
            ConnectionEvent::Missed(n) => write!(f, "{n} connection events missed"),
        }
    }
}

/// One item of a subscription: a frame, or an event of the connection it
/// arrives on.
///
/// ```
/// use messageframe_nats::{ConnectionEvent, Event};
///
/// let item: Event<u32> = Event::Connection(ConnectionEvent::Reconnected);
/// assert_eq!(item.into_frame(), None);
/// assert_eq!(Event::Frame(7).into_frame(), Some(7));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Event<T> {
    /// A frame arrived.
    Frame(T),
    /// Something happened to the connection.
    Connection(ConnectionEvent),
}

impl<T> Event<T> {
    /// The frame, if this is one.
    ///
    /// ```
    /// # use messageframe_nats::Event;
    /// assert_eq!(Event::Frame("f").into_frame(), Some("f"));
    /// ```
    pub fn into_frame(self) -> Option<T> {
        match self {
            Event::Frame(f) => Some(f),
            Event::Connection(_) => None,
        }
    }
}

/// The connection events of one client, as a stream: for a program that
/// reports them on their own (a status line, a log), apart from any
/// subscription. Each subscription also carries them in its items.
///
/// The stream ends when the client and every clone of it are dropped.
///
/// ```no_run
/// # async fn run() -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe_nats::Client;
///
/// let client = Client::connect("nats://127.0.0.1:4222", "fleet").await?;
/// let mut events = client.events();
/// tokio::spawn(async move {
///     while let Some(event) = events.next().await {
///         eprintln!("nats: {event}");
///     }
/// });
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ConnectionEvents {
    inner: BroadcastStream<ConnectionEvent>,
    /// The hub's count of events sent, and how many of them this listener
    /// has accounted for: `has_news` is one atomic load, so a subscription
    /// can look for events before every frame without polling the channel.
    sent: Arc<AtomicU64>,
    seen: u64,
}

impl ConnectionEvents {
    /// Whether an event may be waiting (never false when one is).
    pub(crate) fn has_news(&self) -> bool {
        self.sent.load(Ordering::Acquire) != self.seen
    }

    /// Polls for an event; Pending registers the waker, so that an event
    /// wakes the task.
    pub(crate) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<ConnectionEvent>> {
        let sent = self.sent.load(Ordering::Acquire);
        let polled = self.inner.poll_next_unpin(cx);
        match &polled {
            Poll::Ready(Some(Ok(_))) => self.seen += 1,
            Poll::Ready(Some(Err(BroadcastStreamRecvError::Lagged(n)))) => self.seen += n,
            // Nothing left for this listener: whatever was sent before it
            // subscribed is not its news.
            Poll::Pending => self.seen = sent,
            Poll::Ready(None) => {}
        }
        polled.map(|item| {
            item.map(|event| match event {
                Ok(event) => event,
                Err(BroadcastStreamRecvError::Lagged(n)) => ConnectionEvent::Missed(n),
            })
        })
    }
}

impl Stream for ConnectionEvents {
    type Item = ConnectionEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.poll_event(cx)
    }
}

/// The sending side: turns async-nats events into [`ConnectionEvent`]s and
/// hands them to every listener.
#[derive(Debug, Clone)]
pub(crate) struct EventHub {
    sender: broadcast::Sender<ConnectionEvent>,
    connected_once: Arc<AtomicBool>,
    /// Events sent so far (after they are in the channel).
    sent: Arc<AtomicU64>,
}

impl EventHub {
    pub(crate) fn new() -> Self {
        EventHub {
            sender: broadcast::channel(EVENT_BACKLOG).0,
            connected_once: Arc::new(AtomicBool::new(false)),
            sent: Arc::new(AtomicU64::new(0)),
        }
    }

    pub(crate) fn listen(&self) -> ConnectionEvents {
        // The count is read before subscribing: an event sent in between
        // makes `has_news` true once for nothing, never false for a real one.
        let seen = self.sent.load(Ordering::Acquire);
        ConnectionEvents {
            inner: BroadcastStream::new(self.sender.subscribe()),
            sent: self.sent.clone(),
            seen,
        }
    }

    pub(crate) fn send(&self, event: async_nats::Event) {
        use async_nats::Event as E;
        let event = match event {
            E::Connected if self.connected_once.swap(true, Ordering::Relaxed) => {
                ConnectionEvent::Reconnected
            }
            // The first connection is not news: `Client::connect` returns
            // once it is up, and the callback that reports it runs on its
            // own task, so it could otherwise reach subscriptions made
            // after `connect` returned.
            E::Connected => return,
            E::Disconnected => ConnectionEvent::Disconnected,
            E::LameDuckMode => ConnectionEvent::LameDuckMode,
            E::Draining => ConnectionEvent::Draining,
            E::Closed => ConnectionEvent::Closed,
            E::SlowConsumer(_) => ConnectionEvent::SlowConsumer,
            E::ServerError(e) => ConnectionEvent::ServerError(e.to_string()),
            E::ClientError(e) => ConnectionEvent::ClientError(e.to_string()),
        };
        // No listener is not an error: events matter only to those who
        // listen.
        let _ = self.sender.send(event);
        self.sent.fetch_add(1, Ordering::Release);
    }
}

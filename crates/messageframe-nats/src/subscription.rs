//! Subscriptions: frames arriving from NATS, as streams.

use std::pin::Pin;
use std::task::{Context, Poll};

use async_nats::{Subject, Subscriber};
use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use messageframe::{Decoder, Frame, FrameView, Header};

use crate::event::{ConnectionEvent, ConnectionEvents, Event};
use crate::Error;

/// A frame received from NATS: decoded into an owned [`Frame`] whose
/// attachments are slices of the message payload (shared, not copied), with
/// the subject it came on and the payload exactly as it arrived.
///
/// ```no_run
/// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe_nats::{Event, Filter};
///
/// let mut frames = client.subscribe(Filter::any()).await?;
/// if let Some(Ok(Event::Frame(received))) = frames.next().await {
///     println!("{} bytes on {}", received.payload().len(), received.subject());
///     let voltage = received.frame().find("battery", "voltage");
///     # let _ = voltage;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Received {
    subject: Subject,
    payload: Bytes,
    frame: Frame,
}

impl Received {
    pub(crate) fn new(subject: Subject, payload: Bytes, frame: Frame) -> Self {
        Received {
            subject,
            payload,
            frame,
        }
    }

    /// The subject the frame arrived on.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Received) { assert!(r.subject().starts_with("fleet.")); }
    /// ```
    #[must_use]
    pub fn subject(&self) -> &str {
        self.subject.as_str()
    }

    /// The decoded frame.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Received) { let _ = r.frame().find("gps", "lat"); }
    /// ```
    #[must_use]
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// The frame's header.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Received) { let _ = r.header().counter(); }
    /// ```
    #[must_use]
    pub fn header(&self) -> &Header {
        self.frame.header()
    }

    /// The message payload, unchanged: the frame's bytes as published (what
    /// a recorder writes to a file of concatenated frames).
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Received) { let bytes: &[u8] = r.payload(); let _ = bytes; }
    /// ```
    #[must_use]
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The frame, to keep (or to give back to
    /// [`Subscription::recycle`] once done with it).
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::Received) { let frame: messageframe::Frame = r.into_frame(); let _ = frame; }
    /// ```
    #[must_use]
    pub fn into_frame(self) -> Frame {
        self.frame
    }
}

/// A message whose header was read and whose extent was checked (one whole
/// frame, nothing after it), but nothing more: the router's fast path, and
/// the zero-copy path through [`view`](RawFrame::view).
///
/// ```no_run
/// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe_nats::{Event, Filter};
///
/// let mut raw = client.subscribe(Filter::any().target(99)).await?.raw();
/// while let Some(item) = raw.next().await {
///     if let Event::Frame(msg) = item? {
///         let view = msg.view()?; // borrowed from the payload, nothing copied
///         println!("{:?}", view.find("gps", "lat"));
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RawFrame {
    subject: Subject,
    payload: Bytes,
    header: Header,
    decoder: Decoder,
}

impl RawFrame {
    /// The subject the message arrived on.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::RawFrame) { let _ = r.subject(); }
    /// ```
    #[must_use]
    pub fn subject(&self) -> &str {
        self.subject.as_str()
    }

    /// The frame's header, already read.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::RawFrame) { let _ = r.header().source(); }
    /// ```
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The payload, unchanged.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::RawFrame) { let _ = r.payload().len(); }
    /// ```
    #[must_use]
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// Reads the frame in place: keys, strings and attachments borrowed from
    /// the payload. This is where the whole frame is checked; an invalid one
    /// is [`Error::Malformed`] with the subject.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::RawFrame) -> Result<(), messageframe_nats::Error> {
    /// let view = r.view()?;
    /// let lat = view.find("gps", "lat").and_then(|v| v.as_f64());
    /// # let _ = lat; Ok(()) }
    /// ```
    pub fn view(&self) -> Result<FrameView<'_>, Error> {
        self.decoder
            .view(&self.payload)
            .map_err(|error| malformed(&self.subject, error))
    }

    /// Decodes the frame into `frame`, reusing its capacity; attachments
    /// share the payload. On error `frame` holds no parameters and no
    /// attachments.
    ///
    /// ```no_run
    /// # fn f(r: messageframe_nats::RawFrame) -> Result<(), messageframe_nats::Error> {
    /// let mut frame = messageframe::Frame::default();
    /// r.decode_into(&mut frame)?;
    /// # Ok(()) }
    /// ```
    pub fn decode_into(&self, frame: &mut Frame) -> Result<(), Error> {
        self.decoder
            .decode_shared_into(frame, &self.payload)
            .map_err(|error| malformed(&self.subject, error))
    }
}

#[cold]
fn malformed(subject: &Subject, error: messageframe::DecodeError) -> Error {
    Error::Malformed {
        subject: subject.as_str().to_owned(),
        error,
    }
}

/// The part both subscription kinds share: messages and connection events
/// merged into one stream, and the end reported, never silent.
#[derive(Debug)]
struct Merged {
    messages: Subscriber,
    events: ConnectionEvents,
    decoder: Decoder,
    /// The `Closed` event was yielded (from the client, or when the message
    /// stream ended): the next end is the real one.
    closed: bool,
}

enum Next {
    Message(async_nats::Message),
    Connection(ConnectionEvent),
}

impl Merged {
    /// Connection events go first: one is yielded as soon as it is seen,
    /// ahead of frames still queued from before it, so a consumer learns of
    /// a disconnection before it reads any frame that came after the gap.
    ///
    /// While frames flow, looking for events costs one atomic load per
    /// frame; the event channel itself is polled (and the waker registered
    /// with it) only when there is news or no frame is ready.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Next>> {
        if self.events.has_news() {
            if let Poll::Ready(Some(event)) = self.event(cx) {
                return Poll::Ready(Some(event));
            }
        }
        match self.messages.poll_next_unpin(cx) {
            Poll::Ready(Some(message)) => Poll::Ready(Some(Next::Message(message))),
            Poll::Ready(None) if !self.closed => {
                self.closed = true;
                Poll::Ready(Some(Next::Connection(ConnectionEvent::Closed)))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.event(cx) {
                Poll::Ready(Some(event)) => Poll::Ready(Some(event)),
                _ => Poll::Pending,
            },
        }
    }

    fn event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Next>> {
        self.events.poll_event(cx).map(|event| {
            event.map(|event| {
                if event == ConnectionEvent::Closed {
                    self.closed = true;
                }
                Next::Connection(event)
            })
        })
    }
}

/// Frames arriving on a subject filter, decoded, as a [`Stream`] of
/// `Result<Event<Received>, Error>`:
///
/// - `Ok(Event::Frame(received))`: a frame, decoded into an owned
///   [`Frame`] whose attachments share the message payload;
/// - `Ok(Event::Connection(event))`: a disconnection, a reconnection, a
///   dropped-messages warning… ([`ConnectionEvent`]), so that a gap is
///   never silent;
/// - `Err(Error::Malformed { subject, error })`: a message that is not a
///   valid frame; the stream goes on with the next one.
///
/// The stream ends only after a final `Event::Connection(Closed)`: when the
/// client is closed or the subscription is unsubscribed.
///
/// Buffers: the payload of each message is allocated by the NATS client and
/// shared by the frame's attachments. The frame itself can be reused: give
/// it back with [`recycle`](Subscription::recycle) and the next frame is
/// decoded into it, so that steady-state decoding allocates nothing. For
/// the zero-copy view, see [`raw`](Subscription::raw).
///
/// ```no_run
/// # async fn run() -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe_nats::{Client, Event, Filter};
///
/// let client = Client::connect("nats://127.0.0.1:4222", "fleet").await?;
/// let mut frames = client.subscribe(Filter::any().message_type(7)).await?;
/// while let Some(item) = frames.next().await {
///     match item {
///         Ok(Event::Frame(received)) => {
///             println!("counter {}", received.header().counter());
///             frames.recycle(received.into_frame());
///         }
///         Ok(Event::Connection(event)) => eprintln!("nats: {event}"),
///         Err(error) => eprintln!("{error}"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a subscription does nothing unless polled"]
pub struct Subscription {
    merged: Merged,
    spare: Option<Frame>,
}

impl Subscription {
    pub(crate) fn new(messages: Subscriber, events: ConnectionEvents, decoder: Decoder) -> Self {
        Subscription {
            merged: Merged {
                messages,
                events,
                decoder,
                closed: false,
            },
            spare: None,
        }
    }

    /// Decodes with this decoder (its limits, strict duplicate keys) instead
    /// of the client's.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// use messageframe::{Decoder, Limits};
    /// use messageframe_nats::Filter;
    ///
    /// let small = Decoder::new().limits(Limits::default().max_params(64));
    /// let frames = client.subscribe(Filter::any()).await?.decoder(small);
    /// # let _ = frames; Ok(()) }
    /// ```
    pub fn decoder(mut self, decoder: Decoder) -> Self {
        self.merged.decoder = decoder;
        self
    }

    /// Gives a frame back: the next message is decoded into it, reusing its
    /// storage (parameters, keys, strings, attachment table), instead of
    /// into a new frame. Its attachments are dropped first, so it keeps no
    /// old payload alive.
    ///
    /// ```no_run
    /// # async fn run(mut frames: messageframe_nats::Subscription) {
    /// use futures_util::StreamExt;
    /// use messageframe_nats::Event;
    ///
    /// while let Some(Ok(Event::Frame(received))) = frames.next().await {
    ///     // ... use received.frame() ...
    ///     frames.recycle(received.into_frame());
    /// }
    /// # }
    /// ```
    pub fn recycle(&mut self, mut frame: Frame) {
        frame.clear();
        self.spare = Some(frame);
    }

    /// The same subscription yielding [`RawFrame`]s: header read and extent
    /// checked, nothing decoded, for routers and for zero-copy views.
    ///
    /// ```no_run
    /// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
    /// # use messageframe_nats::Filter;
    /// let raw = client.subscribe(Filter::any()).await?.raw();
    /// # let _ = raw; Ok(()) }
    /// ```
    pub fn raw(self) -> RawSubscription {
        RawSubscription {
            merged: self.merged,
        }
    }

    /// Ends the subscription (the server stops sending); the stream then
    /// yields what is buffered and ends.
    ///
    /// ```no_run
    /// # async fn run(mut frames: messageframe_nats::Subscription) -> Result<(), messageframe_nats::Error> {
    /// frames.unsubscribe().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unsubscribe(&mut self) -> Result<(), Error> {
        self.merged
            .messages
            .unsubscribe()
            .await
            .map_err(|e| Error::nats("unsubscribe", e))
    }
}

impl Stream for Subscription {
    type Item = Result<Event<Received>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let message = match this.merged.poll_next(cx) {
            Poll::Ready(Some(Next::Message(message))) => message,
            Poll::Ready(Some(Next::Connection(event))) => {
                return Poll::Ready(Some(Ok(Event::Connection(event))))
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        let mut frame = this.spare.take().unwrap_or_default();
        let item = match this
            .merged
            .decoder
            .decode_shared_into(&mut frame, &message.payload)
        {
            Ok(()) => Ok(Event::Frame(Received::new(
                message.subject,
                message.payload,
                frame,
            ))),
            Err(error) => {
                this.spare = Some(frame);
                Err(malformed(&message.subject, error))
            }
        };
        Poll::Ready(Some(item))
    }
}

/// A subscription yielding [`RawFrame`]s (see [`Subscription::raw`]): each
/// message's header is read and its extent checked (exactly one frame);
/// parameters and attachments are not decoded until
/// [`RawFrame::view`] or [`RawFrame::decode_into`]. A message whose header
/// or extent is wrong is an [`Error::Malformed`] item; the stream goes on.
///
/// ```no_run
/// # async fn run(client: messageframe_nats::Client) -> Result<(), messageframe_nats::Error> {
/// use futures_util::StreamExt;
/// use messageframe_nats::{Event, Filter};
///
/// let mut raw = client.subscribe(Filter::any()).await?.raw();
/// while let Some(Ok(Event::Frame(msg))) = raw.next().await {
///     println!("{} -> {}", msg.header().source(), msg.header().target());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a subscription does nothing unless polled"]
pub struct RawSubscription {
    merged: Merged,
}

impl RawSubscription {
    /// Ends the subscription; the stream then yields what is buffered and
    /// ends.
    ///
    /// ```no_run
    /// # async fn run(mut raw: messageframe_nats::RawSubscription) -> Result<(), messageframe_nats::Error> {
    /// raw.unsubscribe().await?;
    /// # Ok(()) }
    /// ```
    pub async fn unsubscribe(&mut self) -> Result<(), Error> {
        self.merged
            .messages
            .unsubscribe()
            .await
            .map_err(|e| Error::nats("unsubscribe", e))
    }
}

impl Stream for RawSubscription {
    type Item = Result<Event<RawFrame>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let message = match this.merged.poll_next(cx) {
            Poll::Ready(Some(Next::Message(message))) => message,
            Poll::Ready(Some(Next::Connection(event))) => {
                return Poll::Ready(Some(Ok(Event::Connection(event))))
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        let item = match check_extent(&message.payload) {
            Ok(header) => Ok(Event::Frame(RawFrame {
                subject: message.subject,
                payload: message.payload,
                header,
                decoder: this.merged.decoder,
            })),
            Err(error) => Err(malformed(&message.subject, error)),
        };
        Poll::Ready(Some(item))
    }
}

/// The header of the one frame `bytes` must hold: the header is read, the
/// rest skipped by its length prefixes (nothing decoded), and bytes after
/// the frame are an error.
pub(crate) fn check_extent(bytes: &[u8]) -> Result<Header, messageframe::DecodeError> {
    let (header, len) = Header::peek_frame(bytes)?;
    if len != bytes.len() {
        // Bytes follow the frame: the full decoder's check gives the error
        // (trailing bytes, or an earlier problem), with its offset.
        Decoder::new().view(bytes)?;
    }
    Ok(header)
}

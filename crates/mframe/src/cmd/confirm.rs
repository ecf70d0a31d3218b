//! `pub --confirm`: every frame stored by JetStream exactly once, or the
//! command says which were not.
//!
//! Each frame is published into the JetStream stream that captures the
//! prefix, with a `Nats-Msg-Id` made of its header (source, counter,
//! message id, timestamp), and its acknowledgement awaited (up to
//! [`WINDOW_FRAMES`] frames or [`WINDOW_BYTES`] bytes in flight). A frame
//! whose acknowledgement does not come (a broken connection, a stream
//! leader being elected, a timeout) is published again with the same id,
//! with a growing pause, until it is acknowledged or `--confirm-timeout`
//! has passed since its first attempt. The server drops a message whose id
//! it has seen within the stream's duplicate window (2 minutes unless the
//! stream says otherwise), so a retry of a frame that was stored but whose
//! acknowledgement was lost is not stored twice; that is why the timeout
//! may not exceed the window. Frames with the same four header fields are
//! one frame to the server: give each frame of a source its own counter.

use std::collections::VecDeque;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::FutureExt;
use messageframe::Header;
use messageframe_nats::async_nats::jetstream::context::{
    ContextBuilder, GetStreamByNameErrorKind, PublishError,
};
use messageframe_nats::async_nats::jetstream::message::PublishMessage;
use messageframe_nats::async_nats::jetstream::publish::PublishAck;
use messageframe_nats::async_nats::jetstream::Context;
use messageframe_nats::async_nats::Subject;
use messageframe_nats::Client;

use super::delivery::{FrameId, Lost};
use super::nats::Servers;
use crate::failure::{status, Failure};
use crate::plural::count;

/// The most frames whose acknowledgement is awaited at once.
pub(crate) const WINDOW_FRAMES: usize = 256;
/// The most bytes of frames whose acknowledgement is awaited at once.
pub(crate) const WINDOW_BYTES: usize = 8 << 20;
/// How long one attempt waits for its acknowledgement.
const ACK_WAIT: Duration = Duration::from_secs(2);
/// `--confirm-timeout`'s default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The id JetStream deduplicates by: the header's source, counter, message
/// id and timestamp.
pub(crate) fn message_id(header: &Header) -> String {
    format!(
        "{}-{}-{}-{}",
        header.source(),
        header.counter(),
        header.message_id(),
        header.timestamp()
    )
}

/// An acknowledgement on its way: its timeout runs from the moment the
/// frame was sent (the future is polled once then).
type Ack = Pin<Box<dyn Future<Output = Result<PublishAck, PublishError>> + Send>>;

struct InFlight {
    id: FrameId,
    subject: Subject,
    payload: Bytes,
    msg_id: String,
    first_sent: Instant,
    attempts: u32,
    ack: Option<Ack>,
    /// The acknowledgement, once it came (found while resending others).
    settled: Option<PublishAck>,
}

/// Frames on their way into JetStream.
pub(crate) struct Confirmer {
    js: Context,
    pub(crate) stream: String,
    timeout: Duration,
    in_flight: VecDeque<InFlight>,
    in_flight_bytes: usize,
    pub(crate) stored: u64,
    pub(crate) duplicates: u64,
    pub(crate) retries: u64,
    /// Why the last failed attempt failed, for the report.
    last_error: Option<String>,
}

impl Confirmer {
    /// Finds the stream that captures the client's prefix and checks the
    /// timeout against its duplicate window. `timeout` is `None` for the
    /// default.
    pub(crate) async fn new(
        client: &Client,
        url: &Servers,
        timeout: Option<Duration>,
    ) -> Result<Confirmer, Failure> {
        let js = ContextBuilder::new()
            .timeout(ACK_WAIT)
            .build(client.nats().clone());
        let captures = client.subjects().all();
        let stream = match js.stream_by_subject(captures.clone()).await {
            Ok(name) => name,
            Err(e) if e.kind() == GetStreamByNameErrorKind::NotFound => {
                return Err(Failure::Bad(format!(
                    "{url}: no JetStream stream captures `{captures}`: --confirm stores every \
                     frame in one (create it with `mframe record {url} --prefix {} --stream \
                     NAME`), or publish without --confirm",
                    client.subjects().prefix()
                )))
            }
            Err(e) => {
                return Err(Failure::Bad(format!(
                    "{url}: cannot find the JetStream stream of `{captures}`: {e} (is JetStream \
                     enabled on the server?)"
                )))
            }
        };
        let info = js
            .get_stream(&stream)
            .await
            .map_err(|e| Failure::Bad(format!("{url}: stream `{stream}`: {e}")))?;
        let window = info.cached_info().config.duplicate_window;
        let timeout = match timeout {
            Some(t) if !window.is_zero() && t > window => {
                return Err(Failure::Usage(format!(
                    "--confirm-timeout {} s exceeds the duplicate window of stream `{stream}` \
                     ({} s): a frame sent again after the window would be stored twice; lower \
                     --confirm-timeout or raise the stream's duplicate_window",
                    t.as_secs_f64(),
                    window.as_secs_f64()
                )))
            }
            Some(t) => t,
            None if !window.is_zero() && window < DEFAULT_TIMEOUT => {
                status(format_args!(
                    "pub: stream `{stream}` keeps message ids for {} s: frames are retried for \
                     that long at most (--confirm-timeout)",
                    window.as_secs_f64()
                ));
                window
            }
            None => DEFAULT_TIMEOUT,
        };
        Ok(Confirmer {
            js,
            stream,
            timeout,
            in_flight: VecDeque::with_capacity(WINDOW_FRAMES),
            in_flight_bytes: 0,
            stored: 0,
            duplicates: 0,
            retries: 0,
            last_error: None,
        })
    }

    /// Sends one attempt; a failure to send is a failed attempt (retried
    /// when its turn comes).
    async fn send(&mut self, frame: &mut InFlight) {
        frame.attempts += 1;
        let publish = PublishMessage::build()
            .payload(frame.payload.clone())
            .message_id(&frame.msg_id);
        match self.js.send_publish(frame.subject.clone(), publish).await {
            Ok(ack) => {
                let mut ack: Ack = Box::pin(ack.into_future());
                // Polled once: the acknowledgement's timeout starts now, so
                // that frames in flight time out together, not one after
                // the other.
                match (&mut ack).now_or_never() {
                    Some(Ok(done)) => frame.settled = Some(done),
                    Some(Err(e)) => self.last_error = Some(e.to_string()),
                    None => frame.ack = Some(ack),
                }
            }
            Err(e) => {
                self.last_error = Some(e.to_string());
                frame.ack = None;
            }
        }
    }

    /// After a failed attempt: every later frame still unacknowledged is
    /// sent again at once (the same ids: the server drops what it already
    /// has), instead of each waiting out its own timeout in turn.
    async fn resend_unsettled(&mut self) {
        let mut frames = std::mem::take(&mut self.in_flight);
        for frame in &mut frames {
            if frame.settled.is_some() {
                continue;
            }
            if let Some(ack) = &mut frame.ack {
                match ack.now_or_never() {
                    Some(Ok(done)) => {
                        frame.settled = Some(done);
                        frame.ack = None;
                        continue;
                    }
                    Some(Err(e)) => self.last_error = Some(e.to_string()),
                    None => {}
                }
            }
            frame.ack = None;
            self.retries += 1;
            self.send(frame).await;
        }
        self.in_flight = frames;
    }

    /// Publishes one frame (after waiting for older ones if the window is
    /// full). Fails only once a frame cannot be stored within the timeout.
    pub(crate) async fn publish(
        &mut self,
        id: FrameId,
        subject: Subject,
        payload: Bytes,
        header: &Header,
    ) -> Result<(), Failure> {
        let len = payload.len();
        let mut frame = InFlight {
            id,
            subject,
            payload,
            msg_id: message_id(header),
            first_sent: Instant::now(),
            attempts: 0,
            ack: None,
            settled: None,
        };
        self.send(&mut frame).await;
        self.in_flight.push_back(frame);
        self.in_flight_bytes += len;
        while self.in_flight.len() > WINDOW_FRAMES || self.in_flight_bytes > WINDOW_BYTES {
            self.settle_oldest().await?;
        }
        Ok(())
    }

    /// Waits for every frame in flight.
    pub(crate) async fn finish(&mut self) -> Result<(), Failure> {
        while !self.in_flight.is_empty() {
            self.settle_oldest().await?;
        }
        Ok(())
    }

    /// Waits until the oldest frame in flight is acknowledged, sending it
    /// again as long as the timeout allows.
    async fn settle_oldest(&mut self) -> Result<(), Failure> {
        let Some(mut frame) = self.in_flight.pop_front() else {
            return Ok(());
        };
        loop {
            let result = match (frame.settled.take(), frame.ack.take()) {
                (Some(ack), _) => Ok(ack),
                (None, Some(ack)) => ack.await.map_err(|e| e.to_string()),
                (None, None) => Err(self
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "not sent".to_owned())),
            };
            match result {
                Ok(ack) => {
                    self.stored += 1;
                    if ack.duplicate {
                        self.duplicates += 1;
                    }
                    self.in_flight_bytes -= frame.payload.len();
                    return Ok(());
                }
                Err(e) => {
                    self.last_error = Some(e);
                    if frame.first_sent.elapsed() >= self.timeout {
                        self.in_flight.push_front(frame);
                        return Err(self.gave_up());
                    }
                    // A pause that grows with the attempts (a leader
                    // election takes seconds), then the same id again.
                    let pause = Duration::from_millis(50 * u64::from(frame.attempts.min(20)));
                    tokio::time::sleep(pause).await;
                    self.retries += 1;
                    self.send(&mut frame).await;
                    self.resend_unsettled().await;
                }
            }
        }
    }

    /// The failure once a frame could not be stored in time: the frames in
    /// flight were not acknowledged.
    fn gave_up(&self) -> Failure {
        let mut lost = Lost::default();
        for frame in &self.in_flight {
            lost.add(frame.id);
        }
        Failure::Bad(format!(
            "pub --confirm: stream `{}` did not acknowledge a frame within {} s \
             (--confirm-timeout; last error: {}): {} stored, {} not acknowledged and may be \
             missing: {}",
            self.stream,
            self.timeout.as_secs_f64(),
            self.last_error.as_deref().unwrap_or("none"),
            count(self.stored, "frame"),
            count(lost.frames(), "frame"),
            lost.describe("frame", 20)
        ))
    }
}

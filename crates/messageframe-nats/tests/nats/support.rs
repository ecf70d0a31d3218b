//! What every test of this binary shares: bounded waits, clients, golden
//! frames, telemetry frames. Servers come from `messageframe-testkit`.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use messageframe::{Frame, FrameConfig, Header};
use messageframe_nats::async_nats::ConnectOptions;
use messageframe_nats::{Client, ConnectionEvent, Error, Event, Received};

/// The longest any single wait of these tests may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// Runs `future` or fails the test after `limit`, saying what was awaited.
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

/// A client of `url` (one URL or several) under `prefix`, with short
/// request timeouts and a reconnect delay suited to tests.
pub async fn connect(urls: &[String], prefix: &str) -> Client {
    let options = ConnectOptions::new()
        .request_timeout(Some(Duration::from_secs(5)))
        .connection_timeout(Duration::from_secs(5))
        .reconnect_delay_callback(|attempt| Duration::from_millis(50 * attempt.min(10) as u64));
    within(WAIT, "connect", Client::connect_with(options, urls, prefix))
        .await
        .unwrap_or_else(|e| panic!("connect to {urls:?}: {e}"))
}

/// The next item of a subscription or replay, bounded.
pub async fn next_item<S, T>(stream: &mut S, what: &str) -> T
where
    S: Stream<Item = T> + Unpin,
{
    within(WAIT, what, stream.next())
        .await
        .unwrap_or_else(|| panic!("the stream ended while waiting for {what}"))
}

/// The next frame of a subscription; connection events are not expected
/// here, malformed frames neither.
pub async fn next_frame<S>(stream: &mut S, what: &str) -> Received
where
    S: Stream<Item = Result<Event<Received>, Error>> + Unpin,
{
    match next_item(stream, what).await {
        Ok(Event::Frame(received)) => received,
        Ok(Event::Connection(event)) => panic!("{what}: unexpected connection event {event}"),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// The next connection event, skipping nothing: a frame here fails.
pub async fn next_event<S>(stream: &mut S, what: &str) -> ConnectionEvent
where
    S: Stream<Item = Result<Event<Received>, Error>> + Unpin,
{
    match next_item(stream, what).await {
        Ok(Event::Connection(event)) => event,
        Ok(Event::Frame(f)) => panic!("{what}: got a frame ({:?})", f.header()),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// The C++ library's golden frames (crates/messageframe/tests/data/interop),
/// by file name, sorted.
pub fn golden_frames() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../messageframe/tests/data/interop");
    let mut frames: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "mfb"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("read golden frame"))
        })
        .collect();
    frames.sort();
    assert!(
        frames.len() >= 10,
        "golden frames missing in {}",
        dir.display()
    );
    frames
}

/// The SPEC 5.2 message: parameter k has device `d{k%8}`, name `p{k}`, and a
/// value cycling double, int, bool, string; `counter` in the header.
pub fn telemetry_frame(params: usize, counter: u64) -> Frame {
    let mut frame = Frame::with_config(
        Header::new(200, 7, 1, 2).with_counter(counter),
        FrameConfig::for_params(params),
    );
    for k in 0..params {
        let device = format!("d{}", k % 8);
        let name = format!("p{k}");
        match k % 4 {
            0 => frame.add(&device, &name, k as f64 * 1.5),
            1 => frame.add(&device, &name, k as i64 * 1000),
            2 => frame.add(&device, &name, k % 3 == 0),
            _ => frame.add(&device, &name, format!("value_{k}").as_str()),
        }
    }
    frame
}

/// Waits until a subscription made on `subscriber` (possibly on another
/// server of a cluster) is known where `publisher` publishes: a probe
/// subject subscribed after it on the same connection must get through,
/// and the server forwards subscriptions in order.
pub async fn await_interest(publisher: &Client, subscriber: &Client) {
    let probe = format!("_probe.{}", publisher.nats().new_inbox().replace('.', "_"));
    let mut probes = subscriber
        .nats()
        .subscribe(probe.clone())
        .await
        .expect("subscribe probe");
    subscriber.flush().await.expect("flush subscriber");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        publisher
            .nats()
            .publish(probe.clone(), "probe".into())
            .await
            .expect("publish probe");
        publisher.flush().await.expect("flush probe");
        if tokio::time::timeout(Duration::from_millis(100), probes.next())
            .await
            .is_ok()
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "subscription interest did not reach the publisher's server within {WAIT:?}"
        );
    }
}

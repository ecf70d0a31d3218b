//! Frames per second from publish to receive through one local nats-server:
//! messageframe (owned decode and zero-copy view) against the same payload
//! bytes published raw (the limit: no encode, no decode) and serde_json
//! payloads carrying the same content.
//!
//! ```sh
//! cargo run --release -p messageframe-nats --example nats_throughput            # 5 passes
//! cargo run --release -p messageframe-nats --example nats_throughput -- --quick # 1 pass, 1/10 of the frames
//! ```
//!
//! Starts its own nats-server on a loopback port (messageframe-testkit;
//! `apt-get install -y nats-server`). Each pass: two fresh connections (a
//! publisher and a subscriber, one process, a 2-thread tokio runtime), the
//! SPEC 5.2 message with P parameters, N frames published as fast as the
//! window allows (at most 1,000 frames in flight, so that no buffer
//! overflows and nothing is dropped: every frame is checked to arrive, in
//! order, by its counter), timed from the first publish to the last
//! receive. Reported: the median of the passes, and each row's ratio to the
//! raw-bytes rate of the same pass set.
//!
//! What each row does per frame:
//! - raw: publish the pre-encoded frame bytes on a pre-built subject;
//!   receive and read the payload length. No codec at all.
//! - messageframe: set the header counter, `Client::publish(&frame)`
//!   (encode into a new buffer, subject from the header); receive through
//!   `Subscription` (decode into a recycled frame, attachments shared),
//!   look up the last parameter.
//! - mf view: the same publish; receive through `RawSubscription`
//!   (header and extent checked), `RawFrame::view`, look up the last
//!   parameter.
//! - mf header only (router): the same publish; receive through
//!   `RawSubscription` and read only the header (what a router or a
//!   recorder does), no view, no lookup.
//! - serde_json: set the counter in a `serde_json::Value` holding the
//!   header fields and every parameter under its flat key, serialize it,
//!   subject from the header fields; receive, parse into a `Value`, look up
//!   the last parameter.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use messageframe::{FlatKey, Frame, FrameConfig, Header};
use messageframe_nats::{Client, Event, Filter, Subjects};
use messageframe_testkit::{NatsServer, ServerOptions};
use serde_json::{json, Map, Value};
use tokio::sync::Notify;

/// Frames allowed in flight between publisher and subscriber.
const WINDOW: u64 = 1_000;

/// No pass may take longer than this.
const PASS_LIMIT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Raw,
    Messageframe,
    View,
    HeaderOnly,
    Json,
}

impl Backend {
    const ALL: [Backend; 5] = [
        Backend::Raw,
        Backend::Messageframe,
        Backend::View,
        Backend::HeaderOnly,
        Backend::Json,
    ];

    fn name(self) -> &'static str {
        match self {
            Backend::Raw => "raw bytes (limit)",
            Backend::Messageframe => "messageframe",
            Backend::View => "mf view",
            Backend::HeaderOnly => "mf header only (router)",
            Backend::Json => "serde_json",
        }
    }
}

/// The SPEC 5.2 message (crates/messageframe-bench/src/scenario.rs):
/// parameter k has device `d{k%8}`, name `p{k}`, and a value cycling
/// double `k*1.5`, int `k*1000`, bool `k%3==0`, string `value_{k}`. Built
/// here in a few lines rather than by depending on messageframe-bench,
/// whose build (prost-build, protox, plotters, zstd) would be added to this
/// crate's dev-dependencies for one loop.
fn telemetry(params: usize) -> (Frame, Value) {
    let header = Header::new(200, 7, 1, 2);
    let mut frame = Frame::with_config(header, FrameConfig::for_params(params));
    let mut map = Map::new();
    for k in 0..params {
        let (device, name) = (format!("d{}", k % 8), format!("p{k}"));
        let flat = format!("{device}.{name}");
        match k % 4 {
            0 => {
                frame.add(&device, &name, k as f64 * 1.5);
                map.insert(flat, json!(k as f64 * 1.5));
            }
            1 => {
                frame.add(&device, &name, k as i64 * 1000);
                map.insert(flat, json!(k as i64 * 1000));
            }
            2 => {
                frame.add(&device, &name, k % 3 == 0);
                map.insert(flat, json!(k % 3 == 0));
            }
            _ => {
                let s = format!("value_{k}");
                frame.add(&device, &name, s.as_str());
                map.insert(flat, json!(s));
            }
        }
    }
    let h = frame.header();
    let doc = json!({
        "h": [h.timestamp(), 0, h.source(), h.target(), h.message_id(), h.message_type(), h.version(), h.flags()],
        "p": Value::Object(map),
    });
    (frame, doc)
}

#[derive(Default)]
struct Progress {
    received: AtomicU64,
    wake: Notify,
}

impl Progress {
    /// Counts a frame; wakes the publisher every 64 frames, not every
    /// frame, so that the harness's own wake-ups stay out of the figures.
    fn got_one(&self) {
        if self.received.fetch_add(1, Ordering::Release) % 64 == 63 {
            self.wake.notify_one();
        }
    }

    /// Waits until fewer than WINDOW frames are in flight (bounded: a
    /// pass whose frames stop arriving fails instead of hanging).
    async fn window(&self, sent: u64, deadline: Instant) {
        while sent - self.received.load(Ordering::Acquire) >= WINDOW {
            let _ = tokio::time::timeout(Duration::from_millis(50), self.wake.notified()).await;
            assert!(
                Instant::now() < deadline,
                "stalled: {sent} sent, {} received",
                self.received.load(Ordering::Acquire)
            );
        }
    }
}

async fn pass(url: String, backend: Backend, params: usize, frames: u64) -> Duration {
    let subscriber = Client::connect(url.as_str(), "bench")
        .await
        .expect("connect");
    let publisher = Client::connect(url.as_str(), "bench")
        .await
        .expect("connect");
    let (mut frame, mut doc) = telemetry(params);
    let last_key = FlatKey::new(
        &format!("d{}", (params - 1) % 8),
        &format!("p{}", params - 1),
    )
    .expect("key");
    let last_flat = format!("d{}.p{}", (params - 1) % 8, params - 1);
    let subjects = Subjects::new("bench").expect("prefix");
    let raw_payload = bytes::Bytes::from(frame.encode().expect("the frame encodes"));
    let raw_subject = async_nats::Subject::from(subjects.subject(frame.header()));
    let progress = Arc::new(Progress::default());

    // The receiving side, checking every counter in order.
    let p = progress.clone();
    let receiver = match backend {
        Backend::Raw => {
            let mut sub = subscriber
                .nats()
                .subscribe(raw_subject.clone())
                .await
                .unwrap();
            tokio::spawn(async move {
                for _ in 0..frames {
                    let message = sub.next().await.expect("raw message");
                    black_box(message.payload.len());
                    p.got_one();
                }
            })
        }
        Backend::Messageframe => {
            let mut sub = subscriber.subscribe(Filter::any()).await.unwrap();
            tokio::spawn(async move {
                for expected in 0..frames {
                    let Some(Ok(Event::Frame(received))) = sub.next().await else {
                        panic!("expected a frame");
                    };
                    assert_eq!(received.header().counter(), expected, "lost a frame");
                    black_box(received.frame().find_flat(&last_key).is_some());
                    sub.recycle(received.into_frame());
                    p.got_one();
                }
            })
        }
        Backend::View => {
            let mut sub = subscriber.subscribe(Filter::any()).await.unwrap().raw();
            tokio::spawn(async move {
                for expected in 0..frames {
                    let Some(Ok(Event::Frame(raw))) = sub.next().await else {
                        panic!("expected a frame");
                    };
                    assert_eq!(raw.header().counter(), expected, "lost a frame");
                    let view = raw.view().expect("valid frame");
                    black_box(view.find_flat(&last_key).is_some());
                    p.got_one();
                }
            })
        }
        Backend::HeaderOnly => {
            let mut sub = subscriber.subscribe(Filter::any()).await.unwrap().raw();
            tokio::spawn(async move {
                for expected in 0..frames {
                    let Some(Ok(Event::Frame(raw))) = sub.next().await else {
                        panic!("expected a frame");
                    };
                    assert_eq!(raw.header().counter(), expected, "lost a frame");
                    p.got_one();
                }
            })
        }
        Backend::Json => {
            let mut sub = subscriber
                .nats()
                .subscribe(subjects.filter(&Filter::any()))
                .await
                .unwrap();
            tokio::spawn(async move {
                for expected in 0..frames {
                    let message = sub.next().await.expect("json message");
                    let doc: Value = serde_json::from_slice(&message.payload).expect("json");
                    assert_eq!(doc["h"][1].as_u64(), Some(expected), "lost a frame");
                    black_box(doc["p"].get(&last_flat).is_some());
                    p.got_one();
                }
            })
        }
    };
    // `Client::subscribe` returns after a round trip through the server on
    // its connection, so that every subscription made before it on that
    // connection (the raw and JSON rows' too) is known to the server before
    // the first frame is published. (async-nats' `flush` does not ensure
    // that: it only empties the socket buffer.)
    let _barrier = subscriber
        .subscribe(Filter::any().target(u32::MAX))
        .await
        .unwrap();

    let start = Instant::now();
    let deadline = start + PASS_LIMIT;
    for counter in 0..frames {
        progress.window(counter, deadline).await;
        match backend {
            Backend::Raw => publisher
                .nats()
                .publish(raw_subject.clone(), raw_payload.clone())
                .await
                .unwrap(),
            Backend::Messageframe | Backend::View | Backend::HeaderOnly => {
                frame.header_mut().set_counter(counter);
                publisher.publish(&frame).await.unwrap();
            }
            Backend::Json => {
                doc["h"][1] = Value::from(counter);
                let h = &doc["h"];
                let field = |i: usize| h[i].as_i64().unwrap_or(0);
                let header = Header::from_fields(
                    field(0) as u64,
                    counter,
                    field(2) as u32,
                    field(3) as u32,
                    field(4) as i32,
                    field(5) as i32,
                    field(6) as u16,
                    field(7) as u16,
                );
                let payload = serde_json::to_vec(&doc).unwrap();
                publisher
                    .nats()
                    .publish(subjects.subject(&header), payload.into())
                    .await
                    .unwrap();
            }
        }
    }
    tokio::time::timeout(PASS_LIMIT, receiver)
        .await
        .expect("the pass took too long")
        .expect("the receiver failed");
    start.elapsed()
}

/// The codec work of one frame alone, in one thread, no broker: µs per
/// frame for messageframe (encode into a new payload buffer as `publish`
/// does, decode into a recycled frame sharing the payload, look up the last
/// parameter) and for serde_json (serialize, parse, look up). Minimum of 3
/// runs of `iterations`.
fn codec_alone(params: usize, iterations: u64) -> (f64, f64) {
    let (mut frame, mut doc) = telemetry(params);
    let last_key = FlatKey::new(
        &format!("d{}", (params - 1) % 8),
        &format!("p{}", params - 1),
    )
    .expect("key");
    let last_flat = format!("d{}.p{}", (params - 1) % 8, params - 1);
    let mut best = (f64::MAX, f64::MAX);
    let mut out = Frame::default();
    for _ in 0..3 {
        let start = Instant::now();
        for counter in 0..iterations {
            frame.header_mut().set_counter(counter);
            let mut buffer = Vec::with_capacity(frame.encoded_len());
            frame.encode_into(&mut buffer).expect("the frame encodes");
            let payload = bytes::Bytes::from(buffer);
            messageframe::Decoder::new()
                .decode_shared_into(&mut out, &payload)
                .expect("decode");
            black_box(out.find_flat(&last_key).is_some());
        }
        let mf = start.elapsed().as_secs_f64() * 1e6 / iterations as f64;
        let start = Instant::now();
        for counter in 0..iterations {
            doc["h"][1] = Value::from(counter);
            let payload = serde_json::to_vec(&doc).expect("json");
            let back: Value = serde_json::from_slice(&payload).expect("json");
            black_box(back["p"].get(&last_flat).is_some());
        }
        let json = start.elapsed().as_secs_f64() * 1e6 / iterations as f64;
        best = (best.0.min(mf), best.1.min(json));
    }
    best
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let passes: usize = args
        .iter()
        .position(|a| a == "--passes")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1 } else { 5 });
    let scale = if quick { 10 } else { 1 };

    let server = NatsServer::start(ServerOptions::new());
    let url = server.url();
    println!(
        "nats-server on {url}; {passes} pass(es) per row, median; publisher and subscriber in one process\n"
    );
    println!("| params | frame bytes | JSON bytes | frames | backend | frames/s (median) | MB/s | ÷ raw |");
    println!("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |");
    let mut explained = Vec::new();
    for (params, frames) in [(4usize, 200_000u64), (32, 100_000), (1024, 10_000)] {
        let frames = frames / scale;
        let (frame, doc) = telemetry(params);
        let size = frame.encoded_len();
        let json_size = serde_json::to_vec(&doc).unwrap().len();
        let mut rates = vec![Vec::new(); Backend::ALL.len()];
        for p in 0..passes {
            // Rotate the order so that no backend always runs first.
            for i in 0..Backend::ALL.len() {
                let b = (i + p) % Backend::ALL.len();
                let elapsed =
                    match tokio::spawn(pass(url.clone(), Backend::ALL[b], params, frames)).await {
                        Ok(e) => e,
                        Err(e) => {
                            eprintln!("{}", server.log_tail());
                            panic!("{e}");
                        }
                    };
                rates[b].push(frames as f64 / elapsed.as_secs_f64());
            }
        }
        let raw = median(rates[0].clone());
        let (mf_codec, json_codec) = codec_alone(params, frames / 10);
        explained.push((params, raw, median(rates[1].clone()), mf_codec, json_codec));
        for (b, backend) in Backend::ALL.iter().enumerate() {
            let rate = median(rates[b].clone());
            let bytes = if *backend == Backend::Json {
                json_size
            } else {
                size
            };
            println!(
                "| {params} | {size} | {json_size} | {frames} | {} | {rate:.0} | {:.1} | {:.2}x |",
                backend.name(),
                rate * bytes as f64 / 1e6,
                rate / raw
            );
        }
    }
    println!(
        "\nWhere the time goes: the raw path's time per frame, the codec work of one frame \
         measured alone (one thread, no broker, min of 3), and the messageframe ratio \
         expected if that work simply adds to the raw path's (no overlap on the cores)\n"
    );
    println!("| params | raw path µs/frame | messageframe codec µs/frame | expected ÷ raw | measured ÷ raw | serde_json codec µs/frame |");
    println!("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for (params, raw, mf, mf_codec, json_codec) in explained {
        let raw_us = 1e6 / raw;
        println!(
            "| {params} | {raw_us:.2} | {mf_codec:.2} | {:.2}x | {:.2}x | {json_codec:.2} |",
            raw_us / (raw_us + mf_codec),
            mf / raw
        );
    }
}

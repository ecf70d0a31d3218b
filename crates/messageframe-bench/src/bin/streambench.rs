//! `streambench`: frames over loopback TCP.
//!
//! For the SPEC 5.2 messages of 4, 32 and 1,024 parameters and the 1 MiB
//! attachment, the frames/s and MB/s one sender task achieves to one
//! receiver task over a loopback socket, with:
//!
//! - **raw bytes**: messageframe's encoded frames written as they are and
//!   read without looking at them, the limit of the socket itself;
//! - **messageframe codec**: `FramedWrite<_, FrameCodec>` (each frame
//!   encoded into the write buffer) to `FramedRead<_, FrameCodec>` (each
//!   frame decoded into an owned `Frame`, attachments shared);
//! - **prost**: the SPEC schema (generated with `Bytes` fields) encoded into
//!   a `BytesMut` and sent through `LengthDelimitedCodec`, decoded from the
//!   received `Bytes`;
//! - **serde_json**: the same keys as a JSON object (attachment in base64)
//!   through `LinesCodec`, parsed into a `Map`.
//!
//! Every receiver reads the last parameter back by key and the attachment's
//! length (checked once, `black_box`ed always), as crossbench does.
//!
//! Then the relay (`mframe relay`'s engine, in process) against a proxy
//! that forwards bytes and parses nothing, both between the same producer
//! (raw frames) and consumer (counting bytes).
//!
//! And in memory, no socket: the bytes/s of the `FrameScanner` finding each
//! frame's end (what the relay and `FrameReader` do per frame) against a
//! full decode of the same frame into a reused `Frame`.
//!
//! Runs are interleaved across rows and repeated; the median of the passes
//! is reported, with the spread. Tables go to stdout, progress to stderr.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::{IsTerminal, Write as _};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::prelude::{Engine, BASE64_STANDARD};
use bytes::{Bytes, BytesMut};
use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use messageframe::codec::{FrameCodec, FrameSink};
use messageframe::{Frame, Header, ValueRef};
use messageframe_bench::backends::{mf_fill, ATTACHMENT_FIELD};
use messageframe_bench::proto::bench_shared::{telemetry_value, TelemetryFrame, TelemetryValue};
use messageframe_bench::scenario::{
    fp_bool, fp_double, fp_int, fp_str, InputValue, Inputs, Probe, Scenario, ATTACHMENT_NAME,
    SCENARIOS,
};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec, LinesCodec};

/// Loopback TCP throughput: messageframe's codec against the raw-bytes
/// limit, prost and serde_json; the relay against a byte-forwarding proxy.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// Passes of about 30 ms instead of 400 ms (a smoke test).
    #[arg(long)]
    quick: bool,
    /// Passes per row; the median is reported.
    #[arg(long, default_value_t = 5)]
    passes: usize,
    /// Only this scenario: small, medium, large or attachment.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Only these rows (repeat): raw, mf, sink, prost, json, proxy, relay,
    /// and `scan` for the in-memory scanner table. For profiling one path;
    /// ratios need both rows of a pair.
    #[arg(long = "row", value_name = "ROW")]
    rows: Vec<String>,
}

/// The scenarios measured.
const RUNS: [&str; 4] = ["small", "medium", "large", "attachment"];

/// Frames of each row's calibration run, by scenario: its rate sets the
/// frames of the row's passes.
const CALIBRATION: [u64; 4] = [20_000, 10_000, 400, 40];

/// The runtime of the relay or proxy under test.
static MIDDLE: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();

/// Read buffers and write batches.
const CHUNK: usize = 64 << 10;

/// What one scenario's rows send.
struct Messages {
    scenario: Scenario,
    inputs: Inputs,
    frame: Arc<Frame>,
    frame_bytes: Bytes,
    prost: Arc<TelemetryFrame>,
    prost_len: usize,
    json: Arc<serde_json::Map<String, serde_json::Value>>,
    json_len: usize,
    expected: Probe,
}

impl Messages {
    fn new(scenario: Scenario) -> Self {
        let inputs = Inputs::new(&scenario);
        let mut frame = Frame::new(Header::new(200, 7, 1, 2));
        mf_fill(&mut frame, &inputs);
        let frame_bytes = Bytes::from(frame.encode().expect("the frame encodes"));

        let mut prost = TelemetryFrame::default();
        for (key, v) in inputs.flat.iter().zip(&inputs.values) {
            let v = match v {
                InputValue::Double(x) => telemetry_value::V::D(*x),
                InputValue::Int(i) => telemetry_value::V::I(*i),
                InputValue::Bool(b) => telemetry_value::V::B(*b),
                InputValue::Str(s) => telemetry_value::V::S(s.clone()),
            };
            prost
                .params
                .insert(key.clone(), TelemetryValue { v: Some(v) });
        }
        if let Some(a) = &inputs.attachment {
            prost.attachment = Bytes::from(a.clone());
        }
        let prost_len = prost.encoded_len();

        let mut json = serde_json::Map::new();
        for (key, v) in inputs.flat.iter().zip(&inputs.values) {
            let v = match v {
                InputValue::Double(x) => serde_json::Value::from(*x),
                InputValue::Int(i) => serde_json::Value::from(*i),
                InputValue::Bool(b) => serde_json::Value::Bool(*b),
                InputValue::Str(s) => serde_json::Value::String(s.clone()),
            };
            json.insert(key.clone(), v);
        }
        if let Some(a) = &inputs.attachment {
            json.insert(
                ATTACHMENT_FIELD.to_owned(),
                serde_json::Value::String(BASE64_STANDARD.encode(a)),
            );
        }
        let json_len = serde_json::to_string(&json).expect("serializes").len();
        let expected = inputs.expected_probe();
        Messages {
            scenario,
            inputs,
            frame: Arc::new(frame),
            frame_bytes,
            prost: Arc::new(prost),
            prost_len,
            json: Arc::new(json),
            json_len,
            expected,
        }
    }

    fn last_key(&self) -> (&str, &str, &str) {
        let n = self.inputs.len() - 1;
        (
            &self.inputs.devices[n],
            &self.inputs.params[n],
            &self.inputs.flat[n],
        )
    }
}

fn probe_frame(m: &Messages, frame: &Frame) -> Probe {
    let (d, p, _) = m.last_key();
    Probe {
        value: match frame.find(d, p) {
            Some(ValueRef::Double(x)) => fp_double(x),
            Some(ValueRef::Int(i)) => fp_int(i),
            Some(ValueRef::Bool(b)) => fp_bool(b),
            Some(ValueRef::String(s)) => fp_str(s),
            _ => 0,
        },
        attachment: frame.attachment(ATTACHMENT_NAME).map_or(0, Bytes::len),
    }
}

fn probe_prost(m: &Messages, msg: &TelemetryFrame) -> Probe {
    let (_, _, key) = m.last_key();
    Probe {
        value: match msg.params.get(key).and_then(|v| v.v.as_ref()) {
            Some(telemetry_value::V::D(x)) => fp_double(*x),
            Some(telemetry_value::V::I(i)) => fp_int(*i),
            Some(telemetry_value::V::B(b)) => fp_bool(*b),
            Some(telemetry_value::V::S(s)) => fp_str(s),
            None => 0,
        },
        attachment: msg.attachment.len(),
    }
}

fn probe_json(m: &Messages, msg: &serde_json::Map<String, serde_json::Value>) -> Probe {
    use serde_json::Value;
    let (_, _, key) = m.last_key();
    Probe {
        value: match msg.get(key) {
            Some(Value::Number(n)) if n.is_f64() => n.as_f64().map_or(0, fp_double),
            Some(Value::Number(n)) => n.as_i64().map_or(0, fp_int),
            Some(Value::Bool(b)) => fp_bool(*b),
            Some(Value::String(s)) => fp_str(s),
            _ => 0,
        },
        attachment: match msg.get(ATTACHMENT_FIELD) {
            Some(Value::String(s)) => BASE64_STANDARD.decode(s).map_or(0, |d| d.len()),
            _ => 0,
        },
    }
}

/// A connected loopback pair (sender side, receiver side).
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("loopback");
    let addr = listener.local_addr().expect("bound");
    let (a, b) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (a, b) = (a.expect("connects"), b.expect("accepts").0);
    a.set_nodelay(true).ok();
    b.set_nodelay(true).ok();
    (a, b)
}

/// Writes `n` copies of `frame` in batches of about [`CHUNK`] bytes.
async fn write_raw(mut socket: TcpStream, frame: Bytes, n: u64) {
    let per_batch = (CHUNK / frame.len()).max(1) as u64;
    let batch: Vec<u8> = frame.repeat(per_batch as usize);
    let mut sent = 0;
    while sent < n {
        let k = per_batch.min(n - sent);
        socket
            .write_all(&batch[..k as usize * frame.len()])
            .await
            .expect("the receiver reads");
        sent += k;
    }
    socket.shutdown().await.ok();
}

/// Reads until `total` bytes have arrived, with reads of up to `size`
/// bytes; returns the socket (a relay's consumer stays connected until the
/// relay stops).
async fn read_count(mut socket: TcpStream, total: u64, size: usize) -> TcpStream {
    let mut buf = vec![0u8; size];
    let mut got = 0u64;
    while got < total {
        let n = socket.read(&mut buf).await.expect("reads");
        assert!(n > 0, "the stream ended after {got} of {total} bytes");
        got += n as u64;
    }
    socket
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Row {
    Raw,
    Mf,
    Sink,
    Prost,
    Json,
    Proxy,
    Relay,
}

impl Row {
    const CODECS: [Row; 5] = [Row::Raw, Row::Mf, Row::Sink, Row::Prost, Row::Json];
    const RELAY: [Row; 2] = [Row::Proxy, Row::Relay];

    fn id(self) -> &'static str {
        match self {
            Row::Raw => "raw",
            Row::Mf => "mf",
            Row::Sink => "sink",
            Row::Prost => "prost",
            Row::Json => "json",
            Row::Proxy => "proxy",
            Row::Relay => "relay",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Row::Raw => "raw bytes (limit)",
            Row::Mf => "messageframe codec (FramedWrite)",
            Row::Sink => "messageframe FrameSink",
            Row::Prost => "prost + LengthDelimitedCodec",
            Row::Json => "serde_json + LinesCodec",
            Row::Proxy => "byte-forwarding proxy",
            Row::Relay => "mframe relay",
        }
    }

    /// Bytes on the socket per frame.
    fn wire(self, m: &Messages) -> usize {
        match self {
            Row::Raw | Row::Mf | Row::Sink | Row::Proxy | Row::Relay => m.frame_bytes.len(),
            Row::Prost => m.prost_len + 4,
            Row::Json => m.json_len + 1,
        }
    }
}

/// One timed run of `row`: from the first byte sent to the last frame
/// received (and decoded, where the row decodes).
async fn run(row: Row, m: Arc<Messages>, n: u64) -> Duration {
    match row {
        Row::Raw => {
            let (tx, rx) = pair().await;
            let total = n * m.frame_bytes.len() as u64;
            let start = Instant::now();
            let sender = tokio::spawn(write_raw(tx, m.frame_bytes.clone(), n));
            // Reads as large as the codec's (which reserves a frame's size):
            // the limit is not handicapped.
            read_count(rx, total, CHUNK.max(m.frame_bytes.len())).await;
            let t = start.elapsed();
            sender.await.expect("sender");
            t
        }
        Row::Mf => {
            let (tx, rx) = pair().await;
            let start = Instant::now();
            let frame = m.frame.clone();
            let sender = tokio::spawn(async move {
                let mut sink = FramedWrite::new(tx, FrameCodec::new());
                for _ in 0..n {
                    sink.feed(&*frame).await.expect("sends");
                }
                sink.close().await.expect("flushes");
            });
            let mut source = FramedRead::with_capacity(rx, FrameCodec::new(), CHUNK);
            for i in 0..n {
                let frame = source.next().await.expect("a frame").expect("valid");
                let probe = probe_frame(&m, &frame);
                if i == 0 {
                    assert_eq!(probe, m.expected, "messageframe reads back");
                }
                black_box(probe);
            }
            let t = start.elapsed();
            sender.await.expect("sender");
            t
        }
        Row::Sink => {
            let (tx, rx) = pair().await;
            let start = Instant::now();
            let frame = m.frame.clone();
            let sender = tokio::spawn(async move {
                let mut sink = FrameSink::new(tx);
                for _ in 0..n {
                    sink.feed(&*frame).await.expect("sends");
                }
                sink.close().await.expect("flushes");
            });
            let mut source = FramedRead::with_capacity(rx, FrameCodec::new(), CHUNK);
            for i in 0..n {
                let frame = source.next().await.expect("a frame").expect("valid");
                let probe = probe_frame(&m, &frame);
                if i == 0 {
                    assert_eq!(probe, m.expected, "messageframe reads back");
                }
                black_box(probe);
            }
            let t = start.elapsed();
            sender.await.expect("sender");
            t
        }
        Row::Prost => {
            let (tx, rx) = pair().await;
            let start = Instant::now();
            let msg = m.prost.clone();
            let sender = tokio::spawn(async move {
                let mut sink = FramedWrite::new(tx, LengthDelimitedCodec::new());
                let mut buf = BytesMut::new();
                for _ in 0..n {
                    msg.encode(&mut buf).expect("a BytesMut grows");
                    sink.feed(buf.split().freeze()).await.expect("sends");
                }
                SinkExt::<Bytes>::close(&mut sink).await.expect("flushes");
            });
            let mut source = FramedRead::with_capacity(rx, LengthDelimitedCodec::new(), CHUNK);
            for i in 0..n {
                let bytes = source.next().await.expect("a message").expect("valid");
                let msg = TelemetryFrame::decode(bytes.freeze()).expect("decodes");
                let probe = probe_prost(&m, &msg);
                if i == 0 {
                    assert_eq!(probe, m.expected, "prost reads back");
                }
                black_box(probe);
            }
            let t = start.elapsed();
            sender.await.expect("sender");
            t
        }
        Row::Json => {
            let (tx, rx) = pair().await;
            let start = Instant::now();
            let msg = m.json.clone();
            let sender = tokio::spawn(async move {
                let mut sink = FramedWrite::new(tx, LinesCodec::new());
                for _ in 0..n {
                    let line = serde_json::to_string(&*msg).expect("serializes");
                    sink.feed(line).await.expect("sends");
                }
                SinkExt::<String>::close(&mut sink).await.expect("flushes");
            });
            let mut source = FramedRead::with_capacity(rx, LinesCodec::new(), CHUNK);
            for i in 0..n {
                let line = source.next().await.expect("a line").expect("valid");
                let msg: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(&line).expect("parses");
                let probe = probe_json(&m, &msg);
                if i == 0 {
                    assert_eq!(probe, m.expected, "serde_json reads back");
                }
                black_box(probe);
            }
            let t = start.elapsed();
            sender.await.expect("sender");
            t
        }
        Row::Proxy | Row::Relay => forwarded(row, m, n).await,
    }
}

/// Producer → (proxy or relay) → consumer, timed at the consumer.
async fn forwarded(row: Row, m: Arc<Messages>, n: u64) -> Duration {
    let consumer_listener = TcpListener::bind("127.0.0.1:0").await.expect("loopback");
    let consumer_addr = consumer_listener.local_addr().expect("bound");
    let middle = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback");
    middle.set_nonblocking(true).expect("non-blocking");
    let middle_addr = middle.local_addr().expect("bound");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let target = m.frame.header().target();
    // The middle runs on a runtime of its own, as a relay or a proxy
    // deployed as its own process does, not among the benchmark's producer
    // and consumer tasks.
    let middle_rt = MIDDLE.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
    });
    let middle_task = match row {
        Row::Relay => {
            let mut config =
                mframe::cmd::relay::Config::new(vec![(target, consumer_addr.to_string())], None);
            // Like the proxy it is compared with: a consumer that falls
            // behind slows the producer (TCP's backpressure) instead of
            // losing frames (the relay's default, `--when-full drop`).
            config.when_full = mframe::cmd::relay::WhenFull::Block;
            middle_rt.spawn(async move {
                let middle = TcpListener::from_std(middle).expect("a listener");
                let report = mframe::cmd::relay::run(middle, config, async {
                    let _ = stopped.await;
                })
                .await
                .expect("the relay runs");
                Some(report)
            })
        }
        _ => middle_rt.spawn(async move {
            let middle = TcpListener::from_std(middle).expect("a listener");
            // Forwards bytes with 64 KiB reads, as the relay reads.
            let (producer, _) = middle.accept().await.expect("accepts");
            producer.set_nodelay(true).ok();
            let mut consumer = TcpStream::connect(consumer_addr).await.expect("connects");
            consumer.set_nodelay(true).ok();
            let mut from = BufReader::with_capacity(CHUNK, producer);
            tokio::io::copy_buf(&mut from, &mut consumer)
                .await
                .expect("forwards");
            consumer.shutdown().await.ok();
            drop(stopped);
            None
        }),
    };
    let consumer_side = async {
        let (socket, _) = consumer_listener.accept().await.expect("accepts");
        socket
    };
    let producer = async {
        // The relay connects to its consumer first; the proxy only once a
        // producer is there: connect now, accept concurrently.
        TcpStream::connect(middle_addr).await.expect("connects")
    };
    let (producer, consumer) = match row {
        Row::Relay => {
            let consumer = consumer_side.await;
            (producer.await, consumer)
        }
        _ => {
            let producer = producer.await;
            (producer, consumer_side.await)
        }
    };
    producer.set_nodelay(true).ok();
    let total = n * m.frame_bytes.len() as u64;
    let start = Instant::now();
    let sender = tokio::spawn(write_raw(producer, m.frame_bytes.clone(), n));
    let consumer = read_count(consumer, total, CHUNK.max(m.frame_bytes.len())).await;
    let t = start.elapsed();
    sender.await.expect("producer");
    let _ = stop.send(());
    if let Some(report) = middle_task.await.expect("middle") {
        let route = &report.routes[0];
        assert_eq!(
            (route.frames, route.dropped.total()),
            (n, 0),
            "relay report"
        );
    }
    drop(consumer);
    t
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let mid = s.len() / 2;
    if s.len() % 2 == 1 {
        s[mid]
    } else {
        (s[mid - 1] + s[mid]) / 2.0
    }
}

fn rate(frames: f64) -> String {
    if frames >= 1e6 {
        format!("{:.2} M", frames / 1e6)
    } else if frames >= 1e3 {
        format!("{:.1} k", frames / 1e3)
    } else {
        format!("{frames:.0}")
    }
}

/// Seconds `f` takes for `n` runs.
fn time_n(n: u64, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64()
}

/// The scenario's frame with its parameters in reverse order: the same
/// bytes in another layout, for the scanner that remembers the last one.
fn reversed(frame: &Frame) -> Vec<u8> {
    let mut other = Frame::new(*frame.header());
    let params: Vec<_> = frame.iter().collect();
    for &(device, param, value) in params.iter().rev() {
        other.add(device, param, value);
    }
    for (name, data) in frame.attachments() {
        other.add_attachment(name, data.to_vec());
    }
    other.encode().expect("the frame encodes")
}

/// The scanner's bytes/s against a full decode's, in memory (issue 23:
/// the scanner at least twice as fast at 32 parameters), appended to
/// `out`: each pass times both on the same frame, interleaved; medians.
///
/// The scanner passes over parameters laid out as the last frame's without
/// walking them, which a stream of one frame repeated always allows; so it
/// is also timed on two layouts alternating (the frame and its parameters
/// reversed), where every frame's layout differs from the last one's: its
/// worst case.
fn scan_vs_decode(runs: &[(Arc<Messages>, u64)], passes: usize, pass_secs: f64, out: &mut String) {
    out.push_str(
        "\nIn memory (no socket): bytes/s of `FrameScanner::scan` finding the frame's end (the same frame each time, then two layouts alternating), of `Frame::decode_from` into a reused frame, and of `FrameView::new`, medians of the passes.\n\n| scenario | frame bytes | scanner MB/s | scanner MB/s, layouts alternating | decode MB/s | view MB/s | scanner ÷ decode | alternating ÷ decode |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut medium = None;
    for (m, _) in runs {
        let bytes = &m.frame_bytes[..];
        let other = reversed(&m.frame);
        let mut scanner = messageframe::FrameScanner::new();
        let mut frame = Frame::default();
        let mut scan = || {
            let found = scanner.scan(black_box(bytes)).expect("a valid frame");
            let _ = black_box(found);
        };
        let mut alternating_scanner = messageframe::FrameScanner::new();
        let mut flip = false;
        let mut alternate = || {
            flip = !flip;
            let b = if flip { bytes } else { &other[..] };
            let found = alternating_scanner
                .scan(black_box(b))
                .expect("a valid frame");
            let _ = black_box(found);
        };
        let mut decode = || {
            frame.decode_from(black_box(bytes)).expect("a valid frame");
            black_box(frame.len());
        };
        let view = || {
            let v = messageframe::FrameView::new(black_box(bytes)).expect("a valid frame");
            black_box(v.len());
        };
        // Calibration: enough runs for a pass of about `pass_secs` / 4.
        let per_pass = |f: &mut dyn FnMut()| {
            let t = time_n(200, &mut *f).max(1e-9);
            ((pass_secs / 4.0) / (t / 200.0)).max(20.0) as u64
        };
        let (ns, na, nd, nv) = (
            per_pass(&mut scan),
            per_pass(&mut alternate),
            per_pass(&mut decode),
            per_pass(&mut { view }),
        );
        let (mut s, mut a, mut d, mut v) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let len = bytes.len() as f64;
        for _ in 0..passes {
            s.push(ns as f64 * len / time_n(ns, &mut scan));
            a.push(na as f64 * len / time_n(na, &mut alternate));
            d.push(nd as f64 * len / time_n(nd, &mut decode));
            v.push(nv as f64 * len / time_n(nv, view));
        }
        let (s, a, d, v) = (median(&s), median(&a), median(&d), median(&v));
        if m.scenario.name == "medium" {
            medium = Some((s / d, a / d));
        }
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2}x | {:.2}x |\n",
            m.scenario.title,
            bytes.len(),
            s / 1e6,
            a / 1e6,
            d / 1e6,
            v / 1e6,
            s / d,
            a / d
        ));
    }
    if let Some((r, alt)) = medium {
        let verdict = if r >= 2.0 { "met" } else { "MISSED" };
        out.push_str(&format!(
            "\n- 32 params, scanner bytes/s ÷ full decode's: {r:.2}x (target ≥ 2x): {verdict}; with two layouts alternating: {alt:.2}x\n"
        ));
    }
}

fn main() {
    let cli = Cli::parse();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; run with --release for meaningful figures");
    }
    let runs: Vec<(Arc<Messages>, u64)> = RUNS
        .iter()
        .zip(CALIBRATION)
        .filter(|(name, _)| cli.scenario.as_deref().is_none_or(|s| s == **name))
        .map(|(&name, n)| {
            let scenario = *SCENARIOS
                .iter()
                .find(|s| s.name == name)
                .expect("a scenario");
            let n = if cli.quick { (n / 10).max(3) } else { n };
            (Arc::new(Messages::new(scenario)), n)
        })
        .collect();
    if runs.is_empty() {
        eprintln!("unknown scenario; valid: small, medium, large, attachment");
        std::process::exit(2);
    }
    let pass_secs = if cli.quick { 0.03 } else { 0.4 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let tty = std::io::stderr().is_terminal();
    let rows = |m: &Messages| -> Vec<Row> {
        let all: &[Row] = if m.scenario.name == "medium" || !cli.quick {
            &[
                Row::Raw,
                Row::Mf,
                Row::Sink,
                Row::Prost,
                Row::Json,
                Row::Proxy,
                Row::Relay,
            ]
        } else {
            &Row::CODECS
        };
        all.iter()
            .copied()
            .filter(|row| cli.rows.is_empty() || cli.rows.iter().any(|r| r == row.id()))
            .collect()
    };
    let started = Instant::now();
    // Calibration: each row once; its rate sets the row's frames per pass
    // (it also warms caches and allocators, and is not reported).
    let mut frames: BTreeMap<(usize, Row), u64> = BTreeMap::new();
    for (i, (m, n)) in runs.iter().enumerate() {
        for row in rows(m) {
            if tty {
                eprint!("\rcalibrating: {} {:<30}", m.scenario.name, row.label());
            }
            let t = rt.block_on(run(row, m.clone(), *n)).as_secs_f64();
            let per_pass = (*n as f64 / t * pass_secs).round() as u64;
            frames.insert((i, row), per_pass.max(3));
        }
    }
    // (scenario, row) → frames/s of each pass.
    let mut rates: BTreeMap<(usize, Row), Vec<f64>> = BTreeMap::new();
    let passes = cli.passes.max(1);
    for pass in 0..passes {
        for (i, (m, _)) in runs.iter().enumerate() {
            for row in rows(m) {
                if tty {
                    eprint!(
                        "\rpass {}/{passes}: {} {:<30}",
                        pass + 1,
                        m.scenario.name,
                        row.label()
                    );
                }
                let n = frames[&(i, row)];
                let t = rt.block_on(run(row, m.clone(), n)).as_secs_f64();
                rates.entry((i, row)).or_default().push(n as f64 / t);
            }
        }
    }
    if tty {
        eprintln!();
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());

    let fps = |i: usize, row: Row| -> Option<f64> { rates.get(&(i, row)).map(|r| median(r)) };
    let spread = |i: usize, row: Row| -> String {
        let r = &rates[&(i, row)];
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(0.0, f64::max);
        format!("{}–{}", rate(lo), rate(hi))
    };
    let mut out = String::new();
    out.push_str(&format!(
        "Command: `{command}`. Each row: one calibration run, then {passes} passes of about {pass_secs} s, interleaved across rows; the median frames/s (and MB/s on the socket) and the range over the passes.\n\n"
    ));
    out.push_str("| scenario | row | wire bytes/frame | frames/s (median) | MB/s | frames/s range |\n|---|---|---:|---:|---:|---:|\n");
    for (i, (m, _)) in runs.iter().enumerate() {
        for row in Row::CODECS.into_iter().chain(Row::RELAY) {
            let Some(f) = fps(i, row) else { continue };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {:.1} | {} |\n",
                m.scenario.title,
                row.label(),
                row.wire(m),
                rate(f),
                f * row.wire(m) as f64 / 1e6,
                spread(i, row)
            ));
        }
    }
    out.push_str("\n| scenario | codec ÷ raw limit | FrameSink ÷ raw limit | codec ÷ prost | codec ÷ serde_json | relay ÷ proxy |\n|---|---:|---:|---:|---:|---:|\n");
    for (i, (m, _)) in runs.iter().enumerate() {
        let ratio = |a: Row, b: Row| match (fps(i, a), fps(i, b)) {
            (Some(a), Some(b)) => format!("{:.2}x", a / b),
            _ => "—".to_owned(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            m.scenario.title,
            ratio(Row::Mf, Row::Raw),
            ratio(Row::Sink, Row::Raw),
            ratio(Row::Mf, Row::Prost),
            ratio(Row::Mf, Row::Json),
            ratio(Row::Relay, Row::Proxy)
        ));
    }
    out.push_str("\nTargets:\n\n");
    let mut target = |name: &str, scenario: &str, a: Row, b: Row, min: f64| {
        if let Some(i) = runs.iter().position(|(m, _)| m.scenario.name == scenario) {
            if let (Some(x), Some(y)) = (fps(i, a), fps(i, b)) {
                let r = x / y;
                let verdict = if r >= min { "met" } else { "MISSED" };
                out.push_str(&format!("- {name}: {r:.2}x (target ≥ {min}x): {verdict}\n"));
            }
        }
    };
    target(
        "1 MiB frame, FrameSink → FrameCodec ÷ raw-bytes limit",
        "attachment",
        Row::Sink,
        Row::Raw,
        0.8,
    );
    target(
        "1 MiB frame, FramedWrite → FrameCodec ÷ raw-bytes limit",
        "attachment",
        Row::Mf,
        Row::Raw,
        0.8,
    );
    target(
        "32 params, codec ÷ prost frames/s",
        "medium",
        Row::Mf,
        Row::Prost,
        5.0,
    );
    target(
        "32 params, relay ÷ raw proxy frames/s",
        "medium",
        Row::Relay,
        Row::Proxy,
        0.8,
    );
    if cli.rows.is_empty() || cli.rows.iter().any(|r| r == "scan") {
        scan_vs_decode(&runs, passes, pass_secs, &mut out);
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
}

//! The tokio-util codecs: framing under any chunking, attachments shared
//! with the read buffer, the buffer reserved once, raw frames for routing,
//! errors with stream offsets, and real TCP streams on loopback (hostile
//! ones included, every wait bounded by a timeout).
//!
//! The `tokio` feature is on for this crate's tests through its own
//! dev-dependency entry (Cargo.toml), so `cargo test` always runs these.

// The codecs need the `tokio` feature, which the normal test run has;
// the run without `std` (.ci/run) leaves this file out.
#![cfg(feature = "tokio")]
// Limits are built by assigning fields of `Limits::default()`, not with a
// struct literal: that stays valid if `Limits` becomes `#[non_exhaustive]`.
#![allow(clippy::field_reassign_with_default)]

#[path = "support/stream.rs"]
mod support;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use messageframe::codec::{FrameCodec, RawFrame, RawFrameCodec};
use messageframe::{Context, Decoder, ErrorKind, Frame, Header, Limit, Limits, StreamError};
use proptest::collection::vec;
use proptest::prelude::*;
use support::{arb_frame, sample_frame};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;
use tokio_util::codec::{Decoder as _, Encoder as _, FramedRead, FramedWrite};

/// Every wait of these tests ends within this.
const LIMIT: Duration = Duration::from_secs(20);

fn stream_of(frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        f.encode_into(&mut out).expect("the frame encodes");
    }
    out
}

/// Feeds `bytes` to `codec` in pieces ending at `cuts`, as FramedRead does:
/// append, then decode until `None`; at the end, `decode_eof`.
fn feed<C: tokio_util::codec::Decoder>(
    codec: &mut C,
    bytes: &[u8],
    cuts: &[usize],
) -> (Vec<C::Item>, Result<(), C::Error>) {
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
    ends.sort_unstable();
    ends.push(bytes.len());
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    let mut from = 0;
    for end in ends {
        buf.extend_from_slice(&bytes[from..end.max(from)]);
        from = end.max(from);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => break,
                Err(e) => return (items, Err(e)),
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return (items, Ok(())),
            Err(e) => return (items, Err(e)),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn any_chunking_through_the_codecs_yields_the_same_frames(
        frames in vec(arb_frame(), 1..5),
        cuts in vec(any::<usize>(), 0..40),
    ) {
        let bytes = stream_of(&frames);
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        let (got, end) = feed(&mut FrameCodec::new(), &bytes, &cuts);
        prop_assert!(end.is_ok());
        prop_assert_eq!(&got, &frames);
        let (raw, end) = feed(&mut RawFrameCodec::new(), &bytes, &cuts);
        prop_assert!(end.is_ok());
        prop_assert_eq!(raw.len(), frames.len());
        for (r, f) in raw.iter().zip(&frames) {
            prop_assert_eq!(r.header, *f.header());
            prop_assert_eq!(&r.bytes[..], &f.encode().expect("the frame encodes")[..]);
        }
    }
}

#[test]
fn decoded_attachments_share_the_read_buffer() {
    let frames: Vec<Frame> = (0..3).map(|s| sample_frame(s, 5, 2, 10_000)).collect();
    let mut buf = BytesMut::from(&stream_of(&frames)[..]);
    let start = buf.as_ptr() as usize;
    let range = start..start + buf.len();
    let mut codec = FrameCodec::new();
    for expected in &frames {
        let frame = codec.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&frame, expected);
        for (name, data) in frame.attachments() {
            let at = data.as_ptr() as usize;
            assert!(
                range.contains(&at) && range.contains(&(at + data.len() - 1)),
                "attachment {name} was copied"
            );
        }
    }
    assert!(codec.decode(&mut buf).unwrap().is_none());
}

#[test]
fn the_read_buffer_is_reserved_for_the_frame_once_its_size_is_announced() {
    let frame = sample_frame(1, 4, 1, 1 << 20);
    let bytes = frame.encode().expect("the frame encodes");
    let mut buf = BytesMut::from(&bytes[..200]);
    let mut codec = FrameCodec::new();
    assert!(codec.decode(&mut buf).unwrap().is_none());
    assert!(
        buf.capacity() >= bytes.len() - 16,
        "capacity {} for a frame of {}",
        buf.capacity(),
        bytes.len()
    );
    // The rest arrives without the buffer moving.
    let before = buf.as_ptr();
    buf.extend_from_slice(&bytes[200..]);
    assert_eq!(buf.as_ptr(), before, "no reallocation");
    assert_eq!(codec.decode(&mut buf).unwrap().unwrap(), frame);
}

#[test]
fn the_encoder_writes_the_frame_into_the_write_buffer() {
    let frames: Vec<Frame> = (0..5).map(|s| sample_frame(s, 30, 1, 500)).collect();
    let mut codec = FrameCodec::new();
    let mut dst = BytesMut::new();
    for f in &frames {
        codec.encode(f, &mut dst).unwrap();
    }
    assert_eq!(&dst[..], &stream_of(&frames)[..]);
    let mut raw = RawFrameCodec::new();
    let mut forwarded = BytesMut::new();
    let mut src = dst.clone();
    while let Some(frame) = raw.decode(&mut src).unwrap() {
        raw.encode(frame, &mut forwarded).unwrap();
    }
    assert_eq!(forwarded, dst, "raw frames are forwarded unchanged");
}

#[test]
fn errors_carry_stream_offsets_and_end_of_stream_truncation() {
    let frames: Vec<Frame> = (0..3).map(|s| sample_frame(s, 3, 0, 0)).collect();
    let mut bytes = stream_of(&frames);
    let second = frames[0].encoded_len();
    let (got, end) = feed(&mut FrameCodec::new(), &bytes[..bytes.len() - 1], &[]);
    assert_eq!(got, frames[..2]);
    match end {
        Err(StreamError::Decode(e)) => {
            assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
            assert!(e.offset() >= second + frames[1].encoded_len());
        }
        other => panic!("{other:?}"),
    }
    bytes[second + 1] = 0x80; // the second frame's header is a map
    let (got, end) = feed(&mut RawFrameCodec::new(), &bytes, &[]);
    assert_eq!(got.len(), 1);
    match end {
        Err(StreamError::Decode(e)) => {
            assert_eq!(
                (e.offset(), e.context()),
                (second + 1, &Context::Header("timestamp"))
            );
        }
        other => panic!("{other:?}"),
    }
    // The owned codec also decodes: invalid UTF-8 in a key is its error.
    let mut frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    frame.add("dé", "p", 1);
    let mut bytes = frame.encode().expect("the frame encodes");
    let at = bytes.iter().position(|&b| b == 0xc3).unwrap();
    bytes[at] = 0xff;
    let (_, end) = feed(&mut FrameCodec::new(), &bytes, &[]);
    assert!(
        matches!(end, Err(StreamError::Decode(ref e)) if e.kind() == &ErrorKind::InvalidUtf8),
        "{end:?}"
    );
}

#[test]
fn the_codecs_enforce_the_decoders_limits() {
    let mut limits = Limits::default();
    limits.max_attachment_bytes = 1000;
    let decoder = Decoder::new().limits(limits);
    let bytes = sample_frame(1, 2, 1, 5000)
        .encode()
        .expect("the frame encodes");
    for end in [
        feed(&mut FrameCodec::with_decoder(decoder), &bytes, &[]).1,
        feed(&mut RawFrameCodec::with_decoder(decoder), &bytes, &[]).1,
    ] {
        match end {
            Err(StreamError::Decode(e)) => {
                assert_eq!(e.kind(), &ErrorKind::LimitExceeded(Limit::AttachmentBytes));
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A connected pair of loopback sockets.
async fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
    (client.unwrap(), server.unwrap().0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_over_tcp_with_framed_read_and_write() {
    let (client, server) = pair().await;
    let frames: Vec<Frame> = (0..300)
        .map(|s| {
            sample_frame(
                s,
                (s % 40) as usize,
                1,
                if s % 50 == 0 { 1 << 20 } else { 64 },
            )
        })
        .collect();
    let sent = frames.clone();
    let sender = tokio::spawn(async move {
        let mut sink = FramedWrite::new(client, FrameCodec::new());
        for f in &sent {
            sink.feed(f).await.unwrap();
        }
        sink.close().await.unwrap();
    });
    let mut source = FramedRead::new(server, FrameCodec::new());
    let mut got = Vec::new();
    while let Some(frame) = timeout(LIMIT, source.next()).await.expect("bounded wait") {
        got.push(frame.unwrap());
    }
    assert_eq!(got, frames);
    sender.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_frames_route_by_header_without_decoding() {
    let (client, server) = pair().await;
    let frames: Vec<Frame> = (0..100).map(|s| sample_frame(s, 10, 0, 0)).collect();
    let bytes = Bytes::from(stream_of(&frames));
    let sender = tokio::spawn(async move {
        let mut client = client;
        client.write_all(&bytes).await.unwrap();
        client.shutdown().await.unwrap();
    });
    let mut source = FramedRead::new(server, RawFrameCodec::new());
    let mut by_target = [0usize; 5];
    let mut n = 0;
    while let Some(raw) = timeout(LIMIT, source.next()).await.expect("bounded wait") {
        let RawFrame { header, bytes } = raw.unwrap();
        assert_eq!(header, *frames[n].header());
        assert_eq!(Frame::decode(&bytes).unwrap(), frames[n]);
        by_target[header.target() as usize] += 1;
        n += 1;
    }
    assert_eq!(n, frames.len());
    let expected: Vec<usize> = (0..5)
        .map(|t| frames.iter().filter(|f| f.header().target() == t).count())
        .collect();
    assert_eq!(by_target.to_vec(), expected);
    sender.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dribbling_sender_is_bounded_by_a_timeout() {
    let (client, server) = pair().await;
    let frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    let bytes = frame.encode().expect("the frame encodes");
    let sender = tokio::spawn(async move {
        let mut client = client;
        for b in bytes {
            if client.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let mut source = FramedRead::new(server, FrameCodec::new());
    // A deadline shorter than the dribble: the wait ends, the frame is not
    // complete, and the codec has buffered only what arrived.
    assert!(timeout(Duration::from_millis(350), source.next())
        .await
        .is_err());
    assert!(source.read_buffer().len() <= 5);
    // Waiting long enough, the frame arrives whole.
    let got = timeout(LIMIT, source.next()).await.expect("bounded wait");
    assert_eq!(got.unwrap().unwrap(), frame);
    sender.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4_gib_claim_over_tcp_fails_before_it_is_buffered() {
    let (client, server) = pair().await;
    let mut prefix = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8))
        .encode()
        .expect("the frame encodes");
    prefix.pop(); // the empty attachment list...
    prefix.extend([0x91, 0x92, 0xa1, b'x', 0xc6, 0xff, 0xff, 0xff, 0xff]); // ...one of 4 GiB
    let sender = tokio::spawn(async move {
        let mut client = client;
        client.write_all(&prefix).await.unwrap();
        // Then zeros, until the receiver hangs up (bounded: 64 MiB).
        let zeros = vec![0u8; 64 << 10];
        for _ in 0..1024 {
            if client.write_all(&zeros).await.is_err() {
                return;
            }
        }
    });
    let mut source = FramedRead::new(server, RawFrameCodec::new());
    match timeout(LIMIT, source.next()).await.expect("bounded wait") {
        Some(Err(StreamError::Decode(e))) => {
            assert_eq!(e.kind(), &ErrorKind::LimitExceeded(Limit::FrameBytes));
        }
        other => panic!("{other:?}"),
    }
    assert!(source.read_buffer().capacity() < 1 << 20);
    assert!(timeout(LIMIT, source.next()).await.unwrap().is_none());
    drop(source);
    sender.await.unwrap();
}

/// An `AsyncWrite` that accepts at most `max` bytes per call and records
/// where each slice it was given starts.
struct Recorder {
    out: Vec<u8>,
    max: usize,
    starts: Vec<usize>,
}

impl tokio::io::AsyncWrite for Recorder {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let n = buf.len().min(self.max);
        self.starts.push(buf.as_ptr() as usize);
        self.out.extend_from_slice(&buf[..n]);
        std::task::Poll::Ready(Ok(n))
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let mut n = 0;
        for b in bufs {
            self.starts.push(b.as_ptr() as usize);
            let take = b.len().min(self.max - n);
            self.out.extend_from_slice(&b[..take]);
            n += take;
            if n == self.max {
                break;
            }
        }
        std::task::Poll::Ready(Ok(n))
    }
    fn is_write_vectored(&self) -> bool {
        true
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn frame_sink_writes_the_encoding_and_passes_large_attachments_as_they_are() {
    use messageframe::codec::FrameSink;
    let frames: Vec<Frame> = vec![
        sample_frame(1, 10, 0, 0),
        sample_frame(2, 3, 2, 100_000), // two shared attachments
        sample_frame(3, 0, 1, 100),     // a small one, copied
        sample_frame(4, 40, 1, 16 << 10),
    ];
    for max in [usize::MAX, 7, 4096] {
        let mut sink = FrameSink::new(Recorder {
            out: Vec::new(),
            max,
            starts: Vec::new(),
        });
        for f in &frames {
            sink.feed(f).await.unwrap();
        }
        sink.flush().await.unwrap();
        let recorder = sink.into_inner();
        assert_eq!(recorder.out, stream_of(&frames), "writes of at most {max}");
        // Each large attachment was handed to the writer where it is.
        for f in &frames {
            for (name, data) in f.attachments() {
                let shared = recorder.starts.contains(&(data.as_ptr() as usize));
                assert_eq!(
                    shared,
                    data.len() >= 16 << 10,
                    "{name} of {} bytes",
                    data.len()
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_sink_over_tcp_to_the_codec() {
    use messageframe::codec::FrameSink;
    let (client, server) = pair().await;
    let frames: Vec<Frame> = (0..60)
        .map(|s| {
            sample_frame(
                s,
                (s % 20) as usize,
                (s % 3) as usize,
                if s % 10 == 0 { 1 << 20 } else { 20_000 },
            )
        })
        .collect();
    let sent = frames.clone();
    let sender = tokio::spawn(async move {
        let mut sink = FrameSink::new(client);
        for f in &sent {
            sink.feed(f).await.unwrap();
        }
        sink.close().await.unwrap();
    });
    let got: Vec<Frame> = timeout(
        LIMIT,
        FramedRead::new(server, FrameCodec::new())
            .map(Result::unwrap)
            .collect(),
    )
    .await
    .expect("bounded wait");
    assert_eq!(got, frames);
    sender.await.unwrap();
}

//! Frames over byte streams: the incremental scanner (chunking, linearity,
//! limits, hostile streams), `FrameReader`, `FrameWriter` and encoding into
//! any `BufMut`.

// `FrameReader` and `FrameWriter` need `std`; the run without it
// (.ci/run) leaves this file out.
#![cfg(feature = "std")]
// Limits are built by assigning fields of `Limits::default()`, not with a
// struct literal: that stays valid if `Limits` becomes `#[non_exhaustive]`.
#![allow(clippy::field_reassign_with_default)]

mod common;
#[path = "support/stream.rs"]
mod support;

use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use messageframe::{
    Context, Decoder, EncodeError, ErrorKind, Expected, Frame, FrameReader, FrameScanner,
    FrameWriter, Header, Limit, Limits, Scan, StreamError,
};
use proptest::collection::vec;
use proptest::prelude::*;
use support::{arb_frame, sample_frame, scan_stream, End, Endless, Pieces};

/// A frame in encodings no encoder of ours writes, all valid: wide
/// integers and lengths, extra elements in every array, an unknown value
/// holding an extension, bin32.
fn quirky_frame() -> Vec<u8> {
    let mut b = vec![0xdc, 0x00, 0x04]; // top: array16 of 4 (one extra)
    b.extend([0xdc, 0x00, 0x09]); // header: array16 of 9 (one extra)
    b.extend([0xcf, 0, 0, 0, 0, 0, 0, 0, 5]); // timestamp, uint64
    b.extend([0xcd, 0x00, 0x07]); // counter, uint16
    b.extend([0xce, 0, 0, 0, 1]); // source, uint32
    b.extend([0xcc, 0x02]); // target, uint8
    b.extend([0xd0, 0xff]); // message id -1, int8
    b.extend([0xd1, 0xff, 0x00]); // message type -256, int16
    b.push(0x01); // version
    b.extend([0xd2, 0, 0, 0, 0]); // flags, int32
    b.extend([0x92, 0xc0, 0xc3]); // the header's extra element
    b.extend([0xde, 0x00, 0x03]); // params: map16 of 3
    b.extend([0xd9, 3, b'd', 0x1f, b'i']); // key, str8
    b.extend([
        0x93, 0xcc, 10, 0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb, 0xc0,
    ]);
    b.extend([0xda, 0, 3, b'd', 0x1f, b'x']); // key, str16
    b.extend([0x92, 20, 0xca, 0x3f, 0xc0, 0, 0]); // float32 1.5
    b.extend([0xdb, 0, 0, 0, 1, b'u']); // key, str32
    b.extend([0x92, 99, 0xc7, 2, 5, 1, 2]); // unknown tag 99: ext8
    b.extend([0xdd, 0, 0, 0, 1]); // attachments: array32 of 1
    b.extend([
        0x93, 0xd9, 1, b'a', 0xc6, 0, 0, 0, 3, 9, 9, 9, 0x81, 0x01, 0x02,
    ]);
    b.extend([0xd6, 1, 0, 0, 0, 0]); // the top's extra element: fixext4
    b
}

/// Every interop frame, the quirky one and a few generated ones, back to
/// back, with each frame's offset and length.
fn fixed_stream() -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut parts: Vec<Vec<u8>> = common::interop_frames()
        .into_iter()
        .map(|f| f.bytes)
        .collect();
    parts.push(quirky_frame());
    parts.extend((0..4).map(|s| {
        sample_frame(s, 12, 1, 300)
            .encode()
            .expect("the frame encodes")
    }));
    let mut stream = Vec::new();
    let mut spans = Vec::new();
    for p in parts {
        spans.push((stream.len(), p.len()));
        stream.extend_from_slice(&p);
    }
    (stream, spans)
}

fn header_at(stream: &[u8], at: usize) -> Header {
    Header::peek(&stream[at..]).expect("a valid header")
}

#[test]
fn the_quirky_frame_is_valid() {
    let b = quirky_frame();
    let frame = Frame::decode(&b).expect("valid");
    assert_eq!(frame.header().message_type(), -256);
    let mut scanner = FrameScanner::new();
    assert_eq!(
        scanner.scan(&b).unwrap(),
        Scan::Complete {
            len: b.len(),
            header: *frame.header()
        }
    );
}

#[test]
fn every_frame_of_a_stream_is_found_with_its_length_and_header() {
    let (stream, spans) = fixed_stream();
    let out = scan_stream(&stream, &[], Limits::default());
    let expected: Vec<_> = spans
        .iter()
        .map(|&(at, len)| (at, len, header_at(&stream, at)))
        .collect();
    assert_eq!(out.frames, expected);
    assert_eq!(out.end, End::Clean);
}

#[test]
fn fed_one_byte_at_a_time_the_scanner_finds_the_same_frames_in_linear_steps() {
    let (stream, _) = fixed_stream();
    let whole = scan_stream(&stream, &[], Limits::default());
    let cuts: Vec<usize> = (1..stream.len()).collect();
    let bytewise = scan_stream(&stream, &cuts, Limits::default());
    assert_eq!(bytewise.frames, whole.frames);
    assert_eq!(bytewise.end, End::Clean);
    let bound = stream.len() as u64 + 2 * bytewise.calls;
    assert!(
        bytewise.steps <= bound,
        "{} steps for {} bytes in {} calls",
        bytewise.steps,
        stream.len(),
        bytewise.calls
    );
    assert!(whole.steps <= stream.len() as u64 + 2 * whole.calls);
}

#[test]
fn need_is_a_lower_bound_of_the_missing_bytes_for_every_prefix() {
    let (stream, spans) = fixed_stream();
    for &(at, len) in &spans {
        let frame = &stream[at..at + len];
        for cut in 0..len {
            let mut scanner = FrameScanner::new();
            match scanner.scan(&frame[..cut]) {
                Ok(Scan::Incomplete { need }) => assert!(
                    cut + need <= len,
                    "frame at {at}: {cut} bytes in, need {need}, frame is {len}"
                ),
                other => panic!("frame at {at}, prefix {cut}: {other:?}"),
            }
            let err = scanner.truncation(&frame[..cut]);
            assert_eq!(err.is_some(), cut > 0);
            if let Some(e) = err {
                assert!(e.offset() <= cut);
                match e.kind() {
                    // What the element has, and needs beyond it.
                    ErrorKind::Truncated {
                        needed, available, ..
                    } => {
                        assert_eq!(*available, cut - e.offset(), "{e}");
                        assert!(needed > available, "{e}");
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}

#[test]
fn a_1_mib_frame_fed_one_byte_at_a_time() {
    let frame = sample_frame(3, 8, 1, 1 << 20);
    let bytes = frame.encode().expect("the frame encodes");
    let mut scanner = FrameScanner::new();
    let mut calls = 0u64;
    let mut largest_need = 0;
    for cut in 0..bytes.len() {
        calls += 1;
        match scanner.scan(&bytes[..cut]) {
            Ok(Scan::Incomplete { need }) => {
                assert!(cut + need <= bytes.len());
                largest_need = largest_need.max(need);
            }
            other => panic!("{cut}: {other:?}"),
        }
    }
    calls += 1;
    assert_eq!(
        scanner.scan(&bytes).unwrap(),
        Scan::Complete {
            len: bytes.len(),
            header: *frame.header()
        }
    );
    // Once the attachment's length is read, the scanner says the whole
    // megabyte is missing: a reader reserves it at once.
    assert!(largest_need >= 1 << 20, "largest need {largest_need}");
    assert!(
        scanner.steps() <= bytes.len() as u64 + 2 * calls,
        "{} steps, {} bytes",
        scanner.steps(),
        bytes.len()
    );
}

fn arb_limits() -> impl Strategy<Value = Limits> {
    prop_oneof![
        Just(Limits::default()),
        (64usize..4096, 0usize..40, 0usize..70, 1usize..400).prop_map(
            |(frame, params, string, att)| {
                let mut l = Limits::default();
                l.max_frame_bytes = frame;
                l.max_params = params;
                l.max_string_len = string;
                l.max_key_len = string / 2;
                l.max_attachments = 2;
                l.max_attachment_bytes = att;
                l
            }
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any split of a multi-frame stream yields the same frames, and the
    /// scanner's steps stay within `bytes + 2 * calls`.
    #[test]
    fn any_split_of_a_stream_yields_the_same_frames(
        frames in vec(arb_frame(), 1..6),
        cuts in vec(any::<usize>(), 0..60),
    ) {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for f in &frames {
            let at = stream.len();
            f.encode_into(&mut stream).expect("the frame encodes");
            expected.push((at, stream.len() - at, *f.header()));
        }
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        let split = scan_stream(&stream, &cuts, Limits::default());
        prop_assert_eq!(&split.frames, &expected);
        prop_assert_eq!(&split.end, &End::Clean);
        prop_assert!(split.steps <= stream.len() as u64 + 2 * split.calls);
        // The frames decode to what was sent.
        for (f, &(at, len, _)) in frames.iter().zip(&expected) {
            prop_assert_eq!(&Frame::decode(&stream[at..at + len]).unwrap(), f);
        }
    }

    /// Damaged streams: however the bytes arrive, the scanner gives the
    /// same frames and ends with the same error, at the same offset; it
    /// never rejects a frame the decoder (with the same limits) accepts,
    /// and never accepts one whose end the decoder sees elsewhere.
    #[test]
    fn chunking_changes_no_answer_and_the_decoder_agrees(
        frames in vec(arb_frame(), 1..4),
        damage in vec((any::<usize>(), any::<u8>()), 0..4),
        cuts in vec(any::<usize>(), 0..30),
        limits in arb_limits(),
    ) {
        let mut stream = quirky_frame();
        for f in &frames {
            f.encode_into(&mut stream).expect("the frame encodes");
        }
        for &(at, byte) in &damage {
            let at = at % stream.len();
            stream[at] = byte;
        }
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        let whole = scan_stream(&stream, &[], limits);
        let split = scan_stream(&stream, &cuts, limits);
        prop_assert_eq!(&split.frames, &whole.frames);
        prop_assert_eq!(&split.end, &whole.end);

        let decoder = Decoder::new().limits(limits);
        for &(at, len, header) in &whole.frames {
            if let Ok(view) = decoder.view_prefix(&stream[at..]) {
                prop_assert_eq!(view.encoded_len(), len);
                prop_assert_eq!(*view.header(), header);
            }
        }
        let next = whole.frames.last().map_or(0, |&(at, len, _)| at + len);
        match &whole.end {
            End::Clean => prop_assert_eq!(next, stream.len()),
            End::Truncated(e) | End::Error(e) => {
                prop_assert!(e.offset() >= next);
                prop_assert!(
                    decoder.view_prefix(&stream[next..]).is_err(),
                    "the scanner rejects what the decoder accepts: {}", e
                );
            }
        }
    }
}

/// The limits a frame exactly meets: every count and size its own.
fn exact_limits(frame: &Frame) -> Limits {
    let mut l = Limits::default();
    l.max_frame_bytes = frame.encoded_len();
    l.max_params = frame.len();
    l.max_attachments = frame.attachment_count();
    l.max_attachment_bytes = frame.attachments().map(|(_, d)| d.len()).sum();
    let keys = || frame.iter().map(|(d, p, _)| d.len() + 1 + p.len());
    l.max_key_len = keys().max().unwrap_or(0);
    let strings = frame.iter().map(|(_, _, v)| match v {
        messageframe::ValueRef::String(s) => s.len(),
        messageframe::ValueRef::Unknown(u) => u.raw().len(),
        _ => 0,
    });
    let names = frame.attachments().map(|(n, _)| n.len());
    l.max_string_len = keys().chain(strings).chain(names).max().unwrap_or(0);
    l
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// At limits a frame exactly meets, the scanner and the decoder both
    /// accept it; one below any of them, both reject it, the scanner at
    /// the latest where the decoder does (and on the same limit, when the
    /// decoder names one).
    #[test]
    fn limits_are_exact_boundaries_for_scanner_and_decoder(frame in arb_frame()) {
        let bytes = frame.encode().expect("the frame encodes");
        let exact = exact_limits(&frame);
        let mut scanner = FrameScanner::with_limits(exact);
        let complete = matches!(scanner.scan(&bytes), Ok(Scan::Complete { .. }));
        prop_assert!(complete);
        prop_assert!(Decoder::new().limits(exact).decode(&bytes).is_ok());
        type Field = fn(&mut Limits) -> &mut usize;
        let tighter: [(Field, Limit); 6] = [
            (|l| &mut l.max_frame_bytes, Limit::FrameBytes),
            (|l| &mut l.max_params, Limit::Params),
            (|l| &mut l.max_attachments, Limit::Attachments),
            (|l| &mut l.max_attachment_bytes, Limit::AttachmentBytes),
            (|l| &mut l.max_key_len, Limit::KeyLen),
            (|l| &mut l.max_string_len, Limit::StringLen),
        ];
        for (field, limit) in tighter {
            let mut l = exact;
            let v = field(&mut l);
            if *v == 0 {
                continue;
            }
            *v -= 1;
            let decoded = Decoder::new().limits(l).decode(&bytes);
            let scanned = FrameScanner::with_limits(l).scan(&bytes);
            let Err(d) = decoded else {
                return Err(TestCaseError::fail(format!("{limit:?}: the decoder accepts")));
            };
            let Err(s) = scanned else {
                return Err(TestCaseError::fail(format!("{limit:?}: the scanner accepts ({d})")));
            };
            prop_assert!(s.offset() <= d.offset(), "{}: scanner {} decoder {}", limit, s, d);
            if let ErrorKind::LimitExceeded(named) = d.kind() {
                prop_assert_eq!(s.kind(), &ErrorKind::LimitExceeded(*named));
            }
        }
    }
}

#[test]
fn garbage_is_malformed_at_its_first_byte() {
    let mut scanner = FrameScanner::new();
    let err = scanner.scan(b"\x00garbage").unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::UnexpectedType {
            expected: Expected::Array,
            found: 0x00
        }
    );
    assert_eq!((err.offset(), err.context()), (0, &Context::Frame));
    // A top-level array too short to be a frame.
    let err = scanner.scan(&[0x92, 0x01, 0x02]).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::TooFewElements {
            expected: 3,
            found: 2
        }
    );
    // The reserved marker inside a value the scanner only skips.
    let mut bytes = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8))
        .encode()
        .expect("the frame encodes");
    bytes[0] = 0x94; // one extra top-level element...
    bytes.push(0xc1); // ...that is not MessagePack
    let err = scanner.scan(&bytes).unwrap_err();
    assert_eq!(
        err.kind(),
        &ErrorKind::UnexpectedType {
            expected: Expected::Value,
            found: 0xc1
        }
    );
    assert_eq!(err.offset(), bytes.len() - 1);
}

#[test]
fn truncated_so_far_and_malformed_are_distinct_answers() {
    let bytes = sample_frame(1, 4, 0, 0)
        .encode()
        .expect("the frame encodes");
    let mut scanner = FrameScanner::new();
    // A prefix is only incomplete...
    assert!(matches!(
        scanner.scan(&bytes[..bytes.len() - 1]),
        Ok(Scan::Incomplete { need: 1 })
    ));
    // ...until a byte makes it impossible.
    let mut bad = bytes[..bytes.len() - 1].to_vec();
    bad.push(0xc1);
    assert!(scanner.scan(&bad).is_err());
}

/// The prefix of a frame with no parameters up to its attachment list: the
/// default header, `{}`.
fn empty_params_prefix() -> Vec<u8> {
    let mut b = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8))
        .encode()
        .expect("the frame encodes");
    assert_eq!(b.pop(), Some(0x90), "ends with the empty attachment list");
    b
}

#[test]
fn a_4_gib_length_claim_fails_as_soon_as_it_is_read() {
    // An attachment of 4 GiB - 1.
    let mut b = empty_params_prefix();
    b.extend([0x91, 0x92, 0xa2, b'i', b'q']);
    let bin_at = b.len();
    b.extend([0xc6, 0xff, 0xff, 0xff, 0xff]);
    let mut scanner = FrameScanner::new();
    assert!(matches!(
        scanner.scan(&b[..b.len() - 1]),
        Ok(Scan::Incomplete { .. })
    ));
    let err = scanner.scan(&b).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::LimitExceeded(Limit::FrameBytes));
    assert_eq!(
        (err.offset(), err.context()),
        (bin_at, &Context::Attachment(0))
    );

    // A reader over a sender that would go on forever stops at once: it
    // read one chunk, and reserved nothing for the claim.
    let mut reader = FrameReader::new(Endless {
        prefix: b.clone(),
        pos: 0,
        filler: 0,
        served: 0,
    });
    match reader.read_raw() {
        Err(StreamError::Decode(e)) => {
            assert_eq!(e.kind(), &ErrorKind::LimitExceeded(Limit::FrameBytes));
            assert_eq!(e.offset(), bin_at);
        }
        other => panic!("{other:?}"),
    }
    assert!(reader.get_ref().served <= 128 << 10);
    assert!(reader.read_raw().unwrap().is_none(), "the reader stops");

    // A 4 GiB key, parameter count, top-level array and attachment list.
    let mut key = empty_params_prefix();
    key.pop(); // the empty map
    let key_at = key.len() + 1;
    key.extend([0x81, 0xdb, 0xff, 0xff, 0xff, 0xff]);
    let mut map = empty_params_prefix();
    map.pop();
    let map_at = map.len();
    map.extend([0xdf, 0xff, 0xff, 0xff, 0xff]);
    let top = vec![0xdd, 0xff, 0xff, 0xff, 0xff];
    let mut list = empty_params_prefix();
    let list_at = list.len();
    list.extend([0xdd, 0xff, 0xff, 0xff, 0xff]);
    for (bytes, kind, at, context) in [
        (key, Limit::StringLen, key_at, Context::Key(0)),
        (map, Limit::Params, map_at, Context::Params),
        (top, Limit::FrameBytes, 0, Context::Frame),
        (list, Limit::Attachments, list_at, Context::Attachment(0)),
    ] {
        let err = FrameScanner::new().scan(&bytes).unwrap_err();
        assert_eq!(err.kind(), &ErrorKind::LimitExceeded(kind), "{bytes:02x?}");
        assert_eq!((err.offset(), err.context()), (at, &context));
        // The decoder, given the same bytes, fails too.
        assert!(Frame::decode(&bytes).is_err());
    }
}

#[test]
fn limits_are_checked_before_the_bytes_arrive() {
    let frame = sample_frame(5, 3, 1, 10_000);
    let bytes = frame.encode().expect("the frame encodes");
    let mut limits = Limits::default();
    limits.max_frame_bytes = 8_000;
    let decoder = Decoder::new().limits(limits);
    let expected = decoder.decode(&bytes).unwrap_err();
    assert_eq!(
        expected.kind(),
        &ErrorKind::LimitExceeded(Limit::FrameBytes)
    );
    // The scanner fails at the attachment's length prefix, long before
    // 8,000 bytes: at the element the decoder names.
    let mut scanner = FrameScanner::with_limits(limits);
    let mut failed_at = None;
    for cut in 0..bytes.len() {
        if let Err(e) = scanner.scan(&bytes[..cut]) {
            assert_eq!(e, expected);
            failed_at = Some(cut);
            break;
        }
    }
    let cut = failed_at.expect("the scanner fails");
    assert!(cut < 1_000, "failed after {cut} bytes");
}

#[test]
fn an_endless_nested_array_ends_at_the_limit_with_bounded_memory() {
    // An unknown value `[[[[...` that never closes: the raw-value limit
    // (max_string_len) ends it.
    let mut b = empty_params_prefix();
    b.pop();
    let value_at = b.len() + 1 + 4 + 2;
    b.extend([0x81, 0xa3, b'd', 0x1f, b'p', 0x92, 99]);
    assert_eq!(b.len(), value_at);
    let mut limits = Limits::default();
    limits.max_string_len = 64 << 10;
    let mut reader = FrameReader::with_decoder(
        Endless {
            prefix: b,
            pos: 0,
            filler: 0x91,
            served: 0,
        },
        Decoder::new().limits(limits),
    );
    match reader.read_raw() {
        Err(StreamError::Decode(e)) => {
            assert_eq!(e.kind(), &ErrorKind::LimitExceeded(Limit::StringLen));
            assert_eq!(e.offset(), value_at);
            assert_eq!(e.context(), &Context::Value("d\u{1f}p".to_owned()));
        }
        other => panic!("{other:?}"),
    }
    assert!(reader.get_ref().served <= 256 << 10);

    // The same in the frame's extra elements, where only the frame limit
    // applies: it ends at max_frame_bytes.
    let mut b = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8))
        .encode()
        .expect("the frame encodes");
    b[0] = 0x94;
    let mut limits = Limits::default();
    limits.max_frame_bytes = 1 << 20;
    let mut reader = FrameReader::with_decoder(
        Endless {
            prefix: b,
            pos: 0,
            filler: 0x9f, // fixarray(15): each level announces 15 more
            served: 0,
        },
        Decoder::new().limits(limits),
    );
    match reader.read_raw() {
        Err(StreamError::Decode(e)) => {
            assert_eq!(e.kind(), &ErrorKind::LimitExceeded(Limit::FrameBytes));
        }
        other => panic!("{other:?}"),
    }
    // 15 children per level: the bound is hit after 1/15 of the limit.
    assert!(reader.get_ref().served <= 256 << 10);
    let mut reader = FrameReader::with_decoder(
        Endless {
            prefix: Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8))
                .encode()
                .expect("the frame encodes")
                .into_iter()
                .enumerate()
                .map(|(i, b)| if i == 0 { 0x94 } else { b })
                .collect(),
            pos: 0,
            filler: 0x91, // one child per level: every byte is a level
            served: 0,
        },
        Decoder::new().limits(limits),
    );
    match reader.read_raw() {
        Err(StreamError::Decode(e)) => {
            assert_eq!(e.kind(), &ErrorKind::LimitExceeded(Limit::FrameBytes));
        }
        other => panic!("{other:?}"),
    }
    let served = reader.get_ref().served;
    assert!(
        ((1 << 20) - 100..=(1 << 20) + (128 << 10)).contains(&served),
        "{served}"
    );
}

#[test]
fn garbage_through_a_reader_is_an_error_not_a_hang() {
    let mut reader = FrameReader::new(Endless {
        prefix: Vec::new(),
        pos: 0,
        filler: b'x',
        served: 0,
    });
    assert!(matches!(reader.read_raw(), Err(StreamError::Decode(_))));
    assert!(reader.get_ref().served <= 128 << 10);
}

/// A stream of frames and its frames.
fn frames_and_stream(n: u64) -> (Vec<Frame>, Vec<u8>) {
    let frames: Vec<Frame> = (0..n)
        .map(|s| {
            sample_frame(
                s,
                (s % 9) as usize,
                (s % 3) as usize,
                (s as usize * 97) % 5000,
            )
        })
        .collect();
    let mut stream = Vec::new();
    for f in &frames {
        f.encode_into(&mut stream).expect("the frame encodes");
    }
    (frames, stream)
}

#[test]
fn reader_yields_every_frame_however_the_reads_are_cut() {
    let (frames, stream) = frames_and_stream(40);
    for sizes in [&[1][..], &[7], &[3, 1000, 1, 64 << 10], &[1 << 20]] {
        // As an iterator of new frames.
        let got: Vec<Frame> = FrameReader::new(Pieces::new(&stream, sizes))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, frames, "reads of {sizes:?}");
        // Into one reused frame.
        let mut reader = FrameReader::new(Pieces::new(&stream, sizes));
        let mut frame = Frame::default();
        let mut i = 0;
        while reader.read_frame(&mut frame).unwrap() {
            assert_eq!(frame, frames[i]);
            i += 1;
        }
        assert_eq!(
            (i, reader.frames_read()),
            (frames.len(), frames.len() as u64)
        );
        assert_eq!(reader.offset(), stream.len() as u64);
        // Raw, and as views.
        let mut reader = FrameReader::new(Pieces::new(&stream, sizes));
        let mut at = 0;
        for f in &frames {
            let (header, bytes) = reader.read_raw().unwrap().unwrap();
            assert_eq!(
                (header, bytes),
                (*f.header(), &f.encode().expect("the frame encodes")[..])
            );
            at += bytes.len();
        }
        assert!(reader.read_raw().unwrap().is_none());
        assert_eq!(at, stream.len());
        let mut reader = FrameReader::new(Pieces::new(&stream, sizes));
        for f in &frames {
            let view = reader.read_view().unwrap().unwrap();
            assert_eq!(view.to_frame(), *f);
        }
        assert!(reader.read_view().unwrap().is_none());
    }
}

#[test]
fn reader_returns_a_frame_as_soon_as_it_is_complete() {
    let (frames, stream) = frames_and_stream(2);
    let first = frames[0].encoded_len();
    // The first frame and half of the second; then the stream has nothing
    // (a read would block).
    let mut source = Pieces::new(&stream[..first + 5], &[1 << 20]);
    source.eof = false;
    let mut reader = FrameReader::new(source);
    assert!(!reader.has_buffered_frame().unwrap(), "nothing read yet");
    let (header, _) = reader.read_raw().unwrap().unwrap();
    assert_eq!(header, *frames[0].header());
    assert_eq!(reader.get_ref().reads, 1, "one read, no second one");
    assert!(!reader.has_buffered_frame().unwrap());
    match reader.read_raw() {
        Err(StreamError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::WouldBlock),
        other => panic!("{other:?}"),
    }
}

#[test]
fn has_buffered_frame_sees_complete_frames_without_reading() {
    let (frames, stream) = frames_and_stream(3);
    let mut source = Pieces::new(&stream, &[1 << 20]);
    source.eof = false;
    let mut reader = FrameReader::new(source);
    let mut frame = Frame::default();
    assert!(reader.read_frame(&mut frame).unwrap());
    let reads = reader.get_ref().reads;
    assert!(reader.has_buffered_frame().unwrap());
    assert!(reader.has_buffered_frame().unwrap(), "asking twice is fine");
    assert!(reader.read_frame(&mut frame).unwrap());
    assert_eq!(frame, frames[1]);
    assert!(reader.has_buffered_frame().unwrap());
    assert!(reader.read_frame(&mut frame).unwrap());
    assert_eq!(frame, frames[2]);
    assert!(!reader.has_buffered_frame().unwrap());
    assert_eq!(reader.get_ref().reads, reads, "all three from one read");
}

#[test]
fn reader_reports_truncation_at_the_end_with_the_stream_offset() {
    let (frames, stream) = frames_and_stream(3);
    let cut = stream.len() - 3;
    let mut reader = FrameReader::new(&stream[..cut]);
    let mut frame = Frame::default();
    assert!(reader.read_frame(&mut frame).unwrap());
    assert!(reader.read_frame(&mut frame).unwrap());
    let third = frames[0].encoded_len() + frames[1].encoded_len();
    match reader.read_frame(&mut frame) {
        Err(StreamError::Decode(e)) => {
            assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
            assert!(e.offset() >= third && e.offset() <= cut, "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(reader.buffer(), &stream[third..cut]);
    assert!(!reader.read_frame(&mut frame).unwrap(), "then nothing");
}

#[test]
fn reader_reports_a_malformed_frame_after_the_frames_before_it() {
    let (frames, mut stream) = frames_and_stream(3);
    let second = frames[0].encoded_len();
    // The second frame's header array becomes a map.
    stream[second + 1] = 0x88;
    let mut reader = FrameReader::new(&stream[..]);
    assert_eq!(reader.next().unwrap().unwrap(), frames[0]);
    match reader.next() {
        Some(Err(StreamError::Decode(e))) => {
            assert_eq!(e.offset(), second + 1);
            assert_eq!(e.context(), &Context::Header("timestamp"));
        }
        other => panic!("{other:?}"),
    }
    assert!(reader.next().is_none());
    // Invalid UTF-8 is found by the decode of the complete frame, also at
    // its stream offset.
    let mut frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    frame.add("d", "p", "ok");
    let mut bytes = frames[0].encode().expect("the frame encodes");
    let at = bytes.len();
    bytes.extend(frame.encode().expect("the frame encodes"));
    let last = bytes.len() - 2;
    bytes[last] = 0xff;
    let mut reader = FrameReader::new(&bytes[..]);
    reader.next().unwrap().unwrap();
    match reader.next() {
        Some(Err(StreamError::Decode(e))) => {
            assert_eq!(e.kind(), &ErrorKind::InvalidUtf8);
            assert!(e.offset() > at);
        }
        other => panic!("{other:?}"),
    }
}

/// A dribbling sender: one byte every 100 ms.
fn dribble(bytes: Vec<u8>) -> (TcpStream, thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sender = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        for b in bytes {
            if s.write_all(&[b]).is_err() {
                return; // the receiver gave up
            }
            thread::sleep(Duration::from_millis(100));
        }
    });
    let (stream, _) = listener.accept().unwrap();
    (stream, sender)
}

#[test]
fn a_dribbling_sender_is_waited_for_byte_by_byte_with_bounded_memory() {
    let frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    let bytes = frame.encode().expect("the frame encodes");
    assert!(bytes.len() <= 16);
    let (stream, sender) = dribble(bytes.clone());
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let started = Instant::now();
    let mut reader = FrameReader::new(stream);
    let mut got = Frame::default();
    assert!(reader.read_frame(&mut got).unwrap());
    assert_eq!(got, frame);
    // One read per byte: the reader waited for each, and no longer.
    assert!(started.elapsed() >= Duration::from_millis(100 * (bytes.len() as u64 - 2)));
    assert!(started.elapsed() < Duration::from_secs(10));
    sender.join().unwrap();
}

#[test]
fn a_dribbling_sender_times_out_a_reader_with_a_shorter_timeout() {
    let frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 7, 8));
    let (stream, sender) = dribble(frame.encode().expect("the frame encodes"));
    stream
        .set_read_timeout(Some(Duration::from_millis(40)))
        .unwrap();
    let started = Instant::now();
    let mut reader = FrameReader::new(stream);
    match reader.read_raw() {
        Err(StreamError::Io(e)) => assert!(
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(reader.buffer().len() <= 2, "{:?}", reader.buffer());
    drop(reader);
    sender.join().unwrap();
}

#[test]
fn writer_round_trips_and_writes_in_large_pieces() {
    struct Counted {
        out: Vec<u8>,
        writes: usize,
    }
    impl Write for Counted {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            self.out.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let (frames, stream) = frames_and_stream(200);
    let mut writer = FrameWriter::new(Counted {
        out: Vec::new(),
        writes: 0,
    });
    for (i, f) in frames.iter().enumerate() {
        if i % 2 == 0 {
            writer.write_frame(f).unwrap();
        } else {
            writer
                .write_raw(&f.encode().expect("the frame encodes"))
                .unwrap();
        }
    }
    assert_eq!(writer.frames_written(), 200);
    let counted = writer.into_inner().unwrap();
    assert_eq!(counted.out, stream);
    assert!(
        counted.writes <= stream.len() / (64 << 10) + 2,
        "{}",
        counted.writes
    );
    let back: Vec<Frame> = FrameReader::new(&counted.out[..])
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, frames);
}

#[test]
fn writer_flushes_on_request_and_on_drop() {
    let frame = sample_frame(1, 3, 0, 0);
    let mut out = Vec::new();
    {
        let mut writer = FrameWriter::new(&mut out);
        writer.write_frame(&frame).unwrap();
        assert!(writer.get_ref().is_empty(), "buffered");
        writer.flush().unwrap();
        assert_eq!(writer.get_ref().len(), frame.encoded_len());
        writer.write_frame(&frame).unwrap();
    }
    assert_eq!(out.len(), 2 * frame.encoded_len());
}

#[test]
fn encode_to_buf_writes_the_same_bytes_into_any_buf_mut() {
    for frame in [sample_frame(9, 20, 2, 3000), sample_frame(1, 0, 0, 0)] {
        let expected = frame.encode().expect("the frame encodes");
        let mut bm = BytesMut::new();
        assert_eq!(frame.encode_to_buf(&mut bm).unwrap(), expected.len());
        assert_eq!(&bm[..], &expected[..]);
        let mut v = vec![0xee];
        frame.encode_to_buf(&mut v).unwrap();
        assert_eq!(&v[1..], &expected[..]);
        let mut exact = vec![0u8; expected.len()];
        assert_eq!(
            frame.encode_to_buf(&mut &mut exact[..]).unwrap(),
            expected.len()
        );
        assert_eq!(exact, expected);
        // Too small: an error, and nothing written.
        let mut short = vec![0u8; expected.len() - 1];
        let err = frame.encode_to_buf(&mut &mut short[..]).unwrap_err();
        assert_eq!(
            err,
            EncodeError::BufferTooSmall {
                needed: expected.len(),
                available: short.len()
            }
        );
        assert!(short.iter().all(|&b| b == 0));
        // Limited: a BufMut adapter.
        let mut limited = BytesMut::new();
        let mut lim = (&mut limited).limit(expected.len());
        frame.encode_to_buf(&mut lim).unwrap();
        assert_eq!(&limited[..], &expected[..]);
    }
}

#[test]
fn scanner_limits_default_to_the_decoders() {
    assert_eq!(FrameScanner::new().limits(), &Limits::default());
    let mut limits = Limits::default();
    limits.max_params = 3;
    assert_eq!(FrameScanner::with_limits(limits).limits(), &limits);
    // A reader built from a decoder frames with that decoder's limits.
    let frame = sample_frame(2, 5, 0, 0);
    let bytes = frame.encode().expect("the frame encodes");
    let mut reader = FrameReader::with_decoder(&bytes[..], Decoder::new().limits(limits));
    match reader.read_raw() {
        Err(StreamError::Decode(e)) => {
            assert_eq!(e.kind(), &ErrorKind::LimitExceeded(Limit::Params));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn stream_error_converts_to_io_error() {
    let (_, stream) = frames_and_stream(1);
    let mut reader = FrameReader::new(&stream[..stream.len() - 1]);
    let err: io::Error = reader.read_raw().unwrap_err().into();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("truncated"), "{err}");
    let mut empty = FrameReader::new(io::empty());
    assert!(empty.read_raw().unwrap().is_none());
}

#[test]
fn writer_passes_large_attachments_as_they_are_with_partial_writes() {
    struct Recorder {
        out: Vec<u8>,
        max: usize,
        starts: Vec<usize>,
    }
    impl Write for Recorder {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.starts.push(b.as_ptr() as usize);
            let n = b.len().min(self.max);
            self.out.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
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
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let frames = [
        sample_frame(1, 5, 0, 0),
        sample_frame(2, 3, 2, 100_000),
        sample_frame(3, 8, 1, 1000),
        sample_frame(4, 0, 3, 70_000),
    ];
    let expected: Vec<u8> = frames
        .iter()
        .flat_map(|f| f.encode().expect("the frame encodes"))
        .collect();
    for max in [usize::MAX, 5, 60_000] {
        let mut writer = FrameWriter::new(Recorder {
            out: Vec::new(),
            max,
            starts: Vec::new(),
        });
        for f in &frames {
            writer.write_frame(f).unwrap();
        }
        let recorder = writer.into_inner().unwrap();
        assert_eq!(recorder.out, expected, "writes of at most {max}");
        for f in &frames {
            for (_, data) in f.attachments() {
                let shared = recorder.starts.contains(&(data.as_ptr() as usize));
                assert_eq!(shared, data.len() >= 64 << 10, "{} bytes", data.len());
            }
        }
    }
}

/// Every answer of `scanner` to `bytes` (one frame) arriving in pieces that
/// end at `cuts`, then the rest: the answers up to the frame's end or an
/// error, and the truncation error if it ends cut short.
fn answers(
    scanner: &mut FrameScanner,
    bytes: &[u8],
    cuts: &[usize],
) -> Vec<Result<Scan, messageframe::DecodeError>> {
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c % (bytes.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(bytes.len());
    let mut out = Vec::new();
    for &end in &ends {
        let answer = scanner.scan(&bytes[..end]);
        let done = !matches!(answer, Ok(Scan::Incomplete { .. }));
        out.push(answer);
        if done {
            return out;
        }
    }
    out.push(
        scanner
            .truncation(bytes)
            .map_or(Ok(Scan::Incomplete { need: 0 }), Err),
    );
    out
}

/// One byte of `bytes` replaced by each of the markers that decide the
/// parameter walk's path (and the byte with its low bit flipped).
fn each_byte_changed(bytes: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    const MARKERS: [u8; 14] = [
        0x00, 0x7f, 0x80, 0x90, 0x92, 0x93, 0xa0, 0xa5, 0xbf, 0xc0, 0xc3, 0xcb, 0xd3, 0xff,
    ];
    (0..bytes.len()).flat_map(move |at| {
        MARKERS
            .iter()
            .copied()
            .chain([bytes[at] ^ 1])
            .filter(move |&m| m != bytes[at])
            .map(move |m| {
                let mut b = bytes.to_vec();
                b[at] = m;
                b
            })
    })
}

/// A telemetry frame of `params` parameters in the forms encoders write
/// (fixstr keys; integers of every width, doubles, short strings, bools):
/// the parameters the scanner's fast walk takes and learns the layout of.
/// `seed` varies the keys, the values and their encodings.
fn telemetry_frame(seed: u64, params: usize) -> Frame {
    let mut frame = Frame::new(Header::new(1, 2, 3, 4).with_counter(seed));
    for k in 0..params as u64 {
        let device = format!("d{}", (k + seed) % 3);
        let param = format!("p{k}{}", "x".repeat(((k * seed) % 7) as usize));
        let n = (k + seed) as i64;
        match (k + seed) % 5 {
            0 => frame.add(
                &device,
                &param,
                n.pow((seed % 4) as u32 + 1) * (1 - 2 * (n & 1)),
            ),
            1 => frame.add(&device, &param, n as f64 * 0.25),
            2 => frame.add(&device, &param, "v".repeat((n % 12) as usize)),
            3 => frame.add(&device, &param, n % 2 == 0),
            _ => frame.add(&device, &param, -n * 1000),
        }
    }
    frame.add_attachment("a", vec![7u8; 5]);
    frame
}

/// The scanner keeps the parameter layout of the frames it walked and
/// passes over parameters that agree with it without walking them. A
/// scanner that learned a frame answers every one-byte change of it
/// exactly as a fresh scanner does: the same length and header, the same
/// error at the same offset, the same bytes still needed, whole or split.
#[test]
fn a_scanner_that_learned_a_frame_answers_each_change_of_it_as_a_fresh_one() {
    let frame = telemetry_frame(3, 24);
    let bytes = frame.encode().expect("the frame encodes");
    let mut warm = FrameScanner::new();
    let (mut changed, mut rejected) = (0, 0);
    for damaged in each_byte_changed(&bytes) {
        for cuts in [&[][..], &[bytes.len() / 2], &[40, 41, 200]] {
            // Learned: the undamaged frame (the error or the answer to the
            // last damaged one changed nothing it walked before).
            warm.reset();
            let learned = warm.scan(&bytes);
            assert!(matches!(learned, Ok(Scan::Complete { len, .. }) if len == bytes.len()));
            let fresh = answers(&mut FrameScanner::new(), &damaged, cuts);
            assert_eq!(answers(&mut warm, &damaged, cuts), fresh, "cuts {cuts:?}");
            rejected += usize::from(fresh.iter().any(Result::is_err));
        }
        changed += 1;
    }
    // The changes reach the errors the walk guards against.
    assert!(
        changed > 3000 && rejected > changed / 2,
        "{changed} changes, {rejected} rejected"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever frames a scanner learned (layouts that agree with the
    /// frame's in part), under any limits, it answers a damaged frame,
    /// whole or in pieces, exactly as a fresh scanner.
    #[test]
    fn what_a_scanner_learned_changes_no_answer(
        learned in vec((0u64..6, 0usize..40), 0..3),
        frame in (0u64..6, 0usize..40),
        damage in vec((any::<usize>(), any::<u8>()), 0..4),
        cuts in vec(any::<usize>(), 0..8),
        limits in arb_limits(),
    ) {
        let mut warm = FrameScanner::with_limits(limits);
        let bytes = telemetry_frame(frame.0, frame.1).encode().expect("the frame encodes");
        for &(seed, params) in &learned {
            let _ = warm.scan(&telemetry_frame(seed, params).encode().expect("the frame encodes"));
            warm.reset();
        }
        let _ = warm.scan(&bytes);
        let mut damaged = bytes.clone();
        for &(at, byte) in &damage {
            let at = at % damaged.len();
            damaged[at] = byte;
        }
        let fresh = answers(&mut FrameScanner::with_limits(limits), &damaged, &cuts);
        prop_assert_eq!(answers(&mut warm, &damaged, &cuts), fresh);
    }
}

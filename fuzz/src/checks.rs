//! The properties every fuzz target checks, one function per target.
//!
//! This file is shared, unchanged, by the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`) and by the stable corpus replay in
//! `crates/messageframe/tests/corpus_replay.rs` (which includes it with
//! `#[path]`), so a normal `cargo test` replays the committed corpus through
//! exactly the checks the fuzzers ran. It depends on `messageframe`, and
//! through its submodule [`reference`] on rmpv and rmp (dev-dependencies of
//! the core crate).
//!
//! Every check takes arbitrary bytes. A check panics (a fuzzer finding) when:
//! - a decoder panics, hangs or allocates beyond libFuzzer's limits;
//! - two decoders disagree on the same bytes (owned decode, decode into a
//!   reused frame, shared decode, view, header peek, prefix decode);
//! - a frame that decoded does not re-encode to bytes that decode again to
//!   the same frame, with the same bytes on the second encode;
//! - a failed decode into a reused frame leaves anything in it, or changes
//!   its header;
//! - the owned decoder and an independent reader built on rmpv
//!   ([`reference`]) disagree on whether the bytes are a frame or on what it
//!   holds, or the encoder and an independent encoder built on rmp write
//!   different bytes for it.

// Declared here rather than in lib.rs so that every file that includes this
// one by path gets it too (the path is relative to this file).
#[path = "reference.rs"]
pub mod reference;

use std::borrow::Cow;
use std::collections::HashMap;

use messageframe::{
    Bytes, DecodeError, Decoder, ErrorKind, Frame, FrameScanner, FrameView, Header, Limits, Scan,
    ValueRef,
};

use reference::{Reading, RefFrame, RefValue};

/// The fuzz targets, one per check below; each has a corpus directory
/// `fuzz/corpus/<target>`.
pub const TARGETS: [&str; 8] = [
    "decode",
    "decode_into",
    "view",
    "header_peek",
    "stream",
    "roundtrip",
    "differential",
    "serde",
];

/// Limits small enough that fuzz inputs reach every limit check.
pub const TIGHT: Limits = Limits::none()
    .max_frame_bytes(512)
    .max_params(6)
    .max_attachments(2)
    .max_attachment_bytes(48)
    .max_string_len(40)
    .max_key_len(24)
    .max_alloc_bytes(1024);

/// Above this many parameters, `find` is checked for a sample of keys only
/// (every key of a big frame would be quadratic in the input size).
const FIND_ALL_UP_TO: usize = 256;

/// Frames up to this size are also formatted with `Debug`.
const FORMAT_UP_TO: usize = 4096;

/// Two values are the same if they have the same type and content; doubles
/// compare by bits (NaN is the same as itself, -0.0 differs from 0.0).
pub fn same_value(a: ValueRef<'_>, b: ValueRef<'_>) -> bool {
    match (a, b) {
        (ValueRef::Double(x), ValueRef::Double(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Panics unless the two frames have the same header, parameters (in order,
/// values compared by [`same_value`]) and attachments.
pub fn assert_same_frame(a: &Frame, b: &Frame, what: &str) {
    assert_eq!(a.header(), b.header(), "{what}: header");
    assert_eq!(a.len(), b.len(), "{what}: parameter count");
    for (i, ((da, pa, va), (db, pb, vb))) in a.iter().zip(b.iter()).enumerate() {
        assert_eq!((da, pa), (db, pb), "{what}: key of parameter #{i}");
        assert!(
            same_value(va, vb),
            "{what}: value of parameter #{i}: {va:?} vs {vb:?}"
        );
    }
    assert!(
        a.attachments().eq(b.attachments()),
        "{what}: attachments differ"
    );
}

/// Panics unless the view shows exactly the content of the frame: header,
/// parameters in order, lookups (first occurrence of a duplicate key),
/// attachments, and `to_frame`.
pub fn assert_view_matches(view: &FrameView<'_>, frame: &Frame, what: &str) {
    assert_eq!(view.header(), frame.header(), "{what}: header");
    assert_eq!(view.len(), frame.len(), "{what}: parameter count");
    assert_eq!(view.is_empty(), frame.is_empty(), "{what}: is_empty");
    assert_eq!(view.iter().len(), frame.len(), "{what}: iter().len()");
    let n = frame.len();
    for (i, ((vd, vp, vv), (d, p, v))) in view.iter().zip(frame.iter()).enumerate() {
        assert_eq!((vd, vp), (d, p), "{what}: key of parameter #{i}");
        assert!(same_value(vv, v), "{what}: parameter #{i}: {vv:?} vs {v:?}");
        if n <= FIND_ALL_UP_TO || i < 16 || i + 16 >= n || i % 97 == 0 {
            let (Some(found_view), Some(found_owned)) = (view.find(d, p), frame.find(d, p)) else {
                panic!("{what}: find({d:?}, {p:?}) misses a present key");
            };
            assert!(
                same_value(found_view, found_owned),
                "{what}: find({d:?}, {p:?}): {found_view:?} vs {found_owned:?}"
            );
            assert!(view.contains(d, p) && frame.contains(d, p));
        }
    }
    assert_eq!(view.attachment_count(), frame.attachment_count());
    assert!(
        view.attachments()
            .eq(frame.attachments().map(|(n, d)| (n, &d[..]))),
        "{what}: attachments differ"
    );
    for (name, _) in frame.attachments() {
        assert_eq!(
            view.attachment(name),
            frame.attachment(name).map(|d| &d[..]),
            "{what}: attachment({name:?})"
        );
    }
    let copied = view.to_frame();
    assert_same_frame(&copied, frame, &format!("{what}: to_frame"));
    assert_eq!(
        copied.encode().unwrap(),
        frame.encode().unwrap(),
        "{what}: to_frame bytes"
    );
    // Formatting must not panic either (checked on small frames: formatting
    // a 70 KB string thousands of times would dominate the replay).
    if view.encoded_len() <= FORMAT_UP_TO {
        let _ = format!("{view:?}");
    }
}

/// Re-encodes a decoded frame and checks the round trip: the bytes decode
/// again to the same frame, whose encoding is the same bytes (the encoding
/// of a decoded frame is a fixpoint). Returns the encoded bytes.
pub fn assert_round_trip(frame: &Frame, what: &str) -> Vec<u8> {
    let encoded = frame.encode().unwrap();
    assert_eq!(encoded.len(), frame.encoded_len(), "{what}: encoded_len");
    let again = Frame::decode(&encoded)
        .unwrap_or_else(|e| panic!("{what}: the re-encoded frame does not decode: {e}"));
    assert_same_frame(&again, frame, &format!("{what}: decode(encode(frame))"));
    assert_eq!(
        again.encode().unwrap(),
        encoded,
        "{what}: the second encode differs from the first"
    );
    if encoded.len() <= FORMAT_UP_TO {
        let _ = format!("{frame:?}");
    }
    encoded
}

/// A reused destination frame with content of every kind, past the size at
/// which the parameter index is built.
pub fn prefilled_frame() -> Frame {
    let mut frame = Frame::new(Header::from_fields(7, 8, 9, 10, 11, 12, 13, 14));
    for k in 0..20 {
        frame.add("old", &format!("p{k}"), k);
    }
    frame.add("old", "s", "a string value");
    frame.add("old", "d", 2.5);
    frame.add_attachment("old", vec![1u8; 100]);
    frame
}

/// Checks an error from a decode into `frame`: the frame holds nothing and
/// its header is the one it had before.
fn assert_cleared(frame: &Frame, header_before: &Header, what: &str) {
    assert!(frame.is_empty(), "{what}: parameters left after an error");
    assert_eq!(
        frame.attachment_count(),
        0,
        "{what}: attachments left after an error"
    );
    assert_eq!(frame.iter().count(), 0, "{what}: iter after an error");
    assert_eq!(
        frame.header(),
        header_before,
        "{what}: header changed by a failed decode"
    );
}

/// Both results agree: both Ok with the same frame, or both the same error.
fn assert_same_result(a: &Result<Frame, DecodeError>, b: &Result<Frame, DecodeError>, what: &str) {
    match (a, b) {
        (Ok(x), Ok(y)) => assert_same_frame(x, y, what),
        (Err(x), Err(y)) => assert_eq!(x, y, "{what}: different errors"),
        (x, y) => panic!("{what}: one decoder accepts, the other rejects: {x:?} vs {y:?}"),
    }
}

/// Target `decode`: the owned decoders.
///
/// `Frame::decode` and `Decoder::decode` agree; a strict decoder accepts a
/// subset (rejecting only duplicate keys); tighter limits only ever reject,
/// never change what is decoded; whatever decodes round-trips; the header
/// peek sees the decoded header.
pub fn check_decode(data: &[u8]) {
    let owned = Frame::decode(data);
    let by_decoder = Decoder::new().decode(data);
    assert_same_result(&owned, &by_decoder, "Frame::decode vs Decoder::decode");
    // Error messages never panic.
    if let Err(e) = &owned {
        let _ = format!("{e} {e:?}");
        assert!(
            e.offset() <= data.len(),
            "error offset past the input: {e:?}"
        );
    }

    // A duplicate key stops the strict walk early, before whatever error the
    // lenient walk may find further on; any other outcome is the same.
    let strict = Decoder::new().strict(true).decode(data);
    match &strict {
        Err(e) if e.kind() == &ErrorKind::DuplicateKey => {}
        _ => assert_same_result(&strict, &owned, "strict vs lenient"),
    }

    let tight = Decoder::new().limits(TIGHT).decode(data);
    match (&tight, &owned) {
        (Err(e), _) if matches!(e.kind(), ErrorKind::LimitExceeded(_)) => {}
        _ => assert_same_result(&tight, &owned, "tight limits vs default limits"),
    }

    if let Ok(frame) = &owned {
        assert_round_trip(frame, "decode");
        assert_eq!(
            Header::peek(data).as_ref(),
            Ok(frame.header()),
            "Header::peek vs decode"
        );
        let shared = Frame::decode_shared(&Bytes::copy_from_slice(data))
            .expect("decode_shared rejects what decode accepts");
        assert_same_frame(&shared, frame, "decode_shared vs decode");
    }
}

/// Target `decode_into`: decoding into a reused, pre-filled frame.
///
/// Gives the same result as a fresh decode; on error leaves the frame empty
/// with its header unchanged; decoding the same bytes again into the same
/// frame gives the same result; `decode_from` and `decode_shared_into` agree,
/// and shared attachments point into the input buffer.
pub fn check_decode_into(data: &[u8]) {
    let fresh = Frame::decode(data);
    let mut frame = prefilled_frame();
    for round in 0..2 {
        let before = *frame.header();
        let what = format!("decode_into (round {round})");
        match (Decoder::new().decode_into(&mut frame, data), &fresh) {
            (Ok(()), Ok(expected)) => assert_same_frame(&frame, expected, &what),
            (Err(e), Err(expected)) => {
                assert_eq!(&e, expected, "{what}: different error");
                assert_cleared(&frame, &before, &what);
            }
            (got, want) => panic!("{what}: {got:?} vs fresh decode {want:?}"),
        }
    }

    let mut frame = prefilled_frame();
    let before = *frame.header();
    match (frame.decode_from(data), &fresh) {
        (Ok(()), Ok(expected)) => assert_same_frame(&frame, expected, "decode_from"),
        (Err(_), Err(_)) => assert_cleared(&frame, &before, "decode_from"),
        (got, want) => panic!("decode_from: {got:?} vs fresh decode {want:?}"),
    }

    let buffer = Bytes::copy_from_slice(data);
    let mut frame = prefilled_frame();
    let before = *frame.header();
    match (
        Decoder::new().decode_shared_into(&mut frame, &buffer),
        &fresh,
    ) {
        (Ok(()), Ok(expected)) => {
            assert_same_frame(&frame, expected, "decode_shared_into");
            let range = buffer.as_ptr_range();
            for (name, d) in frame.attachments() {
                assert!(
                    d.is_empty() || range.contains(&d.as_ptr()),
                    "decode_shared_into copied attachment {name:?}"
                );
            }
        }
        (Err(e), Err(expected)) => {
            assert_eq!(&e, expected, "decode_shared_into: different error");
            assert_cleared(&frame, &before, "decode_shared_into");
        }
        (got, want) => panic!("decode_shared_into: {got:?} vs fresh decode {want:?}"),
    }

    // The tight limits: an error of any kind still leaves the frame cleared.
    let mut frame = prefilled_frame();
    let before = *frame.header();
    if Decoder::new()
        .limits(TIGHT)
        .decode_into(&mut frame, data)
        .is_err()
    {
        assert_cleared(&frame, &before, "decode_into with tight limits");
    }
}

/// Target `view`: the zero-copy view.
///
/// Validates exactly what the owned decoder accepts (same errors, strict and
/// lenient), and a view that validated shows the same content through
/// `iter`, `find`, `attachments`, `attachment` and `to_frame`.
pub fn check_view(data: &[u8]) {
    let owned = Frame::decode(data);
    match (FrameView::new(data), &owned) {
        (Ok(view), Ok(frame)) => {
            assert_eq!(view.as_bytes(), data);
            assert_eq!(view.encoded_len(), data.len());
            assert_view_matches(&view, frame, "view");
        }
        (Err(e), Err(expected)) => assert_eq!(&e, expected, "view: different error"),
        (got, want) => panic!("view: {got:?} vs owned decode {want:?}"),
    }
    let strict = Decoder::new().strict(true);
    match (strict.view(data), strict.decode(data)) {
        (Ok(view), Ok(frame)) => assert_eq!(view.len(), frame.len()),
        (Err(a), Err(b)) => assert_eq!(a, b, "strict view: different error"),
        (got, want) => panic!("strict view: {got:?} vs strict decode {want:?}"),
    }
    let tight = Decoder::new().limits(TIGHT);
    match (tight.view(data), &owned) {
        (Ok(view), Ok(frame)) => assert_view_matches(&view, frame, "tight view"),
        (Ok(view), Err(e)) => panic!("tight view accepts what decode rejects: {view:?} {e}"),
        (Err(_), _) => {}
    }
}

/// Target `header_peek`: `Header::peek` and `Header::peek_frame`.
///
/// A frame that decodes peeks to its header; a header that does not peek
/// means the frame does not decode, with the same error. `peek_frame` sees
/// the same header and, for a frame that validates, its exact length.
pub fn check_header_peek(data: &[u8]) {
    let peek = Header::peek(data);
    match (&peek, Frame::decode(data)) {
        (Ok(h), Ok(frame)) => assert_eq!(h, frame.header()),
        (Err(e), Err(d)) => assert_eq!(e, &d, "peek and decode fail differently"),
        (Err(e), Ok(_)) => panic!("peek fails on a frame that decodes: {e}"),
        (Ok(_), Err(_)) => {}
    }
    // Peeking a prefix of the input is consistent too: once the header is
    // complete, the peek is the same.
    if let Ok(h) = peek {
        for cut in (0..data.len()).rev().take(16) {
            if let Ok(p) = Header::peek(&data[..cut]) {
                assert_eq!(p, h, "peek of a prefix of {cut} bytes");
            }
        }
    }

    let peek_frame = Header::peek_frame(data);
    match (&peek_frame, &peek) {
        (Ok((h, len)), Ok(p)) => {
            assert_eq!(h, p, "peek_frame and peek see different headers");
            assert!(*len <= data.len(), "peek_frame length past the input");
        }
        (Ok(_), Err(e)) => panic!("peek_frame succeeds where peek fails: {e}"),
        (Err(_), _) => {}
    }
    if let Ok(view) = Decoder::new().view_prefix(data) {
        assert_eq!(
            peek_frame,
            Ok((*view.header(), view.encoded_len())),
            "peek_frame of a frame that validates"
        );
    }
}

/// Target `stream`: several frames from one buffer.
///
/// `decode_prefix_into`, `decode_shared_prefix_into` and `view_prefix` walk
/// the buffer frame by frame in lock step: same lengths, same frames, same
/// final error; every frame found also decodes on its own.
pub fn check_stream(data: &[u8]) {
    check_scanner(data);
    let dec = Decoder::new();
    let shared = Bytes::copy_from_slice(data);
    let mut frame = prefilled_frame();
    let mut shared_frame = prefilled_frame();
    let mut offset = 0;
    let mut frames = 0;
    while offset < data.len() {
        let rest = &data[offset..];
        let what = format!("frame #{frames} at byte {offset}");
        let before = *frame.header();
        let owned = dec.decode_prefix_into(&mut frame, rest);
        let by_shared = dec.decode_shared_prefix_into(&mut shared_frame, &shared.slice(offset..));
        let view = dec.view_prefix(rest);
        match (owned, by_shared, view) {
            (Ok(n), Ok(m), Ok(view)) => {
                assert!(n > 0 && n <= rest.len(), "{what}: used {n} bytes");
                assert_eq!(n, m, "{what}: shared prefix length");
                assert_eq!(n, view.encoded_len(), "{what}: view length");
                assert_eq!(view.as_bytes(), &rest[..n]);
                assert_same_frame(&shared_frame, &frame, &what);
                assert_view_matches(&view, &frame, &what);
                let alone = Frame::decode(&rest[..n])
                    .unwrap_or_else(|e| panic!("{what}: does not decode on its own: {e}"));
                assert_same_frame(&alone, &frame, &what);
                // A router walking the stream by headers only finds the same
                // frame boundaries.
                assert_eq!(
                    Header::peek_frame(rest),
                    Ok((*frame.header(), n)),
                    "{what}: peek_frame"
                );
                if n < rest.len() {
                    let Err(e) = Frame::decode(rest) else {
                        panic!("{what}: decode accepts trailing bytes");
                    };
                    assert_eq!(
                        e.kind(),
                        &ErrorKind::TrailingBytes {
                            count: rest.len() - n
                        }
                    );
                }
                offset += n;
                frames += 1;
            }
            (Err(a), Err(b), Err(c)) => {
                assert_eq!(a, b, "{what}: shared prefix error");
                assert_eq!(a, c, "{what}: view prefix error");
                assert_cleared(&frame, &before, &what);
                assert!(shared_frame.is_empty() && shared_frame.attachment_count() == 0);
                let _ = a.with_base_offset(offset);
                break;
            }
            (a, b, c) => panic!("{what}: prefix decoders disagree: {a:?} / {b:?} / {c:?}"),
        }
    }
}

/// Part of target `stream`: the scanner finds the frames the decoder
/// finds, and it answers the same whatever it learned before. It keeps the
/// parameter layout of the frames it walked and passes over parameters that
/// agree with it without walking them; so the input is scanned by a fresh
/// scanner, then again by the same scanner (which learned its frames, and
/// sees them now through a shape), whole and split in two, and every answer
/// must be the same: each frame's length and header, the error and its
/// offset, what an incomplete frame still needs.
fn check_scanner(data: &[u8]) {
    fn answers(
        scanner: &mut FrameScanner,
        data: &[u8],
        cut: usize,
    ) -> Vec<Result<Scan, DecodeError>> {
        // From the first byte (a scan that ended cut short left it
        // inside a frame); what it learned stays.
        scanner.reset();
        let mut out = Vec::new();
        let mut start = 0;
        for end in [cut.min(data.len()), data.len()] {
            while start <= end {
                let answer = scanner.scan(&data[start..end]);
                out.push(answer.clone());
                match answer {
                    Ok(Scan::Complete { len, .. }) => start += len,
                    Ok(Scan::Incomplete { .. }) => break,
                    Err(_) => return out,
                }
            }
        }
        out.push(
            scanner
                .truncation(&data[start..])
                .map_or(Ok(Scan::Incomplete { need: 0 }), Err),
        );
        out
    }
    let mut warm = FrameScanner::new();
    let fresh = answers(&mut FrameScanner::new(), data, data.len());
    let dec = Decoder::new();
    let mut at = 0;
    for answer in &fresh {
        match answer {
            Ok(Scan::Complete { len, header }) => {
                // UTF-8, value ranges and duplicate keys are the decode's.
                if let Ok(view) = dec.view_prefix(&data[at..]) {
                    assert_eq!(
                        (view.encoded_len(), view.header()),
                        (*len, header),
                        "frame at {at}"
                    );
                }
                at += len;
            }
            Err(_) if at < data.len() => {
                assert!(
                    dec.view_prefix(&data[at..]).is_err(),
                    "the scanner rejects what the decoder accepts"
                );
            }
            _ => {}
        }
    }
    for cut in [data.len(), data.len() / 2, 0] {
        for pass in 0..2 {
            let again = answers(&mut warm, data, cut);
            let alone = answers(&mut FrameScanner::new(), data, cut);
            assert_eq!(again, alone, "warm scanner, pass {pass}, cut at {cut}");
        }
    }
}

/// Target `roundtrip`: decode → encode → decode gives the same frame and,
/// on the second encode, the same bytes; the view of the re-encoded bytes
/// agrees with the owned decode of them, strict and lenient.
pub fn check_roundtrip(data: &[u8]) {
    let Ok(frame) = Frame::decode(data) else {
        return;
    };
    let encoded = assert_round_trip(&frame, "roundtrip");
    let again = Frame::decode(&encoded).expect("checked by assert_round_trip");
    let view = FrameView::new(&encoded).expect("an encoded frame validates as a view");
    assert_view_matches(&view, &again, "roundtrip view");
    // Re-encoding loses nothing a strict decoder cares about: duplicate keys
    // stay duplicate, unique keys stay unique.
    assert_eq!(
        Decoder::new().strict(true).decode(data).is_ok(),
        Decoder::new().strict(true).decode(&encoded).is_ok(),
        "strictness changed by re-encoding"
    );
    // An encoded frame is a valid stream of one frame.
    let mut out = Frame::default();
    assert_eq!(
        Decoder::new().decode_prefix_into(&mut out, &encoded),
        Ok(encoded.len())
    );
}

/// Target `differential`: the owned decoder against [`reference`], an
/// independent reader of the spec built on rmpv.
///
/// Both decide alike whether the bytes are one frame (no limits: the
/// decoder runs with [`Limits::none`], the reference has none), and for a
/// frame they agree on the header, every parameter in order (key split,
/// type, value; doubles by bits), the first occurrence found by `find` for
/// every key, and every attachment; the strict decoder rejects exactly the
/// frames in which the reference finds a duplicate `(device, parameter)`;
/// and the encoder writes exactly the bytes that the reference encoder
/// (rmp's writers, SPEC section 2's forms) writes for the reference's
/// reading.
///
/// rmpv reads the reserved marker `0xc1` as nil. When the decoder rejects a
/// `0xc1` that the reference accepted, the byte becomes `0xc0` (nil) and
/// both read again: the decoder must then agree with the reference, so the
/// `0xc1` it rejected was where a value starts, and nothing else differed.
pub fn check_differential(data: &[u8]) {
    let decoder = Decoder::new().limits(Limits::none());
    let mut input = Cow::Borrowed(data);
    loop {
        let ours = decoder.decode(&input);
        match (ours, reference::read_frame(&input)) {
            // Nested deeper than rmpv reads: no verdict to compare with.
            (_, Reading::Undecided) => return,
            (Err(_), Reading::Invalid { .. }) => return,
            (Ok(frame), Reading::Valid(expected)) => {
                return assert_matches_reference(&frame, &expected, &input)
            }
            (Ok(frame), Reading::Invalid { at, why }) => panic!(
                "differential: the decoder accepts what the reference rejects \
                 (at byte {at}: {why}): {frame:?}"
            ),
            (Err(e), Reading::Valid(expected)) => {
                let at = e.offset();
                if matches!(e.kind(), ErrorKind::UnexpectedType { found: 0xc1, .. })
                    && input.get(at) == Some(&0xc1)
                {
                    input.to_mut()[at] = 0xc0;
                    continue;
                }
                panic!("differential: the decoder rejects a frame the reference reads: {e:?}; reference: {expected:?}")
            }
        }
    }
}

/// The decoded value is the reference's value.
fn matches_reference(v: ValueRef<'_>, r: &RefValue) -> bool {
    match (v, r) {
        (ValueRef::Int(a), RefValue::Int(b)) => a == *b,
        (ValueRef::Double(a), RefValue::Double(b)) => reference::same_double(a, *b),
        (ValueRef::String(a), RefValue::Str(b)) => a == b,
        (ValueRef::Bool(a), RefValue::Bool(b)) => a == *b,
        (ValueRef::Unknown(u), RefValue::Unknown { tag, raw }) => {
            u.tag() == *tag && u.raw() == &raw[..]
        }
        _ => false,
    }
}

/// Panics unless `frame`, decoded from `input`, holds what the reference
/// read, strict decoding agrees on duplicates, and the frame encodes to the
/// reference encoder's bytes.
fn assert_matches_reference(frame: &Frame, expected: &RefFrame, input: &[u8]) {
    let h = &expected.header;
    let header = Header::from_fields(
        h.timestamp,
        h.counter,
        h.source,
        h.target,
        h.message_id,
        h.message_type,
        h.version,
        h.flags,
    );
    assert_eq!(frame.header(), &header, "differential: header");
    assert_eq!(
        frame.len(),
        expected.params.len(),
        "differential: parameter count"
    );
    for (i, ((d, p, v), r)) in frame.iter().zip(&expected.params).enumerate() {
        assert_eq!((d, p), r.parts(), "differential: key of parameter #{i}");
        assert!(
            matches_reference(v, &r.value),
            "differential: value of parameter #{i} ({d:?}, {p:?}): {v:?}, reference {:?}",
            r.value
        );
    }
    // Lookups find the first occurrence of every key.
    let mut first = HashMap::new();
    for r in &expected.params {
        first.entry(r.parts()).or_insert(&r.value);
    }
    for ((d, p), r) in &first {
        match frame.find(d, p) {
            Some(v) if matches_reference(v, r) => {}
            other => panic!("differential: find({d:?}, {p:?}) = {other:?}, reference {r:?}"),
        }
    }
    assert_eq!(
        frame.attachment_count(),
        expected.attachments.len(),
        "differential: attachment count"
    );
    for (i, ((name, data), (r_name, r_data))) in
        frame.attachments().zip(&expected.attachments).enumerate()
    {
        assert_eq!(name, r_name, "differential: name of attachment #{i}");
        assert!(
            data[..] == r_data[..],
            "differential: data of attachment #{i} ({} vs {} bytes)",
            data.len(),
            r_data.len()
        );
    }

    let strict = Decoder::new()
        .limits(Limits::none())
        .strict(true)
        .decode(input);
    match (strict, expected.first_duplicate()) {
        (Ok(strict), None) => assert_same_frame(&strict, frame, "differential: strict"),
        (Err(e), Some(_)) => assert_eq!(
            e.kind(),
            &ErrorKind::DuplicateKey,
            "differential: strict decode of a frame with a duplicate key"
        ),
        (Ok(_), Some(i)) => panic!(
            "differential: strict decode accepts the duplicate key {:?} of parameter #{i}",
            expected.params[i].parts()
        ),
        (Err(e), None) => {
            panic!("differential: strict decode rejects a frame without duplicates: {e:?}")
        }
    }

    let ours = frame.encode().expect("a decoded frame encodes");
    let theirs = reference::encode(expected);
    if ours != theirs {
        let at = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
        panic!(
            "differential: the encoding differs from the reference encoder's at byte {at} \
             (lengths {} and {}): ...{:02x?} vs ...{:02x?}",
            ours.len(),
            theirs.len(),
            &ours[at..ours.len().min(at + 16)],
            &theirs[at..theirs.len().min(at + 16)],
        );
    }
}

/// A value of any frame, read through the serde bridge: every parameter
/// and attachment of a device, by name, nested devices as maps. Untagged,
/// so that each value is read through `deserialize_any` and the variants'
/// own readers in turn.
#[cfg(feature = "serde")]
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
#[allow(dead_code)] // read, compared through Debug
pub enum AnyValue {
    /// An Int64.
    Int(i64),
    /// A Double.
    Double(f64),
    /// A String.
    Text(String),
    /// A Bool.
    Flag(bool),
    /// An attachment.
    Data(serde_bytes::ByteBuf),
    /// A device: its parameters and the devices below it.
    Device(std::collections::BTreeMap<String, AnyValue>),
}

/// A struct of the shapes typed readers have: scalars, an optional nested
/// struct, a sequence of structs, a map, an attachment; every field
/// optional, so that many frames read.
#[cfg(feature = "serde")]
#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)] // read, compared through Debug
pub struct Typed {
    #[serde(default)]
    seq: Option<u32>,
    #[serde(default)]
    gain: Option<f64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    ok: Option<bool>,
    #[serde(default)]
    sdr: Option<TypedInner>,
    #[serde(default)]
    items: Option<Vec<TypedInner>>,
    #[serde(default)]
    meta: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, with = "serde_bytes")]
    raw: Option<Vec<u8>>,
}

/// [`Typed`]'s nested struct.
#[cfg(feature = "serde")]
#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)] // read, compared through Debug
pub struct TypedInner {
    #[serde(default)]
    x: Option<i64>,
    #[serde(default)]
    label: Option<String>,
}

/// The three readers of the serde bridge on the same bytes: their results
/// as text (`Debug` of the value, so that NaN equals itself, or the
/// error's message).
#[cfg(feature = "serde")]
fn serde_readings<T: for<'de> serde::Deserialize<'de> + std::fmt::Debug>(
    data: &[u8],
) -> (Option<Result<String, String>>, Result<String, String>) {
    use messageframe::serde::{from_bytes, from_frame, from_view};
    let text = |r: Result<T, messageframe::serde::Error>| match r {
        Ok(v) => Ok(format!("{v:?}")),
        Err(e) => Err(e.to_string()),
    };
    let direct = text(from_bytes::<T>(data));
    let Ok(frame) = Frame::decode(data) else {
        return (None, direct);
    };
    let owned = text(from_frame::<T>(&frame));
    let view = FrameView::new(data).expect("a frame that decodes is a valid view");
    let viewed = text(from_view::<T>(&view));
    assert_eq!(owned, viewed, "serde: from_frame and from_view disagree");
    (Some(owned), direct)
}

/// Target `serde`: the serde bridge's readers (`from_bytes`, `from_view`,
/// `from_frame`) on arbitrary bytes, into a generic value of any frame and
/// into a typed struct. None panics; `from_bytes` accepts no bytes that
/// are not a frame (an invalid frame is an error however little the type
/// reads); on a frame the three give the same value or the same error.
#[cfg(feature = "serde")]
pub fn check_serde(data: &[u8]) {
    fn agree<T: for<'de> serde::Deserialize<'de> + std::fmt::Debug>(data: &[u8], what: &str) {
        match serde_readings::<T>(data) {
            (None, direct) => assert!(
                direct.is_err(),
                "serde {what}: from_bytes read bytes that are not a frame: {direct:?}"
            ),
            (Some(owned), direct) => match (&owned, &direct) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "serde {what}: from_bytes and from_frame"),
                (Err(a), Err(b)) => assert_eq!(a, b, "serde {what}: different errors"),
                _ => panic!("serde {what}: from_frame {owned:?}, from_bytes {direct:?}"),
            },
        }
    }
    agree::<std::collections::BTreeMap<String, AnyValue>>(data, "any");
    agree::<Typed>(data, "typed");
}

/// Every check, for the stable replay of the corpus.
pub fn check_all(data: &[u8]) {
    check_decode(data);
    check_decode_into(data);
    check_view(data);
    check_header_peek(data);
    check_stream(data);
    check_roundtrip(data);
    check_differential(data);
    #[cfg(feature = "serde")]
    check_serde(data);
}

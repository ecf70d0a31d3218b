//! Frames at the format's own size limits: larger than 4 GiB, attachments
//! beyond what MessagePack can express, frames beyond the default limits.
//!
//! The inputs are gigabytes long but cost almost no memory: `vec![0u8; n]`
//! asks the allocator for zeroed memory, which the kernel maps lazily, and
//! the decoders only touch the few pages that hold markers and length
//! prefixes (they jump over binary data without reading it). Only the
//! address space is used, so these tests need a 64-bit target (and are left
//! out of the Miri runs, which would allocate for real).
#![cfg(all(target_pointer_width = "64", not(miri)))]

use messageframe::{
    Bytes, Decoder, EncodeError, ErrorKind, Frame, FrameView, Header, Limit, Limits, ValueRef,
};

const GIB: usize = 1 << 30;

/// Writes `bytes` into `buf` at `at`; returns the offset after them.
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
    at + bytes.len()
}

fn bin32_header(len: usize) -> Vec<u8> {
    let mut h = vec![0xc6];
    h.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
    h
}

/// A frame of just over 4 GiB: a header array with two extra elements of
/// 2 GiB of binary data each (skipped, as extra elements are), then two
/// parameters whose keys start past 4 GiB, then one small attachment.
fn frame_over_4_gib() -> (Vec<u8>, usize) {
    let extra = 2 * GIB;
    let tail: Vec<u8> = [
        &[0x82][..],
        &[0xa3, b'd', 0x1f, b'p', 0x92, 10, 7],
        &[0xa3, b'd', 0x1f, b'q', 0x92, 30, 0xa1, b's'],
        &[0x91, 0x92, 0xa1, b'a', 0xc4, 3, 1, 2, 3],
    ]
    .concat();
    let len = 2 + 8 + 2 * (5 + extra) + tail.len();
    let mut buf = vec![0u8; len];
    let mut at = put(&mut buf, 0, &[0x93, 0x9a, 1, 2, 3, 4, 5, 6, 1, 0]);
    for _ in 0..2 {
        at = put(&mut buf, at, &bin32_header(extra)) + extra;
    }
    let params_at = at;
    assert_eq!(put(&mut buf, at, &tail), len);
    (buf, params_at)
}

#[test]
fn limits_none_means_the_formats_maxima_a_frame_over_4_gib_decodes() {
    let (bytes, params_at) = frame_over_4_gib();
    assert!(bytes.len() > u32::MAX as usize && params_at > u32::MAX as usize);
    let header = Header::from_fields(1, 2, 3, 4, 5, 6, 1, 0);

    // The default limits refuse it, naming the limit...
    let err = FrameView::new(&bytes).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::LimitExceeded(Limit::FrameBytes));
    // ...`Limits::none()` has no hidden ceiling (it was 1 GiB).
    let none = Decoder::new().limits(Limits::none());
    let view = none
        .view(&bytes)
        .expect("Limits::none() reads a 4 GiB frame");
    assert_eq!(*view.header(), header);
    assert_eq!(view.encoded_len(), bytes.len());
    // Keys past 4 GiB: found all the same.
    assert_eq!(view.find("d", "p"), Some(ValueRef::Int(7)));
    assert_eq!(view.find("d", "q"), Some(ValueRef::String("s")));
    assert_eq!(view.find("d", "r"), None);
    assert_eq!(view.iter().count(), 2);
    assert_eq!(view.attachment("a"), Some(&[1u8, 2, 3][..]));
    assert_eq!(
        none.peek_frame(&bytes).unwrap(),
        (header, bytes.len()),
        "Decoder::peek_frame takes the caller's limits"
    );

    // The owned decoders: the extra elements are skipped, not stored.
    let frame = none.decode(&bytes).unwrap();
    assert_eq!(frame.find("d", "q"), Some(ValueRef::String("s")));
    assert_eq!(frame, view.to_frame());
    let shared = Bytes::from(bytes);
    let mut out = Frame::default();
    none.decode_shared_into(&mut out, &shared).unwrap();
    assert_eq!(out, frame);
    assert_eq!(&out.attachment("a").unwrap()[..], [1, 2, 3]);
}

#[test]
fn an_attachment_beyond_bin32_is_an_encode_error_not_a_panic() {
    // 4 GiB: one byte more than MessagePack's bin32 can say.
    let too_long = u32::MAX as usize + 1;
    let mut frame = Frame::new(Header::from_fields(1, 2, 3, 4, 5, 6, 1, 0));
    frame.add("d", "p", 1);
    frame.add_attachment("small", vec![1, 2, 3]);
    frame.add_attachment("big", vec![0u8; too_long]); // no panic: kept as is
    assert_eq!(frame.attachment("big").map(Bytes::len), Some(too_long));

    let mut buf = b"earlier frames".to_vec();
    let err = frame.encode_into(&mut buf).unwrap_err();
    assert_eq!(
        err,
        EncodeError::AttachmentTooLarge {
            index: 1,
            len: too_long
        }
    );
    assert_eq!(buf, b"earlier frames", "nothing written on error");
    assert_eq!(frame.encode().unwrap_err(), err);
    assert_eq!(
        err.to_string(),
        "attachment #1 is 4294967296 bytes; MessagePack's bin32 holds at most 4294967295"
    );
}

#[test]
fn a_stream_of_300_mib_frames_is_walked_with_the_callers_limits() {
    // Issue 10: `Header::peek_frame` always used the default limits
    // (256 MiB frames), so such a stream could not be delimited.
    let data = 300 << 20;
    let mut frame_bytes = vec![0u8; 10 + 5 + 5 + data];
    let at = put(&mut frame_bytes, 0, &[0x93, 0x98, 9, 0, 0, 0, 0, 0, 1, 0]);
    let at = put(&mut frame_bytes, at, &[0x80, 0x91, 0x92, 0xa1, b'x']);
    put(&mut frame_bytes, at, &bin32_header(data));
    let mut small = Frame::new(Header::from_fields(10, 0, 0, 0, 0, 0, 1, 0));
    small.add("d", "p", 1);
    let mut stream = frame_bytes;
    let first = stream.len();
    small.encode_into(&mut stream).unwrap();

    let err = Header::peek_frame(&stream).unwrap_err();
    assert_eq!(err.kind(), &ErrorKind::LimitExceeded(Limit::FrameBytes));
    let router = Decoder::new().limits(Limits::default().max_frame_bytes(512 << 20));
    let (h1, len1) = router.peek_frame(&stream).unwrap();
    assert_eq!((h1.timestamp(), len1), (9, first));
    let (h2, len2) = router.peek_frame(&stream[len1..]).unwrap();
    assert_eq!((h2.timestamp(), len1 + len2), (10, stream.len()));
}

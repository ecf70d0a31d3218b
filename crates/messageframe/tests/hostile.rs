//! Truncated and malformed input returns an error, never a panic.
//! (Allocation checks for hostile length claims are in alloc.rs, which has
//! the counting allocator.)

mod common;

use messageframe::{Decoder, ErrorKind, Frame, FrameView, Header};

#[test]
fn every_proper_prefix_of_every_interop_frame_is_an_error() {
    let mut reused = Frame::default();
    for f in common::interop_frames() {
        // strings.mfb is 71 KB: every prefix through every decoder is cheap
        // enough (the decoders stop at the first missing byte).
        for len in 0..f.bytes.len() {
            let prefix = &f.bytes[..len];
            let err = Frame::decode(prefix).expect_err("a proper prefix must not decode");
            // It says how many bytes the element needs from where it
            // starts, and how many the input has from there: all the rest.
            match *err.kind() {
                ErrorKind::Truncated {
                    needed, available, ..
                } => {
                    assert_eq!(err.offset() + available, len, "{} [..{len}]: {err}", f.name);
                    assert!(needed > available, "{} [..{len}]: {err}", f.name);
                }
                _ => panic!("{} [..{len}]: {err}", f.name),
            }
            assert!(
                err.offset() <= len,
                "{} [..{len}]: offset {} beyond input",
                f.name,
                err.offset()
            );
            assert!(FrameView::new(prefix).is_err());
            assert!(reused.decode_from(prefix).is_err());
            assert!(reused.is_empty());
            assert!(Decoder::new()
                .decode_prefix_into(&mut reused, prefix)
                .is_err());
        }
        assert!(Frame::decode(&f.bytes).is_ok());
    }
}

#[test]
fn header_peek_of_a_short_prefix_is_an_error() {
    for f in common::interop_frames() {
        let full = Header::peek(&f.bytes).unwrap();
        let mut ok_from = None;
        for len in 0..f.bytes.len().min(64) {
            match Header::peek(&f.bytes[..len]) {
                Ok(h) => {
                    assert_eq!(h, full);
                    ok_from.get_or_insert(len);
                }
                Err(e) => {
                    assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
                    assert!(
                        ok_from.is_none(),
                        "{}: peek failed after succeeding",
                        f.name
                    );
                }
            }
        }
        assert!(ok_from.is_some());
    }
}

#[test]
fn garbage_is_an_error_with_an_offset_inside_the_input() {
    let inputs: &[&[u8]] = &[
        b"",
        b"\xc1",
        b"hello world",
        b"\x93\x98\xc1",
        b"\x93\x98\x01\x02\x03\x04\x05\x06\x01\x00\x81\xa1",
        b"\x93\x98\x01\x02\x03\x04\x05\x06\x01\x00\x80\x91\x92\xa1n\xc6\xff\xff\xff\xff",
        b"\xdd\xff\xff\xff\xff",
        b"\x93\xdc\xff\xff",
    ];
    for input in inputs {
        let err = Frame::decode(input).unwrap_err();
        assert!(err.offset() <= input.len(), "{input:02x?}: {err}");
        assert!(FrameView::new(input).is_err());
    }
}

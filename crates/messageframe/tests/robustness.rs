//! Deterministic robustness: every prefix, every single-byte flip and every
//! single-byte deletion of each interop frame gives `Ok` or `Err` from every
//! decoder, never a panic; the decoders agree with each other; and whatever
//! decodes re-encodes to bytes that decode again to the same frame.
//!
//! The checks are those of the fuzz targets (`fuzz/src/checks.rs`, included
//! by path), run on systematic mutations instead of random ones.

#[path = "../../../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;

use std::path::PathBuf;

use messageframe::{Decoder, Frame, FrameView, Header};

/// Frames up to this size are mutated at every byte; larger ones (the 71 KB
/// `strings` and the 4 KB attachment of `sdr`) at a sample of positions.
const EVERY_BYTE_UP_TO: usize = 2048;

/// The interop frames written by the C++ library, by name.
fn interop_frames() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/interop");
    let mut frames: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("interop directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("mfb"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    frames.sort();
    assert!(frames.len() >= 11, "expected the 11 interop frames");
    frames
}

/// Offsets where a MessagePack element starts (a marker byte), for a valid
/// buffer. Mutating these bytes changes the structure; the bytes inside a
/// string or binary payload only change content.
fn element_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut pos = 0;
    let be = |at: usize, n: usize| {
        bytes[at..at + n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
    };
    while pos < bytes.len() {
        starts.push(pos);
        let m = bytes[pos];
        pos += 1 + match m {
            0xa0..=0xbf => usize::from(m & 0x1f),
            0xc4 | 0xd9 => 1 + be(pos + 1, 1),
            0xc5 | 0xda => 2 + be(pos + 1, 2),
            0xc6 | 0xdb => 4 + be(pos + 1, 4),
            0xcc | 0xd0 => 1,
            0xcd | 0xd1 | 0xdc | 0xde => 2,
            0xce | 0xd2 | 0xca | 0xdd | 0xdf => 4,
            0xcf | 0xd3 | 0xcb => 8,
            _ => 0, // fix types, nil, bool: one byte (containers: their items follow)
        };
    }
    starts
}

/// The positions of `bytes` to mutate: every byte of a small frame; for a
/// large one, every element start and the 4 bytes after it (markers and
/// length prefixes), the first and last 256 bytes, and every 61st byte.
fn positions(bytes: &[u8]) -> Vec<usize> {
    let n = bytes.len();
    if n <= EVERY_BYTE_UP_TO {
        return (0..n).collect();
    }
    let mut keep = vec![false; n];
    for start in element_starts(bytes) {
        keep[start..(start + 5).min(n)].fill(true);
    }
    for p in (0..256.min(n))
        .chain(n.saturating_sub(256)..n)
        .chain((0..n).step_by(61))
    {
        keep[p] = true;
    }
    (0..n).filter(|&p| keep[p]).collect()
}

/// Every decoder on `bytes`: no panic, agreement, and the round trip of
/// whatever decodes.
fn check(bytes: &[u8]) {
    let owned = Frame::decode(bytes);
    match (&owned, FrameView::new(bytes)) {
        (Ok(frame), Ok(view)) => {
            // The fuzz targets compare every lookup; here the content in
            // order and the first and last lookups keep the loop fast.
            assert_eq!(view.header(), frame.header());
            assert_eq!(view.len(), frame.len());
            for ((vd, vp, vv), (d, p, v)) in view.iter().zip(frame.iter()) {
                assert_eq!((vd, vp), (d, p));
                assert!(checks::same_value(vv, v), "{vv:?} vs {v:?}");
            }
            for (d, p, _) in frame.iter().take(1).chain(frame.iter().last()) {
                let (a, b) = (view.find(d, p).unwrap(), frame.find(d, p).unwrap());
                assert!(checks::same_value(a, b), "find({d:?}, {p:?})");
            }
            assert!(view
                .attachments()
                .eq(frame.attachments().map(|(n, d)| (n, &d[..]))));
        }
        (Err(a), Err(b)) => assert_eq!(a, &b),
        (a, b) => panic!("owned decode {a:?} vs view {b:?}"),
    }

    let mut reused = checks::prefilled_frame();
    let before = *reused.header();
    match (Decoder::new().decode_into(&mut reused, bytes), &owned) {
        (Ok(()), Ok(frame)) => checks::assert_same_frame(&reused, frame, "decode_into"),
        (Err(a), Err(b)) => {
            assert_eq!(&a, b);
            assert!(reused.is_empty() && reused.attachment_count() == 0);
            assert_eq!(*reused.header(), before);
        }
        (a, b) => panic!("decode_into {a:?} vs decode {b:?}"),
    }

    match (Header::peek(bytes), &owned) {
        (Ok(h), Ok(frame)) => assert_eq!(&h, frame.header()),
        (Err(_), Ok(_)) => panic!("peek fails on a frame that decodes"),
        _ => {}
    }

    let mut out = Frame::default();
    match Decoder::new().decode_prefix_into(&mut out, bytes) {
        Ok(used) => {
            assert!(used <= bytes.len());
            assert_eq!(
                Decoder::new().view_prefix(bytes).unwrap().encoded_len(),
                used
            );
        }
        Err(e) => assert_eq!(Decoder::new().view_prefix(bytes).unwrap_err(), e),
    }

    if let Ok(frame) = &owned {
        checks::assert_round_trip(frame, "round trip");
    }
}

/// Every prefix of every interop frame (all `n + 1` of them for frames up
/// to 2 KiB; the sampled positions for larger ones) is rejected, except the
/// whole frame; nothing panics.
#[test]
fn every_prefix_of_an_interop_frame_is_an_error_never_a_panic() {
    for (name, bytes) in interop_frames() {
        let mut cuts = positions(&bytes);
        cuts.push(bytes.len());
        for cut in cuts {
            let prefix = &bytes[..cut];
            check(prefix);
            if cut < bytes.len() {
                assert!(
                    Frame::decode(prefix).is_err(),
                    "{name}: the prefix of {cut} bytes decodes"
                );
            } else {
                assert!(Frame::decode(prefix).is_ok(), "{name}: whole frame");
            }
        }
    }
}

/// Every byte of every interop frame (sampled for frames over 2 KiB)
/// replaced by its complement; every marker byte (element start) also with
/// its lowest or its highest bit flipped, which turns one type or length into
/// a neighbouring one. `Ok` or `Err`, never a panic; what decodes
/// round-trips.
#[test]
fn every_single_byte_flip_of_an_interop_frame_decodes_or_fails_cleanly() {
    for (_, bytes) in interop_frames() {
        let markers = element_starts(&bytes);
        let mut mutant = bytes.clone();
        for pos in positions(&bytes) {
            let masks: &[u8] = if markers.binary_search(&pos).is_ok() {
                &[0xff, 0x01, 0x80]
            } else {
                &[0xff]
            };
            for &mask in masks {
                mutant[pos] ^= mask;
                check(&mutant);
                mutant[pos] = bytes[pos];
            }
        }
    }
}

/// Every byte of every interop frame (sampled for frames over 2 KiB)
/// deleted: `Ok` or `Err`, never a panic; what decodes round-trips.
#[test]
fn every_single_byte_deletion_of_an_interop_frame_decodes_or_fails_cleanly() {
    for (_, bytes) in interop_frames() {
        for pos in positions(&bytes) {
            let mut mutant = bytes.clone();
            mutant.remove(pos);
            check(&mutant);
        }
    }
}

/// The sampling covers the structure of the large frames: every element
/// start of `strings` is among the mutated positions.
#[test]
fn the_sampled_positions_of_large_frames_include_every_element_start() {
    for (name, bytes) in interop_frames() {
        if bytes.len() <= EVERY_BYTE_UP_TO {
            continue;
        }
        let positions = positions(&bytes);
        let starts = element_starts(&bytes);
        assert!(starts.len() > 10, "{name}");
        for s in starts {
            assert!(positions.binary_search(&s).is_ok(), "{name}: {s}");
        }
    }
}

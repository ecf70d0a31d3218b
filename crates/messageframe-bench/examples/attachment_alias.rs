//! An attachment copied to where it lands 1 to 15 bytes past its source,
//! counted modulo 4 KiB: on AMD Zen hosts with a glibc whose `memcpy` uses
//! `rep movsb` for mid-sized copies (2 KiB up to the L2 size; glibc 2.36
//! on the machine of docs/performance.md), such a copy takes over ten times as long as the same copy
//! at distance 0, a cost messageframe's copies now avoid
//! (`wire::write::copy_cached`, docs/performance.md "Attachment copies at a
//! 4 KiB aliasing distance").
//!
//! ```text
//! cargo run --release -p messageframe-bench --example attachment_alias [ITERATIONS]
//! ```
//!
//! For attachments of 16 KiB, 256 KiB and 1 MiB, and source-to-destination
//! distances (modulo 4 KiB) of 0, 5 and 40 bytes, it times, in the same
//! process:
//! - `encode_into`: a frame with 4 params and the attachment shared (a
//!   `Bytes` slice of a larger buffer, as `decode_shared` hands them out)
//!   encoded into a reused buffer, which copies the attachment into it;
//! - `add_attachment_copy`: the attachment copied into a reused frame;
//! - `memcpy`: `Vec::extend_from_slice` of the same bytes at the same
//!   distance (what any program on the host pays for it).
//!
//! Then, for a 16 KiB string parameter, `decode_from` into a reused frame
//! with the string's bytes in the received buffer placed so that they land
//! in the frame's text at each distance.
//!
//! Each figure is the median of the passes' times per iteration. The
//! distance is the one the copy sees: the example places the source so that
//! the attachment's bytes in the wire (or in the frame's buffer) start that
//! many bytes past it, modulo 4 KiB.

use std::hint::black_box;
use std::time::Instant;

use bytes::Bytes;
use messageframe::{Frame, Header, ValueRef};

const PAGE: usize = 4096;

/// The frame of the SPEC 5.2 attachment message: 4 params and `data`.
fn frame_with(data: Bytes) -> Frame {
    let mut f = Frame::new(Header::new(200, 7, 1, 2));
    f.add("sdr", "freq", 2_400_000_000i64);
    f.add("sdr", "gain", 30.5);
    f.add("sdr", "mode", "iq");
    f.add("sdr", "on", true);
    f.add_attachment("iq", data);
    f
}

/// Offset into `backing` at which a source of `len` bytes sits `distance`
/// bytes (modulo 4 KiB) before `dst`.
fn source_at(backing: &[u8], dst: usize, distance: usize) -> usize {
    (dst.wrapping_sub(distance)
        .wrapping_sub(backing.as_ptr() as usize))
        % PAGE
}

/// Median of `passes` timings of `iters` runs of `f`, in microseconds.
fn median_us(passes: usize, iters: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..passes)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / iters as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[passes / 2]
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("usage: attachment_alias [ITERATIONS]"))
        .unwrap_or(200);
    let passes = 7;
    println!("| attachment | distance (mod 4 KiB) | encode_into µs | add_attachment_copy µs | memcpy µs |");
    println!("|---|---:|---:|---:|---:|");
    for len in [16 << 10, 256 << 10, 1 << 20] {
        let content: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4093) as u8).collect();
        for distance in [0usize, 5, 40] {
            // encode_into: find where the attachment's bytes land in the
            // reused buffer, then place the shared source accordingly.
            let mut wire = Vec::with_capacity(len + 8 * PAGE);
            frame_with(Bytes::from(content.clone()))
                .encode_into(&mut wire)
                .expect("the frame encodes");
            let data_at = wire.as_ptr() as usize + wire.len() - len;
            let mut backing = vec![0u8; len + 2 * PAGE];
            let at = source_at(&backing, data_at, distance);
            backing[at..at + len].copy_from_slice(&content);
            let shared = Bytes::from(backing).slice(at..at + len);
            let frame = frame_with(shared);
            let encode = median_us(passes, iters, || {
                wire.clear();
                frame.encode_into(&mut wire).expect("the frame encodes");
                black_box(&wire);
            });
            assert_eq!(&wire[wire.len() - len..], &content[..]);
            assert_eq!(wire.as_ptr() as usize + wire.len() - len, data_at);

            // add_attachment_copy into a reused frame: its buffer is the
            // destination (kept across iterations by the frame's spare).
            let mut reused = Frame::default();
            reused.add_attachment_copy("iq", &content);
            let dst = reused.attachment("iq").expect("just added").as_ptr() as usize;
            let mut src_backing = vec![0u8; len + 2 * PAGE];
            let at = source_at(&src_backing, dst, distance);
            src_backing[at..at + len].copy_from_slice(&content);
            let src = &src_backing[at..at + len];
            let copy = median_us(passes, iters, || {
                reused.clear();
                reused.add_attachment_copy("iq", black_box(src));
                black_box(&reused);
            });
            let landed = reused.attachment("iq").expect("just added");
            assert_eq!(&landed[..], &content[..]);
            let copy_note = if (landed.as_ptr() as usize).wrapping_sub(src.as_ptr() as usize) % PAGE
                == distance
            {
                ""
            } else {
                " (buffer moved)"
            };

            // The same bytes by plain memcpy at the same distance.
            let mut out: Vec<u8> = Vec::with_capacity(len + 2 * PAGE);
            let mut plain = vec![0u8; len + 2 * PAGE];
            let src_at = source_at(&plain, out.as_ptr() as usize, distance);
            plain[src_at..src_at + len].copy_from_slice(&content);
            let src = &plain[src_at..src_at + len];
            let memcpy = median_us(passes, iters, || {
                out.clear();
                out.extend_from_slice(black_box(src));
                black_box(&out);
            });
            println!(
                "| {} KiB | {distance} | {encode:.2} | {copy:.2}{copy_note} | {memcpy:.2} |",
                len >> 10
            );
        }
    }
    println!();
    println!("| string | distance (mod 4 KiB) | decode_from µs |");
    println!("|---|---:|---:|");
    let len = 16 << 10;
    let text: String = (0..len)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let mut frame = Frame::new(Header::new(200, 7, 1, 2));
    frame.add("log", "line", text.as_str());
    let wire = frame.encode().expect("the frame encodes");
    // The string's bytes are the wire's last but one (an empty attachment
    // array follows them).
    let text_at = wire.len() - len - 1;
    let string_addr = |f: &Frame| match f.find("log", "line") {
        Some(ValueRef::String(s)) => s.as_ptr() as usize,
        _ => panic!("the string is there"),
    };
    for distance in [0usize, 5, 40] {
        let mut reused = Frame::default();
        reused.decode_from(&wire).expect("valid frame");
        let dst = string_addr(&reused);
        let mut backing = vec![0u8; wire.len() + 2 * PAGE];
        // Placed as if the whole wire were the source of the text's bytes.
        let at = source_at(&backing, dst.wrapping_sub(text_at), distance);
        backing[at..at + wire.len()].copy_from_slice(&wire);
        let received = &backing[at..at + wire.len()];
        let decode = median_us(passes, iters * 10, || {
            reused
                .decode_from(black_box(received))
                .expect("valid frame");
            black_box(&reused);
        });
        let landed = string_addr(&reused).wrapping_sub(received.as_ptr() as usize + text_at) % PAGE;
        assert_eq!(landed, distance, "the text's buffer stayed where it was");
        println!("| 16 KiB | {distance} | {decode:.2} |");
    }
}

//! Helpers of the stream tests (included with `#[path]`): frames to
//! stream, readers that cut or never end, and the scanner driven the way a
//! reader drives it.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{self, Read};

use messageframe::{
    DecodeError, Frame, FrameScanner, Header, Limits, Scan, UnknownValue, ValueRef,
};
use proptest::prelude::*;

/// A frame of `params` parameters of every type (and an unknown value
/// holding nested containers) and `attachments` attachments of `att_len`
/// bytes; `seed` varies the contents.
pub fn sample_frame(seed: u64, params: usize, attachments: usize, att_len: usize) -> Frame {
    let mut frame = Frame::new(
        Header::new(
            seed as i32 % 1000 - 500,
            7,
            seed as u32,
            (seed * 31) as u32 % 5,
        )
        .with_counter(seed)
        .with_timestamp(1_700_000_000_000 + seed),
    );
    for k in 0..params {
        let device = format!("dev{}", k % 3);
        let param = format!("p{k}_{seed}");
        match (k + seed as usize) % 6 {
            0 => frame.add(&device, &param, (k as i64 - 3) * 1_000_003 * seed as i64),
            1 => frame.add(&device, &param, k as f64 * 0.37 + seed as f64),
            2 => frame.add(&device, &param, "x".repeat(k * 7 % 70)),
            3 => frame.add(&device, &param, k % 2 == 0),
            4 => {
                // [tag 77, {"a": [1, [2, "b"]], "c": nil}]: nesting the
                // scanner skips without looking in.
                let raw = [
                    0x82, 0xa1, b'a', 0x92, 0x01, 0x92, 0x02, 0xa1, b'b', 0xa1, b'c', 0xc0,
                ];
                frame.add(
                    &device,
                    &param,
                    ValueRef::Unknown(UnknownValue::new(77, &raw).expect("one MessagePack value")),
                );
            }
            _ => frame.add(&device, &param, -(k as i64)),
        }
    }
    for a in 0..attachments {
        frame.add_attachment(
            &format!("att{a}"),
            (0..att_len)
                .map(|i| (i as u64 ^ seed) as u8)
                .collect::<Vec<u8>>(),
        );
    }
    frame
}

/// Frames of varied shapes.
pub fn arb_frame() -> impl Strategy<Value = Frame> {
    (
        any::<u64>(),
        0usize..40,
        0usize..3,
        prop_oneof![Just(0usize), 1usize..300, Just(70_000usize)],
    )
        .prop_map(|(seed, params, atts, len)| sample_frame(seed % 10_000, params, atts, len))
}

/// How a scan of a whole stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The stream ended between frames.
    Clean,
    /// The stream ended inside a frame.
    Truncated(DecodeError),
    /// A frame was malformed or over a limit (stream offset).
    Error(DecodeError),
}

/// What a scan of a stream found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Each complete frame's stream offset, length and header.
    pub frames: Vec<(usize, usize, Header)>,
    pub end: End,
    /// Scanner steps and `scan` calls.
    pub steps: u64,
    pub calls: u64,
}

/// Feeds `stream` to a scanner as a reader would: the bytes arrive in
/// pieces ending at `cuts` (then the rest), each complete frame is dropped
/// from the front of the buffer, and every `Incomplete` answer is checked
/// to be a lower bound.
pub fn scan_stream(stream: &[u8], cuts: &[usize], limits: Limits) -> Outcome {
    let mut scanner = FrameScanner::with_limits(limits);
    let mut ends: Vec<usize> = cuts.iter().map(|&c| c.min(stream.len())).collect();
    ends.sort_unstable();
    ends.push(stream.len());
    ends.dedup();
    let (mut start, mut frames, mut calls) = (0usize, Vec::new(), 0u64);
    for &end in &ends {
        loop {
            calls += 1;
            match scanner.scan(&stream[start..end]) {
                Ok(Scan::Complete { len, header }) => {
                    assert!(start + len <= end);
                    frames.push((start, len, header));
                    start += len;
                }
                Ok(Scan::Incomplete { need }) => {
                    assert!(need >= 1);
                    break;
                }
                Err(e) => {
                    return Outcome {
                        frames,
                        end: End::Error(e.with_base_offset(start)),
                        steps: scanner.steps(),
                        calls,
                    }
                }
            }
        }
    }
    let end = match scanner.truncation(&stream[start..]) {
        None => {
            assert_eq!(start, stream.len());
            End::Clean
        }
        Some(e) => End::Truncated(e.with_base_offset(start)),
    };
    Outcome {
        frames,
        end,
        steps: scanner.steps(),
        calls,
    }
}

/// A reader that returns its bytes in reads of the given sizes (cycled),
/// and `WouldBlock` once it has none left unless `eof` is set.
pub struct Pieces {
    data: VecDeque<u8>,
    sizes: Vec<usize>,
    next: usize,
    pub reads: usize,
    pub eof: bool,
}

impl Pieces {
    pub fn new(data: &[u8], sizes: &[usize]) -> Self {
        Pieces {
            data: data.iter().copied().collect(),
            sizes: sizes.iter().map(|&s| s.max(1)).collect(),
            next: 0,
            reads: 0,
            eof: true,
        }
    }

    pub fn push(&mut self, more: &[u8]) {
        self.data.extend(more);
    }
}

impl Read for Pieces {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.data.is_empty() {
            return if self.eof {
                Ok(0)
            } else {
                Err(io::Error::new(io::ErrorKind::WouldBlock, "no more yet"))
            };
        }
        let size = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        let n = size.min(out.len()).min(self.data.len());
        for (slot, b) in out.iter_mut().zip(self.data.drain(..n)) {
            *slot = b;
        }
        Ok(n)
    }
}

/// A reader of `prefix`, then `filler` forever: a hostile sender.
pub struct Endless {
    pub prefix: Vec<u8>,
    pub pos: usize,
    pub filler: u8,
    pub served: usize,
}

impl Read for Endless {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        for slot in out.iter_mut() {
            *slot = self.prefix.get(self.pos).copied().unwrap_or(self.filler);
            self.pos += 1;
        }
        self.served += out.len();
        Ok(out.len())
    }
}

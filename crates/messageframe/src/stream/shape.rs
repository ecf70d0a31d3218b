//! The layout of the parameters the scanner walked last, kept to check the
//! next frame's parameters without walking them.
//!
//! Walking parameters is a chain of dependent loads: a parameter's position
//! is the previous one's plus its key's length and its value's size, both
//! read from the bytes, so no load can start before the one before it has
//! finished. That chain, not the instruction count, bounds the walk.
//!
//! But the frames of a stream mostly repeat one layout: the same keys, the
//! same tags, values of the same encodings. And the walk's path (every
//! position it reads, whether each parameter is accepted) depends only on
//! the bytes it looks at: each key's marker, the pair's `0x92`, the tag and
//! the value's marker. So a [`Shape`] records, for every byte of the
//! parameters walked, whether the walk looked at it (`mask`, the bits that
//! matter) and what it found (`expect`). A later run of parameters whose
//! bytes agree with it at every marked bit is walked identically: the same
//! positions, the same acceptance. That check is a comparison of 8 bytes at
//! a time, with no dependency between words, several times faster than the
//! walk. Where it fails, the walk resumes at the parameter that differs, and
//! records the new layout from there.
//!
//! A value's marker is compared by its class, not exactly, where every
//! member of the class has the same size and suits the same tags: a
//! positive fixint (`0x00..=0x7f`), a negative fixint (`0xe0..=0xff`), a
//! bool (`0xc2`, `0xc3`); so an integer or a bool that changes from one
//! frame to the next still matches. Everything else is compared exactly,
//! which for a fixstr value includes its length.
//!
//! A shape covers at most [`MAX_BYTES`] of parameters: two bytes of memory
//! per byte of parameters (the mask and the expected bits), and four per
//! parameter (where it ends).

use alloc::vec::Vec;

/// The most parameter bytes a shape covers; the rest of a longer map is
/// walked.
pub(crate) const MAX_BYTES: usize = 16 << 10;

/// Bytes compared between two checks of the running result: a mismatch
/// wastes at most this much comparison.
const CHUNK: usize = 64;

/// The layout of a run of parameters: the first `ends.len()` parameters of
/// the last frame walked, back to back from offset 0.
#[derive(Clone, Default)]
pub(crate) struct Shape {
    /// Per byte: the bits the walk looked at. Only the bytes of the
    /// recorded parameters mean anything.
    mask: Vec<u8>,
    /// Per byte: what those bits were.
    expect: Vec<u8>,
    /// Where each parameter ends (its start is where the previous one
    /// ends, the first's is 0).
    ends: Vec<u32>,
    /// Frames with a parameter that did not agree, since the last run of
    /// [`SETTLED`] frames that all agreed.
    misses: u32,
    /// Frames in a row whose parameters all agreed.
    hits: u32,
}

/// Frames in a row that agree with a shape after which the stream counts as
/// settled on its layout: its next change is learned at once.
const SETTLED: u32 = 16;

/// The bits of a value's marker that decide its size and the tags it
/// suits, for the markers the fast walk accepts.
#[inline]
fn marker_class(vm: u8) -> u8 {
    match vm {
        0x00..=0x7f => 0x80,
        0xe0..=0xff => 0xe0,
        0xc2 | 0xc3 => 0xfe,
        _ => 0xff,
    }
}

/// `(mask & bytes) ^ expect` of 8 bytes, as a word: zero when they agree.
#[inline(always)]
fn differs(bytes: &[u8], mask: &[u8], expect: &[u8]) -> u64 {
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        u64::from_ne_bytes(w)
    };
    (word(bytes) & word(mask)) ^ word(expect)
}

impl Shape {
    /// Parameters recorded.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Where parameter `k` starts (`k <= len()`).
    #[inline]
    fn start(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            self.ends[k - 1] as usize
        }
    }

    /// Checks parameters `from..` (at most `max` of them) against `bytes`,
    /// which starts where parameter `from` starts. Returns how many agree
    /// and the bytes they span; a prefix of `bytes` longer than `limit`
    /// (where the walk's frame-size check would stop) is not accepted.
    ///
    /// Parameters that agree are exactly those the walk would accept, at
    /// the same positions: compare a parameter's bytes only after the ones
    /// before it agreed.
    pub(crate) fn check(
        &self,
        bytes: &[u8],
        from: usize,
        max: usize,
        limit: usize,
    ) -> (usize, usize) {
        let to = self.len().min(from.saturating_add(max));
        if to <= from {
            return (0, 0);
        }
        let base = self.start(from);
        // The run's span, cut to the parameters that fit in `bytes` and
        // under `limit` (`ends` ascend).
        let fit = bytes.len().min(limit);
        let to = from + self.ends[from..to].partition_point(|&e| e as usize - base <= fit);
        if to == from {
            return (0, 0);
        }
        let span = self.ends[to - 1] as usize - base;
        let bytes = &bytes[..span];
        let mask = &self.mask[base..base + span];
        let expect = &self.expect[base..base + span];
        // Whole chunks, then the rest; the running result is checked once
        // per chunk.
        let mut agreed = 0;
        let mut chunks = bytes.chunks_exact(CHUNK);
        let mut masks = mask.chunks_exact(CHUNK);
        let mut expects = expect.chunks_exact(CHUNK);
        for ((b, m), e) in (&mut chunks).zip(&mut masks).zip(&mut expects) {
            let mut diff = 0;
            for i in (0..CHUNK).step_by(8) {
                diff |= differs(&b[i..i + 8], &m[i..i + 8], &e[i..i + 8]);
            }
            if diff != 0 {
                break;
            }
            agreed += CHUNK;
        }
        if agreed + CHUNK > span {
            // Every whole chunk agreed: the rest, 8 bytes at a time, then
            // byte by byte.
            let (b, m, e) = (chunks.remainder(), masks.remainder(), expects.remainder());
            let words = b.len() / 8 * 8;
            let mut diff = 0;
            for i in (0..words).step_by(8) {
                diff |= differs(&b[i..i + 8], &m[i..i + 8], &e[i..i + 8]);
            }
            for i in words..b.len() {
                diff |= u64::from((b[i] & m[i]) ^ e[i]);
            }
            if diff == 0 {
                return (to - from, span);
            }
        }
        // The parameters that end before the chunk that differs agreed.
        let n = self.ends[from..to].partition_point(|&e| e as usize - base <= agreed);
        (n, self.start(from + n) - base)
    }

    /// A frame's parameters agreed with the shape as far as it goes.
    #[inline]
    pub(crate) fn agreed(&mut self) {
        self.hits = self.hits.saturating_add(1);
        if self.hits >= SETTLED {
            self.misses = 0;
        }
    }

    /// A frame had a parameter that does not agree with the shape; returns
    /// whether to learn the new layout from there. Learning costs about
    /// one more walk of the parameters, so a stream whose layout keeps
    /// changing (several layouts interleaved) is learned from only at its
    /// 1st, 2nd, 4th, 8th... miss: a few walks wasted over a stream, where
    /// learning at every miss would double the cost of each frame. The
    /// first change of a settled stream is learned at once.
    #[inline]
    pub(crate) fn missed(&mut self) -> bool {
        self.hits = 0;
        self.misses = self.misses.saturating_add(1);
        self.misses.is_power_of_two()
    }

    /// Keeps the first `k` parameters only. The bytes of the others stay
    /// as they were: nothing reads them before [`push`](Self::push)
    /// writes them again.
    pub(crate) fn truncate(&mut self, k: usize) {
        self.ends.truncate(k);
    }

    /// Records the next parameter, as the walk accepted it: a fixstr key of
    /// `klen` bytes, `0x92`, the tag `tag`, a value whose marker is `vm`,
    /// `size` bytes in all. Returns `false` (and records nothing) past
    /// [`MAX_BYTES`].
    #[inline]
    pub(crate) fn push(&mut self, klen: usize, tag: u8, vm: u8, size: usize) -> bool {
        let at = self.start(self.len());
        let end = at + size;
        if end > MAX_BYTES {
            return false;
        }
        if end > self.mask.len() {
            let grown = end.max(2 * self.mask.len()).clamp(256, MAX_BYTES);
            self.mask.resize(grown, 0);
            self.expect.resize(grown, 0);
        }
        let v = at + 1 + klen;
        let (mask, expect) = (&mut self.mask[at..end], &mut self.expect[at..end]);
        // The bytes the walk does not look at (a longer layout's, before a
        // truncation, may be there): as many as the walk passed over.
        mask.fill(0);
        expect.fill(0);
        let v = v - at;
        mask[0] = 0xff;
        expect[0] = 0xa0 | klen as u8;
        mask[v] = 0xff;
        expect[v] = 0x92;
        mask[v + 1] = 0xff;
        expect[v + 1] = tag;
        let class = marker_class(vm);
        mask[v + 2] = class;
        expect[v + 2] = vm & class;
        self.ends.push(end as u32);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    /// `[key, [tag, value]]` bytes: a fixstr key of `klen` bytes and a
    /// value `value` (marker and payload).
    fn param(klen: usize, tag: u8, value: &[u8]) -> Vec<u8> {
        let mut b = vec![0xa0 | klen as u8];
        b.extend(core::iter::repeat(b'k').take(klen));
        b.extend([0x92, tag]);
        b.extend_from_slice(value);
        b
    }

    fn learn(shape: &mut Shape, params: &[(usize, u8, &[u8])]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for &(klen, tag, value) in params {
            let p = param(klen, tag, value);
            assert!(shape.push(klen, tag, value[0], p.len()));
            bytes.extend(p);
        }
        bytes
    }

    #[test]
    fn the_same_layout_agrees_and_values_of_a_class_may_change() {
        let mut shape = Shape::default();
        let params: Vec<(usize, u8, &[u8])> = (0..40)
            .map(|k| match k % 4 {
                0 => (5, 20, &[0xcb, 1, 2, 3, 4, 5, 6, 7, 8][..]),
                1 => (6, 10, &[0x05][..]),
                2 => (7, 40, &[0xc3][..]),
                _ => (4, 30, &[0xa2, b'o', b'k'][..]),
            })
            .collect();
        let bytes = learn(&mut shape, &params);
        assert_eq!(shape.check(&bytes, 0, 40, usize::MAX), (40, bytes.len()));
        // Other values in the same classes, other key text, other doubles.
        let other: Vec<u8> = params
            .iter()
            .flat_map(|&(klen, tag, value)| {
                let mut p = param(klen, tag, value);
                p[1] = b'z';
                let v = 1 + klen + 2;
                p[v] = match p[v] {
                    0x05 => 0x7f,
                    0xc3 => 0xc2,
                    m => m,
                };
                if p[v] == 0xcb {
                    p[v + 1] = 0xff;
                }
                p
            })
            .collect();
        assert_eq!(shape.check(&other, 0, 40, usize::MAX), (40, other.len()));
        // From the middle, and at most some.
        let from = 7;
        let at = shape.start(from);
        let (n, span) = shape.check(&bytes[at..], from, 10, usize::MAX);
        assert_eq!((n, span), (10, shape.start(from + 10) - at));
        // Cut by the bytes available and by the limit.
        let cut = shape.start(23) + 3;
        assert_eq!(shape.check(&bytes[..cut], 0, 40, usize::MAX).0, 23);
        assert_eq!(shape.check(&bytes, 0, 40, cut).0, 23);
    }

    #[test]
    fn a_difference_stops_the_check_at_or_before_the_parameter_that_differs() {
        let mut shape = Shape::default();
        let params: Vec<(usize, u8, &[u8])> = (0..30)
            .map(|k| {
                if k % 2 == 0 {
                    (5, 10, &[0x01][..])
                } else {
                    (3, 30, &[0xa1, b'x'][..])
                }
            })
            .collect();
        let bytes = learn(&mut shape, &params);
        for (k, &(klen, ..)) in params.iter().enumerate() {
            let at = shape.start(k);
            let v = at + 1 + klen;
            // Each byte the walk looks at, changed out of its class.
            for (pos, new) in [(at, 0xa9), (v, 0x93), (v + 1, 11), (v + 2, 0xcc)] {
                let mut b = bytes.clone();
                b[pos] = new;
                let (n, span) = shape.check(&b, 0, 30, usize::MAX);
                assert!(n <= k, "parameter {k}, byte {pos}: {n} agreed");
                assert_eq!(span, shape.start(n));
            }
        }
    }

    #[test]
    fn truncating_forgets_and_relearns() {
        let mut shape = Shape::default();
        let long: Vec<(usize, u8, &[u8])> = vec![(5, 30, &[0xa3, 1, 2, 3]); 10];
        learn(&mut shape, &long);
        shape.truncate(4);
        assert_eq!(shape.len(), 4);
        let short: Vec<(usize, u8, &[u8])> = vec![(2, 10, &[0x00]); 6];
        let tail = learn(&mut shape, &short);
        let mut bytes = param(5, 30, &[0xa3, 1, 2, 3]).repeat(4);
        bytes.extend(&tail);
        assert_eq!(shape.check(&bytes, 0, 100, usize::MAX), (10, bytes.len()));
        // The old, longer layout is forgotten: a longer input agrees with
        // the 10 parameters and no more.
        bytes.extend([0xffu8; 64]);
        assert_eq!(shape.check(&bytes, 0, 100, usize::MAX).0, 10);
    }

    #[test]
    fn interleaved_layouts_are_learned_rarely_and_a_settled_change_at_once() {
        let mut shape = Shape::default();
        // Two layouts alternating: a miss every other frame.
        let learned = (0..64)
            .filter(|_| {
                let learn = shape.missed();
                shape.agreed();
                learn
            })
            .count();
        // At the 1st, 2nd, 4th, ... 64th miss.
        assert_eq!(learned, 7);
        // Settled on one layout, then a change: learned at the first miss.
        for _ in 0..SETTLED {
            shape.agreed();
        }
        assert!(shape.missed());
    }

    #[test]
    fn a_shape_stops_growing_at_its_size_limit() {
        let mut shape = Shape::default();
        let value = [0xcb; 9];
        let mut n = 0;
        while shape.push(31, 20, value[0], 1 + 31 + 2 + 9) {
            n += 1;
        }
        assert_eq!(n, MAX_BYTES / 43);
        assert!(shape.mask.len() <= MAX_BYTES);
    }
}

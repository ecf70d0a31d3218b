//! MessagePack writing primitives, in msgpack-c's choice of forms (the
//! shortest for every integer and length), and their encoded sizes. Nothing
//! here knows about frames.
//!
//! Written by hand rather than through `rmp::encode`: every element is a
//! marker plus a big-endian payload pushed into a `Vec` whose capacity was
//! reserved once for the whole frame (docs/performance.md compares the
//! encoder's serialize phase with rmp's writer).
//!
//! The writers are generic over [`Out`], so that one encoder writes into a
//! `Vec<u8>`, straight into a `BytesMut` (the tokio codec's write buffer)
//! or into any `BufMut`, without an intermediate buffer.

#[allow(unused_imports)]
use crate::prelude::*;

use bytes::{BufMut, BytesMut};

/// Where the writers put bytes: the handful of `Vec` operations they use.
pub(crate) trait Out {
    fn push(&mut self, b: u8);
    fn extend_from_slice(&mut self, s: &[u8]);
    /// Makes room for `n` more bytes where the buffer can grow; `false` if
    /// the allocation failed (only a `Vec` reports it).
    fn try_reserve(&mut self, n: usize) -> bool;
    /// Writes the first `len` (at most 8) bytes of `word` in little-endian
    /// order: short strings go out in one fixed-size store when 8 bytes of
    /// room are already there.
    fn put_word(&mut self, word: u64, len: usize);
    /// The address the next byte goes to, where the buffer is contiguous
    /// memory this writer knows (see [`append`]).
    fn tail_addr(&self) -> Option<usize>;
}

impl Out for Vec<u8> {
    #[inline(always)]
    fn push(&mut self, b: u8) {
        Vec::push(self, b);
    }
    #[inline(always)]
    fn extend_from_slice(&mut self, s: &[u8]) {
        Vec::extend_from_slice(self, s);
    }
    #[inline(always)]
    fn try_reserve(&mut self, n: usize) -> bool {
        Vec::try_reserve(self, n).is_ok()
    }
    #[inline(always)]
    fn put_word(&mut self, word: u64, len: usize) {
        let bytes = word.to_le_bytes();
        if self.capacity() - self.len() >= 8 {
            let at = self.len();
            Vec::extend_from_slice(self, &bytes);
            self.truncate(at + len);
        } else {
            Vec::extend_from_slice(self, &bytes[..len]);
        }
    }
    #[inline(always)]
    fn tail_addr(&self) -> Option<usize> {
        Some(self.as_ptr() as usize + self.len())
    }
}

impl Out for BytesMut {
    #[inline(always)]
    fn push(&mut self, b: u8) {
        self.put_u8(b);
    }
    #[inline(always)]
    fn extend_from_slice(&mut self, s: &[u8]) {
        BytesMut::extend_from_slice(self, s);
    }
    #[inline(always)]
    fn try_reserve(&mut self, n: usize) -> bool {
        BytesMut::reserve(self, n);
        true
    }
    #[inline(always)]
    fn put_word(&mut self, word: u64, len: usize) {
        let bytes = word.to_le_bytes();
        if self.capacity() - self.len() >= 8 {
            let at = self.len();
            BytesMut::extend_from_slice(self, &bytes);
            self.truncate(at + len);
        } else {
            BytesMut::extend_from_slice(self, &bytes[..len]);
        }
    }
    #[inline(always)]
    fn tail_addr(&self) -> Option<usize> {
        Some(self.as_ptr() as usize + self.len())
    }
}

/// Any [`BufMut`]: no reserve (a growable `BufMut` grows by itself; a fixed
/// one was checked for room by the caller) and no over-write trick.
pub(crate) struct AnyBuf<'a, B: ?Sized>(pub(crate) &'a mut B);

impl<B: BufMut + ?Sized> Out for AnyBuf<'_, B> {
    #[inline(always)]
    fn push(&mut self, b: u8) {
        self.0.put_u8(b);
    }
    #[inline(always)]
    fn extend_from_slice(&mut self, s: &[u8]) {
        self.0.put_slice(s);
    }
    #[inline(always)]
    fn try_reserve(&mut self, _n: usize) -> bool {
        true
    }
    #[inline(always)]
    fn put_word(&mut self, word: u64, len: usize) {
        self.0.put_slice(&word.to_le_bytes()[..len]);
    }
    #[inline(always)]
    fn tail_addr(&self) -> Option<usize> {
        None
    }
}

#[inline(always)]
pub(crate) fn write_uint(out: &mut impl Out, v: u64) {
    if v < 0x80 {
        out.push(v as u8);
    } else if v <= u64::from(u8::MAX) {
        out.extend_from_slice(&[0xcc, v as u8]);
    } else if v <= u64::from(u16::MAX) {
        let b = (v as u16).to_be_bytes();
        out.extend_from_slice(&[0xcd, b[0], b[1]]);
    } else if v <= u64::from(u32::MAX) {
        let b = (v as u32).to_be_bytes();
        out.extend_from_slice(&[0xce, b[0], b[1], b[2], b[3]]);
    } else {
        out.push(0xcf);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// Shortest form; non-negative values use the unsigned markers (msgpack-c).
#[inline(always)]
pub(crate) fn write_int(out: &mut impl Out, v: i64) {
    if v >= 0 {
        write_uint(out, v as u64);
    } else if v >= -32 {
        out.push(v as u8);
    } else if v >= i64::from(i8::MIN) {
        out.extend_from_slice(&[0xd0, v as u8]);
    } else if v >= i64::from(i16::MIN) {
        let b = (v as i16).to_be_bytes();
        out.extend_from_slice(&[0xd1, b[0], b[1]]);
    } else if v >= i64::from(i32::MIN) {
        let b = (v as i32).to_be_bytes();
        out.extend_from_slice(&[0xd2, b[0], b[1], b[2], b[3]]);
    } else {
        out.push(0xd3);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

/// A tag: any MessagePack integer (`i64::MIN..=u64::MAX`), in the shortest
/// form. The caller guarantees the range.
#[inline]
pub(crate) fn write_tag(out: &mut Vec<u8>, tag: i128) {
    match i64::try_from(tag) {
        Ok(v) => write_int(out, v),
        Err(_) => write_uint(out, tag as u64),
    }
}

#[inline]
fn write_len(
    out: &mut impl Out,
    len: usize,
    fix: Option<(u8, usize)>,
    m8: Option<u8>,
    m16: u8,
    m32: u8,
) {
    match fix {
        Some((base, max)) if len <= max => return out.push(base | len as u8),
        _ => {}
    }
    match m8 {
        Some(m) if len <= usize::from(u8::MAX) => return out.extend_from_slice(&[m, len as u8]),
        _ => {}
    }
    if len <= usize::from(u16::MAX) {
        let b = (len as u16).to_be_bytes();
        out.extend_from_slice(&[m16, b[0], b[1]]);
    } else {
        // Lengths are bounded to u32 where they enter a frame (add_attachment,
        // the text arena), so this conversion cannot truncate.
        let b = u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes();
        out.extend_from_slice(&[m32, b[0], b[1], b[2], b[3]]);
    }
}

#[inline(always)]
pub(crate) fn write_str(out: &mut impl Out, s: &[u8]) {
    let n = s.len();
    // Keys and most string values are fixstrs: one marker byte. Up to 7
    // bytes, marker and string go out as one fixed-size 8-byte write (then
    // the length is cut back), not a call to `memcpy`.
    if n < 8 {
        out.put_word(0xa0 | n as u64 | crate::key::le_value(s) << 8, 1 + n);
        return;
    }
    write_str_header(out, n);
    out.extend_from_slice(s);
}

/// The marker and length of a string of `len` bytes, without the bytes.
#[inline(always)]
pub(crate) fn write_str_header(out: &mut impl Out, len: usize) {
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else {
        write_str_len(out, len);
    }
}

#[inline(never)]
fn write_str_len(out: &mut impl Out, len: usize) {
    write_len(out, len, Some((0xa0, 31)), Some(0xd9), 0xda, 0xdb);
}

/// The marker and length of a bin of `len` bytes, without the bytes.
#[inline]
pub(crate) fn write_bin_len(out: &mut impl Out, len: usize) {
    write_len(out, len, None, Some(0xc4), 0xc5, 0xc6);
}

/// Appends `data`, a caller's bytes of any size (an attachment's data after
/// its [`write_bin_len`] header, a whole frame), past `memcpy`'s slow paths:
/// longer than [`ALIASED_PIECE`], it goes through [`copy_cached`], which
/// knows where it lands.
#[inline]
pub(crate) fn append(out: &mut impl Out, data: &[u8]) {
    if data.len() <= ALIASED_PIECE {
        out.extend_from_slice(data);
    } else {
        append_large(out, data);
    }
}

/// [`append`] of more than [`ALIASED_PIECE`] bytes: room made first, so that
/// the destination [`copy_cached`] is told is where the bytes land.
#[inline(never)]
fn append_large(out: &mut impl Out, data: &[u8]) {
    // A failed reservation is left to the appends, which grow (and report
    // an allocation failure) as they always do.
    let _ = out.try_reserve(data.len());
    let at = out.tail_addr();
    copy_cached(data, at, |piece| out.extend_from_slice(piece));
}

#[inline]
pub(crate) fn write_array_len(out: &mut impl Out, len: usize) {
    write_len(out, len, Some((0x90, 15)), None, 0xdc, 0xdd);
}

#[inline]
pub(crate) fn write_map_len(out: &mut impl Out, len: usize) {
    write_len(out, len, Some((0x80, 15)), None, 0xde, 0xdf);
}

/// Encoded size of [`write_uint`]`(v)`.
#[inline]
pub(crate) fn uint_len(v: u64) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0xff => 2,
        0x100..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}
/// Encoded size of [`write_int`]`(v)`.
#[inline]
pub(crate) fn int_len(v: i64) -> usize {
    if v >= 0 {
        uint_len(v as u64)
    } else if v >= -32 {
        1
    } else if v >= i64::from(i8::MIN) {
        2
    } else if v >= i64::from(i16::MIN) {
        3
    } else if v >= i64::from(i32::MIN) {
        5
    } else {
        9
    }
}
/// Size of the marker and length prefix of a string, bin, array or map of
/// `len`: `fix_max` is the largest fix form (none for bin), `has8` whether an
/// 8-bit form exists.
#[inline]
pub(crate) fn len_prefix_len(len: usize, fix_max: Option<usize>, has8: bool) -> usize {
    if fix_max.is_some_and(|max| len <= max) {
        1
    } else if has8 && len <= 0xff {
        2
    } else if len <= 0xffff {
        3
    } else {
        5
    }
}

/// The largest piece [`copy_cached`] hands to one `memcpy`.
pub(crate) const CACHED_COPY_CHUNK: usize = 64 << 10;

/// The largest copy [`copy_cached`] splits; longer ones go to `memcpy` whole.
pub(crate) const CACHED_COPY_MAX: usize = 8 << 20;

/// The largest piece [`copy_cached`] hands to one `memcpy` when the copy's
/// destination is 1 to 15 bytes past its source, modulo 4 KiB: below the
/// size from which glibc's `memcpy` may use `rep movsb` (its
/// `x86_rep_movsb_threshold`, 2 KiB and up), so its vector loops copy it.
pub(crate) const ALIASED_PIECE: usize = 1 << 10;

/// From this length on, a whole copy on an AMD Zen host ([`copy_cached`]
/// without 64 KiB pieces) is left whole even at an [`aliased`] distance:
/// glibc's `memcpy` stops using `rep movsb` on AMD at the L2 size (its
/// `x86_rep_movsb_stop_threshold`; 512 KiB on Zen 1 to 3, 1 MiB on Zen 4
/// and 5), and its vector loop, used from there on, checks for 4 KiB
/// aliasing itself. On the machine of docs/performance.md a 1 MiB copy at
/// distance 5 took 22.3 µs whole and 30.7 µs in [`ALIASED_PIECE`]s.
pub(crate) const WHOLE_FROM_ON_ZEN: usize = 1 << 20;

/// Whether a copy from `src` to `dst` is one that `rep movsb` makes slow on
/// x86: the destination 1 to 15 bytes past the source, modulo 4 KiB, so that
/// every load of the source seems to depend on a store just made (4 KiB
/// aliasing). On the AMD EPYC machine of docs/performance.md (glibc 2.36,
/// which uses `rep movsb` from 2 KiB up to the L2 size) such copies of 16 KiB
/// to 1 MiB took 13 to 26 times as long as at distance 0; copied in
/// [`ALIASED_PIECE`]s, about 1.2 times. No other architecture here has the
/// instruction, so elsewhere this is always `false` (and compiled out).
#[inline(always)]
pub(crate) fn aliased(dst: usize, src: *const u8) -> bool {
    let distance = dst.wrapping_sub(src as usize) % 4096;
    cfg!(any(target_arch = "x86_64", target_arch = "x86")) && (1..16).contains(&distance)
}

/// Whether a copy of `data` to `dst` goes in [`ALIASED_PIECE`]s: one longer
/// than a piece, at an [`aliased`] distance.
#[inline(always)]
fn needs_small_pieces(dst: usize, data: &[u8]) -> bool {
    data.len() > ALIASED_PIECE && aliased(dst, data.as_ptr())
}

/// Copies `s` into `dst` (of the same length): a long string into a
/// frame's text, which `memcpy` would make slow at a 4 KiB aliasing
/// distance as it would an attachment ([`aliased`]).
#[inline]
pub(crate) fn copy_to_slice(dst: &mut [u8], s: &[u8]) {
    if needs_small_pieces(dst.as_ptr() as usize, s) {
        copy_aliased(dst, s);
    } else {
        dst.copy_from_slice(s);
    }
}

#[cold]
#[inline(never)]
fn copy_aliased(dst: &mut [u8], s: &[u8]) {
    for (to, from) in dst.chunks_mut(ALIASED_PIECE).zip(s.chunks(ALIASED_PIECE)) {
        to.copy_from_slice(from);
    }
}

/// Copies `data` by `put`, to `dst` when that is known (the address its
/// first byte lands at), in pieces that keep `memcpy` on its fast paths.
///
/// **In pieces of at most 64 KiB, so that the copy stays in cache for
/// whoever reads it next** (issue 14). glibc's `memcpy` writes a copy
/// longer than its `x86_non_temporal_threshold` (three quarters of the
/// calling thread's share of the last-level cache) with non-temporal
/// stores, straight to memory. On many Intel server parts and their guests
/// the threshold is below 1 MiB, and then each step of the copying path
/// (into the frame, into the wire, out of it) reads a buffer the step
/// before has just written to DRAM: with the threshold forced to 256 KiB on
/// the machine of docs/performance.md the 1 MiB round trip took 172 µs
/// against 73 µs (`examples/attachment_copy.rs`), the pattern users saw on
/// a Xeon guest. Pieces of 64 KiB are below the thresholds glibc computes
/// on current x86 parts (hundreds of KiB and more), so they are copied
/// through the cache, at the cost of a call per 64 KiB (a threshold set
/// lower by hand, which the tunable allows down to 16 KiB, would still
/// apply). Copies longer than [`CACHED_COPY_MAX`] would not stay in cache
/// anyway, and are left to `memcpy`'s own choice. On AMD Zen parts, whose
/// thresholds glibc sets far above that and where the pieces cost time
/// instead, copies go whole ([`pieces_keep_in_cache`]).
///
/// **In pieces of [`ALIASED_PIECE`] when the destination is 1 to 15 bytes
/// past the source, modulo 4 KiB** ([`aliased`]), whatever the length, but
/// for a whole copy of [`WHOLE_FROM_ON_ZEN`] or more on an AMD Zen host:
/// there `rep movsb` is over ten times slower on AMD Zen parts, and
/// glibc's `memcpy` itself uses it for any copy from 2 KiB to the L2 size
/// (`examples/attachment_alias.rs`). That distance is what a frame re-encoded
/// with a header a few bytes longer gives its attachments, for one.
#[inline]
pub(crate) fn copy_cached(data: &[u8], dst: Option<usize>, put: impl FnMut(&[u8])) {
    copy_in_pieces(
        data,
        dst,
        data.len() > CACHED_COPY_CHUNK && pieces_keep_in_cache(),
        put,
    );
}

/// [`copy_cached`] with its choice of 64 KiB pieces made by the caller
/// (`chunked`, for a copy longer than one piece): what the tests run on
/// either kind of host.
#[inline]
pub(crate) fn copy_in_pieces(
    data: &[u8],
    dst: Option<usize>,
    chunked: bool,
    mut put: impl FnMut(&[u8]),
) {
    // `chunked` is false past 64 KiB only on a host that copies whole
    // (AMD Zen, see `pieces_keep_in_cache`).
    let whole_past_l2 = !chunked && data.len() >= WHOLE_FROM_ON_ZEN;
    if !whole_past_l2 && dst.is_some_and(|at| needs_small_pieces(at, data)) {
        data.chunks(ALIASED_PIECE).for_each(put);
    } else if !chunked || data.len() <= CACHED_COPY_CHUNK || data.len() > CACHED_COPY_MAX {
        put(data);
    } else {
        data.chunks(CACHED_COPY_CHUNK).for_each(put);
    }
}

/// Whether this host needs [`copy_cached`]'s 64 KiB pieces to keep a copy
/// in cache: everywhere but on AMD Zen parts, told apart by SSE4a (which
/// only AMD and Hygon, its licensee, implement) with ADX (which AMD has from
/// Zen on). On those glibc (2.33 and later) sets `x86_non_temporal_threshold`
/// at three quarters of a core complex's L3, 3 MiB and more on every Zen
/// part (240 MiB on the machine of docs/performance.md), and uses `rep movsb`
/// only below the L2 size, so a copy up to [`CACHED_COPY_MAX`] stays in cache
/// whole, and from the L2 size up goes through glibc's vector loop where
/// pieces of 64 KiB would go through `rep movsb`: on that machine the 1 MiB
/// copy took 6 % longer in pieces, and up to 30 % longer with the
/// destination a few dozen bytes past the source, as an attachment's place
/// in the wire often is. Elsewhere than Linux with glibc (other C
/// libraries choose their own thresholds) and without `std` (no feature
/// detection) the pieces stay.
#[inline]
fn pieces_keep_in_cache() -> bool {
    #[cfg(all(
        feature = "std",
        any(target_arch = "x86_64", target_arch = "x86"),
        target_os = "linux",
        target_env = "gnu"
    ))]
    {
        !(std::is_x86_feature_detected!("sse4a") && std::is_x86_feature_detected!("adx"))
    }
    #[cfg(not(all(
        feature = "std",
        any(target_arch = "x86_64", target_arch = "x86"),
        target_os = "linux",
        target_env = "gnu"
    )))]
    {
        true
    }
}

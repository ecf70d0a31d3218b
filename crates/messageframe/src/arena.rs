//! [`TextArena`]: the frame's one buffer of keys and string values, valid
//! UTF-8 at all times it can be read, whose first [`INLINE_TEXT`] bytes
//! live inside the frame ([`InlineVec`]): a new frame holding a few short
//! keys and strings allocates nothing for them.
//!
//! This module holds one of the crate's `unsafe` blocks: reading the arena
//! as `&str` without validating it again. Its soundness rests on one
//! invariant, kept here and nowhere else: every way to change the bytes
//! ([`TextArena::push_str`], [`TextArena::overwrite`], `clear`, and a
//! decode's [`RawText`], which validates before it hands the arena back
//! and empties it otherwise, even when it is dropped by a panic) leaves
//! them valid UTF-8. `std`'s `String` keeps the same invariant the same
//! way; it cannot be used here because its buffer cannot be inline.

#[allow(unused_imports)]
use crate::prelude::*;

use crate::inline::InlineVec;

/// Bytes of keys and string values a frame holds in place before its arena
/// allocates: the keys and strings of a handful of parameters with short
/// names (`d0␟p0`, `value_3`, `sensor_a␟volts`).
pub(crate) const INLINE_TEXT: usize = 64;

/// The capacity of an arena's first allocation when it outgrows its inline
/// part by appending (a decode sizes its own, see `decode::sink`).
const FIRST_HEAP_TEXT: usize = 4 * INLINE_TEXT;

/// UTF-8 text, appended to as a frame is filled; see the module docs.
#[derive(Clone, Default)]
pub(crate) struct TextArena {
    /// Always valid UTF-8 outside a [`RawText`].
    bytes: InlineVec<u8, INLINE_TEXT>,
}

impl TextArena {
    /// Room for `cap` bytes (in place when they fit).
    pub(crate) fn with_capacity(cap: usize) -> Self {
        TextArena {
            bytes: InlineVec::with_capacity(cap),
        }
    }

    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn as_str(&self) -> &str {
        let bytes = self.bytes.as_slice();
        debug_assert!(core::str::from_utf8(bytes).is_ok());
        // SAFETY: the bytes are valid UTF-8: that is this type's invariant
        // (module docs), which every method that changes them keeps, and a
        // `RawText`, the one way to write unchecked bytes, holds the only
        // (mutable) borrow of the arena until it has checked them.
        unsafe { core::str::from_utf8_unchecked(bytes) }
    }

    #[inline(always)]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
    }

    /// Room for `more` bytes.
    #[inline]
    pub(crate) fn reserve(&mut self, more: usize) {
        self.bytes.reserve(more);
    }

    /// Room for exactly `more` bytes past those held (in place if they
    /// fit).
    pub(crate) fn reserve_exact(&mut self, more: usize) {
        self.bytes.reserve_exact(more);
    }

    /// Appends `s`: up to 8 bytes with one fixed-size write instead of a
    /// call to `memcpy` (which costs more than the copy for the short names
    /// and values frames are made of).
    #[inline(always)]
    pub(crate) fn push_str(&mut self, s: &str) {
        // A whole `&str` appended keeps the bytes valid UTF-8.
        if !self.bytes.append_short(s.as_bytes()) {
            self.push_long(s);
        }
    }

    #[inline(never)]
    fn push_long(&mut self, s: &str) {
        if self.bytes.room_mut(s.len()).is_none() {
            self.grow_for(s.len());
        }
        let end = self.bytes.len() + s.len();
        if let Some(dst) = self.bytes.spare_mut(s.len()) {
            crate::key::copy_small(dst, s.as_bytes());
            self.bytes.set_len(end);
        }
        debug_assert_eq!(self.bytes.len(), end);
    }

    /// Appends the key `device` U+001F `param` and returns where it starts:
    /// with one check of room, and each part of up to 8 bytes as one
    /// fixed-size write, when both parts are that short (the usual key).
    #[inline(always)]
    pub(crate) fn push_key(&mut self, device: &str, param: &str) -> usize {
        let start = self.bytes.len();
        let (d, p) = (device.as_bytes(), param.as_bytes());
        if d.len() <= 8 && p.len() <= 8 {
            // 8 bytes written at the param's start: room for 7 past the key.
            let dl = d.len();
            if let Some(dst) = self.bytes.spare_mut(dl + 9) {
                dst[..8].copy_from_slice(&crate::key::le_value(d).to_le_bytes());
                dst[dl] = crate::key::SEPARATOR_BYTE;
                dst[dl + 1..dl + 9].copy_from_slice(&crate::key::le_value(p).to_le_bytes());
                // A whole `&str`, the separator, a whole `&str`: the bytes
                // up to the key's end stay valid UTF-8 (what lies past it
                // is not part of the text).
                self.bytes.set_len(start + dl + 1 + p.len());
                return start;
            }
        }
        self.push_key_long(device, param)
    }

    /// [`push_key`](TextArena::push_key) of a key with a part longer than 8
    /// bytes: one check of room, two copies.
    #[inline(never)]
    fn push_key_long(&mut self, device: &str, param: &str) -> usize {
        let start = self.bytes.len();
        let (d, p) = (device.as_bytes(), param.as_bytes());
        let sep = start + d.len();
        let end = sep + 1 + p.len();
        if self.bytes.room_mut(end - start).is_none() {
            self.grow_for(end - start);
        }
        if let Some(dst) = self.bytes.spare_mut(end - start) {
            let dl = d.len();
            crate::key::copy_small(dst, d);
            dst[dl] = crate::key::SEPARATOR_BYTE;
            crate::key::copy_small(&mut dst[dl + 1..], p);
            // Whole `&str`s around the separator: valid UTF-8.
            self.bytes.set_len(end);
        }
        debug_assert_eq!(self.bytes.len(), end);
        start
    }

    /// Makes room for `more` bytes: past the inline part, straight to a
    /// size that holds a few more parameters, rather than doubling from 64
    /// bytes.
    #[cold]
    fn grow_for(&mut self, more: usize) {
        if !self.bytes.spilled() {
            self.bytes.reserve_exact(more.max(FIRST_HEAP_TEXT));
        } else {
            self.bytes.reserve(more);
        }
    }

    /// Replaces the bytes at `start..start + s.len()` with `s`.
    ///
    /// # Panics
    ///
    /// If that range is not within the text or does not start and end on
    /// char boundaries (as `String::replace_range`).
    pub(crate) fn overwrite(&mut self, start: usize, s: &str) {
        let end = start + s.len();
        let text = self.as_str();
        assert!(
            text.is_char_boundary(start) && text.is_char_boundary(end),
            "overwrite of {start}..{end} in a text of {} bytes",
            text.len()
        );
        // Whole chars replaced by a whole `&str`: still valid UTF-8.
        self.bytes.as_mut_slice()[start..end].copy_from_slice(s.as_bytes());
    }

    /// Hands the arena, emptied (capacity kept), to a decode, which
    /// appends bytes not yet checked as UTF-8 and checks them once at the
    /// end ([`RawText::finish`]).
    #[inline]
    pub(crate) fn begin_raw(&mut self) -> RawText<'_> {
        self.bytes.clear();
        RawText {
            bytes: &mut self.bytes,
            checked: false,
        }
    }
}

impl core::ops::Deref for TextArena {
    type Target = str;

    #[inline(always)]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// A [`TextArena`] being filled with unchecked bytes by a decode. Until
/// [`finish`](RawText::finish) has checked them, it holds the arena's only
/// borrow; dropped without `finish` (a panic in the decode), it empties the
/// arena, so that nothing unchecked is ever read as `&str`.
pub(crate) struct RawText<'a> {
    bytes: &'a mut InlineVec<u8, INLINE_TEXT>,
    checked: bool,
}

impl RawText<'_> {
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Whether the bytes are still in the frame's inline part.
    #[inline(always)]
    pub(crate) fn is_inline(&self) -> bool {
        !self.bytes.spilled()
    }

    /// Room for exactly `more` bytes beyond those held.
    pub(crate) fn reserve_exact(&mut self, more: usize) {
        self.bytes.reserve_exact(more);
    }

    /// Appends `s` (room was reserved).
    #[inline(always)]
    pub(crate) fn push(&mut self, s: &[u8]) {
        if !self.bytes.append_short(s) {
            let end = self.bytes.len() + s.len();
            match self.bytes.spare_mut(s.len()) {
                Some(dst) => crate::key::copy_small(dst, s),
                None => return self.bytes.extend_from_slice(s),
            }
            self.bytes.set_len(end);
        }
    }

    /// Appends a key and a string value (room was reserved), and returns
    /// where each starts: one look at the buffer for both when both are
    /// short.
    #[inline(always)]
    pub(crate) fn push_pair(&mut self, key: &[u8], s: &[u8]) -> (usize, usize) {
        let start = self.bytes.len();
        let at = start + key.len();
        let kl = key.len();
        if kl <= 8 && s.len() <= 8 {
            if let Some(dst) = self.bytes.spare_mut(kl + 8) {
                dst[..8].copy_from_slice(&crate::key::le_value(key).to_le_bytes());
                dst[kl..kl + 8].copy_from_slice(&crate::key::le_value(s).to_le_bytes());
                self.bytes.set_len(at + s.len());
                return (start, at);
            }
        } else if kl <= 16 && s.len() <= 16 {
            // The same with 16-byte writes (`value_1023`, a `d3␟p1023` key).
            if let Some(dst) = self.bytes.spare_mut(kl + 16) {
                dst[..16].copy_from_slice(&crate::key::le_value16(key).to_le_bytes());
                dst[kl..kl + 16].copy_from_slice(&crate::key::le_value16(s).to_le_bytes());
                self.bytes.set_len(at + s.len());
                return (start, at);
            }
        }
        if let Some(dst) = self.bytes.spare_mut(kl + s.len()) {
            crate::key::copy_small(dst, key);
            crate::key::copy_small(&mut dst[kl..], s);
            self.bytes.set_len(at + s.len());
        } else {
            self.push(key);
            self.push(s);
        }
        (start, at)
    }

    /// The bytes appended so far.
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// Ends the decode's writing: with `keep`, the bytes stay if they are
    /// valid UTF-8 (returns `true`); otherwise the arena is emptied (its
    /// capacity kept) and `false` is returned.
    pub(crate) fn finish(mut self, keep: bool) -> bool {
        let kept = keep && crate::utf8::is_valid(self.bytes.as_slice());
        if !kept {
            self.bytes.clear();
        }
        self.checked = true;
        kept
    }
}

impl Drop for RawText<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.checked {
            self.bytes.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_keys_and_strings_in_place_then_on_the_heap() {
        let mut t = TextArena::default();
        let mut want = String::new();
        for (i, s) in ["d0", "p0", "value_3", "température", "", "x"]
            .iter()
            .cycle()
            .take(60)
            .enumerate()
        {
            t.push_str(s);
            want.push_str(s);
            if i % 3 == 0 {
                t.push_str("\u{1f}");
                want.push('\u{1f}');
            }
            assert_eq!(t.as_str(), want);
        }
        assert!(t.len() > INLINE_TEXT && t.capacity() >= t.len());
        let cap = t.capacity();
        t.clear();
        assert_eq!((t.as_str(), t.capacity()), ("", cap), "capacity kept");
    }

    #[test]
    #[cfg(feature = "std")]
    fn overwrite_replaces_whole_chars_only() {
        let mut t = TextArena::default();
        t.push_str("ab€cd");
        t.overwrite(2, "xyz");
        assert_eq!(t.as_str(), "abxyzcd");
        let mid_char = std::panic::catch_unwind(|| {
            let mut t = TextArena::default();
            t.push_str("a€");
            t.overwrite(2, "xx");
        });
        assert!(mid_char.is_err());
    }

    #[test]
    fn a_decode_keeps_only_valid_text() {
        let mut t = TextArena::default();
        t.push_str("old");
        let mut raw = t.begin_raw();
        raw.push(b"caf\xc3\xa9");
        assert!(raw.finish(true));
        assert_eq!(t.as_str(), "café");

        let mut raw = t.begin_raw();
        assert_eq!(raw.push_pair(b"k\x1f", b"v"), (0, 2));
        raw.push(b"bad \xff");
        assert!(!raw.finish(true));
        assert_eq!(t.as_str(), "", "invalid bytes are dropped");

        let mut raw = t.begin_raw();
        raw.push(b"fine");
        assert!(!raw.finish(false), "an error elsewhere drops them too");
        assert_eq!(t.as_str(), "");

        // Grown by a decode: the capacity stays through a failed decode.
        let mut raw = t.begin_raw();
        raw.reserve_exact(200);
        raw.push(&[0xff; 100]);
        assert!(!raw.is_inline() && raw.len() == 100 && raw.capacity() >= 200);
        assert!(!raw.finish(true));
        assert!(t.as_str().is_empty() && t.capacity() >= 200);
        // Dropped without finish (an early return or a panic): emptied.
        {
            let mut raw = t.begin_raw();
            raw.push(&[0xff; 10]);
        }
        assert_eq!(t.as_str(), "");
        #[cfg(feature = "std")]
        {
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut raw = t.begin_raw();
                raw.push(b"\xc3");
                panic!("in the middle of a decode");
            }));
            assert!(unwound.is_err());
            assert_eq!(t.as_str(), "");
        }
    }
}

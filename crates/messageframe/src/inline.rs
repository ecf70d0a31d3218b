//! [`InlineVec`]: a vector whose first `N` items live inside it, so that a
//! new frame holding a few parameters allocates nothing (issue 23: a fresh
//! 4-parameter build + encode + decode took 5 allocations, now 1, the
//! encoded `Vec`).
//!
//! Safe code, and one representation for both places: the items are
//! `buf()[..len]`, where `buf()` is the inline array or, once the items
//! outgrew it, a heap `Vec` kept *filled* to its capacity (with
//! `T::default()` past `len`). So every operation is "a slice and a
//! length": which slice is one select, not a branch into two code paths,
//! and a write is a bounds-checked store into it. A vector that once
//! outgrew its inline part keeps its heap buffer through `clear`, so a
//! reused frame stays on the buffer it warmed up, and the steady state
//! allocates nothing, as before.

#[allow(unused_imports)]
use crate::prelude::*;

/// The most items a buffer holds: a frame's offsets and lengths are `u32`,
/// and with its buffers capped here a write that fits the buffer fits them
/// (no check of its own needed; the growth that would pass it panics).
pub(crate) const MAX_ITEMS: usize = u32::MAX as usize;

/// A vector that outgrows its `N` items in place grows to at least this
/// many times `N`: a frame past its few inline parameters usually holds
/// tens of them (a telemetry message 64), and doubling from 4 entries took
/// three reallocations and copies to reach 32 (a fresh 32-parameter frame:
/// 4 allocations while adding, now 2).
pub(crate) const FIRST_HEAP_FACTOR: usize = 8;

/// Up to `N` items in place, then a heap buffer.
///
/// Invariants: `len <= buf().len()`; `heap` is either empty (the items are
/// in `inline`) or longer than `N` (they are in `heap`).
#[derive(Clone)]
pub(crate) struct InlineVec<T: Copy + Default, const N: usize> {
    len: usize,
    inline: [T; N],
    /// A boxed slice, not a `Vec`: it is always filled to its capacity, so
    /// a `Vec`'s length would repeat its capacity, and 8 bytes more in a
    /// frame are 8 bytes more to copy at each of its moves.
    heap: Box<[T]>,
}

impl<T: Copy + Default, const N: usize> Default for InlineVec<T, N> {
    fn default() -> Self {
        InlineVec {
            len: 0,
            inline: [T::default(); N],
            heap: Box::default(),
        }
    }
}

impl<T: Copy + Default + core::fmt::Debug, const N: usize> core::fmt::Debug for InlineVec<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Copy + Default, const N: usize> InlineVec<T, N> {
    /// Room for `cap` items: in place when they fit, else allocated now.
    pub(crate) fn with_capacity(cap: usize) -> Self {
        let mut v = Self::default();
        if cap > N {
            v.grow_exact(cap);
        }
        v
    }

    /// Whether the items are in the heap buffer.
    #[inline(always)]
    pub(crate) fn spilled(&self) -> bool {
        !self.heap.is_empty()
    }

    /// The buffer the items are in, filled to its capacity.
    #[inline(always)]
    fn buf(&self) -> &[T] {
        if self.heap.is_empty() {
            &self.inline
        } else {
            &self.heap
        }
    }

    #[inline(always)]
    fn buf_mut(&mut self) -> &mut [T] {
        if self.heap.is_empty() {
            &mut self.inline
        } else {
            &mut self.heap
        }
    }

    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[T] {
        &self.buf()[..self.len]
    }

    #[inline(always)]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        let len = self.len;
        &mut self.buf_mut()[..len]
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.buf().len()
    }

    /// The whole buffer (filled to its capacity: items past the length are
    /// leftovers), if it has room for `more` items past the length; the
    /// caller writes them and then sets the length
    /// ([`set_len`](InlineVec::set_len)). One check of room for several
    /// writes.
    #[inline(always)]
    pub(crate) fn room_mut(&mut self, more: usize) -> Option<&mut [T]> {
        let len = self.len;
        let buf = self.buf_mut();
        if buf.len() - len >= more {
            Some(buf)
        } else {
            None
        }
    }

    /// The `more` items past the length, if the buffer has them: the room
    /// for writes of a known size, each then checked against `more` only.
    #[inline(always)]
    pub(crate) fn spare_mut(&mut self, more: usize) -> Option<&mut [T]> {
        let len = self.len;
        self.buf_mut().get_mut(len..len.checked_add(more)?)
    }

    /// Sets the length after writes into [`room_mut`](InlineVec::room_mut)'s
    /// buffer (at most its capacity).
    #[inline(always)]
    pub(crate) fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.capacity());
        self.len = len;
    }

    /// Empties it, keeping the heap buffer.
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, item: T) {
        // The growth takes no item: the item is then stored straight from
        // registers into its place (a cold path that took it by value made
        // the compiler build it on the stack first and copy it with wide
        // loads from narrow stores, a store-forwarding stall that cost a
        // quarter of the time of filling a frame).
        let len = self.len;
        loop {
            let buf = self.buf_mut();
            if len < buf.len() {
                buf[len] = item;
                break;
            }
            self.grow(len + 1);
        }
        self.len = len + 1;
    }

    /// Appends an item into room reserved before (a decode reserves its
    /// entries for the count the input declares): no check for growth.
    ///
    /// # Panics
    ///
    /// If there is no room (a bug of the caller's reservation).
    #[inline(always)]
    pub(crate) fn push_reserved(&mut self, item: T) {
        let len = self.len;
        self.buf_mut()[len] = item;
        self.len = len + 1;
    }

    #[inline]
    pub(crate) fn extend_from_slice(&mut self, items: &[T]) {
        let (len, end) = (self.len, self.len + items.len());
        loop {
            if let Some(buf) = self.room_mut(items.len()) {
                buf[len..end].copy_from_slice(items);
                break;
            }
            self.grow(end);
        }
        self.len = end;
    }

    /// Grows the buffer to hold at least `need` items: to twice its
    /// capacity or `need`, whichever is more (a `Vec`'s amortized growth),
    /// but not past [`MAX_ITEMS`] unless `need` is; and on leaving the
    /// inline part, to at least [`FIRST_HEAP_FACTOR`] times it.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, need: usize) {
        let first = if self.spilled() {
            0
        } else {
            N.saturating_mul(FIRST_HEAP_FACTOR)
        };
        let cap = need
            .max(first)
            .max(self.capacity().saturating_mul(2).min(MAX_ITEMS));
        self.grow_exact(cap);
    }

    /// Grows the buffer to exactly `cap` items (more than it holds).
    ///
    /// # Panics
    ///
    /// Past [`MAX_ITEMS`]: a frame's offsets are `u32`.
    fn grow_exact(&mut self, cap: usize) {
        assert!(
            cap <= MAX_ITEMS,
            "a frame's keys and strings are limited to 4 GiB"
        );
        let mut heap = if self.heap.is_empty() {
            let mut heap = Vec::with_capacity(cap);
            heap.extend_from_slice(&self.inline[..self.len]);
            heap
        } else {
            // A reallocation, as a `Vec`'s growth (its length is its
            // capacity, so `into_vec` and `into_boxed_slice` allocate
            // nothing of their own).
            let mut heap = core::mem::take(&mut self.heap).into_vec();
            heap.reserve_exact(cap - heap.len());
            heap
        };
        heap.resize(cap, T::default());
        self.heap = heap.into_boxed_slice();
    }

    /// Room for `more` items, growing as a `Vec` does.
    #[inline]
    pub(crate) fn reserve(&mut self, more: usize) {
        let need = self.len.saturating_add(more);
        if need > self.capacity() {
            self.grow(need);
        }
    }

    /// Room for exactly `more` items beyond those held (in place if they
    /// fit).
    #[inline]
    pub(crate) fn reserve_exact(&mut self, more: usize) {
        let need = self.len.saturating_add(more);
        if need > self.capacity() {
            self.grow_exact(need);
        }
    }

    /// Keeps the items for which `keep` returns `true`, in order.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let len = self.len;
        let buf = self.buf_mut();
        let mut kept = 0;
        for i in 0..len {
            let item = buf[i];
            if keep(&item) {
                buf[kept] = item;
                kept += 1;
            }
        }
        self.len = kept;
    }
}

impl<const N: usize> InlineVec<u8, N> {
    /// Appends `s` (up to 8 bytes) with one fixed-size write instead of a
    /// call to `memcpy`, when 8 bytes of room are left; `false` (nothing
    /// appended) otherwise. A copy of a length known only at run time is a
    /// call to `memcpy`, which costs more than the copy for the short names
    /// and values frames are made of. The bytes written past `s` are left
    /// past the length.
    #[inline(always)]
    pub(crate) fn append_short(&mut self, s: &[u8]) -> bool {
        let len = self.len;
        let buf = self.buf_mut();
        if s.len() > 8 || buf.len() - len < 8 {
            return false;
        }
        buf[len..len + 8].copy_from_slice(&crate::key::le_value(s).to_le_bytes());
        self.len = len + s.len();
        true
    }
}

impl<T: Copy + Default, const N: usize> core::ops::Deref for InlineVec<T, N> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + Default, const N: usize> core::ops::DerefMut for InlineVec<T, N> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<'a, T: Copy + Default, const N: usize> IntoIterator for &'a InlineVec<T, N> {
    type Item = &'a T;
    type IntoIter = core::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a, T: Copy + Default, const N: usize> IntoIterator for &'a mut InlineVec<T, N> {
    type Item = &'a mut T;
    type IntoIter = core::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type V = InlineVec<u32, 4>;

    fn items(v: &V) -> Vec<u32> {
        v.as_slice().to_vec()
    }

    #[test]
    fn holds_its_first_items_in_place_then_moves_them_to_the_heap() {
        let mut v = V::default();
        assert!(v.is_empty() && v.capacity() == 4 && !v.spilled());
        for i in 0..4 {
            v.push(i);
        }
        assert!(!v.spilled());
        assert_eq!(items(&v), [0, 1, 2, 3]);
        v.push(4);
        assert!(v.spilled() && v.capacity() >= 8);
        assert_eq!(items(&v), [0, 1, 2, 3, 4]);
        for i in 5..40 {
            v.push(i);
        }
        assert_eq!(items(&v), (0..40).collect::<Vec<_>>());
        // A cleared vector keeps its buffer and stays on the heap.
        let cap = v.capacity();
        v.clear();
        assert!(v.is_empty() && v.spilled() && v.capacity() == cap);
        v.extend_from_slice(&[7, 8]);
        assert_eq!(items(&v), [7, 8]);
    }

    #[test]
    fn extends_reserves_and_retains_in_both_places() {
        for start_spilled in [false, true] {
            let mut v = if start_spilled {
                V::with_capacity(16)
            } else {
                V::default()
            };
            assert_eq!(v.spilled(), start_spilled);
            v.extend_from_slice(&[1, 2, 3]);
            v.retain(|&x| x != 2);
            assert_eq!(items(&v), [1, 3]);
            v.as_mut_slice()[0] = 9;
            v.retain(|&x| x != 3);
            assert_eq!(items(&v), [9]);
            v.reserve_exact(3);
            assert_eq!(v.spilled(), start_spilled, "3 more fit in place");
            v.reserve_exact(4);
            assert!(v.spilled() && v.capacity() >= 5);
            v.reserve(100);
            assert!(v.capacity() >= 101);
            v.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
            assert_eq!(items(&v), [9, 1, 2, 3, 4, 5, 6]);
            let c = v.clone();
            assert_eq!(items(&c), items(&v));
            assert_eq!(format!("{c:?}"), "[9, 1, 2, 3, 4, 5, 6]");
            assert_eq!(c.iter().copied().sum::<u32>(), 30);
        }
        let mut v = V::default();
        v.extend_from_slice(&[1, 2, 3, 4, 5]);
        assert!(v.spilled(), "an extend past the inline part spills");
        assert_eq!(items(&v), [1, 2, 3, 4, 5]);
        assert!(!V::with_capacity(4).spilled());
    }

    #[test]
    fn short_appends_write_exactly_the_bytes_in_place_and_on_the_heap() {
        let mut v: InlineVec<u8, 64> = InlineVec::default();
        let mut want = Vec::new();
        let mut n = 0u8;
        while want.len() < 3 * 64 {
            let s: Vec<u8> = (0..=(n % 10)).map(|i| b'a' + i).collect();
            if !v.append_short(&s) {
                v.extend_from_slice(&s);
            }
            want.extend_from_slice(&s);
            assert_eq!(v.as_slice(), &want[..]);
            n = n.wrapping_add(1);
        }
        assert!(v.spilled());
    }
}

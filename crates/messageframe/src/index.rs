//! The lookup index of a large parameter table: entry numbers in an
//! open-addressing hash table with linear probing.
//!
//! Why not hashbrown's `HashTable<u32>`, which the index was before: a
//! lookup in a frame is a chain of dependent loads, and with the out-of-order
//! window full of one lookup's instructions its latency is its cost.
//! hashbrown loads a control group, matches it with SIMD, then loads the
//! slot, then the entry. Here a slot holds the entry number *and* 32 bits of
//! the key's hash, so one load gives both the filter and the entry to
//! compare: one dependent load and the group match fewer. Measured on the
//! machine of docs/performance.md, a loop of `find`s of the last of 1,024
//! keys (the SPEC 5.2 frame) went from 13.8–14.1 ns to 11.6–12.0 ns per
//! lookup (minimum of 5 passes, in three processes each). The
//! price is memory: 8-byte slots at most half full are 16 to 32 bytes per
//! entry, where hashbrown's were about 5 to 11.5 (docs/security.md carries
//! it into the allocation bound). The table only ever grows (entries are
//! never removed, only all cleared), which keeps it this small: no
//! tombstones, no deletion.
//!
//! Layout: `slots.len()` is 0 or a power of two of at least [`MIN_SLOTS`],
//! at most half full, so every probe ends at an empty slot. A slot is
//! `tag << 32 | (entry + 1)`, 0 when empty; the tag is the low 32 bits of
//! the key's hash, and also gives the slot's home position, so growing the
//! table moves slots without hashing any key again.

/// The fewest slots a table that holds anything has.
const MIN_SLOTS: usize = 16;

const EMPTY: u64 = 0;

#[derive(Clone, Default)]
pub(crate) struct Index {
    slots: Vec<u64>,
    len: usize,
}

#[inline(always)]
fn tag_of(hash: u64) -> u64 {
    hash & 0xffff_ffff
}

/// The slot count that holds `items` at most half full.
fn slots_for(items: usize) -> usize {
    items
        .saturating_mul(2)
        .max(MIN_SLOTS)
        .checked_next_power_of_two()
        .unwrap_or(usize::MAX)
}

impl Index {
    pub(crate) fn with_capacity(items: usize) -> Index {
        let mut index = Index::default();
        index.reserve(items);
        index
    }

    /// The bytes an index sized for `items` entries allocates (exact; an
    /// upper bound of what building it for them costs).
    pub(crate) fn bytes_for(items: usize) -> usize {
        slots_for(items).saturating_mul(std::mem::size_of::<u64>())
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Empties the index and keeps its allocation.
    pub(crate) fn clear(&mut self) {
        self.slots.fill(EMPTY);
        self.len = 0;
    }

    /// Makes room for `extra` more entries.
    pub(crate) fn reserve(&mut self, extra: usize) {
        let need = self.len.saturating_add(extra);
        if need.saturating_mul(2) > self.slots.len() {
            self.resize(slots_for(need));
        }
    }

    #[cold]
    #[inline(never)]
    fn resize(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; slots]);
        let mask = slots - 1;
        for s in old.into_iter().filter(|&s| s != EMPTY) {
            let mut pos = (s >> 32) as usize & mask;
            while self.slots[pos] != EMPTY {
                pos = (pos + 1) & mask;
            }
            self.slots[pos] = s;
        }
    }

    /// The first entry, in probe order, with this hash for which `eq` holds.
    #[inline(always)]
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(usize) -> bool) -> Option<usize> {
        let tag = tag_of(hash);
        // An empty table has no slots: the mask then makes `get` fail.
        let mask = self.slots.len().wrapping_sub(1);
        let mut pos = tag as usize & mask;
        loop {
            let s = *self.slots.get(pos)?;
            if s == EMPTY {
                return None;
            }
            if s >> 32 == tag {
                let i = (s as u32 - 1) as usize;
                if eq(i) {
                    return Some(i);
                }
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Inserts entry `i` unless an entry for which `eq` holds is there
    /// already (the first occurrence of a key wins). Returns whether it
    /// inserted.
    pub(crate) fn insert_unique(
        &mut self,
        hash: u64,
        i: usize,
        mut eq: impl FnMut(usize) -> bool,
    ) -> bool {
        debug_assert!(i < u32::MAX as usize);
        self.reserve(1);
        let tag = tag_of(hash);
        let mask = self.slots.len() - 1;
        let mut pos = tag as usize & mask;
        loop {
            let s = self.slots[pos];
            if s == EMPTY {
                self.slots[pos] = tag << 32 | (i as u64 + 1);
                self.len += 1;
                return true;
            }
            if s >> 32 == tag && eq((s as u32 - 1) as usize) {
                return false;
            }
            pos = (pos + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_it_holds_through_growth_and_collisions() {
        // Hashes that share their tag force probe runs through full slots.
        let hash = |k: usize| (k as u64 % 7) | (k as u64) << 40;
        let mut index = Index::default();
        assert_eq!(index.find(hash(0), |_| true), None, "empty table");
        for k in 0..1000 {
            assert!(index.insert_unique(hash(k), k, |j| j == k));
            assert!(!index.insert_unique(hash(k), k + 5000, |j| j == k), "dup");
            assert_eq!(index.len(), k + 1);
            assert!(index.slots.len() >= 2 * index.len());
        }
        for k in 0..1000 {
            assert_eq!(index.find(hash(k), |j| j == k), Some(k));
        }
        assert_eq!(index.find(hash(1000), |j| j == 1000), None);
        let slots = index.slots.len();
        index.clear();
        assert_eq!((index.len(), index.slots.len()), (0, slots), "keeps room");
        assert_eq!(index.find(hash(3), |j| j == 3), None);
    }

    #[test]
    fn sizes_stay_within_their_bound() {
        for n in [0, 1, 8, 9, 1024, 1025] {
            let index = Index::with_capacity(n);
            assert!(index.slots.len() * 8 <= Index::bytes_for(n));
            assert!(Index::bytes_for(n) <= (4 * n).max(MIN_SLOTS) * 8);
        }
    }
}

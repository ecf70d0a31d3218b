//! The lookup index of a large parameter table: entry numbers in an
//! open-addressing hash table with linear probing of bounded length, and an
//! ordered fallback for the keys that would probe further.
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
//! Layout: the table has `capacity` home slots, 0 or a power of two of at
//! least [`MIN_SLOTS`], at most half full, and [`MAX_PROBE`] more slots
//! after them into which probe runs extend instead of wrapping around (so
//! a lookup reads one contiguous run of at most [`MAX_PROBE`] slots, with
//! one bounds check). A slot is `tag << 32 | (entry + 1)`, 0 when empty;
//! the tag is the low 32 bits of the key's hash, and also gives the slot's
//! home position, so growing the table moves slots without hashing any key
//! again.
//!
//! # Hash flooding
//!
//! Keys come from the network (a decode builds the index from them), and
//! the hash cannot be trusted to spread them: its seed may leak, and for a
//! multiply-based hash like foldhash whoever knows the seed can make many
//! keys collide in all 64 bits. With unbounded linear probing, n such keys
//! cost O(n²) probes and key comparisons to index and to look up. So no key
//! sits more than [`MAX_PROBE`] − 1 slots past its home slot: a key that
//! would (on insertion, or when growing moves it) goes into the [`Tree`]
//! instead, a red-black tree of entry numbers ordered by key. A lookup
//! probes at most [`MAX_PROBE`] slots, then, only if the tree holds
//! anything, searches it in at most 2·log₂(n+1) key comparisons. Whatever
//! the hashes, indexing n keys and looking each up costs O(n log n)
//! comparisons and O(n) probes (`tests/hash_flood.rs` counts them). Java's
//! `HashMap` turns long bins into trees for the same reason.
//!
//! The bound costs nothing measurable on honest keys: with random hashes a
//! table at most half full rarely has a run longer than 32 slots (filling
//! 1,024 keys into 2,048 slots, a simulation of random hashes puts one key
//! in the tree in about 1 fill in 400, and 1 in 40 at 4,096 keys; key.rs
//! uses foldhash's `quality` variant because `fast` spread short keys far
//! worse under some seeds, docs/security.md); such a key takes the
//! tree and is still found; and the contiguous run saves the mask and the
//! bounds check that each step of a wrapping probe paid. The tree costs no
//! memory until a key needs it, except in a table sized ahead by a hint
//! ([`Index::with_spill_room`]), which keeps room for a few nodes so that
//! a rare spill does not allocate.

#[allow(unused_imports)]
use crate::prelude::*;

use core::cmp::Ordering;

use crate::hooks::{count_comparisons, count_probes};

/// The fewest home slots a table that holds anything has.
const MIN_SLOTS: usize = 16;

/// The most slots a lookup reads: a key is at most this many slots minus
/// one past its home slot.
pub(crate) const MAX_PROBE: usize = 32;

const EMPTY: u64 = 0;

/// How two entries' keys order (`order(a, b)`): the order the tree keeps.
/// It must agree with the equality the caller passes alongside it.
pub(crate) type Order<'o> = &'o dyn Fn(usize, usize) -> Ordering;

#[derive(Clone)]
pub(crate) struct Index {
    /// `capacity` home slots, then [`MAX_PROBE`] overflow slots; empty for
    /// an index that never held anything.
    slots: Vec<u64>,
    /// `capacity - 1`, or `usize::MAX` while there are no slots (every
    /// home position is then past the end).
    mask: usize,
    /// Entries held, in the slots and in the tree.
    len: usize,
    /// [`try_insert_new`](Index::try_insert_new) takes its simple path while `len`
    /// is below this: half the capacity (no growth needed), or 0 once the
    /// tree holds anything. One compare instead of two.
    simple_below: usize,
    /// The most entries the last [`reserve`](Index::reserve) made room for:
    /// when the tree first needs room while an index is built in one go, it
    /// takes room for the rest of them at once (no regrowth, and never more
    /// than they need: what a decode allocates stays bounded, see
    /// [`Index::bytes_for`]).
    planned: usize,
    tree: Tree,
}

impl Default for Index {
    fn default() -> Self {
        Index {
            slots: Vec::new(),
            mask: usize::MAX,
            len: 0,
            simple_below: 0,
            planned: 0,
            tree: Tree::default(),
        }
    }
}

#[inline(always)]
fn tag_of(hash: u64) -> u64 {
    hash & 0xffff_ffff
}

#[inline(always)]
fn entry_of(slot: u64) -> usize {
    (slot as u32 - 1) as usize
}

/// The home slot count that holds `items` at most half full.
fn capacity_for(items: usize) -> usize {
    items
        .saturating_mul(2)
        .max(MIN_SLOTS)
        .checked_next_power_of_two()
        .unwrap_or(usize::MAX)
}

impl Index {
    pub(crate) fn with_capacity(items: usize) -> Index {
        let capacity = capacity_for(items);
        Index {
            slots: vec![EMPTY; capacity + MAX_PROBE],
            mask: capacity - 1,
            simple_below: capacity / 2,
            planned: items,
            ..Index::default()
        }
    }

    /// An index for `items` entries, as [`with_capacity`](Index::with_capacity),
    /// with room for one tree node per 64 entries (and one): a frame sized
    /// ahead by a hint promises that filling it allocates nothing, and with
    /// random hashes a key in a few hundred fills still runs past
    /// [`MAX_PROBE`] into the tree (module docs). At 16 bytes a node that
    /// is under 1 % of the slots' memory. Stays within
    /// [`bytes_for`](Index::bytes_for), which counts a node for every entry.
    pub(crate) fn with_spill_room(items: usize) -> Index {
        let mut index = Index::with_capacity(items);
        index.tree.nodes.reserve_exact(items / 64 + 1);
        index
    }

    /// An upper bound of the bytes building an index for `items` entries
    /// allocates: its slots, and its tree if every entry ended up there
    /// (an index reserved for `items` entries sizes its tree for at most
    /// that many).
    pub(crate) fn bytes_for(items: usize) -> usize {
        capacity_for(items)
            .saturating_add(MAX_PROBE)
            .saturating_mul(core::mem::size_of::<u64>())
            .saturating_add(items.saturating_mul(core::mem::size_of::<Node>()))
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The home slot count (0 for an index that never held anything).
    fn capacity(&self) -> usize {
        self.mask.wrapping_add(1)
    }

    /// Empties the index and keeps its allocations.
    pub(crate) fn clear(&mut self) {
        self.slots.fill(EMPTY);
        self.len = 0;
        self.planned = 0;
        self.tree.clear();
        self.simple_below = self.capacity() / 2;
    }

    /// Makes room for `extra` more entries; `order` orders the entries
    /// held, for any that growing moves into the tree.
    pub(crate) fn reserve(&mut self, extra: usize, order: Order<'_>) {
        let need = self.len.saturating_add(extra);
        self.planned = self.planned.max(need);
        if need.saturating_mul(2) > self.capacity() {
            self.resize(capacity_for(need), order);
        }
    }

    /// Moves every slot into a table of `capacity` home slots. A slot that
    /// would land [`MAX_PROBE`] or more past its home goes into the tree.
    #[cold]
    #[inline(never)]
    fn resize(&mut self, capacity: usize, order: Order<'_>) {
        let old = core::mem::replace(&mut self.slots, vec![EMPTY; capacity + MAX_PROBE]);
        self.mask = capacity - 1;
        self.simple_below = capacity / 2;
        for s in old.into_iter().filter(|&s| s != EMPTY) {
            let home = (s >> 32) as usize & self.mask;
            let run = &mut self.slots[home..home + MAX_PROBE];
            match run.iter().position(|&t| t == EMPTY) {
                Some(k) => {
                    count_probes(k + 1);
                    run[k] = s;
                }
                None => {
                    count_probes(MAX_PROBE);
                    let i = entry_of(s);
                    self.tree_room();
                    // Keys in the index are distinct: this always inserts.
                    self.tree.insert(i, &|j| order(i, j));
                    self.simple_below = 0;
                }
            }
        }
    }

    /// Makes room for one more tree node: while an index is being built
    /// for a known number of entries, room for all that are left.
    fn tree_room(&mut self) {
        let nodes = &mut self.tree.nodes;
        if nodes.len() == nodes.capacity() {
            match self.planned.checked_sub(self.len) {
                Some(left) if left > 0 => nodes.reserve_exact(left),
                _ => nodes.reserve(1),
            }
        }
    }

    /// The first entry with this hash for which `eq` holds. `cmp(j)` says
    /// how the key sought orders against entry `j`'s key (for the tree).
    #[inline]
    pub(crate) fn find(
        &self,
        hash: u64,
        eq: impl Fn(usize) -> bool,
        cmp: impl Fn(usize) -> Ordering,
    ) -> Option<usize> {
        self.probe(hash, eq).or_else(|| self.find_in_tree(&cmp))
    }

    /// [`find`](Index::find) in the slots only: a key that is not there may
    /// still be in the tree, which [`find_in_tree`](Index::find_in_tree)
    /// searches. The lookup of a frame calls the two itself, so that the
    /// tree's comparison is only built on the (cold) way there.
    #[inline(always)]
    pub(crate) fn probe(&self, hash: u64, eq: impl Fn(usize) -> bool) -> Option<usize> {
        let tag = tag_of(hash);
        let home = tag as usize & self.mask;
        // Without slots, `home` is past the end and this fails.
        let run = self.slots.get(home..home + MAX_PROBE)?;
        for &s in run {
            count_probes(1);
            if s == EMPTY {
                return None;
            }
            if s >> 32 == tag {
                let i = entry_of(s);
                count_comparisons(1);
                if eq(i) {
                    return Some(i);
                }
            }
        }
        None
    }

    /// Whether any key is in the tree (then a key [`probe`](Index::probe)
    /// does not find may be there).
    #[inline(always)]
    pub(crate) fn has_tree(&self) -> bool {
        !self.tree.is_empty()
    }

    /// The entry of the tree whose key `cmp` finds equal.
    pub(crate) fn find_in_tree(&self, cmp: &dyn Fn(usize) -> Ordering) -> Option<usize> {
        if self.tree.is_empty() {
            None
        } else {
            self.tree.find(cmp)
        }
    }

    /// Inserts entry `i` unless an entry for which `eq` holds is there
    /// already (the first occurrence of a key wins). Returns whether it
    /// inserted. `order` orders entries by key, consistently with `eq`; it
    /// is only called on the cold paths (growth, the tree).
    #[inline(always)]
    pub(crate) fn insert_unique(
        &mut self,
        hash: u64,
        i: usize,
        eq: impl Fn(usize) -> bool,
        order: impl Fn(usize, usize) -> Ordering,
    ) -> bool {
        debug_assert!(i < u32::MAX as usize);
        if self.len >= self.capacity() / 2 {
            self.grow(&order);
        }
        let tag = tag_of(hash);
        let home = tag as usize & self.mask;
        for slot in &mut self.slots[home..home + MAX_PROBE] {
            count_probes(1);
            let s = *slot;
            if s == EMPTY {
                // Growing may have moved an equal key into the tree and
                // left its run short: look there too.
                if !self.tree.is_empty() && in_tree(&self.tree, i, &order) {
                    return false;
                }
                *slot = tag << 32 | (i as u64 + 1);
                self.len += 1;
                return true;
            }
            if s >> 32 == tag {
                count_comparisons(1);
                if eq(entry_of(s)) {
                    return false;
                }
            }
        }
        self.insert_in_tree(i, &order)
    }

    /// [`insert_unique`](Index::insert_unique) of entry `i` where that is
    /// simple: room without growing, no tree, and an empty slot in the run
    /// before any slot with the same tag (a possible duplicate). `false`
    /// (and nothing changed) otherwise, for the general insert to decide.
    /// The index that pushes keep takes this path for nearly every key; it
    /// calls nothing, so it stays a leaf of few registers.
    #[inline(always)]
    pub(crate) fn try_insert_new(&mut self, hash: u64, i: usize) -> bool {
        if self.len >= self.simple_below {
            return false;
        }
        let tag = tag_of(hash);
        let home = tag as usize & self.mask;
        let Some(run) = self.slots.get_mut(home..home + MAX_PROBE) else {
            return false;
        };
        for slot in run {
            count_probes(1);
            let s = *slot;
            if s == EMPTY {
                *slot = tag << 32 | (i as u64 + 1);
                self.len += 1;
                return true;
            }
            if s >> 32 == tag {
                return false;
            }
        }
        false
    }

    /// Room for one more entry.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, order: Order<'_>) {
        self.reserve(1, order);
    }

    /// A key whose probe run is full: it goes into the tree.
    #[cold]
    #[inline(never)]
    fn insert_in_tree(&mut self, i: usize, order: Order<'_>) -> bool {
        self.tree_room();
        let inserted = self.tree.insert(i, &|j| order(i, j));
        self.len += usize::from(inserted);
        self.simple_below = 0;
        inserted
    }

    /// Entries held by the tree (for tests).
    #[cfg(test)]
    pub(crate) fn tree_len(&self) -> usize {
        self.tree.nodes.len()
    }
}

/// Whether `tree` holds a key equal to entry `i`'s.
#[cold]
#[inline(never)]
fn in_tree(tree: &Tree, i: usize, order: Order<'_>) -> bool {
    tree.find(&|j| order(i, j)).is_some()
}

const NIL: u32 = u32::MAX;

/// A node of the tree: an entry number and its children (node numbers, or
/// [`NIL`]).
#[derive(Clone, Copy)]
struct Node {
    entry: u32,
    left: u32,
    right: u32,
    red: bool,
}

/// The ordered fallback: a left-leaning red-black tree (Sedgewick's 2-3
/// variant, insertion only) of entry numbers ordered by key, in one vector
/// of nodes. Its height is at most 2·log₂(n+1), whatever order the keys
/// arrive in, so a search makes at most that many key comparisons.
#[derive(Clone)]
struct Tree {
    nodes: Vec<Node>,
    root: u32,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            root: NIL,
        }
    }
}

impl Tree {
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.root == NIL
    }

    fn clear(&mut self) {
        self.nodes.clear();
        self.root = NIL;
    }

    /// The entry whose key `cmp` finds equal; `cmp(j)` orders the key
    /// sought against entry `j`'s.
    #[cold]
    #[inline(never)]
    fn find(&self, cmp: &dyn Fn(usize) -> Ordering) -> Option<usize> {
        let mut h = self.root;
        while h != NIL {
            let node = self.nodes[h as usize];
            count_comparisons(1);
            match cmp(node.entry as usize) {
                Ordering::Less => h = node.left,
                Ordering::Greater => h = node.right,
                Ordering::Equal => return Some(node.entry as usize),
            }
        }
        None
    }

    /// Inserts `entry` unless a key equal to its is there; `cmp(j)` orders
    /// `entry`'s key against entry `j`'s. Returns whether it inserted.
    fn insert(&mut self, entry: usize, cmp: &dyn Fn(usize) -> Ordering) -> bool {
        match self.put(self.root, entry as u32, cmp) {
            Some(root) => {
                self.root = root;
                self.nodes[root as usize].red = false;
                true
            }
            None => false,
        }
    }

    fn red(&self, h: u32) -> bool {
        h != NIL && self.nodes[h as usize].red
    }

    /// Inserts into the subtree at `h` and returns its new root, or `None`
    /// (and changes nothing) if the key is there. Recursion depth is the
    /// tree's height: at most 2·log₂(n+1), 64 for 2³² entries.
    fn put(&mut self, h: u32, entry: u32, cmp: &dyn Fn(usize) -> Ordering) -> Option<u32> {
        if h == NIL {
            let id = self.nodes.len() as u32;
            self.nodes.push(Node {
                entry,
                left: NIL,
                right: NIL,
                red: true,
            });
            return Some(id);
        }
        let node = self.nodes[h as usize];
        count_comparisons(1);
        match cmp(node.entry as usize) {
            Ordering::Less => {
                let left = self.put(node.left, entry, cmp)?;
                self.nodes[h as usize].left = left;
            }
            Ordering::Greater => {
                let right = self.put(node.right, entry, cmp)?;
                self.nodes[h as usize].right = right;
            }
            Ordering::Equal => return None,
        }
        let mut h = h;
        let n = self.nodes[h as usize];
        if self.red(n.right) && !self.red(n.left) {
            h = self.rotate_left(h);
        }
        let n = self.nodes[h as usize];
        if self.red(n.left) && self.red(self.nodes[n.left as usize].left) {
            h = self.rotate_right(h);
        }
        let n = self.nodes[h as usize];
        if self.red(n.left) && self.red(n.right) {
            self.nodes[h as usize].red = true;
            self.nodes[n.left as usize].red = false;
            self.nodes[n.right as usize].red = false;
        }
        Some(h)
    }

    fn rotate_left(&mut self, h: u32) -> u32 {
        let x = self.nodes[h as usize].right;
        self.nodes[h as usize].right = self.nodes[x as usize].left;
        self.nodes[x as usize].left = h;
        self.nodes[x as usize].red = self.nodes[h as usize].red;
        self.nodes[h as usize].red = true;
        x
    }

    fn rotate_right(&mut self, h: u32) -> u32 {
        let x = self.nodes[h as usize].left;
        self.nodes[h as usize].left = self.nodes[x as usize].right;
        self.nodes[x as usize].right = h;
        self.nodes[x as usize].red = self.nodes[h as usize].red;
        self.nodes[h as usize].red = true;
        x
    }

    /// The tree's height (for tests).
    #[cfg(test)]
    fn height(&self, h: u32) -> usize {
        if h == NIL {
            0
        } else {
            let n = self.nodes[h as usize];
            1 + self.height(n.left).max(self.height(n.right))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_number(a: usize, b: usize) -> Ordering {
        (a / 2).cmp(&(b / 2))
    }

    #[test]
    fn finds_what_it_holds_through_growth_and_collisions() {
        // Hashes that share their tag force probe runs through full slots.
        let hash = |k: usize| (k as u64 % 7) | (k as u64) << 40;
        let order = |a: usize, b: usize| a.cmp(&b);
        let mut index = Index::default();
        assert_eq!(index.find(hash(0), |_| true, |_| Ordering::Equal), None);
        for k in 0..1000 {
            assert!(index.insert_unique(hash(k), k, |j| j == k, order));
            assert!(
                !index.insert_unique(
                    hash(k),
                    k + 5000,
                    |j| j == k,
                    |a, b| {
                        // Entry k + 5000 has entry k's key.
                        let key = |e: usize| if e >= 5000 { e - 5000 } else { e };
                        key(a).cmp(&key(b))
                    }
                ),
                "dup"
            );
            assert_eq!(index.len(), k + 1);
            assert!(index.capacity() >= 2 * index.len());
        }
        assert!(index.tree_len() > 0, "seven homes for 1,000 keys overflow");
        for k in 0..1000 {
            assert_eq!(index.find(hash(k), |j| j == k, |j| k.cmp(&j)), Some(k));
        }
        assert_eq!(
            index.find(hash(1000), |j| j == 1000, |j| 1000.cmp(&j)),
            None
        );
        let slots = index.slots.len();
        index.clear();
        assert_eq!((index.len(), index.slots.len()), (0, slots), "keeps room");
        assert!(!index.has_tree());
        assert_eq!(index.find(hash(3), |j| j == 3, |j| 3.cmp(&j)), None);
    }

    #[test]
    fn probe_runs_stay_bounded_and_the_tree_balanced_when_every_hash_collides() {
        // Entries 2k and 2k+1 share a key; every hash is the same. Under
        // Miri (.ci/miri.sh) a smaller tree: the same paths (a full run of
        // 32, then 68 keys in the tree, grown and re-formed), in seconds
        // instead of most of an hour.
        let n = if cfg!(miri) { 200 } else { 20_000 };
        let mut index = Index::default();
        for i in 0..n {
            let inserted = index.insert_unique(7, i, |j| j / 2 == i / 2, by_number);
            assert_eq!(inserted, i % 2 == 0, "entry {i}");
        }
        assert_eq!(index.len(), n / 2);
        assert_eq!(index.tree_len(), n / 2 - MAX_PROBE);
        let bound = 2.0 * ((index.tree_len() + 1) as f64).log2();
        let height = index.tree.height(index.tree.root);
        assert!(height as f64 <= bound, "height {height} > {bound}");
        for i in 0..n {
            let first = i / 2 * 2;
            let found = index.find(7, |j| j / 2 == i / 2, |j| by_number(i, j));
            assert_eq!(found, Some(first), "entry {i}");
        }
        assert_eq!(index.find(7, |_| false, |j| by_number(n, j)), None);
        // Growing keeps every key findable (runs re-formed, some into the
        // tree).
        index.reserve(10 * n, &by_number);
        for i in (0..n).step_by(2) {
            assert_eq!(
                index.find(7, |j| j / 2 == i / 2, |j| by_number(i, j)),
                Some(i)
            );
        }
    }

    #[test]
    fn a_key_in_the_tree_is_a_duplicate_even_where_growth_shortened_its_run() {
        // 40 keys with one home in a 128-slot table: 32 in the run, 8 in
        // the tree. Grown to 512 slots, their tags (multiples of 128) give
        // 4 homes: the runs are short, but the tree's keys stay there, and
        // inserting one of them again must still be refused.
        let tag = |i: usize| (i as u64) << 7;
        let order = |a: usize, b: usize| a.cmp(&b);
        let mut index = Index::default();
        for i in 0..40 {
            assert!(index.insert_unique(tag(i), i, |j| j == i, order));
        }
        assert_eq!((index.capacity(), index.tree_len()), (128, 8));
        index.reserve(100, &order);
        assert_eq!((index.capacity(), index.tree_len()), (512, 8));
        for i in 0..40 {
            let again = index.insert_unique(tag(i), i, |j| j == i, order);
            assert!(!again, "entry {i} inserted twice");
            assert_eq!(index.find(tag(i), |j| j == i, |j| i.cmp(&j)), Some(i));
        }
        assert_eq!(index.len(), 40);
    }

    #[test]
    fn sizes_stay_within_their_bound() {
        for n in [0, 1, 8, 9, 1024, 1025] {
            let index = Index::with_capacity(n);
            assert!(index.slots.len() * 8 <= Index::bytes_for(n));
            let most = ((4 * n).max(MIN_SLOTS) + MAX_PROBE) * 8 + 16 * n;
            assert!(Index::bytes_for(n) <= most);
        }
        assert_eq!(core::mem::size_of::<Node>(), 16);
    }
}

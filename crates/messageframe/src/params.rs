//! Parameter storage: one entry vector in insertion order, one text arena, and
//! a hash index over the entries once there are more than a few.
//!
//! Why this shape (see docs/architecture.md):
//! - keys and string values are appended to one `String` arena, so filling a
//!   reused frame allocates nothing: no `String` per key or per value;
//! - entries never move between containers: the index holds entry numbers,
//!   and insertion order is the entry order at every size, so equal frames
//!   encode to equal bytes;
//! - up to [`LINEAR_MAX`] entries a lookup is a linear scan (cheaper than
//!   hashing); past that an index ([`Index`]) makes it O(1).

#[allow(unused_imports)]
use crate::prelude::*;

use core::cmp;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arena::{RawText, TextArena};
use crate::hooks::count_comparisons;
use crate::index::Index;
use crate::inline::InlineVec;
use crate::key::{bytes_eq, find_separator, hash_parts, ComposedKey};
use crate::sync::{Once, Spare};
use crate::value::{UnknownValue, ValueRef};

/// Up to this many entries, lookups scan; past it, the index is kept.
pub(crate) const LINEAR_MAX: usize = 8;

/// A table being filled by `add` (or `set`, or a view's `to_frame`) that
/// grows past this many entries starts its index then and keeps it up to
/// date while it is filled (in blocks of [`PUSH_BLOCK`]), so that its first
/// lookup costs about what any lookup costs (issue 14: at 1,024 parameters
/// it was a full scan, 0.6 µs, against the C++ library's 0.07 µs, whose map
/// is built while adding), unless the table learnt that lookups are
/// unlikely (see [`Table`]). Below it a first lookup scans at most this
/// many entries (about 50 ns), and adding hashes nothing: frames of up to
/// 64 parameters add as fast as before.
pub(crate) const INDEX_ON_PUSH: usize = 64;

/// [`Table::index_from`] of a table whose pushes do not index.
const NEVER: usize = usize::MAX;

/// A table whose pushes index does so in blocks of this many pushes, in a
/// loop out of line, rather than at every push: a call per push put the
/// call, and the reload of what it may have changed, into every `add`'s
/// dependency chain (twice the time of filling a 1,024-parameter frame,
/// measured; a block of 8 is an eighth of that). A lookup that takes the
/// index over first adds the at most 7 entries still pending.
const PUSH_BLOCK: usize = 8;

/// Average text bytes per parameter assumed by a sizing hint that gives only
/// a parameter count (key plus string value).
pub(crate) const TEXT_BYTES_PER_PARAM: usize = 32;

/// Entries a frame holds in place before its entry vector allocates: with
/// the text arena's inline bytes ([`crate::arena::INLINE_TEXT`]), a new
/// frame of up to this many short parameters allocates nothing.
pub(crate) const INLINE_ENTRIES: usize = 4;

/// The entry vector.
type Entries = InlineVec<Entry, INLINE_ENTRIES>;

/// `dev_len` value for a key that has no separator (device `""`, the whole
/// key is the parameter).
const NO_SEP: u32 = u32::MAX;

/// The bits of an `i64` or `f64` at 4-byte alignment: an 8-aligned field
/// would align the whole entry to 8 and make it 32 bytes instead of 24
/// (a quarter more memory to fill, move and read per parameter).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(4))]
pub(crate) struct Bits([u8; 8]);

impl Bits {
    #[inline(always)]
    pub(crate) fn of_i64(v: i64) -> Bits {
        Bits(v.to_ne_bytes())
    }

    #[inline(always)]
    pub(crate) fn of_f64(v: f64) -> Bits {
        Bits(v.to_ne_bytes())
    }

    #[inline(always)]
    pub(crate) fn i64(self) -> i64 {
        i64::from_ne_bytes(self.0)
    }

    #[inline(always)]
    pub(crate) fn f64(self) -> f64 {
        f64::from_ne_bytes(self.0)
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    Int(Bits),
    Double(Bits),
    Bool(bool),
    /// A string value in the text arena.
    Str {
        start: u32,
        len: u32,
    },
    /// An unknown tag: `raw[start..start + len]` is the tag in its shortest
    /// MessagePack form, then the value's MessagePack bytes: exactly what
    /// follows the pair's `0x92` on the wire.
    Unknown {
        start: u32,
        len: u32,
    },
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    key_start: u32,
    key_len: u32,
    /// Byte length of the device part, or [`NO_SEP`].
    dev_len: u32,
    pub(crate) slot: Slot,
}

impl Default for Entry {
    /// The filler of an entry vector's unused inline slots, never read:
    /// all zeros, so that a new frame's inline entries are a memset.
    fn default() -> Self {
        Entry {
            key_start: 0,
            key_len: 0,
            dev_len: 0,
            slot: Slot::Int(Bits::of_i64(0)),
        }
    }
}

#[derive(Clone, Default)]
pub(crate) struct Params {
    table: Table,
    text: TextArena,
    raw: Vec<u8>,
    /// Arena bytes no entry refers to any more (overwritten values).
    garbage: usize,
}

/// Entries and their index. Its methods take the text arena as bytes, so
/// that the decoder can fill a byte arena and validate it as UTF-8 once at
/// the end (see `decode`), and so that key comparisons never pay for `str`
/// char-boundary checks.
///
/// Once in use, the index is kept up to date by every push. It comes from:
/// - pushes ([`index_from`](Table::index_from)): a table filled past
///   [`INDEX_ON_PUSH`] entries indexes its keys as they are pushed, in
///   blocks of [`PUSH_BLOCK`], into the spare slot, and its first lookup
///   takes that index over (a lock, a move, and at most 7 pending keys)
///   instead of scanning. This costs every push past the threshold a hash
///   and an insert (filling 1,024 parameters took about 60 % longer), which
///   pays off from about five lookups on: so a reused table learns, at each
///   `clear`, whether its last message was looked up at all, and indexes
///   on push in the next one only if it was (a new table does). A sender's
///   reused frame, never looked up, pays nothing after its first message;
/// - lookups, in a table whose pushes did not index. Up to [`LINEAR_MAX`]
///   entries lookups always scan. Past that, lookups scan until the entries
///   they have scanned add up to [`SCAN_BUDGET`] times the entry count (a
///   handful of lookups, cheaper than building an index that would serve
///   only them), then the next lookup builds the index and every lookup
///   after it is O(1). This is the ski-rental rule: total lookup work is at
///   most about twice what the best choice in hindsight would have cost,
///   and lookups are O(1) amortized.
///
/// A decode never indexes on push ([`push_decoded`](Table::push_decoded)):
/// a decoded frame is often read once or not at all (a relay, a logger),
/// and hashing every key would slow every decode (docs/performance.md); its
/// first lookups scan under the rule above.
/// `Once` (`OnceLock` with `std`, src/sync.rs) makes the build safe
/// through `&self` and keeps `Frame: Sync`.
pub(crate) struct Table {
    entries: Entries,
    /// Pushes of entries numbered below this leave the index alone, so that
    /// one load and one compare decide in the inlined push:
    /// - 0: the index is in use (`index` is set), every push updates it;
    /// - otherwise, while pushes index: the next push that indexes the
    ///   entries pushed since the last one into `spare` (up to `covered`),
    ///   first at [`INDEX_ON_PUSH`], then every [`PUSH_BLOCK`] pushes, until
    ///   a lookup takes the index over;
    /// - [`NEVER`]: pushes do not index (a decoded table, or a reused one
    ///   whose last message had no lookup).
    ///
    /// Relaxed: it changes with the index, which a lookup may install
    /// through `&self`, but never while a push (`&mut self`) runs.
    index_from: AtomicUsize,
    /// While pushes index and no index is in use: the entries `spare`'s
    /// index holds, `0..covered` (0: `spare` holds no index).
    covered: usize,
    /// The index and its spare, boxed on first need: a table of up to
    /// [`LINEAR_MAX`] entries never has one, and in place the two took 192
    /// of a frame's 616 bytes, which every move of a new or decoded frame
    /// copies (a fresh 4-parameter round trip moves one 4 times).
    lookup: Once<Box<Lookup>>,
    /// Entries scanned by lookups since the table was last cleared, while
    /// no index is built. Relaxed: it only steers when the index is built.
    scanned: AtomicUsize,
}

/// The index of a [`Table`] and its spare.
#[derive(Default)]
struct Lookup {
    index: Once<Index>,
    /// The index while it is not in use: its allocation after `clear`, so
    /// that the next build reuses it, or the index pushes are keeping (see
    /// `index_from`). Locked only by a lookup that installs it.
    spare: Spare<Index>,
}

/// The table's [`Lookup`], boxed now if it was not yet.
fn lookup_mut(cell: &mut Once<Box<Lookup>>) -> &mut Lookup {
    if cell.get().is_none() {
        let _ = cell.set(Box::default());
    }
    match cell.get_mut() {
        Some(l) => l,
        None => unreachable!("set above"),
    }
}

/// How many full scans lookups may do before the index is built: building
/// costs about as much as this many scans (hashing and inserting an entry
/// against comparing its key's length, and rarely its bytes).
pub(crate) const SCAN_BUDGET: usize = 4;

impl Default for Table {
    #[inline]
    fn default() -> Self {
        Table {
            entries: Entries::default(),
            index_from: AtomicUsize::new(INDEX_ON_PUSH),
            covered: 0,
            lookup: Once::new(),
            scanned: AtomicUsize::new(0),
        }
    }
}

impl Clone for Table {
    fn clone(&self) -> Self {
        let pushed = self.pushed_index();
        let lookup = match self.lookup.get() {
            Some(l) => {
                let spare = if pushed {
                    l.spare.lock().clone()
                } else {
                    Index::default()
                };
                Once::from(Box::new(Lookup {
                    index: l.index.clone(),
                    spare: Spare::new(spare),
                }))
            }
            None => Once::new(),
        };
        Table {
            entries: self.entries.clone(),
            index_from: AtomicUsize::new(self.index_from.load(Ordering::Relaxed)),
            covered: if pushed { self.covered } else { 0 },
            lookup,
            scanned: AtomicUsize::new(self.scanned.load(Ordering::Relaxed)),
        }
    }
}

/// The capacity a buffer of capacity `cap` holding `len` items grows to when
/// `add` more must fit: unchanged if they fit, else the larger of twice the
/// capacity and what is needed. This is `Vec`'s amortized growth, made
/// explicit so that the decoder can charge an allocation before making it
/// (it then reserves exactly this capacity).
#[inline]
pub(crate) fn grown_capacity(cap: usize, len: usize, add: usize) -> usize {
    let need = len.saturating_add(add);
    if need <= cap {
        cap
    } else {
        need.max(cap.saturating_mul(2))
    }
}

/// An arena offset or length as the `u32` entries store. The arenas stay
/// below 4 GiB: a decode checks their room against it when they grow
/// (`ErrorKind::CapacityExceeded` past it, see `decode::sink`); the text
/// arena's buffer never grows past it ([`crate::inline::MAX_ITEMS`]), and
/// `add`/`set` of an unknown value check the raw arena
/// ([`Params::check_raw`]).
#[inline(always)]
pub(crate) fn to_u32(n: usize) -> u32 {
    debug_assert!(u32::try_from(n).is_ok());
    n as u32
}

#[inline]
fn key_of<'t>(text: &'t [u8], e: &Entry) -> &'t [u8] {
    let start = e.key_start as usize;
    &text[start..start + e.key_len as usize]
}

/// `(device, param)` bytes of an entry.
#[inline]
fn parts_of<'t>(text: &'t [u8], e: &Entry) -> (&'t [u8], &'t [u8]) {
    let key = key_of(text, e);
    if e.dev_len == NO_SEP {
        (&[], key)
    } else {
        let sep = e.dev_len as usize;
        (&key[..sep], &key[sep + 1..])
    }
}

/// An entry's key hash, [`hash_parts`] of its parts. A key with its
/// separator is stored joined, as [`ComposedKey`] hashes it: short ones are
/// hashed from two loads of the stored bytes.
#[inline(always)]
fn hash_of(text: &[u8], e: &Entry) -> u64 {
    if e.dev_len != NO_SEP {
        if let Some(k) = ComposedKey::from_joined(key_of(text, e)) {
            return k.hash();
        }
    }
    hash_of_parts(text, e)
}

#[inline(never)]
fn hash_of_parts(text: &[u8], e: &Entry) -> u64 {
    let (d, p) = parts_of(text, e);
    hash_parts(d, p)
}

/// Whether entry `e` has the composed key `q` with a `dl`-byte device. An
/// entry without separator (`dev_len == NO_SEP`) never matches, as it should
/// not: its device is empty, and a composed key's is not.
#[inline(always)]
fn has_composed(text: &[u8], e: &Entry, q: ComposedKey, dl: usize) -> bool {
    e.key_len as usize == q.len() && e.dev_len as usize == dl && q.eq_same_len(key_of(text, e))
}

/// Whether entry `e` has the key `(device, param)`.
#[inline(always)]
fn has_key(text: &[u8], e: &Entry, device: &[u8], param: &[u8]) -> bool {
    if e.dev_len == NO_SEP {
        return device.is_empty() && bytes_eq(key_of(text, e), param);
    }
    let dl = e.dev_len as usize;
    if dl != device.len() || e.key_len as usize != dl + 1 + param.len() {
        return false;
    }
    let key = key_of(text, e);
    bytes_eq(&key[..dl], device) && bytes_eq(&key[dl + 1..], param)
}

/// How two entries' keys order: by device, then by parameter (so that a key
/// without separator and the same key with an empty device, both
/// `("", x)`, are equal, as [`same_key`] says). The index's ordered
/// fallback keeps this order.
fn order_entries(text: &[u8], a: &Entry, b: &Entry) -> cmp::Ordering {
    parts_of(text, a).cmp(&parts_of(text, b))
}

#[inline]
fn same_key(text: &[u8], a: &Entry, b: &Entry) -> bool {
    if a.dev_len == b.dev_len {
        bytes_eq(key_of(text, a), key_of(text, b))
    } else {
        // Only a key without separator and one with an empty device can
        // still be equal: ("", "x") either way.
        let (d, p) = parts_of(text, b);
        (a.dev_len == NO_SEP || b.dev_len == NO_SEP) && has_key(text, a, d, p)
    }
}

/// Indexes entries `range` into `index`, in order (first occurrence wins):
/// the usual key through the simple insert, any other through the general
/// one.
fn index_range(index: &mut Index, entries: &[Entry], text: &[u8], range: core::ops::Range<usize>) {
    for i in range {
        let h = hash_of(text, &entries[i]);
        if !index.try_insert_new(h, i) {
            index_insert(index, entries, text, i, h);
        }
    }
}

/// Inserts entry `i` into `index` unless an equal key is there already
/// (first occurrence wins). Returns whether it was inserted.
#[inline]
fn index_insert(index: &mut Index, entries: &[Entry], text: &[u8], i: usize, hash: u64) -> bool {
    let new = &entries[i];
    index.insert_unique(
        hash,
        i,
        |j| same_key(text, &entries[j], new),
        |a, b| order_entries(text, &entries[a], &entries[b]),
    )
}

/// The rest of a lookup whose key the index's slots do not hold, when its
/// tree holds keys (src/index.rs): out of line, so that the comparison it
/// needs is only built here.
#[cold]
#[inline(never)]
fn find_in_tree(
    index: &Index,
    entries: &[Entry],
    order: impl Fn(&Entry) -> cmp::Ordering,
) -> Option<usize> {
    index.find_in_tree(&|j| order(&entries[j]))
}

/// [`Params::retain`]'s call of the caller's predicate on entry `e`, with
/// the arenas borrowed apart from the entry vector being filtered.
fn keep_entry(
    text: &str,
    raw: &[u8],
    e: &Entry,
    keep: &mut impl FnMut(&str, &str, ValueRef<'_>) -> bool,
) -> bool {
    let start = e.key_start as usize;
    let key = &text[start..start + e.key_len as usize];
    let (d, p) = if e.dev_len == NO_SEP {
        ("", key)
    } else {
        let sep = e.dev_len as usize;
        (&key[..sep], &key[sep + 1..])
    };
    let value = match e.slot {
        Slot::Int(v) => ValueRef::Int(v.i64()),
        Slot::Double(v) => ValueRef::Double(v.f64()),
        Slot::Bool(v) => ValueRef::Bool(v),
        Slot::Str { start, len } => {
            let start = start as usize;
            ValueRef::String(&text[start..start + len as usize])
        }
        Slot::Unknown { start, len } => {
            let start = start as usize;
            let bytes = &raw[start..start + len as usize];
            let (tag, n) = crate::wire::read::leading_int(bytes).unwrap_or((0, 0));
            ValueRef::Unknown(UnknownValue::from_wire(tag, &bytes[n..]))
        }
    };
    keep(d, p, value)
}

impl Table {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    fn clear(&mut self) {
        // An index exists only past LINEAR_MAX entries: one compare for
        // small tables.
        let len = self.entries.len();
        if len > LINEAR_MAX && (len > INDEX_ON_PUSH || self.built().is_some()) {
            self.learn_and_release();
        }
        self.entries.clear();
        *self.scanned.get_mut() = 0;
    }

    /// For [`clear`](Table::clear) of a table with an index in use or large
    /// enough for pushes to index: empties the index, keeping its
    /// allocation in `spare` for the next build, and sets the next
    /// message's mode from whether this one was looked up (an index in
    /// use, or, in a large table, scans). A small table without an index
    /// teaches nothing and keeps its mode.
    #[inline(never)]
    fn learn_and_release(&mut self) {
        let large = self.entries.len() > INDEX_ON_PUSH;
        let looked_up = self.built().is_some() || (large && *self.scanned.get_mut() > 0);
        let pushed = self.pushed_index();
        self.covered = 0;
        self.release_index(pushed);
        let from = self.index_from.get_mut();
        if looked_up {
            *from = INDEX_ON_PUSH;
        } else if large {
            *from = NEVER;
        }
    }

    /// After entries were removed, which renumbers those after them: drops
    /// every index entry (the allocation is kept in `spare`), as `clear`
    /// does, so that the next lookup rebuilds from the entries as they are
    /// now. A table whose index was in use, or whose pushes were indexing,
    /// indexes on push again from [`INDEX_ON_PUSH`] entries (the next push
    /// past it indexes all entries from the first); the lookups' scan
    /// budget starts afresh.
    fn forget_index(&mut self) {
        self.release_index(self.covered > 0);
        self.covered = 0;
        let from = self.index_from.get_mut();
        if *from != NEVER {
            *from = INDEX_ON_PUSH;
        }
        *self.scanned.get_mut() = 0;
    }

    /// Empties the index in use into `spare`, keeping its allocation, or,
    /// if `pushed`, the index pushes were keeping there.
    fn release_index(&mut self, pushed: bool) {
        let Some(l) = self.lookup.get_mut() else {
            return;
        };
        if let Some(mut index) = l.index.take() {
            index.clear();
            *l.spare.get_mut() = index;
        } else if pushed {
            l.spare.get_mut().clear();
        }
    }

    /// The index in use, if any.
    #[inline]
    fn built(&self) -> Option<&Index> {
        self.lookup.get().and_then(|l| l.index.get())
    }

    /// Whether `spare` holds the index pushes keep (of entries
    /// `0..covered`; the rest of them are pending).
    #[inline]
    fn pushed_index(&self) -> bool {
        self.covered > 0 && self.built().is_none()
    }

    /// Starts a decode: the table is cleared and its pushes do not index.
    pub(crate) fn begin_decode(&mut self) {
        self.clear();
        self.covered = 0;
        *self.index_from.get_mut() = NEVER;
    }

    pub(crate) fn reserve(&mut self, text: &[u8], params: usize) {
        self.entries.reserve(params);
        let total = self.entries.len() + params;
        if total > LINEAR_MAX {
            let entries = &self.entries;
            let l = lookup_mut(&mut self.lookup);
            let index = match l.index.get_mut() {
                Some(index) => index,
                None => l.spare.get_mut(),
            };
            index.reserve(total.saturating_sub(index.len()), &|a, b| {
                order_entries(text, &entries[a], &entries[b])
            });
        }
    }

    /// Makes room for `count` more entries the way a decode does: `charge` is
    /// first told how many bytes that allocates, and may refuse. (The index
    /// is not built by a decode; lookups build it, see the type's doc.)
    ///
    /// The decoder knows the exact count, so the table grows to exactly what
    /// it needs, not to double its capacity: what a decode allocates stays
    /// proportional to its input (docs/security.md).
    pub(crate) fn reserve_entries_charged<E>(
        &mut self,
        count: usize,
        charge: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let len = self.entries.len();
        let old_cap = self.entries.capacity();
        let cap = old_cap.max(len.saturating_add(count));
        if cap > old_cap {
            // Saturating: on a 32-bit target the product can pass
            // `usize::MAX`, and the budget must then refuse, not wrap.
            charge(cap.saturating_mul(core::mem::size_of::<Entry>()))?;
            self.entries.reserve_exact(cap - len);
        }
        Ok(())
    }

    /// Appends an entry during a decode, which starts from a cleared table
    /// (there is no index to update) and reserved the entries for the count
    /// the input declares ([`reserve_entries_charged`], which the walk never
    /// exceeds).
    ///
    /// [`reserve_entries_charged`]: Table::reserve_entries_charged
    #[inline(always)]
    pub(crate) fn push_decoded(&mut self, entry: Entry) {
        debug_assert!(self.built().is_none());
        self.entries.push_reserved(entry);
    }

    /// Appends an entry whose key and payload are already in `text`. Keeps
    /// the index in use up to date, or, in a table whose pushes index,
    /// indexes the pushes since the last block when this one completes a
    /// block (`hash`, when given, saves hashing the key). Returns `false`
    /// if the index, updated by this push, shows that the key was already
    /// present (lookups keep finding the first occurrence).
    #[inline(always)]
    pub(crate) fn push(&mut self, text: &TextArena, entry: Entry, hash: Option<u64>) -> bool {
        let i = self.entries.len();
        self.entries.push(entry);
        if i < LINEAR_MAX || i < *self.index_from.get_mut() {
            // Nothing to do for the index: no index exists below LINEAR_MAX
            // entries (so small tables decide with one compare), pushes do
            // not index, or the next block is not complete.
            return true;
        }
        // Out of line: inlined, this made the `add` loop of every frame
        // slower (register pressure), not only of the frames it serves.
        self.push_indexed(text.as_bytes(), i, hash)
    }

    /// The index's part of the push of entry `i`: into the index in use, or
    /// the block of pushes it completes into `spare`.
    #[inline(never)]
    fn push_indexed(&mut self, text: &[u8], i: usize, hash: Option<u64>) -> bool {
        let entries = &self.entries;
        let Some(index) = self.lookup.get_mut().and_then(|l| l.index.get_mut()) else {
            self.index_block(text, i + 1);
            *self.index_from.get_mut() = i + PUSH_BLOCK;
            return true;
        };
        // The key is hashed from the bytes just stored.
        let h = hash.unwrap_or_else(|| hash_of(text, &entries[i]));
        if index.try_insert_new(h, i) {
            return true;
        }
        index_insert(index, entries, text, i, h)
    }

    /// Indexes entries `covered..end` into `spare` (the first block of a
    /// table whose pushes index: from entry 0, into an index sized for the
    /// entries present).
    fn index_block(&mut self, text: &[u8], end: usize) {
        let entries = &self.entries;
        let index = lookup_mut(&mut self.lookup).spare.get_mut();
        if self.covered == 0 {
            index.reserve(entries.len(), &|a, b| {
                order_entries(text, &entries[a], &entries[b])
            });
        }
        index_range(index, entries, text, self.covered..end);
        self.covered = end;
    }

    /// The index, put in use on first need: the one pushes kept (with the
    /// entries pushed since its last block), or one built now from every
    /// entry. From then on every push updates it. Sized for the entries
    /// present, not the table's capacity: a decode into a frame grown by an
    /// earlier, larger message must not allocate for that message (see
    /// docs/security.md). Duplicates are left out (first occurrence wins).
    #[inline]
    fn index(&self, text: &[u8]) -> &Index {
        let l = self.lookup.get_or_init(Box::default);
        l.index.get_or_init(|| {
            let from = if self.pushed_index() { self.covered } else { 0 };
            let entries = &self.entries;
            let mut index = core::mem::take(&mut *l.spare.lock());
            if from == 0 {
                index.reserve(entries.len(), &|a, b| {
                    order_entries(text, &entries[a], &entries[b])
                });
            }
            index_range(&mut index, entries, text, from..entries.len());
            self.index_from.store(0, Ordering::Relaxed);
            index
        })
    }

    /// Position of the first entry with this key. A key of at most 16 bytes
    /// with a device (a [`ComposedKey`], the usual key) is joined once and
    /// compared whole, inline in the caller; every other key is compared
    /// part by part in an out-of-line copy of the same lookup.
    #[inline]
    pub(crate) fn position(
        &self,
        text: &[u8],
        device: &[u8],
        param: &[u8],
        hash: Option<u64>,
    ) -> Option<usize> {
        match ComposedKey::new(device, param) {
            Some(q) if !device.is_empty() => {
                let dl = device.len();
                self.position_by(
                    text,
                    move |e| has_composed(text, e, q, dl),
                    move |e| {
                        let key = q.to_bytes();
                        (&key[..dl], &key[dl + 1..q.len()]).cmp(&parts_of(text, e))
                    },
                    move || q.hash(),
                    hash,
                )
            }
            _ => self.position_by_parts(text, device, param, hash),
        }
    }

    #[inline(never)]
    fn position_by_parts(
        &self,
        text: &[u8],
        device: &[u8],
        param: &[u8],
        hash: Option<u64>,
    ) -> Option<usize> {
        self.position_by(
            text,
            |e| has_key(text, e, device, param),
            |e| (device, param).cmp(&parts_of(text, e)),
            || hash_parts(device, param),
            hash,
        )
    }

    /// The lookup: a scan of a small table, or of a larger one while the
    /// scan budget lasts, else a probe of the index (built on first need).
    /// `key_hash` is called only when the caller gave no `hash`; `order`
    /// orders the key sought against an entry's (for the index's ordered
    /// fallback, see src/index.rs).
    #[inline(always)]
    fn position_by(
        &self,
        text: &[u8],
        matches: impl Fn(&Entry) -> bool,
        order: impl Fn(&Entry) -> cmp::Ordering,
        key_hash: impl FnOnce() -> u64,
        hash: Option<u64>,
    ) -> Option<usize> {
        if self.entries.len() <= LINEAR_MAX {
            return self.scan(&matches);
        }
        let index = match self.built() {
            Some(index) => index,
            None if self.spend_scan_budget() => return self.scan(&matches),
            None => self.index(text),
        };
        let entries = &self.entries;
        let found = index.probe(hash.unwrap_or_else(key_hash), |j| matches(&entries[j]));
        if found.is_some() || !index.has_tree() {
            return found;
        }
        find_in_tree(index, entries, order)
    }

    /// The first entry that `matches`, by a scan.
    #[inline(always)]
    fn scan(&self, matches: impl Fn(&Entry) -> bool) -> Option<usize> {
        let found = self.entries.iter().position(matches);
        #[cfg(feature = "test-hooks")]
        count_comparisons(found.map_or(self.entries.len(), |i| i + 1));
        found
    }

    /// For a lookup in a table past [`LINEAR_MAX`] without an index: whether
    /// it may still scan (and counts the scan), or should build the index
    /// (see the type's doc).
    #[cold]
    #[inline(never)]
    fn spend_scan_budget(&self) -> bool {
        if self.pushed_index() {
            // Pushes kept an index: take it over rather than scan.
            return false;
        }
        let n = self.entries.len();
        let scanned = self.scanned.load(Ordering::Relaxed);
        if scanned.saturating_add(n) <= SCAN_BUDGET.saturating_mul(n) {
            self.scanned.store(scanned + n, Ordering::Relaxed);
            true
        } else {
            false
        }
    }

    /// An upper bound of the bytes building the index of every entry
    /// allocates: the index, and its box if the table has none yet.
    pub(crate) fn bytes_to_index(&self) -> usize {
        let boxed = if self.lookup.get().is_some() {
            0
        } else {
            core::mem::size_of::<Lookup>()
        };
        Index::bytes_for(self.entries.len()).saturating_add(boxed)
    }

    /// The first entry whose key occurred before it, if any.
    pub(crate) fn first_duplicate(&self, text: &[u8]) -> Option<usize> {
        let entries = &self.entries;
        if entries.len() <= LINEAR_MAX {
            count_comparisons(entries.len() * entries.len() / 2);
            return (1..entries.len())
                .find(|&i| entries[..i].iter().any(|e| same_key(text, e, &entries[i])));
        }
        let index = self.index(text);
        if index.len() == entries.len() {
            return None;
        }
        // Some entry is not in the index: the first one whose position is
        // not where its key leads.
        (0..entries.len()).find(|&i| {
            let e = &entries[i];
            let (d, p) = parts_of(text, e);
            index
                .find(
                    hash_parts(d, p),
                    |j| same_key(text, &entries[j], e),
                    |j| order_entries(text, e, &entries[j]),
                )
                .is_some_and(|j| j != i)
        })
    }
}

/// The keys of a frame being validated without being stored (a strict
/// view, and the validating walk of a failed strict decode), to find
/// duplicates: the same [`Index`] as a frame's, over keys that stay where
/// they are in the input. So a strict view has the same defence against
/// colliding keys as a strict decode (docs/security.md).
pub(crate) struct KeySet<'a> {
    /// Each key, with its device's length or [`NO_SEP`].
    keys: Vec<(&'a [u8], u32)>,
    index: Index,
}

/// `(device, param)` of a key in a [`KeySet`].
#[inline]
fn split_at_dev(key: &[u8], dev_len: u32) -> (&[u8], &[u8]) {
    if dev_len == NO_SEP {
        (&[], key)
    } else {
        let sep = dev_len as usize;
        (&key[..sep], &key[sep + 1..])
    }
}

impl<'a> KeySet<'a> {
    /// The bytes a set for `count` keys allocates, at most.
    pub(crate) fn bytes_for(count: usize) -> usize {
        count
            .saturating_mul(core::mem::size_of::<(&[u8], u32)>())
            .saturating_add(Index::bytes_for(count))
    }

    // Out of line, as `insert`: only strict decoding uses a key set, and
    // the lenient walk's code stays as small as it was.
    #[inline(never)]
    pub(crate) fn with_capacity(count: usize) -> Self {
        KeySet {
            keys: Vec::with_capacity(count),
            index: Index::with_capacity(count),
        }
    }

    /// Adds a flat key as it came from the wire; `false` if an equal key
    /// (same device and parameter) is in the set already.
    #[inline(never)]
    pub(crate) fn insert(&mut self, key: &'a [u8]) -> bool {
        let dev_len = match find_separator(key) {
            Some(i) => to_u32(i),
            None => NO_SEP,
        };
        let (d, p) = split_at_dev(key, dev_len);
        let i = self.keys.len();
        self.keys.push((key, dev_len));
        let keys = &self.keys;
        let parts = |j: usize| split_at_dev(keys[j].0, keys[j].1);
        let inserted = self.index.insert_unique(
            hash_parts(d, p),
            i,
            |j| {
                let (dj, pj) = parts(j);
                bytes_eq(dj, d) && bytes_eq(pj, p)
            },
            |a, b| parts(a).cmp(&parts(b)),
        );
        if !inserted {
            self.keys.pop();
        }
        inserted
    }
}

impl Params {
    pub(crate) fn with_capacity(params: usize, text_bytes: usize) -> Self {
        let lookup = if params > LINEAR_MAX {
            Once::from(Box::new(Lookup {
                index: Once::new(),
                spare: Spare::new(Index::with_spill_room(params)),
            }))
        } else {
            Once::new()
        };
        Params {
            table: Table {
                entries: Entries::with_capacity(params),
                lookup,
                ..Table::default()
            },
            text: TextArena::with_capacity(text_bytes),
            raw: Vec::new(),
            garbage: 0,
        }
    }

    pub(crate) fn reserve(&mut self, params: usize, text_bytes: usize) {
        self.text.reserve(text_bytes);
        self.table.reserve(self.text.as_bytes(), params);
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    pub(crate) fn clear(&mut self) {
        self.table.clear();
        self.text.clear();
        self.raw.clear();
        self.garbage = 0;
    }

    #[inline]
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.table.entries
    }

    #[inline]
    pub(crate) fn text(&self) -> &str {
        self.text.as_str()
    }

    #[inline]
    pub(crate) fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// `(device, param)` of an entry.
    #[inline]
    pub(crate) fn parts<'s>(&'s self, e: &Entry) -> (&'s str, &'s str) {
        let start = e.key_start as usize;
        let key = &self.text[start..start + e.key_len as usize];
        if e.dev_len == NO_SEP {
            ("", key)
        } else {
            let sep = e.dev_len as usize;
            (&key[..sep], &key[sep + 1..])
        }
    }

    #[inline]
    pub(crate) fn value<'s>(&'s self, e: &Entry) -> ValueRef<'s> {
        match e.slot {
            Slot::Int(v) => ValueRef::Int(v.i64()),
            Slot::Double(v) => ValueRef::Double(v.f64()),
            Slot::Bool(v) => ValueRef::Bool(v),
            Slot::Str { start, len } => {
                let start = start as usize;
                ValueRef::String(&self.text[start..start + len as usize])
            }
            Slot::Unknown { start, len } => {
                let (tag, raw) = self.unknown(start, len);
                ValueRef::Unknown(UnknownValue::from_wire(tag, raw))
            }
        }
    }

    /// The tag and value bytes of an unknown slot, as they go on the wire.
    pub(crate) fn unknown_wire(&self, start: u32, len: u32) -> &[u8] {
        let start = start as usize;
        &self.raw[start..start + len as usize]
    }

    /// Tag and value bytes of an unknown slot.
    pub(crate) fn unknown(&self, start: u32, len: u32) -> (i128, &[u8]) {
        let bytes = self.unknown_wire(start, len);
        // The arena holds what `store_unknown` wrote: an integer comes first.
        let (tag, n) = crate::wire::read::leading_int(bytes).unwrap_or((0, 0));
        (tag, &bytes[n..])
    }

    /// `(device, param, value)` of an entry.
    #[inline]
    pub(crate) fn item<'s>(&'s self, e: &Entry) -> (&'s str, &'s str, ValueRef<'s>) {
        let (d, p) = self.parts(e);
        (d, p, self.value(e))
    }

    /// Keeps the entries for which `keep` returns `true`, in their order,
    /// and returns how many were removed. The bytes of the removed ones
    /// become garbage in the arenas (compacted as for `replace`), and the
    /// index, whose entry numbers no longer hold, is emptied: lookups
    /// rebuild it as they would after a `clear` (see [`Table`]).
    pub(crate) fn retain(
        &mut self,
        mut keep: impl FnMut(&str, &str, ValueRef<'_>) -> bool,
    ) -> usize {
        let before = self.table.entries.len();
        let mut garbage = 0;
        let mut entries = core::mem::take(&mut self.table.entries);
        entries.retain(|e| {
            let kept = keep_entry(&self.text, &self.raw, e, &mut keep);
            if !kept {
                garbage += e.key_len as usize
                    + match e.slot {
                        Slot::Str { len, .. } | Slot::Unknown { len, .. } => len as usize,
                        _ => 0,
                    };
            }
            kept
        });
        self.table.entries = entries;
        let removed = before - self.table.entries.len();
        if removed > 0 {
            self.table.forget_index();
            self.garbage += garbage;
            if self.table.entries.is_empty() {
                // Nothing refers to the arenas: empty them rather than
                // copy nothing around.
                self.text.clear();
                self.raw.clear();
                self.garbage = 0;
            } else {
                self.compact_if_wasteful();
            }
        }
        removed
    }

    /// Appends `(device, param) = value` without a duplicate check. Returns
    /// `false` if the key was already present (lookups keep finding the first
    /// occurrence).
    #[inline(always)]
    pub(crate) fn push(
        &mut self,
        device: &str,
        param: &str,
        hash: Option<u64>,
        value: ValueRef<'_>,
    ) -> bool {
        let key_start = to_u32(self.text.push_key(device, param));
        let entry = Entry {
            key_start,
            key_len: to_u32(device.len() + 1 + param.len()),
            dev_len: to_u32(device.len()),
            slot: self.store(value),
        };
        self.table.push(&self.text, entry, hash)
    }

    /// Whether the lookup index has been built.
    #[cfg(test)]
    pub(crate) fn index_built(&self) -> bool {
        self.table.built().is_some()
    }

    /// Whether `(device, param) = value` fits the arenas: their offsets
    /// are `u32`, so a frame holds at most 4 GiB − 1 bytes of keys and
    /// strings, and as much of unknown values ([`Params::push`] panics past
    /// that).
    pub(crate) fn fits(&self, device: &str, param: &str, value: ValueRef<'_>) -> bool {
        const MAX: usize = u32::MAX as usize;
        let (text, raw) = match value {
            ValueRef::String(s) => (s.len(), 0),
            ValueRef::Unknown(u) => (0, TAG_BYTES_MAX.saturating_add(u.raw().len())),
            _ => (0, 0),
        };
        let text = [device.len(), 1, param.len(), text]
            .iter()
            .try_fold(self.text.len(), |n, &m| n.checked_add(m));
        text.is_some_and(|t| t <= MAX) && self.raw.len().saturating_add(raw) <= MAX
    }

    /// Appends an entry with a flat key exactly as it came from the wire
    /// (which may lack the separator).
    pub(crate) fn push_wire(&mut self, key: &str, value: ValueRef<'_>) {
        let key_start = self.text.len();
        self.text.push_str(key);
        let slot = self.store(value);
        let entry = Entry::for_wire_key(key_start, key.as_bytes(), slot);
        self.table.push(&self.text, entry, None);
    }

    /// The raw arena's offsets are `u32`: a frame holds less than 4 GiB of
    /// unknown raw values (the text arena's buffer cannot grow past it).
    ///
    /// # Panics
    ///
    /// If the raw arena has passed 4 GiB.
    #[inline]
    fn check_raw(&self) {
        assert!(
            self.raw.len() <= u32::MAX as usize,
            "a frame's keys and strings are limited to 4 GiB"
        );
    }

    /// Stores a value's payload in the arenas and returns its slot.
    #[inline(always)]
    fn store(&mut self, value: ValueRef<'_>) -> Slot {
        match value {
            ValueRef::Int(v) => Slot::Int(Bits::of_i64(v)),
            ValueRef::Double(v) => Slot::Double(Bits::of_f64(v)),
            ValueRef::Bool(v) => Slot::Bool(v),
            ValueRef::String(s) => {
                let start = to_u32(self.text.len());
                self.text.push_str(s);
                Slot::Str {
                    start,
                    len: to_u32(s.len()),
                }
            }
            ValueRef::Unknown(u) => {
                let slot = store_unknown(&mut self.raw, u.tag(), u.raw());
                self.check_raw();
                slot
            }
        }
    }

    /// Position of the first entry with this key.
    #[inline]
    pub(crate) fn position(&self, device: &str, param: &str, hash: Option<u64>) -> Option<usize> {
        self.table.position(
            self.text.as_bytes(),
            device.as_bytes(),
            param.as_bytes(),
            hash,
        )
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> ValueRef<'_> {
        self.value(&self.table.entries[i])
    }

    /// Replaces the value of entry `i`.
    pub(crate) fn replace(&mut self, i: usize, value: ValueRef<'_>) {
        let old = self.table.entries[i].slot;
        // A string of the same length is overwritten in place; anything else
        // is appended and the old bytes become garbage, compacted away once
        // they outweigh the live bytes.
        if let (Slot::Str { start, len }, ValueRef::String(s)) = (old, value) {
            if s.len() == len as usize {
                self.text.overwrite(start as usize, s);
                return;
            }
        }
        let slot = self.store(value);
        self.table.entries[i].slot = slot;
        self.garbage += match old {
            Slot::Str { len, .. } | Slot::Unknown { len, .. } => len as usize,
            _ => 0,
        };
        self.compact_if_wasteful();
    }

    /// Compacts once the garbage outweighs the live bytes (and is more than
    /// a few KiB): the arenas stay at most about twice what the entries
    /// need, and each compaction is paid for by as many bytes dropped.
    fn compact_if_wasteful(&mut self) {
        if self.garbage > 4096 && self.garbage > (self.text.len() + self.raw.len()) / 2 {
            self.compact();
        }
    }

    /// Rewrites the arenas with only the bytes entries still refer to.
    fn compact(&mut self) {
        let mut text = TextArena::with_capacity(self.text.capacity());
        let mut raw = Vec::with_capacity(self.raw.capacity());
        for e in &mut self.table.entries {
            let ks = e.key_start as usize;
            e.key_start = to_u32(text.len());
            text.push_str(&self.text[ks..ks + e.key_len as usize]);
            match &mut e.slot {
                Slot::Str { start, len } => {
                    let s = *start as usize;
                    *start = to_u32(text.len());
                    text.push_str(&self.text[s..s + *len as usize]);
                }
                Slot::Unknown { start, len } => {
                    let s = *start as usize;
                    *start = to_u32(raw.len());
                    raw.extend_from_slice(&self.raw[s..s + *len as usize]);
                }
                _ => {}
            }
        }
        self.text = text;
        self.raw = raw;
        self.garbage = 0;
    }

    /// Starts a decode: empties the storage and hands out its parts, with the
    /// text arena as bytes (capacity kept), so that the decoder appends
    /// unvalidated bytes and checks them as UTF-8 once, at the end.
    pub(crate) fn begin_decode(&mut self) -> DecodeTarget<'_> {
        self.table.begin_decode();
        self.raw.clear();
        self.garbage = 0;
        DecodeTarget {
            table: &mut self.table,
            raw: &mut self.raw,
            text: self.text.begin_raw(),
        }
    }
}

/// The parts of [`Params`] a decode fills; see [`Params::begin_decode`].
/// Dropping it without [`finish`](DecodeTarget::finish) leaves the text
/// arena empty (capacity kept; only a panic does it).
pub(crate) struct DecodeTarget<'p> {
    pub(crate) table: &'p mut Table,
    pub(crate) raw: &'p mut Vec<u8>,
    /// The text arena, taking bytes unchecked until
    /// [`finish`](DecodeTarget::finish).
    pub(crate) text: RawText<'p>,
}

impl DecodeTarget<'_> {
    /// Ends the decode. With `keep` and valid UTF-8 the decoded entries
    /// stay; otherwise the storage is left empty (capacity kept) and
    /// `false` is returned.
    pub(crate) fn finish(self, keep: bool) -> bool {
        if self.text.finish(keep) {
            return true;
        }
        self.table.clear();
        self.raw.clear();
        false
    }
}

/// Appends an unknown value to the raw arena: its tag in the shortest
/// MessagePack form (at most [`TAG_BYTES_MAX`] bytes), then its bytes.
pub(crate) fn store_unknown(raw: &mut Vec<u8>, tag: i128, value: &[u8]) -> Slot {
    let start = raw.len();
    crate::wire::write::write_tag(raw, tag);
    raw.extend_from_slice(value);
    Slot::Unknown {
        start: to_u32(start),
        len: to_u32(raw.len() - start),
    }
}

/// The most bytes [`store_unknown`] writes for a tag.
pub(crate) const TAG_BYTES_MAX: usize = 9;

impl Entry {
    /// The entry's flat key (as on the wire) in the text arena's bytes.
    #[inline(always)]
    pub(crate) fn key_in<'t>(&self, text: &'t [u8]) -> &'t [u8] {
        key_of(text, self)
    }

    /// An entry for a flat key stored at `key_start..key_start + key.len()`
    /// of the text arena.
    #[inline]
    pub(crate) fn for_wire_key(key_start: usize, key: &[u8], slot: Slot) -> Entry {
        let dev_len = match find_separator(key) {
            Some(i) => to_u32(i),
            None => NO_SEP,
        };
        Entry {
            key_start: to_u32(key_start),
            key_len: to_u32(key.len()),
            dev_len,
            slot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_24_bytes_on_every_target() {
        // docs/architecture.md and security.md count on it: `Bits` keeps
        // the 8-byte values at 4-byte alignment, so no target pads it.
        assert_eq!(core::mem::size_of::<Entry>(), 24);
    }

    #[test]
    fn the_entry_table_charge_saturates_instead_of_wrapping() {
        // A claimed count whose table would pass `usize::MAX` bytes (a
        // 32-bit target reaches it with a large input and `Limits::none()`)
        // is charged as `usize::MAX`, which every budget refuses: it must
        // not wrap to a small charge and then reserve (a capacity-overflow
        // panic).
        let mut table = Table::default();
        let count = usize::MAX / 16;
        let mut charged = 0;
        let refused = table.reserve_entries_charged(count, |bytes| {
            charged = bytes;
            crate::decode::Budget::new(usize::MAX).charge(bytes)
        });
        assert!(refused.is_err());
        assert_eq!(charged, usize::MAX);
        assert!(!table.entries.spilled(), "nothing allocated");
    }

    #[test]
    fn the_index_is_built_after_a_few_scans_past_the_linear_threshold() {
        let mut p = Params::default();
        for k in 0..=LINEAR_MAX {
            assert!(p.push("d", &format!("p{k}"), None, ValueRef::Int(0)));
        }
        assert!(p.table.built().is_none(), "no index before a lookup");
        for _ in 0..SCAN_BUDGET {
            assert_eq!(p.position("d", "p3", None), Some(3));
        }
        assert!(p.table.built().is_none(), "the first lookups scan");
        assert_eq!(p.position("d", "p3", None), Some(3));
        assert_eq!(p.table.built().map(Index::len), Some(LINEAR_MAX + 1));
        assert!(
            !p.push("d", "p0", None, ValueRef::Int(1)),
            "an index, once built, reports duplicates"
        );
        assert_eq!(
            p.position("d", "p0", None),
            Some(0),
            "first occurrence wins"
        );
        assert_eq!(
            p.table.first_duplicate(p.text.as_bytes()),
            Some(LINEAR_MAX + 1)
        );
        p.clear();
        assert!(p.table.built().is_none(), "clear drops the index");
    }

    fn spare_len(p: &mut Params) -> usize {
        lookup_mut(&mut p.table.lookup).spare.get_mut().len()
    }

    fn fill(p: &mut Params, n: usize) {
        for k in 0..n {
            assert!(p.push("d", &format!("p{k}"), None, ValueRef::Int(k as i64)));
        }
    }

    #[test]
    fn a_table_filled_past_index_on_push_has_its_index_before_any_lookup() {
        let mut p = Params::default();
        fill(&mut p, INDEX_ON_PUSH);
        assert_eq!(spare_len(&mut p), 0, "small tables hash nothing");
        for k in INDEX_ON_PUSH..INDEX_ON_PUSH + 100 {
            assert!(p.push("d", &format!("p{k}"), None, ValueRef::Int(k as i64)));
            // Indexed in blocks: the first at INDEX_ON_PUSH + 1 entries,
            // then every PUSH_BLOCK pushes.
            let covered = INDEX_ON_PUSH + 1 + (k - INDEX_ON_PUSH) / PUSH_BLOCK * PUSH_BLOCK;
            assert_eq!((spare_len(&mut p), p.table.covered), (covered, covered));
        }
        // Wire keys (no parts given) and duplicates.
        p.push_wire("d\u{1f}wire", ValueRef::Bool(true));
        p.push("d", "p3", None, ValueRef::Int(-1));
        assert!(p.table.built().is_none(), "kept aside until a lookup");
        assert!(p.table.covered < p.len(), "some pushes pending");
        // The first lookup takes the index over, pending pushes included.
        assert_eq!(p.position("d", "wire", None), Some(INDEX_ON_PUSH + 100));
        assert_eq!(p.table.built().map(Index::len), Some(INDEX_ON_PUSH + 101));
        assert_eq!(p.position("d", "p3", None), Some(3), "first occurrence");
        assert_eq!(*p.table.scanned.get_mut(), 0, "no lookup scanned");
        // Pushes now update the index in use, and report duplicates.
        assert!(!p.push("d", "p4", None, ValueRef::Int(-1)), "a duplicate");
        assert!(p.push("d", "late", None, ValueRef::Int(0)));
        assert_eq!(p.position("d", "late", None), Some(INDEX_ON_PUSH + 103));
    }

    #[test]
    fn a_reused_table_indexes_on_push_only_after_a_message_that_was_looked_up() {
        let n = INDEX_ON_PUSH + 10;
        let last = format!("p{}", n - 1);
        let mut p = Params::default();
        // Not looked up: the next message's pushes do not index.
        fill(&mut p, n);
        p.clear();
        fill(&mut p, n);
        assert_eq!(spare_len(&mut p), 0);
        // Looked up (a scan): they do.
        assert_eq!(p.position("d", &last, None), Some(n - 1));
        assert!(*p.table.scanned.get_mut() > 0);
        p.clear();
        fill(&mut p, n);
        assert_eq!(spare_len(&mut p), INDEX_ON_PUSH + 1 + PUSH_BLOCK);
        assert_eq!(p.position("d", &last, None), Some(n - 1));
        assert_eq!(*p.table.scanned.get_mut(), 0, "taken over, not scanned");
        p.clear();
        fill(&mut p, n);
        assert!(spare_len(&mut p) > 0, "still looked up last time");
        // A decode starts from a cleared table whose pushes do not index.
        drop(p.begin_decode());
        assert_eq!(p.table.index_from.load(Ordering::Relaxed), NEVER);
        assert_eq!(spare_len(&mut p), 0);
    }
}

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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::index::Index;
use crate::key::{bytes_eq, find_separator, hash_parts, ComposedKey};
use crate::value::{UnknownValue, ValueRef};

/// Up to this many entries, lookups scan; past it, the index is kept.
pub(crate) const LINEAR_MAX: usize = 8;

/// Average text bytes per parameter assumed by a sizing hint that gives only
/// a parameter count (key plus string value).
pub(crate) const TEXT_BYTES_PER_PARAM: usize = 32;

/// `dev_len` value for a key that has no separator (device `""`, the whole
/// key is the parameter).
const NO_SEP: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Slot {
    Int(i64),
    Double(f64),
    Bool(bool),
    /// A string value in the text arena.
    Str {
        start: u32,
        len: u32,
    },
    /// An unknown tag: `raw[start..start + 8]` is the tag (little endian),
    /// the rest up to `start + len` is the value's MessagePack bytes.
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

#[derive(Clone, Default)]
pub(crate) struct Params {
    table: Table,
    text: String,
    raw: Vec<u8>,
    /// Arena bytes no entry refers to any more (overwritten values).
    garbage: usize,
}

/// Entries and their index. Its methods take the text arena as bytes, so
/// that the decoder can fill a byte arena and validate it as UTF-8 once at
/// the end (see `decode`), and so that key comparisons never pay for `str`
/// char-boundary checks.
///
/// The index is built on demand and from then on kept up to date by every
/// push, so filling and decoding a frame never hash a key unless someone
/// looks keys up. Up to [`LINEAR_MAX`] entries lookups always scan. Past
/// that, lookups scan until the entries they have scanned add up to
/// [`SCAN_BUDGET`] times the entry count (a handful of lookups, cheaper than
/// building an index that would serve only them), then the next lookup
/// builds the index and every lookup after it is O(1). This is the
/// ski-rental rule: total lookup work is at most about twice what the best
/// choice in hindsight would have cost, and lookups are O(1) amortized.
/// `OnceLock` makes the build safe through `&self` and keeps `Frame: Sync`.
#[derive(Default)]
pub(crate) struct Table {
    entries: Vec<Entry>,
    index: OnceLock<Index>,
    /// The index's allocation while no index is built (after `clear`), so
    /// that the next build reuses it. Locked only by that build.
    spare: Mutex<Index>,
    /// Entries scanned by lookups since the table was last cleared, while
    /// no index is built. Relaxed: it only steers when the index is built.
    scanned: AtomicUsize,
}

/// How many full scans lookups may do before the index is built: building
/// costs about as much as this many scans (hashing and inserting an entry
/// against comparing its key's length, and rarely its bytes).
pub(crate) const SCAN_BUDGET: usize = 4;

impl Clone for Table {
    fn clone(&self) -> Self {
        Table {
            entries: self.entries.clone(),
            index: self.index.clone(),
            spare: Mutex::new(Index::default()),
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

/// An upper bound of the bytes a hashbrown table allocates to hold `items`
/// slots of `slot_bytes` each: at most 2 × 8/7 buckets per item (at least
/// 16 buckets in all), each a slot plus one control byte, plus one group of
/// control bytes and alignment padding.
pub(crate) fn table_bytes_bound(items: usize, slot_bytes: usize) -> usize {
    let buckets = (items.saturating_mul(8) / 7).max(16).saturating_mul(2);
    buckets.saturating_mul(slot_bytes + 1).saturating_add(64)
}

/// An arena offset or length as the `u32` entries store. The arenas stay
/// below 4 GiB: a decode reads at most 1 GiB (`FRAME_BYTES_CEILING`), which
/// gives at most 3 GiB of arena even with 8 tag bytes per 3-byte unknown
/// value, and `add`/`set` check the arena sizes once per call
/// ([`Params::check_arenas`]).
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

#[inline]
fn hash_of(text: &[u8], e: &Entry) -> u64 {
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

/// Inserts entry `i` into `index` unless an equal key is there already
/// (first occurrence wins). Returns whether it was inserted.
#[inline]
fn index_insert(index: &mut Index, entries: &[Entry], text: &[u8], i: usize, hash: u64) -> bool {
    let new = &entries[i];
    index.insert_unique(hash, i, |j| same_key(text, &entries[j], new))
}

impl Table {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    fn clear(&mut self) {
        self.entries.clear();
        *self.scanned.get_mut() = 0;
        if self.index.get().is_some() {
            self.release_index();
        }
    }

    /// Empties the index and keeps its allocation for the next build.
    #[inline(never)]
    fn release_index(&mut self) {
        if let Some(mut index) = self.index.take() {
            index.clear();
            *self.spare.get_mut().unwrap_or_else(PoisonError::into_inner) = index;
        }
    }

    pub(crate) fn reserve(&mut self, params: usize) {
        self.entries.reserve(params);
        let total = self.entries.len() + params;
        if total > LINEAR_MAX {
            let index = match self.index.get_mut() {
                Some(index) => index,
                None => self.spare.get_mut().unwrap_or_else(PoisonError::into_inner),
            };
            index.reserve(total.saturating_sub(index.len()));
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
            charge(cap * std::mem::size_of::<Entry>())?;
            self.entries.reserve_exact(cap - len);
        }
        Ok(())
    }

    /// Appends an entry whose key and payload are already in `text`. If the
    /// index is built it is updated (`hash`, when given, saves hashing the
    /// key); returns `false` if it then shows the key was already present
    /// (lookups keep finding the first occurrence).
    /// Appends an entry during a decode, which starts from a cleared table:
    /// there is no index to update.
    #[inline(always)]
    pub(crate) fn push_decoded(&mut self, entry: Entry) {
        debug_assert!(self.index.get().is_none());
        self.entries.push(entry);
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, text: &[u8], entry: Entry, hash: Option<u64>) -> bool {
        let i = self.entries.len();
        self.entries.push(entry);
        if i < LINEAR_MAX || self.index.get().is_none() {
            // No index to keep up to date (too few entries for one to
            // exist, or no lookups yet).
            return true;
        }
        self.push_indexed(text, i, hash)
    }

    /// Adds entry `i` to the built index.
    #[inline(never)]
    fn push_indexed(&mut self, text: &[u8], i: usize, hash: Option<u64>) -> bool {
        let entry = self.entries[i];
        match self.index.get_mut() {
            None => true,
            Some(index) => {
                let h = hash.unwrap_or_else(|| hash_of(text, &entry));
                index_insert(index, &self.entries, text, i, h)
            }
        }
    }

    /// The index, built on first use.
    #[inline]
    fn index(&self, text: &[u8]) -> &Index {
        self.index.get_or_init(|| {
            let mut index =
                std::mem::take(&mut *self.spare.lock().unwrap_or_else(PoisonError::into_inner));
            // Sized for the entries present, not the table's capacity: a
            // decode into a frame grown by an earlier, larger message must not
            // allocate for that message (see docs/security.md).
            let entries = &self.entries;
            index.reserve(entries.len());
            for i in 0..entries.len() {
                index_insert(&mut index, entries, text, i, hash_of(text, &entries[i]));
            }
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
            || hash_parts(device, param),
            hash,
        )
    }

    /// The lookup: a scan of a small table, or of a larger one while the
    /// scan budget lasts, else a probe of the index (built on first need).
    /// `key_hash` is called only when the caller gave no `hash`.
    #[inline(always)]
    fn position_by(
        &self,
        text: &[u8],
        matches: impl Fn(&Entry) -> bool,
        key_hash: impl FnOnce() -> u64,
        hash: Option<u64>,
    ) -> Option<usize> {
        if self.entries.len() <= LINEAR_MAX {
            return self.entries.iter().position(&matches);
        }
        let index = match self.index.get() {
            Some(index) => index,
            None if self.spend_scan_budget() => return self.entries.iter().position(&matches),
            None => self.index(text),
        };
        index.find(hash.unwrap_or_else(key_hash), |j| matches(&self.entries[j]))
    }

    /// For a lookup in a table past [`LINEAR_MAX`] without an index: whether
    /// it may still scan (and counts the scan), or should build the index
    /// (see the type's doc).
    #[cold]
    #[inline(never)]
    fn spend_scan_budget(&self) -> bool {
        let n = self.entries.len();
        let scanned = self.scanned.load(Ordering::Relaxed);
        if scanned.saturating_add(n) <= SCAN_BUDGET.saturating_mul(n) {
            self.scanned.store(scanned + n, Ordering::Relaxed);
            true
        } else {
            false
        }
    }

    /// The first entry whose key occurred before it, if any.
    pub(crate) fn first_duplicate(&self, text: &[u8]) -> Option<usize> {
        let entries = &self.entries;
        if entries.len() <= LINEAR_MAX {
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
            let (d, p) = parts_of(text, &entries[i]);
            index
                .find(hash_parts(d, p), |j| {
                    same_key(text, &entries[j], &entries[i])
                })
                .is_some_and(|j| j != i)
        })
    }
}

impl Params {
    pub(crate) fn with_capacity(params: usize, text_bytes: usize) -> Self {
        let spare = if params > LINEAR_MAX {
            Index::with_capacity(params)
        } else {
            Index::default()
        };
        Params {
            table: Table {
                entries: Vec::with_capacity(params),
                index: OnceLock::new(),
                spare: Mutex::new(spare),
                scanned: AtomicUsize::new(0),
            },
            text: String::with_capacity(text_bytes),
            raw: Vec::new(),
            garbage: 0,
        }
    }

    pub(crate) fn reserve(&mut self, params: usize, text_bytes: usize) {
        self.text.reserve(text_bytes);
        self.table.reserve(params);
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
        &self.text
    }

    #[inline]
    pub(crate) fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The flat key exactly as it goes on the wire.
    #[inline]
    pub(crate) fn key_bytes<'s>(&'s self, e: &Entry) -> &'s [u8] {
        key_of(self.text.as_bytes(), e)
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
            Slot::Int(v) => ValueRef::Int(v),
            Slot::Double(v) => ValueRef::Double(v),
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

    /// Tag and value bytes of an unknown slot.
    pub(crate) fn unknown(&self, start: u32, len: u32) -> (i64, &[u8]) {
        let start = start as usize;
        let bytes = &self.raw[start..start + len as usize];
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&bytes[..8]);
        (i64::from_le_bytes(tag), &bytes[8..])
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str, ValueRef<'_>)> + '_ {
        self.table.entries.iter().map(move |e| {
            let (d, p) = self.parts(e);
            (d, p, self.value(e))
        })
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
        let key_start = to_u32(self.text.len());
        crate::utf8::push_str(&mut self.text, device);
        self.text.push(crate::key::SEPARATOR);
        crate::utf8::push_str(&mut self.text, param);
        let entry = Entry {
            key_start,
            key_len: to_u32(device.len() + 1 + param.len()),
            dev_len: to_u32(device.len()),
            slot: self.store(value),
        };
        self.check_arenas();
        self.table.push(self.text.as_bytes(), entry, hash)
    }

    /// Appends an entry with a flat key exactly as it came from the wire
    /// (which may lack the separator).
    pub(crate) fn push_wire(&mut self, key: &str, value: ValueRef<'_>) {
        let key_start = self.text.len();
        self.text.push_str(key);
        let slot = self.store(value);
        self.check_arenas();
        let entry = Entry::for_wire_key(key_start, key.as_bytes(), slot);
        self.table.push(self.text.as_bytes(), entry, None);
    }

    /// The arenas' offsets are `u32`: a frame holds less than 4 GiB of keys
    /// and strings, and of unknown raw values.
    ///
    /// # Panics
    ///
    /// If an arena has reached 4 GiB.
    #[inline(always)]
    fn check_arenas(&self) {
        assert!(
            self.text.len() <= u32::MAX as usize && self.raw.len() <= u32::MAX as usize,
            "a frame's keys and strings are limited to 4 GiB"
        );
    }

    /// Stores a value's payload in the arenas and returns its slot.
    #[inline(always)]
    fn store(&mut self, value: ValueRef<'_>) -> Slot {
        match value {
            ValueRef::Int(v) => Slot::Int(v),
            ValueRef::Double(v) => Slot::Double(v),
            ValueRef::Bool(v) => Slot::Bool(v),
            ValueRef::String(s) => {
                let start = to_u32(self.text.len());
                crate::utf8::push_str(&mut self.text, s);
                Slot::Str {
                    start,
                    len: to_u32(s.len()),
                }
            }
            ValueRef::Unknown(u) => store_unknown(&mut self.raw, u.tag(), u.raw()),
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
                let start = start as usize;
                self.text.replace_range(start..start + s.len(), s);
                return;
            }
        }
        let slot = self.store(value);
        self.check_arenas();
        self.table.entries[i].slot = slot;
        self.garbage += match old {
            Slot::Str { len, .. } | Slot::Unknown { len, .. } => len as usize,
            _ => 0,
        };
        if self.garbage > 4096 && self.garbage > (self.text.len() + self.raw.len()) / 2 {
            self.compact();
        }
    }

    /// Rewrites the arenas with only the bytes entries still refer to.
    fn compact(&mut self) {
        let mut text = String::with_capacity(self.text.capacity());
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
        self.clear();
        let text = std::mem::take(&mut self.text).into_bytes();
        DecodeTarget {
            table: &mut self.table,
            raw: &mut self.raw,
            text,
            home: &mut self.text,
        }
    }
}

/// The parts of [`Params`] a decode fills; see [`Params::begin_decode`].
/// Dropping it without [`finish`](DecodeTarget::finish) leaves the storage
/// empty (the text arena's capacity is lost then: only error paths do it).
pub(crate) struct DecodeTarget<'p> {
    pub(crate) table: &'p mut Table,
    pub(crate) raw: &'p mut Vec<u8>,
    /// The text arena, as bytes until [`finish`](DecodeTarget::finish).
    pub(crate) text: Vec<u8>,
    home: &'p mut String,
}

impl DecodeTarget<'_> {
    /// Puts the text arena back. With `keep` and valid UTF-8 the decoded
    /// entries stay; otherwise the storage is left empty (capacity kept) and
    /// `false` is returned.
    pub(crate) fn finish(self, keep: bool) -> bool {
        let text = if keep {
            crate::utf8::string_from(self.text)
        } else {
            let mut bytes = self.text;
            bytes.clear();
            String::from_utf8(bytes)
        };
        match text {
            Ok(text) => {
                *self.home = text;
                if keep {
                    return true;
                }
            }
            Err(e) => {
                let mut bytes = e.into_bytes();
                bytes.clear();
                // Empty, hence valid UTF-8: the arena keeps its capacity.
                *self.home = String::from_utf8(bytes).unwrap_or_default();
            }
        }
        self.table.clear();
        self.raw.clear();
        false
    }
}

pub(crate) fn store_unknown(raw: &mut Vec<u8>, tag: i64, value: &[u8]) -> Slot {
    let start = to_u32(raw.len());
    raw.extend_from_slice(&tag.to_le_bytes());
    raw.extend_from_slice(value);
    Slot::Unknown {
        start,
        len: to_u32(8 + value.len()),
    }
}

impl Entry {
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
    fn an_entry_is_32_bytes() {
        // docs/architecture.md relies on this: two entries per cache line.
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn the_index_is_built_after_a_few_scans_past_the_linear_threshold() {
        let mut p = Params::default();
        for k in 0..=LINEAR_MAX {
            assert!(p.push("d", &format!("p{k}"), None, ValueRef::Int(0)));
        }
        assert!(p.table.index.get().is_none(), "no index before a lookup");
        for _ in 0..SCAN_BUDGET {
            assert_eq!(p.position("d", "p3", None), Some(3));
        }
        assert!(p.table.index.get().is_none(), "the first lookups scan");
        assert_eq!(p.position("d", "p3", None), Some(3));
        assert_eq!(p.table.index.get().map(Index::len), Some(LINEAR_MAX + 1));
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
        assert!(p.table.index.get().is_none(), "clear drops the index");
    }
}

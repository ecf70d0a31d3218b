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
//!   hashing); past that an index (hashbrown's `HashTable<u32>`) makes it O(1).

use hashbrown::HashTable;

use crate::key::{hash_parts, SEPARATOR_BYTE};
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
    entries: Vec<Entry>,
    text: String,
    raw: Vec<u8>,
    index: HashTable<u32>,
    /// Arena bytes no entry refers to any more (overwritten values).
    garbage: usize,
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

/// Converts an arena offset or length to the `u32` entries store. The arenas
/// are bounded by the decode limits and by this check for `add`.
#[inline]
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).expect("a frame's text arena is limited to 4 GiB")
}

impl Params {
    pub(crate) fn with_capacity(params: usize, text_bytes: usize) -> Self {
        let mut p = Params {
            entries: Vec::with_capacity(params),
            text: String::with_capacity(text_bytes),
            raw: Vec::new(),
            index: HashTable::new(),
            garbage: 0,
        };
        if params > LINEAR_MAX {
            p.index = HashTable::with_capacity(params);
        }
        p
    }

    pub(crate) fn reserve(&mut self, params: usize, text_bytes: usize) {
        self.entries.reserve(params);
        self.text.reserve(text_bytes);
        let total = self.entries.len() + params;
        if total > LINEAR_MAX {
            let extra = total.saturating_sub(self.index.len());
            self.reserve_index(extra);
        }
    }

    /// Makes room for `count` more entries and their index, the way a decode
    /// does: `charge` is first told how many bytes that allocates (an upper
    /// bound for the index), and may refuse.
    pub(crate) fn reserve_entries_charged<E>(
        &mut self,
        count: usize,
        charge: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let len = self.entries.len();
        let old_cap = self.entries.capacity();
        let cap = grown_capacity(old_cap, len, count);
        let mut bytes = 0;
        if cap > old_cap {
            bytes += cap * std::mem::size_of::<Entry>();
        }
        // The index is sized for the whole entry capacity: crossing into
        // indexed mode then allocates nothing more.
        let indexed = len + count > LINEAR_MAX;
        if indexed && cap > self.index.capacity() {
            bytes += table_bytes_bound(cap, std::mem::size_of::<u32>());
        }
        charge(bytes)?;
        self.entries.reserve_exact(cap - len);
        if indexed {
            self.reserve_index(cap - self.index.len());
        }
        Ok(())
    }

    /// Makes room for `text` more text bytes and `raw` more raw-value bytes,
    /// charging first like [`reserve_entries_charged`](Self::reserve_entries_charged).
    #[inline]
    pub(crate) fn reserve_payload_charged<E>(
        &mut self,
        text: usize,
        raw: usize,
        charge: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        if text <= self.text.capacity() - self.text.len()
            && raw <= self.raw.capacity() - self.raw.len()
        {
            return Ok(());
        }
        self.grow_payload(text, raw, charge)
    }

    #[cold]
    fn grow_payload<E>(
        &mut self,
        text: usize,
        raw: usize,
        charge: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let text_cap = grown_capacity(self.text.capacity(), self.text.len(), text);
        let raw_cap = grown_capacity(self.raw.capacity(), self.raw.len(), raw);
        let mut bytes = 0;
        if text_cap > self.text.capacity() {
            bytes += text_cap;
        }
        if raw_cap > self.raw.capacity() {
            bytes += raw_cap;
        }
        charge(bytes)?;
        self.text.reserve_exact(text_cap - self.text.len());
        self.raw.reserve_exact(raw_cap - self.raw.len());
        Ok(())
    }

    fn reserve_index(&mut self, additional: usize) {
        let (entries, text) = (&self.entries, &self.text);
        self.index
            .reserve(additional, |&i| entry_hash(text, &entries[i as usize]));
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.text.clear();
        self.raw.clear();
        self.index.clear();
        self.garbage = 0;
    }

    #[inline]
    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
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
    pub(crate) fn flat_key<'s>(&'s self, e: &Entry) -> &'s str {
        let start = e.key_start as usize;
        &self.text[start..start + e.key_len as usize]
    }

    /// `(device, param)` of an entry.
    #[inline]
    pub(crate) fn parts<'s>(&'s self, e: &Entry) -> (&'s str, &'s str) {
        entry_parts(&self.text, e)
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
        self.entries.iter().map(move |e| {
            let (d, p) = self.parts(e);
            (d, p, self.value(e))
        })
    }

    /// Stores a value's payload in the arenas and returns its slot.
    #[inline]
    fn store(&mut self, value: ValueRef<'_>) -> Slot {
        match value {
            ValueRef::Int(v) => Slot::Int(v),
            ValueRef::Double(v) => Slot::Double(v),
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
                let start = to_u32(self.raw.len());
                self.raw.extend_from_slice(&u.tag().to_le_bytes());
                self.raw.extend_from_slice(u.raw());
                Slot::Unknown {
                    start,
                    len: to_u32(8 + u.raw().len()),
                }
            }
        }
    }

    /// Appends `(device, param) = value` without a duplicate check. Returns
    /// `false` if the key was already present (lookups keep finding the first
    /// occurrence).
    #[inline]
    pub(crate) fn push(
        &mut self,
        device: &str,
        param: &str,
        hash: Option<u64>,
        value: ValueRef<'_>,
    ) -> bool {
        let key_start = to_u32(self.text.len());
        self.text.push_str(device);
        self.text.push(crate::key::SEPARATOR);
        self.text.push_str(param);
        let entry = Entry {
            key_start,
            key_len: to_u32(device.len() + 1 + param.len()),
            dev_len: to_u32(device.len()),
            slot: self.store(value),
        };
        self.push_entry(entry, hash)
    }

    /// Appends an entry whose flat key arrived from the wire as one string.
    #[inline]
    pub(crate) fn push_flat(&mut self, flat: &str, value: ValueRef<'_>) -> bool {
        let key_start = to_u32(self.text.len());
        self.text.push_str(flat);
        let dev_len = match flat.as_bytes().iter().position(|&b| b == SEPARATOR_BYTE) {
            Some(i) => to_u32(i),
            None => NO_SEP,
        };
        let entry = Entry {
            key_start,
            key_len: to_u32(flat.len()),
            dev_len,
            slot: self.store(value),
        };
        self.push_entry(entry, None)
    }

    #[inline]
    fn push_entry(&mut self, entry: Entry, hash: Option<u64>) -> bool {
        let idx = self.entries.len();
        self.entries.push(entry);
        if idx < LINEAR_MAX {
            return true;
        }
        if idx == LINEAR_MAX {
            // Crossing into indexed mode: index the entries so far. Entries
            // stay where they are; only their numbers go into the table.
            self.reserve_index(self.entries.capacity().max(LINEAR_MAX + 1));
            let mut unique = true;
            for i in 0..=idx {
                let h = entry_hash(&self.text, &self.entries[i]);
                unique = self.index_insert(i, h);
            }
            return unique;
        }
        let h = hash.unwrap_or_else(|| entry_hash(&self.text, &entry));
        self.index_insert(idx, h)
    }

    /// Inserts entry `i` into the index unless an equal key is there already
    /// (first occurrence wins). Returns whether it was inserted.
    #[inline]
    fn index_insert(&mut self, i: usize, hash: u64) -> bool {
        let (entries, text) = (&self.entries, &self.text);
        let parts = entry_parts(text, &entries[i]);
        match self.index.entry(
            hash,
            |&j| entry_parts(text, &entries[j as usize]) == parts,
            |&j| entry_hash(text, &entries[j as usize]),
        ) {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(to_u32(i));
                true
            }
        }
    }

    /// Position of the first entry with this key.
    #[inline]
    pub(crate) fn position(&self, device: &str, param: &str, hash: Option<u64>) -> Option<usize> {
        if self.entries.len() <= LINEAR_MAX {
            return self
                .entries
                .iter()
                .position(|e| entry_parts(&self.text, e) == (device, param));
        }
        let hash = hash.unwrap_or_else(|| hash_parts(device.as_bytes(), param.as_bytes()));
        self.index
            .find(hash, |&j| {
                entry_parts(&self.text, &self.entries[j as usize]) == (device, param)
            })
            .map(|&j| j as usize)
    }

    /// Whether an earlier entry than `i` has the same key (linear mode only;
    /// in indexed mode `push` already reports duplicates).
    pub(crate) fn has_earlier_duplicate(&self, i: usize) -> bool {
        let parts = self.parts(&self.entries[i]);
        self.entries[..i]
            .iter()
            .any(|e| entry_parts(&self.text, e) == parts)
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> ValueRef<'_> {
        self.value(&self.entries[i])
    }

    /// Replaces the value of entry `i`.
    pub(crate) fn replace(&mut self, i: usize, value: ValueRef<'_>) {
        let old = self.entries[i].slot;
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
        self.entries[i].slot = slot;
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
        for e in &mut self.entries {
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
}

#[inline]
fn entry_parts<'t>(text: &'t str, e: &Entry) -> (&'t str, &'t str) {
    let start = e.key_start as usize;
    let end = start + e.key_len as usize;
    if e.dev_len == NO_SEP {
        ("", &text[start..end])
    } else {
        let sep = start + e.dev_len as usize;
        (&text[start..sep], &text[sep + 1..end])
    }
}

#[inline]
fn entry_hash(text: &str, e: &Entry) -> u64 {
    let (d, p) = entry_parts(text, e);
    hash_parts(d.as_bytes(), p.as_bytes())
}

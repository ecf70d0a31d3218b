//! The walk's sinks: [`CheckSink`] validates and stores nothing (the view,
//! and the owned decoder's error path); `OwnedSink` fills a [`Frame`]'s
//! storage.

use core::ops::Range;

use bytes::Bytes;

use crate::attachment::{AttachmentStore, Attachments};
use crate::error::Limit;
use crate::params::{
    grown_capacity, store_unknown, to_u32, Bits, DecodeTarget, Entry, KeySet, Slot, TAG_BYTES_MAX,
};

use super::walk::{Refusal, Sink, WireValue};
use super::{Budget, Decoder};

/// Validates every string as it arrives and stores nothing: the view's sink,
/// and the owned decoder's way to find the first error in input order.
/// `STRICT` (the decoder's [`strict`](Decoder::strict)) is a constant, so
/// that the lenient walk, which a view made with `FrameView::new` runs,
/// holds no code of the strict one's duplicate check (its key set, hash
/// index and hasher: 6 KB of a Cortex-M binary, docs/performance.md).
pub(crate) struct CheckSink<'a, const STRICT: bool> {
    /// Keys seen; only strict decoding pays for it.
    seen: Option<KeySet<'a>>,
    budget: Budget,
}

impl<const STRICT: bool> CheckSink<'_, STRICT> {
    pub(crate) fn new(dec: &Decoder) -> Self {
        Self::with_budget(dec, Budget::new(dec.limits.max_alloc_bytes))
    }

    /// A validating sink that spends what is left of `budget`.
    pub(super) fn with_budget(dec: &Decoder, budget: Budget) -> Self {
        debug_assert_eq!(dec.strict, STRICT);
        CheckSink { seen: None, budget }
    }
}

impl<const STRICT: bool> CheckSink<'_, STRICT> {
    /// Only strict decoding pays for the key set, sized once (out of line:
    /// the lenient walk stays as small as it was).
    #[inline(never)]
    fn start_key_set(&mut self, count: usize) -> Result<(), Limit> {
        self.budget.charge(KeySet::bytes_for(count))?;
        self.seen = Some(KeySet::with_capacity(count));
        Ok(())
    }
}

impl<'a, const STRICT: bool> Sink<'a> for CheckSink<'a, STRICT> {
    const RECORDS_KEYS: bool = true;

    #[inline]
    fn begin_params(&mut self, count: usize) -> Result<(), Limit> {
        if STRICT && count > 0 {
            self.start_key_set(count)?;
        }
        Ok(())
    }

    #[inline]
    fn param(&mut self, key: &'a [u8], value: WireValue<'a>) -> Result<(), Refusal> {
        if !crate::utf8::is_valid(key) {
            return Err(Refusal::Utf8 { in_key: true });
        }
        if let WireValue::Str(s) = value {
            if !crate::utf8::is_valid(s) {
                return Err(Refusal::Utf8 { in_key: false });
            }
        }
        if STRICT {
            if let Some(seen) = &mut self.seen {
                if !seen.insert(key) {
                    return Err(Refusal::Duplicate);
                }
            }
        }
        Ok(())
    }

    fn begin_attachments(&mut self, _count: usize) -> Result<(), Limit> {
        Ok(())
    }

    fn attachment(&mut self, name: &'a [u8], _data: Range<usize>) -> Result<(), Refusal> {
        if crate::utf8::is_valid(name) {
            Ok(())
        } else {
            Err(Refusal::Utf8 { in_key: false })
        }
    }
}

/// Stores what the walk finds in a [`Frame`]'s storage. Keys and string
/// values are appended to the text arena as bytes; the arena is validated as
/// UTF-8 in one pass at the end ([`DecodeTarget::finish`]). That is sound
/// because every string starts at a char boundary: each string's first byte
/// is checked not to be a UTF-8 continuation byte, so a valid arena means
/// every string in it is valid. Every allocation is charged to the budget
/// before it is made.
pub(super) struct OwnedSink<'f, 'a> {
    pub(super) target: DecodeTarget<'f>,
    /// How far the text and raw arenas may be filled without growing: their
    /// capacity, but at most [`ARENA_MAX`], so that every offset and length
    /// stored fits the entries' `u32`s. The one comparison per parameter
    /// that checks room for its bytes checks this too.
    pub(super) text_end: usize,
    pub(super) raw_end: usize,
    pub(super) attachments: &'f mut Attachments,
    /// When decoding from a `Bytes`, attachments are slices of it.
    pub(super) shared: Option<&'a Bytes>,
    pub(super) input: &'a [u8],
    pub(super) budget: Budget,
    /// Cleared when a string starts with a continuation byte.
    pub(super) utf8_ok: bool,
    /// The parameter count the map claims (what a new text arena is sized
    /// for).
    pub(super) claimed: usize,
}

/// The most bytes an arena holds: its offsets are `u32`.
pub(super) const ARENA_MAX: usize = u32::MAX as usize;

/// How far an arena of capacity `cap` may be filled.
pub(super) fn arena_end(cap: usize) -> usize {
    cap.min(ARENA_MAX)
}

/// The capacity an arena holding `len` bytes grows to for `add` more:
/// doubling, but never past [`ARENA_MAX`]; `None` if `len + add` is past it.
fn arena_growth(cap: usize, len: usize, add: usize) -> Option<usize> {
    // Checked, not saturating: on a 32-bit target `ARENA_MAX` is
    // `usize::MAX`, which a saturated sum would pass for.
    if len.checked_add(add)? > ARENA_MAX {
        return None;
    }
    Some(grown_capacity(cap, len, add).min(ARENA_MAX.max(cap)))
}

impl OwnedSink<'_, '_> {
    /// Appends a string's bytes to the text arena (room was reserved);
    /// returns its offset.
    #[inline(always)]
    fn push_text(&mut self, s: &[u8]) -> usize {
        if let Some(&first) = s.first() {
            // A continuation byte cannot start a valid string.
            self.utf8_ok &= (first & 0xc0) != 0x80;
        }
        let text = &mut self.target.text;
        let start = text.len();
        text.push(s);
        start
    }

    /// Makes room for `text` more arena bytes and `raw` more raw bytes,
    /// charging growth first. Only unknown values have raw bytes: the usual
    /// parameter checks the text arena alone.
    #[inline(always)]
    fn reserve_payload(&mut self, text: usize, raw: usize) -> Result<(), Refusal> {
        if text <= self.text_end - self.target.text.len()
            && (raw == 0 || raw <= self.raw_end - self.target.raw.len())
        {
            return Ok(());
        }
        self.grow_payload(text, raw)
    }

    /// Sizes a new frame's text arena once, when it outgrows the frame's
    /// inline bytes: about 32 bytes for each parameter the map claims (keys
    /// and strings), never more than the input holds (they are substrings
    /// of it). Growing by doubling from nothing took 4 allocations for a
    /// 4-parameter frame and 12 for 1,024 parameters; this takes 1, and a
    /// doubling when the estimate is short. Skipped when the budget cannot
    /// pay for it, or the estimate is no larger than the inline part: the
    /// arena then grows to what it needs, as before.
    fn presize_text(&mut self) {
        let t = &mut self.target.text;
        let want = arena_end(self.input.len().min(self.claimed.saturating_mul(32)));
        if want > t.capacity() && self.budget.charge(want).is_ok() {
            t.reserve_exact(want - t.len());
            self.text_end = arena_end(t.capacity());
        }
    }

    #[cold]
    fn grow_payload(&mut self, text: usize, raw: usize) -> Result<(), Refusal> {
        if self.target.text.is_inline() {
            self.presize_text();
        }
        let t = &mut self.target.text;
        let text_cap = arena_growth(t.capacity(), t.len(), text).ok_or(Refusal::Capacity)?;
        let r = &mut *self.target.raw;
        let raw_cap = arena_growth(r.capacity(), r.len(), raw).ok_or(Refusal::Capacity)?;
        let mut bytes = 0usize;
        if text_cap > t.capacity() {
            bytes = bytes.saturating_add(text_cap);
        }
        if raw_cap > r.capacity() {
            bytes = bytes.saturating_add(raw_cap);
        }
        self.budget.charge(bytes).map_err(Refusal::Limit)?;
        if text_cap > t.capacity() {
            t.reserve_exact(text_cap - t.len());
        }
        r.reserve_exact(raw_cap - r.len());
        self.text_end = arena_end(t.capacity());
        self.raw_end = arena_end(r.capacity());
        Ok(())
    }
}

impl<'a> Sink<'a> for OwnedSink<'_, 'a> {
    fn begin_params(&mut self, count: usize) -> Result<(), Limit> {
        let budget = &mut self.budget;
        self.target
            .table
            .reserve_entries_charged(count, |bytes| budget.charge(bytes))?;
        self.claimed = count;
        Ok(())
    }

    // Always: with two instantiations of the owned decode (strict and
    // lenient), the compiler stopped inlining it into the walk's loop.
    #[inline(always)]
    fn param(&mut self, key: &'a [u8], value: WireValue<'a>) -> Result<(), Refusal> {
        // A continuation byte cannot start a valid string: each string's
        // first byte is checked, the arena as a whole at the end.
        let starts_ok = |s: &[u8]| s.first().map_or(true, |&b| (b & 0xc0) != 0x80);
        // One match on the value: room, bytes and slot of each kind.
        let (key_start, slot) = match value {
            WireValue::Str(s) => {
                self.reserve_payload(key.len() + s.len(), 0)?;
                self.utf8_ok &= starts_ok(key) & starts_ok(s);
                let (key_start, start) = self.target.text.push_pair(key, s);
                let slot = Slot::Str {
                    start: to_u32(start),
                    len: to_u32(s.len()),
                };
                (key_start, slot)
            }
            WireValue::Unknown(tag, raw) => {
                self.reserve_payload(key.len(), TAG_BYTES_MAX + raw.len())?;
                let key_start = self.push_text(key);
                (key_start, store_unknown(self.target.raw, tag, raw))
            }
            scalar => {
                self.reserve_payload(key.len(), 0)?;
                let key_start = self.push_text(key);
                let slot = match scalar {
                    WireValue::Int(v) => Slot::Int(Bits::of_i64(v)),
                    WireValue::Double(v) => Slot::Double(Bits::of_f64(v)),
                    WireValue::Bool(v) => Slot::Bool(v),
                    WireValue::Str(_) | WireValue::Unknown(..) => unreachable!("matched above"),
                };
                (key_start, slot)
            }
        };
        let entry = Entry::for_wire_key(key_start, key, slot);
        // Duplicates (strict mode) are looked for once, after the walk.
        self.target.table.push_decoded(entry);
        Ok(())
    }

    fn begin_attachments(&mut self, count: usize) -> Result<(), Limit> {
        if count == 0 {
            return Ok(());
        }
        if !self.attachments.is_boxed() {
            self.budget
                .charge(core::mem::size_of::<AttachmentStore>())?;
        }
        let budget = &mut self.budget;
        self.attachments
            .store_mut()
            .reserve_charged(count, |bytes| budget.charge(bytes))
    }

    fn attachment(&mut self, name: &'a [u8], data: Range<usize>) -> Result<(), Refusal> {
        let name = crate::utf8::str_from(name).map_err(|_| Refusal::Utf8 { in_key: false })?;
        let budget = &mut self.budget;
        let store = self.attachments.store_mut();
        store
            .reserve_name_charged(name.len(), |bytes| budget.charge(bytes))
            .map_err(Refusal::Limit)?;
        let (data, own_copy) = match self.shared {
            Some(b) => (b.slice(data), false),
            None => {
                // Charged whether or not a spare buffer takes the copy, so
                // that what a decode may do depends on its input alone.
                self.budget.charge(data.len()).map_err(Refusal::Limit)?;
                (store.copy_of(&self.input[data]), true)
            }
        };
        store.push(name, data, own_copy);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arena_grows_by_doubling_but_never_past_32_bit_offsets() {
        assert_eq!(arena_growth(0, 0, 10), Some(10));
        assert_eq!(arena_growth(16, 10, 10), Some(32));
        assert_eq!(arena_growth(32, 10, 10), Some(32), "it fits");
        // Doubling would pass 4 GiB: up to the last byte an offset reaches.
        assert_eq!(arena_growth(3 << 30, 3 << 30, 1), Some(ARENA_MAX));
        assert_eq!(arena_growth(ARENA_MAX, ARENA_MAX - 1, 1), Some(ARENA_MAX));
        assert_eq!(arena_growth(ARENA_MAX, ARENA_MAX, 1), None);
        assert_eq!(arena_growth(0, 1, usize::MAX), None);
        // On a 64-bit target an arena can be larger than its offsets reach:
        // one grown by `add` keeps its capacity but is filled only up to
        // the limit.
        #[cfg(target_pointer_width = "64")]
        {
            assert_eq!(arena_growth(0, 0, ARENA_MAX + 1), None);
            assert_eq!(arena_growth(ARENA_MAX + 10, 5, 5), Some(ARENA_MAX + 10));
            assert_eq!(arena_end(ARENA_MAX + 10), ARENA_MAX);
        }
    }
}

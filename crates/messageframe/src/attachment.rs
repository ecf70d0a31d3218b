//! A frame's attachments: [`Attachments`], a store boxed on first need,
//! holding the slots in insertion order, the names in one text arena and
//! the buffers of cleared copies for reuse.
//!
//! A frame that carries attachments usually carries one (an IQ capture, a
//! spectrum) with a short name, so the store keeps the first slot and the
//! first 64 bytes of names in place: a new frame with one attachment
//! allocates the store's box and, for a copy, the data, and nothing else
//! (it allocated a slot vector and a name `String` too before).

#[allow(unused_imports)]
use crate::prelude::*;

use bytes::{Bytes, BytesMut};

use crate::arena::TextArena;
use crate::params::grown_capacity;
use crate::wire::write::append;

/// An attachment's slot: its name in the store's name arena and its data.
/// Any size: the encoder checks what MessagePack can express.
#[derive(Clone)]
pub(crate) struct AttachmentSlot {
    name_start: usize,
    name_len: usize,
    pub(crate) data: Bytes,
    /// The frame made `data` by copying (a decode, `add_attachment_copy`),
    /// so its buffer may be reused once nothing else holds it.
    own_copy: bool,
}

/// The slots, as one slice: the first in place until a second comes or a
/// reservation asks for more, then all in a vector, which is kept from
/// then on (a reused frame stays on the vector it warmed up).
///
/// Invariant: `first` is `Some` only while `more` has no capacity.
#[derive(Clone, Default)]
struct Slots {
    first: Option<AttachmentSlot>,
    more: Vec<AttachmentSlot>,
}

impl Slots {
    #[inline]
    fn as_slice(&self) -> &[AttachmentSlot] {
        match &self.first {
            Some(slot) => core::slice::from_ref(slot),
            None => &self.more,
        }
    }

    /// Slots held without allocating again.
    #[inline]
    fn capacity(&self) -> usize {
        self.more.capacity().max(1)
    }

    fn push(&mut self, slot: AttachmentSlot) {
        if self.more.capacity() == 0 && self.first.is_none() {
            self.first = Some(slot);
            return;
        }
        if let Some(first) = self.first.take() {
            self.more.reserve(4);
            self.more.push(first);
        }
        self.more.push(slot);
    }

    /// Room for exactly `cap` slots in the vector (more than
    /// [`capacity`](Slots::capacity)), the first slot moved into it.
    fn grow_exact(&mut self, cap: usize) {
        self.more.reserve_exact(cap - self.more.len());
        if let Some(first) = self.first.take() {
            self.more.push(first);
        }
    }

    /// Empties the slots, keeping the vector's capacity.
    fn drain(&mut self) -> impl Iterator<Item = AttachmentSlot> + '_ {
        self.first.take().into_iter().chain(self.more.drain(..))
    }
}

/// The attachments of a frame: slots in insertion order, names in one arena.
#[derive(Default)]
pub(crate) struct AttachmentStore {
    slots: Slots,
    names: TextArena,
    /// Buffers of cleared attachments that the frame had copied and that
    /// nothing else held any more, reused by the next copies: a reused
    /// frame copies attachments in and out without allocating, as it does
    /// parameters. Never shared, never cloned.
    spare: Vec<BytesMut>,
}

impl Clone for AttachmentStore {
    fn clone(&self) -> Self {
        AttachmentStore {
            slots: self.slots.clone(),
            names: self.names.clone(),
            spare: Vec::new(),
        }
    }
}

impl AttachmentStore {
    fn with_capacity(count: usize) -> Self {
        let mut store = AttachmentStore::default();
        store.reserve(count);
        store
    }

    /// A buffer holding a copy of `data`: a spare one if one is large
    /// enough, else a new one.
    pub(crate) fn copy_of(&mut self, data: &[u8]) -> Bytes {
        let mut buf = match self.spare.iter().position(|b| b.capacity() >= data.len()) {
            Some(i) => {
                let mut b = self.spare.swap_remove(i);
                b.clear();
                b
            }
            None => {
                // Drop a spare that is too small rather than keep it: live
                // and spare buffers together never outnumber the most
                // attachments the frame has held at once.
                if !self.spare.is_empty() {
                    self.spare.swap_remove(0);
                }
                BytesMut::with_capacity(data.len())
            }
        };
        append(&mut buf, data);
        buf.freeze()
    }

    /// Makes room for `count` more attachments the way a decode does:
    /// `charge` is first told how many bytes that allocates, and may refuse.
    /// The count is exact, so the table grows to exactly what it needs.
    pub(crate) fn reserve_charged<E>(
        &mut self,
        count: usize,
        charge: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let slots = &mut self.slots;
        let cap = slots.as_slice().len().saturating_add(count);
        if cap > slots.capacity() {
            // Saturating: on a 32-bit target the product can pass
            // `usize::MAX`, and the budget must then refuse, not wrap.
            charge(cap.saturating_mul(core::mem::size_of::<AttachmentSlot>()))?;
            slots.grow_exact(cap);
        }
        Ok(())
    }

    /// Makes room for `bytes` more bytes of names, charging first.
    pub(crate) fn reserve_name_charged<E>(
        &mut self,
        bytes: usize,
        charge: impl FnOnce(usize) -> Result<(), E>,
    ) -> Result<(), E> {
        let names = &mut self.names;
        let cap = grown_capacity(names.capacity(), names.len(), bytes);
        if cap > names.capacity() {
            charge(cap)?;
            names.reserve_exact(cap - names.len());
        }
        Ok(())
    }

    /// Room for `count` more attachments (a sizing hint), growing as a
    /// `Vec` does, so that hints given one at a time do not reallocate at
    /// each.
    fn reserve(&mut self, count: usize) {
        let (len, old) = (self.slots.as_slice().len(), self.slots.capacity());
        let cap = grown_capacity(old, len, count);
        if cap > old {
            self.slots.grow_exact(cap);
        }
    }

    #[inline]
    fn clear(&mut self) {
        if !self.slots.as_slice().is_empty() {
            self.release_slots();
        }
        self.names.clear();
    }

    /// Empties the slots, keeping the buffers of copies no one else holds.
    #[inline(never)]
    fn release_slots(&mut self) {
        for slot in self.slots.drain() {
            if slot.own_copy {
                // Unique unless the caller kept a clone of the data.
                if let Ok(buf) = slot.data.try_into_mut() {
                    self.spare.push(buf);
                }
            }
        }
    }

    pub(crate) fn push(&mut self, name: &str, data: Bytes, own_copy: bool) {
        let name_start = self.names.len();
        self.names.push_str(name);
        self.slots.push(AttachmentSlot {
            name_start,
            name_len: name.len(),
            data,
            own_copy,
        });
    }
}

/// A frame's attachments: a store boxed on first need, so that a frame
/// without any (most small frames) carries one pointer instead of the
/// store, and moving or dropping it costs that much less.
#[derive(Clone, Default)]
pub(crate) struct Attachments(Option<Box<AttachmentStore>>);

impl Attachments {
    pub(crate) fn with_capacity(count: usize) -> Self {
        Attachments((count > 0).then(|| Box::new(AttachmentStore::with_capacity(count))))
    }

    /// The slots, in insertion order.
    #[inline]
    pub(crate) fn slots(&self) -> &[AttachmentSlot] {
        self.0.as_deref().map_or(&[], |s| s.slots.as_slice())
    }

    /// The name arena the slots' names are in.
    #[inline]
    pub(crate) fn names(&self) -> &str {
        self.0.as_deref().map_or("", |s| &s.names)
    }

    /// Whether the store is boxed already (a decode charges the box).
    pub(crate) fn is_boxed(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn store_mut(&mut self) -> &mut AttachmentStore {
        self.0.get_or_insert_with(Box::default)
    }

    pub(crate) fn reserve(&mut self, count: usize) {
        if count > 0 {
            self.store_mut().reserve(count);
        }
    }

    #[inline]
    pub(crate) fn clear(&mut self) {
        if let Some(store) = &mut self.0 {
            store.clear();
        }
    }

    /// Buffers kept for the next copies.
    #[cfg(test)]
    pub(crate) fn spare_count(&self) -> usize {
        self.0.as_deref().map_or(0, |s| s.spare.len())
    }
}

/// The name of `slot` in `names` (the arena of the store that holds it).
#[inline]
pub(crate) fn name_in<'a>(names: &'a str, slot: &AttachmentSlot) -> &'a str {
    &names[slot.name_start..slot.name_start + slot.name_len]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Bytes {
        Bytes::from(vec![n as u8; n])
    }

    #[test]
    fn the_attachment_table_charge_saturates_instead_of_wrapping() {
        // As for the entry table (params.rs): a count whose table would pass
        // `usize::MAX` bytes is charged as `usize::MAX`, never wrapped.
        let mut attachments = AttachmentStore::default();
        let mut charged = 0;
        let refused = attachments.reserve_charged(usize::MAX / 16, |bytes| {
            charged = bytes;
            crate::decode::Budget::new(usize::MAX).charge(bytes)
        });
        assert!(refused.is_err());
        assert_eq!(charged, usize::MAX);
        assert_eq!(attachments.slots.more.capacity(), 0);
    }

    #[test]
    fn one_attachment_with_a_short_name_allocates_no_slot_vector_or_name() {
        let mut store = AttachmentStore::default();
        let mut charged = 0;
        let ok: Result<(), ()> = store.reserve_charged(1, |bytes| {
            charged += bytes;
            Ok(())
        });
        assert!(ok.is_ok());
        let ok: Result<(), ()> = store.reserve_name_charged(8, |bytes| {
            charged += bytes;
            Ok(())
        });
        assert!(ok.is_ok());
        store.push("spectrum", data(3), false);
        assert_eq!(charged, 0, "nothing to allocate, nothing charged");
        assert_eq!(store.slots.more.capacity(), 0);
        assert!(store.slots.first.is_some());
        assert_eq!(store.slots.as_slice().len(), 1);
        assert_eq!(
            name_in(&store.names, &store.slots.as_slice()[0]),
            "spectrum"
        );
    }

    #[test]
    fn hints_given_one_at_a_time_grow_the_slots_geometrically() {
        let mut store = AttachmentStore::default();
        let mut growths = 0;
        for k in 0..100usize {
            let before = store.slots.capacity();
            store.reserve(1);
            growths += usize::from(store.slots.capacity() != before);
            store.push("a", data(k % 3), false);
        }
        assert_eq!(store.slots.as_slice().len(), 100);
        assert!(growths <= 8, "{growths} growths for 100 attachments");
    }

    #[test]
    fn slots_keep_their_order_through_every_growth_and_clear() {
        // Pushed one by one, reserved (exactly, as a decode does) before
        // or after the first, and cleared in between: the slice always
        // holds the attachments in insertion order, and once the vector
        // has room the first slot is never used again.
        for reserve_at in [None, Some(0), Some(1), Some(2)] {
            let mut store = AttachmentStore::default();
            for round in 0..3 {
                for k in 0..4usize {
                    if reserve_at == Some(k) {
                        let ok: Result<(), ()> = store.reserve_charged(3, |_| Ok(()));
                        assert!(ok.is_ok());
                    }
                    store.push(&format!("a{k}"), data(k + round), true);
                    let slots = store.slots.as_slice();
                    assert_eq!(slots.len(), k + 1);
                    for (j, slot) in slots.iter().enumerate() {
                        assert_eq!(name_in(&store.names, slot), format!("a{j}"));
                        assert_eq!(slot.data.len(), j + round);
                    }
                    assert!(
                        store.slots.first.is_none() || store.slots.more.capacity() == 0,
                        "reserve at {reserve_at:?}, round {round}, {k}"
                    );
                }
                store.clear();
                assert!(store.slots.as_slice().is_empty());
                assert!(store.slots.first.is_none());
            }
            // Three rounds of four: the vector was allocated once and kept.
            assert!(store.slots.more.capacity() >= 4);
        }
    }
}

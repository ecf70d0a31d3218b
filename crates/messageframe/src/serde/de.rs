//! Frames into Rust values: `from_frame`, `from_view`.
//!
//! The deserializer walks the frame with a cursor: a frame written by
//! `to_frame` (or by any writer that keeps each struct's fields together in
//! field order) is read front to back, each field found at the cursor with
//! one comparison. Anything else is found by a lookup (`Frame::find`, O(1);
//! otherwise a binary search of the source's [`Lookup`]), so the order of
//! parameters never changes the result (the first occurrence of a key
//! wins), only the speed, and a frame of n parameters reads in O(n log n)
//! whatever its order.
//!
//! [`Lookup`]: super::lookup::Lookup

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::marker::PhantomData;

use ::serde::de::value::BorrowedStrDeserializer;
use ::serde::de::{self, DeserializeSeed, Visitor};
use ::serde::forward_to_deserialize_any;

use super::error::{Error, ErrorKind};
use super::path::{
    classify, join, path_str, same, under, within, within_raw, Class, IndexBuf, PathLike, Prefix,
};
use super::source::{BytesSource, Found, Held, Source};
use crate::decode::Decoder;
use crate::hooks::count_comparisons;
use crate::key::{bytes_eq, find_separator, le_value16, SEPARATOR_BYTE};
use crate::utf8::str_from;

type Result<T> = std::result::Result<T, Error>;

thread_local! {
    /// The key prefix buffer, reused across calls.
    static KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Deserializes a `T` from `src`.
pub(crate) fn from_source<'de, T, S>(src: S) -> Result<T>
where
    T: de::Deserialize<'de>,
    S: Source<'de>,
{
    let buf = KEY.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let mut de = De {
        src,
        key: Prefix::new(buf),
        clean: true,
        depth: 0,
        _de: PhantomData,
    };
    let result = T::deserialize(Top(&mut de));
    KEY.with(|p| *p.borrow_mut() = de.key.into_buf());
    result
}

/// Deserializes a `T` from a frame's bytes in one pass, checking the frame
/// as it reads it; what `T` does not read is checked after. An invalid
/// frame is a [`ErrorKind::Decode`] error, whatever `T` made of the part
/// before the fault.
pub(crate) fn from_bytes<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    let dec = Decoder::new();
    let mut src = BytesSource::new(&dec, bytes).map_err(|e| Error::new(ErrorKind::Decode(e)))?;
    let result = from_source(&mut src);
    match src.finish() {
        Ok(()) => result,
        Err(e) => Err(Error::new(ErrorKind::Decode(e))),
    }
}

struct De<'de, S> {
    src: S,
    /// The key prefix of the container being read: its path (the names
    /// from the top level down to it, joined by `.`), then U+001F; `"\x1F"`
    /// at the top level. A field at the cursor is recognised by comparing
    /// the raw key with this prefix and the field's name.
    key: Prefix,
    /// Whether the path holds no U+001F (a map key read from a parameter's
    /// name can): then raw keys compare with the prefix as bytes
    /// ([`classify`]); otherwise every field goes the general way.
    clean: bool,
    /// Containers entered and not left: at most [`MAX_DEPTH`].
    depth: usize,
    _de: PhantomData<&'de ()>,
}

/// The deepest nesting of containers read: a key can hold thousands of
/// `.`-separated names, and a recursive type (`serde_json::Value`, a tree)
/// would otherwise recurse once per name, past the end of the stack
/// (serde_json stops at 128 too).
const MAX_DEPTH: usize = 128;

/// Where [`De::enter`] came from, for [`De::leave`].
#[derive(Clone, Copy)]
struct Parent {
    base: usize,
    clean: bool,
}

impl<'de, S: Source<'de>> De<'de, S> {
    /// The length of the current container's path (the prefix without its
    /// U+001F).
    #[inline(always)]
    fn base(&self) -> usize {
        self.key.base()
    }

    /// Makes the field `seg` of the current container the current one.
    #[inline]
    fn enter(&mut self, seg: &str) -> Parent {
        let parent = Parent {
            base: self.key.enter(seg.as_bytes()),
            clean: self.clean,
        };
        if self.clean && find_separator(seg.as_bytes()).is_some() {
            self.clean = false;
        }
        parent
    }

    /// Back to the container [`enter`](Self::enter) left.
    #[inline]
    fn leave(&mut self, parent: Parent) {
        self.key.leave(parent.base);
        self.clean = parent.clean;
    }

    /// What the frame holds for field `seg` of the current container. At
    /// the cursor, while no lookup has moved it, the raw key is compared
    /// with the container's prefix and `seg` ([`classify`]): a field in the
    /// order the frame was written costs that comparison alone.
    #[inline(always)]
    fn locate(&mut self, seg: &str) -> Found<'de> {
        if self.clean {
            if let Some(key) = self.src.head_key() {
                // The field's own parameter, its key of at most 16 bytes
                // (every key of the Order record) compared whole with the
                // prefix's word and `seg` joined in a register.
                let (n, s) = (self.key.len(), seg.as_bytes());
                if n < 16
                    && key.len() == n + s.len()
                    && key.len() <= 16
                    && le_value16(key) == self.key.word() | le_value16(s) << (8 * n)
                {
                    if let Some(found) = self.src.take_head() {
                        return found;
                    }
                }
                match classify(key, &self.key, s) {
                    Some(Class::Scalar) => {
                        if let Some(found) = self.src.take_head() {
                            return found;
                        }
                    }
                    Some(Class::Container) => return Found::Container,
                    Some(Class::Other) => return self.locate_away(seg),
                    None => {}
                }
            }
        }
        self.locate_slow(seg)
    }

    /// [`locate`](Self::locate) for element `seg` (an index: digits only)
    /// of the current container, a sequence. An element in the order it was
    /// written is a container whose first key at the cursor is
    /// `path.seg␟…` or `path.seg.…␟…`: recognised by comparing that key's
    /// start with the path and the index, without [`classify`]'s other
    /// cases (an index is never empty and holds no separator, so a key
    /// that starts so is below the element). Anything else goes the
    /// general way.
    #[inline(always)]
    fn locate_element(&mut self, seg: &str) -> Found<'de> {
        debug_assert!(!seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()));
        let base = self.base();
        if self.clean && base > 0 {
            if let Some(key) = self.src.head_key() {
                let s = seg.as_bytes();
                let end = base + 1 + s.len();
                if key.len() > end
                    && key[base] == b'.'
                    && self.key.is_path(&key[..base])
                    && bytes_eq(&key[base + 1..end], s)
                {
                    match key[end] {
                        SEPARATOR_BYTE => return Found::Container,
                        b'.' if find_separator(&key[end + 1..]).is_some() => {
                            return Found::Container
                        }
                        _ => {}
                    }
                }
            }
        }
        self.locate(seg)
    }

    /// [`locate`](Self::locate) through the source's parsed parameters.
    #[inline(never)]
    fn locate_slow(&mut self, seg: &str) -> Found<'de> {
        // At the cursor while no lookup has moved it (`take` says no once
        // one has): what is there is the first occurrence of its key.
        // After a jump, by lookup only.
        if let Some(v) = self.src.take(self.key.path(), seg) {
            return v.into();
        }
        if !self.src.jumped() {
            if let Some((d, _, _)) = self.src.peek() {
                if under(d, self.key.path(), seg) {
                    return Found::Container;
                }
            }
        }
        self.locate_away(seg)
    }

    /// [`locate`](Self::locate) for a field not at the cursor: by lookup.
    #[inline(never)]
    fn locate_away(&mut self, seg: &str) -> Found<'de> {
        if let Some(v) = self.src.find(self.key.path(), seg) {
            return v.into();
        }
        let parent = self.enter(seg);
        let path = self.key.path();
        let found = if let Some(a) = self.src.attachment(path) {
            Found::Attachment(a)
        } else if self.src.seek_device(path) {
            Found::Container
        } else {
            Found::Absent
        };
        self.leave(parent);
        found
    }

    /// Moves the cursor past the parameters under the current path (what a
    /// container's reader did not consume: fields the type does not have).
    #[inline]
    fn skip_within(&mut self) {
        let base = self.base();
        if self.clean && base > 0 {
            loop {
                match self.src.head_key() {
                    Some(key) if within_raw(key, &self.key) => self.src.bump(),
                    Some(_) => return,
                    None => break,
                }
            }
        }
        self.skip_within_slow();
    }

    #[inline(never)]
    fn skip_within_slow(&mut self) {
        while let Some((d, _, _)) = self.src.peek() {
            let path = self.key.path();
            if within(d, path) && !(path.is_empty() && d.is_empty()) {
                self.src.bump();
            } else {
                break;
            }
        }
    }

    #[cold]
    fn path_of(&mut self, base: usize, seg: &str) -> String {
        let mut p = path_str(&self.key.bytes()[..base]).to_owned();
        join(&mut p, seg);
        p
    }
}

/// The top level: a struct or a map at device `""`.
struct Top<'a, 'de, S>(&'a mut De<'de, S>);

const TOP: &str = "a top level that is not a struct or a map";

macro_rules! top_unsupported {
    ($($name:ident),*) => {$(
        fn $name<V: Visitor<'de>>(self, _: V) -> Result<V::Value> {
            Err(Error::new(ErrorKind::Unsupported(TOP)))
        }
    )*};
}

impl<'de, S: Source<'de>> de::Deserializer<'de> for Top<'_, 'de, S> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_map(visitor)
    }
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_map(MapDe::new(self.0, None))
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_map(StructDe {
            base: self.0.base(),
            de: self.0,
            fields,
            next: 0,
            found: Held::ABSENT,
            seg: "",
        })
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value> {
        Err(Error::new(ErrorKind::Unsupported(TOP)))
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        _: V,
    ) -> Result<V::Value> {
        Err(Error::new(ErrorKind::Unsupported(TOP)))
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, _: V) -> Result<V::Value> {
        Err(Error::new(ErrorKind::Unsupported(TOP)))
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value> {
        Err(Error::new(ErrorKind::Unsupported(TOP)))
    }
    top_unsupported!(
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit,
        deserialize_seq,
        deserialize_identifier
    );
}

/// A struct's fields, looked up by name in field order.
struct StructDe<'a, 'de, S> {
    de: &'a mut De<'de, S>,
    base: usize,
    fields: &'static [&'static str],
    next: usize,
    found: Held<'de>,
    seg: &'static str,
}

impl<'de, S: Source<'de>> de::MapAccess<'de> for StructDe<'_, 'de, S> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        while let Some(&name) = self.fields.get(self.next) {
            self.next += 1;
            debug_assert_eq!(self.de.base(), self.base);
            let found = self.de.locate(name);
            if !matches!(found, Found::Absent) {
                self.found = found.into();
                self.seg = name;
                return seed
                    .deserialize(BorrowedStrDeserializer::<Error>::new(name))
                    .map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let (base, seg) = (self.base, self.seg);
        seed.deserialize(Value {
            de: &mut *self.de,
            base,
            seg,
            found: self.found,
        })
        .map_err(|e| e.at(|| self.de.path_of(base, seg)))
    }
}

/// A sequence's elements: `0`, `1`, … below its device.
struct SeqDe<'a, 'de, S> {
    de: &'a mut De<'de, S>,
    base: usize,
    next: usize,
    /// The recorded length; without one, elements are read until the
    /// first absent index.
    len: Option<usize>,
}

impl<'de, S: Source<'de>> de::SeqAccess<'de> for SeqDe<'_, 'de, S> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.len.is_some_and(|n| self.next >= n) {
            return Ok(None);
        }
        let index = IndexBuf::new(self.next);
        let seg = index.as_str();
        self.next += 1;
        debug_assert_eq!(self.de.base(), self.base);
        let found = self.de.locate_element(seg);
        if self.len.is_none() && matches!(found, Found::Absent) {
            return Ok(None);
        }
        let base = self.base;
        seed.deserialize(Value {
            de: &mut *self.de,
            base,
            seg,
            found: found.into(),
        })
        .map(Some)
        .map_err(|e| e.at(|| self.de.path_of(base, seg)))
    }

    fn size_hint(&self) -> Option<usize> {
        self.len.map(|n| n.saturating_sub(self.next))
    }
}

/// The keys a map has given, so that each is given once (its first
/// occurrence). The first 8 are kept inline, compared in a pass: a small
/// map read as it was written allocates nothing for them; a larger one
/// keeps the rest in a set, so that a map of n entries costs O(n log n)
/// however its entries are spread.
#[derive(Default)]
struct GivenKeys<'de> {
    inline: [&'de str; 8],
    len: usize,
    spill: BTreeSet<&'de str>,
}

impl<'de> GivenKeys<'de> {
    /// Records `key`; `false` if it was given already.
    fn insert(&mut self, key: &'de str) -> bool {
        count_comparisons(self.len);
        if self.inline[..self.len].contains(&key) {
            return false;
        }
        match self.inline.get_mut(self.len) {
            Some(slot) => {
                *slot = key;
                self.len += 1;
                true
            }
            None => {
                // A B-tree's search: about log2 of its size.
                count_comparisons((usize::BITS - self.spill.len().leading_zeros()) as usize + 1);
                self.spill.insert(key)
            }
        }
    }
}

/// The name of the container below `path` that `device` (at or below
/// `path`, not `path` itself) is in: its next segment. `None` when that
/// segment is empty (`a..b` below `a`, `.x` below the top level), which no
/// path can name: reading it as a container would read `path` again.
fn first_name_below<'d>(device: &'d str, path: &str) -> Option<&'d str> {
    let rest = if path.is_empty() {
        device
    } else {
        &device[path.len() + 1..]
    };
    let seg = rest.split('.').next().unwrap_or(rest);
    (!seg.is_empty()).then_some(seg)
}

/// A map's entries: the parameters of its device (scalar values) and the
/// devices below it (container values), keyed by name.
struct MapDe<'a, 'de, S> {
    de: &'a mut De<'de, S>,
    base: usize,
    len: Option<usize>,
    yielded: usize,
    /// Entries found by lookup, in frame order, once the run at the cursor
    /// ended before the map did (its entries were not all together) or
    /// could not be trusted (a lookup had moved the cursor).
    rest: Option<std::vec::IntoIter<(&'de str, Found<'de>)>>,
    given: GivenKeys<'de>,
    key: &'de str,
    found: Held<'de>,
}

impl<'a, 'de, S: Source<'de>> MapDe<'a, 'de, S> {
    fn new(de: &'a mut De<'de, S>, len: Option<usize>) -> Self {
        MapDe {
            base: de.base(),
            de,
            len,
            yielded: 0,
            rest: None,
            given: GivenKeys::default(),
            key: "",
            found: Held::ABSENT,
        }
    }

    /// The next entry of the run at the cursor.
    fn run_entry(&mut self) -> Option<(&'de str, Found<'de>)> {
        let base = self.base;
        if self.de.clean && base > 0 {
            // A scalar entry, `path␟name`, read from the raw key at the
            // cursor as a struct's field is: the name checked as UTF-8
            // (the path is), no split, no comparison of text.
            if let Some(key) = self.de.src.head_key() {
                let starts = key.len() > base && self.de.key.is_path(&key[..base]);
                if starts && key[base] == SEPARATOR_BYTE {
                    if let Ok(name) = str_from(&key[base + 1..]) {
                        if let Some(found) = self.de.src.take_head() {
                            return Some((name, found));
                        }
                    }
                } else if !(starts && key[base] == b'.') {
                    // The key's device is neither the path nor below it.
                    return None;
                }
            }
        }
        loop {
            let (d, p, v) = self.de.src.peek()?;
            let path = self.de.key.path();
            if same(d, path) {
                self.de.src.bump();
                return Some((p, v.into()));
            }
            if !within(d, path) {
                return None;
            }
            match first_name_below(d, path) {
                Some(seg) => return Some((seg, Found::Container)),
                // No name for it: passed over, as a field the type does
                // not have.
                None => self.de.src.bump(),
            }
        }
    }

    /// Every entry of the map in the frame not given yet, first occurrences
    /// only, in frame order.
    fn collect_rest(&mut self) -> Vec<(&'de str, Found<'de>)> {
        let mut rest: Vec<(&'de str, Found<'de>)> = Vec::new();
        let de = &mut *self.de;
        let path = de.key.path();
        let given = &mut self.given;
        de.src.within(path, &mut |d, p, v| {
            let entry = if d == path {
                (p, v.into())
            } else {
                match first_name_below(d, path) {
                    Some(seg) => (seg, Found::Container),
                    None => return,
                }
            };
            if given.insert(entry.0) {
                rest.push(entry);
            }
        });
        rest
    }
}

impl<'de, S: Source<'de>> de::MapAccess<'de> for MapDe<'_, 'de, S> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.len.is_some_and(|n| self.yielded >= n) {
            return Ok(None);
        }
        debug_assert_eq!(self.de.base(), self.base);
        let entry = loop {
            if let Some(rest) = &mut self.rest {
                break rest.next();
            }
            let run = if self.de.src.jumped() {
                None
            } else {
                self.run_entry()
            };
            match run {
                Some(e) if self.given.insert(e.0) => break Some(e),
                Some((seg, found)) => {
                    // A later occurrence of a key the map gave: the first
                    // wins; a container's parameters are passed over.
                    if matches!(found, Found::Container) {
                        let parent = self.de.enter(seg);
                        self.de.skip_within();
                        self.de.leave(parent);
                    }
                }
                None => self.rest = Some(self.collect_rest().into_iter()),
            }
        };
        let Some((key, found)) = entry else {
            return Ok(None);
        };
        self.yielded += 1;
        self.key = key;
        self.found = found.into();
        seed.deserialize(Key(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let (base, seg) = (self.base, self.key);
        let value = seed
            .deserialize(Value {
                de: &mut *self.de,
                base,
                seg,
                found: self.found,
            })
            .map_err(|e| e.at(|| self.de.path_of(base, seg)))?;
        if self.found.is_container() && self.rest.is_none() {
            // Whatever the value's reader left of its device (all of it,
            // if it ignored the value) is skipped, so the run moves on.
            let parent = self.de.enter(seg);
            self.de.skip_within();
            self.de.leave(parent);
        }
        Ok(value)
    }

    fn size_hint(&self) -> Option<usize> {
        self.len.map(|n| n.saturating_sub(self.yielded))
    }
}

/// The value of field `seg` of the container at `de.path[..base]`.
struct Value<'a, 'de, S> {
    de: &'a mut De<'de, S>,
    base: usize,
    seg: &'a str,
    found: Held<'de>,
}

fn found_name(found: &Found<'_>) -> &'static str {
    match found {
        Found::Int(_) => "int64",
        Found::Double(_) => "double",
        Found::Str(_) => "string",
        Found::Bool(_) => "bool",
        Found::Unknown => "unknown",
        Found::Container => "a device",
        Found::Attachment(_) => "an attachment",
        Found::Absent => "nothing",
    }
}

/// The error of a field that holds `found` where `expected` belongs.
#[cold]
fn wrong(expected: &'static str, found: Found<'_>) -> Error {
    match found {
        Found::Absent => Error::new(ErrorKind::Missing),
        other => Error::mismatch(expected, found_name(&other)),
    }
}

impl<'a, 'de, S: Source<'de>> Value<'a, 'de, S> {
    #[inline(always)]
    fn int<T: TryFrom<i64>>(&self, name: &'static str) -> Result<T> {
        match self.found.get() {
            Found::Int(v) => T::try_from(v).map_err(|_| {
                Error::new(ErrorKind::IntegerOutOfRange {
                    value: v.into(),
                    target: name,
                })
            }),
            other => Err(wrong(name, other)),
        }
    }

    /// A sequence's or map's recorded length, if the frame has one.
    fn len(&mut self, expected: &'static str) -> Result<Option<usize>> {
        match self.found.get() {
            Found::Int(n) => match usize::try_from(n) {
                Ok(len) if self.de.src.allows_len(len) => Ok(Some(len)),
                _ => Err(Error::new(ErrorKind::InvalidLength(n))),
            },
            Found::Container => Ok(None),
            other => Err(wrong(expected, other)),
        }
    }

    /// Reads the field's container with `read`, given the reader with the
    /// container's device as the current one and that device's length; then
    /// back to the parent, past what `read` left of the container. At most
    /// [`MAX_DEPTH`] containers deep.
    #[inline]
    fn nested<T>(&mut self, read: impl FnOnce(&mut De<'de, S>, usize) -> Result<T>) -> Result<T> {
        if self.de.depth == MAX_DEPTH {
            return Err(Error::new(ErrorKind::TooDeep { limit: MAX_DEPTH }));
        }
        debug_assert_eq!(self.de.base(), self.base);
        let parent = self.de.enter(self.seg);
        let base = self.de.base();
        self.de.depth += 1;
        let value = read(&mut *self.de, base);
        self.de.depth -= 1;
        if value.is_ok() {
            self.de.skip_within();
        }
        self.de.leave(parent);
        value
    }
}

macro_rules! ints {
    ($($name:ident $visit:ident $t:ty),*) => {$(
        fn $name<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            visitor.$visit(self.int::<$t>(stringify!($t))?)
        }
    )*};
}

impl<'de, S: Source<'de>> de::Deserializer<'de> for Value<'_, 'de, S> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            Found::Int(v) => visitor.visit_i64(v),
            Found::Double(v) => visitor.visit_f64(v),
            Found::Str(v) => visitor.visit_borrowed_str(v),
            Found::Bool(v) => visitor.visit_bool(v),
            Found::Unknown => Err(Error::mismatch("a known value type", "unknown")),
            Found::Container => self.deserialize_map(visitor),
            Found::Attachment(a) => visitor.visit_borrowed_bytes(a),
            Found::Absent => Err(Error::new(ErrorKind::Missing)),
        }
    }

    ints!(
        deserialize_i8 visit_i8 i8,
        deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32,
        deserialize_i64 visit_i64 i64,
        deserialize_u8 visit_u8 u8,
        deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32,
        deserialize_u64 visit_u64 u64,
        deserialize_i128 visit_i128 i128,
        deserialize_u128 visit_u128 u128
    );

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            Found::Bool(v) => visitor.visit_bool(v),
            other => Err(wrong("bool", other)),
        }
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            Found::Double(v) => visitor.visit_f64(v),
            other => Err(wrong("f64", other)),
        }
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            // Narrowed as `as` does (to the nearest f32): an f32 written
            // by `to_frame` comes back exactly.
            Found::Double(v) => visitor.visit_f32(v as f32),
            other => Err(wrong("f32", other)),
        }
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            Found::Str(s) => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => visitor.visit_char(c),
                    _ => Err(Error::mismatch("a char", "a longer or empty string")),
                }
            }
            other => Err(wrong("a char", other)),
        }
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            Found::Str(s) => visitor.visit_borrowed_str(s),
            other => Err(wrong("a string", other)),
        }
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            Found::Attachment(a) => visitor.visit_borrowed_bytes(a),
            other => Err(wrong("bytes (an attachment)", other)),
        }
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.found.get() {
            Found::Absent => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let len = self.len("a sequence")?;
        self.nested(|de, base| {
            visitor.visit_seq(SeqDe {
                de,
                base,
                next: 0,
                len,
            })
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_map<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let len = self.len("a map")?;
        self.nested(|de, _| visitor.visit_map(MapDe::new(de, len)))
    }
    fn deserialize_struct<V: Visitor<'de>>(
        mut self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.found.get() {
            Found::Container => {}
            other => return Err(wrong("a struct (a device)", other)),
        }
        self.nested(|de, base| {
            visitor.visit_map(StructDe {
                de,
                base,
                fields,
                next: 0,
                found: Held::ABSENT,
                seg: "",
            })
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.found.get() {
            Found::Str(s) => visitor.visit_enum(BorrowedStrDeserializer::<Error>::new(s)),
            other => Err(wrong("a unit variant name (a string)", other)),
        }
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }
}

/// A map key: a string, or an integer written in decimal.
struct Key<'de>(&'de str);

macro_rules! key_ints {
    ($($name:ident $visit:ident $t:ty),*) => {$(
        fn $name<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            match self.0.parse::<$t>() {
                Ok(v) => visitor.$visit(v),
                Err(_) => Err(Error::mismatch(
                    concat!("a map key that is a ", stringify!($t)),
                    "another string",
                )),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Key<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_str(self.0)
    }

    key_ints!(
        deserialize_i8 visit_i8 i8,
        deserialize_i16 visit_i16 i16,
        deserialize_i32 visit_i32 i32,
        deserialize_i64 visit_i64 i64,
        deserialize_i128 visit_i128 i128,
        deserialize_u8 visit_u8 u8,
        deserialize_u16 visit_u16 u16,
        deserialize_u32 visit_u32 u32,
        deserialize_u64 visit_u64 u64,
        deserialize_u128 visit_u128 u128
    );

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_enum(BorrowedStrDeserializer::<Error>::new(self.0))
    }

    forward_to_deserialize_any! {
        bool f32 f64 char str string bytes byte_buf option unit unit_struct
        seq tuple tuple_struct map struct identifier ignored_any
    }
}

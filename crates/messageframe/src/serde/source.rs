//! Where the deserializer reads parameters from: an owned [`Frame`], a
//! validated [`FrameView`], or raw bytes checked as they are read
//! ([`BytesSource`], `from_bytes`: one pass over the frame).

use super::lookup::Lookup;
use super::path::same;
use crate::decode::Refusal;
use crate::decode::{fast_value, read_value, CheckSink, Decoder, Layout, Sink, Walk, WireValue};
use crate::error::{Context, DecodeError, ErrorKind, Limit};
use crate::frame::Frame;
use crate::header::Header;
use crate::hooks::count_reads;
use crate::key::{find_separator, SEPARATOR_BYTE};
use crate::utf8::str_from;
use crate::value::{UnknownValue, ValueRef};
use crate::view::FrameView;
use crate::wire::read::Reader;

/// A parameter: `(device, param, value)`.
pub(crate) type Entry<'de> = (&'de str, &'de str, ValueRef<'de>);

/// What the frame holds for a field: a parameter's value (flattened, so
/// that it is small to pass around: an unknown tag's value is only ever
/// named in an error), a container, an attachment, or nothing.
#[derive(Clone, Copy)]
pub(crate) enum Found<'de> {
    Int(i64),
    Double(f64),
    Bool(bool),
    Str(&'de str),
    /// A value of an unknown tag.
    Unknown,
    /// No parameter, but a device of the field's name (a nested struct,
    /// map or sequence).
    Container,
    /// An attachment of the field's path.
    Attachment(&'de [u8]),
    Absent,
}

/// [`Found`] as it is kept between a field's lookup and the read of its
/// value (a struct's or map's current entry, a [`Value`](super::de)
/// deserializer's): separate scalar fields instead of an enum. Kept as the
/// enum, the compiler copied it as a block of bytes (from the byte after
/// its tag to its end) with 16-byte loads of what 1- and 8-byte stores had
/// just written, which the store buffer cannot forward: about 20 % of the
/// time of reading a struct went into those stalls (`perf record`, the
/// Order at 20 items). Fields of one type each are moved as they were
/// stored.
#[derive(Clone, Copy)]
pub(crate) struct Held<'de> {
    kind: HeldKind,
    /// Int: the value; Double: its bits; Bool: 0 or 1.
    num: u64,
    /// Str: the string (checked as UTF-8 when it was found).
    text: &'de str,
    /// Attachment: its data.
    data: &'de [u8],
}

// A whole word: no padding bytes in `Held` for a copy to carry along.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
enum HeldKind {
    Int,
    Double,
    Bool,
    Str,
    Unknown,
    Container,
    Attachment,
    Absent,
}

impl<'de> Held<'de> {
    pub(crate) const ABSENT: Held<'static> = Held {
        kind: HeldKind::Absent,
        num: 0,
        text: "",
        data: &[],
    };

    /// The enum again, for a `match` (built where it is matched, so it is
    /// never kept in memory).
    #[inline(always)]
    pub(crate) fn get(self) -> Found<'de> {
        match self.kind {
            HeldKind::Int => Found::Int(self.num as i64),
            HeldKind::Double => Found::Double(f64::from_bits(self.num)),
            HeldKind::Bool => Found::Bool(self.num != 0),
            HeldKind::Str => Found::Str(self.text),
            HeldKind::Unknown => Found::Unknown,
            HeldKind::Container => Found::Container,
            HeldKind::Attachment => Found::Attachment(self.data),
            HeldKind::Absent => Found::Absent,
        }
    }

    #[inline(always)]
    pub(crate) fn is_container(self) -> bool {
        self.kind == HeldKind::Container
    }
}

impl<'de> From<Found<'de>> for Held<'de> {
    #[inline(always)]
    fn from(f: Found<'de>) -> Self {
        let mut h = Held::ABSENT;
        match f {
            Found::Int(v) => {
                h.kind = HeldKind::Int;
                h.num = v as u64;
            }
            Found::Double(v) => {
                h.kind = HeldKind::Double;
                h.num = v.to_bits();
            }
            Found::Bool(v) => {
                h.kind = HeldKind::Bool;
                h.num = u64::from(v);
            }
            Found::Str(s) => {
                h.kind = HeldKind::Str;
                h.text = s;
            }
            Found::Unknown => h.kind = HeldKind::Unknown,
            Found::Container => h.kind = HeldKind::Container,
            Found::Attachment(a) => {
                h.kind = HeldKind::Attachment;
                h.data = a;
            }
            Found::Absent => {}
        }
        h
    }
}

impl<'de> From<ValueRef<'de>> for Found<'de> {
    #[inline(always)]
    fn from(v: ValueRef<'de>) -> Self {
        match v {
            ValueRef::Int(v) => Found::Int(v),
            ValueRef::Double(v) => Found::Double(v),
            ValueRef::Bool(v) => Found::Bool(v),
            ValueRef::String(s) => Found::Str(s),
            ValueRef::Unknown(_) => Found::Unknown,
        }
    }
}

/// Where the parameters come from: an owned frame or a view.
pub(crate) trait Source<'de> {
    /// The parameter at the cursor.
    fn peek(&mut self) -> Option<Entry<'de>>;
    /// Moves the cursor past the parameter `peek` returned.
    fn bump(&mut self);
    /// The value of the parameter at the cursor when it is `(device,
    /// param)`, the cursor moved past it; `None`, cursor unmoved, otherwise,
    /// and always once a lookup has moved the cursor ([`jumped`]).
    ///
    /// [`jumped`]: Source::jumped
    #[inline(always)]
    fn take(&mut self, device: &str, param: &str) -> Option<ValueRef<'de>> {
        if self.jumped() {
            return None;
        }
        let (d, p, v) = self.peek()?;
        if same(p, param) && same(d, device) {
            self.bump();
            Some(v)
        } else {
            None
        }
    }
    /// The value of `(device, param)` anywhere in the frame; the cursor
    /// moves past it.
    fn find(&mut self, device: &str, param: &str) -> Option<ValueRef<'de>>;
    /// Moves the cursor to the first parameter whose device is `path` or
    /// below it; `false` (cursor unmoved) if there is none.
    fn seek_device(&mut self, path: &str) -> bool;
    /// The data of the first attachment named `name`.
    fn attachment(&mut self, name: &str) -> Option<&'de [u8]>;
    /// Whether a sequence or map may record `len` elements: at most the
    /// frame's parameters and attachments in all, so that a hostile length
    /// cannot make a reader loop.
    fn allows_len(&mut self, len: usize) -> bool;
    /// Every parameter whose device is `path` or below it (every parameter
    /// for `""`), in frame order.
    fn within(&mut self, path: &str, f: &mut dyn FnMut(&'de str, &'de str, ValueRef<'de>));
    /// Whether a lookup has moved the cursor: from then on a parameter at
    /// the cursor may be a later occurrence of its key, and fields are
    /// found by lookup (the first occurrence wins, as everywhere).
    fn jumped(&self) -> bool;
    /// The key of the parameter at the cursor as it is on the wire (not
    /// split, not checked as UTF-8), for [`classify`] and [`within_raw`];
    /// `None` when the source has none at hand (at the end, once jumped, a
    /// parameter not in the forms encoders write): the caller then asks
    /// through [`peek`](Source::peek).
    ///
    /// [`classify`]: super::path::classify
    /// [`within_raw`]: super::path::within_raw
    #[inline(always)]
    fn head_key(&mut self) -> Option<&'de [u8]> {
        None
    }
    /// The value of the parameter whose key [`head_key`](Source::head_key)
    /// gave, the cursor moved past it; `None`, cursor unmoved, if it is not
    /// valid (`peek` then reads it again, and says why).
    #[inline(always)]
    fn take_head(&mut self) -> Option<Found<'de>> {
        None
    }
}

/// A source borrowed: the deserializer reads through it, and the caller
/// keeps the source (`from_bytes` then checks what was not read) without
/// moving it, a struct of several hundred bytes, in and out of the reader.
impl<'de, T: Source<'de> + ?Sized> Source<'de> for &mut T {
    #[inline(always)]
    fn peek(&mut self) -> Option<Entry<'de>> {
        (**self).peek()
    }
    #[inline(always)]
    fn bump(&mut self) {
        (**self).bump();
    }
    #[inline(always)]
    fn take(&mut self, device: &str, param: &str) -> Option<ValueRef<'de>> {
        (**self).take(device, param)
    }
    #[inline(always)]
    fn find(&mut self, device: &str, param: &str) -> Option<ValueRef<'de>> {
        (**self).find(device, param)
    }
    #[inline(always)]
    fn seek_device(&mut self, path: &str) -> bool {
        (**self).seek_device(path)
    }
    #[inline(always)]
    fn attachment(&mut self, name: &str) -> Option<&'de [u8]> {
        (**self).attachment(name)
    }
    #[inline(always)]
    fn allows_len(&mut self, len: usize) -> bool {
        (**self).allows_len(len)
    }
    #[inline(always)]
    fn within(&mut self, path: &str, f: &mut dyn FnMut(&'de str, &'de str, ValueRef<'de>)) {
        (**self).within(path, f);
    }
    #[inline(always)]
    fn jumped(&self) -> bool {
        (**self).jumped()
    }
    #[inline(always)]
    fn head_key(&mut self) -> Option<&'de [u8]> {
        (**self).head_key()
    }
    #[inline(always)]
    fn take_head(&mut self) -> Option<Found<'de>> {
        (**self).take_head()
    }
}

/// Attachments up to this many are looked up by a pass over them; more
/// through the [`Lookup`].
const LINEAR_ATTACHMENTS: usize = 8;

pub(crate) struct FrameSource<'de> {
    frame: &'de Frame,
    pos: usize,
    /// The entry at `pos`, once read (a field's check, the end of a
    /// container and the next field all look at the same entry).
    peeked: Option<Entry<'de>>,
    /// For reads away from the cursor but by key (which the frame's own
    /// index serves): built on first need.
    lookup: Option<Lookup<'de>>,
    jumped: bool,
    /// The last position whose read [`Source::head_key`] counted.
    counted: usize,
}

impl<'de> FrameSource<'de> {
    pub(crate) fn new(frame: &'de Frame) -> Self {
        FrameSource {
            frame,
            pos: 0,
            peeked: None,
            lookup: None,
            jumped: false,
            counted: usize::MAX,
        }
    }

    fn lookup(&mut self) -> &Lookup<'de> {
        let frame = self.frame;
        self.lookup.get_or_insert_with(|| {
            let params = frame.params();
            count_reads(params.len());
            Lookup::new(
                params.entries().iter().map(|e| params.parts(e)),
                frame.attachments().map(|(n, d)| (n, &d[..])),
            )
        })
    }

    fn move_to(&mut self, pos: usize) {
        self.jumped |= pos != self.pos;
        self.pos = pos;
        self.peeked = None;
    }
}

impl<'de> Source<'de> for FrameSource<'de> {
    #[inline]
    fn peek(&mut self) -> Option<Entry<'de>> {
        if self.peeked.is_none() {
            let params = self.frame.params();
            let e = params.entries().get(self.pos)?;
            count_reads(1);
            let (d, p) = params.parts(e);
            self.peeked = Some((d, p, params.value(e)));
        }
        self.peeked
    }

    #[inline]
    fn bump(&mut self) {
        self.pos += 1;
        self.peeked = None;
    }

    fn find(&mut self, device: &str, param: &str) -> Option<ValueRef<'de>> {
        let params = self.frame.params();
        let i = params.position(device, param, None)?;
        // Past it, as a read at the cursor leaves the cursor.
        self.move_to(i);
        self.pos = i + 1;
        Some(params.get(i))
    }

    fn seek_device(&mut self, path: &str) -> bool {
        match self.lookup().first_within(path) {
            Some(i) => {
                self.move_to(i);
                true
            }
            None => false,
        }
    }

    fn attachment(&mut self, name: &str) -> Option<&'de [u8]> {
        let frame = self.frame;
        if frame.attachment_count() <= LINEAR_ATTACHMENTS {
            return frame.attachment(name).map(|b| &b[..]);
        }
        self.lookup().attachment(name)
    }

    fn allows_len(&mut self, len: usize) -> bool {
        len <= self.frame.len() + self.frame.attachment_count()
    }

    fn within(&mut self, path: &str, f: &mut dyn FnMut(&'de str, &'de str, ValueRef<'de>)) {
        let frame = self.frame;
        let params = frame.params();
        let visit = |i: usize| {
            count_reads(1);
            let e = &params.entries()[i];
            let (d, p) = params.parts(e);
            f(d, p, params.value(e));
        };
        if path.is_empty() {
            (0..params.len()).for_each(visit);
            return;
        }
        self.lookup()
            .within_in_order(path)
            .into_iter()
            .for_each(visit);
    }

    fn jumped(&self) -> bool {
        self.jumped
    }

    /// The entry at the cursor's key as the frame holds it (as on the
    /// wire), so that a field in the order the frame was written is
    /// recognised by one comparison, as in a frame's bytes; none once a
    /// lookup has moved the cursor.
    #[inline(always)]
    fn head_key(&mut self) -> Option<&'de [u8]> {
        if self.jumped {
            return None;
        }
        let params = self.frame.params();
        let e = params.entries().get(self.pos)?;
        if self.counted != self.pos {
            // Read work, for the work bounds, once per entry.
            count_reads(1);
            self.counted = self.pos;
        }
        Some(e.key_in(params.text().as_bytes()))
    }

    #[inline(always)]
    fn take_head(&mut self) -> Option<Found<'de>> {
        if self.jumped {
            return None;
        }
        let params = self.frame.params();
        let value = params.value(params.entries().get(self.pos)?);
        self.bump();
        Some(value.into())
    }
}

pub(crate) struct ViewSource<'de> {
    view: FrameView<'de>,
    /// Byte offset of the parameter at the cursor, and how many remain.
    at: usize,
    remaining: usize,
    /// The parameter at the cursor and the offset after it, once read.
    peeked: Option<(Entry<'de>, usize)>,
    /// For reads away from the cursor, built on first need: the sorted
    /// keys, and where each parameter starts.
    lookup: Option<(Lookup<'de>, Vec<usize>)>,
    jumped: bool,
    /// The last offset whose read [`Source::head_key`] counted.
    counted: usize,
}

impl<'de> ViewSource<'de> {
    pub(crate) fn new(view: &FrameView<'de>) -> Self {
        let (at, remaining) = view.params_span();
        Self::at(view, at, remaining)
    }

    /// A cursor at the parameter at byte `at`, with `remaining` parameters
    /// from there to the end of the map.
    fn at(view: &FrameView<'de>, at: usize, remaining: usize) -> Self {
        ViewSource {
            view: *view,
            at,
            remaining,
            peeked: None,
            lookup: None,
            jumped: false,
            counted: usize::MAX,
        }
    }

    fn lookup(&mut self) -> &(Lookup<'de>, Vec<usize>) {
        if self.lookup.is_none() {
            let mut keys = Vec::with_capacity(self.view.len());
            let mut offsets = Vec::with_capacity(self.view.len());
            self.walk(|at, _, (d, p, _)| {
                keys.push((d, p));
                offsets.push(at);
                false
            });
            let lookup = Lookup::new(keys.into_iter(), self.view.attachments());
            self.lookup = Some((lookup, offsets));
        }
        self.lookup.as_ref().expect("built above")
    }

    /// The length of the key at the cursor when the fast reader may take
    /// it there: a fixstr, no lookup having moved the cursor, none read by
    /// `peek` yet.
    #[inline(always)]
    fn head_key_len(&self) -> Option<usize> {
        if self.jumped || self.remaining == 0 || self.peeked.is_some() {
            return None;
        }
        let m = *self.view.as_bytes().get(self.at)?;
        (m & 0xe0 == 0xa0).then_some(usize::from(m & 0x1f))
    }

    /// Moves the cursor to parameter number `pos` (of the frame's).
    fn move_to(&mut self, pos: usize) {
        let at = self.lookup().1[pos];
        self.jumped |= at != self.at;
        self.at = at;
        self.remaining = self.view.len() - pos;
        self.peeked = None;
    }

    /// The parameter at byte `at` of the validated frame and the offset
    /// after it. Keys and values in the forms encoders write (fixstr keys,
    /// `fixarray(2)` pairs) are read directly; anything else through the
    /// general reader. The frame was validated when the view was made, so
    /// these reads succeed; should one fail anyway, the parameters end.
    #[inline]
    fn entry_at(&self, at: usize) -> Option<(Entry<'de>, usize)> {
        count_reads(1);
        let bytes = self.view.as_bytes();
        let (key, v) = match *bytes.get(at)? {
            m @ 0xa0..=0xbf => {
                let end = at + 1 + usize::from(m & 0x1f);
                (bytes.get(at + 1..end)?, end)
            }
            _ => {
                let mut r = Reader::validated(bytes, at);
                let key = r.str_bytes().ok()?;
                (key, r.pos())
            }
        };
        let (value, next) = match fast_value(bytes, v, usize::MAX) {
            Some((WireValue::Int(x), end)) => (ValueRef::Int(x), end),
            Some((WireValue::Double(x), end)) => (ValueRef::Double(x), end),
            Some((WireValue::Bool(x), end)) => (ValueRef::Bool(x), end),
            Some((WireValue::Str(b), end)) => (ValueRef::String(str_from(b).ok()?), end),
            _ => {
                let mut r = Reader::validated(bytes, v);
                let value = read_value(&mut r).ok()?;
                (value, r.pos())
            }
        };
        let key = str_from(key).ok()?;
        // Keys are short: a byte loop beats a call to `memchr`.
        let (d, p) = match key.bytes().position(|b| b == SEPARATOR_BYTE) {
            Some(i) => (&key[..i], &key[i + 1..]),
            None => ("", key),
        };
        Some(((d, p, value), next))
    }

    /// Every parameter from the first: `(offset, remaining, entry, next)`.
    fn walk(&self, mut f: impl FnMut(usize, usize, Entry<'de>) -> bool) {
        let (mut at, mut remaining) = self.view.params_span();
        while remaining > 0 {
            let Some((entry, next)) = self.entry_at(at) else {
                return;
            };
            if f(at, remaining, entry) {
                return;
            }
            at = next;
            remaining -= 1;
        }
    }
}

impl<'de> Source<'de> for ViewSource<'de> {
    #[inline]
    fn peek(&mut self) -> Option<Entry<'de>> {
        if let Some((entry, _)) = self.peeked {
            return Some(entry);
        }
        if self.remaining == 0 {
            return None;
        }
        let Some(read) = self.entry_at(self.at) else {
            self.remaining = 0;
            return None;
        };
        self.peeked = Some(read);
        Some(read.0)
    }

    #[inline]
    fn bump(&mut self) {
        if self.peeked.is_none() && self.peek().is_none() {
            return;
        }
        if let Some((_, next)) = self.peeked.take() {
            self.at = next;
            self.remaining -= 1;
        }
    }

    fn find(&mut self, device: &str, param: &str) -> Option<ValueRef<'de>> {
        let pos = self.lookup().0.find(device, param)?;
        self.move_to(pos);
        let (_, _, v) = self.peek()?;
        self.bump();
        Some(v)
    }

    fn seek_device(&mut self, path: &str) -> bool {
        match self.lookup().0.first_within(path) {
            Some(pos) => {
                self.move_to(pos);
                true
            }
            None => false,
        }
    }

    fn attachment(&mut self, name: &str) -> Option<&'de [u8]> {
        if self.view.attachment_count() <= LINEAR_ATTACHMENTS {
            return self.view.attachment(name);
        }
        self.lookup().0.attachment(name)
    }

    fn allows_len(&mut self, len: usize) -> bool {
        len <= self.view.len() + self.view.attachment_count()
    }

    fn within(&mut self, path: &str, f: &mut dyn FnMut(&'de str, &'de str, ValueRef<'de>)) {
        if path.is_empty() {
            self.walk(|_, _, (d, p, v)| {
                f(d, p, v);
                false
            });
            return;
        }
        let (lookup, offsets) = self.lookup();
        let at: Vec<usize> = lookup
            .within_in_order(path)
            .into_iter()
            .map(|pos| offsets[pos])
            .collect();
        for at in at {
            if let Some(((d, p, v), _)) = self.entry_at(at) {
                f(d, p, v);
            }
        }
    }

    fn jumped(&self) -> bool {
        self.jumped
    }

    /// The raw key at the cursor when it is a fixstr (the form encoders
    /// write; others through [`peek`](Source::peek)): a field in the order
    /// the frame was written is then recognised by one comparison, as in
    /// `from_bytes`; none once a lookup has moved the cursor.
    #[inline(always)]
    fn head_key(&mut self) -> Option<&'de [u8]> {
        let n = self.head_key_len()?;
        if self.counted != self.at {
            // Read work, for the work bounds, once per parameter.
            count_reads(1);
            self.counted = self.at;
        }
        self.view.as_bytes().get(self.at + 1..self.at + 1 + n)
    }

    #[inline(always)]
    fn take_head(&mut self) -> Option<Found<'de>> {
        let n = self.head_key_len()?;
        // The view was validated: a value the fast reader does not take
        // goes through `peek`.
        let (value, next) = fast_value(self.view.as_bytes(), self.at + 1 + n, usize::MAX)?;
        let found = match value {
            WireValue::Int(v) => Found::Int(v),
            WireValue::Double(v) => Found::Double(v),
            WireValue::Bool(v) => Found::Bool(v),
            WireValue::Str(b) => Found::Str(str_from(b).ok()?),
            WireValue::Unknown(..) => return None,
        };
        self.at = next;
        self.remaining -= 1;
        Some(found)
    }
}

/// Turns what the walk finds into [`Entry`]s: keys and string values
/// checked as UTF-8 once, here, keys split at their first separator.
struct EntrySink<'de> {
    last: Option<Entry<'de>>,
    /// Lenient: `from_bytes` reads with `Decoder::new()`.
    check: CheckSink<'de, false>,
}

impl<'de> Sink<'de> for EntrySink<'de> {
    fn begin_params(&mut self, count: usize) -> Result<(), Limit> {
        self.check.begin_params(count)
    }

    #[inline(always)]
    fn param(&mut self, key: &'de [u8], value: WireValue<'de>) -> Result<(), Refusal> {
        self.last = Some(entry_of(key, value)?);
        Ok(())
    }

    fn begin_attachments(&mut self, count: usize) -> Result<(), Limit> {
        self.check.begin_attachments(count)
    }

    fn attachment(
        &mut self,
        name: &'de [u8],
        data: core::ops::Range<usize>,
    ) -> Result<(), Refusal> {
        self.check.attachment(name, data)
    }
}

/// A parameter from the wire: key and string value checked as UTF-8, the
/// key split at its first separator.
#[inline(always)]
fn entry_of<'de>(key: &'de [u8], value: WireValue<'de>) -> Result<Entry<'de>, Refusal> {
    let key = str_from(key).map_err(|_| Refusal::Utf8 { in_key: true })?;
    let value = value_of(value)?;
    let (d, p) = match find_separator(key.as_bytes()) {
        Some(i) => (&key[..i], &key[i + 1..]),
        None => ("", key),
    };
    Ok((d, p, value))
}

/// A value from the wire, a string checked as UTF-8.
#[inline(always)]
fn value_of(value: WireValue<'_>) -> Result<ValueRef<'_>, Refusal> {
    Ok(match value {
        WireValue::Int(v) => ValueRef::Int(v),
        WireValue::Double(v) => ValueRef::Double(v),
        WireValue::Bool(v) => ValueRef::Bool(v),
        WireValue::Str(b) => {
            ValueRef::String(str_from(b).map_err(|_| Refusal::Utf8 { in_key: false })?)
        }
        WireValue::Unknown(tag, raw) => ValueRef::Unknown(UnknownValue::from_wire(tag, raw)),
    })
}

/// A value as the fast path reads it: a string not checked as UTF-8 yet.
#[derive(Clone, Copy)]
enum HeadValue<'de> {
    Int(i64),
    Double(f64),
    Bool(bool),
    Str(&'de [u8]),
}

impl<'de> HeadValue<'de> {
    fn wire(self) -> WireValue<'de> {
        match self {
            HeadValue::Int(v) => WireValue::Int(v),
            HeadValue::Double(v) => WireValue::Double(v),
            HeadValue::Bool(v) => WireValue::Bool(v),
            HeadValue::Str(b) => WireValue::Str(b),
        }
    }
}

/// The parameter at the cursor, read by the fast path and not checked yet.
#[derive(Clone, Copy)]
struct Head<'de> {
    key: &'de [u8],
    value: HeadValue<'de>,
    /// The byte the parameter starts at.
    at: usize,
}

/// The frame being read front to back, each parameter checked as it is
/// reached.
struct Streaming<'de, 'd> {
    walk: Walk<'de, 'd>,
    header: Header,
    sink: EntrySink<'de>,
    /// Parameters read so far (the index of the next one).
    read: usize,
}

enum State<'de, 'd> {
    Streaming(Streaming<'de, 'd>),
    /// The whole frame checked (a lookup out of order, an attachment): the
    /// view's cursor from here on.
    View(ViewSource<'de>),
    /// The frame is invalid: no parameters; [`BytesSource::finish`] reports
    /// why.
    Failed,
}

/// Raw bytes, checked as they are read: a frame written in the order its
/// type reads it (as `to_bytes` writes it) is checked and read in one pass.
/// The first lookup out of that order, or of an attachment, checks the rest
/// of the frame and continues as a [`ViewSource`]. Whatever the type did
/// not read is checked by [`finish`](BytesSource::finish), so an invalid
/// frame is an error however little of it the type reads.
pub(crate) struct BytesSource<'de, 'd> {
    bytes: &'de [u8],
    state: State<'de, 'd>,
    /// While streaming: the parameter at the cursor as read by the fast
    /// path, its key and string not checked yet ([`Source::head_key`]).
    /// Never set together with `peeked`.
    head: Option<Head<'de>>,
    /// While streaming: the parameter at the cursor, once read and checked,
    /// and the byte it starts at. Kept out of `state` so that the check a
    /// field's lookup, the end of a container and the next field all make is
    /// one load, inlined.
    peeked: Option<(Entry<'de>, usize)>,
    error: Option<DecodeError>,
    params: usize,
}

impl<'de, 'd> BytesSource<'de, 'd> {
    pub(crate) fn new(dec: &'d Decoder, bytes: &'de [u8]) -> Result<Self, DecodeError> {
        let mut sink = EntrySink {
            last: None,
            check: CheckSink::new(dec),
        };
        let (walk, header) = Walk::start(dec, bytes, &mut sink)?;
        let params = walk.params();
        Ok(BytesSource {
            bytes,
            state: State::Streaming(Streaming {
                walk,
                header,
                sink,
                read: 0,
            }),
            head: None,
            peeked: None,
            error: None,
            params,
        })
    }

    /// Checks what was not read yet; the first error in the frame, if any.
    pub(crate) fn finish(mut self) -> Result<(), DecodeError> {
        if let State::Streaming(s) = &mut self.state {
            // Checked where it is, without switching to a view's cursor
            // (which moved the walk, a few hundred bytes, twice: a third
            // of reading a small record's fixed cost).
            if let Some(h) = self.head.take() {
                s.walk.rewind(h.at);
                s.read -= 1;
            }
            if let Err(e) = Self::check_tail(s, self.params, self.bytes.len()) {
                self.error = Some(e);
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Checks the parameters from the walk's, the attachments and that
    /// the frame ends the input; its layout.
    fn check_tail(
        s: &mut Streaming<'de, 'd>,
        params: usize,
        len: usize,
    ) -> Result<Layout, DecodeError> {
        (s.read..params).try_for_each(|i| s.walk.param(i, &mut s.sink))?;
        let layout = s.walk.finish(&mut s.sink)?;
        let end = layout.end();
        if end != len {
            return Err(DecodeError::new(
                ErrorKind::TrailingBytes { count: len - end },
                end,
                Context::Frame,
            ));
        }
        Ok(layout)
    }

    /// Checks the rest of the frame and switches to a view's cursor at the
    /// same parameter; on an invalid frame, records the error and fails.
    #[cold]
    #[inline(never)]
    fn check_rest(&mut self) {
        let State::Streaming(_) = self.state else {
            return;
        };
        let State::Streaming(mut s) = std::mem::replace(&mut self.state, State::Failed) else {
            return;
        };
        if let Some(h) = self.head.take() {
            // Read but not checked: checked with the rest.
            s.walk.rewind(h.at);
            s.read -= 1;
        }
        let (at, remaining) = match self.peeked.take() {
            Some((_, at)) => (at, self.params - s.read + 1),
            None => (s.walk.pos(), self.params - s.read),
        };
        let checked = Self::check_tail(&mut s, self.params, self.bytes.len())
            .map(|layout| FrameView::from_parts(self.bytes, s.header, layout));
        match checked {
            Ok(view) => self.state = State::View(ViewSource::at(&view, at, remaining)),
            Err(e) => self.error = Some(e),
        }
    }
}

impl<'de> BytesSource<'de, '_> {
    /// [`Source::peek`] without a parameter read already.
    #[inline(never)]
    fn peek_slow(&mut self) -> Option<Entry<'de>> {
        match &mut self.state {
            State::Streaming(s) => {
                if let Some(h) = self.head.take() {
                    if let Ok(entry) = entry_of(h.key, h.value.wire()) {
                        self.peeked = Some((entry, h.at));
                        return Some(entry);
                    }
                    // Not UTF-8: read again by the walk, which says where.
                    s.walk.rewind(h.at);
                    s.read -= 1;
                }
                if s.read == self.params {
                    return None;
                }
                let at = s.walk.pos();
                count_reads(1);
                if let Some((key, value)) = s.walk.fast_param() {
                    if let Ok(entry) = entry_of(key, value) {
                        s.read += 1;
                        self.peeked = Some((entry, at));
                        return Some(entry);
                    }
                    // Not UTF-8: read again by the walk, which says where.
                    s.walk.rewind(at);
                }
                match s.walk.param(s.read, &mut s.sink) {
                    Ok(()) => {
                        s.read += 1;
                        let entry = s.sink.last?;
                        self.peeked = Some((entry, at));
                        Some(entry)
                    }
                    Err(e) => {
                        self.error = Some(e);
                        self.state = State::Failed;
                        None
                    }
                }
            }
            State::View(v) => v.peek(),
            State::Failed => None,
        }
    }

    /// [`Source::bump`] without a parameter read already.
    #[inline(never)]
    fn bump_slow(&mut self) {
        match &mut self.state {
            State::Streaming(_) => {
                if self.peek_slow().is_some() {
                    self.peeked = None;
                }
            }
            State::View(v) => v.bump(),
            State::Failed => {}
        }
    }

    /// Reads the next parameter by the fast path into `head`, unchecked;
    /// `None`, reading nothing, at the end or for a parameter the fast path
    /// does not take. Once the frame is checked whole, the view's cursor
    /// answers.
    #[inline]
    fn read_head(&mut self) -> Option<&'de [u8]> {
        let s = match &mut self.state {
            State::Streaming(s) => s,
            State::View(v) => return v.head_key(),
            State::Failed => return None,
        };
        if s.read == self.params {
            return None;
        }
        let at = s.walk.pos();
        let (key, value) = s.walk.fast_param()?;
        let value = match value {
            WireValue::Int(v) => HeadValue::Int(v),
            WireValue::Double(v) => HeadValue::Double(v),
            WireValue::Bool(v) => HeadValue::Bool(v),
            WireValue::Str(b) => HeadValue::Str(b),
            WireValue::Unknown(..) => {
                s.walk.rewind(at);
                return None;
            }
        };
        count_reads(1);
        s.read += 1;
        self.head = Some(Head { key, value, at });
        Some(key)
    }
}

impl<'de> Source<'de> for BytesSource<'de, '_> {
    #[inline(always)]
    fn peek(&mut self) -> Option<Entry<'de>> {
        match self.peeked {
            Some((entry, _)) => Some(entry),
            None => self.peek_slow(),
        }
    }

    #[inline(always)]
    fn bump(&mut self) {
        if self.peeked.take().is_none() {
            self.bump_slow();
        }
    }

    #[inline(always)]
    fn head_key(&mut self) -> Option<&'de [u8]> {
        match self.head {
            Some(h) => Some(h.key),
            None if self.peeked.is_some() => None,
            None => self.read_head(),
        }
    }

    #[inline(always)]
    fn take_head(&mut self) -> Option<Found<'de>> {
        let Some(h) = self.head else {
            return match &mut self.state {
                State::View(v) => v.take_head(),
                _ => None,
            };
        };
        let found = match h.value {
            HeadValue::Int(v) => Found::Int(v),
            HeadValue::Double(v) => Found::Double(v),
            HeadValue::Bool(v) => Found::Bool(v),
            HeadValue::Str(b) => Found::Str(str_from(b).ok()?),
        };
        self.head = None;
        Some(found)
    }

    fn find(&mut self, device: &str, param: &str) -> Option<ValueRef<'de>> {
        self.check_rest();
        match &mut self.state {
            State::View(v) => v.find(device, param),
            _ => None,
        }
    }

    fn seek_device(&mut self, path: &str) -> bool {
        self.check_rest();
        match &mut self.state {
            State::View(v) => v.seek_device(path),
            _ => false,
        }
    }

    fn attachment(&mut self, name: &str) -> Option<&'de [u8]> {
        self.check_rest();
        match &mut self.state {
            State::View(v) => v.attachment(name),
            _ => None,
        }
    }

    fn allows_len(&mut self, len: usize) -> bool {
        if len <= self.params {
            return true;
        }
        // The attachments count too, and are not counted yet: checking the
        // rest of the frame counts them (and reading goes on as a view's).
        self.check_rest();
        match &mut self.state {
            State::View(v) => v.allows_len(len),
            _ => false,
        }
    }

    fn within(&mut self, path: &str, f: &mut dyn FnMut(&'de str, &'de str, ValueRef<'de>)) {
        self.check_rest();
        if let State::View(v) = &mut self.state {
            v.within(path, f);
        }
    }

    fn jumped(&self) -> bool {
        // Streaming reads never leave the cursor: the first lookup away
        // from it turns the source into a view's cursor.
        matches!(&self.state, State::View(v) if v.jumped())
    }
}

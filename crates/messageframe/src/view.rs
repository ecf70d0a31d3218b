//! The zero-copy view: a validated frame read in place.

#[allow(unused_imports)]
use crate::prelude::*;

use core::fmt;

use crate::decode::{
    fast_value, read_value, walk, CheckSink, Decoder, Layout, WireValue, KEYS_RECORDED,
};
use crate::error::{Context, DecodeError, ErrorKind};
use crate::frame::{Frame, FrameConfig};
use crate::header::Header;
use crate::key::{bytes_eq, find_separator, ComposedKey, FlatKey, SEPARATOR_BYTE};
use crate::value::ValueRef;
use crate::wire::read::Reader;

/// A frame read in place: keys, string values and attachments are borrowed
/// from the input bytes, nothing is copied or allocated.
///
/// Construction validates the whole frame (the same checks as the owned
/// decoder), so a `FrameView` is always a valid frame. Lookups scan the
/// parameters (O(n), no index is built); for many lookups in a large frame
/// decode into a [`Frame`] instead.
///
/// ```
/// use messageframe::{Frame, FrameView};
///
/// let mut frame = Frame::default();
/// frame.add("sdr_1", "rx_gain", 30.5);
/// frame.add("core", "fw", "v1.3.5");
/// frame.add_attachment("iq", vec![0xAB; 1024]);
/// let bytes = frame.encode()?;
///
/// let view = FrameView::new(&bytes)?;
/// assert_eq!(view.find("core", "fw").and_then(|v| v.as_str()), Some("v1.3.5"));
/// let (name, data) = view.attachments().next().unwrap();
/// assert_eq!((name, data.len()), ("iq", 1024));
/// // The data points into `bytes`: no copy.
/// assert!(bytes.as_ptr_range().contains(&data.as_ptr()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct FrameView<'a> {
    bytes: &'a [u8],
    header: Header,
    layout: Layout,
}

impl Decoder {
    /// Validates exactly one frame (trailing bytes are an error) and returns
    /// a borrowed view of it.
    #[inline]
    pub fn view<'a>(&self, bytes: &'a [u8]) -> Result<FrameView<'a>, DecodeError> {
        if self.is_strict() {
            self.view_exact::<true>(bytes)
        } else {
            self.view_exact::<false>(bytes)
        }
    }

    /// [`view`](Decoder::view) with the strictness a constant.
    pub(crate) fn view_exact<'a, const STRICT: bool>(
        &self,
        bytes: &'a [u8],
    ) -> Result<FrameView<'a>, DecodeError> {
        let view = self.view_with::<STRICT>(bytes)?;
        if view.bytes.len() != bytes.len() {
            return Err(DecodeError::new(
                ErrorKind::TrailingBytes {
                    count: bytes.len() - view.bytes.len(),
                },
                view.bytes.len(),
                Context::Frame,
            ));
        }
        Ok(view)
    }

    /// Validates the first frame of `bytes` and returns a view of it;
    /// [`FrameView::encoded_len`] says how many bytes it used.
    #[inline]
    pub fn view_prefix<'a>(&self, bytes: &'a [u8]) -> Result<FrameView<'a>, DecodeError> {
        if self.is_strict() {
            self.view_with::<true>(bytes)
        } else {
            self.view_with::<false>(bytes)
        }
    }

    /// [`view_prefix`](Decoder::view_prefix) with the strictness a
    /// constant: a lenient view's code holds none of the duplicate check.
    fn view_with<'a, const STRICT: bool>(
        &self,
        bytes: &'a [u8],
    ) -> Result<FrameView<'a>, DecodeError> {
        let mut sink = CheckSink::<STRICT>::new(self);
        let (header, layout) = walk(self, bytes, &mut sink)?;
        Ok(FrameView {
            bytes: &bytes[..layout.end()],
            header,
            layout,
        })
    }
}

/// Whether a wire key splits (at its first separator) into `(device, param)`.
#[inline(always)]
fn key_matches(key: &[u8], device: &str, param: &str) -> bool {
    let (d, p) = (device.as_bytes(), param.as_bytes());
    if key.len() == d.len() + 1 + p.len()
        && key[d.len()] == SEPARATOR_BYTE
        && bytes_eq(&key[..d.len()], d)
        && bytes_eq(&key[d.len() + 1..], p)
    {
        // The separator found must be the first one.
        return !d.contains(&SEPARATOR_BYTE);
    }
    // A key without separator is device "" and the whole key as parameter.
    d.is_empty() && key == p && !p.contains(&SEPARATOR_BYTE)
}

/// The value of the `[tag, value]` pair at `at` of validated bytes.
#[inline(always)]
fn value_at(bytes: &[u8], at: usize) -> Option<ValueRef<'_>> {
    match fast_value(bytes, at, usize::MAX) {
        Some((WireValue::Int(v), _)) => Some(ValueRef::Int(v)),
        Some((WireValue::Double(v), _)) => Some(ValueRef::Double(v)),
        Some((WireValue::Bool(v), _)) => Some(ValueRef::Bool(v)),
        Some((WireValue::Str(b), _)) => crate::utf8::str_from(b).ok().map(ValueRef::String),
        _ => read_value(&mut Reader::validated(bytes, at)).ok(),
    }
}

/// Where the `[tag, value]` pair at `at` of validated bytes ends: the forms
/// encoders write (fixarray(2), fixint tag, a scalar or short string) here,
/// anything else through the general skip.
#[inline(always)]
fn skip_pair_at(bytes: &[u8], at: usize) -> Option<usize> {
    if let Some(&[0x92, tag, m]) = bytes.get(at..at + 3) {
        if tag < 0x80 {
            let size = crate::wire::read::scalar_size(m);
            if size > 0 && at + 2 + size <= bytes.len() {
                return Some(at + 2 + size);
            }
        }
    }
    let mut r = Reader::validated(bytes, at);
    r.skip().ok()?;
    Some(r.pos())
}

impl<'a> FrameView<'a> {
    /// Validates exactly one frame with the default [`Decoder`].
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Result<FrameView<'a>, DecodeError> {
        // Lenient, known at compile time: the view's code holds nothing of
        // the strict decode's duplicate check.
        Decoder::new().view_exact::<false>(bytes)
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Number of parameters.
    #[must_use]
    pub fn len(&self) -> usize {
        self.layout.params()
    }

    /// Whether the frame has no parameters.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.layout.params() == 0
    }

    /// The frame's bytes (exactly the bytes it was validated from).
    #[must_use]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// How many input bytes the frame occupies.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.bytes.len()
    }

    fn reader_at(&self, pos: usize) -> Reader<'a> {
        Reader::validated(self.bytes, pos)
    }

    /// The value of `(device, param)`, borrowed from the input. A linear scan
    /// that compares key bytes and skips values without decoding them; the
    /// first occurrence of a duplicate key is found.
    #[must_use]
    pub fn find(&self, device: &str, param: &str) -> Option<ValueRef<'a>> {
        let d = device.as_bytes();
        let composed = match ComposedKey::new(d, param.as_bytes()) {
            Some(k)
                if !d.is_empty() && find_separator(d).is_none() && self.layout.keys_recorded() =>
            {
                k
            }
            _ => {
                return self.find_general(
                    self.layout.params_at(),
                    self.layout.params(),
                    device,
                    param,
                )
            }
        };
        // The key is a fixstr: one marker byte that says "string of exactly
        // this length" rules out most other keys without looking at their
        // bytes. The first keys' offsets were recorded by the walk, so they
        // are read independently of one another; past them each key's
        // offset comes from stepping over the pair before it. The loop works
        // on offsets into the validated bytes, not through a `Reader`.
        let marker = 0xa0 | composed.len() as u8;
        let bytes = self.bytes;
        let count = self.layout.params();
        let mut next = 0;
        for i in 0..count {
            let p = match self.layout.first_keys.get(i) {
                Some(&at) => at as usize,
                None => next,
            };
            let m = *bytes.get(p)?;
            if m & 0xe0 != 0xa0 {
                // A key in a wider string form (a non-minimal str8, say):
                // the general comparison from here on.
                return self.find_general(p, count - i, device, param);
            }
            let v = p + 1 + usize::from(m & 0x1f);
            if m == marker && composed.eq_same_len(bytes.get(p + 1..v)?) {
                return value_at(bytes, v);
            }
            if i + 1 >= KEYS_RECORDED {
                next = skip_pair_at(bytes, v)?;
            }
        }
        None
    }

    /// [`find`](FrameView::find) for any key, over the `count` parameters
    /// from byte `at`: every key read and split.
    #[cold]
    fn find_general(
        &self,
        at: usize,
        count: usize,
        device: &str,
        param: &str,
    ) -> Option<ValueRef<'a>> {
        let mut r = self.reader_at(at);
        for _ in 0..count {
            let key = r.str_bytes().ok()?;
            if key_matches(key, device, param) {
                return read_value(&mut r).ok();
            }
            r.skip_pair().ok()?;
        }
        None
    }

    /// [`find`](FrameView::find) with a pre-composed key.
    #[must_use]
    pub fn find_flat(&self, key: &FlatKey) -> Option<ValueRef<'a>> {
        self.find(key.device(), key.param())
    }

    /// Whether `(device, param)` is present.
    #[must_use]
    pub fn contains(&self, device: &str, param: &str) -> bool {
        self.find(device, param).is_some()
    }

    /// The parameters as `(device, param, value)` in wire order, borrowed
    /// from the input.
    pub fn iter(&self) -> ViewParams<'a> {
        ViewParams {
            reader: self.reader_at(self.layout.params_at()),
            remaining: self.layout.params(),
        }
    }

    /// The attachments as `(name, data)` in wire order, borrowed from the
    /// input.
    pub fn attachments(&self) -> ViewAttachments<'a> {
        ViewAttachments {
            reader: self.reader_at(self.layout.attachments_at()),
            remaining: self.layout.attachments(),
        }
    }

    /// Where the parameter map's first key is, and how many parameters
    /// follow: the serde bridge's cursor walks them in place.
    #[cfg(feature = "serde")]
    pub(crate) fn params_span(&self) -> (usize, usize) {
        (self.layout.params_at(), self.layout.params())
    }

    /// The view of a frame that a walk validated: `bytes` holds exactly it.
    #[cfg(feature = "serde")]
    pub(crate) fn from_parts(bytes: &'a [u8], header: Header, layout: Layout) -> Self {
        FrameView {
            bytes,
            header,
            layout,
        }
    }

    /// The data of the first attachment with this name.
    #[must_use]
    pub fn attachment(&self, name: &str) -> Option<&'a [u8]> {
        self.attachments().find(|(n, _)| *n == name).map(|(_, d)| d)
    }

    /// Number of attachments.
    #[must_use]
    pub fn attachment_count(&self) -> usize {
        self.layout.attachments()
    }

    /// Copies the view into an owned [`Frame`], the same frame an owned
    /// decode of the bytes gives (keys are kept exactly as on the wire, so
    /// both encode to the same bytes).
    #[must_use]
    pub fn to_frame(&self) -> Frame {
        let config = FrameConfig::for_params(self.len())
            .text_bytes(0)
            .attachments(self.attachment_count());
        let mut frame = Frame::with_config(self.header, config);
        let mut r = self.reader_at(self.layout.params_at());
        for _ in 0..self.layout.params() {
            // The frame was validated when the view was made, so these reads
            // succeed; should one fail anyway, the copy ends.
            let Ok(key) = r.str() else { break };
            let Ok(value) = read_value(&mut r) else { break };
            frame.params_mut().push_wire(key, value);
        }
        for (name, data) in self.attachments() {
            frame.add_attachment_copy(name, data);
        }
        frame
    }
}

impl<'a> From<FrameView<'a>> for Frame {
    fn from(view: FrameView<'a>) -> Frame {
        view.to_frame()
    }
}

impl fmt::Debug for FrameView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameView")
            .field("header", &self.header)
            .field("params", &self.iter().collect::<Vec<_>>())
            .field(
                "attachments",
                &self
                    .attachments()
                    .map(|(n, d)| (n, d.len()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Iterator over a view's parameters: `(device, param, value)`.
#[derive(Clone, Debug)]
pub struct ViewParams<'a> {
    reader: Reader<'a>,
    remaining: usize,
}

impl<'a> Iterator for ViewParams<'a> {
    type Item = (&'a str, &'a str, ValueRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        // The frame was validated when the view was made, so these reads
        // succeed; should one fail anyway, the iteration ends.
        let item = (|| {
            let key = self.reader.str().ok()?;
            let value = read_value(&mut self.reader).ok()?;
            let (d, p) = crate::key::split_flat(key);
            Some((d, p, value))
        })();
        if item.is_none() {
            self.remaining = 0;
        }
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for ViewParams<'_> {}

/// Iterator over a view's attachments: `(name, data)`.
#[derive(Clone, Debug)]
pub struct ViewAttachments<'a> {
    reader: Reader<'a>,
    remaining: usize,
}

impl<'a> Iterator for ViewAttachments<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let item = (|| {
            let extra = self.reader.array_at_least(2).ok()?;
            let name = self.reader.str().ok()?;
            let range = self.reader.bin().ok()?;
            self.reader.skip_n(extra).ok()?;
            Some((name, &self.reader.input()[range]))
        })();
        if item.is_none() {
            self.remaining = 0;
        }
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for ViewAttachments<'_> {}

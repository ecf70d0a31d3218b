//! [`FrameEncoder`]: a frame's bytes written straight into a byte slice,
//! parameter by parameter, with no [`Frame`](crate::Frame) in between: no
//! entry table, no text arena, no lookup index, no heap. What a sensor node
//! that only sends needs, and in a fraction of the code
//! (docs/performance.md, "Code size on a microcontroller").

use crate::encode::{double_pair_len, double_repr, header_len, DoubleRepr};
use crate::error::EncodeError;
use crate::header::Header;
use crate::key::SEPARATOR_BYTE;
use crate::value::{ToValueRef, ValueRef, TAG_BOOL, TAG_DOUBLE, TAG_INT, TAG_STRING};
use crate::wire::write::{
    append, int_len, len_prefix_len, write_bin_len, write_int, write_str, write_str_header,
    write_uint, Out,
};

/// The longest string or bin, and the largest count, MessagePack can say.
const MAX_LEN: usize = u32::MAX as usize;

/// Writes one frame into a byte slice as its parameters and attachments are
/// given: the same bytes as [`Frame::encode`](crate::Frame::encode) of a
/// frame filled with the same calls, in the same order.
///
/// Parameters come first, then attachments (the wire puts the parameter
/// map before the attachment list: the first attachment closes the map).
/// Nothing is allocated and nothing is kept but the slice and a few
/// counters; a parameter or attachment that does not fit is refused with
/// [`EncodeError::BufferTooSmall`] and leaves what was written before it
/// as it was, so the caller can [`finish`](FrameEncoder::finish) with less
/// or start again in a larger buffer.
///
/// As with [`Frame::add`](crate::Frame::add), keys are not checked: a
/// device must not contain U+001F (the separator; [`Frame::try_add`] is the
/// checked insert), and a key given twice is written twice.
///
/// [`Frame::try_add`]: crate::Frame::try_add
///
/// ```
/// use messageframe::{Frame, FrameEncoder, Header};
///
/// let header = Header::builder().message_id(1001).source(50).target(99).timestamp(7).build();
/// let mut buf = [0u8; 128];
/// let mut enc = FrameEncoder::new(&mut buf, &header)?;
/// enc.add("sensor_alpha", "voltage", 12.6)?;
/// enc.add("device_core", "fw_version", "v3.2.1")?;
/// enc.attachment("raw", &[0xAB; 4])?;
/// let len = enc.finish()?;
///
/// // The same bytes as a Frame with the same content.
/// let mut frame = Frame::new(header);
/// frame.add("sensor_alpha", "voltage", 12.6);
/// frame.add("device_core", "fw_version", "v3.2.1");
/// frame.add_attachment("raw", vec![0xAB; 4]);
/// assert_eq!(&buf[..len], &frame.encode()?[..]);
/// # Ok::<(), messageframe::EncodeError>(())
/// ```
#[derive(Debug)]
pub struct FrameEncoder<'a> {
    out: SliceOut<'a>,
    /// Where the parameter map's one-byte header is.
    map_at: usize,
    params: usize,
    /// Where the attachment list's one-byte header is, once the first
    /// attachment closed the parameter map.
    list_at: Option<usize>,
    attachments: usize,
}

impl<'a> FrameEncoder<'a> {
    /// Starts a frame with `header` at the start of `buf`.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] if `buf` cannot hold the header.
    pub fn new(buf: &'a mut [u8], header: &Header) -> Result<Self, EncodeError> {
        // `0x93`, a header of 8 integers of at most 9 bytes, the map byte.
        let most = 1 + 2 + 8 * 9 + 1;
        let mut out = SliceOut { buf, pos: 0 };
        if out.room() < most {
            let needed = 1 + header_len(header) + 1;
            out.need(needed)?;
        }
        out.extend_from_slice(&[0x93, 0x98]);
        // The frame encoder's `write_header`, for size: one call of each
        // integer writer a field (the same bytes: tests).
        let h = header;
        for v in [
            h.timestamp(),
            h.counter(),
            h.source().into(),
            h.target().into(),
        ] {
            put_uint(&mut out, v);
        }
        put_int(&mut out, h.message_id().into());
        put_int(&mut out, h.message_type().into());
        put_uint(&mut out, h.version().into());
        put_uint(&mut out, h.flags().into());
        let map_at = out.pos;
        out.push(0x80);
        Ok(FrameEncoder {
            out,
            map_at,
            params: 0,
            list_at: None,
            attachments: 0,
        })
    }

    /// Appends the parameter `(device, param) = value`.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] if it does not fit (nothing of it is
    /// written); [`EncodeError::ParamAfterAttachment`] after an attachment;
    /// [`EncodeError::TooManyParams`] past 4,294,967,295 parameters.
    pub fn add(
        &mut self,
        device: &str,
        param: &str,
        value: impl ToValueRef,
    ) -> Result<&mut Self, EncodeError> {
        if self.list_at.is_some() {
            return Err(EncodeError::ParamAfterAttachment);
        }
        self.put(device.as_bytes(), param.as_bytes(), value.to_value_ref())?;
        Ok(self)
    }

    fn put(&mut self, device: &[u8], param: &[u8], value: ValueRef<'_>) -> Result<(), EncodeError> {
        let key_len = device.len() + 1 + param.len();
        let (value_len, string) = match value {
            ValueRef::String(s) => (s.len(), s.len()),
            ValueRef::Unknown(u) => (u.raw().len(), 0),
            _ => (0, 0),
        };
        // Key prefix 5, key, pair 2, value prefix or scalar 9, tag 9.
        if self.out.room() < key_len + value_len + 25 {
            if key_len > MAX_LEN || string > MAX_LEN {
                return Err(EncodeError::BufferTooSmall {
                    needed: usize::MAX,
                    available: self.out.room(),
                });
            }
            let exact = len_prefix_len(key_len, Some(31), true) + key_len + pair_len(&value);
            self.out.need(exact)?;
        }
        if self.params == MAX_LEN {
            return Err(EncodeError::TooManyParams {
                count: self.params + 1,
            });
        }
        let out = &mut self.out;
        write_str_header(out, key_len);
        out.extend_from_slice(device);
        out.push(SEPARATOR_BYTE);
        out.extend_from_slice(param);
        write_value(out, value);
        self.params += 1;
        Ok(())
    }

    /// Appends the attachment `name` with a copy of `data`. The first
    /// attachment closes the parameter map.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] if it does not fit (nothing of it is
    /// written; the map stays open if it was), or the map's count does not
    /// fit its header (see [`finish`](FrameEncoder::finish)).
    pub fn attachment(&mut self, name: &str, data: &[u8]) -> Result<&mut Self, EncodeError> {
        let index = self.attachments;
        if name.len() > MAX_LEN {
            return Err(EncodeError::AttachmentNameTooLarge {
                index,
                len: name.len(),
            });
        }
        if data.len() > MAX_LEN {
            return Err(EncodeError::AttachmentTooLarge {
                index,
                len: data.len(),
            });
        }
        let list = usize::from(self.list_at.is_none());
        let map = if self.list_at.is_none() {
            grown_header(self.params)
        } else {
            0
        };
        let exact = list
            + map
            + 1
            + len_prefix_len(name.len(), Some(31), true)
            + name.len()
            + len_prefix_len(data.len(), None, true)
            + data.len();
        self.out.need(exact)?;
        if self.list_at.is_none() {
            close(&mut self.out, self.map_at, self.params, 0x80, 0xde, 0xdf)?;
            self.list_at = Some(self.out.pos);
            self.out.push(0x90);
        }
        let out = &mut self.out;
        out.push(0x92);
        write_str(out, name.as_bytes());
        write_bin_len(out, data.len());
        append(out, data);
        self.attachments += 1;
        Ok(self)
    }

    /// Bytes written so far (the headers of the map and of the attachment
    /// list take their final size at [`finish`](FrameEncoder::finish)).
    #[must_use]
    pub fn len(&self) -> usize {
        self.out.pos
    }

    /// Whether nothing was written (never: the header is written by
    /// [`new`](FrameEncoder::new)).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.out.pos == 0
    }

    /// Parameters written so far.
    #[must_use]
    pub fn params(&self) -> usize {
        self.params
    }

    /// Completes the frame: the map's and the attachment list's headers
    /// take their shortest form (more than 15 of either moves what follows
    /// by 2 or 4 bytes). Returns the frame's length: the frame is
    /// `buf[..len]`.
    ///
    /// # Errors
    ///
    /// [`EncodeError::BufferTooSmall`] if the longer header of more than
    /// 15 parameters or attachments does not fit.
    pub fn finish(mut self) -> Result<usize, EncodeError> {
        match self.list_at {
            None => {
                self.out.need(1 + grown_header(self.params))?;
                close(&mut self.out, self.map_at, self.params, 0x80, 0xde, 0xdf)?;
                self.out.push(0x90);
            }
            Some(at) => close(&mut self.out, at, self.attachments, 0x90, 0xdc, 0xdd)?,
        }
        Ok(self.out.pos)
    }
}

/// A value's `[tag, value]` pair (room was checked), the same bytes as the
/// frame encoder's pair writers. Written for size: one out-of-line copy of
/// each integer writer, where the frame encoder inlines them for speed
/// (this path is the one a microcontroller links: docs/performance.md).
#[inline(never)]
fn write_value(out: &mut SliceOut<'_>, value: ValueRef<'_>) {
    let tag = match value {
        ValueRef::Int(_) => TAG_INT,
        ValueRef::Double(_) => TAG_DOUBLE,
        ValueRef::Bool(_) => TAG_BOOL,
        ValueRef::String(_) => TAG_STRING,
        ValueRef::Unknown(_) => {
            out.push(0x92);
            0
        }
    };
    if tag != 0 {
        out.extend_from_slice(&[0x92, tag]);
    }
    match value {
        ValueRef::Int(v) => put_int(out, v),
        ValueRef::Double(v) => match double_repr(v) {
            DoubleRepr::Uint(u) => put_uint(out, u),
            DoubleRepr::Int(i) => put_int(out, i),
            DoubleRepr::Float(f) => {
                out.push(0xcb);
                out.extend_from_slice(&f.to_bits().to_be_bytes());
            }
        },
        ValueRef::Bool(v) => out.push(if v { 0xc3 } else { 0xc2 }),
        ValueRef::String(s) => write_str(out, s.as_bytes()),
        ValueRef::Unknown(u) => {
            match i64::try_from(u.tag()) {
                Ok(t) => put_int(out, t),
                Err(_) => put_uint(out, u.tag() as u64),
            }
            out.extend_from_slice(u.raw());
        }
    }
}

#[inline(never)]
fn put_int(out: &mut SliceOut<'_>, v: i64) {
    write_int(out, v);
}

#[inline(never)]
fn put_uint(out: &mut SliceOut<'_>, v: u64) {
    write_uint(out, v);
}

/// The bytes a map or list header of `count` takes beyond its one
/// reserved byte.
fn grown_header(count: usize) -> usize {
    match count {
        0..=15 => 0,
        16..=0xffff => 2,
        _ => 4,
    }
}

/// Writes the header of the map or list of `count` elements whose one-byte
/// header was reserved at `at`, moving what follows when it takes more.
fn close(
    out: &mut SliceOut<'_>,
    at: usize,
    count: usize,
    fix: u8,
    m16: u8,
    m32: u8,
) -> Result<(), EncodeError> {
    let grow = grown_header(count);
    out.need(grow)?;
    if grow > 0 {
        // Byte by byte from the end, not `copy_within`: more than 15
        // parameters or attachments is not what a small node sends, and
        // `memmove` would take 1.5 KB of its flash.
        let end = out.pos;
        for i in (at + 1..end).rev() {
            out.buf[i + grow] = out.buf[i];
        }
        out.pos += grow;
    }
    let b = &mut out.buf[at..];
    match count {
        0..=15 => b[0] = fix | count as u8,
        16..=0xffff => {
            b[0] = m16;
            b[1..3].copy_from_slice(&(count as u16).to_be_bytes());
        }
        _ => {
            b[0] = m32;
            b[1..5].copy_from_slice(&(count as u32).to_be_bytes());
        }
    }
    Ok(())
}

/// Exact size of a value's `[tag, value]` pair.
fn pair_len(v: &ValueRef<'_>) -> usize {
    2 + match v {
        ValueRef::Int(v) => int_len(*v),
        ValueRef::Double(v) => double_pair_len(*v) - 2,
        ValueRef::Bool(_) => 1,
        ValueRef::String(s) => len_prefix_len(s.len(), Some(31), true) + s.len(),
        // The tag is in the pair's 2 bytes only when it is a fixint.
        ValueRef::Unknown(u) => {
            let tag = match i64::try_from(u.tag()) {
                Ok(t) => int_len(t),
                Err(_) => 9,
            };
            tag - 1 + u.raw().len()
        }
    }
}

/// The slice being written and how far.
#[derive(Debug)]
struct SliceOut<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl SliceOut<'_> {
    #[inline(always)]
    fn room(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// `Ok` if `n` more bytes fit.
    #[inline]
    fn need(&self, n: usize) -> Result<(), EncodeError> {
        if n <= self.room() {
            Ok(())
        } else {
            Err(EncodeError::BufferTooSmall {
                needed: self.pos.saturating_add(n),
                available: self.buf.len(),
            })
        }
    }
}

/// Writes only where room was checked for first ([`SliceOut::need`]).
impl Out for SliceOut<'_> {
    #[inline(always)]
    fn push(&mut self, b: u8) {
        self.buf[self.pos] = b;
        self.pos += 1;
    }
    #[inline(always)]
    fn extend_from_slice(&mut self, s: &[u8]) {
        self.buf[self.pos..self.pos + s.len()].copy_from_slice(s);
        self.pos += s.len();
    }
    #[inline(always)]
    fn try_reserve(&mut self, _n: usize) -> bool {
        true
    }
    #[inline(always)]
    fn put_word(&mut self, word: u64, len: usize) {
        self.extend_from_slice(&word.to_le_bytes()[..len]);
    }
    #[inline(always)]
    fn tail_addr(&self) -> Option<usize> {
        Some(self.buf.as_ptr() as usize + self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frame;
    use crate::prelude::*;
    use crate::value::UnknownValue;

    fn header() -> Header {
        Header::from_fields(1_764_000_000_123, 7, 50, 99, -3, 1001, 1, 0)
    }

    /// Fills a frame and an encoder with the same calls and compares.
    fn same_bytes(params: usize, attachments: usize) {
        let mut frame = Frame::new(header());
        let mut buf = vec![0u8; 16 << 10];
        let mut enc = FrameEncoder::new(&mut buf, &header()).unwrap();
        for k in 0..params {
            let (d, p) = (format!("d{}", k % 8), format!("p{k}"));
            match k % 5 {
                0 => {
                    frame.add(&d, &p, k as f64 * 1.5 + 0.25);
                    enc.add(&d, &p, k as f64 * 1.5 + 0.25).unwrap();
                }
                1 => {
                    let v = (k as i64) * -1000;
                    frame.add(&d, &p, v);
                    enc.add(&d, &p, v).unwrap();
                }
                2 => {
                    frame.add(&d, &p, k % 3 == 0);
                    enc.add(&d, &p, k % 3 == 0).unwrap();
                }
                3 => {
                    let s = "v".repeat(k % 40);
                    frame.add(&d, &p, s.as_str());
                    enc.add(&d, &p, s.as_str()).unwrap();
                }
                _ => {
                    let u = ValueRef::Unknown(UnknownValue::new(70_000, &[0xc0]).unwrap());
                    frame.add(&d, &p, u);
                    enc.add(&d, &p, u).unwrap();
                }
            }
        }
        for a in 0..attachments {
            let data = vec![a as u8; a * 7];
            frame.add_attachment(&format!("att{a}"), data.clone());
            enc.attachment(&format!("att{a}"), &data).unwrap();
        }
        let len = enc.finish().unwrap();
        assert_eq!(
            &buf[..len],
            &frame.encode().unwrap()[..],
            "{params} params, {attachments} attachments"
        );
    }

    #[test]
    fn writes_what_frame_encode_writes_at_every_header_size() {
        // Under Miri (.ci/miri.sh) without the map16 of 300 parameters,
        // which the 16 already takes.
        let params: &[usize] = if cfg!(miri) {
            &[0, 1, 15, 16]
        } else {
            &[0, 1, 15, 16, 300]
        };
        for &params in params {
            for attachments in [0, 1, 15, 16] {
                same_bytes(params, attachments);
            }
        }
    }

    #[test]
    fn refuses_what_does_not_fit_and_keeps_what_did() {
        let mut frame = Frame::new(header());
        frame.add("dev", "a", 1);
        let want = frame.encode().unwrap();
        for size in 0..want.len() + 8 {
            let mut buf = vec![0u8; size];
            let result = FrameEncoder::new(&mut buf, &header()).and_then(|mut enc| {
                enc.add("dev", "a", 1)?;
                let before = enc.len();
                // A parameter too large for what is left: refused, nothing
                // of it written.
                let big = "x".repeat(100);
                assert!(matches!(
                    enc.add("dev", "b", big.as_str()),
                    Err(EncodeError::BufferTooSmall { .. })
                ));
                assert_eq!(enc.len(), before);
                enc.finish()
            });
            match result {
                Ok(len) => {
                    assert!(size >= want.len());
                    assert_eq!(&buf[..len], &want[..]);
                }
                Err(EncodeError::BufferTooSmall { needed, available }) => {
                    assert!(size < want.len(), "{size}");
                    assert_eq!(available, size);
                    assert!(needed > size);
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn a_parameter_after_an_attachment_is_refused() {
        let mut buf = [0u8; 256];
        let mut enc = FrameEncoder::new(&mut buf, &header()).unwrap();
        enc.add("d", "p", 1).unwrap().attachment("a", &[1]).unwrap();
        assert_eq!(
            enc.add("d", "q", 2).map(|_| ()),
            Err(EncodeError::ParamAfterAttachment)
        );
        let len = enc.finish().unwrap();
        let back = Frame::decode(&buf[..len]).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back.attachment_count(), 1);
    }

    #[test]
    fn a_map_header_that_outgrows_the_buffer_at_the_end_is_an_error() {
        // 16 parameters fill the buffer exactly with a one-byte map header;
        // the map16 header needs 2 bytes more.
        let mut probe = vec![0u8; 4096];
        let mut enc = FrameEncoder::new(&mut probe, &header()).unwrap();
        for k in 0..16 {
            enc.add("d", &format!("p{k:02}"), 1).unwrap();
        }
        let open = enc.len();
        let mut buf = vec![0u8; open + 1];
        let mut enc = FrameEncoder::new(&mut buf, &header()).unwrap();
        for k in 0..16 {
            enc.add("d", &format!("p{k:02}"), 1).unwrap();
        }
        assert!(matches!(
            enc.finish(),
            Err(EncodeError::BufferTooSmall { .. })
        ));
    }
}

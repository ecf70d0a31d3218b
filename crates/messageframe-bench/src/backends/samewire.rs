//! The same-wire floor: rmp's low-level functions writing and reading
//! **exactly messageframe's wire layout** (SPEC 2: `[header of 8 ints,
//! {"device\x1Fparam": [tag, value]}, [[name, bin]]]`, the same bytes as
//! `Frame::encode`, checked by a test), with nothing on top: no frame, no
//! document, no lookup structure. The writer works straight from the
//! inputs; the reader checks the layout and records each parameter and
//! attachment as offsets into the receive buffer, in kept `Vec`s (the
//! reused group allocates nothing).
//!
//! It is the floor of the work messageframe's own round trip does: the
//! flat floor ([`super::floor`]) writes a bare map with no header and no
//! tags, less work than this wire.

use std::mem;

use rmp::{decode, encode, Marker};

use super::floor::{Scalar, Span};
use super::{att_len, Backend, Read};
use crate::scenario::{InputValue, Inputs, Probe};

/// The header the floor writes (the fields messageframe's rows use:
/// message id 200, type 7, source 1, target 2, the iteration as counter),
/// its timestamp fixed when the backend is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WireHeader {
    /// Milliseconds since the UNIX epoch.
    pub timestamp: u64,
    /// Message counter.
    pub counter: u64,
    /// Source id.
    pub source: u32,
    /// Target id.
    pub target: u32,
    /// Message id.
    pub message_id: i32,
    /// Message type.
    pub message_type: i32,
    /// Protocol version.
    pub version: u16,
    /// Flags.
    pub flags: u16,
}

impl WireHeader {
    /// The header of messageframe's rows, with this timestamp.
    #[must_use]
    pub fn bench(timestamp: u64) -> Self {
        WireHeader {
            timestamp,
            counter: 0,
            source: 1,
            target: 2,
            message_id: 200,
            message_type: 7,
            version: 1,
            flags: 0,
        }
    }
}

/// One parameter read back: its key (`device` U+001F `param`, as on the
/// wire) and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WirePair {
    /// The key's bytes in the receive buffer (UTF-8 checked).
    pub key: Span,
    /// The value (strings as spans of the receive buffer).
    pub value: Scalar,
}

/// One attachment read back: name and data, both spans of the receive
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireAttachment {
    /// The name (UTF-8 checked).
    pub name: Span,
    /// The data.
    pub data: Span,
}

/// A decoded frame: everything borrowed, as offsets.
#[derive(Debug, Default)]
pub struct WireFrame {
    /// The header.
    pub header: WireHeader,
    /// The parameters, in wire order.
    pub params: Vec<WirePair>,
    /// The attachments, in wire order.
    pub attachments: Vec<WireAttachment>,
}

const TAG_INT: u8 = 10;
const TAG_DOUBLE: u8 = 20;
const TAG_STRING: u8 = 30;
const TAG_BOOL: u8 = 40;

/// A double as msgpack-c writes it (SPEC 2): integral values in
/// `[-2^63, 2^64)` as integers (not `-0.0`), everything else as float64.
#[inline]
fn write_double(buf: &mut Vec<u8>, v: f64) {
    const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
    if (0.0..TWO_POW_64).contains(&v) && !(v == 0.0 && v.is_sign_negative()) {
        let u = v as u64;
        if u as f64 == v {
            encode::write_uint(buf, u).expect("a Vec grows");
            return;
        }
    } else if v < 0.0 && v >= i64::MIN as f64 {
        let i = v as i64;
        if i as f64 == v {
            encode::write_sint(buf, i).expect("a Vec grows");
            return;
        }
    }
    encode::write_f64(buf, v).expect("a Vec grows");
}

/// Writes the frame of `inputs` (cleared first) in messageframe's layout,
/// the attachment from `attachment` under the inputs' attachment name.
#[inline]
pub fn write_frame(buf: &mut Vec<u8>, h: &WireHeader, inputs: &Inputs) {
    buf.clear();
    let ok = "a Vec grows";
    encode::write_array_len(buf, 3).expect(ok);
    encode::write_array_len(buf, 8).expect(ok);
    encode::write_uint(buf, h.timestamp).expect(ok);
    encode::write_uint(buf, h.counter).expect(ok);
    encode::write_uint(buf, u64::from(h.source)).expect(ok);
    encode::write_uint(buf, u64::from(h.target)).expect(ok);
    encode::write_sint(buf, i64::from(h.message_id)).expect(ok);
    encode::write_sint(buf, i64::from(h.message_type)).expect(ok);
    encode::write_uint(buf, u64::from(h.version)).expect(ok);
    encode::write_uint(buf, u64::from(h.flags)).expect(ok);
    encode::write_map_len(buf, inputs.len() as u32).expect(ok);
    for ((d, p), v) in inputs
        .devices
        .iter()
        .zip(&inputs.params)
        .zip(&inputs.values)
    {
        // The key composed on the wire from its two parts: no temporary.
        encode::write_str_len(buf, (d.len() + 1 + p.len()) as u32).expect(ok);
        buf.extend_from_slice(d.as_bytes());
        buf.push(0x1f);
        buf.extend_from_slice(p.as_bytes());
        encode::write_array_len(buf, 2).expect(ok);
        match v {
            InputValue::Int(i) => {
                encode::write_pfix(buf, TAG_INT).expect(ok);
                encode::write_sint(buf, *i).expect(ok);
            }
            InputValue::Double(x) => {
                encode::write_pfix(buf, TAG_DOUBLE).expect(ok);
                write_double(buf, *x);
            }
            InputValue::Str(s) => {
                encode::write_pfix(buf, TAG_STRING).expect(ok);
                encode::write_str(buf, s).expect(ok);
            }
            InputValue::Bool(b) => {
                encode::write_pfix(buf, TAG_BOOL).expect(ok);
                encode::write_bool(buf, *b).expect(ok);
            }
        }
    }
    match &inputs.attachment {
        Some(a) => {
            encode::write_array_len(buf, 1).expect(ok);
            encode::write_array_len(buf, 2).expect(ok);
            encode::write_str(buf, inputs.attachment_name).expect(ok);
            encode::write_bin(buf, a).expect(ok);
        }
        None => {
            encode::write_array_len(buf, 0).expect(ok);
        }
    }
}

/// `Err` with what was wrong.
type Res<T> = Result<T, &'static str>;

#[inline]
fn array_len(rd: &mut &[u8], want: u32, what: &'static str) -> Res<()> {
    match decode::read_array_len(rd) {
        Ok(n) if n == want => Ok(()),
        _ => Err(what),
    }
}

#[inline]
fn str_span(buf: &[u8], rd: &mut &[u8], what: &'static str) -> Res<Span> {
    let (s, rest) = decode::read_str_from_slice(*rd).map_err(|_| what)?;
    *rd = rest;
    Ok(Span::within(buf, s.as_bytes()))
}

/// Reads a frame in messageframe's layout from `buf` into `out` (its
/// vectors cleared first, their capacity kept). Strict about the layout
/// this module writes: exactly 3 top-level elements, 8 header fields,
/// `[tag, value]` pairs of the four known tags (a Double may be any
/// integer or float, as SPEC 3 says), `[name, bin]` attachments, nothing
/// after the frame.
///
/// # Errors
///
/// A description of the first thing that is not such a frame.
#[inline]
pub fn read_frame(buf: &[u8], out: &mut WireFrame) -> Res<()> {
    out.params.clear();
    out.attachments.clear();
    let mut rd = buf;
    array_len(&mut rd, 3, "top level")?;
    array_len(&mut rd, 8, "header")?;
    let h = &mut out.header;
    let int = "header field";
    h.timestamp = decode::read_int(&mut rd).map_err(|_| int)?;
    h.counter = decode::read_int(&mut rd).map_err(|_| int)?;
    h.source = decode::read_int(&mut rd).map_err(|_| int)?;
    h.target = decode::read_int(&mut rd).map_err(|_| int)?;
    h.message_id = decode::read_int(&mut rd).map_err(|_| int)?;
    h.message_type = decode::read_int(&mut rd).map_err(|_| int)?;
    h.version = decode::read_int(&mut rd).map_err(|_| int)?;
    h.flags = decode::read_int(&mut rd).map_err(|_| int)?;
    let n = decode::read_map_len(&mut rd).map_err(|_| "params")? as usize;
    // Each pair takes at least 4 bytes: never reserve more than the input
    // can hold.
    out.params.reserve(n.min(rd.len() / 4));
    for _ in 0..n {
        let key = str_span(buf, &mut rd, "key")?;
        array_len(&mut rd, 2, "[tag, value]")?;
        let tag: u8 = decode::read_pfix(&mut rd).map_err(|_| "tag")?;
        let value = match tag {
            TAG_INT => Scalar::I64(decode::read_int(&mut rd).map_err(|_| "int64")?),
            TAG_DOUBLE => {
                let first = *rd.first().ok_or("truncated")?;
                match Marker::from_u8(first) {
                    Marker::F64 => Scalar::F64(decode::read_f64(&mut rd).map_err(|_| "f64")?),
                    Marker::F32 => {
                        Scalar::F64(f64::from(decode::read_f32(&mut rd).map_err(|_| "f32")?))
                    }
                    Marker::U64 => {
                        Scalar::F64(decode::read_int::<u64, _>(&mut rd).map_err(|_| "u64")? as f64)
                    }
                    _ => Scalar::F64(
                        decode::read_int::<i64, _>(&mut rd).map_err(|_| "double")? as f64
                    ),
                }
            }
            TAG_STRING => Scalar::Str(str_span(buf, &mut rd, "string")?),
            TAG_BOOL => Scalar::Bool(decode::read_bool(&mut rd).map_err(|_| "bool")?),
            _ => return Err("unknown tag"),
        };
        out.params.push(WirePair { key, value });
    }
    let n = decode::read_array_len(&mut rd).map_err(|_| "attachments")? as usize;
    out.attachments.reserve(n.min(rd.len() / 4));
    for _ in 0..n {
        array_len(&mut rd, 2, "[name, data]")?;
        let name = str_span(buf, &mut rd, "attachment name")?;
        let len = decode::read_bin_len(&mut rd).map_err(|_| "attachment data")? as usize;
        if rd.len() < len {
            return Err("attachment data");
        }
        let (data, rest) = rd.split_at(len);
        out.attachments.push(WireAttachment {
            name,
            data: Span::within(buf, data),
        });
        rd = rest;
    }
    if rd.is_empty() {
        Ok(())
    } else {
        Err("trailing bytes")
    }
}

/// Whether `key` is `device` U+001F `param`.
#[inline]
fn is_key(key: &[u8], device: &str, param: &str) -> bool {
    let (d, p) = (device.as_bytes(), param.as_bytes());
    key.len() == d.len() + 1 + p.len()
        && key[d.len()] == 0x1f
        && &key[..d.len()] == d
        && &key[d.len() + 1..] == p
}

/// The probe, read as a user of these offsets would: a linear search for
/// the last key and for the attachment by name.
#[inline]
fn probe(f: &WireFrame, buf: &[u8], inputs: &Inputs) -> Probe {
    let (d, p, _) = inputs.last_key();
    let value = match f.params.iter().find(|x| is_key(x.key.of(buf), d, p)) {
        Some(x) => match x.value {
            Scalar::F64(v) => Read::F(v),
            Scalar::I64(v) => Read::I(v),
            Scalar::Bool(v) => Read::B(v),
            Scalar::Str(s) => Read::SB(s.of(buf)),
            Scalar::Bin(_) | Scalar::Nil => Read::Missing,
        },
        None => Read::Missing,
    };
    let name = inputs.attachment_name.as_bytes();
    let att = f
        .attachments
        .iter()
        .find(|a| a.name.of(buf) == name)
        .map(|a| a.data.len as usize);
    Probe {
        value: value.fingerprint(),
        attachment: att_len(inputs, att),
    }
}

/// [`super::Format::RmpWire`].
#[derive(Debug)]
pub struct RmpWire<const FRESH: bool> {
    header: WireHeader,
    buf: Vec<u8>,
    frame: WireFrame,
}

impl<const FRESH: bool> RmpWire<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpWire {
            header: WireHeader::bench(messageframe::now_millis()),
            buf: Vec::new(),
            frame: WireFrame::default(),
        }
    }
}

impl<const FRESH: bool> Backend for RmpWire<FRESH> {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, iteration: u64) {
        // No document: the writer reads the inputs directly.
        self.header.counter = iteration;
    }

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        if FRESH {
            self.buf = Vec::new();
        }
        write_frame(&mut self.buf, &self.header, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.buf);
            let mut frame = WireFrame::default();
            read_frame(&buf, &mut frame).expect("a frame in our layout");
            probe(&frame, &buf, inputs)
        } else {
            read_frame(&self.buf, &mut self.frame).expect("a frame in our layout");
            probe(&self.frame, &self.buf, inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::mf;
    use crate::scenario::SCENARIOS;
    use messageframe::{Frame, FrameView, Header};

    #[test]
    fn writes_exactly_the_bytes_messageframe_encodes_in_every_scenario() {
        for s in &SCENARIOS {
            let inputs = Inputs::new(s);
            let h = WireHeader {
                counter: 300,
                ..WireHeader::bench(1_764_000_000_123)
            };
            let mut frame = Frame::new(Header::from_fields(
                h.timestamp,
                h.counter,
                h.source,
                h.target,
                h.message_id,
                h.message_type,
                h.version,
                h.flags,
            ));
            mf::mf_fill(&mut frame, &inputs);
            let want = frame.encode().unwrap();
            let mut got = Vec::new();
            write_frame(&mut got, &h, &inputs);
            assert!(got == want, "{}: the floor's bytes differ", s.name);
            // And reads back what messageframe's view reads.
            let mut back = WireFrame::default();
            read_frame(&got, &mut back).unwrap();
            assert_eq!(back.header, h);
            let view = FrameView::new(&got).unwrap();
            assert_eq!(back.params.len(), view.len());
            for (pair, (d, p, v)) in back.params.iter().zip(view.iter()) {
                assert!(is_key(pair.key.of(&got), d, p));
                let same = match (pair.value, v) {
                    (Scalar::F64(a), messageframe::ValueRef::Double(b)) => {
                        a.to_bits() == b.to_bits()
                    }
                    (Scalar::I64(a), messageframe::ValueRef::Int(b)) => a == b,
                    (Scalar::Bool(a), messageframe::ValueRef::Bool(b)) => a == b,
                    (Scalar::Str(a), messageframe::ValueRef::String(b)) => {
                        a.of(&got) == b.as_bytes()
                    }
                    _ => false,
                };
                assert!(same, "{}: ({d}, {p})", s.name);
            }
        }
    }

    #[test]
    fn integral_and_signed_values_take_msgpack_c_forms() {
        let mut frame = Frame::new(Header::from_fields(5, 0, 0, 0, -3, -300, 1, 0));
        let mut inputs = Inputs::new(&SCENARIOS[0]);
        inputs.values = vec![
            InputValue::Double(10.0),
            InputValue::Double(-0.0),
            InputValue::Double(-7.0),
            InputValue::Int(-40_000),
        ];
        mf::mf_fill(&mut frame, &inputs);
        let h = WireHeader {
            timestamp: 5,
            message_id: -3,
            message_type: -300,
            ..WireHeader::bench(5)
        };
        let h = WireHeader {
            source: 0,
            target: 0,
            ..h
        };
        let mut got = Vec::new();
        write_frame(&mut got, &h, &inputs);
        assert_eq!(got, frame.encode().unwrap());
    }

    #[test]
    fn refuses_what_is_not_the_layout() {
        let inputs = Inputs::new(&SCENARIOS[0]);
        let mut good = Vec::new();
        write_frame(&mut good, &WireHeader::bench(1), &inputs);
        let mut f = WireFrame::default();
        assert!(read_frame(&good, &mut f).is_ok());
        for cut in 0..good.len() {
            assert!(read_frame(&good[..cut], &mut f).is_err(), "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0xc0);
        assert_eq!(read_frame(&trailing, &mut f), Err("trailing bytes"));
        // The first value's tag made 50: an unknown tag.
        let at = good.iter().position(|&b| b == 0x92).unwrap();
        let mut bad = good.clone();
        bad[at + 1] = 50;
        assert!(read_frame(&bad, &mut f).is_err());
    }
}

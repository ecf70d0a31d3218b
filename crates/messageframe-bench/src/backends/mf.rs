//! messageframe's rows, through its public API only.
//!
//! Reused: `clear()` + `add` on a kept frame, `encode_into` a kept buffer,
//! `decode_from` into a kept frame (the C++ `deserialize`). Fresh: a new
//! frame (`Frame::new`, or `Frame::with_config` in the hint scenarios),
//! `Frame::encode` into a new `Vec`, `Frame::decode` into a new frame.

use std::mem;

use bytes::Bytes;
use messageframe::{Decoder, Frame, FrameConfig, FrameView, Header, ValueRef};

use super::{att_len, reclaim, Backend, Read};
use crate::scenario::{InputValue, Inputs, Probe};

/// The header of messageframe's rows. `Header::new` reads the clock, so a
/// backend makes it once, when it is made, and every frame it builds starts
/// from a copy: the peers write no header at all, and the same-wire floor
/// writes the same fields with a timestamp fixed the same way. Reading the
/// clock per message (about 110 instructions, through the vDSO) would be
/// work no other row does.
fn header() -> Header {
    Header::new(200, 7, 1, 2)
}

/// A new frame with the scenario's sizing hint, if it has one.
#[must_use]
pub fn new_frame(hint: Option<usize>) -> Frame {
    new_frame_with(header(), hint)
}

#[inline]
fn new_frame_with(header: Header, hint: Option<usize>) -> Frame {
    match hint {
        Some(n) => Frame::with_config(header, FrameConfig::for_params(n).attachments(1)),
        None => Frame::new(header),
    }
}

/// The scenario value as messageframe's borrowed value.
#[inline]
#[must_use]
pub fn mf_value(v: &InputValue) -> ValueRef<'_> {
    match v {
        InputValue::Double(x) => ValueRef::Double(*x),
        InputValue::Int(i) => ValueRef::Int(*i),
        InputValue::Bool(b) => ValueRef::Bool(*b),
        InputValue::Str(s) => ValueRef::String(s),
    }
}

#[inline]
fn fill_params<const SET: bool>(frame: &mut Frame, inputs: &Inputs) {
    for ((d, p), v) in inputs
        .devices
        .iter()
        .zip(&inputs.params)
        .zip(&inputs.values)
    {
        if SET {
            frame.set(d, p, mf_value(v));
        } else {
            frame.add(d, p, mf_value(v));
        }
    }
}

/// Adds the scenario's parameters and, if any, its attachment to `frame`.
/// The inputs keep their data, so the frame gets its own copy of the
/// attachment (as prost's message does); a cleared frame copies into the
/// buffer it kept. Shared by the harness and the criterion benches.
#[inline]
pub fn mf_fill(frame: &mut Frame, inputs: &Inputs) {
    fill_params::<false>(frame, inputs);
    if let Some(a) = &inputs.attachment {
        frame.add_attachment_copy(inputs.attachment_name, a);
    }
}

#[inline]
fn read(v: Option<ValueRef<'_>>) -> Read<'_> {
    match v {
        Some(ValueRef::Double(x)) => Read::F(x),
        Some(ValueRef::Int(i)) => Read::I(i),
        Some(ValueRef::Bool(b)) => Read::B(b),
        Some(ValueRef::String(s)) => Read::S(s),
        _ => Read::Missing,
    }
}

#[inline]
fn frame_probe(frame: &Frame, inputs: &Inputs) -> Probe {
    let (d, p, _) = inputs.last_key();
    Probe {
        value: read(frame.find(d, p)).fingerprint(),
        attachment: att_len(
            inputs,
            frame.attachment(inputs.attachment_name).map(Bytes::len),
        ),
    }
}

#[inline]
fn view_probe(buf: &[u8], inputs: &Inputs) -> Probe {
    let view = FrameView::new(buf).expect("valid frame");
    let (d, p, _) = inputs.last_key();
    Probe {
        value: read(view.find(d, p)).fingerprint(),
        attachment: att_len(
            inputs,
            view.attachment(inputs.attachment_name).map(<[u8]>::len),
        ),
    }
}

/// The build and encode half every messageframe row shares: `SET` chooses
/// `set` over `add`; a shared attachment goes in as a `Bytes` clone.
#[derive(Debug)]
struct Builder<const FRESH: bool, const SET: bool> {
    header: Header,
    frame: Option<Frame>,
    buf: Vec<u8>,
    shared: Option<Bytes>,
}

impl<const FRESH: bool, const SET: bool> Builder<FRESH, SET> {
    fn new(inputs: &Inputs, shared: bool) -> Self {
        let header = header();
        Builder {
            header,
            frame: (!FRESH).then(|| new_frame_with(header, inputs.hint)),
            buf: Vec::new(),
            shared: if shared {
                inputs.attachment.clone().map(Bytes::from)
            } else {
                None
            },
        }
    }

    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        let frame = if FRESH {
            self.frame.insert(new_frame_with(self.header, inputs.hint))
        } else {
            let f = self.frame.as_mut().expect("kept frame");
            f.clear();
            f
        };
        frame.header_mut().set_counter(iteration);
        fill_params::<SET>(frame, inputs);
        match (&self.shared, &inputs.attachment) {
            (Some(b), _) => frame.add_attachment(inputs.attachment_name, b.clone()),
            (None, Some(a)) => frame.add_attachment_copy(inputs.attachment_name, a),
            (None, None) => {}
        }
    }

    #[inline]
    fn serialize(&mut self) {
        if FRESH {
            let frame = self.frame.take().expect("add ran first");
            self.buf = frame.encode().expect("the frame encodes");
        } else {
            self.buf.clear();
            self.frame
                .as_ref()
                .expect("kept frame")
                .encode_into(&mut self.buf)
                .expect("the frame encodes");
        }
    }
}

/// [`super::Format::Mf`] and [`super::Format::MfSet`]: owned decode.
#[derive(Debug)]
pub struct Owned<const FRESH: bool, const SET: bool> {
    b: Builder<FRESH, SET>,
    out: Frame,
}

/// [`super::Format::Mf`].
pub type Mf<const FRESH: bool> = Owned<FRESH, false>;
/// [`super::Format::MfSet`].
pub type MfSet<const FRESH: bool> = Owned<FRESH, true>;

impl<const FRESH: bool, const SET: bool> Owned<FRESH, SET> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        Owned {
            b: Builder::new(inputs, false),
            out: new_frame(inputs.hint),
        }
    }
}

impl<const FRESH: bool, const SET: bool> Backend for Owned<FRESH, SET> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        self.b.add(inputs, iteration);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        self.b.serialize();
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.b.buf);
            let frame = Frame::decode(&buf).expect("valid frame");
            frame_probe(&frame, inputs)
        } else {
            self.out.decode_from(&self.b.buf).expect("valid frame");
            frame_probe(&self.out, inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        &self.b.buf
    }
}

/// [`super::Format::MfView`] and [`super::Format::MfViewShared`].
#[derive(Debug)]
pub struct View<const FRESH: bool, const SHARED: bool> {
    b: Builder<FRESH, false>,
}

/// [`super::Format::MfView`].
pub type MfView<const FRESH: bool> = View<FRESH, false>;
/// [`super::Format::MfViewShared`].
pub type MfViewShared<const FRESH: bool> = View<FRESH, true>;

impl<const FRESH: bool, const SHARED: bool> View<FRESH, SHARED> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        View {
            b: Builder::new(inputs, SHARED),
        }
    }
}

impl<const FRESH: bool, const SHARED: bool> Backend for View<FRESH, SHARED> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        self.b.add(inputs, iteration);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        self.b.serialize();
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.b.buf);
            view_probe(&buf, inputs)
        } else {
            view_probe(&self.b.buf, inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        &self.b.buf
    }
}

/// [`super::Format::MfShared`]: the attachment travels as reference-counted
/// [`Bytes`] in and out, the way a network stack that hands out `Bytes`
/// would use the library. Reused: the receive buffer becomes `Bytes` (no
/// copy), `decode_shared_into` a kept frame, and the buffer is reclaimed
/// once the frame lets go of it. Fresh: `Frame::decode_shared` of the new
/// buffer.
#[derive(Debug)]
pub struct MfShared<const FRESH: bool> {
    b: Builder<FRESH, false>,
    out: Frame,
    decoder: Decoder,
}

impl<const FRESH: bool> MfShared<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        MfShared {
            b: Builder::new(inputs, true),
            out: new_frame(inputs.hint),
            decoder: Decoder::new(),
        }
    }
}

impl<const FRESH: bool> Backend for MfShared<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        self.b.add(inputs, iteration);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        self.b.serialize();
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let bytes = Bytes::from(mem::take(&mut self.b.buf));
        if FRESH {
            let frame = Frame::decode_shared(&bytes).expect("valid frame");
            frame_probe(&frame, inputs)
        } else {
            self.decoder
                .decode_shared_into(&mut self.out, &bytes)
                .expect("valid frame");
            let probe = frame_probe(&self.out, inputs);
            self.out.clear();
            self.b.buf = reclaim(bytes);
            probe
        }
    }

    fn wire(&self) -> &[u8] {
        &self.b.buf
    }
}

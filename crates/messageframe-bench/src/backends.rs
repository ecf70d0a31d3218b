//! One implementation per format of the per-message cycle of SPEC 5.2:
//! add (build the message from the shared [`Inputs`]), serialize (into a
//! reused buffer), deserialize (and read the last parameter back by key).
//!
//! Every backend does the same logical work and uses its library the way
//! that library documents: messageframe through its public API, prost's
//! generated types with `Message::encode`/`decode`, serde_json's dynamic
//! `Map`, and rmp/rmpv's documented functions. Messages built in `add` are
//! dropped at the end of `serialize`; decoded messages at the end of
//! `deserialize`, so each phase pays for the memory it allocates.

use std::mem;

use base64::prelude::{Engine, BASE64_STANDARD};
use bytes::Bytes;
use messageframe::{Decoder, Frame, FrameConfig, FrameView, Header, ValueRef};
use prost::Message;
use rmp::Marker;

use crate::proto::bench::TelemetryFrame;
use crate::scenario::{
    fp_bool, fp_double, fp_int, fp_str, InputValue, Inputs, Probe, ATTACHMENT_NAME,
};

/// The key under which the non-messageframe formats carry the attachment.
pub const ATTACHMENT_FIELD: &str = "attachment";

/// One format's per-message cycle.
pub trait Backend {
    /// Builds the message from the inputs (the `add` phase).
    fn add(&mut self, inputs: &Inputs, iteration: u64);
    /// Serializes the message into the backend's reused buffer.
    fn serialize(&mut self, inputs: &Inputs);
    /// Deserializes the buffer and reads the probe back.
    fn deserialize(&mut self, inputs: &Inputs) -> Probe;
    /// The bytes the last `serialize` produced.
    fn wire(&self) -> &[u8];
}

/// Every backend of the harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// messageframe: a reused frame (`clear` + `add`), `encode_into` a reused
    /// buffer, `decode_from` into a reused frame (the C++ `deserialize`).
    Mf,
    /// messageframe, deserialized as a zero-copy [`FrameView`].
    MfView,
    /// messageframe with a new frame per message (with the scenario's sizing
    /// hint) and `Frame::decode` into a new frame: the C++ harness's shape.
    MfFresh,
    /// messageframe with the attachment shared, not copied: `add_attachment`
    /// of a `Bytes` clone and `decode_shared_into` (attachment scenario).
    MfShared,
    /// prost with the SPEC schema.
    Prost,
    /// prost with `bytes::Bytes` for the attachment, shared in and decoded
    /// from `Bytes` without a copy (attachment scenario).
    ProstShared,
    /// serde_json, a dynamic `Map`, base64 attachment.
    Json,
    /// rmp writer; rmpv owned `Value` reader.
    RmpvValue,
    /// rmp writer; hand-rolled rmp reader into `Vec<(String, value)>`.
    RmpHand,
    /// rmp writer; rmpv borrowed `ValueRef` reader.
    RmpvRef,
}

impl BackendKind {
    /// All backends, in table order.
    pub const ALL: [BackendKind; 10] = [
        BackendKind::Mf,
        BackendKind::MfView,
        BackendKind::MfFresh,
        BackendKind::MfShared,
        BackendKind::Prost,
        BackendKind::ProstShared,
        BackendKind::Json,
        BackendKind::RmpvValue,
        BackendKind::RmpHand,
        BackendKind::RmpvRef,
    ];

    /// Stable identifier (JSON output, tests).
    #[must_use]
    pub fn id(self) -> &'static str {
        match self {
            BackendKind::Mf => "messageframe",
            BackendKind::MfView => "messageframe-view",
            BackendKind::MfFresh => "messageframe-fresh",
            BackendKind::MfShared => "messageframe-shared",
            BackendKind::Prost => "prost",
            BackendKind::ProstShared => "prost-shared",
            BackendKind::Json => "serde_json",
            BackendKind::RmpvValue => "rmpv-value",
            BackendKind::RmpHand => "rmp-hand-rolled",
            BackendKind::RmpvRef => "rmpv-valueref",
        }
    }

    /// Human label for the tables.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            BackendKind::Mf => "messageframe",
            BackendKind::MfView => "messageframe view",
            BackendKind::MfFresh => "messageframe fresh frames",
            BackendKind::MfShared => "messageframe shared attachment",
            BackendKind::Prost => "prost",
            BackendKind::ProstShared => "prost shared attachment",
            BackendKind::Json => "serde_json",
            BackendKind::RmpvValue => "rmpv Value",
            BackendKind::RmpHand => "rmp hand-rolled",
            BackendKind::RmpvRef => "rmpv ValueRef",
        }
    }

    /// Whether this is one of messageframe's own rows.
    #[must_use]
    pub fn is_messageframe(self) -> bool {
        matches!(
            self,
            BackendKind::Mf | BackendKind::MfView | BackendKind::MfFresh | BackendKind::MfShared
        )
    }
}

fn header() -> Header {
    Header::new(200, 7, 1, 2)
}

fn new_frame(hint: Option<usize>) -> Frame {
    match hint {
        Some(n) => Frame::with_config(header(), FrameConfig::for_params(n).attachments(1)),
        None => Frame::new(header()),
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
fn mf_fill_params(frame: &mut Frame, inputs: &Inputs) {
    for ((d, p), v) in inputs
        .devices
        .iter()
        .zip(&inputs.params)
        .zip(&inputs.values)
    {
        frame.add(d, p, mf_value(v));
    }
}

#[inline]
fn fp_value_ref(v: Option<ValueRef<'_>>) -> u64 {
    match v {
        Some(ValueRef::Double(x)) => fp_double(x),
        Some(ValueRef::Int(i)) => fp_int(i),
        Some(ValueRef::Bool(b)) => fp_bool(b),
        Some(ValueRef::String(s)) => fp_str(s),
        _ => 0,
    }
}

#[inline]
fn last_key(inputs: &Inputs) -> (&str, &str, &str) {
    let n = inputs.len() - 1;
    (&inputs.devices[n], &inputs.params[n], &inputs.flat[n])
}

#[inline]
fn frame_probe(frame: &Frame, inputs: &Inputs) -> Probe {
    let (d, p, _) = last_key(inputs);
    Probe {
        value: fp_value_ref(frame.find(d, p)),
        attachment: if inputs.attachment.is_some() {
            frame.attachment(ATTACHMENT_NAME).map_or(0, Bytes::len)
        } else {
            0
        },
    }
}

/// [`BackendKind::Mf`].
#[derive(Debug)]
pub struct Mf {
    frame: Frame,
    out: Frame,
    buf: Vec<u8>,
}

impl Mf {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        Mf {
            frame: new_frame(inputs.hint),
            out: new_frame(inputs.hint),
            buf: Vec::new(),
        }
    }
}

/// Adds the scenario's parameters and, if any, its attachment to `frame`.
/// The inputs keep their data, so the frame gets its own copy of the
/// attachment (as prost's message does), made into a buffer a cleared
/// frame kept. Shared by the harness and the criterion benches.
#[inline]
pub fn mf_fill(frame: &mut Frame, inputs: &Inputs) {
    mf_fill_params(frame, inputs);
    if let Some(a) = &inputs.attachment {
        frame.add_attachment_copy(ATTACHMENT_NAME, a);
    }
}

#[inline]
fn mf_add_reused(frame: &mut Frame, inputs: &Inputs, iteration: u64) {
    frame.clear();
    frame.header_mut().set_counter(iteration);
    mf_fill(frame, inputs);
}

impl Backend for Mf {
    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        mf_add_reused(&mut self.frame, inputs, iteration);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        self.buf.clear();
        self.frame.encode_into(&mut self.buf);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        self.out.decode_from(&self.buf).expect("valid frame");
        frame_probe(&self.out, inputs)
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`BackendKind::MfView`].
#[derive(Debug)]
pub struct MfView {
    frame: Frame,
    buf: Vec<u8>,
}

impl MfView {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        MfView {
            frame: new_frame(inputs.hint),
            buf: Vec::new(),
        }
    }
}

impl Backend for MfView {
    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        mf_add_reused(&mut self.frame, inputs, iteration);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        self.buf.clear();
        self.frame.encode_into(&mut self.buf);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let view = FrameView::new(&self.buf).expect("valid frame");
        let (d, p, _) = last_key(inputs);
        Probe {
            value: fp_value_ref(view.find(d, p)),
            attachment: if inputs.attachment.is_some() {
                view.attachment(ATTACHMENT_NAME).map_or(0, <[u8]>::len)
            } else {
                0
            },
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`BackendKind::MfFresh`].
#[derive(Debug)]
pub struct MfFresh {
    frame: Option<Frame>,
    buf: Vec<u8>,
}

impl MfFresh {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        MfFresh {
            frame: None,
            buf: Vec::new(),
        }
    }
}

impl Backend for MfFresh {
    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        let mut frame = new_frame(inputs.hint);
        frame.header_mut().set_counter(iteration);
        mf_fill(&mut frame, inputs);
        self.frame = Some(frame);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        let frame = self.frame.take().expect("add ran first");
        self.buf.clear();
        frame.encode_into(&mut self.buf);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let frame = Frame::decode(&self.buf).expect("valid frame");
        frame_probe(&frame, inputs)
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`BackendKind::MfShared`]: the attachment travels as reference-counted
/// [`Bytes`] in and out, the way a network stack that hands out `Bytes`
/// would use the library.
#[derive(Debug)]
pub struct MfShared {
    frame: Frame,
    out: Frame,
    buf: Vec<u8>,
    attachment: Option<Bytes>,
    decoder: Decoder,
}

impl MfShared {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        MfShared {
            frame: new_frame(inputs.hint),
            out: new_frame(inputs.hint),
            buf: Vec::new(),
            attachment: inputs.attachment.clone().map(Bytes::from),
            decoder: Decoder::new(),
        }
    }
}

impl Backend for MfShared {
    #[inline]
    fn add(&mut self, inputs: &Inputs, iteration: u64) {
        self.frame.clear();
        self.frame.header_mut().set_counter(iteration);
        mf_fill_params(&mut self.frame, inputs);
        if let Some(a) = &self.attachment {
            self.frame.add_attachment(ATTACHMENT_NAME, a.clone());
        }
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        self.buf.clear();
        self.frame.encode_into(&mut self.buf);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        // The receive buffer becomes `Bytes` (no copy), the decoded frame's
        // attachment is a slice of it; the buffer is reclaimed for the next
        // message once the frame lets go of it.
        let bytes = Bytes::from(mem::take(&mut self.buf));
        self.decoder
            .decode_shared_into(&mut self.out, &bytes)
            .expect("valid frame");
        let probe = frame_probe(&self.out, inputs);
        self.out.clear();
        self.buf = reclaim(bytes);
        probe
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// Fills a generated `TelemetryFrame`'s map from the inputs; a macro because
/// the two generated modules have distinct (identical) types.
macro_rules! prost_params {
    ($pb:path, $msg:expr, $inputs:expr) => {{
        use $pb as pb;
        for (key, v) in $inputs.flat.iter().zip(&$inputs.values) {
            let v = match v {
                InputValue::Double(x) => pb::telemetry_value::V::D(*x),
                InputValue::Int(i) => pb::telemetry_value::V::I(*i),
                InputValue::Bool(b) => pb::telemetry_value::V::B(*b),
                InputValue::Str(s) => pb::telemetry_value::V::S(s.clone()),
            };
            $msg.params
                .insert(key.clone(), pb::TelemetryValue { v: Some(v) });
        }
    }};
}

/// Reads the last key and the attachment's length back from a decoded
/// generated `TelemetryFrame`.
macro_rules! prost_probe {
    ($pb:path, $msg:expr, $inputs:expr) => {{
        use $pb as pb;
        let (_, _, key) = last_key($inputs);
        let value = match $msg.params.get(key).and_then(|v| v.v.as_ref()) {
            Some(pb::telemetry_value::V::D(x)) => fp_double(*x),
            Some(pb::telemetry_value::V::I(i)) => fp_int(*i),
            Some(pb::telemetry_value::V::B(b)) => fp_bool(*b),
            Some(pb::telemetry_value::V::S(s)) => fp_str(s),
            None => 0,
        };
        Probe {
            value,
            attachment: $msg.attachment.len(),
        }
    }};
}

/// Encodes the message `add` built (and drops it) into the reused buffer.
#[inline]
fn prost_encode<M: Message>(msg: &mut Option<M>, buf: &mut Vec<u8>) {
    let msg = msg.take().expect("add ran first");
    buf.clear();
    msg.encode(buf).expect("a Vec grows");
}

/// The receive buffer back from the `Bytes` it became, for the next message
/// (no copy once nothing else holds it).
#[inline]
fn reclaim(bytes: Bytes) -> Vec<u8> {
    match bytes.try_into_mut() {
        Ok(b) => b.into(),
        Err(b) => b.to_vec(),
    }
}

/// [`BackendKind::Prost`]: a new generated message per iteration, the
/// standard API (no reuse tricks, as the seed's protobuf side).
#[derive(Debug)]
pub struct Prost {
    msg: Option<TelemetryFrame>,
    buf: Vec<u8>,
}

impl Prost {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        Prost {
            msg: None,
            buf: Vec::new(),
        }
    }
}

impl Backend for Prost {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        let mut msg = TelemetryFrame::default();
        prost_params!(crate::proto::bench, msg, inputs);
        if let Some(a) = &inputs.attachment {
            msg.attachment = a.clone();
        }
        self.msg = Some(msg);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        prost_encode(&mut self.msg, &mut self.buf);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let msg = TelemetryFrame::decode(self.buf.as_slice()).expect("valid message");
        prost_probe!(crate::proto::bench, msg, inputs)
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`BackendKind::ProstShared`]: as [`Prost`], with the schema generated with
/// `bytes::Bytes` for `bytes` fields (`prost_build::Config::bytes`): the
/// attachment goes in as a `Bytes` clone and, decoded from the receive buffer
/// turned into `Bytes`, comes out as a slice of it. The buffer is reclaimed
/// for the next message, as [`MfShared`] does.
#[derive(Debug)]
pub struct ProstShared {
    msg: Option<crate::proto::bench_shared::TelemetryFrame>,
    buf: Vec<u8>,
    attachment: Option<Bytes>,
}

impl ProstShared {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        ProstShared {
            msg: None,
            buf: Vec::new(),
            attachment: inputs.attachment.clone().map(Bytes::from),
        }
    }
}

impl Backend for ProstShared {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        let mut msg = crate::proto::bench_shared::TelemetryFrame::default();
        prost_params!(crate::proto::bench_shared, msg, inputs);
        if let Some(a) = &self.attachment {
            msg.attachment = a.clone();
        }
        self.msg = Some(msg);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        prost_encode(&mut self.msg, &mut self.buf);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let bytes = Bytes::from(mem::take(&mut self.buf));
        let msg = crate::proto::bench_shared::TelemetryFrame::decode(bytes.clone())
            .expect("valid message");
        let probe = prost_probe!(crate::proto::bench_shared, msg, inputs);
        drop(msg);
        self.buf = reclaim(bytes);
        probe
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`BackendKind::Json`].
#[derive(Debug)]
pub struct Json {
    msg: Option<serde_json::Map<String, serde_json::Value>>,
    buf: Vec<u8>,
}

impl Json {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        Json {
            msg: None,
            buf: Vec::new(),
        }
    }
}

fn fp_json(v: Option<&serde_json::Value>) -> u64 {
    use serde_json::Value;
    match v {
        Some(Value::Number(n)) if n.is_f64() => n.as_f64().map_or(0, fp_double),
        Some(Value::Number(n)) => n.as_i64().map_or(0, fp_int),
        Some(Value::Bool(b)) => fp_bool(*b),
        Some(Value::String(s)) => fp_str(s),
        _ => 0,
    }
}

impl Backend for Json {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        use serde_json::Value;
        let mut msg = serde_json::Map::new();
        for (key, v) in inputs.flat.iter().zip(&inputs.values) {
            let v = match v {
                InputValue::Double(x) => Value::from(*x),
                InputValue::Int(i) => Value::from(*i),
                InputValue::Bool(b) => Value::Bool(*b),
                InputValue::Str(s) => Value::String(s.clone()),
            };
            msg.insert(key.clone(), v);
        }
        if let Some(a) = &inputs.attachment {
            msg.insert(
                ATTACHMENT_FIELD.to_owned(),
                Value::String(BASE64_STANDARD.encode(a)),
            );
        }
        self.msg = Some(msg);
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        let msg = self.msg.take().expect("add ran first");
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &msg).expect("a Vec grows");
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let msg: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&self.buf).expect("valid JSON");
        let (_, _, key) = last_key(inputs);
        let attachment = match msg.get(ATTACHMENT_FIELD) {
            Some(serde_json::Value::String(s)) => {
                BASE64_STANDARD.decode(s).expect("valid base64").len()
            }
            _ => 0,
        };
        Probe {
            value: fp_json(msg.get(key)),
            attachment,
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// Writes the raw MessagePack floor's message with rmp's low-level writers:
/// one map of the flat keys with native values (doubles as float64, integers
/// in their shortest form) and the attachment as a bin under
/// [`ATTACHMENT_FIELD`]. No header, no value tags, no two-part keys.
#[inline]
pub fn rmp_write(buf: &mut Vec<u8>, inputs: &Inputs) {
    use rmp::encode;
    buf.clear();
    let entries = inputs.len() + usize::from(inputs.attachment.is_some());
    encode::write_map_len(buf, entries as u32).expect("a Vec grows");
    for (key, v) in inputs.flat.iter().zip(&inputs.values) {
        encode::write_str(buf, key).expect("a Vec grows");
        match v {
            InputValue::Double(x) => encode::write_f64(buf, *x).expect("a Vec grows"),
            InputValue::Int(i) => {
                encode::write_sint(buf, *i).expect("a Vec grows");
            }
            InputValue::Bool(b) => encode::write_bool(buf, *b).expect("a Vec grows"),
            InputValue::Str(s) => encode::write_str(buf, s).expect("a Vec grows"),
        }
    }
    if let Some(a) = &inputs.attachment {
        encode::write_str(buf, ATTACHMENT_FIELD).expect("a Vec grows");
        encode::write_bin(buf, a).expect("a Vec grows");
    }
}

/// [`BackendKind::RmpvValue`].
#[derive(Debug)]
pub struct RmpvValue {
    buf: Vec<u8>,
}

impl RmpvValue {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpvValue { buf: Vec::new() }
    }
}

fn fp_rmpv(v: Option<&rmpv::Value>) -> u64 {
    use rmpv::Value;
    match v {
        Some(Value::F64(x)) => fp_double(*x),
        Some(Value::Integer(i)) => i.as_i64().map_or(0, fp_int),
        Some(Value::Boolean(b)) => fp_bool(*b),
        Some(Value::String(s)) => s.as_str().map_or(0, fp_str),
        _ => 0,
    }
}

fn fp_rmpv_ref(v: Option<&rmpv::ValueRef<'_>>) -> u64 {
    use rmpv::ValueRef;
    match v {
        Some(ValueRef::F64(x)) => fp_double(*x),
        Some(ValueRef::Integer(i)) => i.as_i64().map_or(0, fp_int),
        Some(ValueRef::Boolean(b)) => fp_bool(*b),
        Some(ValueRef::String(s)) => s.as_str().map_or(0, fp_str),
        _ => 0,
    }
}

impl Backend for RmpvValue {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {
        // No in-memory document: the writer reads the inputs directly.
    }

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        rmp_write(&mut self.buf, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let value = rmpv::decode::read_value(&mut self.buf.as_slice()).expect("valid msgpack");
        let rmpv::Value::Map(entries) = value else {
            return Probe::default();
        };
        let (_, _, key) = last_key(inputs);
        let get = |k: &str| {
            entries
                .iter()
                .find(|(ek, _)| ek.as_str() == Some(k))
                .map(|(_, v)| v)
        };
        Probe {
            value: fp_rmpv(get(key)),
            attachment: if inputs.attachment.is_some() {
                match get(ATTACHMENT_FIELD) {
                    Some(rmpv::Value::Binary(b)) => b.len(),
                    _ => 0,
                }
            } else {
                0
            },
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`BackendKind::RmpvRef`].
#[derive(Debug)]
pub struct RmpvRef {
    buf: Vec<u8>,
}

impl RmpvRef {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpvRef { buf: Vec::new() }
    }
}

impl Backend for RmpvRef {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {}

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        rmp_write(&mut self.buf, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let value = rmpv::decode::read_value_ref(&mut self.buf.as_slice()).expect("valid msgpack");
        let rmpv::ValueRef::Map(entries) = value else {
            return Probe::default();
        };
        let (_, _, key) = last_key(inputs);
        let get = |k: &str| {
            entries
                .iter()
                .find(|(ek, _)| matches!(ek, rmpv::ValueRef::String(s) if s.as_str() == Some(k)))
                .map(|(_, v)| v)
        };
        Probe {
            value: fp_rmpv_ref(get(key)),
            attachment: if inputs.attachment.is_some() {
                match get(ATTACHMENT_FIELD) {
                    Some(rmpv::ValueRef::Binary(b)) => b.len(),
                    _ => 0,
                }
            } else {
                0
            },
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// A value decoded by the hand-rolled floor.
#[derive(Debug, Clone, PartialEq)]
pub enum HandValue {
    /// float32 or float64.
    F64(f64),
    /// Any integer that fits i64.
    I64(i64),
    /// true / false.
    Bool(bool),
    /// str.
    Str(String),
    /// bin.
    Bin(Vec<u8>),
    /// nil.
    Nil,
}

/// [`BackendKind::RmpHand`]: the strongest owned floor. rmp's public read
/// functions, dispatching on the marker, into a `Vec` that is reused across
/// messages and reserved for the map's length.
#[derive(Debug)]
pub struct RmpHand {
    buf: Vec<u8>,
    out: Vec<(String, HandValue)>,
}

impl RmpHand {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        RmpHand {
            buf: Vec::new(),
            out: Vec::new(),
        }
    }
}

/// Decodes a flat map into `out` with rmp's low-level readers.
///
/// # Errors
///
/// A description of the first thing that is not a map of str keys to
/// scalar, str or bin values.
pub fn rmp_hand_decode(
    mut rd: &[u8],
    out: &mut Vec<(String, HandValue)>,
) -> Result<(), &'static str> {
    use rmp::decode;
    out.clear();
    let len = decode::read_map_len(&mut rd).map_err(|_| "map")? as usize;
    out.reserve(len);
    for _ in 0..len {
        let (key, rest) = decode::read_str_from_slice(rd).map_err(|_| "key")?;
        rd = rest;
        let first = *rd.first().ok_or("truncated")?;
        let value = match Marker::from_u8(first) {
            Marker::F64 => HandValue::F64(decode::read_f64(&mut rd).map_err(|_| "f64")?),
            Marker::F32 => HandValue::F64(f64::from(decode::read_f32(&mut rd).map_err(|_| "f32")?)),
            Marker::True | Marker::False => {
                HandValue::Bool(decode::read_bool(&mut rd).map_err(|_| "bool")?)
            }
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                let (s, rest) = decode::read_str_from_slice(rd).map_err(|_| "str")?;
                rd = rest;
                HandValue::Str(s.to_owned())
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                let n = decode::read_bin_len(&mut rd).map_err(|_| "bin")? as usize;
                if rd.len() < n {
                    return Err("bin");
                }
                let (b, rest) = rd.split_at(n);
                rd = rest;
                HandValue::Bin(b.to_vec())
            }
            Marker::Null => {
                decode::read_nil(&mut rd).map_err(|_| "nil")?;
                HandValue::Nil
            }
            _ => HandValue::I64(decode::read_int(&mut rd).map_err(|_| "int")?),
        };
        out.push((key.to_owned(), value));
    }
    Ok(())
}

impl Backend for RmpHand {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {}

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        rmp_write(&mut self.buf, inputs);
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        rmp_hand_decode(&self.buf, &mut self.out).expect("valid msgpack");
        let (_, _, key) = last_key(inputs);
        let get = |k: &str| self.out.iter().find(|(ek, _)| ek == k).map(|(_, v)| v);
        let value = match get(key) {
            Some(HandValue::F64(x)) => fp_double(*x),
            Some(HandValue::I64(i)) => fp_int(*i),
            Some(HandValue::Bool(b)) => fp_bool(*b),
            Some(HandValue::Str(s)) => fp_str(s),
            _ => 0,
        };
        Probe {
            value,
            attachment: if inputs.attachment.is_some() {
                match get(ATTACHMENT_FIELD) {
                    Some(HandValue::Bin(b)) => b.len(),
                    _ => 0,
                }
            } else {
                0
            },
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::SCENARIOS;

    #[test]
    fn hand_rolled_floor_reads_back_what_rmp_wrote() {
        let s = SCENARIOS.iter().find(|s| s.attachment > 0).unwrap();
        let inputs = Inputs::new(s);
        let mut buf = Vec::new();
        rmp_write(&mut buf, &inputs);
        let mut out = Vec::new();
        rmp_hand_decode(&buf, &mut out).unwrap();
        assert_eq!(out.len(), inputs.len() + 1);
        for ((key, v), (flat, want)) in out.iter().zip(inputs.flat.iter().zip(&inputs.values)) {
            assert_eq!(key, flat);
            let ok = match (v, want) {
                (HandValue::F64(a), InputValue::Double(b)) => a == b,
                (HandValue::I64(a), InputValue::Int(b)) => a == b,
                (HandValue::Bool(a), InputValue::Bool(b)) => a == b,
                (HandValue::Str(a), InputValue::Str(b)) => a == b,
                _ => false,
            };
            assert!(ok, "{key}: {v:?} vs {want:?}");
        }
        assert_eq!(
            out.last().unwrap().1,
            HandValue::Bin(vec![0xAB; s.attachment])
        );
        assert!(rmp_hand_decode(&buf[..buf.len() - 1], &mut out).is_err());
    }

    #[test]
    fn every_backend_reads_back_the_probe_in_every_scenario() {
        fn check<B: Backend>(mut b: B, inputs: &Inputs) {
            b.add(inputs, 7);
            b.serialize(inputs);
            assert_eq!(b.deserialize(inputs), inputs.expected_probe());
            assert!(!b.wire().is_empty());
        }
        for s in &SCENARIOS {
            let i = Inputs::new(s);
            check(Mf::new(&i), &i);
            check(MfView::new(&i), &i);
            check(MfFresh::new(&i), &i);
            check(MfShared::new(&i), &i);
            check(Prost::new(&i), &i);
            check(ProstShared::new(&i), &i);
            // Same schema, same message: the `Bytes` variant writes the same
            // message (map order aside, which `HashMap` randomizes).
            let (mut a, mut b) = (Prost::new(&i), ProstShared::new(&i));
            a.add(&i, 0);
            a.serialize(&i);
            b.add(&i, 0);
            b.serialize(&i);
            let decode = |w: &[u8]| TelemetryFrame::decode(w).expect("valid message");
            assert_eq!(decode(a.wire()), decode(b.wire()), "{}", s.name);
            assert_eq!(a.wire().len(), b.wire().len(), "{}", s.name);
            check(Json::new(&i), &i);
            check(RmpvValue::new(&i), &i);
            check(RmpHand::new(&i), &i);
            check(RmpvRef::new(&i), &i);
        }
    }
}

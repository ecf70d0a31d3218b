//! prost with the SPEC 5.2 schema (generated at build time by prost-build
//! and protox).
//!
//! Reused: the built message is `clear()`ed and refilled (its map keeps its
//! table, the `bytes` field its capacity), encoded into a kept buffer, and
//! decoded with `clear()` + `merge()` into a kept message. Fresh: a new
//! message, `encode_to_vec`, `decode`.

use std::mem;

use bytes::Bytes;
use prost::Message;

use super::{reclaim, Backend, Read};
use crate::proto::bench as plain;
use crate::proto::bench_shared;
use crate::scenario::{InputValue, Inputs, Probe};

/// Fills a generated `TelemetryFrame`'s map from the inputs; a macro because
/// the two generated modules have distinct (identical) types.
macro_rules! prost_params {
    ($pb:ident, $msg:expr, $inputs:expr) => {{
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

/// Reads the last key and the attachment's length back.
macro_rules! prost_probe {
    ($pb:ident, $msg:expr, $inputs:expr) => {{
        use $pb as pb;
        let (_, _, key) = $inputs.last_key();
        let value = match $msg.params.get(key).and_then(|v| v.v.as_ref()) {
            Some(pb::telemetry_value::V::D(x)) => Read::F(*x),
            Some(pb::telemetry_value::V::I(i)) => Read::I(*i),
            Some(pb::telemetry_value::V::B(b)) => Read::B(*b),
            Some(pb::telemetry_value::V::S(s)) => Read::S(s),
            None => Read::Missing,
        };
        Probe {
            value: value.fingerprint(),
            attachment: $msg.attachment.len(),
        }
    }};
}

/// [`super::Format::Prost`]: the attachment in a `Vec<u8>` field (prost's
/// default), copied in and out.
#[derive(Debug)]
pub struct Prost<const FRESH: bool> {
    msg: plain::TelemetryFrame,
    out: plain::TelemetryFrame,
    buf: Vec<u8>,
}

impl<const FRESH: bool> Prost<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        Prost {
            msg: plain::TelemetryFrame::default(),
            out: plain::TelemetryFrame::default(),
            buf: Vec::new(),
        }
    }
}

impl<const FRESH: bool> Backend for Prost<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        if FRESH {
            self.msg = plain::TelemetryFrame::default();
        } else {
            self.msg.clear();
        }
        prost_params!(plain, self.msg, inputs);
        if let Some(a) = &inputs.attachment {
            if FRESH {
                self.msg.attachment = a.clone();
            } else {
                self.msg.attachment.extend_from_slice(a);
            }
        }
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        if FRESH {
            let msg = mem::take(&mut self.msg);
            self.buf = msg.encode_to_vec();
        } else {
            self.buf.clear();
            self.msg.encode(&mut self.buf).expect("a Vec grows");
        }
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.buf);
            let msg = plain::TelemetryFrame::decode(buf.as_slice()).expect("valid message");
            prost_probe!(plain, msg, inputs)
        } else {
            self.out.clear();
            self.out.merge(self.buf.as_slice()).expect("valid message");
            prost_probe!(plain, self.out, inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

/// [`super::Format::ProstShared`]: the schema generated with
/// `prost_build::Config::bytes` (a `Bytes` field), filled with a `Bytes`
/// clone and decoded from `Bytes`, which prost slices without copying. The
/// receive buffer is reclaimed for the next message in the reused group, as
/// messageframe's shared row does.
#[derive(Debug)]
pub struct ProstShared<const FRESH: bool> {
    msg: bench_shared::TelemetryFrame,
    out: bench_shared::TelemetryFrame,
    buf: Vec<u8>,
    attachment: Option<Bytes>,
}

impl<const FRESH: bool> ProstShared<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(inputs: &Inputs) -> Self {
        ProstShared {
            msg: bench_shared::TelemetryFrame::default(),
            out: bench_shared::TelemetryFrame::default(),
            buf: Vec::new(),
            attachment: inputs.attachment.clone().map(Bytes::from),
        }
    }
}

impl<const FRESH: bool> Backend for ProstShared<FRESH> {
    #[inline]
    fn add(&mut self, inputs: &Inputs, _iteration: u64) {
        if FRESH {
            self.msg = bench_shared::TelemetryFrame::default();
        } else {
            self.msg.clear();
        }
        prost_params!(bench_shared, self.msg, inputs);
        if let Some(a) = &self.attachment {
            self.msg.attachment = a.clone();
        }
    }

    #[inline]
    fn serialize(&mut self, _inputs: &Inputs) {
        if FRESH {
            let msg = mem::take(&mut self.msg);
            self.buf = msg.encode_to_vec();
        } else {
            self.buf.clear();
            self.msg.encode(&mut self.buf).expect("a Vec grows");
        }
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        let bytes = Bytes::from(mem::take(&mut self.buf));
        if FRESH {
            let msg = bench_shared::TelemetryFrame::decode(bytes).expect("valid message");
            prost_probe!(bench_shared, msg, inputs)
        } else {
            self.out.clear();
            self.out.merge(bytes.clone()).expect("valid message");
            let probe = prost_probe!(bench_shared, self.out, inputs);
            // Let go of the slice of the receive buffer (`Bytes::clear`
            // alone may keep the reference), so that it can be reclaimed.
            drop(mem::take(&mut self.out.attachment));
            self.out.clear();
            self.buf = reclaim(bytes);
            probe
        }
    }

    fn wire(&self) -> &[u8] {
        &self.buf
    }
}

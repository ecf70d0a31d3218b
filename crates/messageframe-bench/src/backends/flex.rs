//! FlexBuffers (the `flexbuffers` crate): schema-free, read in place. The
//! `Builder` writes the buffer as values are pushed and sorts the keys when
//! the map ends, so building and encoding are one step (timed as
//! serialize; add is empty, as for the floors). The `Reader` looks keys up
//! by binary search in the buffer, without decoding anything else.
//!
//! Reused: one kept `Builder` (it resets itself for each buffer). Fresh: a
//! new `Builder` per message, its buffer taken out as the message's bytes.

use std::mem;

use flexbuffers::{Blob, Builder, FlexBufferType, Reader};

use super::{att_len, Backend, Read, ATTACHMENT_FIELD};
use crate::scenario::{InputValue, Inputs, Probe};

/// Builds the message into `builder` (the builder's default options: keys
/// shared).
pub fn flex_build(builder: &mut Builder, inputs: &Inputs) {
    let mut map = builder.start_map();
    for (key, v) in inputs.flat.iter().zip(&inputs.values) {
        match v {
            InputValue::Double(x) => map.push(key, *x),
            InputValue::Int(i) => map.push(key, *i),
            InputValue::Bool(b) => map.push(key, *b),
            InputValue::Str(s) => map.push(key, s.as_str()),
        }
    }
    if let Some(a) = &inputs.attachment {
        map.push(ATTACHMENT_FIELD, Blob(a.as_slice()));
    }
    map.end_map();
}

/// [`super::Format::Flexbuffers`].
#[derive(Debug)]
pub struct Flex<const FRESH: bool> {
    builder: Builder,
    buf: Vec<u8>,
}

impl<const FRESH: bool> Flex<FRESH> {
    /// A backend for these inputs.
    #[must_use]
    pub fn new(_inputs: &Inputs) -> Self {
        Flex {
            builder: Builder::default(),
            buf: Vec::new(),
        }
    }
}

fn probe(bytes: &[u8], inputs: &Inputs) -> Probe {
    let map = Reader::get_root(bytes)
        .and_then(|r| r.get_map())
        .expect("valid flexbuffer");
    let (_, _, key) = inputs.last_key();
    let value = match map.index(key) {
        Ok(r) => match r.flexbuffer_type() {
            FlexBufferType::Float => Read::F(r.as_f64()),
            FlexBufferType::Int | FlexBufferType::UInt => Read::I(r.as_i64()),
            FlexBufferType::Bool => Read::B(r.as_bool()),
            FlexBufferType::String => Read::S(r.as_str()),
            _ => Read::Missing,
        },
        Err(_) => Read::Missing,
    };
    let att = map
        .index(ATTACHMENT_FIELD)
        .and_then(|r| r.get_blob())
        .ok()
        .map(|b| b.0.len());
    Probe {
        value: value.fingerprint(),
        attachment: att_len(inputs, att),
    }
}

impl<const FRESH: bool> Backend for Flex<FRESH> {
    #[inline]
    fn add(&mut self, _inputs: &Inputs, _iteration: u64) {}

    #[inline]
    fn serialize(&mut self, inputs: &Inputs) {
        if FRESH {
            let mut builder = Builder::default();
            flex_build(&mut builder, inputs);
            self.buf = builder.take_buffer();
        } else {
            flex_build(&mut self.builder, inputs);
        }
    }

    #[inline]
    fn deserialize(&mut self, inputs: &Inputs) -> Probe {
        if FRESH {
            let buf = mem::take(&mut self.buf);
            probe(&buf, inputs)
        } else {
            probe(self.builder.view(), inputs)
        }
    }

    fn wire(&self) -> &[u8] {
        if FRESH {
            &self.buf
        } else {
            self.builder.view()
        }
    }
}

//! `FrameEncoder`, the encode-only path: for any content, the bytes are
//! exactly `Frame::encode`'s for a frame filled with the same calls, an
//! independent MessagePack reader (rmpv) reads them as that content, and a
//! buffer too small for them is an error, never a panic or a frame that
//! decodes as something else.

#![cfg(feature = "std")]

use messageframe::{EncodeError, Frame, FrameEncoder, Header, UnknownValue, ValueRef};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum V {
    Int(i64),
    Double(f64),
    Bool(bool),
    Str(String),
    Unknown(i64, Vec<u8>),
}

impl V {
    fn as_ref(&self) -> ValueRef<'_> {
        match self {
            V::Int(v) => ValueRef::Int(*v),
            V::Double(v) => ValueRef::Double(*v),
            V::Bool(v) => ValueRef::Bool(*v),
            V::Str(s) => ValueRef::String(s),
            // A valid MessagePack value of its own: a positive fixint.
            V::Unknown(tag, raw) => {
                ValueRef::Unknown(UnknownValue::new(i128::from(*tag), raw).expect("one value"))
            }
        }
    }
}

fn value() -> impl Strategy<Value = V> {
    prop_oneof![
        any::<i64>().prop_map(V::Int),
        any::<f64>().prop_map(V::Double),
        (-5i64..70_000).prop_map(|x| V::Double(x as f64)),
        any::<bool>().prop_map(V::Bool),
        ".{0,40}".prop_map(V::Str),
        (50i64..100_000, 0u8..0x80).prop_map(|(t, b)| V::Unknown(t, vec![b])),
    ]
}

fn header() -> impl Strategy<Value = Header> {
    (
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        any::<i32>(),
        any::<i32>(),
        any::<u16>(),
        any::<u16>(),
    )
        .prop_map(|(ts, c, s, t, id, ty, v, f)| Header::from_fields(ts, c, s, t, id, ty, v, f))
}

type Content = (Header, Vec<(String, String, V)>, Vec<(String, Vec<u8>)>);

fn content() -> impl Strategy<Value = Content> {
    (
        header(),
        prop::collection::vec(("[a-z.]{0,12}", "[a-z0-9_]{0,20}", value()), 0..40),
        prop::collection::vec(
            ("[a-z]{0,10}", prop::collection::vec(any::<u8>(), 0..300)),
            0..20,
        ),
    )
}

fn by_frame((h, params, atts): &Content) -> Vec<u8> {
    let mut frame = Frame::new(*h);
    for (d, p, v) in params {
        frame.add(d, p, v.as_ref());
    }
    for (name, data) in atts {
        frame.add_attachment(name, data.clone());
    }
    frame.encode().expect("encodes")
}

fn by_encoder((h, params, atts): &Content, buf: &mut [u8]) -> Result<usize, EncodeError> {
    let mut enc = FrameEncoder::new(buf, h)?;
    for (d, p, v) in params {
        enc.add(d, p, v.as_ref())?;
    }
    for (name, data) in atts {
        enc.attachment(name, data)?;
    }
    enc.finish()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 256 }))]

    #[test]
    fn the_encoder_writes_what_frame_encode_writes(c in content()) {
        let want = by_frame(&c);
        let mut buf = vec![0u8; want.len() + 64];
        let len = by_encoder(&c, &mut buf).expect("fits");
        prop_assert_eq!(&buf[..len], &want[..]);
        // An independent reader sees one value of three elements, the
        // parameters and attachments in order.
        let mut rd = &buf[..len];
        let v = rmpv::decode::read_value(&mut rd).expect("MessagePack");
        prop_assert!(rd.is_empty());
        let top = v.as_array().expect("an array");
        prop_assert_eq!(top.len(), 3);
        prop_assert_eq!(top[1].as_map().map(Vec::len), Some(c.1.len()));
        prop_assert_eq!(top[2].as_array().map(Vec::len), Some(c.2.len()));
    }

    #[test]
    fn a_buffer_too_small_is_an_error_at_every_size(c in content(), cut in 0.0f64..1.0) {
        let want = by_frame(&c);
        let size = (want.len() as f64 * cut) as usize;
        let mut buf = vec![0u8; size];
        match by_encoder(&c, &mut buf) {
            Err(EncodeError::BufferTooSmall { needed, available }) => {
                prop_assert_eq!(available, size);
                prop_assert!(needed > size);
            }
            other => prop_assert!(false, "{} bytes for a frame of {}: {:?}", size, want.len(), other),
        }
    }
}

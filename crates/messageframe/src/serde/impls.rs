//! `Serialize` for `Frame`, `FrameView`, `Header` and `Value` in the
//! schema `mframe dump` prints; `Deserialize` for `Header`, `Value` and
//! `Frame` (from the form with attachment data).

use std::fmt;

use ::serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use ::serde::ser::{Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer};

use crate::frame::Frame;
use crate::header::Header;
use crate::value::{UnknownValueBuf, Value, ValueRef};
use crate::view::FrameView;

/// A frame serialized with each attachment's bytes, base64 (standard
/// alphabet, padded) in a `"data"` field: what `mframe dump --with-data`
/// prints. Without it, `Frame` and `FrameView` serialize each attachment's
/// name and length only, as `mframe dump` does.
///
/// ```
/// use messageframe::serde::WithData;
/// use messageframe::{Frame, Header};
///
/// let mut frame = Frame::new(Header::from_fields(5, 0, 1, 2, 3, 4, 1, 0));
/// frame.add_attachment("iq", vec![0xAB; 3]);
/// let plain = serde_json::to_string(&frame)?;
/// assert!(plain.ends_with(r#""attachments":[{"name":"iq","len":3}]}"#));
/// let full = serde_json::to_string(&WithData(&frame))?;
/// assert!(full.ends_with(r#""attachments":[{"name":"iq","len":3,"data":"q6ur"}]}"#));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct WithData<'a, T: ?Sized>(pub &'a T);

impl Serialize for Header {
    /// An object of the eight fields in wire order, named as
    /// [`Header::FIELD_NAMES`].
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Header", 8)?;
        st.serialize_field("timestamp", &self.timestamp())?;
        st.serialize_field("counter", &self.counter())?;
        st.serialize_field("source", &self.source())?;
        st.serialize_field("target", &self.target())?;
        st.serialize_field("message_id", &self.message_id())?;
        st.serialize_field("message_type", &self.message_type())?;
        st.serialize_field("version", &self.version())?;
        st.serialize_field("flags", &self.flags())?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Header {
    /// The eight fields, all required, by name (a map) or in wire order (a
    /// sequence, for formats that write structs as arrays). An unknown
    /// field or a value out of its field's range is an error.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("Header", &Header::FIELD_NAMES, HeaderVisitor)
    }
}

struct HeaderVisitor;

#[derive(Default)]
struct HeaderFields {
    timestamp: Option<u64>,
    counter: Option<u64>,
    source: Option<u32>,
    target: Option<u32>,
    message_id: Option<i32>,
    message_type: Option<i32>,
    version: Option<u16>,
    flags: Option<u16>,
}

impl HeaderFields {
    fn finish<E: de::Error>(self) -> Result<Header, E> {
        Ok(Header::from_fields(
            self.timestamp
                .ok_or_else(|| E::missing_field("timestamp"))?,
            self.counter.ok_or_else(|| E::missing_field("counter"))?,
            self.source.ok_or_else(|| E::missing_field("source"))?,
            self.target.ok_or_else(|| E::missing_field("target"))?,
            self.message_id
                .ok_or_else(|| E::missing_field("message_id"))?,
            self.message_type
                .ok_or_else(|| E::missing_field("message_type"))?,
            self.version.ok_or_else(|| E::missing_field("version"))?,
            self.flags.ok_or_else(|| E::missing_field("flags"))?,
        ))
    }
}

impl<'de> Visitor<'de> for HeaderVisitor {
    type Value = Header;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a frame header (timestamp, counter, source, target, message_id, message_type, version, flags)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let mut h = HeaderFields::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            macro_rules! set {
                ($field:ident) => {{
                    if h.$field.is_some() {
                        return Err(de::Error::duplicate_field(stringify!($field)));
                    }
                    h.$field = Some(map.next_value()?);
                }};
            }
            match &*key {
                "timestamp" => set!(timestamp),
                "counter" => set!(counter),
                "source" => set!(source),
                "target" => set!(target),
                "message_id" => set!(message_id),
                "message_type" => set!(message_type),
                "version" => set!(version),
                "flags" => set!(flags),
                other => return Err(de::Error::unknown_field(other, &Header::FIELD_NAMES)),
            }
        }
        h.finish()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Header, A::Error> {
        macro_rules! next {
            ($i:expr) => {
                Some(
                    seq.next_element()?
                        .ok_or_else(|| de::Error::invalid_length($i, &self))?,
                )
            };
        }
        let h = HeaderFields {
            timestamp: next!(0),
            counter: next!(1),
            source: next!(2),
            target: next!(3),
            message_id: next!(4),
            message_type: next!(5),
            version: next!(6),
            flags: next!(7),
        };
        h.finish()
    }
}

/// A double as JSON can hold it: non-finite values as the strings the
/// interop JSON uses.
struct Double(f64);

impl Serialize for Double {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_nan() {
            s.serialize_str("NaN")
        } else if v == f64::INFINITY {
            s.serialize_str("Infinity")
        } else if v == f64::NEG_INFINITY {
            s.serialize_str("-Infinity")
        } else {
            s.serialize_f64(v)
        }
    }
}

/// Any MessagePack integer (an unknown value's tag).
struct Tag(i128);

impl Serialize for Tag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (i64::try_from(self.0), u64::try_from(self.0)) {
            (Ok(v), _) => s.serialize_i64(v),
            (_, Ok(v)) => s.serialize_u64(v),
            _ => s.serialize_i128(self.0),
        }
    }
}

/// Writes a value's fields into an object: `"type"`, then `"value"`, or
/// `"tag"` and `"raw"` (base64) for an unknown tag.
fn value_fields<M: SerializeMap>(m: &mut M, v: ValueRef<'_>) -> Result<(), M::Error> {
    m.serialize_entry("type", v.value_type().name())?;
    match v {
        ValueRef::Int(x) => m.serialize_entry("value", &x),
        ValueRef::Double(x) => m.serialize_entry("value", &Double(x)),
        ValueRef::String(x) => m.serialize_entry("value", x),
        ValueRef::Bool(x) => m.serialize_entry("value", &x),
        ValueRef::Unknown(u) => {
            m.serialize_entry("tag", &Tag(u.tag()))?;
            m.serialize_entry("raw", &Base64(u.raw()))
        }
    }
}

impl Serialize for ValueRef<'_> {
    /// `{"type": "int64", "value": 5}`: the type by its wire name, then the
    /// value (doubles that JSON cannot hold as the strings `"NaN"`,
    /// `"Infinity"`, `"-Infinity"`); an unknown tag as `{"type":
    /// "unknown", "tag": 50, "raw": "<base64 of the MessagePack bytes>"}`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(if self.as_unknown().is_some() { 3 } else { 2 }))?;
        value_fields(&mut m, *self)?;
        m.end()
    }
}

impl Serialize for Value {
    /// As [`ValueRef`]'s: `{"type": "double", "value": 2.5}`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_value_ref().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Value {
    /// The form `Serialize` writes, fields in any order. The value must be
    /// of its type's JSON kind (a double also accepts an integer and the
    /// three non-finite strings); an unknown tag's `raw` must be base64 of
    /// exactly one MessagePack value, and its tag not a known one.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ValueVisitor)
    }
}

struct ValueVisitor;

/// A value field read before its type is known.
enum Loose {
    Int(i64),
    Big(u64),
    Double(f64),
    Str(String),
    Bool(bool),
}

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, string or bool")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Loose, E> {
                Ok(Loose::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
                Ok(i64::try_from(v).map_or(Loose::Big(v), Loose::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Loose, E> {
                Ok(Loose::Double(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
                Ok(Loose::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Loose, E> {
                Ok(Loose::Str(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Loose, E> {
                Ok(Loose::Bool(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Loose {
    fn describe(&self) -> de::Unexpected<'_> {
        match self {
            Loose::Int(v) => de::Unexpected::Signed(*v),
            Loose::Big(v) => de::Unexpected::Unsigned(*v),
            Loose::Double(v) => de::Unexpected::Float(*v),
            Loose::Str(v) => de::Unexpected::Str(v),
            Loose::Bool(v) => de::Unexpected::Bool(*v),
        }
    }
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a parameter value {\"type\": ..., \"value\": ...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        const FIELDS: &[&str] = &["type", "value", "tag", "raw"];
        let mut fields = ValueFields::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if !fields.take(&key, &mut map)? {
                return Err(de::Error::unknown_field(&key, FIELDS));
            }
        }
        fields.finish()
    }
}

/// The fields of a value object, in any order.
#[derive(Default)]
struct ValueFields<'de> {
    ty: Option<String>,
    value: Option<Loose>,
    tag: Option<i128>,
    raw: Option<std::borrow::Cow<'de, str>>,
}

impl<'de> ValueFields<'de> {
    /// Reads the value of `key` if it is one of a value's fields; `false`
    /// (nothing read) otherwise.
    fn take<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
        match key {
            "type" => self.ty = Some(map.next_value()?),
            "value" => self.value = Some(map.next_value()?),
            "tag" => self.tag = Some(map.next_value::<i128>()?),
            "raw" => self.raw = Some(map.next_value::<std::borrow::Cow<'de, str>>()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn finish<E: de::Error>(self) -> Result<Value, E> {
        let ValueFields {
            ty,
            value,
            tag,
            raw,
        } = self;
        let ty = ty.ok_or_else(|| E::missing_field("type"))?;
        if ty == "unknown" {
            let tag = tag.ok_or_else(|| E::missing_field("tag"))?;
            let raw = raw.ok_or_else(|| E::missing_field("raw"))?;
            let bytes = base64_decode(&raw)
                .ok_or_else(|| E::invalid_value(de::Unexpected::Str(&raw), &"base64"))?;
            return UnknownValueBuf::new(tag, bytes).map(Value::Unknown).ok_or_else(|| {
                E::custom(
                    "an unknown value needs a tag other than 10, 20, 30, 40 and raw bytes of exactly one MessagePack value",
                )
            });
        }
        let value = value.ok_or_else(|| E::missing_field("value"))?;
        let wrong = |what: &'static str| E::invalid_type(value.describe(), &what);
        match (ty.as_str(), &value) {
            ("int64", Loose::Int(v)) => Ok(Value::Int(*v)),
            ("int64", Loose::Big(v)) => {
                Err(E::invalid_value(de::Unexpected::Unsigned(*v), &"an int64"))
            }
            ("int64", _) => Err(wrong("an int64")),
            ("double", Loose::Double(v)) => Ok(Value::Double(*v)),
            ("double", Loose::Int(v)) => Ok(Value::Double(*v as f64)),
            ("double", Loose::Big(v)) => Ok(Value::Double(*v as f64)),
            ("double", Loose::Str(s)) => match s.as_str() {
                "NaN" => Ok(Value::Double(f64::NAN)),
                "Infinity" => Ok(Value::Double(f64::INFINITY)),
                "-Infinity" => Ok(Value::Double(f64::NEG_INFINITY)),
                _ => Err(wrong("a number, \"NaN\", \"Infinity\" or \"-Infinity\"")),
            },
            ("double", _) => Err(wrong("a number")),
            ("string", Loose::Str(s)) => Ok(Value::String(s.clone())),
            ("string", _) => Err(wrong("a string")),
            ("bool", Loose::Bool(b)) => Ok(Value::Bool(*b)),
            ("bool", _) => Err(wrong("a bool")),
            (other, _) => Err(E::unknown_variant(
                other,
                &["int64", "double", "string", "bool", "unknown"],
            )),
        }
    }
}

/// One parameter object of the dump: `device`, `param`, then the value's
/// fields.
struct Param<'a>(&'a str, &'a str, ValueRef<'a>);

impl Serialize for Param<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = if self.2.as_unknown().is_some() { 5 } else { 4 };
        let mut m = s.serialize_map(Some(n))?;
        m.serialize_entry("device", self.0)?;
        m.serialize_entry("param", self.1)?;
        value_fields(&mut m, self.2)?;
        m.end()
    }
}

/// One attachment object: `name`, `len`, and with data `data`.
struct Attachment<'a> {
    name: &'a str,
    data: &'a [u8],
    with_data: bool,
}

impl Serialize for Attachment<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2 + usize::from(self.with_data)))?;
        m.serialize_entry("name", self.name)?;
        m.serialize_entry("len", &self.data.len())?;
        if self.with_data {
            m.serialize_entry("data", &Base64(self.data))?;
        }
        m.end()
    }
}

/// Implements the dump schema for a frame type with `header()`, `iter()`
/// and `attachments()` (the owned frame and the view have the same
/// methods, with different iterator types).
macro_rules! dump_schema {
    ($frame:ty, $data:expr) => {
        impl Serialize for $frame {
            /// The schema of `mframe dump`: `{"header": {...}, "params":
            /// [{"device", "param", "type", "value"}...], "attachments":
            /// [{"name", "len"}...]}` in wire order (docs/cli.md). With
            /// [`WithData`] each attachment also has its bytes.
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                dump(self, false, s)
            }
        }

        impl Serialize for WithData<'_, $frame> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                dump(self.0, true, s)
            }
        }

        impl DumpSource for $frame {
            fn header_ref(&self) -> &Header {
                self.header()
            }
            fn serialize_params<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.len()))?;
                for (d, p, v) in self.iter() {
                    seq.serialize_element(&Param(d, p, v))?;
                }
                seq.end()
            }
            fn serialize_attachments<S: Serializer>(
                &self,
                with_data: bool,
                s: S,
            ) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.attachment_count()))?;
                for (name, data) in self.attachments() {
                    let data: &[u8] = $data(data);
                    seq.serialize_element(&Attachment {
                        name,
                        data,
                        with_data,
                    })?;
                }
                seq.end()
            }
        }
    };
}

trait DumpSource {
    fn header_ref(&self) -> &Header;
    fn serialize_params<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error>;
    fn serialize_attachments<S: Serializer>(
        &self,
        with_data: bool,
        s: S,
    ) -> Result<S::Ok, S::Error>;
}

struct Part<'a, F: ?Sized> {
    frame: &'a F,
    what: u8,
    with_data: bool,
}

impl<F: DumpSource + ?Sized> Serialize for Part<'_, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.what {
            0 => self.frame.serialize_params(s),
            _ => self.frame.serialize_attachments(self.with_data, s),
        }
    }
}

fn dump<F: DumpSource + ?Sized, S: Serializer>(
    frame: &F,
    with_data: bool,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut st = s.serialize_struct("Frame", 3)?;
    st.serialize_field("header", frame.header_ref())?;
    st.serialize_field(
        "params",
        &Part {
            frame,
            what: 0,
            with_data,
        },
    )?;
    st.serialize_field(
        "attachments",
        &Part {
            frame,
            what: 1,
            with_data,
        },
    )?;
    st.end()
}

dump_schema!(Frame, AsRef::<[u8]>::as_ref);
dump_schema!(FrameView<'_>, std::convert::identity);

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Bytes as standard padded base64, written piecewise through `Display` so
/// that a serializer with a streaming `collect_str` (serde_json's) never
/// holds the whole text.
struct Base64<'a>(&'a [u8]);

impl fmt::Display for Base64<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = [0u8; 1024];
        for block in self.0.chunks(768) {
            let mut n = 0;
            for c in block.chunks(3) {
                let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
                let w = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
                for i in 0..4 {
                    out[n + i] = if i <= c.len() {
                        BASE64_ALPHABET[(w >> (18 - 6 * i) & 63) as usize]
                    } else {
                        b'='
                    };
                }
                n += 4;
            }
            // Only alphabet bytes and '=' were written.
            f.write_str(std::str::from_utf8(&out[..n]).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Standard padded base64 (what [`Base64`] writes); `None` for anything
/// else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let t = text.as_bytes();
    if t.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(t.len() / 4 * 3);
    for (i, quad) in t.chunks(4).enumerate() {
        let last = i + 1 == t.len() / 4;
        let pad = quad.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut w = 0u32;
        for &b in &quad[..4 - pad] {
            let v = BASE64_ALPHABET.iter().position(|&a| a == b)? as u32;
            w = w << 6 | v;
        }
        w <<= 6 * pad as u32;
        let bytes = [(w >> 16) as u8, (w >> 8) as u8, w as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

impl<'de> Deserialize<'de> for Frame {
    /// The schema `Serialize` writes (`mframe dump`'s), read back:
    /// `header` (required), `params` in order (each kept as it comes,
    /// duplicates too, as the wire keeps them) and `attachments`, each
    /// with its bytes in `data` ([`WithData`]'s form; `len`, if present,
    /// must match). An attachment without `data` is an error: the plain
    /// form carries only its length, so the frame cannot be rebuilt from
    /// it. A device containing U+001F, an unknown field or a repeated one
    /// is an error too.
    ///
    /// ```
    /// use messageframe::serde::WithData;
    /// use messageframe::{Frame, Header};
    ///
    /// let mut frame = Frame::new(Header::from_fields(5, 0, 1, 2, 3, 4, 1, 0));
    /// frame.add("sdr_1", "rx_gain", 30.5);
    /// frame.add_attachment("iq", vec![0xAB; 3]);
    /// let json = serde_json::to_string(&WithData(&frame))?;
    /// let back: Frame = serde_json::from_str(&json)?;
    /// assert_eq!(back, frame);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("Frame", &["header", "params", "attachments"], FrameVisitor)
    }
}

struct FrameVisitor;

impl<'de> Visitor<'de> for FrameVisitor {
    type Value = Frame;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a frame {\"header\": ..., \"params\": [...], \"attachments\": [...]}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Frame, A::Error> {
        const FIELDS: &[&str] = &["header", "params", "attachments"];
        let mut frame = Frame::default();
        let (mut header, mut params, mut attachments) = (false, false, false);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let seen = match &*key {
                "header" => {
                    frame.set_header(map.next_value()?);
                    &mut header
                }
                "params" => {
                    map.next_value_seed(ParamsSeed(&mut frame))?;
                    &mut params
                }
                "attachments" => {
                    map.next_value_seed(AttachmentsSeed(&mut frame))?;
                    &mut attachments
                }
                other => return Err(de::Error::unknown_field(other, FIELDS)),
            };
            if std::mem::replace(seen, true) {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
        }
        if !header {
            return Err(de::Error::missing_field("header"));
        }
        Ok(frame)
    }
}

/// The `params` array, added to the frame as it is read.
struct ParamsSeed<'f>(&'f mut Frame);

impl<'de> de::DeserializeSeed<'de> for ParamsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of parameters {\"device\", \"param\", \"type\", \"value\"}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ParamSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One parameter object, added to the frame.
struct ParamSeed<'f>(&'f mut Frame);

impl<'de> de::DeserializeSeed<'de> for ParamSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ParamSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a parameter {\"device\", \"param\", \"type\", \"value\"}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        const FIELDS: &[&str] = &["device", "param", "type", "value", "tag", "raw"];
        let (mut device, mut param) = (None::<std::borrow::Cow<'de, str>>, None);
        let mut fields = ValueFields::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "device" => device = Some(map.next_value()?),
                "param" => param = Some(map.next_value::<std::borrow::Cow<'de, str>>()?),
                _ => {
                    if !fields.take(&key, &mut map)? {
                        return Err(de::Error::unknown_field(&key, FIELDS));
                    }
                }
            }
        }
        let device = device.ok_or_else(|| de::Error::missing_field("device"))?;
        let param = param.ok_or_else(|| de::Error::missing_field("param"))?;
        let value = fields.finish()?;
        crate::key::InvalidKey::check(&device).map_err(de::Error::custom)?;
        self.0.add(&device, &param, &value);
        Ok(())
    }
}

/// The `attachments` array, added to the frame as it is read.
struct AttachmentsSeed<'f>(&'f mut Frame);

impl<'de> de::DeserializeSeed<'de> for AttachmentsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for AttachmentsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of attachments {\"name\", \"len\", \"data\"}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(AttachmentIn(name, data)) = seq.next_element()? {
            self.0.add_attachment(&name, data);
        }
        Ok(())
    }
}

/// One attachment object with its data.
struct AttachmentIn(String, Vec<u8>);

impl<'de> Deserialize<'de> for AttachmentIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AttachmentIn;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an attachment {\"name\", \"len\", \"data\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AttachmentIn, A::Error> {
                const FIELDS: &[&str] = &["name", "len", "data"];
                let (mut name, mut len, mut data) = (None::<String>, None::<u64>, None);
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*key {
                        "name" => name = Some(map.next_value()?),
                        "len" => len = Some(map.next_value()?),
                        "data" => data = Some(map.next_value::<std::borrow::Cow<'de, str>>()?),
                        other => return Err(de::Error::unknown_field(other, FIELDS)),
                    }
                }
                let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
                let Some(data) = data else {
                    return Err(de::Error::custom(format_args!(
                        "attachment {name:?} has no `data`: only a dump with data (`WithData`, `mframe dump --with-data`) can be read back into a frame"
                    )));
                };
                let bytes = base64_decode(&data).ok_or_else(|| {
                    de::Error::invalid_value(de::Unexpected::Str(&data), &"base64")
                })?;
                if let Some(len) = len {
                    if len != bytes.len() as u64 {
                        return Err(de::Error::invalid_length(
                            bytes.len(),
                            &"the attachment's `len`",
                        ));
                    }
                }
                Ok(AttachmentIn(name, bytes))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_matches_the_standard_alphabet() {
        for (data, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"\xff\xfe\xfd", "//79"),
        ] {
            assert_eq!(Base64(data).to_string(), text);
            assert_eq!(base64_decode(text).as_deref(), Some(data));
        }
        let long: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        assert_eq!(base64_decode(&Base64(&long).to_string()), Some(long));
        for bad in ["Zg=", "Z===", "Zg==Zg==", "Zm9*"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }
}

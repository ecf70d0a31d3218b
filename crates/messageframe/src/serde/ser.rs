//! Rust values into frames: `to_frame`, `to_frame_into`, and straight
//! into a frame's bytes: `to_bytes`, `to_bytes_into`.

use std::cell::RefCell;

use ::serde::ser::{self, Impossible, Serialize};

use super::error::{Error, ErrorKind};
use super::out::{Target, Wire};
use super::path::{check_device_segment, check_param, join, path_str, IndexBuf, Prefix};
use crate::frame::Frame;
use crate::header::Header;
use crate::value::ValueRef;

type Result<T> = std::result::Result<T, Error>;

const DATA_VARIANT: &str =
    "an enum variant with data (only unit variants map to strings; use #[serde(tag = \"...\")] for the others)";

thread_local! {
    /// The path and map-key buffers, and `to_bytes`' attachment scratch,
    /// reused across calls so that serializing into a reused frame or
    /// buffer allocates nothing.
    static BUFFERS: RefCell<Buffers> = const {
        RefCell::new(Buffers { prefix: Vec::new(), key: String::new(), attachments: Vec::new() })
    };
}

#[derive(Default)]
struct Buffers {
    prefix: Vec<u8>,
    key: String,
    attachments: Vec<u8>,
}

/// Runs `f` with the thread's buffers, taken out of the thread-local (not
/// borrowed across the call), so that a `Serialize` impl that itself calls
/// `to_frame` or `to_bytes` finds empty buffers instead of a borrow panic.
fn with_buffers<R>(f: impl FnOnce(&mut Buffers) -> R) -> R {
    let mut buffers = BUFFERS.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buffers.key.clear();
    let result = f(&mut buffers);
    BUFFERS.with(|b| *b.borrow_mut() = buffers);
    result
}

/// Serializes `value` into `out` with the buffers `b`.
fn run<T: ?Sized + Serialize, O: Target>(value: &T, out: &mut O, b: &mut Buffers) -> Result<()> {
    let mut ser = Ser {
        out,
        prefix: Prefix::new(std::mem::take(&mut b.prefix)),
        key: std::mem::take(&mut b.key),
    };
    let result = value.serialize(Top(&mut ser));
    b.prefix = ser.prefix.into_buf();
    b.key = ser.key;
    result
}

/// Serializes `value` into `frame`, replacing its parameters and
/// attachments (the header is kept, as [`Frame::clear`] keeps it). On error
/// the frame is left empty, never half-filled.
pub(crate) fn to_frame_into<T: ?Sized + Serialize>(value: &T, frame: &mut Frame) -> Result<()> {
    frame.clear();
    let result = with_buffers(|b| run(value, frame, b));
    if result.is_err() {
        frame.clear();
    }
    result
}

/// Appends the frame of `header` and `value` to `out`, without a [`Frame`]
/// in between. On error `out` is as it was.
pub(crate) fn to_bytes_into<T: ?Sized + Serialize>(
    value: &T,
    header: &Header,
    out: &mut Vec<u8>,
) -> Result<()> {
    with_buffers(|b| {
        let mut wire = Wire::new(out, header, std::mem::take(&mut b.attachments));
        match run(value, &mut wire, b) {
            Ok(()) => {
                b.attachments = wire.finish()?;
                Ok(())
            }
            Err(e) => {
                b.attachments = wire.abort();
                Err(e)
            }
        }
    })
}

struct Ser<'f, O> {
    out: &'f mut O,
    /// The key prefix of the container being written: its device (field
    /// names, map keys and indices joined by `.`), then U+001F; `"\x1F"`
    /// at the top level. A parameter's key is this prefix and its name,
    /// without composing anything per parameter; a nested container
    /// extends it once, on entry.
    prefix: Prefix,
    /// Scratch for a map key between `serialize_key` and `serialize_value`.
    key: String,
}

impl<O: Target> Ser<'_, O> {
    /// The length of the current container's device (the prefix without
    /// its U+001F).
    #[inline(always)]
    fn base(&self) -> usize {
        self.prefix.base()
    }

    /// Enters the container `seg` of the current one (its segment checked
    /// unless `checked`); returns what [`leave`](Self::leave) goes back to:
    /// the length of the current path.
    #[inline(always)]
    fn enter(&mut self, seg: &str, checked: bool) -> Result<usize> {
        if !checked {
            check_device_segment(seg)?;
        }
        Ok(self.prefix.enter(seg.as_bytes()))
    }

    /// Back to the container whose path is the current one's first `base`
    /// bytes.
    #[inline(always)]
    fn leave(&mut self, base: usize) {
        self.prefix.leave(base);
    }

    #[inline(always)]
    fn put(&mut self, param: &str, value: ValueRef<'_>) -> Result<()> {
        // Below a device, a U+001F in the parameter is harmless: the key
        // splits at its first separator, which follows the device (whose
        // segments were checked).
        if self.prefix.len() == 1 {
            check_param(param)?;
        }
        self.out.put(&mut self.prefix, param, value)
    }

    /// A length, as the Int64 at the collection `seg`'s own key (a
    /// parameter of the current container).
    fn put_len(&mut self, seg: &str, len: usize) -> Result<()> {
        let len = i64::try_from(len).map_err(|_| {
            Error::new(ErrorKind::IntegerOutOfRange {
                value: len as i128,
                target: "int64",
            })
        })?;
        self.out.put(&mut self.prefix, seg, ValueRef::Int(len))
    }

    /// The path of `seg` in the container whose device is the current
    /// path's first `base` bytes, for an error.
    #[cold]
    fn path_of(&mut self, base: usize, seg: &str) -> String {
        let mut p = path_str(&self.prefix.bytes()[..base]).to_owned();
        join(&mut p, seg);
        p
    }
}

/// The top level: a struct or a map; its scalar fields go to device `""`.
struct Top<'a, 'f, O>(&'a mut Ser<'f, O>);

/// A value at `(ser.path, seg)`.
struct Field<'a, 'f, O> {
    ser: &'a mut Ser<'f, O>,
    seg: &'a str,
    /// `seg` is known to be fit for a device name (a sequence index).
    checked: bool,
}

/// Serializes `value` as the field `seg` of the current container, giving
/// an error without a path this field's path.
fn field<T: ?Sized + Serialize, O: Target>(
    ser: &mut Ser<'_, O>,
    seg: &str,
    value: &T,
) -> Result<()> {
    field_checked(ser, seg, false, value)
}

/// [`field`], with `checked` when `seg` is known to be fit for a device name.
#[inline(always)]
fn field_checked<T: ?Sized + Serialize, O: Target>(
    ser: &mut Ser<'_, O>,
    seg: &str,
    checked: bool,
    value: &T,
) -> Result<()> {
    let base = ser.base();
    value
        .serialize(Field {
            ser: &mut *ser,
            seg,
            checked,
        })
        .map_err(|e| e.at(|| ser.path_of(base, seg)))
}

macro_rules! top_unsupported {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $name(self, $(_: $arg),*) -> Result<()> {
            Err(Error::new(ErrorKind::Unsupported(TOP)))
        }
    )*};
}

const TOP: &str = "a top level that is not a struct or a map";

impl<'a, 'f, O: Target> ser::Serializer for Top<'a, 'f, O> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = MapSer<'a, 'f, O>;
    type SerializeStruct = StructSer<'a, 'f, O>;
    type SerializeStructVariant = Impossible<(), Error>;

    top_unsupported!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(Error::new(ErrorKind::Unsupported(DATA_VARIANT)))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(Error::new(ErrorKind::Unsupported(TOP)))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(Error::new(ErrorKind::Unsupported(TOP)))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(Error::new(ErrorKind::Unsupported(TOP)))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Error::new(ErrorKind::Unsupported(DATA_VARIANT)))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Ok(MapSer {
            base: self.0.base(),
            ser: self.0,
            seg: "",
            len: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Ok(StructSer {
            base: self.0.base(),
            ser: self.0,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Error::new(ErrorKind::Unsupported(DATA_VARIANT)))
    }
}

impl<O: Target> Field<'_, '_, O> {
    fn int(self, v: i64) -> Result<()> {
        self.ser.put(self.seg, ValueRef::Int(v))
    }

    fn wide(self, v: i128) -> Result<()> {
        match i64::try_from(v) {
            Ok(v) => self.int(v),
            Err(_) => Err(Error::new(ErrorKind::IntegerOutOfRange {
                value: v,
                target: "int64",
            })),
        }
    }
}

impl<'a, 'f, O: Target> ser::Serializer for Field<'a, 'f, O> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = SeqSer<'a, 'f, O>;
    type SerializeTuple = SeqSer<'a, 'f, O>;
    type SerializeTupleStruct = SeqSer<'a, 'f, O>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = MapSer<'a, 'f, O>;
    type SerializeStruct = StructSer<'a, 'f, O>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.ser.put(self.seg, ValueRef::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.int(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.int(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.int(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<()> {
        self.int(v)
    }
    fn serialize_i128(self, v: i128) -> Result<()> {
        self.wide(v)
    }
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.int(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.int(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.int(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<()> {
        self.wide(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        match i128::try_from(v) {
            Ok(v) => self.wide(v),
            // Beyond i128 as well: report the largest value that says so.
            Err(_) => Err(Error::new(ErrorKind::IntegerOutOfRange {
                value: i128::MAX,
                target: "int64",
            })),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.ser.put(self.seg, ValueRef::Double(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.ser.put(self.seg, ValueRef::Double(v))
    }
    fn serialize_char(self, v: char) -> Result<()> {
        let mut buf = [0u8; 4];
        self.ser
            .put(self.seg, ValueRef::String(v.encode_utf8(&mut buf)))
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        self.ser.put(self.seg, ValueRef::String(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        check_param(self.seg)?;
        // The attachment's name is the whole path: the prefix's device and
        // the segment, joined for the call.
        let ser = self.ser;
        let out = &mut *ser.out;
        ser.prefix
            .with_child_path(self.seg, |name| out.attach(name, v))
    }
    fn serialize_none(self) -> Result<()> {
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<()> {
        Err(Error::new(ErrorKind::Unsupported("a unit value")))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<()> {
        Err(Error::new(ErrorKind::Unsupported("a unit struct")))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<()> {
        self.ser.put(self.seg, ValueRef::String(variant))
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(Error::new(ErrorKind::Unsupported(DATA_VARIANT)))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq> {
        if !self.checked {
            check_device_segment(self.seg)?;
        }
        if let Some(n) = len {
            self.ser.put_len(self.seg, n)?;
        }
        let base = self.ser.enter(self.seg, true)?;
        Ok(SeqSer {
            ser: self.ser,
            base,
            seg: self.seg,
            next: 0,
            len_written: len.is_some(),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Error::new(ErrorKind::Unsupported(DATA_VARIANT)))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap> {
        if !self.checked {
            check_device_segment(self.seg)?;
        }
        if let Some(n) = len {
            self.ser.put_len(self.seg, n)?;
        }
        let base = self.ser.enter(self.seg, true)?;
        Ok(MapSer {
            ser: self.ser,
            base,
            seg: self.seg,
            len: if len.is_some() { None } else { Some(0) },
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        let base = self.ser.enter(self.seg, self.checked)?;
        Ok(StructSer {
            ser: self.ser,
            base,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Error::new(ErrorKind::Unsupported(DATA_VARIANT)))
    }
}

/// The elements of a sequence, tuple or tuple struct: params or devices
/// `0`, `1`, … under the sequence's own device.
pub(crate) struct SeqSer<'a, 'f, O> {
    ser: &'a mut Ser<'f, O>,
    base: usize,
    /// The sequence's name in its container.
    seg: &'a str,
    next: usize,
    len_written: bool,
}

impl<O: Target> SeqSer<'_, '_, O> {
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let index = IndexBuf::new(self.next);
        self.next += 1;
        // Digits: fit for a device name without a check.
        field_checked(self.ser, index.as_str(), true, value)
    }

    fn finish(self) -> Result<()> {
        self.ser.leave(self.base);
        // A sequence of unknown length records it after its elements.
        if !self.len_written {
            self.ser.put_len(self.seg, self.next)?;
        }
        Ok(())
    }
}

impl<O: Target> ser::SerializeSeq for SeqSer<'_, '_, O> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<O: Target> ser::SerializeTuple for SeqSer<'_, '_, O> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<O: Target> ser::SerializeTupleStruct for SeqSer<'_, '_, O> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.element(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

/// A map's entries: key `k` is the param `k` (scalar values) or the device
/// `…k` (containers).
pub(crate) struct MapSer<'a, 'f, O> {
    ser: &'a mut Ser<'f, O>,
    base: usize,
    /// The map's name in its container (`""` for the top level).
    seg: &'a str,
    /// Entries counted so far, when the length was not known up front (and
    /// is written at the end); `None` when it was written already or the
    /// map is the top level (which has no key of its own).
    len: Option<usize>,
}

impl<O: Target> ser::SerializeMap for MapSer<'_, '_, O> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<()> {
        self.ser.key.clear();
        key.serialize(KeySer(&mut self.ser.key))
            .map_err(|e| e.at(|| self.ser.path_of(self.base, "<key>")))
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let key = std::mem::take(&mut self.ser.key);
        let result = field(self.ser, &key, value);
        self.ser.key = key;
        if let Some(n) = &mut self.len {
            *n += 1;
        }
        result
    }

    fn end(self) -> Result<()> {
        self.ser.leave(self.base);
        if let Some(n) = self.len {
            self.ser.put_len(self.seg, n)?;
        }
        Ok(())
    }
}

/// A struct's fields: scalars are params of the struct's device, nested
/// containers devices below it.
pub(crate) struct StructSer<'a, 'f, O> {
    ser: &'a mut Ser<'f, O>,
    base: usize,
}

impl<O: Target> ser::SerializeStruct for StructSer<'_, '_, O> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        field(self.ser, name, value)
    }

    fn end(self) -> Result<()> {
        self.ser.leave(self.base);
        Ok(())
    }
}

/// A map key into a string: strings, chars and integers (in decimal).
struct KeySer<'a>(&'a mut String);

const KEY: &str = "a map key that is not a string, a char or an integer";

macro_rules! key_ints {
    ($($name:ident($t:ty)),*) => {$(
        fn $name(self, v: $t) -> Result<()> {
            use std::fmt::Write as _;
            let _ = write!(self.0, "{v}");
            Ok(())
        }
    )*};
}

macro_rules! key_unsupported {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $name(self, $(_: $arg),*) -> Result<()> {
            Err(Error::new(ErrorKind::Unsupported(KEY)))
        }
    )*};
}

impl ser::Serializer for KeySer<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    key_ints!(
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128)
    );
    key_unsupported!(
        serialize_bool(bool),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
    );

    fn serialize_char(self, v: char) -> Result<()> {
        self.0.push(v);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<()> {
        self.0.push_str(v);
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<()> {
        self.0.push_str(variant);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(Error::new(ErrorKind::Unsupported(KEY)))
    }
}

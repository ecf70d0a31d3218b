//! Typed parameter values: borrowed ([`ValueRef`]) and owned ([`Value`]).

use std::fmt;

/// The type of a parameter value, with its wire tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// Signed 64-bit integer, wire tag 10.
    Int64,
    /// IEEE 754 double, wire tag 20.
    Double,
    /// UTF-8 string, wire tag 30.
    String,
    /// Boolean, wire tag 40.
    Bool,
    /// Any other tag: the value is kept as raw MessagePack bytes and written
    /// back unchanged (forward compatibility).
    Unknown,
}

impl ValueType {
    /// The wire tag of a known type; `None` for [`ValueType::Unknown`], whose
    /// tag is carried by the value itself.
    #[must_use]
    pub const fn tag(self) -> Option<u8> {
        match self {
            ValueType::Int64 => Some(TAG_INT),
            ValueType::Double => Some(TAG_DOUBLE),
            ValueType::String => Some(TAG_STRING),
            ValueType::Bool => Some(TAG_BOOL),
            ValueType::Unknown => None,
        }
    }

    /// Lower-case name as used in the interop JSON and by `mframe dump`:
    /// `int64`, `double`, `string`, `bool`, `unknown`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ValueType::Int64 => "int64",
            ValueType::Double => "double",
            ValueType::String => "string",
            ValueType::Bool => "bool",
            ValueType::Unknown => "unknown",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub(crate) const TAG_INT: u8 = 10;
pub(crate) const TAG_DOUBLE: u8 = 20;
pub(crate) const TAG_STRING: u8 = 30;
pub(crate) const TAG_BOOL: u8 = 40;

/// A value whose tag this library does not know, kept byte for byte.
///
/// `raw` is the MessagePack encoding of the value element (the second element
/// of the `[tag, value]` pair), exactly as it arrived. It is always exactly
/// one valid MessagePack value, so a frame holding it always encodes to a
/// valid frame.
///
/// ```
/// use messageframe::{Frame, UnknownValue, ValueRef};
///
/// // Tag 50, value nil (0xc0): a relay keeps it without understanding it.
/// let unknown = UnknownValue::new(50, &[0xc0]).unwrap();
/// let mut frame = Frame::default();
/// frame.add("future", "thing", ValueRef::Unknown(unknown));
/// let back = Frame::decode(&frame.encode()).unwrap();
/// assert_eq!(back.find("future", "thing"), Some(ValueRef::Unknown(unknown)));
///
/// assert!(UnknownValue::new(10, &[0x01]).is_none()); // 10 is Int64's tag
/// assert!(UnknownValue::new(50, &[0x92, 0x01]).is_none()); // not one whole value
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnknownValue<'a> {
    tag: i64,
    raw: &'a [u8],
}

impl<'a> UnknownValue<'a> {
    /// An unknown-tag value, if `tag` is not one of the known tags and `raw`
    /// is exactly one complete MessagePack value.
    #[must_use]
    pub fn new(tag: i64, raw: &'a [u8]) -> Option<Self> {
        let known = [TAG_INT, TAG_DOUBLE, TAG_STRING, TAG_BOOL].map(i64::from);
        if known.contains(&tag) || !crate::decode::is_one_value(raw) {
            return None;
        }
        Some(UnknownValue { tag, raw })
    }

    /// Built by the decoder, which has just checked both conditions.
    pub(crate) fn from_wire(tag: i64, raw: &'a [u8]) -> Self {
        UnknownValue { tag, raw }
    }

    /// The wire tag (anything but 10, 20, 30, 40).
    #[must_use]
    pub fn tag(&self) -> i64 {
        self.tag
    }

    /// The value's MessagePack bytes.
    #[must_use]
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }
}

/// A borrowed parameter value, as returned by lookups and iteration.
///
/// String values borrow from the frame (or, for a [`FrameView`](crate::FrameView),
/// from the input bytes). Typed accessors return `None` on a type mismatch and
/// never panic.
///
/// ```
/// use messageframe::{ValueRef, ValueType};
///
/// let v = ValueRef::from(12.5);
/// assert_eq!(v.as_f64(), Some(12.5));
/// assert_eq!(v.as_i64(), None); // no silent conversion
/// assert_eq!(v.value_type(), ValueType::Double);
/// assert_eq!(v.to_string(), "12.5");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// Int64 (tag 10).
    Int(i64),
    /// Double (tag 20).
    Double(f64),
    /// String (tag 30).
    String(&'a str),
    /// Bool (tag 40).
    Bool(bool),
    /// Any other tag, kept raw.
    Unknown(UnknownValue<'a>),
}

/// An owned parameter value, for callers that keep values beyond the frame.
///
/// Build one with `From` (`Value::from(3)`, `Value::from("on")`), or with
/// [`ValueRef::to_value`].
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Int64 (tag 10).
    Int(i64),
    /// Double (tag 20).
    Double(f64),
    /// String (tag 30).
    String(String),
    /// Bool (tag 40).
    Bool(bool),
    /// Any other tag, kept raw: the tag and the value's MessagePack bytes
    /// (build it from a checked [`UnknownValue`] with [`ValueRef::to_value`]).
    Unknown(i64, Vec<u8>),
}

impl<'a> ValueRef<'a> {
    /// The value's type.
    #[must_use]
    pub fn value_type(&self) -> ValueType {
        match self {
            ValueRef::Int(_) => ValueType::Int64,
            ValueRef::Double(_) => ValueType::Double,
            ValueRef::String(_) => ValueType::String,
            ValueRef::Bool(_) => ValueType::Bool,
            ValueRef::Unknown(_) => ValueType::Unknown,
        }
    }

    /// The wire tag (10, 20, 30, 40, or the unknown value's own tag).
    #[must_use]
    pub fn tag(&self) -> i64 {
        match self {
            ValueRef::Unknown(u) => u.tag,
            other => i64::from(other.value_type().tag().unwrap_or(0)),
        }
    }

    /// The integer, if this is an Int64.
    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            ValueRef::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The double, if this is a Double.
    #[must_use]
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            ValueRef::Double(v) => Some(v),
            _ => None,
        }
    }

    /// The string, if this is a String. Borrowed for the frame's lifetime.
    #[must_use]
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            ValueRef::String(v) => Some(v),
            _ => None,
        }
    }

    /// The bool, if this is a Bool.
    #[must_use]
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            ValueRef::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The raw tag and bytes, if the tag is unknown.
    #[must_use]
    pub fn as_unknown(&self) -> Option<UnknownValue<'a>> {
        match *self {
            ValueRef::Unknown(u) => Some(u),
            _ => None,
        }
    }

    /// Copies the value into an owned [`Value`].
    #[must_use]
    pub fn to_value(&self) -> Value {
        match *self {
            ValueRef::Int(v) => Value::Int(v),
            ValueRef::Double(v) => Value::Double(v),
            ValueRef::String(v) => Value::String(v.to_owned()),
            ValueRef::Bool(v) => Value::Bool(v),
            ValueRef::Unknown(u) => Value::Unknown(u.tag, u.raw.to_vec()),
        }
    }
}

impl Value {
    /// Borrows the value as a [`ValueRef`], the form the frame API takes.
    #[must_use]
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Int(v) => ValueRef::Int(*v),
            Value::Double(v) => ValueRef::Double(*v),
            Value::String(v) => ValueRef::String(v),
            Value::Bool(v) => ValueRef::Bool(*v),
            Value::Unknown(tag, raw) => ValueRef::Unknown(UnknownValue { tag: *tag, raw }),
        }
    }
    /// The value's type.
    #[must_use]
    pub fn value_type(&self) -> ValueType {
        self.as_value_ref().value_type()
    }
    /// The integer, if this is an Int64.
    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        self.as_value_ref().as_i64()
    }
    /// The double, if this is a Double.
    #[must_use]
    pub fn as_f64(&self) -> Option<f64> {
        self.as_value_ref().as_f64()
    }
    /// The string, if this is a String.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(v) => Some(v),
            _ => None,
        }
    }
    /// The bool, if this is a Bool.
    #[must_use]
    pub fn as_bool(&self) -> Option<bool> {
        self.as_value_ref().as_bool()
    }
}

impl fmt::Display for ValueRef<'_> {
    /// Integers and strings as themselves, doubles with Rust's shortest
    /// round-trip form (always with a decimal point or exponent, `NaN`,
    /// `inf`), unknown tags as `<tag N: M bytes>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueRef::Int(v) => write!(f, "{v}"),
            ValueRef::Double(v) => write!(f, "{v:?}"),
            ValueRef::String(v) => f.write_str(v),
            ValueRef::Bool(v) => write!(f, "{v}"),
            ValueRef::Unknown(u) => write!(f, "<tag {}: {} bytes>", u.tag, u.raw.len()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.as_value_ref(), f)
    }
}

impl PartialEq<Value> for ValueRef<'_> {
    fn eq(&self, other: &Value) -> bool {
        *self == other.as_value_ref()
    }
}

impl<'a> PartialEq<ValueRef<'a>> for Value {
    fn eq(&self, other: &ValueRef<'a>) -> bool {
        self.as_value_ref() == *other
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for ValueRef<'_> {
            fn from(v: $t) -> Self { ValueRef::Int(i64::from(v)) }
        }
        impl From<$t> for Value {
            fn from(v: $t) -> Self { Value::Int(i64::from(v)) }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32);

impl From<f64> for ValueRef<'_> {
    fn from(v: f64) -> Self {
        ValueRef::Double(v)
    }
}
impl From<f32> for ValueRef<'_> {
    fn from(v: f32) -> Self {
        ValueRef::Double(f64::from(v))
    }
}
impl From<bool> for ValueRef<'_> {
    fn from(v: bool) -> Self {
        ValueRef::Bool(v)
    }
}
impl<'a> From<&'a str> for ValueRef<'a> {
    fn from(v: &'a str) -> Self {
        ValueRef::String(v)
    }
}
impl<'a> From<&'a String> for ValueRef<'a> {
    fn from(v: &'a String) -> Self {
        ValueRef::String(v)
    }
}
impl<'a> From<&'a Value> for ValueRef<'a> {
    fn from(v: &'a Value) -> Self {
        v.as_value_ref()
    }
}
impl<'a> From<&'a ValueRef<'a>> for ValueRef<'a> {
    fn from(v: &'a ValueRef<'a>) -> Self {
        *v
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Double(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Value::Double(f64::from(v))
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::String(v)
    }
}
impl From<ValueRef<'_>> for Value {
    fn from(v: ValueRef<'_>) -> Self {
        v.to_value()
    }
}

/// Anything that can be stored as a parameter value: the integer types up to
/// `i64` and `u32`, `f64`, `f32`, `bool`, `&str`, `String`, [`Value`] and
/// [`ValueRef`] (and references to them).
///
/// The frame copies the value into its own storage, so a `String` may be
/// passed by value or by reference alike.
///
/// ```
/// use messageframe::{Frame, Value};
///
/// let mut frame = Frame::default();
/// frame.add("d", "int", 7);
/// frame.add("d", "owned", String::from("moved in"));
/// frame.add("d", "value", &Value::from(2.5));
/// assert_eq!(frame.len(), 3);
/// ```
pub trait ToValueRef {
    /// Borrows `self` as a [`ValueRef`].
    fn to_value_ref(&self) -> ValueRef<'_>;
}

macro_rules! to_value_ref_via_from {
    ($($t:ty),*) => {$(
        impl ToValueRef for $t {
            #[inline]
            fn to_value_ref(&self) -> ValueRef<'_> {
                ValueRef::from(*self)
            }
        }
    )*};
}
to_value_ref_via_from!(i8, i16, i32, i64, u8, u16, u32, f32, f64, bool);

impl ToValueRef for str {
    #[inline]
    fn to_value_ref(&self) -> ValueRef<'_> {
        ValueRef::String(self)
    }
}
impl ToValueRef for String {
    #[inline]
    fn to_value_ref(&self) -> ValueRef<'_> {
        ValueRef::String(self)
    }
}
impl ToValueRef for Value {
    #[inline]
    fn to_value_ref(&self) -> ValueRef<'_> {
        self.as_value_ref()
    }
}
impl ToValueRef for ValueRef<'_> {
    #[inline]
    fn to_value_ref(&self) -> ValueRef<'_> {
        *self
    }
}
impl<T: ToValueRef + ?Sized> ToValueRef for &T {
    #[inline]
    fn to_value_ref(&self) -> ValueRef<'_> {
        (**self).to_value_ref()
    }
}

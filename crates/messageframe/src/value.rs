//! Typed parameter values: borrowed ([`ValueRef`]) and owned ([`Value`]).

#[allow(unused_imports)]
use crate::prelude::*;

use core::fmt;

use crate::error::IntOutOfRange;

/// The type of a parameter value, with its wire tag.
///
/// The variants have the names of [`ValueRef`]'s and [`Value`]'s, so a
/// value and its type read alike (`ValueRef::Int(5)` is a
/// `ValueType::Int`); [`name`](ValueType::name) gives the wire-format names
/// (`int64`, …) that the interop JSON and `mframe dump` use.
///
/// ```
/// use messageframe::{ValueRef, ValueType};
///
/// assert_eq!(ValueRef::Int(5).value_type(), ValueType::Int);
/// assert_eq!(format!("{:?} {:?}", ValueRef::Int(5), ValueType::Int), "Int(5) Int");
/// assert_eq!(ValueType::Int.name(), "int64");
/// ```
///
/// `#[non_exhaustive]`: a later version may know more types, so a `match`
/// needs a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValueType {
    /// Signed 64-bit integer (the wire format's Int64), wire tag 10.
    Int,
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
            ValueType::Int => Some(TAG_INT),
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
            ValueType::Int => "int64",
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
/// The tag is any MessagePack integer, from −2⁶³ (`i64::MIN`) to 2⁶⁴−1
/// (`u64::MAX`), held as an `i128`, the one primitive type that holds all of
/// them exactly (docs/wire-format.md).
///
/// ```
/// use messageframe::{Frame, UnknownValue, ValueRef};
///
/// // Tag 50, value nil (0xc0): a relay keeps it without understanding it.
/// let unknown = UnknownValue::new(50, &[0xc0]).unwrap();
/// let mut frame = Frame::default();
/// frame.add("future", "thing", ValueRef::Unknown(unknown));
/// let back = Frame::decode(&frame.encode()?).unwrap();
/// assert_eq!(back.find("future", "thing"), Some(ValueRef::Unknown(unknown)));
///
/// assert!(UnknownValue::new(10, &[0x01]).is_none()); // 10 is Int64's tag
/// assert!(UnknownValue::new(50, &[0x92, 0x01]).is_none()); // not one whole value
/// assert!(UnknownValue::new(u64::MAX.into(), &[0xc0]).is_some());
/// assert!(UnknownValue::new(1 << 64, &[0xc0]).is_none()); // not a MessagePack integer
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnknownValue<'a> {
    tag: i128,
    raw: &'a [u8],
}

/// Every MessagePack integer: `i64::MIN..=u64::MAX`.
const TAG_RANGE: core::ops::RangeInclusive<i128> = i64::MIN as i128..=u64::MAX as i128;

impl<'a> UnknownValue<'a> {
    /// An unknown-tag value, if `tag` is a MessagePack integer
    /// (`i64::MIN..=u64::MAX`) other than the known tags, and `raw` is
    /// exactly one complete MessagePack value.
    #[must_use]
    pub fn new(tag: i128, raw: &'a [u8]) -> Option<Self> {
        let known = [TAG_INT, TAG_DOUBLE, TAG_STRING, TAG_BOOL].map(i128::from);
        if known.contains(&tag)
            || !TAG_RANGE.contains(&tag)
            || !crate::wire::read::is_one_value(raw)
        {
            return None;
        }
        Some(UnknownValue { tag, raw })
    }

    /// Built by the decoder, which has just checked all conditions.
    pub(crate) fn from_wire(tag: i128, raw: &'a [u8]) -> Self {
        UnknownValue { tag, raw }
    }

    /// Copies the value into an owned [`UnknownValueBuf`].
    #[must_use]
    pub fn to_owned_value(&self) -> UnknownValueBuf {
        UnknownValueBuf {
            tag: self.tag,
            raw: self.raw.into(),
        }
    }

    /// The wire tag: any MessagePack integer but 10, 20, 30, 40.
    #[must_use]
    pub fn tag(&self) -> i128 {
        self.tag
    }

    /// The value's MessagePack bytes.
    #[must_use]
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }
}

/// The owned form of an [`UnknownValue`]: a tag this library does not know
/// and the value's MessagePack bytes, for a [`Value::Unknown`].
///
/// Its fields are private and its only constructors check them, as
/// [`UnknownValue::new`] does: the tag is not one of the known tags, and the
/// bytes are exactly one complete MessagePack value. So a [`Value`] holding
/// one always encodes to a frame that decodes again.
///
/// ```
/// use messageframe::{Frame, UnknownValueBuf, Value};
///
/// let v = Value::Unknown(UnknownValueBuf::new(50, vec![0x92, 0x01, 0x02]).unwrap());
/// let mut frame = Frame::default();
/// frame.add("future", "vector", &v);
/// let back = Frame::decode(&frame.encode()?)?;
/// assert_eq!(back.find("future", "vector"), Some(v.as_value_ref()));
///
/// assert!(UnknownValueBuf::new(10, vec![0xa1, b'x']).is_none()); // 10 is Int64's tag
/// assert!(UnknownValueBuf::new(50, vec![0x92, 0x01]).is_none()); // an incomplete value
/// assert!(UnknownValueBuf::new(50, vec![]).is_none()); // no value at all
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The tuple variant of earlier versions is gone, so unchecked bytes cannot
/// get into a frame:
///
/// ```compile_fail
/// use messageframe::Value;
/// let v = Value::Unknown(10, vec![0xa1, b'x']);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnknownValueBuf {
    tag: i128,
    raw: Box<[u8]>,
}

impl UnknownValueBuf {
    /// An unknown-tag value, if `tag` is not one of the known tags and `raw`
    /// is exactly one complete MessagePack value (the checks of
    /// [`UnknownValue::new`]).
    #[must_use]
    pub fn new(tag: i128, raw: Vec<u8>) -> Option<Self> {
        UnknownValue::new(tag, &raw)?;
        Some(UnknownValueBuf {
            tag,
            raw: raw.into_boxed_slice(),
        })
    }

    /// The wire tag: any MessagePack integer but 10, 20, 30, 40.
    #[must_use]
    pub fn tag(&self) -> i128 {
        self.tag
    }

    /// The value's MessagePack bytes.
    #[must_use]
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// Borrows it as an [`UnknownValue`].
    #[must_use]
    pub fn as_unknown_value(&self) -> UnknownValue<'_> {
        UnknownValue {
            tag: self.tag,
            raw: &self.raw,
        }
    }
}

impl From<UnknownValue<'_>> for UnknownValueBuf {
    fn from(v: UnknownValue<'_>) -> Self {
        v.to_owned_value()
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
///
/// `#[non_exhaustive]`: a later version may know more types, so a `match`
/// needs a wildcard arm:
///
/// ```compile_fail
/// use messageframe::ValueRef;
/// fn kind(v: ValueRef<'_>) -> &'static str {
///     match v {
///         ValueRef::Int(_) => "int",
///         ValueRef::Double(_) => "double",
///         ValueRef::String(_) => "string",
///         ValueRef::Bool(_) => "bool",
///         ValueRef::Unknown(_) => "unknown",
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
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
///
/// `#[non_exhaustive]`: a later version may know more types, so a `match`
/// needs a wildcard arm.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// Int64 (tag 10).
    Int(i64),
    /// Double (tag 20).
    Double(f64),
    /// String (tag 30).
    String(String),
    /// Bool (tag 40).
    Bool(bool),
    /// Any other tag, kept raw: the tag and the value's MessagePack bytes,
    /// checked when the [`UnknownValueBuf`] was made.
    Unknown(UnknownValueBuf),
}

impl<'a> ValueRef<'a> {
    /// The value's type.
    #[must_use]
    pub fn value_type(&self) -> ValueType {
        match self {
            ValueRef::Int(_) => ValueType::Int,
            ValueRef::Double(_) => ValueType::Double,
            ValueRef::String(_) => ValueType::String,
            ValueRef::Bool(_) => ValueType::Bool,
            ValueRef::Unknown(_) => ValueType::Unknown,
        }
    }

    /// The wire tag (10, 20, 30, 40, or the unknown value's own tag, any
    /// MessagePack integer).
    #[must_use]
    pub fn tag(&self) -> i128 {
        match self {
            ValueRef::Unknown(u) => u.tag,
            other => i128::from(other.value_type().tag().unwrap_or(0)),
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

    /// The value as an `f64` if it is a number that an `f64` holds
    /// exactly: a Double as it is, an Int64 if converting it loses nothing
    /// (every integer of magnitude up to 2⁵³, and larger ones whose low bits
    /// are zero). `None` for an Int64 that would be rounded, and for every
    /// other type.
    ///
    /// [`as_f64`](ValueRef::as_f64) never converts: a reader that accepts a
    /// whole number sent as an Int64 (`add(.., 30)` rather than `30.0`) uses
    /// this one.
    ///
    /// ```
    /// use messageframe::ValueRef;
    ///
    /// assert_eq!(ValueRef::Int(30).as_f64(), None);
    /// assert_eq!(ValueRef::Int(30).to_f64(), Some(30.0));
    /// assert_eq!(ValueRef::Double(0.25).to_f64(), Some(0.25));
    /// assert_eq!(ValueRef::Int(1 << 53).to_f64(), Some(9007199254740992.0));
    /// assert_eq!(ValueRef::Int((1 << 53) + 1).to_f64(), None); // would round
    /// assert_eq!(ValueRef::Int(i64::MAX).to_f64(), None); // would round to 2^63
    /// assert_eq!(ValueRef::Int(i64::MIN).to_f64(), Some(-9223372036854775808.0));
    /// assert_eq!(ValueRef::String("30").to_f64(), None);
    /// ```
    #[must_use]
    pub fn to_f64(&self) -> Option<f64> {
        match *self {
            ValueRef::Double(v) => Some(v),
            ValueRef::Int(v) => int_to_f64_exact(v),
            _ => None,
        }
    }

    /// The value as an `i64` if it is an integer: an Int64 as it is, a
    /// Double if it is integral and within `i64`'s range (`-0.0` gives 0).
    /// `None` for a Double with a fractional part, NaN, an infinity, one
    /// outside `i64::MIN..=i64::MAX`, and for every other type.
    ///
    /// ```
    /// use messageframe::ValueRef;
    ///
    /// assert_eq!(ValueRef::Double(30.0).as_i64(), None);
    /// assert_eq!(ValueRef::Double(30.0).to_i64(), Some(30));
    /// assert_eq!(ValueRef::Double(30.5).to_i64(), None);
    /// assert_eq!(ValueRef::Double(9.3e18).to_i64(), None); // past i64::MAX
    /// assert_eq!(ValueRef::Double(-9223372036854775808.0).to_i64(), Some(i64::MIN));
    /// assert_eq!(ValueRef::Double(f64::NAN).to_i64(), None);
    /// assert_eq!(ValueRef::Int(-4).to_i64(), Some(-4));
    /// ```
    #[must_use]
    pub fn to_i64(&self) -> Option<i64> {
        match *self {
            ValueRef::Int(v) => Some(v),
            ValueRef::Double(v) => f64_to_i64_exact(v),
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
            ValueRef::Unknown(u) => Value::Unknown(u.to_owned_value()),
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
            Value::Unknown(u) => ValueRef::Unknown(u.as_unknown_value()),
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
    /// The number as an `f64`, if exact: see [`ValueRef::to_f64`].
    #[must_use]
    pub fn to_f64(&self) -> Option<f64> {
        self.as_value_ref().to_f64()
    }
    /// The number as an `i64`, if exact: see [`ValueRef::to_i64`].
    #[must_use]
    pub fn to_i64(&self) -> Option<i64> {
        self.as_value_ref().to_i64()
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
    /// The raw tag and bytes, if the tag is unknown.
    #[must_use]
    pub fn as_unknown(&self) -> Option<UnknownValue<'_>> {
        self.as_value_ref().as_unknown()
    }
}

/// `v` as an `f64` if the conversion is exact. Compared through `i128`:
/// `i64::MAX` rounds to 2⁶³, which an `as i64` cast would saturate back to
/// `i64::MAX` and so pass for exact.
fn int_to_f64_exact(v: i64) -> Option<f64> {
    let f = v as f64;
    (f as i128 == i128::from(v)).then_some(f)
}

/// `v` as an `i64` if it is integral and in range. 2⁶³ is the first double
/// past `i64::MAX`; −2⁶³ is `i64::MIN` exactly.
fn f64_to_i64_exact(v: f64) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
                                                    // No `f64::fract`: it is not in `core`. In range, the cast truncates,
                                                    // and gives `v` back exactly when `v` was integral (NaN is not in range).
    if !(-LIMIT..LIMIT).contains(&v) {
        return None;
    }
    let i = v as i64;
    (i as f64 == v).then_some(i)
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

macro_rules! try_from_unsigned {
    ($($t:ty),*) => {$(
        impl TryFrom<$t> for ValueRef<'_> {
            type Error = IntOutOfRange;
            /// An Int64, if `v` is at most `i64::MAX`.
            fn try_from(v: $t) -> Result<Self, IntOutOfRange> {
                // `as u64` is lossless: usize is at most 64 bits wide.
                i64::try_from(v).map(ValueRef::Int).map_err(|_| IntOutOfRange::new(v as u64))
            }
        }
        impl TryFrom<$t> for Value {
            type Error = IntOutOfRange;
            /// An Int64, if `v` is at most `i64::MAX`.
            fn try_from(v: $t) -> Result<Self, IntOutOfRange> {
                ValueRef::try_from(v).map(Value::from)
            }
        }
        impl TryToValueRef for $t {
            #[inline]
            fn try_to_value_ref(&self) -> Result<ValueRef<'_>, IntOutOfRange> {
                ValueRef::try_from(*self)
            }
        }
        impl TryToValueRef for &$t {
            #[inline]
            fn try_to_value_ref(&self) -> Result<ValueRef<'_>, IntOutOfRange> {
                ValueRef::try_from(**self)
            }
        }
    )*};
}
try_from_unsigned!(u64, usize);

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
impl<'a> From<UnknownValue<'a>> for ValueRef<'a> {
    fn from(v: UnknownValue<'a>) -> Self {
        ValueRef::Unknown(v)
    }
}
impl From<UnknownValueBuf> for Value {
    fn from(v: UnknownValueBuf) -> Self {
        Value::Unknown(v)
    }
}
impl From<ValueRef<'_>> for Value {
    fn from(v: ValueRef<'_>) -> Self {
        v.to_value()
    }
}

/// Anything that can be stored as a parameter value: the integer types that
/// always fit Int64 (`i8` to `i64`, `u8` to `u32`), `f64`, `f32`, `bool`, `&str`, `String`, [`Value`] and
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

/// What [`Frame::try_add`](crate::Frame::try_add) takes: everything
/// [`ToValueRef`] takes, and also `u64` and `usize`, which become an Int64
/// when they are at most `i64::MAX` and an [`IntOutOfRange`] error when
/// they are not.
///
/// `u64` and `usize` are not [`ToValueRef`], so `add`, `set` and `update`
/// do not take them: half of their range has no Int64, and those methods
/// cannot fail. Store a length or a count with `try_add`, or convert it
/// first with `Value::try_from` / `ValueRef::try_from`:
///
/// ```
/// use messageframe::{AddError, Frame, ValueRef};
///
/// let samples = vec![0u8; 4096];
/// let mut frame = Frame::default();
/// frame.try_add("sdr_1", "samples", samples.len())?;
/// frame.set("sdr_1", "capacity", ValueRef::try_from(samples.capacity())?);
/// assert_eq!(frame.find("sdr_1", "samples"), Some(ValueRef::Int(4096)));
///
/// assert!(matches!(frame.try_add("sdr_1", "big", u64::MAX), Err(AddError::IntOutOfRange(_))));
/// assert_eq!(frame.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait TryToValueRef {
    /// Borrows `self` as a [`ValueRef`], or says why it has none.
    ///
    /// # Errors
    ///
    /// [`IntOutOfRange`] for an unsigned integer above `i64::MAX`.
    fn try_to_value_ref(&self) -> Result<ValueRef<'_>, IntOutOfRange>;
}

impl<T: ToValueRef + ?Sized> TryToValueRef for T {
    #[inline]
    fn try_to_value_ref(&self) -> Result<ValueRef<'_>, IntOutOfRange> {
        Ok(self.to_value_ref())
    }
}

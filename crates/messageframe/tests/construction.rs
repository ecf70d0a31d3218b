//! Conversions and construction (issue 11, items 2 and 4): the integer
//! types into values, checked for `u64`/`usize`; exact numeric conversions;
//! the header builder; `Default` without a clock read; `TryFrom<&[u8]>`.

use messageframe::{
    AddError, DecodeError, Frame, Header, IntOutOfRange, TryToValueRef, Value, ValueRef, ValueType,
};
use proptest::prelude::*;

#[test]
fn every_integer_type_that_fits_int64_converts_infallibly() {
    let mut frame = Frame::default();
    frame.add("i", "u8", u8::MAX);
    frame.add("i", "u16", u16::MAX);
    frame.add("i", "u32", u32::MAX);
    frame.add("i", "i8", i8::MIN);
    frame.add("i", "i16", i16::MIN);
    frame.add("i", "i32", i32::MIN);
    frame.add("i", "i64", i64::MIN);
    let got: Vec<i64> = frame.iter().map(|(_, _, v)| v.as_i64().unwrap()).collect();
    assert_eq!(
        got,
        [
            255,
            65_535,
            4_294_967_295,
            -128,
            -32_768,
            -2_147_483_648,
            i64::MIN
        ]
    );
    assert_eq!(Value::from(7u8), Value::Int(7));
    assert_eq!(ValueRef::from(-7i16), ValueRef::Int(-7));
}

#[test]
fn u64_and_usize_convert_only_up_to_i64_max() {
    let max = i64::MAX as u64;
    assert_eq!(Value::try_from(max), Ok(Value::Int(i64::MAX)));
    assert_eq!(ValueRef::try_from(max), Ok(ValueRef::Int(i64::MAX)));
    let err: IntOutOfRange = Value::try_from(max + 1).unwrap_err();
    assert_eq!(err.value(), max + 1);
    assert_eq!(ValueRef::try_from(u64::MAX).unwrap_err().value(), u64::MAX);
    assert_eq!(ValueRef::try_from(12usize), Ok(ValueRef::Int(12)));
    assert_eq!(5u64.try_to_value_ref(), Ok(ValueRef::Int(5)));
    let by_ref: &usize = &5;
    assert_eq!(
        TryToValueRef::try_to_value_ref(&by_ref),
        Ok(ValueRef::Int(5))
    );
    assert_eq!("s".try_to_value_ref(), Ok(ValueRef::String("s")));
    if usize::BITS == 64 {
        let err = ValueRef::try_from(usize::MAX).unwrap_err();
        assert_eq!(err.value(), usize::MAX as u64);
    }

    // The checked form of `frame.add(.., vec.len())`.
    let data = vec![0u8; 4096];
    let mut frame = Frame::default();
    frame.try_add("buf", "len", data.len()).unwrap();
    frame.try_add("buf", "max", max).unwrap();
    assert_eq!(frame.find("buf", "len"), Some(ValueRef::Int(4096)));
    let err = frame.try_add("buf", "big", u64::MAX).unwrap_err();
    assert_eq!(
        err,
        AddError::IntOutOfRange(ValueRef::try_from(u64::MAX).unwrap_err())
    );
    assert_eq!(
        err.to_string(),
        "18446744073709551615 is outside the Int64 range"
    );
    assert!(std::error::Error::source(&err).is_some());
    // A refused value changes nothing, and is refused before the key is
    // checked.
    assert_eq!(frame.len(), 2);
    assert!(matches!(
        frame.try_add("buf", "len", u64::MAX),
        Err(AddError::IntOutOfRange(_))
    ));
    assert_eq!(
        frame.try_add("buf", "len", 1u64),
        Err(AddError::DuplicateKey)
    );
    // `?` converts the error into `AddError`.
    fn store(frame: &mut Frame, n: u64) -> Result<(), AddError> {
        frame.set("d", "n", ValueRef::try_from(n)?);
        Ok(())
    }
    assert!(store(&mut frame, 3).is_ok());
    assert!(matches!(
        store(&mut frame, u64::MAX),
        Err(AddError::IntOutOfRange(_))
    ));
    assert_eq!(frame.find("d", "n"), Some(ValueRef::Int(3)));
}

#[test]
fn to_f64_and_to_i64_convert_only_exactly() {
    let two53 = 1i64 << 53;
    assert_eq!(ValueRef::Int(30).as_f64(), None);
    assert_eq!(ValueRef::Int(30).to_f64(), Some(30.0));
    assert_eq!(
        ValueRef::Int(-two53).to_f64(),
        Some(-9_007_199_254_740_992.0)
    );
    assert_eq!(ValueRef::Int(two53 + 1).to_f64(), None);
    assert_eq!(
        ValueRef::Int(two53 + 2).to_f64(),
        Some(9_007_199_254_740_994.0)
    );
    assert_eq!(ValueRef::Int(i64::MAX).to_f64(), None);
    assert_eq!(ValueRef::Int(i64::MIN).to_f64(), Some(-(2f64.powi(63))));
    assert_eq!(
        ValueRef::Double(f64::NAN).to_f64().map(f64::is_nan),
        Some(true)
    );
    assert_eq!(ValueRef::Bool(true).to_f64(), None);
    assert_eq!(Value::Int(4).to_f64(), Some(4.0));

    assert_eq!(ValueRef::Double(-0.0).to_i64(), Some(0));
    assert_eq!(ValueRef::Double(2f64.powi(63)).to_i64(), None);
    assert_eq!(ValueRef::Double(-(2f64.powi(63))).to_i64(), Some(i64::MIN));
    assert_eq!(ValueRef::Double(1e300).to_i64(), None);
    assert_eq!(ValueRef::Double(f64::INFINITY).to_i64(), None);
    assert_eq!(ValueRef::Double(f64::NEG_INFINITY).to_i64(), None);
    assert_eq!(ValueRef::Double(f64::NAN).to_i64(), None);
    assert_eq!(ValueRef::Double(0.5).to_i64(), None);
    assert_eq!(ValueRef::Double(-1.0e-300).to_i64(), None);
    assert_eq!(ValueRef::String("1").to_i64(), None);
    assert_eq!(Value::Double(8.0).to_i64(), Some(8));

    // A whole number sent as Int64 reads back as f64 after a round trip.
    let mut frame = Frame::default();
    frame.add("d", "gain", 30);
    let back = Frame::decode(&frame.encode().unwrap()).unwrap();
    assert_eq!(back.find("d", "gain").and_then(|v| v.to_f64()), Some(30.0));
}

proptest! {
    #[test]
    fn to_f64_is_some_exactly_when_the_conversion_round_trips(i in any::<i64>(), shift in 0u32..64) {
        for v in [i, i >> shift, (i >> shift) << shift] {
            let exact = (v as f64) as i128 == i128::from(v);
            prop_assert_eq!(ValueRef::Int(v).to_f64().is_some(), exact);
            if let Some(f) = ValueRef::Int(v).to_f64() {
                prop_assert_eq!(ValueRef::Double(f).to_i64(), Some(v));
            }
        }
    }

    #[test]
    fn to_i64_is_some_exactly_for_integral_doubles_in_range(bits in any::<u64>()) {
        let f = f64::from_bits(bits);
        let expected = (f.is_finite() && f.fract() == 0.0 && f >= -(2f64.powi(63)) && f < 2f64.powi(63))
            .then_some(f as i64);
        prop_assert_eq!(ValueRef::Double(f).to_i64(), expected);
    }
}

#[test]
fn value_type_names_match_the_value_variants() {
    let pairs = [
        (ValueRef::Int(1), ValueType::Int, "Int"),
        (ValueRef::Double(1.5), ValueType::Double, "Double"),
        (ValueRef::String("s"), ValueType::String, "String"),
        (ValueRef::Bool(true), ValueType::Bool, "Bool"),
    ];
    for (v, t, name) in pairs {
        assert_eq!(v.value_type(), t);
        assert_eq!(format!("{t:?}"), name);
        assert!(format!("{v:?}").starts_with(name));
        assert_eq!(v.to_value().value_type(), t);
    }
}

#[test]
fn the_header_builder_sets_every_field_and_defaults_the_rest() {
    #[derive(Clone, Copy)]
    enum Msg {
        Telemetry = 1001,
    }
    impl From<Msg> for i32 {
        fn from(m: Msg) -> i32 {
            m as i32
        }
    }
    let h = Header::builder()
        .message_id(Msg::Telemetry)
        .message_type(-2)
        .source(50)
        .target(99)
        .counter(u64::MAX)
        .version(3)
        .flags(0xffff)
        .timestamp(42)
        .build();
    assert_eq!(
        h,
        Header::from_fields(42, u64::MAX, 50, 99, 1001, -2, 3, 0xffff)
    );
    let d = Header::builder().target(7).build();
    assert_eq!(d, Header::from_fields(0, 0, 0, 7, 0, 0, 1, 0));

    #[cfg(feature = "std")]
    {
        let before = messageframe::now_millis();
        let now = Header::builder().timestamp_now().build();
        assert!(now.timestamp() >= before && now.timestamp() <= messageframe::now_millis());
    }
}

#[test]
fn default_frames_and_headers_do_not_read_the_clock() {
    assert_eq!(
        Header::default(),
        Header::from_fields(0, 0, 0, 0, 0, 0, 1, 0)
    );
    let frame = Frame::default();
    assert_eq!(frame.header().timestamp(), 0);
}

#[cfg(feature = "std")]
#[test]
fn update_timestamp_and_header_new_read_the_clock() {
    let mut frame = Frame::default();
    let before = messageframe::now_millis();
    frame.update_timestamp();
    assert!(frame.header().timestamp() >= before);
    // `Header::new` reads it, as the C++ constructor does.
    assert!(Header::new(1, 2, 3, 4).timestamp() >= before);
}

#[test]
fn try_from_bytes_decodes_with_the_default_limits() {
    let mut frame = Frame::new(Header::builder().message_id(5).timestamp(9).build());
    frame.add("d", "p", "v");
    frame.add_attachment("a", vec![1u8, 2]);
    let bytes = frame.encode().unwrap();
    assert_eq!(Frame::try_from(&bytes[..]).unwrap(), frame);
    let r: Result<Frame, DecodeError> = bytes[..bytes.len() - 1].try_into();
    assert!(r.is_err());
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert_eq!(
        Frame::try_from(&trailing[..]).unwrap_err(),
        Frame::decode(&trailing).unwrap_err()
    );
}

#[test]
fn every_error_type_is_an_error_with_or_without_std() {
    // With `std`: `std::error::Error`. Without it (the no_std test run, on
    // a compiler from 1.81 on): `core::error::Error`, which `std`'s is.
    fn is_error<E: std::error::Error + Send + Sync + 'static>() {}
    is_error::<DecodeError>();
    is_error::<messageframe::EncodeError>();
    is_error::<AddError>();
    is_error::<IntOutOfRange>();
    is_error::<messageframe::InvalidKey>();
    let err: Box<dyn std::error::Error> =
        Box::new(AddError::from(ValueRef::try_from(u64::MAX).unwrap_err()));
    assert!(err.source().is_some());
}

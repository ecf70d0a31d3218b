//! UTF-8 validation with a fast path for ASCII, which keys and string values
//! nearly always are.
//!
//! This module holds the crate's only `unsafe` code: two conversions of
//! bytes that were checked to be ASCII, right before, into `str` / `String`.
//! `std::str::from_utf8` runs its full decoder on every byte of a short
//! string (about 90 instructions for the 7 bytes of `"value_3"`); the word-wide
//! ASCII check costs a handful, and ASCII is valid UTF-8 by definition. What
//! it buys is measured in docs/performance.md (the 4-parameter view round
//! trip and the owned decode).

#[allow(unused_imports)]
use crate::prelude::*;

use alloc::string::FromUtf8Error;
use core::str::Utf8Error;

use crate::key::is_ascii;

/// `bytes` as a `&str`, if they are valid UTF-8.
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn str_from(bytes: &[u8]) -> Result<&str, Utf8Error> {
    if is_ascii(bytes) {
        debug_assert!(core::str::from_utf8(bytes).is_ok());
        // SAFETY: `is_ascii` has just checked that no byte is 0x80 or above
        // (it reads every byte: see its tests), and a sequence of ASCII
        // bytes is valid UTF-8.
        Ok(unsafe { core::str::from_utf8_unchecked(bytes) })
    } else {
        core::str::from_utf8(bytes)
    }
}

/// Whether `bytes` are valid UTF-8.
#[inline(always)]
pub(crate) fn is_valid(bytes: &[u8]) -> bool {
    str_from(bytes).is_ok()
}

/// `bytes` as a `String` (the same allocation), if they are valid UTF-8.
#[inline]
#[allow(unsafe_code)]
pub(crate) fn string_from(bytes: Vec<u8>) -> Result<String, FromUtf8Error> {
    if is_ascii(&bytes) {
        debug_assert!(core::str::from_utf8(&bytes).is_ok());
        // SAFETY: as in `str_from`: every byte was just checked to be ASCII.
        Ok(unsafe { String::from_utf8_unchecked(bytes) })
    } else {
        String::from_utf8(bytes)
    }
}

/// Appends `s` to `text`: up to 8 bytes with [`append_short`]'s fixed-size
/// write instead of a call to `memcpy`.
///
/// [`append_short`]: crate::key::append_short
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn push_str(text: &mut String, s: &str) {
    // SAFETY: `append_short` either appends nothing or appends exactly the
    // bytes of `s` (the zero bytes it writes past them are cut off before it
    // returns, and nothing can observe them in between: the 8 bytes fit the
    // capacity, so nothing reallocates or panics). Appending a whole `&str`
    // keeps a `String` valid UTF-8.
    let appended = crate::key::append_short(unsafe { text.as_mut_vec() }, s.as_bytes());
    if !appended {
        if text.capacity() == 0 {
            // A new arena starts at 64 bytes: from `String`'s 8, a
            // 4-parameter frame grew it three times.
            text.reserve(s.len().max(FIRST_TEXT));
        }
        text.push_str(s);
    }
}

/// The capacity of a new frame's text arena at its first parameter.
const FIRST_TEXT: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_str_appends_exactly_the_string() {
        for room in [0usize, 7, 8, 64] {
            for s in [
                "",
                "a",
                "é",
                "ab",
                "d0",
                "abc",
                "€",
                "abcd",
                "p1023",
                "value_3",
                "12345678",
                "123456789",
                "ünïcödé",
            ] {
                let mut text = String::with_capacity(2 + room);
                text.push_str("xy");
                let cap = text.capacity();
                push_str(&mut text, s);
                assert_eq!(text, format!("xy{s}"), "room {room}");
                if s.len() <= cap - 2 {
                    assert_eq!(text.capacity(), cap, "no growth when it fits");
                }
            }
        }
    }

    #[test]
    fn agrees_with_std_on_every_length_and_every_high_byte_position() {
        // `is_ascii` has three branches: up to 8 bytes, 9 to 16, and std's
        // past 16. Under Miri (.ci/miri.sh) lengths up to 23 still take all
        // three, and every position in each, in a third of the time; the
        // native runs go up to 39.
        let lengths = if cfg!(miri) { 24 } else { 40 };
        for n in 0..lengths {
            let ascii: Vec<u8> = (0..n).map(|i| b' ' + (i % 90) as u8).collect();
            assert_eq!(str_from(&ascii).ok(), core::str::from_utf8(&ascii).ok());
            assert!(string_from(ascii.clone()).is_ok());
            for at in 0..n {
                // A lone high byte (invalid), a valid two-byte sequence and
                // the highest byte value, at every position.
                for (bytes, len) in [(&[0x80u8][..], 1), (&[0xc3, 0xa9][..], 2), (&[0xff][..], 1)] {
                    if at + len > n {
                        continue;
                    }
                    let mut b = ascii.clone();
                    b[at..at + len].copy_from_slice(bytes);
                    assert_eq!(str_from(&b).ok(), core::str::from_utf8(&b).ok(), "{b:?}");
                    assert_eq!(
                        string_from(b.clone()).ok(),
                        String::from_utf8(b.clone()).ok(),
                        "{b:?}"
                    );
                }
            }
        }
    }
}

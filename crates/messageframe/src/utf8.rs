//! UTF-8 validation with a fast path for ASCII, which keys and string values
//! nearly always are.
//!
//! This module holds one of the crate's two `unsafe` blocks (the other is
//! in `arena`): the conversion of bytes that were checked to be ASCII,
//! right before, into `str`.
//! `std::str::from_utf8` runs its full decoder on every byte of a short
//! string (about 90 instructions for the 7 bytes of `"value_3"`); the word-wide
//! ASCII check costs a handful, and ASCII is valid UTF-8 by definition. What
//! it buys is measured in docs/performance.md (the 4-parameter view round
//! trip and the owned decode).

#[allow(unused_imports)]
use crate::prelude::*;

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

#[cfg(test)]
mod tests {
    use super::*;

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
                }
            }
        }
    }
}

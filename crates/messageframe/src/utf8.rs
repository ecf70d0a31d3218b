//! UTF-8 validation with a fast path for ASCII, which keys and string values
//! nearly always are, and, on x86, SIMD for long text (a decoded frame's
//! keys and strings are checked at once, as one text: `arena::RawText`).
//!
//! This module holds one of the crate's two `unsafe` blocks (the other is
//! in `arena`): the conversion of bytes that were checked to be ASCII,
//! right before, into `str`.
//! `std::str::from_utf8` runs its full decoder on every byte of a short
//! string (about 90 instructions for the 7 bytes of `"value_3"`); the word-wide
//! ASCII check costs a handful, and ASCII is valid UTF-8 by definition. On
//! long text `core`'s decoder takes its byte-by-byte path at every non-ASCII
//! character (the telemetry message's `température_boîtier`, `µwave_link`,
//! `°c`), and `simdutf8` checks 64 bytes a step either way. What both buy
//! is measured in docs/performance.md (the 4-parameter view round trip and
//! the owned decode; "UTF-8 validation").

#[allow(unused_imports)]
use crate::prelude::*;

use core::str::Utf8Error;

use crate::key::is_ascii;

/// From this many bytes on, [`is_valid`] asks `simdutf8` (SIMD, with its
/// own ASCII fast path) instead of the word-wide ASCII check and `core`'s
/// decoder: below it, the call through `simdutf8`'s CPU dispatch costs more
/// than it saves. On x86 only (Cargo.toml says why). [`str_from`], which
/// the view and the serde bridge call on each key and string where it
/// lies (nearly all short), stays as it was.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
pub(crate) const SIMD_FROM: usize = 64;

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

/// Whether `bytes` are valid UTF-8: a decoded frame's whole text (its
/// keys and strings, checked at once), or one key or name.
#[inline(always)]
pub(crate) fn is_valid(bytes: &[u8]) -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    if bytes.len() >= SIMD_FROM {
        return long_is_valid(bytes);
    }
    str_from(bytes).is_ok()
}

/// [`is_valid`] of text of [`SIMD_FROM`] bytes or more: `simdutf8`'s basic
/// flavour, which says only whether (a caller that needs to know where
/// text is invalid calls [`str_from`]).
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[inline(never)]
fn long_is_valid(bytes: &[u8]) -> bool {
    simdutf8::basic::from_utf8(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_agrees_with_std_at_every_error_and_every_position() {
        // Lengths around the SIMD path's threshold and its 64-byte steps,
        // ASCII and not, with each kind of invalid sequence (and a valid one
        // of each length) at every position: the same verdict and, for
        // invalid text, the same error (where it starts, how long it is) as
        // `core`. Under Miri the CPU features are not detected, so this
        // checks the fallback there; natively it checks `simdutf8`.
        let sequences: [&[u8]; 12] = [
            &[0xc3, 0xa9],             // é: valid
            &[0xe2, 0x82, 0xac],       // €: valid
            &[0xf0, 0x9f, 0x93, 0xa1], // 📡: valid
            &[0x80],                   // a lone continuation byte
            &[0xff],                   // never in UTF-8
            &[0xc3],                   // a lead byte without its continuation
            &[0xc0, 0xaf],             // an overlong '/'
            &[0xe0, 0x80, 0xaf],       // an overlong '/' again
            &[0xed, 0xa0, 0x80],       // a surrogate
            &[0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
            &[0xe2, 0x82],             // a truncated three-byte sequence
            &[0xf0, 0x9f, 0x93],       // a truncated four-byte one
        ];
        let lengths: &[usize] = if cfg!(miri) {
            &[63, 64, 65]
        } else {
            &[63, 64, 65, 100, 127, 128, 129, 200]
        };
        let stride = if cfg!(miri) { 13 } else { 1 };
        for &n in lengths {
            for base in [b'a', 0xc3] {
                // ASCII text, or text of two-byte characters (é), cut to n.
                let mut text: Vec<u8> = if base == b'a' {
                    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
                } else {
                    [0xc3u8, 0xa9]
                        .iter()
                        .copied()
                        .cycle()
                        .take(n - n % 2)
                        .collect()
                };
                text.resize(n, b'z');
                assert!(is_valid(&text));
                assert_eq!(str_from(&text).ok(), core::str::from_utf8(&text).ok());
                for seq in sequences {
                    for at in (0..=n - seq.len()).step_by(stride) {
                        let mut b = text.clone();
                        // Whole characters only, so that only `seq` can be
                        // what is wrong.
                        if base != b'a' && at % 2 == 1 {
                            continue;
                        }
                        b[at..at + seq.len()].copy_from_slice(seq);
                        if base != b'a' && (at + seq.len()) % 2 == 1 && at + seq.len() < n {
                            b[at + seq.len()] = b'z';
                        }
                        let ours = str_from(&b);
                        let core = core::str::from_utf8(&b);
                        assert_eq!(is_valid(&b), core.is_ok(), "{n} bytes, {seq:x?} at {at}");
                        assert_eq!(ours.ok(), core.ok(), "{n} bytes, {seq:x?} at {at}");
                        if let (Err(a), Err(c)) = (ours, core) {
                            assert_eq!(
                                (a.valid_up_to(), a.error_len()),
                                (c.valid_up_to(), c.error_len())
                            );
                        }
                    }
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

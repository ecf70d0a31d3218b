//! UTF-8 validation with a fast path for ASCII, which keys and string values
//! nearly always are, and, on x86, SIMD for long text (a decoded frame's
//! keys and strings are checked at once, as one text: `arena::RawText`) and
//! an automaton for short text that is not ASCII (the view's keys).
//!
//! This module holds one of the crate's two `unsafe` blocks (the other is
//! in `arena`): the conversion of bytes that were checked to be ASCII,
//! right before, into `str`.
//! `std::str::from_utf8` runs its full decoder on every byte of a short
//! string (about 90 instructions for the 7 bytes of `"value_3"`); the word-wide
//! ASCII check costs a handful, and ASCII is valid UTF-8 by definition. On
//! long text `core`'s decoder takes its byte-by-byte path at every non-ASCII
//! character (the telemetry message's `température_boîtier`, `µwave_link`,
//! `°c`), and `simdutf8` checks 64 bytes a step either way. What each buys
//! is measured in docs/performance.md (the 4-parameter view round trip, the
//! owned decode and the telemetry view; "UTF-8 validation").

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
    {
        if bytes.len() >= SIMD_FROM {
            long_is_valid(bytes)
        } else {
            is_ascii(bytes) || dfa::is_valid(bytes)
        }
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        str_from(bytes).is_ok()
    }
}

/// [`is_valid`] of text of [`SIMD_FROM`] bytes or more: `simdutf8`'s basic
/// flavour, which says only whether (a caller that needs to know where
/// text is invalid calls [`str_from`]).
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
#[inline(never)]
fn long_is_valid(bytes: &[u8]) -> bool {
    simdutf8::basic::from_utf8(bytes).is_ok()
}

/// Short text that is not all ASCII, checked by a table-driven automaton
/// (the view checks each key where it lies, and the telemetry message's
/// non-ASCII keys are 18 to 44 bytes long). `core`'s decoder takes a
/// branchy byte-by-byte path at each non-ASCII character, about 260
/// instructions for a key such as `température_boîtier␟capteur_intérieur_°c`
/// (44 bytes), and `simdutf8` hands text under 64 bytes to `core`. Here
/// each byte is a table load that does not depend on the bytes before it
/// and a shift that does, and the verdict is read once, at the end. On x86
/// only, where it was measured (docs/performance.md, "UTF-8 validation");
/// its 2 KiB table would not fit the microcontroller build's size goal.
#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
mod dfa {
    /// The automaton's states, each the bit offset of its 6-bit field in a
    /// transition row (the field holds the next state's offset).
    const ACCEPT: u8 = 0;
    const REJECT: u8 = 6;
    /// Expecting one more continuation byte (80..BF).
    const CONT1: u8 = 12;
    /// Expecting two more.
    const CONT2: u8 = 18;
    /// After E0: A0..BF (no overlong three-byte form), then one more.
    const AFTER_E0: u8 = 24;
    /// After ED: 80..9F (no surrogate), then one more.
    const AFTER_ED: u8 = 30;
    /// After F0: 90..BF (no overlong four-byte form), then two more.
    const AFTER_F0: u8 = 36;
    /// After F1..F3: three more.
    const CONT3: u8 = 42;
    /// After F4: 80..8F (nothing past U+10FFFF), then two more.
    const AFTER_F4: u8 = 48;

    /// Byte classes: bytes that every state treats alike.
    const ASCII: u8 = 0;
    const CONT_80_8F: u8 = 1;
    const CONT_90_9F: u8 = 2;
    const CONT_A0_BF: u8 = 3;
    const LEAD2: u8 = 4;
    const LEAD_E0: u8 = 5;
    const LEAD3: u8 = 6;
    const LEAD_ED: u8 = 7;
    const LEAD_F0: u8 = 8;
    const LEAD4: u8 = 9;
    const LEAD_F4: u8 = 10;
    /// C0, C1 (only ever overlong) and F5..FF (past U+10FFFF).
    const NEVER: u8 = 11;

    const fn class_of(b: u8) -> u8 {
        match b {
            0x00..=0x7f => ASCII,
            0x80..=0x8f => CONT_80_8F,
            0x90..=0x9f => CONT_90_9F,
            0xa0..=0xbf => CONT_A0_BF,
            0xc2..=0xdf => LEAD2,
            0xe0 => LEAD_E0,
            0xed => LEAD_ED,
            0xe1..=0xef => LEAD3,
            0xf0 => LEAD_F0,
            0xf1..=0xf3 => LEAD4,
            0xf4 => LEAD_F4,
            _ => NEVER,
        }
    }

    /// The next state from `state` on a byte of `class`.
    const fn next(state: u8, class: u8) -> u8 {
        match (state, class) {
            (ACCEPT, ASCII) => ACCEPT,
            (ACCEPT, LEAD2) => CONT1,
            (ACCEPT, LEAD_E0) => AFTER_E0,
            (ACCEPT, LEAD3) => CONT2,
            (ACCEPT, LEAD_ED) => AFTER_ED,
            (ACCEPT, LEAD_F0) => AFTER_F0,
            (ACCEPT, LEAD4) => CONT3,
            (ACCEPT, LEAD_F4) => AFTER_F4,
            (CONT1, CONT_80_8F | CONT_90_9F | CONT_A0_BF) => ACCEPT,
            (CONT2, CONT_80_8F | CONT_90_9F | CONT_A0_BF) => CONT1,
            (AFTER_E0, CONT_A0_BF) => CONT1,
            (AFTER_ED, CONT_80_8F | CONT_90_9F) => CONT1,
            (AFTER_F0, CONT_90_9F | CONT_A0_BF) => CONT2,
            (CONT3, CONT_80_8F | CONT_90_9F | CONT_A0_BF) => CONT2,
            (AFTER_F4, CONT_80_8F) => CONT2,
            _ => REJECT,
        }
    }

    /// Per byte value, every state's next state at the state's offset: one
    /// load per byte, indexed by the byte (2 KiB; a table of classes and one
    /// of rows would be 352 bytes, but two loads and a bounds check a byte).
    static ROW: [u64; 256] = {
        let mut t = [0; 256];
        let mut b = 0;
        while b < 256 {
            let class = class_of(b as u8);
            let mut state = 0;
            while state <= AFTER_F4 {
                t[b] |= (next(state, class) as u64) << state;
                state += 6;
            }
            b += 1;
        }
        t
    };

    /// Whether `bytes` are valid UTF-8. Out of line: the callers' ASCII
    /// paths stay as small as they were.
    #[inline(never)]
    pub(super) fn is_valid(bytes: &[u8]) -> bool {
        let mut state = u64::from(ACCEPT);
        for &b in bytes {
            // Only the low 6 bits of `state` are the state: `wrapping_shr`
            // uses only those as the count (as x86's shift does), so the
            // other states' fields above them need no mask in the loop.
            state = ROW[usize::from(b)].wrapping_shr(state as u32);
        }
        state & 63 == u64::from(ACCEPT)
    }
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

    /// The automaton against `core` on every sequence of up to three bytes,
    /// and on four-byte ones of the bytes at the edges of each class, alone
    /// and within text, so that the verdict is the automaton's final state
    /// and not its first.
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    #[test]
    fn the_automaton_agrees_with_core_on_every_short_sequence() {
        let check = |b: &[u8]| {
            let core = core::str::from_utf8(b).is_ok();
            assert_eq!(dfa::is_valid(b), core, "{b:x?}");
            assert_eq!(is_valid(b), core, "{b:x?}");
            assert_eq!(str_from(b).ok(), core::str::from_utf8(b).ok(), "{b:x?}");
        };
        // Natively every sequence of up to three bytes; under Miri (the
        // i686 run of .ci/miri.sh: the automaton on a 32-bit target) a few
        // thousand, of bytes at the edges of the classes.
        let all: Vec<u8> = (0..=255).collect();
        let edges: Vec<u8> = vec![
            0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0,
            0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff,
        ];
        let few: Vec<u8> = vec![
            0x41, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc2, 0xe0, 0xed, 0xf0, 0xf4,
        ];
        let later = if cfg!(miri) { &few } else { &all };
        for &a in &all {
            check(&[a]);
            for &b in later {
                check(&[a, b]);
                if cfg!(miri) && !few.contains(&a) {
                    continue;
                }
                for &c in later {
                    check(&[a, b, c]);
                }
            }
        }
        let (leads, rest) = if cfg!(miri) {
            (&few[8..], &few[..8])
        } else {
            (&edges[..], &edges[..])
        };
        for &a in leads {
            for &b in rest {
                for &c in rest {
                    for &d in rest {
                        check(&[a, b, c, d]);
                        check(&[b'k', a, b, c, d, b'v']);
                        check(&[a, b, c, d, 0xc3, 0xa9]);
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

//! A structural MessagePack skip: where a value ends, from markers and length
//! prefixes alone.
//!
//! `mframe header` needs each frame's length to reach the next frame, and
//! [`Header::peek`](messageframe::Header::peek) deliberately does not compute
//! it. Validating the frame would decode every key and value, which is what
//! `header` promises not to do; this skip only reads markers and lengths (no
//! UTF-8 checks, no tags, no types), so a frame with a bad parameter still
//! shows its header. Bin and str payloads are jumped over, so the cost grows
//! with the number of elements, not with the attachment sizes.

use std::fmt;

/// The input cannot be skipped as one MessagePack value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipError {
    /// The value runs past the end of the input.
    Truncated { at: usize },
    /// `0xc1`, the one marker MessagePack never uses.
    BadMarker { at: usize, marker: u8 },
}

impl SkipError {
    /// Turns an offset in the slice into an offset in the stream.
    pub fn with_base_offset(self, base: usize) -> Self {
        match self {
            SkipError::Truncated { at } => SkipError::Truncated {
                at: at.saturating_add(base),
            },
            SkipError::BadMarker { at, marker } => SkipError::BadMarker {
                at: at.saturating_add(base),
                marker,
            },
        }
    }
}

impl fmt::Display for SkipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipError::Truncated { at } => write!(f, "input is truncated at byte {at}"),
            SkipError::BadMarker { at, marker } => {
                write!(f, "invalid MessagePack marker 0x{marker:02x} at byte {at}")
            }
        }
    }
}

/// The number of bytes of the MessagePack value at the start of `bytes`.
///
/// Iterative (a counter of values still to skip, no recursion), so deep
/// nesting cannot overflow the stack; and since every pending value needs at
/// least one byte, a count larger than the remaining input is reported as
/// truncation at once instead of being looped over.
pub fn value_len(bytes: &[u8]) -> Result<usize, SkipError> {
    let mut pos = 0usize;
    let mut pending: u64 = 1;
    while pending > 0 {
        pending -= 1;
        let at = pos;
        let marker = *bytes.get(pos).ok_or(SkipError::Truncated { at: pos })?;
        pos += 1;
        let (children, payload): (u64, u64) = match marker {
            0x00..=0x7f | 0xc0 | 0xc2 | 0xc3 | 0xe0..=0xff => (0, 0),
            0x80..=0x8f => (2 * u64::from(marker & 0x0f), 0),
            0x90..=0x9f => (u64::from(marker & 0x0f), 0),
            0xa0..=0xbf => (0, u64::from(marker & 0x1f)),
            0xc1 => return Err(SkipError::BadMarker { at, marker }),
            0xc4 | 0xd9 => (0, read_be(bytes, &mut pos, 1)?),
            0xc5 | 0xda => (0, read_be(bytes, &mut pos, 2)?),
            0xc6 | 0xdb => (0, read_be(bytes, &mut pos, 4)?),
            // ext: a type byte after the length.
            0xc7 => (0, read_be(bytes, &mut pos, 1)? + 1),
            0xc8 => (0, read_be(bytes, &mut pos, 2)? + 1),
            0xc9 => (0, read_be(bytes, &mut pos, 4)? + 1),
            0xcc | 0xd0 => (0, 1),
            0xcd | 0xd1 => (0, 2),
            0xca | 0xce | 0xd2 => (0, 4),
            0xcb | 0xcf | 0xd3 => (0, 8),
            0xd4 => (0, 2),
            0xd5 => (0, 3),
            0xd6 => (0, 5),
            0xd7 => (0, 9),
            0xd8 => (0, 17),
            0xdc => (read_be(bytes, &mut pos, 2)?, 0),
            0xdd => (read_be(bytes, &mut pos, 4)?, 0),
            0xde => (2 * read_be(bytes, &mut pos, 2)?, 0),
            0xdf => (2 * read_be(bytes, &mut pos, 4)?, 0),
        };
        let remaining = (bytes.len() - pos) as u64;
        if payload > remaining {
            return Err(SkipError::Truncated { at: bytes.len() });
        }
        // payload <= remaining <= usize::MAX, so this cannot truncate.
        pos += payload as usize;
        pending += children;
        if pending > (bytes.len() - pos) as u64 {
            return Err(SkipError::Truncated { at: bytes.len() });
        }
    }
    Ok(pos)
}

/// Reads a big-endian length of `width` bytes at `*pos` and moves past it.
fn read_be(bytes: &[u8], pos: &mut usize, width: usize) -> Result<u64, SkipError> {
    let field = bytes
        .get(*pos..*pos + width)
        .ok_or(SkipError::Truncated { at: bytes.len() })?;
    *pos += width;
    Ok(field.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_containers_and_payloads() {
        assert_eq!(value_len(&[0x01, 0xff]), Ok(1));
        assert_eq!(value_len(&[0x92, 0x01, 0xa1, b'x', 0x00]), Ok(4));
        assert_eq!(value_len(&[0x81, 0xa1, b'k', 0xc3]), Ok(4));
        assert_eq!(value_len(&[0xc4, 0x02, 1, 2, 9]), Ok(4));
        assert_eq!(value_len(&[0xcb, 0, 0, 0, 0, 0, 0, 0, 0]), Ok(9));
        assert_eq!(value_len(&[0xd4, 1, 2]), Ok(3));
        assert_eq!(value_len(&[0xc7, 1, 5, 0xaa]), Ok(4));
        assert_eq!(value_len(&[0xdc, 0, 2, 0xc0, 0xc0]), Ok(5));
        assert_eq!(value_len(&[0xde, 0, 1, 0xc0, 0xc0]), Ok(5));
    }

    #[test]
    fn errors_not_panics() {
        assert_eq!(value_len(&[]), Err(SkipError::Truncated { at: 0 }));
        assert_eq!(
            value_len(&[0x92, 0x01]),
            Err(SkipError::Truncated { at: 2 })
        );
        assert_eq!(
            value_len(&[0xc5, 0x01]),
            Err(SkipError::Truncated { at: 2 })
        );
        assert_eq!(
            value_len(&[0xdd, 0xff, 0xff, 0xff, 0xff]),
            Err(SkipError::Truncated { at: 5 })
        );
        assert_eq!(
            value_len(&[0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0]),
            Err(SkipError::Truncated { at: 6 })
        );
        assert_eq!(
            value_len(&[0x91, 0xc1]),
            Err(SkipError::BadMarker {
                at: 1,
                marker: 0xc1
            })
        );
        // Deep nesting is a loop, not recursion.
        let deep = vec![0x91u8; 1_000_000];
        assert_eq!(
            value_len(&deep),
            Err(SkipError::Truncated { at: 1_000_000 })
        );
        // Every prefix of a valid value is truncated, never a panic.
        let whole = [
            0x93, 0xa2, b'h', b'i', 0xc5, 0, 2, 7, 7, 0xcf, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        assert_eq!(value_len(&whole), Ok(whole.len()));
        for cut in 0..whole.len() {
            assert!(matches!(
                value_len(&whole[..cut]),
                Err(SkipError::Truncated { .. })
            ));
        }
    }
}

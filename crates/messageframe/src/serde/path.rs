//! Field paths: how nested names join into device names.

use super::error::{Error, ErrorKind};
use crate::key::{bytes_eq, find_separator, le_value16, SEPARATOR_BYTE};

/// Appends segment `seg` to the device path `path` (`.` between them).
#[inline]
pub(crate) fn join(path: &mut String, seg: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(seg);
}

/// A segment that becomes part of a device name: not empty (it would make
/// `a..b` or merge with the top level's device `""`), no `.` (the reader
/// could not tell `a.b` nested from `a.b` as one name) and no U+001F (the
/// key separator).
#[inline]
pub(crate) fn check_device_segment(seg: &str) -> Result<(), Error> {
    if seg.is_empty() || seg.bytes().any(|b| b == b'.' || b == SEPARATOR_BYTE) {
        return Err(Error::new(ErrorKind::InvalidKey(seg.to_owned())));
    }
    Ok(())
}

/// A parameter name: anything but U+001F (a decoder would split the key at
/// it when the device is `""`).
#[inline]
pub(crate) fn check_param(param: &str) -> Result<(), Error> {
    if param.as_bytes().contains(&SEPARATOR_BYTE) {
        return Err(Error::new(ErrorKind::InvalidKey(param.to_owned())));
    }
    Ok(())
}

/// Whether `device` is `child` or a device below it (`child.…`), where
/// `child` is `seg` joined to `parent`; compared in place, without joining.
#[inline]
pub(crate) fn under(device: &str, parent: &str, seg: &str) -> bool {
    let d = device.as_bytes();
    let rest = if parent.is_empty() {
        d
    } else {
        match strip(d, parent.as_bytes()) {
            Some([b'.', rest @ ..]) => rest,
            _ => return false,
        }
    };
    match strip(rest, seg.as_bytes()) {
        Some(tail) => tail.first().map_or(true, |&b| b == b'.'),
        None => false,
    }
}

/// `s` without the prefix `p`, compared without a call to `memcmp` (the
/// names compared here are short).
#[inline(always)]
fn strip<'s>(s: &'s [u8], p: &[u8]) -> Option<&'s [u8]> {
    let head = s.get(..p.len())?;
    if bytes_eq(head, p) {
        Some(&s[p.len()..])
    } else {
        None
    }
}

/// String equality without a call to `memcmp`.
#[inline(always)]
pub(crate) fn same(a: &str, b: &str) -> bool {
    bytes_eq(a.as_bytes(), b.as_bytes())
}

/// Whether `device` is `path` or below it.
#[inline]
pub(crate) fn within(device: &str, path: &str) -> bool {
    path.is_empty()
        || match strip(device.as_bytes(), path.as_bytes()) {
            Some(tail) => tail.first().map_or(true, |&b| b == b'.'),
            None => false,
        }
}

/// Makes `prefix` (a key prefix: a path, then U+001F) the prefix of the
/// container `seg` below the path `prefix[..base]`: that path, `.` unless
/// it is the top level, `seg`, U+001F. Up to 14 bytes of `seg` (every name
/// and index of a typical record) go in as one 16-byte store of the pieces
/// joined in a register, then cut back: entering a container is on the
/// path of every element of a sequence, and a copy of a length known only
/// at run time is a call to `memcpy` that costs more than these bytes.
///
/// Returns the new prefix's [`prefix_word`], given `word`, the old one's
/// (`prefix[..base + 1]`'s): joined in registers too. Reading it back from
/// the buffer would load 8 bytes from the middle of the 16 just stored,
/// which the store buffer cannot forward (a stall of about 15 cycles on
/// every container entered).
#[inline(always)]
pub(crate) fn push_segment(prefix: &mut Vec<u8>, base: usize, seg: &[u8], word: u128) -> u128 {
    prefix.truncate(base);
    let dot = usize::from(base > 0);
    let len = base + dot + seg.len() + 1;
    if seg.len() <= 14 && prefix.capacity() - base >= 16 {
        // At most 15 bytes before the separator: every shift is below 128.
        let joined = (u128::from(b'.') * dot as u128)
            | le_value16(seg) << (8 * dot)
            | u128::from(SEPARATOR_BYTE) << (8 * (dot + seg.len()));
        prefix.extend_from_slice(&joined.to_le_bytes());
        prefix.truncate(len);
        if len < 16 {
            // `base < 15`: the old word's path bytes (below its separator),
            // then the joined pieces.
            let path = word & ((1u128 << (8 * base)) - 1);
            return path | joined << (8 * base);
        }
        return 0;
    }
    if dot == 1 {
        prefix.push(b'.');
    }
    prefix.extend_from_slice(seg);
    prefix.push(SEPARATOR_BYTE);
    prefix_word(prefix)
}

/// A key prefix's bytes as the little-endian integer they spell, when it
/// is shorter than 16 bytes (0 otherwise, never read then): a key at the
/// cursor is the field `seg`'s own when it spells this word with `seg`'s
/// shifted past it.
#[inline(always)]
pub(crate) fn prefix_word(prefix: &[u8]) -> u128 {
    if prefix.len() < 16 {
        le_value16(prefix)
    } else {
        0
    }
}

/// The text of a path held as bytes (a key prefix's start): joined from
/// `&str` names, `.` and U+001F, so always valid UTF-8.
#[inline]
pub(crate) fn path_str(path: &[u8]) -> &str {
    let s = crate::utf8::str_from(path);
    debug_assert!(s.is_ok());
    s.unwrap_or_default()
}

/// What a parameter's raw key (its bytes on the wire, not split) is to the
/// field `seg` of a container, decided without reading the key as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// The key is `(path, seg)`: the field's own parameter.
    Scalar,
    /// The key's device is `path.seg` or below it: the field is a
    /// container, and this is its first parameter.
    Container,
    /// Neither.
    Other,
}

/// How the raw `key` relates to field `seg` of the container whose key
/// prefix is `prefix` (its path, then U+001F), where the path holds no
/// U+001F; `None` for an empty `seg`, which [`under`]'s rules for empty
/// names decide. The same answers as splitting the key at its first
/// separator into `(device, param)` and asking whether `(device, param) ==
/// (path, seg)` or [`under`]`(device, path, seg)`, without a UTF-8 check or
/// a search for the separator when the key matches: a key equal to `prefix +
/// seg` is valid UTF-8 (it equals two `&str`) and splits right after the
/// path (which has no separator).
#[inline(always)]
pub(crate) fn classify(key: &[u8], prefix: &[u8], seg: &[u8]) -> Option<Class> {
    let path_len = prefix.len() - 1;
    let n = prefix.len();
    if key.len() == n + seg.len() && bytes_eq(&key[..n], prefix) && bytes_eq(&key[n..], seg) {
        return Some(Class::Scalar);
    }
    classify_rest(key, &prefix[..path_len], seg)
}

/// [`classify`] past the common case.
#[inline]
fn classify_rest(key: &[u8], path: &[u8], seg: &[u8]) -> Option<Class> {
    if seg.is_empty() {
        return None;
    }
    if path.is_empty() && bytes_eq(key, seg) && find_separator(seg).is_none() {
        // `param` alone: device `""`, as the C++ library reads it.
        return Some(Class::Scalar);
    }
    let rest = if path.is_empty() {
        key
    } else {
        match key.get(..path.len() + 1) {
            Some(head) if bytes_eq(&head[..path.len()], path) && head[path.len()] == b'.' => {
                &key[path.len() + 1..]
            }
            _ => return Some(Class::Other),
        }
    };
    Some(if device_is_or_below(rest, seg) {
        Class::Container
    } else {
        Class::Other
    })
}

/// Whether the device of the raw key that continues with `rest` (after a
/// clean prefix of it) is `seg` or below it (`seg.…`), `seg` not empty.
#[inline(always)]
fn device_is_or_below(rest: &[u8], seg: &[u8]) -> bool {
    let Some(head) = rest.get(..seg.len()) else {
        return false;
    };
    if !bytes_eq(head, seg) {
        return false;
    }
    match rest.get(seg.len()) {
        // A separator in `seg` would end the device inside it.
        Some(&SEPARATOR_BYTE) => find_separator(seg).is_none(),
        // A device below `seg` only if a separator follows (else the
        // device is `""`).
        Some(&b'.') => {
            find_separator(seg).is_none() && find_separator(&rest[seg.len() + 1..]).is_some()
        }
        _ => false,
    }
}

/// Whether the device of the raw `key` is `path` or below it, for a `path`
/// that is not empty and holds no U+001F: [`within`] without splitting the
/// key.
#[inline(always)]
pub(crate) fn within_raw(key: &[u8], path: &[u8]) -> bool {
    debug_assert!(!path.is_empty() && find_separator(path).is_none());
    device_is_or_below(key, path)
}

/// The indices 0 to 99 in decimal, two digits each ("00", "01", ... "99"):
/// a sequence's first hundred elements take their name from here, without
/// formatting or a UTF-8 check.
const TWO_DIGITS: &str = "\
    00010203040506070809101112131415161718192021222324252627282930313233343536373839\
    40414243444546474849505152535455565758596061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// A sequence index in decimal, on the stack.
pub(crate) enum IndexBuf {
    /// Below 100: its text in [`TWO_DIGITS`].
    Small(&'static str),
    /// Its digits, from `start` to the end.
    Big { buf: [u8; 20], start: usize },
}

impl IndexBuf {
    /// Inlined for the first hundred indices (a slice of [`TWO_DIGITS`]);
    /// formatted out of line beyond.
    #[inline(always)]
    pub(crate) fn new(n: usize) -> Self {
        if n < 100 {
            // One digit is the second of its two-digit form.
            let at = 2 * n + usize::from(n < 10);
            return IndexBuf::Small(&TWO_DIGITS[at..2 * n + 2]);
        }
        Self::big(n)
    }

    #[inline(never)]
    fn big(mut n: usize) -> Self {
        let mut buf = [0u8; 20];
        let mut start = buf.len();
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        IndexBuf::Big { buf, start }
    }

    #[inline(always)]
    pub(crate) fn as_str(&self) -> &str {
        match self {
            IndexBuf::Small(s) => s,
            // Only ASCII digits were written: the ASCII fast path.
            IndexBuf::Big { buf, start } => crate::utf8::str_from(&buf[*start..]).unwrap_or(""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_buffers_spell_the_number() {
        for n in (0..1000).chain([usize::MAX]) {
            assert_eq!(IndexBuf::new(n).as_str(), n.to_string());
        }
    }

    /// `classify` and `within_raw` agree with splitting the key and asking
    /// `under` and `within`, on every combination of these pieces.
    #[test]
    fn raw_keys_classify_as_their_split_parts_do() {
        let pieces = [
            "",
            "a",
            "b",
            "ab",
            "a.b",
            "a.",
            ".a",
            "0",
            "10",
            "1",
            "items",
            "items.0",
            "items.0.x",
            "\x1f",
            "a\x1fb",
            "\x1fa",
            "a\x1f",
            "..",
            "a..b",
            "\u{e9}",
        ];
        // Every third piece under Miri (about 6,000 classifications instead
        // of 400,000, which took Miri many minutes); natively all of them.
        let pieces: Vec<&str> = pieces
            .iter()
            .copied()
            .step_by(if cfg!(miri) { 3 } else { 1 })
            .collect();
        let pieces = pieces.as_slice();
        let mut keys: Vec<String> = Vec::new();
        for &a in pieces {
            for &b in pieces {
                keys.push(format!("{a}{b}"));
                keys.push(format!("{a}\x1f{b}"));
                keys.push(format!("{a}.{b}"));
            }
        }
        for key in &keys {
            let (d, p) = match key.find('\x1f') {
                Some(i) => (&key[..i], &key[i + 1..]),
                None => ("", key.as_str()),
            };
            for path in pieces.iter().filter(|p| !p.contains('\x1f')) {
                let prefix = format!("{path}\x1f");
                for &seg in pieces {
                    let want = if (d, p) == (*path, seg) {
                        Class::Scalar
                    } else if under(d, path, seg) {
                        Class::Container
                    } else {
                        Class::Other
                    };
                    match classify(key.as_bytes(), prefix.as_bytes(), seg.as_bytes()) {
                        Some(got) => assert_eq!(got, want, "{key:?} in {path:?} for {seg:?}"),
                        None => assert!(seg.is_empty()),
                    }
                }
                if !path.is_empty() {
                    assert_eq!(
                        within_raw(key.as_bytes(), path.as_bytes()),
                        within(d, path),
                        "{key:?} within {path:?}"
                    );
                }
            }
        }
    }

    /// `push_segment` gives what joining the path and the segment as text
    /// gives, whether the segment goes in as one store or piece by piece
    /// (long segments, a buffer without room).
    #[test]
    fn push_segment_joins_as_join_does() {
        let segs = [
            "",
            "0",
            "7",
            "12",
            "sku",
            "items",
            "price_eur",
            "exactly_14_byt",
            "fifteen_bytes__",
            "a.b",
            "\u{e9}t\u{e9}",
            "a_much_longer_segment_name_than_sixteen",
        ];
        for path in ["", "a", "order", "items.12", "a.b.c.d.e.f.g.h.i.j"] {
            for seg in segs {
                for spare in [0, 3, 64] {
                    let mut prefix = Vec::with_capacity(path.len() + 1 + spare);
                    prefix.extend_from_slice(path.as_bytes());
                    prefix.push(SEPARATOR_BYTE);
                    // Something past the path, as a sibling's prefix leaves.
                    prefix.extend_from_slice(b"junk");
                    prefix.shrink_to(path.len() + 1 + spare);
                    let word = prefix_word(&prefix[..path.len() + 1]);
                    let got = push_segment(&mut prefix, path.len(), seg.as_bytes(), word);
                    assert_eq!(got, prefix_word(&prefix), "{path:?} + {seg:?}: the word");
                    let mut want = path.to_owned();
                    join(&mut want, seg);
                    want.push('\x1f');
                    assert_eq!(prefix, want.as_bytes(), "{path:?} + {seg:?}, {spare} spare");
                    assert_eq!(
                        path_str(&prefix[..prefix.len() - 1]),
                        &want[..want.len() - 1]
                    );
                }
            }
        }
    }

    #[test]
    fn under_matches_whole_segments_only() {
        assert!(under("sdr_1", "", "sdr_1"));
        assert!(under("items.0", "", "items"));
        assert!(under("items.0.x", "items", "0"));
        assert!(!under("items0", "", "items"));
        assert!(!under("items.10", "items", "1"));
        assert!(!under("", "", "a"));
        assert!(!under("a.b", "a.b", "c"));
        assert!(within("a.b", "a"));
        assert!(!within("ab", "a"));
        assert!(within("x", ""));
    }
}

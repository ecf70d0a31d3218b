//! Field paths: how nested names join into device names.

use super::error::{Error, ErrorKind};
use crate::key::{bytes_eq, SEPARATOR_BYTE};

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

/// The indices 0 to 99 in decimal, two digits each ("00", "01", ... "99"):
/// a sequence's first hundred elements take their name from here, without
/// formatting or a UTF-8 check.
const TWO_DIGITS: &str = "\
    00010203040506070809101112131415161718192021222324252627282930313233343536373839\
    40414243444546474849505152535455565758596061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// A sequence index in decimal, on the stack.
pub(crate) struct IndexBuf {
    buf: [u8; 20],
    start: usize,
    /// The index's text when it is below 100.
    small: &'static str,
}

impl IndexBuf {
    #[inline]
    pub(crate) fn new(n: usize) -> Self {
        let mut buf = [0u8; 20];
        if n < 100 {
            // One digit is the second of its two-digit form.
            let at = 2 * n + usize::from(n < 10);
            return IndexBuf {
                buf,
                start: 0,
                small: &TWO_DIGITS[at..2 * n + 2],
            };
        }
        let mut start = buf.len();
        let mut n = n;
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        IndexBuf {
            buf,
            start,
            small: "",
        }
    }

    #[inline]
    pub(crate) fn as_str(&self) -> &str {
        if !self.small.is_empty() {
            return self.small;
        }
        // Only ASCII digits were written: the ASCII fast path.
        crate::utf8::str_from(&self.buf[self.start..]).unwrap_or("")
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

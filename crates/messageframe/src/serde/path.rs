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

/// A key prefix (a path, then U+001F) being built as containers are
/// entered and left. While it is shorter than 16 bytes (every container of
/// a typical record) it lives in a register only, as the little-endian
/// integer its bytes spell ([`prefix_word`]): entering and leaving a
/// container are a few shifts, with no store to a buffer and no load of
/// what was just stored. Its bytes are written out on demand
/// ([`bytes`](Prefix::bytes): an error's path, an attachment's name, a
/// key too long to join in a register), and kept in the buffer for a
/// prefix of 16 bytes or more.
pub(crate) struct Prefix {
    /// The prefix's bytes as an integer while it is shorter than 16
    /// bytes; 0 (which no prefix spells: it holds a U+001F) otherwise.
    word: u128,
    len: usize,
    /// The prefix's bytes, `len` of them: always for a long prefix; for a
    /// short one only while `synced`.
    buf: Vec<u8>,
    synced: bool,
}

/// The masks of a word's low `n` bytes, and U+001F and `.` as byte `n`
/// of a word, for `n` from 0 to 15: looked up instead of computed with a
/// shift of a 128-bit integer by a variable amount (about seven
/// instructions each), on the path of every container entered and left.
const LOW_MASK: [u128; 16] = {
    let mut t = [0u128; 16];
    let mut n = 0;
    while n < 16 {
        t[n] = (1u128 << (8 * n)) - 1;
        n += 1;
    }
    t
};
const SEP_AT: [u128; 16] = byte_at(SEPARATOR_BYTE);
const DOT_AT: [u128; 16] = byte_at(b'.');

const fn byte_at(b: u8) -> [u128; 16] {
    let mut t = [0u128; 16];
    let mut n = 0;
    while n < 16 {
        t[n] = (b as u128) << (8 * n);
        n += 1;
    }
    t
}

/// The low `n` bytes of a word (`n < 16`).
#[inline(always)]
fn low_bytes(word: u128, n: usize) -> u128 {
    word & LOW_MASK[n]
}

impl Prefix {
    /// The top level's prefix, `"\x1F"`, in the reused buffer `buf`.
    pub(crate) fn new(mut buf: Vec<u8>) -> Self {
        buf.clear();
        Prefix {
            word: u128::from(SEPARATOR_BYTE),
            len: 1,
            buf,
            synced: false,
        }
    }

    /// The prefix of `path`, as built by entering its names.
    #[cfg(test)]
    pub(crate) fn of_path(path: &[u8]) -> Self {
        let mut buf = path.to_vec();
        buf.push(SEPARATOR_BYTE);
        Prefix {
            word: prefix_word(&buf),
            len: buf.len(),
            buf,
            synced: true,
        }
    }

    /// The buffer, for reuse.
    pub(crate) fn into_buf(self) -> Vec<u8> {
        self.buf
    }

    /// The prefix's length (its path's and the separator).
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The length of the path (the prefix without its separator).
    #[inline(always)]
    pub(crate) fn base(&self) -> usize {
        self.len - 1
    }

    /// The prefix as an integer while shorter than 16 bytes, else 0.
    #[inline(always)]
    pub(crate) fn word(&self) -> u128 {
        self.word
    }

    /// The path (the prefix without its separator) as text.
    #[inline]
    pub(crate) fn path(&mut self) -> &str {
        let base = self.base();
        path_str(&self.bytes()[..base])
    }

    /// The prefix's bytes.
    #[inline]
    pub(crate) fn bytes(&mut self) -> &[u8] {
        if self.len < 16 && !self.synced {
            // All 16 bytes, then cut: a copy of a fixed size, not a call to
            // `memcpy` for the prefix's length.
            self.buf.clear();
            self.buf.extend_from_slice(&self.word.to_le_bytes());
            self.buf.truncate(self.len);
            self.synced = true;
        }
        &self.buf[..self.len]
    }

    /// `f` of the path of `seg` below the current container (an
    /// attachment's name), joined in the prefix's own buffer, which then
    /// holds the prefix again.
    pub(crate) fn with_child_path<R>(&mut self, seg: &str, f: impl FnOnce(&str) -> R) -> R {
        let base = self.base();
        self.bytes();
        self.buf.truncate(base);
        if base > 0 {
            self.buf.push(b'.');
        }
        self.buf.extend_from_slice(seg.as_bytes());
        let result = f(path_str(&self.buf));
        self.buf.truncate(base);
        self.buf.push(SEPARATOR_BYTE);
        self.synced = true;
        result
    }

    /// Makes the container `seg` below the current one current: the path,
    /// `.` unless it is the top level, `seg`, U+001F. Returns what
    /// [`leave`](Prefix::leave) goes back to.
    #[inline(always)]
    pub(crate) fn enter(&mut self, seg: &[u8]) -> usize {
        let base = self.len - 1;
        let dot = usize::from(base > 0);
        let len = base + dot + seg.len() + 1;
        if len < 16 {
            // So `base < 15` (the word is exact) and `seg` has at most 14
            // bytes: the shift is below 128. At the top level (`base` 0)
            // there is no `.`: byte 0 is the segment's.
            let dot_word = if dot == 1 { DOT_AT[base] } else { 0 };
            self.word = low_bytes(self.word, base)
                | dot_word
                | le_value16(seg) << (8 * (base + dot))
                | SEP_AT[len - 1];
            self.len = len;
            self.synced = false;
        } else {
            self.enter_long(base, dot, seg);
        }
        base
    }

    #[inline(never)]
    fn enter_long(&mut self, base: usize, dot: usize, seg: &[u8]) {
        self.bytes();
        self.buf.truncate(base);
        if dot == 1 {
            self.buf.push(b'.');
        }
        self.buf.extend_from_slice(seg);
        self.buf.push(SEPARATOR_BYTE);
        self.len = self.buf.len();
        self.word = 0;
    }

    /// Back to the container whose path is the current one's first `base`
    /// bytes.
    #[inline(always)]
    pub(crate) fn leave(&mut self, base: usize) {
        if self.len < 16 {
            self.word = low_bytes(self.word, base) | SEP_AT[base];
            self.len = base + 1;
            self.synced = false;
        } else {
            self.leave_long(base);
        }
    }

    #[inline(never)]
    fn leave_long(&mut self, base: usize) {
        self.buf.truncate(base);
        self.buf.push(SEPARATOR_BYTE);
        self.len = base + 1;
        self.word = prefix_word(&self.buf);
        self.synced = true;
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
pub(crate) fn classify<P: PathLike + ?Sized>(key: &[u8], path: &P, seg: &[u8]) -> Option<Class> {
    let base = path.path_len();
    if key.len() == base + 1 + seg.len()
        && path.is_path(&key[..base])
        && key[base] == SEPARATOR_BYTE
        && bytes_eq(&key[base + 1..], seg)
    {
        return Some(Class::Scalar);
    }
    classify_rest(key, path, seg)
}

/// [`classify`] past the common case.
#[inline]
fn classify_rest<P: PathLike + ?Sized>(key: &[u8], path: &P, seg: &[u8]) -> Option<Class> {
    if seg.is_empty() {
        return None;
    }
    let base = path.path_len();
    if base == 0 && bytes_eq(key, seg) && find_separator(seg).is_none() {
        // `param` alone: device `""`, as the C++ library reads it.
        return Some(Class::Scalar);
    }
    let rest = if base == 0 {
        key
    } else {
        match key.get(..base + 1) {
            Some(head) if head[base] == b'.' && path.is_path(&head[..base]) => &key[base + 1..],
            _ => return Some(Class::Other),
        }
    };
    Some(if device_is_or_below(rest, seg) {
        Class::Container
    } else {
        Class::Other
    })
}

/// A path that raw keys are compared with: the bytes of a path, or a
/// [`Prefix`] (whose path is compared as a word while it is short, never
/// written out for it).
pub(crate) trait PathLike {
    /// The path's length.
    fn path_len(&self) -> usize;
    /// Whether `head` (`path_len()` bytes) is the path.
    fn is_path(&self, head: &[u8]) -> bool;
}

impl PathLike for [u8] {
    #[inline(always)]
    fn path_len(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn is_path(&self, head: &[u8]) -> bool {
        bytes_eq(head, self)
    }
}

impl PathLike for Prefix {
    #[inline(always)]
    fn path_len(&self) -> usize {
        self.base()
    }
    #[inline(always)]
    fn is_path(&self, head: &[u8]) -> bool {
        if self.len < 16 {
            le_value16(head) == low_bytes(self.word, self.len - 1)
        } else {
            bytes_eq(head, &self.buf[..self.len - 1])
        }
    }
}

/// Whether the device of the raw key that continues with `rest` (after a
/// clean prefix of it) is `seg` or below it (`seg.…`), `seg` not empty.
#[inline(always)]
fn device_is_or_below(rest: &[u8], seg: &[u8]) -> bool {
    match rest.get(..seg.len()) {
        // A separator in `seg` would end the device inside it.
        Some(head) if bytes_eq(head, seg) && find_separator(seg).is_none() => {
            device_continues(&rest[seg.len()..])
        }
        _ => false,
    }
}

/// Whether a raw key whose device so far is a name (with no separator
/// in it) goes on as that device or one below it: the name ends at the
/// separator, or is followed by `.` and a device that a separator ends
/// (else the key's device would be `""`).
#[inline(always)]
fn device_continues(tail: &[u8]) -> bool {
    match tail.first() {
        Some(&SEPARATOR_BYTE) => true,
        Some(&b'.') => find_separator(&tail[1..]).is_some(),
        _ => false,
    }
}

/// Whether the device of the raw `key` is `path` or below it, for a `path`
/// that is not empty and holds no U+001F: [`within`] without splitting the
/// key.
#[inline(always)]
pub(crate) fn within_raw<P: PathLike + ?Sized>(key: &[u8], path: &P) -> bool {
    let base = path.path_len();
    debug_assert!(base > 0);
    match key.get(..base) {
        Some(head) if path.is_path(head) => device_continues(&key[base..]),
        _ => false,
    }
}

/// The indices 0 to 999 in decimal, three digits each ("000", "001", ...
/// "999"): a sequence's first thousand elements take their name from here,
/// without formatting, a UTF-8 check, or a load of digits just stored
/// byte by byte (which the store buffer cannot forward to a wider load).
const THREE_DIGITS: &str = match core::str::from_utf8(&three_digits()) {
    Ok(s) => s,
    Err(_) => panic!("ASCII digits"),
};

const fn three_digits() -> [u8; 3000] {
    let mut t = [0u8; 3000];
    let mut n = 0;
    while n < 1000 {
        t[3 * n] = b'0' + (n / 100) as u8;
        t[3 * n + 1] = b'0' + (n / 10 % 10) as u8;
        t[3 * n + 2] = b'0' + (n % 10) as u8;
        n += 1;
    }
    t
}

/// A sequence index in decimal, on the stack.
pub(crate) enum IndexBuf {
    /// Below 1,000: its text in [`THREE_DIGITS`].
    Small(&'static str),
    /// Its digits, from `start` to the end.
    Big { buf: [u8; 20], start: usize },
}

impl IndexBuf {
    /// Inlined for the first thousand indices (a slice of
    /// [`THREE_DIGITS`]); formatted out of line beyond.
    #[inline(always)]
    pub(crate) fn new(n: usize) -> Self {
        if n < 1000 {
            // Without its leading zeros.
            let digits = 1 + usize::from(n >= 10) + usize::from(n >= 100);
            return IndexBuf::Small(&THREE_DIGITS[3 * n + 3 - digits..3 * n + 3]);
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

    /// Every third item under Miri (which runs these tests hundreds of
    /// times slower), all of them natively.
    fn miri_subset<'a>(items: &[&'a str]) -> Vec<&'a str> {
        let step = if cfg!(miri) { 3 } else { 1 };
        items.iter().copied().step_by(step).collect()
    }

    #[test]
    fn index_buffers_spell_the_number() {
        // Under Miri every seventh number and the boundaries of the table
        // (a few seconds instead of a dozen); natively all of them.
        let step = if cfg!(miri) { 7 } else { 1 };
        let boundaries = [9, 10, 99, 100, 999, 1000, usize::MAX];
        for n in (0..2000).step_by(step).chain(boundaries) {
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
        let pieces = miri_subset(&pieces);
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
                // The path as bytes, and as a prefix (compared as a word).
                let prefix = Prefix::of_path(path.as_bytes());
                for &seg in pieces {
                    let want = if (d, p) == (*path, seg) {
                        Class::Scalar
                    } else if under(d, path, seg) {
                        Class::Container
                    } else {
                        Class::Other
                    };
                    let got = classify(key.as_bytes(), path.as_bytes(), seg.as_bytes());
                    match got {
                        Some(got) => assert_eq!(got, want, "{key:?} in {path:?} for {seg:?}"),
                        None => assert!(seg.is_empty()),
                    }
                    assert_eq!(classify(key.as_bytes(), &prefix, seg.as_bytes()), got);
                }
                if !path.is_empty() {
                    assert_eq!(
                        within_raw(key.as_bytes(), path.as_bytes()),
                        within(d, path),
                        "{key:?} within {path:?}"
                    );
                    assert_eq!(
                        within_raw(key.as_bytes(), &prefix),
                        within(d, path),
                        "{key:?} within {path:?} (a prefix)"
                    );
                }
            }
        }
    }

    /// `Prefix` spells what joining the path's names as text spells,
    /// entering and leaving containers on both sides of 16 bytes.
    #[test]
    fn a_prefix_spells_its_path_in_and_out() {
        let segs = [
            "a",
            "items",
            "0",
            "",
            "12",
            "price_eur",
            "a_much_longer_name",
            "a.b",
            "exactly_14_byt",
            "\u{e9}t\u{e9}",
            "fifteen_bytes__",
        ];
        // Under Miri every third name (a short one, the empty one, a long
        // one and a multi-byte one): 64 paths instead of 1,331.
        let segs = miri_subset(&segs);
        for &first in &segs {
            for &second in &segs {
                for &third in &segs {
                    let mut p = Prefix::new(Vec::new());
                    let mut path = String::new();
                    let check = |p: &mut Prefix, path: &str| {
                        let want = format!("{path}\x1f");
                        assert_eq!(p.len(), want.len());
                        assert_eq!(p.word(), prefix_word(want.as_bytes()), "{want:?}");
                        assert_eq!(p.bytes(), want.as_bytes());
                        // An attachment's name below it, and the prefix
                        // as it was after.
                        let mut name = path.to_owned();
                        join(&mut name, "raw_iq");
                        assert_eq!(p.with_child_path("raw_iq", str::to_owned), name);
                        assert_eq!(p.bytes(), want.as_bytes());
                        assert_eq!(p.word(), prefix_word(want.as_bytes()));
                    };
                    let b0 = p.enter(first.as_bytes());
                    join(&mut path, first);
                    let at1 = path.clone();
                    // The word is read before the bytes are asked for here,
                    // after them on the way back: both orders are checked.
                    assert_eq!(p.word(), prefix_word(format!("{path}\x1f").as_bytes()));
                    let b1 = p.enter(second.as_bytes());
                    join(&mut path, second);
                    check(&mut p, &path);
                    let b2 = p.enter(third.as_bytes());
                    join(&mut path, third);
                    check(&mut p, &path);
                    p.leave(b2);
                    check(&mut p, &path[..b2]);
                    p.leave(b1);
                    check(&mut p, &at1);
                    p.leave(b0);
                    check(&mut p, "");
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

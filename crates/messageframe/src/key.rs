//! Two-part keys: `(device, parameter)` joined by the ASCII Unit Separator.

#[allow(unused_imports)]
use crate::prelude::*;

use core::fmt::{self, Write as _};
use core::hash::{BuildHasher, Hasher};

use foldhash::quality::SeedableRandomState;
use foldhash::SharedSeed;

/// The byte that joins device and parameter in a flat key (ASCII Unit
/// Separator, 0x1F). Never a dot: device names may contain dots.
pub const SEPARATOR: char = '\u{1f}';
pub(crate) const SEPARATOR_BYTE: u8 = 0x1f;

/// The hasher every key hash starts from. The seed is random per process
/// and fixed within it (a [`FlatKey`]'s stored hash is valid for every
/// frame). The seed makes collisions hard to precompute, but it is not what
/// keeps lookups fast under attack: the index bounds its probes and falls
/// back to an ordered search whatever the hashes are (src/index.rs,
/// docs/security.md). foldhash's `quality` variant, not `fast`: the index
/// places keys by the hash's low bits, which `fast` spreads badly for short
/// keys under some seeds (docs/security.md, "The hash and its seed").
#[inline(always)]
fn hasher() -> foldhash::quality::FoldHasher<'static> {
    SeedableRandomState::with_seed(0x6d66_7261_6d65, shared_seed()).build_hasher()
}

#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
fn shared_seed() -> &'static SharedSeed {
    SharedSeed::global_random()
}

/// The tests' hook may fix the seed (`test_hooks::fix_hash_seed`).
#[cfg(feature = "test-hooks")]
fn shared_seed() -> &'static SharedSeed {
    crate::hooks::test_hooks::seed()
}

/// Hashes a key by its two parts, so that a lookup by `(device, param)`
/// never has to join them in memory first. Keys of up to 16 bytes (most
/// keys) hash as their [`ComposedKey`]: one 128-bit word, a single folded
/// multiply.
#[inline]
pub(crate) fn hash_parts(device: &[u8], param: &[u8]) -> u64 {
    match ComposedKey::new(device, param) {
        Some(k) => k.hash(),
        None => {
            let mut h = hasher();
            h.write(device);
            h.write(param);
            // The lengths keep ("ab", "c") and ("a", "bc") apart.
            h.write_u64((device.len() as u64) << 32 | param.len() as u64);
            crate::hooks::finish_hash(h.finish())
        }
    }
}

/// A word that, together with the length, identifies a slice of at most 8
/// bytes: its first and last four bytes (overlapping below 8), or for 1 to 3
/// bytes its first, middle and last byte. Two loads instead of a `memcpy`.
#[inline(always)]
pub(crate) fn short_word(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!(n <= 8);
    if n >= 4 {
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]);
        u64::from(lo) | u64::from(hi) << 32
    } else if n > 0 {
        u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16
    } else {
        0
    }
}

/// A slice of at most 8 bytes as the little-endian integer it spells (its
/// bytes exactly, unlike [`short_word`]), from at most three loads.
#[inline(always)]
pub(crate) fn le_value(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!(n <= 8);
    if n >= 4 {
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]);
        // The two words overlap below 8 bytes; overlapping bytes agree.
        u64::from(lo) | u64::from(hi) << (8 * (n - 4))
    } else {
        // One branch per length (predictable: names repeat) instead of
        // loads at computed offsets and variable shifts.
        match *b {
            [a] => u64::from(a),
            [a, b] => u64::from(u16::from_le_bytes([a, b])),
            [a, b, c] => u64::from(u16::from_le_bytes([a, b])) | u64::from(c) << 16,
            _ => 0,
        }
    }
}

/// [`short_word`] of the `n` (at most 8) bytes that `v` spells little-endian.
#[inline(always)]
fn short_word_of(v: u64, n: usize) -> u64 {
    let byte = |i: usize| (v >> (8 * i)) & 0xff;
    if n >= 4 {
        (v & 0xffff_ffff) | (v >> (8 * (n - 4)) & 0xffff_ffff) << 32
    } else if n > 0 {
        byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16
    } else {
        0
    }
}

/// Copies `s` into `dst[..s.len()]`. Up to 32 bytes as two fixed-size
/// copies that overlap (the first and last 16, 8, 4 bytes; 1 to 3 bytes
/// one by one), instead of a call to `memcpy`, which costs more than the
/// copy for the keys and strings of telemetry (8 to 40 bytes).
#[inline(always)]
pub(crate) fn copy_small(dst: &mut [u8], s: &[u8]) {
    let n = s.len();
    let dst = &mut dst[..n];
    if n > 32 {
        crate::wire::write::copy_to_slice(dst, s);
    } else if n >= 16 {
        dst[..16].copy_from_slice(&s[..16]);
        dst[n - 16..].copy_from_slice(&s[n - 16..]);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&s[..8]);
        dst[n - 8..].copy_from_slice(&s[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&s[..4]);
        dst[n - 4..].copy_from_slice(&s[n - 4..]);
    } else if n > 0 {
        dst[0] = s[0];
        dst[n / 2] = s[n / 2];
        dst[n - 1] = s[n - 1];
    }
}

/// Eight bytes at `i` as a little-endian word (one load after one bounds
/// check).
#[inline(always)]
pub(crate) fn word_at(b: &[u8], i: usize) -> u64 {
    let s = &b[i..i + 8];
    u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
}

/// Byte equality without a call to `memcmp` for the short slices keys are
/// made of.
#[inline(always)]
pub(crate) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        false
    } else if n <= 8 {
        short_word(a) == short_word(b)
    } else if n <= 16 {
        word_at(a, 0) == word_at(b, 0) && word_at(a, n - 8) == word_at(b, n - 8)
    } else {
        a == b
    }
}

/// A flat key of at most 16 bytes, joined once per lookup into the words
/// that compare and hash it, so that each candidate key is compared whole in
/// one or two word compares instead of part by part.
#[derive(Clone, Copy)]
pub(crate) struct ComposedKey {
    len: usize,
    words: (u64, u64),
}

/// A slice of at most 16 bytes as the little-endian integer it spells, from
/// at most two 8-byte loads (which overlap below 16 bytes).
#[inline(always)]
pub(crate) fn le_value16(b: &[u8]) -> u128 {
    let n = b.len();
    debug_assert!(n <= 16);
    if n <= 8 {
        u128::from(le_value(b))
    } else {
        u128::from(word_at(b, 0)) | u128::from(word_at(b, n - 8)) << (8 * (n - 8))
    }
}

impl ComposedKey {
    /// `device`, separator, `param`; `None` if that is longer than 16 bytes
    /// (such keys take the part-by-part comparison).
    #[inline(always)]
    pub(crate) fn new(device: &[u8], param: &[u8]) -> Option<ComposedKey> {
        let dev_len = device.len();
        let len = dev_len.checked_add(1 + param.len())?;
        if len > 16 {
            return None;
        }
        // Joined in registers: no copies, and no loads of words that span
        // the stores of a copy (a store-forwarding stall). The parameter is
        // shifted in two steps: one shift of 128 (an empty parameter after
        // a 15-byte device) would overflow.
        let words = if len <= 8 {
            // The common case, in 64-bit registers (128-bit variable shifts
            // cost several instructions each).
            let joined = le_value(device)
                | u64::from(SEPARATOR_BYTE) << (8 * dev_len)
                | (le_value(param) << (8 * dev_len)) << 8;
            (short_word_of(joined, len), 0)
        } else {
            let joined = le_value16(device)
                | u128::from(SEPARATOR_BYTE) << (8 * dev_len)
                | (le_value16(param) << (8 * dev_len)) << 8;
            (joined as u64, (joined >> (8 * (len - 8))) as u64)
        };
        Some(ComposedKey { len, words })
    }

    /// The key of at most 16 bytes that is already joined in memory (a flat
    /// key with its separator, as a frame's text arena holds it): two loads
    /// instead of joining the parts in registers. `None` if it is longer.
    #[inline(always)]
    pub(crate) fn from_joined(key: &[u8]) -> Option<ComposedKey> {
        let len = key.len();
        let words = if len <= 8 {
            (short_word(key), 0)
        } else if len <= 16 {
            (word_at(key, 0), word_at(key, len - 8))
        } else {
            return None;
        };
        Some(ComposedKey { len, words })
    }

    /// The key's hash (see [`hash_parts`]): one folded multiply of the
    /// words, the length mixed into the second. (foldhash's `write_u64` of
    /// the length would cost a second multiply, on every `add` to an
    /// indexed frame and every lookup; two keys whose words then agree
    /// differ in length and are still told apart by the comparison.)
    #[inline(always)]
    pub(crate) fn hash(&self) -> u64 {
        let mut h = hasher();
        let second = self.words.1 ^ self.len as u64;
        h.write_u128(u128::from(self.words.0) | u128::from(second) << 64);
        crate::hooks::finish_hash(h.finish())
    }

    /// The key's length in bytes (at most 16).
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The joined key's bytes (the first [`len`](Self::len) of the array),
    /// rebuilt from the words, which hold every byte. For the cold paths
    /// that need the key itself (the index's ordered fallback), so that the
    /// hot lookup keeps only the words alive, not the parts.
    pub(crate) fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        let n = self.len;
        let w = self.words.0;
        if n > 8 {
            b[..8].copy_from_slice(&w.to_le_bytes());
            b[n - 8..n].copy_from_slice(&self.words.1.to_le_bytes());
        } else if n >= 4 {
            b[..4].copy_from_slice(&(w as u32).to_le_bytes());
            b[n - 4..n].copy_from_slice(&((w >> 32) as u32).to_le_bytes());
        } else if n > 0 {
            b[0] = w as u8;
            b[n / 2] = (w >> 8) as u8;
            b[n - 1] = (w >> 16) as u8;
        }
        b
    }

    /// Whether `key`, which the caller has checked is [`len`](Self::len)
    /// bytes long, is this key.
    #[inline(always)]
    pub(crate) fn eq_same_len(&self, key: &[u8]) -> bool {
        debug_assert_eq!(key.len(), self.len);
        if self.len <= 8 {
            short_word(key) == self.words.0
        } else {
            word_at(key, 0) == self.words.0 && word_at(key, self.len - 8) == self.words.1
        }
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether all bytes are ASCII; word-wide for the short strings keys and
/// values usually are.
#[inline(always)]
pub(crate) fn is_ascii(b: &[u8]) -> bool {
    let n = b.len();
    if n <= 8 {
        short_word(b) & HIGHS == 0
    } else if n <= 16 {
        (word_at(b, 0) | word_at(b, n - 8)) & HIGHS == 0
    } else {
        b.is_ascii()
    }
}

/// The lowest byte of `w` that is zero, flagged by its high bit (bits above
/// a true zero may be false positives, never below).
#[inline(always)]
fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(ONES) & !w & HIGHS
}

/// Position of the first separator in a key, eight bytes at a time.
#[inline(always)]
pub(crate) fn find_separator(key: &[u8]) -> Option<usize> {
    let seps = ONES * u64::from(SEPARATOR_BYTE);
    let n = key.len();
    if (4..8).contains(&n) {
        // Two overlapping four-byte words cover the key: the first word's
        // match wins, else the second's.
        let lo = u64::from(u32::from_le_bytes([key[0], key[1], key[2], key[3]])) | !0 << 32;
        let z = zero_bytes(lo ^ seps);
        if z != 0 {
            return Some((z.trailing_zeros() / 8) as usize);
        }
        let hi = u64::from(u32::from_le_bytes([
            key[n - 4],
            key[n - 3],
            key[n - 2],
            key[n - 1],
        ])) | !0 << 32;
        let z = zero_bytes(hi ^ seps);
        return (z != 0).then(|| n - 4 + (z.trailing_zeros() / 8) as usize);
    }
    if n < 4 {
        // The key in one zero-padded word: a padding byte XOR the separator
        // is not zero, so only the key's own bytes can match.
        let z = zero_bytes(le_value(key) ^ seps);
        return (z != 0).then(|| (z.trailing_zeros() / 8) as usize);
    }
    let mut i = 0;
    while i + 8 <= n {
        let zero = zero_bytes(word_at(key, i) ^ seps);
        if zero != 0 {
            return Some(i + (zero.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    if i == n {
        return None;
    }
    // The last word overlaps bytes already searched, which hold no
    // separator: the first match in it is the first in the key.
    let zero = zero_bytes(word_at(key, n - 8) ^ seps);
    (zero != 0).then(|| n - 8 + (zero.trailing_zeros() / 8) as usize)
}

/// Splits a flat key at its first separator. A key without one decodes as
/// device `""` and the whole key as parameter (what the C++ library does).
#[inline]
pub(crate) fn split_flat(flat: &str) -> (&str, &str) {
    match find_separator(flat.as_bytes()) {
        Some(i) => (&flat[..i], &flat[i + 1..]),
        None => ("", flat),
    }
}

/// A device name contained the separator, so no flat key can represent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidKey {
    device: String,
}

impl fmt::Display for InvalidKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "device name {:?} contains the key separator U+001F",
            self.device
        )
    }
}

#[cfg(any(feature = "std", core_error))]
impl crate::error::ErrorTrait for InvalidKey {}

impl InvalidKey {
    /// The error for this device name, if it contains the separator.
    pub(crate) fn check(device: &str) -> Result<(), InvalidKey> {
        if device.as_bytes().contains(&SEPARATOR_BYTE) {
            Err(InvalidKey {
                device: device.to_owned(),
            })
        } else {
            Ok(())
        }
    }
}

/// A pre-composed `(device, parameter)` key with its hash, for hot loops that
/// touch the same parameter in every message (`FlatKey::compose` in C++).
///
/// It can only be built from its two parts, so it always carries exactly the
/// separator the wire format uses.
///
/// ```
/// use messageframe::{FlatKey, Frame};
///
/// let gain = FlatKey::new("sdr_1", "rx_gain")?;
/// let mut frame = Frame::default();
/// for i in 0..3 {
///     frame.clear();
///     frame.add_flat(&gain, 30.0 + f64::from(i));
///     assert_eq!(frame.find_flat(&gain).and_then(|v| v.as_f64()), Some(30.0 + f64::from(i)));
/// }
/// assert_eq!(gain.device(), "sdr_1");
/// assert_eq!(gain.param(), "rx_gain");
/// # Ok::<(), messageframe::InvalidKey>(())
/// ```
///
/// Keys compare, order and hash by their two parts, so they serve as keys
/// of a `HashMap` or `BTreeMap` of your own. The order is by device, then
/// by parameter (the order of `(device, param)` tuples), and `AsRef<str>`
/// gives the flat form:
///
/// ```
/// use std::collections::BTreeSet;
/// use messageframe::FlatKey;
///
/// let keys: BTreeSet<FlatKey> = [("b", "x"), ("a", "z"), ("a", "y")]
///     .into_iter()
///     .map(|(d, p)| FlatKey::new(d, p))
///     .collect::<Result<_, _>>()?;
/// let listed: Vec<String> = keys.iter().map(ToString::to_string).collect();
/// assert_eq!(listed, ["a.y", "a.z", "b.x"]);
/// let flat: &str = keys.first().unwrap().as_ref();
/// assert_eq!(flat, "a\u{1f}y");
/// # Ok::<(), messageframe::InvalidKey>(())
/// ```
#[derive(Clone)]
pub struct FlatKey {
    flat: Box<str>,
    sep: usize,
    hash: u64,
}

impl FlatKey {
    /// Composes `device + U+001F + param`. Fails if `device` contains the
    /// separator, since the key would then split differently when decoded.
    /// (`param` may contain it: keys split at their first separator.)
    pub fn new(device: &str, param: &str) -> Result<FlatKey, InvalidKey> {
        if device.as_bytes().contains(&SEPARATOR_BYTE) {
            return Err(InvalidKey {
                device: device.to_owned(),
            });
        }
        let mut flat = String::with_capacity(device.len() + 1 + param.len());
        flat.push_str(device);
        flat.push(SEPARATOR);
        flat.push_str(param);
        let hash = hash_parts(device.as_bytes(), param.as_bytes());
        Ok(FlatKey {
            flat: flat.into_boxed_str(),
            sep: device.len(),
            hash,
        })
    }

    /// The device part.
    #[must_use]
    pub fn device(&self) -> &str {
        &self.flat[..self.sep]
    }

    /// The parameter part.
    #[must_use]
    pub fn param(&self) -> &str {
        &self.flat[self.sep + 1..]
    }

    /// The flat key as it goes on the wire: `device`, U+001F, `param`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.flat
    }

    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }
}

impl PartialEq for FlatKey {
    fn eq(&self, other: &Self) -> bool {
        // The flat string decides: the device holds no separator, so the
        // split (and the hash, a function of the parts) follows from it.
        self.flat == other.flat
    }
}

impl Eq for FlatKey {}

impl core::hash::Hash for FlatKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.flat.hash(state);
    }
}

impl PartialOrd for FlatKey {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FlatKey {
    /// By device, then by parameter: not the flat strings' order, in which
    /// the separator (0x1F) would sort `("a\u{1}", _)` before `("a", _)`.
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (self.device(), self.param()).cmp(&(other.device(), other.param()))
    }
}

impl AsRef<str> for FlatKey {
    /// The flat key as it goes on the wire (see [`FlatKey::as_str`]).
    fn as_ref(&self) -> &str {
        &self.flat
    }
}

impl fmt::Debug for FlatKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FlatKey")
            .field(&self.device())
            .field(&self.param())
            .finish()
    }
}

impl fmt::Display for FlatKey {
    /// `device.param`, the form people read ([`KeyDisplay`]; the wire uses
    /// U+001F).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        KeyDisplay::new(self.device(), self.param()).fmt(f)
    }
}

/// A key in the one form people read: `device.param`.
///
/// Error messages, `mframe dump --pretty` and `mframe view` all print keys
/// this way (the wire joins the parts with U+001F, which most fonts cannot
/// show; JSON keeps `device` and `param` apart). Each part is written as it
/// is when that cannot mislead, and otherwise as a JSON string literal in
/// double quotes: when it is empty, contains `.` or `"`, a control
/// character (U+001F included) or an invisible one (zero-width spaces and
/// joiners, direction marks and overrides, the byte order mark, U+2028 and
/// U+2029), or starts or ends with whitespace. Inside the quotes, `"` and
/// `\` are `\"` and `\\`; line feed, carriage return, tab, backspace and
/// form feed are `\n`, `\r`, `\t`, `\b`, `\f`; every other control or
/// invisible character is `\uXXXX`.
/// So the first `.` outside quotes always separates the device from the
/// parameter, and each quoted part reads back with any JSON parser.
///
/// ```
/// use messageframe::KeyDisplay;
///
/// assert_eq!(KeyDisplay::new("sdr_1", "rx_gain").to_string(), "sdr_1.rx_gain");
/// // A dot inside a part, an empty part, a control character: quoted.
/// assert_eq!(KeyDisplay::new("items.10", "price").to_string(), r#""items.10".price"#);
/// assert_eq!(KeyDisplay::new("gps", "fix.lat").to_string(), r#"gps."fix.lat""#);
/// assert_eq!(KeyDisplay::new("", "fw").to_string(), r#""".fw"#);
/// assert_eq!(KeyDisplay::new("core", "a\u{1f}b").to_string(), r#"core."a\u001fb""#);
/// // A key as it is on the wire, split at its first U+001F.
/// assert_eq!(KeyDisplay::from_flat("core\u{1f}fw").to_string(), "core.fw");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDisplay<'a> {
    device: &'a str,
    param: &'a str,
}

impl<'a> KeyDisplay<'a> {
    /// The key `(device, param)`.
    #[must_use]
    pub fn new(device: &'a str, param: &'a str) -> Self {
        KeyDisplay { device, param }
    }

    /// A flat key as the wire holds it (`device`, U+001F, `param`), split at
    /// its first separator; without one, the device is empty and the whole
    /// key is the parameter, as the decoders read it.
    #[must_use]
    pub fn from_flat(flat: &'a str) -> Self {
        let (device, param) = split_flat(flat);
        KeyDisplay { device, param }
    }
}

impl fmt::Display for KeyDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_key_part(f, self.device)?;
        f.write_str(".")?;
        write_key_part(f, self.param)
    }
}

/// Characters that show as nothing (or reorder what follows) and so must
/// not be printed as they are in a key.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

fn write_key_part(f: &mut fmt::Formatter<'_>, part: &str) -> fmt::Result {
    let plain = !part.is_empty()
        && !part.starts_with(char::is_whitespace)
        && !part.ends_with(char::is_whitespace)
        && !part
            .chars()
            .any(|c| matches!(c, '.' | '"') || c.is_control() || is_invisible(c));
    if plain {
        return f.write_str(part);
    }
    f.write_str("\"")?;
    for c in part.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            '\u{8}' => f.write_str("\\b")?,
            '\u{c}' => f.write_str("\\f")?,
            c if c.is_control() || is_invisible(c) => write!(f, "\\u{:04x}", u32::from(c))?,
            c => f.write_char(c)?,
        }
    }
    f.write_str("\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_composed_key_equals_exactly_its_joined_bytes() {
        let parts: Vec<Vec<u8>> = (0..=16usize)
            .map(|n| (0..n).map(|i| b'A' + i as u8).collect())
            .collect();
        for d in &parts {
            for p in &parts {
                let mut joined = d.clone();
                joined.push(SEPARATOR_BYTE);
                joined.extend_from_slice(p);
                let Some(k) = ComposedKey::new(d, p) else {
                    assert!(joined.len() > 16);
                    continue;
                };
                assert_eq!(k.len(), joined.len());
                assert!(k.eq_same_len(&joined), "{joined:?}");
                assert_eq!(&k.to_bytes()[..k.len()], &joined[..]);
                let from_joined = ComposedKey::from_joined(&joined).expect("16 bytes at most");
                assert_eq!(from_joined.words, k.words, "{joined:?}");
                assert_eq!(from_joined.hash(), k.hash(), "{joined:?}");
                // Any one byte changed is a different key.
                for i in 0..joined.len() {
                    let mut other = joined.clone();
                    other[i] ^= 0x20;
                    assert!(!k.eq_same_len(&other), "{other:?} vs {joined:?}");
                }
            }
        }
        assert!(
            ComposedKey::new(&[b'd'; 8], &[b'p'; 8]).is_none(),
            "17 bytes"
        );
        assert!(ComposedKey::new(&[b'd'; 15], b"").is_some(), "16 bytes");
        assert!(ComposedKey::new(b"", &[b'p'; 15]).is_some(), "16 bytes");
    }

    #[test]
    fn copy_small_copies_every_length() {
        for n in 0..70usize {
            let s: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let mut dst = vec![0xffu8; n + 3];
            copy_small(&mut dst, &s);
            assert_eq!(&dst[..n], &s[..], "{n} bytes");
            assert_eq!(&dst[n..], &[0xff; 3], "{n} bytes: nothing past them");
        }
    }

    #[test]
    fn le_value_spells_the_bytes_and_short_word_of_agrees() {
        for n in 0..=8usize {
            let b: Vec<u8> = (1..=n as u8).collect();
            let mut expected = [0u8; 8];
            expected[..n].copy_from_slice(&b);
            assert_eq!(le_value(&b), u64::from_le_bytes(expected), "{n} bytes");
            assert_eq!(short_word_of(le_value(&b), n), short_word(&b), "{n} bytes");
        }
    }

    #[test]
    fn word_wide_helpers_give_the_byte_by_byte_answers_at_every_length() {
        // Built from explicit little-endian loads, so the answers are the
        // same on a big-endian target (the Miri run on s390x checks it).
        for n in 0..40usize {
            let a: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(bytes_eq(&a, &a.clone()), "{n} bytes");
            assert!(is_ascii(&a));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x01;
                assert!(!bytes_eq(&a, &b), "{n} bytes, byte {i}");
                b[i] = 0x80 | a[i];
                assert!(!is_ascii(&b), "{n} bytes, high byte at {i}");
            }
            assert!(!bytes_eq(&a, &a[..n.saturating_sub(1)]) || n == 0);
        }
        // A key hashes the same whether composed or hashed by its parts.
        for (d, p) in [
            ("d", "p"),
            ("sdr_1", "rx_gain"),
            ("", "x"),
            ("device_12345", "p"),
        ] {
            let k = ComposedKey::new(d.as_bytes(), p.as_bytes()).unwrap();
            assert_eq!(k.hash(), hash_parts(d.as_bytes(), p.as_bytes()));
            assert_eq!(FlatKey::new(d, p).unwrap().hash(), k.hash());
        }
        let long = "a_long_device_name";
        assert_eq!(
            FlatKey::new(long, "p").unwrap().hash(),
            hash_parts(long.as_bytes(), b"p")
        );
        assert_ne!(hash_parts(b"ab", b"c"), hash_parts(b"a", b"bc"));
    }

    #[test]
    fn find_separator_finds_the_first_one_at_every_length_and_position() {
        for n in 0..24usize {
            let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert_eq!(find_separator(&base), None, "none in {n} bytes");
            for first in 0..n {
                for second in [None, Some(first + 1), Some(n - 1)] {
                    let mut k = base.clone();
                    k[first] = SEPARATOR_BYTE;
                    if let Some(s) = second.filter(|&s| s < n) {
                        k[s] = SEPARATOR_BYTE;
                    }
                    // Bytes that differ from the separator by one bit, and
                    // high bytes, next to it: no false positives.
                    if first > 0 {
                        k[first - 1] = SEPARATOR_BYTE ^ 0x01;
                    }
                    if first + 2 < n {
                        k[first + 2] = 0x9f;
                    }
                    let expected = k.iter().position(|&b| b == SEPARATOR_BYTE);
                    assert_eq!(find_separator(&k), expected, "{k:?}");
                }
            }
        }
    }
}

//! A generator of diverse, valid frames for the seed corpus.
//!
//! It writes MessagePack by hand, so that it can produce what our encoder
//! never does: every value type, unknown tags with arbitrary MessagePack
//! values (ext types, nested arrays and maps), keys with and without the
//! separator, duplicate keys, map16/map32 and array16/array32 headers,
//! non-minimal integer, string and binary encodings, float32 doubles, and
//! extra trailing elements in every array the decoder tolerates them in.
//! Deterministic: the same seed gives the same frames.

/// A small deterministic PRNG (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One element of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A MessagePack writer that, unless `canonical`, sometimes picks a wider
/// encoding than the shortest one.
#[derive(Debug)]
pub struct Writer {
    /// The bytes written.
    pub out: Vec<u8>,
    rng: Rng,
    canonical: bool,
}

impl Writer {
    /// A writer; `canonical` writes shortest forms only (as our encoder).
    pub fn new(rng: Rng, canonical: bool) -> Self {
        Writer {
            out: Vec::new(),
            rng,
            canonical,
        }
    }

    fn wide(&mut self) -> bool {
        !self.canonical && self.rng.chance(25)
    }

    /// An unsigned integer, shortest form or (sometimes) any wider one,
    /// including the signed markers when the value fits them.
    pub fn uint(&mut self, v: u64) {
        let mut forms: Vec<u8> = Vec::new();
        if v < 0x80 {
            forms.push(0x00);
        }
        if v <= 0xff {
            forms.push(0xcc);
        }
        if v <= 0xffff {
            forms.push(0xcd);
        }
        if v <= 0xffff_ffff {
            forms.push(0xce);
        }
        forms.push(0xcf);
        if v <= 0x7f {
            forms.push(0xd0);
        }
        if v <= 0x7fff {
            forms.push(0xd1);
        }
        if v <= 0x7fff_ffff {
            forms.push(0xd2);
        }
        if v <= i64::MAX as u64 {
            forms.push(0xd3);
        }
        let form = if self.wide() {
            self.rng.pick(&forms)
        } else {
            forms[0]
        };
        self.int_form(form, i128::from(v));
    }

    /// A signed integer (non-negative values go through [`uint`](Self::uint)).
    pub fn int(&mut self, v: i64) {
        if v >= 0 {
            return self.uint(v as u64);
        }
        let mut forms: Vec<u8> = Vec::new();
        if v >= -32 {
            forms.push(0xe0);
        }
        if v >= i64::from(i8::MIN) {
            forms.push(0xd0);
        }
        if v >= i64::from(i16::MIN) {
            forms.push(0xd1);
        }
        if v >= i64::from(i32::MIN) {
            forms.push(0xd2);
        }
        forms.push(0xd3);
        let form = if self.wide() {
            self.rng.pick(&forms)
        } else {
            forms[0]
        };
        self.int_form(form, i128::from(v));
    }

    fn int_form(&mut self, form: u8, v: i128) {
        let o = &mut self.out;
        match form {
            0x00 | 0xe0 => o.push(v as u8),
            0xcc => o.extend_from_slice(&[0xcc, v as u8]),
            0xcd => {
                o.push(0xcd);
                o.extend_from_slice(&(v as u16).to_be_bytes());
            }
            0xce => {
                o.push(0xce);
                o.extend_from_slice(&(v as u32).to_be_bytes());
            }
            0xcf => {
                o.push(0xcf);
                o.extend_from_slice(&(v as u64).to_be_bytes());
            }
            0xd0 => o.extend_from_slice(&[0xd0, v as i8 as u8]),
            0xd1 => {
                o.push(0xd1);
                o.extend_from_slice(&(v as i16).to_be_bytes());
            }
            0xd2 => {
                o.push(0xd2);
                o.extend_from_slice(&(v as i32).to_be_bytes());
            }
            _ => {
                o.push(0xd3);
                o.extend_from_slice(&(v as i64).to_be_bytes());
            }
        }
    }

    /// A length-prefixed element: `fix` is `(base, max)` of the fix form,
    /// then the 8/16/32-bit markers (`m8` may be absent).
    fn len_prefix(
        &mut self,
        len: usize,
        fix: Option<(u8, usize)>,
        m8: Option<u8>,
        m16: u8,
        m32: u8,
    ) {
        let mut forms: Vec<u8> = Vec::new();
        if let Some((base, max)) = fix {
            if len <= max {
                forms.push(base);
            }
        }
        if let Some(m) = m8 {
            if len <= 0xff {
                forms.push(m);
            }
        }
        if len <= 0xffff {
            forms.push(m16);
        }
        forms.push(m32);
        let form = if self.wide() {
            self.rng.pick(&forms)
        } else {
            forms[0]
        };
        let o = &mut self.out;
        if Some(form) == fix.map(|f| f.0) {
            o.push(form | len as u8);
        } else if Some(form) == m8 {
            o.extend_from_slice(&[form, len as u8]);
        } else if form == m16 {
            o.push(form);
            o.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            o.push(form);
            o.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }

    /// A string of raw bytes (not necessarily UTF-8).
    pub fn str_bytes(&mut self, s: &[u8]) {
        self.len_prefix(s.len(), Some((0xa0, 31)), Some(0xd9), 0xda, 0xdb);
        self.out.extend_from_slice(s);
    }

    /// A string.
    pub fn str(&mut self, s: &str) {
        self.str_bytes(s.as_bytes());
    }

    /// Binary data.
    pub fn bin(&mut self, b: &[u8]) {
        self.len_prefix(b.len(), None, Some(0xc4), 0xc5, 0xc6);
        self.out.extend_from_slice(b);
    }

    /// An array header.
    pub fn array(&mut self, len: usize) {
        self.len_prefix(len, Some((0x90, 15)), None, 0xdc, 0xdd);
    }

    /// A map header.
    pub fn map(&mut self, len: usize) {
        self.len_prefix(len, Some((0x80, 15)), None, 0xde, 0xdf);
    }

    /// A double as msgpack-c writes it (integral values as integers), or,
    /// when not canonical, sometimes as float32 (if exact) or float64.
    pub fn double(&mut self, v: f64) {
        let integral = v.fract() == 0.0 && !(v == 0.0 && v.is_sign_negative());
        if integral && (0.0..18_446_744_073_709_551_616.0).contains(&v) && !self.wide() {
            return self.uint(v as u64);
        }
        if integral && v < 0.0 && v >= i64::MIN as f64 && !self.wide() {
            return self.int(v as i64);
        }
        if !self.canonical && f64::from(v as f32).to_bits() == v.to_bits() && self.rng.chance(40) {
            self.out.push(0xca);
            self.out
                .extend_from_slice(&(v as f32).to_bits().to_be_bytes());
            return;
        }
        self.out.push(0xcb);
        self.out.extend_from_slice(&v.to_bits().to_be_bytes());
    }

    /// Any MessagePack value, nesting at most `depth` levels.
    pub fn any(&mut self, depth: usize) {
        let kinds = if depth == 0 { 9 } else { 11 };
        match self.rng.below(kinds) {
            0 => self.out.push(0xc0),
            1 => self.out.push(if self.rng.chance(50) { 0xc3 } else { 0xc2 }),
            2 => {
                let v = self.rng.next_u64() >> self.rng.below(64);
                self.uint(v);
            }
            3 => {
                let v = -((self.rng.next_u64() >> (1 + self.rng.below(63))) as i64) - 1;
                self.int(v);
            }
            4 => {
                let v = f64::from_bits(self.rng.next_u64());
                self.out.push(0xcb);
                self.out.extend_from_slice(&v.to_bits().to_be_bytes());
            }
            5 => {
                self.out.push(0xca);
                let bits = self.rng.next_u64() as u32;
                self.out.extend_from_slice(&bits.to_be_bytes());
            }
            6 => {
                let s = self.text(20);
                self.str(&s);
            }
            7 => {
                let n = self.rng.below(40);
                let b: Vec<u8> = (0..n).map(|_| self.rng.next_u64() as u8).collect();
                self.bin(&b);
            }
            8 => self.ext(),
            9 => {
                let n = self.rng.below(5);
                self.array(n);
                for _ in 0..n {
                    self.any(depth - 1);
                }
            }
            _ => {
                let n = self.rng.below(4);
                self.map(n);
                for _ in 0..2 * n {
                    self.any(depth - 1);
                }
            }
        }
    }

    /// An extension value (fixext 1/2/4/8/16 or ext 8/16/32).
    fn ext(&mut self) {
        let ty = self.rng.next_u64() as u8;
        let (header, len): (Vec<u8>, usize) = match self.rng.below(8) {
            0 => (vec![0xd4, ty], 1),
            1 => (vec![0xd5, ty], 2),
            2 => (vec![0xd6, ty], 4),
            3 => (vec![0xd7, ty], 8),
            4 => (vec![0xd8, ty], 16),
            5 => {
                let n = self.rng.below(20);
                (vec![0xc7, n as u8, ty], n)
            }
            6 => {
                let n = self.rng.below(20);
                (vec![0xc8, 0, n as u8, ty], n)
            }
            _ => {
                let n = self.rng.below(20);
                (vec![0xc9, 0, 0, 0, n as u8, ty], n)
            }
        };
        self.out.extend_from_slice(&header);
        for _ in 0..len {
            let b = self.rng.next_u64() as u8;
            self.out.push(b);
        }
    }

    /// A random UTF-8 text of up to `max` characters, sometimes multi-byte.
    pub fn text(&mut self, max: usize) -> String {
        const CHARS: &[char] = &[
            'a', 'b', 'z', '_', '.', '0', '9', ' ', '/', 'é', 'ß', 'Ω', '中', '🚀', '\0',
        ];
        let n = self.rng.below(max + 1);
        (0..n).map(|_| self.rng.pick(CHARS)).collect()
    }
}

/// Interesting integers for Int64 values and header fields.
const INTS: &[i64] = &[
    0,
    1,
    -1,
    31,
    -32,
    -33,
    127,
    128,
    -128,
    -129,
    255,
    256,
    32767,
    -32768,
    65535,
    65536,
    i32::MAX as i64,
    i32::MIN as i64,
    u32::MAX as i64,
    1 << 32,
    i64::MAX,
    i64::MIN,
    i64::MIN + 1,
];

/// Interesting doubles.
const DOUBLES: &[f64] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    10.0,
    1.5,
    -2.25,
    0.1,
    1e19,
    -1e19,
    18_446_744_073_709_551_616.0,
    9_007_199_254_740_993.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MIN_POSITIVE,
    5e-324,
    f64::MAX,
    f64::MIN,
    i64::MIN as f64,
];

const DEVICES: &[&str] = &["sdr_1", "core", "", "gps.main", "dév", "d0", "a\u{1f}"];
const PARAMS: &[&str] = &["rx_gain", "fw", "", "lat", "p\u{1f}q", "x", "温度"];
const TAGS: &[i64] = &[
    0,
    1,
    11,
    50,
    127,
    128,
    255,
    256,
    -1,
    -100,
    100_000,
    i64::MAX,
    i64::MIN,
];

/// A header field value that fits `bits` (signed if `signed`).
fn header_field(rng: &mut Rng, bits: u32, signed: bool) -> i64 {
    let v = if rng.chance(50) {
        rng.pick(INTS)
    } else {
        rng.next_u64() as i64 >> rng.below(64)
    };
    if signed {
        let min = -(1i64 << (bits - 1));
        let max = (1i64 << (bits - 1)) - 1;
        v.clamp(min, max)
    } else if bits == 64 {
        v.max(0)
    } else {
        v.clamp(0, (1i64 << bits) - 1)
    }
}

/// One generated frame. `canonical` frames are exactly what our encoder
/// writes (after a decode they re-encode to the same bytes).
pub fn frame(rng: &mut Rng, canonical: bool) -> Vec<u8> {
    let mut w = Writer::new(Rng::new(rng.next_u64()), canonical);
    let extra = |rng: &mut Rng| {
        if !canonical && rng.chance(15) {
            1 + rng.below(3)
        } else {
            0
        }
    };

    let extra_top = extra(rng);
    w.array(3 + extra_top);

    let extra_header = extra(rng);
    w.array(8 + extra_header);
    w.uint(header_field(rng, 64, false) as u64);
    w.uint(header_field(rng, 64, false) as u64);
    w.uint(header_field(rng, 32, false) as u64);
    w.uint(header_field(rng, 32, false) as u64);
    w.int(header_field(rng, 32, true));
    w.int(header_field(rng, 32, true));
    w.uint(header_field(rng, 16, false) as u64);
    w.uint(header_field(rng, 16, false) as u64);
    for _ in 0..extra_header {
        w.any(2);
    }

    let count = match rng.below(20) {
        0 => 0,
        1 => 15,
        2 => 16,
        3 => 9,
        4 => 129,
        5 if rng.chance(30) => 300,
        _ => 1 + rng.below(12),
    };
    w.map(count);
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for k in 0..count {
        let key: Vec<u8> = if !keys.is_empty() && rng.chance(3) {
            // A duplicate key.
            keys[rng.below(keys.len())].clone()
        } else if rng.chance(10) {
            // No separator: device "" and the whole key as parameter.
            format!("{}{k}", rng.pick(PARAMS).replace('\u{1f}', "")).into_bytes()
        } else {
            format!("{}\u{1f}{}{k}", rng.pick(DEVICES), rng.pick(PARAMS)).into_bytes()
        };
        w.str_bytes(&key);
        keys.push(key);

        let extra_value = extra(rng);
        w.array(2 + extra_value);
        match rng.below(9) {
            0 | 1 => {
                w.uint(10);
                let v = if rng.chance(50) {
                    rng.pick(INTS)
                } else {
                    rng.next_u64() as i64
                };
                w.int(v);
            }
            2 | 3 => {
                w.uint(20);
                let v = if rng.chance(60) {
                    rng.pick(DOUBLES)
                } else {
                    f64::from_bits(rng.next_u64())
                };
                w.double(v);
            }
            4 | 5 => {
                w.uint(30);
                let s = match rng.below(12) {
                    0 => "x".repeat(31),
                    1 => "y".repeat(32),
                    2 => "z".repeat(256),
                    _ => w.text(24),
                };
                w.str(&s);
            }
            6 => {
                w.uint(40);
                w.out.push(if rng.chance(50) { 0xc3 } else { 0xc2 });
            }
            _ => {
                w.int(rng.pick(TAGS));
                w.any(3);
            }
        }
        for _ in 0..extra_value {
            w.any(1);
        }
    }

    let attachments = match rng.below(6) {
        0..=2 => 0,
        3 | 4 => 1,
        _ => 2 + rng.below(3),
    };
    w.array(attachments);
    for _ in 0..attachments {
        let extra_pair = extra(rng);
        w.array(2 + extra_pair);
        let name = w.text(12);
        w.str(&name);
        let len = rng.pick(&[0usize, 1, 7, 255, 256, 1000]);
        let data: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        w.bin(&data);
        for _ in 0..extra_pair {
            w.any(1);
        }
    }

    for _ in 0..extra_top {
        w.any(2);
    }
    w.out
}

/// `n` generated frames, half of them canonical.
pub fn frames(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    (0..n).map(|i| frame(&mut rng, i % 2 == 0)).collect()
}

/// `n` buffers of several frames back to back, some followed by junk.
pub fn streams(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let mut buf = Vec::new();
            for _ in 0..2 + rng.below(3) {
                buf.extend_from_slice(&frame(&mut rng, i % 2 == 0));
            }
            if rng.chance(30) {
                let junk = rng.below(8);
                for _ in 0..junk {
                    buf.push(rng.next_u64() as u8);
                }
            }
            buf
        })
        .collect()
}

//! The cross-format scenarios of SPEC 5.2: what every backend is given.

/// One scenario row of SPEC 5.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Short name for `--scenario` and the JSON output.
    pub name: &'static str,
    /// Row title as in the seed's tables.
    pub title: &'static str,
    /// Number of parameters.
    pub params: usize,
    /// Sizing hint given to messageframe (`FrameConfig::for_params`).
    pub hint: Option<usize>,
    /// Attachment size in bytes (0 for none).
    pub attachment: usize,
    /// Iterations of a full run (`--quick` divides by 100).
    pub iterations: u64,
}

/// The 1 MiB attachment of the attachment scenario.
pub const ATTACHMENT_BYTES: usize = 1 << 20;

/// Every scenario of SPEC 5.2, in table order.
pub const SCENARIOS: [Scenario; 8] = [
    Scenario {
        name: "small",
        title: "Small frame (4 params)",
        params: 4,
        hint: None,
        attachment: 0,
        iterations: 200_000,
    },
    Scenario {
        name: "medium",
        title: "Medium frame (32 params)",
        params: 32,
        hint: None,
        attachment: 0,
        iterations: 100_000,
    },
    Scenario {
        name: "vector-ceiling",
        title: "Vector ceiling (127 params)",
        params: 127,
        hint: None,
        attachment: 0,
        iterations: 50_000,
    },
    Scenario {
        name: "hash-map",
        title: "Hash-map mode (150 params)",
        params: 150,
        hint: None,
        attachment: 0,
        iterations: 50_000,
    },
    Scenario {
        name: "hash-map-hint",
        title: "Hash-map mode + hint (150 params)",
        params: 150,
        hint: Some(150),
        attachment: 0,
        iterations: 50_000,
    },
    Scenario {
        name: "large",
        title: "Large frame (1,024 params)",
        params: 1024,
        hint: None,
        attachment: 0,
        iterations: 10_000,
    },
    Scenario {
        name: "large-hint",
        title: "Large frame + hint (1,024 params)",
        params: 1024,
        hint: Some(1024),
        attachment: 0,
        iterations: 10_000,
    },
    Scenario {
        name: "attachment",
        title: "1 MiB attachment (4 params)",
        params: 4,
        hint: None,
        attachment: ATTACHMENT_BYTES,
        iterations: 2_000,
    },
];

/// A parameter value as the scenario defines it.
#[derive(Debug, Clone, PartialEq)]
pub enum InputValue {
    /// `k * 1.5` for `k % 4 == 0`.
    Double(f64),
    /// `k * 1000` for `k % 4 == 1`.
    Int(i64),
    /// `k % 3 == 0` for `k % 4 == 2`.
    Bool(bool),
    /// `"value_{k}"` for `k % 4 == 3`.
    Str(String),
}

impl InputValue {
    /// The value of parameter `k` (SPEC 5.2: depends only on `k`).
    #[must_use]
    pub fn for_index(k: usize) -> Self {
        match k % 4 {
            0 => InputValue::Double(k as f64 * 1.5),
            1 => InputValue::Int(k as i64 * 1000),
            2 => InputValue::Bool(k % 3 == 0),
            _ => InputValue::Str(format!("value_{k}")),
        }
    }

    /// The read-back fingerprint of this value (see [`Probe`]).
    #[must_use]
    pub fn fingerprint(&self) -> u64 {
        match self {
            InputValue::Double(v) => fp_double(*v),
            InputValue::Int(v) => fp_int(*v),
            InputValue::Bool(v) => fp_bool(*v),
            InputValue::Str(s) => fp_str(s),
        }
    }
}

/// Fingerprint of a double read back.
#[inline]
#[must_use]
pub fn fp_double(v: f64) -> u64 {
    v.to_bits() ^ 0x1000_0000_0000_0000
}
/// Fingerprint of an integer read back.
#[inline]
#[must_use]
pub fn fp_int(v: i64) -> u64 {
    (v as u64) ^ 0x2000_0000_0000_0000
}
/// Fingerprint of a bool read back.
#[inline]
#[must_use]
pub fn fp_bool(v: bool) -> u64 {
    u64::from(v) ^ 0x3000_0000_0000_0000
}
/// Fingerprint of a string read back: its length and first and last bytes,
/// enough to prove it was decoded without hashing it (which would add work
/// the backends do not do).
#[inline]
#[must_use]
pub fn fp_str(s: &str) -> u64 {
    let b = s.as_bytes();
    let first = b.first().copied().unwrap_or(0);
    let last = b.last().copied().unwrap_or(0);
    (b.len() as u64) ^ (u64::from(first) << 32) ^ (u64::from(last) << 40) ^ 0x4000_0000_0000_0000
}

/// What a backend's deserialize phase reads back: the last parameter's value
/// (looked up by key, the way each format is normally queried) and the
/// attachment's length. Returned and `black_box`ed so that nothing is
/// optimised away, and checked once against the inputs before timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Probe {
    /// Fingerprint of the value read back (0 if the key was not found).
    pub value: u64,
    /// Attachment length read back (0 if none).
    pub attachment: usize,
}

/// The scenario's inputs, pre-built once outside the timed loops and shared
/// by every backend: names are formatted once, values are computed once.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// `d{k%8}` for each parameter (messageframe's device).
    pub devices: Vec<String>,
    /// `p{k}` for each parameter (messageframe's parameter name).
    pub params: Vec<String>,
    /// `d{k%8}.p{k}`, the flat key the other formats use.
    pub flat: Vec<String>,
    /// The value of each parameter.
    pub values: Vec<InputValue>,
    /// The attachment, if the scenario has one (`0xAB` bytes).
    pub attachment: Option<Vec<u8>>,
    /// messageframe's sizing hint.
    pub hint: Option<usize>,
}

/// Name of the attachment (messageframe) and of the attachment field (the
/// other formats).
pub const ATTACHMENT_NAME: &str = "iq";

impl Inputs {
    /// The inputs of a scenario.
    #[must_use]
    pub fn new(s: &Scenario) -> Self {
        let n = s.params;
        Inputs {
            devices: (0..n).map(|k| format!("d{}", k % 8)).collect(),
            params: (0..n).map(|k| format!("p{k}")).collect(),
            flat: (0..n).map(|k| format!("d{}.p{k}", k % 8)).collect(),
            values: (0..n).map(InputValue::for_index).collect(),
            attachment: (s.attachment > 0).then(|| vec![0xAB; s.attachment]),
            hint: s.hint,
        }
    }

    /// Number of parameters.
    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no parameters.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The probe every backend must read back.
    #[must_use]
    pub fn expected_probe(&self) -> Probe {
        Probe {
            value: self.values.last().map_or(0, InputValue::fingerprint),
            attachment: self.attachment.as_ref().map_or(0, Vec::len),
        }
    }
}

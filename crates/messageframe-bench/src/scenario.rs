//! The cross-format scenarios: what every backend is given.
//!
//! Two workloads:
//! - the *synthetic* one of SPEC 5.2 (N parameters, device `d{k%8}`, name
//!   `p{k}`, the value type cycling with `k % 4`), with one change the
//!   benchmark issue asks for: doubles are `k * 1.5 + 0.25`, never integral.
//!   With `k * 1.5` every double was a multiple of 6, which the MessagePack
//!   backends write as a 1–3 byte integer while prost writes 8 bytes and
//!   JSON `6.0`: data that flattered MessagePack;
//! - the *telemetry* one, shaped like the SDR example: 64 parameters over 8
//!   devices, key parts of 4 to 32 bytes (a few not ASCII), frequencies,
//!   levels and voltages as non-integral doubles, counters near 2^40,
//!   status strings of 5 to 40 bytes, and a 16 KiB spectrum attachment.

/// Which message a scenario builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// SPEC 5.2's generated parameters (see the module docs).
    Synthetic,
    /// The SDR-shaped telemetry message ([`TELEMETRY`]).
    Telemetry,
}

/// One scenario row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Short name for `--scenario` and the JSON output.
    pub name: &'static str,
    /// Row title.
    pub title: &'static str,
    /// Which message.
    pub workload: Workload,
    /// Number of parameters.
    pub params: usize,
    /// Sizing hint given to messageframe (`FrameConfig::for_params`).
    pub hint: Option<usize>,
    /// Attachment size in bytes (0 for none).
    pub attachment: usize,
    /// Iterations of a full run, at most (`--quick` divides by 100; a slow
    /// backend runs fewer, see `runner`).
    pub iterations: u64,
}

/// The 1 MiB attachment of the attachment scenario.
pub const ATTACHMENT_BYTES: usize = 1 << 20;

/// The telemetry scenario's spectrum: 4,096 little-endian f32 bins.
pub const SPECTRUM_BYTES: usize = 16 << 10;

const fn synthetic(
    name: &'static str,
    title: &'static str,
    params: usize,
    hint: Option<usize>,
    attachment: usize,
    iterations: u64,
) -> Scenario {
    Scenario {
        name,
        title,
        workload: Workload::Synthetic,
        params,
        hint,
        attachment,
        iterations,
    }
}

/// Every scenario, in table order: SPEC 5.2's eight, then telemetry.
pub const SCENARIOS: [Scenario; 9] = [
    synthetic("small", "Small frame (4 params)", 4, None, 0, 200_000),
    synthetic("medium", "Medium frame (32 params)", 32, None, 0, 100_000),
    synthetic(
        "vector-ceiling",
        "Vector ceiling (127 params)",
        127,
        None,
        0,
        50_000,
    ),
    synthetic(
        "hash-map",
        "Hash-map mode (150 params)",
        150,
        None,
        0,
        50_000,
    ),
    synthetic(
        "hash-map-hint",
        "Hash-map mode + hint (150 params)",
        150,
        Some(150),
        0,
        50_000,
    ),
    synthetic("large", "Large frame (1,024 params)", 1024, None, 0, 10_000),
    synthetic(
        "large-hint",
        "Large frame + hint (1,024 params)",
        1024,
        Some(1024),
        0,
        10_000,
    ),
    synthetic(
        "attachment",
        "1 MiB attachment (4 params)",
        4,
        None,
        ATTACHMENT_BYTES,
        2_000,
    ),
    Scenario {
        name: "telemetry",
        title: "Telemetry (64 params, 16 KiB spectrum)",
        workload: Workload::Telemetry,
        params: TELEMETRY.len() * 8,
        hint: None,
        attachment: SPECTRUM_BYTES,
        iterations: 50_000,
    },
];

/// A parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum InputValue {
    /// A double (never integral in any scenario).
    Double(f64),
    /// An int64.
    Int(i64),
    /// A bool.
    Bool(bool),
    /// A string.
    Str(String),
}

impl InputValue {
    /// The synthetic value of parameter `k` (depends only on `k`).
    #[must_use]
    pub fn for_index(k: usize) -> Self {
        match k % 4 {
            0 => InputValue::Double(k as f64 * 1.5 + 0.25),
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

/// A telemetry parameter's value, as written in [`TELEMETRY`].
#[derive(Debug, Clone, Copy)]
pub enum TV {
    /// Double.
    D(f64),
    /// Int64.
    I(i64),
    /// Bool.
    B(bool),
    /// String.
    S(&'static str),
}

const C40: i64 = 1 << 40;

/// The telemetry message: 8 devices of 8 parameters each.
pub const TELEMETRY: [(&str, [(&str, TV); 8]); 8] = [
    (
        "sdr_rx_1",
        [
            ("center_freq_hz", TV::D(433_920_012.5)),
            ("sample_rate_sps", TV::D(2_400_000.5)),
            ("rx_gain_db", TV::D(38.6)),
            ("rssi_dbm", TV::D(-87.25)),
            ("samples_received", TV::I(C40 + 123_456_789)),
            ("overflow_count", TV::I(17)),
            ("agc_enabled", TV::B(true)),
            ("status", TV::S("locked, streaming")),
        ],
    ),
    (
        "sdr_tx_2",
        [
            ("center_freq_hz", TV::D(868_300_007.75)),
            ("tx_power_dbm", TV::D(14.25)),
            ("pa_temperature_c", TV::D(51.375)),
            ("vswr", TV::D(1.35)),
            ("samples_sent", TV::I(C40 + 987_654_321)),
            ("underrun_count", TV::I(3)),
            ("tx_enabled", TV::B(false)),
            ("status", TV::S("idle: waiting for schedule slot")),
        ],
    ),
    (
        "gnss",
        [
            ("latitude_deg", TV::D(48.137_154_3)),
            ("longitude_deg", TV::D(11.575_382_1)),
            ("altitude_m", TV::D(519.62)),
            ("hdop", TV::D(0.87)),
            ("satellites_used", TV::I(11)),
            ("time_of_week_ms", TV::I(345_600_250)),
            ("fix_valid", TV::B(true)),
            ("fix_type", TV::S("3D fix, SBAS corrected")),
        ],
    ),
    (
        "power_supply_main_bus_controller",
        [
            ("bus_voltage_v", TV::D(12.6)),
            ("bus_current_a", TV::D(3.215)),
            ("battery_state_of_charge_percent", TV::D(87.5)),
            ("input_power_w", TV::D(40.5)),
            ("energy_delivered_mwh_total", TV::I(C40 + 42_424_242)),
            ("brownout_events", TV::I(2)),
            ("charging", TV::B(true)),
            ("last_fault", TV::S("overcurrent on rail 3V3 (cleared)")),
        ],
    ),
    (
        "antenna_rotator",
        [
            ("azimuth_deg", TV::D(217.35)),
            ("elevation_deg", TV::D(12.125)),
            ("target_azimuth_deg", TV::D(217.5)),
            ("motor_current_a", TV::D(0.42)),
            ("steps_total", TV::I(C40 + 5_000_001)),
            ("limit_switch_hits", TV::I(4)),
            ("moving", TV::B(true)),
            ("mode", TV::S("tracking")),
        ],
    ),
    (
        "température_boîtier",
        [
            ("capteur_intérieur_°c", TV::D(24.75)),
            ("capteur_extérieur_°c", TV::D(-3.5)),
            ("humidité_relative_%", TV::D(41.2)),
            ("point_de_rosée_°c", TV::D(-9.25)),
            ("cycles_ventilateur", TV::I(1_234_567)),
            ("uptime_s", TV::I(8_640_123)),
            ("ventilateur_actif", TV::B(false)),
            ("état", TV::S("nominal")),
        ],
    ),
    (
        "µwave_link",
        [
            ("link_margin_db", TV::D(6.75)),
            ("snr_db", TV::D(23.4)),
            ("frequency_ghz", TV::D(10.368_125)),
            ("bit_error_rate", TV::D(1.5e-7)),
            ("frames_ok", TV::I(C40 + 777_777)),
            ("frames_crc_error", TV::I(12)),
            ("encrypted", TV::B(true)),
            ("peer", TV::S("relay-station-north-ridge")),
        ],
    ),
    (
        "clock_ref_10mhz",
        [
            ("frequency_offset_ppb", TV::D(-0.125)),
            ("phase_error_ns", TV::D(3.75)),
            ("oven_temperature_c", TV::D(70.0625)),
            ("holdover_s", TV::D(0.5)),
            ("pps_pulses", TV::I(C40 + 86_400)),
            ("lock_loss_count", TV::I(1)),
            ("locked", TV::B(true)),
            ("source", TV::S("GNSS-disciplined OCXO")),
        ],
    ),
];

/// The telemetry scenario's spectrum: 4,096 power bins (f32, dBm) with a
/// noise floor near -100 dBm, deterministic noise and two carriers, so that
/// it compresses like a real spectrum rather than like a run of one byte.
#[must_use]
pub fn spectrum() -> Vec<u8> {
    let bins = SPECTRUM_BYTES / 4;
    let mut state: u32 = 0x9E37_79B9;
    let mut out = Vec::with_capacity(SPECTRUM_BYTES);
    for i in 0..bins {
        // xorshift32: cheap, deterministic noise.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let noise = (state % 1000) as f32 / 250.0 - 2.0;
        let carrier = |centre: f32, height: f32| {
            let d = (i as f32 - centre) / 6.0;
            height / (1.0 + d * d)
        };
        let v = -100.0 + noise + carrier(1200.0, 62.0) + carrier(3100.0, 35.0);
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
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
    fp_bytes(s.as_bytes())
}

/// [`fp_str`] of a string's bytes.
#[inline]
#[must_use]
pub fn fp_bytes(b: &[u8]) -> u64 {
    let first = b.first().copied().unwrap_or(0);
    let last = b.last().copied().unwrap_or(0);
    (b.len() as u64) ^ (u64::from(first) << 32) ^ (u64::from(last) << 40) ^ 0x4000_0000_0000_0000
}

/// What a backend's deserialize phase reads back: the last parameter's value
/// (looked up by key, the way each format is normally queried) and the
/// attachment's length. Returned and `black_box`ed so that nothing is
/// optimised away, and checked against the inputs before timing.
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
    /// Each parameter's device (messageframe's first key part).
    pub devices: Vec<String>,
    /// Each parameter's name (messageframe's second key part).
    pub params: Vec<String>,
    /// `device.param`, the flat key the other formats use.
    pub flat: Vec<String>,
    /// The value of each parameter.
    pub values: Vec<InputValue>,
    /// The attachment, if the scenario has one.
    pub attachment: Option<Vec<u8>>,
    /// The attachment's name in messageframe (`iq` or `spectrum`); the
    /// other formats carry it under [`crate::backends::ATTACHMENT_FIELD`].
    pub attachment_name: &'static str,
    /// messageframe's sizing hint.
    pub hint: Option<usize>,
}

/// Name of the 1 MiB attachment (SPEC 5.2).
pub const ATTACHMENT_NAME: &str = "iq";

/// Name of the telemetry scenario's attachment.
pub const SPECTRUM_NAME: &str = "spectrum";

impl Inputs {
    /// The inputs of a scenario.
    #[must_use]
    pub fn new(s: &Scenario) -> Self {
        match s.workload {
            Workload::Synthetic => {
                let n = s.params;
                Inputs {
                    devices: (0..n).map(|k| format!("d{}", k % 8)).collect(),
                    params: (0..n).map(|k| format!("p{k}")).collect(),
                    flat: (0..n).map(|k| format!("d{}.p{k}", k % 8)).collect(),
                    values: (0..n).map(InputValue::for_index).collect(),
                    attachment: (s.attachment > 0).then(|| vec![0xAB; s.attachment]),
                    attachment_name: ATTACHMENT_NAME,
                    hint: s.hint,
                }
            }
            Workload::Telemetry => {
                let mut i = Inputs {
                    devices: Vec::new(),
                    params: Vec::new(),
                    flat: Vec::new(),
                    values: Vec::new(),
                    attachment: (s.attachment > 0).then(spectrum),
                    attachment_name: SPECTRUM_NAME,
                    hint: s.hint,
                };
                for (device, params) in &TELEMETRY {
                    for (param, v) in params {
                        i.devices.push((*device).to_owned());
                        i.params.push((*param).to_owned());
                        i.flat.push(format!("{device}.{param}"));
                        i.values.push(match *v {
                            TV::D(x) => InputValue::Double(x),
                            TV::I(x) => InputValue::Int(x),
                            TV::B(x) => InputValue::Bool(x),
                            TV::S(x) => InputValue::Str(x.to_owned()),
                        });
                    }
                }
                i
            }
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

    /// The device, parameter and flat key of the last parameter (the one
    /// every backend reads back).
    #[must_use]
    pub fn last_key(&self) -> (&str, &str, &str) {
        let n = self.len() - 1;
        (&self.devices[n], &self.params[n], &self.flat[n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_double_is_integral_in_any_scenario() {
        for s in &SCENARIOS {
            let i = Inputs::new(s);
            assert_eq!(i.len(), s.params, "{}", s.name);
            for (k, v) in i.values.iter().enumerate() {
                if let InputValue::Double(x) = v {
                    assert_ne!(x.fract(), 0.0, "{} param {k}: {x}", s.name);
                }
            }
        }
    }

    #[test]
    fn telemetry_is_shaped_like_the_sdr_example() {
        let s = SCENARIOS.iter().find(|s| s.name == "telemetry").unwrap();
        let i = Inputs::new(s);
        assert_eq!(i.len(), 64);
        let mut devices = i.devices.clone();
        devices.dedup();
        assert_eq!(devices.len(), 8);
        for part in i.devices.iter().chain(&i.params) {
            assert!((4..=32).contains(&part.len()), "{part:?}");
        }
        assert!(i.devices.iter().chain(&i.params).any(|p| !p.is_ascii()));
        let mut flat = i.flat.clone();
        flat.sort();
        flat.dedup();
        assert_eq!(flat.len(), 64, "flat keys are unique");
        for v in &i.values {
            match v {
                InputValue::Str(s) => assert!((5..=40).contains(&s.len()), "{s:?}"),
                InputValue::Int(x) if *x > 1 << 39 => assert!(*x < 1 << 41),
                _ => {}
            }
        }
        assert!(i
            .values
            .iter()
            .any(|v| matches!(v, InputValue::Int(x) if *x > 1 << 40)));
        let a = i.attachment.as_ref().unwrap();
        assert_eq!(a.len(), 16 * 1024);
        assert_eq!(a, &spectrum(), "deterministic");
        let bins: Vec<f32> = a
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert!(bins.iter().all(|v| (-110.0..0.0).contains(v)));
        assert!(bins[1200] > -45.0 && bins[600] < -95.0);
    }
}

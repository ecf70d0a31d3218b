//! Timing and allocation measurement.
//!
//! Each backend is measured in three kinds of loop over the same iterations:
//! - a *total* loop timed once around the whole loop, so the per-message
//!   total carries no per-iteration timer cost (the ratios use it);
//! - a *phase* loop that reads the clock between phases; one clock read
//!   (calibrated in the same run) is subtracted from each phase;
//! - an untimed *allocation* loop with the counting allocator switched on.
//!
//! Timings are the minimum over passes (3 by default), passes interleaved
//! across backends so that a burst of noise on this shared machine hits one
//! pass of every backend rather than every pass of one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::alloc::{self, AllocCount};
use crate::backends::{
    Backend, BackendKind, Json, Mf, MfFresh, MfShared, MfView, Prost, ProstShared, RmpHand,
    RmpvRef, RmpvValue,
};
use crate::order::{OrderBackend, OrderCase};
use crate::scenario::{Inputs, Scenario};

/// Allocations per message in one phase.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct AllocPerOp {
    /// Allocation calls per message.
    pub count: f64,
    /// Bytes allocated per message.
    pub bytes: f64,
}

impl AllocPerOp {
    fn from_total(c: AllocCount, iterations: u64) -> Self {
        let n = iterations.max(1) as f64;
        AllocPerOp {
            count: c.count as f64 / n,
            bytes: c.bytes as f64 / n,
        }
    }
}

/// Allocations per message for each phase.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct PhaseAllocs {
    /// The add phase.
    pub add: AllocPerOp,
    /// The serialize phase.
    pub serialize: AllocPerOp,
    /// The deserialize phase.
    pub deserialize: AllocPerOp,
}

/// One backend's results in one scenario. Times are µs per message.
#[derive(Debug, Clone, Serialize)]
pub struct BackendResult {
    /// Stable identifier ([`BackendKind::id`]).
    pub id: &'static str,
    /// Table label.
    pub label: &'static str,
    /// Full cycle, timed around the whole loop: min over passes.
    pub total_us: f64,
    /// Add phase: min over passes.
    pub add_us: f64,
    /// Serialize phase: min over passes.
    pub serialize_us: f64,
    /// Deserialize phase: min over passes.
    pub deserialize_us: f64,
    /// Every pass's total, for judging the noise.
    pub pass_totals_us: Vec<f64>,
    /// Encoded size in bytes.
    pub wire_bytes: usize,
    /// zstd (level 3) compressed size in bytes.
    pub zstd_bytes: usize,
    /// Heap allocations per message and phase (steady state).
    pub allocs: PhaseAllocs,
}

/// One scenario's results.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    /// [`Scenario::name`].
    pub name: &'static str,
    /// [`Scenario::title`].
    pub title: &'static str,
    /// Parameters.
    pub params: usize,
    /// messageframe's sizing hint.
    pub hint: Option<usize>,
    /// Attachment bytes (0 for none).
    pub attachment_bytes: usize,
    /// Iterations per pass.
    pub iterations: u64,
    /// One `memcpy` of the attachment into a reused buffer, µs (attachment
    /// scenario only): the floor for encoding it.
    pub memcpy_us: Option<f64>,
    /// Every backend measured.
    pub backends: Vec<BackendResult>,
}

impl ScenarioResult {
    /// The result of one backend, if it ran.
    #[must_use]
    pub fn backend(&self, kind: BackendKind) -> Option<&BackendResult> {
        self.backends.iter().find(|b| b.id == kind.id())
    }
}

/// Which backends a scenario runs: the hint scenarios only differ for
/// messageframe (the peers get identical input), and the shared-attachment
/// row only means something with an attachment.
#[must_use]
pub fn backends_for(s: &Scenario) -> Vec<BackendKind> {
    BackendKind::ALL
        .iter()
        .copied()
        .filter(|k| match k {
            BackendKind::MfShared | BackendKind::ProstShared => s.attachment > 0,
            k if s.hint.is_some() => k.is_messageframe(),
            _ => true,
        })
        .collect()
}

/// Cost of one `Instant::now()`, ns: min over 3 rounds of `reads` reads.
#[must_use]
pub fn timer_overhead_ns(reads: u32) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for _ in 0..reads {
            black_box(Instant::now());
        }
        best = best.min(t.elapsed().as_nanos() as f64 / f64::from(reads.max(1)));
    }
    best
}

#[derive(Debug, Clone, Copy)]
struct PassTimes {
    total: Duration,
    add: Duration,
    serialize: Duration,
    deserialize: Duration,
}

fn one_iteration<B: Backend>(b: &mut B, inputs: &Inputs, i: u64) -> crate::scenario::Probe {
    b.add(inputs, i);
    b.serialize(inputs);
    b.deserialize(inputs)
}

/// Warms a backend up and checks that it reads back what was put in.
fn warm_up<B: Backend>(b: &mut B, inputs: &Inputs, kind: BackendKind) {
    for i in 0..2 {
        let got = one_iteration(b, inputs, i);
        assert_eq!(
            got,
            inputs.expected_probe(),
            "{} read back the wrong value",
            kind.id()
        );
    }
}

fn time_pass<B: Backend>(
    mut b: B,
    inputs: &Inputs,
    iterations: u64,
    kind: BackendKind,
) -> PassTimes {
    warm_up(&mut b, inputs, kind);
    let t = Instant::now();
    for i in 0..iterations {
        b.add(inputs, i);
        b.serialize(inputs);
        black_box(b.deserialize(inputs));
    }
    let total = t.elapsed();

    let (mut add, mut ser, mut de) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for i in 0..iterations {
        let t0 = Instant::now();
        b.add(inputs, i);
        let t1 = Instant::now();
        b.serialize(inputs);
        let t2 = Instant::now();
        black_box(b.deserialize(inputs));
        let t3 = Instant::now();
        add += t1 - t0;
        ser += t2 - t1;
        de += t3 - t2;
    }
    PassTimes {
        total,
        add,
        serialize: ser,
        deserialize: de,
    }
}

fn count_allocs<B: Backend>(
    mut b: B,
    inputs: &Inputs,
    iterations: u64,
    kind: BackendKind,
) -> (PhaseAllocs, Vec<u8>) {
    warm_up(&mut b, inputs, kind);
    let (mut add, mut ser, mut de) = (
        AllocCount::default(),
        AllocCount::default(),
        AllocCount::default(),
    );
    alloc::set_counting(true);
    for i in 0..iterations {
        let s0 = alloc::snapshot();
        b.add(inputs, i);
        let s1 = alloc::snapshot();
        b.serialize(inputs);
        let s2 = alloc::snapshot();
        black_box(b.deserialize(inputs));
        let s3 = alloc::snapshot();
        add += s1 - s0;
        ser += s2 - s1;
        de += s3 - s2;
    }
    alloc::set_counting(false);
    let allocs = PhaseAllocs {
        add: AllocPerOp::from_total(add, iterations),
        serialize: AllocPerOp::from_total(ser, iterations),
        deserialize: AllocPerOp::from_total(de, iterations),
    };
    (allocs, b.wire().to_vec())
}

macro_rules! dispatch {
    ($kind:expr, $inputs:expr, $f:ident ( $($arg:expr),* )) => {
        match $kind {
            BackendKind::Mf => $f(Mf::new($inputs), $($arg),*),
            BackendKind::MfView => $f(MfView::new($inputs), $($arg),*),
            BackendKind::MfFresh => $f(MfFresh::new($inputs), $($arg),*),
            BackendKind::MfShared => $f(MfShared::new($inputs), $($arg),*),
            BackendKind::Prost => $f(Prost::new($inputs), $($arg),*),
            BackendKind::ProstShared => $f(ProstShared::new($inputs), $($arg),*),
            BackendKind::Json => $f(Json::new($inputs), $($arg),*),
            BackendKind::RmpvValue => $f(RmpvValue::new($inputs), $($arg),*),
            BackendKind::RmpHand => $f(RmpHand::new($inputs), $($arg),*),
            BackendKind::RmpvRef => $f(RmpvRef::new($inputs), $($arg),*),
        }
    };
}

/// Time of `iterations` copies of `src` into a reused buffer.
fn time_memcpy(src: &[u8], iterations: u64) -> Duration {
    let mut dst: Vec<u8> = Vec::with_capacity(src.len());
    let t = Instant::now();
    for _ in 0..iterations {
        dst.clear();
        dst.extend_from_slice(black_box(src));
        black_box(&mut dst);
    }
    t.elapsed()
}

/// Measurement settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Passes per measurement (the minimum is reported).
    pub passes: u32,
    /// Divisor applied to every iteration count (`--quick` uses 100).
    pub divisor: u64,
    /// Cost of one clock read, subtracted from each timed phase.
    pub timer_ns: f64,
    /// Iterations of the allocation-counting loop (at most the scenario's).
    pub alloc_iterations: u64,
}

fn per_msg_us(d: Duration, iterations: u64) -> f64 {
    d.as_nanos() as f64 / iterations as f64 / 1000.0
}

fn zstd_len(bytes: &[u8]) -> usize {
    zstd::bulk::compress(bytes, 3).map_or(0, |c| c.len())
}

/// Measures one scenario. `progress` receives a short status line.
pub fn run_scenario(
    s: &Scenario,
    set: &Settings,
    progress: &mut dyn FnMut(&str),
) -> ScenarioResult {
    let inputs = Inputs::new(s);
    let iterations = (s.iterations / set.divisor).max(1);
    let kinds = backends_for(s);
    let mut best: Vec<Option<PassTimes>> = vec![None; kinds.len()];
    let mut totals: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    let mut memcpy: Option<Duration> = None;
    let timer = set.timer_ns;

    for pass in 0..set.passes {
        for (slot, &kind) in kinds.iter().enumerate() {
            progress(&format!(
                "{}: pass {}/{} {}",
                s.name,
                pass + 1,
                set.passes,
                kind.id()
            ));
            // The memcpy floor is measured right before messageframe's pass,
            // as often as messageframe's serialize is (once per pass), so
            // both minima come from the same number of samples taken under
            // the same conditions.
            if let (Some(a), BackendKind::Mf) = (&inputs.attachment, kind) {
                let d = time_memcpy(a, iterations);
                memcpy = Some(memcpy.map_or(d, |m: Duration| m.min(d)));
            }
            let t = dispatch!(kind, &inputs, time_pass(&inputs, iterations, kind));
            totals[slot].push(per_msg_us(t.total, iterations));
            best[slot] = Some(match best[slot] {
                None => t,
                Some(b) => PassTimes {
                    total: b.total.min(t.total),
                    add: b.add.min(t.add),
                    serialize: b.serialize.min(t.serialize),
                    deserialize: b.deserialize.min(t.deserialize),
                },
            });
        }
    }

    let alloc_iterations = set.alloc_iterations.min(iterations).max(1);
    let mut backends = Vec::with_capacity(kinds.len());
    for (slot, &kind) in kinds.iter().enumerate() {
        progress(&format!("{}: allocations {}", s.name, kind.id()));
        let (allocs, wire) =
            dispatch!(kind, &inputs, count_allocs(&inputs, alloc_iterations, kind));
        let b = best[slot].expect("at least one pass");
        let phase = |d: Duration| (per_msg_us(d, iterations) - timer / 1000.0).max(0.0);
        backends.push(BackendResult {
            id: kind.id(),
            label: kind.label(),
            total_us: per_msg_us(b.total, iterations),
            add_us: phase(b.add),
            serialize_us: phase(b.serialize),
            deserialize_us: phase(b.deserialize),
            pass_totals_us: totals[slot].clone(),
            wire_bytes: wire.len(),
            zstd_bytes: zstd_len(&wire),
            allocs,
        });
    }

    ScenarioResult {
        name: s.name,
        title: s.title,
        params: s.params,
        hint: s.hint,
        attachment_bytes: s.attachment,
        iterations,
        memcpy_us: memcpy.map(|d| per_msg_us(d, iterations)),
        backends,
    }
}

/// One backend's results for one Order size. Times in ns per operation.
#[derive(Debug, Clone, Serialize)]
pub struct OrderBackendResult {
    /// [`OrderBackend::id`].
    pub id: &'static str,
    /// Table label.
    pub label: &'static str,
    /// Encoded size.
    pub bytes: usize,
    /// zstd (level 3) compressed size.
    pub zstd_bytes: usize,
    /// Encode, ns per operation (min over passes).
    pub encode_ns: f64,
    /// Allocations per encode.
    pub encode_allocs: AllocPerOp,
    /// Decode, ns per operation (min over passes).
    pub decode_ns: f64,
    /// Allocations per decode.
    pub decode_allocs: AllocPerOp,
}

/// Order results for one item count.
#[derive(Debug, Clone, Serialize)]
pub struct OrderResult {
    /// Items in the order.
    pub items: usize,
    /// Iterations per pass.
    pub iterations: u64,
    /// Every backend.
    pub backends: Vec<OrderBackendResult>,
}

/// Iterations per Order size for a full run.
#[must_use]
pub fn order_iterations(items: usize) -> u64 {
    match items {
        0..=1 => 200_000,
        2..=20 => 50_000,
        _ => 2_000,
    }
}

/// The item counts of SPEC 5.3.
pub const ORDER_ITEMS: [usize; 3] = [1, 20, 500];

/// Measures the Order comparison for `items` items.
pub fn run_order(items: usize, set: &Settings, progress: &mut dyn FnMut(&str)) -> OrderResult {
    let mut case = OrderCase::new(items);
    let iterations = (order_iterations(items) / set.divisor).max(1);
    let expected = case.expected_price();
    let mut enc = [f64::INFINITY; OrderBackend::ALL.len()];
    let mut dec = [f64::INFINITY; OrderBackend::ALL.len()];
    for pass in 0..set.passes {
        for (slot, &b) in OrderBackend::ALL.iter().enumerate() {
            progress(&format!(
                "order-{items}: pass {}/{} {}",
                pass + 1,
                set.passes,
                b.id()
            ));
            case.encode(b);
            assert_eq!(
                case.decode(b).to_bits(),
                expected.to_bits(),
                "{} read back the wrong price",
                b.id()
            );
            let t = Instant::now();
            for _ in 0..iterations {
                case.encode(b);
                black_box(&case.buf);
            }
            enc[slot] = enc[slot].min(t.elapsed().as_nanos() as f64 / iterations as f64);
            let t = Instant::now();
            for _ in 0..iterations {
                black_box(case.decode(b));
            }
            dec[slot] = dec[slot].min(t.elapsed().as_nanos() as f64 / iterations as f64);
        }
    }
    let alloc_iterations = set.alloc_iterations.min(iterations).max(1);
    let backends = OrderBackend::ALL
        .iter()
        .enumerate()
        .map(|(slot, &b)| {
            case.encode(b);
            black_box(case.decode(b));
            alloc::set_counting(true);
            let s0 = alloc::snapshot();
            for _ in 0..alloc_iterations {
                case.encode(b);
            }
            let s1 = alloc::snapshot();
            for _ in 0..alloc_iterations {
                black_box(case.decode(b));
            }
            let s2 = alloc::snapshot();
            alloc::set_counting(false);
            OrderBackendResult {
                id: b.id(),
                label: b.label(),
                bytes: case.buf.len(),
                zstd_bytes: zstd_len(&case.buf),
                encode_ns: enc[slot],
                encode_allocs: AllocPerOp::from_total(s1 - s0, alloc_iterations),
                decode_ns: dec[slot],
                decode_allocs: AllocPerOp::from_total(s2 - s1, alloc_iterations),
            }
        })
        .collect();
    OrderResult {
        items,
        iterations,
        backends,
    }
}

/// Time to find the last key of a 1,024-parameter frame, ns (a cross-check
/// of the criterion figure, which is the authoritative one).
#[must_use]
pub fn find_last_ns(divisor: u64, passes: u32) -> f64 {
    let s = crate::scenario::SCENARIOS
        .iter()
        .find(|s| s.params == 1024 && s.hint.is_none())
        .expect("large scenario");
    let inputs = Inputs::new(s);
    let mut frame = messageframe::Frame::new(messageframe::Header::default());
    for ((d, p), v) in inputs
        .devices
        .iter()
        .zip(&inputs.params)
        .zip(&inputs.values)
    {
        frame.add(d, p, crate::backends::mf_value(v));
    }
    let (d, p) = (
        inputs.devices.last().expect("n > 0"),
        inputs.params.last().expect("n > 0"),
    );
    let n = (10_000_000 / divisor).max(1000);
    let mut best = f64::INFINITY;
    for _ in 0..passes {
        let t = Instant::now();
        for _ in 0..n {
            black_box(frame.find(black_box(d), black_box(p)));
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    best
}

//! Timing and allocation measurement.
//!
//! Before anything is timed, each backend builds, encodes and decodes the
//! message once: its bytes are read back with an independent decoder and
//! must carry exactly the inputs (`backends::content`), and its own read
//! back (the probe) must match. Then each backend is measured in three
//! kinds of loop over the same iterations:
//! - a *total* loop timed once around the whole loop, so the per-message
//!   total carries no per-iteration timer cost (the ratios use it);
//! - a *phase* loop that reads the clock between phases; one clock read
//!   (calibrated in the same run) is subtracted from each phase;
//! - an untimed *allocation* loop with the counting allocator switched on.
//!
//! Timings are the minimum over passes (3 by default), passes interleaved
//! across backends and groups so that a burst of noise on a shared machine
//! hits one pass of every backend rather than every pass of one.
//!
//! Iterations: the scenario's count (÷ 100 with `--quick`), or fewer for a
//! backend whose loop would take longer than the loop budget (estimated
//! before timing); never fewer than a minimum. Each backend's count is
//! recorded.

use std::hint::black_box;
use std::time::{Duration, Instant};

use messageframe::Frame;
use serde::{Deserialize, Serialize};

use crate::alloc::{self, AllocCount};
use crate::backends::{content, formats_for, mf, Backend, Format, Group};
use crate::order::{OrderBackend, OrderCase};
use crate::scenario::{Inputs, Scenario};
use crate::with_backend;

/// Allocations per message in one phase.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
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
            count: sig(c.count as f64 / n),
            bytes: sig(c.bytes as f64 / n),
        }
    }
}

/// Allocations per message for each phase.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseAllocs {
    /// The add phase.
    pub add: AllocPerOp,
    /// The serialize phase.
    pub serialize: AllocPerOp,
    /// The deserialize phase.
    pub deserialize: AllocPerOp,
}

impl PhaseAllocs {
    /// All three phases together.
    #[must_use]
    pub fn total(&self) -> AllocPerOp {
        AllocPerOp {
            count: self.add.count + self.serialize.count + self.deserialize.count,
            bytes: self.add.bytes + self.serialize.bytes + self.deserialize.bytes,
        }
    }
}

/// One backend's results in one scenario and group. Times are µs per
/// message.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackendResult {
    /// Stable identifier ([`Format::id`]).
    pub id: String,
    /// The group it ran in.
    pub group: Group,
    /// Table label.
    pub label: String,
    /// Iterations per pass.
    pub iterations: u64,
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

impl BackendResult {
    /// The format, if the id is known.
    #[must_use]
    pub fn format(&self) -> Option<Format> {
        Format::from_id(&self.id)
    }
}

/// messageframe's lookups in one scenario (a new frame per iteration unless
/// said otherwise), via the public `Frame::find`, of the last key.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Lookups {
    /// A new frame, every parameter added (and the attachment copied): µs
    /// per frame, timed around the loop.
    pub build_us: f64,
    /// The same, then one `find`: µs per frame, timed around the loop.
    pub build_find_us: f64,
    /// The first `find` on a frame just built, ns (timed alone, one clock
    /// read subtracted).
    pub first_find_built_ns: f64,
    /// The first `find` on a frame just decoded (`Frame::decode`), ns.
    pub first_find_decoded_ns: f64,
    /// A `find` repeated on one frame, ns (a loop of lookups).
    pub repeated_find_ns: f64,
}

/// One scenario's results.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScenarioResult {
    /// [`Scenario::name`].
    pub name: String,
    /// [`Scenario::title`].
    pub title: String,
    /// Parameters.
    pub params: usize,
    /// messageframe's sizing hint.
    pub hint: Option<usize>,
    /// Attachment bytes (0 for none).
    pub attachment_bytes: usize,
    /// Iterations per pass at most (a slow backend runs fewer).
    pub iterations: u64,
    /// Every backend measured, reused group first.
    pub backends: Vec<BackendResult>,
    /// messageframe's lookups.
    pub lookups: Option<Lookups>,
}

impl ScenarioResult {
    /// The result of one backend in one group, if it ran.
    #[must_use]
    pub fn backend(&self, group: Group, format: Format) -> Option<&BackendResult> {
        self.backends
            .iter()
            .find(|b| b.group == group && b.id == format.id())
    }
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

/// Measurement settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Passes per measurement (the minimum is reported).
    pub passes: u32,
    /// Divisor applied to every iteration count (`--quick` uses 100).
    pub divisor: u64,
    /// Cost of one clock read, subtracted from each timed phase.
    pub timer_ns: f64,
    /// Iterations of the allocation-counting loop (at most the backend's).
    pub alloc_iterations: u64,
    /// Longest a timed loop should take: a slower backend runs fewer
    /// iterations.
    pub loop_budget: Duration,
    /// Fewest iterations of a timed loop.
    pub min_iterations: u64,
}

#[derive(Debug, Clone, Copy)]
struct PassTimes {
    total: Duration,
    add: Duration,
    serialize: Duration,
    deserialize: Duration,
}

impl PassTimes {
    fn min(self, o: PassTimes) -> PassTimes {
        PassTimes {
            total: self.total.min(o.total),
            add: self.add.min(o.add),
            serialize: self.serialize.min(o.serialize),
            deserialize: self.deserialize.min(o.deserialize),
        }
    }
}

#[inline]
fn one_iteration<B: Backend>(b: &mut B, inputs: &Inputs, i: u64) -> crate::scenario::Probe {
    b.add(inputs, i);
    b.serialize(inputs);
    b.deserialize(inputs)
}

/// Checks one message's bytes and read-back, then warms up.
fn check_and_warm<B: Backend>(b: &mut B, inputs: &Inputs, format: Format) -> Vec<u8> {
    let mut wire = Vec::new();
    for i in 0..2 {
        b.add(inputs, i);
        b.serialize(inputs);
        wire = b.wire().to_vec();
        if let Err(e) = content::check(format, &wire, inputs) {
            panic!("{} does not carry the scenario's message: {e}", format.id());
        }
        let got = b.deserialize(inputs);
        let want = inputs.expected_probe();
        let ok = if format.carries_message() {
            got == want
        } else {
            got.attachment == want.attachment
        };
        assert!(ok, "{} read back {got:?}, expected {want:?}", format.id());
    }
    wire
}

/// Checks the backend and picks its iteration count: the loop budget over
/// the estimated time per iteration, within `[min, max]`.
fn prepare<B: Backend>(mut b: B, inputs: &Inputs, format: Format, max: u64, set: &Settings) -> u64 {
    check_and_warm(&mut b, inputs, format);
    let mut n = 1u64;
    let per_iteration = loop {
        let t = Instant::now();
        for i in 0..n {
            black_box(one_iteration(&mut b, inputs, i));
        }
        let d = t.elapsed();
        if d >= set.loop_budget / 16 || n >= max {
            break d.as_secs_f64() / n as f64;
        }
        n = (n * 4).min(max);
    };
    let fit = (set.loop_budget.as_secs_f64() / per_iteration.max(1e-9)) as u64;
    fit.clamp(set.min_iterations.min(max), max)
}

fn time_pass<B: Backend>(mut b: B, inputs: &Inputs, iterations: u64, format: Format) -> PassTimes {
    check_and_warm(&mut b, inputs, format);
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
    format: Format,
) -> (PhaseAllocs, Vec<u8>) {
    let wire = check_and_warm(&mut b, inputs, format);
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
    (allocs, wire)
}

fn per_msg_us(d: Duration, iterations: u64) -> f64 {
    d.as_nanos() as f64 / iterations.max(1) as f64 / 1000.0
}

/// `x` rounded to 6 significant digits. Every figure is stored this way:
/// far finer than the noise, and short enough that its JSON text reads
/// back as exactly the same `f64` (serde_json's default parser is exact
/// for short decimals), so the docs generated from the JSON are the docs
/// generated from the run.
#[must_use]
pub fn sig(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = 5 - x.abs().log10().floor() as i32;
    if e >= 0 {
        let m = 10f64.powi(e);
        (x * m).round() / m
    } else {
        let m = 10f64.powi(-e);
        (x / m).round() * m
    }
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
    let max = (s.iterations / set.divisor).max(1);
    let jobs: Vec<(Group, Format)> = Group::ALL
        .into_iter()
        .flat_map(|g| formats_for(s, g).into_iter().map(move |f| (g, f)))
        .collect();

    let mut iterations = Vec::with_capacity(jobs.len());
    for &(g, f) in &jobs {
        progress(&format!("{}: checking {} ({})", s.name, f.id(), g.id()));
        iterations.push(with_backend!(f, g, &inputs, |b| prepare(
            b, &inputs, f, max, set
        )));
    }

    let mut best: Vec<Option<PassTimes>> = vec![None; jobs.len()];
    let mut totals: Vec<Vec<f64>> = vec![Vec::new(); jobs.len()];
    for pass in 0..set.passes {
        for (slot, &(g, f)) in jobs.iter().enumerate() {
            progress(&format!(
                "{}: pass {}/{} {} ({})",
                s.name,
                pass + 1,
                set.passes,
                f.id(),
                g.id()
            ));
            let n = iterations[slot];
            let t = with_backend!(f, g, &inputs, |b| time_pass(b, &inputs, n, f));
            totals[slot].push(per_msg_us(t.total, n));
            best[slot] = Some(best[slot].map_or(t, |b| b.min(t)));
        }
    }

    let mut backends = Vec::with_capacity(jobs.len());
    for (slot, &(g, f)) in jobs.iter().enumerate() {
        progress(&format!("{}: allocations {} ({})", s.name, f.id(), g.id()));
        let n = iterations[slot];
        let alloc_n = set.alloc_iterations.min(n).max(1);
        let (allocs, wire) = with_backend!(f, g, &inputs, |b| count_allocs(b, &inputs, alloc_n, f));
        let b = best[slot].expect("at least one pass");
        let phase = |d: Duration| sig((per_msg_us(d, n) - set.timer_ns / 1000.0).max(0.0));
        backends.push(BackendResult {
            id: f.id().to_owned(),
            group: g,
            label: f.label().to_owned(),
            iterations: n,
            total_us: sig(per_msg_us(b.total, n)),
            add_us: phase(b.add),
            serialize_us: phase(b.serialize),
            deserialize_us: phase(b.deserialize),
            pass_totals_us: totals[slot].iter().copied().map(sig).collect(),
            wire_bytes: wire.len(),
            zstd_bytes: zstd_len(&wire),
            allocs,
        });
    }

    progress(&format!("{}: lookups", s.name));
    let lookups = Some(lookups(&inputs, max, set));

    ScenarioResult {
        name: s.name.to_owned(),
        title: s.title.to_owned(),
        params: s.params,
        hint: s.hint,
        attachment_bytes: s.attachment,
        iterations: max,
        backends,
        lookups,
    }
}

fn built(inputs: &Inputs) -> Frame {
    let mut f = mf::new_frame(inputs.hint);
    mf::mf_fill(&mut f, inputs);
    f
}

/// Minimum over passes of `run(n)`, a duration for `n` iterations, per
/// iteration in ns; `n` fits the loop budget.
fn min_per_iteration(set: &Settings, max: u64, mut run: impl FnMut(u64) -> Duration) -> f64 {
    let one = run(1).max(Duration::from_nanos(1));
    let fit = (set.loop_budget.as_secs_f64() / one.as_secs_f64()) as u64;
    let n = fit.clamp(set.min_iterations.min(max), max);
    (0..set.passes)
        .map(|_| run(n).as_nanos() as f64 / n as f64)
        .fold(f64::INFINITY, f64::min)
}

/// messageframe's lookups of the last key: after building, after
/// decoding, repeated.
#[must_use]
pub fn lookups(inputs: &Inputs, max: u64, set: &Settings) -> Lookups {
    let (d, p, _) = inputs.last_key();
    let wire = built(inputs).encode().expect("the frame encodes");
    assert!(built(inputs).find(d, p).is_some(), "the last key is found");
    let build_ns = min_per_iteration(set, max, |n| {
        let t = Instant::now();
        for _ in 0..n {
            black_box(built(black_box(inputs)));
        }
        t.elapsed()
    });
    let build_find_ns = min_per_iteration(set, max, |n| {
        let t = Instant::now();
        for _ in 0..n {
            let f = built(black_box(inputs));
            black_box(f.find(black_box(d), black_box(p)));
        }
        t.elapsed()
    });
    let bracketed = |make: &dyn Fn() -> Frame| {
        min_per_iteration(set, max, |n| {
            let mut sum = Duration::ZERO;
            for _ in 0..n {
                let f = make();
                let t = Instant::now();
                black_box(f.find(black_box(d), black_box(p)));
                sum += t.elapsed();
            }
            sum
        }) - set.timer_ns
    };
    let first_built = bracketed(&|| built(black_box(inputs)));
    let first_decoded = bracketed(&|| Frame::decode(black_box(&wire)).expect("valid frame"));
    let frame = built(inputs);
    let repeated = min_per_iteration(set, max * 100, |n| {
        let t = Instant::now();
        for _ in 0..n {
            black_box(frame.find(black_box(d), black_box(p)));
        }
        t.elapsed()
    });
    Lookups {
        build_us: sig(build_ns / 1000.0),
        build_find_us: sig(build_find_ns / 1000.0),
        first_find_built_ns: sig(first_built.max(0.0)),
        first_find_decoded_ns: sig(first_decoded.max(0.0)),
        repeated_find_ns: sig(repeated),
    }
}

/// One backend's results for one Order size. Times in ns per operation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OrderBackendResult {
    /// [`OrderBackend::id`].
    pub id: String,
    /// Table label.
    pub label: String,
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
                id: b.id().to_owned(),
                label: b.label().to_owned(),
                bytes: case.buf.len(),
                zstd_bytes: zstd_len(&case.buf),
                encode_ns: sig(enc[slot]),
                encode_allocs: AllocPerOp::from_total(s1 - s0, alloc_iterations),
                decode_ns: sig(dec[slot]),
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

#[cfg(test)]
mod tests {
    use super::sig;

    #[test]
    fn figures_keep_six_significant_digits_and_read_back_exactly() {
        assert_eq!(sig(14.302388590000001), 14.3024);
        assert_eq!(sig(0.000123456789), 0.000123457);
        assert_eq!(sig(1_234_567.8), 1_234_570.0);
        assert_eq!(sig(0.0), 0.0);
        for x in [
            14.302388590000001,
            0.0594,
            2099.77,
            1e-7 / 3.0,
            98_765_432.1,
            0.1 + 0.2,
        ] {
            let y = sig(x);
            let back: f64 = serde_json::from_str(&serde_json::to_string(&y).unwrap()).unwrap();
            assert_eq!(back.to_bits(), y.to_bits(), "{x} -> {y}");
        }
    }
}

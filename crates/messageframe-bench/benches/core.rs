//! Criterion benches of messageframe's core operations at 4, 32, 127 and
//! 1,024 parameters (SPEC 5.2 inputs) and with the 1 MiB attachment: add,
//! find (first and last key), encode, owned decode, view, header peek; and
//! the first lookup in a frame just built or just decoded (`first_find`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use messageframe::{Frame, FrameView, Header};
use messageframe_bench::backends::mf_fill;
use messageframe_bench::scenario::{Inputs, Scenario, SCENARIOS};

fn cases() -> Vec<(&'static str, Scenario)> {
    let pick = |params: usize, attachment: bool| {
        *SCENARIOS
            .iter()
            .find(|s| s.params == params && s.hint.is_none() && (s.attachment > 0) == attachment)
            .expect("scenario exists")
    };
    vec![
        ("4", pick(4, false)),
        ("32", pick(32, false)),
        ("127", pick(127, false)),
        ("1024", pick(1024, false)),
        ("4+1MiB", pick(4, true)),
    ]
}

fn fill(frame: &mut Frame, inputs: &Inputs) {
    frame.clear();
    mf_fill(frame, inputs);
}

fn core(c: &mut Criterion) {
    for (name, s) in cases() {
        let inputs = Inputs::new(&s);
        let mut frame = Frame::new(Header::new(200, 7, 1, 2));
        fill(&mut frame, &inputs);
        let bytes = frame.encode().unwrap();
        let (first_d, first_p) = (&inputs.devices[0], &inputs.params[0]);
        let n = inputs.len() - 1;
        let (last_d, last_p) = (&inputs.devices[n], &inputs.params[n]);

        let mut g = c.benchmark_group(format!("params={name}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));

        // A reused frame: clear + add every parameter (and the attachment's
        // copy, which the frame owns).
        let mut reused = Frame::new(Header::new(200, 7, 1, 2));
        g.bench_function(BenchmarkId::new("add", name), |b| {
            b.iter(|| fill(&mut reused, black_box(&inputs)));
        });
        g.bench_function(BenchmarkId::new("find_first", name), |b| {
            b.iter(|| black_box(frame.find(black_box(first_d), black_box(first_p))));
        });
        g.bench_function(BenchmarkId::new("find_last", name), |b| {
            b.iter(|| black_box(frame.find(black_box(last_d), black_box(last_p))));
        });
        let mut buf = Vec::with_capacity(bytes.len());
        g.bench_function(BenchmarkId::new("encode", name), |b| {
            b.iter(|| {
                buf.clear();
                black_box(&frame).encode_into(&mut buf).unwrap();
                black_box(buf.len())
            });
        });
        let mut out = Frame::default();
        g.bench_function(BenchmarkId::new("decode_from", name), |b| {
            b.iter(|| {
                out.decode_from(black_box(&bytes)).expect("valid frame");
                black_box(out.len())
            });
        });
        g.bench_function(BenchmarkId::new("view", name), |b| {
            b.iter(|| {
                black_box(
                    FrameView::new(black_box(&bytes))
                        .expect("valid frame")
                        .len(),
                )
            });
        });
        g.bench_function(BenchmarkId::new("peek", name), |b| {
            b.iter(|| black_box(Header::peek(black_box(&bytes)).expect("valid header")));
        });
        g.finish();
    }
}

/// Frames built (or decoded) before each timed batch of first lookups: one
/// lookup per frame, so that every lookup timed is the first in its frame,
/// and several per timer read, so that the clock's own cost (tens of
/// nanoseconds here) is spread. Four 1,024-parameter frames stay in L2.
const FRESH_FRAMES: usize = 4;

/// The first lookup of the last key in a frame just filled by `prepare`
/// (which is not timed), `FRESH_FRAMES` frames per timer read.
fn time_first_finds(
    iters: u64,
    frames: &mut [Frame],
    key: (&str, &str),
    mut prepare: impl FnMut(&mut Frame),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let batch = (iters - done).min(frames.len() as u64) as usize;
        for frame in &mut frames[..batch] {
            prepare(frame);
        }
        let start = Instant::now();
        for frame in &frames[..batch] {
            black_box(frame.find(black_box(key.0), black_box(key.1)));
        }
        total += start.elapsed();
        done += batch as u64;
    }
    total
}

/// The first lookup after building or decoding a frame (issue 14: a frame's
/// first lookup used to scan it), at each size: `build+find` and
/// `decode+find` time the whole cycle (compare with `add` and `decode_from`
/// of the same size), `after_build` and `after_decode` the lookup alone.
fn first_find(c: &mut Criterion) {
    for (name, s) in cases().into_iter().filter(|(_, s)| s.attachment == 0) {
        let inputs = Inputs::new(&s);
        let mut frame = Frame::new(Header::new(200, 7, 1, 2));
        fill(&mut frame, &inputs);
        let bytes = frame.encode().expect("the frame encodes");
        let n = inputs.len() - 1;
        let key = (inputs.devices[n].as_str(), inputs.params[n].as_str());

        let mut g = c.benchmark_group(format!("first_find/params={name}"));
        let mut reused = Frame::new(Header::new(200, 7, 1, 2));
        g.bench_function("build+find", |b| {
            b.iter(|| {
                fill(&mut reused, black_box(&inputs));
                black_box(reused.find(black_box(key.0), black_box(key.1))).is_some()
            });
        });
        g.bench_function("decode+find", |b| {
            b.iter(|| {
                reused.decode_from(black_box(&bytes)).expect("valid frame");
                black_box(reused.find(black_box(key.0), black_box(key.1))).is_some()
            });
        });
        let mut frames: Vec<Frame> = (0..FRESH_FRAMES)
            .map(|_| Frame::new(Header::new(200, 7, 1, 2)))
            .collect();
        g.bench_function("after_build", |b| {
            b.iter_custom(|iters| time_first_finds(iters, &mut frames, key, |f| fill(f, &inputs)));
        });
        g.bench_function("after_decode", |b| {
            b.iter_custom(|iters| {
                time_first_finds(iters, &mut frames, key, |f| {
                    f.decode_from(&bytes).expect("valid frame");
                })
            });
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    // Short runs: this is a shared two-core machine, and the crossbench is
    // the published comparison; these track the core operations over time.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50);
    targets = core, first_find
}
criterion_main!(benches);

//! Criterion benches of messageframe's core operations at 4, 127 and 1,024
//! parameters (SPEC 5.2 inputs) and with the 1 MiB attachment: add, find
//! (first and last key), encode, owned decode, view, header peek.

use std::hint::black_box;
use std::time::Duration;

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
        let bytes = frame.encode();
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
                black_box(&frame).encode_into(&mut buf);
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

criterion_group! {
    name = benches;
    // Short runs: this is a shared two-core machine, and the crossbench is
    // the published comparison; these track the core operations over time.
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50);
    targets = core
}
criterion_main!(benches);

//! Runs one backend's cycle of one scenario in a loop, for a profiler:
//!
//! ```text
//! cargo build --release -p messageframe-bench --example profile_backend
//! valgrind --tool=callgrind target/release/examples/profile_backend medium messageframe 2000
//! ```
//!
//! Instruction counts stay stable on a noisy machine where timings do not;
//! the difference between two iteration counts gives instructions per
//! message. `BACKEND` may also be `find-last`: repeated lookups of the last
//! key of the scenario's frame (built once), the criterion `find_last` case.

use std::hint::black_box;

use messageframe_bench::backends::{
    Backend, BackendKind, Json, Mf, MfFresh, MfShared, MfView, Prost, ProstShared, RmpHand,
    RmpvRef, RmpvValue,
};
use messageframe_bench::scenario::{Inputs, SCENARIOS};

fn drive<B: Backend>(mut b: B, inputs: &Inputs, iterations: u64) {
    for i in 0..iterations {
        b.add(inputs, i);
        b.serialize(inputs);
        black_box(b.deserialize(inputs));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: profile_backend SCENARIO BACKEND ITERATIONS";
    let scenario = SCENARIOS
        .iter()
        .find(|s| Some(s.name) == args.get(1).map(String::as_str))
        .expect(usage);
    let iterations: u64 = args.get(3).and_then(|s| s.parse().ok()).expect(usage);
    let inputs = Inputs::new(scenario);
    if args.get(2).map(String::as_str) == Some("find-last") {
        let mut frame = messageframe::Frame::default();
        for ((d, p), v) in inputs
            .devices
            .iter()
            .zip(&inputs.params)
            .zip(&inputs.values)
        {
            frame.add(d, p, messageframe_bench::backends::mf_value(v));
        }
        let n = inputs.len() - 1;
        for _ in 0..iterations {
            black_box(frame.find(black_box(&inputs.devices[n]), black_box(&inputs.params[n])));
        }
        return;
    }
    let kind = BackendKind::ALL
        .iter()
        .copied()
        .find(|k| Some(k.id()) == args.get(2).map(String::as_str))
        .expect(usage);
    match kind {
        BackendKind::Mf => drive(Mf::new(&inputs), &inputs, iterations),
        BackendKind::MfView => drive(MfView::new(&inputs), &inputs, iterations),
        BackendKind::MfFresh => drive(MfFresh::new(&inputs), &inputs, iterations),
        BackendKind::MfShared => drive(MfShared::new(&inputs), &inputs, iterations),
        BackendKind::Prost => drive(Prost::new(&inputs), &inputs, iterations),
        BackendKind::ProstShared => drive(ProstShared::new(&inputs), &inputs, iterations),
        BackendKind::Json => drive(Json::new(&inputs), &inputs, iterations),
        BackendKind::RmpvValue => drive(RmpvValue::new(&inputs), &inputs, iterations),
        BackendKind::RmpHand => drive(RmpHand::new(&inputs), &inputs, iterations),
        BackendKind::RmpvRef => drive(RmpvRef::new(&inputs), &inputs, iterations),
    }
}

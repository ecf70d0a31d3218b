//! Runs one backend of the Order comparison (SPEC 5.3) in a loop, for a
//! profiler:
//!
//! ```text
//! cargo build --profile profiling -p messageframe-bench --example profile_order
//! valgrind --tool=callgrind target/profiling/examples/profile_order 20 messageframe-serde 2000
//! valgrind --tool=callgrind target/profiling/examples/profile_order 20 messageframe-serde 2000 decode
//! ```
//!
//! `ITEMS` is the order's item count, `BACKEND` an `OrderBackend` id; each
//! iteration encodes and decodes once, or only encodes (`encode`) or only
//! decodes the bytes encoded once before the loop (`decode`), as crossbench
//! times the two phases. The difference between two iteration counts gives
//! instructions per operation.

use std::hint::black_box;

use messageframe_bench::order::{OrderBackend, OrderCase};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: profile_order ITEMS BACKEND ITERATIONS [encode|decode]";
    let items: usize = args.get(1).and_then(|a| a.parse().ok()).expect(usage);
    let backend = OrderBackend::ALL
        .into_iter()
        .find(|b| Some(b.id()) == args.get(2).map(String::as_str))
        .expect(usage);
    let iterations: u64 = args.get(3).and_then(|a| a.parse().ok()).expect(usage);
    let (encode, decode) = match args.get(4).map(String::as_str) {
        None => (true, true),
        Some("encode") => (true, false),
        Some("decode") => (false, true),
        Some(_) => panic!("{usage}"),
    };
    let mut case = OrderCase::new(items);
    case.encode(backend);
    for _ in 0..iterations {
        if encode {
            case.encode(backend);
            black_box(&case.buf);
        }
        if decode {
            black_box(case.decode(backend));
        }
    }
}

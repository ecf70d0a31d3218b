//! The 1 MiB copying path, phase by phase, next to its floors (issue 14):
//! the SPEC 5.2 "4 params + 1 MiB" message, copied in
//! (`add_attachment_copy`) and out (`Frame::decode_from`), with a reused
//! frame, output buffer and decode frame, as the harness's messageframe row
//! runs it.
//!
//! ```text
//! cargo run --release -p messageframe-bench --example attachment_copy [ITERATIONS]
//! ```
//!
//! For each phase it prints the median and minimum time per iteration, the
//! minor page faults and heap allocations per iteration (so that buffers
//! reallocated or returned to the OS show up), and the floors measured the
//! same way in the same process:
//! - `memcpy hot`: one 1 MiB copy between the same two buffers every time
//!   (what the harness's memcpy column measures);
//! - `memcpy rotating`: one 1 MiB copy per phase through the same four
//!   buffers the frame path uses (input → frame → wire → decoded frame), so
//!   the same bytes are in cache as in the frame path;
//! - `rmp write_bin`: rmp's writer of the same bin from the frame's
//!   attachment into a reused buffer (the serialize floor);
//! - `rmp read + copy`: rmp's read functions walking the same wire bytes,
//!   recording the parameters as borrowed slices, then copying the bin once
//!   into a reused buffer (the copying deserialize floor).

use std::hint::black_box;
use std::time::{Duration, Instant};

use messageframe::Frame;
// The harness library installs its counting allocator as the global one.
use messageframe_bench::alloc;
use messageframe_bench::backends::mf_fill;
use messageframe_bench::scenario::{Inputs, SCENARIOS};

/// Minor page faults of this process so far (`/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    rest.split(' ')
        .nth(7)
        .and_then(|f| f.parse().ok())
        .expect("minflt field")
}

/// Times, faults and allocations of one phase over the iterations.
#[derive(Default)]
struct Phase {
    times: Vec<Duration>,
    faults: u64,
    allocs: u64,
    alloc_bytes: u64,
}

/// Whether phases count page faults and allocations (a pass of its own:
/// reading `/proc/self/stat` costs more than the phases themselves).
static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Phase {
    /// Runs `f` once, timed (or, in the counting pass, counted).
    fn run<R>(&mut self, f: impl FnOnce() -> R) -> R {
        if COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            let faults = minor_faults();
            let allocs = alloc::snapshot();
            let r = black_box(f());
            let a = alloc::snapshot() - allocs;
            self.allocs += a.count;
            self.alloc_bytes += a.bytes;
            self.faults += minor_faults() - faults;
            return r;
        }
        let t = Instant::now();
        let r = black_box(f());
        self.times.push(t.elapsed());
        r
    }

    /// Prints the timing and the counts (of `counted` iterations).
    fn print(&mut self, name: &str, counted: u64) {
        self.times.sort();
        let us = |d: Duration| d.as_nanos() as f64 / 1000.0;
        let faults = if name.ends_with("round trip") {
            "       -".to_owned()
        } else {
            format!("{:>8.1}", self.faults as f64 / counted as f64)
        };
        println!(
            "{name:<26} median {:>6.1} µs  min {:>6.1} µs  faults/iter {faults}  allocs/iter {:>4.1} ({:.0} B)",
            us(self.times[self.times.len() / 2]),
            us(self.times[0]),
            self.allocs as f64 / counted as f64,
            self.alloc_bytes as f64 / counted as f64,
        );
    }
}

/// Length of one scalar MessagePack value (the scenario's values).
fn rmp_value_len(b: &[u8]) -> usize {
    match b[0] {
        0x00..=0x7f | 0xc2 | 0xc3 | 0xe0..=0xff => 1,
        0xcb => 9,
        0xca => 5,
        0xcc | 0xd0 => 2,
        0xcd | 0xd1 => 3,
        0xce | 0xd2 => 5,
        0xcf | 0xd3 => 9,
        m @ 0xa0..=0xbf => 1 + usize::from(m & 0x1f),
        0xd9 => 2 + usize::from(b[1]),
        m => panic!("unexpected marker {m:#x}"),
    }
}

/// Writes the scenario's message the way the raw MessagePack floor does:
/// rmp's writers, straight from the inputs (no header, flat keys).
fn rmp_write(inputs: &Inputs, out: &mut Vec<u8>) -> usize {
    use messageframe_bench::scenario::InputValue;
    use rmp::encode as enc;
    out.clear();
    enc::write_map_len(out, inputs.len() as u32 + 1).expect("vec write");
    for (key, v) in inputs.flat.iter().zip(&inputs.values) {
        enc::write_str(out, key).expect("vec write");
        match v {
            InputValue::Double(x) => enc::write_f64(out, *x).expect("vec write"),
            InputValue::Int(i) => drop(enc::write_sint(out, *i).expect("vec write")),
            InputValue::Bool(b) => enc::write_bool(out, *b).expect("vec write"),
            InputValue::Str(s) => enc::write_str(out, s).expect("vec write"),
        }
    }
    enc::write_str(out, "iq").expect("vec write");
    enc::write_bin(out, inputs.attachment.as_deref().expect("attachment")).expect("vec write");
    out.len()
}

/// Reads what [`rmp_write`] wrote with rmp's read functions, recording each
/// value as offsets into the input, then copies the bin once into `out`.
fn rmp_read_floor(wire: &[u8], params: &mut Vec<[usize; 4]>, out: &mut Vec<u8>) -> usize {
    use rmp::decode::{read_bin_len, read_map_len, read_str_len};
    let mut r = wire;
    params.clear();
    let at = |r: &[u8]| wire.len() - r.len();
    let n = read_map_len(&mut r).expect("map");
    for _ in 0..n {
        let len = read_str_len(&mut r).expect("key") as usize;
        let key = at(r);
        r = &r[len..];
        if &wire[key..key + len] == b"iq" {
            let len = read_bin_len(&mut r).expect("bin") as usize;
            out.clear();
            out.extend_from_slice(&r[..len]);
            r = &r[len..];
            continue;
        }
        let value = at(r);
        let value_len = rmp_value_len(r);
        r = &r[value_len..];
        params.push([key, len, value, value_len]);
    }
    params.len()
}

fn main() {
    let iterations: u64 = std::env::args()
        .nth(1)
        .map_or(2000, |a| a.parse().expect("ITERATIONS"));
    let scenario = SCENARIOS
        .iter()
        .find(|s| s.attachment > 0)
        .expect("attachment scenario");
    let inputs = Inputs::new(scenario);
    let (d, p) = (&inputs.devices[3], &inputs.params[3]);
    let src = inputs.attachment.as_deref().expect("attachment");

    let mut frame = Frame::default();
    let mut wire: Vec<u8> = Vec::new();
    let mut out = Frame::default();
    let mut floor_wire: Vec<u8> = Vec::new();
    let mut floor_out: Vec<u8> = Vec::new();
    let mut floor_params: Vec<[usize; 4]> = Vec::new();
    let mut rmp_bin: Vec<u8> = Vec::new();
    let mut hot_dst: Vec<u8> = Vec::new();
    let mut rot = [Vec::<u8>::new(), Vec::new(), Vec::new()];

    // Each pipeline runs in its own turn, one after the other, so that each
    // starts from the cache state the others leave and every copy reads a
    // buffer its own pipeline has just written.
    let mut ph: [Phase; 15] = std::array::from_fn(|_| Phase::default());
    let mut pieces = [Vec::<u8>::new(), Vec::new(), Vec::new()];
    let names = [
        "messageframe: add",
        "messageframe: serialize",
        "messageframe: deserialize",
        "messageframe: round trip",
        "rmp floor: write",
        "rmp floor: read + copy",
        "rmp floor: round trip",
        "rmp write_bin (frame's)",
        "memcpy rotating: in",
        "memcpy rotating: wire",
        "memcpy rotating: out",
        "memcpy hot",
        "64 KiB pieces: in",
        "64 KiB pieces: wire",
        "64 KiB pieces: out",
    ];
    alloc::set_counting(true);
    let warmup = 20;
    let counted = 100;
    let mut counts: Vec<(u64, u64, u64)> = Vec::new();
    for i in 0..warmup + counted + iterations {
        if i == warmup {
            COUNTING.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        if i == warmup + counted {
            COUNTING.store(false, std::sync::atomic::Ordering::Relaxed);
            counts = ph
                .iter()
                .map(|p| (p.faults, p.allocs, p.alloc_bytes))
                .collect();
            ph = std::array::from_fn(|_| Phase::default());
        }
        // The frame path, as the harness's messageframe row runs it.
        let t = Instant::now();
        ph[0].run(|| {
            frame.clear();
            mf_fill(&mut frame, &inputs);
        });
        ph[1].run(|| {
            wire.clear();
            frame.encode_into(&mut wire).expect("the frame encodes");
            wire.len()
        });
        ph[2].run(|| {
            out.decode_from(&wire).expect("valid frame");
            out.find(d, p).is_some()
        });
        if !COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            ph[3].times.push(t.elapsed());
        }
        // The raw MessagePack floor: written from the inputs, read back
        // with borrowed offsets and one copy of the bin.
        let t = Instant::now();
        ph[4].run(|| rmp_write(&inputs, &mut floor_wire));
        ph[5].run(|| rmp_read_floor(&floor_wire, &mut floor_params, &mut floor_out));
        if !COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
            ph[6].times.push(t.elapsed());
        }
        // rmp's writer of the same bin, from a frame's attachment just
        // copied in (the serialize floor under the same conditions).
        frame.clear();
        mf_fill(&mut frame, &inputs);
        ph[7].run(|| {
            let data = frame.attachment("iq").expect("attachment");
            rmp_bin.clear();
            rmp::encode::write_bin(&mut rmp_bin, data).expect("vec write");
            rmp_bin.len()
        });
        // Three memcpys through the frame path's buffers.
        ph[8].run(|| {
            rot[0].clear();
            rot[0].extend_from_slice(black_box(src));
        });
        ph[9].run(|| {
            let (a, b) = rot.split_at_mut(1);
            b[0].clear();
            b[0].extend_from_slice(&a[0]);
        });
        ph[10].run(|| {
            let (a, b) = rot.split_at_mut(2);
            b[0].clear();
            b[0].extend_from_slice(&a[1]);
        });
        // One memcpy between the same two buffers every time.
        ph[11].run(|| {
            hot_dst.clear();
            hot_dst.extend_from_slice(black_box(src));
        });
        // The rotating copies again, each as memcpys of 64 KiB pieces (how
        // the library copies attachments, see wire::write::copy_cached).
        let copy = |dst: &mut Vec<u8>, src: &[u8]| {
            dst.clear();
            src.chunks(64 << 10).for_each(|c| dst.extend_from_slice(c));
        };
        ph[12].run(|| copy(&mut pieces[0], black_box(src)));
        ph[13].run(|| {
            let (a, b) = pieces.split_at_mut(1);
            copy(&mut b[0], &a[0]);
        });
        ph[14].run(|| {
            let (a, b) = pieces.split_at_mut(2);
            copy(&mut b[0], &a[1]);
        });
    }
    alloc::set_counting(false);

    println!(
        "4 params + 1 MiB, copying path: {iterations} timed iterations; faults and allocations counted over {counted} others"
    );
    for ((p, name), (faults, allocs, bytes)) in ph.iter_mut().zip(names).zip(counts) {
        (p.faults, p.allocs, p.alloc_bytes) = (faults, allocs, bytes);
        p.print(name, counted);
    }
    // Ratios of medians (sorted by print): the targets of issue 14.
    let med = |i: usize| ph[i].times[ph[i].times.len() / 2].as_nanos() as f64;
    println!(
        "serialize / rmp write_bin of the same bin: {:.2}x; / memcpy under the same cache conditions (rotating, wire): {:.2}x; / memcpy hot: {:.2}x",
        med(1) / med(7),
        med(1) / med(9),
        med(1) / med(11)
    );
    println!(
        "deserialize / rmp read + copy: {:.2}x; round trip / rmp floor round trip: {:.2}x (three copies against two); round trip / three rotating memcpys: {:.2}x",
        med(2) / med(5),
        med(3) / med(6),
        med(3) / (med(8) + med(9) + med(10))
    );
}

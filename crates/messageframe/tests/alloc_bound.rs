//! The allocation bound of docs/security.md, measured: for an input of `n`
//! bytes, every decoder allocates at most `C * n + K` bytes in all (the sum
//! of the sizes of every allocation and reallocation it makes, so the peak
//! is bounded too), and a decode that fails with `max_alloc_bytes` has
//! allocated at most that budget plus its error value.
//!
//! A counting global allocator (this test binary only) counts the
//! allocations of the current thread between `measure`'s start and stop, so
//! the test harness and the input preparation are not counted. The inputs:
//! the committed fuzz corpus and regressions, the interop frames, and
//! crafted hostile inputs (a map32 claiming 2^32-1 entries, a chain of
//! nested array16 headers, bin32 and str32 headers claiming 4 GiB) as well
//! as the densest frames for each kind of bookkeeping.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashSet;
use std::path::PathBuf;

use common::files_in;
use messageframe::{Bytes, Decoder, Frame, FrameView, Header, Limits};

// For the list of fuzz targets (and so corpus directories) only.
#[path = "../../../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;
mod common;

/// Bytes allocated per input byte, at most (docs/security.md derives it).
const C: usize = 44;
/// Bytes allocated on top of `C * n`, at most.
const K: usize = 1024;

// ---------------------------------------------------------------------------
// The counting allocator

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

struct Counting;

/// Adds an allocation of `size` bytes (and the release of `freed` bytes) to
/// the counters, if counting is on for this thread.
fn record(size: usize, freed: usize) {
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            ALLOCATED.with(|a| a.set(a.get() + size));
            LIVE.with(|l| {
                let live = l.get() + size as isize - freed as isize;
                l.set(live);
                PEAK.with(|p| p.set(p.get().max(live)));
            });
        }
    });
}

fn record_free(size: usize) {
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            LIVE.with(|l| l.set(l.get() - size as isize));
        }
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees hold; the bookkeeping only touches
// thread-local `Cell`s with const initializers, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size(), 0);
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size(), 0);
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record_free(layout.size());
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A reallocation counts as an allocation of the new size.
        record(new_size, layout.size());
        // SAFETY: forwarded unchanged (see above).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What one measured call allocated.
#[derive(Debug, Clone, Copy)]
struct Usage {
    /// Sum of the sizes of all allocations and reallocations.
    total: usize,
    /// Highest number of live bytes above the start.
    peak: usize,
}

/// Runs `f`, counting the allocations of this thread while it runs. The
/// result is dropped after counting stops.
fn measure<R>(f: impl FnOnce() -> R) -> (Usage, R) {
    ALLOCATED.with(|a| a.set(0));
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    COUNTING.with(|c| c.set(true));
    let result = f();
    COUNTING.with(|c| c.set(false));
    let usage = Usage {
        total: ALLOCATED.with(Cell::get),
        peak: PEAK.with(Cell::get).max(0) as usize,
    };
    (usage, result)
}

// ---------------------------------------------------------------------------
// Inputs

const HEADER: [u8; 10] = [0x93, 0x98, 0, 0, 0, 0, 0, 0, 0, 0];

/// The hostile inputs of the issue, and the densest frames for each kind of
/// per-item bookkeeping.
fn crafted() -> Vec<(String, Vec<u8>)> {
    let with_header = |rest: &[u8]| [&HEADER[..], rest].concat();
    let mut out = vec![
        (
            "map32 claiming 2^32-1 entries, 10 bytes".to_owned(),
            vec![0xdf, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00],
        ),
        (
            "frame whose map32 claims 2^32-1 entries".to_owned(),
            with_header(&[0xdf, 0xff, 0xff, 0xff, 0xff]),
        ),
        (
            "bin32 claiming 4 GiB".to_owned(),
            with_header(&[0x80, 0x91, 0x92, 0xa1, b'n', 0xc6, 0xff, 0xff, 0xff, 0xff]),
        ),
        (
            "str32 value claiming 4 GiB".to_owned(),
            with_header(&[0x81, 0xa1, b'k', 0x92, 30, 0xdb, 0xff, 0xff, 0xff, 0xff]),
        ),
        (
            "str32 key claiming 4 GiB".to_owned(),
            with_header(&[0x81, 0xdb, 0xff, 0xff, 0xff, 0xff]),
        ),
        (
            "array32 of attachments claiming 2^32-1".to_owned(),
            with_header(&[0x80, 0xdd, 0xff, 0xff, 0xff, 0xff]),
        ),
    ];

    // 50,000 nested array16 headers in an unknown-tag value, unclosed and
    // closed.
    let mut chain = with_header(&[0x81, 0xa1, b'k', 0x92, 50]);
    for _ in 0..50_000 {
        chain.extend_from_slice(&[0xdc, 0x00, 0x01]);
    }
    out.push((
        "chain of nested array16, unclosed".to_owned(),
        chain.clone(),
    ));
    chain.extend_from_slice(&[0xc0, 0x90]);
    out.push(("chain of nested array16, closed".to_owned(), chain));

    // The densest parameters: 4 bytes each (empty key, [tag, nil]) with an
    // unknown tag (raw arena) or Int64 (no payload), map16 and map32.
    // 1025 = 2^10 + 1 parameters make the raw arena's doubling reach its
    // worst (four times the bytes stored, over all its growth steps) and the
    // lookup index round up to four slots per entry; 897 = 7/8 * 1024 + 1
    // make hashbrown's tables (the strict walk's key set) round up to twice
    // the buckets needed.
    for (count, tag, value) in [
        (1_025u32, 0u8, 0xc0u8),
        (897, 0, 0xc0),
        (5_000u32, 0u8, 0xc0u8),
        (5_000, 10, 0x01),
        (20, 0, 0xc0),
        (9, 10, 0x00),
    ] {
        let mut b = HEADER.to_vec();
        b.push(0xdf);
        b.extend_from_slice(&count.to_be_bytes());
        for _ in 0..count {
            b.extend_from_slice(&[0xa0, 0x92, tag, value]);
        }
        b.push(0x90);
        out.push((
            format!("{count} four-byte parameters, tag {tag}"),
            b.clone(),
        ));
        b.pop();
        out.push((
            format!("{count} four-byte parameters, tag {tag}, truncated"),
            b,
        ));
    }
    // Keys of one byte each, so that the text arena grows too.
    let mut b = HEADER.to_vec();
    b.extend_from_slice(&[0xde, 0x13, 0x88]);
    for k in 0..5_000u32 {
        b.extend_from_slice(&[0xa1, b'a' + (k % 26) as u8, 0x92, 30, 0xa1, b'v']);
    }
    b.push(0x90);
    out.push(("5000 one-byte keys with one-byte strings".to_owned(), b));
    // The densest attachments: 4 bytes each (empty name, empty bin8).
    let mut b = HEADER.to_vec();
    b.extend_from_slice(&[0x80, 0xdd, 0x00, 0x00, 0x13, 0x88]);
    for _ in 0..5_000 {
        b.extend_from_slice(&[0x92, 0xa0, 0xc4, 0x00]);
    }
    out.push(("5000 empty attachments".to_owned(), b));
    let mut b = HEADER.to_vec();
    b.extend_from_slice(&[0x80, 0xdd, 0x00, 0x00, 0x13, 0x88]);
    for _ in 0..5_000 {
        b.extend_from_slice(&[0x92, 0xa1, b'n', 0xc4, 0x01, 0xaa]);
    }
    out.push(("5000 one-byte attachments with names".to_owned(), b));
    out
}

/// Frames of distinct two-byte keys (6 bytes a parameter: the densest
/// frames of distinct keys there are in such numbers), to decode while
/// every key hash collides (`test_hooks::collide_all_hashes`): all but 32
/// keys then go into the lookup index's ordered fallback, whose nodes the
/// bound must cover too. Some end with a repeat of the first key, so that a
/// strict decode fails at the end and its validating walk fills its key set.
#[cfg(feature = "test-hooks")]
fn distinct_keys() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for count in [1_025u32, 897, 5_000] {
        for repeat in [false, true] {
            let mut b = HEADER.to_vec();
            b.push(0xdf);
            b.extend_from_slice(&(count + u32::from(repeat)).to_be_bytes());
            let key = |k: u32| [0xa2, 0x21 + (k / 94) as u8, 0x21 + (k % 94) as u8];
            for k in (0..count).chain(repeat.then_some(0)) {
                b.extend_from_slice(&key(k));
                b.extend_from_slice(&[0x92, 0x00, 0xc0]);
            }
            b.push(0x90);
            out.push((
                format!("{count} distinct two-byte keys, colliding, repeat {repeat}"),
                b,
            ));
        }
    }
    out
}

/// The committed fuzz corpus of every target, the regressions, the interop
/// frames and the crafted inputs, each distinct input once.
fn all_inputs() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let fuzz = root.join("../../fuzz");
    let mut inputs = crafted();
    for target in checks::TARGETS {
        inputs.extend(files_in(&fuzz.join("corpus").join(target)));
    }
    inputs.extend(files_in(&fuzz.join("regressions")));
    inputs.extend(files_in(&root.join("tests/data/interop")));
    let mut seen = HashSet::new();
    inputs.retain(|(_, bytes)| seen.insert(bytes.clone()));
    inputs
}

/// A reused destination with capacity for a few parameters and attachments,
/// so that decoding into it grows its storage (the worst case of growth).
fn reused_frame() -> Frame {
    let mut frame = Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 0, 0));
    for k in 0..10 {
        frame.add("d", &format!("p{k}"), k);
    }
    frame.add("d", "s", "text");
    frame.add_attachment("a", vec![0u8; 4]);
    frame.clear();
    frame
}

// ---------------------------------------------------------------------------
// The measurement

/// Every decoder on `bytes`, with its allocation usage.
fn usages(bytes: &[u8], limits: Limits) -> Vec<(&'static str, Usage)> {
    let dec = Decoder::new().limits(limits);
    let strict = dec.strict(true);
    let shared = Bytes::copy_from_slice(bytes);
    let mut out = Vec::new();

    out.push(("Decoder::decode", measure(|| dec.decode(bytes)).0));
    out.push(("strict decode", measure(|| strict.decode(bytes)).0));
    let mut fresh = Frame::new(Header::from_fields(0, 0, 0, 0, 0, 0, 0, 0));
    out.push((
        "decode_into (fresh frame)",
        measure(|| dec.decode_into(&mut fresh, bytes)).0,
    ));
    let mut reused = reused_frame();
    out.push((
        "decode_into (reused frame)",
        measure(|| dec.decode_into(&mut reused, bytes)).0,
    ));
    let mut reused = reused_frame();
    out.push((
        "decode_shared_into",
        measure(|| dec.decode_shared_into(&mut reused, &shared)).0,
    ));
    out.push(("view", measure(|| dec.view(bytes).map(|v| v.len())).0));
    out.push((
        "strict view",
        measure(|| strict.view(bytes).map(|v| v.len())).0,
    ));
    if let Ok(view) = dec.view(bytes) {
        out.push(("view iter/find/attachments", measure(|| walk_view(&view)).0));
        out.push(("view to_frame", measure(|| view.to_frame()).0));
    }
    out.push(("Header::peek", measure(|| Header::peek(bytes)).0));
    out.push((
        "Header::peek_frame",
        measure(|| Header::peek_frame(bytes)).0,
    ));
    let mut reused = reused_frame();
    out.push((
        "decode_prefix_into loop",
        measure(|| {
            let mut rest = bytes;
            while let Ok(used) = dec.decode_prefix_into(&mut reused, rest) {
                rest = &rest[used..];
                if rest.is_empty() {
                    break;
                }
            }
        })
        .0,
    ));
    out.push((
        "view_prefix loop",
        measure(|| {
            let mut rest = bytes;
            while let Ok(view) = dec.view_prefix(rest) {
                rest = &rest[view.encoded_len()..];
                if rest.is_empty() {
                    break;
                }
            }
        })
        .0,
    ));
    out
}

/// Reads everything through a view: its iterators and lookups allocate
/// nothing.
fn walk_view(view: &FrameView<'_>) -> usize {
    let mut n = 0;
    for (d, p, _) in view.iter() {
        n += usize::from(view.find(d, p).is_some());
    }
    n + view.attachments().count()
}

/// One test function, so that nothing else runs in this binary while the
/// counters are on (they are per thread in any case).
#[test]
fn every_decoder_allocates_at_most_c_n_plus_k_and_respects_max_alloc_bytes() {
    let inputs = all_inputs();
    assert!(inputs.len() > 50, "the corpus was found");

    // Sanity: the counter sees allocations.
    let (usage, v) = measure(|| vec![0u8; 1000]);
    assert!(usage.total >= 1000, "{usage:?}");
    drop(v);

    let mut worst = (0.0f64, String::new());
    for (name, bytes) in &inputs {
        let n = bytes.len();
        for limits in [Limits::default(), Limits::none()] {
            for (decoder, usage) in usages(bytes, limits) {
                assert!(
                    usage.total <= C * n + K,
                    "{decoder} on {name} ({n} bytes) allocated {} bytes (peak {}): more than {C} * n + {K}",
                    usage.total,
                    usage.peak
                );
                assert!(usage.peak <= usage.total);
                let ratio = usage.total.saturating_sub(K) as f64 / n.max(1) as f64;
                if ratio > worst.0 {
                    worst = (ratio, format!("{decoder} on {name} ({n} bytes): {usage:?}"));
                }
            }
        }
    }
    println!("worst (total - K) / n: {:.2} for {}", worst.0, worst.1);
    // Keys whose hashes all collide (the instrumentation needs `std`: the
    // run without it leaves this part out).
    #[cfg(feature = "test-hooks")]
    {
        // Keys whose hashes all collide: the index's ordered fallback holds
        // nearly every key (and takes memory: checked on one input).
        let keys = distinct_keys();
        let strict = Decoder::new().strict(true);
        let (spread, _) = measure(|| strict.decode(&keys[4].1));
        messageframe::test_hooks::collide_all_hashes(true);
        let (colliding, _) = measure(|| strict.decode(&keys[4].1));
        println!(
            "strict decode of {}: {spread:?} spread, {colliding:?} colliding",
            keys[4].0
        );
        assert!(colliding.total > spread.total, "the fallback was allocated");
        let mut worst_colliding = (0.0f64, String::new());
        for (name, bytes) in &keys {
            let n = bytes.len();
            for limits in [Limits::default(), Limits::none()] {
                for (decoder, usage) in usages(bytes, limits) {
                    assert!(
                        usage.total <= C * n + K,
                        "{decoder} on {name} ({n} bytes) allocated {} bytes (peak {}): more than {C} * n + {K}",
                        usage.total,
                        usage.peak
                    );
                    let ratio = usage.total.saturating_sub(K) as f64 / n.max(1) as f64;
                    if ratio > worst_colliding.0 {
                        worst_colliding =
                            (ratio, format!("{decoder} on {name} ({n} bytes): {usage:?}"));
                    }
                }
            }
            for budget in [0, 1000, 10_000, 100_000] {
                let strict = Decoder::new()
                    .strict(true)
                    .limits(Limits::default().max_alloc_bytes(budget));
                let (usage, result) = measure(|| strict.decode(bytes));
                assert_within_budget("strict decode", name, budget, usage, result.err());
                let (usage, result) = measure(|| strict.view(bytes).map(|v| v.len()));
                assert_within_budget("strict view", name, budget, usage, result.err());
            }
        }
        messageframe::test_hooks::collide_all_hashes(false);
        println!(
            "worst with colliding keys: {:.2} for {}",
            worst_colliding.0, worst_colliding.1
        );
    }

    // A decode stopped by max_alloc_bytes has allocated at most the budget,
    // plus its error value.
    for (name, bytes) in &inputs {
        for budget in [0, 64, 1000, 10_000] {
            let dec = Decoder::new().limits(
                Limits::default()
                    .max_alloc_bytes(budget)
                    .max_key_len(BUDGET_TEST_KEY_LEN),
            );
            let strict = dec.strict(true);
            let (usage, result) = measure(|| dec.decode(bytes));
            assert_within_budget("decode", name, budget, usage, result.err());
            let (usage, result) = measure(|| strict.decode(bytes));
            assert_within_budget("strict decode", name, budget, usage, result.err());
            let (usage, result) = measure(|| strict.view(bytes).map(|v| v.len()));
            assert_within_budget("strict view", name, budget, usage, result.err());
            let mut reused = reused_frame();
            let (usage, result) = measure(|| dec.decode_into(&mut reused, bytes));
            assert_within_budget("decode_into", name, budget, usage, result.err());
            let mut reused = reused_frame();
            let (usage, result) = measure(|| strict.decode_into(&mut reused, bytes));
            assert_within_budget("strict decode_into", name, budget, usage, result.err());
        }
    }
}

/// `max_key_len` in the budget check: it bounds the key copied into an
/// error's context.
const BUDGET_TEST_KEY_LEN: usize = 64;

/// What the error value of a failed decode may allocate on top of the
/// budget (docs/security.md): the owned decoder may build two errors (its
/// own, then the one of the validating walk that finds the first error in
/// input order), each a box under 64 bytes and a lossy copy of a key of at
/// most `max_key_len` bytes (up to 3 bytes per invalid byte, built by
/// doubling: under 7 bytes allocated per key byte).
const ERROR_ALLOWANCE: usize = 2 * (64 + 7 * BUDGET_TEST_KEY_LEN);

/// Allocated at most `budget`, plus [`ERROR_ALLOWANCE`] if it failed.
fn assert_within_budget(
    what: &str,
    name: &str,
    budget: usize,
    usage: Usage,
    error: Option<messageframe::DecodeError>,
) {
    let allowance = if error.is_some() { ERROR_ALLOWANCE } else { 0 };
    assert!(
        usage.total <= budget + allowance,
        "{what} on {name} with max_alloc_bytes {budget}: allocated {} bytes ({error:?})",
        usage.total
    );
}

/// Regression: a strict owned decode that fails walks the input a second
/// time to report the first error in input order, and that walk's
/// duplicate-detection set was charged to a fresh budget: the two walks
/// together could allocate twice `max_alloc_bytes`. The second walk now
/// spends what the first one left.
#[test]
fn a_failed_strict_decode_allocates_at_most_max_alloc_bytes_in_all() {
    // 300 parameters d␟p0..d␟p299 = 0, then d␟p0 again.
    let mut bytes = HEADER.to_vec();
    bytes.extend_from_slice(&[0xde, 0x01, 0x2d]); // map16 of 301
    for k in (0..300).chain([0]) {
        let key = format!("d\u{1f}p{k}");
        bytes.push(0xa0 | key.len() as u8);
        bytes.extend_from_slice(key.as_bytes());
        bytes.extend_from_slice(&[0x92, 10, 0x00]);
    }
    bytes.push(0x90);

    let budget = 25_000;
    let unlimited = Decoder::new().strict(true).limits(Limits::none());
    let (usage, result) = measure(|| unlimited.decode(&bytes));
    assert_eq!(
        result.unwrap_err().kind(),
        &messageframe::ErrorKind::DuplicateKey
    );
    assert!(
        usage.total > budget + 128,
        "the input needs more than the budget: {usage:?}"
    );

    let limited = Decoder::new()
        .strict(true)
        .limits(Limits::default().max_alloc_bytes(budget));
    let (usage, result) = measure(|| limited.decode(&bytes));
    let err = result.unwrap_err();
    // The error carries no key: at most two boxes on top of the budget.
    assert!(
        usage.total <= budget + 128,
        "allocated {usage:?} with max_alloc_bytes {budget} ({err:?})"
    );
}

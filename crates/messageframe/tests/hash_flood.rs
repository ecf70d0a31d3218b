//! Hash flooding (issue 10, item 4; docs/security.md, "Hash flooding"): a
//! sender who knows the hash seed sends 100,000 keys chosen to collide.
//! Strict decoding (owned and view) and 100,000 lookups in a frame must
//! still do O(n log n) work. The work is counted, not timed: the
//! `test-hooks` feature (on for this crate's tests) counts every index slot
//! read and every key comparison, and lets a test fix the seed or make
//! every hash collide.
//!
//! Against the index before the probe bound (unbounded linear probing:
//! `MAX_PROBE = usize::MAX` in src/index.rs) these tests fail with
//! billions of probes; see the numbers in docs/security.md. Run with
//! `--nocapture` to see the counts.

// The instrumentation (feature `test-hooks`) needs `std`; the run without
// it (.ci/run) leaves this file out.
#![cfg(feature = "test-hooks")]

use messageframe::test_hooks::{self, Work};
use messageframe::{Context, Decoder, ErrorKind, Frame, FrameView};

/// The seed the attacker knows. Every test of this binary fixes the same
/// one before it hashes anything.
const SEED: u64 = 0x5eed_0fa7_7ac4;

const N: usize = 100_000;

/// Work allowed per operation (a key indexed or looked up) and per log₂ of
/// the key count. What one operation costs under the worst attack (all 64
/// hash bits equal): at most 32 probes and 32 candidate comparisons, then
/// at most 2·log₂(n+1) comparisons in the ordered fallback: 98 at 100,000
/// keys, 5.9·log₂(n). Unbounded linear probing costs up to n per operation.
const C: f64 = 8.0;

/// `ops` operations on `n` keys may cost this much.
fn bound(ops: usize, n: usize) -> u64 {
    (C * ops as f64 * (n as f64).log2()) as u64
}

/// Asserts that `ops` operations on `n` keys did at most [`bound`] work.
fn assert_within_bound(what: &str, ops: usize, n: usize, work: Work) {
    // Shown with --nocapture: docs/security.md quotes these counts.
    println!(
        "{what}: {} probes + {} comparisons = {:.2}·ops·log2(n) ({ops} operations)",
        work.probes,
        work.comparisons,
        work.total() as f64 / (ops as f64 * (n as f64).log2())
    );
    assert!(
        work.total() <= bound(ops, n),
        "{what}: {work:?} for {ops} operations on {n} keys exceeds {C}·ops·log2(n) = {}",
        bound(ops, n)
    );
}

/// `n` distinct parameter names for device `d`, each a 12-digit hex
/// number, chosen (by trying counters in turn) so that the low 18 bits of
/// their hash, which place them in an index of 2¹⁸ slots (the size that
/// holds 100,000 keys) and in every smaller one, fall in one window of
/// 2¹⁴ slots. Linear probing then piles them into one run: the attack on
/// an index whose seed is known.
fn colliding_params(n: usize) -> Vec<String> {
    test_hooks::fix_hash_seed(SEED);
    let mut out = Vec::with_capacity(n);
    let mut counter: u64 = 0;
    while out.len() < n {
        let name = format!("{counter:012x}");
        counter += 1;
        if test_hooks::key_hash("d", &name) & 0x3_ffff < 1 << 14 {
            out.push(name);
        }
    }
    out
}

/// Ordinary names: `p0`, `p1`, ...
fn plain_params(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("p{k}")).collect()
}

/// A frame of device `d` and these parameter names, parameter k holding
/// the integer k, written byte by byte as the attacker would (map32 of
/// fixstr keys), so that no library code runs before the decode.
fn frame_bytes(params: &[String], extra_key: Option<&str>) -> Vec<u8> {
    let mut out = vec![0x93, 0x98, 0, 0, 0, 0, 0, 0, 0, 0];
    let count = params.len() + usize::from(extra_key.is_some());
    out.push(0xdf);
    out.extend_from_slice(&u32::try_from(count).unwrap().to_be_bytes());
    let mut key = |name: &str, value: u32| {
        let len = 2 + name.len();
        assert!(len < 32, "fixstr");
        out.push(0xa0 | len as u8);
        out.extend_from_slice(b"d\x1f");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&[0x92, 0x0a, 0xce]);
        out.extend_from_slice(&value.to_be_bytes());
    };
    for (k, name) in params.iter().enumerate() {
        key(name, k as u32);
    }
    if let Some(name) = extra_key {
        key(name, u32::MAX);
    }
    out.push(0x90);
    out
}

/// Strict owned decode, strict view, and a lenient decode followed by one
/// lookup of every key: each within the bound.
fn check_decoders(what: &str, params: &[String]) {
    let bytes = frame_bytes(params, None);
    let strict = Decoder::new().strict(true);

    test_hooks::reset_work();
    let frame = strict.decode(&bytes).expect("distinct keys decode");
    assert_within_bound(&format!("{what}: strict decode"), N, N, test_hooks::work());
    assert_eq!(frame.len(), N);

    test_hooks::reset_work();
    let view = strict.view(&bytes).expect("distinct keys view");
    assert_within_bound(&format!("{what}: strict view"), N, N, test_hooks::work());
    assert_eq!(view.len(), N);

    test_hooks::reset_work();
    let frame = Frame::decode(&bytes).expect("valid frame");
    for (k, name) in params.iter().enumerate() {
        let v = frame.find("d", name).and_then(|v| v.as_i64());
        assert_eq!(v, Some(k as i64), "{what}: d.{name}");
    }
    assert_eq!(frame.find("d", "absent"), None);
    let work = test_hooks::work();
    // Indexing every key, then looking each up (and one absent key).
    assert_within_bound(&format!("{what}: decode + {N} lookups"), 2 * N + 1, N, work);
}

#[test]
fn keys_crafted_with_the_known_seed_cost_o_n_log_n_to_decode_strictly_and_to_look_up() {
    let params = colliding_params(N);
    check_decoders("crafted keys", &params);
}

#[test]
fn keys_whose_hashes_all_collide_cost_o_n_log_n_to_decode_strictly_and_to_look_up() {
    let params = plain_params(N);
    test_hooks::fix_hash_seed(SEED);
    test_hooks::collide_all_hashes(true);
    check_decoders("all hashes equal", &params);
    test_hooks::collide_all_hashes(false);
}

/// Fills a frame with `add` (which indexes each key from the 65th on) and
/// looks every key up.
fn check_add(what: &str, params: &[String]) {
    test_hooks::reset_work();
    let mut frame = Frame::default();
    for (k, name) in params.iter().enumerate() {
        frame.add("d", name, k as i64);
    }
    for (k, name) in params.iter().enumerate() {
        let v = frame.find("d", name).and_then(|v| v.as_i64());
        assert_eq!(v, Some(k as i64), "{what}: d.{name}");
    }
    let work = test_hooks::work();
    // Indexing every key, then looking each up; debug builds' `add` also
    // looks each key up first (a debug assertion).
    let ops = if cfg!(debug_assertions) { 3 * N } else { 2 * N };
    assert_within_bound(&format!("{what}: add + {N} lookups"), ops, N, work);
}

#[test]
fn a_frame_built_with_colliding_keys_costs_o_n_log_n_to_fill_and_look_up() {
    check_add("crafted keys", &colliding_params(N));
    test_hooks::collide_all_hashes(true);
    check_add("all hashes equal", &plain_params(N));
    test_hooks::collide_all_hashes(false);
}

#[test]
fn duplicates_are_still_found_among_colliding_keys() {
    test_hooks::fix_hash_seed(SEED);
    test_hooks::collide_all_hashes(true);
    let params = plain_params(10_000);
    // The key repeated is one of the last: far past the probe bound, so in
    // the ordered fallback.
    let repeated = params[9_990].clone();
    let bytes = frame_bytes(&params, Some(&repeated));
    let key_at = bytes.len() - 1 - (1 + 2 + repeated.len() + 7);
    let strict = Decoder::new().strict(true);
    for err in [
        strict.decode(&bytes).unwrap_err(),
        strict.view(&bytes).map(|v| v.len()).unwrap_err(),
    ] {
        assert_eq!(err.kind(), &ErrorKind::DuplicateKey);
        assert_eq!(err.offset(), key_at);
        assert_eq!(err.context(), &Context::Key(10_000));
    }
    // Leniently, both entries are kept and lookups find the first.
    let frame = Frame::decode(&bytes).expect("valid frame");
    assert_eq!(frame.len(), 10_001);
    assert_eq!(
        frame.find("d", &repeated).and_then(|v| v.as_i64()),
        Some(9_990)
    );
    let view = FrameView::new(&bytes).expect("valid frame");
    assert_eq!(
        view.find("d", &repeated).and_then(|v| v.as_i64()),
        Some(9_990)
    );
    test_hooks::collide_all_hashes(false);
}

#[test]
fn honest_keys_cost_linear_work() {
    // The bound costs nothing on keys that were not chosen to collide: no
    // more than a few probes and comparisons per key, the four scans a
    // decoded frame's first lookups make before it builds its index
    // included.
    test_hooks::fix_hash_seed(SEED);
    let params = plain_params(N);
    let bytes = frame_bytes(&params, None);
    test_hooks::reset_work();
    let frame = Frame::decode(&bytes).expect("valid frame");
    for name in &params {
        assert!(frame.find("d", name).is_some());
    }
    let work = test_hooks::work();
    assert!(work.total() <= 10 * N as u64, "{work:?}");
}

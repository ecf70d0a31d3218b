//! Instrumentation for the hash-flooding tests, compiled only with the
//! `test-hooks` feature (docs/security.md, "Hash flooding").
//!
//! Without the feature the counting functions below are empty and inline
//! to nothing, and the hash seed is the per-process random one: release
//! builds carry none of this. With it, tests can fix the hash seed (an
//! attacker who knows it), make every key hash collide (an attacker who can
//! find full 64-bit collisions for that seed), and count the work the index
//! does, so that the bound on that work is asserted by counting, not by
//! timing.

/// Counts `n` index slots read (a probe).
#[inline(always)]
pub(crate) fn count_probes(n: usize) {
    #[cfg(feature = "test-hooks")]
    test_hooks::add(&test_hooks::PROBES, n);
    let _ = n;
}

/// Counts `n` key comparisons (equality or order, whatever the key length).
#[inline(always)]
pub(crate) fn count_comparisons(n: usize) {
    #[cfg(feature = "test-hooks")]
    test_hooks::add(&test_hooks::COMPARISONS, n);
    let _ = n;
}

/// Counts `n` parameters read by the serde bridge's reader (at its cursor,
/// by a pass, or to build its lookup).
#[inline(always)]
#[allow(dead_code)] // only the `serde` feature reads parameters this way
pub(crate) fn count_reads(n: usize) {
    #[cfg(feature = "test-hooks")]
    test_hooks::add(&test_hooks::READS, n);
    let _ = n;
}

/// A key's finished hash, or 0 while `test_hooks::collide_all_hashes` is
/// on in this thread.
#[inline(always)]
pub(crate) fn finish_hash(hash: u64) -> u64 {
    #[cfg(feature = "test-hooks")]
    if test_hooks::COLLIDE.with(std::cell::Cell::get) {
        return 0;
    }
    hash
}

/// Hooks for tests of the lookup index under attack (feature `test-hooks`,
/// enabled for the crate's own tests only). Not part of the API.
#[cfg(feature = "test-hooks")]
pub mod test_hooks {
    use std::cell::Cell;
    use std::sync::OnceLock;
    use std::thread::LocalKey;

    use foldhash::SharedSeed;

    /// `None` while the seed is the per-process random one.
    static SEED: OnceLock<(Option<u64>, SharedSeed)> = OnceLock::new();

    thread_local! {
        pub(crate) static PROBES: Cell<u64> = const { Cell::new(0) };
        pub(crate) static COMPARISONS: Cell<u64> = const { Cell::new(0) };
        pub(crate) static READS: Cell<u64> = const { Cell::new(0) };
        pub(crate) static COLLIDE: Cell<bool> = const { Cell::new(false) };
    }

    pub(crate) fn add(counter: &'static LocalKey<Cell<u64>>, n: usize) {
        counter.with(|c| c.set(c.get() + n as u64));
    }

    /// The seed every key hash of this process uses.
    pub(crate) fn seed() -> &'static SharedSeed {
        &SEED
            .get_or_init(|| (None, SharedSeed::global_random().clone()))
            .1
    }

    /// Fixes the seed of every key hash in this process to one derived from
    /// `seed`, as an attacker who learnt it would know it.
    ///
    /// # Panics
    ///
    /// If a key was hashed before with another seed (the random one, or
    /// another fixed one): call it first, with the same value everywhere in
    /// one test binary.
    pub fn fix_hash_seed(seed: u64) {
        let (fixed, _) = SEED.get_or_init(|| (Some(seed), SharedSeed::from_u64(seed)));
        assert_eq!(
            *fixed,
            Some(seed),
            "keys were hashed with another seed before fix_hash_seed"
        );
    }

    /// The hash the lookup index uses for `(device, param)`: what an
    /// attacker who knows the seed can compute.
    #[must_use]
    pub fn key_hash(device: &str, param: &str) -> u64 {
        crate::key::hash_parts(device.as_bytes(), param.as_bytes())
    }

    /// While on (in this thread), every key hashes to 0: all keys collide
    /// in all 64 bits, the strongest attack on a hash index.
    pub fn collide_all_hashes(on: bool) {
        COLLIDE.with(|c| c.set(on));
    }

    /// The index's work counted in this thread since [`reset_work`].
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct Work {
        /// Index slots read.
        pub probes: u64,
        /// Key comparisons: candidate keys checked for equality after a tag
        /// match, keys compared in the ordered fallback, entries compared
        /// by a scan.
        pub comparisons: u64,
        /// Parameters read by the serde bridge's reader (feature `serde`):
        /// at its cursor, by a pass over the frame, or to build its lookup.
        /// Not part of [`total`](Work::total), the index's work.
        pub reads: u64,
    }

    impl Work {
        /// Probes and comparisons together.
        #[must_use]
        pub fn total(&self) -> u64 {
            self.probes + self.comparisons
        }
    }

    /// Sets this thread's counters to zero.
    pub fn reset_work() {
        PROBES.with(|c| c.set(0));
        COMPARISONS.with(|c| c.set(0));
        READS.with(|c| c.set(0));
    }

    /// This thread's counters.
    #[must_use]
    pub fn work() -> Work {
        Work {
            probes: PROBES.with(Cell::get),
            comparisons: COMPARISONS.with(Cell::get),
            reads: READS.with(Cell::get),
        }
    }
}

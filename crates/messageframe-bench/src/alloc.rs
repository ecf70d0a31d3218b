//! A counting global allocator, so that the harness can report heap
//! allocations per phase the way the Go article reports `allocs/op`.
//!
//! Counting is switched on only for the dedicated allocation pass: the timed
//! passes run with it off, where the only cost over the system allocator is
//! one relaxed load of a flag. That keeps the allocation-heavy peers (prost,
//! serde_json, rmpv) from paying for bookkeeping in their timings.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The system allocator with optional counting of allocations and bytes.
#[derive(Debug)]
pub struct CountingAlloc;

static ENABLED: AtomicBool = AtomicBool::new(false);
static COUNT: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

#[inline]
fn record(size: usize) {
    if ENABLED.load(Ordering::Relaxed) {
        COUNT.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: every call forwards to `System` unchanged; the counters are plain
// atomics and never allocate.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A realloc is an allocation as far as the program's cost goes (it
        // may move the block); count the new size, as Go's B/op does.
        record(new_size);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
    }
}

/// Allocations and allocated bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocCount {
    /// Number of `alloc`, `alloc_zeroed` and `realloc` calls.
    pub count: u64,
    /// Bytes requested by those calls.
    pub bytes: u64,
}

impl std::ops::Sub for AllocCount {
    type Output = AllocCount;
    fn sub(self, rhs: AllocCount) -> AllocCount {
        AllocCount {
            count: self.count - rhs.count,
            bytes: self.bytes - rhs.bytes,
        }
    }
}

impl std::ops::AddAssign for AllocCount {
    fn add_assign(&mut self, rhs: AllocCount) {
        self.count += rhs.count;
        self.bytes += rhs.bytes;
    }
}

/// Turns counting on or off (process-wide).
pub fn set_counting(on: bool) {
    ENABLED.store(on, Ordering::SeqCst);
}

/// The counters so far (only what happened while counting was on).
#[must_use]
pub fn snapshot() -> AllocCount {
    AllocCount {
        count: COUNT.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
    }
}

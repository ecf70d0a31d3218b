//! The process-wide budget of buffered bytes: every connection's read
//! buffer is charged here before it grows, and gives its bytes back when it
//! shrinks or closes.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes that the connections of one process may buffer together.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicUsize,
    max: usize,
}

impl Budget {
    pub(crate) fn new(max: usize) -> Budget {
        Budget {
            used: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes `n` bytes; `false` (and nothing taken) if that would pass the
    /// budget.
    #[must_use]
    pub(crate) fn charge(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.max)
            })
            .is_ok()
    }

    /// Gives back `n` bytes taken by [`charge`](Budget::charge).
    pub(crate) fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// Bytes taken now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::Budget;

    #[test]
    fn charges_past_the_budget_are_refused_and_take_nothing() {
        let b = Budget::new(100);
        assert!(b.charge(60));
        assert!(!b.charge(41));
        assert_eq!(b.used(), 60);
        assert!(b.charge(40));
        assert!(!b.charge(1));
        b.release(60);
        assert!(b.charge(50));
        assert_eq!(b.used(), 90);
        assert!(!b.charge(usize::MAX), "no overflow");
    }
}

//! The two cells a frame's lookup index lives in (src/params.rs): the
//! index, built once through `&self` by the first lookup that needs it, and
//! the spare index that build takes its allocation from.
//!
//! With `std` they are `OnceLock` and a `Mutex`, so a frame is `Sync`:
//! threads may look up in a shared frame, and the first to need the index
//! builds it. Without `std` (bare metal, no threads or no OS to block on)
//! they are `core::cell::OnceCell` and `RefCell`: the same behaviour in one
//! thread, at the price that a frame is `Send` but not `Sync`
//! (docs/no_std.md).

#[cfg(feature = "std")]
mod imp {
    use std::sync::{Mutex, MutexGuard, PoisonError};

    pub(crate) use std::sync::OnceLock as Once;

    /// A value taken and put back through `&self` by one caller at a time.
    #[derive(Default)]
    pub(crate) struct Spare<T>(Mutex<T>);

    impl<T> Spare<T> {
        pub(crate) fn new(value: T) -> Self {
            Spare(Mutex::new(value))
        }

        /// A panic while it was held (in an allocation) left a value that is
        /// still a valid, if partly filled, index: keep using it.
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }

        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
        }
    }
}

#[cfg(not(feature = "std"))]
mod imp {
    use core::cell::{RefCell, RefMut};

    pub(crate) use core::cell::OnceCell as Once;

    /// A value taken and put back through `&self` by one caller at a time.
    #[derive(Default)]
    pub(crate) struct Spare<T>(RefCell<T>);

    impl<T> Spare<T> {
        pub(crate) fn new(value: T) -> Self {
            Spare(RefCell::new(value))
        }

        /// Only the index build borrows it, and it never re-enters.
        pub(crate) fn lock(&self) -> RefMut<'_, T> {
            self.0.borrow_mut()
        }

        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut()
        }
    }
}

pub(crate) use imp::{Once, Spare};

//! The one place that chooses between std's and loom's synchronisation types.
//!
//! Everything in the crate that is shared between threads imports from here, so
//! `RUSTFLAGS="--cfg loom" cargo test --test loom` model-checks the real code.

#[cfg(loom)]
#[allow(unused_imports)] // the policies use more of these than the breaker
pub(crate) use loom::sync::{
    atomic::{AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    Arc, Mutex, MutexGuard,
};
#[cfg(not(loom))]
#[allow(unused_imports)] // the policies use more of these than the breaker
pub(crate) use std::sync::{
    atomic::{AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    Arc, Mutex, MutexGuard,
};

/// Locks `m`, ignoring poison: no user code ever runs while a fusebox lock is
/// held, so a poisoned lock can only mean a bug in fusebox itself, and the data
/// it guards is kept consistent by every critical section before it can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// One step of a short wait for another thread (a model-checker yield under loom).
pub(crate) fn spin_wait() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

//! A counting global allocator, for "allocations per call".
//!
//! A binary or test that wants the counts installs it:
//!
//! ```
//! use fusebox_bench::alloc::{count, CountingAlloc};
//!
//! #[global_allocator]
//! static ALLOC: CountingAlloc = CountingAlloc;
//!
//! fn main() {
//!     let (v, allocations) = count(|| vec![7u8; 64]);
//!     assert_eq!(v.len(), 64);
//!     assert_eq!(allocations, 1);
//!     let (_, none) = count(|| v.iter().map(|&b| u64::from(b)).sum::<u64>());
//!     assert_eq!(none, 0);
//! }
//! ```
//!
//! Counts are kept per thread (a `const`-initialised thread-local `Cell`, which
//! never allocates itself), so measuring allocations on one thread is not
//! disturbed by other threads, and counting costs no shared write.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting allocations (and reallocations) per thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

fn bump() {
    // `try_with`: during thread teardown the slot may be gone; such
    // allocations are not ours to count.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to `System` unchanged; the only addition is a
// thread-local counter that does not allocate.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations made so far by the current thread (0 unless [`CountingAlloc`]
/// is the global allocator).
pub fn thread_allocations() -> u64 {
    ALLOCS.try_with(Cell::get).unwrap_or(0)
}

/// Allocations the current thread makes while running `f`.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let before = thread_allocations();
    let r = f();
    (r, thread_allocations() - before)
}

//! The one place that chooses between std's and loom's synchronisation types.
//!
//! Everything in the crate that is shared between threads imports from here, so
//! `RUSTFLAGS="--cfg loom" cargo test --test loom` model-checks the real code.

#[cfg(loom)]
#[allow(unused_imports)] // the policies use more of these than the breaker
pub(crate) use loom::sync::{
    atomic::{AtomicI64, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    Arc, Mutex, MutexGuard,
};
#[cfg(not(loom))]
#[allow(unused_imports)] // the policies use more of these than the breaker
pub(crate) use std::sync::{
    atomic::{AtomicI64, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering},
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

/// Read-locks `l`, ignoring poison (see [`lock`]). For maps that are not
/// modelled under loom, so always std's `RwLock`.
pub(crate) fn read<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

/// Write-locks `l`, ignoring poison (see [`lock`]).
pub(crate) fn write<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

/// A value replaced whole and read lock-free: `arc_swap::ArcSwap` (a read is
/// wait-free and never contends with other reads), a mutex under loom, which
/// cannot model arc-swap's internals.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct Swap<T>(arc_swap::ArcSwap<T>);

/// What [`Swap::load`] returns: derefs (twice) to the value.
#[cfg(not(loom))]
pub(crate) type SwapGuard<T> = arc_swap::Guard<Arc<T>>;
#[cfg(loom)]
pub(crate) type SwapGuard<T> = std::sync::Arc<T>;

#[cfg(not(loom))]
impl<T> Swap<T> {
    /// Holding `value`, which others may hold too.
    pub(crate) fn new(value: Arc<T>) -> Self {
        Swap(arc_swap::ArcSwap::new(value))
    }
    /// The current value; a later `store` does not change what it points at.
    #[inline]
    pub(crate) fn load(&self) -> SwapGuard<T> {
        self.0.load()
    }
    /// The current value, as an `Arc` of its own (one more atomic than
    /// [`Swap::load`]; for values kept past the call).
    pub(crate) fn load_full(&self) -> std::sync::Arc<T> {
        self.0.load_full()
    }
    pub(crate) fn store(&self, value: std::sync::Arc<T>) {
        self.0.store(value)
    }
}

#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct Swap<T>(Mutex<std::sync::Arc<T>>);

#[cfg(loom)]
impl<T> Swap<T> {
    pub(crate) fn new(value: std::sync::Arc<T>) -> Self {
        Swap(Mutex::new(value))
    }
    pub(crate) fn load(&self) -> SwapGuard<T> {
        std::sync::Arc::clone(&lock(&self.0))
    }
    pub(crate) fn store(&self, value: std::sync::Arc<T>) {
        *lock(&self.0) = value;
    }
}

/// An optional value replaced whole and read lock-free, empty without an
/// allocation: `arc_swap::ArcSwapOption` (a null pointer while empty), a
/// mutex under loom (see [`Swap`]).
#[cfg(all(not(loom), feature = "fleet"))]
#[derive(Debug)]
pub(crate) struct SwapOption<T>(arc_swap::ArcSwapOption<T>);

#[cfg(all(not(loom), feature = "fleet"))]
impl<T> SwapOption<T> {
    pub(crate) fn empty() -> Self {
        SwapOption(arc_swap::ArcSwapOption::empty())
    }
    /// The current value; a later `store` does not change what it points at.
    pub(crate) fn load(&self) -> arc_swap::Guard<Option<std::sync::Arc<T>>> {
        self.0.load()
    }
    pub(crate) fn store(&self, value: Option<std::sync::Arc<T>>) {
        self.0.store(value)
    }
}

#[cfg(all(loom, feature = "fleet"))]
#[derive(Debug)]
pub(crate) struct SwapOption<T>(Mutex<Option<std::sync::Arc<T>>>);

#[cfg(all(loom, feature = "fleet"))]
impl<T> SwapOption<T> {
    pub(crate) fn empty() -> Self {
        SwapOption(Mutex::new(None))
    }
    pub(crate) fn load(&self) -> Option<std::sync::Arc<T>> {
        lock(&self.0).clone()
    }
    pub(crate) fn store(&self, value: Option<std::sync::Arc<T>>) {
        *lock(&self.0) = value;
    }
}

/// A box allocated on first use, one pointer wide (`OnceLock<Box<T>>` takes
/// two words): once_cell's `race::OnceBox`, whose `get` is one acquire load.
#[derive(Debug)]
pub(crate) struct LazyBox<T>(once_cell::race::OnceBox<T>);

impl<T> LazyBox<T> {
    pub(crate) const fn new() -> Self {
        LazyBox(once_cell::race::OnceBox::new())
    }

    /// The value, if something made it.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        self.0.get()
    }

    /// The value, made by `make` on first use, out of line (the caller's
    /// path is a load and a test). Two first users may both make one: one
    /// box is kept, the other dropped before either writes to it.
    /// (`make` a closure or a function's name, a zero-sized value: nothing
    /// to pass on the hot path.)
    #[inline]
    pub(crate) fn get_or<F: FnOnce() -> T>(&self, make: F) -> &T {
        match self.0.get() {
            Some(v) => v,
            None => self.make(make),
        }
    }

    #[cold]
    #[inline(never)]
    fn make<F: FnOnce() -> T>(&self, make: F) -> &T {
        self.0.get_or_init(|| Box::new(make()))
    }
}

/// One step of a short wait for another thread (a model-checker yield under loom).
pub(crate) fn spin_wait() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// How many cells a [`Striped`] counter spreads its writers over.
pub(crate) const STRIPES: usize = 4;

/// One atomic per cache line (128 bytes: adjacent-line prefetchers pull pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// A counter written by many threads at once: each thread writes its own
/// cell (chosen once per thread), so writers do not bounce one cache line
/// between cores; readers add the cells up. Introduced where a benchmark
/// showed the single counter dominating the two-thread cost.
///
/// The cells (`STRIPES` cache lines) are allocated on the first write, so a
/// breaker that never counts in them (one that never rejects, or whose rules
/// never record a verdict) carries one pointer instead of half a kilobyte.
/// (Under loom they are allocated with the counter: the models check the
/// protocol, not [`LazyBox`].)
#[derive(Debug)]
pub(crate) struct Striped {
    cells: LazyBox<[Padded<AtomicU64>; STRIPES]>,
}

impl Striped {
    pub(crate) fn new() -> Self {
        let s = Striped {
            cells: LazyBox::new(),
        };
        #[cfg(loom)]
        s.cells();
        s
    }

    /// The cells, allocated by the first write.
    #[inline]
    fn cells(&self) -> &[Padded<AtomicU64>; STRIPES] {
        self.cells
            .get_or(|| std::array::from_fn(|_| Padded(AtomicU64::new(0))))
    }

    /// This thread's cell.
    #[inline]
    pub(crate) fn mine(&self) -> &AtomicU64 {
        // `%`: the stripe is below STRIPES, and a mask costs less than the
        // bounds check.
        &self.cells()[stripe() % STRIPES].0
    }

    /// Every cell, allocated first if they were not (a writer that finds
    /// them is then certain to write where this caller looks).
    pub(crate) fn all(&self) -> impl Iterator<Item = &AtomicU64> {
        self.cells().iter().map(|c| &c.0)
    }

    /// Every cell written so far: none before the first write.
    pub(crate) fn written(&self) -> impl Iterator<Item = &AtomicU64> {
        self.cells
            .get()
            .into_iter()
            .flat_map(|c| c.iter().map(|c| &c.0))
    }

    /// The sum of the cells (wrapping), each read with `order`: 0 before
    /// the first write.
    pub(crate) fn sum(&self, order: Ordering) -> u64 {
        self.written()
            .fold(0u64, |acc, c| acc.wrapping_add(c.load(order)))
    }

    /// The bytes the cells take once written.
    pub(crate) const CELLS_BYTES: usize = size_of::<[Padded<AtomicU64>; STRIPES]>();
}

/// The calling thread's stripe, handed out round-robin on first use.
#[cfg(not(loom))]
#[inline]
pub(crate) fn stripe() -> usize {
    use std::cell::Cell;
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    MINE.with(|m| {
        let s = m.get();
        if s != usize::MAX {
            return s;
        }
        // Relaxed: any spread will do.
        let s = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES;
        m.set(s);
        s
    })
}

/// Under loom every model thread has its own stripe id sequence; one shared
/// cell keeps the models small and still checks the protocol.
#[cfg(loom)]
#[inline]
pub(crate) fn stripe() -> usize {
    0
}

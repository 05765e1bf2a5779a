//! Bulkhead: a limit on how many calls to one dependency are in flight at once.
//!
//! Seed 001's lesson: a slow dependency holds every thread (or task) that calls
//! it, until the whole service is stuck waiting. A bulkhead caps how many calls
//! may be waiting on one dependency, so the rest of the service keeps working.
//!
//! The default is never to queue: [`Bulkhead::try_acquire`] and
//! [`Bulkhead::try_call`] take a slot if one is free and fail at once with
//! [`BulkheadFull`] otherwise. Waiting behind a sick dependency is exactly what
//! a bulkhead is there to prevent, so waiting is opt-in and bounded:
//! [`Builder::max_wait`] lets [`Bulkhead::acquire`] (blocking) and
//! `Bulkhead::acquire_async` (feature `tokio`) wait up to that long.
//!
//! A slot is held by a [`BulkheadPermit`] and given back when the permit is
//! dropped: on return, on `?`, on panic, and when an async call is cancelled.
//!
//! # Design
//!
//! The count of slots in use is one atomic, taken with a compare-and-swap that
//! never goes above the limit, so the non-waiting path takes no lock. Waiters
//! park on a `Condvar` (threads) or a `tokio::sync::Notify` (tasks); a release
//! wakes one of each only when someone is waiting. The loom model in
//! `tests/loom_bulkhead.rs` checks that the limit is never exceeded, that no
//! permit is lost, and that a waiter is never left asleep while a slot is free.
//! Waiters are not served in strict FIFO order: a caller arriving just as a
//! slot frees may take it before a waiter wakes. Waits are short and bounded,
//! so this only reorders calls within one `max_wait`.

// Not in `crate::sync` (yet): only the bulkhead parks threads.
#[cfg(loom)]
use loom::sync::{atomic::fence, Condvar};
#[cfg(not(loom))]
use std::sync::{atomic::fence, Condvar};

use crate::clock::nanos;
use crate::policy::{Mode, ModeCell};
use crate::sync::{lock, Arc, AtomicU64, AtomicUsize, Mutex, Ordering};
use std::fmt;
use std::time::{Duration, Instant};

/// A limit on concurrent calls to one dependency.
///
/// Cheap to clone: clones share the same slots and counters, so hand one clone
/// to every handler that calls the dependency. `Send + Sync + 'static`.
///
/// # Examples
///
/// ```
/// use fusebox::Bulkhead;
///
/// let reviews = Bulkhead::new(2);
/// let a = reviews.try_acquire().unwrap();
/// let _b = reviews.try_acquire().unwrap();
/// let full = reviews.try_acquire().unwrap_err();
/// assert_eq!(full.to_string(), "bulkhead is full (limit 2)");
/// drop(a); // a slot frees as soon as the permit goes
/// assert!(reviews.try_acquire().is_ok());
/// ```
#[derive(Clone)]
pub struct Bulkhead {
    inner: Arc<Inner>,
}

struct Inner {
    /// Changed in place by [`Bulkhead::resize`].
    limit: AtomicUsize,
    /// Nanoseconds; changed in place by [`Bulkhead::set_max_wait`].
    max_wait: AtomicU64,
    name: Option<String>,
    /// Slots in use; never above `limit` but in shadow and off mode.
    in_use: AtomicUsize,
    /// Calls refused (immediately or after waiting `max_wait`).
    rejected: AtomicU64,
    /// The [`Mode`]; changed in place by
    /// [`Bulkhead::set_mode`].
    mode: ModeCell,
    /// Calls admitted over the limit in shadow mode (the bulkhead was full).
    shadowed: AtomicU64,
    /// Threads inside `acquire` that may be parked on `cond`.
    sync_waiters: AtomicUsize,
    /// Guards nothing but the condvar handshake (see `release`).
    lock: Mutex<()>,
    cond: Condvar,
    #[cfg(feature = "tokio")]
    async_waiters: AtomicUsize,
    #[cfg(feature = "tokio")]
    notify: tokio::sync::Notify,
}

/// Builds a [`Bulkhead`]; from [`Bulkhead::builder`].
///
/// # Default
///
/// - `max_wait`: zero (never wait)
/// - `name`: none
/// - `mode`: [`Mode::Enforce`]
///
/// # Examples
///
/// ```
/// use fusebox::Bulkhead;
/// use std::time::Duration;
///
/// let bulkhead = Bulkhead::builder(8)
///     .max_wait(Duration::from_millis(20))
///     .name("reviews")
///     .build();
/// assert_eq!(bulkhead.limit(), 8);
/// assert_eq!(bulkhead.max_wait(), Duration::from_millis(20));
/// assert_eq!(bulkhead.name(), Some("reviews"));
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    limit: usize,
    max_wait: Duration,
    name: Option<String>,
    mode: Mode,
}

impl Builder {
    /// Runs the bulkhead in `mode` (default [`Mode::Enforce`]): in
    /// [`Mode::Shadow`] a call that finds every slot taken runs at once
    /// (never waiting), over the limit, and is counted in
    /// [`BulkheadSnapshot::shadowed`]; in [`Mode::Off`] a call that finds
    /// every slot taken runs at once and nothing is counted. Either way
    /// [`BulkheadSnapshot::in_use`] stays the number of calls in flight, so
    /// it may then exceed the limit. Change the mode live with
    /// [`Bulkhead::set_mode`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, Mode};
    /// let b = Bulkhead::builder(1).mode(Mode::Shadow).build();
    /// let _a = b.try_acquire().unwrap();
    /// let _b = b.try_acquire().unwrap(); // full, but shadow lets it run
    /// let s = b.snapshot();
    /// assert_eq!((s.in_use, s.rejected, s.shadowed), (2, 0, 1));
    /// ```
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// How long [`Bulkhead::acquire`] and `Bulkhead::acquire_async` may wait
    /// for a slot before giving up with [`BulkheadFull`]. Zero (the default)
    /// means never wait. The `try_*` methods never wait, whatever this says.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// use std::time::Duration;
    /// let b = Bulkhead::builder(1).max_wait(Duration::from_millis(5)).build();
    /// assert_eq!(b.max_wait(), Duration::from_millis(5));
    /// ```
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// A name for logs, metrics and error messages.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// let b = Bulkhead::builder(1).name("payments").build();
    /// assert_eq!(b.name(), Some("payments"));
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Builds the bulkhead. Every setting is valid, so this cannot fail.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// let b = Bulkhead::builder(3).build();
    /// assert_eq!(b.snapshot().limit, 3);
    /// ```
    pub fn build(self) -> Bulkhead {
        Bulkhead {
            inner: Arc::new(Inner {
                limit: AtomicUsize::new(self.limit),
                max_wait: AtomicU64::new(nanos(self.max_wait)),
                name: self.name,
                in_use: AtomicUsize::new(0),
                rejected: AtomicU64::new(0),
                mode: ModeCell::new(self.mode),
                shadowed: AtomicU64::new(0),
                sync_waiters: AtomicUsize::new(0),
                lock: Mutex::new(()),
                cond: Condvar::new(),
                #[cfg(feature = "tokio")]
                async_waiters: AtomicUsize::new(0),
                #[cfg(feature = "tokio")]
                notify: tokio::sync::Notify::new(),
            }),
        }
    }
}

impl Bulkhead {
    /// A bulkhead admitting at most `limit` calls at once, never waiting.
    ///
    /// A limit of zero is allowed here and refuses every call (a way to
    /// shed a dependency entirely from code, and a bulkhead that is always
    /// full, for tests). A registry's config refuses it
    /// (`max_concurrent = 0`, see
    /// [`BulkheadConfig::validate`](crate::registry::BulkheadConfig::validate)):
    /// in a file it is far more likely a slip than a wish to refuse every
    /// call for as long as the file is in force.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// assert!(Bulkhead::new(1).try_acquire().is_ok());
    /// assert!(Bulkhead::new(0).try_acquire().is_err());
    /// ```
    pub fn new(limit: usize) -> Self {
        Self::builder(limit).build()
    }

    /// A builder for a bulkhead admitting at most `limit` calls at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// use std::time::Duration;
    /// let b = Bulkhead::builder(4).max_wait(Duration::from_millis(10)).build();
    /// assert_eq!(b.limit(), 4);
    /// ```
    pub fn builder(limit: usize) -> Builder {
        Builder {
            limit,
            max_wait: Duration::ZERO,
            name: None,
            mode: Mode::Enforce,
        }
    }

    /// Takes a slot if one is free; never waits.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when all `limit` slots are taken.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// let b = Bulkhead::new(1);
    /// let permit = b.try_acquire().expect("one slot is free");
    /// assert_eq!(b.try_acquire().unwrap_err().limit(), 1);
    /// drop(permit);
    /// ```
    pub fn try_acquire(&self) -> Result<BulkheadPermit, BulkheadFull> {
        self.take_now().map(|()| self.permit())
    }

    /// Runs `f` if a slot is free, holding the slot until `f` returns or
    /// panics; never waits.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when all slots are taken; `f` is not run.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// let b = Bulkhead::new(1);
    /// assert_eq!(b.try_call(|| 40 + 2), Ok(42));
    /// let _held = b.try_acquire().unwrap();
    /// assert!(b.try_call(|| 0).is_err());
    /// ```
    pub fn try_call<T>(&self, f: impl FnOnce() -> T) -> Result<T, BulkheadFull> {
        let _slot = self.try_slot()?;
        Ok(f())
    }

    /// Takes a slot, blocking the thread up to the configured `max_wait` for
    /// one to free.
    ///
    /// With `max_wait` zero this is [`try_acquire`](Self::try_acquire). Don't
    /// call it from async code: it blocks the thread (use `acquire_async`).
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if no slot freed within `max_wait`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// use std::time::Duration;
    ///
    /// let b = Bulkhead::builder(1).max_wait(Duration::from_secs(5)).build();
    /// let held = b.try_acquire().unwrap();
    /// let b2 = b.clone();
    /// let waiter = std::thread::spawn(move || b2.acquire().map(|_permit| "got it"));
    /// drop(held); // frees the slot; the waiter takes it
    /// assert_eq!(waiter.join().unwrap(), Ok("got it"));
    /// ```
    pub fn acquire(&self) -> Result<BulkheadPermit, BulkheadFull> {
        self.take_blocking().map(|()| self.permit())
    }

    /// A slot borrowed from this handle (no reference count to bump): what
    /// the `*call*` methods and the pipeline hold.
    pub(crate) fn slot(&self) -> Result<Slot<'_>, BulkheadFull> {
        self.take_blocking().map(|()| Slot(&self.inner))
    }

    fn try_slot(&self) -> Result<Slot<'_>, BulkheadFull> {
        self.take_now().map(|()| Slot(&self.inner))
    }

    /// Takes a slot if one is free, never waiting.
    fn take_now(&self) -> Result<(), BulkheadFull> {
        if self.inner.admit() {
            Ok(())
        } else {
            Err(self.reject(Duration::ZERO))
        }
    }

    /// Takes a slot, waiting up to `max_wait` (blocking); a composition
    /// holding it (the pipeline) gives it back with [`give_back`](Self::give_back).
    pub(crate) fn take_blocking(&self) -> Result<(), BulkheadFull> {
        if self.inner.admit() {
            return Ok(());
        }
        let max_wait = self.inner.max_wait();
        if max_wait.is_zero() {
            return Err(self.reject(Duration::ZERO));
        }
        let start = Instant::now();
        let inner = &*self.inner;
        let mut guard = lock(&inner.lock);
        // Relaxed + SeqCst fence, paired with the fence in `release`: either
        // this waiter sees the freed slot in `try_take` below, or the releaser
        // sees `sync_waiters > 0` and notifies (under the lock, so not before
        // we are parked).
        inner.sync_waiters.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let got = loop {
            if inner.admit() {
                break true;
            }
            let waited = start.elapsed();
            if waited >= max_wait {
                break false;
            }
            guard = match inner.cond.wait_timeout(guard, max_wait - waited) {
                Ok((g, _)) => g,
                Err(poisoned) => poisoned.into_inner().0,
            };
        };
        // Relaxed: only makes a later release skip a useless notify.
        inner.sync_waiters.fetch_sub(1, Ordering::Relaxed);
        drop(guard);
        if got {
            Ok(())
        } else {
            Err(self.reject(max_wait))
        }
    }

    /// Runs `f` holding a slot, waiting up to `max_wait` for one (blocking the
    /// thread). The slot is freed when `f` returns or panics.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if no slot freed within `max_wait`; `f` is not run.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// let b = Bulkhead::new(2);
    /// assert_eq!(b.call(|| "ran"), Ok("ran"));
    /// ```
    pub fn call<T>(&self, f: impl FnOnce() -> T) -> Result<T, BulkheadFull> {
        let _slot = self.slot()?;
        Ok(f())
    }

    /// Runs the future holding a slot if one is free now; never waits for a
    /// slot (so it needs no runtime features). The slot is freed when the future
    /// completes or is dropped.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] when all slots are taken; the future is dropped unpolled.
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future frees the slot.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use fusebox::Bulkhead;
    /// let b = Bulkhead::new(1);
    /// assert_eq!(b.try_call_async(async { 7 }).await, Ok(7));
    /// # }
    /// ```
    pub async fn try_call_async<F: std::future::Future>(
        &self,
        fut: F,
    ) -> Result<F::Output, BulkheadFull> {
        let _slot = self.try_slot()?;
        Ok(fut.await)
    }

    /// How many calls may be in flight at once.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Bulkhead::new(6).limit(), 6);
    /// ```
    pub fn limit(&self) -> usize {
        self.inner.limit()
    }

    /// Changes the limit in place, for every clone of this bulkhead. Calls
    /// in flight keep their slots: after a shrink, new calls are admitted
    /// only once fewer than the new limit are in flight; after a growth,
    /// waiting calls are woken to take the new slots.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::Bulkhead::new(1);
    /// let held = b.clone();
    /// let _slot = b.try_acquire()?;
    /// assert!(held.try_acquire().is_err());
    /// b.resize(2);
    /// let _second = held.try_acquire()?;
    /// assert_eq!(held.limit(), 2);
    /// # Ok::<(), fusebox::BulkheadFull>(())
    /// ```
    pub fn resize(&self, limit: usize) {
        // Relaxed: `try_take` re-reads it on every attempt; nothing else is
        // published through it.
        let old = self.inner.limit.swap(limit, Ordering::Relaxed);
        if limit > old {
            self.inner.wake_all();
        }
    }

    /// Changes how long `acquire` / `acquire_async` wait at most, for calls
    /// that start waiting from now on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = fusebox::Bulkhead::new(1);
    /// b.set_max_wait(Duration::from_millis(20));
    /// assert_eq!(b.max_wait(), Duration::from_millis(20));
    /// ```
    pub fn set_max_wait(&self, max_wait: Duration) {
        // Relaxed: read once by each call that may wait.
        self.inner
            .max_wait
            .store(nanos(max_wait), Ordering::Relaxed);
    }

    /// How long `acquire` / `acquire_async` wait at most.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Bulkhead::new(6).max_wait().is_zero());
    /// ```
    pub fn max_wait(&self) -> Duration {
        self.inner.max_wait()
    }

    /// Switches the bulkhead to `mode` in place (see [`Builder::mode`]);
    /// calls in flight keep what they were admitted with.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, Mode};
    /// let b = Bulkhead::new(0);
    /// b.set_mode(Mode::Shadow);
    /// assert!(b.try_call(|| ()).is_ok());
    /// b.set_mode(Mode::Enforce);
    /// assert!(b.try_call(|| ()).is_err());
    /// assert_eq!(b.mode(), Mode::Enforce);
    /// ```
    pub fn set_mode(&self, mode: Mode) {
        // Callers already waiting are woken to
        // read it (a shadow or off bulkhead admits them at once).
        self.inner.mode.set(mode);
        if mode != Mode::Enforce {
            self.inner.wake_all();
        }
    }

    /// The mode in force.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Bulkhead::new(1).mode(), fusebox::Mode::Enforce);
    /// ```
    pub fn mode(&self) -> Mode {
        self.inner.mode()
    }

    /// The name given to the builder, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Bulkhead::new(1).name(), None);
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// Slots in use, the limit, and how many calls were refused so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// let b = Bulkhead::new(1);
    /// let _p = b.try_acquire().unwrap();
    /// let _ = b.try_acquire();
    /// let s = b.snapshot();
    /// assert_eq!((s.in_use, s.limit, s.rejected), (1, 1, 1));
    /// ```
    pub fn snapshot(&self) -> BulkheadSnapshot {
        let inner = &*self.inner;
        // Relaxed: a snapshot is a best-effort reading for monitoring.
        let waiting = inner.sync_waiters.load(Ordering::Relaxed);
        #[cfg(feature = "tokio")]
        let waiting = waiting + inner.async_waiters.load(Ordering::Relaxed);
        BulkheadSnapshot {
            in_use: inner.in_use.load(Ordering::Relaxed),
            limit: inner.limit(),
            rejected: inner.rejected.load(Ordering::Relaxed),
            waiting,
            shadowed: inner.shadowed.load(Ordering::Relaxed),
            mode: inner.mode(),
        }
    }

    fn permit(&self) -> BulkheadPermit {
        BulkheadPermit {
            inner: Arc::clone(&self.inner),
        }
    }

    fn reject(&self, waited: Duration) -> BulkheadFull {
        // Relaxed: a counter read only by snapshots.
        self.inner.rejected.fetch_add(1, Ordering::Relaxed);
        BulkheadFull {
            limit: self.inner.limit(),
            waited,
        }
    }
}

#[cfg(feature = "tokio")]
impl Bulkhead {
    /// Takes a slot, waiting (asynchronously) up to `max_wait` for one to free.
    ///
    /// Uses tokio's timer, so it needs a tokio runtime with time enabled, and it
    /// follows tokio's paused time in tests.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if no slot freed within `max_wait`.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future while it waits holds no slot, and a
    /// wake-up meant for it is passed on to the next waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Bulkhead;
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let b = Bulkhead::builder(1).max_wait(Duration::from_millis(50)).build();
    /// let held = b.try_acquire().unwrap();
    /// // Nobody frees the slot: gives up after 50 ms (of paused time).
    /// let full = b.acquire_async().await.unwrap_err();
    /// assert_eq!(full.waited(), Duration::from_millis(50));
    /// drop(held);
    /// assert!(b.acquire_async().await.is_ok());
    /// # }
    /// ```
    pub async fn acquire_async(&self) -> Result<BulkheadPermit, BulkheadFull> {
        self.take_async().await.map(|()| self.permit())
    }

    /// As [`slot`](Self::slot), waiting asynchronously.
    pub(crate) async fn slot_async(&self) -> Result<Slot<'_>, BulkheadFull> {
        self.take_async().await.map(|()| Slot(&self.inner))
    }

    /// As [`take_blocking`](Self::take_blocking), waiting asynchronously.
    pub(crate) async fn take_async(&self) -> Result<(), BulkheadFull> {
        let inner = &*self.inner;
        if inner.admit() {
            return Ok(());
        }
        let max_wait = inner.max_wait();
        if max_wait.is_zero() {
            return Err(self.reject(Duration::ZERO));
        }
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                // Relaxed: only makes a later release skip a useless notify.
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        // Relaxed + SeqCst fence: the same handshake as `acquire` (see
        // `release`). The check after it is the `try_take` in the loop below.
        inner.async_waiters.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let _waiting = Waiting(&inner.async_waiters);
        let wait = async {
            loop {
                let notified = inner.notify.notified();
                let mut notified = std::pin::pin!(notified);
                // Registered before the check, so a release between the check
                // and the await still wakes us.
                notified.as_mut().enable();
                if inner.admit() {
                    return;
                }
                notified.await;
            }
        };
        match tokio::time::timeout(max_wait, wait).await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.reject(max_wait)),
        }
    }

    /// Runs the future holding a slot, waiting up to `max_wait` for one. The
    /// slot is freed when the future completes or is dropped.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if no slot freed within `max_wait`; the future is
    /// dropped unpolled.
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future at any point frees whatever it holds.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let b = fusebox::Bulkhead::new(3);
    /// assert_eq!(b.call_async(async { "done" }).await, Ok("done"));
    /// # }
    /// ```
    pub async fn call_async<F: std::future::Future>(
        &self,
        fut: F,
    ) -> Result<F::Output, BulkheadFull> {
        let _slot = self.slot_async().await?;
        Ok(fut.await)
    }
}

/// A [`Mode`] as the byte [`Inner::mode`] holds.
impl Inner {
    #[inline]
    fn mode(&self) -> Mode {
        self.mode.get()
    }

    /// Admits a call: a free slot, or (shadow, off) one over the limit.
    #[inline]
    fn admit(&self) -> bool {
        self.try_take() || self.full_but_admitted()
    }

    /// A call that found every slot taken: in shadow mode (counted) and in
    /// off mode it takes a slot over the limit and runs; `false` when
    /// enforcing. Only ever on the full path, so the mode costs the free
    /// path nothing.
    #[cold]
    fn full_but_admitted(&self) -> bool {
        match self.mode() {
            Mode::Enforce => return false,
            // Relaxed: a counter read only by snapshots.
            Mode::Shadow => self.shadowed.fetch_add(1, Ordering::Relaxed),
            Mode::Off => 0,
        };
        // Relaxed: over the limit nothing is handed over between holders
        // (the Acquire of `try_take` is for calls within it); `release`
        // gives it back like any slot.
        self.in_use.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn limit(&self) -> usize {
        // Relaxed: see `Bulkhead::resize`.
        self.limit.load(Ordering::Relaxed)
    }

    fn max_wait(&self) -> Duration {
        // Relaxed: see `Bulkhead::set_max_wait`.
        Duration::from_nanos(self.max_wait.load(Ordering::Relaxed))
    }

    /// Wakes every waiter (the limit grew).
    fn wake_all(&self) {
        {
            let _guard = lock(&self.lock);
            self.cond.notify_all();
        }
        #[cfg(feature = "tokio")]
        self.notify.notify_waiters();
    }

    /// Takes a slot if `in_use < limit`.
    fn try_take(&self) -> bool {
        // Relaxed load: the CAS below re-checks. Acquire on success pairs
        // with the Release in `release`, so the previous holder's work
        // happens-before this one's.
        let mut cur = self.in_use.load(Ordering::Relaxed);
        loop {
            if cur >= self.limit() {
                return false;
            }
            match self.in_use.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    fn release(&self) {
        // Release: see `try_take`. Then a SeqCst fence between the decrement
        // and the waiter-count loads, matching the fence a waiter puts between
        // its count increment and its `try_take`: of two fenced threads at
        // least one sees the other's write (store-buffering), so either the
        // waiter finds the free slot or we see it waiting and wake it.
        self.in_use.fetch_sub(1, Ordering::Release);
        // Relaxed: see `Bulkhead::set_max_wait` (the nanoseconds compared
        // as they are: no Duration to build on every release).
        if self.max_wait.load(Ordering::Relaxed) == 0 {
            // Nobody waits on a bulkhead that never waits: no handshake. (A
            // call that began waiting before `set_max_wait(0)` gives up at
            // its own deadline.)
            return;
        }
        fence(Ordering::SeqCst);
        // Relaxed: ordered by the fence above.
        if self.sync_waiters.load(Ordering::Relaxed) > 0 {
            // Taking the lock orders the notify after the waiter's check (it
            // holds the lock from its check until it is parked).
            let _guard = lock(&self.lock);
            self.cond.notify_one();
        }
        #[cfg(feature = "tokio")]
        if self.async_waiters.load(Ordering::Relaxed) > 0 {
            self.notify.notify_one();
        }
    }
}

impl Bulkhead {
    /// Takes a free slot (`Ok(true)`), or says the caller may wait for one
    /// (`Ok(false)`: `max_wait` is not zero), never waiting itself.
    #[inline]
    pub(crate) fn take_or_wait(&self) -> Result<bool, BulkheadFull> {
        if self.inner.admit() {
            Ok(true)
        } else if self.inner.max_wait().is_zero() {
            Err(self.reject(Duration::ZERO))
        } else {
            Ok(false)
        }
    }

    /// Gives back a slot taken with [`take_blocking`](Self::take_blocking)
    /// or [`take_async`](Self::take_async).
    #[inline]
    pub(crate) fn give_back(&self) {
        self.inner.release();
    }
}

/// A slot borrowed from a bulkhead handle, given back when dropped.
pub(crate) struct Slot<'a>(&'a Inner);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A slot in a [`Bulkhead`], given back when dropped.
///
/// `'static + Send`: it may be moved into another thread or task.
///
/// # Examples
///
/// ```
/// use fusebox::Bulkhead;
/// let b = Bulkhead::new(1);
/// let permit = b.try_acquire().unwrap();
/// let worker = std::thread::spawn(move || {
///     let _slot = permit; // held while this thread works
/// });
/// worker.join().unwrap();
/// assert_eq!(b.snapshot().in_use, 0);
/// ```
#[must_use = "the slot is freed as soon as the permit is dropped"]
pub struct BulkheadPermit {
    inner: Arc<Inner>,
}

impl Drop for BulkheadPermit {
    fn drop(&mut self) {
        self.inner.release();
    }
}

impl fmt::Debug for BulkheadPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPermit")
            .field("limit", &self.inner.limit())
            .finish()
    }
}

impl fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.snapshot();
        f.debug_struct("Bulkhead")
            .field("name", &self.inner.name)
            .field("limit", &s.limit)
            .field("in_use", &s.in_use)
            .field("max_wait", &self.inner.max_wait())
            .field("rejected", &s.rejected)
            .finish()
    }
}

/// The bulkhead's figures: `in_use`, `limit` and `waiting` (gauges),
/// `rejections` and `shadowed` (counters), as in
/// `fusebox_bulkhead_in_use` and the other series of `fusebox::metrics`.
///
/// # Examples
///
/// ```
/// use fusebox::policy::Inspect;
/// let b = fusebox::Bulkhead::new(3);
/// let names: Vec<_> = b.figures().iter().map(|f| f.name).collect();
/// assert_eq!(names, ["in_use", "limit", "waiting", "rejections", "shadowed"]);
/// ```
impl crate::policy::Inspect for Bulkhead {
    fn kind(&self) -> &'static str {
        "bulkhead"
    }

    fn mode(&self) -> Mode {
        self.inner.mode()
    }

    fn figures(&self) -> Vec<crate::policy::Figure> {
        use crate::policy::Figure;
        let s = self.snapshot();
        let n = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        vec![
            Figure::gauge("in_use", "Bulkhead slots taken", n(s.in_use)),
            Figure::gauge("limit", "Bulkhead limit", n(s.limit)),
            Figure::gauge(
                "waiting",
                "Callers waiting for a bulkhead slot",
                n(s.waiting),
            ),
            Figure::counter("rejections", "Calls refused by a bulkhead", s.rejected),
            Figure::counter(
                "shadowed",
                "Calls that found a bulkhead in shadow mode full and ran anyway",
                s.shadowed,
            ),
        ]
    }
}

/// A call refused by a full [`Bulkhead`].
///
/// # Examples
///
/// ```
/// use fusebox::Bulkhead;
/// let b = Bulkhead::new(0);
/// let full = b.try_acquire().unwrap_err();
/// assert_eq!(full.limit(), 0);
/// assert_eq!(full.to_string(), "bulkhead is full (limit 0)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadFull {
    limit: usize,
    waited: Duration,
}

impl BulkheadFull {
    /// The bulkhead's limit: how many calls were already in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Bulkhead::new(0).try_acquire().unwrap_err().limit(), 0);
    /// ```
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// How long the caller waited before giving up (zero for the `try_*`
    /// methods and when `max_wait` is zero).
    ///
    /// # Examples
    ///
    /// ```
    /// let full = fusebox::Bulkhead::new(0).try_acquire().unwrap_err();
    /// assert!(full.waited().is_zero());
    /// ```
    pub fn waited(&self) -> Duration {
        self.waited
    }
}

impl fmt::Display for BulkheadFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.waited.is_zero() {
            write!(f, "bulkhead is full (limit {})", self.limit)
        } else {
            write!(
                f,
                "bulkhead is full (limit {}, waited {:?})",
                self.limit, self.waited
            )
        }
    }
}

impl std::error::Error for BulkheadFull {}

impl BulkheadFull {
    pub(crate) const LABEL: &'static str = "bulkhead_full";
}

/// A slot may free at any moment, so `retry_after` is zero.
///
/// # Examples
///
/// ```
/// use fusebox::policy::Refusal;
/// let full = fusebox::Bulkhead::new(0).try_acquire().unwrap_err();
/// assert_eq!((full.policy(), full.label()), ("bulkhead", "bulkhead_full"));
/// assert_eq!(Refusal::retry_after(&full), Some(std::time::Duration::ZERO));
/// ```
impl crate::policy::Refusal for BulkheadFull {
    fn policy(&self) -> &'static str {
        "bulkhead"
    }

    fn label(&self) -> &'static str {
        Self::LABEL
    }

    fn retry_after(&self) -> Option<Duration> {
        Some(Duration::ZERO)
    }

    fn summary(&self) -> &'static str {
        "bulkhead full"
    }
}

/// A reading of a [`Bulkhead`]'s counters, from [`Bulkhead::snapshot`].
///
/// # Examples
///
/// ```
/// let s = fusebox::Bulkhead::new(4).snapshot();
/// assert_eq!((s.in_use, s.limit, s.rejected, s.waiting), (0, 4, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkheadSnapshot {
    /// Slots taken right now.
    pub in_use: usize,
    /// The limit.
    pub limit: usize,
    /// Calls refused since the bulkhead was built.
    pub rejected: u64,
    /// Callers waiting for a slot right now (only with `max_wait`).
    pub waiting: usize,
    /// Calls that found every slot taken and ran anyway, in
    /// [`Mode::Shadow`].
    pub shadowed: u64,
    /// The mode in force.
    pub mode: Mode,
}

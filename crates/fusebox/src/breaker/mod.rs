//! The circuit breaker.
//!
//! See [`CircuitBreaker`] for the handle, [`Builder`] for every setting and
//! the crate docs for a walk through a breaker's life.

mod config;
mod fast;
mod listener;
mod open_period;
mod permit;
mod protocol;
#[cfg(feature = "fleet")]
mod remote;
mod rules;
pub(crate) mod set;
#[cfg(feature = "fleet")]
mod tally;
mod types;
mod window;

use crate::policy::Mode;
pub use config::{Backoff, BreakerConfig, Builder, ConfigError, FailureBurst};
pub use listener::{Listener, Timing};
pub use permit::Permit;
#[cfg(feature = "fleet")]
pub(crate) use protocol::ProbeGate;
pub use types::{CallEvent, Outcome, Reason, Rejected, State, Transition};

use crate::clock::{Clock, MonotonicClock};
use fast::Inner;
use permit::CallGuard;
use protocol::Settings;
pub(crate) use protocol::Ticket;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A circuit breaker: counts failures of one dependency, opens to fail fast,
/// lets probes through after a cooldown, and closes when the dependency is
/// back.
///
/// A `CircuitBreaker` is a handle: cheap to clone, `Send + Sync + 'static`,
/// and every clone shares one state. Keep one per dependency.
///
/// Rules:
/// - Open becomes HalfOpen lazily, at the first admission attempt (or
///   [`state`](CircuitBreaker::state) call) at or after trip time plus the
///   open period. The open period counts from the verdict that tripped.
/// - Every transition starts a new generation. A verdict from a permit of an
///   older generation changes nothing: a slow call admitted before a trip can
///   neither extend the open period nor close a breaker it no longer belongs to.
/// - Counters are empty after every transition to Closed.
/// - Half-open admits at most `half_open_probes` calls at once, closes after
///   `successes_to_close` successes, and reopens on any failed probe. With
///   [`half_open_max_wait`](Builder::half_open_max_wait), probes out that
///   long without an answer count as failed too.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, Error};
/// use std::time::Duration;
///
/// let reviews = CircuitBreaker::builder()
///     .consecutive_failures(5)
///     .open_for(Duration::from_millis(500))
///     .build()?;
///
/// match reviews.call(|| fetch_reviews(42)) {
///     Ok(list) => println!("{} reviews", list.len()),
///     Err(Error::Rejected(r)) => println!("reviews skipped: {r}"),
///     Err(Error::Inner(e)) => println!("reviews failed: {e}"),
/// }
/// # fn fetch_reviews(_: u32) -> Result<Vec<String>, std::io::Error> { Ok(vec![]) }
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct CircuitBreaker {
    inner: Arc<Inner>,
}

impl CircuitBreaker {
    /// Starts building a breaker; see [`Builder`] for settings and defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().consecutive_failures(3).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The bytes a breaker of `settings` allocates when built (the name
    /// and listeners aside), reckoned without building it, at most: its
    /// shared state (its settings counted as its own, though breakers of
    /// equal settings may share them) and, through [`Rules::cells_bytes`](rules::Rules::cells_bytes),
    /// the cells its rules count in, which grow with their settings (a
    /// count window's slots, a time window's buckets on every stripe, the
    /// failure times of `failures_within`), and the counters' cells that
    /// are allocated on first use. With feature `fleet`, the verdict tally
    /// a fleet asks for too.
    pub(crate) fn footprint(settings: &Settings) -> usize {
        let arc = 2 * size_of::<usize>();
        // The refusal and recorder counters' cells and the half-open
        // counters, allocated on their first write, are reckoned in: a
        // budget is for breakers in use.
        let fixed = arc
            + size_of::<Inner>()
            + arc
            + size_of::<protocol::Live>()
            + 2 * crate::sync::Striped::CELLS_BYTES
            + size_of::<protocol::Cold>();
        #[cfg(feature = "fleet")]
        let fixed = fixed + tally::TallyCells::BOXED_BYTES;
        fixed.saturating_add(settings.rules.cells_bytes())
    }

    pub(crate) fn from_parts(
        settings: Settings,
        clock: Option<Arc<dyn Clock>>,
        listeners: Box<[Arc<dyn Listener>]>,
        name: Option<String>,
    ) -> CircuitBreaker {
        CircuitBreaker {
            inner: Arc::new(Inner::new(settings, clock, listeners, name)),
        }
    }

    /// Changes this breaker's trip, open and half-open settings in place, for
    /// every clone of it (a registry, a pipeline, a tower layer holding it).
    ///
    /// Takes the settings of `settings` (a [`Builder`] or a
    /// [`BreakerConfig`]); its name, clock and listeners are ignored: those
    /// of the breaker stay. Rules:
    ///
    /// - Closed: the window keeps its counts when its shape (count or time,
    ///   size, buckets) is unchanged, and starts empty when it changes; the
    ///   consecutive-failure count is kept. The new thresholds decide from
    ///   now on: counts that already reach them trip the breaker at once.
    ///   The window a breaker was built with stays allocated for the
    ///   breaker's life, also once a change of shape replaced it (the
    ///   breaker keeps it in itself, so that breakers of equal settings can
    ///   share those): a breaker built with a large window and changed to
    ///   another shape holds both.
    /// - Open: the open period in progress is finished as it was set; the
    ///   new settings decide everything after it (half-open probes, closing,
    ///   the length of the next open period).
    /// - Half-open: the new probe limit and `successes_to_close` apply from
    ///   the next admission and verdict; a new `half_open_max_wait` applies
    ///   to the probes already out too (their wait counts from when they
    ///   went out), so setting one frees a half-open breaker stuck on a
    ///   probe that will never answer.
    /// - Forced open and disabled stay so.
    /// - The settings replace those in force whole: one they leave unset
    ///   takes its default, the [`Mode`] too (unset is `Enforce`; to change
    ///   only the mode, use [`CircuitBreaker::set_mode`]).
    ///
    /// Takes the breaker's transition lock for a moment; calls in flight are
    /// never blocked, and one racing the change is decided by either the old
    /// or the new settings, never a mix.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first bad setting; the breaker keeps its
    /// settings.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, State};
    ///
    /// let breaker = CircuitBreaker::builder().consecutive_failures(5).build()?;
    /// let held_by_a_pipeline = breaker.clone();
    /// breaker.reconfigure(CircuitBreaker::builder().consecutive_failures(2))?;
    /// for _ in 0..2 {
    ///     let _ = held_by_a_pipeline.call(|| Err::<(), _>("down"));
    /// }
    /// assert_eq!(breaker.state(), State::Open);
    /// assert_eq!(held_by_a_pipeline.config().consecutive_failures, Some(2));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, settings: impl Into<Builder>) -> Result<(), ConfigError> {
        let settings = settings.into().config.settings()?;
        self.inner.reconfigure(settings);
        Ok(())
    }

    /// How many handles and permits share this breaker (a set evicts only
    /// a breaker it alone holds).
    pub(crate) fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// Puts `config` in force unless the settings it describes are the ones
    /// in force: one conversion and one comparison of the settings
    /// themselves (what a registry reload does for every breaker). Whether
    /// anything changed.
    pub(crate) fn reconfigure_if_changed(
        &self,
        config: &BreakerConfig,
    ) -> Result<bool, ConfigError> {
        let settings = config.settings()?;
        if self.inner.core.live().settings() == settings {
            return Ok(false);
        }
        self.inner.reconfigure(settings);
        Ok(true)
    }

    /// Switches the breaker to `mode` in place, keeping its state, counts
    /// and every other setting in force (see [`Builder::mode`]); a
    /// reconfigure racing it is kept whole. Every handle, and
    /// every pipeline, tower layer and registry holding it, sees the change
    /// from the next call on.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, Mode};
    ///
    /// let breaker = CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// breaker.set_mode(Mode::Shadow);
    /// let _ = breaker.call(|| Err::<(), _>("down"));
    /// assert!(breaker.call(|| Ok::<_, &str>(())).is_ok()); // shadow: let through
    /// breaker.set_mode(Mode::Enforce);
    /// assert!(breaker.call(|| Ok::<_, &str>(())).is_err()); // enforced
    /// assert_eq!(breaker.mode(), Mode::Enforce);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn set_mode(&self, mode: Mode) {
        self.inner.set_policy_mode(mode);
    }

    /// The mode in force (see [`Builder::mode`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// assert_eq!(breaker.mode(), fusebox::Mode::Enforce);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn mode(&self) -> Mode {
        self.inner.core.live().tuning.mode
    }

    /// The settings in force, every default written out (so that
    /// `config().builder()` builds a breaker that behaves the same).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// let config = breaker.config();
    /// assert_eq!(config.consecutive_failures, Some(5));
    /// assert_eq!(config.open_for, Some(Duration::from_secs(30)));
    /// assert_eq!(config.half_open_probes, Some(1));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn config(&self) -> BreakerConfig {
        BreakerConfig::from_settings(&self.inner.core.live().settings())
    }

    /// Whether `self` and `other` are handles of the same breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// let a = fusebox::CircuitBreaker::builder().build()?;
    /// let b = fusebox::CircuitBreaker::builder().build()?;
    /// assert!(a.same_as(&a.clone()));
    /// assert!(!a.same_as(&b));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn same_as(&self, other: &CircuitBreaker) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Asks to make one call. On `Ok`, make the call and give the
    /// [`Permit`] its verdict; on `Err`, don't call.
    ///
    /// # Errors
    ///
    /// [`Rejected`] when the breaker is open, forced open, or half-open with
    /// every probe slot taken.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// let permit = breaker.try_acquire().expect("a closed breaker admits");
    /// permit.success();
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn try_acquire(&self) -> Result<Permit, Rejected> {
        let ticket = self.inner.acquire()?;
        Ok(Permit::new(Arc::clone(&self.inner), ticket))
    }

    /// Runs `f` if the breaker admits it; `Ok` counts as a success and `Err`
    /// as a failure. A panic in `f` counts as a failure and then carries on
    /// unwinding; the breaker stays usable.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] if `f` was not run; [`Error::Inner`] with `f`'s error.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// let price = breaker.call(|| "19.99".parse::<f64>());
    /// assert_eq!(price.unwrap(), 19.99);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        self.call_with(Outcome::of, f)
    }

    /// Like [`call`](CircuitBreaker::call), with `classify` deciding whether
    /// the result is a success, a failure or counts for nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Rejected`] if `f` was not run; [`Error::Inner`] with `f`'s error
    /// (whatever `classify` said about it).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, Outcome, State};
    /// let breaker = CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// // A "not found" is the caller's problem, not the dependency's.
    /// let not_found = |r: &Result<(), &str>| match r {
    ///     Err("not found") => Outcome::Ignore,
    ///     other => Outcome::of(other),
    /// };
    /// let _ = breaker.call_with(not_found, || Err("not found"));
    /// assert_eq!(breaker.state(), State::Closed);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[inline]
    pub fn call_with<T, E, F, C>(&self, classify: C, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
        C: Fn(&Result<T, E>) -> Outcome,
    {
        let ticket = match self.inner.fast_ticket() {
            Some(ticket) => ticket,
            None => self.inner.acquire_slow().map_err(Error::Rejected)?,
        };
        let mut guard = CallGuard::new(&self.inner, ticket);
        guard.running = true; // a panic out of `f` drops the guard with this set
        let result = f();
        guard.running = false;
        let outcome = classify(&result);
        // The hot path, judged on the local `ticket` (kept in registers)
        // rather than on the guard's copy (kept in memory for unwinding),
        // whose narrow stores a wide reload would stall on.
        if self.inner.settles_silently(&ticket, outcome) {
            guard.done = true;
            return result.map_err(Error::Inner);
        }
        guard.finish(outcome);
        result.map_err(Error::Inner)
    }

    /// Runs the future `f()` returns if the breaker admits it. Admission
    /// happens when the returned future is first polled.
    ///
    /// Needs no runtime. The returned future borrows the breaker (it holds
    /// `&self`, so a call costs no reference-count traffic on the shared
    /// handle); it is `Send` when `f`, its future and its output are. To
    /// run the call in a spawned task, which needs a `'static` future, move
    /// a clone of the breaker into the task (a clone is a cheap handle on
    /// the same breaker):
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use fusebox::{CircuitBreaker, State};
    /// let breaker = CircuitBreaker::builder().consecutive_failures(1).build().unwrap();
    /// let task = tokio::spawn({
    ///     let breaker = breaker.clone();
    ///     async move {
    ///         breaker
    ///             .call_async(|| async { Err::<(), _>(std::io::Error::other("down")) })
    ///             .await
    ///     }
    /// });
    /// assert!(task.await.unwrap().is_err());
    /// assert_eq!(breaker.state(), State::Open); // the clone is the same breaker
    /// # }
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it finishes releases its permit without a
    /// verdict: nothing is counted and a half-open probe slot is freed. A
    /// panic while polling `f`'s future counts as a failure.
    ///
    /// # Errors
    ///
    /// As [`call`](CircuitBreaker::call).
    ///
    /// # Examples
    ///
    /// ```
    /// # futures_lite_block_on(async {
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// let n = breaker.call_async(|| async { Ok::<_, std::io::Error>(7) }).await;
    /// assert_eq!(n.unwrap(), 7);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// # }).unwrap();
    /// # fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let waker = std::task::Waker::noop();
    /// #     let mut cx = std::task::Context::from_waker(&waker);
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop { if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; } }
    /// # }
    /// ```
    pub fn call_async<T, E, F, Fut>(
        &self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, Fut>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_async_with(Outcome::of, f)
    }

    /// [`call_async`](CircuitBreaker::call_async) with a classifier, as in
    /// [`call_with`](CircuitBreaker::call_with).
    ///
    /// The returned future borrows the breaker, as
    /// [`call_async`](CircuitBreaker::call_async)'s does (to spawn it, move a
    /// clone of the breaker into the task).
    ///
    /// # Cancel safety
    ///
    /// As [`call_async`](CircuitBreaker::call_async).
    ///
    /// # Errors
    ///
    /// As [`call_with`](CircuitBreaker::call_with).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Outcome;
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// let fut = breaker.call_async_with(|_: &Result<u8, ()>| Outcome::Ignore, || async { Ok(1) });
    /// drop(fut); // never polled: never admitted, nothing counted
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn call_async_with<T, E, F, Fut, C>(
        &self,
        classify: C,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, Fut, C>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        C: Fn(&Result<T, E>) -> Outcome,
    {
        // Borrowed, not cloned: no reference count to touch per call.
        let inner: &Inner = &self.inner;
        async move {
            let ticket = inner.acquire().map_err(Error::Rejected)?;
            let mut guard = CallGuard::new(inner, ticket);
            // `running` is set only while the user's code is on the stack, so
            // a panic out of it counts as a failure while a drop at an await
            // point (cancellation) releases the permit.
            guard.running = true;
            let fut = f();
            guard.running = false;
            let mut fut = std::pin::pin!(fut);
            let result = std::future::poll_fn(|cx| {
                guard.running = true;
                let poll = fut.as_mut().poll(cx);
                guard.running = false;
                poll
            })
            .await;
            let outcome = classify(&result);
            // The hot path inline, as in `call_with` (`finish` would check
            // the same, out of line).
            if inner.settles_silently(&guard.ticket, outcome) {
                guard.done = true;
                return result.map_err(Error::Inner);
            }
            guard.finish(outcome);
            result.map_err(Error::Inner)
        }
    }

    /// The current state. An open breaker whose open period is over becomes
    /// half-open here, and a half-open one whose probes are past
    /// [`half_open_max_wait`](Builder::half_open_max_wait) reopens here
    /// (and its listeners hear of it).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, ManualClock, State};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let b = CircuitBreaker::builder()
    ///     .consecutive_failures(1)
    ///     .open_for(Duration::from_secs(1))
    ///     .clock(clock.clone())
    ///     .build()?;
    /// b.try_acquire().unwrap().failure();
    /// assert_eq!(b.state(), State::Open);
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(b.state(), State::HalfOpen);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn state(&self) -> State {
        let (state, transition) = self.inner.core.state(self.inner.now());
        self.inner.emit(transition);
        state
    }

    /// The state without the lazy Open -> HalfOpen step, so that nothing is
    /// told to the listeners: for callers holding a lock of their own.
    pub(crate) fn state_quietly(&self) -> State {
        self.inner.core.word_state()
    }

    /// Counts and rates as they are now (after the same lazy step as
    /// [`state`](CircuitBreaker::state)).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().failure_rate(0.5).count_window(10).build()?;
    /// let _ = b.call(|| Err::<(), _>(()));
    /// let _ = b.call(|| Ok::<_, ()>(()));
    /// let s = b.snapshot();
    /// assert_eq!((s.calls, s.failures), (2, 1));
    /// assert_eq!(s.failure_rate, 0.5);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        let now = self.inner.now();
        let (_, transition) = self.inner.core.state(now);
        self.inner.emit(transition);
        let f = self.inner.core.figures(now);
        Snapshot {
            state: f.state,
            calls: f.totals.calls,
            failures: f.totals.failures.min(f.totals.calls),
            slow_calls: f.totals.slow.min(f.totals.calls),
            failure_rate: f.totals.failure_rate(),
            slow_call_rate: f.totals.slow_rate(),
            consecutive_failures: f.consecutive,
            rejected: f.rejected,
            shadowed: f.shadowed,
            since_transition: Duration::from_nanos(f.since_transition),
            generation: f.generation,
        }
    }

    /// Opens the breaker until [`reset`](CircuitBreaker::reset): every call is
    /// rejected, with no `retry_after`.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().build()?;
    /// b.force_open();
    /// assert_eq!(b.state(), fusebox::State::ForcedOpen);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn force_open(&self) {
        self.manual(State::ForcedOpen)
    }

    /// Turns the breaker off until [`reset`](CircuitBreaker::reset): every
    /// call is admitted, nothing is counted, it never trips.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// b.disable();
    /// let _ = b.call(|| Err::<(), _>(()));
    /// assert_eq!(b.state(), fusebox::State::Disabled);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn disable(&self) {
        self.manual(State::Disabled)
    }

    /// Closes the breaker with empty counters (the window, the failures in a
    /// row and [`Snapshot::rejected`]), from any state.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// let _ = b.call(|| Err::<(), _>(()));
    /// let _ = b.call(|| Ok::<(), ()>(())); // rejected: open
    /// assert_eq!(b.snapshot().rejected, 1);
    /// b.reset();
    /// assert_eq!(b.state(), fusebox::State::Closed);
    /// assert_eq!(b.snapshot().rejected, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn reset(&self) {
        self.manual(State::Closed)
    }

    fn manual(&self, to: State) {
        let t = self.inner.core.set(to, self.inner.now(), Reason::Manual);
        self.inner.emit(t);
    }

    /// Opens from Closed or HalfOpen for `open_for`, for a reason no rule of
    /// this breaker gave (a fleet's trip, an outlier ejection); extends a
    /// shorter open period; leaves forced open and disabled alone. Whether
    /// it opened now.
    pub(crate) fn open_for(&self, open_for: Duration, reason: Reason) -> bool {
        let t = self
            .inner
            .core
            .open_for(self.inner.now(), crate::clock::nanos(open_for), reason);
        let opened = t.is_some();
        self.inner.emit(t);
        opened
    }

    /// The name given to the builder, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::CircuitBreaker::builder().build()?.name(), None);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The clock this breaker reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ManualClock;
    /// let clock = ManualClock::new();
    /// clock.set(std::time::Duration::from_secs(3));
    /// let b = fusebox::CircuitBreaker::builder().clock(clock).build()?;
    /// assert_eq!(b.clock().now(), std::time::Duration::from_secs(3));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn clock(&self) -> &dyn Clock {
        self.custom_clock().unwrap_or(&MonotonicClock)
    }

    /// The clock set with [`Builder::clock`], `None` for the default one
    /// (which compositions read on its raw counter).
    #[inline]
    pub(crate) fn custom_clock(&self) -> Option<&dyn Clock> {
        self.inner.clock.as_deref().map(|clock| &**clock)
    }

    /// Admission for a composition that gives the verdict later (the
    /// pipeline): the ticket goes back through [`settle`](Self::settle) or
    /// [`release`](Self::release).
    #[inline]
    pub(crate) fn admit(&self) -> Result<Ticket, Rejected> {
        match self.inner.fast_ticket() {
            Some(ticket) => Ok(ticket),
            None => self.inner.acquire_slow(),
        }
    }

    /// The verdict on an [`admit`](Self::admit)ted call; on the hot path
    /// when it changes nothing.
    #[inline]
    pub(crate) fn settle(&self, ticket: Ticket, outcome: Outcome) {
        if !self.inner.settles_silently(&ticket, outcome) {
            self.inner.finish(ticket, outcome);
        }
    }

    /// An [`admit`](Self::admit)ted call that will have no verdict (a
    /// cancelled future): frees its probe slot, counts nothing.
    pub(crate) fn release(&self, ticket: Ticket) {
        self.inner.release(ticket);
    }

    /// The breaker's state machine, for the protocol's tests.
    #[cfg(test)]
    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Half-open probes admitted and not yet finished.
    #[doc(hidden)]
    pub fn probes_in_flight(&self) -> u32 {
        self.inner.core.probes_in_flight()
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.inner.name)
            .field("core", &self.inner.core)
            .finish()
    }
}

/// A breaker's counts and rates at one moment.
///
/// Window fields (`calls`, `failures`, `slow_calls` and the rates) are zero
/// for a breaker with only the consecutive-failures policy, which keeps no
/// window.
///
/// # Examples
///
/// ```
/// let b = fusebox::CircuitBreaker::builder().consecutive_failures(3).build()?;
/// let _ = b.call(|| Err::<(), _>(()));
/// assert_eq!(b.snapshot().consecutive_failures, 1);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The current state.
    pub state: State,
    /// Calls in the window.
    pub calls: u64,
    /// Failed calls in the window.
    pub failures: u64,
    /// Slow calls in the window.
    pub slow_calls: u64,
    /// `failures / calls`, 0 when the window is empty.
    pub failure_rate: f64,
    /// `slow_calls / calls`, 0 when the window is empty.
    pub slow_call_rate: f64,
    /// Failures in a row in the current closed period; counted only when the
    /// breaker has the consecutive-failures policy (0 otherwise, and outside
    /// the closed state).
    pub consecutive_failures: u32,
    /// Calls rejected since the breaker was built or last
    /// [`reset`](CircuitBreaker::reset).
    pub rejected: u64,
    /// Calls the breaker would have rejected but let through, in
    /// [`Mode::Shadow`](crate::Mode::Shadow), since it was built or last
    /// reset.
    pub shadowed: u64,
    /// Time since the last transition (or since the breaker was built).
    pub since_transition: Duration,
    /// Transitions since the breaker was built.
    pub generation: u64,
}

/// Why a guarded call did not return its value.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, Error};
/// let b = CircuitBreaker::builder().build()?;
/// b.force_open();
/// let err = b.call(|| Ok::<u8, std::io::Error>(1)).unwrap_err();
/// assert!(err.is_rejected());
/// let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
/// assert_eq!(boxed.to_string(), "circuit breaker is forced open");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error<E> {
    /// The breaker did not run the call.
    Rejected(Rejected),
    /// The call ran and returned this error.
    Inner(E),
}

impl<E> Error<E> {
    /// Whether the breaker turned the call away.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!fusebox::Error::Inner(()).is_rejected());
    /// ```
    pub fn is_rejected(&self) -> bool {
        matches!(self, Error::Rejected(_))
    }

    /// The rejection, if the call was not run.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Error::Inner(()).rejected().is_none());
    /// ```
    pub fn rejected(&self) -> Option<&Rejected> {
        match self {
            Error::Rejected(r) => Some(r),
            Error::Inner(_) => None,
        }
    }

    /// The call's own error, if it ran.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Error::Inner(5).into_inner(), Some(5));
    /// ```
    pub fn into_inner(self) -> Option<E> {
        match self {
            Error::Inner(e) => Some(e),
            Error::Rejected(_) => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rejected(r) => fmt::Display::fmt(r, f),
            Error::Inner(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Rejected(_) => None,
            Error::Inner(e) => e.source(),
        }
    }
}

impl<E> From<Rejected> for Error<E> {
    fn from(r: Rejected) -> Self {
        Error::Rejected(r)
    }
}

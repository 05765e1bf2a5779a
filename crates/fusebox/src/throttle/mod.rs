//! Adaptive throttling (feature `throttle`): refuse, at random, the share of
//! calls a struggling backend would have refused anyway, before they are
//! sent.
//!
//! A [`Throttle`] counts, over a sliding window, the *requests* the
//! application made and the ones the backend *accepted*. While the backend
//! accepts everything the two are equal and nothing is refused. When it
//! starts refusing (overload errors, timeouts), the throttle refuses each
//! new request locally with probability
//!
//! ```text
//! p = clamp((requests - K x accepts) / (requests + padding), 0, max_rejection)
//! ```
//!
//! so the backend receives about `K` times what it accepts (the client-side
//! throttling of Google's SRE book, chapter 21). Unlike a breaker, it does
//! not shut the dependency off (with `max_rejection` below 1, some calls
//! always go out): it sheds the excess and follows the backend's capacity
//! up and down.
//!
//! # Counting
//!
//! - A request is counted **when it is admitted or refused**, before the
//!   call: the throttle reacts within the calls' own duration, not one round
//!   trip late.
//! - An accept is counted when the permit says so
//!   ([`ThrottlePermit::accept`]). [`ThrottlePermit::overload`], or a
//!   permit dropped without a verdict (a panic, a cancelled future), counts
//!   none. Classify as an accept every answer that shows the backend served
//!   the call, a client error (4xx) included; as an overload only 429, 503,
//!   timeouts and connection failures. A request the backend never judged
//!   (cancelled, or refused by a policy after the throttle) is taken back
//!   with [`ThrottlePermit::cancel`]; the pipeline stage and the tower layer
//!   do so themselves.
//! - Locally refused requests count as requests (that is what lets the
//!   throttle recover: as the backend heals, accepts rise and `p` falls).
//!
//! Both counts live in `buckets` time buckets over `window`; the randomness
//! is a lock-free generator, seeded by [`Builder::seed`] in tests.
//!
//! # Examples
//!
//! ```
//! use fusebox::throttle::{Throttle, ThrottleConfig};
//! use fusebox::ManualClock;
//!
//! let clock = ManualClock::new();
//! let backend = Throttle::builder()
//!     .config(ThrottleConfig::default().padding(0))
//!     .clock(clock.clone())
//!     .seed(7)
//!     .build()?;
//! // The backend refuses everything: after a while most calls are refused here.
//! let mut refused = 0;
//! for _ in 0..1000 {
//!     match backend.try_acquire() {
//!         Ok(permit) => permit.overload(),
//!         Err(_) => refused += 1,
//!     }
//! }
//! assert!(refused > 700, "{refused}");
//! assert!(backend.rejection_probability() <= 0.8);
//! # Ok::<(), fusebox::ConfigError>(())
//! ```

mod config;
mod error;

pub use self::config::ThrottleConfig;
pub use self::error::Throttled;

use crate::clock::{Clock, MonotonicClock};
use crate::policy::{Mode, ModeCell};
use crate::ConfigError;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A throttle: cheap to clone (clones share their counts).
///
/// # Examples
///
/// ```
/// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
/// let permit = t.try_acquire().expect("nothing is refused while all is accepted");
/// permit.accept();
/// assert_eq!(t.snapshot().accepts, 1);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Throttle {
    inner: Arc<Inner>,
}

struct Inner {
    /// The settings in force and the window they count in, changed in
    /// place by [`Throttle::reconfigure`].
    shape: Shape,
    clock: Arc<dyn Clock>,
    rng: AtomicU64,
    refused: AtomicU64,
    shadowed: AtomicU64,
    mode: ModeCell,
}

/// The settings in force (the mode is `Inner::mode`'s), each in an atomic
/// of its own so that a reconfigure changes them in place and a request
/// reads them with plain loads, and the window's buckets, as many as the
/// throttle was built with.
struct Shape {
    /// `k`, as `f64` bits.
    k: AtomicU64,
    padding: AtomicU64,
    /// `max_rejection`, as `f64` bits.
    max_rejection: AtomicU64,
    /// The window's span, in ns.
    window: AtomicU64,
    bucket_nanos: AtomicU64,
    buckets: Box<[Bucket]>,
}

impl Shape {
    fn new(config: ThrottleConfig) -> Shape {
        let shape = Shape {
            k: AtomicU64::new(0),
            padding: AtomicU64::new(0),
            max_rejection: AtomicU64::new(0),
            window: AtomicU64::new(0),
            bucket_nanos: AtomicU64::new(0),
            buckets: (0..config.buckets)
                .map(|_| Bucket {
                    period: AtomicU64::new(0),
                    requests: AtomicU64::new(0),
                    accepts: AtomicU64::new(0),
                })
                .collect(),
        };
        shape.set(config);
        shape
    }

    /// Puts `config`'s settings in force (its bucket count is the
    /// shape's); a new span empties the buckets.
    fn set(&self, config: ThrottleConfig) {
        // Relaxed (all of them): settings read independently; a request
        // racing a reconfigure may mix old and new ones, as it may meet
        // either.
        let window = u64::try_from(config.window.as_nanos()).unwrap_or(u64::MAX);
        self.k.store(config.k.to_bits(), Ordering::Relaxed);
        self.padding
            .store(u64::from(config.padding), Ordering::Relaxed);
        self.max_rejection
            .store(config.max_rejection.to_bits(), Ordering::Relaxed);
        if self.window.swap(window, Ordering::Relaxed) != window {
            let n = self.buckets.len() as u64;
            self.bucket_nanos
                .store((window / n).max(1), Ordering::Relaxed);
            for b in self.buckets.iter() {
                // Release: a thread that sees the period gone sees the
                // counts emptied (see `bucket`).
                b.requests.store(0, Ordering::Relaxed);
                b.accepts.store(0, Ordering::Relaxed);
                b.period.store(0, Ordering::Release);
            }
        }
    }

    /// The settings in force (`mode` left as `Enforce`).
    fn config(&self) -> ThrottleConfig {
        ThrottleConfig {
            k: f64::from_bits(self.k.load(Ordering::Relaxed)),
            window: Duration::from_nanos(self.window.load(Ordering::Relaxed)),
            buckets: u32::try_from(self.buckets.len()).unwrap_or(u32::MAX),
            padding: u32::try_from(self.padding.load(Ordering::Relaxed)).unwrap_or(u32::MAX),
            max_rejection: f64::from_bits(self.max_rejection.load(Ordering::Relaxed)),
            mode: Mode::Enforce,
        }
    }

    /// The bucket period of the time `now` (its index from the start, +1;
    /// 0 is "none yet").
    #[inline]
    fn period(&self, now: u64) -> u64 {
        now / self.bucket_nanos.load(Ordering::Relaxed) + 1
    }
}

/// One bucket of the window: which bucket period it holds (its index + 1;
/// 0: none yet) and its counts.
struct Bucket {
    period: AtomicU64,
    requests: AtomicU64,
    accepts: AtomicU64,
}

impl fmt::Debug for Throttle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttle")
            .field("config", &self.config())
            .finish_non_exhaustive()
    }
}

/// The counts of a [`Throttle`] now (see [`Throttle::snapshot`]).
///
/// # Examples
///
/// ```
/// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
/// let s = t.snapshot();
/// assert_eq!((s.requests, s.accepts, s.refused), (0, 0, 0));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ThrottleSnapshot {
    /// Requests counted in the window (admitted and refused).
    pub requests: u64,
    /// Accepts counted in the window.
    pub accepts: u64,
    /// The rejection probability the next request meets.
    pub rejection_probability: f64,
    /// Requests refused since the throttle was built.
    pub refused: u64,
    /// Requests a throttle in shadow mode would have refused and let run.
    pub shadowed: u64,
}

impl Throttle {
    /// A throttle on `config` and the default clock.
    ///
    /// # Errors
    ///
    /// As [`ThrottleConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::throttle::{Throttle, ThrottleConfig};
    /// assert!(Throttle::new(ThrottleConfig::default().k(0.0)).is_err());
    /// ```
    pub fn new(config: ThrottleConfig) -> Result<Self, ConfigError> {
        Throttle::builder().config(config).build()
    }

    /// A builder: config, clock, seed.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::builder().seed(1).build()?;
    /// assert_eq!(t.config().k_value(), 2.0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn builder() -> Builder {
        Builder {
            config: ThrottleConfig::default(),
            clock: None,
            seed: None,
        }
    }

    /// The settings in force, with the current mode.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default().k(3.0))?;
    /// assert_eq!(t.config().k_value(), 3.0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn config(&self) -> ThrottleConfig {
        ThrottleConfig {
            mode: self.mode(),
            ..self.inner.shape.config()
        }
    }

    /// Puts new settings in force, for every clone. `k`, `padding` and
    /// `max_rejection` apply from the next request on, over the counts the
    /// window holds; a new `window` span starts an empty window (nothing is
    /// refused until it fills again: the safe direction). The bucket count
    /// is the one the throttle was built with.
    ///
    /// # Errors
    ///
    /// As [`ThrottleConfig::validate`], or `buckets` when it differs from
    /// the count the throttle was built with (build a new throttle for
    /// another); the throttle is then left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::throttle::{Throttle, ThrottleConfig};
    /// let t = Throttle::builder().clock(fusebox::ManualClock::new()).seed(1).build()?;
    /// for _ in 0..100 {
    ///     t.try_acquire().map(|p| p.overload()).ok(); // nothing accepted
    /// }
    /// assert_eq!(t.rejection_probability(), 0.8); // the cap
    /// t.reconfigure(ThrottleConfig::default().max_rejection(0.5))?;
    /// assert_eq!(t.rejection_probability(), 0.5); // same counts, new cap
    /// assert_eq!(t.reconfigure(ThrottleConfig::default().k(0.0)).unwrap_err().field(), "k");
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: ThrottleConfig) -> Result<(), ConfigError> {
        self.check(&config)?;
        let inner = &*self.inner;
        inner.shape.set(config);
        inner.mode.set(config.mode);
        Ok(())
    }

    /// Whether [`reconfigure`](Self::reconfigure) takes `config`.
    pub(crate) fn check(&self, config: &ThrottleConfig) -> Result<(), ConfigError> {
        config.validate()?;
        let built = self.inner.shape.buckets.len();
        if config.buckets as usize != built {
            return Err(ConfigError::of(
                "throttle",
                "buckets",
                config.buckets,
                "a running throttle keeps the bucket count it was built with",
            ));
        }
        Ok(())
    }

    /// The mode in force.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// assert_eq!(t.mode(), fusebox::Mode::Enforce);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn mode(&self) -> Mode {
        self.inner.mode.get()
    }

    /// Switches the mode, for this throttle and its clones: `Shadow` draws
    /// and counts as `Enforce` does but admits the requests it would refuse
    /// (counted in [`ThrottleSnapshot::shadowed`]); `Off` admits everything
    /// and counts nothing (its permits' verdicts neither).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Mode;
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// t.set_mode(Mode::Off);
    /// t.try_acquire().unwrap().accept();
    /// assert_eq!(t.snapshot().requests, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn set_mode(&self, mode: Mode) {
        self.inner.mode.set(mode);
    }

    /// Counts a request and admits it, or refuses it with the current
    /// rejection probability (in shadow mode: admits it and counts it as
    /// shadowed; in off mode: admits it and counts nothing).
    ///
    /// # Errors
    ///
    /// [`Throttled`] when the draw refuses it (enforce mode only).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// let permit = t.try_acquire().unwrap();
    /// permit.accept();
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn try_acquire(&self) -> Result<ThrottlePermit, Throttled> {
        self.admit().map(|counted| ThrottlePermit {
            owner: self.clone(),
            counted,
        })
    }

    /// Counts a request and draws whether it is refused; `Ok(counted)`:
    /// admitted, and the time period its request was counted in (`None` in
    /// off mode: its verdict counts nothing).
    pub(crate) fn admit(&self) -> Result<Option<u64>, Throttled> {
        let inner = &*self.inner;
        let mode = self.mode();
        if mode == Mode::Off {
            return Ok(None);
        }
        let now = inner.clock.now_nanos();
        let shape = &inner.shape;
        // The period it is counted in (derived, not read back from the
        // bucket: it may be reused for a later one meanwhile).
        let period = shape.period(now);
        let (requests, accepts) = shape.totals(period);
        let p = shape.probability(requests, accepts);
        shape
            .bucket(period)
            .requests
            .fetch_add(1, Ordering::Relaxed);
        if p > 0.0 && inner.draw() < p {
            // Relaxed (all counts): statistics, nothing is published through them.
            if mode == Mode::Shadow {
                inner.shadowed.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(period));
            }
            inner.refused.fetch_add(1, Ordering::Relaxed);
            return Err(Throttled::new(p));
        }
        Ok(Some(period))
    }

    /// Takes back a request counted in `period` that no answer will judge
    /// (cancelled, or refused by a policy after the throttle): as if it had
    /// not been made. Nothing once its bucket has left the window (a bucket
    /// reused for a later period is not touched).
    pub(crate) fn uncount(&self, period: u64) {
        let shape = &self.inner.shape;
        let n = shape.buckets.len() as u64;
        let b = &shape.buckets[(period % n) as usize];
        // Acquire: pairs with the bucket's reuse (see `bucket`).
        if b.period.load(Ordering::Acquire) == period {
            // Relaxed: statistics; never below zero.
            let _ = b
                .requests
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| r.checked_sub(1));
        }
    }

    /// Counts an accept of a request admitted now.
    pub(crate) fn accepted(&self) {
        let inner = &*self.inner;
        inner
            .shape
            .bucket(inner.shape.period(inner.clock.now_nanos()))
            .accepts
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Runs `f` if admitted: `Ok` counts as an accept, `Err` as an
    /// overload. For a finer classification (a client error is an
    /// accept), use [`try_acquire`](Throttle::try_acquire) and the permit.
    ///
    /// # Errors
    ///
    /// [`Throttled`] when the request is refused; `f` is not run.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// let answer = t.call(|| Ok::<_, std::io::Error>("7 in stock")).unwrap();
    /// assert_eq!(answer.unwrap(), "7 in stock");
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<Result<T, E>, Throttled> {
        let permit = self.try_acquire()?;
        let result = f();
        match &result {
            Ok(_) => permit.accept(),
            Err(_) => permit.overload(),
        }
        Ok(result)
    }

    /// The rejection probability a request meets now.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// assert_eq!(t.rejection_probability(), 0.0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn rejection_probability(&self) -> f64 {
        let inner = &*self.inner;
        let shape = &inner.shape;
        let (requests, accepts) = shape.totals(shape.period(inner.clock.now_nanos()));
        shape.probability(requests, accepts)
    }

    /// Its counts now.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// t.try_acquire().unwrap().overload();
    /// let s = t.snapshot();
    /// assert_eq!((s.requests, s.accepts), (1, 0));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> ThrottleSnapshot {
        let inner = &*self.inner;
        let shape = &inner.shape;
        let (requests, accepts) = shape.totals(shape.period(inner.clock.now_nanos()));
        ThrottleSnapshot {
            requests,
            accepts,
            rejection_probability: shape.probability(requests, accepts),
            refused: inner.refused.load(Ordering::Relaxed),
            shadowed: inner.shadowed.load(Ordering::Relaxed),
        }
    }
}

impl Shape {
    /// The bucket of `period`, emptied first if it held an older one. Two threads starting a bucket at once may lose a count of
    /// the one that added before the other emptied it: a statistic.
    fn bucket(&self, period: u64) -> &Bucket {
        let n = self.buckets.len() as u64;
        let b = &self.buckets[(period % n) as usize];
        // Acquire/Release: whoever sees the new period sees the emptied counts.
        let held = b.period.load(Ordering::Acquire);
        if held < period
            && b.period
                .compare_exchange(held, period, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            b.requests.store(0, Ordering::Relaxed);
            b.accepts.store(0, Ordering::Relaxed);
        }
        b
    }

    /// Requests and accepts of the buckets within the window ending with
    /// `period`.
    fn totals(&self, period: u64) -> (u64, u64) {
        let n = self.buckets.len() as u64;
        let (mut requests, mut accepts) = (0, 0);
        for b in self.buckets.iter() {
            let held = b.period.load(Ordering::Acquire);
            if held != 0 && held <= period && period - held < n {
                requests += b.requests.load(Ordering::Relaxed);
                accepts += b.accepts.load(Ordering::Relaxed);
            }
        }
        (requests, accepts)
    }

    fn probability(&self, requests: u64, accepts: u64) -> f64 {
        // Relaxed: see `set`.
        let k = f64::from_bits(self.k.load(Ordering::Relaxed));
        let excess = requests as f64 - k * accepts as f64;
        if excess <= 0.0 {
            return 0.0;
        }
        let padding = self.padding.load(Ordering::Relaxed) as f64;
        let max = f64::from_bits(self.max_rejection.load(Ordering::Relaxed));
        (excess / (requests as f64 + padding)).min(max)
    }
}

impl Inner {
    /// A uniform draw in `[0, 1)`: splitmix64 over a shared counter.
    fn draw(&self) -> f64 {
        let z = crate::policy::mix(
            self.rng
                .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
                .wrapping_add(0x9E37_79B9_7F4A_7C15),
        );
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A request the [`Throttle`] admitted; say how the backend answered.
/// Dropped without a verdict, it counts no accept.
///
/// # Examples
///
/// ```
/// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
/// let permit = t.try_acquire().unwrap();
/// drop(permit); // a cancelled call: a request, no accept
/// assert_eq!((t.snapshot().requests, t.snapshot().accepts), (1, 0));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use = "say whether the backend accepted the call"]
#[derive(Debug)]
pub struct ThrottlePermit {
    owner: Throttle,
    /// Admitted in off mode: its verdict counts nothing.
    counted: Option<u64>,
}

impl ThrottlePermit {
    /// The backend served the call (a client error included).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// t.try_acquire().unwrap().accept();
    /// assert_eq!(t.snapshot().accepts, 1);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn accept(self) {
        if self.counted.is_some() {
            self.owner.accepted();
        }
    }

    /// The request was not judged by the backend: it was cancelled before
    /// an answer, or a policy after the throttle refused it. It is taken out
    /// of the counts (while its time bucket is in the window), so it makes
    /// refusals neither likelier nor rarer. (Dropping the permit instead
    /// counts it as a request the backend did not accept.)
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// t.try_acquire().unwrap().cancel();
    /// assert_eq!(t.snapshot().requests, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn cancel(self) {
        if let Some(period) = self.counted {
            self.owner.uncount(period);
        }
    }

    /// The backend refused the call for load (429, 503), or it timed out.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// t.try_acquire().unwrap().overload();
    /// assert_eq!(t.snapshot().accepts, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn overload(self) {}
}

/// Builds a [`Throttle`] (see [`Throttle::builder`]).
///
/// # Examples
///
/// ```
/// let t = fusebox::throttle::Throttle::builder()
///     .config(fusebox::throttle::ThrottleConfig::default().k(1.5))
///     .clock(fusebox::ManualClock::new())
///     .seed(42)
///     .build()?;
/// assert_eq!(t.config().k_value(), 1.5);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
pub struct Builder {
    config: ThrottleConfig,
    clock: Option<Arc<dyn Clock>>,
    seed: Option<u64>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("config", &self.config)
            .field("custom_clock", &self.clock.is_some())
            .field("seed", &self.seed)
            .finish()
    }
}

impl Builder {
    /// The settings.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::throttle::Throttle::builder().config(fusebox::throttle::ThrottleConfig::default());
    /// assert!(b.build().is_ok());
    /// ```
    pub fn config(mut self, config: ThrottleConfig) -> Self {
        self.config = config;
        self
    }

    /// The clock the window reads (a [`ManualClock`](crate::ManualClock)
    /// in tests).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::throttle::Throttle::builder().clock(fusebox::ManualClock::new());
    /// assert!(b.build().is_ok());
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The random draws' seed: the same seed and the same calls give the
    /// same refusals (by default a seed from std's per-process randomness).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::throttle::Throttle;
    /// let a = Throttle::builder().seed(3).build()?;
    /// let b = Throttle::builder().seed(3).build()?;
    /// for _ in 0..50 {
    ///     let (x, y) = (a.try_acquire(), b.try_acquire());
    ///     assert_eq!(x.is_ok(), y.is_ok());
    ///     if let (Ok(x), Ok(y)) = (x, y) { x.overload(); y.overload(); }
    /// }
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The throttle.
    ///
    /// # Errors
    ///
    /// As [`ThrottleConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::throttle::{Throttle, ThrottleConfig};
    /// let e = Throttle::builder().config(ThrottleConfig::default().max_rejection(2.0)).build();
    /// assert_eq!(e.unwrap_err().field(), "max_rejection");
    /// ```
    pub fn build(self) -> Result<Throttle, ConfigError> {
        let config = self.config;
        config.validate()?;
        let seed = self.seed.unwrap_or_else(|| {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        });
        Ok(Throttle {
            inner: Arc::new(Inner {
                shape: Shape::new(config),
                clock: self.clock.unwrap_or_else(|| Arc::new(MonotonicClock)),
                rng: AtomicU64::new(seed),
                refused: AtomicU64::new(0),
                shadowed: AtomicU64::new(0),
                mode: ModeCell::new(config.mode),
            }),
        })
    }
}

/// Kind `"throttle"`: figures `requests` and `accepts` (the window's),
/// `rejection_permille` (the rejection probability, in thousandths),
/// `refused` and `shadowed` (since built).
///
/// # Examples
///
/// ```
/// use fusebox::policy::Inspect;
/// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
/// assert_eq!(t.kind(), "throttle");
/// let names: Vec<_> = t.figures().iter().map(|f| f.name).collect();
/// assert_eq!(names, ["requests", "accepts", "rejection_permille", "refused", "shadowed"]);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl crate::policy::Inspect for Throttle {
    fn kind(&self) -> &'static str {
        "throttle"
    }

    fn mode(&self) -> Mode {
        Throttle::mode(self)
    }

    fn figures(&self) -> Vec<crate::policy::Figure> {
        use crate::policy::Figure;
        let s = self.snapshot();
        vec![
            Figure::gauge("requests", "Requests in the throttle's window", s.requests),
            Figure::gauge("accepts", "Accepts in the throttle's window", s.accepts),
            Figure::gauge(
                "rejection_permille",
                "Throttle rejection probability, in thousandths",
                (s.rejection_probability * 1000.0).round() as u64,
            ),
            Figure::counter("refused", "Requests refused by a throttle", s.refused),
            Figure::counter(
                "shadowed",
                "Requests a throttle in shadow mode would have refused and let run",
                s.shadowed,
            ),
        ]
    }
}

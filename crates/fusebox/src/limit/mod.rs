//! Adaptive concurrency limit: a bulkhead whose limit follows the
//! dependency's latency (feature `limit`).
//!
//! A static [`Bulkhead`](crate::Bulkhead) of `N` passes at most `N / d`
//! calls a second when the dependency answers in `d`: sized for normal
//! times it lets a slowdown fill the caller's workers, sized small it
//! starves normal traffic. An [`AdaptiveLimit`] measures each call's
//! round-trip time and moves its limit so that about as many calls are in
//! flight as the dependency can serve without queueing, plus a little.
//!
//! # How the limit moves
//!
//! Admission ([`AdaptiveLimit::try_acquire`]) compares one atomic count of
//! calls in flight with the limit in force, with a compare-and-swap that
//! never admits above it: no lock. Each permit ends with a verdict:
//!
//! - [`LimitPermit::success`]: the call answered; its round-trip time from
//!   admission is a sample.
//! - [`LimitPermit::ignore`]: the answer says nothing about the dependency's
//!   load (a refusal from a policy inside, a client error); no sample.
//! - [`LimitPermit::dropped`]: a timeout or an overload answer (429, 503);
//!   the window it falls in cuts the limit by `backoff` (0.9).
//!
//! A permit dropped without a verdict (a panic, a cancelled future) gives
//! its slot back and is no sample.
//!
//! The limit changes at most once per *window*: when `window` (250 ms) has
//! passed and at least `min_samples` (5) answers arrived, the window's
//! average round-trip time, its largest in-flight count and whether it saw
//! a drop go to the [`Algorithm`] (Vegas by default, Gradient2, AIMD; see
//! its docs for the equations), and the result, clamped to `[min, max]`,
//! becomes the limit. A limit that was not in use (at most half of it in
//! flight during the window) never grows, and it never more than doubles in
//! one window. Every change of the limit starts a new *generation*: answers
//! to calls admitted before the change are not samples of the new limit
//! (their slot is given back, nothing else), so a window only measures the
//! limit it ran under.
//!
//! The no-load baseline neither sticks nor drifts: Vegas forgets its
//! lowest latency and measures it again every 15 to 30 windows (jittered);
//! Gradient2's is an average of the windows that decays (over about 600
//! windows, faster when it is more than twice the current latency).
//!
//! Time comes only from the [`Clock`] given to the [`Builder`] (a
//! [`ManualClock`](crate::ManualClock) in tests and in the lab's virtual
//! time).
//!
//! # Examples
//!
//! ```
//! use fusebox::limit::{AdaptiveLimit, LimitConfig};
//! use fusebox::ManualClock;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let reviews = AdaptiveLimit::builder()
//!     .config(LimitConfig::default().initial(4).window(Duration::from_secs(1), 4))
//!     .clock(clock.clone())
//!     .build()?;
//!
//! // Four at once are admitted, the fifth is refused.
//! let permits: Vec<_> = (0..4).map(|_| reviews.try_acquire().unwrap()).collect();
//! assert!(reviews.try_acquire().is_err());
//!
//! // They answer in 20 ms; a second later the window closes.
//! clock.advance(Duration::from_millis(20));
//! for p in permits {
//!     p.success();
//! }
//! assert_eq!(reviews.snapshot().in_flight, 0);
//! # Ok::<(), fusebox::ConfigError>(())
//! ```

mod algorithm;
mod config;
mod error;

pub use self::config::{Algorithm, LimitConfig, LimitConfigError};
pub use self::error::LimitExceeded;

use self::algorithm::{Estimator, Window};
use crate::policy::ModeCell;
use crate::sync::{lock, Arc, AtomicU64, Mutex, Ordering};
use crate::{Clock, Mode, MonotonicClock};
use std::fmt;
use std::time::Duration;

/// A concurrency limit that follows the dependency's latency.
///
/// Cheap to clone: clones share one limit, one count of calls in flight
/// and one set of counters. `Send + Sync + 'static`.
///
/// # Examples
///
/// ```
/// use fusebox::limit::{AdaptiveLimit, LimitConfig};
///
/// let search = AdaptiveLimit::new(LimitConfig::default())?;
/// let handler = search.clone();
/// assert_eq!(handler.call(|| 42), Ok(42));
/// assert_eq!(search.snapshot().admitted, 1);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct AdaptiveLimit {
    inner: Arc<Inner>,
}

struct Inner {
    /// The limit in force.
    limit: AtomicU64,
    in_flight: AtomicU64,
    /// Bumped on every change of the limit.
    generation: AtomicU64,
    /// The most calls in flight at an admission since the window opened.
    peak: AtomicU64,
    mode: ModeCell,
    clock: Arc<dyn Clock>,
    window: Mutex<Open>,
    admitted: AtomicU64,
    rejected: AtomicU64,
    shadowed: AtomicU64,
    dropped: AtomicU64,
    fenced: AtomicU64,
    /// The last closed window's average RTT, and the baseline, in ns.
    sample_rtt: AtomicU64,
    baseline_rtt: AtomicU64,
}

/// The window being filled, and the algorithm's memory.
struct Open {
    /// The settings in force (the mode is `Inner::mode`'s).
    config: LimitConfig,
    estimator: Estimator,
    started: u64,
    answers: u32,
    successes: u32,
    rtt_sum: u128,
    dropped: bool,
}

/// What an admitted call holds: Copy data, settled by
/// [`AdaptiveLimit::settle`] or [`AdaptiveLimit::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LimitTicket {
    /// Admission time (ns of the limit's clock).
    start: u64,
    /// The generation at admission; `u64::MAX` for a call that took no
    /// slot (mode off).
    generation: u64,
}

impl LimitTicket {
    /// A ticket that holds no slot.
    pub(crate) const BYPASS: LimitTicket = LimitTicket {
        start: 0,
        generation: u64::MAX,
    };

    fn held(self) -> bool {
        self.generation != u64::MAX
    }
}

/// How a call admitted by an [`AdaptiveLimit`] ended.
///
/// # Examples
///
/// ```
/// use fusebox::limit::Verdict;
/// use std::time::Duration;
/// let v = Verdict::Success(Duration::from_millis(30));
/// assert_ne!(v, Verdict::Dropped);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It answered after this round-trip time: a sample.
    Success(Duration),
    /// Its answer says nothing about the dependency's load: no sample.
    Ignore,
    /// It timed out or the dependency said it is overloaded: the window
    /// cuts the limit.
    Dropped,
}

impl AdaptiveLimit {
    /// An adaptive limit on the monotonic clock.
    ///
    /// # Errors
    ///
    /// As [`LimitConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// assert!(AdaptiveLimit::new(LimitConfig::default().min(0)).is_err());
    /// assert_eq!(AdaptiveLimit::new(LimitConfig::default())?.limit(), 20);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn new(config: LimitConfig) -> Result<Self, LimitConfigError> {
        Self::builder().config(config).build()
    }

    /// A builder: the config and the clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::builder()
    ///     .config(LimitConfig::default().initial(8))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// assert_eq!(l.limit(), 8);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn builder() -> Builder {
        Builder {
            config: LimitConfig::default(),
            clock: None,
        }
    }

    /// The settings it runs with.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, Algorithm, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::new(Algorithm::Aimd))?;
    /// assert_eq!(l.config().algorithm, Algorithm::Aimd);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn config(&self) -> LimitConfig {
        LimitConfig {
            mode: self.mode(),
            ..lock(&self.inner.window).config
        }
    }

    /// Whether [`reconfigure`](Self::reconfigure) takes `config`: any valid
    /// one.
    pub(crate) fn check(&self, config: &LimitConfig) -> Result<(), LimitConfigError> {
        config.validate()
    }

    /// Puts new settings in force, for every clone, keeping the calls in
    /// flight and the counters. The limit in force is kept, moved into the
    /// new `[min, max]` if it falls outside (`initial` is only where a new
    /// limit starts); a new `algorithm` starts from the limit in force with
    /// a baseline to measure again; the window being filled is judged by
    /// the new `window` and `min_samples` when it closes. A move of the
    /// limit fences the answers of calls admitted before it, as a move by
    /// the algorithm does.
    ///
    /// # Errors
    ///
    /// As [`LimitConfig::validate`]; the limit is then left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, Algorithm, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default().initial(20))?;
    /// l.reconfigure(LimitConfig::new(Algorithm::Aimd).max(10).initial(10))?;
    /// assert_eq!((l.limit(), l.config().algorithm), (10, Algorithm::Aimd));
    /// assert_eq!(l.reconfigure(LimitConfig::default().min(0)).unwrap_err().field(), "min");
    /// assert_eq!(l.config().max, 10); // unchanged
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: LimitConfig) -> Result<(), LimitConfigError> {
        self.check(&config)?;
        let inner = &*self.inner;
        let mut open = lock(&inner.window);
        let limit = inner.limit.load(Ordering::Relaxed);
        let moved = limit.clamp(u64::from(config.min), u64::from(config.max));
        if config.algorithm != open.config.algorithm {
            open.estimator = Estimator::new(&LimitConfig {
                initial: u32::try_from(moved).unwrap_or(config.max),
                ..config
            });
        } else {
            open.estimator.limit = open
                .estimator
                .limit
                .clamp(f64::from(config.min), f64::from(config.max));
        }
        open.config = config;
        if moved != limit {
            inner.generation.fetch_add(1, Ordering::AcqRel);
            inner.limit.store(moved, Ordering::Release);
        }
        drop(open);
        inner.mode.set(config.mode);
        Ok(())
    }

    /// The limit in force now.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// assert_eq!(AdaptiveLimit::new(LimitConfig::default().initial(5))?.limit(), 5);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u32 {
        u32::try_from(self.inner.limit.load(Ordering::Relaxed)).unwrap_or(u32::MAX)
    }

    /// The mode in force.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// use fusebox::Mode;
    /// let l = AdaptiveLimit::new(LimitConfig::default().mode(Mode::Shadow))?;
    /// assert_eq!(l.mode(), Mode::Shadow);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn mode(&self) -> Mode {
        self.inner.mode.get()
    }

    /// Changes the mode live (for every clone).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// use fusebox::Mode;
    /// let l = AdaptiveLimit::new(LimitConfig::default().initial(1))?;
    /// l.set_mode(Mode::Off);
    /// let _a = l.try_acquire().unwrap();
    /// assert!(l.try_acquire().is_ok()); // off admits everything
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn set_mode(&self, mode: Mode) {
        self.inner.mode.set(mode);
    }

    /// Admits a call if fewer than the limit are in flight.
    ///
    /// # Errors
    ///
    /// [`LimitExceeded`] when the limit is reached (in mode enforce; shadow
    /// admits and counts it as shadowed, off admits without counting).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default().initial(1))?;
    /// let p = l.try_acquire().unwrap();
    /// assert_eq!((p.limit(), p.in_flight()), (1, 1));
    /// assert!(l.try_acquire().is_err());
    /// drop(p); // no verdict: the slot comes back, no sample
    /// assert!(l.try_acquire().is_ok());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn try_acquire(&self) -> Result<LimitPermit, LimitExceeded> {
        let (ticket, limit, in_flight) = self.admit_counted()?;
        Ok(LimitPermit {
            owner: self.clone(),
            ticket,
            limit,
            in_flight,
            settled: false,
        })
    }

    /// Runs `f` if admitted, as a success whose round-trip time is `f`'s.
    ///
    /// # Errors
    ///
    /// [`LimitExceeded`] when the limit is reached; `f` is not run.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default())?;
    /// assert_eq!(l.call(|| "ok"), Ok("ok"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn call<T>(&self, f: impl FnOnce() -> T) -> Result<T, LimitExceeded> {
        let permit = self.try_acquire()?;
        let value = f();
        permit.success();
        Ok(value)
    }

    /// Admission, for the pipeline: the ticket alone.
    pub(crate) fn admit(&self) -> Result<LimitTicket, LimitExceeded> {
        self.admit_counted().map(|(t, _, _)| t)
    }

    /// Admission: the ticket, the limit in force and the calls in flight
    /// with this one.
    fn admit_counted(&self) -> Result<(LimitTicket, u32, u32), LimitExceeded> {
        let inner = &*self.inner;
        let mode = self.mode();
        if mode == Mode::Off {
            return Ok((LimitTicket::BYPASS, self.limit(), 0));
        }
        // The generation before the limit: a change between the two reads
        // makes this call's sample fenced, never one of the wrong limit.
        let generation = inner.generation.load(Ordering::Acquire);
        let limit = inner.limit.load(Ordering::Acquire);
        let mut current = inner.in_flight.load(Ordering::Relaxed);
        loop {
            if current >= limit {
                if mode == Mode::Enforce {
                    inner.rejected.fetch_add(1, Ordering::Relaxed);
                    return Err(LimitExceeded::new(u32::try_from(limit).unwrap_or(u32::MAX)));
                }
                inner.shadowed.fetch_add(1, Ordering::Relaxed);
                current = inner.in_flight.fetch_add(1, Ordering::AcqRel);
                break;
            }
            match inner.in_flight.compare_exchange_weak(
                current,
                current + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        let now_in_flight = current + 1;
        if inner.peak.load(Ordering::Relaxed) < now_in_flight {
            inner.peak.fetch_max(now_in_flight, Ordering::Relaxed);
        }
        inner.admitted.fetch_add(1, Ordering::Relaxed);
        let ticket = LimitTicket {
            start: inner.clock.now_nanos(),
            generation,
        };
        let as_u32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Ok((ticket, as_u32(limit), as_u32(now_in_flight)))
    }

    /// Gives the slot back with a verdict.
    pub(crate) fn settle(&self, ticket: LimitTicket, verdict: Verdict) {
        if !ticket.held() {
            return;
        }
        let inner = &*self.inner;
        inner.in_flight.fetch_sub(1, Ordering::AcqRel);
        let rtt = match verdict {
            Verdict::Ignore => return,
            Verdict::Dropped => {
                inner.dropped.fetch_add(1, Ordering::Relaxed);
                None
            }
            Verdict::Success(rtt) => Some(crate::clock::nanos(rtt)),
        };
        self.sample(ticket, rtt);
    }

    /// Gives the slot back with a success measured from admission to now.
    pub(crate) fn settle_success(&self, ticket: LimitTicket) {
        if !ticket.held() {
            return;
        }
        let now = self.inner.clock.now_nanos();
        let rtt = Duration::from_nanos(now.saturating_sub(ticket.start));
        self.settle(ticket, Verdict::Success(rtt));
    }

    /// Gives the slot back without a verdict.
    pub(crate) fn release(&self, ticket: LimitTicket) {
        if ticket.held() {
            self.inner.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// One answer (`None`: a drop) into the open window; closes the window
    /// when it is due.
    fn sample(&self, ticket: LimitTicket, rtt: Option<u64>) {
        let inner = &*self.inner;
        let mut open = lock(&inner.window);
        if ticket.generation != inner.generation.load(Ordering::Acquire) {
            inner.fenced.fetch_add(1, Ordering::Relaxed);
            return;
        }
        open.answers += 1;
        match rtt {
            Some(rtt) => {
                open.successes += 1;
                open.rtt_sum += u128::from(rtt);
            }
            None => open.dropped = true,
        }
        let now = inner.clock.now_nanos();
        let config = open.config;
        if now.saturating_sub(open.started) < crate::clock::nanos(config.window)
            || open.answers < config.min_samples
        {
            return;
        }
        let rtt = if open.successes == 0 {
            0.0
        } else {
            (open.rtt_sum / u128::from(open.successes)) as f64
        };
        let peak = inner
            .peak
            .swap(inner.in_flight.load(Ordering::Relaxed), Ordering::Relaxed);
        let window = Window {
            rtt,
            max_in_flight: peak,
            dropped: open.dropped,
        };
        let limit = open.estimator.update(&config, window);
        let limit = (limit.floor() as u64).clamp(u64::from(config.min), u64::from(config.max));
        if rtt > 0.0 {
            inner.sample_rtt.store(rtt as u64, Ordering::Relaxed);
        }
        inner
            .baseline_rtt
            .store(open.estimator.baseline as u64, Ordering::Relaxed);
        open.started = now;
        open.answers = 0;
        open.successes = 0;
        open.rtt_sum = 0;
        open.dropped = false;
        if limit != inner.limit.load(Ordering::Relaxed) {
            inner.generation.fetch_add(1, Ordering::AcqRel);
            inner.limit.store(limit, Ordering::Release);
        }
    }

    /// The figures now.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default().initial(3))?;
    /// let _p = l.try_acquire().unwrap();
    /// let s = l.snapshot();
    /// assert_eq!((s.limit, s.in_flight, s.admitted, s.rejected), (3, 1, 1, 0));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> LimitSnapshot {
        let i = &*self.inner;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LimitSnapshot {
            limit: self.limit(),
            in_flight: r(&i.in_flight),
            generation: r(&i.generation),
            admitted: r(&i.admitted),
            rejected: r(&i.rejected),
            shadowed: r(&i.shadowed),
            dropped: r(&i.dropped),
            fenced: r(&i.fenced),
            sample_rtt: Duration::from_nanos(r(&i.sample_rtt)),
            baseline_rtt: Duration::from_nanos(r(&i.baseline_rtt)),
        }
    }
}

impl fmt::Debug for AdaptiveLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveLimit")
            .field("algorithm", &self.config().algorithm)
            .field("limit", &self.limit())
            .field("in_flight", &self.inner.in_flight.load(Ordering::Relaxed))
            .field("mode", &self.mode())
            .finish()
    }
}

/// Builds an [`AdaptiveLimit`]: its [`LimitConfig`] and its [`Clock`].
///
/// # Examples
///
/// ```
/// use fusebox::limit::{AdaptiveLimit, Algorithm, LimitConfig};
/// let l = AdaptiveLimit::builder()
///     .config(LimitConfig::new(Algorithm::Gradient2))
///     .clock(fusebox::ManualClock::new())
///     .build()?;
/// assert_eq!(l.config().algorithm, Algorithm::Gradient2);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use]
pub struct Builder {
    config: LimitConfig,
    clock: Option<Arc<dyn Clock>>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("config", &self.config)
            .field("custom_clock", &self.clock.is_some())
            .finish()
    }
}

impl Builder {
    /// The settings.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::limit::AdaptiveLimit::builder()
    ///     .config(fusebox::limit::LimitConfig::default().max(10).initial(5));
    /// assert_eq!(b.build()?.config().max, 10);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn config(mut self, config: LimitConfig) -> Self {
        self.config = config;
        self
    }

    /// The clock round-trip times and windows are measured on (the
    /// monotonic clock by default).
    ///
    /// # Examples
    ///
    /// ```
    /// let l = fusebox::limit::AdaptiveLimit::builder()
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// assert_eq!(l.limit(), 20);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The limit.
    ///
    /// # Errors
    ///
    /// As [`LimitConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// let e = fusebox::limit::AdaptiveLimit::builder()
    ///     .config(fusebox::limit::LimitConfig::default().initial(0))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(e.field(), "initial"); // below `min` (1)
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<AdaptiveLimit, LimitConfigError> {
        let config = self.config;
        config.validate()?;
        let clock: Arc<dyn Clock> = self.clock.unwrap_or_else(|| Arc::new(MonotonicClock));
        let started = clock.now_nanos();
        Ok(AdaptiveLimit {
            inner: Arc::new(Inner {
                limit: AtomicU64::new(u64::from(config.initial)),
                in_flight: AtomicU64::new(0),
                generation: AtomicU64::new(0),
                peak: AtomicU64::new(0),
                mode: ModeCell::new(config.mode),
                clock,
                window: Mutex::new(Open {
                    config,
                    estimator: Estimator::new(&config),
                    started,
                    answers: 0,
                    successes: 0,
                    rtt_sum: 0,
                    dropped: false,
                }),
                admitted: AtomicU64::new(0),
                rejected: AtomicU64::new(0),
                shadowed: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                fenced: AtomicU64::new(0),
                sample_rtt: AtomicU64::new(0),
                baseline_rtt: AtomicU64::new(0),
            }),
        })
    }
}

/// A slot of an [`AdaptiveLimit`], held while the call runs. End it with
/// [`success`](Self::success), [`ignore`](Self::ignore) or
/// [`dropped`](Self::dropped); dropped without one, it gives its slot back
/// and is no sample.
///
/// # Examples
///
/// ```
/// use fusebox::limit::{AdaptiveLimit, LimitConfig};
/// let l = AdaptiveLimit::new(LimitConfig::default())?;
/// let p = l.try_acquire().unwrap();
/// p.dropped(); // a timeout
/// assert_eq!(l.snapshot().dropped, 1);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use = "a permit gives its slot back when dropped"]
pub struct LimitPermit {
    owner: AdaptiveLimit,
    ticket: LimitTicket,
    limit: u32,
    in_flight: u32,
    settled: bool,
}

impl LimitPermit {
    /// The limit in force when it was admitted.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default().initial(7))?;
    /// assert_eq!(l.try_acquire().unwrap().limit(), 7);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Calls in flight right after it was admitted, itself included (0 in
    /// mode off).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default())?;
    /// let _a = l.try_acquire().unwrap();
    /// assert_eq!(l.try_acquire().unwrap().in_flight(), 2);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// The call answered: its round-trip time, from admission to now on the
    /// limit's clock, is a sample.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default())?;
    /// l.try_acquire().unwrap().success();
    /// assert_eq!(l.snapshot().in_flight, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn success(mut self) {
        self.settled = true;
        self.owner.settle_success(self.ticket);
    }

    /// The call answered after `rtt` (measured by the caller).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default())?;
    /// l.try_acquire().unwrap().success_after(std::time::Duration::from_millis(12));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn success_after(mut self, rtt: Duration) {
        self.settled = true;
        self.owner.settle(self.ticket, Verdict::Success(rtt));
    }

    /// The answer says nothing about the dependency's load: no sample.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default())?;
    /// l.try_acquire().unwrap().ignore();
    /// assert_eq!(l.snapshot().dropped, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn ignore(mut self) {
        self.settled = true;
        self.owner.settle(self.ticket, Verdict::Ignore);
    }

    /// The call timed out or was told the dependency is overloaded: the
    /// window it closes in cuts the limit by `backoff`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let l = AdaptiveLimit::new(LimitConfig::default())?;
    /// l.try_acquire().unwrap().dropped();
    /// assert_eq!(l.snapshot().dropped, 1);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn dropped(mut self) {
        self.settled = true;
        self.owner.settle(self.ticket, Verdict::Dropped);
    }

    /// Ends it with `verdict`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig, Verdict};
    /// let l = AdaptiveLimit::new(LimitConfig::default())?;
    /// l.try_acquire().unwrap().finish(Verdict::Ignore);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn finish(mut self, verdict: Verdict) {
        self.settled = true;
        self.owner.settle(self.ticket, verdict);
    }
}

impl Drop for LimitPermit {
    fn drop(&mut self) {
        if !self.settled {
            self.owner.release(self.ticket);
        }
    }
}

impl fmt::Debug for LimitPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimitPermit")
            .field("limit", &self.limit)
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

/// A reading of an [`AdaptiveLimit`], from [`AdaptiveLimit::snapshot`].
///
/// # Examples
///
/// ```
/// use fusebox::limit::{AdaptiveLimit, LimitConfig};
/// let s = AdaptiveLimit::new(LimitConfig::default())?.snapshot();
/// assert_eq!((s.limit, s.in_flight, s.generation), (20, 0, 0));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitSnapshot {
    /// The limit in force.
    pub limit: u32,
    /// Calls holding a slot now.
    pub in_flight: u64,
    /// How many times the limit has changed.
    pub generation: u64,
    /// Calls admitted.
    pub admitted: u64,
    /// Calls refused (mode enforce).
    pub rejected: u64,
    /// Calls that found the limit reached in mode shadow and ran anyway.
    pub shadowed: u64,
    /// Calls that ended dropped (timed out, overloaded).
    pub dropped: u64,
    /// Answers to calls admitted under an earlier limit, not sampled.
    pub fenced: u64,
    /// The last closed window's average round-trip time.
    pub sample_rtt: Duration,
    /// The algorithm's no-load baseline (zero for AIMD).
    pub baseline_rtt: Duration,
}

/// Kind `"limit"`; figures `limit`, `in_flight`, `baseline_rtt_us`,
/// `sample_rtt_us`, `rejections`, `drops`, `shadowed`.
///
/// # Examples
///
/// ```
/// use fusebox::limit::{AdaptiveLimit, LimitConfig};
/// use fusebox::policy::Inspect;
/// let l = AdaptiveLimit::new(LimitConfig::default())?;
/// assert_eq!(l.kind(), "limit");
/// let names: Vec<_> = l.figures().iter().map(|f| f.name).collect();
/// assert_eq!(names[..2], ["limit", "in_flight"]);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl crate::policy::Inspect for AdaptiveLimit {
    fn kind(&self) -> &'static str {
        "limit"
    }

    fn mode(&self) -> Mode {
        AdaptiveLimit::mode(self)
    }

    fn figures(&self) -> Vec<crate::policy::Figure> {
        use crate::policy::Figure;
        let s = self.snapshot();
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        vec![
            Figure::gauge("limit", "Adaptive limit in force", u64::from(s.limit)),
            Figure::gauge(
                "in_flight",
                "Calls holding an adaptive limit slot",
                s.in_flight,
            ),
            Figure::gauge(
                "baseline_rtt_us",
                "Adaptive limit no-load round-trip time, microseconds",
                us(s.baseline_rtt),
            ),
            Figure::gauge(
                "sample_rtt_us",
                "Adaptive limit last window's round-trip time, microseconds",
                us(s.sample_rtt),
            ),
            Figure::counter(
                "rejections",
                "Calls refused by an adaptive limit",
                s.rejected,
            ),
            Figure::counter(
                "drops",
                "Calls that timed out or were overloaded",
                s.dropped,
            ),
            Figure::counter(
                "shadowed",
                "Calls that found an adaptive limit in shadow mode reached and ran anyway",
                s.shadowed,
            ),
        ]
    }
}

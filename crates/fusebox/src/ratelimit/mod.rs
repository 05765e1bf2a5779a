//! Rate limiter: at most so many calls per second to one dependency (feature
//! `ratelimit`).
//!
//! A breaker reacts to a dependency that is already failing; a bulkhead caps
//! how many calls wait on it at once. Neither stops a healthy caller from
//! *asking too often*: a retry storm, a loop that fans out, a batch job
//! that starts at full speed. Many dependencies publish a rate (a partner
//! API's 100 requests a second, a database sized for so many queries) and
//! answer above it with 429s, throttling or a slowdown everyone else pays
//! for. Limiting the rate on the client side keeps a caller inside that
//! contract, and refuses the excess at once, locally, where it costs
//! nothing, instead of sending it to be refused remotely.
//!
//! # GCRA and burst
//!
//! The decision is governor's ([`governor`](https://docs.rs/governor)): the
//! generic cell rate algorithm, a leaky bucket kept as one number per
//! limiter, the *theoretical arrival time* of the next call, updated with
//! one compare-and-swap. With `per_second = 10`, a call conforms every
//! 100 ms on average; `burst` is how many may go at once after a quiet
//! spell (the bucket's size). A burst of 1 spaces calls strictly 100 ms
//! apart; a burst of 10 lets ten through at once, then one every 100 ms.
//! A refused call says when the next one would conform
//! ([`RateLimited::retry_after`]), so callers and retries can wait exactly
//! that long instead of guessing.
//!
//! [`RateLimiter::try_acquire`] answers at once. Waiting is opt-in and
//! bounded: `RateLimiter::acquire_async(max_wait)` (feature `tokio`) waits
//! when the next cell is due within `max_wait`, and otherwise refuses at
//! once, without sleeping until the deadline: governor says up front how
//! long the wait would be.
//!
//! # Mode
//!
//! Like every fusebox policy a limiter has a [`Mode`]: in shadow it decides
//! as if enforcing and counts what it would have refused
//! ([`RateLimitSnapshot::shadowed`]) but lets every call run, which
//! is how a limit is rolled out safely; off admits everything and counts
//! nothing. The mode changes live ([`RateLimiter::set_mode`]).
//!
//! # One key, many keys
//!
//! [`RateLimiter`] holds one rate (calls to one dependency). A
//! [`KeyedRateLimiter`] holds the same rate for each key (per tenant, per
//! host, per API key), with bounded memory (see its `# Memory`).
//!
//! Tower middleware (feature `tower`): `fusebox::ratelimit::RateLimitLayer`
//! (in `fusebox::ratelimit::tower`, with its service and future).
//!
//! # Examples
//!
//! ```
//! use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
//! use fusebox::ManualClock;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let partner_api = RateLimiter::builder()
//!     .config(RateLimitConfig::per_second(10).burst(2))
//!     .clock(clock.clone())
//!     .build()?;
//!
//! // A burst of two, then the rate: one call every 100 ms.
//! assert!(partner_api.try_acquire().is_ok());
//! assert!(partner_api.try_acquire().is_ok());
//! let limited = partner_api.try_acquire().unwrap_err();
//! assert_eq!(limited.retry_after(), Duration::from_millis(100));
//!
//! clock.advance(Duration::from_millis(100));
//! assert_eq!(partner_api.call(|| "sent"), Ok("sent"));
//! # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
//! ```

mod clock;
mod config;
mod counters;
mod error;
mod keyed;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

pub use self::config::{RateLimitConfig, RateLimitConfigError};
pub use self::counters::RateLimitSnapshot;
pub use self::error::RateLimited;
pub use self::keyed::{KeyedBuilder, KeyedRateLimiter, KeyedSnapshot};
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use self::tower::RateLimitLayer;

use self::clock::GovernorClock;
use self::counters::{Counters, Verdict};
use crate::policy::ModeCell;
use crate::sync::Swap;
use crate::{Clock, Mode, MonotonicClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::Quota;
use std::fmt;
use std::sync::Arc;

/// governor's direct limiter on fusebox's clock. (The middleware must be
/// named: governor's default is the no-op for *its* default clock's instant.)
type Direct = governor::RateLimiter<NotKeyed, InMemoryState, GovernorClock, NoOpMiddleware<Nanos>>;

/// A limit on the rate of calls to one dependency.
///
/// Cheap to clone: clones share one rate, one mode and one set of counters,
/// so hand a clone to every caller of the dependency. `Send + Sync +
/// 'static`.
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
///
/// let search = RateLimiter::new(RateLimitConfig::per_second(100))?;
/// let handler = search.clone();
/// assert!(handler.try_acquire().is_ok());
/// assert_eq!(search.snapshot().admitted, 1);
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[derive(Clone)]
pub struct RateLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    /// Replaced whole by [`RateLimiter::reconfigure`] when the quota changes.
    limiter: Swap<Limiter>,
    mode: ModeCell,
    counters: Counters,
    clock: GovernorClock,
    name: Option<String>,
}

/// One quota, the settings it came from, and governor's state for it.
struct Limiter {
    /// Resolved; its mode is not read (the live mode is `Inner::mode`).
    config: RateLimitConfig,
    quota: Quota,
    gcra: Direct,
}

impl Limiter {
    fn new(config: RateLimitConfig, quota: Quota, clock: &GovernorClock) -> Self {
        Limiter {
            config: RateLimitConfig {
                burst: Some(quota.burst_size().get()),
                ..config
            },
            quota,
            gcra: governor::RateLimiter::direct_with_clock(quota, clock.clone()),
        }
    }
}

/// Builds a [`RateLimiter`]; from [`RateLimiter::builder`].
///
/// # Default
///
/// - `config`: none: a rate must be given ([`RateLimitConfig::per_second`]
///   or [`RateLimitConfig::every`]); its own defaults are listed on
///   [`RateLimitConfig`]
/// - `clock`: [`MonotonicClock`]
/// - `name`: none
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
///
/// let limiter = RateLimiter::builder()
///     .config(RateLimitConfig::per_second(5))
///     .name("geocoder")
///     .build()?;
/// assert_eq!(limiter.name(), Some("geocoder"));
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    config: Option<RateLimitConfig>,
    clock: Option<Arc<dyn Clock>>,
    name: Option<String>,
}

impl Builder {
    /// The rate, burst and mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::builder().config(RateLimitConfig::per_second(3)).build()?;
    /// assert_eq!(limiter.config().per_second, Some(3));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn config(mut self, config: RateLimitConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The clock the limiter reads time from (a [`ManualClock`](crate::ManualClock)
    /// in tests).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use fusebox::ManualClock;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(1))
    ///     .clock(clock.clone())
    ///     .build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// assert!(limiter.try_acquire().is_err());
    /// clock.advance(Duration::from_secs(1));
    /// assert!(limiter.try_acquire().is_ok());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// A name for logs, metrics and error messages.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(3))
    ///     .name("payments")
    ///     .build()?;
    /// assert_eq!(limiter.name(), Some("payments"));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Validates the settings once and builds the limiter, its burst full.
    ///
    /// # Errors
    ///
    /// A [`RateLimitConfigError`] naming the first setting that cannot work
    /// (see [`RateLimitConfig::validate`]); `per_second` when no config was
    /// given.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let err = RateLimiter::builder().build().unwrap_err();
    /// assert_eq!(err.field(), "per_second");
    /// let err = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(10).burst(0))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "invalid rate limiter setting `burst` = 0: must be at least 1");
    /// ```
    pub fn build(self) -> Result<RateLimiter, RateLimitConfigError> {
        let config = self.config.unwrap_or(RateLimitConfig {
            per_second: None,
            period: None,
            burst: None,
            mode: Mode::Enforce,
        });
        let quota = config.quota()?;
        let clock = GovernorClock(self.clock.unwrap_or_else(|| Arc::new(MonotonicClock)));
        Ok(RateLimiter {
            inner: Arc::new(Inner {
                limiter: Swap::new(Arc::new(Limiter::new(config, quota, &clock))),
                mode: ModeCell::new(config.mode),
                counters: Counters::default(),
                clock,
                name: self.name,
            }),
        })
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("config", &self.config)
            .field("clock", &self.clock.as_ref().map(|_| "custom"))
            .field("name", &self.name)
            .finish()
    }
}

impl RateLimiter {
    /// A limiter with these settings, on the monotonic clock.
    ///
    /// # Errors
    ///
    /// As [`RateLimitConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::new(RateLimitConfig::per_second(50).burst(5))?;
    /// assert_eq!(limiter.config().burst, Some(5));
    /// assert!(RateLimiter::new(RateLimitConfig::per_second(0)).is_err());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn new(config: RateLimitConfig) -> Result<Self, RateLimitConfigError> {
        Self::builder().config(config).build()
    }

    /// A builder: settings, clock and name.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(2))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// # let _ = limiter;
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn builder() -> Builder {
        Builder {
            config: None,
            clock: None,
            name: None,
        }
    }

    /// Takes a cell if the rate allows it now; never waits. There is nothing
    /// to give back: the cell is spent when taken, whatever the call does.
    ///
    /// In shadow mode a call over the rate is let through (and counted as
    /// `shadowed`); in off mode every call is, uncounted.
    ///
    /// # Errors
    ///
    /// [`RateLimited`] when the rate is spent (mode enforce), with how long
    /// until the next call would conform.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use std::time::Duration;
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(4).burst(1))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// assert!(limiter.try_acquire().is_ok());
    /// assert_eq!(limiter.try_acquire().unwrap_err().retry_after(), Duration::from_millis(250));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    #[inline]
    pub fn try_acquire(&self) -> Result<(), RateLimited> {
        let inner = &*self.inner;
        inner.counters.decide(inner.mode.get(), || inner.check())
    }

    /// Runs `f` if the rate allows a call now; never waits.
    ///
    /// # Errors
    ///
    /// [`RateLimited`] when the rate is spent; `f` is not run.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(1))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// assert_eq!(limiter.call(|| 40 + 2), Ok(42));
    /// let mut ran = false;
    /// assert!(limiter.call(|| ran = true).is_err());
    /// assert!(!ran);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn call<T>(&self, f: impl FnOnce() -> T) -> Result<T, RateLimited> {
        self.try_acquire()?;
        Ok(f())
    }

    /// The mode in force.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::new(RateLimitConfig::per_second(1))?;
    /// assert_eq!(limiter.mode(), fusebox::Mode::Enforce);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn mode(&self) -> Mode {
        self.inner.mode.get()
    }

    /// Changes the mode in place, for every clone, from the next call on.
    /// The rate's state is kept: switching shadow to enforce does not give
    /// a fresh burst.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use fusebox::Mode;
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(1))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire().unwrap();
    /// limiter.set_mode(Mode::Off);
    /// assert!(limiter.try_acquire().is_ok());
    /// limiter.set_mode(Mode::Enforce);
    /// assert!(limiter.try_acquire().is_err());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn set_mode(&self, mode: Mode) {
        self.inner.mode.set(mode);
    }

    /// Replaces the settings in place, for every clone.
    ///
    /// governor cannot change a quota in place, so a *new* rate or burst
    /// replaces the limiter's state, atomically: calls already past the
    /// limiter are unaffected, and the new quota starts with its burst full
    /// (a reconfiguration grants at most one extra burst). The same quota
    /// keeps the state: reapplying an unchanged file changes nothing but
    /// the mode. Counters carry on.
    ///
    /// # Errors
    ///
    /// As [`RateLimitConfig::validate`]; the limiter is then left as it was.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(1))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// limiter.try_acquire().unwrap();
    /// assert!(limiter.try_acquire().is_err());
    ///
    /// limiter.reconfigure(RateLimitConfig::per_second(1))?; // unchanged: still spent
    /// assert!(limiter.try_acquire().is_err());
    /// limiter.reconfigure(RateLimitConfig::per_second(3))?; // new quota, full burst
    /// assert!(limiter.try_acquire().is_ok());
    /// assert_eq!(limiter.config().burst, Some(3));
    /// assert!(limiter.reconfigure(RateLimitConfig::per_second(0)).is_err());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: RateLimitConfig) -> Result<(), RateLimitConfigError> {
        let quota = config.quota()?;
        let inner = &*self.inner;
        // The settings in force are compared, not the configs: `per_second
        // = 1` and `period = "1s"` are one quota, and keep its state.
        if inner.limiter.load().quota != quota {
            inner
                .limiter
                .store(Arc::new(Limiter::new(config, quota, &inner.clock)));
        }
        inner.mode.set(config.mode);
        Ok(())
    }

    /// The settings in force, every default written out, with the current
    /// mode. (After a [`reconfigure`](Self::reconfigure) to the same quota
    /// written another way, `per_second` for `period`, the form in force
    /// stays.)
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use std::time::Duration;
    /// let limiter = RateLimiter::new(RateLimitConfig::every(Duration::from_secs(2)))?;
    /// let config = limiter.config();
    /// assert_eq!((config.period, config.burst), (Some(Duration::from_secs(2)), Some(1)));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn config(&self) -> RateLimitConfig {
        RateLimitConfig {
            mode: self.mode(),
            ..self.inner.limiter.load().config
        }
    }

    /// The name given to the builder, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// assert_eq!(RateLimiter::new(RateLimitConfig::per_second(1))?.name(), None);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// The mode and the counters: calls admitted, refused, and let through
    /// over the rate by shadow mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(1))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// let _ = limiter.try_acquire();
    /// let _ = limiter.try_acquire();
    /// let s = limiter.snapshot();
    /// assert_eq!((s.admitted, s.refused, s.shadowed), (1, 1, 0));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn snapshot(&self) -> RateLimitSnapshot {
        self.inner.counters.snapshot(self.mode())
    }
}

#[cfg(feature = "tokio")]
impl RateLimiter {
    /// Takes a cell, waiting (asynchronously) when the next one is due
    /// within `max_wait`; refuses at once, without waiting, when it is not.
    ///
    /// The wait is known up front (governor says when the next call would
    /// conform), so a call is not put to sleep when its wait is already past
    /// the deadline. Waiters are not queued: a waiter that wakes to find its
    /// cell taken by another call waits again, within the same deadline, and
    /// may then be refused after sleeping.
    /// In shadow mode nothing waits: a call over the rate (one that
    /// enforcing would have made wait, or refused) runs at once and is
    /// counted as `shadowed`.
    ///
    /// Sleeps on tokio's timer, so it needs a tokio runtime with time
    /// enabled; the limiter's clock must move with tokio's time (the default
    /// monotonic clock does; in tests with paused time, give the limiter a
    /// clock that reads `tokio::time::Instant`).
    ///
    /// # Errors
    ///
    /// [`RateLimited`] when the next cell is not due within `max_wait`.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a waiting call holds nothing, and takes its cell only
    /// when it completes.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = RateLimiter::new(RateLimitConfig::per_second(20).burst(1))?;
    /// limiter.try_acquire()?;
    /// // The next cell is due in 50 ms: too late for a 1 ms budget...
    /// let limited = limiter.acquire_async(Duration::from_millis(1)).await.unwrap_err();
    /// assert!(limited.retry_after() > Duration::from_millis(1));
    /// // ...in time for a 200 ms one.
    /// limiter.acquire_async(Duration::from_millis(200)).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn acquire_async(&self, max_wait: std::time::Duration) -> Result<(), RateLimited> {
        let inner = &*self.inner;
        let start = tokio::time::Instant::now();
        loop {
            // Read on every round: a mode changed during a wait applies.
            let mode = inner.mode.get();
            if mode == Mode::Off {
                return Ok(());
            }
            let wait = match inner.check() {
                Verdict::Conforms => return inner.counters.decide(mode, || Verdict::Conforms),
                Verdict::Exceeds(wait) => wait,
            };
            // Decided before sleeping: the whole wait, earlier rounds
            // included, must fit in `max_wait`.
            let fits = start.elapsed().saturating_add(wait) <= max_wait;
            // Shadow never waits: a call that enforcing would have made
            // wait, or refused, runs now and counts as shadowed (it took no
            // cell, so counting it admitted would hide every call over the
            // rate).
            if !fits || mode == Mode::Shadow {
                return inner.counters.decide(mode, || Verdict::Exceeds(wait));
            }
            tokio::time::sleep(wait).await;
        }
    }
}

impl Inner {
    /// governor's verdict now.
    #[inline]
    fn check(&self) -> Verdict {
        match self.limiter.load().gcra.check() {
            Ok(()) => Verdict::Conforms,
            Err(not_until) => Verdict::Exceeds(not_until.wait_time_from(self.clock.nanos())),
        }
    }
}

/// The limiter's figures: `admitted`, `refused` and `shadowed` (counters),
/// exported by `fusebox::metrics` as `fusebox_rate_limiter_admitted_total`
/// and so on.
///
/// # Examples
///
/// ```
/// use fusebox::policy::Inspect;
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
/// let limiter = RateLimiter::new(RateLimitConfig::per_second(1))?;
/// let _ = limiter.try_acquire();
/// let _ = limiter.try_acquire();
/// let f = limiter.figures();
/// assert_eq!(limiter.kind(), "rate_limiter");
/// assert_eq!((f[0].name, f[0].value), ("admitted", 1));
/// assert_eq!((f[1].name, f[1].value), ("refused", 1));
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
impl crate::policy::Inspect for RateLimiter {
    fn kind(&self) -> &'static str {
        "rate_limiter"
    }

    fn mode(&self) -> Mode {
        RateLimiter::mode(self)
    }

    fn figures(&self) -> Vec<crate::policy::Figure> {
        self.snapshot().figures()
    }
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quota = self.inner.limiter.load().quota;
        f.debug_struct("RateLimiter")
            .field("name", &self.inner.name)
            .field("interval", &quota.replenish_interval())
            .field("burst", &quota.burst_size())
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

//! Time, as fusebox sees it: monotonic nanoseconds from a fixed origin.
//!
//! Every timing decision in fusebox (when an open breaker may probe, which
//! bucket a call falls in, whether a call was slow) reads time through a
//! [`Clock`]. Production code uses [`MonotonicClock`], which never jumps when
//! the wall clock is changed (seed 003's point). Tests and simulations use
//! [`ManualClock`] and move time by hand, so no test ever has to sleep.

use crate::sync::{Arc, AtomicU64, Ordering};
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A source of monotonic time.
///
/// `now()` returns the time elapsed since an origin fixed for the clock's whole
/// life. It should never go backwards. If it does (a clock set back, a
/// broken implementation), a breaker treats the jump as no time passing: its
/// own time carries on from the latest reading it had seen, shifted by the
/// size of the jump from then on, so open periods, windows and `retry_after`
/// keep their lengths. Call durations saturate at zero. Nothing panics.
///
/// # Examples
///
/// A clock that reads a shared counter:
///
/// ```
/// use fusebox::Clock;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// #[derive(Default)]
/// struct Ticks(AtomicU64);
///
/// impl Clock for Ticks {
///     fn now(&self) -> Duration {
///         Duration::from_millis(self.0.load(Ordering::Relaxed))
///     }
/// }
///
/// let clock = Ticks::default();
/// clock.0.store(1500, Ordering::Relaxed);
/// assert_eq!(clock.now(), Duration::from_millis(1500));
/// ```
pub trait Clock: Send + Sync + 'static {
    /// Time elapsed since this clock's origin.
    fn now(&self) -> Duration;
}

/// The default clock: [`Instant`], measured from one origin per process.
///
/// Immune to wall-clock changes (NTP steps, manual changes, leap seconds).
///
/// # Examples
///
/// ```
/// use fusebox::{Clock, MonotonicClock};
///
/// let clock = MonotonicClock;
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }
}

/// A clock that only moves when told to.
///
/// Clones share one time: advance any of them and all see it, from any thread.
/// Starts at zero.
///
/// # Examples
///
/// ```
/// use fusebox::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let seen_by_breaker = clock.clone();
/// clock.advance(Duration::from_millis(250));
/// assert_eq!(seen_by_breaker.now(), Duration::from_millis(250));
/// clock.set(Duration::from_secs(2));
/// assert_eq!(seen_by_breaker.now(), Duration::from_secs(2));
/// ```
#[derive(Clone)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A new clock reading zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, ManualClock};
    /// assert_eq!(ManualClock::new().now(), std::time::Duration::ZERO);
    /// ```
    pub fn new() -> Self {
        ManualClock {
            nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves time forward by `by` (saturating at about 584 years).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_secs(1));
    /// clock.advance(Duration::from_millis(500));
    /// assert_eq!(clock.now(), Duration::from_millis(1500));
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = nanos(by);
        // Relaxed: the clock is a single value; callers that need ordering with
        // other memory get it from their own synchronisation.
        let _ = self
            .nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Sets the time to `to`. Setting it backwards breaks the [`Clock`]
    /// promise; a breaker treats the jump as no time passing (see
    /// [`Clock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// clock.set(Duration::from_millis(743));
    /// assert_eq!(clock.now(), Duration::from_millis(743));
    /// ```
    pub fn set(&self, to: Duration) {
        // Relaxed: see `advance`.
        self.nanos.store(nanos(to), Ordering::Relaxed);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManualClock").field(&self.now()).finish()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        // Relaxed: see `advance`.
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// Nanoseconds in `d`, saturating at `u64::MAX` (about 584 years).
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

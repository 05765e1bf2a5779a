//! Backoff: how long to wait before each retry, as an `Iterator<Item = Duration>`.
//!
//! Any `Iterator<Item = Duration> + Clone` is a backoff: [`Retry`](super::Retry)
//! clones its template for every call and takes one delay per retry; when the
//! iterator ends, retrying ends. The ones here:
//!
//! | type | delays |
//! |---|---|
//! | [`Constant`] | `d, d, d, ...` |
//! | [`Exponential`] | `initial, initial*f, initial*f^2, ...` capped at `max` |
//! | [`FullJitter`] | each delay of another backoff drawn uniformly from `[0, delay]` (AWS "full jitter") |
//! | [`DecorrelatedJitter`] | `min(max, uniform(base, previous * 3))` (AWS "decorrelated jitter") |
//!
//! Jitter matters when many callers fail at once: without it they all retry
//! at the same instants and hit the recovering dependency in waves.
//!
//! # Randomness
//!
//! The jittered backoffs use a small built-in generator (SplitMix64), so the
//! core crate needs no dependency. `with_seed` makes them deterministic. Every
//! clone (one per call, made by `Retry`) continues with its own stream derived
//! from the seed and the clone's number, so two calls never share a sequence,
//! and a seeded program still replays exactly when its calls happen in the
//! same order.
//!
//! ```
//! use fusebox::retry::{Exponential, FullJitter};
//! use std::time::Duration;
//!
//! let template = FullJitter::with_seed(Exponential::default(), 7);
//! let first: Vec<Duration> = template.clone().take(3).collect();
//! let again: Vec<Duration> = FullJitter::with_seed(Exponential::default(), 7)
//!     .clone()
//!     .take(3)
//!     .collect();
//! assert_eq!(first, again); // same seed, same clone order: same delays
//! ```

use super::RetryConfigError;
use crate::policy::mix;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The same delay every time.
///
/// # Examples
///
/// ```
/// use fusebox::retry::Constant;
/// use std::time::Duration;
/// let d = Duration::from_millis(100);
/// assert_eq!(Constant::new(d).take(3).collect::<Vec<_>>(), vec![d, d, d]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constant {
    delay: Duration,
}

impl Constant {
    /// A backoff that always waits `delay`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut b = fusebox::retry::Constant::new(std::time::Duration::ZERO);
    /// assert_eq!(b.next(), Some(std::time::Duration::ZERO));
    /// ```
    pub const fn new(delay: Duration) -> Self {
        Constant { delay }
    }
}

impl Iterator for Constant {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        Some(self.delay)
    }
}

/// Delays that grow by a factor each time, up to a cap.
///
/// # Default
///
/// `initial` 100 ms, `factor` 2, `max` 10 s.
///
/// # Examples
///
/// ```
/// use fusebox::retry::Exponential;
/// use std::time::Duration;
/// let ms = Duration::from_millis;
/// let b = Exponential::new(ms(100), 2.0, ms(500))?;
/// assert_eq!(b.take(5).collect::<Vec<_>>(), vec![ms(100), ms(200), ms(400), ms(500), ms(500)]);
/// # Ok::<(), fusebox::retry::RetryConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exponential {
    next: Duration,
    factor: f64,
    max: Duration,
}

impl Exponential {
    /// Starts at `initial`, multiplies by `factor` after each delay, never
    /// exceeds `max`.
    ///
    /// # Errors
    ///
    /// [`RetryConfigError`] naming `factor` if it is not a finite number of at
    /// least 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Exponential;
    /// use std::time::Duration;
    /// let e = Exponential::new(Duration::from_millis(1), 0.5, Duration::from_secs(1)).unwrap_err();
    /// assert_eq!(e.field(), "factor");
    /// assert_eq!(e.to_string(), "invalid retry setting `factor` = 0.5: must be a finite number >= 1");
    /// ```
    pub fn new(initial: Duration, factor: f64, max: Duration) -> Result<Self, RetryConfigError> {
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(RetryConfigError::new(
                "factor",
                factor.to_string(),
                "must be a finite number >= 1",
            ));
        }
        Ok(Exponential {
            next: initial,
            factor,
            max,
        })
    }

    /// Doubles from `initial` up to `max`; cannot fail.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Exponential;
    /// use std::time::Duration;
    /// let s = Duration::from_secs;
    /// let b = Exponential::doubling(s(1), s(3));
    /// assert_eq!(b.take(3).collect::<Vec<_>>(), vec![s(1), s(2), s(3)]);
    /// ```
    pub fn doubling(initial: Duration, max: Duration) -> Self {
        Exponential {
            next: initial,
            factor: 2.0,
            max,
        }
    }
}

impl Default for Exponential {
    fn default() -> Self {
        Exponential::doubling(Duration::from_millis(100), Duration::from_secs(10))
    }
}

impl Iterator for Exponential {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let d = self.next.min(self.max);
        // Saturates at `max` (and never overflows Duration's range).
        self.next = Duration::try_from_secs_f64(d.as_secs_f64() * self.factor)
            .unwrap_or(self.max)
            .min(self.max);
        Some(d)
    }
}

/// SplitMix64: tiny, fast, good enough for jitter (not for anything secret).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `[lo, hi]` (`lo` if `hi < lo`).
    fn between(&mut self, lo: Duration, hi: Duration) -> Duration {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo).as_nanos();
        // Multiply-shift: maps a 64-bit draw onto [0, span] without modulo
        // bias worth caring about for delays.
        let off = (u128::from(self.next_u64()) * (span + 1)) >> 64;
        lo + Duration::from_nanos(u64::try_from(off).unwrap_or(u64::MAX))
    }
}

/// A seeded random stream; clones continue with fresh, distinct streams.
#[derive(Debug)]
struct Rng {
    seed: u64,
    /// Streams handed out so far (std atomics: a seeding counter, not state
    /// that loom needs to model).
    streams: Arc<AtomicU64>,
    state: SplitMix64,
}

impl Rng {
    fn seeded(seed: u64) -> Self {
        Rng {
            seed,
            streams: Arc::new(AtomicU64::new(1)),
            state: SplitMix64(seed),
        }
    }

    fn random() -> Self {
        // RandomState is seeded from the OS once per process and varies per
        // instance: enough entropy for jitter, no dependency.
        Rng::seeded(RandomState::new().hash_one(0x0066_7573_6562_6f78_u64))
    }
}

impl Clone for Rng {
    fn clone(&self) -> Self {
        // Relaxed: only uniqueness of the number matters.
        let n = self.streams.fetch_add(1, Ordering::Relaxed);
        Rng {
            seed: self.seed,
            streams: Arc::clone(&self.streams),
            state: SplitMix64(self.seed ^ mix(n)),
        }
    }
}

/// "Full jitter": each delay of `inner` replaced by a uniform draw from
/// `[0, delay]`.
///
/// The AWS Architecture Blog's comparison found it spreads retries best for
/// the least total work. Clones continue with fresh random streams (see the
/// [module docs](self)).
///
/// # Examples
///
/// ```
/// use fusebox::retry::{Exponential, FullJitter};
/// use std::time::Duration;
/// let inner = Exponential::doubling(Duration::from_millis(100), Duration::from_secs(1));
/// for (d, cap) in FullJitter::with_seed(inner, 1).zip(inner) .take(10) {
///     assert!(d <= cap);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct FullJitter<B> {
    inner: B,
    rng: Rng,
}

impl<B> FullJitter<B> {
    /// Jitters `inner` with a random seed.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{Constant, FullJitter};
    /// use std::time::Duration;
    /// let mut b = FullJitter::new(Constant::new(Duration::from_secs(1)));
    /// assert!(b.next().unwrap() <= Duration::from_secs(1));
    /// ```
    pub fn new(inner: B) -> Self {
        FullJitter {
            inner,
            rng: Rng::random(),
        }
    }

    /// Jitters `inner` deterministically from `seed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{Constant, FullJitter};
    /// use std::time::Duration;
    /// let c = Constant::new(Duration::from_secs(1));
    /// let a: Vec<_> = FullJitter::with_seed(c, 9).take(4).collect();
    /// let b: Vec<_> = FullJitter::with_seed(c, 9).take(4).collect();
    /// assert_eq!(a, b);
    /// ```
    pub fn with_seed(inner: B, seed: u64) -> Self {
        FullJitter {
            inner,
            rng: Rng::seeded(seed),
        }
    }
}

impl<B: Iterator<Item = Duration>> Iterator for FullJitter<B> {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let d = self.inner.next()?;
        Some(self.rng.state.between(Duration::ZERO, d))
    }
}

/// "Decorrelated jitter": each delay is `min(max, uniform(base, previous * 3))`,
/// starting from `previous = base`. Never ends.
///
/// # Examples
///
/// ```
/// use fusebox::retry::DecorrelatedJitter;
/// use std::time::Duration;
/// let (base, max) = (Duration::from_millis(10), Duration::from_millis(500));
/// let b = DecorrelatedJitter::with_seed(base, max, 3)?;
/// for d in b.take(50) {
///     assert!(base <= d && d <= max);
/// }
/// # Ok::<(), fusebox::retry::RetryConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct DecorrelatedJitter {
    base: Duration,
    max: Duration,
    prev: Duration,
    rng: Rng,
}

impl DecorrelatedJitter {
    /// Decorrelated jitter between `base` and `max`, randomly seeded.
    ///
    /// # Errors
    ///
    /// [`RetryConfigError`] naming `base` if `base > max`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::DecorrelatedJitter;
    /// use std::time::Duration;
    /// let e = DecorrelatedJitter::new(Duration::from_secs(2), Duration::from_secs(1)).unwrap_err();
    /// assert_eq!(e.field(), "base");
    /// ```
    pub fn new(base: Duration, max: Duration) -> Result<Self, RetryConfigError> {
        Self::build(base, max, Rng::random())
    }

    /// As [`new`](Self::new), deterministic from `seed`.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::DecorrelatedJitter;
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let a: Vec<_> = DecorrelatedJitter::with_seed(ms(5), ms(100), 1)?.take(5).collect();
    /// let b: Vec<_> = DecorrelatedJitter::with_seed(ms(5), ms(100), 1)?.take(5).collect();
    /// assert_eq!(a, b);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn with_seed(base: Duration, max: Duration, seed: u64) -> Result<Self, RetryConfigError> {
        Self::build(base, max, Rng::seeded(seed))
    }

    fn build(base: Duration, max: Duration, rng: Rng) -> Result<Self, RetryConfigError> {
        if base > max {
            return Err(RetryConfigError::new(
                "base",
                format!("{base:?}"),
                "must not be above `max`",
            ));
        }
        Ok(DecorrelatedJitter {
            base,
            max,
            prev: base,
            rng,
        })
    }
}

impl Iterator for DecorrelatedJitter {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let hi = self.prev.saturating_mul(3).min(self.max);
        let d = self.rng.state.between(self.base, hi);
        self.prev = d;
        Some(d)
    }
}

/// Any backoff behind one type: a boxed `Iterator<Item = Duration> + Clone`.
///
/// For storing a [`Retry`](super::Retry) (or a [`Pipeline`](crate::Pipeline))
/// in a struct without naming its backoff's type. Cloning it (once per call)
/// allocates.
///
/// # Examples
///
/// ```
/// use fusebox::retry::{BoxBackoff, Constant};
/// use std::time::Duration;
/// let mut b = BoxBackoff::new(Constant::new(Duration::from_millis(5)));
/// assert_eq!(b.next(), Some(Duration::from_millis(5)));
/// ```
pub struct BoxBackoff(Box<dyn CloneBackoff>);

trait CloneBackoff: Iterator<Item = Duration> + Send + Sync {
    fn clone_box(&self) -> Box<dyn CloneBackoff>;
}

impl<B> CloneBackoff for B
where
    B: Iterator<Item = Duration> + Clone + Send + Sync + 'static,
{
    fn clone_box(&self) -> Box<dyn CloneBackoff> {
        Box::new(self.clone())
    }
}

impl BoxBackoff {
    /// Boxes `backoff`.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::retry::BoxBackoff::new(fusebox::retry::Exponential::default());
    /// # let _ = b;
    /// ```
    pub fn new<B>(backoff: B) -> Self
    where
        B: Iterator<Item = Duration> + Clone + Send + Sync + 'static,
    {
        BoxBackoff(Box::new(backoff))
    }
}

impl Clone for BoxBackoff {
    fn clone(&self) -> Self {
        BoxBackoff(self.0.clone_box())
    }
}

impl Iterator for BoxBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        self.0.next()
    }
}

impl fmt::Debug for BoxBackoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BoxBackoff")
    }
}

//! [`RateLimited`]: the rate limiter's refusal.

use crate::policy::{Cause, PolicyError, Refusal};
use std::convert::Infallible;
use std::fmt;
use std::time::Duration;

/// A call refused by a [`RateLimiter`](super::RateLimiter) or a
/// [`KeyedRateLimiter`](super::KeyedRateLimiter): the rate is spent, and
/// [`retry_after`](RateLimited::retry_after) says when the next call would
/// conform (from governor's `NotUntil::wait_time_from`).
///
/// A [`Refusal`] with policy `"rate_limiter"` and label `"rate_limited"`, so
/// a breaker's classifier ignores it, [`Cause`] reports it as
/// [`Cause::Refused`], and retries and tower back-pressure can honour its
/// `retry_after`.
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
/// use fusebox::ManualClock;
/// use std::time::Duration;
///
/// let limiter = RateLimiter::builder()
///     .config(RateLimitConfig::per_second(10).burst(1))
///     .clock(ManualClock::new())
///     .build()?;
/// limiter.try_acquire().unwrap();
/// let limited = limiter.try_acquire().unwrap_err();
/// assert_eq!(limited.to_string(), "rate limit exceeded");
/// assert_eq!(limited.retry_after(), Duration::from_millis(100));
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimited {
    retry_after: Duration,
}

impl RateLimited {
    pub(crate) const LABEL: &'static str = "rate_limited";

    pub(crate) fn new(retry_after: Duration) -> Self {
        RateLimited { retry_after }
    }

    /// How long until the next call would conform, measured when the call
    /// was refused (calls made in the meantime may push it later).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use std::time::Duration;
    /// let limiter = RateLimiter::builder()
    ///     .config(RateLimitConfig::every(Duration::from_secs(60)))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// let _ = limiter.try_acquire();
    /// let limited = limiter.try_acquire().unwrap_err();
    /// assert_eq!(limited.retry_after(), Duration::from_secs(60));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }
}

impl fmt::Display for RateLimited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("rate limit exceeded")
    }
}

impl std::error::Error for RateLimited {}

/// Policy `"rate_limiter"`, label `"rate_limited"`; `retry_after` is always
/// known (a rate refills by itself).
///
/// # Examples
///
/// ```
/// use fusebox::policy::Refusal;
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
/// let limiter = RateLimiter::builder()
///     .config(RateLimitConfig::per_second(1))
///     .clock(fusebox::ManualClock::new())
///     .build()?;
/// let _ = limiter.try_acquire();
/// let limited = limiter.try_acquire().unwrap_err();
/// assert_eq!((limited.policy(), limited.label()), ("rate_limiter", "rate_limited"));
/// assert_eq!(limited.summary(), "rate limited");
/// assert_eq!(Refusal::retry_after(&limited), Some(std::time::Duration::from_secs(1)));
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
impl Refusal for RateLimited {
    fn policy(&self) -> &'static str {
        "rate_limiter"
    }

    fn label(&self) -> &'static str {
        Self::LABEL
    }

    fn retry_after(&self) -> Option<Duration> {
        Some(self.retry_after)
    }

    fn summary(&self) -> &'static str {
        "rate limited"
    }
}

/// A rate-limited call never ran: [`Cause::Refused`].
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
/// use fusebox::PolicyError;
/// let limiter = RateLimiter::builder()
///     .config(RateLimitConfig::per_second(1))
///     .clock(fusebox::ManualClock::new())
///     .build()?;
/// let _ = limiter.try_acquire();
/// let limited = limiter.try_acquire().unwrap_err();
/// assert!(limited.cause().is_refusal());
/// assert_eq!(limited.cause().stopped_by(), "rate_limiter");
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
impl PolicyError for RateLimited {
    type Inner = Infallible;
    fn cause(&self) -> Cause<'_, Infallible> {
        Cause::Refused(self)
    }
}

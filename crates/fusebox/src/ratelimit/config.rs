//! THE rate limiter settings: one type ([`RateLimitConfig`]), its file form
//! (serde, feature `config`), its defaults and the only validation, which
//! also converts the settings into governor's [`Quota`].

use crate::Mode;
use governor::Quota;
use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

/// The fastest rate accepted: one call per nanosecond, governor's resolution.
const MAX_PER_SECOND: u32 = 1_000_000_000;
/// The longest a full burst may take to refill: governor keeps its state in
/// nanoseconds in a `u64` (584 years); a year keeps every sum far from it.
const MAX_REFILL: Duration = Duration::from_secs(365 * 24 * 3600);
/// The largest `max_keys` accepted (a keyed entry is a few dozen bytes).
const MAX_KEYS: usize = 100_000_000;

/// A rate limiter's settings: how many calls per second (or one call per
/// period), how many at once, and the [`Mode`].
///
/// This is the one description of a rate limiter's settings: the
/// [`Builder`](super::Builder) writes into it,
/// [`RateLimiter::reconfigure`](super::RateLimiter::reconfigure) takes it,
/// [`RateLimiter::config`](super::RateLimiter::config) returns it, files
/// deserialise into it (feature `config`), and
/// [`validate`](RateLimitConfig::validate) is the only place its values are
/// checked.
///
/// Set exactly one of `per_second` and `period`. Durations are strings in
/// [`fusebox::duration`](crate::duration)'s grammar (`"250ms"`, `"10s"`).
///
/// ```toml
/// per_second = 50
/// burst = 10
/// mode = "shadow"
/// ```
///
/// # Default
///
/// - `burst`: `per_second` (one second's worth at once), or 1 with `period`
/// - `mode`: [`Mode::Enforce`]
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
/// use fusebox::Mode;
///
/// let config = RateLimitConfig::per_second(50).burst(10).mode(Mode::Shadow);
/// assert!(config.validate().is_ok());
/// let limiter = RateLimiter::new(config)?;
/// assert_eq!(limiter.config().burst, Some(10));
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields)
)]
pub struct RateLimitConfig {
    /// Calls admitted per second, on average (one every `1s / per_second`);
    /// excludes `period`.
    #[cfg_attr(
        feature = "config",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub per_second: Option<u32>,
    /// One call admitted every `period`, on average (for rates below one a
    /// second); excludes `per_second`.
    #[cfg_attr(
        feature = "config",
        serde(
            default,
            with = "crate::duration::serde_str::option",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub period: Option<Duration>,
    /// Calls that may be admitted at once after a quiet spell (the bucket's
    /// size).
    #[cfg_attr(
        feature = "config",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub burst: Option<u32>,
    /// Enforce, shadow or off.
    #[cfg_attr(feature = "config", serde(default))]
    pub mode: Mode,
}

impl RateLimitConfig {
    /// Every key, in the order of the fields.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::ratelimit::RateLimitConfig::KEYS.contains(&"burst"));
    /// ```
    pub const KEYS: [&'static str; 4] = ["per_second", "period", "burst", "mode"];

    /// `n` calls a second on average, at most `n` at once (see
    /// [`burst`](Self::burst)).
    ///
    /// # Examples
    ///
    /// ```
    /// let c = fusebox::ratelimit::RateLimitConfig::per_second(20);
    /// assert_eq!((c.per_second, c.burst), (Some(20), None));
    /// ```
    pub const fn per_second(n: u32) -> Self {
        RateLimitConfig {
            per_second: Some(n),
            period: None,
            burst: None,
            mode: Mode::Enforce,
        }
    }

    /// One call every `period` on average, one at a time (see
    /// [`burst`](Self::burst)): for rates below one call a second.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = fusebox::ratelimit::RateLimitConfig::every(Duration::from_secs(10));
    /// assert_eq!(c.period, Some(Duration::from_secs(10)));
    /// ```
    pub const fn every(period: Duration) -> Self {
        RateLimitConfig {
            per_second: None,
            period: Some(period),
            burst: None,
            mode: Mode::Enforce,
        }
    }

    /// How many calls may go at once after a quiet spell.
    ///
    /// # Examples
    ///
    /// ```
    /// let c = fusebox::ratelimit::RateLimitConfig::per_second(100).burst(5);
    /// assert_eq!(c.burst, Some(5));
    /// ```
    pub const fn burst(mut self, burst: u32) -> Self {
        self.burst = Some(burst);
        self
    }

    /// The [`Mode`] to run in.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Mode;
    /// let c = fusebox::ratelimit::RateLimitConfig::per_second(1).mode(Mode::Off);
    /// assert_eq!(c.mode, Mode::Off);
    /// ```
    pub const fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Checks every setting, alone and against each other.
    ///
    /// # Errors
    ///
    /// A [`RateLimitConfigError`] naming the first key that cannot work:
    /// neither or both of `per_second` and `period`, a zero rate, period or
    /// burst, a rate above one call per nanosecond, or a burst whose refill
    /// takes more than a year.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::RateLimitConfig;
    /// let err = RateLimitConfig::per_second(0).validate().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "invalid rate limiter setting `per_second` = 0: must be at least 1"
    /// );
    /// ```
    pub fn validate(&self) -> Result<(), RateLimitConfigError> {
        self.quota().map(drop)
    }

    /// This config with every default written out, as
    /// [`RateLimiter::config`](super::RateLimiter::config) reports it.
    ///
    /// # Errors
    ///
    /// As [`validate`](Self::validate).
    ///
    /// # Examples
    ///
    /// ```
    /// let c = fusebox::ratelimit::RateLimitConfig::per_second(20).resolved()?;
    /// assert_eq!(c.burst, Some(20));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn resolved(&self) -> Result<RateLimitConfig, RateLimitConfigError> {
        let quota = self.quota()?;
        Ok(RateLimitConfig {
            burst: Some(quota.burst_size().get()),
            ..*self
        })
    }

    /// The one validation, which also converts: governor's quota.
    pub(crate) fn quota(&self) -> Result<Quota, RateLimitConfigError> {
        let base = match (self.per_second, self.period) {
            (Some(_), Some(p)) => {
                return Err(invalid(
                    "period",
                    p,
                    "excludes `per_second`: set one of them",
                ))
            }
            (None, None) => {
                return Err(invalid(
                    "per_second",
                    None::<u32>,
                    "must be set (or `period`)",
                ))
            }
            (Some(n), None) => match NonZeroU32::new(n) {
                None => return Err(invalid("per_second", n, "must be at least 1")),
                Some(_) if n > MAX_PER_SECOND => {
                    return Err(invalid(
                        "per_second",
                        n,
                        "must be at most 1000000000 (one call per nanosecond)",
                    ))
                }
                Some(n) => Quota::per_second(n),
            },
            (None, Some(p)) => match Quota::with_period(p) {
                None => return Err(invalid("period", p, "must be above zero")),
                Some(q) => q,
            },
        };
        let quota = match self.burst {
            None => base,
            Some(b) => match NonZeroU32::new(b) {
                None => return Err(invalid("burst", b, "must be at least 1")),
                Some(b) => base.allow_burst(b),
            },
        };
        // The refill of a full burst: governor's tolerance, in nanoseconds.
        let refill = quota
            .replenish_interval()
            .checked_mul(quota.burst_size().get());
        if refill.is_none_or(|r| r > MAX_REFILL) {
            return Err(match (self.burst, self.period) {
                (Some(b), _) => invalid(
                    "burst",
                    b,
                    "a full burst must refill within a year (burst x interval <= 365 days)",
                ),
                (None, p) => invalid("period", p.unwrap_or_default(), "must be at most 365 days"),
            });
        }
        Ok(quota)
    }
}

/// The rules one value must follow on its own, for the settings that live
/// beside a [`RateLimitConfig`] (the keyed limiter's `max_keys`).
pub(crate) mod rule {
    use super::{invalid, RateLimitConfigError};

    pub(crate) fn max_keys(n: usize) -> Result<usize, RateLimitConfigError> {
        match n {
            0 => Err(invalid("max_keys", n, "must be at least 1")),
            n if n > super::MAX_KEYS => Err(invalid("max_keys", n, "must be at most 100000000")),
            n => Ok(n),
        }
    }
}

/// A rate limiter setting that cannot work, found by
/// [`RateLimitConfig::validate`] (and so by every constructor): the crate's
/// [`ConfigError`](crate::ConfigError), naming the setting by its config key
/// and giving the value.
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::RateLimitConfig;
/// let err = RateLimitConfig::per_second(10).burst(0).validate().unwrap_err();
/// assert_eq!((err.field(), err.value(), err.problem()), ("burst", "0", "must be at least 1"));
/// assert_eq!(err.to_string(), "invalid rate limiter setting `burst` = 0: must be at least 1");
/// ```
pub type RateLimitConfigError = crate::ConfigError;

/// A bad rate limiter setting.
pub(crate) fn invalid(
    field: &'static str,
    value: impl fmt::Debug,
    problem: &'static str,
) -> RateLimitConfigError {
    crate::ConfigError::of("rate limiter", field, value, problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_defaults_to_one_second_or_one_call() {
        let q = RateLimitConfig::per_second(20).quota().unwrap();
        assert_eq!(q.burst_size().get(), 20);
        assert_eq!(q.replenish_interval(), Duration::from_millis(50));
        let q = RateLimitConfig::every(Duration::from_secs(3))
            .quota()
            .unwrap();
        assert_eq!(q.burst_size().get(), 1);
        assert_eq!(q.replenish_interval(), Duration::from_secs(3));
    }

    #[test]
    fn huge_refills_are_refused_before_governor_overflows() {
        let e = RateLimitConfig::every(Duration::from_secs(3600))
            .burst(u32::MAX)
            .validate()
            .unwrap_err();
        assert_eq!(e.field(), "burst");
        let e = RateLimitConfig::every(Duration::MAX)
            .validate()
            .unwrap_err();
        assert_eq!(e.field(), "period");
        assert!(RateLimitConfig::per_second(1)
            .burst(365 * 24 * 3600)
            .validate()
            .is_ok());
        assert!(RateLimitConfig::per_second(1)
            .burst(365 * 24 * 3600 + 1)
            .validate()
            .is_err());
    }

    #[cfg(feature = "config")]
    #[test]
    fn a_file_reads_the_duration_grammar_and_refuses_unknown_keys() {
        let c: RateLimitConfig =
            toml::from_str("period = \"250ms\"\nburst = 4\nmode = \"shadow\"").unwrap();
        assert_eq!(
            c,
            RateLimitConfig::every(Duration::from_millis(250))
                .burst(4)
                .mode(Mode::Shadow)
        );
        let c: RateLimitConfig = toml::from_str("per_second = 5").unwrap();
        assert_eq!(c, RateLimitConfig::per_second(5));
        let e = toml::from_str::<RateLimitConfig>("per_second = 5\nburts = 4").unwrap_err();
        assert!(e.to_string().contains("burts"), "{e}");
        let e = toml::from_str::<RateLimitConfig>("period = \"soon\"").unwrap_err();
        assert!(e.to_string().contains("soon"), "{e}");
    }
}

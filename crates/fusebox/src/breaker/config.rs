//! THE breaker settings: one type ([`BreakerConfig`]), its file form (serde,
//! feature `config`), its defaults and the only validation. [`Builder`] is a
//! front for it that also carries the name, clock and listeners.

use super::listener::{Listener, OnTransition};
use super::open_period::OpenPeriod;
use super::protocol::{Settings, Tuning};
use super::rules::consecutive::Consecutive;
use super::rules::failure_rate::FailureRate;
use super::rules::failures_within::FailuresWithin;
use super::rules::slow_calls::SlowCalls;
use super::rules::windowed::{WindowSpec, Windowed};
use super::rules::Rules;
use super::types::Transition;
use super::CircuitBreaker;
use crate::clock::{nanos, Clock, MonotonicClock};
use crate::policy::Mode;
use std::fmt;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

/// Largest count window accepted (one byte of memory per call).
const MAX_COUNT_WINDOW: (usize, &str) = (10_000_000, "must be at most 10000000");
/// Largest number of time-window buckets accepted.
const MAX_BUCKETS: (usize, &str) = (100_000, "must be at most 100000");
/// Largest `failures_within.count` (eight bytes of memory per failure).
const MAX_BURST: u32 = 100_000;
/// Largest `min_calls`, `half_open_probes` and `successes_to_close`: beyond
/// it a breaker could in practice never trip or never close.
const MAX_COUNT: u32 = 10_000_000;

/// A setting of a breaker that cannot work, found by [`Builder::build`] or
/// [`BreakerConfig::validate`].
///
/// It names the setting by its config key and gives the value.
///
/// # Examples
///
/// ```
/// let err = fusebox::CircuitBreaker::builder().failure_rate(1.5).build().unwrap_err();
/// assert_eq!(err.field(), "failure_rate");
/// assert_eq!(
///     err.to_string(),
///     "invalid circuit breaker setting `failure_rate` = 1.5: must be in (0, 1]"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    policy: &'static str,
    field: &'static str,
    value: String,
    problem: &'static str,
}

impl ConfigError {
    fn new(field: &'static str, value: impl fmt::Debug, problem: &'static str) -> Self {
        ConfigError::of("circuit breaker", field, value, problem)
    }

    /// A bad setting of the policy `policy` (as the message names it:
    /// `"circuit breaker"`, `"rate limiter"`).
    pub(crate) fn of(
        policy: &'static str,
        field: &'static str,
        value: impl fmt::Debug,
        problem: &'static str,
    ) -> Self {
        ConfigError {
            policy,
            field,
            value: format!("{value:?}"),
            problem,
        }
    }

    /// The config key whose value is wrong (e.g. `"open_for"`,
    /// `"open_backoff.max"`, `"slow_call_rate"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder()
    ///     .open_for(std::time::Duration::ZERO)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "open_for");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The value given, as written by `Debug`.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder().half_open_probes(0).build().unwrap_err();
    /// assert_eq!(err.value(), "0");
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }

    /// What is wrong, without the key and value (`"must be in (0, 1]"`).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder().half_open_probes(0).build().unwrap_err();
    /// assert_eq!(err.problem(), "must be at least 1");
    /// ```
    pub fn problem(&self) -> &'static str {
        self.problem
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid {} setting `{}` = {}: {}",
            self.policy, self.field, self.value, self.problem
        )
    }
}

impl std::error::Error for ConfigError {}

/// The rules one value must follow on its own, whatever the other keys say.
/// Used by [`BreakerConfig::validate`] and, so that a file's error points at
/// the value's own line, by the config-file reader as each value is read.
pub(crate) mod rule {
    use super::ConfigError;
    use std::time::Duration;

    pub(crate) fn rate(field: &'static str, r: f64) -> Result<f64, ConfigError> {
        if r > 0.0 && r <= 1.0 {
            Ok(r)
        } else {
            Err(ConfigError::new(field, r, "must be in (0, 1]"))
        }
    }

    pub(crate) fn count(field: &'static str, n: u32) -> Result<u32, ConfigError> {
        match n {
            0 => Err(ConfigError::new(field, n, "must be at least 1")),
            n if n > super::MAX_COUNT => {
                Err(ConfigError::new(field, n, "must be at most 10000000"))
            }
            n => Ok(n),
        }
    }

    /// A size in `1..=max`; `too_big` says the limit in words.
    pub(crate) fn size(
        field: &'static str,
        n: usize,
        (max, too_big): (usize, &'static str),
    ) -> Result<usize, ConfigError> {
        if n == 0 {
            Err(ConfigError::new(field, n, "must be at least 1"))
        } else if n > max {
            Err(ConfigError::new(field, n, too_big))
        } else {
            Ok(n)
        }
    }

    pub(crate) fn period(field: &'static str, d: Duration) -> Result<Duration, ConfigError> {
        if d.is_zero() {
            Err(ConfigError::new(field, d, "must be above zero"))
        } else {
            Ok(d)
        }
    }

    pub(crate) fn factor(field: &'static str, f: f64) -> Result<f64, ConfigError> {
        if f >= 1.0 && f.is_finite() {
            Ok(f)
        } else {
            Err(ConfigError::new(field, f, "must be a finite number >= 1"))
        }
    }
}

/// An open period that grows on repeated trips: `initial`, then times
/// `factor` after each further trip without a close, up to `max`.
///
/// In a config file: `open_backoff = { initial = "1s", factor = 2.0, max = "1m" }`.
///
/// # Examples
///
/// ```
/// use fusebox::{Backoff, BreakerConfig};
/// use std::time::Duration;
/// let config = BreakerConfig {
///     open_backoff: Some(Backoff {
///         initial: Duration::from_secs(1),
///         factor: 2.0,
///         max: Duration::from_secs(60),
///     }),
///     ..Default::default()
/// };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields)
)]
pub struct Backoff {
    /// The first open period.
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str"))]
    pub initial: Duration,
    /// Growth per further trip (at least 1).
    pub factor: f64,
    /// The longest open period.
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str"))]
    pub max: Duration,
}

/// Trip on the `count`th failure within `within`, however many successes
/// come between (see [`Builder::failures_within`]).
///
/// In a config file: `failures_within = { count = 5, within = "10s" }`.
///
/// # Examples
///
/// ```
/// use fusebox::{BreakerConfig, FailureBurst};
/// use std::time::Duration;
/// let config = BreakerConfig {
///     failures_within: Some(FailureBurst { count: 5, within: Duration::from_secs(10) }),
///     ..Default::default()
/// };
/// let full = config.resolved()?;
/// assert_eq!(full.consecutive_failures, None, "a trip rule is set: no default one");
/// assert_eq!(full.failures_within, config.failures_within);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields)
)]
pub struct FailureBurst {
    /// The failures that trip (at least 1, at most 100000).
    pub count: u32,
    /// The period they must fall within (above zero).
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str"))]
    pub within: Duration,
}

/// Declares [`BreakerConfig`] once: its fields (every one an `Option`, named
/// by its config key), their docs and serde attributes; from the same list
/// come [`BreakerConfig::KEYS`] and [`BreakerConfig::is_set`], so a key
/// added to the struct is a key everywhere (the registry's files, the lab's
/// strategies and sweeps) without a second list to keep.
macro_rules! breaker_config {
    (
        $(#[$struct_attr:meta])*
        pub struct BreakerConfig {
            $( $(#[$attr:meta])* pub $key:ident : Option<$ty:ty>, )*
        }
    ) => {
        $(#[$struct_attr])*
        pub struct BreakerConfig {
            $( $(#[$attr])* pub $key: Option<$ty>, )*
        }

        impl BreakerConfig {
            /// Every key, in the order of the fields (and of config-file docs).
            ///
            /// # Examples
            ///
            /// ```
            /// assert!(fusebox::BreakerConfig::KEYS.contains(&"open_for"));
            /// assert_eq!(fusebox::BreakerConfig::KEYS.last(), Some(&"mode"));
            /// ```
            pub const KEYS: [&'static str; [$(stringify!($key)),*].len()] =
                [$(stringify!($key)),*];

            /// Whether this config sets the key `key` (`false` for a string
            /// that is no key).
            ///
            /// # Examples
            ///
            /// ```
            /// let c = fusebox::BreakerConfig { min_calls: Some(5), ..Default::default() };
            /// assert!(c.is_set("min_calls"));
            /// assert!(!c.is_set("open_for"));
            /// assert!(!c.is_set("no_such_key"));
            /// ```
            pub fn is_set(&self, key: &str) -> bool {
                match key {
                    $( stringify!($key) => self.$key.is_some(), )*
                    _ => false,
                }
            }

            /// Copies every key `other` sets onto this config, one key at a
            /// time (without [`merged_over`](BreakerConfig::merged_over)'s
            /// pairs: setting `buckets` keeps this config's `time_window`).
            ///
            /// # Examples
            ///
            /// ```
            /// use fusebox::BreakerConfig;
            /// use std::time::Duration;
            /// let mut c = BreakerConfig {
            ///     time_window: Some(Duration::from_secs(10)),
            ///     buckets: Some(10),
            ///     ..Default::default()
            /// };
            /// c.set_from(&BreakerConfig { buckets: Some(5), ..Default::default() });
            /// assert_eq!((c.time_window, c.buckets), (Some(Duration::from_secs(10)), Some(5)));
            /// ```
            pub fn set_from(&mut self, other: &BreakerConfig) {
                $( if other.$key.is_some() { self.$key = other.$key.clone(); } )*
            }
        }
    };
}

breaker_config! {
/// A breaker's settings: every trip, open and half-open setting, each
/// optional, under the names config files use.
///
/// This is the one description of a breaker's settings in fusebox: the
/// [`Builder`] writes into it, [`CircuitBreaker::reconfigure`] takes it (as a
/// builder), [`CircuitBreaker::config`] returns it, the registry's files and
/// the lab's scenarios deserialise into it (feature `config`), and
/// [`validate`](BreakerConfig::validate) is the only place its values are
/// checked. An unset field takes the default listed on [`Builder`].
///
/// Durations are strings in [`fusebox::duration`](crate::duration)'s
/// grammar (`"250ms"`, `"1.5s"`, `"1m30s"`).
///
/// ```toml
/// failure_rate = 0.5
/// time_window = "60s"
/// buckets = 6
/// min_calls = 20
/// slow_call_duration = "2s"
/// slow_call_rate = 0.8
/// failures_within = { count = 5, within = "10s" }
/// open_backoff = { initial = "1s", factor = 2.0, max = "5m" }
/// half_open_probes = 3
/// successes_to_close = 2
/// half_open_max_wait = "5s"
/// ```
///
/// # Examples
///
/// ```
/// use fusebox::{BreakerConfig, State};
/// use std::time::Duration;
///
/// let config = BreakerConfig {
///     consecutive_failures: Some(3),
///     open_for: Some(Duration::from_secs(10)),
///     ..Default::default()
/// };
/// let breaker = config.builder().name("search").build()?;
/// assert_eq!(breaker.state(), State::Closed);
/// assert_eq!(breaker.config().consecutive_failures, Some(3));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct BreakerConfig {
    /// Trip after this many failures in a row.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub consecutive_failures: Option<u32>,
    /// Trip when failures / calls in the window reach this rate, in `(0, 1]`.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub failure_rate: Option<f64>,
    /// Rates look at the last N calls; excludes `time_window`.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub count_window: Option<usize>,
    /// Rates look at the calls of the last T; excludes `count_window`.
    #[cfg_attr(
        feature = "config",
        serde(
            with = "crate::duration::serde_str::option",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub time_window: Option<Duration>,
    /// Buckets of a time window.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub buckets: Option<usize>,
    /// Calls the window must hold before a rate can trip.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub min_calls: Option<u32>,
    /// A call at least this long is slow (set together with `slow_call_rate`).
    #[cfg_attr(
        feature = "config",
        serde(
            with = "crate::duration::serde_str::option",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub slow_call_duration: Option<Duration>,
    /// Trip when slow calls / calls in the window reach this rate, in `(0, 1]`.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub slow_call_rate: Option<f64>,
    /// Trip on the `count`th failure within `within` (no window or
    /// `min_calls` of its own).
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub failures_within: Option<FailureBurst>,
    /// Fixed open period; excludes `open_backoff`.
    #[cfg_attr(
        feature = "config",
        serde(
            with = "crate::duration::serde_str::option",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub open_for: Option<Duration>,
    /// Growing open period; excludes `open_for`.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub open_backoff: Option<Backoff>,
    /// Probes admitted at once when half-open.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub half_open_probes: Option<u32>,
    /// Probe successes that close the breaker.
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub successes_to_close: Option<u32>,
    /// Probes out this long without an answer count as failed and the
    /// breaker reopens (unset: no deadline).
    #[cfg_attr(
        feature = "config",
        serde(
            with = "crate::duration::serde_str::option",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub half_open_max_wait: Option<Duration>,
    /// Enforce (the default), shadow (decide and report, but let every call
    /// through) or off (admit everything, count nothing): see [`Mode`].
    #[cfg_attr(feature = "config", serde(skip_serializing_if = "Option::is_none"))]
    pub mode: Option<Mode>,
}
}

impl BreakerConfig {
    /// This config laid over `base`, field by field: every field this config
    /// sets wins, every other field is `base`'s. Keys that exclude each
    /// other go as a pair: a config that sets either window (`count_window`
    /// or `time_window`, with `buckets`) takes none of `base`'s window keys,
    /// and one that sets `open_for` or `open_backoff` none of `base`'s open
    /// period.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::BreakerConfig;
    /// use std::time::Duration;
    ///
    /// let defaults = BreakerConfig {
    ///     failure_rate: Some(0.5),
    ///     time_window: Some(Duration::from_secs(60)),
    ///     min_calls: Some(20),
    ///     ..Default::default()
    /// };
    /// let db = BreakerConfig { failure_rate: Some(0.3), ..Default::default() };
    /// let merged = db.merged_over(&defaults);
    /// assert_eq!(merged.failure_rate, Some(0.3));
    /// assert_eq!(merged.time_window, Some(Duration::from_secs(60)));
    /// assert_eq!(merged.min_calls, Some(20));
    /// ```
    pub fn merged_over(&self, base: &BreakerConfig) -> BreakerConfig {
        let own_window =
            self.count_window.is_some() || self.time_window.is_some() || self.buckets.is_some();
        let window_src = if own_window { self } else { base };
        let open_src = if self.open_for.is_some() || self.open_backoff.is_some() {
            self
        } else {
            base
        };
        BreakerConfig {
            consecutive_failures: self.consecutive_failures.or(base.consecutive_failures),
            failure_rate: self.failure_rate.or(base.failure_rate),
            count_window: window_src.count_window,
            time_window: window_src.time_window,
            buckets: window_src.buckets,
            min_calls: self.min_calls.or(base.min_calls),
            slow_call_duration: self.slow_call_duration.or(base.slow_call_duration),
            slow_call_rate: self.slow_call_rate.or(base.slow_call_rate),
            failures_within: self.failures_within.or(base.failures_within),
            open_for: open_src.open_for,
            open_backoff: open_src.open_backoff,
            half_open_probes: self.half_open_probes.or(base.half_open_probes),
            successes_to_close: self.successes_to_close.or(base.successes_to_close),
            half_open_max_wait: self.half_open_max_wait.or(base.half_open_max_wait),
            mode: self.mode.or(base.mode),
        }
    }

    /// A [`Builder`] with these settings (add a name, clock or listeners).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = fusebox::BreakerConfig { consecutive_failures: Some(2), ..Default::default() };
    /// let breaker = config.builder().name("db").build()?;
    /// assert_eq!(breaker.name(), Some("db"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn builder(&self) -> Builder {
        CircuitBreaker::builder().config(self.clone())
    }

    /// Checks every setting, alone and against each other.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first key that cannot work: a zero
    /// threshold, count or period, a rate outside (0, 1], both a count and a
    /// time window, a window or `min_calls` with no rate policy to use it,
    /// `min_calls` above the count window, only one of `slow_call_duration`
    /// and `slow_call_rate`, a `failures_within` count above 100000, both
    /// `open_for` and `open_backoff`, a backoff
    /// factor below 1 or a backoff maximum below its start.
    ///
    /// # Examples
    ///
    /// ```
    /// let bad = fusebox::BreakerConfig { slow_call_rate: Some(0.5), ..Default::default() };
    /// assert_eq!(bad.validate().unwrap_err().field(), "slow_call_duration");
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.settings().map(drop)
    }

    /// This config with every default written out, as
    /// [`CircuitBreaker::config`] would report it for a breaker built from it.
    ///
    /// # Errors
    ///
    /// As [`validate`](BreakerConfig::validate).
    ///
    /// # Examples
    ///
    /// ```
    /// let config = fusebox::BreakerConfig { failure_rate: Some(0.5), ..Default::default() };
    /// let full = config.resolved()?;
    /// assert_eq!((full.count_window, full.min_calls), (Some(100), Some(10)));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn resolved(&self) -> Result<BreakerConfig, ConfigError> {
        Ok(BreakerConfig::from_settings(&self.settings()?))
    }

    /// The settings the state machine runs on, or the first bad key.
    pub(crate) fn settings(&self) -> Result<Settings, ConfigError> {
        let mut consecutive = self
            .consecutive_failures
            .map(|n| rule::count("consecutive_failures", n).map(Consecutive::new))
            .transpose()?;
        let failure_rate = self
            .failure_rate
            .map(|r| rule::rate("failure_rate", r).map(FailureRate::new))
            .transpose()?;
        let slow = match (self.slow_call_duration, self.slow_call_rate) {
            (None, None) => None,
            (Some(d), Some(r)) => {
                rule::period("slow_call_duration", d)?;
                Some(SlowCalls::new(nanos(d), rule::rate("slow_call_rate", r)?))
            }
            (Some(d), None) => {
                return Err(ConfigError::new(
                    "slow_call_rate",
                    d,
                    "slow_call_duration is set but slow_call_rate is missing",
                ))
            }
            (None, Some(r)) => {
                return Err(ConfigError::new(
                    "slow_call_duration",
                    r,
                    "slow_call_rate is set but slow_call_duration is missing",
                ))
            }
        };
        let rated = failure_rate.is_some() || slow.is_some();
        let window = match (self.count_window, self.time_window) {
            (Some(_), Some(t)) => {
                return Err(ConfigError::new(
                    "time_window",
                    t,
                    "set either count_window or time_window, not both",
                ))
            }
            (Some(n), None) => Some(WindowSpec::Count(rule::size(
                "count_window",
                n,
                MAX_COUNT_WINDOW,
            )?)),
            (None, Some(span)) => {
                rule::period("time_window", span)?;
                let buckets = rule::size("buckets", self.buckets.unwrap_or(10), MAX_BUCKETS)?;
                if nanos(span) < buckets as u64 {
                    return Err(ConfigError::new(
                        "buckets",
                        buckets,
                        "more buckets than nanoseconds in the time window",
                    ));
                }
                Some(WindowSpec::Time {
                    span: nanos(span),
                    buckets,
                })
            }
            (None, None) => rated.then_some(WindowSpec::Count(100)),
        };
        if let (Some(b), None) = (self.buckets, self.time_window) {
            return Err(ConfigError::new(
                "buckets",
                b,
                "only a time_window has buckets",
            ));
        }
        if !rated {
            let unused = "no failure_rate or slow_call_rate policy uses it";
            if let Some(n) = self.count_window {
                return Err(ConfigError::new("count_window", n, unused));
            }
            if let Some(d) = self.time_window {
                return Err(ConfigError::new("time_window", d, unused));
            }
            if let Some(m) = self.min_calls {
                return Err(ConfigError::new("min_calls", m, unused));
            }
        }
        let min_calls = match (self.min_calls, window) {
            (Some(m), window) => {
                rule::count("min_calls", m)?;
                if let Some(WindowSpec::Count(n)) = window {
                    if m as usize > n {
                        return Err(ConfigError::new(
                            "min_calls",
                            m,
                            "above the count window's size: the breaker could never trip",
                        ));
                    }
                }
                u64::from(m)
            }
            (None, Some(WindowSpec::Count(n))) => (n as u64).min(10),
            (None, _) => 10,
        };
        let failures_within = self
            .failures_within
            .map(|FailureBurst { count, within }| {
                let count = match rule::count("failures_within.count", count)? {
                    n if n > MAX_BURST => Err(ConfigError::new(
                        "failures_within.count",
                        n,
                        "must be at most 100000",
                    )),
                    n => Ok(n),
                }?;
                rule::period("failures_within.within", within)?;
                Ok(FailuresWithin::new(count, nanos(within)))
            })
            .transpose()?;
        // "consecutive_failures(5) when no trip rule is set"
        if !Rules::keys().any(|key| self.is_set(key)) {
            consecutive = Some(Consecutive::new(5));
        }
        let open = match (self.open_for, self.open_backoff) {
            (Some(_), Some(b)) => {
                return Err(ConfigError::new(
                    "open_backoff",
                    b,
                    "set either open_for or open_backoff, not both",
                ))
            }
            (Some(d), None) => OpenPeriod::Fixed(nanos(rule::period("open_for", d)?)),
            (None, None) => OpenPeriod::Fixed(nanos(Duration::from_secs(30))),
            (
                None,
                Some(Backoff {
                    initial,
                    factor,
                    max,
                }),
            ) => {
                rule::period("open_backoff.initial", initial)?;
                rule::factor("open_backoff.factor", factor)?;
                if max < initial {
                    return Err(ConfigError::new(
                        "open_backoff.max",
                        max,
                        "must be at least the initial period",
                    ));
                }
                OpenPeriod::Backoff {
                    initial: nanos(initial),
                    factor,
                    max: nanos(max),
                }
            }
        };
        let probes = rule::count("half_open_probes", self.half_open_probes.unwrap_or(1))?;
        let successes = rule::count("successes_to_close", self.successes_to_close.unwrap_or(1))?;
        let max_wait = self
            .half_open_max_wait
            .map(|d| {
                rule::period("half_open_max_wait", d)
                    .map(|d| NonZeroU64::new(nanos(d)).unwrap_or(NonZeroU64::MIN))
            })
            .transpose()?;
        Ok(Settings {
            rules: Rules {
                consecutive,
                windowed: window.map(|window| Windowed {
                    window,
                    min_calls,
                    failure_rate,
                    slow_calls: slow,
                }),
                failures_within,
            },
            tuning: Tuning {
                open,
                probes,
                successes,
                mode: self.mode.unwrap_or_default(),
                max_wait,
            },
        })
    }

    /// The config that describes `settings` with every default written out.
    pub(crate) fn from_settings(settings: &Settings) -> BreakerConfig {
        let rules = &settings.rules;
        let windowed = rules.windowed.as_ref();
        let d = Duration::from_nanos;
        let (count_window, time_window, buckets) = match windowed.map(|w| w.window) {
            Some(WindowSpec::Count(n)) => (Some(n), None, None),
            Some(WindowSpec::Time { span, buckets }) => (None, Some(d(span)), Some(buckets)),
            None => (None, None, None),
        };
        let tuning = &settings.tuning;
        let (open_for, open_backoff) = match tuning.open {
            OpenPeriod::Fixed(n) => (Some(d(n)), None),
            OpenPeriod::Backoff {
                initial,
                factor,
                max,
            } => (
                None,
                Some(Backoff {
                    initial: d(initial),
                    factor,
                    max: d(max),
                }),
            ),
        };
        BreakerConfig {
            consecutive_failures: rules.consecutive.map(|c| c.n()),
            failure_rate: windowed.and_then(|w| w.failure_rate).map(|r| r.rate()),
            count_window,
            time_window,
            buckets,
            min_calls: windowed.map(|w| u32::try_from(w.min_calls).unwrap_or(u32::MAX)),
            slow_call_duration: windowed
                .and_then(|w| w.slow_calls)
                .map(|s| d(s.threshold())),
            slow_call_rate: windowed.and_then(|w| w.slow_calls).map(|s| s.rate()),
            failures_within: rules.failures_within.map(|f| FailureBurst {
                count: f.count(),
                within: d(f.within()),
            }),
            open_for,
            open_backoff,
            half_open_probes: Some(tuning.probes),
            successes_to_close: Some(tuning.successes),
            half_open_max_wait: tuning.max_wait.map(|n| d(n.get())),
            mode: Some(tuning.mode),
        }
    }
}

impl From<BreakerConfig> for Builder {
    fn from(config: BreakerConfig) -> Builder {
        CircuitBreaker::builder().config(config)
    }
}

/// Builds a [`CircuitBreaker`]. Start from [`CircuitBreaker::builder`].
///
/// Setters never fail; [`build`](Builder::build) checks everything at once
/// and names the first bad setting.
///
/// # Default
///
/// | setting | default |
/// |---|---|
/// | trip rule | `consecutive_failures(5)` when no trip rule is set |
/// | window of a rate policy | `count_window(100)`; a time window has `buckets(10)` |
/// | `min_calls` | 10, or the count window's size if smaller |
/// | `open_for` | 30 s, fixed |
/// | `half_open_probes` | 1 |
/// | `successes_to_close` | 1 |
/// | `half_open_max_wait` | none: a probe may take as long as it takes |
/// | `mode` | [`Mode::Enforce`] |
/// | clock | [`MonotonicClock`] |
/// | listeners | none (no cost) |
///
/// Trip rules combine: with `consecutive_failures` and `failure_rate` both
/// set, the breaker trips on whichever is reached first.
///
/// # Examples
///
/// Resilience4j's usual shape: 50 % failures over the last 20 calls, once at
/// least 10 calls are in the window; calls over 2 s are slow, and 80 % slow
/// calls trip too.
///
/// ```
/// use fusebox::CircuitBreaker;
/// use std::time::Duration;
///
/// let breaker = CircuitBreaker::builder()
///     .name("reviews")
///     .failure_rate(0.5)
///     .count_window(20)
///     .min_calls(10)
///     .slow_calls(Duration::from_secs(2), 0.8)
///     .open_backoff(Duration::from_secs(5), 2.0, Duration::from_secs(60))
///     .half_open_probes(3)
///     .successes_to_close(3)
///     .build()?;
/// assert_eq!(breaker.name(), Some("reviews"));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use]
#[derive(Default, Clone)]
pub struct Builder {
    pub(crate) config: BreakerConfig,
    name: Option<String>,
    /// `None`: [`MonotonicClock`], read without a virtual call.
    clock: Option<Arc<dyn Clock>>,
    listeners: Vec<Arc<dyn Listener>>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("listeners", &self.listeners.len())
            .finish()
    }
}

impl Builder {
    /// Names the breaker (for logs, metrics and registries).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().name("payments").build()?;
    /// assert_eq!(b.name(), Some("payments"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Trips after `n` failures in a row; any success resets the count.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, State};
    /// let b = CircuitBreaker::builder().consecutive_failures(2).build()?;
    /// let _ = b.call(|| Err::<(), _>(()));
    /// let _ = b.call(|| Ok::<_, ()>(()));
    /// let _ = b.call(|| Err::<(), _>(()));
    /// assert_eq!(b.state(), State::Closed);
    /// let _ = b.call(|| Err::<(), _>(()));
    /// assert_eq!(b.state(), State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn consecutive_failures(mut self, n: u32) -> Self {
        self.config.consecutive_failures = Some(n);
        self
    }

    /// Trips when failures / calls in the window reach `rate` (in (0, 1]),
    /// once at least [`min_calls`](Builder::min_calls) calls are in it.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, State};
    /// let b = CircuitBreaker::builder().failure_rate(0.5).count_window(4).min_calls(4).build()?;
    /// for ok in [true, false, true] {
    ///     let _ = b.call(|| if ok { Ok(()) } else { Err(()) });
    /// }
    /// assert_eq!(b.state(), State::Closed); // 3 calls: below min_calls
    /// let _ = b.call(|| Err::<(), _>(()));
    /// assert_eq!(b.state(), State::Open); // 2 of 4 failed
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.config.failure_rate = Some(rate);
        self
    }

    /// Rates look at the last `n` calls (sliding: the oldest drops out).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().failure_rate(0.5).count_window(50).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn count_window(mut self, n: usize) -> Self {
        self.config.count_window = Some(n);
        self
    }

    /// Rates look at the calls of the last `span` of time, kept in
    /// [`buckets`](Builder::buckets) buckets (a call leaves the window when
    /// its whole bucket does).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .failure_rate(0.5)
    ///     .time_window(Duration::from_secs(10))
    ///     .buckets(20)
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn time_window(mut self, span: Duration) -> Self {
        self.config.time_window = Some(span);
        self
    }

    /// How many buckets a [`time_window`](Builder::time_window) has (default 10).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let err = fusebox::CircuitBreaker::builder()
    ///     .failure_rate(0.5)
    ///     .time_window(Duration::from_secs(1))
    ///     .buckets(0)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "buckets");
    /// ```
    pub fn buckets(mut self, n: usize) -> Self {
        self.config.buckets = Some(n);
        self
    }

    /// No rate trips the breaker before `m` calls are in the window.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder()
    ///     .failure_rate(0.5)
    ///     .count_window(10)
    ///     .min_calls(20)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "min_calls");
    /// ```
    pub fn min_calls(mut self, m: u32) -> Self {
        self.config.min_calls = Some(m);
        self
    }

    /// A call taking at least `threshold` is slow; trips when slow calls /
    /// calls in the window reach `rate`. A slow success still returns its
    /// value. In half-open, slow probes are judged together when
    /// `successes_to_close` probes have succeeded: if slow ones / successful
    /// ones reach `rate`, the breaker reopens instead of closing. Each
    /// half-open period judges only its own probes.
    ///
    /// In a config file: `slow_call_duration` and `slow_call_rate`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, ManualClock, State};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let b = CircuitBreaker::builder()
    ///     .slow_calls(Duration::from_millis(100), 1.0)
    ///     .count_window(2)
    ///     .min_calls(2)
    ///     .clock(clock.clone())
    ///     .build()?;
    /// for _ in 0..2 {
    ///     let value = b.call(|| {
    ///         clock.advance(Duration::from_millis(150));
    ///         Ok::<_, ()>("late but fine")
    ///     });
    ///     assert_eq!(value.unwrap(), "late but fine");
    /// }
    /// assert_eq!(b.state(), State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn slow_calls(mut self, threshold: Duration, rate: f64) -> Self {
        self.config.slow_call_duration = Some(threshold);
        self.config.slow_call_rate = Some(rate);
        self
    }

    /// Trips on the `count`th failure within `within`, however many
    /// successes come between: a dependency that fails now and then never
    /// trips it, a burst of failures does, whatever the traffic around it.
    /// It has no window or `min_calls` of its own (the times of the last
    /// `count` failures are kept, emptied when the breaker closes); a
    /// reconfigure that changes `count` starts them afresh.
    ///
    /// In a config file: `failures_within = { count = 5, within = "10s" }`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, ManualClock, Reason, State};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let b = CircuitBreaker::builder()
    ///     .failures_within(3, Duration::from_secs(10))
    ///     .clock(clock.clone())
    ///     .build()?;
    /// for _ in 0..2 {
    ///     let _ = b.call(|| Err::<(), _>("down"));
    ///     let _ = b.call(|| Ok::<_, &str>(()));
    ///     clock.advance(Duration::from_secs(4));
    /// }
    /// assert_eq!(b.state(), State::Closed);
    /// let _ = b.call(|| Err::<(), _>("down")); // the third within 8 s
    /// assert_eq!(b.state(), State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn failures_within(mut self, count: u32, within: Duration) -> Self {
        self.config.failures_within = Some(FailureBurst { count, within });
        self
    }

    /// Stays open for `period` after each trip (replaces any backoff).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .open_for(std::time::Duration::from_millis(500))
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn open_for(mut self, period: Duration) -> Self {
        self.config.open_for = Some(period);
        self.config.open_backoff = None;
        self
    }

    /// Stays open for `initial` after the first trip, and `factor` times
    /// longer after each further trip without a close in between, at most
    /// `max`. A close resets it to `initial`. Replaces `open_for`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .open_backoff(Duration::from_secs(1), 2.0, Duration::from_secs(30))
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn open_backoff(mut self, initial: Duration, factor: f64, max: Duration) -> Self {
        self.config.open_backoff = Some(Backoff {
            initial,
            factor,
            max,
        });
        self.config.open_for = None;
        self
    }

    /// At most `k` calls are admitted at once in half-open (default 1).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().half_open_probes(3).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn half_open_probes(mut self, k: u32) -> Self {
        self.config.half_open_probes = Some(k);
        self
    }

    /// Half-open closes after `s` successful probes (default 1); any failed
    /// probe reopens.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().successes_to_close(2).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn successes_to_close(mut self, s: u32) -> Self {
        self.config.successes_to_close = Some(s);
        self
    }

    /// Gives half-open probes a deadline (default: none). A probe that
    /// never answers and is never dropped (a call stuck on a dead
    /// connection with no timeout of its own) holds its slot forever, and
    /// the breaker can then neither close nor reopen. With a deadline, once
    /// probes have been out for `wait` without a break, they count as
    /// failed: the breaker reopens for a new open period, as for a failed
    /// probe (with [`Reason::ProbeTimedOut`](crate::Reason::ProbeTimedOut)),
    /// their slots come back, and their verdicts, whenever they come,
    /// change nothing.
    ///
    /// The wait runs from the admission of a probe while none was out,
    /// until none is out again. It is checked when something happens in
    /// half-open (a call asks to be admitted, a probe answers or is
    /// dropped, [`state`](CircuitBreaker::state) or
    /// [`snapshot`](CircuitBreaker::snapshot) is read); no timer runs. A
    /// probe that answers after the deadline is too late even when nothing
    /// happened in between. It costs nothing outside half-open.
    ///
    /// Zero is refused; leave it unset for no deadline. In a config file:
    /// `half_open_max_wait = "5s"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, ManualClock, Reason, State};
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let reasons = Arc::new(Mutex::new(Vec::new()));
    /// let log = reasons.clone();
    /// let breaker = CircuitBreaker::builder()
    ///     .consecutive_failures(1)
    ///     .open_for(Duration::from_secs(10))
    ///     .half_open_max_wait(Duration::from_secs(5))
    ///     .clock(clock.clone())
    ///     .on_transition(move |t| log.lock().unwrap().push(t.reason))
    ///     .build()?;
    /// let _ = breaker.call(|| Err::<(), _>("down"));
    /// clock.advance(Duration::from_secs(10));
    /// let stuck = breaker.try_acquire().expect("half-open: the probe");
    /// clock.advance(Duration::from_secs(5));
    /// // The probe never answered: the next call finds the breaker open again.
    /// let rejected = breaker.try_acquire().unwrap_err();
    /// assert_eq!(rejected.state(), State::Open);
    /// assert_eq!(reasons.lock().unwrap().last(), Some(&Reason::ProbeTimedOut));
    /// stuck.success(); // too late: changes nothing
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn half_open_max_wait(mut self, wait: Duration) -> Self {
        self.config.half_open_max_wait = Some(wait);
        self
    }

    /// Runs the breaker in `mode` (default [`Mode::Enforce`]): in
    /// [`Mode::Shadow`] it trips, probes and closes as it would when
    /// enforcing, but lets every call it would have rejected run (counted in
    /// [`Snapshot::shadowed`](crate::Snapshot::shadowed) and told to
    /// [`Listener::on_shadowed`]); in [`Mode::Off`] it admits everything and
    /// counts nothing. Change it live with
    /// [`CircuitBreaker::set_mode`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, ManualClock, Mode, State};
    ///
    /// let breaker = CircuitBreaker::builder()
    ///     .consecutive_failures(1)
    ///     .mode(Mode::Shadow)
    ///     .clock(ManualClock::new())
    ///     .build()?;
    /// let _ = breaker.call(|| Err::<(), _>("down"));
    /// assert_eq!(breaker.state(), State::Open);
    /// // Open, yet the call runs: the breaker only reports it.
    /// assert_eq!(breaker.call(|| Ok::<_, &str>(7)).unwrap(), 7);
    /// assert_eq!(breaker.snapshot().shadowed, 1);
    /// assert_eq!(breaker.snapshot().rejected, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = Some(mode);
        self
    }

    /// Reads time from `clock` (default [`MonotonicClock`]); tests use
    /// [`ManualClock`](crate::ManualClock).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().clock(fusebox::ManualClock::new()).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        fn is_monotonic<C: Clock>(_: &C) -> bool {
            std::any::TypeId::of::<C>() == std::any::TypeId::of::<MonotonicClock>()
        }
        self.clock = if is_monotonic(&clock) {
            None
        } else {
            Some(Arc::new(clock))
        };
        self
    }

    /// Calls `f` on every state change (see [`Listener`] for where it runs).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder()
    ///     .on_transition(|t| eprintln!("breaker: {t}"))
    ///     .build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn on_transition(self, f: impl Fn(&Transition) + Send + Sync + 'static) -> Self {
        self.listener(OnTransition(f))
    }

    /// Adds a listener; every listener added sees every event.
    ///
    /// # Examples
    ///
    /// ```
    /// struct Quiet;
    /// impl fusebox::Listener for Quiet {}
    /// let b = fusebox::CircuitBreaker::builder().listener(Quiet).build()?;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn listener(mut self, listener: impl Listener) -> Self {
        self.listeners.push(Arc::new(listener));
        self
    }

    /// Adds a listener already in an `Arc`, as it is (no second box).
    #[cfg(feature = "prometheus")]
    pub(crate) fn listener_arc(mut self, listener: Arc<dyn Listener>) -> Self {
        self.listeners.push(listener);
        self
    }

    /// Replaces every trip, open and half-open setting with `config`'s
    /// (name, clock and listeners stay).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{BreakerConfig, CircuitBreaker};
    /// let config = BreakerConfig { failure_rate: Some(0.5), ..Default::default() };
    /// let b = CircuitBreaker::builder().name("db").config(config).build()?;
    /// assert_eq!(b.config().failure_rate, Some(0.5));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn config(mut self, config: BreakerConfig) -> Self {
        self.config = config;
        self
    }

    /// The settings set so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().half_open_probes(3);
    /// assert_eq!(b.settings().half_open_probes, Some(3));
    /// ```
    pub fn settings(&self) -> &BreakerConfig {
        &self.config
    }

    /// Checks every setting and builds the breaker.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first setting that cannot work (see
    /// [`BreakerConfig::validate`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::CircuitBreaker::builder().consecutive_failures(0).build().unwrap_err();
    /// assert_eq!(err.field(), "consecutive_failures");
    /// ```
    pub fn build(self) -> Result<CircuitBreaker, ConfigError> {
        let settings = self.config.settings()?;
        Ok(CircuitBreaker::from_parts(
            settings,
            self.clock,
            self.listeners.into_boxed_slice(),
            self.name,
        ))
    }
}

impl BreakerConfig {
    /// About how many bytes a breaker built from this config allocates,
    /// worked out from the settings alone (nothing is allocated), at most:
    /// its fixed state (under 2 KiB, its settings counted as its own,
    /// though breakers of equal settings share them; 4 KiB more with
    /// feature `fleet`, for the counts a fleet reads) plus what grows with a
    /// setting, which is where
    /// nearly all of a large breaker's memory goes:
    ///
    /// - a `count_window` of N: one byte per call;
    /// - a `time_window` of N `buckets`: 56 bytes per bucket (a call count
    ///   per bucket on each of the window's four thread stripes, and the
    ///   bucket's failure and slow counts);
    /// - a `failures_within` count of N: eight bytes per failure.
    ///
    /// At the largest values validation accepts, a breaker takes about
    /// 10 MB (a count window of 10,000,000) or 5.6 MB (100,000 buckets).
    /// The registry adds this up over a config file before it builds
    /// anything, against its budget
    /// (`fusebox::registry::FuseboxBuilder::config_budget`).
    ///
    /// # Errors
    ///
    /// As [`validate`](BreakerConfig::validate).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::BreakerConfig;
    /// use std::time::Duration;
    /// let small = BreakerConfig { consecutive_failures: Some(5), ..Default::default() };
    /// let hour = BreakerConfig {
    ///     failure_rate: Some(0.5),
    ///     time_window: Some(Duration::from_secs(3600)),
    ///     buckets: Some(100_000),
    ///     ..Default::default()
    /// };
    /// assert!(small.memory_estimate()? < 8 * 1024);
    /// assert!(hour.memory_estimate()? > 5_000_000);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn memory_estimate(&self) -> Result<usize, ConfigError> {
        Ok(CircuitBreaker::footprint(&self.settings()?))
    }
}

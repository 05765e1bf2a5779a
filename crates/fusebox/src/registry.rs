//! Named breakers and bulkheads, built from configuration, seen and
//! controlled by name.
//!
//! A service runs one breaker (and one bulkhead) per dependency. [`Fusebox`]
//! keeps them by name:
//! `fusebox.breaker("payments")` builds the `payments` breaker on first use,
//! from the config named `payments` if there is one and from the defaults
//! otherwise, and returns the same breaker after that. The registry can
//!
//! - load its configuration from TOML or YAML (feature `config`), with errors
//!   that name the bad key and its line (`FuseboxConfig::from_toml`,
//!   `FuseboxConfig::from_yaml`);
//! - list every breaker with its state, rates, counts and time in state
//!   ([`Fusebox::snapshot`]), and every bulkhead with its slots in use
//!   ([`Fusebox::bulkhead_snapshot`]);
//! - force open, disable or reset a breaker by name;
//! - tag breakers (`service = "payments"`), which the metrics and alerts use;
//! - change a breaker's configuration at runtime ([`Fusebox::reconfigure`]).
//!
//! Observers ([`Observer`]) see every breaker the registry builds, which is how
//! metrics (`fusebox::metrics`, feature `prometheus`), tracing
//! (`fusebox::trace`, feature `tracing`) and alerts ([`crate::alert`])
//! attach to all of them at once.
//!
//! # Examples
//!
//! ```
//! use fusebox::registry::{BreakerConfig, Fusebox, FuseboxConfig};
//! use fusebox::State;
//!
//! let mut config = FuseboxConfig::default();
//! config.breakers.insert(
//!     "payments".into(),
//!     BreakerConfig { consecutive_failures: Some(2), ..Default::default() },
//! );
//! let fusebox = Fusebox::from_config(config)?;
//!
//! let payments = fusebox.breaker("payments");
//! for _ in 0..2 {
//!     let _ = payments.call(|| Err::<(), _>("timeout"));
//! }
//! assert_eq!(fusebox.breaker("payments").state(), State::Open);
//!
//! fusebox.reset("payments")?;
//! assert_eq!(payments.state(), State::Closed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::sync::{lock, Mutex};
use crate::{
    Builder, Bulkhead, BulkheadSnapshot, CircuitBreaker, Clock, Listener, Snapshot, State,
    Transition,
};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc; // std even under loom: not modelled, and loom's Arc cannot hold `dyn` or be a `self` type
use std::sync::{OnceLock, RwLock, Weak};
use std::time::Duration;

/// Labels attached to a breaker: `service = "payments"`, `team = "checkout"`.
///
/// Metrics export them as labels of `fusebox_breaker_info`; the
/// service-down alert groups breakers by the `service` tag.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Tags;
/// let mut tags = Tags::new();
/// tags.insert("service".into(), "payments".into());
/// assert_eq!(tags["service"], "payments");
/// ```
pub type Tags = BTreeMap<String, String>;

/// Which rule trips a breaker.
///
/// In a config file: `policy = "consecutive_failures"` or
/// `policy = "failure_rate"`. When `policy` is left out, it is
/// `failure_rate` if `failure_rate` is set and `consecutive_failures`
/// otherwise.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{BreakerConfig, Policy};
/// let config = BreakerConfig {
///     policy: Some(Policy::FailureRate),
///     failure_rate: Some(0.5),
///     count_window: Some(20),
///     ..Default::default()
/// };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Policy {
    /// Trip after `consecutive_failures` failures in a row (default 5).
    ConsecutiveFailures,
    /// Trip when the failure rate over a count or time window reaches
    /// `failure_rate` (default 0.5), once `min_calls` calls were seen.
    FailureRate,
}

impl Policy {
    /// The name used in config files.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::Policy;
    /// assert_eq!(Policy::FailureRate.as_str(), "failure_rate");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::ConsecutiveFailures => "consecutive_failures",
            Policy::FailureRate => "failure_rate",
        }
    }
}

/// An open period that grows on repeated trips: `initial`, then times
/// `factor`, up to `max`.
///
/// In a config file: `open_backoff = { initial = "1s", factor = 2.0, max = "1m" }`.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{Backoff, BreakerConfig};
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
    derive(serde::Deserialize),
    serde(deny_unknown_fields)
)]
pub struct Backoff {
    /// The first open period.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::duration"))]
    pub initial: Duration,
    /// Growth per consecutive trip (at least 1).
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::factor"))]
    pub factor: f64,
    /// The longest open period.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::duration"))]
    pub max: Duration,
}

/// How one breaker is built. Every field is optional: an unset field takes
/// the registry's default config, and then the core builder's default (see
/// [`Builder`]).
///
/// Field names are the config-file keys; durations are strings such as
/// `"30s"`, `"250ms"` or `"5m"`.
///
/// Merging over the defaults goes by group, so a breaker that names its own
/// trip policy does not inherit the other policy's keys: the policy keys
/// (`policy`, `consecutive_failures`, `failure_rate`, `count_window`,
/// `time_window`, `buckets`, `min_calls`) are taken all from the breaker's own
/// config if it sets any of them, otherwise all from the defaults; likewise
/// the open-period keys (`open_for`, `open_backoff`) and the slow-call keys
/// (`slow_call_duration`, `slow_call_rate`). The other keys merge one by one,
/// and tags are the defaults' tags overlaid with the breaker's own.
///
/// # Examples
///
/// ```
/// use fusebox::registry::BreakerConfig;
/// use std::time::Duration;
///
/// let config = BreakerConfig {
///     consecutive_failures: Some(3),
///     open_for: Some(Duration::from_secs(10)),
///     ..Default::default()
/// };
/// let breaker = config.builder()?.build()?;
/// assert_eq!(breaker.state(), fusebox::State::Closed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct BreakerConfig {
    /// The trip rule; see [`Policy`].
    pub policy: Option<Policy>,
    /// Failures in a row that trip a `consecutive_failures` breaker.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_count_u32"))]
    pub consecutive_failures: Option<u32>,
    /// Failure rate in `(0, 1]` that trips a `failure_rate` breaker.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_rate"))]
    pub failure_rate: Option<f64>,
    /// Size of a count window (the last N calls).
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_count_usize"))]
    pub count_window: Option<usize>,
    /// Length of a time window (the calls of the last T); excludes `count_window`.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_duration"))]
    pub time_window: Option<Duration>,
    /// Buckets of a time window.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_count_usize"))]
    pub buckets: Option<usize>,
    /// Calls the window must hold before a rate can trip.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_count_u32"))]
    pub min_calls: Option<u32>,
    /// A call at least this long is slow (set together with `slow_call_rate`).
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_duration"))]
    pub slow_call_duration: Option<Duration>,
    /// Slow-call rate in `(0, 1]` that trips the breaker.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_rate"))]
    pub slow_call_rate: Option<f64>,
    /// Fixed open period; excludes `open_backoff`.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_duration"))]
    pub open_for: Option<Duration>,
    /// Growing open period; excludes `open_for`.
    pub open_backoff: Option<Backoff>,
    /// Probes admitted at once when half-open.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_count_u32"))]
    pub half_open_probes: Option<u32>,
    /// Probe successes that close the breaker.
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_count_u32"))]
    pub successes_to_close: Option<u32>,
    /// Tags, e.g. `tags = { service = "payments" }`.
    pub tags: Tags,
}

impl BreakerConfig {
    fn has_policy_keys(&self) -> bool {
        self.policy.is_some()
            || self.consecutive_failures.is_some()
            || self.has_rate_keys()
            || self.min_calls.is_some()
    }

    fn has_rate_keys(&self) -> bool {
        self.failure_rate.is_some()
            || self.count_window.is_some()
            || self.time_window.is_some()
            || self.buckets.is_some()
    }

    /// This config with every unset field filled in from `defaults`, by the
    /// group rules in the type's docs.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BreakerConfig;
    /// use std::time::Duration;
    ///
    /// let defaults = BreakerConfig {
    ///     consecutive_failures: Some(5),
    ///     open_for: Some(Duration::from_secs(30)),
    ///     ..Default::default()
    /// };
    /// let own = BreakerConfig { failure_rate: Some(0.5), ..Default::default() };
    /// let merged = own.merged_over(&defaults);
    /// assert_eq!(merged.failure_rate, Some(0.5));
    /// assert_eq!(merged.consecutive_failures, None); // policy keys come as a group
    /// assert_eq!(merged.open_for, Some(Duration::from_secs(30)));
    /// ```
    pub fn merged_over(&self, defaults: &BreakerConfig) -> BreakerConfig {
        let policy_src = if self.has_policy_keys() {
            self
        } else {
            defaults
        };
        let open_src = if self.open_for.is_some() || self.open_backoff.is_some() {
            self
        } else {
            defaults
        };
        let slow_src = if self.slow_call_duration.is_some() || self.slow_call_rate.is_some() {
            self
        } else {
            defaults
        };
        let mut tags = defaults.tags.clone();
        tags.extend(self.tags.iter().map(|(k, v)| (k.clone(), v.clone())));
        BreakerConfig {
            policy: policy_src.policy,
            consecutive_failures: policy_src.consecutive_failures,
            failure_rate: policy_src.failure_rate,
            count_window: policy_src.count_window,
            time_window: policy_src.time_window,
            buckets: policy_src.buckets,
            min_calls: policy_src.min_calls,
            slow_call_duration: slow_src.slow_call_duration,
            slow_call_rate: slow_src.slow_call_rate,
            open_for: open_src.open_for,
            open_backoff: open_src.open_backoff,
            half_open_probes: self.half_open_probes.or(defaults.half_open_probes),
            successes_to_close: self.successes_to_close.or(defaults.successes_to_close),
            tags,
        }
    }

    /// A core [`Builder`] set up from this config (no name, clock or
    /// listeners yet).
    ///
    /// # Errors
    ///
    /// Keys that contradict each other, with the key at fault:
    /// `failure_rate` keys under `policy = "consecutive_failures"` (and the
    /// reverse), both `count_window` and `time_window`, both `open_for` and
    /// `open_backoff`, or only one of `slow_call_duration` and
    /// `slow_call_rate`. Values the core rejects are reported by
    /// [`Builder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerConfig, Policy};
    ///
    /// let bad = BreakerConfig {
    ///     policy: Some(Policy::ConsecutiveFailures),
    ///     failure_rate: Some(0.5),
    ///     ..Default::default()
    /// };
    /// assert_eq!(bad.builder().unwrap_err().key(), "failure_rate");
    /// ```
    pub fn builder(&self) -> Result<Builder, InvalidConfig> {
        let policy = match self.policy {
            Some(p) => p,
            None if self.failure_rate.is_some() => Policy::FailureRate,
            None => Policy::ConsecutiveFailures,
        };
        let mut b = CircuitBreaker::builder();
        match policy {
            Policy::ConsecutiveFailures => {
                if self.failure_rate.is_some() {
                    return Err(InvalidConfig::new(
                        "failure_rate",
                        "`failure_rate` only applies to policy = \"failure_rate\", but the policy is \"consecutive_failures\"",
                    ));
                }
                // Unset and implied: the core's own default (5 in a row,
                // unless a slow-call rate is the only rule).
                match (self.consecutive_failures, self.policy) {
                    (Some(n), _) => b = b.consecutive_failures(n),
                    (None, Some(_)) => b = b.consecutive_failures(5),
                    (None, None) => {}
                }
            }
            Policy::FailureRate => {
                if self.consecutive_failures.is_some() {
                    return Err(InvalidConfig::new(
                        "consecutive_failures",
                        "`consecutive_failures` only applies to policy = \"consecutive_failures\", but the policy is \"failure_rate\"",
                    ));
                }
                b = b.failure_rate(self.failure_rate.unwrap_or(0.5));
            }
        }
        // Windows and `min_calls` serve the failure rate and the slow-call
        // rate; the core checks that something uses them.
        if let Some(n) = self.count_window {
            b = b.count_window(n);
        }
        if let Some(t) = self.time_window {
            b = b.time_window(t);
        }
        if let Some(n) = self.buckets {
            b = b.buckets(n);
        }
        if let Some(n) = self.min_calls {
            b = b.min_calls(n);
        }
        match (self.slow_call_duration, self.slow_call_rate) {
            (Some(d), Some(r)) => b = b.slow_calls(d, r),
            (Some(_), None) => {
                return Err(InvalidConfig::new(
                    "slow_call_rate",
                    "`slow_call_duration` is set but `slow_call_rate` is missing",
                ))
            }
            (None, Some(_)) => {
                return Err(InvalidConfig::new(
                    "slow_call_duration",
                    "`slow_call_rate` is set but `slow_call_duration` is missing",
                ))
            }
            (None, None) => {}
        }
        match (self.open_for, self.open_backoff) {
            (Some(_), Some(_)) => {
                return Err(InvalidConfig::new(
                    "open_backoff",
                    "set either `open_for` or `open_backoff`, not both",
                ))
            }
            (Some(d), None) => b = b.open_for(d),
            (None, Some(bo)) => b = b.open_backoff(bo.initial, bo.factor, bo.max),
            (None, None) => {}
        }
        if let Some(n) = self.half_open_probes {
            b = b.half_open_probes(n);
        }
        if let Some(n) = self.successes_to_close {
            b = b.successes_to_close(n);
        }
        Ok(b)
    }

    /// Checks the config by building a throwaway breaker from it.
    ///
    /// # Errors
    ///
    /// The first problem, naming its key (see [`BreakerConfig::builder`] and
    /// the core's [`ConfigError`](crate::ConfigError)).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BreakerConfig;
    /// let bad = BreakerConfig { failure_rate: Some(1.5), ..Default::default() };
    /// assert_eq!(bad.validate().unwrap_err().key(), "failure_rate");
    /// ```
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        self.builder()?
            .build()
            .map(drop)
            .map_err(|e| core_error(&e))
    }
}

/// A core [`ConfigError`](crate::ConfigError) under this module's key names.
fn core_error(e: &crate::ConfigError) -> InvalidConfig {
    let key = match e.field() {
        // The core's `slow_calls(threshold, rate)` covers two keys.
        "slow_calls" if e.value().parse::<f64>().is_ok() => "slow_call_rate",
        "slow_calls" => "slow_call_duration",
        other => other,
    };
    InvalidConfig::new(key, e.to_string())
}

/// How one bulkhead is built; unset fields come from the default bulkhead
/// config, then from [`DEFAULT_MAX_CONCURRENT`] and no waiting.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{BulkheadConfig, Fusebox, FuseboxConfig};
/// let mut config = FuseboxConfig::default();
/// config.bulkheads.insert("reviews".into(), BulkheadConfig {
///     max_concurrent: Some(2),
///     ..Default::default()
/// });
/// let fusebox = Fusebox::from_config(config)?;
/// assert_eq!(fusebox.bulkhead("reviews").limit(), 2);
/// assert_eq!(fusebox.bulkhead("other").limit(), fusebox::registry::DEFAULT_MAX_CONCURRENT);
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct BulkheadConfig {
    /// Calls allowed at once (0 refuses every call).
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_usize"))]
    pub max_concurrent: Option<usize>,
    /// How long a blocking or async acquire may wait for a slot (unset or
    /// zero: never waits).
    #[cfg_attr(feature = "config", serde(deserialize_with = "de::opt_duration"))]
    pub max_wait: Option<Duration>,
    /// Tags, as for breakers.
    pub tags: Tags,
}

/// The limit of a bulkhead whose config sets none (Resilience4j's default).
pub const DEFAULT_MAX_CONCURRENT: usize = 25;

impl BulkheadConfig {
    /// This config with unset fields taken from `defaults`; tags are the
    /// defaults' tags overlaid with this config's.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BulkheadConfig;
    /// let defaults = BulkheadConfig { max_concurrent: Some(8), ..Default::default() };
    /// let own = BulkheadConfig::default();
    /// assert_eq!(own.merged_over(&defaults).max_concurrent, Some(8));
    /// ```
    pub fn merged_over(&self, defaults: &BulkheadConfig) -> BulkheadConfig {
        let mut tags = defaults.tags.clone();
        tags.extend(self.tags.iter().map(|(k, v)| (k.clone(), v.clone())));
        BulkheadConfig {
            max_concurrent: self.max_concurrent.or(defaults.max_concurrent),
            max_wait: self.max_wait.or(defaults.max_wait),
            tags,
        }
    }

    /// Builds a bulkhead named `name` from this config.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BulkheadConfig;
    /// let b = BulkheadConfig::default().build("db");
    /// assert_eq!(b.limit(), fusebox::registry::DEFAULT_MAX_CONCURRENT);
    /// assert_eq!(b.name(), Some("db"));
    /// ```
    pub fn build(&self, name: &str) -> Bulkhead {
        let mut b =
            Bulkhead::builder(self.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT)).name(name);
        if let Some(w) = self.max_wait {
            b = b.max_wait(w);
        }
        b.build()
    }
}

/// The configs a registry starts from: when a name is used for the first
/// time, its config comes from here.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{BreakerConfig, FuseboxConfig};
/// use std::time::Duration;
///
/// let mut config = FuseboxConfig::default();
/// config.defaults.breaker.open_for = Some(Duration::from_secs(10));
/// config.breakers.insert("search".into(), BreakerConfig {
///     consecutive_failures: Some(3),
///     ..Default::default()
/// });
/// assert_eq!(config.breaker_config("search").open_for, Some(Duration::from_secs(10)));
/// assert_eq!(config.breaker_config("other").consecutive_failures, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct FuseboxConfig {
    /// What names without their own config get, and what named configs
    /// inherit.
    pub defaults: Defaults,
    /// Named breaker configs.
    pub breakers: BTreeMap<String, BreakerConfig>,
    /// Named bulkhead configs.
    pub bulkheads: BTreeMap<String, BulkheadConfig>,
}

/// The `[defaults]` table.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Defaults;
/// assert!(Defaults::default().breaker.open_for.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct Defaults {
    /// `[defaults.breaker]`.
    pub breaker: BreakerConfig,
    /// `[defaults.bulkhead]`.
    pub bulkhead: BulkheadConfig,
}

impl FuseboxConfig {
    /// The effective config of the breaker `name`: its own config merged
    /// over the defaults, or the defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    /// let config = FuseboxConfig::default();
    /// assert_eq!(config.breaker_config("any"), config.defaults.breaker);
    /// ```
    pub fn breaker_config(&self, name: &str) -> BreakerConfig {
        match self.breakers.get(name) {
            Some(own) => own.merged_over(&self.defaults.breaker),
            None => self.defaults.breaker.clone(),
        }
    }

    /// The effective config of the bulkhead `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.defaults.bulkhead.max_concurrent = Some(4);
    /// assert_eq!(config.bulkhead_config("any").max_concurrent, Some(4));
    /// ```
    pub fn bulkhead_config(&self, name: &str) -> BulkheadConfig {
        match self.bulkheads.get(name) {
            Some(own) => own.merged_over(&self.defaults.bulkhead),
            None => self.defaults.bulkhead.clone(),
        }
    }

    /// Checks the defaults and every named config.
    ///
    /// # Errors
    ///
    /// The first bad key, as a full path (`breakers.payments.failure_rate`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerConfig, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// config.breakers.insert("db".into(), BreakerConfig {
    ///     slow_call_rate: Some(0.5),
    ///     ..Default::default()
    /// });
    /// let err = config.validate().unwrap_err();
    /// assert_eq!(err.key(), "breakers.db.slow_call_duration");
    /// ```
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        self.defaults
            .breaker
            .validate()
            .map_err(|e| e.under("defaults.breaker"))?;
        for name in self.breakers.keys() {
            self.breaker_config(name)
                .validate()
                .map_err(|e| e.under(&format!("breakers.{name}")))?;
        }
        Ok(())
    }

    /// Parses and validates a TOML config (feature `config`).
    ///
    /// ```toml
    /// [defaults.breaker]
    /// open_for = "30s"
    ///
    /// [breakers.payments]
    /// policy = "failure_rate"
    /// failure_rate = 0.5
    /// time_window = "60s"
    /// tags = { service = "payments" }
    /// ```
    ///
    /// # Errors
    ///
    /// Syntax errors, unknown keys, values of the wrong type or out of range
    /// (negative durations, rates outside `[0, 1]`, unknown policies) and
    /// keys that contradict each other, each naming the key
    /// (`breakers.payments.open_for`) and its line.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    ///
    /// let config = FuseboxConfig::from_toml(r#"
    /// [breakers.payments]
    /// consecutive_failures = 3
    /// open_for = "10s"
    /// "#)?;
    /// assert_eq!(config.breakers["payments"].consecutive_failures, Some(3));
    ///
    /// let err = FuseboxConfig::from_toml(r#"
    /// [breakers.payments]
    /// open_for = "-10s"
    /// "#).unwrap_err();
    /// assert_eq!(err.key(), "breakers.payments.open_for");
    /// assert_eq!(err.line(), Some(3));
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    #[cfg(feature = "config")]
    pub fn from_toml(source: &str) -> Result<FuseboxConfig, InvalidConfig> {
        let de = toml::Deserializer::new(source);
        let config: FuseboxConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = path_key(e.path());
            let inner = e.into_inner();
            let line = inner.span().map(|s| line_of(source, s.start));
            InvalidConfig {
                key,
                line,
                message: inner.message().trim().to_owned(),
            }
        })?;
        config.validate().map_err(|e| e.locate(source))?;
        Ok(config)
    }

    /// Parses and validates a YAML config (feature `config`); same keys and
    /// errors as [`FuseboxConfig::from_toml`].
    ///
    /// # Errors
    ///
    /// As [`FuseboxConfig::from_toml`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    ///
    /// let config = FuseboxConfig::from_yaml("
    /// breakers:
    ///   payments:
    ///     failure_rate: 0.25
    ///     count_window: 20
    /// ")?;
    /// assert_eq!(config.breakers["payments"].failure_rate, Some(0.25));
    ///
    /// let err = FuseboxConfig::from_yaml("
    /// breakers:
    ///   payments:
    ///     policy: rolling
    /// ").unwrap_err();
    /// assert_eq!(err.key(), "breakers.payments.policy");
    /// assert_eq!(err.line(), Some(4));
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    #[cfg(feature = "config")]
    pub fn from_yaml(source: &str) -> Result<FuseboxConfig, InvalidConfig> {
        let de = serde_yaml_ng::Deserializer::from_str(source);
        let config: FuseboxConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = path_key(e.path());
            let inner = e.into_inner();
            let line = inner.location().map(|l| l.line());
            let mut message = inner.to_string();
            // serde_yaml_ng appends " at line L column C"; the line is reported separately.
            if let Some(i) = message.find(" at line ") {
                message.truncate(i);
            }
            // ... and may start with its own path ("breakers.db: "); the key
            // is reported separately too.
            if let Some((head, rest)) = message.split_once(": ") {
                if !head.is_empty() && !head.contains([' ', '`', '"']) {
                    message = rest.to_owned();
                }
            }
            InvalidConfig { key, line, message }
        })?;
        config.validate().map_err(|e| e.locate(source))?;
        Ok(config)
    }
}

#[cfg(feature = "config")]
fn path_key(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s == "." {
        String::new()
    } else {
        s
    }
}

/// 1-based line of byte offset `at` in `source`.
#[cfg(feature = "config")]
fn line_of(source: &str, at: usize) -> usize {
    let at = at.min(source.len());
    source.as_bytes()[..at]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A config that fusebox cannot use: which key, on which line (when it came
/// from a file), and why.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{BreakerConfig, FuseboxConfig};
/// let mut config = FuseboxConfig::default();
/// config.breakers.insert("db".into(), BreakerConfig {
///     failure_rate: Some(2.0),
///     ..Default::default()
/// });
/// let err = config.validate().unwrap_err();
/// assert_eq!(err.key(), "breakers.db.failure_rate");
/// assert_eq!(err.line(), None); // not from a file
/// assert!(err.to_string().starts_with("breakers.db.failure_rate: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidConfig {
    key: String,
    line: Option<usize>,
    message: String,
}

impl InvalidConfig {
    fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        InvalidConfig {
            key: key.into(),
            line: None,
            message: message.into(),
        }
    }

    fn under(mut self, prefix: &str) -> Self {
        self.key = if self.key.is_empty() {
            prefix.to_owned()
        } else {
            format!("{prefix}.{}", self.key)
        };
        self
    }

    /// Finds the line of `self.key` in `source` (best effort, for errors
    /// found after parsing).
    #[cfg(feature = "config")]
    fn locate(mut self, source: &str) -> Self {
        self.line = find_key_line(source, &self.key);
        self
    }

    /// The full key at fault, e.g. `breakers.payments.open_for` (empty for a
    /// syntax error outside any key).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BreakerConfig;
    /// let err = BreakerConfig { half_open_probes: Some(0), ..Default::default() }
    ///     .validate()
    ///     .unwrap_err();
    /// assert_eq!(err.key(), "half_open_probes");
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The 1-based line in the config file, when known.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BreakerConfig;
    /// let err = BreakerConfig { failure_rate: Some(-1.0), ..Default::default() }
    ///     .validate()
    ///     .unwrap_err();
    /// assert_eq!(err.line(), None);
    /// ```
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong, without the key and line.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BreakerConfig;
    /// let err = BreakerConfig { slow_call_rate: Some(0.5), ..Default::default() }
    ///     .validate()
    ///     .unwrap_err();
    /// assert!(err.message().contains("slow_call_duration"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.key.is_empty(), self.line) {
            (false, Some(line)) => write!(f, "{} (line {line}): {}", self.key, self.message),
            (false, None) => write!(f, "{}: {}", self.key, self.message),
            (true, Some(line)) => write!(f, "line {line}: {}", self.message),
            (true, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for InvalidConfig {}

/// Best-effort line of a dotted key in a TOML or YAML source: each segment
/// is looked for, in order, as a key (`seg =`, `seg:`) or inside a TOML
/// table header (`[breakers.seg]`), starting where the previous one was found.
/// A key absent from the source (a missing companion key) gets the line of
/// the deepest table found.
#[cfg(feature = "config")]
fn find_key_line(source: &str, key: &str) -> Option<usize> {
    let lines: Vec<&str> = source.lines().collect();
    let mut at = 0usize;
    let mut found = None;
    for seg in key.split('.') {
        // A key that is missing altogether: the line of its table.
        let Some(hit) = (at..lines.len()).find(|&i| line_has_key(lines[i], seg)) else {
            break;
        };
        at = hit;
        found = Some(hit + 1);
    }
    found
}

#[cfg(feature = "config")]
fn line_has_key(line: &str, seg: &str) -> bool {
    let t = line.trim_start().trim_start_matches("- ");
    if let Some(header) = t.strip_prefix('[') {
        let header = header.trim_start_matches('[');
        let header = header.split(']').next().unwrap_or("");
        return header
            .split('.')
            .any(|h| h.trim().trim_matches('"').trim_matches('\'') == seg);
    }
    // `seg = ...`, `seg: ...`, `"seg" = ...`, or an inline table `{ seg = ... }`.
    let mut rest = t;
    loop {
        let unquoted = rest.trim_start_matches(['{', ',', ' ']);
        let unquoted = unquoted.trim_start_matches(['"', '\'']);
        if let Some(after) = unquoted.strip_prefix(seg) {
            let after = after.trim_start_matches(['"', '\'']).trim_start();
            if after.starts_with('=') || after.starts_with(':') {
                return true;
            }
        }
        match rest.find([',', '{']) {
            Some(i) => rest = &rest[i + 1..],
            None => return false,
        }
    }
}

/// Deserialisers that validate each value where it stands, so errors carry
/// the key and line of the value itself.
#[cfg(feature = "config")]
mod de {
    use serde::de::{Deserializer, Error, Unexpected, Visitor};
    use serde::Deserialize;
    use std::fmt;
    use std::time::Duration;

    pub(super) fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"30s\", \"250ms\" or \"5m\"")
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<Duration, E> {
                let t = s.trim();
                if t.starts_with('-') {
                    return Err(E::custom(format!(
                        "invalid duration \"{s}\": durations cannot be negative"
                    )));
                }
                humantime::parse_duration(t)
                    .map_err(|e| E::custom(format!("invalid duration \"{s}\": {e}")))
            }
        }
        d.deserialize_str(V)
    }

    pub(super) fn opt_duration<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        duration(d).map(Some)
    }

    /// A number in `[0, 1]`, from an integer or a float.
    fn number<'de, D: Deserializer<'de>>(d: D, expecting: &'static str) -> Result<f64, D::Error> {
        struct V(&'static str);
        impl Visitor<'_> for V {
            type Value = f64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<f64, E> {
                Ok(v)
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<f64, E> {
                Ok(v as f64)
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<f64, E> {
                Ok(v as f64)
            }
        }
        d.deserialize_f64(V(expecting))
    }

    pub(super) fn opt_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        const EXP: &str = "a rate above 0 and at most 1";
        let v = number(d, EXP)?;
        if !(v > 0.0 && v <= 1.0) {
            return Err(D::Error::invalid_value(Unexpected::Float(v), &EXP));
        }
        Ok(Some(v))
    }

    pub(super) fn factor<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        const EXP: &str = "a growth factor of at least 1";
        let v = number(d, EXP)?;
        if !(v.is_finite() && v >= 1.0) {
            return Err(D::Error::invalid_value(Unexpected::Float(v), &EXP));
        }
        Ok(v)
    }

    pub(super) fn opt_count_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        let v = u32::deserialize(d)?;
        if v == 0 {
            return Err(D::Error::invalid_value(
                Unexpected::Unsigned(0),
                &"a count of at least 1",
            ));
        }
        Ok(Some(v))
    }

    pub(super) fn opt_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
        usize::deserialize(d).map(Some)
    }

    pub(super) fn opt_count_usize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<usize>, D::Error> {
        let v = usize::deserialize(d)?;
        if v == 0 {
            return Err(D::Error::invalid_value(
                Unexpected::Unsigned(0),
                &"a count of at least 1",
            ));
        }
        Ok(Some(v))
    }
}

/// Sees every breaker a [`Fusebox`] builds: on first use of a name and on
/// every [`Fusebox::reconfigure`] that builds a new one.
///
/// [`Observer::instrument`] runs before the breaker is built (add listeners
/// to the builder there); [`Observer::breaker_added`] after it is installed.
/// Observers must not call back into the [`Fusebox`] from these methods.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{Fusebox, Observer, Tags};
/// use fusebox::{Builder, Listener, Transition};
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Default)]
/// struct Log(Arc<Mutex<Vec<String>>>);
///
/// struct LogListener(String, Arc<Mutex<Vec<String>>>);
/// impl Listener for LogListener {
///     fn on_transition(&self, t: &Transition) {
///         self.1.lock().unwrap().push(format!("{} {} -> {}", self.0, t.from, t.to));
///     }
/// }
///
/// impl Observer for Log {
///     fn instrument(&self, name: &str, _tags: &Tags, builder: Builder) -> Builder {
///         builder.listener(LogListener(name.to_owned(), self.0.clone()))
///     }
/// }
///
/// let log = Log::default();
/// let lines = log.0.clone();
/// let fusebox = Fusebox::builder().observer(log).build()?;
/// fusebox.breaker("db");
/// fusebox.force_open("db")?;
/// assert_eq!(lines.lock().unwrap().as_slice(), ["db closed -> forced_open"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Observer: Send + Sync + 'static {
    /// Called with the builder of the breaker `name`, before it is built.
    fn instrument(&self, name: &str, tags: &Tags, builder: Builder) -> Builder {
        let _ = (name, tags);
        builder
    }

    /// Called once the breaker `name` is built and installed.
    fn breaker_added(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        let _ = (name, tags, breaker);
    }

    /// Called once the bulkhead `name` is built and installed.
    fn bulkhead_added(&self, name: &str, tags: &Tags, bulkhead: &Bulkhead) {
        let _ = (name, tags, bulkhead);
    }
}

/// A breaker's name, tags and [`Snapshot`], as [`Fusebox::snapshot`] lists them.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Fusebox;
/// let fusebox = Fusebox::new();
/// fusebox.breaker("db");
/// let all = fusebox.snapshot();
/// assert_eq!(all[0].name, "db");
/// assert_eq!(all[0].snapshot.state, fusebox::State::Closed);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BreakerStatus {
    /// The registry name.
    pub name: String,
    /// Its tags.
    pub tags: Tags,
    /// State, counts, rates and time in state.
    pub snapshot: Snapshot,
}

/// A bulkhead's name, tags and [`BulkheadSnapshot`], as
/// [`Fusebox::bulkhead_snapshot`] lists them.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Fusebox;
/// let fusebox = Fusebox::new();
/// let _slot = fusebox.bulkhead("db").try_acquire()?;
/// let all = fusebox.bulkhead_snapshot();
/// assert_eq!((all[0].name.as_str(), all[0].snapshot.in_use), ("db", 1));
/// # Ok::<(), fusebox::BulkheadFull>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BulkheadStatus {
    /// The registry name.
    pub name: String,
    /// Its tags.
    pub tags: Tags,
    /// Slots in use, limit, rejections, waiters.
    pub snapshot: BulkheadSnapshot,
}

/// What [`Fusebox::reconfigure`] did.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{BreakerConfig, Fusebox, Reconfigured};
/// let fusebox = Fusebox::new();
/// let same = fusebox.config("db");
/// fusebox.breaker("db");
/// assert_eq!(fusebox.reconfigure("db", same)?, Reconfigured::Unchanged);
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconfigured {
    /// The effective config did not change; the breaker was kept.
    Unchanged,
    /// The new config is in force: a new breaker was installed (or, for a
    /// name not used yet, will be built from it on first use).
    Applied,
    /// The breaker is open or half-open: it keeps running on its old config
    /// until it next closes, and is then replaced by one built from the new
    /// config. Until then [`Fusebox::config`] already shows the new config.
    Deferred,
}

/// A name that the registry has no breaker for.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Fusebox;
/// let err = Fusebox::new().force_open("nope").unwrap_err();
/// assert_eq!(err.name(), "nope");
/// assert_eq!(err.to_string(), "no breaker named `nope`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBreaker {
    name: String,
}

impl UnknownBreaker {
    /// The name asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::Fusebox;
    /// assert_eq!(Fusebox::new().reset("x").unwrap_err().name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for UnknownBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no breaker named `{}`", self.name)
    }
}

impl std::error::Error for UnknownBreaker {}

/// A clock shared by every breaker of a registry.
#[derive(Clone)]
struct SharedClock(Arc<dyn Clock>);

impl fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedClock").field(&self.0.now()).finish()
    }
}

impl Clock for SharedClock {
    fn now(&self) -> Duration {
        self.0.now()
    }
}

/// Sets up a [`Fusebox`]: its config, clock and observers.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{Fusebox, FuseboxConfig};
/// use fusebox::ManualClock;
///
/// let clock = ManualClock::new();
/// let fusebox = Fusebox::builder()
///     .config(FuseboxConfig::default())
///     .clock(clock.clone())
///     .build()?;
/// assert!(fusebox.names().is_empty());
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Default)]
pub struct FuseboxBuilder {
    config: FuseboxConfig,
    clock: Option<SharedClock>,
    observers: Vec<Arc<dyn Observer>>,
}

impl fmt::Debug for FuseboxBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FuseboxBuilder")
            .field("config", &self.config)
            .field("clock", &self.clock)
            .field("observers", &self.observers.len())
            .finish()
    }
}

impl FuseboxBuilder {
    /// The configs to build breakers from (default: all defaults).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{Fusebox, FuseboxConfig};
    /// let fusebox = Fusebox::builder().config(FuseboxConfig::default()).build()?;
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn config(mut self, config: FuseboxConfig) -> Self {
        self.config = config;
        self
    }

    /// The clock every breaker of the registry uses (default: each breaker's
    /// own default, [`MonotonicClock`](crate::MonotonicClock)).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::Fusebox;
    /// use fusebox::{Clock, ManualClock};
    /// use std::time::Duration;
    /// let clock = ManualClock::new();
    /// let fusebox = Fusebox::builder().clock(clock.clone()).build()?;
    /// clock.advance(Duration::from_secs(3));
    /// assert_eq!(fusebox.breaker("db").clock().now(), Duration::from_secs(3));
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(SharedClock(Arc::new(clock)));
        self
    }

    /// Adds an observer; see [`Observer`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{Fusebox, Observer};
    /// struct Nothing;
    /// impl Observer for Nothing {}
    /// let fusebox = Fusebox::builder().observer(Nothing).build()?;
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn observer(mut self, observer: impl Observer) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Validates the config and makes the registry.
    ///
    /// # Errors
    ///
    /// The first bad key of the config; see [`FuseboxConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerConfig, Fusebox, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// config.defaults.breaker.successes_to_close = Some(0);
    /// let err = Fusebox::builder().config(config).build().unwrap_err();
    /// assert_eq!(err.key(), "defaults.breaker.successes_to_close");
    /// ```
    pub fn build(self) -> Result<Fusebox, InvalidConfig> {
        self.config.validate()?;
        Ok(Fusebox {
            inner: Arc::new(Inner {
                config: RwLock::new(self.config),
                clock: self.clock,
                observers: self.observers,
                breakers: RwLock::new(BTreeMap::new()),
                bulkheads: RwLock::new(BTreeMap::new()),
            }),
        })
    }
}

/// The registry: named breakers, built on first use from configuration.
///
/// Cheap to clone (clones share the breakers). See the [module
/// docs](self) for an overview.
///
/// Holding the `Fusebox` and asking it for `breaker(name)` per use (a read
/// lock and a map lookup) picks up [`Fusebox::reconfigure`]; a
/// [`CircuitBreaker`] kept from before a reconfiguration keeps the old
/// breaker.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Fusebox;
/// let fusebox = Fusebox::new();
/// let a = fusebox.breaker("db");
/// let b = fusebox.breaker("db");
/// a.force_open();
/// assert_eq!(b.state(), fusebox::State::ForcedOpen); // the same breaker
/// ```
#[derive(Clone)]
pub struct Fusebox {
    inner: Arc<Inner>,
}

struct Inner {
    config: RwLock<FuseboxConfig>,
    clock: Option<SharedClock>,
    observers: Vec<Arc<dyn Observer>>,
    breakers: RwLock<BTreeMap<String, Arc<Entry>>>,
    bulkheads: RwLock<BTreeMap<String, (Bulkhead, Tags)>>,
}

/// One named breaker. The breaker inside can be replaced by a reconfiguration.
struct Entry {
    name: String,
    current: RwLock<Installed>,
    /// A config waiting for the breaker to close (see `Reconfigured::Deferred`).
    pending: Mutex<Option<BreakerConfig>>,
    registry: Weak<Inner>,
}

#[derive(Clone)]
struct Installed {
    breaker: CircuitBreaker,
    config: BreakerConfig,
}

/// The registry's own listener on each breaker: applies a deferred
/// reconfiguration when the breaker closes.
struct EntryListener {
    entry: Arc<OnceLock<Weak<Entry>>>,
}

impl Listener for EntryListener {
    fn on_transition(&self, t: &Transition) {
        if t.to != State::Closed {
            return;
        }
        if let Some(entry) = self.entry.get().and_then(Weak::upgrade) {
            entry.apply_pending();
        }
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    /// Builds the breaker `name` from `config` (already validated), running
    /// the observers' `instrument`. `slot` is filled with the entry later.
    fn build(
        &self,
        name: &str,
        config: &BreakerConfig,
        slot: Arc<OnceLock<Weak<Entry>>>,
    ) -> Result<CircuitBreaker, InvalidConfig> {
        let mut b = config
            .builder()?
            .name(name)
            .listener(EntryListener { entry: slot });
        if let Some(clock) = &self.clock {
            b = b.clock(clock.clone());
        }
        for o in &self.observers {
            b = o.instrument(name, &config.tags, b);
        }
        b.build().map_err(|e| core_error(&e))
    }

    fn added(&self, name: &str, installed: &Installed) {
        for o in &self.observers {
            o.breaker_added(name, &installed.config.tags, &installed.breaker);
        }
    }
}

impl Entry {
    fn installed(&self) -> Installed {
        read(&self.current).clone()
    }

    /// Replaces the breaker with one built from the pending config, if any.
    fn apply_pending(self: &Arc<Self>) {
        let Some(config) = lock(&self.pending).take() else {
            return;
        };
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        self.swap(&registry, config);
    }

    /// Builds a breaker from `config` and installs it, carrying over a
    /// forced-open or disabled state.
    fn swap(self: &Arc<Self>, registry: &Inner, config: BreakerConfig) {
        let slot = Arc::new(OnceLock::new());
        let _ = slot.set(Arc::downgrade(self));
        // Validated before it was accepted; a failure here would be a core
        // rule that changed under us: keep the running breaker.
        let Ok(breaker) = registry.build(&self.name, &config, slot) else {
            return;
        };
        let installed = Installed { breaker, config };
        let old = std::mem::replace(&mut *write(&self.current), installed.clone());
        match old.breaker.state() {
            State::ForcedOpen => installed.breaker.force_open(),
            State::Disabled => installed.breaker.disable(),
            _ => {}
        }
        registry.added(&self.name, &installed);
    }
}

impl fmt::Debug for Fusebox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fusebox")
            .field("breakers", &self.names())
            .finish_non_exhaustive()
    }
}

impl Default for Fusebox {
    fn default() -> Self {
        Self::new()
    }
}

impl Fusebox {
    /// A registry where every breaker gets the core defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// assert_eq!(fusebox.breaker("db").state(), fusebox::State::Closed);
    /// ```
    pub fn new() -> Fusebox {
        Fusebox {
            inner: Arc::new(Inner {
                config: RwLock::new(FuseboxConfig::default()),
                clock: None,
                observers: Vec::new(),
                breakers: RwLock::new(BTreeMap::new()),
                bulkheads: RwLock::new(BTreeMap::new()),
            }),
        }
    }

    /// Starts a [`FuseboxBuilder`].
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::builder().build()?;
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn builder() -> FuseboxBuilder {
        FuseboxBuilder::default()
    }

    /// A registry with `config` and nothing else set.
    ///
    /// # Errors
    ///
    /// The first bad key; see [`FuseboxConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{Fusebox, FuseboxConfig};
    /// let fusebox = Fusebox::from_config(FuseboxConfig::default())?;
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn from_config(config: FuseboxConfig) -> Result<Fusebox, InvalidConfig> {
        Fusebox::builder().config(config).build()
    }

    /// The breaker `name`, built on first use from its config (or the
    /// defaults).
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// let db = fusebox.breaker("db");
    /// assert_eq!(db.name(), Some("db"));
    /// ```
    pub fn breaker(&self, name: &str) -> CircuitBreaker {
        if let Some(e) = read(&self.inner.breakers).get(name) {
            return read(&e.current).breaker.clone();
        }
        let mut config = read(&self.inner.config).breaker_config(name);
        let slot = Arc::new(OnceLock::new());
        let breaker = match self.inner.build(name, &config, slot.clone()) {
            Ok(b) => b,
            // Configs are validated when accepted, so this is unreachable in
            // practice; fall back to the core defaults (instrumented like any
            // other breaker) rather than panic.
            Err(_) => {
                config = BreakerConfig {
                    tags: config.tags.clone(),
                    ..BreakerConfig::default()
                };
                match self.inner.build(name, &config, slot.clone()) {
                    Ok(b) => b,
                    Err(_) => unreachable!("the core's default config is valid"),
                }
            }
        };
        self.insert(name, Installed { breaker, config }, slot)
    }

    fn insert(
        &self,
        name: &str,
        installed: Installed,
        slot: Arc<OnceLock<Weak<Entry>>>,
    ) -> CircuitBreaker {
        let entry = {
            let mut map = write(&self.inner.breakers);
            if let Some(e) = map.get(name) {
                // Another thread built it first: use theirs.
                return read(&e.current).breaker.clone();
            }
            let entry = Arc::new(Entry {
                name: name.to_owned(),
                current: RwLock::new(installed.clone()),
                pending: Mutex::new(None),
                registry: Arc::downgrade(&self.inner),
            });
            let _ = slot.set(Arc::downgrade(&entry));
            map.insert(name.to_owned(), entry.clone());
            entry
        };
        self.inner.added(&entry.name, &installed);
        installed.breaker
    }

    /// The breaker `name` if it was built already.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// assert!(fusebox.get("db").is_none());
    /// fusebox.breaker("db");
    /// assert!(fusebox.get("db").is_some());
    /// ```
    pub fn get(&self, name: &str) -> Option<CircuitBreaker> {
        read(&self.inner.breakers)
            .get(name)
            .map(|e| read(&e.current).breaker.clone())
    }

    /// Names of the breakers built so far, sorted.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// fusebox.breaker("b");
    /// fusebox.breaker("a");
    /// assert_eq!(fusebox.names(), ["a", "b"]);
    /// ```
    pub fn names(&self) -> Vec<String> {
        read(&self.inner.breakers).keys().cloned().collect()
    }

    /// Every breaker built so far with its tags and [`Snapshot`], sorted by
    /// name.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::State;
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// fusebox.breaker("db");
    /// fusebox.breaker("cache").force_open();
    /// let states: Vec<_> = fusebox.snapshot().iter().map(|s| s.snapshot.state).collect();
    /// assert_eq!(states, [State::ForcedOpen, State::Closed]);
    /// ```
    pub fn snapshot(&self) -> Vec<BreakerStatus> {
        let entries: Vec<Arc<Entry>> = read(&self.inner.breakers).values().cloned().collect();
        entries
            .iter()
            .map(|e| {
                let i = e.installed();
                BreakerStatus {
                    name: e.name.clone(),
                    tags: i.config.tags,
                    snapshot: i.breaker.snapshot(),
                }
            })
            .collect()
    }

    fn entry(&self, name: &str) -> Result<Arc<Entry>, UnknownBreaker> {
        read(&self.inner.breakers)
            .get(name)
            .cloned()
            .ok_or_else(|| UnknownBreaker {
                name: name.to_owned(),
            })
    }

    /// Forces the breaker `name` open: every call is rejected until
    /// [`Fusebox::reset`].
    ///
    /// # Errors
    ///
    /// [`UnknownBreaker`] if no breaker of that name was built (a typo in an
    /// operator's command should not create a breaker).
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// let db = fusebox.breaker("db");
    /// fusebox.force_open("db")?;
    /// assert!(db.call(|| Ok::<_, ()>(1)).is_err());
    /// # Ok::<(), fusebox::registry::UnknownBreaker>(())
    /// ```
    pub fn force_open(&self, name: &str) -> Result<(), UnknownBreaker> {
        self.entry(name)?.installed().breaker.force_open();
        Ok(())
    }

    /// Disables the breaker `name`: every call goes through, nothing is
    /// counted, until [`Fusebox::reset`].
    ///
    /// # Errors
    ///
    /// [`UnknownBreaker`] if no breaker of that name was built.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::State;
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// fusebox.breaker("db");
    /// fusebox.disable("db")?;
    /// assert_eq!(fusebox.breaker("db").state(), State::Disabled);
    /// # Ok::<(), fusebox::registry::UnknownBreaker>(())
    /// ```
    pub fn disable(&self, name: &str) -> Result<(), UnknownBreaker> {
        self.entry(name)?.installed().breaker.disable();
        Ok(())
    }

    /// Resets the breaker `name` to closed with empty counters.
    ///
    /// # Errors
    ///
    /// [`UnknownBreaker`] if no breaker of that name was built.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::State;
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// fusebox.breaker("db").force_open();
    /// fusebox.reset("db")?;
    /// assert_eq!(fusebox.breaker("db").state(), State::Closed);
    /// # Ok::<(), fusebox::registry::UnknownBreaker>(())
    /// ```
    pub fn reset(&self, name: &str) -> Result<(), UnknownBreaker> {
        self.entry(name)?.installed().breaker.reset();
        Ok(())
    }

    /// The bulkhead `name`, built on first use from its config (or the
    /// defaults). Bulkheads are not reconfigured at runtime: a new limit
    /// would have to account for the calls holding slots of the old one.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// let a = fusebox.bulkhead("db");
    /// let _slot = a.try_acquire()?;
    /// assert_eq!(fusebox.bulkhead("db").snapshot().in_use, 1); // the same bulkhead
    /// # Ok::<(), fusebox::BulkheadFull>(())
    /// ```
    pub fn bulkhead(&self, name: &str) -> Bulkhead {
        if let Some((b, _)) = read(&self.inner.bulkheads).get(name) {
            return b.clone();
        }
        let config = read(&self.inner.config).bulkhead_config(name);
        let built = config.build(name);
        let bulkhead = {
            let mut map = write(&self.inner.bulkheads);
            if let Some((b, _)) = map.get(name) {
                return b.clone();
            }
            map.insert(name.to_owned(), (built.clone(), config.tags.clone()));
            built
        };
        for o in &self.inner.observers {
            o.bulkhead_added(name, &config.tags, &bulkhead);
        }
        bulkhead
    }

    /// Every bulkhead built so far with its tags and [`BulkheadSnapshot`],
    /// sorted by name.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// fusebox.bulkhead("b");
    /// fusebox.bulkhead("a");
    /// let names: Vec<_> = fusebox.bulkhead_snapshot().into_iter().map(|s| s.name).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// ```
    pub fn bulkhead_snapshot(&self) -> Vec<BulkheadStatus> {
        read(&self.inner.bulkheads)
            .iter()
            .map(|(name, (b, tags))| BulkheadStatus {
                name: name.clone(),
                tags: tags.clone(),
                snapshot: b.snapshot(),
            })
            .collect()
    }

    /// The tags of breaker `name` (from its effective config), whether or not
    /// it was built yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerConfig, Fusebox, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// let mut db = BreakerConfig::default();
    /// db.tags.insert("service".into(), "orders".into());
    /// config.breakers.insert("orders-db".into(), db);
    /// let fusebox = Fusebox::from_config(config)?;
    /// assert_eq!(fusebox.tags("orders-db")["service"], "orders");
    /// assert!(fusebox.tags("other").is_empty());
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn tags(&self, name: &str) -> Tags {
        self.config(name).tags
    }

    /// Names of the built breakers whose tag `key` is `value`, sorted.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerConfig, Fusebox, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// for name in ["pay-eu", "pay-us"] {
    ///     let mut c = BreakerConfig::default();
    ///     c.tags.insert("service".into(), "payments".into());
    ///     config.breakers.insert(name.into(), c);
    /// }
    /// let fusebox = Fusebox::from_config(config)?;
    /// for name in ["pay-eu", "pay-us", "search"] {
    ///     fusebox.breaker(name);
    /// }
    /// assert_eq!(fusebox.tagged("service", "payments"), ["pay-eu", "pay-us"]);
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn tagged(&self, key: &str, value: &str) -> Vec<String> {
        let entries: Vec<Arc<Entry>> = read(&self.inner.breakers).values().cloned().collect();
        entries
            .iter()
            .filter(|e| read(&e.current).config.tags.get(key).map(String::as_str) == Some(value))
            .map(|e| e.name.clone())
            .collect()
    }

    /// The effective config of breaker `name`: the one it runs on (or, after
    /// a deferred reconfiguration, will run on), or the one it would be
    /// built from.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// assert_eq!(fusebox.config("db"), Default::default());
    /// ```
    pub fn config(&self, name: &str) -> BreakerConfig {
        read(&self.inner.config).breaker_config(name)
    }

    /// Changes the config of breaker `name` at runtime. `config` is the
    /// breaker's own config, merged over the registry's defaults like one
    /// from a file.
    ///
    /// The core breaker has no setters, so a changed config means a new
    /// breaker, installed atomically under the same name; what carries over
    /// depends on the old breaker's state:
    ///
    /// - unchanged effective config: nothing happens ([`Reconfigured::Unchanged`]);
    /// - closed: replaced now; the failure window, consecutive-failure count
    ///   and rejected count start from zero ([`Reconfigured::Applied`]);
    /// - forced open or disabled: replaced now, and the new breaker is forced
    ///   open or disabled too ([`Reconfigured::Applied`]);
    /// - open or half-open: kept until it next closes, so a failing
    ///   dependency stays protected and the open period in progress is
    ///   honoured; then replaced ([`Reconfigured::Deferred`]).
    ///
    /// Metrics, tracing and alert observers are attached to the new breaker
    /// under the same name, so their series and history continue. Handles
    /// (`CircuitBreaker` clones) taken before the swap keep the old breaker:
    /// ask the registry again to get the new one.
    ///
    /// # Errors
    ///
    /// An invalid config, with the key under `breakers.NAME`; the running
    /// breaker is left untouched.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerConfig, Fusebox, Reconfigured};
    /// let fusebox = Fusebox::new();
    /// fusebox.breaker("db");
    /// let tighter = BreakerConfig { consecutive_failures: Some(1), ..Default::default() };
    /// assert_eq!(fusebox.reconfigure("db", tighter)?, Reconfigured::Applied);
    /// let _ = fusebox.breaker("db").call(|| Err::<(), _>("boom"));
    /// assert_eq!(fusebox.breaker("db").state(), fusebox::State::Open);
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn reconfigure(
        &self,
        name: &str,
        config: BreakerConfig,
    ) -> Result<Reconfigured, InvalidConfig> {
        let prefix = format!("breakers.{name}");
        let effective = {
            let mut all = write(&self.inner.config);
            let effective = config.merged_over(&all.defaults.breaker);
            effective.validate().map_err(|e| e.under(&prefix))?;
            all.breakers.insert(name.to_owned(), config);
            effective
        };
        let Some(entry) = read(&self.inner.breakers).get(name).cloned() else {
            return Ok(Reconfigured::Applied);
        };
        let current = entry.installed();
        if current.config == effective {
            *lock(&entry.pending) = None;
            return Ok(Reconfigured::Unchanged);
        }
        match current.breaker.state() {
            State::Open | State::HalfOpen => {
                *lock(&entry.pending) = Some(effective);
                // It may have closed between the state read and the store;
                // the listener then found nothing pending: apply it here.
                if current.breaker.state() == State::Closed {
                    entry.apply_pending();
                    return Ok(Reconfigured::Applied);
                }
                Ok(Reconfigured::Deferred)
            }
            _ => {
                *lock(&entry.pending) = None;
                entry.swap(&self.inner, effective);
                Ok(Reconfigured::Applied)
            }
        }
    }
}

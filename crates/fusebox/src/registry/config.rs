//! What a registry is built from: defaults, named breakers and bulkheads,
//! and per-dependency entries, merged field by field.

use super::error::InvalidConfig;
use crate::observe::Tags;
use crate::retry::{Exponential, FullJitter, Retry, RetryBudget};
use crate::{BreakerConfig, Bulkhead};
use std::collections::BTreeMap;
use std::time::Duration;

/// A named breaker's table: its settings (the keys of [`BreakerConfig`])
/// and its tags.
///
/// In a file the two sit side by side:
///
/// ```toml
/// [breakers.payments]
/// failure_rate = 0.5
/// time_window = "60s"
/// tags = { service = "payments" }
/// ```
///
/// # Examples
///
/// ```
/// use fusebox::registry::BreakerEntry;
/// use fusebox::BreakerConfig;
/// let entry = BreakerEntry::from(BreakerConfig { consecutive_failures: Some(3), ..Default::default() });
/// assert!(entry.tags.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BreakerEntry {
    /// The breaker's settings; unset keys inherit `[defaults.breaker]`.
    pub settings: BreakerConfig,
    /// Tags, e.g. `tags = { service = "payments" }`; laid over the defaults' tags.
    pub tags: Tags,
}

impl From<BreakerConfig> for BreakerEntry {
    fn from(settings: BreakerConfig) -> Self {
        BreakerEntry {
            settings,
            tags: Tags::new(),
        }
    }
}

impl BreakerEntry {
    /// This entry laid over `base`: settings field by field
    /// ([`BreakerConfig::merged_over`]), tags key by key.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BreakerEntry;
    /// use fusebox::BreakerConfig;
    /// let mut base = BreakerEntry::from(BreakerConfig { min_calls: Some(20), ..Default::default() });
    /// base.tags.insert("team".into(), "checkout".into());
    /// let own = BreakerEntry::from(BreakerConfig { failure_rate: Some(0.3), ..Default::default() });
    /// let merged = own.merged_over(&base);
    /// assert_eq!((merged.settings.failure_rate, merged.settings.min_calls), (Some(0.3), Some(20)));
    /// assert_eq!(merged.tags["team"], "checkout");
    /// ```
    pub fn merged_over(&self, base: &BreakerEntry) -> BreakerEntry {
        BreakerEntry {
            settings: self.settings.merged_over(&base.settings),
            tags: overlay(&base.tags, &self.tags),
        }
    }
}

fn overlay(base: &Tags, own: &Tags) -> Tags {
    let mut tags = base.clone();
    tags.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
    tags
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
    /// Calls allowed at once (at least 1; unset: the default bulkhead's,
    /// then [`DEFAULT_MAX_CONCURRENT`]).
    pub max_concurrent: Option<usize>,
    /// How long a blocking or async acquire may wait for a slot (unset or
    /// zero: never waits).
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str::option"))]
    pub max_wait: Option<Duration>,
    /// Enforce (unset: the default), shadow or off: see [`Mode`](crate::Mode).
    pub mode: Option<crate::Mode>,
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
        BulkheadConfig {
            max_concurrent: self.max_concurrent.or(defaults.max_concurrent),
            max_wait: self.max_wait.or(defaults.max_wait),
            mode: self.mode.or(defaults.mode),
            tags: overlay(&defaults.tags, &self.tags),
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
        Bulkhead::builder(self.limit())
            .name(name)
            .max_wait(self.max_wait.unwrap_or_default())
            .mode(self.mode.unwrap_or_default())
            .build()
    }

    /// Checks the settings a file can get wrong: a `max_concurrent` of 0
    /// would refuse every call for as long as it is in force, so it is
    /// refused. (To stop calls to a dependency on purpose, force its
    /// breaker open.)
    ///
    /// # Errors
    ///
    /// The bad key (`max_concurrent`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::BulkheadConfig;
    /// let none = BulkheadConfig { max_concurrent: Some(0), ..Default::default() };
    /// assert_eq!(none.validate().unwrap_err().key(), "max_concurrent");
    /// assert!(BulkheadConfig::default().validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.max_concurrent == Some(0) {
            return Err(InvalidConfig::new(
                "max_concurrent",
                "must be at least 1: a bulkhead of 0 slots refuses every call \
                 (to stop calls to a dependency, force its breaker open)",
            ));
        }
        Ok(())
    }

    pub(crate) fn limit(&self) -> usize {
        self.max_concurrent.unwrap_or(DEFAULT_MAX_CONCURRENT)
    }

    /// Applies this config to a running bulkhead, in place; whether any
    /// setting in force changed. Each setting is compared where it is set,
    /// so a new setting cannot be applied without being compared.
    pub(crate) fn apply(&self, bulkhead: &Bulkhead) -> bool {
        let mut changed = false;
        let (limit, max_wait, mode) = (
            self.limit(),
            self.max_wait.unwrap_or_default(),
            self.mode.unwrap_or_default(),
        );
        if bulkhead.limit() != limit {
            bulkhead.resize(limit);
            changed = true;
        }
        if bulkhead.max_wait() != max_wait {
            bulkhead.set_max_wait(max_wait);
            changed = true;
        }
        if bulkhead.mode() != mode {
            bulkhead.set_mode(mode);
            changed = true;
        }
        changed
    }
}

/// Retries of one dependency: attempts, exponential backoff with full jitter,
/// and a retry budget shared by every pipeline of that dependency.
///
/// ```toml
/// [dependencies.inventory.retry]
/// max_attempts = 3
/// initial_backoff = "50ms"
/// max_backoff = "1s"
/// budget_ratio = 0.2
/// ```
///
/// # Examples
///
/// ```
/// use fusebox::registry::RetryConfig;
/// let retry = RetryConfig { max_attempts: Some(3), ..Default::default() }.build()?;
/// assert_eq!(retry.max_attempts(), 3);
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct RetryConfig {
    /// Attempts in all, the first included (default 3).
    pub max_attempts: Option<u32>,
    /// The first backoff before jitter (default 100ms).
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str::option"))]
    pub initial_backoff: Option<Duration>,
    /// Growth of the backoff per attempt (default 2).
    pub backoff_factor: Option<f64>,
    /// The longest backoff (default 10s).
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str::option"))]
    pub max_backoff: Option<Duration>,
    /// Retries allowed per call, on average, through a [`RetryBudget`]
    /// (unset: no budget).
    pub budget_ratio: Option<f64>,
    /// Retries the budget always allows per second (default 10, with a ratio).
    pub budget_min_per_second: Option<u32>,
    /// Whether a call refused by a breaker or bulkhead is retried (default
    /// false).
    pub retry_rejections: Option<bool>,
}

impl RetryConfig {
    /// The [`Retry`] this config describes.
    ///
    /// # Errors
    ///
    /// The first bad key (`max_attempts` of 0, a factor below 1, a budget
    /// ratio outside its range, ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::RetryConfig;
    /// let err = RetryConfig { backoff_factor: Some(0.5), ..Default::default() }.build().unwrap_err();
    /// assert_eq!(err.key(), "backoff_factor");
    /// ```
    pub fn build(&self) -> Result<Retry, InvalidConfig> {
        self.build_on(None)
    }

    /// [`build`](Self::build), with the budget's deposits aged by `clock`
    /// (a registry's) rather than the monotonic clock.
    pub(super) fn build_on(
        &self,
        clock: Option<&super::SharedClock>,
    ) -> Result<Retry, InvalidConfig> {
        let err =
            |key: &str, e: crate::retry::RetryConfigError| InvalidConfig::new(key, e.to_string());
        let initial = self.initial_backoff.unwrap_or(Duration::from_millis(100));
        let max = self.max_backoff.unwrap_or(Duration::from_secs(10));
        if max < initial {
            return Err(InvalidConfig::new(
                "max_backoff",
                "must be at least initial_backoff",
            ));
        }
        let backoff = Exponential::new(initial, self.backoff_factor.unwrap_or(2.0), max)
            .map_err(|e| err("backoff_factor", e))?;
        let mut b = Retry::builder()
            .max_attempts(self.max_attempts.unwrap_or(3))
            .backoff(FullJitter::new(backoff))
            .retry_rejections(self.retry_rejections.unwrap_or(false));
        if let Some(ratio) = self.budget_ratio {
            let mut budget = RetryBudget::builder().ratio(ratio);
            if let Some(n) = self.budget_min_per_second {
                budget = budget.min_per_second(n);
            }
            if let Some(clock) = clock {
                budget = budget.clock(clock.clone());
            }
            b = b.budget(budget.build().map_err(|e| {
                let key = if e.field() == "ratio" {
                    "budget_ratio"
                } else {
                    "budget_min_per_second"
                };
                err(key, e)
            })?);
        }
        b.build().map_err(|e| err(e.field(), e))
    }
}

/// How a service treats one dependency: its breaker, bulkhead, rate limit,
/// timeout and retries in one table. The breaker, bulkhead and rate limiter
/// are registered under the dependency's name, and
/// [`Fusebox::pipeline`](super::Fusebox::pipeline) puts the breaker,
/// bulkhead, timeout and retry together.
///
/// ```toml
/// [dependencies.inventory]
/// timeout = "300ms"
/// tags = { service = "inventory" }
/// breaker = { failure_rate = 0.5, count_window = 20 }
/// bulkhead = { max_concurrent = 10 }
/// rate_limit = { per_second = 100, burst = 20 }   # feature `ratelimit`
/// limit = { algorithm = "vegas", min = 2, max = 200 }   # feature `limit`
/// throttle = { k = 2.0, window = "30s" }          # feature `throttle`
/// retry = { max_attempts = 3, budget_ratio = 0.2 }
/// ```
///
/// `rate_limit` (feature `ratelimit`) takes the keys of
/// `fusebox::ratelimit::RateLimitConfig` (`per_second` or `period`,
/// `burst`, `mode`), read and checked by that type itself; the limiter is
/// `Fusebox::rate_limiter`. `limit` (feature `limit`) takes the keys of
/// `fusebox::limit::LimitConfig` (`algorithm`, `min`, `max`, `initial`,
/// `window`, ...; `Fusebox::limit`), and `throttle` (feature `throttle`)
/// those of `fusebox::throttle::ThrottleConfig` (`k`, `window`, `buckets`,
/// `padding`, `max_rejection`, `mode`; `Fusebox::throttle`); unset keys take
/// those types' documented defaults.
/// A rate limit, an adaptive limit and a throttle have no registry-wide
/// defaults: only a dependency that sets one has one.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{DependencyConfig, Fusebox, FuseboxConfig};
/// use std::time::Duration;
/// let mut config = FuseboxConfig::default();
/// config.dependencies.insert("inventory".into(), DependencyConfig {
///     timeout: Some(Duration::from_millis(300)),
///     ..Default::default()
/// });
/// let fusebox = Fusebox::from_config(config)?;
/// assert_eq!(fusebox.names(), ["inventory"]);
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct DependencyConfig {
    /// The breaker's settings; unset keys inherit `[defaults.breaker]`.
    pub breaker: BreakerConfig,
    /// A bulkhead, if the dependency has one (unset keys inherit
    /// `[defaults.bulkhead]`).
    pub bulkhead: Option<BulkheadConfig>,
    /// A rate limit, if the dependency has one (feature `ratelimit`).
    #[cfg(feature = "ratelimit")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ratelimit")))]
    pub rate_limit: Option<crate::ratelimit::RateLimitConfig>,
    /// An adaptive concurrency limit, if the dependency has one (feature
    /// `limit`).
    #[cfg(feature = "limit")]
    #[cfg_attr(docsrs, doc(cfg(feature = "limit")))]
    pub limit: Option<crate::limit::LimitConfig>,
    /// Adaptive throttling, if the dependency has it (feature `throttle`).
    #[cfg(feature = "throttle")]
    #[cfg_attr(docsrs, doc(cfg(feature = "throttle")))]
    pub throttle: Option<crate::throttle::ThrottleConfig>,
    /// The deadline of one attempt (async pipelines).
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str::option"))]
    pub timeout: Option<Duration>,
    /// Retries, if any.
    pub retry: Option<RetryConfig>,
    /// Tags of the dependency's breaker, bulkhead and rate limiter.
    pub tags: Tags,
}

/// The configs a registry is built from.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{BreakerEntry, FuseboxConfig};
/// use fusebox::BreakerConfig;
/// use std::time::Duration;
///
/// let mut config = FuseboxConfig::default();
/// config.defaults.breaker.settings.open_for = Some(Duration::from_secs(10));
/// config.breakers.insert("search".into(), BreakerEntry::from(BreakerConfig {
///     consecutive_failures: Some(3),
///     ..Default::default()
/// }));
/// assert_eq!(config.breaker_config("search").settings.open_for, Some(Duration::from_secs(10)));
/// assert_eq!(config.breaker_config("other").settings.consecutive_failures, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct FuseboxConfig {
    /// What names without their own table get, and what named tables inherit.
    pub defaults: Defaults,
    /// Named breakers (`[breakers.NAME]`).
    pub breakers: BTreeMap<String, BreakerEntry>,
    /// Named bulkheads (`[bulkheads.NAME]`).
    pub bulkheads: BTreeMap<String, BulkheadConfig>,
    /// Dependencies (`[dependencies.NAME]`): breaker, bulkhead, timeout and
    /// retry of one dependency in one table.
    pub dependencies: BTreeMap<String, DependencyConfig>,
}

/// The `[defaults]` table.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Defaults;
/// assert!(Defaults::default().breaker.settings.open_for.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct Defaults {
    /// `[defaults.breaker]`.
    pub breaker: BreakerEntry,
    /// `[defaults.bulkhead]`.
    pub bulkhead: BulkheadConfig,
}

impl FuseboxConfig {
    /// The effective table of breaker `name`: its own (or its dependency's)
    /// laid over the defaults field by field, or the defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    /// let config = FuseboxConfig::default();
    /// assert_eq!(config.breaker_config("any"), config.defaults.breaker);
    /// ```
    pub fn breaker_config(&self, name: &str) -> BreakerEntry {
        match self.own_breaker(name) {
            Some(own) => own.merged_over(&self.defaults.breaker),
            None => self.defaults.breaker.clone(),
        }
    }

    /// The breaker table `name` sets itself, if any.
    fn own_breaker(&self, name: &str) -> Option<BreakerEntry> {
        if let Some(dep) = self.dependencies.get(name) {
            return Some(BreakerEntry {
                settings: dep.breaker.clone(),
                tags: dep.tags.clone(),
            });
        }
        self.breakers.get(name).cloned()
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
        let own = match self.dependencies.get(name) {
            Some(dep) => dep.bulkhead.clone().map(|mut b| {
                b.tags = overlay(&dep.tags, &b.tags);
                b
            }),
            None => self.bulkheads.get(name).cloned(),
        };
        match own {
            Some(own) => own.merged_over(&self.defaults.bulkhead),
            None => self.defaults.bulkhead.clone(),
        }
    }

    /// The rate limit of dependency `name` and its tags, if it sets one
    /// (feature `ratelimit`). There are no defaults to inherit: a rate is
    /// the dependency's own.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::RateLimitConfig;
    /// use fusebox::registry::{DependencyConfig, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// config.dependencies.insert("partner".into(), DependencyConfig {
    ///     rate_limit: Some(RateLimitConfig::per_second(100).burst(20)),
    ///     ..Default::default()
    /// });
    /// assert_eq!(config.rate_limit_config("partner").unwrap().0.burst, Some(20));
    /// assert!(config.rate_limit_config("other").is_none());
    /// ```
    #[cfg(feature = "ratelimit")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ratelimit")))]
    pub fn rate_limit_config(
        &self,
        name: &str,
    ) -> Option<(crate::ratelimit::RateLimitConfig, Tags)> {
        let dep = self.dependencies.get(name)?;
        Some((dep.rate_limit?, dep.tags.clone()))
    }

    /// The adaptive limit of dependency `name` and its tags, if it sets one
    /// (feature `limit`); unset keys are [`LimitConfig`]'s defaults.
    ///
    /// [`LimitConfig`]: crate::limit::LimitConfig
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{Algorithm, LimitConfig};
    /// use fusebox::registry::{DependencyConfig, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// config.dependencies.insert("search".into(), DependencyConfig {
    ///     limit: Some(LimitConfig::new(Algorithm::Gradient2).max(50)),
    ///     ..Default::default()
    /// });
    /// assert_eq!(config.limit_config("search").unwrap().0.max, 50);
    /// assert!(config.limit_config("other").is_none());
    /// ```
    #[cfg(feature = "limit")]
    #[cfg_attr(docsrs, doc(cfg(feature = "limit")))]
    pub fn limit_config(&self, name: &str) -> Option<(crate::limit::LimitConfig, Tags)> {
        let dep = self.dependencies.get(name)?;
        Some((dep.limit?, dep.tags.clone()))
    }

    /// The throttle of dependency `name` and its tags, if it sets one
    /// (feature `throttle`); unset keys are [`ThrottleConfig`]'s defaults.
    ///
    /// [`ThrottleConfig`]: crate::throttle::ThrottleConfig
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{DependencyConfig, FuseboxConfig};
    /// use fusebox::throttle::ThrottleConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.dependencies.insert("partner".into(), DependencyConfig {
    ///     throttle: Some(ThrottleConfig::default().k(1.5)),
    ///     ..Default::default()
    /// });
    /// assert_eq!(config.throttle_config("partner").unwrap().0.k_value(), 1.5);
    /// assert!(config.throttle_config("other").is_none());
    /// ```
    #[cfg(feature = "throttle")]
    #[cfg_attr(docsrs, doc(cfg(feature = "throttle")))]
    pub fn throttle_config(&self, name: &str) -> Option<(crate::throttle::ThrottleConfig, Tags)> {
        let dep = self.dependencies.get(name)?;
        Some((dep.throttle?, dep.tags.clone()))
    }

    /// Names of the dependencies `has` says have a policy of a kind.
    #[cfg(any(feature = "ratelimit", feature = "limit", feature = "throttle"))]
    pub(crate) fn dependency_names(
        &self,
        has: impl Fn(&DependencyConfig) -> bool,
    ) -> impl Iterator<Item = &String> {
        self.dependencies
            .iter()
            .filter(move |(_, d)| has(d))
            .map(|(name, _)| name)
    }

    /// Names with a breaker table of their own (breakers and dependencies).
    pub(crate) fn breaker_names(&self) -> impl Iterator<Item = &String> {
        self.breakers.keys().chain(self.dependencies.keys())
    }

    /// Names with a bulkhead table of their own.
    pub(crate) fn bulkhead_names(&self) -> impl Iterator<Item = &String> {
        self.bulkheads.keys().chain(
            self.dependencies
                .iter()
                .filter(|(_, d)| d.bulkhead.is_some())
                .map(|(name, _)| name),
        )
    }

    /// Checks the defaults and every named table.
    ///
    /// # Errors
    ///
    /// The first bad key, as a full path (`breakers.payments.failure_rate`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerEntry, FuseboxConfig};
    /// use fusebox::BreakerConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.breakers.insert("db".into(), BreakerEntry::from(BreakerConfig {
    ///     slow_call_rate: Some(0.5),
    ///     ..Default::default()
    /// }));
    /// let err = config.validate().unwrap_err();
    /// assert_eq!(err.key(), "breakers.db.slow_call_duration");
    /// ```
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let names = [
            ("breakers", self.breakers.keys().collect::<Vec<_>>()),
            ("bulkheads", self.bulkheads.keys().collect()),
            ("dependencies", self.dependencies.keys().collect()),
        ];
        for (table, keys) in names {
            for name in keys {
                check_name(table, name)?;
            }
        }
        self.defaults
            .breaker
            .settings
            .validate()
            .map_err(|e| InvalidConfig::from(e).under("defaults.breaker"))?;
        self.defaults
            .bulkhead
            .validate()
            .map_err(|e| e.under("defaults.bulkhead"))?;
        for (name, bulkhead) in &self.bulkheads {
            bulkhead
                .validate()
                .map_err(|e| e.under(&format!("bulkheads.{name}")))?;
        }
        for name in self.breakers.keys() {
            if self.dependencies.contains_key(name) {
                return Err(InvalidConfig::new(
                    format!("breakers.{name}"),
                    format!("`{name}` is also a dependency: configure its breaker in [dependencies.{name}.breaker]"),
                ));
            }
            self.breaker_config(name)
                .settings
                .validate()
                .map_err(|e| InvalidConfig::from(e).under(&format!("breakers.{name}")))?;
        }
        for (name, dep) in &self.dependencies {
            let prefix = format!("dependencies.{name}");
            if self.bulkheads.contains_key(name) && dep.bulkhead.is_some() {
                return Err(InvalidConfig::new(
                    format!("bulkheads.{name}"),
                    format!("`{name}` is also a dependency with a bulkhead: configure it in [dependencies.{name}.bulkhead]"),
                ));
            }
            self.breaker_config(name)
                .settings
                .validate()
                .map_err(|e| InvalidConfig::from(e).under(&format!("{prefix}.breaker")))?;
            if let Some(bulkhead) = &dep.bulkhead {
                bulkhead
                    .validate()
                    .map_err(|e| e.under(&format!("{prefix}.bulkhead")))?;
            }
            #[cfg(feature = "ratelimit")]
            if let Some(rate_limit) = &dep.rate_limit {
                // The limiter's own and only validation.
                rate_limit
                    .validate()
                    .map_err(|e| InvalidConfig::from(e).under(&format!("{prefix}.rate_limit")))?;
            }
            #[cfg(feature = "limit")]
            if let Some(limit) = &dep.limit {
                limit
                    .validate()
                    .map_err(|e| InvalidConfig::from(e).under(&format!("{prefix}.limit")))?;
            }
            #[cfg(feature = "throttle")]
            if let Some(throttle) = &dep.throttle {
                throttle
                    .validate()
                    .map_err(|e| InvalidConfig::from(e).under(&format!("{prefix}.throttle")))?;
            }
            if let Some(retry) = &dep.retry {
                retry
                    .build()
                    .map_err(|e| e.under(&format!("{prefix}.retry")))?;
            }
            if dep.timeout == Some(Duration::ZERO) {
                return Err(InvalidConfig::new(
                    format!("{prefix}.timeout"),
                    "must be above zero",
                ));
            }
        }
        Ok(())
    }
}

/// The longest policy name accepted.
pub const MAX_NAME_LEN: usize = 128;

/// A policy name is what metrics, traces and the dashboard show: 1 to
/// [`MAX_NAME_LEN`] characters, none of them a control character.
fn check_name(table: &str, name: &str) -> Result<(), InvalidConfig> {
    let len = name.chars().count();
    if len == 0 || len > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(InvalidConfig::new(
            format!("{table}.{}", name.escape_debug()),
            format!(
                "a name must be 1 to {MAX_NAME_LEN} characters, none of them a control character"
            ),
        ));
    }
    Ok(())
}

//! Named breakers, bulkheads and pipelines, built from configuration, seen
//! and controlled by name, changed in place.
//!
//! A service runs one breaker (and one bulkhead) per dependency. [`Fusebox`]
//! keeps them by name. Every breaker and bulkhead a config names is built
//! when the registry is, so listings, metrics and controls see them before
//! the first call; any other name is built on first use from the defaults.
//! `fusebox.breaker("payments")` always returns a handle to the same
//! breaker, and a change of settings ([`Fusebox::reconfigure`],
//! [`Fusebox::reload`]) is applied to that breaker in place, so pipelines
//! and tower layers built from it follow. The registry can
//!
//! - load its configuration from TOML or YAML (feature `config`), with errors
//!   that name the bad key and its line (`FuseboxConfig::from_toml`,
//!   `FuseboxConfig::from_yaml`), and refuse a config whose breakers would
//!   take more memory than its budget before building any
//!   ([`FuseboxBuilder::config_budget`]);
//! - list every breaker with its state, rates, counts and time in state
//!   ([`Fusebox::snapshot`]), every bulkhead with its slots in use
//!   ([`Fusebox::bulkhead_snapshot`]), and every policy but the breakers
//!   with its kind, mode and figures ([`Fusebox::policies`]);
//! - force open, disable or reset a breaker by name;
//! - tag breakers (`service = "payments"`), which the metrics and alerts use;
//! - describe a whole dependency (breaker, bulkhead, rate limit, adaptive
//!   limit, throttle, timeout, retry) in one table and hand out a ready
//!   [`Pipeline`] for it ([`Fusebox::pipeline`]) and its policies
//!   (`Fusebox::rate_limiter`, `Fusebox::limit`, `Fusebox::throttle`:
//!   features `ratelimit`, `limit`, `throttle`).
//!
//! # The file
//!
//! ```toml
//! [defaults.breaker]          # what every breaker inherits
//! open_for = "30s"
//! [defaults.bulkhead]         # what every bulkhead inherits
//! max_concurrent = 25
//!
//! [breakers.search]           # a breaker by name: BreakerConfig's keys, and tags
//! failure_rate = 0.5
//! tags = { service = "search" }
//!
//! [bulkheads.reviews]         # a bulkhead by name
//! max_concurrent = 8
//! max_wait = "50ms"
//! mode = "shadow"             # enforce (default) | shadow | off
//!
//! [dependencies.partner]      # one dependency: its policies under its name
//! timeout = "300ms"
//! tags = { service = "partner" }
//! breaker = { consecutive_failures = 5 }
//! bulkhead = { max_concurrent = 10 }
//! rate_limit = { per_second = 100, burst = 20, mode = "shadow" }  # feature `ratelimit`
//! limit = { algorithm = "vegas", min = 2, max = 200 }            # feature `limit`
//! throttle = { k = 2.0, window = "30s" }                          # feature `throttle`
//! retry = { max_attempts = 3, budget_ratio = 0.2 }
//! ```
//!
//! `rate_limit` takes the keys of `fusebox::ratelimit::RateLimitConfig`
//! (`per_second` or `period`, `burst`, `mode`) and has no defaults; `limit`
//! those of `fusebox::limit::LimitConfig` and `throttle` those of
//! `fusebox::throttle::ThrottleConfig`, each key unset taking that type's
//! documented default. Errors name the key under the dependency
//! (`dependencies.partner.rate_limit.burst`, `dependencies.partner.limit.max`).
//!
//! Observers ([`Observer`]) see every breaker the registry builds, which is how
//! metrics (`fusebox::metrics`, feature `prometheus`), tracing
//! (`fusebox::trace`, feature `tracing`) and alerts ([`crate::alert`])
//! attach to all of them at once; every other policy (bulkheads, rate
//! limiters, adaptive limits, throttles) reaches them through [`Observer::policy_added`], which is how
//! the metrics export it without code of their own for it.
//!
//! # Examples
//!
//! ```
//! use fusebox::registry::{BreakerEntry, Fusebox, FuseboxConfig};
//! use fusebox::{BreakerConfig, State};
//!
//! let mut config = FuseboxConfig::default();
//! config.breakers.insert(
//!     "payments".into(),
//!     BreakerEntry::from(BreakerConfig { consecutive_failures: Some(2), ..Default::default() }),
//! );
//! let fusebox = Fusebox::from_config(config)?;
//! assert_eq!(fusebox.names(), ["payments"]); // built with the registry
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

mod budget;
mod config;
mod error;
mod held;
#[cfg(feature = "config")]
mod parse;

pub use crate::observe::{Observer, Tags};
pub use crate::BreakerConfig;
pub use budget::DEFAULT_CONFIG_BUDGET;
pub use config::{
    BreakerEntry, BulkheadConfig, Defaults, DependencyConfig, FuseboxConfig, RetryConfig,
    DEFAULT_MAX_CONCURRENT, MAX_NAME_LEN,
};
pub use error::{InvalidConfig, UnknownBreaker};
#[cfg(feature = "config")]
pub use parse::{MAX_DEPTH, MAX_SOURCE_BYTES};

use crate::policy::{Figure, Mode};
use crate::retry::Retry;
use crate::sync::{read, write};
use crate::{Bulkhead, BulkheadSnapshot, CircuitBreaker, Clock, Pipeline, Snapshot};
use held::{Ctx, Kind, Table};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc; // std even under loom: not modelled, and loom's Arc cannot hold `dyn`
use std::sync::RwLock;
use std::time::Duration;

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

/// Any policy of the registry but a breaker (a bulkhead, a rate limiter),
/// as [`Fusebox::policies`] lists them: its name, tags, and what it says of
/// itself through [`Inspect`](crate::policy::Inspect) (kind, mode, figures).
///
/// # Examples
///
/// ```
/// use fusebox::registry::Fusebox;
/// let fusebox = Fusebox::new();
/// let _slot = fusebox.bulkhead("db").try_acquire()?;
/// let all = fusebox.policies();
/// assert_eq!((all[0].kind, all[0].name.as_str()), ("bulkhead", "db"));
/// let in_use = all[0].figures.iter().find(|f| f.name == "in_use").unwrap();
/// assert_eq!(in_use.value, 1);
/// # Ok::<(), fusebox::BulkheadFull>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PolicyStatus {
    /// The registry name.
    pub name: String,
    /// Its tags.
    pub tags: Tags,
    /// The kind of policy, lower snake case (`"bulkhead"`, `"rate_limiter"`).
    pub kind: &'static str,
    /// The mode in force.
    pub mode: Mode,
    /// Its figures now, in the policy's own order.
    pub figures: Vec<Figure>,
}

/// What [`Fusebox::reconfigure`] did.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{Fusebox, Reconfigured};
/// let fusebox = Fusebox::new();
/// fusebox.breaker("db");
/// let same = fusebox.config("db").settings;
/// assert_eq!(fusebox.reconfigure("db", same)?, Reconfigured::Unchanged);
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconfigured {
    /// The settings in force did not change.
    Unchanged,
    /// The new settings are in force (or, for a name not used yet, will be
    /// when it is built).
    Applied,
}

/// What [`Fusebox::reload`] did, name by name (each list sorted).
///
/// # Examples
///
/// ```
/// use fusebox::registry::{Fusebox, FuseboxConfig};
/// let fusebox = Fusebox::new();
/// let report = fusebox.reload(FuseboxConfig::default())?;
/// assert!(report.added.is_empty() && report.removed.is_empty());
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Breakers, bulkheads and rate limiters built because the new config
    /// names them.
    pub added: Vec<String>,
    /// Running breakers, bulkheads and rate limiters whose settings or tags
    /// changed in place.
    pub changed: Vec<String>,
    /// Names the old config had and the new one does not. They keep running
    /// on the settings they had (holders may still use them), and appear
    /// in listings as before.
    pub removed: Vec<String>,
}

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
    /// `None`: [`DEFAULT_CONFIG_BUDGET`].
    budget: Option<usize>,
}

impl fmt::Debug for FuseboxBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FuseboxBuilder")
            .field("config", &self.config)
            .field("clock", &self.clock)
            .field("observers", &self.observers.len())
            .field("budget", &self.budget)
            .finish()
    }
}

impl FuseboxBuilder {
    /// The configs to build from (default: all defaults).
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

    /// The most memory the breakers of a config may take, in bytes
    /// (default [`DEFAULT_CONFIG_BUDGET`], 64 MiB; `usize::MAX` for no
    /// limit): the config given here, and every config
    /// [`reload`](Fusebox::reload) or [`reconfigure`](Fusebox::reconfigure)
    /// would put in force later.
    ///
    /// A breaker's memory grows with its window, not with the size of the
    /// file that asks for it: a time window of 100,000 buckets takes about
    /// 5.6 MB, so a file of a few kilobytes can ask for gigabytes. Each
    /// breaker the config names is costed from its settings
    /// ([`FuseboxConfig::memory_estimate`]) before any is built; a config
    /// over the budget is refused with an error naming its most
    /// expensive breaker table, its cost, the whole config's and the
    /// budget, and nothing is built (a reload refused keeps the config in
    /// force).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerEntry, Fusebox, FuseboxConfig};
    /// use fusebox::BreakerConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.breakers.insert("payments".into(), BreakerEntry::from(BreakerConfig {
    ///     failure_rate: Some(0.5),
    ///     count_window: Some(2_000_000), // a byte per call: about 2 MB
    ///     ..Default::default()
    /// }));
    /// let err = Fusebox::builder().config(config.clone()).config_budget(1 << 20).build().unwrap_err();
    /// assert_eq!(err.key(), "breakers.payments");
    /// assert!(err.message().contains("over the config budget of 1 MiB"));
    /// let fusebox = Fusebox::builder().config(config).config_budget(4 << 20).build()?;
    /// assert_eq!(fusebox.names(), ["payments"]);
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn config_budget(mut self, bytes: usize) -> Self {
        self.budget = Some(bytes);
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

    /// Shares every breaker the registry builds with `fleet` (feature
    /// `fleet`), under its registry name, for as long as the fleet lives;
    /// see [`crate::fleet`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fusebox::fleet::Fleet;
    /// use fusebox::registry::Fusebox;
    /// let fleet = Fleet::builder().redis_url("redis://127.0.0.1:1").namespace("shop").connect().await?;
    /// let fusebox = Fusebox::builder().fleet(fleet.clone()).build()?;
    /// fusebox.breaker("payments");
    /// assert_eq!(fleet.status().shared, 1);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "fleet")]
    pub fn fleet(self, fleet: crate::fleet::Fleet) -> Self {
        self.observer(fleet.share_all())
    }

    /// Validates the config, checks its cost against the
    /// [budget](FuseboxBuilder::config_budget), makes the registry and
    /// builds every breaker and bulkhead the config names.
    ///
    /// # Errors
    ///
    /// The first bad key of the config (see [`FuseboxConfig::validate`]),
    /// or the breaker table that takes most of a config over the budget.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{Fusebox, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// config.defaults.breaker.settings.successes_to_close = Some(0);
    /// let err = Fusebox::builder().config(config).build().unwrap_err();
    /// assert_eq!(err.key(), "defaults.breaker.successes_to_close");
    /// ```
    pub fn build(self) -> Result<Fusebox, InvalidConfig> {
        let budget = self.budget.unwrap_or(DEFAULT_CONFIG_BUDGET);
        self.config.validate()?;
        self.config.check_budget(budget)?;
        let fusebox = Fusebox {
            inner: Arc::new(Inner {
                config: RwLock::new(self.config),
                budget,
                clock: self.clock,
                observers: self.observers,
                breakers: RwLock::new(BTreeMap::new()),
                bulkheads: Table::default(),
                #[cfg(feature = "ratelimit")]
                rate_limiters: Table::default(),
                #[cfg(feature = "limit")]
                limits: Table::default(),
                #[cfg(feature = "throttle")]
                throttles: Table::default(),
                retries: RwLock::new(BTreeMap::new()),
            }),
        };
        fusebox.build_configured();
        Ok(fusebox)
    }
}

/// The registry: named breakers and bulkheads, live.
///
/// Cheap to clone (clones share the breakers). See the [module
/// docs](self) for an overview.
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

/// A breaker's tags as the registry keeps them: `None` for none (most
/// breakers), a pointer instead of an empty map in every entry.
type BoxedTags = Option<Box<Tags>>;

fn boxed(tags: &Tags) -> BoxedTags {
    (!tags.is_empty()).then(|| Box::new(tags.clone()))
}

fn unboxed(tags: &BoxedTags) -> Tags {
    tags.as_deref().cloned().unwrap_or_default()
}

struct Inner {
    config: RwLock<FuseboxConfig>,
    /// Bytes the breakers of a config may take ([`FuseboxBuilder::config_budget`]).
    budget: usize,
    clock: Option<SharedClock>,
    observers: Vec<Arc<dyn Observer>>,
    breakers: RwLock<BTreeMap<Box<str>, (CircuitBreaker, BoxedTags)>>,
    bulkheads: Table<Bulkhead>,
    #[cfg(feature = "ratelimit")]
    rate_limiters: Table<crate::ratelimit::RateLimiter>,
    #[cfg(feature = "limit")]
    limits: Table<crate::limit::AdaptiveLimit>,
    #[cfg(feature = "throttle")]
    throttles: Table<crate::throttle::Throttle>,
    /// One retry (and so one retry budget) per dependency, shared by its
    /// pipelines; rebuilt when a reload changes it.
    retries: RwLock<BTreeMap<String, (RetryConfig, Retry)>>,
}

impl Inner {
    /// Every table of policies but the breakers: one line per kind.
    fn tables(&self) -> Vec<&dyn Kind> {
        vec![
            &self.bulkheads,
            #[cfg(feature = "ratelimit")]
            &self.rate_limiters,
            #[cfg(feature = "limit")]
            &self.limits,
            #[cfg(feature = "throttle")]
            &self.throttles,
        ]
    }

    /// What the tables build with.
    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            clock: self.clock.as_ref(),
            observers: &self.observers,
        }
    }

    /// Builds the breaker `name` from `entry` (validated when accepted),
    /// running the observers' `instrument`. Should the settings have become
    /// invalid, the core defaults stand in (instrumented all the same).
    fn build_breaker(&self, name: &str, entry: &BreakerEntry) -> CircuitBreaker {
        let make = |settings: &BreakerConfig| {
            let mut b = settings.builder().name(name);
            if let Some(clock) = &self.clock {
                b = b.clock(clock.clone());
            }
            for o in &self.observers {
                b = o.instrument(name, &entry.tags, b);
            }
            b.build()
        };
        make(&entry.settings)
            .or_else(|_| make(&BreakerConfig::default()))
            .unwrap_or_else(|_| unreachable!("the default breaker config is valid"))
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
        match Fusebox::builder().build() {
            Ok(f) => f,
            Err(_) => unreachable!("the default registry config is valid"),
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

    /// A registry with `config` and nothing else set; every breaker and
    /// bulkhead it names is built now.
    ///
    /// # Errors
    ///
    /// The first bad key (see [`FuseboxConfig::validate`]), or a config
    /// over the [default budget](DEFAULT_CONFIG_BUDGET) (see
    /// [`FuseboxBuilder::config_budget`]).
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

    /// Builds every breaker, bulkhead and rate limiter the config names
    /// that is not built yet.
    fn build_configured(&self) -> Vec<String> {
        let config = read(&self.inner.config).clone();
        let mut added = Vec::new();
        for name in config.breaker_names() {
            if self.get(name).is_none() {
                self.breaker(name);
                added.push(name.clone());
            }
        }
        let ctx = self.inner.ctx();
        for table in self.inner.tables() {
            added.extend(table.build_configured(&ctx, &config));
        }
        added
    }

    /// The breaker `name`: the one built from the config, or, for a name the
    /// config does not have, one built now from the defaults. Every call
    /// returns a handle to the same breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// let db = fusebox.breaker("db");
    /// assert_eq!(db.name(), Some("db"));
    /// assert!(db.same_as(&fusebox.breaker("db")));
    /// ```
    pub fn breaker(&self, name: &str) -> CircuitBreaker {
        if let Some(b) = self.get(name) {
            return b;
        }
        let entry = read(&self.inner.config).breaker_config(name);
        let built = self.inner.build_breaker(name, &entry);
        {
            let mut map = write(&self.inner.breakers);
            if let Some((b, _)) = map.get(name) {
                return b.clone(); // another thread built it first: theirs
            }
            map.insert(name.into(), (built.clone(), boxed(&entry.tags)));
        }
        for o in &self.inner.observers {
            o.breaker_added(name, &entry.tags, &built);
        }
        built
    }

    /// The breaker `name` if it exists (configured or used) already.
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
        read(&self.inner.breakers).get(name).map(|(b, _)| b.clone())
    }

    /// Names of the breakers, sorted.
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
        read(&self.inner.breakers)
            .keys()
            .map(|n| n.to_string())
            .collect()
    }

    /// Every breaker with its tags and [`Snapshot`], sorted by name.
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
        let all: Vec<_> = read(&self.inner.breakers)
            .iter()
            .map(|(n, (b, t))| (n.to_string(), b.clone(), unboxed(t)))
            .collect();
        all.into_iter()
            .map(|(name, breaker, tags)| BreakerStatus {
                name,
                tags,
                snapshot: breaker.snapshot(),
            })
            .collect()
    }

    fn existing(&self, name: &str) -> Result<CircuitBreaker, UnknownBreaker> {
        self.get(name).ok_or_else(|| UnknownBreaker {
            name: name.to_owned(),
        })
    }

    /// Forces the breaker `name` open: every call is rejected until
    /// [`Fusebox::reset`], through every handle of it.
    ///
    /// # Errors
    ///
    /// [`UnknownBreaker`] if the registry has no breaker of that name (a
    /// typo in an operator's command should not create a breaker).
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
        self.existing(name)?.force_open();
        Ok(())
    }

    /// Disables the breaker `name`: every call goes through, nothing is
    /// counted, until [`Fusebox::reset`].
    ///
    /// # Errors
    ///
    /// [`UnknownBreaker`] if the registry has no breaker of that name.
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
        self.existing(name)?.disable();
        Ok(())
    }

    /// Resets the breaker `name` to closed with empty counters.
    ///
    /// # Errors
    ///
    /// [`UnknownBreaker`] if the registry has no breaker of that name.
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
        self.existing(name)?.reset();
        Ok(())
    }

    /// The bulkhead `name`: the one built from the config, or one built now
    /// from the defaults. Resized in place by [`Fusebox::reload`].
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
        let table = &self.inner.bulkheads;
        if let Some(b) = table.get(name) {
            return b;
        }
        let config = read(&self.inner.config).bulkhead_config(name);
        let tags = config.tags.clone();
        table
            .get_or_build(&self.inner.ctx(), name, Some((config.clone(), tags)))
            // A bulkhead always builds; the fallback is never taken.
            .unwrap_or_else(|| config.build(name))
    }

    /// Every bulkhead with its tags and [`BulkheadSnapshot`], sorted by name.
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
        self.inner
            .bulkheads
            .list()
            .into_iter()
            .map(|(name, tags, b)| BulkheadStatus {
                name,
                tags,
                snapshot: b.snapshot(),
            })
            .collect()
    }

    /// The rate limiter of dependency `name` (feature `ratelimit`): the one
    /// built from its `rate_limit` table, or `None` if the dependency sets
    /// no rate limit. Every call returns a handle to the same limiter, which
    /// [`Fusebox::reload`] reconfigures in place. A limiter is built when
    /// the registry (or the reload that first names it) is, so observers
    /// and [`Fusebox::policies`] see it before the first call.
    ///
    /// The limiter reads the registry's clock
    /// ([`FuseboxBuilder::clock`]), like its breakers.
    ///
    /// ```toml
    /// [dependencies.partner]
    /// rate_limit = { per_second = 100, burst = 20 }
    /// ```
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::RateLimitConfig;
    /// use fusebox::registry::{DependencyConfig, Fusebox, FuseboxConfig};
    /// use fusebox::ManualClock;
    ///
    /// let mut config = FuseboxConfig::default();
    /// config.dependencies.insert("partner".into(), DependencyConfig {
    ///     rate_limit: Some(RateLimitConfig::per_second(10).burst(1)),
    ///     ..Default::default()
    /// });
    /// let fusebox = Fusebox::builder().config(config).clock(ManualClock::new()).build()?;
    /// let partner = fusebox.rate_limiter("partner").expect("configured");
    /// assert!(partner.try_acquire().is_ok());
    /// assert!(fusebox.rate_limiter("partner").unwrap().try_acquire().is_err()); // the same limiter
    /// assert!(fusebox.rate_limiter("search").is_none()); // no rate limit
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    #[cfg(feature = "ratelimit")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ratelimit")))]
    pub fn rate_limiter(&self, name: &str) -> Option<crate::ratelimit::RateLimiter> {
        self.held(&self.inner.rate_limiters, name)
    }

    /// The policy `name` of `table`: the one built, or one built now from
    /// the config in force (none if it gives `name` none).
    #[cfg(any(feature = "ratelimit", feature = "limit", feature = "throttle"))]
    fn held<P: held::Held>(&self, table: &Table<P>, name: &str) -> Option<P> {
        if let Some(p) = table.get(name) {
            return Some(p);
        }
        let config = P::config_of(&read(&self.inner.config), name);
        table.get_or_build(&self.inner.ctx(), name, config)
    }

    /// The adaptive concurrency limit of dependency `name` (feature
    /// `limit`): the one built from its `limit` table, or `None` if the
    /// dependency sets none. Every call returns a handle to the same limit,
    /// which [`Fusebox::reload`] reconfigures in place
    /// ([`AdaptiveLimit::reconfigure`](crate::limit::AdaptiveLimit::reconfigure));
    /// it reads the registry's clock.
    ///
    /// ```toml
    /// [dependencies.search]
    /// limit = { algorithm = "vegas", min = 2, max = 200, initial = 20 }
    /// ```
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::LimitConfig;
    /// use fusebox::registry::{DependencyConfig, Fusebox, FuseboxConfig};
    ///
    /// let mut config = FuseboxConfig::default();
    /// config.dependencies.insert("search".into(), DependencyConfig {
    ///     limit: Some(LimitConfig::default().initial(1)),
    ///     ..Default::default()
    /// });
    /// let fusebox = Fusebox::from_config(config)?;
    /// let search = fusebox.limit("search").expect("configured");
    /// let _slot = search.try_acquire().unwrap();
    /// assert!(fusebox.limit("search").unwrap().try_acquire().is_err()); // the same limit
    /// assert!(fusebox.limit("other").is_none());
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    #[cfg(feature = "limit")]
    #[cfg_attr(docsrs, doc(cfg(feature = "limit")))]
    pub fn limit(&self, name: &str) -> Option<crate::limit::AdaptiveLimit> {
        self.held(&self.inner.limits, name)
    }

    /// The adaptive throttle of dependency `name` (feature `throttle`): the
    /// one built from its `throttle` table, or `None` if the dependency
    /// sets none. Every call returns a handle to the same throttle, which
    /// [`Fusebox::reload`] reconfigures in place
    /// ([`Throttle::reconfigure`](crate::throttle::Throttle::reconfigure));
    /// it reads the registry's clock.
    ///
    /// ```toml
    /// [dependencies.partner]
    /// throttle = { k = 2.0, window = "30s" }
    /// ```
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{DependencyConfig, Fusebox, FuseboxConfig};
    /// use fusebox::throttle::ThrottleConfig;
    ///
    /// let mut config = FuseboxConfig::default();
    /// config.dependencies.insert("partner".into(), DependencyConfig {
    ///     throttle: Some(ThrottleConfig::default()),
    ///     ..Default::default()
    /// });
    /// let fusebox = Fusebox::from_config(config)?;
    /// fusebox.throttle("partner").expect("configured").try_acquire().unwrap().overload();
    /// assert_eq!(fusebox.throttle("partner").unwrap().snapshot().requests, 1); // the same throttle
    /// assert!(fusebox.throttle("other").is_none());
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    #[cfg(feature = "throttle")]
    #[cfg_attr(docsrs, doc(cfg(feature = "throttle")))]
    pub fn throttle(&self, name: &str) -> Option<crate::throttle::Throttle> {
        self.held(&self.inner.throttles, name)
    }

    /// Every policy of the registry but its breakers (bulkheads, rate
    /// limiters, adaptive limits, throttles), each with its kind, mode and figures, sorted by kind,
    /// then name: what a dashboard or a report can show of any policy
    /// without knowing its type.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::Fusebox;
    /// let fusebox = Fusebox::new();
    /// fusebox.bulkhead("b");
    /// fusebox.bulkhead("a");
    /// let all: Vec<_> = fusebox.policies().into_iter().map(|p| (p.kind, p.name)).collect();
    /// assert_eq!(all, [("bulkhead", "a".to_string()), ("bulkhead", "b".to_string())]);
    /// ```
    pub fn policies(&self) -> Vec<PolicyStatus> {
        let mut all: Vec<PolicyStatus> = self
            .inner
            .tables()
            .into_iter()
            .flat_map(|t| t.statuses())
            .collect();
        all.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        all
    }

    /// A ready [`Pipeline`] for the dependency `name`: its breaker and (if
    /// configured) bulkhead, rate limiter (feature `ratelimit`), adaptive
    /// limit (feature `limit`) and throttle (feature `throttle`) from this
    /// registry, and the timeout and retry of its `[dependencies.NAME]`
    /// table, in the pipeline's documented order. For a name without such a
    /// table, a pipeline with just its breaker (and its bulkhead, if one is
    /// configured under `[bulkheads]`).
    ///
    /// The breaker, bulkhead, rate limiter, limit and throttle follow later
    /// reconfigurations in place; the
    /// timeout and retry are those in force when the pipeline is made (ask
    /// again after a [`reload`](Fusebox::reload)). Every pipeline of one
    /// dependency shares one retry budget.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{DependencyConfig, Fusebox, FuseboxConfig, RetryConfig};
    /// let mut config = FuseboxConfig::default();
    /// config.dependencies.insert("inventory".into(), DependencyConfig {
    ///     retry: Some(RetryConfig {
    ///         max_attempts: Some(2),
    ///         initial_backoff: Some(std::time::Duration::from_millis(1)),
    ///         ..Default::default()
    ///     }),
    ///     ..Default::default()
    /// });
    /// let fusebox = Fusebox::from_config(config)?;
    /// let inventory = fusebox.pipeline("inventory");
    /// let mut calls = 0;
    /// let _ = inventory.call(|| { calls += 1; Err::<(), _>(std::io::Error::other("503")) });
    /// assert_eq!(calls, 2);
    /// fusebox.force_open("inventory")?;
    /// assert!(inventory.call(|| Ok::<_, std::io::Error>(1)).is_err()); // follows the registry
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pipeline(&self, name: &str) -> Pipeline {
        let (dependency, bulkhead_configured) = {
            let config = read(&self.inner.config);
            let bulkhead = config.bulkhead_names().any(|n| n == name);
            (config.dependencies.get(name).cloned(), bulkhead)
        };
        let mut p = Pipeline::builder().breaker(self.breaker(name));
        if bulkhead_configured {
            p = p.bulkhead(self.bulkhead(name));
        }
        #[cfg(feature = "ratelimit")]
        if let Some(limiter) = self.rate_limiter(name) {
            p = p.rate_limiter(limiter);
        }
        #[cfg(feature = "limit")]
        if let Some(limit) = self.limit(name) {
            p = p.limit(limit);
        }
        #[cfg(feature = "throttle")]
        if let Some(throttle) = self.throttle(name) {
            p = p.throttle(throttle);
        }
        if let Some(dep) = dependency {
            if let Some(t) = dep.timeout {
                p = p.timeout(t);
            }
            if let Some(retry) = self.retry(name, dep.retry.as_ref()) {
                p = p.retry(retry);
            }
        }
        p.build()
    }

    /// The shared retry of dependency `name` for `config`, rebuilt if the
    /// config changed.
    fn retry(&self, name: &str, config: Option<&RetryConfig>) -> Option<Retry> {
        let mut retries = write(&self.inner.retries);
        let Some(config) = config else {
            retries.remove(name);
            return None;
        };
        if let Some((c, r)) = retries.get(name) {
            if c == config {
                return Some(r.clone());
            }
        }
        // Validated when the config was accepted; on the registry's clock.
        let retry = config.build_on(self.inner.clock.as_ref()).ok()?;
        retries.insert(name.to_owned(), (config.clone(), retry.clone()));
        Some(retry)
    }

    /// The tags of breaker `name` (from its effective config), whether or not
    /// it was built yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerEntry, Fusebox, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// let mut db = BreakerEntry::default();
    /// db.tags.insert("service".into(), "orders".into());
    /// config.breakers.insert("orders-db".into(), db);
    /// let fusebox = Fusebox::from_config(config)?;
    /// assert_eq!(fusebox.tags("orders-db")["service"], "orders");
    /// assert!(fusebox.tags("other").is_empty());
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn tags(&self, name: &str) -> Tags {
        match read(&self.inner.breakers).get(name) {
            Some((_, tags)) => unboxed(tags),
            None => self.config(name).tags,
        }
    }

    /// Names of the breakers whose tag `key` is `value`, sorted.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{BreakerEntry, Fusebox, FuseboxConfig};
    /// let mut config = FuseboxConfig::default();
    /// for name in ["pay-eu", "pay-us"] {
    ///     let mut c = BreakerEntry::default();
    ///     c.tags.insert("service".into(), "payments".into());
    ///     config.breakers.insert(name.into(), c);
    /// }
    /// let fusebox = Fusebox::from_config(config)?;
    /// fusebox.breaker("search");
    /// assert_eq!(fusebox.tagged("service", "payments"), ["pay-eu", "pay-us"]);
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn tagged(&self, key: &str, value: &str) -> Vec<String> {
        read(&self.inner.breakers)
            .iter()
            .filter(|(_, (_, tags))| {
                tags.as_ref().and_then(|t| t.get(key)).map(String::as_str) == Some(value)
            })
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// The effective table of breaker `name` in the registry's config: its
    /// own laid over the defaults, or the defaults. The settings in force
    /// are [`CircuitBreaker::config`].
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// assert_eq!(fusebox.config("db"), Default::default());
    /// ```
    pub fn config(&self, name: &str) -> BreakerEntry {
        read(&self.inner.config).breaker_config(name)
    }

    /// Changes the settings of breaker `name` in place. `settings` is the
    /// breaker's own table, laid over the registry's defaults like one from
    /// a file; its tags stay.
    ///
    /// The breaker is changed, not replaced: every handle of it (pipelines,
    /// tower layers, clones) follows, with the rules of
    /// [`CircuitBreaker::reconfigure`] (a closed breaker keeps its window
    /// when its shape is unchanged, an open one finishes its open period,
    /// forced open and disabled stay so).
    ///
    /// # Errors
    ///
    /// An invalid config, with the key under `breakers.NAME`, or settings
    /// that would take the registry's config over its
    /// [budget](FuseboxBuilder::config_budget); nothing is changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{Fusebox, Reconfigured};
    /// use fusebox::BreakerConfig;
    /// let fusebox = Fusebox::new();
    /// let db = fusebox.breaker("db");
    /// let tighter = BreakerConfig { consecutive_failures: Some(1), ..Default::default() };
    /// assert_eq!(fusebox.reconfigure("db", tighter)?, Reconfigured::Applied);
    /// let _ = db.call(|| Err::<(), _>("boom"));
    /// assert_eq!(fusebox.breaker("db").state(), fusebox::State::Open);
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn reconfigure(
        &self,
        name: &str,
        settings: BreakerConfig,
    ) -> Result<Reconfigured, InvalidConfig> {
        let mut config = write(&self.inner.config);
        let is_dependency = config.dependencies.contains_key(name);
        let prefix = if is_dependency {
            format!("dependencies.{name}.breaker")
        } else {
            format!("breakers.{name}")
        };
        let effective = settings.merged_over(&config.defaults.breaker.settings);
        effective
            .validate()
            .map_err(|e| InvalidConfig::from(e).under(&prefix))?;
        let mut candidate = config.clone();
        match candidate.dependencies.get_mut(name) {
            Some(dep) => dep.breaker = settings,
            None => {
                candidate
                    .breakers
                    .entry(name.to_owned())
                    .or_default()
                    .settings = settings
            }
        }
        candidate.check_budget(self.inner.budget)?;
        *config = candidate;
        drop(config);
        Ok(match self.get(name) {
            Some(breaker) => apply(&breaker, &effective),
            None => Reconfigured::Applied,
        })
    }

    /// Applies a whole new config (a reloaded file) in place: every breaker
    /// and bulkhead whose effective settings or tags changed is changed in
    /// place (holders follow), names new to the config are built, and names
    /// the config no longer has are reported and left running as they are
    /// (a holder may still be using them). Names built from the defaults
    /// follow new defaults.
    ///
    /// Observers were attached when each breaker was built; a changed tag
    /// shows in [`snapshot`](Fusebox::snapshot) and [`tags`](Fusebox::tags)
    /// at once, and in labels an observer fixed at build time (such as the
    /// metrics' info series) only for breakers built after the reload.
    ///
    /// # Errors
    ///
    /// The first bad key of `config`, or the breaker table that takes most
    /// of a config over the registry's
    /// [budget](FuseboxBuilder::config_budget) (checked before anything
    /// is built); then nothing is changed: the config in force and every
    /// policy built from it stay.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::{Fusebox, FuseboxConfig};
    /// # #[cfg(feature = "config")] {
    /// let fusebox = Fusebox::from_config(FuseboxConfig::from_toml(r#"
    /// [breakers.db]
    /// consecutive_failures = 5
    /// "#)?)?;
    /// let db = fusebox.breaker("db");
    /// let report = fusebox.reload(FuseboxConfig::from_toml(r#"
    /// [breakers.db]
    /// consecutive_failures = 1
    /// [breakers.search]
    /// failure_rate = 0.5
    /// "#)?)?;
    /// assert_eq!((report.changed, report.added), (vec!["db".to_string()], vec!["search".to_string()]));
    /// let _ = db.call(|| Err::<(), _>("down"));
    /// assert_eq!(db.state(), fusebox::State::Open);
    /// # }
    /// # Ok::<(), fusebox::registry::InvalidConfig>(())
    /// ```
    pub fn reload(&self, config: FuseboxConfig) -> Result<Reloaded, InvalidConfig> {
        config.validate()?;
        config.check_budget(self.inner.budget)?;
        for table in self.inner.tables() {
            table.check(&config)?;
        }
        let old = std::mem::replace(&mut *write(&self.inner.config), config.clone());
        let mut report = Reloaded::default();
        let gone = |names: Vec<&String>, new: Vec<&String>| -> Vec<String> {
            names
                .into_iter()
                .filter(|n| !new.contains(n))
                .cloned()
                .collect()
        };
        let removed_breakers = gone(
            old.breaker_names().collect(),
            config.breaker_names().collect(),
        );
        let breakers: Vec<_> = read(&self.inner.breakers)
            .iter()
            .map(|(n, (b, t))| (n.to_string(), b.clone(), unboxed(t)))
            .collect();
        for (name, breaker, tags) in breakers {
            if removed_breakers.contains(&name) {
                continue;
            }
            let entry = config.breaker_config(&name);
            let mut changed = apply(&breaker, &entry.settings) == Reconfigured::Applied;
            if entry.tags != tags {
                if let Some(slot) = write(&self.inner.breakers).get_mut(name.as_str()) {
                    slot.1 = boxed(&entry.tags);
                }
                changed = true;
            }
            if changed {
                report.changed.push(name);
            }
        }
        report.removed = removed_breakers;
        for table in self.inner.tables() {
            table.reload(&old, &config, &mut report);
        }
        report.added = self.build_configured();
        for list in [&mut report.added, &mut report.changed, &mut report.removed] {
            list.sort();
            list.dedup();
        }
        Ok(report)
    }
}

/// Puts `settings` (validated) in force on `breaker` unless they are the
/// ones it already runs on.
fn apply(breaker: &CircuitBreaker, settings: &BreakerConfig) -> Reconfigured {
    match breaker.reconfigure_if_changed(settings) {
        Ok(true) => Reconfigured::Applied,
        Ok(false) | Err(_) => Reconfigured::Unchanged,
    }
}

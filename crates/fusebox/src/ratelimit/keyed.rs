//! [`KeyedRateLimiter`]: one rate per key, in bounded memory.

use super::clock::GovernorClock;
use super::config::rule;
use super::counters::{Counters, Verdict};
use super::{RateLimitConfig, RateLimitConfigError, RateLimitSnapshot, RateLimited};
use crate::policy::ModeCell;
use crate::sync::{AtomicU64, AtomicUsize, Ordering};
use crate::{Clock, Mode, MonotonicClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::{DashMapStateStore, ShrinkableKeyedStateStore};
use governor::state::{InMemoryState, NotKeyed, StateStore};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

/// The default `max_keys`.
const DEFAULT_MAX_KEYS: usize = 10_000;
/// The shortest time between two sweeps of a full map, whatever the rate.
const MIN_SWEEP_INTERVAL: Duration = Duration::from_millis(1);

/// One rate per key (per tenant, per host, per API key): each key has its
/// own bucket with the same quota, in governor's keyed limiter.
///
/// Cheap to clone: clones share the keys, the mode and the counters.
/// `Send + Sync + 'static` for keys that are.
///
/// # Memory
///
/// At most `max_keys` keys have a bucket of their own (default 10 000), whatever
/// the callers do and without any cleanup call. A key's bucket is a few dozen
/// bytes plus the key.
///
/// When a new key arrives and the map is full, the limiter first sweeps it
/// with governor's `retain_recent`, which drops every key whose bucket has
/// refilled (indistinguishable from a key never seen), and gives memory
/// back (`shrink_to_fit`) when the sweep emptied most of the map. A sweep
/// visits every key, so a full map of live keys is swept at most once per
/// emission interval (the time one cell takes to refill, but at least 1
/// ms): before that, few keys can have refilled.
///
/// If the map is still full, the new key **shares the overflow bucket**:
/// one bucket with the same quota for every key that found no room. So a
/// flood of new keys (a scan, a key per request) can neither grow memory
/// nor get more than one key's rate between them, and the keys already
/// tracked keep their own buckets. The price: while the map is full of live
/// keys, a genuinely new key competes with the flood for the overflow
/// bucket. Refusing new keys outright was the alternative; sharing keeps a
/// trickle going and is counted ([`KeyedSnapshot::overflowed`]). Size
/// `max_keys` above the keys you expect to be live at once.
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
///
/// let per_tenant = KeyedRateLimiter::builder()
///     .config(RateLimitConfig::per_second(1))
///     .clock(fusebox::ManualClock::new())
///     .build()?;
/// assert!(per_tenant.try_acquire(&"acme").is_ok());
/// assert!(per_tenant.try_acquire(&"acme").is_err());
/// assert!(per_tenant.try_acquire(&"globex").is_ok()); // its own bucket
/// assert_eq!(per_tenant.len(), 2);
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
pub struct KeyedRateLimiter<K: Hash + Eq + Clone> {
    inner: Arc<KeyedInner<K>>,
}

type Keyed<K> = governor::RateLimiter<K, BoundedStore<K>, GovernorClock, NoOpMiddleware<Nanos>>;

struct KeyedInner<K: Hash + Eq + Clone> {
    gcra: Keyed<K>,
    /// The same map governor's limiter reads through `BoundedStore`.
    map: Arc<DashMapStateStore<K>>,
    room: Arc<Room>,
    config: RateLimitConfig,
    mode: ModeCell,
    counters: Counters,
    clock: GovernorClock,
    /// No sweep before this time (fusebox clock nanoseconds).
    next_sweep: AtomicU64,
    sweep_interval: u64,
    sweeps: AtomicU64,
    name: Option<String>,
}

/// How many keys have a bucket, against the cap.
struct Room {
    max_keys: usize,
    /// Entries inserted minus entries swept: never below the map's length
    /// (a racing insert of one key may count twice until the next sweep
    /// recounts), so the map never holds more than `max_keys`.
    reserved: AtomicUsize,
    overflowed: AtomicU64,
}

impl Room {
    /// Reserves room for one new key, if there is any.
    fn reserve(&self) -> bool {
        // Relaxed: the count is its own value; the map's shard locks order
        // the entries themselves.
        let mut cur = self.reserved.load(Ordering::Relaxed);
        loop {
            if cur >= self.max_keys {
                return false;
            }
            match self.reserved.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    fn is_full(&self) -> bool {
        // Relaxed: see `reserve`.
        self.reserved.load(Ordering::Relaxed) >= self.max_keys
    }
}

/// governor's DashMap store behind a cap: keys it has no room for share
/// one overflow bucket. governor's limiter decides on it as on any keyed
/// store (same quota, same start).
struct BoundedStore<K> {
    map: Arc<DashMapStateStore<K>>,
    overflow: InMemoryState,
    room: Arc<Room>,
}

impl<K: Hash + Eq + Clone> StateStore for BoundedStore<K> {
    type Key = K;

    fn measure_and_replace<T, F, E>(&self, key: &K, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        if let Some(state) = self.map.get(key) {
            return state.measure_and_replace(&NotKeyed::NonKey, f);
        }
        if self.room.reserve() {
            let state = self.map.entry(key.clone()).or_default();
            return state.measure_and_replace(&NotKeyed::NonKey, f);
        }
        // Relaxed: a counter read only by snapshots.
        self.room.overflowed.fetch_add(1, Ordering::Relaxed);
        self.overflow.measure_and_replace(&NotKeyed::NonKey, f)
    }
}

impl<K: Hash + Eq + Clone> ShrinkableKeyedStateStore<K> for BoundedStore<K> {
    fn retain_recent(&self, drop_below: Nanos) {
        ShrinkableKeyedStateStore::retain_recent(&*self.map, drop_below);
        // Relaxed: see `Room::reserve`. Racing inserts may be counted in
        // `len` and reserved too; the count then stays above the map's
        // length until the next sweep, never below it.
        self.room.reserved.store(self.map.len(), Ordering::Relaxed);
    }

    fn shrink_to_fit(&self) {
        ShrinkableKeyedStateStore::shrink_to_fit(&*self.map);
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Builds a [`KeyedRateLimiter`]; from [`KeyedRateLimiter::builder`].
///
/// # Default
///
/// - `config`: none: a rate must be given (its own defaults are listed on
///   [`RateLimitConfig`])
/// - `max_keys`: 10 000
/// - `clock`: [`MonotonicClock`]
/// - `name`: none
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
/// let per_host = KeyedRateLimiter::<String>::builder()
///     .config(RateLimitConfig::per_second(10))
///     .max_keys(500)
///     .build()?;
/// assert_eq!(per_host.max_keys(), 500);
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct KeyedBuilder<K> {
    config: Option<RateLimitConfig>,
    max_keys: usize,
    clock: Option<Arc<dyn Clock>>,
    name: Option<String>,
    key: std::marker::PhantomData<fn(K)>,
}

impl<K> KeyedBuilder<K> {
    /// The rate, burst and mode, for each key.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<u64>::builder().config(RateLimitConfig::per_second(2)).build()?;
    /// assert_eq!(l.config().per_second, Some(2));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn config(mut self, config: RateLimitConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The most keys with a bucket of their own (see the `# Memory` section
    /// of [`KeyedRateLimiter`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let err = KeyedRateLimiter::<u64>::builder()
    ///     .config(RateLimitConfig::per_second(2))
    ///     .max_keys(0)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "max_keys");
    /// ```
    pub fn max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys;
        self
    }

    /// The clock the limiter reads time from.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<u64>::builder()
    ///     .config(RateLimitConfig::per_second(2))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// # let _ = l;
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
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<u64>::builder()
    ///     .config(RateLimitConfig::per_second(2))
    ///     .name("per-tenant")
    ///     .build()?;
    /// assert_eq!(l.name(), Some("per-tenant"));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

impl<K: Hash + Eq + Clone> KeyedBuilder<K> {
    /// Validates the settings once and builds the limiter, with no key yet.
    ///
    /// # Errors
    ///
    /// A [`RateLimitConfigError`]: as [`RateLimitConfig::validate`], or
    /// `max_keys` zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<&str>::builder().config(RateLimitConfig::per_second(2)).build()?;
    /// assert!(l.is_empty());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn build(self) -> Result<KeyedRateLimiter<K>, RateLimitConfigError> {
        let config = self
            .config
            .unwrap_or(RateLimitConfig {
                per_second: None,
                period: None,
                burst: None,
                mode: Mode::Enforce,
            })
            .resolved()?;
        let quota = config.quota()?;
        let max_keys = rule::max_keys(self.max_keys)?;
        let clock = GovernorClock(self.clock.unwrap_or_else(|| Arc::new(MonotonicClock)));
        let map: Arc<DashMapStateStore<K>> = Arc::default();
        let room = Arc::new(Room {
            max_keys,
            reserved: AtomicUsize::new(0),
            overflowed: AtomicU64::new(0),
        });
        let store = BoundedStore {
            map: Arc::clone(&map),
            overflow: InMemoryState::default(),
            room: Arc::clone(&room),
        };
        let sweep_interval =
            crate::clock::nanos(quota.replenish_interval().max(MIN_SWEEP_INTERVAL));
        Ok(KeyedRateLimiter {
            inner: Arc::new(KeyedInner {
                gcra: governor::RateLimiter::new(quota, store, clock.clone()),
                map,
                room,
                config,
                mode: ModeCell::new(config.mode),
                counters: Counters::default(),
                clock,
                next_sweep: AtomicU64::new(0),
                sweep_interval,
                sweeps: AtomicU64::new(0),
                name: self.name,
            }),
        })
    }
}

impl<K> fmt::Debug for KeyedBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBuilder")
            .field("config", &self.config)
            .field("max_keys", &self.max_keys)
            .field("clock", &self.clock.as_ref().map(|_| "custom"))
            .field("name", &self.name)
            .finish()
    }
}

impl<K: Hash + Eq + Clone> KeyedRateLimiter<K> {
    /// A builder: settings, `max_keys`, clock and name.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<u32>::builder().config(RateLimitConfig::per_second(1)).build()?;
    /// assert_eq!(l.max_keys(), 10_000);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn builder() -> KeyedBuilder<K> {
        KeyedBuilder {
            config: None,
            max_keys: DEFAULT_MAX_KEYS,
            clock: None,
            name: None,
            key: std::marker::PhantomData,
        }
    }
}

impl<K: Hash + Eq + Clone> KeyedRateLimiter<K> {
    /// A limiter with these settings for each key, at most 10 000 keys, on
    /// the monotonic clock.
    ///
    /// # Errors
    ///
    /// As [`RateLimitConfig::validate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::new(RateLimitConfig::per_second(5))?;
    /// assert!(l.try_acquire(&42u64).is_ok());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn new(config: RateLimitConfig) -> Result<Self, RateLimitConfigError> {
        Self::builder().config(config).build()
    }

    /// Takes a cell from `key`'s bucket if its rate allows it now; never
    /// waits. A key not seen before gets a full bucket (or shares the
    /// overflow bucket, see `# Memory`).
    ///
    /// # Errors
    ///
    /// [`RateLimited`] when the key's rate is spent (mode enforce).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// use std::time::Duration;
    /// let l = KeyedRateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(2).burst(1))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// assert!(l.try_acquire(&1).is_ok());
    /// assert_eq!(l.try_acquire(&1).unwrap_err().retry_after(), Duration::from_millis(500));
    /// assert!(l.try_acquire(&2).is_ok());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn try_acquire(&self, key: &K) -> Result<(), RateLimited> {
        let inner = &*self.inner;
        inner.counters.decide(inner.mode.get(), || inner.check(key))
    }

    /// Runs `f` if `key`'s rate allows a call now; never waits.
    ///
    /// # Errors
    ///
    /// [`RateLimited`] when the key's rate is spent; `f` is not run.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::new(RateLimitConfig::per_second(1))?;
    /// assert_eq!(l.call(&"acme", || "sent"), Ok("sent"));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn call<T>(&self, key: &K, f: impl FnOnce() -> T) -> Result<T, RateLimited> {
        self.try_acquire(key)?;
        Ok(f())
    }

    /// How many keys have a bucket of their own now (at most `max_keys`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::new(RateLimitConfig::per_second(1))?;
    /// let _ = l.try_acquire(&"a");
    /// assert_eq!(l.len(), 1);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.inner.map.len()
    }

    /// Whether no key has a bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// assert!(KeyedRateLimiter::<u8>::new(RateLimitConfig::per_second(1))?.is_empty());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.inner.map.is_empty()
    }

    /// The counters, the key count and how often the overflow bucket and the
    /// sweep were used.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::builder()
    ///     .config(RateLimitConfig::per_second(1))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// let _ = l.try_acquire(&"a");
    /// let _ = l.try_acquire(&"a");
    /// let s = l.snapshot();
    /// assert_eq!((s.limits.admitted, s.limits.refused, s.keys), (1, 1, 1));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn snapshot(&self) -> KeyedSnapshot {
        let inner = &*self.inner;
        // Relaxed: a best-effort reading for monitoring.
        KeyedSnapshot {
            limits: inner.counters.snapshot(inner.mode.get()),
            keys: inner.map.len(),
            overflowed: inner.room.overflowed.load(Ordering::Relaxed),
            sweeps: inner.sweeps.load(Ordering::Relaxed),
        }
    }
}

impl<K: Hash + Eq + Clone> KeyedRateLimiter<K> {
    /// The most keys with a bucket of their own.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<u8>::builder()
    ///     .config(RateLimitConfig::per_second(1))
    ///     .max_keys(16)
    ///     .build()?;
    /// assert_eq!(l.max_keys(), 16);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn max_keys(&self) -> usize {
        self.inner.room.max_keys
    }

    /// The settings of every key's bucket, defaults written out, with the
    /// current mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<u8>::new(RateLimitConfig::per_second(8))?;
    /// assert_eq!(l.config().burst, Some(8));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn config(&self) -> RateLimitConfig {
        RateLimitConfig {
            mode: self.mode(),
            ..self.inner.config
        }
    }

    /// The mode in force.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// let l = KeyedRateLimiter::<u8>::new(RateLimitConfig::per_second(8))?;
    /// assert_eq!(l.mode(), fusebox::Mode::Enforce);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn mode(&self) -> Mode {
        self.inner.mode.get()
    }

    /// Changes the mode in place, for every clone, from the next call on.
    /// In off mode no key is looked up or added.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// use fusebox::Mode;
    /// let l = KeyedRateLimiter::new(RateLimitConfig::per_second(8))?;
    /// l.set_mode(Mode::Off);
    /// assert!(l.try_acquire(&1u8).is_ok());
    /// assert!(l.is_empty());
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn set_mode(&self, mode: Mode) {
        self.inner.mode.set(mode);
    }

    /// The name given to the builder, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
    /// assert_eq!(KeyedRateLimiter::<u8>::new(RateLimitConfig::per_second(8))?.name(), None);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }
}

impl<K: Hash + Eq + Clone> KeyedInner<K> {
    /// governor's verdict for `key` now, after making room for it if it is
    /// new and the map is full.
    fn check(&self, key: &K) -> Verdict {
        if self.room.is_full() && !self.map.contains_key(key) {
            self.sweep_if_due();
        }
        match self.gcra.check_key(key) {
            Ok(()) => Verdict::Conforms,
            Err(not_until) => Verdict::Exceeds(not_until.wait_time_from(self.clock.nanos())),
        }
    }

    /// Drops the keys whose bucket has refilled, at most once per sweep
    /// interval, by one caller at a time.
    fn sweep_if_due(&self) {
        let now = self.clock.0.now_nanos();
        // Relaxed: the sweep time is its own value; the CAS picks one sweeper.
        let due = self.next_sweep.load(Ordering::Relaxed);
        if now < due
            || self
                .next_sweep
                .compare_exchange(
                    due,
                    now.saturating_add(self.sweep_interval),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        // Relaxed: a counter read only by snapshots.
        self.sweeps.fetch_add(1, Ordering::Relaxed);
        self.gcra.retain_recent();
        // Give memory back only when most of the map went (traffic fell):
        // shrinking a map that refills at once would only reallocate twice.
        if self.gcra.len() < self.room.max_keys / 4 {
            self.gcra.shrink_to_fit();
        }
    }
}

/// The keyed limiter's figures: those of a [`RateLimiter`](super::RateLimiter)
/// over every key, then `keys` (a gauge), `overflowed` and `sweeps`
/// (counters).
///
/// # Examples
///
/// ```
/// use fusebox::policy::Inspect;
/// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
/// let per_tenant = KeyedRateLimiter::<u32>::new(RateLimitConfig::per_second(5))?;
/// let _ = per_tenant.try_acquire(&7);
/// let keys = per_tenant.figures().into_iter().find(|f| f.name == "keys").unwrap();
/// assert_eq!(keys.value, 1);
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
impl<K: Hash + Eq + Clone + Send + Sync + 'static> crate::policy::Inspect for KeyedRateLimiter<K> {
    fn kind(&self) -> &'static str {
        "rate_limiter"
    }

    fn mode(&self) -> Mode {
        KeyedRateLimiter::mode(self)
    }

    fn figures(&self) -> Vec<crate::policy::Figure> {
        use crate::policy::Figure;
        let s = self.snapshot();
        let mut figures = s.limits.figures();
        figures.extend([
            Figure::gauge(
                "keys",
                "Keys with a bucket of their own",
                u64::try_from(s.keys).unwrap_or(u64::MAX),
            ),
            Figure::counter(
                "overflowed",
                "Calls decided on the shared overflow bucket (their key found no room)",
                s.overflowed,
            ),
            Figure::counter("sweeps", "Sweeps of a full key map", s.sweeps),
        ]);
        figures
    }
}

impl<K: Hash + Eq + Clone> Clone for KeyedRateLimiter<K> {
    fn clone(&self) -> Self {
        KeyedRateLimiter {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: Hash + Eq + Clone> fmt::Debug for KeyedRateLimiter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("KeyedRateLimiter")
            .field("name", &inner.name)
            .field("config", &self.config())
            .field("max_keys", &inner.room.max_keys)
            .finish_non_exhaustive()
    }
}

/// A reading of a [`KeyedRateLimiter`], from
/// [`KeyedRateLimiter::snapshot`].
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{KeyedRateLimiter, RateLimitConfig};
/// let s = KeyedRateLimiter::<u8>::new(RateLimitConfig::per_second(1))?.snapshot();
/// assert_eq!((s.keys, s.overflowed, s.sweeps), (0, 0, 0));
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyedSnapshot {
    /// Calls admitted, refused and let through by shadow mode, all keys
    /// together.
    pub limits: RateLimitSnapshot,
    /// Keys with a bucket of their own now.
    pub keys: usize,
    /// Calls decided on the shared overflow bucket (their key found no room).
    pub overflowed: u64,
    /// Sweeps of a full map (governor's `retain_recent`).
    pub sweeps: u64,
}

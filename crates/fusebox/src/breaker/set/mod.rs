//! [`BreakerSet`]: one breaker per key (a host, a tenant, an endpoint), made
//! on first use from one configuration, with a bounded number of keys, and
//! outlier detection across the keys (`outliers`).

mod outliers;

pub use outliers::Outliers;

use super::{BreakerConfig, Builder, CircuitBreaker, ConfigError, Error, Snapshot, State};
use crate::sync::{lock, read, write, Mutex};
use outliers::Watch;
use std::borrow::Borrow;
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The default [`max_keys`](SetBuilder::max_keys).
pub const DEFAULT_MAX_KEYS: usize = 1_000;
/// The default [`idle_after`](SetBuilder::idle_after).
pub const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(600);

/// One circuit breaker per key, each made on first use from one
/// configuration: one sick host opens its own breaker and no other.
///
/// Memory is bounded whatever the keys: at most
/// [`max_keys`](SetBuilder::max_keys) breakers are held, and a key that
/// finds the set full shares one **overflow** breaker with every other such
/// key until room is made. Room is made by evicting breakers idle for
/// [`idle_after`](SetBuilder::idle_after), and only those that are closed
/// and held by nobody but the set (no handle, no permit outstanding): an
/// open breaker is never evicted, so a sick key cannot come back closed by
/// being forgotten. Eviction runs when a new key finds the set full (at most
/// once per eighth of `idle_after`) and on [`evict_idle`](Self::evict_idle);
/// nothing needs to be called for memory to stay bounded.
///
/// A breaker is used when a [`get`](Self::get) (or [`call`](Self::call))
/// returns it. So that a `get` on a key that has its breaker need not read
/// the clock, the set counts time in epochs, each at least an eighth of
/// `idle_after` long, begun when the set reads its clock: on a new key, on
/// `evict_idle`, and on one `get` in 61 on each thread. A breaker is idle once
/// `idle_after` has passed since the epoch after that of its last use began:
/// never sooner than `idle_after` after its last use, and, while the set is
/// in use, at most about an eighth of `idle_after` later. A set that nobody
/// used for a while reads its clock again on its next new key or
/// `evict_idle`: the breakers last used in the epoch that was current then
/// are idle `idle_after` after that. So a full set that sat unused for a
/// while gives its next new keys the overflow breaker (shared by all of
/// them) for up to `idle_after`; call [`evict_idle`](Self::evict_idle) on a
/// timer of your own, or size `max_keys` for the keys you expect, where that
/// matters.
///
/// Every breaker of the set has the set's settings, clock and listeners, and
/// is named `SET/KEY` (or `KEY` for a set without a name), so listeners and
/// metrics tell the keys apart.
///
/// Cheap to clone: clones share the breakers.
///
/// # Examples
///
/// ```
/// use fusebox::BreakerSet;
/// use fusebox::{CircuitBreaker, State};
///
/// let hosts: BreakerSet<String> = BreakerSet::builder(CircuitBreaker::builder().consecutive_failures(2))
///     .name("upstream")
///     .max_keys(100)
///     .build()?;
/// for _ in 0..2 {
///     let _ = hosts.call("10.0.0.7:80", || Err::<(), _>("connection reset"));
/// }
/// assert_eq!(hosts.get("10.0.0.7:80").state(), State::Open);
/// assert_eq!(hosts.get("10.0.0.8:80").state(), State::Closed); // another host
/// assert_eq!(hosts.get("10.0.0.7:80").name(), Some("upstream/10.0.0.7:80"));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
pub struct BreakerSet<K> {
    inner: Arc<SetInner<K>>,
}

impl<K> Clone for BreakerSet<K> {
    fn clone(&self) -> Self {
        BreakerSet {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct SetInner<K> {
    /// What new breakers are built from (its settings follow `reconfigure`).
    template: Mutex<Builder>,
    name: Option<String>,
    max_keys: usize,
    idle_after: u64,
    breakers: RwLock<Table<K>>,
    overflow: CircuitBreaker,
    /// The set's time (nanoseconds) before which no sweep runs again.
    next_sweep: AtomicU64,
    evicted: AtomicU64,
    overflowed: AtomicU64,
    /// Held through a `reconfigure`.
    reconfiguring: Mutex<()>,
    /// Outlier detection, if on; locked by a round of detection.
    outliers: Option<Outliers>,
    /// Held (try-locked) through a round of detection.
    detecting: Mutex<()>,
    ejected: AtomicU64,
    /// Draws of `pick` so far (its random stream).
    picks: AtomicU64,
}

/// How many epochs a set keeps the start of (see [`Table`]).
const EPOCHS: usize = 16;

/// [`Entry::stamp`] of a breaker no `get` found since the set last noted its
/// use with the time ([`Entry::noted`]).
const UNSTAMPED: u64 = u64::MAX;

/// One `get` in this many on a thread that finds its key's breaker reads
/// the clock, to begin the set's next epoch when it is due (a prime, so a
/// thread that goes round a few sets in turn reads it on each of them).
const TIMED_EVERY: u32 = 61;

thread_local! {
    /// `get`s that find their breaker left on this thread before the next
    /// reads the clock.
    static UNTIMED: Cell<u32> = const { Cell::new(0) };
}

/// Whether this `get` reads the clock (one in [`TIMED_EVERY`] on a thread).
#[inline]
fn timed_get() -> bool {
    UNTIMED.with(|left| match left.get() {
        0 => {
            left.set(TIMED_EVERY - 1);
            true
        }
        n => {
            left.set(n - 1);
            false
        }
    })
}

/// The set's breakers, and its time kept without a clock read per `get`.
///
/// The set's time is cut into **epochs**. The next one begins, once the
/// current one is an eighth of `idle_after` old, when the set reads its clock
/// under the write lock: on a new key (with its sweep), on
/// [`BreakerSet::evict_idle`], and on one `get` in [`TIMED_EVERY`] on a
/// thread. A `get` stamps the breaker it finds with the current epoch (a
/// load, and a store when it changed), under the read lock. A stamp `e` so
/// says the breaker was last used before epoch `e + 1` began: that `get`
/// released the read lock before the write lock under which `e + 1` began
/// was taken, and its clock read under it. A breaker is so never taken for
/// idle sooner than `idle_after` after its last use, and at most an epoch
/// later than that while the set reads its clock.
struct Table<K> {
    map: HashMap<K, Entry>,
    epochs: Epochs,
}

/// The set's epochs (see [`Table`]).
struct Epochs {
    /// The current epoch.
    current: u64,
    /// When (the set's time) each of the latest [`EPOCHS`] epochs began: at
    /// least an eighth of `idle_after` apart, so they span more than
    /// `idle_after`, and a breaker stamped before the oldest kept is idle.
    starts: [u64; EPOCHS],
}

impl Epochs {
    /// Epoch 0, begun at `now`.
    fn new(now: u64) -> Self {
        Epochs {
            current: 0,
            starts: [now; EPOCHS],
        }
    }

    /// When `epoch` (one of the latest [`EPOCHS`]) began.
    fn start(&self, epoch: u64) -> u64 {
        self.starts[(epoch % EPOCHS as u64) as usize]
    }

    /// Begins the next epoch at `now` if the current one began `length`
    /// (at least 1) or more before; under the write lock, `now` read under
    /// it.
    fn turn(&mut self, now: u64, length: u64) {
        if now.saturating_sub(self.start(self.current)) >= length {
            self.current += 1;
            self.starts[(self.current % EPOCHS as u64) as usize] = now;
        }
    }

    /// The latest time (the set's) at which `entry` may have been used, at
    /// `now` (under the write lock).
    fn last_use(&self, entry: &Entry, now: u64) -> u64 {
        let stamp = entry.stamp.load(Ordering::Relaxed);
        if stamp == UNSTAMPED {
            entry.noted
        } else if stamp >= self.current {
            now // some time in the current epoch
        } else {
            // Before the next epoch began (or, stamped before the oldest
            // epoch kept, before that one began: later still).
            let oldest = self.current.saturating_sub(EPOCHS as u64 - 1);
            self.start((stamp + 1).max(oldest))
        }
    }
}

struct Entry {
    breaker: CircuitBreaker,
    /// The epoch in which a `get` last found this breaker, [`UNSTAMPED`]
    /// if none did since [`noted`](Self::noted).
    stamp: AtomicU64,
    /// The set's time (nanoseconds) at which the set last handed the
    /// breaker out with the clock read (a new key, or a `get` racing its
    /// insertion); under the write lock.
    noted: u64,
    /// What outlier detection heard of this key (with detection on).
    watch: Option<Arc<Watch>>,
}

/// Builds a [`BreakerSet`]; from [`BreakerSet::builder`].
///
/// # Default
///
/// - `max_keys`: [`DEFAULT_MAX_KEYS`] (1,000)
/// - `idle_after`: [`DEFAULT_IDLE_AFTER`] (10 minutes)
/// - no outlier detection
/// - no name
///
/// # Examples
///
/// ```
/// use fusebox::BreakerSet;
/// use std::time::Duration;
/// let set: BreakerSet<u32> = BreakerSet::builder(fusebox::CircuitBreaker::builder())
///     .max_keys(10)
///     .idle_after(Duration::from_secs(60))
///     .build()?;
/// assert_eq!(set.max_keys(), 10);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct SetBuilder<K> {
    template: Builder,
    name: Option<String>,
    max_keys: usize,
    idle_after: Duration,
    outliers: Option<Outliers>,
    keys: std::marker::PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for SetBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetBuilder")
            .field("name", &self.name)
            .field("max_keys", &self.max_keys)
            .field("idle_after", &self.idle_after)
            .field("outliers", &self.outliers)
            .finish_non_exhaustive()
    }
}

impl<K> SetBuilder<K> {
    /// Names the set: its breakers are named `NAME/KEY`, the overflow one
    /// `NAME/overflow`.
    ///
    /// # Examples
    ///
    /// ```
    /// let set: fusebox::BreakerSet<&str> =
    ///     fusebox::BreakerSet::builder(fusebox::CircuitBreaker::builder()).name("hosts").build()?;
    /// assert_eq!(set.overflow().name(), Some("hosts/overflow"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The most breakers the set holds (at least 1); keys beyond it share
    /// the overflow breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder())
    ///     .max_keys(0)
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "max_keys");
    /// ```
    pub fn max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys;
        self
    }

    /// How long a breaker must go unused before it may be evicted (closed
    /// and held by nobody else, too; see [`BreakerSet`] for when the set
    /// takes it to be idle: never sooner). Zero makes every such breaker
    /// evictable at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder())
    ///     .idle_after(Duration::from_secs(30))
    ///     .build()?;
    /// assert_eq!(set.idle_after(), Duration::from_secs(30));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn idle_after(mut self, idle_after: Duration) -> Self {
        self.idle_after = idle_after;
        self
    }

    /// Turns on outlier detection across the keys (see [`Outliers`]): a key
    /// failing more than its peers is ejected, at most
    /// `max_ejection_percent` of the keys at once. Detection runs when
    /// [`BreakerSet::detect_outliers`] is called (or on the future of
    /// `BreakerSet::outlier_detection`, feature `tokio`), every
    /// [`interval`](Outliers::interval).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::set::Outliers;
    /// use fusebox::{BreakerSet, CircuitBreaker};
    /// let hosts: BreakerSet<String> = BreakerSet::builder(CircuitBreaker::builder())
    ///     .outliers(Outliers::default())
    ///     .build()?;
    /// assert!(hosts.outliers().is_some());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn outliers(mut self, outliers: Outliers) -> Self {
        self.outliers = Some(outliers);
        self
    }

    /// Builds the set (and its overflow breaker).
    ///
    /// # Errors
    ///
    /// The breaker settings' [`ConfigError`], `max_keys` of 0, or a bad
    /// [`Outliers`] setting (named `outliers.FIELD`).
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert!(set.is_empty());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<BreakerSet<K>, ConfigError> {
        if self.max_keys == 0 {
            return Err(ConfigError::of(
                "breaker set",
                "max_keys",
                0,
                "must be at least 1",
            ));
        }
        if let Some(o) = &self.outliers {
            o.validate()?;
        }
        let overflow = self
            .template
            .clone()
            .name(key_name(self.name.as_deref(), &"overflow"))
            .build()?;
        let now = overflow.clock().now_nanos();
        Ok(BreakerSet {
            inner: Arc::new(SetInner {
                template: Mutex::new(self.template),
                name: self.name,
                max_keys: self.max_keys,
                idle_after: crate::clock::nanos(self.idle_after),
                breakers: RwLock::new(Table {
                    map: HashMap::new(),
                    epochs: Epochs::new(now),
                }),
                overflow,
                next_sweep: AtomicU64::new(0),
                evicted: AtomicU64::new(0),
                overflowed: AtomicU64::new(0),
                reconfiguring: Mutex::new(()),
                outliers: self.outliers,
                detecting: Mutex::new(()),
                ejected: AtomicU64::new(0),
                picks: AtomicU64::new(0),
            }),
        })
    }
}

fn key_name(set: Option<&str>, key: &dyn fmt::Display) -> String {
    match set {
        Some(set) => format!("{set}/{key}"),
        None => key.to_string(),
    }
}

impl<K> BreakerSet<K> {
    /// A builder making each key's breaker from `breaker` (its settings,
    /// clock and listeners; its name is replaced by the key's).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::BreakerSet;
    /// let set: BreakerSet<String> = BreakerSet::builder(fusebox::CircuitBreaker::builder().failure_rate(0.5)).build()?;
    /// assert_eq!(set.get("a").config().failure_rate, Some(0.5));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn builder(breaker: impl Into<Builder>) -> SetBuilder<K> {
        SetBuilder {
            template: breaker.into(),
            name: None,
            max_keys: DEFAULT_MAX_KEYS,
            idle_after: DEFAULT_IDLE_AFTER,
            outliers: None,
            keys: std::marker::PhantomData,
        }
    }

    /// The breaker shared by the keys that found the set full.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).max_keys(1).build()?;
    /// set.get(&1);
    /// assert!(set.get(&2).same_as(set.overflow())); // full: 2 shares the overflow breaker
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn overflow(&self) -> &CircuitBreaker {
        &self.inner.overflow
    }

    /// How many keys have their own breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// set.get(&7);
    /// assert_eq!(set.len(), 1);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn len(&self) -> usize {
        read(&self.inner.breakers).map.len()
    }

    /// Whether no key has a breaker yet.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert!(set.is_empty());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys with a breaker of their own.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert_eq!(set.max_keys(), fusebox::set::DEFAULT_MAX_KEYS);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn max_keys(&self) -> usize {
        self.inner.max_keys
    }

    /// How long a breaker goes unused before it may be evicted.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert_eq!(set.idle_after(), fusebox::set::DEFAULT_IDLE_AFTER);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn idle_after(&self) -> Duration {
        Duration::from_nanos(self.inner.idle_after)
    }

    /// Breakers evicted so far, and calls that took the overflow breaker
    /// because the set was full.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).max_keys(1).build()?;
    /// set.get(&1);
    /// set.get(&2);
    /// assert_eq!(set.counts(), (0, 1));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn counts(&self) -> (u64, u64) {
        (
            self.inner.evicted.load(Ordering::Relaxed),
            self.inner.overflowed.load(Ordering::Relaxed),
        )
    }

    /// The set's outlier detection settings, if detection is on.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert!(set.outliers().is_none());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn outliers(&self) -> Option<Outliers> {
        self.inner.outliers.clone()
    }

    /// Keys ejected by outlier detection so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert_eq!(set.ejections(), 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn ejections(&self) -> u64 {
        self.inner.ejected.load(Ordering::Relaxed)
    }

    /// Puts `config` in force on every breaker of the set, the overflow one
    /// and the ones made later, in place (each keeps its state).
    ///
    /// # Errors
    ///
    /// The settings' [`ConfigError`]; nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{BreakerConfig, CircuitBreaker};
    /// let set = fusebox::BreakerSet::<u8>::builder(CircuitBreaker::builder()).build()?;
    /// let old = set.get(&1);
    /// set.reconfigure(BreakerConfig { consecutive_failures: Some(2), ..Default::default() })?;
    /// assert_eq!(old.config().consecutive_failures, Some(2));
    /// assert_eq!(set.get(&9).config().consecutive_failures, Some(2));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn reconfigure(&self, config: BreakerConfig) -> Result<(), ConfigError> {
        config.settings()?;
        // One reconfigure at a time, so that the breakers end with the
        // template's settings; the template and the table are each locked
        // only to read them, as a reconfigure may tell listeners of a
        // transition and a listener may call the set.
        let _one = lock(&self.inner.reconfiguring);
        let config = {
            let mut template = lock(&self.inner.template);
            template.config = config;
            template.config.clone()
        };
        self.inner.overflow.reconfigure_if_changed(&config)?;
        let breakers: Vec<CircuitBreaker> = read(&self.inner.breakers)
            .map
            .values()
            .map(|e| e.breaker.clone())
            .collect();
        for breaker in breakers {
            breaker.reconfigure_if_changed(&config)?;
        }
        Ok(())
    }

    /// The set's time, on its breakers' clock.
    fn now(&self) -> u64 {
        self.inner.overflow.clock().now_nanos()
    }

    /// How long an epoch lasts at least (see [`Table`]): an eighth of
    /// `idle_after`, at least 1 ns.
    fn epoch_length(&self) -> u64 {
        (self.inner.idle_after / 8).max(1)
    }

    /// For the `get` that reads the clock: begins the next epoch if the
    /// current one, begun at `start`, is due to end. Never waits for the
    /// lock (another holds it: a later `get` does it).
    #[cold]
    #[inline(never)]
    fn turn_if_due(&self, start: u64) {
        let length = self.epoch_length();
        if self.inner.idle_after == 0 || self.now().saturating_sub(start) < length {
            return; // with no idle time, epochs tell nothing
        }
        let mut table = match self.inner.breakers.try_write() {
            Ok(t) => t,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let now = self.now();
        table.epochs.turn(now, length);
    }
}

impl<K: Hash + Eq + Clone + fmt::Display> BreakerSet<K> {
    /// The breaker of `key`, made now if it has none (or the overflow
    /// breaker when the set is full and no breaker can be evicted).
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<String>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert!(set.get("a").same_as(&set.get("a")));
    /// assert!(!set.get("a").same_as(&set.get("b")));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> CircuitBreaker
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let table = read(&self.inner.breakers);
        if let Some(entry) = table.map.get(key) {
            // No clock read: the epoch tells when it was used (see `Table`).
            let epoch = table.epochs.current;
            if entry.stamp.load(Ordering::Relaxed) != epoch {
                entry.stamp.store(epoch, Ordering::Relaxed);
            }
            let breaker = entry.breaker.clone();
            if timed_get() {
                let start = table.epochs.start(epoch);
                drop(table);
                self.turn_if_due(start);
            }
            return breaker;
        }
        drop(table);
        self.insert(key.to_owned())
    }

    /// Runs `f` through the breaker of `key` (see
    /// [`CircuitBreaker::call`]).
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::call`].
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<String>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert_eq!(set.call("a", || Ok::<_, std::io::Error>(1)).unwrap(), 1);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn call<Q, T, E, F>(&self, key: &Q, f: F) -> Result<T, Error<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        F: FnOnce() -> Result<T, E>,
    {
        self.get(key).call(f)
    }

    /// Runs the future `f` makes through the breaker of `key` (see
    /// [`CircuitBreaker::call_async`]).
    ///
    /// # Errors
    ///
    /// As [`CircuitBreaker::call_async`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::ConfigError> {
    /// let hosts = fusebox::BreakerSet::<String>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// let stock = hosts.call_async("10.0.0.7:443", || async { Ok::<_, std::io::Error>(7) }).await;
    /// assert_eq!(stock.unwrap(), 7);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_async<Q, T, E, F, Fut>(&self, key: &Q, f: F) -> Result<T, Error<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        let breaker = self.get(key);
        breaker.call_async(f).await
    }

    /// Every key with a breaker of its own, with its breaker's snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// set.get(&3).force_open();
    /// let all = set.snapshot();
    /// assert_eq!(all.len(), 1);
    /// assert_eq!(all[0].1.state, fusebox::State::ForcedOpen);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn snapshot(&self) -> Vec<(K, Snapshot)> {
        self.copied()
            .into_iter()
            .map(|(k, b, _)| (k, b.snapshot()))
            .collect()
    }

    /// Runs one round of outlier detection (see [`Outliers`]) and returns
    /// the keys it ejected; call it every [`Outliers::interval`] (the
    /// success rates are taken over the time since the last round). Does
    /// nothing without [`SetBuilder::outliers`], or while another round
    /// runs.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::set::Outliers;
    /// use fusebox::{BreakerSet, CircuitBreaker, State};
    ///
    /// // Breakers that trip late; detection ejects the host that fails 3 times in a row.
    /// let hosts: BreakerSet<&str> = BreakerSet::builder(CircuitBreaker::builder().consecutive_failures(100))
    ///     .outliers(Outliers::default().consecutive_failures(Some(3)))
    ///     .build()?;
    /// for _ in 0..3 {
    ///     let _ = hosts.call(&"b", || Err::<(), _>("refused"));
    ///     let _ = hosts.call(&"a", || Ok::<(), &str>(()));
    /// }
    /// assert_eq!(hosts.detect_outliers(), vec!["b"]);
    /// assert_eq!(hosts.get(&"b").state(), State::Open);
    /// assert!(hosts.is_ejected(&"b"));
    /// assert_eq!(hosts.pick(&["a", "b"]), Some(&"a"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn detect_outliers(&self) -> Vec<K> {
        let Some(outliers) = &self.inner.outliers else {
            return Vec::new();
        };
        // One round at a time; a listener told of an ejection may call the
        // set (even this), and finds the round busy rather than waiting.
        let _round = match self.inner.detecting.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Vec::new(),
        };
        let keys: Vec<(K, CircuitBreaker, Arc<Watch>)> = self
            .copied()
            .into_iter()
            .filter_map(|(k, b, w)| Some((k, b, w?)))
            .collect();
        let ejected = outliers::detect(outliers, &keys, self.now());
        self.inner
            .ejected
            .fetch_add(ejected.len() as u64, Ordering::Relaxed);
        ejected
    }

    /// Whether outlier detection has `key` ejected now.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// assert!(!set.is_ejected(&1));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn is_ejected<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let now = self.now();
        match self.held(key) {
            Some((breaker, Some(watch))) => watch.is_ejected(&breaker, now),
            _ => false,
        }
    }

    /// Picks one of `candidates` to send a call to, for callers that
    /// balance their own endpoints: two candidates drawn at random, the
    /// healthier one taken (power of two choices). A candidate may be taken
    /// when its breaker is closed (or it has none yet), or half open with no
    /// probe out (so a recovering key gets its probe); a half-open one is
    /// preferred (its probe is what closes it), then the one with the lower
    /// failure rate since the last round of outlier detection (smoothed:
    /// `(failures + 1) / (calls + 2)`, so a key with a few calls is not
    /// judged on them alone; without outlier detection the two tie and the
    /// first drawn is taken). A disabled breaker counts as closed. The
    /// choice is advice: callers picking at once may all draw the same
    /// half-open key, and only its probes get through. When neither
    /// drawn candidate may be taken, the first that may, from a random
    /// start; `None` when no candidate may (every one open, ejected or
    /// probing): fail fast or wait for the shortest `retry_after`.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<&str>::builder(fusebox::CircuitBreaker::builder()).build()?;
    /// set.get(&"b").force_open();
    /// for _ in 0..10 {
    ///     assert_eq!(set.pick(&["a", "b"]), Some(&"a"));
    /// }
    /// set.get(&"a").force_open();
    /// assert_eq!(set.pick(&["a", "b"]), None);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn pick<'a>(&self, candidates: &'a [K]) -> Option<&'a K> {
        let n = candidates.len();
        if n == 0 {
            return None;
        }
        // Relaxed: a counter feeding the random stream.
        let draw = crate::policy::mix(self.inner.picks.fetch_add(1, Ordering::Relaxed));
        let first = (draw % n as u64) as usize;
        // Lower is better; None: may not be taken. (Each key is looked up
        // under the lock and judged after it: reading a state may tell the
        // listeners of a transition.)
        let score = |key: &K| -> Option<(u8, u64)> {
            let Some((breaker, watch)) = self.held(key) else {
                // No breaker yet: the smoothed rate of no calls, 1/2.
                return Some((
                    1,
                    if self.inner.outliers.is_some() {
                        500_000
                    } else {
                        0
                    },
                ));
            };
            match breaker.state() {
                State::Closed | State::Disabled => {
                    Some((1, watch.map_or(0, |w| w.failure_score())))
                }
                State::HalfOpen if breaker.probes_in_flight() == 0 => Some((0, 0)),
                _ => None,
            }
        };
        let mut best = score(&candidates[first]).map(|s| (s, first));
        if n > 1 {
            let second = (first + 1 + ((draw >> 32) % (n as u64 - 1)) as usize) % n;
            if let Some(s) = score(&candidates[second])
                && best.is_none_or(|(b, _)| s < b)
            {
                best = Some((s, second));
            }
        }
        if best.is_none() {
            best = (1..n)
                .map(|i| (first + i) % n)
                .find_map(|i| score(&candidates[i]).map(|s| (s, i)));
        }
        best.map(|(_, i)| &candidates[i])
    }

    /// Every key with its breaker and watch, copied out of the lock: reading
    /// or ejecting a breaker may tell its listeners, which must not run
    /// under the set's lock.
    fn copied(&self) -> Vec<(K, CircuitBreaker, Option<Arc<Watch>>)> {
        read(&self.inner.breakers)
            .map
            .iter()
            .map(|(k, e)| (k.clone(), e.breaker.clone(), e.watch.clone()))
            .collect()
    }

    /// `key`'s breaker and watch, copied out of the lock.
    fn held<Q>(&self, key: &Q) -> Option<(CircuitBreaker, Option<Arc<Watch>>)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        read(&self.inner.breakers)
            .map
            .get(key)
            .map(|e| (e.breaker.clone(), e.watch.clone()))
    }

    /// A future that runs [`detect_outliers`](Self::detect_outliers) every
    /// [`Outliers::interval`] on tokio's timer (feature `tokio`), until the
    /// set and all its clones are dropped; spawn it once. Ends at once
    /// without outlier detection.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::ConfigError> {
    /// use fusebox::set::Outliers;
    /// let hosts = fusebox::BreakerSet::<String>::builder(fusebox::CircuitBreaker::builder())
    ///     .outliers(Outliers::default())
    ///     .build()?;
    /// let detection = tokio::spawn(hosts.outlier_detection());
    /// drop(hosts); // the detection ends with the set
    /// detection.await.unwrap();
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub fn outlier_detection(&self) -> impl std::future::Future<Output = ()> + Send + 'static
    where
        K: Send + Sync + 'static,
    {
        let set = Arc::downgrade(&self.inner);
        let every = self.outliers().map(|o| o.interval_value());
        async move {
            let Some(every) = every else { return };
            // An interval too long to add to now is a detection that never runs.
            let Some(first) = tokio::time::Instant::now().checked_add(every) else {
                return;
            };
            let mut tick = tokio::time::interval_at(first, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                // The set is held only for a round, so dropping it ends this.
                if set.strong_count() == 0 {
                    return;
                }
                tick.tick().await;
                let Some(inner) = set.upgrade() else { return };
                BreakerSet { inner }.detect_outliers();
            }
        }
    }

    /// Evicts every breaker idle for `idle_after` that is closed and held
    /// by nobody else; how many. Idle as [`BreakerSet`] says: unused for
    /// `idle_after` at least, at most about an eighth of `idle_after` more
    /// while the set is in use.
    ///
    /// # Examples
    ///
    /// ```
    /// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder())
    ///     .idle_after(std::time::Duration::ZERO)
    ///     .build()?;
    /// set.get(&1);
    /// let kept = set.get(&2); // a handle is held: not evicted
    /// assert_eq!(set.evict_idle(), 1);
    /// assert_eq!(set.len(), 1);
    /// # drop(kept);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn evict_idle(&self) -> usize {
        let mut table = write(&self.inner.breakers);
        let now = self.now(); // under the lock (see `Table`)
        table.epochs.turn(now, self.epoch_length());
        self.sweep(&mut table, now)
    }

    fn sweep(&self, table: &mut Table<K>, now: u64) -> usize {
        let idle_after = self.inner.idle_after;
        let Table { map, epochs } = table;
        let before = map.len();
        map.retain(|_, e| {
            let idle = now.saturating_sub(epochs.last_use(e, now)) >= idle_after;
            // Quietly: no listener may run under the set's lock.
            !(idle && e.breaker.handles() == 1 && e.breaker.state_quietly() == State::Closed)
        });
        let evicted = before - map.len();
        self.inner
            .evicted
            .fetch_add(evicted as u64, Ordering::Relaxed);
        evicted
    }

    #[cold]
    fn insert(&self, key: K) -> CircuitBreaker {
        let inner = &*self.inner;
        let mut table = write(&inner.breakers);
        let now = self.now(); // under the lock (see `Table`)
        table.epochs.turn(now, self.epoch_length());
        if let Some(entry) = table.map.get_mut(&key) {
            // Made by a racing call: used now.
            entry.noted = now;
            *entry.stamp.get_mut() = UNSTAMPED;
            return entry.breaker.clone();
        }
        if table.map.len() >= inner.max_keys && now >= inner.next_sweep.load(Ordering::Relaxed) {
            inner
                .next_sweep
                .store(now.saturating_add(inner.idle_after / 8), Ordering::Relaxed);
            self.sweep(&mut table, now);
        }
        if table.map.len() >= inner.max_keys {
            inner.overflowed.fetch_add(1, Ordering::Relaxed);
            return inner.overflow.clone();
        }
        let watch = inner.outliers.as_ref().map(|_| Arc::new(Watch::default()));
        let mut template = lock(&inner.template).clone();
        if let Some(w) = &watch {
            template = template.listener(Arc::clone(w));
        }
        let built = template.name(key_name(inner.name.as_deref(), &key)).build();
        // The template's settings were validated when set.
        let Ok(breaker) = built else {
            return inner.overflow.clone();
        };
        table.map.insert(
            key,
            Entry {
                breaker: breaker.clone(),
                stamp: AtomicU64::new(UNSTAMPED),
                noted: now,
                watch,
            },
        );
        breaker
    }
}

/// The set's figures, bounded whatever the keys (one series per figure,
/// never one per key): `keys`, `max_keys`, `open` (keys whose breaker is
/// not closed), `ejected` (keys out by outlier detection now), and the
/// counters `evicted`, `overflowed` and `ejections`. Observers export them
/// as `fusebox_breaker_set_{figure}` (e.g. `Metrics::track_policy`).
///
/// # Examples
///
/// ```
/// use fusebox::policy::Inspect;
/// let set = fusebox::BreakerSet::<u8>::builder(fusebox::CircuitBreaker::builder()).build()?;
/// set.get(&1).force_open();
/// set.get(&2);
/// let figure = |name| set.figures().into_iter().find(|f| f.name == name).unwrap().value;
/// assert_eq!((figure("keys"), figure("open")), (2, 1));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl<K: Send + Sync + 'static> crate::policy::Inspect for BreakerSet<K> {
    fn kind(&self) -> &'static str {
        "breaker_set"
    }

    fn mode(&self) -> crate::policy::Mode {
        self.inner.overflow.mode()
    }

    fn figures(&self) -> Vec<crate::policy::Figure> {
        use crate::policy::Figure;
        let now = self.now();
        // Read out of the lock: reading a state may tell the listeners.
        let held: Vec<(CircuitBreaker, Option<Arc<Watch>>)> = read(&self.inner.breakers)
            .map
            .values()
            .map(|e| (e.breaker.clone(), e.watch.clone()))
            .collect();
        let (mut open, mut ejected) = (0u64, 0u64);
        for (breaker, watch) in &held {
            open += u64::from(breaker.state() != State::Closed);
            ejected += u64::from(watch.as_ref().is_some_and(|w| w.is_ejected(breaker, now)));
        }
        let keys = held.len() as u64;
        let (evicted, overflowed) = self.counts();
        vec![
            Figure::gauge("keys", "Keys with a breaker of their own", keys),
            Figure::gauge(
                "max_keys",
                "The most keys with a breaker of their own",
                u64::try_from(self.inner.max_keys).unwrap_or(u64::MAX),
            ),
            Figure::gauge("open", "Keys whose breaker is not closed", open),
            Figure::gauge("ejected", "Keys ejected by outlier detection now", ejected),
            Figure::counter("evicted", "Idle breakers evicted", evicted),
            Figure::counter(
                "overflowed",
                "Calls that took the overflow breaker (the set was full)",
                overflowed,
            ),
            Figure::counter(
                "ejections",
                "Ejections by outlier detection",
                self.ejections(),
            ),
        ]
    }
}

impl<K> fmt::Debug for BreakerSet<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerSet")
            .field("name", &self.inner.name)
            .field("keys", &self.len())
            .field("max_keys", &self.inner.max_keys)
            .finish_non_exhaustive()
    }
}

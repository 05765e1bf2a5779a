//! Prometheus / OpenMetrics exposition (feature `prometheus`, on the
//! [`prometheus_client`] crate).
//!
//! [`Metrics::new`] registers these families into a registry you own, so they
//! sit beside your service's own metrics on one `/metrics` endpoint:
//!
//! | series | type | labels | value |
//! |---|---|---|---|
//! | `fusebox_circuit_state` | gauge | `name`, `state` | 1 for the current state, 0 for the four others |
//! | `fusebox_calls_total` | counter | `name`, `outcome` | calls by outcome: `success`, `failure`, `ignored`, `rejected`, `shadowed` (would have been rejected; let through in shadow mode, and counted again by its outcome when it finishes) |
//! | `fusebox_call_duration_seconds` | histogram | `name` | admission to verdict, on the breaker's clock, of the timed calls: one call in 16 by default (see [Sampled durations](#sampled-durations)) |
//! | `fusebox_transitions_total` | counter | `name`, `from`, `to` | state changes |
//! | `fusebox_failure_rate` | gauge | `name` | failure rate in the window, 0 to 1 |
//! | `fusebox_slow_call_rate` | gauge | `name` | slow-call rate in the window, 0 to 1 |
//! | `fusebox_breaker_info` | gauge | `name` + one label per tag | always 1; joins tags (e.g. `service`) onto the other series |
//! | `fusebox_failure_rate_threshold` | gauge | `name` | the failure rate the breaker trips at (failure-rate breakers only) |
//! | `fusebox_slow_call_rate_threshold` | gauge | `name` | the slow-call rate it trips at (breakers with a slow-call rule only) |
//! | `fusebox_bulkhead_in_use` | gauge | `name` | slots taken |
//! | `fusebox_bulkhead_limit` | gauge | `name` | the bulkhead's limit |
//! | `fusebox_bulkhead_waiting` | gauge | `name` | callers waiting for a slot |
//! | `fusebox_bulkhead_rejections_total` | counter | `name` | calls refused |
//! | `fusebox_bulkhead_shadowed_total` | counter | `name` | calls that found the bulkhead full and ran anyway (shadow mode) |
//! | `fusebox_rate_limiter_admitted_total`, `_refused_total`, `_shadowed_total` | counter | `name` | calls within the rate, refused, over the rate but let through (shadow mode) (feature `ratelimit`) |
//! | `fusebox_rate_limiter_keys` | gauge | `name` | keys of a keyed rate limiter with a bucket of their own |
//! | `fusebox_policy_mode` | gauge | `name`, `policy`, `mode` | always 1: the mode each policy runs in (`enforce`, `shadow`, `off`) |
//! | `fusebox_policy_calls_total` | counter | `name` | guarded calls through a pipeline or HTTP stack |
//! | `fusebox_retry_attempts_total` | counter | `name` | attempts, the first of each call included |
//! | `fusebox_retries_total` | counter | `name` | attempts beyond the first |
//! | `fusebox_retry_budget_refused_total` | counter | `name` | retries the retry budget refused |
//! | `fusebox_timeouts_total` | counter | `name` | attempts (or whole calls) stopped by a timeout |
//! | `fusebox_fallbacks_total` | counter | `name`, `cause` | fallback answers by cause: `rejected`, `bulkhead_full`, `timed_out`, `failed` |
//!
//! The last six come from a [`PolicyStats`] that a
//! pipeline or an HTTP stack counts into (relaxed atomic adds, no lock, no
//! allocation per call); export one with [`Metrics::track_stats`],
//! [`Metrics::track_pipeline`] or (feature `http`) `Metrics::track_standard`.
//!
//! Counters and the histogram are updated by a [`MetricsListener`] on the
//! breaker: a call costs one relaxed atomic add (two more when it is
//! timed), takes no lock and allocates nothing (the histogram is fusebox's
//! own, of atomic buckets: prometheus-client's `Histogram` takes a mutex per
//! observation). A breaker's counters and histogram are allocated at its
//! first event (call, refusal or transition), once, about 400 bytes; until
//! then the scrape writes them at 0 without keeping them, so an idle
//! breaker costs the metrics about 170 bytes (see [Memory](Metrics#memory)). A transition series (`fusebox_transitions_total`)
//! appears when its edge is first taken, except `closed -> open`,
//! `open -> half_open`, `half_open -> closed` and `half_open -> open`, which
//! are there from the start, at 0, so `increase()` sees the first trip.
//! The gauges are read from [`CircuitBreaker::snapshot`] at
//! scrape time, so they are exact when scraped, including an open breaker
//! whose open period just ended (reading the state moves it to half-open).
//!
//! # Sampled durations
//!
//! `fusebox_calls_total` counts every call, exactly. The duration histogram
//! holds the calls the breaker timed: by default ([`DEFAULT_TIMING`]) one
//! call in 16, the breaker's 1st, 17th, 33rd, ... call over all its threads
//! (the rule is [`Timing::OneIn`]'s), so that the other calls read no clock.
//! The histogram is then a sample of the calls, taken at a regular stride
//! and blind to their outcome and duration: its quantiles
//! (`histogram_quantile`) and its mean (`_sum / _count`) estimate those of
//! every call, while its `_count` is about a sixteenth of the calls
//! (exactly `ceil(calls / 16)` for a breaker that stays closed, with no
//! other listener and no slow-call rule), so count calls with
//! `fusebox_calls_total`, not with the histogram. Half-open probes are
//! always timed, and a breaker with a slow-call rule, or with another
//! listener that wants every duration, times every call: the histogram then
//! holds every call. (A stride can alias with traffic that repeats at the
//! same period, such as a client whose every 16th call is a heavy one; time
//! every call, or another `n`, if yours does.)
//!
//! [`Metrics::with_timing`] sets the sampling, [`Timing::Every`] to time
//! every call:
//!
//! ```
//! use fusebox::metrics::Metrics;
//! use fusebox::{CircuitBreaker, Timing};
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let every = Metrics::new(&mut registry).with_timing(Timing::Every);
//! let db = every.build("db", CircuitBreaker::builder())?;
//! for _ in 0..3 {
//!     db.call(|| Ok::<_, std::io::Error>(()))?;
//! }
//! let text = fusebox::metrics::encode_text(&registry);
//! assert!(text.contains(r#"fusebox_calls_total{name="db",outcome="success"} 3"#));
//! assert!(text.contains(r#"fusebox_call_duration_seconds_count{name="db"} 3"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Examples
//!
//! ```
//! use fusebox::metrics::Metrics;
//! use fusebox::CircuitBreaker;
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let metrics = Metrics::new(&mut registry);
//! let db = metrics.build("db", CircuitBreaker::builder().consecutive_failures(3))?;
//! db.call(|| Ok::<_, std::io::Error>(()))?;
//!
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry)?;
//! assert!(text.contains(r#"fusebox_calls_total{name="db",outcome="success"} 1"#));
//! assert!(text.contains(r#"fusebox_circuit_state{name="db",state="closed"} 1"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::observe::{Observer, Tags};
use crate::policy::{FigureKind, Inspect};
use crate::retry::RetryBudget;
use crate::sync::LazyBox;
use crate::sync::{lock, Mutex};
use crate::{
    Builder, Bulkhead, CallEvent, CircuitBreaker, ConfigError, Listener, Outcome, Rejected, State,
    Timing, Transition,
};
use crate::{Pipeline, PolicyStats};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::NoLabelSet;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc; // std even under loom: not modelled, and loom's Arc cannot hold `dyn` or be a `self` type
use std::time::Duration;

/// The calls a [`Metrics`] times for its duration histogram unless told
/// otherwise ([`Metrics::with_timing`]): one admitted call in 16 (see
/// [Sampled durations](self#sampled-durations)).
///
/// # Examples
///
/// ```
/// use prometheus_client::registry::Registry;
/// let metrics = fusebox::metrics::Metrics::new(&mut Registry::default());
/// assert_eq!(metrics.timing(), fusebox::metrics::DEFAULT_TIMING);
/// assert_eq!(fusebox::metrics::DEFAULT_TIMING, fusebox::Timing::OneIn(16));
/// ```
pub const DEFAULT_TIMING: Timing = Timing::OneIn(16);

/// Upper bounds of the call-duration buckets: 1 ms to 10 s (plus `+Inf`).
pub const DURATION_BUCKETS: [Duration; 13] = [
    Duration::from_micros(1_000),
    Duration::from_micros(2_500),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(25),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_millis(2_500),
    Duration::from_secs(5),
    Duration::from_secs(10),
];

/// [`DURATION_BUCKETS`] in nanoseconds, so that an observation compares
/// integers.
const BUCKET_NANOS: [u64; DURATION_BUCKETS.len()] = {
    let mut nanos = [0; DURATION_BUCKETS.len()];
    let mut i = 0;
    while i < nanos.len() {
        nanos[i] = DURATION_BUCKETS[i].as_nanos() as u64;
        i += 1;
    }
    nanos
};

/// One breaker's call durations: a bucket count per bound, one for `+Inf`,
/// and the sum. Lock-free.
#[derive(Debug, Default)]
struct Durations {
    slots: [AtomicU64; DURATION_BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Durations {
    fn observe(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = BUCKET_NANOS
            .iter()
            .position(|&bound| nanos <= bound)
            .unwrap_or(BUCKET_NANOS.len());
        // Relaxed: independent counters read once per scrape; no other
        // memory is published through them.
        self.slots[i].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// (sum in seconds, count, per-bucket counts with `+Inf` last). The
    /// count is the buckets' total, so the two always agree in a scrape.
    fn read(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let mut buckets = Vec::with_capacity(self.slots.len());
        let mut count = 0u64;
        for (i, slot) in self.slots.iter().enumerate() {
            // Relaxed: see `observe`.
            let n = slot.load(Ordering::Relaxed);
            count = count.saturating_add(n);
            let bound = DURATION_BUCKETS
                .get(i)
                .map_or(f64::INFINITY, Duration::as_secs_f64);
            buckets.push((bound, n));
        }
        // Relaxed: see `observe`.
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        (sum, count, buckets)
    }
}

const STATES: [State; 5] = [
    State::Closed,
    State::Open,
    State::HalfOpen,
    State::ForcedOpen,
    State::Disabled,
];

fn state_index(s: State) -> usize {
    match s {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
        State::ForcedOpen => 3,
        State::Disabled => 4,
    }
}

/// The `outcome` labels of `fusebox_calls_total`, in [`Series::calls`]' order.
const OUTCOMES: [&str; 5] = ["success", "failure", "ignored", "rejected", "shadowed"];

/// The edges whose `fusebox_transitions_total` series exist from the start,
/// at 0 (so that `increase()` sees the first trip); the others appear when
/// first taken.
const AUTOMATIC_EDGES: [(State, State); 4] = [
    (State::Closed, State::Open),
    (State::Open, State::HalfOpen),
    (State::HalfOpen, State::Closed),
    (State::HalfOpen, State::Open),
];

/// One breaker name's counters and call durations. Lock-free; made at the
/// name's first event (see [`Entry`]).
#[derive(Debug, Default)]
struct Series {
    /// Calls by outcome, in [`OUTCOMES`]' order.
    calls: [AtomicU64; OUTCOMES.len()],
    durations: Durations,
    /// Transitions, `[from][to]`.
    edges: [[AtomicU64; STATES.len()]; STATES.len()],
}

impl Series {
    #[inline]
    fn call(&self, c: &CallEvent) {
        self.count(match c.outcome {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::Ignore => 2,
        });
        if c.timed {
            self.durations.observe(c.duration);
        }
    }

    #[inline]
    fn count(&self, outcome: usize) {
        // Relaxed: independent counters read once per scrape; no other
        // memory is published through them.
        self.calls[outcome].fetch_add(1, Ordering::Relaxed);
    }
}

/// A breaker name: its [`Series`] if listeners count it, made at the first
/// event of one of them (so that an idle breaker keeps a name and a
/// pointer, not a histogram; until then a scrape writes its series at 0),
/// and the breaker whose gauges are exported under it, if tracked.
#[derive(Debug)]
struct Entry {
    name: Box<str>,
    series: LazyBox<Series>,
    /// Whether a listener counts the name (its series are exported).
    /// Written and read under the lock of [`Shared::entries`].
    counted: std::sync::atomic::AtomicBool,
    tracked: Mutex<Option<Tracked>>,
    /// The timing of the handle that made the entry: what it asks of the
    /// breakers it is the listener of.
    timing: Timing,
}

impl Entry {
    /// The series, made by the first caller.
    #[inline]
    fn series(&self) -> &Series {
        self.series.get_or(Series::default)
    }

    /// The first call of the name's listeners (or one racing with it).
    #[cold]
    #[inline(never)]
    fn first_call(&self, c: &CallEvent) {
        self.series().call(c);
    }
}

/// An [`Entry`] in a set ordered and looked up by its name.
#[derive(Debug, Clone)]
struct ByName(Arc<Entry>);

impl std::borrow::Borrow<str> for ByName {
    fn borrow(&self) -> &str {
        &self.0.name
    }
}

impl PartialEq for ByName {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for ByName {}

impl PartialOrd for ByName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.name.cmp(&other.0.name)
    }
}

/// fusebox's metric families, registered in a [`Registry`]; see the [module
/// docs](self).
///
/// Cheap to clone; clones share the families and the tracked breakers.
///
/// # Memory
///
/// A breaker's series appear at its first event: its counters and duration
/// histogram (about 400 bytes) are allocated when its listener first counts
/// a call, a refusal or a transition, not when the breaker is registered.
/// Before that, a scrape writes its `fusebox_calls_total`,
/// `fusebox_call_duration_seconds` and automatic `fusebox_transitions_total`
/// series at 0 from nothing, so the exposition is the same either way, and
/// an idle breaker costs the metrics its name's entry, which is also the
/// breaker's listener, and its place in the metrics' set of names (about
/// 170 bytes; 10,000 idle breakers in a
/// [`Fusebox`](crate::registry::Fusebox), about 1.6 MiB).
///
/// ```
/// use fusebox::metrics::{encode_text, Metrics};
/// use prometheus_client::registry::Registry;
///
/// let mut registry = Registry::default();
/// let metrics = Metrics::new(&mut registry);
/// let db = metrics.build("db", fusebox::CircuitBreaker::builder())?;
/// // No event yet: written at 0.
/// assert!(encode_text(&registry).contains(r#"fusebox_calls_total{name="db",outcome="success"} 0"#));
/// db.call(|| Ok::<_, std::io::Error>(()))?; // the first event makes the series
/// assert!(encode_text(&registry).contains(r#"fusebox_calls_total{name="db",outcome="success"} 1"#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Examples
///
/// With a registry of breakers, every breaker is instrumented as it is built:
///
/// ```
/// use fusebox::metrics::Metrics;
/// use fusebox::registry::Fusebox;
/// use prometheus_client::registry::Registry;
///
/// let mut registry = Registry::default();
/// let metrics = Metrics::new(&mut registry);
/// let fusebox = Fusebox::builder().observer(metrics).build()?;
/// fusebox.breaker("db").force_open();
///
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry)?;
/// assert!(text.contains(r#"fusebox_circuit_state{name="db",state="forced_open"} 1"#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Metrics {
    shared: Arc<Shared>,
    /// The calls this handle's listeners have timed.
    timing: Timing,
}

struct Shared {
    /// Whether this set of families is exported: see [`Registration`].
    registration: Registration,
    /// The names listeners count or breakers are tracked under, one entry
    /// each (entries are never removed while a listener counts the name:
    /// counters must not go back).
    entries: Mutex<std::collections::BTreeSet<ByName>>,
    /// Every other policy, read through [`Inspect`], by kind and name.
    inspected: Mutex<BTreeMap<PolicyKey, Arc<dyn Inspect>>>,
    policies: Mutex<BTreeMap<String, TrackedPolicy>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // An entry holds the breaker tracked under its name, and that
        // breaker's listener holds the entry: let go of the breakers, so
        // that neither keeps the other alive.
        for e in lock(&self.entries).iter() {
            let tracked = lock(&e.0.tracked).take();
            drop(tracked);
        }
    }
}

/// What a set of families' collectors do when the registry is encoded.
///
/// [`Metrics::new`] registers its collectors first (a registry cannot
/// unregister them) and then probes the registry: an encoding in which each
/// collector writes only a marker, its index among the sets already in the
/// registry, or [`PROBE_NEW`] for the set being registered. The registry's
/// prefix is written before every marker alike, so a set found under the
/// same prefix as the new one would export the same names: the new set then
/// stays silent and the new `Metrics` shares the one found.
#[derive(Debug, Default)]
struct Registration(std::sync::atomic::AtomicU8);

impl Registration {
    const PENDING: u8 = 0;
    const EXPORTED: u8 = 1;
    const SILENT: u8 = 2;

    fn get(&self) -> u8 {
        // Acquire/Release: set once, under `&mut Registry`, before any scrape
        // can run; the ordering only documents that nothing else rides on it.
        self.0.load(Ordering::Acquire)
    }

    fn set(&self, v: u8) {
        self.0.store(v, Ordering::Release);
    }
}

/// The marker of the set being registered, in [`Metrics::new`]'s probe.
const PROBE_NEW: &str = "fusebox_registration_probe_new";
/// The marker of set `i` already in the registry: this and `i`.
const PROBE_FOUND: &str = "fusebox_registration_probe_";

std::thread_local! {
    /// While [`Metrics::new`] probes a registry on this thread: the sets of
    /// families found in it, in the order their markers were written.
    static PROBE: std::cell::RefCell<Option<Vec<Arc<Shared>>>> = const { std::cell::RefCell::new(None) };
}

/// A policy's kind and name.
type PolicyKey = (&'static str, String);

/// One exported family: help, type, and a value per policy name.
type FigureFamily<'a> = (&'static str, FigureKind, Vec<(&'a str, u64)>);

struct TrackedPolicy {
    stats: PolicyStats,
    budget: Option<RetryBudget>,
}

#[derive(Debug)]
struct Tracked {
    breaker: CircuitBreaker,
    /// `None` for no tags (most breakers): a pointer, not a map.
    tags: Option<Box<Tags>>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<Box<str>> = lock(&self.shared.entries)
            .iter()
            .filter(|e| lock(&e.0.tracked).is_some())
            .map(|e| e.0.name.clone())
            .collect();
        f.debug_struct("Metrics")
            .field("tracked", &names)
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// Registers fusebox's families in `registry`.
    ///
    /// A registry holds one set of fusebox's families: a second
    /// `Metrics::new` on a registry that already has them (under the same
    /// prefix) registers nothing new and returns a handle to the first set,
    /// like a clone of the first `Metrics`, so the exposition never names a
    /// family twice. Breakers tracked through either handle are exported
    /// together, one series per name. (`Metrics::new` encodes the registry
    /// once to find out, with fusebox's collectors writing only a marker.)
    ///
    /// # Examples
    ///
    /// ```
    /// use prometheus_client::registry::Registry;
    /// let mut registry = Registry::default();
    /// let metrics = fusebox::metrics::Metrics::new(&mut registry);
    /// metrics.build("db", fusebox::CircuitBreaker::builder())?;
    ///
    /// // A second Metrics on the same registry shares the first one's families.
    /// let again = fusebox::metrics::Metrics::new(&mut registry);
    /// again.build("cache", fusebox::CircuitBreaker::builder())?;
    /// let text = fusebox::metrics::encode_text(&registry);
    /// assert_eq!(text.matches("# TYPE fusebox_calls counter").count(), 1);
    /// assert!(text.contains(r#"fusebox_circuit_state{name="db",state="closed"} 1"#));
    /// assert!(text.contains(r#"fusebox_circuit_state{name="cache",state="closed"} 1"#));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn new(registry: &mut Registry) -> Metrics {
        let shared = Arc::new(Shared {
            registration: Registration::default(),
            entries: Mutex::new(std::collections::BTreeSet::new()),
            inspected: Mutex::new(BTreeMap::new()),
            policies: Mutex::new(BTreeMap::new()),
        });
        // One collector encodes everything, so that the snapshots (which
        // may move an open breaker to half-open) are taken before the
        // counters are written and one scrape is self-consistent.
        registry.register_collector(Box::new(SnapshotCollector(shared.clone())));
        registry.register_collector(Box::new(PolicyCollector(shared.clone())));
        match Self::registered_before(registry) {
            Some(first) => {
                shared.registration.set(Registration::SILENT);
                Metrics {
                    shared: first,
                    timing: DEFAULT_TIMING,
                }
            }
            None => {
                shared.registration.set(Registration::EXPORTED);
                Metrics {
                    shared,
                    timing: DEFAULT_TIMING,
                }
            }
        }
    }

    /// The set of families already in `registry` under the prefix the
    /// pending one was registered with, if any (see [`Registration`]).
    fn registered_before(registry: &Registry) -> Option<Arc<Shared>> {
        PROBE.with(|p| *p.borrow_mut() = Some(Vec::new()));
        let text = encode_text(registry);
        let found = PROBE.with(|p| p.borrow_mut().take()).unwrap_or_default();
        let types = || {
            text.lines()
                .filter_map(|l| l.strip_prefix("# TYPE "))
                .filter_map(|l| l.split(' ').next())
        };
        let prefix = types().find_map(|name| name.strip_suffix(PROBE_NEW))?;
        types()
            .filter_map(|name| name.strip_prefix(prefix)?.strip_prefix(PROBE_FOUND))
            .filter_map(|i| found.get(i.parse::<usize>().ok()?))
            .next()
            .cloned()
    }

    /// This handle, its listeners timing `timing` of their breakers' calls
    /// for the duration histogram (every call is counted either way; see
    /// [Sampled durations](self#sampled-durations)). [`Timing::Every`]
    /// times every call; [`Timing::OneIn(n)`](Timing::OneIn) one admitted
    /// call in `n`. The default is [`DEFAULT_TIMING`]. Applies to the
    /// listeners (and breakers) made afterwards through this handle; clones
    /// share the families whatever their timing.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::{CircuitBreaker, Timing};
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry).with_timing(Timing::OneIn(4));
    /// let db = metrics.build("db", CircuitBreaker::builder())?;
    /// for _ in 0..10 {
    ///     db.call(|| Ok::<_, std::io::Error>(()))?;
    /// }
    /// let text = fusebox::metrics::encode_text(&registry);
    /// assert!(text.contains(r#"fusebox_calls_total{name="db",outcome="success"} 10"#));
    /// // The 1st, 5th and 9th calls were timed.
    /// assert!(text.contains(r#"fusebox_call_duration_seconds_count{name="db"} 3"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_timing(mut self, timing: Timing) -> Metrics {
        self.timing = timing;
        self
    }

    /// The calls this handle's listeners have timed (see
    /// [`with_timing`](Metrics::with_timing)).
    ///
    /// # Examples
    ///
    /// ```
    /// use prometheus_client::registry::Registry;
    /// let metrics = fusebox::metrics::Metrics::new(&mut Registry::default());
    /// assert_eq!(metrics.with_timing(fusebox::Timing::Every).timing(), fusebox::Timing::Every);
    /// ```
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// A listener that counts the calls, durations and transitions of the
    /// breaker `name`, and asks for this handle's [`timing`](Metrics::timing)
    /// of them. Its counters are allocated at its first event (see
    /// [Memory](Metrics#memory)); no call after that allocates.
    ///
    /// Use with [`Metrics::track`] (for the gauges), or use
    /// [`Metrics::build`], which does both.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::CircuitBreaker;
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// let db = CircuitBreaker::builder().name("db").listener(metrics.listener("db")).build()?;
    /// metrics.track("db", &Default::default(), &db);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn listener(&self, name: &str) -> MetricsListener {
        MetricsListener {
            entry: self.counted(name),
            timing: self.timing,
        }
    }

    /// The entry of `name`, counted by a listener from now on.
    fn counted(&self, name: &str) -> Arc<Entry> {
        self.entry(name, |e| {
            // Relaxed: under the entries' lock (see `Entry::counted`).
            e.counted.store(true, Ordering::Relaxed);
        })
    }

    /// `builder` with a listener counting `name`'s calls: the name's entry
    /// itself when it times the calls as this handle does (no allocation),
    /// a [`MetricsListener`] otherwise.
    fn instrumented(&self, name: &str, builder: Builder) -> Builder {
        let entry = self.counted(name);
        if entry.timing == self.timing {
            builder.listener_arc(entry)
        } else {
            builder.listener(MetricsListener {
                entry,
                timing: self.timing,
            })
        }
    }

    /// The entry of `name`, made if there was none, after `f` ran on it
    /// under the entries' lock.
    fn entry(&self, name: &str, f: impl FnOnce(&Entry)) -> Arc<Entry> {
        let mut entries = lock(&self.shared.entries);
        let entry = match entries.get(name) {
            Some(e) => Arc::clone(&e.0),
            None => {
                let e = Arc::new(Entry {
                    name: name.into(),
                    series: LazyBox::new(),
                    counted: std::sync::atomic::AtomicBool::new(false),
                    tracked: Mutex::new(None),
                    timing: self.timing,
                });
                entries.insert(ByName(Arc::clone(&e)));
                e
            }
        };
        f(&entry);
        entry
    }

    /// Exports the gauges of `breaker` (state, rates, info with `tags`) under
    /// `name`, read at each scrape. Tracking a name again replaces the
    /// breaker it reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::CircuitBreaker;
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// let mut tags = fusebox::registry::Tags::new();
    /// tags.insert("service".into(), "orders".into());
    /// metrics.track("db", &tags, &CircuitBreaker::builder().build()?);
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"fusebox_breaker_info{name="db",service="orders"} 1"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn track(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        let tracked = Tracked {
            breaker: breaker.clone(),
            tags: (!tags.is_empty()).then(|| Box::new(tags.clone())),
        };
        self.entry(name, |e| *lock(&e.tracked) = Some(tracked));
    }

    /// Stops exporting the gauges of `name` (its counters stay, as counters
    /// must). Returns whether it was tracked.
    ///
    /// # Examples
    ///
    /// ```
    /// use prometheus_client::registry::Registry;
    /// let metrics = fusebox::metrics::Metrics::new(&mut Registry::default());
    /// assert!(!metrics.untrack("db"));
    /// ```
    pub fn untrack(&self, name: &str) -> bool {
        let mut entries = lock(&self.shared.entries);
        let Some(e) = entries.get(name) else {
            return false;
        };
        let was = lock(&e.0.tracked).take().is_some();
        // Relaxed: under the entries' lock (see `Entry::counted`).
        if !e.0.counted.load(Ordering::Relaxed) {
            entries.remove(name);
        }
        was
    }

    /// Exports the in-use, limit, waiting and rejection series of `bulkhead`
    /// under `name`, read from its snapshot at each scrape.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::Bulkhead;
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// let reviews = Bulkhead::new(4);
    /// metrics.track_bulkhead("reviews", &reviews);
    /// let _slot = reviews.try_acquire()?;
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"fusebox_bulkhead_in_use{name="reviews"} 1"#));
    /// assert!(text.contains(r#"fusebox_bulkhead_limit{name="reviews"} 4"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn track_bulkhead(&self, name: &str, bulkhead: &Bulkhead) {
        self.track_policy(name, Arc::new(bulkhead.clone()));
    }

    /// Exports the figures of any policy under `name`, read at each scrape:
    /// each [`Figure`](crate::policy::Figure) `f` of a policy of kind `k` as
    /// `fusebox_{k}_{f}` (a counter with `_total`), and the policy's mode as
    /// `fusebox_policy_mode{name, policy, mode} 1`. A second policy of the
    /// same kind and name replaces the first.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::Bulkhead;
    /// use prometheus_client::registry::Registry;
    /// use std::sync::Arc;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// let reviews = Bulkhead::new(0);
    /// metrics.track_policy("reviews", Arc::new(reviews.clone()));
    /// let _ = reviews.try_acquire();
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"fusebox_bulkhead_rejections_total{name="reviews"} 1"#));
    /// assert!(text.contains(r#"fusebox_policy_mode{name="reviews",policy="bulkhead",mode="enforce"} 1"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn track_policy(&self, name: &str, policy: Arc<dyn Inspect>) {
        lock(&self.shared.inspected).insert((policy.kind(), name.to_owned()), policy);
    }

    /// Calls of the breaker `name` counted so far, by outcome: success,
    /// failure, ignored, rejected (the `fusebox_calls_total` counters), or
    /// `None` when no listener counts that name.
    #[cfg(feature = "dashboard")]
    pub(crate) fn call_counts(&self, name: &str) -> Option<[u64; 4]> {
        let entry = Arc::clone(&lock(&self.shared.entries).get(name)?.0);
        // Relaxed: read under the entries' lock, like every write.
        if !entry.counted.load(Ordering::Relaxed) {
            return None;
        }
        // Relaxed: see `Series::count`.
        let count = |i: usize| {
            entry
                .series
                .get()
                .map_or(0, |s| s.calls[i].load(Ordering::Relaxed))
        };
        Some([count(0), count(1), count(2), count(3)])
    }

    /// Builds a breaker named `name` from `builder` with a
    /// [`MetricsListener`], and tracks it.
    ///
    /// # Errors
    ///
    /// The builder's [`ConfigError`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::CircuitBreaker;
    /// use prometheus_client::registry::Registry;
    /// let metrics = Metrics::new(&mut Registry::default());
    /// let db = metrics.build("db", CircuitBreaker::builder())?;
    /// assert_eq!(db.name(), Some("db"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn build(&self, name: &str, builder: Builder) -> Result<CircuitBreaker, ConfigError> {
        let breaker = self.instrumented(name, builder.name(name)).build()?;
        self.track(name, &Tags::new(), &breaker);
        Ok(breaker)
    }
}

impl Metrics {
    /// Exports the counters `stats` (calls, attempts, retries, timeouts,
    /// fallbacks by cause) and the refusals of `budget` under `name`, read
    /// at each scrape. Tracking a name again replaces what it reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::{Pipeline, PolicyStats};
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// let stats = PolicyStats::new();
    /// metrics.track_stats("reviews", &stats, None);
    /// let p = Pipeline::builder().fallback_value(0).stats(stats).build();
    /// let _ = p.call(|| Err::<u8, _>(std::io::Error::other("down")));
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"fusebox_fallbacks_total{name="reviews",cause="failed"} 1"#));
    /// assert!(text.contains(r#"fusebox_retry_attempts_total{name="reviews"} 1"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn track_stats(&self, name: &str, stats: &PolicyStats, budget: Option<&RetryBudget>) {
        lock(&self.shared.policies).insert(
            name.to_owned(),
            TrackedPolicy {
                stats: stats.clone(),
                budget: budget.cloned(),
            },
        );
    }

    /// The pipeline with counters exported under `name` (its own
    /// [`PolicyStats`] if it has some, new ones otherwise), and its retry
    /// budget's refusals; its bulkhead's gauges too.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use fusebox::{Bulkhead, Pipeline};
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// let p = metrics.track_pipeline("reviews", Pipeline::builder().bulkhead(Bulkhead::new(2)).build());
    /// let _ = p.call(|| Ok::<_, std::io::Error>(()));
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"fusebox_policy_calls_total{name="reviews"} 1"#));
    /// assert!(text.contains(r#"fusebox_bulkhead_limit{name="reviews"} 2"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn track_pipeline<B, P, F, C>(
        &self,
        name: &str,
        pipeline: Pipeline<B, P, F, C>,
    ) -> Pipeline<B, P, F, C>
    where
        B: Iterator<Item = Duration> + Clone,
    {
        crate::track::pipeline(self, name, pipeline)
    }

    /// Exports everything an HTTP [`Standard`](crate::http::Standard) stack
    /// counts, under its name: its counters, its budget's refusals, its
    /// breaker and bulkhead (feature `http`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::metrics::Metrics;
    /// use prometheus_client::registry::Registry;
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// metrics.track_standard(&fusebox::http::Standard::builder("inventory").build());
    ///
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry)?;
    /// assert!(text.contains(r#"fusebox_retry_budget_refused_total{name="inventory"} 0"#));
    /// assert!(text.contains(r#"fusebox_circuit_state{name="inventory",state="closed"} 1"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn track_standard(&self, stack: &crate::http::Standard) {
        crate::track::standard(self, stack);
    }
}

/// The text exposition of `registry` (what a `/metrics` route answers),
/// fusebox's families and your own.
///
/// # Examples
///
/// ```
/// use prometheus_client::registry::Registry;
/// let mut registry = Registry::default();
/// let metrics = fusebox::metrics::Metrics::new(&mut registry);
/// metrics.build("db", fusebox::CircuitBreaker::builder())?;
/// assert!(fusebox::metrics::encode_text(&registry).contains(r#"fusebox_circuit_state{name="db",state="closed"} 1"#));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
pub fn encode_text(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing to a String cannot fail; an encoder error leaves what was written.
    let _ = prometheus_client::encoding::text::encode(&mut text, registry);
    text
}

/// Encodes the counters of the tracked pipelines and stacks.
struct PolicyCollector(Arc<Shared>);

impl fmt::Debug for PolicyCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PolicyCollector")
    }
}

impl Collector for PolicyCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        // The snapshot collector answers `Metrics::new`'s probe for both.
        if self.0.registration.get() != Registration::EXPORTED
            || PROBE.with(|p| p.borrow().is_some())
        {
            return Ok(());
        }
        let rows: Vec<(String, crate::StatsSnapshot, u64)> = lock(&self.0.policies)
            .iter()
            .map(|(n, t)| {
                let refused = t.budget.as_ref().map_or(0, RetryBudget::refused);
                (n.clone(), t.stats.snapshot(), refused)
            })
            .collect();
        let counter = ConstCounter::new(0u64).metric_type();
        type Read = fn(&crate::StatsSnapshot, u64) -> u64;
        let families: [(&str, &str, Read); 5] = [
            (
                "fusebox_policy_calls",
                "Guarded calls through a pipeline or HTTP stack",
                |s, _| s.calls,
            ),
            (
                "fusebox_retry_attempts",
                "Attempts, the first of each call included",
                |s, _| s.attempts,
            ),
            (
                "fusebox_retries",
                "Attempts beyond the first of each call",
                |s, _| s.retries(),
            ),
            (
                "fusebox_retry_budget_refused",
                "Retries refused by the retry budget",
                |_, r| r,
            ),
            (
                "fusebox_timeouts",
                "Attempts or calls stopped by a timeout",
                |s, _| s.timeouts,
            ),
        ];
        for (metric, help, read) in families {
            let mut family = encoder.encode_descriptor(metric, help, None, counter)?;
            for (name, snap, refused) in &rows {
                let labels = [("name", name.as_str())];
                ConstCounter::new(read(snap, *refused)).encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "fusebox_fallbacks",
            "Fallback answers, by what stopped the call",
            None,
            counter,
        )?;
        for (name, snap, _) in &rows {
            for cause in PolicyStats::CAUSES {
                let labels = [("name", name.as_str()), ("cause", cause)];
                ConstCounter::new(snap.fallbacks_for(cause))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

impl Observer for Metrics {
    fn instrument(&self, name: &str, _tags: &Tags, builder: Builder) -> Builder {
        self.instrumented(name, builder)
    }

    fn breaker_added(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        self.track(name, tags, breaker);
    }

    fn policy_added(&self, name: &str, _tags: &Tags, policy: Arc<dyn Inspect>) {
        self.track_policy(name, policy);
    }
}

/// Counts one breaker's calls, durations and transitions; from
/// [`Metrics::listener`].
///
/// # Examples
///
/// ```
/// use fusebox::metrics::Metrics;
/// use prometheus_client::registry::Registry;
/// let listener = Metrics::new(&mut Registry::default()).listener("db");
/// assert_eq!(listener.name(), "db");
/// ```
pub struct MetricsListener {
    /// The name and (from its first event) its series, shared with the
    /// families and with other listeners of the name.
    entry: Arc<Entry>,
    /// What it asks the breaker to time.
    timing: Timing,
}

impl fmt::Debug for MetricsListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsListener")
            .field("name", &self.entry.name)
            .finish_non_exhaustive()
    }
}

impl MetricsListener {
    /// The breaker name on the series.
    ///
    /// # Examples
    ///
    /// ```
    /// use prometheus_client::registry::Registry;
    /// let m = fusebox::metrics::Metrics::new(&mut Registry::default());
    /// assert_eq!(m.listener("x").name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.entry.name
    }
}

impl Listener for MetricsListener {
    fn on_transition(&self, t: &Transition) {
        self.entry.on_transition(t);
    }

    fn on_rejected(&self, r: &Rejected) {
        self.entry.on_rejected(r);
    }

    fn on_shadowed(&self, r: &Rejected) {
        self.entry.on_shadowed(r);
    }

    fn on_call(&self, c: &CallEvent) {
        self.entry.on_call(c);
    }

    fn timing(&self) -> Timing {
        self.timing
    }
}

/// The entry is itself the listener of the breakers its `Metrics` builds
/// or instruments (when their timing is the entry's): one allocation
/// fewer per breaker, and one pointer fewer on every call.
impl Listener for Entry {
    #[inline]
    fn on_transition(&self, t: &Transition) {
        // Relaxed: see `Series::count`.
        self.series().edges[state_index(t.from)][state_index(t.to)].fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    fn on_rejected(&self, _: &Rejected) {
        self.series().count(3);
    }

    #[inline]
    fn on_shadowed(&self, _: &Rejected) {
        self.series().count(4);
    }

    #[inline]
    fn on_call(&self, c: &CallEvent) {
        match self.series.get() {
            Some(series) => series.call(c),
            // A call of its own, so that the path above saves no register.
            None => self.first_call(c),
        }
    }

    fn timing(&self) -> Timing {
        self.timing
    }
}

/// Encodes the scrape-time gauges of the tracked breakers.
struct SnapshotCollector(Arc<Shared>);

impl fmt::Debug for SnapshotCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SnapshotCollector")
    }
}

impl Collector for SnapshotCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let state = self.0.registration.get();
        if state == Registration::SILENT {
            return Ok(());
        }
        // Probed by `Metrics::new`: a marker only (no snapshot is read).
        let probe = PROBE.with(|p| {
            let mut p = p.borrow_mut();
            let found = p.as_mut()?;
            Some(if state == Registration::PENDING {
                PROBE_NEW.to_owned()
            } else {
                found.push(self.0.clone());
                format!("{PROBE_FOUND}{}", found.len() - 1)
            })
        });
        if let Some(marker) = probe {
            encoder.encode_descriptor(
                &marker,
                "fusebox registration probe",
                None,
                MetricType::Gauge,
            )?;
            return Ok(());
        }
        // Read every snapshot first, outside the encoder, and without holding
        // the lock while a snapshot may fire a transition to listeners.
        // The entries, and which are counted, under the lock; what each
        // tracks, under its own, after.
        let entries: Vec<(Arc<Entry>, bool)> = lock(&self.0.entries)
            .iter()
            // Relaxed: under the entries' lock (see `Entry::counted`).
            .map(|e| (Arc::clone(&e.0), e.0.counted.load(Ordering::Relaxed)))
            .collect();
        let tracked: Vec<(Box<str>, CircuitBreaker, Tags)> = entries
            .iter()
            .filter_map(|(e, _)| {
                let t = lock(&e.tracked);
                let t = t.as_ref()?;
                let tags = t.tags.as_deref().cloned().unwrap_or_default();
                Some((e.name.clone(), t.breaker.clone(), tags))
            })
            .collect();
        let snaps: Vec<_> = tracked.iter().map(|(_, b, _)| b.snapshot()).collect();

        let s = &*self.0;
        // The counted names, each with its series or (no event yet) none:
        // written at 0.
        let counted: Vec<&Arc<Entry>> = entries
            .iter()
            .filter_map(|(e, counted)| counted.then_some(e))
            .collect();
        let zero = Series::default();
        fn series<'a>(e: &'a Entry, zero: &'a Series) -> &'a Series {
            e.series.get().map_or(zero, |s| s)
        }
        let counter = ConstCounter::new(0u64).metric_type();
        let mut family = encoder.encode_descriptor(
            "fusebox_calls",
            "Calls through a circuit breaker, by outcome (success, failure, ignored, rejected)",
            None,
            counter,
        )?;
        for e in &counted {
            for (outcome, n) in OUTCOMES.iter().zip(&series(e, &zero).calls) {
                let labels = [("name", &*e.name), ("outcome", outcome)];
                // Relaxed: see `Series::count`.
                ConstCounter::new(n.load(Ordering::Relaxed))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "fusebox_call_duration",
            "Duration of calls admitted by a circuit breaker, from admission to verdict",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for e in &counted {
            let (sum, count, buckets) = series(e, &zero).durations.read();
            let labels = [("name", &*e.name)];
            family
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        }
        let mut family = encoder.encode_descriptor(
            "fusebox_transitions",
            "Circuit breaker state transitions",
            None,
            counter,
        )?;
        for e in &counted {
            let edges = &series(e, &zero).edges;
            for from in STATES {
                for to in STATES {
                    // Relaxed: see `Series::count`.
                    let n = edges[state_index(from)][state_index(to)].load(Ordering::Relaxed);
                    if n == 0 && !AUTOMATIC_EDGES.contains(&(from, to)) {
                        continue;
                    }
                    let labels = [
                        ("name", &*e.name),
                        ("from", from.as_str()),
                        ("to", to.as_str()),
                    ];
                    ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
                }
            }
        }

        let gauge = ConstGauge::new(0i64).metric_type();
        let mut family = encoder.encode_descriptor(
            "fusebox_circuit_state",
            "Circuit breaker state: 1 for the current state, 0 for the others",
            None,
            gauge,
        )?;
        for ((name, _, _), snap) in tracked.iter().zip(&snaps) {
            for s in STATES {
                let labels = [("name", &**name), ("state", s.as_str())];
                ConstGauge::new(i64::from(snap.state == s))
                    .encode(family.encode_family(&labels)?)?;
            }
        }

        let mut family = encoder.encode_descriptor(
            "fusebox_failure_rate",
            "Failure rate in the circuit breaker's window (0 to 1)",
            None,
            gauge,
        )?;
        for ((name, _, _), snap) in tracked.iter().zip(&snaps) {
            let labels = [("name", &**name)];
            ConstGauge::new(snap.failure_rate).encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "fusebox_slow_call_rate",
            "Slow-call rate in the circuit breaker's window (0 to 1)",
            None,
            gauge,
        )?;
        for ((name, _, _), snap) in tracked.iter().zip(&snaps) {
            let labels = [("name", &**name)];
            ConstGauge::new(snap.slow_call_rate).encode(family.encode_family(&labels)?)?;
        }

        // The thresholds of the settings in force (they follow `reconfigure`),
        // only for breakers that have the rule.
        let thresholds: Vec<Thresholds> =
            tracked.iter().map(|(_, b, _)| Thresholds::of(b)).collect();
        for (metric, help, pick) in [
            (
                "fusebox_failure_rate_threshold",
                "Failure rate at which the circuit breaker trips (0 to 1)",
                (|t: &Thresholds| t.failure_rate) as fn(&Thresholds) -> Option<f64>,
            ),
            (
                "fusebox_slow_call_rate_threshold",
                "Slow-call rate at which the circuit breaker trips (0 to 1)",
                |t| t.slow_call_rate,
            ),
        ] {
            let mut family = encoder.encode_descriptor(metric, help, None, gauge)?;
            for ((name, _, _), t) in tracked.iter().zip(&thresholds) {
                if let Some(v) = pick(t) {
                    let labels = [("name", &**name)];
                    ConstGauge::new(v).encode(family.encode_family(&labels)?)?;
                }
            }
        }

        // A gauge rather than an OpenMetrics `info` family: Prometheus' classic
        // text parser (and `promtool check metrics`) rejects type `info`.
        let mut family = encoder.encode_descriptor(
            "fusebox_breaker_info",
            "Always 1: the circuit breaker's tags as labels",
            None,
            gauge,
        )?;
        for (name, _, tags) in &tracked {
            let mut labels: Vec<(&str, &str)> = vec![("name", &**name)];
            labels.extend(
                tags.iter()
                    .filter(|(k, _)| k.as_str() != "name" && valid_label_name(k))
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            );
            ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
        }

        // Every other policy's figures, one family per kind and figure
        // (`fusebox_bulkhead_in_use`, ...), then every policy's mode.
        let inspected: Vec<(PolicyKey, Arc<dyn Inspect>)> = lock(&s.inspected)
            .iter()
            .map(|(k, p)| (k.clone(), Arc::clone(p)))
            .collect();
        let mut families: BTreeMap<String, FigureFamily<'_>> = BTreeMap::new();
        let mut modes: Vec<(&str, &str, &str)> = tracked
            .iter()
            .map(|(n, b, _)| (&**n, "breaker", b.mode().as_str()))
            .collect();
        for ((kind, name), policy) in &inspected {
            modes.push((name.as_str(), kind, policy.mode().as_str()));
            for f in policy.figures() {
                families
                    .entry(format!("fusebox_{kind}_{}", f.name))
                    .or_insert((f.help, f.kind, Vec::new()))
                    .2
                    .push((name.as_str(), f.value));
            }
        }
        for (metric, (help, kind, rows)) in &families {
            let metric_type = match kind {
                FigureKind::Gauge => gauge,
                FigureKind::Counter => counter,
            };
            let mut family = encoder.encode_descriptor(metric, help, None, metric_type)?;
            for (name, value) in rows {
                let labels = [("name", *name)];
                match kind {
                    FigureKind::Gauge => ConstGauge::new(i64::try_from(*value).unwrap_or(i64::MAX))
                        .encode(family.encode_family(&labels)?)?,
                    FigureKind::Counter => {
                        ConstCounter::new(*value).encode(family.encode_family(&labels)?)?
                    }
                }
            }
        }
        let mut family = encoder.encode_descriptor(
            "fusebox_policy_mode",
            "Always 1: the mode each policy runs in (enforce, shadow or off)",
            None,
            gauge,
        )?;
        for (name, policy, mode) in &modes {
            let labels = [("name", *name), ("policy", *policy), ("mode", *mode)];
            ConstGauge::new(1i64).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// The rates at which a breaker trips; `None` where it has no such rule (a
/// consecutive-failures breaker has no failure-rate threshold).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Thresholds {
    pub(crate) failure_rate: Option<f64>,
    pub(crate) slow_call_rate: Option<f64>,
}

impl Thresholds {
    /// The thresholds of the settings in force, `breaker.config()`.
    pub(crate) fn of(breaker: &CircuitBreaker) -> Thresholds {
        let config = breaker.config();
        Thresholds {
            failure_rate: config.failure_rate,
            slow_call_rate: config.slow_call_duration.and(config.slow_call_rate),
        }
    }
}

/// Prometheus label names: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`.
/// Tags that are not valid label names are left out of `fusebox_breaker_info`.
fn valid_label_name(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !k.starts_with("__")
}

impl crate::track::Track for Metrics {
    fn policy(&self, name: &str, policy: Arc<dyn Inspect>) {
        self.track_policy(name, policy);
    }
    fn stats(&self, name: &str, stats: &PolicyStats, budget: Option<&RetryBudget>) {
        self.track_stats(name, stats, budget);
    }
    fn breaker(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        self.track(name, tags, breaker);
    }
    fn is_tracked(&self, name: &str) -> bool {
        lock(&self.shared.entries)
            .get(name)
            .is_some_and(|e| lock(&e.0.tracked).is_some())
    }
}

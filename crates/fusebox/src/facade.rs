//! The [`metrics`](https://docs.rs/metrics) facade (feature `metrics`):
//! fusebox's series through whatever recorder the application installed
//! (`metrics-exporter-prometheus`, a StatsD or Datadog recorder, ...).
//!
//! [`MetricsFacade`] is an [`Observer`]: give it to a registry
//! ([`Fusebox::builder().observer(..)`](crate::registry::FuseboxBuilder::observer))
//! or build breakers with [`MetricsFacade::build`].
//!
//! # Naming
//!
//! The [naming scheme](crate::observe#series-names) of every fusebox
//! observer: the facade registers the Prometheus names as they are (a
//! counter's name ends in `_total`, the duration histogram's in
//! `_seconds`), with the same labels, so dashboards and alert rules written
//! for the Prometheus observer work unchanged. Names past the limit are
//! reported under `name="other"` ([label
//! cardinality](crate::observe#label-cardinality));
//! [`MetricsFacade::with_max_names`] sets the limit.
//!
//! # When the values are written
//!
//! The facade has no "read at scrape" callback, so fusebox writes:
//!
//! - the call counters, the duration histogram and the transitions from a
//!   [`FacadeListener`] on the breaker, at each event: a few atomic adds
//!   through handles made once, no lock, no allocation;
//! - the state gauge at each transition too, and when a breaker is tracked (exact except for an open
//!   breaker whose open period ended without a call: it turns half-open
//!   when read, at the next sample or call);
//! - everything read from snapshots (rates, thresholds, info, policy
//!   figures, pipeline counters) at [`MetricsFacade::sample`]: call it
//!   right before rendering (in the `/metrics` handler, before
//!   `PrometheusHandle::render`), or from a timer in push setups. Sampling
//!   reads every tracked policy once; doing it at each call would put
//!   snapshot reads and locks on the call path, and a background task would
//!   report values as old as its period.
//!
//! Handles are registered with the recorder in force where they are made
//! (a breaker's listener when it is made, a gauge at its first sample, an
//! unusual transition's counter at its first occurrence): install the
//! global recorder before building breakers.
//!
//! With `metrics-exporter-prometheus`, give the histogram fusebox's bucket
//! bounds ([`DURATION_BUCKETS`]) so it exports buckets rather than a
//! summary.
//!
//! # Examples
//!
//! ```
//! use fusebox::facade::MetricsFacade;
//! use fusebox::CircuitBreaker;
//!
//! let metrics = MetricsFacade::new();
//! let db = metrics.build("db", CircuitBreaker::builder().consecutive_failures(3))?;
//! db.call(|| Ok::<_, std::io::Error>(()))?;
//! metrics.sample(); // before each render
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::names::{self, Group, Kind, Labels, SeriesKey, Sources};
use crate::observe::{Observer, Tags};
use crate::policy::Inspect;
use crate::retry::RetryBudget;
use crate::sync::{lock, Mutex};
use crate::{
    Builder, Bulkhead, CallEvent, CircuitBreaker, ConfigError, Listener, Outcome, Pipeline,
    PolicyStats, Rejected, Transition,
};
use ::metrics::{Counter, Gauge, Histogram, Label};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Upper bounds of the call-duration histogram's buckets, in seconds (1 ms
/// to 10 s), the same as the Prometheus observer's. With
/// `metrics-exporter-prometheus`:
/// `PrometheusBuilder::new().set_buckets_for_metric(Matcher::Full("fusebox_call_duration_seconds".into()), &DURATION_BUCKETS)`.
///
/// # Examples
///
/// ```
/// assert_eq!(fusebox::facade::DURATION_BUCKETS[0], 0.001);
/// assert_eq!(fusebox::facade::DURATION_BUCKETS.last(), Some(&10.0));
/// ```
pub const DURATION_BUCKETS: [f64; 13] = names::DURATION_BOUNDS;

/// fusebox's series through the `metrics` facade; see the [module
/// docs](self) for the names and when they are written.
///
/// Cheap to clone; clones share what they track.
///
/// # Examples
///
/// With a registry, every breaker and bulkhead is instrumented as it is
/// built:
///
/// ```
/// use fusebox::facade::MetricsFacade;
/// use fusebox::registry::Fusebox;
///
/// let metrics = MetricsFacade::new();
/// let fusebox = Fusebox::builder().observer(metrics.clone()).build()?;
/// fusebox.breaker("db").force_open();
/// metrics.sample();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MetricsFacade {
    shared: Arc<Shared>,
}

struct Shared {
    sources: Sources,
    /// Handles of the sampled series, made at their first sample.
    handles: Mutex<HashMap<SeriesKey, Handle>>,
    /// The gauges written by the last sample (a gauge not written again is
    /// set to 0: a mode left, a tag removed).
    last: Mutex<BTreeSet<SeriesKey>>,
    described: Mutex<BTreeSet<String>>,
}

#[derive(Clone)]
enum Handle {
    Gauge(Gauge),
    Counter(Counter),
}

impl fmt::Debug for MetricsFacade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsFacade").finish_non_exhaustive()
    }
}

impl Default for MetricsFacade {
    fn default() -> Self {
        MetricsFacade::new()
    }
}

fn labels(pairs: &Labels) -> Vec<Label> {
    pairs
        .iter()
        .map(|(k, v)| Label::new(k.clone(), v.clone()))
        .collect()
}

impl MetricsFacade {
    /// An observer with the default limit of 1,000 distinct names.
    ///
    /// # Examples
    ///
    /// ```
    /// let metrics = fusebox::facade::MetricsFacade::new();
    /// metrics.sample();
    /// ```
    pub fn new() -> MetricsFacade {
        MetricsFacade::with_max_names(names::DEFAULT_MAX_NAMES)
    }

    /// An observer that gives at most `max` distinct names a `name` label
    /// of their own; later names are reported under `name="other"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// let metrics = MetricsFacade::with_max_names(1);
    /// assert_eq!(metrics.listener("a").name(), "a");
    /// assert_eq!(metrics.listener("b").name(), "other");
    /// ```
    pub fn with_max_names(max: usize) -> MetricsFacade {
        MetricsFacade {
            shared: Arc::new(Shared {
                sources: Sources::new(max),
                handles: Mutex::new(HashMap::new()),
                last: Mutex::new(BTreeSet::new()),
                described: Mutex::new(BTreeSet::new()),
            }),
        }
    }

    fn describe(&self, name: &str, kind: Kind, help: &'static str) {
        if !lock(&self.shared.described).insert(name.to_owned()) {
            return;
        }
        let name = name.to_owned();
        match kind {
            Kind::Gauge => ::metrics::describe_gauge!(name, help),
            Kind::Counter => ::metrics::describe_counter!(name, help),
        }
    }

    /// A listener that counts the calls, durations and transitions of the
    /// breaker `name` and keeps its state gauge. Its handles are made now
    /// (with the recorder in force), so calls allocate nothing.
    ///
    /// Use with [`MetricsFacade::track`] for the sampled gauges, or use
    /// [`MetricsFacade::build`], which does both.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// use fusebox::CircuitBreaker;
    ///
    /// let metrics = MetricsFacade::new();
    /// let db = CircuitBreaker::builder().name("db").listener(metrics.listener("db")).build()?;
    /// metrics.track("db", &Default::default(), &db);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn listener(&self, name: &str) -> FacadeListener {
        let label = self.shared.sources.names.label(name);
        let calls_name = names::exported(names::CALLS, Kind::Counter);
        self.describe(&calls_name, Kind::Counter, names::CALLS_HELP);
        let transitions = names::exported(names::TRANSITIONS, Kind::Counter);
        self.describe(&transitions, Kind::Counter, names::TRANSITIONS_HELP);
        let duration_name = format!("{}_seconds", names::CALL_DURATION);
        if lock(&self.shared.described).insert(duration_name.clone()) {
            ::metrics::describe_histogram!(duration_name.clone(), names::CALL_DURATION_HELP);
        }
        let state_name = names::CIRCUIT_STATE;
        let calls = names::OUTCOMES.map(|outcome| {
            ::metrics::counter!(calls_name.clone(), "name" => label.clone(), "outcome" => outcome)
        });
        let states = (label != names::OTHER).then(|| {
            names::STATES.map(
                |s| ::metrics::gauge!(state_name, "name" => label.clone(), "state" => s.as_str()),
            )
        });
        let listener = FacadeListener {
            duration: ::metrics::histogram!(duration_name, "name" => label.clone()),
            name: label.into(),
            calls,
            transitions,
            edges: Default::default(),
            states,
        };
        for (from, to) in names::AUTOMATIC_EDGES {
            listener.edge(from, to);
        }
        listener
    }

    /// Samples the gauges of `breaker` (state, rates, thresholds, info with
    /// `tags`) under `name`, and writes its state gauge now. Tracking a name
    /// again replaces the breaker it reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// use fusebox::CircuitBreaker;
    /// let metrics = MetricsFacade::new();
    /// metrics.track("db", &Default::default(), &CircuitBreaker::builder().build()?);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn track(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        self.shared.sources.track(name, tags, breaker);
        let state = breaker.snapshot().state;
        let label = self.shared.sources.names.label(name);
        if label != names::OTHER {
            for s in names::STATES {
                ::metrics::gauge!(names::CIRCUIT_STATE, "name" => label.clone(), "state" => s.as_str())
                    .set(f64::from(u8::from(s == state)));
            }
        }
    }

    /// Stops sampling the gauges of `name` (its counters stay). Returns
    /// whether it was tracked.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!fusebox::facade::MetricsFacade::new().untrack("db"));
    /// ```
    pub fn untrack(&self, name: &str) -> bool {
        self.shared.sources.untrack(name)
    }

    /// Samples the figures of `bulkhead` under `name` (in use, limit,
    /// waiting, rejections, shadowed).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// let metrics = MetricsFacade::new();
    /// metrics.track_bulkhead("reviews", &fusebox::Bulkhead::new(4));
    /// ```
    pub fn track_bulkhead(&self, name: &str, bulkhead: &Bulkhead) {
        self.track_policy(name, Arc::new(bulkhead.clone()));
    }

    /// Samples the figures of any policy under `name`: each figure `f` of a
    /// policy of kind `k` as `fusebox_{k}_{f}` (a counter with `_total`),
    /// and its mode as `fusebox_policy_mode{name, policy, mode}`. A second
    /// policy of the same kind and name replaces the first.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// use std::sync::Arc;
    /// let metrics = MetricsFacade::new();
    /// metrics.track_policy("reviews", Arc::new(fusebox::Bulkhead::new(4)));
    /// ```
    pub fn track_policy(&self, name: &str, policy: Arc<dyn Inspect>) {
        self.shared.sources.track_policy(name, policy);
    }

    /// Samples the counters of `stats` (calls, attempts, retries, timeouts,
    /// fallbacks by cause) and the refusals of `budget` under `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// let metrics = MetricsFacade::new();
    /// metrics.track_stats("reviews", &fusebox::PolicyStats::new(), None);
    /// ```
    pub fn track_stats(&self, name: &str, stats: &PolicyStats, budget: Option<&RetryBudget>) {
        self.shared.sources.track_stats(name, stats, budget);
    }

    /// The pipeline with its counters sampled under `name` (its own
    /// [`PolicyStats`] if it has some, new ones otherwise), its retry
    /// budget's refusals and its policies' figures.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// use fusebox::{Bulkhead, Pipeline};
    /// let metrics = MetricsFacade::new();
    /// let p = metrics.track_pipeline("reviews", Pipeline::builder().bulkhead(Bulkhead::new(2)).build());
    /// let _ = p.call(|| Ok::<_, std::io::Error>(()));
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

    /// Reports everything an HTTP [`Standard`](crate::http::Standard) stack
    /// counts, under its name: its counters, its budget's refusals, its
    /// breaker's gauges and its bulkhead's figures (feature `http`). Its
    /// breaker's calls are counted by a listener only if it was built with
    /// one (by a registry with this observer, or by hand).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// let metrics = MetricsFacade::new();
    /// metrics.track_standard(&fusebox::http::Standard::builder("inventory").build());
    /// ```
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn track_standard(&self, stack: &crate::http::Standard) {
        crate::track::standard(self, stack);
    }

    /// Builds a breaker named `name` from `builder` with a
    /// [`FacadeListener`], and tracks it.
    ///
    /// # Errors
    ///
    /// The builder's [`ConfigError`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// let db = MetricsFacade::new().build("db", fusebox::CircuitBreaker::builder())?;
    /// assert_eq!(db.name(), Some("db"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn build(&self, name: &str, builder: Builder) -> Result<CircuitBreaker, ConfigError> {
        let breaker = builder.name(name).listener(self.listener(name)).build()?;
        self.track(name, &Tags::new(), &breaker);
        Ok(breaker)
    }

    /// Reads every tracked breaker, policy and pipeline once and writes the
    /// gauges and counters that come from their snapshots. Call it right
    /// before rendering (or from a timer); see the [module docs](self).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::facade::MetricsFacade;
    /// let metrics = MetricsFacade::new();
    /// metrics.track_bulkhead("reviews", &fusebox::Bulkhead::new(4));
    /// metrics.sample();
    /// ```
    pub fn sample(&self) {
        let mut readings = self.shared.sources.read(Group::Breakers);
        readings.extend(self.shared.sources.read(Group::Policies(None)));
        readings.extend(self.shared.sources.read(Group::Stats));
        let mut written = BTreeSet::new();
        for (key, reading) in &readings {
            let handle = self.handle(key, reading.help);
            match handle {
                Handle::Gauge(g) => {
                    g.set(reading.value);
                    written.insert(key.clone());
                }
                // Whole numbers read from atomic counts.
                Handle::Counter(c) => c.absolute(reading.value as u64),
            }
        }
        let stale: Vec<SeriesKey> = {
            let mut last = lock(&self.shared.last);
            let stale = last.difference(&written).cloned().collect();
            *last = written;
            stale
        };
        for key in &stale {
            if let Some(Handle::Gauge(g)) = lock(&self.shared.handles).get(key) {
                g.set(0.0);
            }
        }
    }

    fn handle(&self, key: &SeriesKey, help: &'static str) -> Handle {
        if let Some(h) = lock(&self.shared.handles).get(key) {
            return h.clone();
        }
        let (base, kind, pairs) = key;
        let name = names::exported(base, *kind);
        self.describe(&name, *kind, help);
        let h = match kind {
            Kind::Gauge => Handle::Gauge(::metrics::gauge!(name, labels(pairs))),
            Kind::Counter => Handle::Counter(::metrics::counter!(name, labels(pairs))),
        };
        lock(&self.shared.handles).insert(key.clone(), h.clone());
        h
    }
}

impl Observer for MetricsFacade {
    fn instrument(&self, name: &str, _tags: &Tags, builder: Builder) -> Builder {
        builder.listener(self.listener(name))
    }

    fn breaker_added(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        self.track(name, tags, breaker);
    }

    fn policy_added(&self, name: &str, _tags: &Tags, policy: Arc<dyn Inspect>) {
        self.track_policy(name, policy);
    }
}

/// Counts one breaker's calls, durations and transitions and keeps its
/// state gauge; from [`MetricsFacade::listener`].
///
/// # Examples
///
/// ```
/// let listener = fusebox::facade::MetricsFacade::new().listener("db");
/// assert_eq!(listener.name(), "db");
/// ```
pub struct FacadeListener {
    name: Box<str>,
    /// In [`names::OUTCOMES`] order.
    calls: [Counter; 5],
    duration: Histogram,
    transitions: String,
    /// `[from][to]`, made on first use.
    edges: [[OnceLock<Counter>; 5]; 5],
    /// `None` under `name="other"`: the sample sums those.
    states: Option<[Gauge; 5]>,
}

impl fmt::Debug for FacadeListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FacadeListener")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl FacadeListener {
    /// The `name` label of its series (`"other"` past the limit).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::facade::MetricsFacade::new().listener("x").name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    fn edge(&self, from: crate::State, to: crate::State) -> &Counter {
        self.edges[names::state_index(from)][names::state_index(to)].get_or_init(|| {
            ::metrics::counter!(
                self.transitions.clone(),
                "name" => self.name.to_string(),
                "from" => from.as_str(),
                "to" => to.as_str()
            )
        })
    }
}

impl Listener for FacadeListener {
    fn on_transition(&self, t: &Transition) {
        self.edge(t.from, t.to).increment(1);
        if let Some(states) = &self.states {
            states[names::state_index(t.from)].set(0.0);
            states[names::state_index(t.to)].set(1.0);
        }
    }

    fn on_rejected(&self, _: &Rejected) {
        self.calls[3].increment(1);
    }

    fn on_shadowed(&self, _: &Rejected) {
        self.calls[4].increment(1);
    }

    fn on_call(&self, c: &CallEvent) {
        let i = match c.outcome {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::Ignore => 2,
        };
        self.calls[i].increment(1);
        self.duration.record(c.duration.as_secs_f64());
    }
}

impl crate::track::Track for MetricsFacade {
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
        self.shared.sources.is_tracked(name)
    }
}

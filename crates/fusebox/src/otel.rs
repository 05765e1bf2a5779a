//! OpenTelemetry metrics (feature `opentelemetry`): fusebox's series as
//! instruments of a [`Meter`] the application gives, exported by whatever
//! SDK, reader and exporter it set up (OTLP, Prometheus, ...).
//!
//! [`OtelMetrics`] is an [`Observer`]: give it to a registry
//! ([`Fusebox::builder().observer(..)`](crate::registry::FuseboxBuilder::observer))
//! or build breakers with [`OtelMetrics::build`].
//!
//! # Naming
//!
//! The [naming scheme](crate::observe#series-names) of every fusebox
//! observer: an instrument is called by the series' base name
//! (`fusebox_calls`, `fusebox_circuit_state`, `fusebox_call_duration`
//! with unit `s`, `fusebox_bulkhead_in_use`, ...) and its attributes are
//! the series' labels (`name`, `outcome`, `state`, ...). Underscores
//! rather than OpenTelemetry's usual dots, so that the Prometheus names the
//! OpenTelemetry exporters derive (a counter gets `_total`, unit `s` gets
//! `_seconds`) are exactly those of the Prometheus observer: one set of
//! dashboards and alert rules for every exporter.
//! Through `opentelemetry-prometheus`, for instance, the series, labels
//! and values are those of the Prometheus observer for the same calls, plus
//! the exporter's own `otel_scope_*` labels and `target_info`.
//!
//! # When the values are read
//!
//! Calls, durations and transitions are counted at each event through a
//! [`OtelListener`] on the breaker (instruments made once; attribute sets
//! made when the listener is). The call counters and the automatic
//! transitions exist from the start, at 0; a breaker's duration histogram
//! appears with its first call (OpenTelemetry has no empty histogram
//! point), where the Prometheus observer shows it empty from the start. Everything else (state, rates, thresholds,
//! info, policy figures, pipeline counters) is an observable instrument
//! whose callback reads the tracked policies at each collection, so it is
//! exact when collected and costs nothing between collections.
//!
//! # Label cardinality
//!
//! At most [`OtelMetrics::with_max_names`] distinct `name` attributes
//! (default 1,000); later names are reported under `name = "other"`, as
//! in the [`metrics` facade observer's rules](crate::observe#label-cardinality).
//!
//! # Examples
//!
//! ```
//! use fusebox::otel::OtelMetrics;
//! use fusebox::CircuitBreaker;
//! use opentelemetry::metrics::MeterProvider;
//! use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
//!
//! let exporter = InMemoryMetricExporter::default();
//! let provider = SdkMeterProvider::builder()
//!     .with_reader(PeriodicReader::builder(exporter.clone()).build())
//!     .build();
//! let metrics = OtelMetrics::new(&provider.meter("fusebox"));
//! let db = metrics.build("db", CircuitBreaker::builder().consecutive_failures(3))?;
//! db.call(|| Ok::<_, std::io::Error>(()))?;
//!
//! provider.force_flush()?;
//! let names: Vec<String> = exporter.get_finished_metrics()?.iter()
//!     .flat_map(|r| r.scope_metrics().flat_map(|s| s.metrics().map(|m| m.name().to_owned())))
//!     .collect();
//! assert!(names.iter().any(|n| n == "fusebox_calls"));
//! assert!(names.iter().any(|n| n == "fusebox_circuit_state"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::names::{self, Group, Kind, Labels, Sources};
use crate::observe::{Observer, Tags};
use crate::policy::Inspect;
use crate::retry::RetryBudget;
use crate::sync::{lock, Mutex};
use crate::{
    Builder, Bulkhead, CallEvent, CircuitBreaker, ConfigError, Listener, Outcome, Pipeline,
    PolicyStats, Rejected, State, Transition,
};
use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableCounter, ObservableGauge};
use opentelemetry::KeyValue;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// fusebox's series as OpenTelemetry instruments; see the [module
/// docs](self).
///
/// Cheap to clone; clones share the instruments and what they track.
///
/// # Examples
///
/// With a registry, every breaker and bulkhead is instrumented as it is
/// built:
///
/// ```
/// use fusebox::otel::OtelMetrics;
/// use fusebox::registry::Fusebox;
///
/// let metrics = OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
/// let fusebox = Fusebox::builder().observer(metrics).build()?;
/// fusebox.breaker("db").force_open();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OtelMetrics {
    shared: Arc<Shared>,
}

struct Shared {
    meter: Meter,
    sources: Arc<Sources>,
    calls: Counter<u64>,
    duration: Histogram<f64>,
    transitions: Counter<u64>,
    /// Base names of the observable instruments made so far.
    observed: Mutex<BTreeSet<String>>,
    /// The observable instruments (kept with the observer they report for).
    instruments: Mutex<Vec<Observable>>,
}

enum Observable {
    Gauge(ObservableGauge<f64>),
    Counter(ObservableCounter<u64>),
}

impl fmt::Debug for OtelMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelMetrics").finish_non_exhaustive()
    }
}

fn attributes(labels: &Labels) -> Vec<KeyValue> {
    labels
        .iter()
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect()
}

impl OtelMetrics {
    /// Instruments on `meter`, with the default limit of 1,000 distinct
    /// names.
    ///
    /// # Examples
    ///
    /// ```
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// ```
    pub fn new(meter: &Meter) -> OtelMetrics {
        OtelMetrics::with_max_names(meter, names::DEFAULT_MAX_NAMES)
    }

    /// Instruments on `meter` that give at most `max` distinct names a
    /// `name` attribute of their own; later names are reported under
    /// `name = "other"`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::otel::OtelMetrics;
    /// let metrics = OtelMetrics::with_max_names(&opentelemetry::global::meter("fusebox"), 1);
    /// assert_eq!(metrics.listener("a").name(), "a");
    /// assert_eq!(metrics.listener("b").name(), "other");
    /// ```
    pub fn with_max_names(meter: &Meter, max: usize) -> OtelMetrics {
        let calls = meter
            .u64_counter(names::CALLS)
            .with_description(names::CALLS_HELP)
            .build();
        let duration = meter
            .f64_histogram(names::CALL_DURATION)
            .with_description(names::CALL_DURATION_HELP)
            .with_unit("s")
            .with_boundaries(names::DURATION_BOUNDS.to_vec())
            .build();
        let transitions = meter
            .u64_counter(names::TRANSITIONS)
            .with_description(names::TRANSITIONS_HELP)
            .build();
        let metrics = OtelMetrics {
            shared: Arc::new(Shared {
                meter: meter.clone(),
                sources: Arc::new(Sources::new(max)),
                calls,
                duration,
                transitions,
                observed: Mutex::new(BTreeSet::new()),
                instruments: Mutex::new(Vec::new()),
            }),
        };
        for (base, help) in [
            (
                names::CIRCUIT_STATE,
                "Circuit breaker state: 1 for the current state, 0 for the others",
            ),
            (
                names::FAILURE_RATE,
                "Failure rate in the circuit breaker's window (0 to 1)",
            ),
            (
                names::SLOW_CALL_RATE,
                "Slow-call rate in the circuit breaker's window (0 to 1)",
            ),
            (
                names::FAILURE_RATE_THRESHOLD,
                "Failure rate at which the circuit breaker trips (0 to 1)",
            ),
            (
                names::SLOW_CALL_RATE_THRESHOLD,
                "Slow-call rate at which the circuit breaker trips (0 to 1)",
            ),
            (
                names::BREAKER_INFO,
                "Always 1: the circuit breaker's tags as labels",
            ),
        ] {
            metrics.observe(base, Kind::Gauge, help, &[Group::Breakers]);
        }
        metrics.observe(
            names::POLICY_MODE,
            Kind::Gauge,
            "Always 1: the mode each policy runs in (enforce, shadow or off)",
            &[Group::Breakers, Group::Policies(None)],
        );
        for (base, help) in [
            (
                "fusebox_policy_calls",
                "Guarded calls through a pipeline or HTTP stack",
            ),
            (
                "fusebox_retry_attempts",
                "Attempts, the first of each call included",
            ),
            ("fusebox_retries", "Attempts beyond the first of each call"),
            (
                "fusebox_retry_budget_refused",
                "Retries refused by the retry budget",
            ),
            ("fusebox_timeouts", "Attempts or calls stopped by a timeout"),
            (
                "fusebox_fallbacks",
                "Fallback answers, by what stopped the call",
            ),
        ] {
            metrics.observe(base, Kind::Counter, help, &[Group::Stats]);
        }
        metrics
    }

    /// Makes the observable instrument `base` (once), whose callback reports
    /// the series of that name in `groups`.
    fn observe(&self, base: &str, kind: Kind, help: &'static str, groups: &[Group]) {
        if !lock(&self.shared.observed).insert(base.to_owned()) {
            return;
        }
        let sources = Arc::clone(&self.shared.sources);
        let groups = groups.to_vec();
        let wanted = base.to_owned();
        let read = move || {
            groups
                .iter()
                .flat_map(|g| sources.read(*g))
                .filter(|((b, _, _), _)| *b == wanted)
                .map(|((_, _, labels), r)| (attributes(&labels), r.value))
                .collect::<Vec<_>>()
        };
        let meter = &self.shared.meter;
        let instrument = match kind {
            Kind::Gauge => Observable::Gauge(
                meter
                    .f64_observable_gauge(base.to_owned())
                    .with_description(help)
                    .with_callback(move |o| {
                        for (attrs, v) in read() {
                            o.observe(v, &attrs);
                        }
                    })
                    .build(),
            ),
            Kind::Counter => Observable::Counter(
                meter
                    .u64_observable_counter(base.to_owned())
                    .with_description(help)
                    .with_callback(move |o| {
                        for (attrs, v) in read() {
                            // Whole numbers read from atomic counts.
                            o.observe(v as u64, &attrs);
                        }
                    })
                    .build(),
            ),
        };
        lock(&self.shared.instruments).push(instrument);
    }

    /// A listener that counts the calls, durations and transitions of the
    /// breaker `name`. Its attribute sets are made now.
    ///
    /// Use with [`OtelMetrics::track`] (for the observable gauges), or use
    /// [`OtelMetrics::build`], which does both.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::otel::OtelMetrics;
    /// use fusebox::CircuitBreaker;
    ///
    /// let metrics = OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// let db = CircuitBreaker::builder().name("db").listener(metrics.listener("db")).build()?;
    /// metrics.track("db", &Default::default(), &db);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn listener(&self, name: &str) -> OtelListener {
        let label = self.shared.sources.names.label(name);
        let s = &self.shared;
        let listener = OtelListener {
            outcomes: names::OUTCOMES.map(|outcome| {
                [
                    KeyValue::new("name", label.clone()),
                    KeyValue::new("outcome", outcome),
                ]
            }),
            calls: s.calls.clone(),
            duration: s.duration.clone(),
            transitions: s.transitions.clone(),
            name_attr: [KeyValue::new("name", label.clone())],
            name: label.into(),
        };
        // Every outcome and the automatic edges exist from the start, at 0
        // (so that the first failure or trip shows in a rate).
        for attrs in &listener.outcomes {
            listener.calls.add(0, attrs);
        }
        for (from, to) in names::AUTOMATIC_EDGES {
            listener.transitions.add(0, &listener.edge(from, to));
        }
        listener
    }

    /// Reports the gauges of `breaker` (state, rates, thresholds, info with
    /// `tags`) under `name`, read at each collection. Tracking a name again
    /// replaces the breaker it reads.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::otel::OtelMetrics;
    /// use fusebox::CircuitBreaker;
    /// let metrics = OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// metrics.track("db", &Default::default(), &CircuitBreaker::builder().build()?);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn track(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        self.shared.sources.track(name, tags, breaker);
    }

    /// Stops reporting the gauges of `name` (its counters stay). Returns
    /// whether it was tracked.
    ///
    /// # Examples
    ///
    /// ```
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// assert!(!metrics.untrack("db"));
    /// ```
    pub fn untrack(&self, name: &str) -> bool {
        self.shared.sources.untrack(name)
    }

    /// Reports the figures of `bulkhead` under `name` (in use, limit,
    /// waiting, rejections, shadowed), read at each collection.
    ///
    /// # Examples
    ///
    /// ```
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// metrics.track_bulkhead("reviews", &fusebox::Bulkhead::new(4));
    /// ```
    pub fn track_bulkhead(&self, name: &str, bulkhead: &Bulkhead) {
        self.track_policy(name, Arc::new(bulkhead.clone()));
    }

    /// Reports the figures of any policy under `name`, read at each
    /// collection: each figure `f` of a policy of kind `k` as the instrument
    /// `fusebox_{k}_{f}` (an observable counter or gauge, as the figure
    /// is), and its mode as `fusebox_policy_mode{name, policy, mode}`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// metrics.track_policy("reviews", Arc::new(fusebox::Bulkhead::new(4)));
    /// ```
    pub fn track_policy(&self, name: &str, policy: Arc<dyn Inspect>) {
        let kind = policy.kind();
        for (base, k, help) in Sources::figure_names(&*policy) {
            self.observe(&base, k, help, &[Group::Policies(Some(kind))]);
        }
        self.shared.sources.track_policy(name, policy);
    }

    /// Reports the counters of `stats` (calls, attempts, retries, timeouts,
    /// fallbacks by cause) and the refusals of `budget` under `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// metrics.track_stats("reviews", &fusebox::PolicyStats::new(), None);
    /// ```
    pub fn track_stats(&self, name: &str, stats: &PolicyStats, budget: Option<&RetryBudget>) {
        self.shared.sources.track_stats(name, stats, budget);
    }

    /// The pipeline with its counters reported under `name` (its own
    /// [`PolicyStats`] if it has some, new ones otherwise), its retry
    /// budget's refusals and its policies' figures.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, Pipeline};
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
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
    /// use fusebox::otel::OtelMetrics;
    /// let metrics = OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// metrics.track_standard(&fusebox::http::Standard::builder("inventory").build());
    /// ```
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn track_standard(&self, stack: &crate::http::Standard) {
        crate::track::standard(self, stack);
    }

    /// Builds a breaker named `name` from `builder` with an
    /// [`OtelListener`], and tracks it.
    ///
    /// # Errors
    ///
    /// The builder's [`ConfigError`].
    ///
    /// # Examples
    ///
    /// ```
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// let db = metrics.build("db", fusebox::CircuitBreaker::builder())?;
    /// assert_eq!(db.name(), Some("db"));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn build(&self, name: &str, builder: Builder) -> Result<CircuitBreaker, ConfigError> {
        let breaker = builder.name(name).listener(self.listener(name)).build()?;
        self.track(name, &Tags::new(), &breaker);
        Ok(breaker)
    }
}

impl Observer for OtelMetrics {
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

/// Counts one breaker's calls, durations and transitions; from
/// [`OtelMetrics::listener`].
///
/// # Examples
///
/// ```
/// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
/// assert_eq!(metrics.listener("db").name(), "db");
/// ```
pub struct OtelListener {
    name: Box<str>,
    /// `name` and `outcome`, in [`names::OUTCOMES`] order.
    outcomes: [[KeyValue; 2]; 5],
    name_attr: [KeyValue; 1],
    calls: Counter<u64>,
    duration: Histogram<f64>,
    transitions: Counter<u64>,
}

impl fmt::Debug for OtelListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelListener")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl OtelListener {
    /// The `name` attribute of its series (`"other"` past the limit).
    ///
    /// # Examples
    ///
    /// ```
    /// let metrics = fusebox::otel::OtelMetrics::new(&opentelemetry::global::meter("fusebox"));
    /// assert_eq!(metrics.listener("x").name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    fn edge(&self, from: State, to: State) -> [KeyValue; 3] {
        [
            self.name_attr[0].clone(),
            KeyValue::new("from", from.as_str()),
            KeyValue::new("to", to.as_str()),
        ]
    }
}

impl Listener for OtelListener {
    fn on_transition(&self, t: &Transition) {
        self.transitions.add(1, &self.edge(t.from, t.to));
    }

    fn on_rejected(&self, _: &Rejected) {
        self.calls.add(1, &self.outcomes[3]);
    }

    fn on_shadowed(&self, _: &Rejected) {
        self.calls.add(1, &self.outcomes[4]);
    }

    fn on_call(&self, c: &CallEvent) {
        let i = match c.outcome {
            Outcome::Success => 0,
            Outcome::Failure => 1,
            Outcome::Ignore => 2,
        };
        self.calls.add(1, &self.outcomes[i]);
        self.duration
            .record(c.duration.as_secs_f64(), &self.name_attr);
    }
}

impl crate::track::Track for OtelMetrics {
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

//! The one naming scheme of fusebox's series, shared by the `metrics`
//! facade observer (`crate::facade`) and the OpenTelemetry observer
//! (`crate::otel`); the Prometheus observer (`crate::metrics`) writes the
//! same names (a test compares the three). Also what both read at a sample
//! or a collection: the tracked breakers, policies and pipeline counters,
//! with the limit on distinct `name` labels.
//!
//! Base names have no `_total` and no unit suffix: that is what an
//! OpenTelemetry instrument is called, and what the Prometheus exporters
//! add to (a counter gets `_total`, the call-duration histogram
//! `_seconds`).

use crate::observe::Tags;
use crate::policy::{FigureKind, Inspect};
use crate::retry::RetryBudget;
use crate::sync::{lock, Mutex};
use crate::{CircuitBreaker, PolicyStats, State};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub(crate) const CIRCUIT_STATE: &str = "fusebox_circuit_state";
pub(crate) const CALLS: &str = "fusebox_calls";
pub(crate) const CALL_DURATION: &str = "fusebox_call_duration";
pub(crate) const TRANSITIONS: &str = "fusebox_transitions";
pub(crate) const FAILURE_RATE: &str = "fusebox_failure_rate";
pub(crate) const SLOW_CALL_RATE: &str = "fusebox_slow_call_rate";
pub(crate) const BREAKER_INFO: &str = "fusebox_breaker_info";
pub(crate) const FAILURE_RATE_THRESHOLD: &str = "fusebox_failure_rate_threshold";
pub(crate) const SLOW_CALL_RATE_THRESHOLD: &str = "fusebox_slow_call_rate_threshold";
pub(crate) const POLICY_MODE: &str = "fusebox_policy_mode";

pub(crate) const CALLS_HELP: &str =
    "Calls through a circuit breaker, by outcome (success, failure, ignored, rejected)";
pub(crate) const CALL_DURATION_HELP: &str =
    "Duration of calls admitted by a circuit breaker, from admission to verdict";
pub(crate) const TRANSITIONS_HELP: &str = "Circuit breaker state transitions";

/// Upper bounds of the call-duration buckets in seconds, as
/// `crate::metrics::DURATION_BUCKETS` (1 ms to 10 s).
pub(crate) const DURATION_BOUNDS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The label value that names past the limit are reported under.
pub(crate) const OTHER: &str = "other";

/// The default limit on distinct `name` labels.
pub(crate) const DEFAULT_MAX_NAMES: usize = 1_000;

/// The breaker outcomes of `fusebox_calls`, in the listeners' order.
pub(crate) const OUTCOMES: [&str; 5] = ["success", "failure", "ignored", "rejected", "shadowed"];

pub(crate) const STATES: [State; 5] = [
    State::Closed,
    State::Open,
    State::HalfOpen,
    State::ForcedOpen,
    State::Disabled,
];

#[cfg(feature = "metrics")]
pub(crate) fn state_index(s: State) -> usize {
    STATES.iter().position(|x| *x == s).unwrap_or(0)
}

/// The edges whose transition series exist from the start, at 0.
pub(crate) const AUTOMATIC_EDGES: [(State, State); 4] = [
    (State::Closed, State::Open),
    (State::Open, State::HalfOpen),
    (State::HalfOpen, State::Closed),
    (State::HalfOpen, State::Open),
];

/// Gauge or counter (a counter's Prometheus name ends in `_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    Gauge,
    Counter,
}

/// The Prometheus name of a series: the base name, plus `_total` for a
/// counter.
#[cfg(feature = "metrics")]
pub(crate) fn exported(base: &str, kind: Kind) -> String {
    match kind {
        Kind::Gauge => base.to_owned(),
        Kind::Counter => format!("{base}_total"),
    }
}

/// The base name of the figure `figure` of a policy of kind `kind`.
pub(crate) fn figure_base(kind: &str, figure: &str) -> String {
    format!("fusebox_{kind}_{figure}")
}

/// Labels of one series, in exposition order.
pub(crate) type Labels = Vec<(String, String)>;

/// One series' identity: base name, kind and labels.
pub(crate) type SeriesKey = (String, Kind, Labels);

/// Which sources a read covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// Tracked breakers: state, rates, thresholds, info, mode.
    Breakers,
    /// Policies read through [`Inspect`] (of one kind, if given): figures, mode.
    Policies(Option<&'static str>),
    /// Pipeline and HTTP stack counters.
    Stats,
}

/// At most `max` distinct names keep their own `name` label; the rest are
/// reported under [`OTHER`].
#[derive(Debug)]
pub(crate) struct NameLimit {
    max: usize,
    seen: Mutex<BTreeSet<String>>,
}

impl NameLimit {
    pub(crate) fn new(max: usize) -> NameLimit {
        NameLimit {
            max,
            seen: Mutex::new(BTreeSet::new()),
        }
    }

    /// The `name` label for `name`: itself while there is room (or once
    /// it has one), [`OTHER`] past the limit.
    pub(crate) fn label(&self, name: &str) -> String {
        let mut seen = lock(&self.seen);
        if seen.contains(name) {
            return name.to_owned();
        }
        if seen.len() < self.max {
            seen.insert(name.to_owned());
            return name.to_owned();
        }
        OTHER.to_owned()
    }
}

struct TrackedBreaker {
    breaker: CircuitBreaker,
    tags: Tags,
    label: String,
}

struct TrackedPolicy {
    policy: Arc<dyn Inspect>,
    label: String,
}

struct TrackedStats {
    stats: PolicyStats,
    budget: Option<RetryBudget>,
    label: String,
}

/// One value of a series, as read now (summed over the names reported
/// under [`OTHER`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    pub(crate) help: &'static str,
    pub(crate) value: f64,
}

/// What an observer tracks, and how it reads it into series.
pub(crate) struct Sources {
    pub(crate) names: NameLimit,
    breakers: Mutex<BTreeMap<String, TrackedBreaker>>,
    policies: Mutex<BTreeMap<(&'static str, String), TrackedPolicy>>,
    stats: Mutex<BTreeMap<String, TrackedStats>>,
}

impl Sources {
    pub(crate) fn new(max_names: usize) -> Sources {
        Sources {
            names: NameLimit::new(max_names),
            breakers: Mutex::new(BTreeMap::new()),
            policies: Mutex::new(BTreeMap::new()),
            stats: Mutex::new(BTreeMap::new()),
        }
    }

    pub(crate) fn track(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker) {
        let label = self.names.label(name);
        lock(&self.breakers).insert(
            name.to_owned(),
            TrackedBreaker {
                breaker: breaker.clone(),
                tags: tags.clone(),
                label,
            },
        );
    }

    pub(crate) fn untrack(&self, name: &str) -> bool {
        lock(&self.breakers).remove(name).is_some()
    }

    pub(crate) fn is_tracked(&self, name: &str) -> bool {
        lock(&self.breakers).contains_key(name)
    }

    pub(crate) fn track_policy(&self, name: &str, policy: Arc<dyn Inspect>) {
        let label = self.names.label(name);
        lock(&self.policies).insert(
            (policy.kind(), name.to_owned()),
            TrackedPolicy { policy, label },
        );
    }

    pub(crate) fn track_stats(
        &self,
        name: &str,
        stats: &PolicyStats,
        budget: Option<&RetryBudget>,
    ) {
        let label = self.names.label(name);
        lock(&self.stats).insert(
            name.to_owned(),
            TrackedStats {
                stats: stats.clone(),
                budget: budget.cloned(),
                label,
            },
        );
    }

    /// Every series of `group` now, values summed per series (so names
    /// past the limit add up under [`OTHER`]). Rates, thresholds and info
    /// are not summable: they are left out for [`OTHER`].
    pub(crate) fn read(&self, group: Group) -> BTreeMap<SeriesKey, Reading> {
        let mut out: BTreeMap<SeriesKey, Reading> = BTreeMap::new();
        let mut add = |base: &str, kind: Kind, help: &'static str, labels: Labels, value: f64| {
            out.entry((base.to_owned(), kind, labels))
                .or_insert(Reading { help, value: 0.0 })
                .value += value;
        };
        let l = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        match group {
            Group::Breakers => {
                // Snapshots outside the lock: reading one may fire a
                // transition to listeners.
                let tracked: Vec<(String, CircuitBreaker, Tags)> = lock(&self.breakers)
                    .values()
                    .map(|t| (t.label.clone(), t.breaker.clone(), t.tags.clone()))
                    .collect();
                for (name, breaker, tags) in &tracked {
                    let snap = breaker.snapshot();
                    for s in STATES {
                        add(
                            CIRCUIT_STATE,
                            Kind::Gauge,
                            "Circuit breaker state: 1 for the current state, 0 for the others",
                            vec![l("name", name), l("state", s.as_str())],
                            f64::from(u8::from(snap.state == s)),
                        );
                    }
                    add(
                        POLICY_MODE,
                        Kind::Gauge,
                        "Always 1: the mode each policy runs in (enforce, shadow or off)",
                        vec![
                            l("name", name),
                            l("policy", "breaker"),
                            l("mode", breaker.mode().as_str()),
                        ],
                        1.0,
                    );
                    if name == OTHER {
                        continue;
                    }
                    add(
                        FAILURE_RATE,
                        Kind::Gauge,
                        "Failure rate in the circuit breaker's window (0 to 1)",
                        vec![l("name", name)],
                        snap.failure_rate,
                    );
                    add(
                        SLOW_CALL_RATE,
                        Kind::Gauge,
                        "Slow-call rate in the circuit breaker's window (0 to 1)",
                        vec![l("name", name)],
                        snap.slow_call_rate,
                    );
                    let config = breaker.config();
                    if let Some(v) = config.failure_rate {
                        add(
                            FAILURE_RATE_THRESHOLD,
                            Kind::Gauge,
                            "Failure rate at which the circuit breaker trips (0 to 1)",
                            vec![l("name", name)],
                            v,
                        );
                    }
                    if let Some(v) = config.slow_call_duration.and(config.slow_call_rate) {
                        add(
                            SLOW_CALL_RATE_THRESHOLD,
                            Kind::Gauge,
                            "Slow-call rate at which the circuit breaker trips (0 to 1)",
                            vec![l("name", name)],
                            v,
                        );
                    }
                    let mut labels = vec![l("name", name)];
                    labels.extend(
                        tags.iter()
                            .filter(|(k, _)| k.as_str() != "name" && valid_label_name(k))
                            .map(|(k, v)| l(k, v)),
                    );
                    add(
                        BREAKER_INFO,
                        Kind::Gauge,
                        "Always 1: the circuit breaker's tags as labels",
                        labels,
                        1.0,
                    );
                }
            }
            Group::Policies(only) => {
                let tracked: Vec<(String, Arc<dyn Inspect>)> = lock(&self.policies)
                    .values()
                    .filter(|t| only.is_none_or(|k| k == t.policy.kind()))
                    .map(|t| (t.label.clone(), Arc::clone(&t.policy)))
                    .collect();
                for (name, policy) in &tracked {
                    let kind = policy.kind();
                    if only.is_none() {
                        add(
                            POLICY_MODE,
                            Kind::Gauge,
                            "Always 1: the mode each policy runs in (enforce, shadow or off)",
                            vec![
                                l("name", name),
                                l("policy", kind),
                                l("mode", policy.mode().as_str()),
                            ],
                            1.0,
                        );
                    }
                    for f in policy.figures() {
                        let k = match f.kind {
                            FigureKind::Gauge => Kind::Gauge,
                            FigureKind::Counter => Kind::Counter,
                        };
                        add(
                            &figure_base(kind, f.name),
                            k,
                            f.help,
                            vec![l("name", name)],
                            f.value as f64,
                        );
                    }
                }
            }
            Group::Stats => {
                let rows: Vec<(String, crate::StatsSnapshot, u64)> = lock(&self.stats)
                    .values()
                    .map(|t| {
                        let refused = t.budget.as_ref().map_or(0, RetryBudget::refused);
                        (t.label.clone(), t.stats.snapshot(), refused)
                    })
                    .collect();
                for (name, s, refused) in &rows {
                    let c = Kind::Counter;
                    let n = || vec![l("name", name)];
                    add(
                        "fusebox_policy_calls",
                        c,
                        "Guarded calls through a pipeline or HTTP stack",
                        n(),
                        s.calls as f64,
                    );
                    add(
                        "fusebox_retry_attempts",
                        c,
                        "Attempts, the first of each call included",
                        n(),
                        s.attempts as f64,
                    );
                    add(
                        "fusebox_retries",
                        c,
                        "Attempts beyond the first of each call",
                        n(),
                        s.retries() as f64,
                    );
                    add(
                        "fusebox_retry_budget_refused",
                        c,
                        "Retries refused by the retry budget",
                        n(),
                        *refused as f64,
                    );
                    add(
                        "fusebox_timeouts",
                        c,
                        "Attempts or calls stopped by a timeout",
                        n(),
                        s.timeouts as f64,
                    );
                    for cause in PolicyStats::CAUSES {
                        add(
                            "fusebox_fallbacks",
                            c,
                            "Fallback answers, by what stopped the call",
                            vec![l("name", name), l("cause", cause)],
                            s.fallbacks_for(cause) as f64,
                        );
                    }
                }
            }
        }
        out
    }

    /// The figures (base name, kind, help) of `policy`.
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn figure_names(policy: &dyn Inspect) -> Vec<(String, Kind, &'static str)> {
        policy
            .figures()
            .into_iter()
            .map(|f| {
                let k = match f.kind {
                    FigureKind::Gauge => Kind::Gauge,
                    FigureKind::Counter => Kind::Counter,
                };
                (figure_base(policy.kind(), f.name), k, f.help)
            })
            .collect()
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

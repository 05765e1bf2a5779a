//! How observers (metrics, tracing, alerts) attach to what a registry
//! builds: the [`Observer`] hook and the [`Tags`] it is told. Lives below
//! the registry and the observers, so neither depends on the other.
//!
//! # Series names
//!
//! One naming scheme for every observer: the Prometheus one
//! (`fusebox::metrics`, feature `prometheus`), the `metrics` facade
//! (`fusebox::facade`, feature `metrics`) and OpenTelemetry
//! (`fusebox::otel`, feature `opentelemetry`). The first column is what
//! Prometheus stores, whichever observer and exporter the series came
//! through: the Prometheus and facade observers write it as it is; an
//! OpenTelemetry instrument is called by the base name (without `_total`,
//! and without `_seconds`, which its unit `s` gives back), and
//! OpenTelemetry's Prometheus exporters derive the first column from it.
//! Labels (OpenTelemetry attributes) are the same everywhere.
//!
//! | series (Prometheus) | OpenTelemetry instrument | type | labels | value |
//! |---|---|---|---|---|
//! | `fusebox_calls_total` | `fusebox_calls` | counter | `name`, `outcome` | breaker calls by outcome: `success`, `failure`, `ignored`, `rejected`, `shadowed` |
//! | `fusebox_call_duration_seconds` | `fusebox_call_duration`, unit `s` | histogram | `name` | admission to verdict; buckets 1 ms to 10 s |
//! | `fusebox_transitions_total` | `fusebox_transitions` | counter | `name`, `from`, `to` | state changes (the four automatic edges exist from the start, at 0) |
//! | `fusebox_circuit_state` | the same | gauge | `name`, `state` | 1 for the current state, 0 for the four others |
//! | `fusebox_failure_rate` | the same | gauge | `name` | failure rate in the window, 0 to 1 |
//! | `fusebox_slow_call_rate` | the same | gauge | `name` | slow-call rate in the window, 0 to 1 |
//! | `fusebox_failure_rate_threshold` | the same | gauge | `name` | the failure rate the breaker trips at (failure-rate breakers only) |
//! | `fusebox_slow_call_rate_threshold` | the same | gauge | `name` | the slow-call rate it trips at (breakers with a slow-call rule only) |
//! | `fusebox_breaker_info` | the same | gauge | `name` + one label per tag | always 1: joins tags (e.g. `service`) onto the other series |
//! | `fusebox_{kind}_{figure}`, `_total` added for a counter figure | `fusebox_{kind}_{figure}` | the figure's | `name` | every [`Figure`](crate::policy::Figure) of every other policy: `fusebox_bulkhead_in_use`, `_limit`, `_waiting`, `fusebox_bulkhead_rejections_total`, `fusebox_bulkhead_shadowed_total`, `fusebox_rate_limiter_refused_total`, ... |
//! | `fusebox_policy_mode` | the same | gauge | `name`, `policy`, `mode` | 1 for the mode each policy runs in (`enforce`, `shadow`, `off`) |
//! | `fusebox_policy_calls_total`, `fusebox_retry_attempts_total`, `fusebox_retries_total`, `fusebox_retry_budget_refused_total`, `fusebox_timeouts_total` | the same without `_total` | counter | `name` | what a pipeline or HTTP stack counts ([`PolicyStats`](crate::PolicyStats)) |
//! | `fusebox_fallbacks_total` | `fusebox_fallbacks` | counter | `name`, `cause` | fallback answers by cause: `rejected`, `bulkhead_full`, `timed_out`, `failed` |
//!
//! # Label cardinality
//!
//! The `metrics` facade and OpenTelemetry observers give at most so many
//! distinct names (default 1,000, set when the observer is made) a `name`
//! label of their own: the first names seen keep theirs, and every later
//! one is reported under `name="other"`. Counters and the histogram of
//! those names add up there; of the gauges, the state gauge, the mode and
//! the policy figures add up (`fusebox_circuit_state{name="other",state="open"}`
//! is how many of them are open); rates, thresholds and info are left out
//! for them.

use crate::policy::Inspect;
use crate::{Builder, Bulkhead, CircuitBreaker};
use std::collections::BTreeMap;
use std::sync::Arc;

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

/// Sees every breaker and bulkhead a registry
/// ([`Fusebox`](crate::registry::Fusebox)) builds, once per name: breakers
/// are changed in place afterwards, so an observer attached at build time
/// keeps seeing the breaker every holder uses.
///
/// [`Observer::instrument`] runs before the breaker is built (add listeners
/// to the builder there); [`Observer::breaker_added`] after it is installed.
/// Observers must not call back into the registry from these methods.
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

    /// Called once the bulkhead `name` is built and installed (before
    /// [`Observer::policy_added`] is told of it).
    fn bulkhead_added(&self, name: &str, tags: &Tags, bulkhead: &Bulkhead) {
        let _ = (name, tags, bulkhead);
    }

    /// Called once any policy but a breaker (a bulkhead, a rate limiter) is
    /// built and installed under `name`, with the policy to read through
    /// [`Inspect`]: its kind, mode and figures. Keep the `Arc` to read it
    /// later; it is the policy callers use.
    fn policy_added(&self, name: &str, tags: &Tags, policy: Arc<dyn Inspect>) {
        let _ = (name, tags, policy);
    }
}

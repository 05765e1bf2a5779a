//! Breaker events as [`tracing`] events (feature `tracing`).
//!
//! | event | level | fields |
//! |---|---|---|
//! | transition to open or forced open | `WARN` | `breaker`, `from`, `to`, `reason`, and the cause: `failure_rate`, `slow_call_rate` or `consecutive_failures` |
//! | transition to closed | `INFO` | `breaker`, `from`, `to`, `reason` (`successes` after probes) |
//! | other transitions (half-open, disabled) | `INFO` | `breaker`, `from`, `to`, `reason` |
//! | rejected call | `DEBUG` | `breaker`, `state`, `retry_after_ms` |
//!
//! Events use the target `fusebox`. Without the feature this module does not
//! exist and no breaker carries a tracing listener, so it costs nothing; with
//! it, a breaker without a [`TracingListener`] pays nothing either.
//!
//! # Examples
//!
//! Every breaker of a registry:
//!
//! ```
//! use fusebox::registry::Fusebox;
//! use fusebox::trace::Tracing;
//!
//! let fusebox = Fusebox::builder().observer(Tracing).build()?;
//! fusebox.breaker("db").force_open(); // WARN fusebox: circuit breaker opened breaker="db" ...
//! # Ok::<(), fusebox::registry::InvalidConfig>(())
//! ```

use crate::observe::{Observer, Tags};
use crate::{Builder, Listener, Reason, Rejected, State, Transition};

/// A [`Listener`] that emits `tracing` events for one breaker.
///
/// # Examples
///
/// ```
/// use fusebox::trace::TracingListener;
/// use fusebox::CircuitBreaker;
///
/// let breaker = CircuitBreaker::builder()
///     .name("payments")
///     .listener(TracingListener::new("payments"))
///     .build()?;
/// # let _ = breaker;
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TracingListener {
    name: Box<str>,
}

impl TracingListener {
    /// Events will carry `breaker = name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let l = fusebox::trace::TracingListener::new("db");
    /// assert_eq!(l.name(), "db");
    /// ```
    pub fn new(name: impl Into<String>) -> TracingListener {
        TracingListener {
            name: name.into().into_boxed_str(),
        }
    }

    /// The breaker name the events carry.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::trace::TracingListener::new("x").name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Listener for TracingListener {
    fn on_transition(&self, t: &Transition) {
        let breaker = &*self.name;
        let from = t.from.as_str();
        let to = t.to.as_str();
        let reason = t.reason.as_str();
        let opening = matches!(t.to, State::Open | State::ForcedOpen);
        match t.reason {
            Reason::FailureRate { rate } if opening => tracing::warn!(
                target: "fusebox", breaker, from, to, reason, failure_rate = rate,
                "circuit breaker opened"
            ),
            Reason::SlowCallRate { rate } if opening => tracing::warn!(
                target: "fusebox", breaker, from, to, reason, slow_call_rate = rate,
                "circuit breaker opened"
            ),
            Reason::ConsecutiveFailures { count } if opening => tracing::warn!(
                target: "fusebox", breaker, from, to, reason, consecutive_failures = count,
                "circuit breaker opened"
            ),
            _ if opening => tracing::warn!(
                target: "fusebox", breaker, from, to, reason,
                "circuit breaker opened"
            ),
            Reason::ProbesSucceeded { successes } if t.to == State::Closed => tracing::info!(
                target: "fusebox", breaker, from, to, reason, successes,
                "circuit breaker closed"
            ),
            _ if t.to == State::Closed => tracing::info!(
                target: "fusebox", breaker, from, to, reason,
                "circuit breaker closed"
            ),
            _ => tracing::info!(
                target: "fusebox", breaker, from, to, reason,
                "circuit breaker changed state"
            ),
        }
    }

    fn on_rejected(&self, r: &Rejected) {
        let retry_after_ms = r
            .retry_after()
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        tracing::debug!(
            target: "fusebox",
            breaker = &*self.name,
            state = r.state().as_str(),
            retry_after_ms,
            "call rejected"
        );
    }

    fn on_shadowed(&self, r: &Rejected) {
        tracing::debug!(
            target: "fusebox",
            breaker = &*self.name,
            state = r.state().as_str(),
            "call would have been rejected (shadow mode) and runs"
        );
    }
}

/// Registry [`Observer`] that gives every breaker a [`TracingListener`].
///
/// # Examples
///
/// ```
/// use fusebox::registry::Fusebox;
/// let fusebox = Fusebox::builder().observer(fusebox::trace::Tracing).build()?;
/// # let _ = fusebox;
/// # Ok::<(), fusebox::registry::InvalidConfig>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Tracing;

impl Observer for Tracing {
    fn instrument(&self, name: &str, _tags: &Tags, builder: Builder) -> Builder {
        builder.listener(TracingListener::new(name))
    }
}

/// The span of one guarded call: `fusebox.call` with `dependency = name`;
/// [`record_call`] fills in `outcome` and `stopped_by` when it ends. The HTTP
/// standard stack opens one per request.
///
/// # Examples
///
/// ```
/// let span = fusebox::trace::call_span("inventory");
/// fusebox::trace::record_call::<()>(&span, &Ok(()));
/// ```
pub fn call_span(name: &str) -> tracing::Span {
    tracing::info_span!(
        target: "fusebox",
        "fusebox.call",
        dependency = name,
        outcome = tracing::field::Empty,
        stopped_by = tracing::field::Empty,
        retry_after_ms = tracing::field::Empty,
    )
}

/// Records how a call ended on its [`call_span`]: `outcome` is `success` or
/// the cause's label (`rejected`, `bulkhead_full`, `timed_out`, `failed`),
/// and `stopped_by` the policy that decided (`breaker`, `bulkhead`,
/// `timeout`, `call`).
///
/// # Examples
///
/// ```
/// use fusebox::{Bulkhead, PolicyError};
/// let span = fusebox::trace::call_span("reviews");
/// let full = Bulkhead::new(0).try_acquire().unwrap_err();
/// fusebox::trace::record_call(&span, &Err(full.cause()));
/// ```
pub fn record_call<E>(span: &tracing::Span, result: &Result<(), crate::Cause<'_, E>>) {
    match result {
        Ok(()) => {
            span.record("outcome", "success");
        }
        Err(cause) => {
            span.record("outcome", cause.label());
            span.record("stopped_by", cause.stopped_by());
            if let Some(d) = cause.retry_after() {
                span.record("retry_after_ms", d.as_millis() as u64);
            }
        }
    }
}

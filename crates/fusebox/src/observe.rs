//! How observers (metrics, tracing, alerts) attach to what a registry
//! builds: the [`Observer`] hook and the [`Tags`] it is told. Lives below
//! the registry and the observers, so neither depends on the other.

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

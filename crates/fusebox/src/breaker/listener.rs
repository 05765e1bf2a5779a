//! Who hears a breaker's events: the `Listener` trait and its adapters.

use super::types::{CallEvent, Rejected, Transition};

/// Receives a breaker's events.
///
/// Every method has a no-op default, so implement only what you need. Methods
/// are called on the thread that caused the event, outside any lock of the
/// breaker, so a listener may call back into the breaker. Two events raised
/// at once on two threads may reach the listener in either order; use
/// [`Transition::generation`] to order transitions. Keep listeners cheap: they
/// run on the caller's path. A listener must not panic: the panic reaches the
/// caller, and if the caller is already unwinding the process aborts.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, Listener, ManualClock, Rejected};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
///
/// #[derive(Default)]
/// struct CountRejections(AtomicU64);
///
/// impl Listener for CountRejections {
///     fn on_rejected(&self, _: &Rejected) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let counter = Arc::new(CountRejections::default());
/// let breaker = CircuitBreaker::builder()
///     .clock(ManualClock::new())
///     .listener(Arc::clone(&counter))
///     .build()?;
/// breaker.force_open();
/// assert!(breaker.call(|| Ok::<_, ()>(1)).is_err());
/// assert_eq!(counter.0.load(Ordering::Relaxed), 1);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
pub trait Listener: Send + Sync + 'static {
    /// The breaker changed state.
    fn on_transition(&self, transition: &Transition) {
        let _ = transition;
    }
    /// A call was rejected without running.
    fn on_rejected(&self, rejected: &Rejected) {
        let _ = rejected;
    }
    /// A breaker in [`Mode::Shadow`](crate::Mode::Shadow) would have
    /// rejected a call, and let it run.
    fn on_shadowed(&self, rejected: &Rejected) {
        let _ = rejected;
    }
    /// A call admitted by the breaker finished with a verdict.
    fn on_call(&self, call: &CallEvent) {
        let _ = call;
    }
}

/// A shared listener is a listener: keep an `Arc` to read what it gathered.
impl<L: Listener + ?Sized> Listener for std::sync::Arc<L> {
    fn on_transition(&self, transition: &Transition) {
        (**self).on_transition(transition)
    }
    fn on_rejected(&self, rejected: &Rejected) {
        (**self).on_rejected(rejected)
    }
    fn on_shadowed(&self, rejected: &Rejected) {
        (**self).on_shadowed(rejected)
    }
    fn on_call(&self, call: &CallEvent) {
        (**self).on_call(call)
    }
}

/// Adapts a closure to [`Listener::on_transition`].
pub(crate) struct OnTransition<F>(pub(crate) F);

impl<F: Fn(&Transition) + Send + Sync + 'static> Listener for OnTransition<F> {
    fn on_transition(&self, transition: &Transition) {
        (self.0)(transition)
    }
}

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

    /// Which of the calls heard by [`on_call`](Listener::on_call) this
    /// listener needs the duration of; asked once, when the breaker is
    /// built. The default, [`Timing::Every`], times every call.
    ///
    /// A breaker times every call when any of its listeners (or a slow-call
    /// rule) asks for every duration; otherwise, when all of its listeners
    /// sample, it times one call in `n`, the smallest `n` asked for (see
    /// [`Timing::OneIn`]), and the others reach `on_call` with
    /// [`CallEvent::timed`] false and no duration. Every call is heard
    /// either way.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CallEvent, CircuitBreaker, Listener, Timing};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    ///
    /// #[derive(Default)]
    /// struct Sampled { calls: AtomicU64, timed: AtomicU64 }
    ///
    /// impl Listener for Sampled {
    ///     fn on_call(&self, call: &CallEvent) {
    ///         self.calls.fetch_add(1, Ordering::Relaxed);
    ///         if call.timed {
    ///             self.timed.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    ///     fn timing(&self) -> Timing {
    ///         Timing::OneIn(4)
    ///     }
    /// }
    ///
    /// let heard = Arc::new(Sampled::default());
    /// let breaker = CircuitBreaker::builder().listener(Arc::clone(&heard)).build()?;
    /// for _ in 0..8 {
    ///     breaker.call(|| Ok::<_, std::io::Error>(()))?;
    /// }
    /// assert_eq!(heard.calls.load(Ordering::Relaxed), 8);
    /// assert_eq!(heard.timed.load(Ordering::Relaxed), 2); // the 1st and the 5th
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn timing(&self) -> Timing {
        Timing::Every
    }
}

/// Which calls a [`Listener`] needs timed ([`Listener::timing`]).
///
/// # Examples
///
/// ```
/// use fusebox::Timing;
/// assert_eq!(Timing::default(), Timing::Every);
/// assert_eq!(Timing::OneIn(1).one_in(), 1); // 0 and 1 both mean every call
/// assert_eq!(Timing::OneIn(0).one_in(), 1);
/// assert_eq!(Timing::OneIn(16).one_in(), 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Timing {
    /// Every call is timed (the default).
    #[default]
    Every,
    /// One call in `n` is timed: the breaker counts the calls it is asked
    /// to admit, over all its threads (the rejected ones too), and times
    /// those counted 1st, `n + 1`th, `2n + 1`th, ..., so that a breaker that
    /// stays closed times exactly one admitted call in `n`. Calls admitted
    /// outside the closed state (half-open probes, calls a breaker in shadow
    /// mode would have rejected) are all timed; in off mode, one in `n` of
    /// the calls it lets through. `0` and `1` mean every call, and so does
    /// another listener or a slow-call rule that needs every duration.
    OneIn(u32),
}

impl Timing {
    /// The `n` of one call in `n` (1 for every call).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Timing::Every.one_in(), 1);
    /// ```
    pub fn one_in(self) -> u32 {
        match self {
            Timing::Every => 1,
            Timing::OneIn(n) => n.max(1),
        }
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
    fn timing(&self) -> Timing {
        (**self).timing()
    }
}

/// Adapts a closure to [`Listener::on_transition`].
pub(crate) struct OnTransition<F>(pub(crate) F);

impl<F: Fn(&Transition) + Send + Sync + 'static> Listener for OnTransition<F> {
    fn on_transition(&self, transition: &Transition) {
        (self.0)(transition)
    }
}

//! What a breaker tells the outside world: transitions, rejections, outcomes.

use super::permit::{Outcome, Rejected};
use super::state::State;
use std::fmt;
use std::time::Duration;

/// A change of state.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, ManualClock, Reason, State};
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&seen);
/// let breaker = CircuitBreaker::builder()
///     .consecutive_failures(1)
///     .clock(ManualClock::new())
///     .on_transition(move |t| log.lock().unwrap().push((t.from, t.to, t.reason)))
///     .build()?;
/// let _ = breaker.call(|| Err::<(), _>("boom"));
/// assert_eq!(
///     seen.lock().unwrap()[0],
///     (State::Closed, State::Open, Reason::ConsecutiveFailures { count: 1 })
/// );
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    /// The state left.
    pub from: State,
    /// The state entered.
    pub to: State,
    /// The breaker's clock reading when it happened.
    pub at: Duration,
    /// Why it happened.
    pub reason: Reason,
    /// The generation the transition started. Listeners run outside the
    /// breaker's lock, so two transitions close together may reach a listener
    /// in either order; order them by this.
    pub generation: u32,
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} -> {} at {:?} ({})",
            self.from, self.to, self.at, self.reason
        )
    }
}

/// Why a transition happened.
///
/// # Examples
///
/// ```
/// use fusebox::Reason;
/// assert_eq!(
///     Reason::FailureRate { rate: 0.5 }.to_string(),
///     "failure rate 50.0% reached the threshold"
/// );
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reason {
    /// `count` failures in a row (Closed -> Open).
    ConsecutiveFailures {
        /// Failures in a row when it tripped.
        count: u32,
    },
    /// The failure rate in the window reached the threshold (Closed -> Open).
    FailureRate {
        /// The rate, in [0, 1].
        rate: f64,
    },
    /// The slow-call rate in the window reached the threshold (Closed -> Open).
    SlowCallRate {
        /// The rate, in [0, 1].
        rate: f64,
    },
    /// The open period is over and a probe may be tried (Open -> HalfOpen).
    CooldownElapsed,
    /// A probe failed (HalfOpen -> Open).
    ProbeFailed,
    /// Enough probes succeeded (HalfOpen -> Closed).
    ProbesSucceeded {
        /// Successful probes in this half-open period.
        successes: u32,
    },
    /// `force_open`, `disable` or `reset` was called.
    Manual,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::ConsecutiveFailures { count } => write!(f, "{count} failures in a row"),
            Reason::FailureRate { rate } => {
                write!(f, "failure rate {:.1}% reached the threshold", rate * 100.0)
            }
            Reason::SlowCallRate { rate } => {
                write!(
                    f,
                    "slow-call rate {:.1}% reached the threshold",
                    rate * 100.0
                )
            }
            Reason::CooldownElapsed => f.write_str("open period elapsed"),
            Reason::ProbeFailed => f.write_str("a probe failed"),
            Reason::ProbesSucceeded { successes } => write!(f, "{successes} probes succeeded"),
            Reason::Manual => f.write_str("manual control"),
        }
    }
}

/// One finished call, as seen by a [`Listener`].
///
/// # Examples
///
/// ```
/// use fusebox::{CallEvent, Outcome};
/// use std::time::Duration;
/// let e = CallEvent { outcome: Outcome::Success, slow: false, duration: Duration::from_millis(5) };
/// assert_eq!(e.outcome, Outcome::Success);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallEvent {
    /// How the call was classified.
    pub outcome: Outcome,
    /// Whether it took at least the slow-call threshold.
    pub slow: bool,
    /// From admission to verdict, on the breaker's clock.
    pub duration: Duration,
}

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

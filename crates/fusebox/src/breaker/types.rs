//! The breaker's vocabulary: states, outcomes, rejections, transitions and
//! call events. Imports none of its siblings, so every other breaker file can
//! import it.

use std::fmt;
use std::time::Duration;

/// Where a breaker is.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, State};
/// let breaker = CircuitBreaker::builder().build()?;
/// assert_eq!(breaker.state(), State::Closed);
/// assert_eq!(State::HalfOpen.to_string(), "half_open");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls go through; outcomes are counted.
    Closed,
    /// Calls are rejected until the open period is over.
    Open,
    /// A limited number of probe calls go through; their outcomes decide.
    HalfOpen,
    /// Rejects everything until [`reset`](crate::CircuitBreaker::reset).
    ForcedOpen,
    /// Admits everything, counts nothing, never trips.
    Disabled,
}

impl State {
    /// Every state, in a fixed order (for metrics).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::State::ALL.len(), 5);
    /// ```
    pub const ALL: [State; 5] = [
        State::Closed,
        State::Open,
        State::HalfOpen,
        State::ForcedOpen,
        State::Disabled,
    ];

    /// The state's name in lower snake case, as in metrics and reports.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::State::ForcedOpen.as_str(), "forced_open");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
            State::ForcedOpen => "forced_open",
            State::Disabled => "disabled",
        }
    }

    pub(crate) const fn tag(self) -> u64 {
        match self {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
            State::ForcedOpen => 3,
            State::Disabled => 4,
        }
    }

    pub(crate) fn from_tag(tag: u64) -> State {
        match tag {
            0 => State::Closed,
            1 => State::Open,
            2 => State::HalfOpen,
            3 => State::ForcedOpen,
            _ => State::Disabled,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a finished call counts.
///
/// # Examples
///
/// A 404 is not the dependency's fault:
///
/// ```
/// use fusebox::{CircuitBreaker, Outcome};
///
/// let breaker = CircuitBreaker::builder().consecutive_failures(1).build()?;
/// let classify = |r: &Result<u16, u16>| match r {
///     Ok(_) => Outcome::Success,
///     Err(404) => Outcome::Ignore,
///     Err(_) => Outcome::Failure,
/// };
/// let _ = breaker.call_with(classify, || Err::<u16, u16>(404));
/// assert_eq!(breaker.state(), fusebox::State::Closed);
/// let _ = breaker.call_with(classify, || Err::<u16, u16>(503));
/// assert_eq!(breaker.state(), fusebox::State::Open);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The dependency did its job.
    Success,
    /// The dependency failed; counts toward tripping.
    Failure,
    /// Counts for nothing (e.g. the caller's own mistake).
    Ignore,
}

impl Outcome {
    /// The outcome's name in lower case (`"success"`, `"failure"`, `"ignore"`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Outcome::Ignore.as_str(), "ignore");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Ignore => "ignore",
        }
    }

    /// `Ok` is a success, `Err` a failure: what [`call`](crate::CircuitBreaker::call) uses.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Outcome;
    /// assert_eq!(Outcome::of(&Ok::<_, ()>(1)), Outcome::Success);
    /// assert_eq!(Outcome::of(&Err::<(), _>("no")), Outcome::Failure);
    /// ```
    pub fn of<T, E>(result: &Result<T, E>) -> Outcome {
        match result {
            Ok(_) => Outcome::Success,
            Err(_) => Outcome::Failure,
        }
    }
}

/// The breaker turned a call away without running it.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, ManualClock, State};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let breaker = CircuitBreaker::builder()
///     .consecutive_failures(1)
///     .open_for(Duration::from_secs(2))
///     .clock(clock.clone())
///     .build()?;
/// let _ = breaker.call(|| Err::<(), _>("down"));
/// clock.advance(Duration::from_millis(500));
/// let rejected = breaker.try_acquire().unwrap_err();
/// assert_eq!(rejected.state(), State::Open);
/// assert_eq!(rejected.retry_after(), Some(Duration::from_millis(1500)));
/// assert_eq!(rejected.to_string(), "circuit breaker is open");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Rejected {
    state: State,
    /// Nanoseconds until a probe may be tried (meaningless when forced
    /// open). Kept as an integer so the open path does no `Duration`
    /// arithmetic.
    retry_after: u64,
}

impl Rejected {
    #[inline]
    pub(crate) fn new(state: State, retry_after: Option<u64>) -> Self {
        Rejected {
            state,
            retry_after: retry_after.unwrap_or(0),
        }
    }

    /// The state that rejected the call: `Open`, `HalfOpen` (every probe slot
    /// taken) or `ForcedOpen`.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// breaker.force_open();
    /// assert_eq!(breaker.try_acquire().unwrap_err().state(), fusebox::State::ForcedOpen);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn state(&self) -> State {
        self.state
    }

    /// How long until a probe may be admitted: the rest of the open period;
    /// zero in half-open (a slot frees when a running probe finishes), or,
    /// for a breaker shared by a fleet (feature `fleet`) whose probe lease
    /// another replica holds, the fleet's `sync_every` (by then this replica
    /// has asked for the lease again or heard the probe's verdict); `None`
    /// when forced open (only [`reset`](crate::CircuitBreaker::reset) ends that).
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// breaker.force_open();
    /// assert_eq!(breaker.try_acquire().unwrap_err().retry_after(), None);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        // Only forced open has no end by itself; an open period as long as
        // `u64::MAX` nanoseconds is still an open period.
        (self.state != State::ForcedOpen).then(|| Duration::from_nanos(self.retry_after))
    }
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("state", &self.state)
            .field("retry_after", &self.retry_after())
            .finish()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.state {
            State::HalfOpen => "circuit breaker is half-open and every probe slot is taken",
            State::ForcedOpen => "circuit breaker is forced open",
            _ => "circuit breaker is open",
        })
    }
}

impl std::error::Error for Rejected {}

impl Rejected {
    pub(crate) const LABEL: &'static str = "rejected";
}

/// `retry_after` is [`Rejected::retry_after`].
///
/// # Examples
///
/// ```
/// use fusebox::policy::Refusal;
/// let breaker = fusebox::CircuitBreaker::builder().build()?;
/// breaker.force_open();
/// let rejected = breaker.try_acquire().unwrap_err();
/// assert_eq!((rejected.policy(), rejected.label()), ("breaker", "rejected"));
/// assert_eq!(Refusal::retry_after(&rejected), None);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl crate::policy::Refusal for Rejected {
    fn policy(&self) -> &'static str {
        "breaker"
    }

    fn label(&self) -> &'static str {
        Self::LABEL
    }

    fn retry_after(&self) -> Option<Duration> {
        Rejected::retry_after(self)
    }

    fn summary(&self) -> &'static str {
        "rejected by breaker"
    }
}

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
    pub generation: u64,
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
    /// `count` failures fell within `within` (Closed -> Open; see
    /// [`Builder::failures_within`](crate::Builder::failures_within)).
    FailuresWithin {
        /// The failures it takes to trip.
        count: u32,
        /// The period they fell within.
        within: Duration,
    },
    /// The open period is over and a probe may be tried (Open -> HalfOpen).
    CooldownElapsed,
    /// A probe failed (HalfOpen -> Open).
    ProbeFailed,
    /// Probes went unanswered for longer than
    /// [`half_open_max_wait`](crate::Builder::half_open_max_wait) and count as
    /// failed (HalfOpen -> Open).
    ProbeTimedOut,
    /// Enough probes succeeded (HalfOpen -> Closed).
    ProbesSucceeded {
        /// Successful probes in this half-open period.
        successes: u32,
    },
    /// `force_open`, `disable` or `reset` was called.
    Manual,
    /// Another replica's breaker decided it: a trip, a close or a control
    /// message that travelled through the fleet (feature `fleet`).
    Remote,
    /// A [`BreakerSet`](crate::BreakerSet)'s outlier detection ejected this
    /// key for `ejected_for` (Closed -> Open): it failed more than its peers
    /// (see [`Outliers`](crate::set::Outliers)).
    Outlier {
        /// How long the key is ejected (the open period).
        ejected_for: Duration,
    },
}

impl Reason {
    /// The reason's name in lower snake case, as in traces and metrics:
    /// `consecutive_failures`, `failure_rate`, `slow_call_rate`,
    /// `failures_within`, `cooldown_elapsed`, `probe_failed`, `probe_timed_out`,
    /// `probes_succeeded`, `manual`, `remote`, `outlier`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Reason;
    /// assert_eq!(Reason::Remote.as_str(), "remote");
    /// assert_eq!(Reason::FailureRate { rate: 0.5 }.as_str(), "failure_rate");
    /// assert_eq!(Reason::ProbeTimedOut.as_str(), "probe_timed_out");
    /// ```
    pub const fn as_str(&self) -> &'static str {
        match self {
            Reason::ConsecutiveFailures { .. } => "consecutive_failures",
            Reason::FailureRate { .. } => "failure_rate",
            Reason::SlowCallRate { .. } => "slow_call_rate",
            Reason::FailuresWithin { .. } => "failures_within",
            Reason::CooldownElapsed => "cooldown_elapsed",
            Reason::ProbeFailed => "probe_failed",
            Reason::ProbeTimedOut => "probe_timed_out",
            Reason::ProbesSucceeded { .. } => "probes_succeeded",
            Reason::Manual => "manual",
            Reason::Remote => "remote",
            Reason::Outlier { .. } => "outlier",
        }
    }
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
            Reason::FailuresWithin { count, within } => write!(
                f,
                "{count} failures within {}",
                crate::duration::format(*within)
            ),
            Reason::CooldownElapsed => f.write_str("open period elapsed"),
            Reason::ProbeFailed => f.write_str("a probe failed"),
            Reason::ProbeTimedOut => f.write_str("a probe went unanswered for too long"),
            Reason::ProbesSucceeded { successes } => write!(f, "{successes} probes succeeded"),
            Reason::Manual => f.write_str("manual control"),
            Reason::Remote => f.write_str("decided by the fleet"),
            Reason::Outlier { ejected_for } => write!(
                f,
                "ejected as an outlier for {}",
                crate::duration::format(*ejected_for)
            ),
        }
    }
}

/// One finished call, as seen by a [`Listener`](crate::Listener).
///
/// # Examples
///
/// ```
/// use fusebox::{CallEvent, Outcome};
/// use std::time::Duration;
/// let e = CallEvent {
///     outcome: Outcome::Success,
///     slow: false,
///     timed: true,
///     duration: Duration::from_millis(5),
/// };
/// assert_eq!(e.outcome, Outcome::Success);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallEvent {
    /// How the call was classified.
    pub outcome: Outcome,
    /// Whether it took at least the slow-call threshold.
    pub slow: bool,
    /// Whether the call was timed: always, unless every listener of the
    /// breaker samples ([`Listener::timing`](crate::Listener::timing)) and
    /// this call was not one of the sample.
    pub timed: bool,
    /// From admission to verdict, on the breaker's clock; zero when the
    /// call was not `timed`.
    pub duration: Duration,
}

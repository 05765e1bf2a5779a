//! Admission tickets and the verdicts they carry back.

use super::state::{State, Ticket};
use super::Inner;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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
    /// Nanoseconds until a probe may be tried; `u64::MAX` for "never by
    /// itself" (forced open). Kept as an integer so the open path does no
    /// `Duration` arithmetic.
    retry_after: u64,
}

impl Rejected {
    #[inline]
    pub(crate) fn new(state: State, retry_after: Option<u64>) -> Self {
        Rejected {
            state,
            retry_after: retry_after.unwrap_or(u64::MAX),
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
    /// zero in half-open (a slot frees when a running probe finishes); `None`
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
        (self.retry_after != u64::MAX).then(|| Duration::from_nanos(self.retry_after))
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

/// An admission ticket: the breaker let one call through and waits for its
/// verdict.
///
/// Give the verdict with [`success`](Permit::success),
/// [`failure`](Permit::failure), [`ignore`](Permit::ignore) or
/// [`record`](Permit::record). A permit dropped without a verdict (a panic, a
/// cancelled future, an early return) is released: it changes no counter and
/// frees its half-open probe slot, so a breaker can never wait forever for a
/// probe that will not come.
///
/// A permit owns a reference to its breaker: it is `Send + 'static` and may
/// be moved to another thread or task.
///
/// # Examples
///
/// ```
/// use fusebox::CircuitBreaker;
///
/// let breaker = CircuitBreaker::builder().build()?;
/// match breaker.try_acquire() {
///     Ok(permit) => {
///         let reply: Result<&str, &str> = Ok("200 OK"); // the real call goes here
///         match reply {
///             Ok(_) => permit.success(),
///             Err(_) => permit.failure(),
///         }
///     }
///     Err(rejected) => println!("not calling: {rejected}"),
/// }
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use = "a permit records nothing until given a verdict; dropping it releases it"]
pub struct Permit {
    inner: Arc<Inner>,
    ticket: Ticket,
    done: bool,
}

impl Permit {
    pub(crate) fn new(inner: Arc<Inner>, ticket: Ticket) -> Self {
        Permit {
            inner,
            ticket,
            done: false,
        }
    }

    /// The call succeeded.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// breaker.try_acquire().unwrap().success();
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn success(self) {
        self.record(Outcome::Success)
    }

    /// The call failed.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// breaker.try_acquire().unwrap().failure();
    /// assert_eq!(breaker.state(), fusebox::State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn failure(self) {
        self.record(Outcome::Failure)
    }

    /// The call counts for nothing (but its probe slot, if any, is freed).
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// breaker.try_acquire().unwrap().ignore();
    /// assert_eq!(breaker.state(), fusebox::State::Closed);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn ignore(self) {
        self.record(Outcome::Ignore)
    }

    /// Records `outcome`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Outcome;
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Success);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn record(mut self, outcome: Outcome) {
        self.done = true;
        self.inner.finish(self.ticket, outcome);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.done {
            self.inner.core.release(self.ticket);
        }
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("generation", &self.ticket.generation)
            .field("kind", &self.ticket.kind)
            .finish()
    }
}

/// The borrowed twin of [`Permit`] used inside `call*`: no reference count to
/// touch. While `running` is set the user's code is on the stack, so a drop
/// then is a panic out of it and counts as a failure; any other drop (a
/// cancelled future) releases the permit.
pub(crate) struct CallGuard<'a> {
    pub(crate) inner: &'a Inner,
    pub(crate) ticket: Ticket,
    pub(crate) running: bool,
    pub(crate) done: bool,
}

impl<'a> CallGuard<'a> {
    pub(crate) fn new(inner: &'a Inner, ticket: Ticket) -> Self {
        CallGuard {
            inner,
            ticket,
            running: false,
            done: false,
        }
    }

    #[inline]
    pub(crate) fn finish(mut self, outcome: Outcome) {
        self.done = true;
        self.inner.finish(self.ticket, outcome);
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.running {
            self.inner.finish(self.ticket, Outcome::Failure);
        } else {
            self.inner.core.release(self.ticket);
        }
    }
}

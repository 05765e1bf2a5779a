//! Retry: try a failed call again, a bounded number of times, with backoff,
//! within a budget, and never against a breaker that said no.
//!
//! Retries are how a small fault turns into an outage: when a dependency
//! struggles, every caller retrying multiplies its load just when it can least
//! take it (seed 001). So a [`Retry`] here is bounded three ways:
//!
//! - **attempts**: at most `max_attempts` tries per call (default 3);
//! - **backoff**: a delay before each retry, from an
//!   `Iterator<Item = Duration>` ([`backoff`] has constant, exponential, full
//!   and decorrelated jitter); when the iterator ends, retrying ends;
//! - **budget**: an optional [`RetryBudget`] shared by every caller of the
//!   dependency allows retries only up to a fraction of recent calls, so
//!   however many callers retry, the dependency sees at most `1 + ratio`
//!   times the traffic (plus a small floor).
//!
//! And it knows fusebox's policies (through [`PolicyError`]): a call refused
//! by an open breaker or a full bulkhead never ran, so retrying at once only
//! hammers the breaker. Those are **not retried** unless you ask with
//! [`RetryBuilder::retry_rejections`]; then the retry waits at least the
//! breaker's `retry_after`, and never retries a breaker that is forced open.
//!
//! Sleeping goes through [`Sleep`] / [`AsyncSleep`], so tests run instantly:
//! [`ManualSleep`] advances a [`ManualClock`](crate::ManualClock), and the
//! tokio sleeper follows tokio's paused time.
//!
//! # Examples
//!
//! ```
//! use fusebox::retry::{Constant, ManualSleep, Retry};
//! use fusebox::{Clock, ManualClock};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let retry = Retry::builder()
//!     .max_attempts(4)
//!     .backoff(Constant::new(Duration::from_millis(100)))
//!     .sleeper(ManualSleep::new(clock.clone()))
//!     .build()?;
//!
//! let mut tries = 0;
//! let r = retry.call(|| {
//!     tries += 1;
//!     if tries < 3 { Err(std::io::Error::other("flaky")) } else { Ok(tries) }
//! });
//! assert_eq!(r.unwrap(), 3);
//! assert_eq!(clock.now(), Duration::from_millis(200)); // two waits, no real sleep
//! # Ok::<(), fusebox::retry::RetryConfigError>(())
//! ```

pub mod backoff;
mod budget;
mod sleep;

pub use backoff::{BoxBackoff, Constant, DecorrelatedJitter, Exponential, FullJitter};
pub use budget::{BudgetBuilder, RetryBudget};
#[cfg(feature = "tokio")]
pub use sleep::TokioSleep;
pub use sleep::{AsyncSleep, ManualSleep, Sleep, ThreadSleep};

use crate::policy::{Cause, PolicyError};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The backoff a [`Retry`] uses unless told otherwise: exponential from
/// 100 ms, doubling, capped at 10 s, with full jitter.
pub type DefaultBackoff = FullJitter<Exponential>;

/// Decides whether an error from a call that ran is worth retrying.
///
/// Implemented for [`AnyError`] (the default: every error) and for any
/// `Fn(&E) -> bool` closure.
///
/// # Examples
///
/// ```
/// use fusebox::retry::RetryIf;
/// let transient = |e: &std::io::Error| e.kind() == std::io::ErrorKind::TimedOut;
/// assert!(transient.retry_if(&std::io::ErrorKind::TimedOut.into()));
/// assert!(!transient.retry_if(&std::io::ErrorKind::NotFound.into()));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot decide whether to retry after an error of type `{E}`",
    note = "a retry predicate is a `Fn(&E) -> bool` over the call's own error type (for a pipeline, the `E` of the call's `Result<T, E>`)"
)]
pub trait RetryIf<E> {
    /// `true` to retry after `error`.
    fn retry_if(&self, error: &E) -> bool;

    /// Whether to retry after `error`, and the least wait before the next
    /// attempt: `None` never retries, `Some(d)` waits at least `d` (the
    /// backoff may wait longer). By default `retry_if` with no least wait;
    /// an HTTP predicate overrides it to honour `Retry-After`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::RetryIf;
    /// use std::time::Duration;
    /// let all = |_: &u16| true;
    /// assert_eq!(all.retry_after(&503), Some(Duration::ZERO));
    /// ```
    fn retry_after(&self, error: &E) -> Option<Duration> {
        self.retry_if(error).then_some(Duration::ZERO)
    }
}

impl<E, P: RetryIf<E> + ?Sized> RetryIf<E> for Arc<P> {
    fn retry_if(&self, error: &E) -> bool {
        (**self).retry_if(error)
    }

    fn retry_after(&self, error: &E) -> Option<Duration> {
        (**self).retry_after(error)
    }
}

impl<E, F: Fn(&E) -> bool + ?Sized> RetryIf<E> for F {
    fn retry_if(&self, error: &E) -> bool {
        self(error)
    }
}

/// Retries after every error of a call that ran (the default predicate).
///
/// # Examples
///
/// ```
/// use fusebox::retry::{AnyError, RetryIf};
/// assert!(AnyError.retry_if(&"anything"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyError;

impl<E> RetryIf<E> for AnyError {
    fn retry_if(&self, _: &E) -> bool {
        true
    }
}

/// A retry setting that is out of range; names the setting and its value.
///
/// # Examples
///
/// ```
/// let e = fusebox::retry::Retry::builder().max_attempts(0).build().unwrap_err();
/// assert_eq!(e.field(), "max_attempts");
/// assert_eq!(e.value(), "0");
/// assert_eq!(e.to_string(), "invalid retry setting `max_attempts` = 0: must be at least 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryConfigError {
    field: &'static str,
    value: String,
    reason: &'static str,
}

impl RetryConfigError {
    pub(crate) fn new(field: &'static str, value: String, reason: &'static str) -> Self {
        RetryConfigError {
            field,
            value,
            reason,
        }
    }

    /// The setting's name, as the builder method is called.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = fusebox::retry::RetryBudget::builder().ratio(-0.5).build().unwrap_err();
    /// assert_eq!(e.field(), "ratio");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The rejected value, as text.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = fusebox::retry::RetryBudget::builder().ratio(-0.5).build().unwrap_err();
    /// assert_eq!(e.value(), "-0.5");
    /// ```
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for RetryConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid retry setting `{}` = {}: {}",
            self.field, self.value, self.reason
        )
    }
}

impl std::error::Error for RetryConfigError {}

/// A retry policy: attempts, backoff, predicate, budget, sleeper.
///
/// Cheap to clone (the budget and sleeper are shared); `Send + Sync` when
/// the backoff and the predicate are. Build one with [`Retry::builder`].
///
/// # Examples
///
/// A breaker rejection is not retried (the call never ran):
///
/// ```
/// use fusebox::retry::{ManualSleep, Retry};
/// use fusebox::{CircuitBreaker, ManualClock};
///
/// let breaker = CircuitBreaker::builder().build()?;
/// breaker.force_open();
/// let retry = Retry::builder().sleeper(ManualSleep::new(ManualClock::new())).build().unwrap();
/// let mut runs = 0;
/// let r = retry.call(|| breaker.call(|| { runs += 1; Ok::<_, std::io::Error>(()) }));
/// assert!(r.unwrap_err().is_rejected());
/// assert_eq!(runs, 0);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Retry<B = DefaultBackoff, P = AnyError> {
    backoff: B,
    retry_if: P,
    max_attempts: u32,
    budget: Option<RetryBudget>,
    retry_rejections: bool,
    retry_timeouts: bool,
    sleeper: Arc<dyn Sleep>,
}

/// Builds a [`Retry`]; from [`Retry::builder`].
///
/// # Default
///
/// - `max_attempts`: 3 (the first try and two retries)
/// - `backoff`: [`DefaultBackoff`] (100 ms doubling to 10 s, full jitter)
/// - `retry_if`: [`AnyError`]
/// - `budget`: none
/// - `retry_rejections`: false; `retry_timeouts`: true
/// - `sleeper`: [`ThreadSleep`]
///
/// # Examples
///
/// ```
/// use fusebox::retry::{Exponential, Retry, RetryBudget};
/// use std::time::Duration;
///
/// let retry = Retry::builder()
///     .max_attempts(5)
///     .backoff(Exponential::doubling(Duration::from_millis(50), Duration::from_secs(2)))
///     .retry_if(|e: &std::io::Error| e.kind() != std::io::ErrorKind::NotFound)
///     .budget(RetryBudget::builder().build()?)
///     .build()?;
/// assert_eq!(retry.max_attempts(), 5);
/// # Ok::<(), fusebox::retry::RetryConfigError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct RetryBuilder<B, P> {
    inner: Retry<B, P>,
}

impl<B, P> fmt::Debug for RetryBuilder<B, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBuilder")
            .field("max_attempts", &self.inner.max_attempts)
            .finish_non_exhaustive()
    }
}

impl Retry {
    /// A builder with the defaults (see [`RetryBuilder`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let retry = fusebox::retry::Retry::builder().build()?;
    /// assert_eq!(retry.max_attempts(), 3);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn builder() -> RetryBuilder<DefaultBackoff, AnyError> {
        RetryBuilder {
            inner: Retry {
                backoff: FullJitter::new(Exponential::default()),
                retry_if: AnyError,
                max_attempts: 3,
                budget: None,
                retry_rejections: false,
                retry_timeouts: true,
                sleeper: Arc::new(ThreadSleep),
            },
        }
    }
}

impl<B, P> RetryBuilder<B, P> {
    /// Tries per call, the first included; at least 1.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = fusebox::retry::Retry::builder().max_attempts(1).build()?; // never retries
    /// assert_eq!(r.max_attempts(), 1);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.inner.max_attempts = n;
        self
    }

    /// The delays before each retry: any `Iterator<Item = Duration> + Clone`,
    /// cloned for every call. Retrying stops when it ends.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use std::time::Duration;
    /// // Two retries: 10 ms then 50 ms, whatever max_attempts says.
    /// let delays = [Duration::from_millis(10), Duration::from_millis(50)].into_iter();
    /// let r = Retry::builder().backoff(delays).max_attempts(10).build()?;
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn backoff<B2>(self, backoff: B2) -> RetryBuilder<B2, P>
    where
        B2: Iterator<Item = Duration> + Clone,
    {
        let i = self.inner;
        RetryBuilder {
            inner: Retry {
                backoff,
                retry_if: i.retry_if,
                max_attempts: i.max_attempts,
                budget: i.budget,
                retry_rejections: i.retry_rejections,
                retry_timeouts: i.retry_timeouts,
                sleeper: i.sleeper,
            },
        }
    }

    /// Which errors of calls that ran are worth retrying (by default all).
    /// The predicate sees the call's own error (for a breaker-wrapped call,
    /// the error inside [`Error::Inner`](crate::Error::Inner)); refusals and
    /// timeouts have their own switches.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{Constant, ManualSleep, Retry};
    /// use std::io::{Error, ErrorKind};
    /// let retry = Retry::builder()
    ///     .retry_if(|e: &Error| e.kind() == ErrorKind::ConnectionReset)
    ///     .sleeper(ManualSleep::new(fusebox::ManualClock::new()))
    ///     .build()?;
    /// let mut tries = 0;
    /// let _ = retry.call(|| { tries += 1; Err::<(), _>(Error::from(ErrorKind::NotFound)) });
    /// assert_eq!(tries, 1); // not retryable
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn retry_if<P2>(self, retry_if: P2) -> RetryBuilder<B, P2> {
        let i = self.inner;
        RetryBuilder {
            inner: Retry {
                backoff: i.backoff,
                retry_if,
                max_attempts: i.max_attempts,
                budget: i.budget,
                retry_rejections: i.retry_rejections,
                retry_timeouts: i.retry_timeouts,
                sleeper: i.sleeper,
            },
        }
    }

    /// Limits retries to a share of recent calls; give every caller of one
    /// dependency a clone of the same budget.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{Retry, RetryBudget};
    /// let budget = RetryBudget::builder().build()?;
    /// let a = Retry::builder().budget(budget.clone()).build()?;
    /// let b = Retry::builder().budget(budget).build()?; // shares a's budget
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn budget(mut self, budget: RetryBudget) -> Self {
        self.inner.budget = Some(budget);
        self
    }

    /// Whether to retry calls a breaker or bulkhead refused (default false).
    /// When true, a retry after a breaker rejection waits at least its
    /// `retry_after`, and a breaker forced open is still not retried.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{Constant, ManualSleep, Retry};
    /// use fusebox::{CircuitBreaker, Clock, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let breaker = CircuitBreaker::builder()
    ///     .consecutive_failures(1)
    ///     .open_for(Duration::from_secs(5))
    ///     .clock(clock.clone())
    ///     .build()?;
    /// let _ = breaker.call(|| Err::<(), _>(std::io::Error::other("down"))); // opens
    /// let retry = Retry::builder()
    ///     .retry_rejections(true)
    ///     .backoff(Constant::new(Duration::from_millis(10)))
    ///     .sleeper(ManualSleep::new(clock.clone()))
    ///     .build()
    ///     .unwrap();
    /// let r = retry.call(|| breaker.call(|| Ok::<_, std::io::Error>("back")));
    /// assert_eq!(r.unwrap(), "back");
    /// assert_eq!(clock.now(), Duration::from_secs(5)); // waited retry_after, not 10 ms
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn retry_rejections(mut self, yes: bool) -> Self {
        self.inner.retry_rejections = yes;
        self
    }

    /// Whether to retry calls that timed out (default true). Turn off for
    /// calls that are not safe to repeat: a timed-out call may have done its
    /// work.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = fusebox::retry::Retry::builder().retry_timeouts(false).build()?;
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn retry_timeouts(mut self, yes: bool) -> Self {
        self.inner.retry_timeouts = yes;
        self
    }

    /// How sync retries wait (default [`ThreadSleep`]; [`ManualSleep`] in
    /// tests, or any `Fn(Duration)`). Async retries take their sleeper per
    /// call.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let r = fusebox::retry::Retry::builder().sleeper(|_: Duration| {}).build()?; // never waits
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn sleeper(mut self, sleeper: impl Sleep + 'static) -> Self {
        self.inner.sleeper = Arc::new(sleeper);
        self
    }

    /// Checks the settings and builds the policy.
    ///
    /// # Errors
    ///
    /// [`RetryConfigError`] naming `max_attempts` if it is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::retry::Retry::builder().max_attempts(0).build().is_err());
    /// ```
    pub fn build(self) -> Result<Retry<B, P>, RetryConfigError> {
        if self.inner.max_attempts == 0 {
            return Err(RetryConfigError::new(
                "max_attempts",
                "0".into(),
                "must be at least 1",
            ));
        }
        Ok(self.inner)
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Stop,
    /// Retry, waiting at least this long.
    RetryAfter(Duration),
}

impl<B, P> Retry<B, P>
where
    B: Iterator<Item = Duration> + Clone,
{
    /// Runs `op` until it succeeds, its error is not retryable, the attempts
    /// or the backoff run out, or the budget refuses. Returns the last result.
    ///
    /// The error type says what stopped each attempt ([`PolicyError`]): a
    /// breaker or bulkhead refusal is retried only with `retry_rejections`; a
    /// timeout only with `retry_timeouts`; a call's own error when `retry_if`
    /// says so. For errors that are not fusebox's and have no `PolicyError`
    /// impl, use [`call_plain`](Self::call_plain).
    ///
    /// # Errors
    ///
    /// The last attempt's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// let retry = Retry::builder().sleeper(|_: std::time::Duration| {}).build()?;
    /// let mut n = 0;
    /// let r = retry.call(|| { n += 1; Err::<(), _>(std::io::Error::other("down")) });
    /// assert!(r.is_err());
    /// assert_eq!(n, 3);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn call<T, E, F>(&self, op: F) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
        E: PolicyError,
        P: RetryIf<E::Inner>,
    {
        self.run(op, |e| self.decide(e))
    }

    /// As [`call`](Self::call), for any error type: every error counts as the
    /// call's own and goes to `retry_if`. Use it for errors that cannot be a
    /// fusebox refusal (a plain client error).
    ///
    /// # Errors
    ///
    /// The last attempt's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// let retry = Retry::builder().sleeper(|_: std::time::Duration| {}).build()?;
    /// let mut n = 0;
    /// let r: Result<u8, String> = retry.call_plain(|| { n += 1; if n < 2 { Err("x".into()) } else { Ok(n) } });
    /// assert_eq!(r, Ok(2));
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn call_plain<T, E, F>(&self, op: F) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
        P: RetryIf<E>,
    {
        self.run(op, |e| self.decide_failed(e))
    }

    /// As [`call`](Self::call) for async calls: `op` makes a new future for
    /// every attempt, and `sleeper` waits between them.
    ///
    /// # Errors
    ///
    /// The last attempt's error.
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future drops the attempt in progress (or the
    /// wait); no attempt is started after that.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::retry::RetryConfigError> {
    /// use fusebox::retry::{ManualSleep, Retry};
    /// use fusebox::ManualClock;
    /// let retry = Retry::builder().build()?;
    /// let sleeper = ManualSleep::new(ManualClock::new());
    /// let r = retry
    ///     .call_async_with(&sleeper, || async { Err::<(), _>(std::io::Error::other("down")) })
    ///     .await;
    /// assert!(r.is_err());
    /// assert_eq!(sleeper.sleeps().len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_async_with<T, E, F, Fut, S>(&self, sleeper: &S, mut op: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: PolicyError,
        P: RetryIf<E::Inner>,
        S: AsyncSleep,
    {
        let mut backoff = self.begin();
        let mut attempt = 1;
        loop {
            let err = match op().await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            match self.after_failure(&mut backoff, attempt, &err) {
                Some(d) => sleeper.sleep(d).await,
                None => return Err(err),
            }
            attempt += 1;
        }
    }

    /// The number of tries per call, the first included.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = fusebox::retry::Retry::builder().max_attempts(2).build()?;
    /// assert_eq!(r.max_attempts(), 2);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The shared budget, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::retry::Retry::builder().build()?.budget().is_none());
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }

    /// This policy with another predicate (the budget, backoff and sleeper
    /// stay shared): how a retry from a config file gets a predicate that
    /// only code can give, e.g. `fusebox::http::RetryPolicy` (feature `http`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// let retry = Retry::builder().sleeper(|_: std::time::Duration| {}).build()?;
    /// let only_503 = retry.with_retry_if(|status: &u16| *status == 503);
    /// let mut n = 0;
    /// let _ = only_503.call_plain(|| { n += 1; Err::<(), u16>(404) });
    /// assert_eq!(n, 1);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn with_retry_if<P2>(self, retry_if: P2) -> Retry<B, P2> {
        self.map_retry_if(|_| retry_if)
    }

    /// This policy, never retrying a timed-out attempt (for requests that
    /// must not run twice).
    #[cfg(feature = "http")]
    pub(crate) fn without_timeout_retries(mut self) -> Self {
        self.retry_timeouts = false;
        self
    }

    pub(crate) fn map_retry_if<P2>(self, f: impl FnOnce(P) -> P2) -> Retry<B, P2> {
        Retry {
            backoff: self.backoff,
            retry_if: f(self.retry_if),
            max_attempts: self.max_attempts,
            budget: self.budget,
            retry_rejections: self.retry_rejections,
            retry_timeouts: self.retry_timeouts,
            sleeper: self.sleeper,
        }
    }

    /// This policy with its backoff boxed: one nameable type whatever the
    /// backoff (see [`BoxBackoff`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::{BoxBackoff, Constant, Retry};
    /// let r: Retry<BoxBackoff> = Retry::builder()
    ///     .backoff(Constant::new(std::time::Duration::ZERO))
    ///     .build()?
    ///     .boxed_backoff();
    /// assert_eq!(r.max_attempts(), 3);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn boxed_backoff(self) -> Retry<BoxBackoff, P>
    where
        B: Send + Sync + 'static,
    {
        Retry {
            backoff: BoxBackoff::new(self.backoff),
            retry_if: self.retry_if,
            max_attempts: self.max_attempts,
            budget: self.budget,
            retry_rejections: self.retry_rejections,
            retry_timeouts: self.retry_timeouts,
            sleeper: self.sleeper,
        }
    }

    fn run<T, E, F, D>(&self, mut op: F, decide: D) -> Result<T, E>
    where
        F: FnMut() -> Result<T, E>,
        D: Fn(&E) -> Decision,
    {
        let mut backoff = self.begin();
        let mut attempt = 1;
        loop {
            let err = match op() {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            match self.next_delay(&mut backoff, attempt, decide(&err)) {
                Some(d) => self.sleeper.sleep(d),
                None => return Err(err),
            }
            attempt += 1;
        }
    }

    /// Starts a call: deposits in the budget, returns this call's backoff.
    pub(crate) fn begin(&self) -> B {
        if let Some(b) = &self.budget {
            b.deposit();
        }
        self.backoff.clone()
    }

    /// After failed attempt number `attempt` with `err`: the wait before the
    /// next attempt, or `None` to stop.
    pub(crate) fn after_failure<E>(
        &self,
        backoff: &mut B,
        attempt: u32,
        err: &E,
    ) -> Option<Duration>
    where
        E: PolicyError,
        P: RetryIf<E::Inner>,
    {
        self.next_delay(backoff, attempt, self.decide(err))
    }

    /// The wait before the next attempt, or `None` to stop. Takes a budget
    /// token only when everything else allows the retry.
    fn next_delay(&self, backoff: &mut B, attempt: u32, decision: Decision) -> Option<Duration> {
        let at_least = match decision {
            Decision::Stop => return None,
            Decision::RetryAfter(d) => d,
        };
        if attempt >= self.max_attempts {
            return None;
        }
        let delay = backoff.next()?;
        if let Some(budget) = &self.budget {
            if !budget.try_withdraw() {
                return None;
            }
        }
        Some(delay.max(at_least))
    }

    fn decide<E>(&self, e: &E) -> Decision
    where
        E: PolicyError,
        P: RetryIf<E::Inner>,
    {
        let cause = e.cause();
        if let Some(refusal) = cause.refusal() {
            return match refusal.retry_after() {
                Some(d) if self.retry_rejections => Decision::RetryAfter(d),
                // Not retrying refusals, or one that waiting won't end (a
                // breaker forced open: only a manual reset ends it).
                _ => Decision::Stop,
            };
        }
        match cause {
            Cause::TimedOut(_) if self.retry_timeouts => Decision::RetryAfter(Duration::ZERO),
            Cause::Failed(inner) => self.decide_failed(inner),
            _ => Decision::Stop,
        }
    }

    fn decide_failed<E>(&self, e: &E) -> Decision
    where
        P: RetryIf<E>,
    {
        match self.retry_if.retry_after(e) {
            Some(d) => Decision::RetryAfter(d),
            None => Decision::Stop,
        }
    }
}

#[cfg(feature = "tokio")]
impl<B, P> Retry<B, P>
where
    B: Iterator<Item = Duration> + Clone,
{
    /// As [`call_async_with`](Self::call_async_with), waiting with tokio's
    /// timer (feature `tokio`; follows paused time in tests).
    ///
    /// # Errors
    ///
    /// The last attempt's error.
    ///
    /// # Cancel safety
    ///
    /// As [`call_async_with`](Self::call_async_with).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), fusebox::retry::RetryConfigError> {
    /// use fusebox::retry::{Constant, Retry};
    /// use std::time::Duration;
    /// let retry = Retry::builder().backoff(Constant::new(Duration::from_secs(1))).build()?;
    /// let t0 = tokio::time::Instant::now();
    /// let r = retry.call_async(|| async { Err::<(), _>(std::io::Error::other("down")) }).await;
    /// assert!(r.is_err());
    /// assert_eq!(t0.elapsed(), Duration::from_secs(2)); // two waits of paused time
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_async<T, E, F, Fut>(&self, op: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: PolicyError,
        P: RetryIf<E::Inner>,
    {
        self.call_async_with(&TokioSleep, op).await
    }
}

impl<B: fmt::Debug, P> fmt::Debug for Retry<B, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("max_attempts", &self.max_attempts)
            .field("backoff", &self.backoff)
            .field("budget", &self.budget)
            .field("retry_rejections", &self.retry_rejections)
            .field("retry_timeouts", &self.retry_timeouts)
            .finish_non_exhaustive()
    }
}

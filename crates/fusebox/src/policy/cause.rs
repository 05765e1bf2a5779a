//! Why a guarded call did not return the callee's value: [`Cause`], and
//! [`PolicyError`], which tells fusebox's own refusals from the call's
//! errors. Shared by retry, fallback, the pipeline and the tower layers.

use super::Refusal;
use crate::breaker::{Error as BreakerError, Rejected};
use crate::bulkhead::BulkheadFull;
use crate::timeout::{Elapsed, TimeoutError};
use std::convert::Infallible;
use std::fmt;

/// Why a call produced no value: which policy stopped it, or the call's own
/// error.
///
/// # Examples
///
/// ```
/// use fusebox::{Bulkhead, Cause, PolicyError};
/// let full = Bulkhead::new(0).try_acquire().unwrap_err();
/// assert!(matches!(full.cause(), Cause::BulkheadFull(_)));
/// assert_eq!(full.cause().to_string(), "bulkhead full");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Cause<'a, E> {
    /// The breaker refused the call (it never ran).
    Rejected(&'a Rejected),
    /// The bulkhead was full (the call never ran).
    BulkheadFull(&'a BulkheadFull),
    /// Another policy refused the call (it never ran): any [`Refusal`].
    Refused(&'a dyn Refusal),
    /// The call ran past its deadline.
    TimedOut(&'a Elapsed),
    /// The call ran and failed with this error.
    Failed(&'a E),
}

impl<E> Cause<'_, E> {
    /// Whether the call never ran (a policy refused it).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Cause, PolicyError};
    /// let e = std::io::Error::other("x");
    /// assert!(!e.cause().is_refusal());
    /// ```
    pub fn is_refusal(&self) -> bool {
        self.refusal().is_some()
    }

    /// The short lowercase name: `rejected by breaker`, `bulkhead full`, the
    /// refusal's [`summary`](Refusal::summary) for other policies, `timed
    /// out` or `failed` (also the `Display`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Cause, PolicyError};
    /// assert_eq!(std::io::Error::other("x").cause().as_str(), "failed");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match (self.refusal(), self) {
            (Some(r), _) => r.summary(),
            (None, Cause::TimedOut(_)) => "timed out",
            (None, _) => "failed",
        }
    }

    /// A label for metrics: the refusal's [`label`](Refusal::label)
    /// (`rejected`, `bulkhead_full`, ...), `timed_out` or `failed` (the
    /// `cause` label of `fusebox_fallbacks_total`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, PolicyError};
    /// let full = Bulkhead::new(0).try_acquire().unwrap_err();
    /// assert_eq!(full.cause().label(), "bulkhead_full");
    /// ```
    pub fn label(&self) -> &'static str {
        match (self.refusal(), self) {
            (Some(r), _) => r.label(),
            (None, Cause::TimedOut(_)) => "timed_out",
            (None, _) => "failed",
        }
    }

    /// The policy that stopped the call: the refusing policy (`breaker`,
    /// `bulkhead`, ...), `timeout`, or `call` for the call's own error.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, PolicyError};
    /// let full = Bulkhead::new(0).try_acquire().unwrap_err();
    /// assert_eq!(full.cause().stopped_by(), "bulkhead");
    /// assert_eq!(std::io::Error::other("x").cause().stopped_by(), "call");
    /// ```
    pub fn stopped_by(&self) -> &'static str {
        match (self.refusal(), self) {
            (Some(r), _) => r.policy(),
            (None, Cause::TimedOut(_)) => "timeout",
            (None, _) => "call",
        }
    }

    /// When a policy refused the call, how long until a new attempt may be
    /// admitted (see [`Refusal::retry_after`]): the rest of an open
    /// breaker's period, zero for a full bulkhead; `None` for a breaker
    /// forced open, and for calls that ran.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, PolicyError};
    /// use std::time::Duration;
    /// let breaker = CircuitBreaker::builder()
    ///     .consecutive_failures(1)
    ///     .open_for(Duration::from_secs(30))
    ///     .clock(fusebox::ManualClock::new())
    ///     .build()?;
    /// let _ = breaker.call(|| Err::<(), _>("down"));
    /// let e = breaker.call(|| Ok::<_, &str>(())).unwrap_err();
    /// assert_eq!(e.cause().retry_after(), Some(Duration::from_secs(30)));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        self.refusal().and_then(|r| r.retry_after())
    }
}

impl<'a, E> Cause<'a, E> {
    /// The call's own error, when it ran and failed (by reference: the
    /// original error, e.g. an HTTP 503, is still there).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{PipelineError, PolicyError};
    /// let e = PipelineError::Failed(503u16);
    /// assert_eq!(e.cause().error(), Some(&503));
    /// ```
    pub fn error(&self) -> Option<&'a E> {
        match *self {
            Cause::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// The policy's refusal, when a policy refused the call.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, PolicyError};
    /// let full = Bulkhead::new(0).try_acquire().unwrap_err();
    /// assert_eq!(full.cause().refusal().map(|r| r.policy()), Some("bulkhead"));
    /// ```
    pub fn refusal(&self) -> Option<&'a dyn Refusal> {
        match *self {
            Cause::Rejected(r) => Some(r),
            Cause::BulkheadFull(b) => Some(b),
            Cause::Refused(r) => Some(r),
            Cause::TimedOut(_) | Cause::Failed(_) => None,
        }
    }
}

impl<'a> Cause<'a, Box<dyn std::error::Error + Send + Sync>> {
    /// The call's own error as a `T`, on the tower path where it is boxed.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::PolicyError;
    /// let e: Box<dyn std::error::Error + Send + Sync> = Box::new(std::io::Error::other("reset"));
    /// let io = e.cause().downcast_ref::<std::io::Error>().unwrap();
    /// assert_eq!(io.to_string(), "reset");
    /// ```
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&'a T> {
        self.error().and_then(|e| e.downcast_ref::<T>())
    }
}

impl<'a, E> Cause<'a, E> {
    /// The cause for a refusal: the breaker's and the bulkhead's keep their
    /// own variants, every other policy's is [`Cause::Refused`].
    pub(crate) fn of_refusal(r: &'a dyn Refusal) -> Self {
        if let Some(r) = r.downcast_ref::<Rejected>() {
            Cause::Rejected(r)
        } else if let Some(b) = r.downcast_ref::<BulkheadFull>() {
            Cause::BulkheadFull(b)
        } else {
            Cause::Refused(r)
        }
    }
}

impl<E> Clone for Cause<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Cause<'_, E> {}

impl<E> fmt::Display for Cause<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error that can say which policy stopped a call ([`Cause`]).
///
/// Implemented for fusebox's errors, for `std::io::Error` and for
/// `Box<dyn Error + Send + Sync>` (which it downcasts, for the tower path).
/// [`Fallback`](crate::Fallback) and [`Retry`](crate::retry::Retry) read it. For your own error
/// type, three lines:
///
/// ```
/// use fusebox::{Cause, PolicyError};
///
/// #[derive(Debug)]
/// struct ApiError(u16);
///
/// impl PolicyError for ApiError {
///     type Inner = Self;
///     fn cause(&self) -> Cause<'_, Self> { Cause::Failed(self) }
/// }
/// assert_eq!(ApiError(503).cause().to_string(), "failed");
/// ```
pub trait PolicyError {
    /// The error a call that ran can fail with.
    type Inner;
    /// Which policy stopped the call, or the call's own error.
    fn cause(&self) -> Cause<'_, Self::Inner>;
}

impl<E> PolicyError for BreakerError<E> {
    type Inner = E;
    fn cause(&self) -> Cause<'_, E> {
        match self {
            BreakerError::Rejected(r) => Cause::Rejected(r),
            BreakerError::Inner(e) => Cause::Failed(e),
        }
    }
}

impl PolicyError for Rejected {
    type Inner = Infallible;
    fn cause(&self) -> Cause<'_, Infallible> {
        Cause::Rejected(self)
    }
}

impl PolicyError for BulkheadFull {
    type Inner = Infallible;
    fn cause(&self) -> Cause<'_, Infallible> {
        Cause::BulkheadFull(self)
    }
}

impl PolicyError for Elapsed {
    type Inner = Infallible;
    fn cause(&self) -> Cause<'_, Infallible> {
        Cause::TimedOut(self)
    }
}

impl<E> PolicyError for TimeoutError<E> {
    type Inner = E;
    fn cause(&self) -> Cause<'_, E> {
        match self {
            TimeoutError::Elapsed(e) => Cause::TimedOut(e),
            TimeoutError::Inner(e) => Cause::Failed(e),
        }
    }
}

impl PolicyError for std::io::Error {
    type Inner = Self;
    fn cause(&self) -> Cause<'_, Self> {
        Cause::Failed(self)
    }
}

impl PolicyError for Box<dyn std::error::Error + Send + Sync> {
    type Inner = Self;
    fn cause(&self) -> Cause<'_, Self> {
        let err: &(dyn std::error::Error + 'static) = &**self;
        if let Some(r) = super::refusal_of_error(err) {
            Cause::of_refusal(r)
        } else if let Some(e) = self.downcast_ref::<Elapsed>() {
            Cause::TimedOut(e)
        } else {
            Cause::Failed(self)
        }
    }
}

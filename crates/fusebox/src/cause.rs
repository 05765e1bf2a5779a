//! Why a guarded call did not return the callee's value: [`Cause`], and
//! [`PolicyError`], which tells fusebox's own refusals from the call's
//! errors. Shared by retry, fallback, the pipeline and the tower layers.

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
    /// The call ran past its deadline.
    TimedOut(&'a Elapsed),
    /// The call ran and failed with this error.
    Failed(&'a E),
}

impl<E> Cause<'_, E> {
    /// Whether the call never ran (refused by a breaker or a bulkhead).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Cause, PolicyError};
    /// let e = std::io::Error::other("x");
    /// assert!(!e.cause().is_refusal());
    /// ```
    pub fn is_refusal(&self) -> bool {
        matches!(self, Cause::Rejected(_) | Cause::BulkheadFull(_))
    }

    /// The short lowercase name: `rejected by breaker`, `bulkhead full`,
    /// `timed out` or `failed` (also the `Display`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Cause, PolicyError};
    /// assert_eq!(std::io::Error::other("x").cause().as_str(), "failed");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            Cause::Rejected(_) => "rejected by breaker",
            Cause::BulkheadFull(_) => "bulkhead full",
            Cause::TimedOut(_) => "timed out",
            Cause::Failed(_) => "failed",
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
        if let Some(r) = self.downcast_ref::<Rejected>() {
            Cause::Rejected(r)
        } else if let Some(b) = self.downcast_ref::<BulkheadFull>() {
            Cause::BulkheadFull(b)
        } else if let Some(e) = self.downcast_ref::<Elapsed>() {
            Cause::TimedOut(e)
        } else {
            Cause::Failed(self)
        }
    }
}

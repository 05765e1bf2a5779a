use crate::tower::BoxError;
use std::time::Duration;

/// Decides whether an error is worth another attempt.
///
/// Implemented for every `Fn(&BoxError) -> bool`. Fusebox's own refusals
/// never reach it: whether those are retried is
/// [`RetryLayer::retry_refusals`](super::RetryLayer::retry_refusals)'s call.
///
/// # Examples
///
/// ```
/// use fusebox::tower::retry::Retryable;
/// use fusebox::tower::BoxError;
///
/// // Only timeouts are worth retrying.
/// let timeouts = |e: &BoxError| e.is::<fusebox::Elapsed>();
/// assert!(!timeouts.is_retryable(&"bad request".into()));
/// ```
pub trait Retryable {
    /// Whether `error` may be retried.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::retry::{AnyError, Retryable};
    ///
    /// assert!(AnyError.is_retryable(&"connection reset".into()));
    /// ```
    fn is_retryable(&self, error: &BoxError) -> bool;
}

impl<F> Retryable for F
where
    F: Fn(&BoxError) -> bool,
{
    fn is_retryable(&self, error: &BoxError) -> bool {
        self(error)
    }
}

/// The default [`Retryable`]: every error may be retried (fusebox's own
/// refusals aside, see [`Retryable`]).
///
/// # Examples
///
/// ```
/// use fusebox::tower::retry::{AnyError, Retryable};
///
/// assert!(AnyError.is_retryable(&"anything".into()));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnyError;

impl Retryable for AnyError {
    fn is_retryable(&self, _error: &BoxError) -> bool {
        true
    }
}

/// What to do after a failed attempt.
pub(crate) enum Next {
    /// Give the error to the caller.
    Stop,
    /// Wait this long, then send the request again.
    After(Duration),
}

/// The retry rules, shared by the layer, the service and its futures.
#[derive(Debug, Clone)]
pub(crate) struct Rules<P> {
    pub(crate) max_attempts: u32,
    pub(crate) retryable: P,
    pub(crate) refusals: bool,
}

impl<P: Retryable> Rules<P> {
    /// The decision after attempt number `attempt` (1-based) failed with
    /// `error`; `backoff` is this request's remaining delays.
    pub(crate) fn next(
        &self,
        attempt: u32,
        error: &BoxError,
        backoff: &mut impl Iterator<Item = Duration>,
    ) -> Next {
        if attempt >= self.max_attempts {
            return Next::Stop;
        }
        // Fusebox's own refusals: only when asked, never sooner than the
        // breaker says a call may pass.
        let floor = if let Some(rejected) = error.downcast_ref::<crate::Rejected>() {
            match (self.refusals, rejected.retry_after()) {
                (true, Some(after)) => after,
                _ => return Next::Stop,
            }
        } else if error.is::<crate::BulkheadFull>() {
            if !self.refusals {
                return Next::Stop;
            }
            Duration::ZERO
        } else {
            if !self.retryable.is_retryable(error) {
                return Next::Stop;
            }
            Duration::ZERO
        };
        match backoff.next() {
            Some(delay) => Next::After(delay.max(floor)),
            // The backoff is exhausted: no more attempts.
            None => Next::Stop,
        }
    }
}

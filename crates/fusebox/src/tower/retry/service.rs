use super::future::ResponseFuture;
use crate::retry::{AnyError, DefaultBackoff, RetryIf};
use crate::tower::BoxError;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::Service;

/// Retries failed requests of the inner service with a fusebox
/// [`Retry`](crate::retry::Retry) policy; see the [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::retry::Retry;
/// use fusebox::tower::retry::Retry as RetryService;
///
/// let svc = RetryService::new((), Retry::builder().build()?);
/// assert_eq!(svc.retry().max_attempts(), 3);
/// # Ok::<(), fusebox::retry::RetryConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Retry<S, B = DefaultBackoff, P = AnyError> {
    inner: S,
    /// Shared with every response future: one reference count per call
    /// instead of a copy of the policy.
    retry: Arc<crate::retry::Retry<B, P>>,
}

impl<S, B, P> Retry<S, B, P> {
    /// Wraps `inner`; failed requests are retried as `retry` says.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::retry::Retry as RetryService;
    ///
    /// let svc = RetryService::new(7, Retry::builder().build()?);
    /// assert_eq!(*svc.get_ref(), 7);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn new(inner: S, retry: crate::retry::Retry<B, P>) -> Self {
        Retry {
            inner,
            retry: Arc::new(retry),
        }
    }

    /// The retry policy.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::retry::Retry as RetryService;
    ///
    /// let svc = RetryService::new((), Retry::builder().max_attempts(5).build()?);
    /// assert_eq!(svc.retry().max_attempts(), 5);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn retry(&self) -> &crate::retry::Retry<B, P> {
        &self.retry
    }

    /// Gets a reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::retry::Retry as RetryService;
    ///
    /// let svc = RetryService::new(7, Retry::builder().build()?);
    /// assert_eq!(*svc.get_ref(), 7);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Gets a mutable reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::retry::Retry as RetryService;
    ///
    /// let mut svc = RetryService::new(7, Retry::builder().build()?);
    /// *svc.get_mut() = 8;
    /// assert_eq!(*svc.get_ref(), 8);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::retry::Retry as RetryService;
    ///
    /// let svc = RetryService::new(7, Retry::builder().build()?);
    /// assert_eq!(svc.into_inner(), 7);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B, P, Request> Service<Request> for Retry<S, B, P>
where
    S: Service<Request> + Clone,
    S::Error: Into<BoxError>,
    B: Iterator<Item = Duration> + Clone,
    P: RetryIf<BoxError> + Clone,
    Request: Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, Request, B, P>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    // Inlined: see the end.
    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        // The ready service answers this first attempt; a clone (not yet
        // ready) and a clone of the request go into the future for the
        // retries, as tower's Retry does. With one attempt allowed there is
        // no retry to prepare for.
        let retry = Arc::clone(&self.retry);
        // Deposits in the budget (once per request); this request's delays.
        let backoff = retry.begin();
        let again = (retry.max_attempts() > 1)
            .then(|| super::future::Again::new(self.inner.clone(), request.clone()));
        // The attempt last, nothing that can unwind after it; with this
        // `call` inlined into the caller, the response future (attempt
        // included) is built in its final place instead of copied there.
        ResponseFuture::new(self.inner.call(request), again, retry, backoff)
    }
}

use super::future::ResponseFuture;
use super::policy::Rules;
use crate::retry::RetryIf;
use crate::tower::BoxError;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::Service;

/// Retries failed requests of the inner service; built by
/// [`RetryLayer`](super::RetryLayer), see the [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::tower::{Retry, RetryLayer};
/// use std::time::Duration;
/// use tower::Layer;
///
/// let svc: Retry<_, _> = RetryLayer::new(2, [Duration::from_millis(1)]).layer(());
/// assert_eq!(*svc.get_ref(), ());
/// ```
#[derive(Debug, Clone)]
pub struct Retry<S, B, P = crate::retry::AnyError> {
    inner: S,
    rules: Rules<P>,
    backoff: B,
}

impl<S, B, P> Retry<S, B, P> {
    pub(crate) fn from_parts(inner: S, rules: Rules<P>, backoff: B) -> Self {
        Retry {
            inner,
            rules,
            backoff,
        }
    }

    /// Gets a reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    /// use tower::Layer;
    ///
    /// let svc = RetryLayer::new(2, [Duration::from_millis(1)]).layer(7);
    /// assert_eq!(*svc.get_ref(), 7);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Gets a mutable reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    /// use tower::Layer;
    ///
    /// let mut svc = RetryLayer::new(2, [Duration::from_millis(1)]).layer(7);
    /// *svc.get_mut() = 8;
    /// assert_eq!(*svc.get_ref(), 8);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    /// use tower::Layer;
    ///
    /// let svc = RetryLayer::new(2, [Duration::from_millis(1)]).layer(7);
    /// assert_eq!(svc.into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B, P, Request> Service<Request> for Retry<S, B, P>
where
    S: Service<Request> + Clone,
    S::Error: Into<BoxError>,
    B: IntoIterator<Item = Duration> + Clone,
    P: RetryIf<BoxError> + Clone,
    Request: Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, Request, B::IntoIter, P>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The ready service answers this first attempt; a fresh clone (not
        // yet ready) goes into the future for the retries, as tower's Retry does.
        self.rules.start();
        let retries = self.inner.clone();
        let future = self.inner.call(request.clone());
        ResponseFuture::new(
            future,
            retries,
            request,
            self.rules.clone(),
            self.backoff.clone().into_iter(),
        )
    }
}

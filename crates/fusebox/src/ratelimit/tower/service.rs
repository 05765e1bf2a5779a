use super::future::ResponseFuture;
use crate::ratelimit::{RateLimited, RateLimiter};
use crate::tower::BoxError;
use std::fmt;
use std::task::{Context, Poll};
use tower::Service;

/// What `poll_ready` got from the limiter, waiting for `call`.
#[derive(Debug, Clone, Copy)]
enum Cell {
    Taken,
    Refused(RateLimited),
}

/// Refuses requests over the rate of a [`RateLimiter`]; see the [module
/// docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::tower::RateLimit;
/// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
/// use tower::{service_fn, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fusebox::tower::BoxError> {
/// let inner = service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x + 1) });
/// let mut svc = RateLimit::new(inner, RateLimiter::new(RateLimitConfig::per_second(8))?);
/// assert_eq!(svc.ready().await?.call(1).await?, 2);
/// # Ok(())
/// # }
/// ```
pub struct RateLimit<S> {
    inner: S,
    limiter: RateLimiter,
    /// Decided in `poll_ready`, used (and cleared) by `call`.
    cell: Option<Cell>,
}

impl<S> RateLimit<S> {
    /// Wraps `inner`, taking cells from `limiter`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::tower::RateLimit;
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let svc = RateLimit::new((), RateLimiter::new(RateLimitConfig::per_second(8))?);
    /// # let _ = svc;
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn new(inner: S, limiter: RateLimiter) -> Self {
        RateLimit {
            inner,
            limiter,
            cell: None,
        }
    }

    /// The limiter (shared with every clone).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::tower::RateLimit;
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let svc = RateLimit::new((), RateLimiter::new(RateLimitConfig::per_second(8))?);
    /// assert_eq!(svc.limiter().config().per_second, Some(8));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn limiter(&self) -> &RateLimiter {
        &self.limiter
    }

    /// Gets a reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::tower::RateLimit;
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let svc = RateLimit::new(5, RateLimiter::new(RateLimitConfig::per_second(8))?);
    /// assert_eq!(*svc.get_ref(), 5);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Gets a mutable reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::tower::RateLimit;
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let mut svc = RateLimit::new(5, RateLimiter::new(RateLimitConfig::per_second(8))?);
    /// *svc.get_mut() = 6;
    /// assert_eq!(*svc.get_ref(), 6);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service. A cell taken by
    /// `poll_ready` and not yet used stays spent.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::tower::RateLimit;
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let svc = RateLimit::new(5, RateLimiter::new(RateLimitConfig::per_second(8))?);
    /// assert_eq!(svc.into_inner(), 5);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for RateLimit<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !matches!(self.cell, Some(Cell::Taken)) {
            // No cell yet, or a refusal that may be stale: ask again, never wait.
            match self.limiter.try_acquire() {
                Ok(()) => self.cell = Some(Cell::Taken),
                Err(limited) => {
                    // Ready, so that `call` can answer with the refusal
                    // without touching the inner service.
                    self.cell = Some(Cell::Refused(limited));
                    return Poll::Ready(Ok(()));
                }
            }
        }
        // A cell is taken: now, and only now, the inner service's readiness.
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    /// # Panics
    ///
    /// If `poll_ready` has not returned `Ready(Ok(()))` since the last call,
    /// like every tower service.
    fn call(&mut self, request: Request) -> Self::Future {
        match self.cell.take() {
            Some(Cell::Taken) => ResponseFuture::admitted(self.inner.call(request)),
            Some(Cell::Refused(limited)) => ResponseFuture::refused(limited),
            None => panic!("fusebox RateLimit: poll_ready must be called first"),
        }
    }
}

impl<S: Clone> Clone for RateLimit<S> {
    /// The clone shares the limiter; it holds no cell.
    fn clone(&self) -> Self {
        RateLimit::new(self.inner.clone(), self.limiter.clone())
    }
}

impl<S: fmt::Debug> fmt::Debug for RateLimit<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .field("limiter", &self.limiter)
            .field("cell", &self.cell)
            .finish()
    }
}

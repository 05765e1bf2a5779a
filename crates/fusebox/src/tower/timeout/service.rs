use super::future::ResponseFuture;
use crate::tower::BoxError;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::Service;

/// Fails requests of the inner service that take longer than a timeout; see
/// the [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::tower::timeout::Timeout;
/// use std::time::Duration;
/// use tower::{service_fn, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fusebox::tower::BoxError> {
/// let inner = service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x) });
/// let mut svc = Timeout::new(inner, Duration::from_secs(1));
/// assert_eq!(svc.ready().await?.call(3).await?, 3);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Timeout<S> {
    inner: S,
    timeout: Duration,
}

impl<S> Timeout<S> {
    /// Wraps `inner`; each request gets `timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::timeout::Timeout;
    /// use std::time::Duration;
    ///
    /// let svc = Timeout::new((), Duration::from_millis(50));
    /// assert_eq!(svc.timeout(), Duration::from_millis(50));
    /// ```
    pub const fn new(inner: S, timeout: Duration) -> Self {
        Timeout { inner, timeout }
    }

    /// The time each request is given.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::timeout::Timeout;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Timeout::new((), Duration::from_secs(2)).timeout(), Duration::from_secs(2));
    /// ```
    pub const fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Gets a reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::timeout::Timeout;
    /// use std::time::Duration;
    ///
    /// assert_eq!(*Timeout::new(1, Duration::from_secs(1)).get_ref(), 1);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Gets a mutable reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::timeout::Timeout;
    /// use std::time::Duration;
    ///
    /// let mut svc = Timeout::new(1, Duration::from_secs(1));
    /// *svc.get_mut() = 2;
    /// assert_eq!(*svc.get_ref(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::timeout::Timeout;
    /// use std::time::Duration;
    ///
    /// assert_eq!(Timeout::new(1, Duration::from_secs(1)).into_inner(), 1);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for Timeout<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    /// The deadline runs from here; the timer is armed only when the
    /// response first waits, so an answer that is ready at once costs one
    /// clock reading and no timer.
    ///
    /// # Panics
    ///
    /// The response future, when it first waits outside a tokio runtime
    /// with the time driver enabled (the timer is armed then), like
    /// tower's own timeout.
    // Not inlined: the caller's future then gets this one written straight
    // into its place, instead of built aside and copied in.
    #[inline(never)]
    fn call(&mut self, request: Request) -> Self::Future {
        let response = self.inner.call(request);
        ResponseFuture::new(crate::timeout::Deadline::new(self.timeout, response))
    }
}

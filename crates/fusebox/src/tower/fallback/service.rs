use super::future::ResponseFuture;
use super::Recover;
use crate::tower::BoxError;
use std::task::{Context, Poll};
use tower::Service;

/// Answers failed requests of the inner service with a [`Recover`].
///
/// # Examples
///
/// ```
/// use fusebox::tower::fallback::{Fallback, FromFn};
/// use fusebox::tower::BoxError;
/// use fusebox::Cause;
/// use tower::{service_fn, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), BoxError> {
/// let inner = service_fn(|_: ()| async { Err::<u32, BoxError>("down".into()) });
/// let mut svc = Fallback::new(inner, FromFn::new(|_why: Cause<'_, BoxError>| Some(0)));
/// assert_eq!(svc.ready().await?.call(()).await?, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Fallback<S, R> {
    inner: S,
    recover: R,
}

impl<S, R> Fallback<S, R> {
    /// Wraps `inner`; failed calls are answered by `recover`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::{Fallback, FromFn};
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// let svc = Fallback::new((), FromFn::new(|_why: Cause<'_, BoxError>| None::<()>));
    /// # let _ = svc;
    /// ```
    pub const fn new(inner: S, recover: R) -> Self {
        Fallback { inner, recover }
    }

    /// Gets a reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::{Fallback, FromFn};
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// let svc = Fallback::new(3, FromFn::new(|_why: Cause<'_, BoxError>| None::<()>));
    /// assert_eq!(*svc.get_ref(), 3);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Gets a mutable reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::{Fallback, FromFn};
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// let mut svc = Fallback::new(3, FromFn::new(|_why: Cause<'_, BoxError>| None::<()>));
    /// *svc.get_mut() = 4;
    /// assert_eq!(*svc.get_ref(), 4);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::{Fallback, FromFn};
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// let svc = Fallback::new(3, FromFn::new(|_why: Cause<'_, BoxError>| None::<()>));
    /// assert_eq!(svc.into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, R, Request> Service<Request> for Fallback<S, R>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
    R: Recover<Response = S::Response> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        ResponseFuture::new(self.inner.call(request), self.recover.clone())
    }
}

use super::{Fallback, FromFn, FromFuture};
use tower::Layer;

/// Answers failed requests of the inner service with a fallback.
///
/// # Examples
///
/// ```
/// use fusebox::tower::{BoxError, FallbackLayer};
/// use fusebox::Cause;
/// use tower::ServiceBuilder;
///
/// let stack = ServiceBuilder::new()
///     .layer(FallbackLayer::new(|_why: Cause<'_, BoxError>| Some(Vec::<String>::new())));
/// # let _ = stack;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FallbackLayer<R> {
    recover: R,
}

impl<F> FallbackLayer<FromFn<F>> {
    /// A fallback that answers at once, in the one fallback shape: `f` gets
    /// the [`Cause`](crate::Cause) and returns `Some(response)` to answer
    /// instead, or `None` to let the error through.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::{BoxError, FallbackLayer};
    /// use fusebox::Cause;
    ///
    /// // Degrade only on breaker rejections; other errors go through.
    /// let layer = FallbackLayer::new(|why: Cause<'_, BoxError>| match why {
    ///     Cause::Rejected(_) => Some("degraded page"),
    ///     _ => None,
    /// });
    /// # let _ = layer;
    /// ```
    pub const fn new(f: F) -> Self {
        FallbackLayer {
            recover: FromFn::new(f),
        }
    }
}

impl<F> FallbackLayer<FromFuture<F>> {
    /// A fallback that answers with a future: `f` gets the
    /// [`Cause`](crate::Cause) and returns `Some(future)` of the response to
    /// use instead (a backup service, a queue for later), or `None` to let
    /// the error through.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::{BoxError, FallbackLayer};
    /// use fusebox::Cause;
    ///
    /// let layer = FallbackLayer::with_future(|why: Cause<'_, BoxError>| {
    ///     // ask the backup service, unless the request itself was bad
    ///     why.is_refusal().then(|| async { Ok::<_, BoxError>("from the backup") })
    /// });
    /// # let _ = layer;
    /// ```
    pub const fn with_future(f: F) -> Self {
        FallbackLayer {
            recover: FromFuture::new(f),
        }
    }
}

impl<R> FallbackLayer<R> {
    /// A fallback from any [`Recover`](super::Recover).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::FromFn;
    /// use fusebox::tower::{BoxError, FallbackLayer};
    /// use fusebox::Cause;
    ///
    /// let layer = FallbackLayer::from_recover(FromFn::new(|_why: Cause<'_, BoxError>| None::<()>));
    /// # let _ = layer;
    /// ```
    pub const fn from_recover(recover: R) -> Self {
        FallbackLayer { recover }
    }
}

impl<S, R: Clone> Layer<S> for FallbackLayer<R> {
    type Service = Fallback<S, R>;

    fn layer(&self, inner: S) -> Self::Service {
        Fallback::new(inner, self.recover.clone())
    }
}

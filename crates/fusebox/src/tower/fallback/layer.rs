use super::{Fallback, FromFn, FromFuture};
use tower::Layer;

/// Answers failed requests of the inner service with a fallback.
///
/// # Examples
///
/// ```
/// use fusebox::tower::{BoxError, FallbackLayer};
/// use tower::ServiceBuilder;
///
/// let stack = ServiceBuilder::new()
///     .layer(FallbackLayer::new(|_err: BoxError| Ok::<_, BoxError>(Vec::<String>::new())));
/// # let _ = stack;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FallbackLayer<R> {
    recover: R,
}

impl<F> FallbackLayer<FromFn<F>> {
    /// A fallback that answers at once: `f` gets the error and returns the
    /// response to use instead (`Ok`) or the error to return (`Err`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::{BoxError, FallbackLayer};
    ///
    /// // Degrade only on timeouts and breaker rejections; other errors go through.
    /// let layer = FallbackLayer::new(|err: BoxError| {
    ///     if err.is::<fusebox::Rejected>() {
    ///         Ok::<_, BoxError>("degraded page")
    ///     } else {
    ///         Err(err)
    ///     }
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
    /// A fallback that answers with a future: `f` gets the error and returns a
    /// future of the response to use instead (a backup service, a queue for
    /// later).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::{BoxError, FallbackLayer};
    ///
    /// let layer = FallbackLayer::with_future(|_err: BoxError| async {
    ///     // ask the backup service here
    ///     Ok::<_, BoxError>("from the backup")
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
    ///
    /// let layer = FallbackLayer::from_recover(FromFn::new(|e: BoxError| Err::<(), _>(e)));
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

use super::Retry;
use crate::retry::{AnyError, DefaultBackoff};
use tower::Layer;

/// Retries failed requests of the inner service with a fusebox
/// [`Retry`](crate::retry::Retry) policy; see the [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::retry::{Exponential, Retry, RetryBudget};
/// use fusebox::tower::RetryLayer;
/// use std::time::Duration;
/// use tower::ServiceBuilder;
///
/// let retry = Retry::builder()
///     .max_attempts(3)
///     .backoff(Exponential::doubling(Duration::from_millis(50), Duration::from_secs(1)))
///     .budget(RetryBudget::builder().ratio(0.1).build()?)
///     .build()?;
/// let stack = ServiceBuilder::new().layer(RetryLayer::new(retry));
/// # let _ = stack;
/// # Ok::<(), fusebox::retry::RetryConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct RetryLayer<B = DefaultBackoff, P = AnyError> {
    retry: crate::retry::Retry<B, P>,
}

impl<B, P> RetryLayer<B, P> {
    /// A layer that retries as `retry` says. Clones of the layer, and every
    /// service it builds, share `retry`'s budget.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::RetryLayer;
    ///
    /// let layer = RetryLayer::new(Retry::builder().max_attempts(2).build()?);
    /// assert_eq!(layer.retry().max_attempts(), 2);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub const fn new(retry: crate::retry::Retry<B, P>) -> Self {
        RetryLayer { retry }
    }

    /// The retry policy this layer applies.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::RetryLayer;
    ///
    /// let layer = RetryLayer::new(Retry::builder().build()?);
    /// assert!(layer.retry().budget().is_none());
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn retry(&self) -> &crate::retry::Retry<B, P> {
        &self.retry
    }
}

impl<S, B: Clone, P: Clone> Layer<S> for RetryLayer<B, P> {
    type Service = Retry<S, B, P>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry::new(inner, self.retry.clone())
    }
}

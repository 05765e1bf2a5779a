use super::policy::Rules;
use super::{AnyError, Retry};
use std::time::Duration;
use tower::Layer;

/// Retries failed requests of the inner service; see the [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::tower::RetryLayer;
/// use std::time::Duration;
/// use tower::ServiceBuilder;
///
/// // 3 attempts in all; 50 ms then 100 ms between them.
/// let retry = RetryLayer::new(3, [Duration::from_millis(50), Duration::from_millis(100)]);
/// let stack = ServiceBuilder::new().layer(retry);
/// # let _ = stack;
/// ```
#[derive(Debug, Clone)]
pub struct RetryLayer<B, P = AnyError> {
    rules: Rules<P>,
    backoff: B,
}

impl<B> RetryLayer<B>
where
    B: IntoIterator<Item = Duration> + Clone,
{
    /// At most `max_attempts` attempts per request (the first one included;
    /// 1 means never retry), waiting the successive delays of `backoff`
    /// between them. Each request starts a fresh copy of `backoff`; when it
    /// runs out, so do the retries.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    ///
    /// // Constant backoff: 5 attempts, 20 ms apart.
    /// let layer = RetryLayer::new(5, std::iter::repeat(Duration::from_millis(20)));
    /// # let _ = layer;
    /// ```
    pub fn new(max_attempts: u32, backoff: B) -> Self {
        RetryLayer {
            rules: Rules {
                max_attempts,
                retryable: AnyError,
                refusals: false,
            },
            backoff,
        }
    }
}

impl<B, P> RetryLayer<B, P> {
    /// Retries only the errors `retryable` accepts (all errors by default).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::{BoxError, RetryLayer};
    /// use std::time::Duration;
    ///
    /// let layer = RetryLayer::new(3, [Duration::from_millis(10); 2])
    ///     .when(|e: &BoxError| e.is::<fusebox::Elapsed>());
    /// # let _ = layer;
    /// ```
    pub fn when<P2>(self, retryable: P2) -> RetryLayer<B, P2> {
        RetryLayer {
            rules: Rules {
                max_attempts: self.rules.max_attempts,
                retryable,
                refusals: self.rules.refusals,
            },
            backoff: self.backoff,
        }
    }

    /// Also retries fusebox's own refusals (a breaker's
    /// [`Rejected`](crate::Rejected), a [`BulkheadFull`](crate::BulkheadFull)),
    /// waiting at least the rejection's `retry_after`. A breaker forced open
    /// is still not retried. Off by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    ///
    /// let layer = RetryLayer::new(2, [Duration::from_millis(10)]).retry_refusals();
    /// # let _ = layer;
    /// ```
    pub fn retry_refusals(mut self) -> Self {
        self.rules.refusals = true;
        self
    }
}

impl<S, B: Clone, P: Clone> Layer<S> for RetryLayer<B, P> {
    type Service = Retry<S, B, P>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry::from_parts(inner, self.rules.clone(), self.backoff.clone())
    }
}

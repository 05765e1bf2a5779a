use super::policy::Rules;
use super::Retry;
use crate::retry::{AnyError, RetryBudget};
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
    /// 0 and 1 both mean never retry), waiting the successive delays of
    /// `backoff` between them. Each request starts a fresh copy of `backoff`;
    /// when it runs out, so do the retries.
    ///
    /// # Default
    ///
    /// - `retry_if`: [`AnyError`] (every error of a call that ran)
    /// - `retry_timeouts`: true; `retry_rejections`: false
    /// - `budget`: none
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
                retry_if: AnyError,
                rejections: false,
                timeouts: true,
                budget: None,
            },
            backoff,
        }
    }
}

impl<B, P> RetryLayer<B, P> {
    /// Retries a call's own error only when `retry_if` says so (every error
    /// by default). Fusebox's refusals and timeouts are not asked about: see
    /// [`retry_rejections`](Self::retry_rejections) and
    /// [`retry_timeouts`](Self::retry_timeouts).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::{BoxError, RetryLayer};
    /// use std::time::Duration;
    ///
    /// // Connection errors are worth another try; anything else is not.
    /// let layer = RetryLayer::new(3, [Duration::from_millis(10); 2])
    ///     .retry_if(|e: &BoxError| e.is::<std::io::Error>());
    /// # let _ = layer;
    /// ```
    pub fn retry_if<P2>(self, retry_if: P2) -> RetryLayer<B, P2> {
        let Rules {
            max_attempts,
            rejections,
            timeouts,
            budget,
            ..
        } = self.rules;
        RetryLayer {
            rules: Rules {
                max_attempts,
                retry_if,
                rejections,
                timeouts,
                budget,
            },
            backoff: self.backoff,
        }
    }

    /// Whether to retry fusebox's own refusals (a breaker's
    /// [`Rejected`](crate::Rejected), a [`BulkheadFull`](crate::BulkheadFull)),
    /// waiting at least the rejection's `retry_after`. A breaker forced open
    /// is not retried either way. Off by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    ///
    /// let layer = RetryLayer::new(2, [Duration::from_millis(10)]).retry_rejections(true);
    /// # let _ = layer;
    /// ```
    pub fn retry_rejections(mut self, yes: bool) -> Self {
        self.rules.rejections = yes;
        self
    }

    /// Whether to retry a request that timed out ([`Elapsed`](crate::Elapsed)
    /// from a timeout further in). On by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    ///
    /// let layer = RetryLayer::new(2, [Duration::from_millis(10)]).retry_timeouts(false);
    /// # let _ = layer;
    /// ```
    pub fn retry_timeouts(mut self, yes: bool) -> Self {
        self.rules.timeouts = yes;
        self
    }

    /// Limits retries with `budget`: each request deposits into it, each
    /// retry withdraws from it, and a retry it refuses is not made. Share one
    /// budget among every client of a dependency (clones share it).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::RetryBudget;
    /// use fusebox::tower::RetryLayer;
    /// use std::time::Duration;
    ///
    /// let budget = RetryBudget::builder().ratio(0.1).build()?;
    /// let layer = RetryLayer::new(3, [Duration::from_millis(10); 2]).budget(budget);
    /// # let _ = layer;
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn budget(mut self, budget: RetryBudget) -> Self {
        self.rules.budget = Some(budget);
        self
    }
}

impl<S, B: Clone, P: Clone> Layer<S> for RetryLayer<B, P> {
    type Service = Retry<S, B, P>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry::from_parts(inner, self.rules.clone(), self.backoff.clone())
    }
}

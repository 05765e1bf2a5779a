use super::Timeout;
use std::time::Duration;
use tower::Layer;

/// Applies a timeout to requests via the supplied inner service; see the
/// [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::tower::TimeoutLayer;
/// use std::time::Duration;
/// use tower::ServiceBuilder;
///
/// let stack = ServiceBuilder::new().layer(TimeoutLayer::new(Duration::from_millis(300)));
/// # let _ = stack;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    timeout: Duration,
}

impl TimeoutLayer {
    /// A layer whose requests fail with [`Elapsed`](crate::Elapsed) after `timeout`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::TimeoutLayer;
    /// use std::time::Duration;
    ///
    /// let layer = TimeoutLayer::new(Duration::from_millis(300));
    /// assert_eq!(layer.timeout(), Duration::from_millis(300));
    /// ```
    pub const fn new(timeout: Duration) -> Self {
        TimeoutLayer { timeout }
    }

    /// The time each request is given.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::TimeoutLayer;
    /// use std::time::Duration;
    ///
    /// assert_eq!(TimeoutLayer::new(Duration::from_secs(1)).timeout(), Duration::from_secs(1));
    /// ```
    pub const fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timeout::new(inner, self.timeout)
    }
}

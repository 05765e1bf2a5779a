use super::RateLimit;
use crate::ratelimit::RateLimiter;
use tower::Layer;

/// Refuses requests over the rate of a [`RateLimiter`]; see the [module
/// docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::ratelimit::{RateLimitConfig, RateLimitLayer, RateLimiter};
/// use tower::ServiceBuilder;
///
/// let partner = RateLimiter::new(RateLimitConfig::per_second(100))?;
/// let stack = ServiceBuilder::new().layer(RateLimitLayer::new(partner));
/// # let _ = stack;
/// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    limiter: RateLimiter,
}

impl RateLimitLayer {
    /// Creates a layer that takes its cells from `limiter`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimitLayer, RateLimiter};
    /// let layer = RateLimitLayer::new(RateLimiter::new(RateLimitConfig::per_second(4))?);
    /// assert_eq!(layer.limiter().config().per_second, Some(4));
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub const fn new(limiter: RateLimiter) -> Self {
        RateLimitLayer { limiter }
    }

    /// The limiter this layer applies.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimitLayer, RateLimiter};
    /// let layer = RateLimitLayer::new(RateLimiter::new(RateLimitConfig::per_second(4))?);
    /// assert_eq!(layer.limiter().snapshot().admitted, 0);
    /// # Ok::<(), fusebox::ratelimit::RateLimitConfigError>(())
    /// ```
    pub fn limiter(&self) -> &RateLimiter {
        &self.limiter
    }
}

impl From<RateLimiter> for RateLimitLayer {
    /// The layer of a limiter handle.
    fn from(limiter: RateLimiter) -> Self {
        RateLimitLayer::new(limiter)
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit::new(inner, self.limiter.clone())
    }
}

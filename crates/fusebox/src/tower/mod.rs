//! Tower middleware for every fusebox policy (feature `tower`).
//!
//! Each policy is a [`Layer`](::tower::Layer) + a [`Service`](::tower::Service) +
//! a `ResponseFuture`, laid out like tower's own middleware, so a tower user
//! stacks them with `ServiceBuilder` as usual:
//!
//! | policy | layer | service | errors it adds (downcast the [`BoxError`]) |
//! |---|---|---|---|
//! | circuit breaker | [`CircuitBreakerLayer`] | [`breaker::CircuitBreaker`] | [`Rejected`](crate::Rejected) |
//! | bulkhead | [`BulkheadLayer`] | [`bulkhead::Bulkhead`] | [`BulkheadFull`](crate::BulkheadFull) |
//! | timeout (feature `tokio`) | `TimeoutLayer` | `timeout::Timeout` | [`Elapsed`](crate::Elapsed) |
//! | retry (feature `tokio`) | `RetryLayer` | `retry::Retry` | none: sends the request again as a [`Retry`](crate::retry::Retry) policy says |
//! | hedge (feature `tokio`) | `HedgeLayer` | `hedge::Hedge` | none: sends a slow request again, first success wins |
//! | adaptive limit (feature `limit`) | `AdaptiveLimitLayer` | `admission::Admission` | `fusebox::limit::LimitExceeded` |
//! | throttle (feature `throttle`) | `ThrottleLayer` | `admission::Admission` | `fusebox::throttle::Throttled` |
//! | fallback | [`FallbackLayer`] | [`fallback::Fallback`] | none: replaces errors |
//! | rate limiter (feature `ratelimit`) | `fusebox::ratelimit::RateLimitLayer` | `fusebox::ratelimit::tower::RateLimit` | `fusebox::ratelimit::RateLimited` |
//!
//! Only the layers are at this module's root; each service is in its
//! policy's module, as in tower (`tower::timeout::Timeout`). So
//! `use fusebox::*; use fusebox::tower::*;` brings no type twice (the policy
//! modules, `retry`, `bulkhead`, `fallback`, `timeout`, `hedge`, are on both sides:
//! name them by path); `fusebox::prelude` is the short form of both.
//!
//! On this path every error is a [`BoxError`]: the inner service's own errors
//! pass through unchanged, and fusebox's refusals are boxed fusebox types, so
//! `err.downcast_ref::<fusebox::Rejected>()` tells a fast-fail from a failure.
//!
//! # Order
//!
//! Outermost first: fallback, retry, breaker, bulkhead, timeout, then the
//! service. The timeout sits inside the breaker so that a call that timed out
//! counts as a failure; the bulkhead sits inside the breaker so that the breaker
//! rejects before a bulkhead slot is taken, and the breaker's default
//! classifier ignores a full bulkhead (it is not the dependency's answer).
//! The retry sits outside the breaker so that every attempt asks it, and an
//! opening breaker ends the retries.
//!
//! The `tower_axum` example (`crates/fusebox/examples/`) puts all five in
//! front of a slow dependency inside an axum app.
//!
//! # Examples
//!
//! ```
//! use fusebox::tower::CircuitBreakerLayer;
//! use tower::{service_fn, Service, ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), fusebox::tower::BoxError> {
//! let breaker = fusebox::CircuitBreaker::builder().build()?;
//! let mut svc = ServiceBuilder::new()
//!     .layer(CircuitBreakerLayer::new(breaker))
//!     .service(service_fn(|name: &'static str| async move {
//!         Ok::<_, std::io::Error>(format!("hello, {name}"))
//!     }));
//!
//! let reply = svc.ready().await?.call("fusebox").await?;
//! assert_eq!(reply, "hello, fusebox");
//! # Ok(())
//! # }
//! ```

#[cfg(any(feature = "limit", feature = "throttle"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "limit", feature = "throttle"))))]
pub mod admission;
pub mod breaker;
pub mod bulkhead;
pub mod fallback;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod hedge;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod retry;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod timeout;

// Only the layers at this level: the services keep tower's names
// (`breaker::CircuitBreaker<S>`, ...) in their modules, so
// `use fusebox::*; use fusebox::tower::*;` has no name in both.
#[cfg(feature = "limit")]
#[cfg_attr(docsrs, doc(cfg(feature = "limit")))]
pub use self::admission::AdaptiveLimitLayer;
#[cfg(feature = "throttle")]
#[cfg_attr(docsrs, doc(cfg(feature = "throttle")))]
pub use self::admission::ThrottleLayer;
pub use self::breaker::CircuitBreakerLayer;
pub use self::bulkhead::BulkheadLayer;
pub use self::fallback::FallbackLayer;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use self::hedge::HedgeLayer;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use self::retry::RetryLayer;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use self::timeout::TimeoutLayer;

/// The error type on the tower path: any error, boxed.
///
/// The same alias as `tower::BoxError`; downcast it to fusebox's types.
///
/// # Examples
///
/// ```
/// use fusebox::tower::BoxError;
///
/// let err: BoxError = fusebox::Bulkhead::new(0).try_acquire().unwrap_err().into();
/// assert!(err.is::<fusebox::BulkheadFull>());
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

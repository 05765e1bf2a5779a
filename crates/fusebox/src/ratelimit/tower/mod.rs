//! Tower middleware that refuses requests over a [rate
//! limiter](crate::ratelimit::RateLimiter)'s rate (feature `tower`).
//!
//! [`RateLimitLayer`] wraps a service in a [`RateLimit`] service.
//! `poll_ready` takes a cell *without waiting*, before it asks the inner
//! service whether it is ready. When the rate is spent, `poll_ready` is
//! still ready and the request is refused in `call`: its future resolves at
//! once to an error that downcasts to
//! [`RateLimited`](crate::ratelimit::RateLimited) (with when to come back),
//! and the inner service is not called. In shadow mode every request goes
//! through and the limiter counts those it would have refused.
//!
//! This sheds the excess instead of queueing it, like the bulkhead layer. To
//! delay requests until the rate allows them instead, use tower's own
//! `RateLimit` (a fixed window that sleeps in `poll_ready`).
//!
//! A cell is taken when `poll_ready` admits, and is spent even if `call`
//! never follows. A refusal is re-checked by the next `poll_ready`. Clones
//! of the layer and of the service share the one limiter.
//!
//! The refusal is a fusebox refusal: a
//! [`CircuitBreakerLayer`](crate::tower::CircuitBreakerLayer) outside this
//! layer does not count it as a failure, and
//! [`PolicyError::cause`](crate::PolicyError::cause) on the boxed error is
//! [`Cause::Refused`](crate::Cause::Refused).
//!
//! # Examples
//!
//! ```
//! use fusebox::ratelimit::{RateLimitConfig, RateLimitLayer, RateLimited, RateLimiter};
//! use fusebox::tower::BoxError;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), BoxError> {
//! let limiter = RateLimiter::builder()
//!     .config(RateLimitConfig::per_second(1))
//!     .clock(fusebox::ManualClock::new())
//!     .build()?;
//! let mut svc = RateLimitLayer::new(limiter)
//!     .layer(service_fn(|x: u32| async move { Ok::<_, BoxError>(x) }));
//!
//! assert_eq!(svc.ready().await?.call(1).await?, 1);
//! let err = svc.ready().await?.call(2).await.unwrap_err();
//! assert!(err.downcast_ref::<RateLimited>().is_some());
//! # Ok(())
//! # }
//! ```

pub mod future;
mod layer;
mod service;

pub use self::layer::RateLimitLayer;
pub use self::service::RateLimit;

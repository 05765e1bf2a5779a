//! Middleware that guards a service with a [circuit breaker](crate::CircuitBreaker).
//!
//! [`CircuitBreakerLayer`] wraps a service in a [`CircuitBreaker`] service.
//! For every request it asks the breaker for a permit *before* it asks the
//! inner service whether it is ready, so an open breaker answers at once even
//! when the inner service is stuck. When the response future completes, a
//! [classifier](Classify) turns the result into a verdict for the breaker.
//!
//! # Rejections
//!
//! `poll_ready` never returns a breaker error: tower treats an error from
//! `poll_ready` as fatal for the service. By default a refused request is
//! answered in `call`: the future resolves at once to an error that downcasts
//! to [`Rejected`](crate::Rejected), and the inner service is not called.
//!
//! With `CircuitBreakerLayer::back_pressure` (feature `tokio`), `poll_ready`
//! instead stays pending while the breaker is open and wakes when the breaker's
//! `retry_after` has passed, so callers that wait for readiness (a `Buffer`, a
//! load balancer) hold off instead of failing. A breaker that is *forced*
//! open has no `retry_after`; it is still answered with a rejection in `call`.
//!
//! # Cancellation
//!
//! The permit lives in the response future. Dropping the future before it
//! completes releases the permit without a verdict: a half-open breaker gets
//! its probe slot back instead of waiting for a probe that will never report.
//! A permit taken by `poll_ready` and never used (the service is dropped, or
//! `call` is never made) is released the same way. An inner future that
//! panics counts as a failure.
//!
//! # A ready service holds its permit
//!
//! Tower's contract: a service that answered `poll_ready` with `Ready(Ok(()))`
//! has reserved what its next `call` needs, and keeps it until that call or
//! until it is dropped. Here that is the breaker's permit, and while the
//! breaker is half-open, one of its few probe slots. A clone made ready and
//! then left idle (kept in a struct, parked in a pool, forgotten in a
//! `select!` branch that lost) holds its probe for as long as it lives:
//! every other caller is refused as half-open, and the breaker cannot
//! close, however long it waits. The same holds while the inner service is
//! not ready yet: the permit is taken first, so a clone waiting in
//! `poll_ready` for a busy inner service (a concurrency limit, a buffer)
//! holds it meanwhile.
//!
//! So make a service ready right before calling it
//! (`svc.ready().await?.call(req)`), and drop a ready clone that will not be
//! called. Where readiness may wait, give the whole request a deadline that
//! owns the clone, e.g. `tokio::time::timeout(d, svc.clone().oneshot(req))`:
//! when it fires, the clone and its permit are dropped. (A timeout layer,
//! tower's or this crate's `TimeoutLayer`, times the
//! response future only, not `poll_ready`.)
//!
//! # Examples
//!
//! HTTP-style classification: 5xx responses and transport errors are failures,
//! 4xx responses are the caller's fault and do not count.
//!
//! ```
//! use fusebox::tower::CircuitBreakerLayer;
//! use fusebox::{Outcome, Rejected};
//! use tower::{service_fn, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), fusebox::tower::BoxError> {
//! let breaker = fusebox::CircuitBreaker::builder()
//!     .consecutive_failures(2)
//!     .build()?;
//! let layer = CircuitBreakerLayer::new(breaker.clone()).classify(
//!     |res: &Result<u16, std::io::Error>| match res {
//!         Ok(status) if *status >= 500 => Outcome::Failure,
//!         Ok(_) => Outcome::Success,
//!         Err(_) => Outcome::Failure,
//!     },
//! );
//! let mut svc = tower::Layer::layer(&layer, service_fn(|status: u16| async move {
//!     Ok::<_, std::io::Error>(status)
//! }));
//!
//! // 404s do not trip the breaker...
//! for _ in 0..5 {
//!     assert_eq!(svc.ready().await?.call(404).await?, 404);
//! }
//! // ...two 503s in a row do.
//! for _ in 0..2 {
//!     svc.ready().await?.call(503).await?;
//! }
//! let err = svc.ready().await?.call(200).await.unwrap_err();
//! assert!(err.downcast_ref::<Rejected>().is_some());
//! # Ok(())
//! # }
//! ```

mod classify;
pub mod error;
pub mod future;
mod layer;
mod service;

pub use self::classify::{Classify, DefaultClassifier};
pub use self::layer::CircuitBreakerLayer;
pub use self::service::CircuitBreaker;
#[cfg(feature = "tokio")]
pub use self::service::BACK_PRESSURE_MIN_WAIT;

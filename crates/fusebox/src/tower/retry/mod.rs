//! Middleware that retries failed requests (features `tower` and `tokio`).
//!
//! [`RetryLayer`] wraps a service in a [`Retry`] service. It makes the same
//! decisions as [`fusebox::retry::Retry`](crate::retry::Retry), on the boxed
//! errors of the tower path: a failed request is sent again after the next
//! delay of a backoff (any `Iterator` of [`Duration`](std::time::Duration)s,
//! such as [`fusebox::retry::backoff`](crate::retry::backoff)'s), up to a
//! number of attempts, when a [`RetryIf`](crate::retry::RetryIf) predicate says
//! the error is worth it.
//!
//! Retries must not turn a small fault into a storm, so:
//!
//! * A [`RetryBudget`](crate::retry::RetryBudget) shared by every caller of
//!   the dependency ([`RetryLayer::budget`]) caps retries at a fraction of
//!   recent requests.
//! * A refusal by fusebox itself ([`Rejected`](crate::Rejected) by a breaker,
//!   [`BulkheadFull`](crate::BulkheadFull)) is never retried unless
//!   [`RetryLayer::retry_rejections`] asks for it; then the wait is at least
//!   the rejection's `retry_after`, and a breaker forced open is not retried.
//! * Put the retry layer *outside* the breaker (the documented order is
//!   fallback, retry, breaker, bulkhead, timeout): every attempt then goes
//!   through the breaker, and once it opens the retries stop at once.
//!
//! The service and the request must be `Clone`: the response future keeps a
//! clone of each to send the request again. Waiting uses tokio's timer.
//!
//! # Examples
//!
//! ```
//! use fusebox::tower::{BoxError, RetryLayer};
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! let calls = Arc::new(AtomicU32::new(0));
//! let flaky = {
//!     let calls = calls.clone();
//!     service_fn(move |()| {
//!         let n = calls.fetch_add(1, Ordering::Relaxed);
//!         async move { if n < 2 { Err::<u32, BoxError>("flaky".into()) } else { Ok(n) } }
//!     })
//! };
//! // Up to 4 attempts, waiting 10 ms, 20 ms, 40 ms between them.
//! let backoff = [10, 20, 40].map(Duration::from_millis);
//! let mut svc = RetryLayer::new(4, backoff).layer(flaky);
//!
//! assert_eq!(svc.ready().await?.call(()).await?, 2);
//! assert_eq!(calls.load(Ordering::Relaxed), 3);
//! # Ok(())
//! # }
//! ```

pub mod future;
mod layer;
mod policy;
mod service;

pub use self::layer::RetryLayer;
pub use self::service::Retry;

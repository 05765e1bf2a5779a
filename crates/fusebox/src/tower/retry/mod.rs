//! Middleware that retries failed requests with a fusebox
//! [`Retry`](crate::retry::Retry) (features `tower` and `tokio`).
//!
//! [`RetryLayer`] wraps a service in a [`Retry`] service that makes exactly
//! the decisions of the [`Retry`](crate::retry::Retry) policy it is given, on
//! the boxed errors of the tower path: the attempts, the backoff, the
//! [`RetryIf`](crate::retry::RetryIf) predicate (it sees the
//! [`BoxError`](crate::tower::BoxError)), the shared
//! [`RetryBudget`](crate::retry::RetryBudget), and:
//!
//! * a refusal by fusebox itself ([`Rejected`](crate::Rejected) by a breaker,
//!   [`BulkheadFull`](crate::BulkheadFull)) is retried only with
//!   `retry_rejections(true)`, then no sooner than the rejection's
//!   `retry_after`, and never while a breaker is forced open;
//! * a timeout ([`Elapsed`](crate::Elapsed)) is retried unless
//!   `retry_timeouts(false)`.
//!
//! Waits use tokio's timer (the policy's own sleeper is for the sync path).
//! Put the retry layer *outside* the breaker (the documented order is
//! fallback, retry, breaker, bulkhead, timeout): every attempt then asks the
//! breaker, and once it opens the retries stop at once.
//!
//! The service and the request must be `Clone`: the response future keeps a
//! clone of each to send the request again (when the policy allows more
//! than one attempt; with `max_attempts(1)` nothing is cloned).
//!
//! # Examples
//!
//! ```
//! use fusebox::retry::{Constant, Retry};
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
//! let retry = Retry::builder()
//!     .max_attempts(4)
//!     .backoff(Constant::new(Duration::from_millis(10)))
//!     .build()?;
//! let mut svc = RetryLayer::new(retry).layer(flaky);
//!
//! assert_eq!(svc.ready().await?.call(()).await?, 2);
//! assert_eq!(calls.load(Ordering::Relaxed), 3);
//! # Ok(())
//! # }
//! ```

pub mod future;
mod layer;
mod service;

pub use self::layer::RetryLayer;
pub use self::service::Retry;

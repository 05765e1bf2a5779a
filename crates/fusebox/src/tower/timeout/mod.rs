//! Middleware that bounds how long a request may take (features `tower` and
//! `tokio`).
//!
//! [`TimeoutLayer`] wraps a service in a [`Timeout`] service. The clock starts
//! in `call` (time spent waiting for readiness is not counted). When the
//! deadline passes first, the inner future is dropped (cancelled) and the
//! request fails with fusebox's [`Elapsed`](crate::Elapsed), boxed, which a
//! breaker further out counts as a failure.
//!
//! This is tower's own timeout with fusebox's error type, so that one
//! `downcast_ref::<fusebox::Elapsed>()` recognises a timeout from any fusebox
//! policy, on the tower path or not. It needs a tokio runtime with the time
//! driver.
//!
//! # Examples
//!
//! ```
//! use fusebox::tower::{BoxError, TimeoutLayer};
//! use std::time::Duration;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! let mut svc = TimeoutLayer::new(Duration::from_millis(100)).layer(service_fn(|()| async {
//!     tokio::time::sleep(Duration::from_secs(5)).await; // a sick dependency
//!     Ok::<_, BoxError>("too late")
//! }));
//! let err = svc.ready().await?.call(()).await.unwrap_err();
//! assert!(err.is::<fusebox::Elapsed>());
//! # Ok(())
//! # }
//! ```

pub mod error;
pub mod future;
mod layer;
mod service;

pub use self::layer::TimeoutLayer;
pub use self::service::Timeout;

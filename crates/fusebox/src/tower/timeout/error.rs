//! Error types
//!
//! A request that ran out of time fails with [`Elapsed`], boxed:
//!
//! ```
//! use fusebox::tower::timeout::error::Elapsed;
//! use fusebox::tower::{BoxError, TimeoutLayer};
//! use std::time::Duration;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), BoxError> {
//! let mut svc = TimeoutLayer::new(Duration::from_millis(10))
//!     .layer(service_fn(|()| std::future::pending::<Result<(), BoxError>>()));
//! let err = svc.ready().await?.call(()).await.unwrap_err();
//! assert!(err.downcast_ref::<Elapsed>().is_some());
//! # Ok(())
//! # }
//! ```

pub use crate::Elapsed;

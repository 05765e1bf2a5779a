//! Error types
//!
//! A request refused by a full bulkhead fails with [`BulkheadFull`], boxed:
//!
//! ```
//! use fusebox::tower::bulkhead::error::BulkheadFull;
//! use fusebox::tower::{BoxError, BulkheadLayer};
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), BoxError> {
//! let mut svc = BulkheadLayer::new(fusebox::Bulkhead::new(0))
//!     .layer(service_fn(|()| async { Ok::<_, BoxError>(()) }));
//! let err = svc.ready().await?.call(()).await.unwrap_err();
//! assert_eq!(err.downcast_ref::<BulkheadFull>().unwrap().limit(), 0);
//! # Ok(())
//! # }
//! ```

pub use crate::BulkheadFull;

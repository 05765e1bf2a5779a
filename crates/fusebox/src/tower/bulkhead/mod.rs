//! Middleware that limits how many requests are in flight to the inner service
//! with a [bulkhead](crate::Bulkhead).
//!
//! [`BulkheadLayer`] wraps a service in a [`Bulkhead`] service. `poll_ready`
//! takes a slot *without waiting*, before it asks the inner service whether it
//! is ready. When every slot is taken, `poll_ready` is still ready and the
//! request is refused in `call`: its future resolves at once to an error that
//! downcasts to [`BulkheadFull`](crate::BulkheadFull), and the inner service
//! is not called. This is seed 001's lesson: never queue behind a sick
//! dependency; a full bulkhead is an answer, not a wait. (To wait for a slot
//! instead, use tower's own `ConcurrencyLimit`.)
//!
//! The slot is held by the response future and freed when it completes or is
//! dropped. Clones of the layer and of the service share the one bulkhead.
//!
//! # Examples
//!
//! ```
//! use fusebox::tower::{BoxError, BulkheadLayer};
//! use fusebox::BulkheadFull;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), BoxError> {
//! let bulkhead = fusebox::Bulkhead::new(1);
//! let mut svc = BulkheadLayer::new(bulkhead.clone())
//!     .layer(service_fn(|x: u32| async move { Ok::<_, BoxError>(x) }));
//!
//! let slot = bulkhead.try_acquire()?; // someone else holds the only slot
//! let err = svc.ready().await?.call(1).await.unwrap_err();
//! assert_eq!(err.downcast_ref::<BulkheadFull>().map(|f| f.limit()), Some(1));
//! drop(slot);
//! assert_eq!(svc.ready().await?.call(2).await?, 2);
//! # Ok(())
//! # }
//! ```

pub mod error;
pub mod future;
mod layer;
mod service;

pub use self::layer::BulkheadLayer;
pub use self::service::Bulkhead;

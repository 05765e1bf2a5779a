//! Middleware that answers with something else when the inner service fails.
//!
//! [`FallbackLayer`] wraps a service in a [`Fallback`] service. When the inner
//! call fails (a breaker rejection, a full bulkhead, a timeout, or the
//! dependency's own error: all [`BoxError`](crate::tower::BoxError)s here),
//! the fallback gets the error and either returns a response in its place or
//! returns an error to let the failure through. Successful responses pass
//! untouched, and so do errors from `poll_ready` (tower treats those as fatal
//! for the service, not as a failed request).
//!
//! The fallback is synchronous ([`FallbackLayer::new`]: a cached value, a
//! default, a degraded page) or asynchronous ([`FallbackLayer::with_future`]:
//! a backup service, a queue for later).
//!
//! The fallback has the one shape every fusebox fallback has (the
//! pipeline's, [`crate::Fallback`]'s, the HTTP stack's): it gets a
//! [`Cause`](crate::Cause) (a breaker rejected the request, with its
//! `retry_after`; the bulkhead was full; it timed out; or it failed, the
//! original error reachable with [`Cause::downcast_ref`](crate::Cause::downcast_ref))
//! and returns `Some(response)` or `None` to let the error through.
//!
//! # Examples
//!
//! A product page whose reviews are optional: whatever goes wrong, show a
//! placeholder, and say why.
//!
//! ```
//! use fusebox::tower::{BoxError, FallbackLayer};
//! use fusebox::Cause;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), BoxError> {
//! let layer = FallbackLayer::new(|why: Cause<'_, BoxError>| match why {
//!     Cause::Rejected(_) => Some("reviews are resting (breaker open)".to_string()),
//!     Cause::BulkheadFull(_) => Some("reviews are busy".to_string()),
//!     Cause::Failed(err) => Some(format!("reviews unavailable: {err}")),
//!     _ => None,
//! });
//! let mut reviews = layer.layer(service_fn(|_id: u32| async {
//!     Err::<String, BoxError>("database is down".into())
//! }));
//!
//! let shown = reviews.ready().await?.call(7).await?;
//! assert_eq!(shown, "reviews unavailable: database is down");
//! # Ok(())
//! # }
//! ```

pub mod future;
mod layer;
mod recover;
mod service;

pub use self::layer::FallbackLayer;
pub use self::recover::{FromFn, FromFuture, OrError, Recover};
pub use self::service::Fallback;

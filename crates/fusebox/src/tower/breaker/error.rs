//! Error types
//!
//! A request refused by the breaker fails with [`Rejected`], boxed. It says
//! which state refused it and when to come back:
//!
//! ```
//! use fusebox::tower::{BoxError, CircuitBreakerLayer};
//! use fusebox::tower::breaker::error::Rejected;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), BoxError> {
//! let breaker = fusebox::CircuitBreaker::builder().build()?;
//! breaker.force_open();
//! let mut svc = CircuitBreakerLayer::new(breaker)
//!     .layer(service_fn(|()| async { Ok::<_, BoxError>(()) }));
//!
//! let err = svc.ready().await?.call(()).await.unwrap_err();
//! let rejected = err.downcast_ref::<Rejected>().expect("a breaker rejection");
//! assert_eq!(rejected.state(), fusebox::State::ForcedOpen);
//! # Ok(())
//! # }
//! ```

pub use crate::Rejected;

//! The names most code needs, in one glob: `use fusebox::prelude::*;`.
//!
//! The policies, their errors and [`Cause`], the registry's [`Fusebox`],
//! and (with their features) the tower layers and the HTTP stack. The
//! tower *services* are not here: they share their policy's name
//! (`fusebox::tower::breaker::CircuitBreaker<S>`), and a layer is what you
//! write anyway.
//!
//! # Examples
//!
//! ```
//! use fusebox::prelude::*;
//!
//! let breaker = CircuitBreaker::builder().consecutive_failures(3).build()?;
//! let p = Pipeline::builder().breaker(breaker).bulkhead(Bulkhead::new(4)).build();
//! assert_eq!(p.call(|| Ok::<_, std::io::Error>(1)).unwrap(), 1);
//! # Ok::<(), ConfigError>(())
//! ```

pub use crate::registry::Fusebox;
pub use crate::retry::{Retry, RetryBudget};
pub use crate::{
    BoxPipeline, Bulkhead, BulkheadFull, Cause, CircuitBreaker, ConfigError, Elapsed, Error,
    Fallback, Outcome, Pipeline, PipelineError, PolicyError, PolicyStats, Rejected, State,
};

#[cfg(feature = "ratelimit")]
#[cfg_attr(docsrs, doc(cfg(feature = "ratelimit")))]
pub use crate::ratelimit::{RateLimited, RateLimiter};

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use crate::http::{
    Classifier as HttpClassifier, HttpError, RetryPolicy as HttpRetryPolicy, Standard,
};

#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use crate::tower::{BoxError, BulkheadLayer, CircuitBreakerLayer, FallbackLayer};

#[cfg(all(feature = "tower", feature = "tokio"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "tower", feature = "tokio"))))]
pub use crate::tower::{HedgeLayer, RetryLayer, TimeoutLayer};

#[cfg(all(feature = "tower", feature = "limit"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "tower", feature = "limit"))))]
pub use crate::tower::AdaptiveLimitLayer;

#[cfg(all(feature = "tower", feature = "throttle"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "tower", feature = "throttle"))))]
pub use crate::tower::ThrottleLayer;

#[cfg(all(feature = "tower", feature = "http"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "tower", feature = "http"))))]
pub use crate::http::StandardLayer;

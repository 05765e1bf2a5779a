//! fusebox: circuit breaker, bulkhead, timeout, retry and fallback.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

mod clock;
mod sync;

pub mod bulkhead;

pub use bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit, BulkheadSnapshot};
pub use clock::{Clock, ManualClock, MonotonicClock};

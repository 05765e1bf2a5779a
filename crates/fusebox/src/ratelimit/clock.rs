//! fusebox's [`Clock`] as governor's clock, so that one clock (a
//! [`ManualClock`](crate::ManualClock) in tests, a clock that follows
//! tokio's paused time, the default monotonic clock) drives both the
//! limiter's decisions and everything else fusebox times.

use crate::Clock;
use governor::nanos::Nanos;
use std::fmt;
use std::sync::Arc;

/// governor's clock, reading a fusebox [`Clock`]. Instants are governor's
/// [`Nanos`] (nanoseconds from the fusebox clock's origin): a `u64`, cheaper
/// to compare and add than an `Instant`, and what governor stores anyway.
#[derive(Clone)]
pub(crate) struct GovernorClock(pub(crate) Arc<dyn Clock>);

impl GovernorClock {
    /// Now, in governor's units (what `NotUntil::wait_time_from` takes).
    #[inline]
    pub(crate) fn nanos(&self) -> Nanos {
        Nanos::from(self.0.now_nanos())
    }
}

impl governor::clock::Clock for GovernorClock {
    type Instant = Nanos;

    #[inline]
    fn now(&self) -> Nanos {
        // A fusebox clock that runs backwards makes governor see no time
        // pass (its `duration_since` saturates at zero): no panic, no refill.
        self.nanos()
    }
}

impl fmt::Debug for GovernorClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("GovernorClock").field(&self.0.now()).finish()
    }
}

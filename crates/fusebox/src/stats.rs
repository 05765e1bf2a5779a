//! Counters of what the policies around one dependency did: calls, attempts,
//! timeouts, fallbacks by cause. A [`Pipeline`](crate::Pipeline) (and the
//! HTTP standard stack) counts into them when given a [`PolicyStats`];
//! `fusebox::metrics` exports them. Relaxed atomic adds: no lock, no
//! allocation per call.

use crate::cause::Cause;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Shared counters of one dependency's policies; clones count into the same
/// numbers.
///
/// # Examples
///
/// ```
/// use fusebox::{Pipeline, PolicyStats};
/// let stats = PolicyStats::new();
/// let p = Pipeline::builder().fallback_value(0).stats(stats.clone()).build();
/// let _ = p.call(|| Err::<u8, _>(std::io::Error::other("down")));
/// assert_eq!(stats.snapshot().calls, 1);
/// assert_eq!(stats.snapshot().fallbacks[3], 1); // failed
/// ```
#[derive(Clone, Default)]
pub struct PolicyStats {
    inner: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    attempts: AtomicU64,
    timeouts: AtomicU64,
    fallbacks: [AtomicU64; 4],
}

/// The counters of a [`PolicyStats`] at one moment.
///
/// # Examples
///
/// ```
/// let s = fusebox::PolicyStats::new().snapshot();
/// assert_eq!((s.calls, s.attempts, s.timeouts), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct StatsSnapshot {
    /// Guarded calls started.
    pub calls: u64,
    /// Attempts made (the first try and each retry).
    pub attempts: u64,
    /// Attempts (or whole calls) stopped by a timeout.
    pub timeouts: u64,
    /// Fallback answers by cause, in [`PolicyStats::CAUSES`] order.
    pub fallbacks: [u64; 4],
}

impl StatsSnapshot {
    /// Retries made: attempts beyond the first of each call.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::PolicyStats::new().snapshot().retries(), 0);
    /// ```
    pub fn retries(&self) -> u64 {
        self.attempts.saturating_sub(self.calls)
    }
}

impl PolicyStats {
    /// The `cause` labels of the fallback counters, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::PolicyStats::CAUSES[0], "rejected");
    /// ```
    pub const CAUSES: [&'static str; 4] = ["rejected", "bulkhead_full", "timed_out", "failed"];

    /// Counters at zero.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::PolicyStats::new().snapshot().calls, 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    // Relaxed everywhere: independent monotonic counters, read only for
    // reporting; no other memory is published through them.
    pub(crate) fn call(&self) {
        self.inner.calls.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn attempt(&self) {
        self.inner.attempts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn timeout(&self) {
        self.inner.timeouts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn fallback<E>(&self, cause: &Cause<'_, E>) {
        let i = match cause {
            Cause::Rejected(_) => 0,
            Cause::BulkheadFull(_) => 1,
            Cause::TimedOut(_) => 2,
            Cause::Failed(_) => 3,
        };
        self.inner.fallbacks[i].fetch_add(1, Ordering::Relaxed);
    }

    /// The counters now.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::PolicyStats::new().snapshot();
    /// assert_eq!(s.fallbacks, [0; 4]);
    /// ```
    pub fn snapshot(&self) -> StatsSnapshot {
        let c = &self.inner;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            calls: load(&c.calls),
            attempts: load(&c.attempts),
            timeouts: load(&c.timeouts),
            fallbacks: [
                load(&c.fallbacks[0]),
                load(&c.fallbacks[1]),
                load(&c.fallbacks[2]),
                load(&c.fallbacks[3]),
            ],
        }
    }
}

impl fmt::Debug for PolicyStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PolicyStats")
            .field(&self.snapshot())
            .finish()
    }
}

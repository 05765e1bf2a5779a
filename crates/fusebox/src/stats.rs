//! Counters of what the policies around one dependency did: calls, attempts,
//! timeouts, fallbacks by cause. A [`Pipeline`](crate::Pipeline) (and the
//! HTTP standard stack) counts into them when given a [`PolicyStats`];
//! `fusebox::metrics` exports them. Relaxed atomic adds: no lock, no
//! allocation per call.

use crate::policy::{Cause, REFUSAL_LABELS};
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
    fallbacks: [AtomicU64; CAUSE_COUNT],
}

/// The breaker's and the bulkhead's refusal labels, `timed_out`, `failed`
/// (the four of [`StatsSnapshot::fallbacks`]), every other policy's refusal
/// label, and `refused` (a refusal of a policy fusebox does not know).
const CAUSE_COUNT: usize = REFUSAL_LABELS.len() + 3;

const fn causes() -> [&'static str; CAUSE_COUNT] {
    let mut all = [""; CAUSE_COUNT];
    all[0] = REFUSAL_LABELS[0];
    all[1] = REFUSAL_LABELS[1];
    all[2] = "timed_out";
    all[3] = "failed";
    let mut i = 2;
    while i < REFUSAL_LABELS.len() {
        all[i + 2] = REFUSAL_LABELS[i];
        i += 1;
    }
    all[CAUSE_COUNT - 1] = "refused";
    all
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
    /// Fallback answers stopped by the breaker, the bulkhead, a timeout
    /// and the call's own failure: the first four of
    /// [`PolicyStats::CAUSES`]. [`StatsSnapshot::fallbacks_for`] has every
    /// cause.
    pub fallbacks: [u64; 4],
    /// The rest of the causes, in [`PolicyStats::CAUSES`] order.
    more: [u64; CAUSE_COUNT - 4],
}

impl StatsSnapshot {
    /// Fallback answers for one cause label of [`PolicyStats::CAUSES`]
    /// (zero for a label that is not one).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Pipeline, PolicyStats};
    /// let stats = PolicyStats::new();
    /// let p = Pipeline::builder().fallback_value(0).stats(stats.clone()).build();
    /// let _ = p.call(|| Err::<u8, _>(std::io::Error::other("down")));
    /// assert_eq!(stats.snapshot().fallbacks_for("failed"), 1);
    /// assert_eq!(stats.snapshot().fallbacks_for("rejected"), 0);
    /// ```
    pub fn fallbacks_for(&self, cause: &str) -> u64 {
        match PolicyStats::CAUSES.iter().position(|c| *c == cause) {
            Some(i) if i < 4 => self.fallbacks[i],
            Some(i) => self.more[i - 4],
            None => 0,
        }
    }

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
    pub const CAUSES: [&'static str; CAUSE_COUNT] = causes();

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
        let label = cause.label();
        // A refusal of a policy not in the list (a user's own) counts as
        // `refused`, the last label.
        let i = Self::CAUSES
            .iter()
            .position(|c| *c == label)
            .unwrap_or(CAUSE_COUNT - 1);
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
            fallbacks: std::array::from_fn(|i| load(&c.fallbacks[i])),
            more: std::array::from_fn(|i| load(&c.fallbacks[i + 4])),
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

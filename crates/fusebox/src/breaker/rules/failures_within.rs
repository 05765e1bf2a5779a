//! The failures-within rule: trip on the `count`th failure within a period
//! (`failures_within = { count = 5, within = "10s" }`), however many
//! successes come between, so that a dependency failing now and then never
//! trips it but a burst of failures does, whatever the traffic around it.
//!
//! Its cells are the times of the closed period's last `count` failures, in
//! a ring: a failure writes its time over the oldest and trips if the
//! oldest it kept (the failure `count - 1` before it) is less than `within`
//! old. Successes write nothing and are not even looked at. A close empties
//! the ring, under the protocol's guard against verdicts of the period
//! before ([`Period::while_current`]).

use super::{Counted, Needs, Period, TripRule, Verdict};
use crate::breaker::types::Reason;
use crate::sync::{AtomicU64, Ordering};
use std::time::Duration;

/// Trip on the `count`th failure within `within` ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FailuresWithin {
    /// Non-zero, so that an armed rule in an `Option` takes no more room.
    count: std::num::NonZeroU32,
    within: u64,
}

impl FailuresWithin {
    /// Both validated: `count` at least 1, `within` above zero.
    pub(crate) fn new(count: u32, within: u64) -> Self {
        FailuresWithin {
            count: std::num::NonZeroU32::new(count).unwrap_or(std::num::NonZeroU32::MIN),
            within,
        }
    }

    pub(crate) fn count(&self) -> u32 {
        self.count.get()
    }

    /// The period, in ns.
    pub(crate) fn within(&self) -> u64 {
        self.within
    }

    fn reason(&self) -> Reason {
        Reason::FailuresWithin {
            count: self.count.get(),
            within: Duration::from_nanos(self.within),
        }
    }
}

impl TripRule for FailuresWithin {
    const KEYS: &'static [&'static str] = &["failures_within"];
    type Resident = ();
    type Cells = FailureTimes;

    fn needs(&self) -> Needs {
        Needs {
            empties_on_close: true,
            ..Needs::default()
        }
    }

    fn cells_bytes(&self) -> usize {
        size_of::<FailureTimes>().saturating_add(FailureTimes::heap_bytes(self.count.get() as usize))
    }

    fn new_cells(&self) -> FailureTimes {
        FailureTimes::new(self.count.get() as usize)
    }

    /// A ring of the same size keeps its times, whatever the period.
    fn keeps_cells_of(&self, old: &Self) -> bool {
        self.count == old.count
    }

    /// Out of line: the closed path of the other rules keeps its frame.
    #[inline(never)]
    fn record(
        &self,
        _: &(),
        times: &FailureTimes,
        verdict: Verdict,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted {
        if !verdict.failed {
            return Counted::Fresh; // a success changes nothing here
        }
        let now = period.now();
        let Some(oldest) = period.while_current(|| times.add(now)) else {
            return Counted::Stale;
        };
        if oldest.is_some_and(|t| now.saturating_sub(t) < self.within) {
            trip.get_or_insert(self.reason());
        }
        Counted::Fresh
    }

    /// Under the lock: the ring holds the last `count` failures (racing
    /// ones aside); all of them within the period is a trip.
    fn reached(&self, _: &(), times: &FailureTimes, period: &impl Period) -> Option<Reason> {
        let within = times.within(period.now(), self.within);
        (within >= self.count.get()).then(|| self.reason())
    }

    fn owns(reason: &Reason) -> bool {
        matches!(reason, Reason::FailuresWithin { .. })
    }

    fn clear(times: &FailureTimes) {
        times.clear();
    }
}

/// The times of the last failures of a closed period: a ring of one slot
/// per failure counted to a trip, each the failure's time plus one (0: no
/// failure yet).
///
/// Relaxed throughout: a trip a failure suggests is judged again under the
/// breaker's lock ([`TripRule::reached`]); the close that empties the ring
/// waits for every writer (see the module docs) and its state word's
/// release store publishes the emptying.
#[derive(Debug)]
pub(crate) struct FailureTimes {
    times: Box<[AtomicU64]>,
    /// Failures written so far in this closed period.
    next: AtomicU64,
}

impl FailureTimes {
    /// What [`new`](Self::new)`(n)` allocates beyond the struct: one time
    /// per failure counted.
    const fn heap_bytes(n: usize) -> usize {
        (if n == 0 { 1 } else { n }).saturating_mul(size_of::<AtomicU64>())
    }

    fn new(n: usize) -> Self {
        FailureTimes {
            times: (0..n.max(1)).map(|_| AtomicU64::new(0)).collect(),
            next: AtomicU64::new(0),
        }
    }

    /// Writes a failure at `now` over the oldest one; the time of the
    /// failure `n - 1` before it (`n` the ring's size), if the period has
    /// had that many.
    #[inline]
    fn add(&self, now: u64) -> Option<u64> {
        let n = self.times.len() as u64;
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        self.times[(i % n) as usize].store(now.saturating_add(1), Ordering::Relaxed);
        if i + 1 < n {
            return None;
        }
        // The slot the next failure takes: the oldest of the last n.
        let oldest = self.times[((i + 1) % n) as usize].load(Ordering::Relaxed);
        oldest.checked_sub(1)
    }

    /// How many of the failures kept are less than `within` old at `now`.
    fn within(&self, now: u64, within: u64) -> u32 {
        let fresh = self
            .times
            .iter()
            .map(|t| t.load(Ordering::Relaxed))
            .filter(|&t| t != 0 && now.saturating_sub(t - 1) < within)
            .count();
        u32::try_from(fresh).unwrap_or(u32::MAX)
    }

    fn clear(&self) {
        for t in self.times.iter() {
            t.store(0, Ordering::Relaxed);
        }
        self.next.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_of_the_last_n_failures_comes_back() {
        let t = FailureTimes::new(3);
        assert_eq!(t.add(10), None);
        assert_eq!(t.add(20), None);
        assert_eq!(t.add(30), Some(10));
        assert_eq!(t.add(40), Some(20));
        assert_eq!(t.within(40, 25), 3); // 20, 30, 40
        assert_eq!(t.within(40, 20), 2); // 20 is exactly 20 old: out
        t.clear();
        assert_eq!(t.within(40, 100), 0);
        assert_eq!(t.add(0), None, "a failure at time 0 is kept too");
        assert_eq!(t.within(0, 1), 1);
    }

    #[test]
    fn a_ring_of_one_returns_the_failure_itself() {
        let t = FailureTimes::new(1);
        assert_eq!(t.add(7), Some(7));
    }
}

//! The consecutive-failures rule: trip after `n` failures in a row. Its one
//! cell ([`Streak`], resident) is a count tagged with the closed period
//! (generation) it belongs to, so a verdict of an earlier period can never
//! touch a later count, and a success with nothing to reset writes nothing
//! at all.

use super::{Counted, Needs, Period, TripRule, Verdict};
use crate::breaker::types::Reason;
use crate::sync::{AtomicU64, Ordering};

/// Trip after `n` failures in a row (`consecutive_failures`); any success
/// starts the count again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Consecutive {
    /// Non-zero, so that an armed rule in an `Option` takes no more room.
    n: std::num::NonZeroU32,
}

impl Consecutive {
    /// `n` is validated (at least 1).
    pub(crate) fn new(n: u32) -> Self {
        Consecutive {
            n: std::num::NonZeroU32::new(n).unwrap_or(std::num::NonZeroU32::MIN),
        }
    }

    pub(crate) fn n(&self) -> u32 {
        self.n.get()
    }
}

impl TripRule for Consecutive {
    const KEYS: &'static [&'static str] = &["consecutive_failures"];
    type Resident = Streak;
    type Cells = ();

    fn needs(&self) -> Needs {
        // A success resets the streak, which the hot path reads itself
        // (`resident_settled`): nothing else to ask for.
        Needs::default()
    }

    fn new_cells(&self) {}

    /// No cells but the resident streak.
    #[inline(always)]
    fn resident_cells(_: &Streak) -> Option<&()> {
        Some(&())
    }

    fn keeps_cells_of(&self, _: &Self) -> bool {
        true
    }

    #[inline(always)]
    fn record(
        &self,
        streak: &Streak,
        _: &(),
        verdict: Verdict,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted {
        if verdict.failed && !period.is_current() {
            return Counted::Stale; // this permit's closed period is over
        }
        streak.record(period.generation(), verdict.failed, self.n(), trip)
    }

    fn reached(&self, streak: &Streak, _: &(), period: &impl Period) -> Option<Reason> {
        streak.reached(period.generation(), self.n())
    }

    fn owns(reason: &Reason) -> bool {
        matches!(reason, Reason::ConsecutiveFailures { .. })
    }

    /// The failures counted stand (a success since does not undo them);
    /// only a reconfigure that raised the threshold above them does.
    fn confirm(&self, reason: Reason, _: &Streak, _: &(), _: &impl Period) -> Option<Reason> {
        match reason {
            Reason::ConsecutiveFailures { count } if count >= self.n() => Some(reason),
            _ => None,
        }
    }

    #[inline(always)]
    fn resident_settled(streak: &Streak, generation: u64) -> bool {
        streak.is_zero(generation)
    }

    #[inline(always)]
    fn reset_resident(streak: &Streak, generation: u64) {
        streak.reset(generation);
    }
}

/// Bits of the count; it saturates there, far above any threshold the
/// config accepts (10 000 000).
const COUNT_BITS: u32 = 24;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// A count tagged with (the low 40 bits of) its generation. A verdict
/// checks its full generation against the state word before it touches the
/// count, so the tag only has to tell apart the generations that can pass
/// between those two loads.
#[inline(always)]
fn tagged(generation: u64, count: u64) -> u64 {
    (generation << COUNT_BITS) | count.min(COUNT_MASK)
}

#[inline(always)]
fn tag_of(word: u64) -> u64 {
    word >> COUNT_BITS
}

/// `generation` as [`tagged`] keeps it.
#[inline(always)]
fn tag(generation: u64) -> u64 {
    tag_of(tagged(generation, 0))
}

/// Failures in a row in the current closed period.
///
/// Relaxed throughout: the count is tagged with its generation, so a stale
/// verdict cannot touch a newer count; a trip it suggests is re-validated
/// under the breaker's lock; `reset` is published by the release store of
/// the state word that follows it.
#[derive(Debug)]
pub(crate) struct Streak(AtomicU64);

impl Default for Streak {
    fn default() -> Self {
        Streak(AtomicU64::new(tagged(0, 0)))
    }
}

impl Streak {

    /// Starts the count of `generation` at zero (every transition does).
    #[inline]
    pub(crate) fn reset(&self, generation: u64) {
        self.0.store(tagged(generation, 0), Ordering::Relaxed);
    }

    /// Whether the count of `generation` is zero: a success then changes
    /// nothing. One load.
    #[inline(always)]
    pub(crate) fn is_zero(&self, generation: u64) -> bool {
        self.0.load(Ordering::Relaxed) == tagged(generation, 0)
    }

    /// The count of `generation` (zero if the cell holds another's).
    pub(crate) fn count(&self, generation: u64) -> u32 {
        let c = self.0.load(Ordering::Relaxed);
        if tag_of(c) == tag(generation) {
            (c & COUNT_MASK) as u32
        } else {
            0
        }
    }

    /// Counts a verdict of `generation` against a threshold of `n`:
    /// [`Counted::Stale`] if the count belongs to another generation; the
    /// reason goes to `trip` once the count reaches `n`.
    #[inline]
    pub(crate) fn record(
        &self,
        generation: u64,
        failed: bool,
        n: u32,
        trip: &mut Option<Reason>,
    ) -> Counted {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            if tag_of(cur) != tag(generation) {
                return Counted::Stale;
            }
            let count = cur & COUNT_MASK;
            let next = if failed {
                (count + 1).min(COUNT_MASK)
            } else {
                0
            };
            if next == count {
                return Counted::Fresh; // a success with nothing to reset: no write
            }
            match self.0.compare_exchange_weak(
                cur,
                tagged(generation, next),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if next >= u64::from(n) {
                        trip.get_or_insert(Reason::ConsecutiveFailures { count: next as u32 });
                    }
                    return Counted::Fresh;
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// The reason to trip now, when the count of `generation` already
    /// reaches `n` (a reconfigure that lowered the threshold).
    pub(crate) fn reached(&self, generation: u64, n: u32) -> Option<Reason> {
        let count = self.count(generation);
        (count >= n).then_some(Reason::ConsecutiveFailures { count })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_trips_and_resets_within_one_generation() {
        let c = Streak::default();
        c.reset(7);
        assert!(c.is_zero(7));
        let mut trip = None;
        assert_eq!(c.record(7, true, 2, &mut trip), Counted::Fresh);
        assert_eq!(trip, None);
        assert_eq!(c.record(7, true, 2, &mut trip), Counted::Fresh);
        assert_eq!(trip, Some(Reason::ConsecutiveFailures { count: 2 }));
        assert_eq!(c.count(7), 2);
        assert_eq!(c.record(7, false, 2, &mut None), Counted::Fresh);
        assert!(c.is_zero(7));
    }

    #[test]
    fn a_verdict_of_another_generation_is_stale() {
        let c = Streak::default();
        c.reset(3);
        assert_eq!(c.record(2, true, 1, &mut None), Counted::Stale);
        assert_eq!(c.count(3), 0);
        assert_eq!(c.count(2), 0);
    }

    #[test]
    fn the_count_saturates() {
        let c = Streak::default();
        c.0.store(tagged(1, COUNT_MASK), Ordering::Relaxed);
        let mut trip = None;
        assert_eq!(c.record(1, true, 5, &mut trip), Counted::Fresh);
        assert_eq!(trip, None);
        assert_eq!(u64::from(c.count(1)), COUNT_MASK);
    }
}

//! The consecutive-failures rule: trip after `n` failures in a row. Its one
//! cell is a count tagged with the closed period (generation) it belongs
//! to, so a verdict of an earlier period can never touch a later count, and
//! a success with nothing to reset writes nothing at all.

use crate::breaker::types::Reason;
use crate::sync::{AtomicU64, Ordering};

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

/// What a verdict did to the count.
pub(crate) enum Counted {
    /// The verdict's closed period is over: it counts for nothing.
    Stale,
    /// Counted (or nothing to change); `Some` when the count reached the
    /// threshold.
    Fresh(Option<Reason>),
}

/// Failures in a row in the current closed period.
///
/// Relaxed throughout: the count is tagged with its generation, so a stale
/// verdict cannot touch a newer count; a trip it suggests is re-validated
/// under the breaker's lock; `reset` is published by the release store of
/// the state word that follows it.
#[derive(Debug)]
pub(crate) struct Consecutive(AtomicU64);

impl Consecutive {
    pub(crate) fn new() -> Self {
        Consecutive(AtomicU64::new(tagged(0, 0)))
    }

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

    /// Counts a verdict of `generation` against a threshold of `n`.
    #[inline]
    pub(crate) fn record(&self, generation: u64, failed: bool, n: u32) -> Counted {
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
                return Counted::Fresh(None); // a success with nothing to reset: no write
            }
            match self.0.compare_exchange_weak(
                cur,
                tagged(generation, next),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    let trip = (next >= u64::from(n))
                        .then_some(Reason::ConsecutiveFailures { count: next as u32 });
                    return Counted::Fresh(trip);
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
        let c = Consecutive::new();
        c.reset(7);
        assert!(c.is_zero(7));
        assert!(matches!(c.record(7, true, 2), Counted::Fresh(None)));
        assert!(matches!(c.record(7, true, 2), Counted::Fresh(Some(_))));
        assert_eq!(c.count(7), 2);
        assert!(matches!(c.record(7, false, 2), Counted::Fresh(None)));
        assert!(c.is_zero(7));
    }

    #[test]
    fn a_verdict_of_another_generation_is_stale() {
        let c = Consecutive::new();
        c.reset(3);
        assert!(matches!(c.record(2, true, 1), Counted::Stale));
        assert_eq!(c.count(3), 0);
        assert_eq!(c.count(2), 0);
    }

    #[test]
    fn the_count_saturates() {
        let c = Consecutive::new();
        c.0.store(tagged(1, COUNT_MASK), Ordering::Relaxed);
        assert!(matches!(c.record(1, true, 5), Counted::Fresh(None)));
        assert_eq!(u64::from(c.count(1)), COUNT_MASK);
    }
}

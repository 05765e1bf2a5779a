//! The slow-call rule: a call taking at least a threshold is slow; trip when
//! slow calls / calls in the window reach a rate, and reopen a half-open
//! breaker whose successful probes were slow at that rate. Like the
//! failure-rate rule it judges the totals of the shared window
//! ([`super::windowed`]); what it adds is the classification of a call as
//! slow, for which every call is timed.

use super::windowed::RateRule;
use crate::breaker::types::Reason;
use crate::breaker::window::Totals;

/// A call taking at least `threshold` ns is slow; trip when slow / calls >=
/// `rate` (`slow_call_duration`, `slow_call_rate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SlowCalls {
    threshold: u64,
    rate: f64,
}

impl SlowCalls {
    /// Both validated: `threshold` above zero, `rate` in (0, 1].
    pub(crate) fn new(threshold: u64, rate: f64) -> Self {
        SlowCalls { threshold, rate }
    }

    /// The threshold, in ns.
    pub(crate) fn threshold(&self) -> u64 {
        self.threshold
    }

    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }

    /// Whether a call that took `elapsed` ns is slow.
    #[inline]
    pub(crate) fn is_slow(&self, elapsed: u64) -> bool {
        elapsed >= self.threshold
    }

    /// The reason to reopen rather than close, when `slow` of a half-open
    /// period's `successes` successful probes (at least one) were slow.
    pub(crate) fn judge_probes(&self, successes: u32, slow: u32) -> Option<Reason> {
        let rate = f64::from(slow) / f64::from(successes);
        (rate >= self.rate).then_some(Reason::SlowCallRate { rate })
    }
}

impl RateRule for SlowCalls {
    const KEYS: &'static [&'static str] = &["slow_call_duration", "slow_call_rate"];

    #[inline]
    fn judge(&self, totals: &Totals) -> Option<Reason> {
        let rate = totals.slow_rate();
        (rate >= self.rate).then_some(Reason::SlowCallRate { rate })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_call_at_the_threshold_is_slow_and_probes_are_judged_by_rate() {
        let s = SlowCalls::new(100, 0.5);
        assert!(!s.is_slow(99));
        assert!(s.is_slow(100));
        assert_eq!(s.judge_probes(4, 1), None);
        assert_eq!(
            s.judge_probes(4, 2),
            Some(Reason::SlowCallRate { rate: 0.5 })
        );
    }
}

//! The failure-rate rule: trip when failures / calls in the window reach a
//! rate. It counts nothing of its own: it judges the totals of the window
//! it shares with the slow-call rule ([`super::windowed`]).

use super::windowed::RateRule;
use crate::breaker::types::Reason;
use crate::breaker::window::Totals;

/// Trip when failures / calls >= `rate` (`failure_rate`, in (0, 1]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FailureRate {
    rate: f64,
}

impl FailureRate {
    /// `rate` is validated (in (0, 1]).
    pub(crate) fn new(rate: f64) -> Self {
        FailureRate { rate }
    }

    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }
}

impl RateRule for FailureRate {
    const KEYS: &'static [&'static str] = &["failure_rate"];

    #[inline]
    fn judge(&self, totals: &Totals) -> Option<Reason> {
        let rate = totals.failure_rate();
        (rate >= self.rate).then_some(Reason::FailureRate { rate })
    }
}

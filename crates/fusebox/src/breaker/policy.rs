//! When to trip, and for how long to stay open: pure decisions on numbers.

use super::types::Reason;
use super::window::Totals;

/// Which window a rate policy looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowSpec {
    /// The last `n` calls.
    Count(usize),
    /// The last `span` nanoseconds, in `buckets` buckets.
    Time { span: u64, buckets: usize },
}

/// Validated trip policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TripPolicy {
    /// Trip after this many failures in a row.
    pub(crate) consecutive: Option<u32>,
    /// Trip when failures / calls >= this (with `min_calls`).
    pub(crate) failure_rate: Option<f64>,
    /// A call taking at least `.0` ns is slow; trip when slow / calls >= `.1`.
    pub(crate) slow: Option<(u64, f64)>,
    pub(crate) window: Option<WindowSpec>,
    pub(crate) min_calls: u64,
}

impl TripPolicy {
    /// Whether the window's totals call for a trip, and why.
    #[inline]
    pub(crate) fn rate_trip(&self, t: &Totals) -> Option<Reason> {
        // min_calls is at least 1 (the builder checks), so no rate is ever
        // judged on an empty window.
        if t.calls < self.min_calls {
            return None;
        }
        if let Some(r) = self.failure_rate {
            let rate = t.failure_rate();
            if rate >= r {
                return Some(Reason::FailureRate { rate });
            }
        }
        if let Some((_, r)) = self.slow {
            let rate = t.slow_rate();
            if rate >= r {
                return Some(Reason::SlowCallRate { rate });
            }
        }
        None
    }

    /// Whether a rule needs every call's duration (the slow-call rule).
    pub(crate) fn times_calls(&self) -> bool {
        self.slow.is_some()
    }

    /// Whether a rule counts plain successes (every rule but the
    /// consecutive one): a success then cannot settle on the consecutive
    /// count alone.
    pub(crate) fn counts_successes(&self) -> bool {
        self.slow.is_some() || self.window.is_some()
    }

    /// Whether a rule's window records every call, successes over
    /// successes included (a time window: its buckets move with time).
    pub(crate) fn records_every_call(&self) -> bool {
        matches!(self.window, Some(WindowSpec::Time { .. }))
    }

    /// Whether a rule looks at the last N calls (a count window, where a
    /// success over a success changes nothing but the ring position).
    pub(crate) fn counts_last_calls(&self) -> bool {
        matches!(self.window, Some(WindowSpec::Count(_)))
    }

    /// Whether a call that took `elapsed` ns is slow.
    #[inline]
    pub(crate) fn is_slow(&self, elapsed: Option<u64>) -> bool {
        match (self.slow, elapsed) {
            (Some((limit, _)), Some(e)) => e >= limit,
            _ => false,
        }
    }
}

/// How long the breaker stays open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum OpenPeriod {
    Fixed(u64),
    Backoff { initial: u64, factor: f64, max: u64 },
}

impl OpenPeriod {
    /// The open period after `trips` earlier trips without a close in between.
    pub(crate) fn after(&self, trips: u32) -> u64 {
        match *self {
            OpenPeriod::Fixed(d) => d,
            OpenPeriod::Backoff {
                initial,
                factor,
                max,
            } => {
                let grown = initial as f64 * factor.powi(trips.min(1_000) as i32);
                if grown.is_finite() && grown < max as f64 {
                    grown as u64
                } else {
                    max
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn rate_policy(r: f64, min: u64) -> TripPolicy {
        TripPolicy {
            consecutive: None,
            failure_rate: Some(r),
            slow: None,
            window: Some(WindowSpec::Count(10)),
            min_calls: min,
        }
    }

    #[test]
    fn rate_trips_at_threshold_not_before_min_calls() {
        let p = rate_policy(0.5, 4);
        let t = |calls, failures| Totals {
            calls,
            failures,
            slow: 0,
        };
        assert_eq!(p.rate_trip(&t(3, 3)), None);
        assert_eq!(p.rate_trip(&t(4, 1)), None);
        assert_eq!(
            p.rate_trip(&t(4, 2)),
            Some(Reason::FailureRate { rate: 0.5 })
        );
    }

    #[test]
    fn backoff_grows_and_caps() {
        let p = OpenPeriod::Backoff {
            initial: 100,
            factor: 2.0,
            max: 700,
        };
        assert_eq!(
            (0..5).map(|t| p.after(t)).collect::<Vec<_>>(),
            vec![100, 200, 400, 700, 700]
        );
        assert_eq!(p.after(u32::MAX), 700);
    }

    proptest::proptest! {
        #[test]
        fn rates_stay_in_unit_interval(calls in 0u64..1000, failures in 0u64..2000, slow in 0u64..2000) {
            let t = Totals { calls, failures, slow };
            proptest::prop_assert!((0.0..=1.0).contains(&t.failure_rate()));
            proptest::prop_assert!((0.0..=1.0).contains(&t.slow_rate()));
        }

        #[test]
        fn backoff_stays_within_bounds(initial in 1u64..1_000_000, factor in 1.0f64..10.0, extra in 0u64..10_000_000, trips in 0u32..200) {
            let max = initial + extra;
            let d = OpenPeriod::Backoff { initial, factor, max }.after(trips);
            proptest::prop_assert!(d >= initial && d <= max);
        }
    }
}

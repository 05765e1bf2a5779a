//! The rules over one window of calls: the failure rate
//! ([`super::failure_rate`]) and the slow-call rate ([`super::slow_calls`])
//! look at the same window (the last N calls, or the last T) and the same
//! `min_calls`, so they are one [`TripRule`] here: this group owns the
//! window (the cells, in `breaker::window`) and `min_calls`, and each rate
//! rule judges the window's totals ([`RateRule`]).

use super::failure_rate::FailureRate;
use super::slow_calls::SlowCalls;
use super::{Counted, Needs, Period, TripRule, Verdict};
use crate::breaker::types::Reason;
use crate::breaker::window::{CountWindow, TimeWindow, Totals, Window};

/// Which window the rates look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WindowSpec {
    /// The last `n` calls.
    Count(usize),
    /// The last `span` nanoseconds, in `buckets` buckets.
    Time { span: u64, buckets: usize },
}

/// A rule that judges the totals of the shared window.
pub(crate) trait RateRule {
    /// The config keys that set this rule.
    const KEYS: &'static [&'static str];

    /// The reason to trip on `totals` (which hold at least `min_calls`
    /// calls), if any.
    fn judge(&self, totals: &Totals) -> Option<Reason>;
}

/// The rate rules in force and the window they share (at least one rate
/// rule: validation sees to it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Windowed {
    pub(crate) window: WindowSpec,
    /// No rate is judged on fewer calls (at least 1, so never on an empty
    /// window).
    pub(crate) min_calls: u64,
    pub(crate) failure_rate: Option<FailureRate>,
    pub(crate) slow_calls: Option<SlowCalls>,
}

/// The window's own keys (each rate rule names its own).
const WINDOW_KEYS: &[&str] = &["count_window", "time_window", "buckets", "min_calls"];

/// `N` keys, those of `parts` one after the other (a build error if they
/// are not `N`).
const fn concat<const N: usize>(parts: [&[&'static str]; 3]) -> [&'static str; N] {
    let mut keys = [""; N];
    let (mut i, mut p) = (0, 0);
    while p < parts.len() {
        let mut j = 0;
        while j < parts[p].len() {
            keys[i] = parts[p][j];
            (i, j) = (i + 1, j + 1);
        }
        p += 1;
    }
    assert!(i == N, "concat: not N keys");
    keys
}

impl Windowed {
    /// Whether the window's totals call for a trip, and why: the failure
    /// rate first, then the slow-call rate.
    #[inline]
    pub(crate) fn judge(&self, totals: &Totals) -> Option<Reason> {
        if totals.calls < self.min_calls {
            return None;
        }
        if let Some(reason) = self.failure_rate.and_then(|r| r.judge(totals)) {
            return Some(reason);
        }
        self.slow_calls.and_then(|r| r.judge(totals))
    }
}

impl Windowed {
    /// Whether totals of at least `bound.calls` calls, with its failures
    /// and slow calls, could trip: more calls only lower the rates, so
    /// once `bound` holds `min_calls` and trips no rule, neither do they.
    #[inline]
    fn may_trip(&self, bound: &Totals) -> bool {
        bound.calls < self.min_calls || self.judge(bound).is_some()
    }

    /// The record proper of a verdict whose position `claim` is taken
    /// ([`Window::claim`]), once the period was found current: written
    /// while the period stays current, then judged.
    #[inline(never)]
    pub(crate) fn record_claimed(
        &self,
        window: &Window,
        claim: usize,
        verdict: Verdict,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted {
        self.record_claimed_inline(window, claim, verdict, period, trip)
    }

    /// [`Windowed::record_claimed`] inlined into its caller.
    #[inline(always)]
    pub(crate) fn record_claimed_inline(
        &self,
        window: &Window,
        claim: usize,
        verdict: Verdict,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted {
        let Verdict { failed, slow } = verdict;
        let recorded = period.while_current(|| {
            let now = if window.needs_time() { period.now() } else { 0 };
            let totals = window.record(claim, now, failed, slow, |bound| self.may_trip(bound));
            if (failed || slow) && !window.needs_time() {
                period.unsettle();
            }
            totals
        });
        let Some(totals) = recorded else {
            return Counted::Stale; // this permit's closed period is over
        };
        if let Some(reason) = totals.and_then(|t| self.judge(&t)) {
            trip.get_or_insert(reason);
        }
        Counted::Fresh
    }
}

impl TripRule for Windowed {
    /// The rate rules' keys and the window's.
    const KEYS: &'static [&'static str] =
        &concat::<7>([FailureRate::KEYS, SlowCalls::KEYS, WINDOW_KEYS]);
    /// The window the breaker was built with, if any: its cells for as
    /// long as a reconfigure keeps them (see [`TripRule::resident_cells`]),
    /// and the count window the hot path reaches without the settings
    /// (`Core::ring`).
    type Resident = Option<Box<Window>>;
    type Cells = Window;

    fn new_resident(rule: Option<&Self>) -> Option<Box<Window>> {
        rule.map(|rule| Box::new(rule.new_cells()))
    }

    #[inline(always)]
    fn resident_cells(resident: &Option<Box<Window>>) -> Option<&Window> {
        resident.as_deref()
    }

    fn needs(&self) -> Needs {
        Needs {
            times_calls: self.slow_calls.is_some(),
            counts_successes: true,
            records_every_call: matches!(self.window, WindowSpec::Time { .. }),
            counts_last_calls: matches!(self.window, WindowSpec::Count(_)),
            empties_on_close: true,
        }
    }

    fn cells_bytes(&self) -> usize {
        size_of::<Window>().saturating_add(match self.window {
            WindowSpec::Count(n) => CountWindow::heap_bytes(n),
            WindowSpec::Time { buckets, .. } => TimeWindow::heap_bytes(buckets),
        })
    }

    fn new_cells(&self) -> Window {
        match self.window {
            WindowSpec::Count(n) => Window::Count(CountWindow::new(n)),
            WindowSpec::Time { span, buckets } => {
                Window::Time(Box::new(TimeWindow::new(span, buckets)))
            }
        }
    }

    /// A window of the same shape keeps its calls, whatever the rates.
    fn keeps_cells_of(&self, old: &Self) -> bool {
        self.window == old.window
    }

    /// Kept out of line so that its registers and the other rules' do not
    /// crowd one frame.
    #[inline(never)]
    fn record(
        &self,
        _: &Option<Box<Window>>,
        window: &Window,
        verdict: Verdict,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted {
        let Verdict { failed, slow } = verdict;
        // A stale verdict must not even take a ring position: it would
        // push a call of the current period out of the last n. (One that
        // races the close itself may still take one: the protocol's guard
        // protects the counts, not the position.)
        if !period.is_current() {
            return Counted::Stale;
        }
        // A plain success over a plain success changes nothing but the
        // ring position: no write.
        let Some(claim) = window.claim(failed, slow) else {
            return Counted::Fresh;
        };
        self.record_claimed(window, claim, verdict, period, trip)
    }

    /// A plain success into a count window: the generation check, the ring
    /// position and a compare, and only when the slot held something else
    /// (a failure, a slow call, nothing yet) the record proper; a time
    /// window's by [`TripRule::record`].
    #[inline(always)]
    fn record_success(
        &self,
        resident: &Option<Box<Window>>,
        window: &Window,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted {
        let Window::Count(w) = window else {
            return self.record(resident, window, Verdict::PLAIN_SUCCESS, period, trip);
        };
        if !period.is_current() {
            return Counted::Stale; // see `record`
        }
        let i = w.claim();
        if w.unchanged(i, false, false) {
            return Counted::Fresh;
        }
        self.record_claimed(window, i, Verdict::PLAIN_SUCCESS, period, trip)
    }

    fn reached(&self, _: &Option<Box<Window>>, window: &Window, period: &impl Period) -> Option<Reason> {
        self.judge(&window.totals(period.now()))
    }

    fn owns(reason: &Reason) -> bool {
        matches!(
            reason,
            Reason::FailureRate { .. } | Reason::SlowCallRate { .. }
        )
    }

    // The totals a record judged were read one counter at a time while
    // others recorded: the default `confirm` judges a fresh reading.

    #[inline]
    fn is_slow(&self, elapsed: u64) -> bool {
        self.slow_calls.is_some_and(|s| s.is_slow(elapsed))
    }

    fn judge_probes(&self, successes: u32, slow: u32) -> Option<Reason> {
        self.slow_calls
            .and_then(|s| s.judge_probes(successes, slow))
    }

    #[inline]
    fn settled(&self, window: &Window) -> bool {
        window.plain_success_is_noop()
    }

    fn clear(window: &Window) {
        window.clear();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn failure_rate(r: f64, min_calls: u64) -> Windowed {
        Windowed {
            window: WindowSpec::Count(10),
            min_calls,
            failure_rate: Some(FailureRate::new(r)),
            slow_calls: None,
        }
    }

    #[test]
    fn rate_trips_at_threshold_not_before_min_calls() {
        let w = failure_rate(0.5, 4);
        let t = |calls, failures| Totals {
            calls,
            failures,
            slow: 0,
        };
        assert_eq!(w.judge(&t(3, 3)), None);
        assert_eq!(w.judge(&t(4, 1)), None);
        assert_eq!(w.judge(&t(4, 2)), Some(Reason::FailureRate { rate: 0.5 }));
    }

    #[test]
    fn a_bound_that_trips_no_rule_over_min_calls_cannot_trip() {
        let w = failure_rate(0.5, 4);
        let t = |calls, failures| Totals {
            calls,
            failures,
            slow: 0,
        };
        assert!(w.may_trip(&t(3, 0)), "below min_calls: more calls may reach it");
        assert!(!w.may_trip(&t(4, 1)));
        assert!(w.may_trip(&t(4, 2)));
        assert!(!w.may_trip(&t(100, 49)));
    }

    proptest::proptest! {
        #[test]
        fn rates_stay_in_unit_interval(calls in 0u64..1000, failures in 0u64..2000, slow in 0u64..2000) {
            let t = Totals { calls, failures, slow };
            proptest::prop_assert!((0.0..=1.0).contains(&t.failure_rate()));
            proptest::prop_assert!((0.0..=1.0).contains(&t.slow_rate()));
        }
    }
}

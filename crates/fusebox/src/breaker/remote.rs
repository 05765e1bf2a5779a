//! What a fleet of replicas may do to a breaker (feature `fleet`): hear its
//! transitions, open or close it for a decision taken elsewhere, hand its
//! half-open probes to the replica holding the fleet's lease, and read its
//! verdict counts for the fleet's window. Every call still decides locally.

use super::protocol::ProbeGate;
use super::tally::Tally;
use super::types::{Reason, State};
use super::window::Totals;
use super::{CircuitBreaker, Listener};
use crate::clock::nanos;
use std::sync::Arc;
use std::time::Duration;

impl CircuitBreaker {
    /// Sets (or clears) the runtime listener slot; it hears transitions only.
    pub(crate) fn set_hook(&self, hook: Option<Arc<dyn Listener>>) {
        self.inner.set_hook(hook);
    }

    /// Opens from Closed or HalfOpen for `remaining` (extends a shorter open
    /// period; leaves forced open and disabled alone), with [`Reason::Remote`].
    pub(crate) fn trip_remote(&self, remaining: Duration) {
        self.open_for(remaining, Reason::Remote);
    }

    /// Open or HalfOpen -> Closed, with [`Reason::Remote`].
    pub(crate) fn close_remote(&self) {
        let t = self.inner.core.close_remote(self.inner.now());
        self.inner.emit(t);
    }

    /// ForcedOpen, Disabled or Closed from a fleet control message, with
    /// [`Reason::Remote`].
    pub(crate) fn set_remote(&self, to: State) {
        let t = self.inner.core.set(to, self.inner.now(), Reason::Remote);
        self.inner.emit(t);
    }

    /// Time left in the open period (after the lazy Open -> HalfOpen step).
    pub(crate) fn open_remaining(&self) -> Option<Duration> {
        let now = self.inner.now();
        let (_, t) = self.inner.core.state(now);
        self.inner.emit(t);
        self.inner
            .core
            .open_remaining(now)
            .map(Duration::from_nanos)
    }

    /// Who admits half-open probes.
    pub(crate) fn set_probe_gate(&self, gate: ProbeGate) {
        self.inner.core.set_probe_gate(gate);
    }

    /// The `retry_after` a half-open call gets when the gate denies it.
    pub(crate) fn set_deny_retry(&self, retry: Duration) {
        self.inner.core.set_deny_retry(nanos(retry));
    }

    /// Calls that found the breaker open or half-open so far (rejected, or
    /// admitted as probes), and probe permits dropped without a verdict:
    /// counters that only grow (a reset zeroes the first).
    pub(crate) fn demand(&self) -> (u64, u64) {
        self.inner.core.demand()
    }

    /// The state and generation now, without the lazy Open -> HalfOpen step
    /// (which is a call's to take, not the fleet's).
    pub(crate) fn peek(&self) -> (State, u64) {
        self.inner.core.peek()
    }

    /// Time left in the open period if Open (zero once over), without the
    /// lazy Open -> HalfOpen step.
    pub(crate) fn open_left(&self) -> Option<Duration> {
        self.inner
            .core
            .open_remaining(self.inner.now())
            .map(Duration::from_nanos)
    }

    /// Starts counting closed-state verdicts for [`tally`](Self::tally).
    pub(crate) fn enable_tally(&self) {
        self.inner.enable_tally();
    }

    /// Closed-state verdicts counted since [`enable_tally`](Self::enable_tally).
    pub(crate) fn tally(&self) -> Tally {
        self.inner.core.tally()
    }

    /// Applies this breaker's rate policy (rates and `min_calls`) to totals
    /// counted across the fleet; trips locally if they call for it.
    pub(crate) fn judge_fleet(&self, calls: u64, failures: u64, slow: u64) -> bool {
        let totals = Totals {
            calls,
            failures,
            slow,
        };
        let t = self.inner.core.judge_totals(totals, self.inner.now());
        let tripped = t.is_some();
        self.inner.emit(t);
        tripped
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::ManualClock;
    use std::sync::Mutex;

    fn breaker(clock: &ManualClock) -> CircuitBreaker {
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(10)
            .min_calls(4)
            .open_for(Duration::from_secs(10))
            .clock(clock.clone())
            .build()
            .unwrap()
    }

    struct Log(Mutex<Vec<(State, Reason)>>);
    impl Listener for Log {
        fn on_transition(&self, t: &crate::Transition) {
            self.0.lock().unwrap().push((t.to, t.reason));
        }
    }

    #[test]
    fn remote_trips_open_for_the_remaining_time_and_are_heard() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        let log = Arc::new(Log(Mutex::new(Vec::new())));
        b.set_hook(Some(log.clone()));
        b.trip_remote(Duration::from_secs(3));
        assert_eq!(b.state(), State::Open);
        assert_eq!(b.open_remaining(), Some(Duration::from_secs(3)));
        b.trip_remote(Duration::from_secs(1)); // shorter: no change
        assert_eq!(b.open_remaining(), Some(Duration::from_secs(3)));
        b.trip_remote(Duration::from_secs(5)); // longer: extends
        assert_eq!(b.open_remaining(), Some(Duration::from_secs(5)));
        b.close_remote();
        assert_eq!(b.state(), State::Closed);
        b.set_hook(None);
        b.set_remote(State::ForcedOpen);
        b.trip_remote(Duration::from_secs(1));
        assert_eq!(b.state(), State::ForcedOpen, "forced open stays");
        assert_eq!(
            log.0.lock().unwrap().as_slice(),
            [
                (State::Open, Reason::Remote),
                (State::Closed, Reason::Remote)
            ],
            "the hook hears transitions until cleared"
        );
    }

    #[test]
    fn the_probe_gate_hands_half_open_to_the_lease_holder() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        b.trip_remote(Duration::from_secs(1));
        clock.advance(Duration::from_secs(1));
        b.set_probe_gate(ProbeGate::Deny);
        let r = b.try_acquire().unwrap_err();
        assert_eq!(r.state(), State::HalfOpen);
        b.set_probe_gate(ProbeGate::Allow);
        b.try_acquire().unwrap().success();
        assert_eq!(b.state(), State::Closed);
    }

    #[test]
    fn tally_counts_closed_verdicts_and_the_fleet_window_can_trip() {
        let clock = ManualClock::new();
        let b = breaker(&clock);
        assert_eq!(b.tally(), Tally::default());
        b.enable_tally();
        for ok in [true, false, true] {
            let p = b.try_acquire().unwrap();
            if ok {
                p.success()
            } else {
                p.failure()
            }
        }
        assert_eq!(
            b.tally(),
            Tally {
                calls: 3,
                failures: 1,
                slow: 0
            }
        );
        assert!(!b.judge_fleet(3, 3, 0), "below min_calls over the fleet");
        assert!(!b.judge_fleet(40, 10, 0), "25 %: below the rate");
        assert!(b.judge_fleet(40, 20, 0));
        assert_eq!(b.state(), State::Open);
    }

    #[test]
    fn a_tallied_count_window_full_of_successes_counts_every_success() {
        let b = CircuitBreaker::builder()
            .failure_rate(1.0)
            .count_window(2)
            .min_calls(2)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        for _ in 0..3 {
            b.call(|| Ok::<_, ()>(())).unwrap(); // the third marks the window full
        }
        b.enable_tally();
        for _ in 0..5 {
            b.call(|| Ok::<_, ()>(())).unwrap(); // settled over the full window
        }
        b.call(|| Err::<(), _>(())).unwrap_err();
        b.call(|| Ok::<_, ()>(())).unwrap(); // a full path again
        let t = b.tally();
        assert_eq!((t.calls, t.failures), (7, 1));
    }

    #[test]
    fn a_tallied_consecutive_breaker_counts_plain_successes_too() {
        let b = CircuitBreaker::builder().build().unwrap();
        b.enable_tally();
        b.call(|| Ok::<_, ()>(())).unwrap();
        b.call(|| Ok::<_, ()>(())).unwrap();
        assert_eq!(b.tally().calls, 2);
    }
}

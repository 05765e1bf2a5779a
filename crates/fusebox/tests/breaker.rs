//! The breaker's rules, each on a ManualClock.

use fusebox::{
    CircuitBreaker, Error, Listener, ManualClock, Outcome, Reason, Rejected, State, Transition,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn fail(b: &CircuitBreaker) -> Result<(), Error<&'static str>> {
    b.call(|| Err("boom"))
}

fn ok(b: &CircuitBreaker) -> Result<(), Error<&'static str>> {
    b.call(|| Ok(()))
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Transition>>>);

impl Listener for Log {
    fn on_transition(&self, t: &Transition) {
        self.0.lock().unwrap().push(*t);
    }
}

impl Log {
    fn edges(&self) -> Vec<(State, State)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|t| (t.from, t.to))
            .collect()
    }
    fn at(&self) -> Vec<Duration> {
        self.0.lock().unwrap().iter().map(|t| t.at).collect()
    }
}

fn consecutive(n: u32, open: u64) -> (CircuitBreaker, ManualClock, Log) {
    let clock = ManualClock::new();
    let log = Log::default();
    let b = CircuitBreaker::builder()
        .consecutive_failures(n)
        .open_for(ms(open))
        .clock(clock.clone())
        .listener(log.clone())
        .build()
        .unwrap();
    (b, clock, log)
}

#[test]
fn consecutive_failures_trip_and_success_resets_the_count() {
    let (b, _, _) = consecutive(3, 100);
    for _ in 0..2 {
        assert!(matches!(fail(&b), Err(Error::Inner("boom"))));
    }
    ok(&b).unwrap();
    fail(&b).unwrap_err();
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(b.snapshot().consecutive_failures, 2);
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Open);
}

#[test]
fn open_rejects_without_calling_and_says_when_to_come_back() {
    let (b, clock, _) = consecutive(1, 500);
    clock.set(ms(1000));
    fail(&b).unwrap_err();
    clock.advance(ms(200));
    let mut ran = false;
    let r = b.call(|| {
        ran = true;
        Ok::<_, ()>(())
    });
    assert!(!ran);
    let rejected = *r.unwrap_err().rejected().unwrap();
    assert_eq!(rejected.state(), State::Open);
    assert_eq!(rejected.retry_after(), Some(ms(300)));
    assert_eq!(b.snapshot().rejected, 1);
}

#[test]
fn half_open_is_lazy_at_exactly_the_end_of_the_open_period() {
    let (b, clock, log) = consecutive(1, 500);
    clock.set(ms(100));
    fail(&b).unwrap_err();
    clock.set(ms(599));
    assert!(b.try_acquire().is_err());
    clock.set(ms(900)); // long after: the transition happens only when someone asks
    assert_eq!(log.edges(), vec![(State::Closed, State::Open)]);
    let p = b.try_acquire().unwrap();
    assert_eq!(log.at(), vec![ms(100), ms(900)]);
    assert_eq!(log.edges()[1], (State::Open, State::HalfOpen));
    p.success();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn state_call_also_moves_open_to_half_open() {
    let (b, clock, log) = consecutive(1, 500);
    fail(&b).unwrap_err();
    clock.advance(ms(500));
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(log.0.lock().unwrap()[1].reason, Reason::CooldownElapsed);
}

#[test]
fn open_period_counts_from_the_tripping_verdict_not_the_admission() {
    let (b, clock, _) = consecutive(1, 500);
    let p = b.try_acquire().unwrap();
    clock.set(ms(150)); // the call takes 150 ms
    p.failure();
    clock.set(ms(649));
    assert_eq!(b.state(), State::Open);
    clock.set(ms(650));
    assert_eq!(b.state(), State::HalfOpen);
}

#[test]
fn failed_probe_reopens_from_the_probe_failure() {
    let (b, clock, log) = consecutive(1, 500);
    fail(&b).unwrap_err();
    clock.set(ms(500));
    let probe = b.try_acquire().unwrap();
    clock.set(ms(650));
    probe.failure();
    assert_eq!(b.state(), State::Open);
    clock.set(ms(1149));
    assert_eq!(b.state(), State::Open);
    clock.set(ms(1150));
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(log.0.lock().unwrap()[2].reason, Reason::ProbeFailed);
}

#[test]
fn stale_failure_does_not_extend_the_open_period() {
    let (b, clock, _) = consecutive(2, 500);
    let slow = b.try_acquire().unwrap(); // admitted before the trip
    fail(&b).unwrap_err();
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Open);
    clock.set(ms(400));
    slow.failure(); // arrives while open: must change nothing
    clock.set(ms(500));
    assert_eq!(b.state(), State::HalfOpen);
}

#[test]
fn stale_success_does_not_close_an_open_breaker() {
    let (b, clock, _) = consecutive(1, 500);
    let early = b.try_acquire().unwrap();
    fail(&b).unwrap_err();
    early.success();
    assert_eq!(b.state(), State::Open);
    // Nor a half-open one: it belonged to the closed period.
    let early = {
        b.reset();
        b.try_acquire().unwrap()
    };
    fail(&b).unwrap_err();
    clock.advance(ms(500));
    assert_eq!(b.state(), State::HalfOpen);
    early.success();
    assert_eq!(b.state(), State::HalfOpen);
}

#[test]
fn stale_probe_verdict_from_an_earlier_half_open_is_ignored() {
    let (b, clock, _) = consecutive(1, 100);
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    let old_probe = b.try_acquire().unwrap();
    b.force_open();
    b.reset();
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    assert_eq!(b.state(), State::HalfOpen);
    old_probe.success(); // belongs to the first half-open period
    assert_eq!(b.state(), State::HalfOpen);
    let probe = b.try_acquire().unwrap();
    probe.success();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn stale_closed_verdict_does_not_pollute_the_next_closed_period() {
    let (b, clock, _) = consecutive(2, 100);
    let stale = b.try_acquire().unwrap();
    fail(&b).unwrap_err();
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    ok(&b).unwrap(); // probe closes
    assert_eq!(b.state(), State::Closed);
    stale.failure();
    assert_eq!(b.snapshot().consecutive_failures, 0);
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Closed, "one fresh failure of two");
}

#[test]
fn half_open_admits_at_most_k_probes_and_needs_s_successes() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(ms(100))
        .half_open_probes(2)
        .successes_to_close(3)
        .clock(clock.clone())
        .build()
        .unwrap();
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    let p1 = b.try_acquire().unwrap();
    let p2 = b.try_acquire().unwrap();
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::HalfOpen);
    assert_eq!(r.retry_after(), Some(Duration::ZERO));
    p1.success();
    let p3 = b.try_acquire().unwrap();
    p2.success();
    assert_eq!(b.state(), State::HalfOpen, "two of three successes");
    p3.success();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn any_probe_failure_reopens_even_after_successes() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(ms(100))
        .half_open_probes(3)
        .successes_to_close(3)
        .clock(clock.clone())
        .build()
        .unwrap();
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    let (p1, p2, p3) = (
        b.try_acquire().unwrap(),
        b.try_acquire().unwrap(),
        b.try_acquire().unwrap(),
    );
    p1.success();
    p2.failure();
    assert_eq!(b.state(), State::Open);
    p3.success(); // stale now
    assert_eq!(b.state(), State::Open);
}

#[test]
fn dropped_probe_frees_its_slot_and_counts_nothing() {
    let (b, clock, _) = consecutive(1, 100);
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    let probe = b.try_acquire().unwrap();
    assert!(b.try_acquire().is_err());
    drop(probe);
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(b.probes_in_flight(), 0);
    b.try_acquire().unwrap().success();
    assert_eq!(b.state(), State::Closed);
}

/// A breaker with one probe, `open_for(100 ms)`, and a half-open deadline of
/// `wait` ms (none if `None`), tripped and then half-open at 100 ms with one
/// probe out (returned) that will not answer by itself.
fn stuck_probe(
    wait: Option<u64>,
    probes: u32,
) -> (CircuitBreaker, ManualClock, Log, fusebox::Permit) {
    let clock = ManualClock::new();
    let log = Log::default();
    let mut builder = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(ms(100))
        .half_open_probes(probes)
        .clock(clock.clone())
        .listener(log.clone());
    if let Some(wait) = wait {
        builder = builder.half_open_max_wait(ms(wait));
    }
    let b = builder.build().unwrap();
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    let probe = b.try_acquire().unwrap();
    assert_eq!(b.state(), State::HalfOpen);
    (b, clock, log, probe)
}

fn reasons(log: &Log) -> Vec<Reason> {
    log.0.lock().unwrap().iter().map(|t| t.reason).collect()
}

#[test]
fn a_probe_past_half_open_max_wait_counts_as_failed_and_the_breaker_recovers() {
    let (b, clock, log, stuck) = stuck_probe(Some(50), 1);
    clock.set(ms(149));
    let r = b.try_acquire().unwrap_err();
    assert_eq!((r.state(), r.retry_after()), (State::HalfOpen, Some(ms(0))));
    clock.set(ms(150)); // the probe has been out for 50 ms
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::Open, "the next call finds it reopened");
    assert_eq!(r.retry_after(), Some(ms(100)), "a new open period from now");
    let last = *log.0.lock().unwrap().last().unwrap();
    assert_eq!((last.from, last.to), (State::HalfOpen, State::Open));
    assert_eq!((last.reason, last.at), (Reason::ProbeTimedOut, ms(150)));
    assert_eq!(last.reason.as_str(), "probe_timed_out");
    assert_eq!(b.probes_in_flight(), 0);
    // Later the breaker probes again and closes.
    clock.set(ms(250));
    let probe = b
        .try_acquire()
        .expect("half-open again: the slot came back");
    probe.success();
    assert_eq!(b.state(), State::Closed);
    // The stuck probe's verdict, whenever it comes, changes nothing.
    stuck.failure();
    assert_eq!(b.state(), State::Closed);
    assert_eq!(
        reasons(&log),
        [
            Reason::ConsecutiveFailures { count: 1 },
            Reason::CooldownElapsed,
            Reason::ProbeTimedOut,
            Reason::CooldownElapsed,
            Reason::ProbesSucceeded { successes: 1 },
        ]
    );
}

#[test]
fn a_late_success_of_a_timed_out_probe_cannot_close_the_new_open_period() {
    let (b, clock, _, stuck) = stuck_probe(Some(50), 1);
    clock.set(ms(160));
    assert_eq!(b.state(), State::Open, "state() finds the deadline passed");
    let generation = b.snapshot().generation;
    stuck.success();
    assert_eq!(b.state(), State::Open);
    assert_eq!(b.snapshot().generation, generation, "stale: nothing moved");
    clock.set(ms(259));
    assert_eq!(b.state(), State::Open, "the open period is not cut short");
    clock.set(ms(260));
    assert_eq!(b.state(), State::HalfOpen);
}

#[test]
fn a_probe_answering_after_the_deadline_is_too_late_even_with_no_call_between() {
    let (b, clock, log, stuck) = stuck_probe(Some(50), 1);
    clock.set(ms(170)); // nothing happened since the probe went out
    stuck.success();
    assert_eq!(b.state(), State::Open);
    assert_eq!(reasons(&log).last(), Some(&Reason::ProbeTimedOut));
    assert_eq!(log.at().last(), Some(&ms(170)));

    // The same for a probe dropped after the deadline.
    let (b, clock, log, stuck) = stuck_probe(Some(50), 1);
    clock.set(ms(150));
    drop(stuck);
    assert_eq!(b.state(), State::Open);
    assert_eq!(reasons(&log).last(), Some(&Reason::ProbeTimedOut));
}

#[test]
fn a_probe_answering_before_the_deadline_decides_as_usual() {
    let (b, clock, _, probe) = stuck_probe(Some(50), 1);
    clock.set(ms(149));
    probe.success();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn the_wait_runs_while_probes_are_out_without_a_break() {
    let (b, clock, log, first) = stuck_probe(Some(50), 2);
    clock.set(ms(140));
    let second = b.try_acquire().unwrap();
    first.ignore(); // one probe still out: the wait goes on from 100 ms
    clock.set(ms(150));
    assert_eq!(b.state(), State::Open);
    assert_eq!(reasons(&log).last(), Some(&Reason::ProbeTimedOut));
    second.success();
    assert_eq!(b.state(), State::Open);

    // With no probe out the wait starts again at the next probe.
    let (b, clock, _, first) = stuck_probe(Some(50), 1);
    clock.set(ms(140));
    drop(first);
    clock.set(ms(500)); // half-open, idle, long past 100 + 50 ms
    assert_eq!(
        b.state(),
        State::HalfOpen,
        "no probe out: nothing to time out"
    );
    let probe = b.try_acquire().unwrap();
    clock.set(ms(549));
    assert_eq!(b.state(), State::HalfOpen);
    probe.success();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn a_timed_out_probe_grows_the_open_backoff_like_a_failed_one() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_backoff(ms(100), 2.0, ms(1000))
        .half_open_max_wait(ms(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    let _stuck = b.try_acquire().unwrap();
    clock.advance(ms(10));
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.retry_after(), Some(ms(200)), "the second open period");
}

#[test]
fn without_half_open_max_wait_a_probe_holds_its_slot_for_ever() {
    let (b, clock, log, stuck) = stuck_probe(None, 1);
    clock.set(ms(1_000_000_000));
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::HalfOpen, "still waiting for the probe");
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(b.probes_in_flight(), 1);
    stuck.success(); // however late, it decides
    assert_eq!(b.state(), State::Closed);
    assert!(!reasons(&log).contains(&Reason::ProbeTimedOut));
}

#[test]
fn reconfigure_sets_a_deadline_for_probes_already_out() {
    let (b, clock, log, _stuck) = stuck_probe(None, 1);
    clock.set(ms(10_000));
    assert_eq!(b.state(), State::HalfOpen);
    b.reconfigure(
        CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(ms(100))
            .half_open_max_wait(ms(5_000)),
    )
    .unwrap();
    assert_eq!(b.config().half_open_max_wait, Some(ms(5_000)));
    let r = b.try_acquire().unwrap_err();
    assert_eq!(
        r.state(),
        State::Open,
        "out since 100 ms: past the new deadline"
    );
    assert_eq!(reasons(&log).last(), Some(&Reason::ProbeTimedOut));
}

#[test]
fn ignored_results_count_for_nothing() {
    let (b, clock, _) = consecutive(1, 100);
    let ignore = |_: &Result<(), &str>| Outcome::Ignore;
    for _ in 0..10 {
        b.call_with(ignore, || Err("404")).unwrap_err();
    }
    assert_eq!(b.state(), State::Closed);
    fail(&b).unwrap_err();
    clock.advance(ms(100));
    // An ignored probe frees its slot but neither closes nor reopens.
    b.call_with(ignore, || Ok(())).unwrap();
    assert_eq!(b.state(), State::HalfOpen);
    assert_eq!(b.probes_in_flight(), 0);
}

#[test]
fn failure_rate_over_a_sliding_count_window() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(4)
        .min_calls(4)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    // F F S S: 50% at 4 calls -> trips.
    fail(&b).unwrap_err();
    fail(&b).unwrap_err();
    ok(&b).unwrap();
    assert_eq!(b.state(), State::Closed, "3 calls < min_calls even at 67%");
    ok(&b).unwrap();
    assert_eq!(b.state(), State::Open);
}

#[test]
fn count_window_forgets_calls_that_slid_out() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(4)
        .min_calls(4)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    // F S S S, then S pushes the F out: 0 of 4; then F: 1 of 4; F: 2 of 4 -> trip.
    fail(&b).unwrap_err();
    for _ in 0..4 {
        ok(&b).unwrap();
    }
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures), (4, 0));
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Closed);
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Open);
}

#[test]
fn success_that_completes_min_calls_can_trip() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(10)
        .min_calls(5)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for _ in 0..4 {
        fail(&b).unwrap_err();
    }
    assert_eq!(b.state(), State::Closed);
    ok(&b).unwrap(); // 4 of 5 failed
    assert_eq!(b.state(), State::Open);
}

#[test]
fn failure_rate_over_a_time_window_forgets_old_buckets() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .time_window(Duration::from_secs(10))
        .buckets(10)
        .min_calls(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..3 {
        fail(&b).unwrap_err();
    }
    clock.advance(Duration::from_secs(10)); // the failures' bucket leaves the window
    assert_eq!(b.snapshot().calls, 0);
    ok(&b).unwrap();
    fail(&b).unwrap_err();
    ok(&b).unwrap();
    assert_eq!(b.state(), State::Closed);
    fail(&b).unwrap_err(); // 2 of 4
    assert_eq!(b.state(), State::Open);
}

#[test]
fn counters_are_empty_after_closing() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(10)
        .min_calls(2)
        .open_for(ms(100))
        .clock(clock.clone())
        .build()
        .unwrap();
    fail(&b).unwrap_err();
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Open);
    clock.advance(ms(100));
    ok(&b).unwrap();
    let s = b.snapshot();
    assert_eq!(s.state, State::Closed);
    assert_eq!((s.calls, s.failures, s.failure_rate), (0, 0, 0.0));
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Closed, "1 call < min_calls");
}

#[test]
fn slow_calls_trip_but_still_return_their_value() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .slow_calls(ms(100), 0.5)
        .count_window(4)
        .min_calls(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    let call = |took: u64| {
        b.call(|| {
            clock.advance(ms(took));
            Ok::<_, ()>(took)
        })
    };
    assert_eq!(call(150).unwrap(), 150);
    assert_eq!(call(99).unwrap(), 99);
    assert_eq!(call(10).unwrap(), 10);
    let s = b.snapshot();
    assert_eq!((s.calls, s.slow_calls), (3, 1));
    assert_eq!(call(100).unwrap(), 100); // exactly the threshold is slow: 2 of 4
    assert_eq!(b.state(), State::Open);
}

#[test]
fn slow_probe_reopens() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .slow_calls(ms(100), 1.0)
        .count_window(1)
        .min_calls(1)
        .open_for(ms(500))
        .clock(clock.clone())
        .build()
        .unwrap();
    let slow = || {
        b.call(|| {
            clock.advance(ms(200));
            Ok::<_, ()>(())
        })
    };
    slow().unwrap();
    assert_eq!(b.state(), State::Open);
    clock.advance(ms(500));
    slow().unwrap();
    assert_eq!(b.state(), State::Open);
}

#[test]
fn open_backoff_grows_on_repeated_trips_and_resets_on_close() {
    let (clock, log) = (ManualClock::new(), Log::default());
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_backoff(ms(100), 2.0, ms(300))
        .clock(clock.clone())
        .listener(log.clone())
        .build()
        .unwrap();
    let open_for = |b: &CircuitBreaker| {
        let r = b.try_acquire().unwrap_err();
        r.retry_after().unwrap()
    };
    fail(&b).unwrap_err();
    assert_eq!(open_for(&b), ms(100));
    clock.advance(ms(100));
    fail(&b).unwrap_err(); // failed probe
    assert_eq!(open_for(&b), ms(200));
    clock.advance(ms(200));
    fail(&b).unwrap_err();
    assert_eq!(open_for(&b), ms(300));
    clock.advance(ms(300));
    fail(&b).unwrap_err();
    assert_eq!(open_for(&b), ms(300), "capped");
    clock.advance(ms(300));
    ok(&b).unwrap();
    fail(&b).unwrap_err();
    assert_eq!(open_for(&b), ms(100), "reset by the close");
}

#[test]
fn panic_in_call_counts_as_failure_and_leaves_the_breaker_usable() {
    let (b, clock, _) = consecutive(2, 100);
    for _ in 0..2 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            b.call(|| -> Result<(), ()> { panic!("user bug") })
        }));
        assert!(r.is_err());
    }
    assert_eq!(b.state(), State::Open);
    clock.advance(ms(100));
    // A panicking probe reopens rather than wedging half-open.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        b.call(|| -> Result<(), ()> { panic!("again") })
    }));
    assert_eq!(b.state(), State::Open);
    clock.advance(ms(100));
    ok(&b).unwrap();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn permit_dropped_during_a_panic_counts_nothing() {
    let (b, _, _) = consecutive(1, 100);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _permit = b.try_acquire().unwrap();
        panic!("between acquire and verdict");
    }));
    assert!(r.is_err());
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn manual_control() {
    let (b, clock, log) = consecutive(1, 100);
    b.force_open();
    let r = b.try_acquire().unwrap_err();
    assert_eq!((r.state(), r.retry_after()), (State::ForcedOpen, None));
    clock.advance(Duration::from_secs(3600));
    assert_eq!(
        b.state(),
        State::ForcedOpen,
        "no cooldown out of forced open"
    );
    b.disable();
    for _ in 0..10 {
        fail(&b).unwrap_err();
    }
    assert_eq!(b.state(), State::Disabled);
    b.reset();
    assert_eq!(b.state(), State::Closed);
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Open);
    assert_eq!(
        log.edges(),
        vec![
            (State::Closed, State::ForcedOpen),
            (State::ForcedOpen, State::Disabled),
            (State::Disabled, State::Closed),
            (State::Closed, State::Open),
        ]
    );
}

#[test]
fn reset_clears_counters() {
    let (b, _, _) = consecutive(3, 100);
    fail(&b).unwrap_err();
    fail(&b).unwrap_err();
    b.reset();
    fail(&b).unwrap_err();
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn clones_share_state() {
    let (b, _, _) = consecutive(2, 100);
    let c = b.clone();
    fail(&b).unwrap_err();
    fail(&c).unwrap_err();
    assert_eq!(b.state(), State::Open);
}

/// A listener that keeps the durations of the calls and the rejections it
/// hears.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<(Vec<Duration>, Vec<Rejected>)>>);

impl Listener for Seen {
    fn on_rejected(&self, r: &Rejected) {
        self.0.lock().unwrap().1.push(*r);
    }
    fn on_call(&self, c: &fusebox::CallEvent) {
        self.0.lock().unwrap().0.push(c.duration);
    }
}

#[test]
fn listeners_see_rejections_and_calls_with_durations() {
    let clock = ManualClock::new();
    let seen = Seen::default();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .clock(clock.clone())
        .listener(seen.clone())
        .build()
        .unwrap();
    b.call(|| {
        clock.advance(ms(42));
        Err::<(), _>(())
    })
    .unwrap_err();
    fail(&b).unwrap_err();
    let (durations, rejections) = seen.0.lock().unwrap().clone();
    assert_eq!(durations, vec![ms(42)]);
    assert_eq!(rejections.len(), 1);
    assert_eq!(rejections[0].state(), State::Open);
}

#[test]
fn listeners_hear_the_duration_of_successes_that_change_nothing() {
    // A closed-state success with no failure pending changes no count (it
    // settles before the settings are read); its listener still hears its
    // duration, as it does for a success that resets a failure.
    let clock = ManualClock::new();
    let seen = Seen::default();
    let b = CircuitBreaker::builder()
        .consecutive_failures(3)
        .clock(clock.clone())
        .listener(seen.clone())
        .build()
        .unwrap();
    let took = |d: Duration, ok: bool| {
        let p = b.try_acquire().unwrap();
        clock.advance(d);
        if ok {
            p.success()
        } else {
            p.failure()
        }
    };
    took(ms(7), true); // nothing to reset
    took(ms(2), false);
    took(ms(5), true); // resets the failure
    took(ms(1_500), true);
    let durations = seen.0.lock().unwrap().0.clone();
    assert_eq!(durations, vec![ms(7), ms(2), ms(5), ms(1_500)]);
    assert_eq!(b.snapshot().consecutive_failures, 0);
}

#[test]
fn snapshot_reports_time_since_transition() {
    let (b, clock, _) = consecutive(1, 1000);
    clock.set(ms(10));
    fail(&b).unwrap_err();
    clock.set(ms(260));
    let s = b.snapshot();
    assert_eq!(s.state, State::Open);
    assert_eq!(s.since_transition, ms(250));
    assert_eq!(s.generation, 1);
}

#[test]
fn config_errors_name_the_field() {
    let cases: Vec<(fusebox::Builder, &str)> = vec![
        (
            CircuitBreaker::builder().consecutive_failures(0),
            "consecutive_failures",
        ),
        (
            CircuitBreaker::builder().half_open_max_wait(Duration::ZERO),
            "half_open_max_wait",
        ),
        (CircuitBreaker::builder().failure_rate(0.0), "failure_rate"),
        (CircuitBreaker::builder().failure_rate(1.01), "failure_rate"),
        (
            CircuitBreaker::builder().failure_rate(f64::NAN),
            "failure_rate",
        ),
        (
            CircuitBreaker::builder().failure_rate(0.5).count_window(0),
            "count_window",
        ),
        (
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .time_window(Duration::ZERO),
            "time_window",
        ),
        (
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .time_window(ms(10))
                .buckets(0),
            "buckets",
        ),
        (
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .count_window(5)
                .time_window(ms(10)),
            "time_window",
        ),
        (
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .count_window(5)
                .min_calls(6),
            "min_calls",
        ),
        (
            CircuitBreaker::builder().failure_rate(0.5).min_calls(0),
            "min_calls",
        ),
        (CircuitBreaker::builder().count_window(5), "count_window"),
        (
            CircuitBreaker::builder().slow_calls(Duration::ZERO, 0.5),
            "slow_call_duration",
        ),
        (
            CircuitBreaker::builder().slow_calls(ms(1), 2.0),
            "slow_call_rate",
        ),
        (
            CircuitBreaker::builder().open_for(Duration::ZERO),
            "open_for",
        ),
        (
            CircuitBreaker::builder().open_backoff(Duration::ZERO, 2.0, ms(1)),
            "open_backoff.initial",
        ),
        (
            CircuitBreaker::builder().open_backoff(ms(1), 0.5, ms(2)),
            "open_backoff.factor",
        ),
        (
            CircuitBreaker::builder().open_backoff(ms(2), 2.0, ms(1)),
            "open_backoff.max",
        ),
        (
            CircuitBreaker::builder().half_open_probes(0),
            "half_open_probes",
        ),
        (
            CircuitBreaker::builder().successes_to_close(0),
            "successes_to_close",
        ),
        (
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .count_window(usize::MAX),
            "count_window",
        ),
    ];
    for (builder, field) in cases {
        let err = builder.build().unwrap_err();
        assert_eq!(err.field(), field, "{err}");
        assert!(err.to_string().contains(field), "{err}");
    }
}

#[test]
fn errors_compose_with_boxed_errors() {
    let b = CircuitBreaker::builder().build().unwrap();
    b.force_open();
    let e: Box<dyn std::error::Error + Send + Sync> =
        Box::new(b.call(|| Ok::<(), std::io::Error>(())).unwrap_err());
    assert_eq!(e.to_string(), "circuit breaker is forced open");
    b.reset();
    let inner = b
        .call(|| Err::<(), _>(std::io::Error::other("disk on fire")))
        .unwrap_err();
    assert_eq!(inner.to_string(), "disk on fire");
}

#[test]
fn handles_are_send_sync_static() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    fn assert_send<T: Send>(_: &T) {}
    fn assert_send_static<T: Send + 'static>(_: &T) {}
    assert_send_sync::<CircuitBreaker>();
    assert_send_sync::<fusebox::Permit>();
    assert_send_sync::<Rejected>();
    assert_send_sync::<Error<std::io::Error>>();
    let b = CircuitBreaker::builder().build().unwrap();
    // `call_async`'s future borrows the breaker: `Send`, not `'static`...
    let fut = b.call_async(|| async { Ok::<u8, std::io::Error>(1) });
    assert_send(&fut);
    // ...and `'static` (spawnable) with a clone of the breaker moved in.
    let task = {
        let b = b.clone();
        async move { b.call_async(|| async { Ok::<u8, std::io::Error>(1) }).await }
    };
    assert_send_static(&task);
}

#[test]
fn full_window_of_successes_still_slides_when_failures_come() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(4)
        .min_calls(4)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for _ in 0..10 {
        ok(&b).unwrap(); // after the 4th, successes over successes write nothing
    }
    assert_eq!(b.snapshot().calls, 4);
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Closed, "1 of 4");
    ok(&b).unwrap();
    ok(&b).unwrap();
    fail(&b).unwrap_err();
    let s = b.snapshot();
    assert_eq!(
        (s.calls, s.failures),
        (4, 2),
        "F S S F: the last four calls"
    );
    assert_eq!(s.state, State::Open);
}

#[test]
fn a_new_closed_period_counts_successes_after_a_full_window() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(2)
        .min_calls(2)
        .open_for(Duration::from_secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..3 {
        ok(&b).unwrap(); // the third finds the window full of successes
    }
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Open, "S F: half failed");
    clock.advance(Duration::from_secs(1));
    ok(&b).unwrap(); // the probe closes
    assert_eq!(b.state(), State::Closed);
    ok(&b).unwrap();
    assert_eq!(b.snapshot().calls, 1, "the new period's window counts it");
    ok(&b).unwrap();
    ok(&b).unwrap();
    fail(&b).unwrap_err();
    assert_eq!(b.state(), State::Open, "S F again");
}

/// The mark of a full window names its closed period: a reset empties the
/// window without any failure being recorded (which would clear the mark),
/// so only the generation in the mark keeps the next period's successes
/// from settling unrecorded.
#[test]
fn a_reset_counts_successes_after_a_full_window() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(2)
        .min_calls(2)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for _ in 0..3 {
        ok(&b).unwrap(); // the third finds the window full of successes
    }
    b.force_open();
    b.reset();
    assert_eq!(b.snapshot().calls, 0, "a reset empties the window");
    ok(&b).unwrap();
    assert_eq!(b.snapshot().calls, 1, "the new period's window counts it");
}

#[test]
fn time_window_success_completing_min_calls_trips() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .time_window(Duration::from_secs(10))
        .min_calls(4)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for _ in 0..3 {
        fail(&b).unwrap_err();
    }
    assert_eq!(b.state(), State::Closed, "3 calls < min_calls");
    ok(&b).unwrap(); // 3 of 4 failed
    assert_eq!(b.state(), State::Open);
}

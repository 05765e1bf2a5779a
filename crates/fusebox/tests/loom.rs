//! loom models of the breaker's concurrent invariants.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p fusebox --release --test loom`.
#![cfg(loom)]

use fusebox::{CallEvent, CircuitBreaker, Listener, ManualClock, State, Timing};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

/// A thread that puts `settings` in force in `b`, racing the caller.
fn reconfigure_racing(b: &CircuitBreaker, settings: fusebox::Builder) -> thread::JoinHandle<()> {
    let b = b.clone();
    thread::spawn(move || b.reconfigure(settings).unwrap())
}

fn half_open(probes: u32, clock: &ManualClock) -> CircuitBreaker {
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(Duration::from_millis(1))
        .half_open_probes(probes)
        .clock(clock.clone())
        .build()
        .unwrap();
    b.call(|| Err::<(), _>(())).unwrap_err();
    clock.advance(Duration::from_millis(1));
    b
}

/// Half-open with k probe slots never has more than k permits out at once,
/// and a released permit always frees its slot.
#[test]
fn half_open_admits_at_most_k() {
    loom::model(|| {
        let clock = ManualClock::new();
        let b = half_open(1, &clock);
        let out = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (b, out) = (b.clone(), out.clone());
                thread::spawn(move || {
                    if let Ok(p) = b.try_acquire() {
                        let now_out = out.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now_out <= 1, "{now_out} probes out at once");
                        out.fetch_sub(1, Ordering::SeqCst);
                        drop(p);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(b.probes_in_flight(), 0);
        assert_eq!(b.state(), State::HalfOpen);
    });
}

/// A stale success racing a failed probe can never close the breaker.
#[test]
fn stale_success_racing_a_failed_probe() {
    loom::model(|| {
        let clock = ManualClock::new();
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_millis(1))
            .clock(clock.clone())
            .build()
            .unwrap();
        let stale = b.try_acquire().unwrap();
        b.call(|| Err::<(), _>(())).unwrap_err();
        clock.advance(Duration::from_millis(1));
        let probe = b.try_acquire().unwrap();
        let t = thread::spawn(move || stale.success());
        probe.failure();
        t.join().unwrap();
        assert_eq!(b.state(), State::Open);
        assert_eq!(b.probes_in_flight(), 0);
    });
}

/// The late success of a probe past `half_open_max_wait`, racing a call
/// that finds the deadline passed: whichever comes first times the probe
/// out, exactly once (one more transition, HalfOpen -> Open), its slot comes
/// back, and the success, too late either way, closes nothing.
#[test]
fn late_probe_verdict_racing_the_half_open_deadline() {
    loom::model(|| {
        let clock = ManualClock::new();
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_millis(1))
            .half_open_max_wait(Duration::from_millis(1))
            .clock(clock.clone())
            .build()
            .unwrap();
        b.call(|| Err::<(), _>(())).unwrap_err();
        clock.advance(Duration::from_millis(1));
        let probe = b.try_acquire().unwrap();
        clock.advance(Duration::from_millis(1));
        let t = thread::spawn(move || probe.success());
        let rejected = b.try_acquire().unwrap_err();
        t.join().unwrap();
        assert_eq!(rejected.state(), State::Open);
        assert_eq!(b.state(), State::Open);
        assert_eq!(b.snapshot().generation, 3, "trip, half-open, one timeout");
        assert_eq!(b.probes_in_flight(), 0);
    });
}

/// Two failures racing to trip: exactly one transition, and the open period
/// is set once.
#[test]
fn racing_trips_open_once() {
    loom::model(|| {
        let clock = ManualClock::new();
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_millis(5))
            .clock(clock.clone())
            .build()
            .unwrap();
        let p1 = b.try_acquire().unwrap();
        let p2 = b.try_acquire().unwrap();
        let t = thread::spawn(move || p1.failure());
        p2.failure();
        t.join().unwrap();
        assert_eq!(b.state(), State::Open);
        assert_eq!(b.snapshot().generation, 1, "one trip, one transition");
    });
}

/// A probe verdict racing a manual reset: whatever the order, the breaker
/// ends in a legal state with no probe slot held.
#[test]
fn probe_verdict_racing_reset() {
    loom::model(|| {
        let clock = ManualClock::new();
        let b = half_open(1, &clock);
        let probe = b.try_acquire().unwrap();
        let b2 = b.clone();
        let t = thread::spawn(move || b2.reset());
        probe.failure();
        t.join().unwrap();
        // Failure first: it reopened, then the reset closed. Reset first: the
        // failure belonged to an older generation and changed nothing.
        assert_eq!(b.state(), State::Closed);
        assert_eq!(b.probes_in_flight(), 0);
    });
}

/// A closed-state verdict racing a reset: it either lands before the reset
/// (and is emptied with the window) or is stale after it (and changes
/// nothing). Either way the new closed period starts with an empty window.
#[test]
fn window_verdict_racing_reset_leaves_an_empty_window() {
    loom::model(|| {
        let b = CircuitBreaker::builder()
            .failure_rate(1.0)
            .count_window(2)
            .min_calls(2)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let p = b.try_acquire().unwrap();
        let b2 = b.clone();
        let t = thread::spawn(move || b2.reset());
        p.failure();
        t.join().unwrap();
        let s = b.snapshot();
        assert_eq!((s.calls, s.failures), (0, 0));
        assert_eq!(s.state, State::Closed);
    });
}

/// A reconfigure that changes the window's shape, racing a failing verdict:
/// no deadlock, the window is never corrupted (the failure lands in the old
/// window or the new one, never half in each), and the breaker then trips by
/// the settings in force.
#[test]
fn reconfigure_racing_verdicts() {
    loom::model(|| {
        let b = CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(2)
            .min_calls(2)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let p = b.try_acquire().unwrap();
        let writer = reconfigure_racing(
            &b,
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .count_window(3)
                .min_calls(1),
        );
        let verdict = thread::spawn(move || p.failure());
        writer.join().unwrap();
        verdict.join().unwrap();
        let s = b.snapshot();
        assert!(s.failures <= s.calls && s.calls <= 1);
        assert_eq!(b.config().count_window, Some(3));
        // Whichever window took the failure, the next failure is judged by
        // the new settings: 1 call is enough, and a failure trips.
        let _ = b.call(|| Err::<(), _>(()));
        assert_eq!(b.state(), State::Open);
    });
}

/// A count window of 2 that trips on 2 failures, on a manual clock.
fn two_call_window() -> CircuitBreaker {
    CircuitBreaker::builder()
        .failure_rate(1.0)
        .count_window(2)
        .min_calls(2)
        .clock(ManualClock::new())
        .build()
        .unwrap()
}

/// A count window of 2 holding one plain success: the success that fills
/// it marks it full of plain successes.
fn full_two_call_window() -> CircuitBreaker {
    let b = two_call_window();
    b.call(|| Ok::<(), ()>(())).unwrap();
    b
}

/// A count window of 2 holding a success and a failure, closed: two more
/// successes push the failure out of the last two calls (which they could
/// not if a stale mark of a full window let them settle unrecorded).
fn assert_the_failure_slides_out(b: &CircuitBreaker) {
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures, s.state), (2, 1, State::Closed));
    b.call(|| Ok::<(), ()>(())).unwrap();
    b.call(|| Ok::<(), ()>(())).unwrap();
    let s = b.snapshot();
    assert_eq!((s.calls, s.failures), (2, 0), "the failure slid out");
}

/// A success that marks its count window full of plain successes (so that
/// later successes settle without a record), racing a failure recorded in
/// that window (whichever takes the empty position): the mark never
/// outlives the failure. Two more successes
/// then push the failure out of the last two calls, which they could not
/// if a stale mark let them settle unrecorded.
#[test]
fn full_window_mark_racing_a_failure() {
    loom::model(|| {
        let b = full_two_call_window();
        let marker = {
            let b = b.clone();
            thread::spawn(move || b.call(|| Ok::<(), ()>(())).unwrap())
        };
        let p = b.try_acquire().unwrap();
        let failure = thread::spawn(move || p.failure());
        marker.join().unwrap();
        failure.join().unwrap();
        assert_the_failure_slides_out(&b);
    });
}

/// Counts the calls it hears; samples their durations (one in two), so a
/// success over a full window is told to it without the full verdict.
struct Heard(Arc<AtomicUsize>);

impl Listener for Heard {
    fn on_call(&self, _: &CallEvent) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn timing(&self) -> Timing {
        Timing::OneIn(2)
    }
}

/// The race above on a breaker with a listener that samples: the mark is
/// set by the verdict that tells the listeners (not the silent one), and
/// it never outlives the failure either; every call is heard.
#[test]
fn full_window_mark_racing_a_failure_with_a_sampling_listener() {
    loom::model(|| {
        let heard = Arc::new(AtomicUsize::new(0));
        let b = CircuitBreaker::builder()
            .failure_rate(1.0)
            .count_window(2)
            .min_calls(2)
            .clock(ManualClock::new())
            .listener(Heard(heard.clone()))
            .build()
            .unwrap();
        for _ in 0..2 {
            b.call(|| Ok::<(), ()>(())).unwrap();
        }
        let marker = {
            let b = b.clone();
            thread::spawn(move || b.call(|| Ok::<(), ()>(())).unwrap())
        };
        let p = b.try_acquire().unwrap();
        let failure = thread::spawn(move || p.failure());
        marker.join().unwrap();
        failure.join().unwrap();
        assert_the_failure_slides_out(&b);
        assert_eq!(heard.load(Ordering::SeqCst), 6, "every call heard");
    });
}

/// The same mark racing a reconfigure to a new (empty) window: the mark
/// never carries over, so the new window counts the next successes.
#[test]
fn full_window_mark_racing_a_reconfigure() {
    loom::model(|| {
        let b = full_two_call_window();
        let marker = {
            let b = b.clone();
            thread::spawn(move || b.call(|| Ok::<(), ()>(())).unwrap())
        };
        let writer = reconfigure_racing(
            &b,
            CircuitBreaker::builder()
                .failure_rate(1.0)
                .count_window(3)
                .min_calls(3),
        );
        marker.join().unwrap();
        writer.join().unwrap();
        let before = b.snapshot().calls;
        assert!(
            before <= 1,
            "the new window holds at most the racing success"
        );
        b.call(|| Ok::<(), ()>(())).unwrap();
        assert_eq!(
            b.snapshot().calls,
            before + 1,
            "a success after it is counted"
        );
    });
}

/// Two breakers of equal count-window settings share them (each counting
/// in its own window). One, full of plain successes, has the success that
/// marks it so racing a failure and a reconfigure to other rates and back:
/// its settings leave the shared ones and come back to them, at the same
/// address (the other breaker holds them), which is what the mark is
/// checked against. The mark never outlives the failure (two successes
/// then push it out of the last two calls), and the other breaker's
/// window is untouched.
#[test]
fn full_window_mark_racing_a_failure_and_a_reconfigure_away_and_back() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        let other = full_two_call_window();
        let b = full_two_call_window();
        let marker = {
            let b = b.clone();
            thread::spawn(move || b.call(|| Ok::<(), ()>(())).unwrap())
        };
        let writer = {
            let b = b.clone();
            thread::spawn(move || {
                b.reconfigure(
                    CircuitBreaker::builder()
                        .failure_rate(0.9)
                        .count_window(2)
                        .min_calls(2),
                )
                .unwrap();
                b.reconfigure(
                    CircuitBreaker::builder()
                        .failure_rate(1.0)
                        .count_window(2)
                        .min_calls(2),
                )
                .unwrap();
            })
        };
        let p = b.try_acquire().unwrap();
        p.failure();
        marker.join().unwrap();
        writer.join().unwrap();
        assert_the_failure_slides_out(&b);
        let o = other.snapshot();
        assert_eq!((o.calls, o.failures), (1, 0), "the other window, its own");
    });
}

/// Two reconfigures racing (no window, then a count window): the hot
/// path's mode ends up matching the settings left in force, so successes
/// over the count window are recorded in it rather than settled as a
/// consecutive breaker's would be. (Found by review: the mode used to be
/// stored after the lock, so the loser's could land last.) Bounded to 3
/// preemptions, where the old code fails.
#[test]
fn racing_reconfigures_leave_a_matching_mode() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let b = CircuitBreaker::builder()
            .consecutive_failures(5)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let r1 = {
            let b = b.clone();
            thread::spawn(move || {
                b.reconfigure(CircuitBreaker::builder().consecutive_failures(3))
                    .unwrap()
            })
        };
        let r2 = {
            let b = b.clone();
            thread::spawn(move || {
                b.reconfigure(
                    CircuitBreaker::builder()
                        .failure_rate(0.5)
                        .count_window(2)
                        .min_calls(2),
                )
                .unwrap()
            })
        };
        r1.join().unwrap();
        r2.join().unwrap();
        if b.config().count_window == Some(2) {
            b.call(|| Ok::<(), ()>(())).unwrap();
            b.call(|| Ok::<(), ()>(())).unwrap();
            assert_eq!(
                b.snapshot().calls,
                2,
                "successes recorded in the window in force"
            );
        }
    });
}

/// `set_mode` racing a reconfigure: the mode is changed under the lock that
/// puts settings in force, so the reconfigure's settings are never undone
/// (found by review: `set_mode` read the settings outside the lock and
/// wrote them back with its mode), and the hot path's bits match the mode
/// left in force: a shadow breaker lets a call through, an enforcing one
/// refuses it.
#[test]
fn set_mode_racing_a_reconfigure_keeps_both() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let b = CircuitBreaker::builder()
            .consecutive_failures(5)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let m = {
            let b = b.clone();
            thread::spawn(move || b.set_mode(fusebox::Mode::Shadow))
        };
        let r = {
            let b = b.clone();
            thread::spawn(move || {
                b.reconfigure(
                    CircuitBreaker::builder()
                        .consecutive_failures(1)
                        .mode(fusebox::Mode::Enforce),
                )
                .unwrap()
            })
        };
        m.join().unwrap();
        r.join().unwrap();
        assert_eq!(
            b.config().consecutive_failures,
            Some(1),
            "the reconfigure stands"
        );
        let _ = b.call(|| Err::<(), ()>(()));
        assert_eq!(b.state(), State::Open);
        let shadow = b.mode() == fusebox::Mode::Shadow;
        assert_eq!(b.call(|| Ok::<(), ()>(())).is_ok(), shadow);
    });
}

/// A time window whose head bucket is found without a division (buckets of
/// 1 s): a failure racing a success that first moves the clock on by two
/// buckets, so that the success moves the window and empties the bucket the
/// failure may be writing (the failure reads the clock before or after the
/// move). No count is lost from the totals without leaving its bucket, none
/// is counted twice: the window never holds more than the two calls, and
/// once the clock is past both it holds nothing and counts the next call.
#[test]
fn time_window_verdicts_racing_the_window_moving_on() {
    let mut model = loom::model::Builder::new();
    // Every interleaving of the window's own atomics is within 3
    // preemptions; the clock's and the state word's loads add more
    // schedules than a CI run should pay for.
    model.preemption_bound = Some(3);
    model.check(|| {
        let clock = ManualClock::new();
        let b = CircuitBreaker::builder()
            .failure_rate(1.0)
            .min_calls(100)
            .time_window(Duration::from_secs(2))
            .buckets(2)
            .clock(clock.clone())
            .build()
            .unwrap();
        clock.advance(Duration::from_millis(500));
        let failure = b.try_acquire().unwrap();
        let success = b.try_acquire().unwrap();
        let t = thread::spawn(move || failure.failure());
        clock.advance(Duration::from_secs(2));
        success.success();
        t.join().unwrap();
        // A failure read at 0.5 s may have been emptied with its bucket,
        // landed in it after the emptying, or (its call counted before the
        // emptying, its failure after) kept its failure alone; an emptying
        // that lags may take the success's call too.
        let s = b.snapshot();
        assert!(s.calls <= 2 && s.failures <= 1, "{s:?}");
        // A reading of 0.5 s taken before the move and compared after it
        // is read again, not taken for the clock going back.
        assert_eq!(s.since_transition, Duration::from_millis(2500), "{s:?}");
        assert_eq!(b.state(), State::Closed);
        clock.advance(Duration::from_secs(2));
        let s = b.snapshot();
        assert_eq!((s.calls, s.failures), (0, 0), "a count outlived its bucket");
        // Nothing was taken out twice either: totals driven below zero
        // would read 0 above, and hide the next call.
        b.try_acquire().unwrap().failure();
        let s = b.snapshot();
        assert_eq!((s.calls, s.failures), (1, 1), "the totals went below zero");
    });
}

/// A count window of 2 (failure rate 1.0, 2 calls needed) that has seen
/// `before` (`true`: a failure), and the verdict `last` (`true`: a
/// failure) of a permit taken then, racing a reconfigure to a window of
/// 1 (1 call needed): the breaker once both are done.
fn ring_verdict_racing_a_reconfigure(before: [bool; 3], last: bool) -> CircuitBreaker {
    let b = two_call_window();
    for failed in before {
        let p = b.try_acquire().unwrap();
        if failed {
            p.failure();
        } else {
            p.success();
        }
    }
    let p = b.try_acquire().unwrap();
    let writer = reconfigure_racing(
        &b,
        CircuitBreaker::builder()
            .failure_rate(1.0)
            .count_window(1)
            .min_calls(1),
    );
    if last {
        p.failure();
    } else {
        p.success();
    }
    writer.join().unwrap();
    assert_eq!(b.config().count_window, Some(1));
    b
}

/// A success over a failure on the hot path that reaches the count window
/// without the live settings, racing a reconfigure to a smaller window: the
/// success took its position in the window it was built with, so it is
/// recorded there or, once the new window is in force, by the new rules
/// (never at that position in the new window, which has no such position).
#[test]
fn ring_success_over_a_failure_racing_a_reconfigure_to_a_smaller_window() {
    loom::model(|| {
        // Positions 0, 1, 0: the last call takes position 1, a failure.
        let b = ring_verdict_racing_a_reconfigure([false, true, false], false);
        let s = b.snapshot();
        assert!(s.calls <= 1 && s.failures == 0, "{s:?}");
        // The new window counts: one failure trips it.
        b.try_acquire().unwrap().failure();
        assert_eq!(b.state(), State::Open);
    });
}

/// As `ring_success_over_a_failure_racing_a_reconfigure_to_a_smaller_window`,
/// for a failure over a success.
#[test]
fn ring_failure_over_a_success_racing_a_reconfigure_to_a_smaller_window() {
    loom::model(|| {
        // Positions 0, 1, 0: the last call takes position 1, a success.
        let b = ring_verdict_racing_a_reconfigure([false, false, true], true);
        // Either the failure went to the old window, or the new one's
        // rules took it (a failure of the one call they need: open).
        let s = b.snapshot();
        assert!(s.calls <= 1, "{s:?}");
        if b.state() == State::Closed {
            b.try_acquire().unwrap().failure();
        }
        assert_eq!(b.state(), State::Open);
    });
}

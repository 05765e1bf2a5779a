//! Scenario suite written against the names in issue 2 only (Resilience4j- and
//! pybreaker-style cases). Every timing case runs on `ManualClock`; async cases use
//! tokio's paused time or drop futures by hand. No sleeps.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use fusebox::{CircuitBreaker, ConfigError, Error, ManualClock, Outcome, Rejected, State};

// ---------------------------------------------------------------------------
// helpers

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One failed call through `call`; the error is the caller's own.
fn fail(cb: &CircuitBreaker) -> Result<(), Error<&'static str>> {
    cb.call(|| Err::<(), _>("boom"))
}

/// One successful call through `call`.
fn succeed(cb: &CircuitBreaker) -> Result<u32, Error<&'static str>> {
    cb.call(|| Ok::<_, &'static str>(7))
}

fn rejected<T: std::fmt::Debug, E: std::fmt::Debug>(r: Result<T, Error<E>>) -> Rejected {
    match r {
        Err(Error::Rejected(rej)) => rej,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// Consecutive-failure breaker: trips after `n` failures, open for `open`.
fn consecutive(clock: &ManualClock, n: u32, open: Duration) -> CircuitBreaker {
    CircuitBreaker::builder()
        .consecutive_failures(n)
        .open_for(open)
        .clock(clock.clone())
        .build()
        .expect("valid config")
}

/// Trips a consecutive(1) breaker now.
fn trip(cb: &CircuitBreaker) {
    let _ = fail(cb);
    assert_eq!(cb.state(), State::Open);
}

// ---------------------------------------------------------------------------
// API shape

fn assert_send_sync_static<T: Send + Sync + 'static>() {}
fn assert_clone<T: Clone>() {}
fn assert_state_derives<T: std::fmt::Debug + Clone + Copy + PartialEq + Eq>() {}
fn assert_error<T: std::error::Error + Send + Sync + 'static>() {}

#[test]
fn api_shape_matches_issue() {
    assert_send_sync_static::<CircuitBreaker>();
    assert_clone::<CircuitBreaker>();
    assert_send_sync_static::<ManualClock>();
    assert_clone::<ManualClock>();
    assert_state_derives::<State>();
    assert_error::<Rejected>();
    assert_error::<ConfigError>();
    assert_error::<Error<std::io::Error>>();
    // A permit must be movable to another thread / across an await.
    fn permit_is_send<T: Send>(_: &T) {}
    let cb = CircuitBreaker::builder()
        .build()
        .expect("defaults are valid");
    let p = cb.try_acquire().expect("closed admits");
    permit_is_send(&p);
    p.ignore();
}

#[test]
fn defaults_build_and_start_closed() {
    let cb = CircuitBreaker::builder()
        .build()
        .expect("defaults are valid");
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(succeed(&cb).unwrap(), 7);
    // Defaults are "sensible for a real service": one failure must not trip.
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn errors_compose_with_boxed_dyn_error() {
    fn run(cb: &CircuitBreaker) -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
        let v = cb.call(|| Err::<u32, _>(std::io::Error::other("disk")))?;
        Ok(v)
    }
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let e = run(&cb).unwrap_err();
    assert!(e.to_string().contains("disk"), "inner error shown: {e}");
    let e = run(&cb).unwrap_err();
    assert!(!e.to_string().is_empty());
    let rej = e
        .downcast_ref::<Error<std::io::Error>>()
        .expect("our error type");
    assert!(matches!(rej, Error::Rejected(_)));
}

// ---------------------------------------------------------------------------
// ManualClock

#[test]
fn manual_clock_clones_share_time_across_threads() {
    let clock = ManualClock::new();
    let c2 = clock.clone();
    thread::spawn(move || c2.advance(secs(5))).join().unwrap();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.set(secs(14));
    assert_eq!(cb.state(), State::Open);
    clock.set(secs(15));
    assert_eq!(cb.state(), State::HalfOpen);
}

// ---------------------------------------------------------------------------
// Lifecycle (seed 003 / pybreaker)

#[test]
fn seed_003_lifecycle() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 3, ms(150));
    let mut seen = Vec::new();
    for _ in 0..3 {
        assert!(matches!(fail(&cb), Err(Error::Inner("boom"))));
        seen.push(cb.state());
    }
    assert_eq!(seen, [State::Closed, State::Closed, State::Open]);

    let ran = Cell::new(false);
    let r = cb.call(|| {
        ran.set(true);
        Ok::<_, &str>(1)
    });
    let rej = rejected(r);
    assert!(!ran.get(), "fast-fail must not run the call");
    assert_eq!(rej.state(), State::Open);

    clock.advance(ms(180));
    assert_eq!(cb.state(), State::HalfOpen);
    assert_eq!(succeed(&cb).unwrap(), 7);
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn success_resets_consecutive_count() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 3, secs(10));
    for _ in 0..5 {
        let _ = fail(&cb);
        let _ = fail(&cb);
        succeed(&cb).unwrap();
    }
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb);
    let _ = fail(&cb);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn seed_004_success_threshold_two() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(5)
        .successes_to_close(2)
        .open_for(secs(30))
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..5 {
        let _ = fail(&cb);
    }
    assert_eq!(cb.state(), State::Open);
    clock.advance(secs(30));
    succeed(&cb).unwrap();
    assert_eq!(cb.state(), State::HalfOpen, "one success of two");
    succeed(&cb).unwrap();
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn any_probe_failure_reopens() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .successes_to_close(3)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&cb);
    clock.advance(secs(10));
    succeed(&cb).unwrap();
    succeed(&cb).unwrap();
    assert_eq!(cb.state(), State::HalfOpen);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open);
    assert_eq!(rejected(succeed(&cb)).state(), State::Open);
}

#[test]
fn clones_share_state() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 2, secs(10));
    let other = cb.clone();
    let _ = fail(&cb);
    let _ = fail(&other);
    assert_eq!(cb.state(), State::Open);
    let t = thread::spawn(move || other.state()).join().unwrap();
    assert_eq!(t, State::Open);
}

// ---------------------------------------------------------------------------
// Exact rules: lazy half-open, open period from the tripping verdict, retry_after

#[test]
fn half_open_is_lazy_and_exact_at_boundary() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10) - Duration::from_nanos(1));
    assert_eq!(cb.state(), State::Open);
    assert!(cb.try_acquire().is_err());
    clock.advance(Duration::from_nanos(1));
    // "at or after trip time + open period"
    let p = cb
        .try_acquire()
        .expect("probe admitted exactly at the boundary");
    assert_eq!(cb.state(), State::HalfOpen);
    p.success();
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn open_period_measured_from_tripping_verdict_not_admission() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let p = cb.try_acquire().unwrap();
    clock.advance(secs(5)); // the call takes 5 s
    p.failure(); // trips at t = 5 s
    assert_eq!(cb.state(), State::Open);
    clock.set(secs(14));
    assert_eq!(
        cb.state(),
        State::Open,
        "open period starts at the verdict (t=5)"
    );
    clock.set(secs(15));
    assert_eq!(cb.state(), State::HalfOpen);
}

#[test]
fn failed_probe_open_period_from_probe_failure() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb); // t = 0
    clock.set(secs(10));
    let probe = cb.try_acquire().expect("probe");
    clock.set(secs(13)); // probe takes 3 s
    probe.failure(); // reopens at t = 13
    assert_eq!(cb.state(), State::Open);
    clock.set(secs(22));
    assert_eq!(cb.state(), State::Open);
    clock.set(secs(23));
    assert_eq!(cb.state(), State::HalfOpen);
}

#[test]
fn rejected_reports_state_and_retry_after() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(4));
    let rej = cb.try_acquire().expect_err("open rejects");
    assert_eq!(rej.state(), State::Open);
    assert_eq!(rej.retry_after(), Some(secs(6)));
    assert!(!rej.to_string().is_empty());

    cb.force_open();
    let rej = cb.try_acquire().expect_err("forced open rejects");
    assert_eq!(rej.state(), State::ForcedOpen);
    assert_eq!(rej.retry_after(), None);
}

#[test]
fn half_open_rejection_names_half_open() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10));
    let probe = cb.try_acquire().expect("first probe");
    let rej = cb.try_acquire().expect_err("default cap is one probe");
    assert_eq!(rej.state(), State::HalfOpen);
    probe.success();
}

// ---------------------------------------------------------------------------
// Generations: stale verdicts

#[test]
fn stale_success_does_not_close_open_breaker() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let old = cb.try_acquire().unwrap();
    trip(&cb);
    old.success();
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn stale_success_is_not_a_probe_success() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let old = cb.try_acquire().unwrap();
    trip(&cb);
    clock.advance(secs(10));
    assert_eq!(cb.state(), State::HalfOpen);
    old.success();
    assert_eq!(
        cb.state(),
        State::HalfOpen,
        "closed-generation success is stale"
    );
}

#[test]
fn stale_failure_does_not_reopen_half_open_or_extend_open() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let a = cb.try_acquire().unwrap();
    let b = cb.try_acquire().unwrap();
    trip(&cb); // t = 0
    clock.set(secs(5));
    a.failure(); // stale: must not restart the open period
    clock.set(secs(10));
    assert_eq!(cb.state(), State::HalfOpen);
    b.failure(); // stale: must not reopen
    assert_eq!(cb.state(), State::HalfOpen);
}

#[test]
fn stale_slow_call_does_not_extend_open_period() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .slow_calls(secs(1), 0.5)
        .count_window(2)
        .min_calls(2)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    let slow = cb.try_acquire().unwrap(); // admitted while closed
    let _ = fail(&cb);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open); // trips at t = 0
    clock.set(secs(5));
    slow.success(); // 5 s slow, but from the closed generation
    clock.set(secs(10));
    assert_eq!(cb.state(), State::HalfOpen);
}

#[test]
fn stale_probe_from_previous_half_open_is_ignored() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .half_open_probes(2)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&cb);
    clock.set(secs(10));
    let p1 = cb.try_acquire().unwrap();
    let p2 = cb.try_acquire().unwrap();
    p1.failure(); // reopen at t = 10
    assert_eq!(cb.state(), State::Open);
    p2.success(); // from the previous half-open generation
    assert_eq!(cb.state(), State::Open);
    clock.set(secs(20));
    // The new half-open generation has both slots free.
    let q1 = cb.try_acquire().unwrap();
    let q2 = cb.try_acquire().unwrap();
    assert!(cb.try_acquire().is_err());
    q1.success();
    q2.success();
}

#[test]
fn stale_permit_drop_does_not_free_a_probe_slot() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let old = cb.try_acquire().unwrap();
    trip(&cb);
    clock.advance(secs(10));
    let probe = cb.try_acquire().unwrap();
    drop(old); // closed-generation permit released
    assert!(
        cb.try_acquire().is_err(),
        "cap of 1 must hold: a stale release must not free the probe's slot"
    );
    probe.success();
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn verdict_after_reset_is_stale() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let old = cb.try_acquire().unwrap();
    cb.reset();
    old.failure();
    assert_eq!(cb.state(), State::Closed, "pre-reset permit is stale");
}

// ---------------------------------------------------------------------------
// Counters start empty after every transition to Closed

#[test]
fn consecutive_count_empty_after_close() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 3, secs(10));
    let _ = fail(&cb);
    let _ = fail(&cb);
    let _ = fail(&cb);
    clock.advance(secs(10));
    succeed(&cb).unwrap();
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn rate_window_empty_after_close() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(4)
        .min_calls(4)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..4 {
        let _ = fail(&cb);
    }
    assert_eq!(cb.state(), State::Open);
    clock.advance(secs(10));
    succeed(&cb).unwrap();
    assert_eq!(cb.state(), State::Closed);
    let s = cb.snapshot();
    assert_eq!(s.calls, 0);
    assert_eq!(s.failures, 0);
    // Three failures: below min_calls because the old window was cleared.
    for _ in 0..3 {
        let _ = fail(&cb);
    }
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn reset_clears_counters_and_closes() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 3, secs(10));
    let _ = fail(&cb);
    let _ = fail(&cb);
    cb.reset();
    let _ = fail(&cb);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open);
    cb.reset();
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.snapshot().calls, 0);
    succeed(&cb).unwrap();
}

// ---------------------------------------------------------------------------
// Sliding windows (Resilience4j style)

#[test]
fn count_window_min_calls_prevents_early_trip() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(10)
        .min_calls(5)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..4 {
        let _ = fail(&cb);
    }
    assert_eq!(cb.state(), State::Closed, "4 calls < min_calls 5");
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn count_window_slides() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(4)
        .min_calls(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    // S S S F: 25 %
    for _ in 0..3 {
        succeed(&cb).unwrap();
    }
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Closed);
    // + F: the window is the last 4 calls S S F F = 50 % (a tumbling or cumulative
    // window would see 1 call or 2/5 and not trip).
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn count_window_old_calls_drop_out() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.75)
        .count_window(4)
        .min_calls(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = fail(&cb);
    let _ = fail(&cb);
    for _ in 0..4 {
        succeed(&cb).unwrap();
    }
    let s = cb.snapshot();
    assert_eq!(s.calls, 4);
    assert_eq!(s.failures, 0, "the two early failures dropped out");
    assert_eq!(s.failure_rate, 0.0);
    let _ = fail(&cb);
    let _ = fail(&cb);
    let s = cb.snapshot();
    assert_eq!(s.failures, 2);
    assert!((s.failure_rate - 0.5).abs() < 1e-9);
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb); // S F F F = 75 %
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn time_window_forgets_old_calls() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.6)
        .time_window(secs(10))
        .min_calls(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = fail(&cb); // t = 0
    clock.advance(secs(15));
    succeed(&cb).unwrap();
    let _ = fail(&cb);
    // Window holds S F = 50 % < 60 %; with the old failure it would be 67 %.
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.snapshot().calls, 2);
}

#[test]
fn time_window_trips_within_window() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .time_window(secs(10))
        .min_calls(3)
        .open_for(secs(5))
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = fail(&cb);
    clock.advance(secs(3));
    succeed(&cb).unwrap();
    clock.advance(secs(3));
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb); // 2/3 within 6 s
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn time_window_snapshot_empties_as_time_passes() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .time_window(secs(10))
        .min_calls(10)
        .clock(clock.clone())
        .build()
        .unwrap();
    let _ = fail(&cb);
    succeed(&cb).unwrap();
    assert_eq!(cb.snapshot().calls, 2);
    clock.advance(secs(60));
    let s = cb.snapshot();
    assert_eq!(s.calls, 0, "calls in the window, not ever");
    assert_eq!(s.failures, 0);
}

// ---------------------------------------------------------------------------
// Slow calls

#[test]
fn slow_success_returns_value_and_trips() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .slow_calls(secs(1), 0.5)
        .count_window(4)
        .min_calls(4)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    succeed(&cb).unwrap();
    succeed(&cb).unwrap();
    let v = cb.call(|| {
        clock.advance(secs(2));
        Ok::<_, &str>("slow but fine")
    });
    assert_eq!(v.unwrap(), "slow but fine");
    assert_eq!(cb.state(), State::Closed);
    let v = cb.call(|| {
        clock.advance(secs(1)); // exactly d: "at least d" is slow
        Ok::<_, &str>("also slow")
    });
    assert_eq!(v.unwrap(), "also slow");
    let s = cb.snapshot();
    assert_eq!(s.slow_calls, 2);
    assert_eq!(cb.state(), State::Open, "slow rate 2/4 >= 0.5");
}

#[test]
fn fast_calls_are_not_slow() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .slow_calls(secs(1), 0.5)
        .count_window(2)
        .min_calls(2)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..10 {
        cb.call(|| {
            clock.advance(ms(999));
            Ok::<_, &str>(())
        })
        .unwrap();
    }
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.snapshot().slow_calls, 0);
    assert_eq!(cb.snapshot().slow_call_rate, 0.0);
}

#[test]
fn slow_permit_verdict_measures_from_admission() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .slow_calls(secs(1), 1.0)
        .count_window(1)
        .min_calls(1)
        .clock(clock.clone())
        .build()
        .unwrap();
    let p = cb.try_acquire().unwrap();
    clock.advance(secs(3));
    p.success();
    assert_eq!(cb.state(), State::Open);
}

// ---------------------------------------------------------------------------
// Half-open probe caps

#[test]
fn probe_released_by_ignore_and_drop() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10));
    let p = cb.try_acquire().unwrap();
    assert!(cb.try_acquire().is_err());
    p.ignore();
    assert_eq!(cb.state(), State::HalfOpen);
    let p = cb.try_acquire().expect("ignore frees the slot");
    drop(p);
    assert_eq!(cb.state(), State::HalfOpen);
    let p = cb.try_acquire().expect("drop frees the slot");
    p.success();
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn half_open_cap_under_thread_contention() {
    const K: usize = 3;
    const THREADS: usize = 16;
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .half_open_probes(K as u32)
        .successes_to_close(1000)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&cb);
    clock.advance(secs(10));
    for _round in 0..3 {
        let admitted = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        let counted = Barrier::new(THREADS);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    start.wait();
                    let p = cb.try_acquire();
                    if p.is_ok() {
                        admitted.fetch_add(1, Ordering::SeqCst);
                    }
                    counted.wait(); // hold the permit until everyone tried
                    drop(p);
                });
            }
        });
        assert_eq!(admitted.load(Ordering::SeqCst), K);
        assert_eq!(cb.state(), State::HalfOpen);
    }
}

#[test]
fn half_open_cap_holds_with_churning_verdicts() {
    const K: usize = 2;
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .half_open_probes(K as u32)
        .successes_to_close(1_000_000)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&cb);
    clock.advance(secs(10));
    let in_flight = AtomicUsize::new(0);
    let max_seen = AtomicUsize::new(0);
    let admitted = AtomicUsize::new(0);
    let start = Barrier::new(8);
    thread::scope(|s| {
        for t in 0..8usize {
            let (cb, in_flight, max_seen, admitted, start) =
                (&cb, &in_flight, &max_seen, &admitted, &start);
            s.spawn(move || {
                start.wait();
                for i in 0..2000usize {
                    if let Ok(p) = cb.try_acquire() {
                        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        max_seen.fetch_max(now, Ordering::SeqCst);
                        admitted.fetch_add(1, Ordering::SeqCst);
                        thread::yield_now();
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                        match (i + t) % 3 {
                            0 => p.success(),
                            1 => p.ignore(),
                            _ => drop(p),
                        }
                    }
                }
            });
        }
    });
    assert!(
        max_seen.load(Ordering::SeqCst) <= K,
        "more than {K} probes at once"
    );
    assert!(admitted.load(Ordering::SeqCst) > 0);
    assert_eq!(cb.state(), State::HalfOpen);
    // No slot was lost: K probes can still be admitted.
    let ps: Vec<_> = (0..K)
        .map(|_| cb.try_acquire().expect("slot leaked"))
        .collect();
    assert!(cb.try_acquire().is_err());
    drop(ps);
}

#[test]
fn concurrent_probe_successes_close_exactly_once() {
    let clock = ManualClock::new();
    let transitions = Arc::new(Mutex::new(Vec::new()));
    let log = transitions.clone();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .half_open_probes(8)
        .successes_to_close(3)
        .open_for(secs(10))
        .clock(clock.clone())
        .on_transition(move |t| log.lock().unwrap().push((t.from, t.to)))
        .build()
        .unwrap();
    trip(&cb);
    clock.advance(secs(10));
    let probes: Vec<_> = (0..8).map(|_| cb.try_acquire().unwrap()).collect();
    let start = Barrier::new(8);
    thread::scope(|s| {
        for p in probes {
            let start = &start;
            s.spawn(move || {
                start.wait();
                p.success();
            });
        }
    });
    assert_eq!(cb.state(), State::Closed);
    let t = transitions.lock().unwrap().clone();
    let closes = t
        .iter()
        .filter(|(f, to)| *f == State::HalfOpen && *to == State::Closed)
        .count();
    assert_eq!(closes, 1, "transitions: {t:?}");
    // Counters start empty after the close: late probes were stale or counted before.
    assert_eq!(cb.snapshot().calls, 0);
}

#[test]
fn concurrent_failures_trip_exactly_once() {
    let clock = ManualClock::new();
    let transitions = Arc::new(Mutex::new(Vec::new()));
    let log = transitions.clone();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(5)
        .open_for(secs(10))
        .clock(clock.clone())
        .on_transition(move |t| log.lock().unwrap().push((t.from, t.to)))
        .build()
        .unwrap();
    let permits: Vec<_> = (0..32).map(|_| cb.try_acquire().unwrap()).collect();
    let start = Barrier::new(32);
    thread::scope(|s| {
        for p in permits {
            let start = &start;
            s.spawn(move || {
                start.wait();
                p.failure();
            });
        }
    });
    assert_eq!(cb.state(), State::Open);
    let t = transitions.lock().unwrap().clone();
    assert_eq!(t, vec![(State::Closed, State::Open)]);
}

// ---------------------------------------------------------------------------
// Backoff

#[test]
fn open_backoff_grows_caps_and_resets_after_close() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_backoff(secs(10), 2.0, secs(30))
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut now = Duration::ZERO;
    trip(&cb);
    for expected in [10u64, 20, 30, 30] {
        clock.set(now + secs(expected) - ms(1));
        assert_eq!(cb.state(), State::Open, "open period {expected}s not over");
        clock.set(now + secs(expected));
        assert_eq!(cb.state(), State::HalfOpen, "open period {expected}s over");
        let _ = fail(&cb); // failed probe: trip without close
        now += secs(expected);
    }
    clock.set(now + secs(30));
    succeed(&cb).unwrap();
    assert_eq!(cb.state(), State::Closed);
    now += secs(30);
    trip(&cb);
    clock.set(now + secs(10));
    assert_eq!(cb.state(), State::HalfOpen, "backoff reset after closing");
}

// ---------------------------------------------------------------------------
// call_with / Outcome

#[derive(Debug, PartialEq)]
enum Api {
    NotFound,
    Down,
}

#[test]
fn call_with_classifies_and_ignores() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 2, secs(10));
    let classify = |r: &Result<i32, Api>| match r {
        Ok(v) if *v < 0 => Outcome::Failure,
        Ok(_) => Outcome::Success,
        Err(Api::NotFound) => Outcome::Ignore,
        Err(Api::Down) => Outcome::Failure,
    };
    // A 404 is the caller's business: ignored, counts for nothing.
    for _ in 0..5 {
        let r = cb.call_with(classify, || Err::<i32, _>(Api::NotFound));
        assert!(matches!(r, Err(Error::Inner(Api::NotFound))));
    }
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.snapshot().calls, 0, "ignored calls count for nothing");
    // An Ok classified as failure still gives the caller its value.
    let r = cb.call_with(classify, || Ok::<i32, Api>(-1));
    assert_eq!(r.unwrap(), -1);
    assert_eq!(cb.state(), State::Closed);
    let r = cb.call_with(classify, || Err::<i32, _>(Api::Down));
    assert!(matches!(r, Err(Error::Inner(Api::Down))));
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn ignore_neither_resets_nor_counts_consecutive() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 2, secs(10));
    let _ = fail(&cb);
    cb.try_acquire().unwrap().ignore();
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb);
    assert_eq!(
        cb.state(),
        State::Open,
        "F, ignore, F is two failures in a row"
    );
}

#[test]
fn ignored_probe_in_half_open_does_not_close() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10));
    let r = cb.call_with(|_: &Result<(), ()>| Outcome::Ignore, || Ok(()));
    assert!(r.is_ok());
    assert_eq!(cb.state(), State::HalfOpen);
}

// ---------------------------------------------------------------------------
// Panics

#[test]
fn panic_counts_as_failure_and_resumes_unwinding() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = cb.call(|| -> Result<(), ()> { panic!("kaboom") });
    }));
    let payload = r.expect_err("the panic resumes");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"kaboom"));
    assert_eq!(cb.state(), State::Open, "a panic counts as a failure");
    clock.advance(secs(10));
    assert_eq!(succeed(&cb).unwrap(), 7, "breaker still usable");
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn panicking_probe_reopens() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10));
    let r = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = cb.call(|| -> Result<(), ()> { panic!("probe died") });
    }));
    assert!(r.is_err());
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn permit_dropped_by_panicking_thread_is_released() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    // Closed: a permit lost to a panic changes no counter.
    let cb2 = cb.clone();
    let h = thread::spawn(move || {
        let _p = cb2.try_acquire().unwrap();
        panic!("worker died holding a permit");
    });
    assert!(h.join().is_err());
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.snapshot().calls, 0);
    // Half-open: the slot comes back.
    trip(&cb);
    clock.advance(secs(10));
    let cb2 = cb.clone();
    let h = thread::spawn(move || {
        let _p = cb2.try_acquire().unwrap();
        panic!("probe holder died");
    });
    assert!(h.join().is_err());
    assert_eq!(cb.state(), State::HalfOpen);
    cb.try_acquire().expect("slot freed").success();
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn panicking_listener_does_not_break_breaker() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(secs(10))
        .clock(clock.clone())
        .on_transition(|t| {
            if t.to == State::Open {
                panic!("listener bug");
            }
        })
        .build()
        .unwrap();
    let _ = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = fail(&cb);
    }));
    // Whatever the listener did, the breaker must not be poisoned or wedged.
    assert_eq!(cb.state(), State::Open);
    clock.advance(secs(10));
    assert_eq!(succeed(&cb).unwrap(), 7);
    assert_eq!(cb.state(), State::Closed);
}

// ---------------------------------------------------------------------------
// Async: cancelled probes

#[tokio::test(start_paused = true)]
async fn cancelled_async_probe_frees_its_slot() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10));
    let fut = cb.call_async(|| async {
        tokio::time::sleep(secs(3600)).await;
        Ok::<_, &str>(1)
    });
    let r = tokio::time::timeout(ms(10), fut).await;
    assert!(r.is_err(), "timed out and dropped mid-call");
    assert_eq!(cb.state(), State::HalfOpen, "cancellation is not a failure");
    let v = cb.call_async(|| async { Ok::<_, &str>(2) }).await;
    assert_eq!(v.unwrap(), 2);
    assert_eq!(cb.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn cancelled_async_call_in_closed_counts_nothing() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    for _ in 0..3 {
        let fut = cb.call_async(|| async {
            tokio::time::sleep(secs(60)).await;
            Err::<(), _>("never")
        });
        assert!(tokio::time::timeout(ms(1), fut).await.is_err());
    }
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.snapshot().calls, 0);
}

#[test]
fn unpolled_async_probe_dropped_frees_slot() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10));
    let fut = cb.call_async(|| async { Ok::<_, &str>(1) });
    drop(fut);
    assert_eq!(cb.state(), State::HalfOpen);
    cb.try_acquire()
        .expect("slot free after unpolled drop")
        .success();
    assert_eq!(cb.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn async_failure_and_rejection() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let r = cb.call_async(|| async { Err::<(), _>("down") }).await;
    assert!(matches!(r, Err(Error::Inner("down"))));
    let r = cb.call_async(|| async { Ok::<_, &str>(()) }).await;
    assert_eq!(rejected(r).state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn async_cancelled_probes_under_contention() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .half_open_probes(2)
        .successes_to_close(100)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&cb);
    clock.advance(secs(10));
    let entered = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let cb = cb.clone();
        let entered = entered.clone();
        tasks.push(tokio::spawn(async move {
            let fut = cb.call_async(|| async move {
                entered.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(secs(3600)).await;
                Ok::<_, &str>(())
            });
            tokio::time::timeout(secs(1), fut).await
        }));
    }
    let mut rejected_n = 0;
    for t in tasks {
        match t.await.unwrap() {
            Err(_elapsed) => {}
            Ok(Err(Error::Rejected(_))) => rejected_n += 1,
            Ok(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(entered.load(Ordering::SeqCst), 2, "cap 2 honoured");
    assert_eq!(rejected_n, 8);
    assert_eq!(cb.state(), State::HalfOpen);
    let a = cb.try_acquire().expect("cancelled probes released");
    let b = cb.try_acquire().expect("cancelled probes released");
    assert!(cb.try_acquire().is_err());
    a.ignore();
    b.ignore();
}

// ---------------------------------------------------------------------------
// Manual control

#[test]
fn force_open_stays_open_regardless_of_time() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    cb.force_open();
    assert_eq!(cb.state(), State::ForcedOpen);
    clock.advance(secs(3600));
    assert_eq!(cb.state(), State::ForcedOpen);
    let ran = Cell::new(false);
    let r = cb.call(|| {
        ran.set(true);
        Ok::<_, &str>(())
    });
    assert!(!ran.get());
    let rej = rejected(r);
    assert_eq!(rej.state(), State::ForcedOpen);
    assert_eq!(rej.retry_after(), None);
    cb.reset();
    assert_eq!(cb.state(), State::Closed);
    succeed(&cb).unwrap();
}

#[test]
fn stale_success_does_not_close_forced_open() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let p = cb.try_acquire().unwrap();
    cb.force_open();
    p.success();
    assert_eq!(cb.state(), State::ForcedOpen);
}

#[test]
fn disable_admits_everything_and_never_trips() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    cb.disable();
    assert_eq!(cb.state(), State::Disabled);
    for _ in 0..100 {
        assert!(matches!(fail(&cb), Err(Error::Inner("boom"))));
    }
    clock.advance(secs(100));
    assert_eq!(cb.state(), State::Disabled);
    cb.reset();
    assert_eq!(cb.state(), State::Closed);
    let _ = fail(&cb);
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn force_open_from_half_open_and_disabled() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    clock.advance(secs(10));
    let probe = cb.try_acquire().unwrap();
    cb.force_open();
    probe.success(); // stale
    assert_eq!(cb.state(), State::ForcedOpen);
    cb.disable();
    assert_eq!(cb.state(), State::Disabled);
    cb.force_open();
    assert_eq!(cb.state(), State::ForcedOpen);
}

// ---------------------------------------------------------------------------
// Snapshot

#[test]
fn snapshot_reports_window_rates_rejections_and_age() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .slow_calls(secs(1), 0.9)
        .count_window(4)
        .min_calls(4)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    succeed(&cb).unwrap();
    cb.call(|| {
        clock.advance(secs(2));
        Ok::<_, &str>(())
    })
    .unwrap();
    let _ = fail(&cb);
    let s = cb.snapshot();
    assert_eq!(s.state, State::Closed);
    assert_eq!(s.calls, 3);
    assert_eq!(s.failures, 1);
    assert_eq!(s.slow_calls, 1);
    assert!((s.failure_rate - 1.0 / 3.0).abs() < 1e-9);
    assert!((s.slow_call_rate - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(s.since_transition, secs(2));
    let _ = fail(&cb); // 2/4 -> open
    assert_eq!(cb.state(), State::Open);
    for _ in 0..5 {
        let _ = succeed(&cb);
    }
    clock.advance(secs(3));
    let s = cb.snapshot();
    assert_eq!(s.state, State::Open);
    assert_eq!(s.rejected, 5);
    assert_eq!(s.since_transition, secs(3));
}

// ---------------------------------------------------------------------------
// Config errors: name the field and the bad value, never panic

fn config_err(r: Result<CircuitBreaker, ConfigError>) -> String {
    match r {
        Ok(_) => panic!("expected a ConfigError"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn config_errors_name_field_and_value() {
    let b = CircuitBreaker::builder;
    let cases: Vec<(Result<CircuitBreaker, ConfigError>, &str, &str)> = vec![
        (
            b().consecutive_failures(0).build(),
            "consecutive_failures",
            "0",
        ),
        (b().failure_rate(0.0).build(), "failure_rate", "0"),
        (b().failure_rate(1.5).build(), "failure_rate", "1.5"),
        (b().failure_rate(-0.1).build(), "failure_rate", "-0.1"),
        (b().failure_rate(f64::NAN).build(), "failure_rate", "NaN"),
        (
            b().failure_rate(0.5).count_window(0).build(),
            "count_window",
            "0",
        ),
        (
            b().failure_rate(0.5).time_window(Duration::ZERO).build(),
            "time_window",
            "0",
        ),
        (b().slow_calls(secs(1), 0.0).build(), "slow_call_rate", "0"),
        (b().slow_calls(secs(1), 2.0).build(), "slow_call_rate", "2"),
        (b().half_open_probes(0).build(), "half_open_probes", "0"),
        (b().successes_to_close(0).build(), "successes_to_close", "0"),
        (b().open_for(Duration::ZERO).build(), "open_for", "0"),
        (
            b().failure_rate(0.5).count_window(5).min_calls(10).build(),
            "min_calls",
            "10",
        ),
    ];
    for (r, field, value) in cases {
        let msg = config_err(r);
        assert!(msg.contains(field), "{msg:?} should name {field}");
        assert!(msg.contains(value), "{msg:?} should show {value}");
    }
}

#[test]
fn config_odd_values_never_panic() {
    let b = CircuitBreaker::builder;
    // Each of these must give Ok or Err, never a panic.
    let attempts: Vec<Box<dyn Fn() -> Result<CircuitBreaker, ConfigError>>> = vec![
        Box::new(move || b().open_backoff(secs(10), 0.5, secs(30)).build()),
        Box::new(move || b().open_backoff(secs(10), f64::NAN, secs(30)).build()),
        Box::new(move || b().open_backoff(secs(10), f64::INFINITY, secs(30)).build()),
        Box::new(move || b().open_backoff(secs(30), 2.0, secs(10)).build()),
        Box::new(move || b().open_backoff(Duration::ZERO, 2.0, secs(10)).build()),
        Box::new(move || b().open_for(Duration::MAX).build()),
        Box::new(move || b().slow_calls(Duration::ZERO, 0.5).build()),
        Box::new(move || b().slow_calls(Duration::MAX, 0.5).build()),
        Box::new(move || b().failure_rate(0.5).time_window(Duration::MAX).build()),
        Box::new(move || {
            b().failure_rate(0.5)
                .time_window(Duration::from_nanos(1))
                .build()
        }),
        Box::new(move || b().failure_rate(0.5).count_window(u32::MAX as _).build()),
        Box::new(move || b().consecutive_failures(u32::MAX as _).build()),
        Box::new(move || b().half_open_probes(u32::MAX as _).build()),
    ];
    for (i, f) in attempts.into_iter().enumerate() {
        let r = panic::catch_unwind(AssertUnwindSafe(f));
        assert!(r.is_ok(), "case {i} panicked");
    }
}

#[test]
fn huge_open_period_does_not_overflow() {
    let clock = ManualClock::new();
    clock.set(secs(1_000_000));
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(Duration::MAX)
        .clock(clock.clone())
        .build();
    if let Ok(cb) = cb {
        let _ = fail(&cb);
        assert_eq!(cb.state(), State::Open);
        let rej = cb.try_acquire().expect_err("open");
        assert!(rej.retry_after().is_some());
        clock.advance(secs(1_000_000_000));
        assert_eq!(cb.state(), State::Open);
    }
}

#[test]
fn clock_set_backwards_does_not_panic() {
    let clock = ManualClock::new();
    clock.set(secs(100));
    let cb = consecutive(&clock, 1, secs(10));
    let p = cb.try_acquire().unwrap();
    clock.set(secs(50)); // a user moving the manual clock back
    p.success();
    trip(&cb);
    clock.set(secs(0));
    assert_eq!(cb.state(), State::Open);
    let rej = cb.try_acquire().expect_err("still open");
    assert!(rej.retry_after().is_some());
    let _ = cb.snapshot();
}

// ---------------------------------------------------------------------------
// Hot path: no allocation on the closed-state path without a listener

mod alloc_count {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Counting;

    thread_local! {
        pub static ALLOCS: Cell<usize> = const { Cell::new(0) };
    }

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: forwarded unchanged to the system allocator.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded unchanged to the system allocator.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
            let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: forwarded unchanged to the system allocator.
            unsafe { System.realloc(ptr, layout, new) }
        }
    }

    pub fn count() -> usize {
        ALLOCS.with(|c| c.get())
    }
}

#[global_allocator]
static GLOBAL: alloc_count::Counting = alloc_count::Counting;

#[test]
fn closed_path_does_not_allocate() {
    let clock = ManualClock::new();
    let breakers = [
        consecutive(&clock, 5, secs(10)),
        CircuitBreaker::builder()
            .failure_rate(0.9)
            .count_window(100)
            .min_calls(100)
            .clock(clock.clone())
            .build()
            .unwrap(),
        CircuitBreaker::builder()
            .failure_rate(0.9)
            .slow_calls(secs(1), 0.9)
            .time_window(secs(10))
            .min_calls(100)
            .clock(clock.clone())
            .build()
            .unwrap(),
    ];
    for cb in &breakers {
        // warm up
        succeed(cb).unwrap();
        let before = alloc_count::count();
        for i in 0..1000u64 {
            succeed(cb).unwrap();
            if i % 10 == 0 {
                let _ = fail(cb);
                clock.advance(ms(37));
            }
            let p = cb.try_acquire().unwrap();
            p.success();
        }
        let after = alloc_count::count();
        assert_eq!(after - before, 0, "allocations on the closed path");
        assert_eq!(cb.state(), State::Closed);
    }
}

// ---------------------------------------------------------------------------
// Found by reading the implementation (some ignored: see the reasons).

/// An exhaustive `match` on the two variants the issue names compiles in
/// user code: `Error` is not `#[non_exhaustive]`, so no wildcard arm is
/// needed (adding a variant would break this test, as it would users).
fn classify_error<E>(e: &Error<E>) -> &'static str {
    match e {
        Error::Rejected(_) => "rejected",
        Error::Inner(_) => "inner",
    }
}

#[test]
fn error_variants_are_the_two_the_issue_names() {
    assert_eq!(classify_error::<()>(&Error::Inner(())), "inner");
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(1));
    trip(&cb);
    assert_eq!(classify_error(&succeed(&cb).unwrap_err()), "rejected");
}

#[test]
fn reset_under_load_keeps_count_window_exact() {
    use std::sync::atomic::AtomicBool;
    const N: usize = 4000;
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(1.0)
        .count_window(N)
        .min_calls(N as u32)
        .clock(clock.clone())
        .build()
        .unwrap();
    // Each trial: one reset while other threads call, then a quiet check.
    // (A later reset would hide the drift, so check after every one.)
    for trial in 0..50 {
        let stop = AtomicBool::new(false);
        let running = Barrier::new(4);
        thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    running.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let _ = succeed(&cb);
                    }
                });
            }
            running.wait();
            thread::yield_now();
            cb.reset();
            stop.store(true, Ordering::Relaxed);
        });
        // Quiet now. N successes overwrite every slot of the ring exactly once.
        for _ in 0..N {
            succeed(&cb).unwrap();
        }
        let s = cb.snapshot();
        assert_eq!(
            s.calls, N as u64,
            "trial {trial}: window totals drifted: {s:?}"
        );
    }
}

#[test]
fn reset_under_load_keeps_time_window_exact() {
    use std::sync::atomic::AtomicBool;
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(1.0)
        .time_window(secs(100))
        .buckets(20_000)
        .min_calls(1_000_000)
        .clock(clock.clone())
        .build()
        .unwrap();
    for trial in 0..50 {
        let stop = AtomicBool::new(false);
        let running = Barrier::new(4);
        thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    running.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let _ = succeed(&cb);
                    }
                });
            }
            running.wait();
            thread::yield_now();
            cb.reset();
            stop.store(true, Ordering::Relaxed);
        });
        // Everything recorded so far leaves the window.
        clock.advance(secs(1000));
        assert_eq!(cb.snapshot().calls, 0);
        for _ in 0..5 {
            succeed(&cb).unwrap();
        }
        let s = cb.snapshot();
        assert_eq!(s.calls, 5, "trial {trial}: window totals drifted: {s:?}");
        clock.advance(secs(1000));
    }
}

#[test]
fn async_call_dropped_during_unrelated_panic_is_released() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let mut fut = Box::pin(cb.call_async(std::future::pending::<Result<(), &str>>));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Pending)); // admitted, in flight
    let r = panic::catch_unwind(AssertUnwindSafe(move || {
        let _owned_by_a_dying_task = fut;
        panic!("unrelated bug elsewhere in the task");
    }));
    assert!(r.is_err());
    // "dropping the future mid-call releases the permit"
    assert_eq!(
        cb.state(),
        State::Closed,
        "a cancelled call is not a failure"
    );
    assert_eq!(cb.snapshot().calls, 0);
}

#[test]
fn permit_dropped_during_unrelated_panic_is_released() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    let p = cb.try_acquire().unwrap();
    let r = panic::catch_unwind(AssertUnwindSafe(move || {
        let _p = p;
        panic!("unrelated");
    }));
    assert!(r.is_err());
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn slow_probe_success_is_judged_by_the_slow_rate() {
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .slow_calls(secs(1), 0.5)
        .successes_to_close(4)
        .open_for(secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    trip(&cb);
    clock.advance(secs(10));
    let v = cb.call(|| {
        clock.advance(secs(2));
        Ok::<_, &str>("slow")
    });
    assert_eq!(v.unwrap(), "slow");
    for _ in 0..3 {
        succeed(&cb).unwrap();
    }
    // 1 slow of 4 probes = 25 % < 50 %: Resilience4j would close here.
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn reset_clears_rejected_count() {
    let clock = ManualClock::new();
    let cb = consecutive(&clock, 1, secs(10));
    trip(&cb);
    let _ = succeed(&cb);
    let _ = succeed(&cb);
    assert_eq!(cb.snapshot().rejected, 2);
    cb.reset();
    assert_eq!(cb.snapshot().rejected, 0);
}

#[test]
fn cooldown_transition_happens_once_under_contention() {
    let clock = ManualClock::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .half_open_probes(4)
        .open_for(secs(10))
        .clock(clock.clone())
        .on_transition(move |t| l.lock().unwrap().push((t.from, t.to, t.at)))
        .build()
        .unwrap();
    trip(&cb);
    clock.advance(secs(10));
    let admitted = AtomicUsize::new(0);
    let start = Barrier::new(12);
    let done = Barrier::new(12);
    thread::scope(|s| {
        for i in 0..12 {
            let (cb, admitted, start, done) = (&cb, &admitted, &start, &done);
            s.spawn(move || {
                start.wait();
                let p = if i % 2 == 0 {
                    let _ = cb.state();
                    cb.try_acquire()
                } else {
                    cb.try_acquire()
                };
                if p.is_ok() {
                    admitted.fetch_add(1, Ordering::SeqCst);
                }
                done.wait();
                drop(p);
            });
        }
    });
    assert_eq!(admitted.load(Ordering::SeqCst), 4);
    let log = log.lock().unwrap().clone();
    assert_eq!(
        log,
        vec![
            (State::Closed, State::Open, secs(0)),
            (State::Open, State::HalfOpen, secs(10)),
        ]
    );
}

/// A clock that counts its readings.
#[derive(Clone)]
struct CountingClock {
    inner: ManualClock,
    reads: Arc<AtomicUsize>,
}

impl fusebox::Clock for CountingClock {
    fn now(&self) -> Duration {
        self.reads.fetch_add(1, Ordering::Relaxed);
        fusebox::Clock::now(&self.inner)
    }
}

fn counting_clock() -> (CountingClock, Arc<AtomicUsize>) {
    let reads = Arc::new(AtomicUsize::new(0));
    let c = CountingClock {
        inner: ManualClock::new(),
        reads: reads.clone(),
    };
    (c, reads)
}

#[test]
fn closed_success_path_reads_no_clock_with_consecutive_policy() {
    let (clock, reads) = counting_clock();
    let cb = CircuitBreaker::builder()
        .consecutive_failures(5)
        .clock(clock)
        .build()
        .unwrap();
    let before = reads.load(Ordering::Relaxed);
    for _ in 0..1000 {
        succeed(&cb).unwrap();
    }
    assert_eq!(reads.load(Ordering::Relaxed) - before, 0);
}

#[test]
fn closed_success_path_reads_no_clock_with_count_window() {
    let (clock, reads) = counting_clock();
    let cb = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(100)
        .clock(clock)
        .build()
        .unwrap();
    let before = reads.load(Ordering::Relaxed);
    for _ in 0..1000 {
        succeed(&cb).unwrap();
    }
    assert_eq!(reads.load(Ordering::Relaxed) - before, 0);
}

#[test]
fn stale_verdicts_racing_reset_change_nothing() {
    const PER_THREAD: usize = 20_000;
    let clock = ManualClock::new();
    let cb = CircuitBreaker::builder()
        .failure_rate(1.0)
        .count_window(200_000)
        .min_calls(200_000)
        .clock(clock.clone())
        .build()
        .unwrap();
    for trial in 0..10 {
        // Every permit here belongs to the generation before the reset.
        let batches: Vec<Vec<_>> = (0..3)
            .map(|_| (0..PER_THREAD).map(|_| cb.try_acquire().unwrap()).collect())
            .collect();
        let running = Barrier::new(4);
        thread::scope(|s| {
            for batch in batches {
                let running = &running;
                s.spawn(move || {
                    running.wait();
                    for p in batch {
                        p.failure();
                    }
                });
            }
            running.wait();
            thread::yield_now();
            cb.reset();
        });
        // Verdicts before the reset were cleared by it; verdicts after it are stale.
        let s = cb.snapshot();
        assert_eq!(
            (s.calls, s.failures),
            (0, 0),
            "trial {trial}: stale verdicts leaked into the new generation: {s:?}"
        );
        cb.reset();
    }
}

#[test]
fn listeners_may_call_back_into_the_breaker() {
    use std::sync::OnceLock;
    let clock = ManualClock::new();
    let slot: Arc<OnceLock<CircuitBreaker>> = Arc::new(OnceLock::new());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (slot2, seen2) = (slot.clone(), seen.clone());
    let cb = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(secs(10))
        .clock(clock.clone())
        .on_transition(move |t| {
            // Would deadlock if called under an internal lock.
            let cb = slot2.get().expect("set before use");
            let s = cb.snapshot();
            seen2.lock().unwrap().push((t.to, s.state));
        })
        .build()
        .unwrap();
    slot.set(cb.clone()).unwrap();
    trip(&cb);
    clock.advance(secs(10));
    succeed(&cb).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (State::Open, State::Open),
            (State::HalfOpen, State::HalfOpen),
            (State::Closed, State::Closed),
        ]
    );
}

#[test]
fn listener_sees_transitions_as_a_chain() {
    for _trial in 0..20 {
        let clock = ManualClock::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        let cb = CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_nanos(1))
            .clock(clock.clone())
            .on_transition(move |t| {
                // A listener doing a little work (a log line, a metric) first.
                thread::yield_now();
                l.lock().unwrap().push((t.generation, t.from, t.to))
            })
            .build()
            .unwrap();
        let start = Barrier::new(4);
        thread::scope(|s| {
            for t in 0..4usize {
                let (cb, clock, start) = (&cb, &clock, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..3000usize {
                        if let Ok(p) = cb.try_acquire() {
                            if (i + t) % 2 == 0 {
                                p.success();
                            } else {
                                p.failure();
                            }
                        }
                        clock.advance(Duration::from_nanos(1));
                    }
                });
            }
        });
        // Listeners run outside the lock, so arrival order may differ; the
        // generation orders them, and in that order they must chain.
        let mut log = log.lock().unwrap().clone();
        assert!(log.len() > 10, "the breaker moved: {}", log.len());
        log.sort_by_key(|t| t.0);
        for (i, pair) in log.windows(2).enumerate() {
            assert_eq!(pair[0].0 + 1, pair[1].0, "generations {pair:?} skip");
            assert_eq!(
                pair[0].2, pair[1].1,
                "transition {i}: {pair:?} does not chain"
            );
        }
    }
}

/// A clock that calls the breaker it times (once per reading, not from the
/// nested call's own readings): a verdict recorded while the breaker's
/// settings are held re-enters the breaker from inside.
#[derive(Clone)]
struct ReentrantClock {
    inner: ManualClock,
    breaker: Arc<std::sync::OnceLock<CircuitBreaker>>,
    nested: Arc<AtomicUsize>,
}

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

impl fusebox::Clock for ReentrantClock {
    fn now(&self) -> Duration {
        if let Some(cb) = self.breaker.get() {
            if !INSIDE.with(|i| i.replace(true)) {
                // A failure, so that it is recorded (not settled as a no-op).
                assert!(matches!(fail(cb), Err(Error::Inner("boom"))));
                self.nested.fetch_add(1, Ordering::Relaxed);
                INSIDE.with(|i| i.set(false));
            }
        }
        fusebox::Clock::now(&self.inner)
    }
}

#[test]
fn a_clock_that_calls_its_own_breaker_is_counted_exactly() {
    let clock = ReentrantClock {
        inner: ManualClock::new(),
        breaker: Arc::new(std::sync::OnceLock::new()),
        nested: Arc::new(AtomicUsize::new(0)),
    };
    let cb = CircuitBreaker::builder()
        .failure_rate(1.0)
        .min_calls(1_000_000)
        .time_window(Duration::from_secs(60))
        .clock(clock.clone())
        .build()
        .unwrap();
    assert!(clock.breaker.set(cb.clone()).is_ok());
    for _ in 0..100 {
        succeed(&cb).unwrap();
    }
    // The snapshot's own clock reading calls nothing.
    INSIDE.with(|i| i.set(true));
    let s = cb.snapshot();
    let nested = clock.nested.load(Ordering::Relaxed) as u64;
    // Each of the 100 records reads the clock (a time window): at least one
    // nested failure each, every one of them counted.
    assert!(nested >= 100, "nested calls: {nested}");
    assert_eq!(s.calls, 100 + nested);
    assert_eq!(s.failures, nested);
    assert_eq!(s.state, State::Closed);
}

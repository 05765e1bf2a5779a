//! A breaker is one object however many handles exist: its settings change in
//! place (`reconfigure`), and every handle follows. Each rule on `ManualClock`.

use fusebox::{BreakerConfig, CircuitBreaker, ManualClock, Reason, State};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn fail(b: &CircuitBreaker) {
    b.try_acquire().expect("admitted").failure();
}

fn succeed(b: &CircuitBreaker) {
    b.try_acquire().expect("admitted").success();
}

/// A rate breaker over the last 10 calls, judged once all 10 are in.
fn ten_call_window(rate: f64) -> fusebox::Builder {
    CircuitBreaker::builder()
        .failure_rate(rate)
        .count_window(10)
        .min_calls(10)
}

#[test]
fn a_closed_breaker_keeps_its_window_when_the_shape_is_unchanged() {
    let b = ten_call_window(0.5)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for _ in 0..4 {
        fail(&b);
        succeed(&b);
    }
    let held = b.clone();
    b.reconfigure(ten_call_window(0.4)).unwrap();
    let s = held.snapshot();
    assert_eq!((s.calls, s.failures), (8, 4), "counts kept");
    succeed(&held);
    assert_eq!(held.state(), State::Closed);
    succeed(&held); // 4 of 10 failed: the new 40 % threshold trips, the old 50 % would not
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_new_window_shape_starts_empty() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(10)
        .min_calls(4)
        .clock(clock.clone())
        .build()
        .unwrap();
    for _ in 0..3 {
        fail(&b);
    }
    b.reconfigure(
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .time_window(Duration::from_secs(10))
            .min_calls(4),
    )
    .unwrap();
    assert_eq!(b.snapshot().calls, 0);
    fail(&b); // would have tripped the old window (4 of 4)
    assert_eq!(b.state(), State::Closed);
    for _ in 0..3 {
        fail(&b);
    }
    assert_eq!(b.state(), State::Open);
    assert_eq!(
        b.config().time_window,
        Some(Duration::from_secs(10)),
        "config() reports the settings in force"
    );
}

#[test]
fn an_open_breaker_finishes_its_period_then_follows_the_new_settings() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(1)
        .open_for(Duration::from_secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    fail(&b);
    clock.advance(Duration::from_secs(2));
    b.reconfigure(
        CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(Duration::from_secs(1))
            .half_open_probes(2),
    )
    .unwrap();
    clock.advance(Duration::from_secs(3));
    let r = b.try_acquire().unwrap_err();
    assert_eq!(r.state(), State::Open);
    assert_eq!(r.retry_after(), Some(Duration::from_secs(5)));
    clock.advance(Duration::from_secs(5));
    let p1 = b.try_acquire().expect("first probe");
    let p2 = b.try_acquire().expect("the new limit of 2 probes");
    assert!(b.try_acquire().is_err());
    drop(p2);
    p1.failure();
    // The next open period is the new one.
    assert_eq!(
        b.try_acquire().unwrap_err().retry_after(),
        Some(Duration::from_secs(1))
    );
}

#[test]
fn forced_open_and_disabled_stay_so() {
    let b = CircuitBreaker::builder().build().unwrap();
    b.force_open();
    b.reconfigure(CircuitBreaker::builder().consecutive_failures(1))
        .unwrap();
    assert_eq!(b.state(), State::ForcedOpen);
    b.disable();
    b.reconfigure(CircuitBreaker::builder().consecutive_failures(2))
        .unwrap();
    assert_eq!(b.state(), State::Disabled);
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), State::Disabled);
    b.reset();
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), State::Open, "the new threshold after the reset");
}

#[test]
fn a_bad_config_is_refused_and_changes_nothing() {
    let b = CircuitBreaker::builder()
        .consecutive_failures(3)
        .build()
        .unwrap();
    let before = b.config();
    let err = b
        .reconfigure(CircuitBreaker::builder().failure_rate(2.0))
        .unwrap_err();
    assert_eq!(err.field(), "failure_rate");
    assert_eq!(b.config(), before);
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn config_round_trips_through_a_builder() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.25)
        .time_window(Duration::from_secs(30))
        .buckets(6)
        .slow_calls(ms(800), 0.9)
        .open_backoff(Duration::from_secs(1), 2.0, Duration::from_secs(60))
        .half_open_probes(3)
        .successes_to_close(2)
        .build()
        .unwrap();
    let config = b.config();
    assert_eq!(config.min_calls, Some(10), "defaults written out");
    let again = config.builder().build().unwrap();
    assert_eq!(again.config(), config);
    // A config with no rule set at all gets the default consecutive policy.
    let plain = BreakerConfig::default().builder().build().unwrap();
    assert_eq!(plain.config().consecutive_failures, Some(5));
}

#[test]
fn reconfigure_takes_a_breaker_config_too() {
    let b = CircuitBreaker::builder().build().unwrap();
    b.reconfigure(BreakerConfig {
        consecutive_failures: Some(1),
        ..Default::default()
    })
    .unwrap();
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn counts_that_already_reach_a_tightened_threshold_trip_at_once() {
    let b = ten_call_window(0.5).build().unwrap();
    for i in 0..10 {
        let p = b.try_acquire().unwrap();
        if i % 3 == 0 {
            p.failure() // 4 of 10
        } else {
            p.success()
        }
    }
    assert_eq!(b.state(), State::Closed);
    b.reconfigure(ten_call_window(0.4)).unwrap();
    assert_eq!(
        b.state(),
        State::Open,
        "4 of 10 reach 40 %: no verdict needed"
    );
    let b = CircuitBreaker::builder()
        .consecutive_failures(5)
        .build()
        .unwrap();
    fail(&b);
    fail(&b);
    b.reconfigure(CircuitBreaker::builder().consecutive_failures(2))
        .unwrap();
    assert_eq!(b.state(), State::Open, "2 in a row reach the new 2");
}

#[test]
fn lowering_the_consecutive_threshold_counts_failures_already_seen() {
    let b = CircuitBreaker::builder()
        .consecutive_failures(5)
        .build()
        .unwrap();
    fail(&b);
    fail(&b);
    b.reconfigure(CircuitBreaker::builder().consecutive_failures(3))
        .unwrap();
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_verdict_is_judged_by_the_settings_in_force() {
    // A verdict is judged by the settings in force when it is given, even
    // for a permit taken before the change.
    let b = CircuitBreaker::builder()
        .consecutive_failures(2)
        .build()
        .unwrap();
    let p = b.try_acquire().unwrap();
    fail(&b);
    b.reconfigure(CircuitBreaker::builder().consecutive_failures(3))
        .unwrap();
    p.failure(); // count 2: the old threshold, not the new one
    assert_eq!(b.state(), State::Closed);
    fail(&b);
    assert_eq!(b.state(), State::Open);
}

/// A rate breaker with a slow-call rule, as in the defect report.
fn slow_rule(clock: &ManualClock) -> fusebox::Builder {
    CircuitBreaker::builder()
        .failure_rate(0.5)
        .slow_calls(ms(100), 0.5)
        .count_window(10)
        .min_calls(2)
        .open_for(Duration::from_secs(1))
        .clock(clock.clone())
}

/// Slow-probe bookkeeping belongs to one half-open period. Before the fix, a
/// slow probe was counted in every later period, so fast probes reopened the
/// breaker forever ("slow-call rate 200.0%").
#[test]
fn a_slow_probe_is_judged_in_its_own_half_open_period_only() {
    let clock = ManualClock::new();
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&reasons);
    let b = slow_rule(&clock)
        .on_transition(move |t| log.lock().unwrap().push((t.to, t.reason)))
        .build()
        .unwrap();
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), State::Open);
    for _ in 0..2 {
        clock.advance(Duration::from_secs(1));
        let p = b.try_acquire().expect("probe");
        clock.advance(ms(150));
        p.success(); // slow: reopens
        assert_eq!(b.state(), State::Open);
    }
    clock.advance(Duration::from_secs(1));
    succeed(&b); // fast
    assert_eq!(b.state(), State::Closed);
    let reasons = reasons.lock().unwrap();
    assert!(reasons
        .iter()
        .all(|(_, r)| !matches!(r, Reason::SlowCallRate { rate } if *rate > 1.0)));
}

#[test]
fn slow_then_failed_probe_does_not_poison_the_next_period() {
    let clock = ManualClock::new();
    let b = slow_rule(&clock).successes_to_close(2).build().unwrap();
    fail(&b);
    fail(&b);
    clock.advance(Duration::from_secs(1));
    let p = b.try_acquire().unwrap();
    clock.advance(ms(150));
    p.success(); // a slow success: 1 of 2 needed
    fail(&b); // a failed probe: reopens
    assert_eq!(b.state(), State::Open);
    clock.advance(Duration::from_secs(1));
    succeed(&b);
    succeed(&b);
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn dropping_the_slow_rule_lets_the_breaker_close() {
    let clock = ManualClock::new();
    let b = slow_rule(&clock).build().unwrap();
    fail(&b);
    fail(&b);
    b.reconfigure(
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(10)
            .min_calls(2)
            .open_for(Duration::from_secs(1)),
    )
    .unwrap();
    clock.advance(Duration::from_secs(1));
    let p = b.try_acquire().unwrap();
    clock.advance(ms(500));
    p.success(); // slow by the old rule, which is gone
    assert_eq!(b.state(), State::Closed);
}

/// Calls on two threads while a third keeps swapping between settings of
/// every shape: no panic, never more probes out than the largest limit,
/// window figures stay consistent, and the breaker ends usable.
#[test]
fn concurrent_reconfigures_and_calls_keep_the_invariants() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(3)
        .open_for(ms(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    let configs = [
        CircuitBreaker::builder()
            .consecutive_failures(3)
            .open_for(ms(1)),
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(8)
            .min_calls(4)
            .open_for(ms(2))
            .half_open_probes(2),
        CircuitBreaker::builder()
            .failure_rate(0.3)
            .time_window(ms(50))
            .buckets(5)
            .slow_calls(ms(1), 0.9)
            .open_for(ms(1))
            .half_open_probes(3),
    ]
    .map(|c| c.settings().clone());
    let stop = Arc::new(AtomicBool::new(false));
    let out = Arc::new(AtomicU32::new(0));
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let (b, stop, out, clock) = (b.clone(), stop.clone(), out.clone(), clock.clone());
            std::thread::spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    i = i
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    if i % 7 == 0 {
                        clock.advance(Duration::from_micros(300));
                    }
                    if let Ok(p) = b.try_acquire() {
                        let n = out.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(n <= 2 + 3, "{n} permits out from 2 threads");
                        out.fetch_sub(1, Ordering::SeqCst);
                        match (i >> 33) % 4 {
                            0 | 1 => p.success(),
                            2 => p.failure(),
                            _ => drop(p),
                        }
                    }
                    let s = b.snapshot();
                    assert!(s.failures <= s.calls && s.slow_calls <= s.calls);
                    assert!((0.0..=1.0).contains(&s.failure_rate));
                }
            })
        })
        .collect();
    for round in 0..3_000 {
        b.reconfigure(configs[round % 3].clone()).unwrap();
        assert!(b.probes_in_flight() <= 3);
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    b.reconfigure(configs[0].clone()).unwrap();
    b.reset();
    assert_eq!(b.probes_in_flight(), 0);
    succeed(&b);
    for _ in 0..3 {
        fail(&b);
    }
    assert_eq!(b.state(), State::Open);
}

#[test]
fn a_new_count_window_counts_successes_after_a_full_one() {
    let b = CircuitBreaker::builder()
        .failure_rate(0.5)
        .count_window(4)
        .min_calls(4)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    for _ in 0..6 {
        succeed(&b); // full of successes: later ones settle without a record
    }
    assert_eq!(b.snapshot().calls, 4);
    b.reconfigure(
        CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(3)
            .min_calls(3),
    )
    .unwrap();
    for n in 1..=3 {
        succeed(&b);
        assert_eq!(b.snapshot().calls, n, "the new window counts every success");
    }
    fail(&b);
    fail(&b); // F F of the last 3 (S F F): the new window trips
    assert_eq!(b.state(), State::Open);
}

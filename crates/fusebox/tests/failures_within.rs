//! The failures-within rule (`failures_within(count, within)`), on a
//! ManualClock: it trips on the `count`th failure inside `within`, not when
//! the failures are spread wider, and a verdict of an earlier generation
//! changes nothing.

use fusebox::{
    BreakerConfig, CircuitBreaker, Error, FailureBurst, ManualClock, Reason, State, Transition,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn fail(b: &CircuitBreaker) {
    let _ = b.call(|| Err::<(), _>("down"));
}

fn ok(b: &CircuitBreaker) {
    b.call(|| Ok::<_, &str>(())).unwrap();
}

/// A breaker tripping on `count` failures within `within`, its clock and
/// the transitions it made.
fn burst(
    count: u32,
    within: Duration,
) -> (CircuitBreaker, ManualClock, Arc<Mutex<Vec<Transition>>>) {
    let clock = ManualClock::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&log);
    let b = CircuitBreaker::builder()
        .failures_within(count, within)
        .open_for(secs(1))
        .clock(clock.clone())
        .on_transition(move |t| seen.lock().unwrap().push(*t))
        .build()
        .unwrap();
    (b, clock, log)
}

#[test]
fn trips_on_the_nth_failure_inside_the_period_whatever_succeeds_between() {
    let (b, clock, log) = burst(3, secs(10));
    for _ in 0..2 {
        fail(&b);
        for _ in 0..50 {
            ok(&b);
        }
        clock.advance(Duration::from_millis(4_999));
    }
    assert_eq!(b.state(), State::Closed);
    fail(&b); // the third, 9.998 s after the first
    assert_eq!(b.state(), State::Open);
    let t = log.lock().unwrap()[0];
    assert_eq!((t.from, t.to), (State::Closed, State::Open));
    assert_eq!(
        t.reason,
        Reason::FailuresWithin {
            count: 3,
            within: secs(10)
        }
    );
    assert_eq!(t.reason.as_str(), "failures_within");
    assert_eq!(t.reason.to_string(), "3 failures within 10s");
}

#[test]
fn failures_spread_wider_than_the_period_never_trip() {
    let (b, clock, _) = burst(3, secs(10));
    // One every 5 s: any three span 10 s, and a failure exactly `within`
    // old is out of the period.
    for _ in 0..20 {
        fail(&b);
        clock.advance(secs(5));
    }
    fail(&b); // exactly 10 s after the one before last: still out
    assert_eq!(b.state(), State::Closed);
    clock.advance(Duration::from_millis(4_999));
    fail(&b); // 9.999 s after the one before last
    assert_eq!(b.state(), State::Open);
}

#[test]
fn ignored_calls_count_for_nothing_and_one_failure_can_be_enough() {
    let (b, _, _) = burst(2, secs(1));
    for _ in 0..5 {
        let _ = b.call_with(|_| fusebox::Outcome::Ignore, || Err::<(), _>("404"));
    }
    fail(&b);
    assert_eq!(b.state(), State::Closed);
    let (one, _, _) = burst(1, secs(1));
    fail(&one);
    assert_eq!(one.state(), State::Open);
}

#[test]
fn a_verdict_of_an_older_generation_changes_nothing() {
    let (b, clock, log) = burst(2, secs(10));
    // A permit of the first closed period, answered after a trip and a
    // reset: its failure lands in another period and counts for nothing.
    let old = b.try_acquire().unwrap();
    b.force_open();
    b.reset();
    old.failure();
    fail(&b);
    assert_eq!(b.state(), State::Closed, "the stale failure did not count");
    fail(&b);
    assert_eq!(b.state(), State::Open);

    // A permit admitted before the trip, failing while open, neither
    // extends the open period nor counts for the next closed period.
    let log_len = log.lock().unwrap().len();
    clock.advance(secs(1));
    assert_eq!(b.state(), State::HalfOpen);
    let probe = b.try_acquire().unwrap();
    probe.success();
    assert_eq!(b.state(), State::Closed);
    let late = b.try_acquire().unwrap();
    fail(&b);
    fail(&b);
    assert_eq!(b.state(), State::Open);
    late.failure();
    clock.advance(secs(1));
    assert_eq!(
        b.state(),
        State::HalfOpen,
        "the late failure kept the open period"
    );
    b.try_acquire().unwrap().success();
    fail(&b);
    assert_eq!(
        b.state(),
        State::Closed,
        "the late failure is not in the new period"
    );
    assert!(log.lock().unwrap().len() > log_len);
}

#[test]
fn a_close_empties_the_failures_kept() {
    let (b, clock, _) = burst(3, secs(10));
    fail(&b);
    fail(&b);
    b.force_open();
    b.reset();
    clock.advance(secs(1));
    fail(&b);
    assert_eq!(
        b.state(),
        State::Closed,
        "the two before the reset are gone"
    );
}

#[test]
fn combines_with_other_rules_and_trips_on_whichever_comes_first() {
    let clock = ManualClock::new();
    let b = CircuitBreaker::builder()
        .consecutive_failures(3)
        .failures_within(3, secs(1))
        .clock(clock.clone())
        .build()
        .unwrap();
    fail(&b);
    ok(&b);
    fail(&b);
    ok(&b);
    fail(&b);
    assert_eq!(b.state(), State::Open, "three within 1 s, none in a row");
    assert_eq!(b.config().consecutive_failures, Some(3));
}

#[test]
fn a_reconfigure_keeps_the_failures_and_trips_if_they_now_reach_the_rule() {
    let (b, clock, log) = burst(2, secs(1));
    fail(&b);
    clock.advance(secs(5));
    fail(&b);
    assert_eq!(b.state(), State::Closed);
    // Same count: the failure times are kept, and two within 10 s trip now.
    b.reconfigure(b.config().builder().failures_within(2, secs(10)))
        .unwrap();
    assert_eq!(b.state(), State::Open);
    assert!(matches!(
        log.lock().unwrap().last().unwrap().reason,
        Reason::FailuresWithin { count: 2, .. }
    ));
}

#[test]
fn the_setting_is_checked_and_reported_with_every_default() {
    let err = |count, within| {
        CircuitBreaker::builder()
            .failures_within(count, within)
            .build()
            .unwrap_err()
    };
    assert_eq!(err(0, secs(1)).field(), "failures_within.count");
    assert_eq!(err(100_001, secs(1)).field(), "failures_within.count");
    assert_eq!(err(5, Duration::ZERO).field(), "failures_within.within");
    let burst = FailureBurst {
        count: 5,
        within: secs(10),
    };
    let config = BreakerConfig {
        failures_within: Some(burst),
        ..Default::default()
    }
    .resolved()
    .unwrap();
    assert_eq!(config.failures_within, Some(burst));
    assert_eq!(config.consecutive_failures, None, "no default rule added");
    assert_eq!(config.count_window, None);
    assert!(BreakerConfig::KEYS.contains(&"failures_within"));
    assert!(config.is_set("failures_within"));
    // The call goes through when closed, with its own error when it fails.
    let b = config.builder().build().unwrap();
    assert!(matches!(
        b.call(|| Err::<(), _>("x")),
        Err(Error::Inner("x"))
    ));
}

#[cfg(feature = "config")]
#[test]
fn a_config_file_sets_it_as_a_table() {
    use fusebox::registry::{Fusebox, FuseboxConfig};
    let config = FuseboxConfig::from_toml(
        r#"
[breakers.db]
failures_within = { count = 2, within = "1s" }
"#,
    )
    .unwrap();
    assert_eq!(
        config.breaker_config("db").settings.failures_within,
        Some(FailureBurst {
            count: 2,
            within: secs(1)
        })
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(ManualClock::new())
        .build()
        .unwrap();
    let db = fusebox.breaker("db");
    fail(&db);
    fail(&db);
    assert_eq!(db.state(), State::Open);
}

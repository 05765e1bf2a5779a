//! A fusebox strategy's `rate_limit`: `scenarios/rate-limit.toml` in virtual
//! time. The limiter runs on the run's `ManualClock`, so the figures are
//! exact and the same on every run.

use fusebox_lab::engine::{self, Mode, Outcome, RunResult};
use fusebox_lab::scenario::Scenario;
use std::path::Path;
use std::time::Duration;

fn scenario() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/rate-limit.toml");
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn run(sc: &Scenario, strategy: &str) -> RunResult {
    let spec = sc
        .strategies
        .iter()
        .find(|s| s.name == strategy)
        .unwrap_or_else(|| panic!("no strategy {strategy:?}"));
    engine::run(sc, spec, Mode::Virtual, None).unwrap()
}

/// The most downstream calls (retries included) that started within any
/// one second of the run.
fn busiest_second(r: &RunResult) -> usize {
    let starts: Vec<Duration> = r.calls.iter().map(|c| c.start).collect();
    starts
        .iter()
        .map(|&from| {
            starts
                .iter()
                .filter(|&&t| t >= from && t < from + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn fast_fails_before(r: &RunResult, until: Duration) -> (usize, usize) {
    let early: Vec<_> = r.requests.iter().filter(|q| q.arrival < until).collect();
    let ff = early
        .iter()
        .filter(|q| q.outcome == Outcome::FastFail)
        .count();
    (ff, early.len())
}

#[test]
fn the_limiter_keeps_every_second_within_rate_and_burst() {
    let sc = scenario();
    let spec = sc
        .strategies
        .iter()
        .find(|s| s.rate_limit.is_some() && s.rate_limit.unwrap().mode == fusebox::Mode::Enforce)
        .expect("a limited strategy");
    let limit = spec.rate_limit.unwrap();
    let allowed = (limit.per_second.unwrap() + limit.burst.unwrap()) as usize;
    assert_eq!(allowed, 45);

    let breaker = run(&sc, "breaker");
    let limited = run(&sc, "breaker + 40 per s");
    assert!(
        busiest_second(&breaker) > allowed,
        "without a limit the partner gets {} calls in a second: the scenario tests something",
        busiest_second(&breaker)
    );
    assert!(
        busiest_second(&limited) <= allowed,
        "{} calls in one second, over {allowed}",
        busiest_second(&limited)
    );
    // Not starved either: the rate is used (the burst, then one call every 25 ms).
    assert!(
        busiest_second(&limited) >= 40,
        "{}",
        busiest_second(&limited)
    );

    // Before the fault the breaker is closed throughout: every fast fail
    // there is the limiter's refusal, and the rest reached the partner.
    let fault = Duration::from_secs(1);
    assert!(limited.transitions.iter().all(|t| t.at >= fault));
    assert_eq!(fast_fails_before(&breaker, fault), (0, 100));
    let (refused, arrived) = fast_fails_before(&limited, fault);
    let reached = limited.calls.iter().filter(|c| c.start < fault).count();
    assert_eq!(
        refused + reached,
        arrived,
        "every early request: a call or a refusal"
    );
    assert!(
        (55..=60).contains(&refused),
        "{refused} of {arrived} refused"
    );
}

#[test]
fn shadow_mode_sends_what_the_breaker_alone_sends() {
    let sc = scenario();
    let breaker = run(&sc, "breaker");
    let shadow = run(&sc, "breaker + 40 per s, shadow");
    assert_eq!(shadow.calls, breaker.calls);
    assert_eq!(shadow.transitions, breaker.transitions);
}

#[test]
fn a_limited_run_is_the_same_every_time() {
    let sc = scenario();
    let a = run(&sc, "breaker + 40 per s");
    let b = run(&sc, "breaker + 40 per s");
    assert_eq!(a.calls, b.calls);
    assert_eq!(a.requests, b.requests);
}

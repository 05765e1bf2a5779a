//! Real mode: a short run that accounts for every request, and (ignored by
//! default: ~20 s) real mode against virtual mode on the embedded scenarios.

use fusebox_lab::engine::{self, Mode, Outcome};
use fusebox_lab::report::Summary;
use fusebox_lab::scenario::{self, Scenario};
use std::time::Duration;

/// A short real run: every request accounted for, times ordered, attempts
/// matching calls. Asserts no timing (the machine may be loaded).
#[test]
fn real_run_accounts_for_every_request() {
    // 20 requests over 100 ms, 1 ms calls, a 40 ms fault of 5 ms failures.
    let text = scenario::EMBEDDED[0]
        .1
        .replace("duration = \"3s\"", "duration = \"100ms\"")
        .replace("rate = 50.0", "rate = 200.0")
        .replace("latency = \"5ms\"", "latency = \"1ms\"")
        .replace("from = \"500ms\"", "from = \"20ms\"")
        .replace("until = \"1500ms\"", "until = \"60ms\"")
        .replace("latency = \"150ms\"", "latency = \"5ms\"")
        .replace("open_for = \"500ms\"", "open_for = \"20ms\"")
        .replace("queue = 0 ", "queue = 2 ");
    let sc = Scenario::parse("short", &text).unwrap();
    assert_eq!((sc.queue, sc.request_count()), (2, 20));
    for spec in &sc.strategies {
        let r = engine::run(&sc, spec, Mode::Real, None);
        assert_eq!(r.requests.len(), 20);
        let attempts: u32 = r.requests.iter().map(|q| q.attempts).sum();
        assert_eq!(attempts as usize, r.calls.len());
        for q in &r.requests {
            match q.start {
                Some(s) => assert!(s <= q.end),
                None => assert_eq!(q.outcome, Outcome::Rejected),
            }
            assert!(q.arrival <= q.end);
        }
        let s = Summary::of(&sc, &r);
        assert_eq!(
            s.successes + s.downstream_errors + s.fast_fails + s.queue_rejections,
            20
        );
    }
}

/// Real mode against virtual mode on both embedded scenarios: counts
/// within ±5, transitions within ±30 ms. Takes ~20 s of real time and depends on the
/// machine's scheduling, so it is not part of the default run:
/// `cargo test --release -p fusebox-lab -- --ignored real_mode`.
#[test]
#[ignore = "real time: ~20 s, timing depends on machine load"]
fn real_mode_matches_virtual_mode() {
    for sc in &Scenario::embedded() {
        for spec in &sc.strategies {
            let v = Summary::of(sc, &engine::run(sc, spec, Mode::Virtual, None));
            let r = Summary::of(sc, &engine::run(sc, spec, Mode::Real, None));
            let counts = |s: &Summary| {
                [
                    s.downstream_calls,
                    s.successes,
                    s.downstream_errors,
                    s.fast_fails,
                ]
            };
            println!(
                "{}: virtual {:?} real {:?}",
                spec.name,
                counts(&v),
                counts(&r)
            );
            for (a, b) in counts(&v).iter().zip(counts(&r)) {
                assert!(
                    a.abs_diff(b) <= 5,
                    "{}: {:?} vs {:?}",
                    spec.name,
                    counts(&v),
                    counts(&r)
                );
            }
            assert_eq!(v.transitions.len(), r.transitions.len(), "{}", spec.name);
            for (a, b) in v.transitions.iter().zip(&r.transitions) {
                let d = a.at.abs_diff(b.at);
                println!(
                    "  {} -> {}: virtual {:?} real {:?} ({:?})",
                    a.from, a.to, a.at, b.at, d
                );
                assert_eq!((a.from, a.to), (b.from, b.to));
                assert!(
                    d <= Duration::from_millis(30),
                    "{}: {a:?} vs {b:?}",
                    spec.name
                );
            }
        }
    }
}

//! The adaptive limit end to end, on a ManualClock: the window, the
//! generation fence, the verdicts, and a stress test of admission.

use fusebox::limit::{AdaptiveLimit, Algorithm, LimitConfig};
use fusebox::{ManualClock, Mode};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

fn limit(config: LimitConfig) -> (AdaptiveLimit, ManualClock) {
    let clock = ManualClock::new();
    let l = AdaptiveLimit::builder()
        .config(config)
        .clock(clock.clone())
        .build()
        .unwrap();
    (l, clock)
}

/// `n` calls at once (as many as admitted), all answering after `rtt`.
fn round(l: &AdaptiveLimit, clock: &ManualClock, n: usize, rtt: Duration) {
    let permits: Vec<_> = (0..n).filter_map(|_| l.try_acquire().ok()).collect();
    clock.advance(rtt);
    for p in permits {
        p.success();
    }
}

#[test]
fn the_limit_moves_once_per_window_not_per_sample() {
    let (l, clock) = limit(LimitConfig::new(Algorithm::Aimd).window(Duration::from_secs(1), 10));
    // 19 rounds of 20 calls, 50 ms each: 950 ms, no window closed yet.
    for _ in 0..19 {
        round(&l, &clock, 20, 50 * MS);
    }
    assert_eq!(l.limit(), 20);
    assert_eq!(l.snapshot().generation, 0);
    round(&l, &clock, 20, 50 * MS); // 1 s: the window closes once
    assert_eq!(l.limit(), 21);
    assert_eq!(l.snapshot().generation, 1);
}

#[test]
fn a_window_needs_its_minimum_of_samples() {
    let (l, clock) = limit(
        LimitConfig::new(Algorithm::Aimd)
            .initial(2)
            .window(Duration::from_secs(1), 10),
    );
    for _ in 0..4 {
        round(&l, &clock, 2, Duration::from_secs(1)); // 2 answers a second
    }
    assert_eq!(l.limit(), 2, "8 answers < 10");
    round(&l, &clock, 2, Duration::from_secs(1));
    assert_eq!(l.limit(), 3);
}

#[test]
fn answers_from_before_a_limit_change_are_fenced() {
    let (l, clock) = limit(LimitConfig::new(Algorithm::Aimd).window(Duration::from_secs(1), 1));
    let old = l.try_acquire().unwrap();
    drop(l.try_acquire().unwrap()); // released, no sample
                                    // Keep 10 more in flight so the window counts as in use.
    let busy: Vec<_> = (0..10).map(|_| l.try_acquire().unwrap()).collect();
    drop(busy);
    clock.advance(Duration::from_secs(1));
    l.try_acquire().unwrap().success(); // closes the window: 20 -> 21
    assert_eq!((l.limit(), l.snapshot().generation), (21, 1));
    old.dropped(); // admitted under 20: no cut
    assert_eq!(l.snapshot().fenced, 1);
    clock.advance(Duration::from_secs(1));
    l.try_acquire().unwrap().success();
    // The old drop did not cut; an idle limit did not grow.
    assert_eq!(l.limit(), 21);
    assert_eq!(l.snapshot().in_flight, 0);
}

/// A reconfigure that moves the limit fences earlier answers as a move
/// by the algorithm does; one that keeps it does not.
#[test]
fn a_reconfigure_that_moves_the_limit_fences_earlier_answers() {
    let (l, clock) = limit(LimitConfig::new(Algorithm::Aimd).window(Duration::from_secs(1), 1));
    let before = l.try_acquire().unwrap();
    l.reconfigure(LimitConfig::new(Algorithm::Aimd).window(Duration::from_secs(1), 1))
        .unwrap();
    assert_eq!(l.snapshot().generation, 0, "nothing moved: nothing fenced");
    l.reconfigure(
        LimitConfig::new(Algorithm::Aimd)
            .max(10)
            .initial(10)
            .window(Duration::from_secs(1), 1),
    )
    .unwrap();
    assert_eq!(
        (l.limit(), l.snapshot().generation),
        (10, 1),
        "20 into [1, 10]"
    );
    clock.advance(Duration::from_secs(1));
    before.dropped(); // admitted under 20: no cut of the new limit
    assert_eq!((l.snapshot().fenced, l.limit()), (1, 10));
    let busy: Vec<_> = (0..10).map(|_| l.try_acquire().unwrap()).collect();
    assert!(l.try_acquire().is_err(), "10 in flight: full");
    busy.into_iter().next().unwrap().dropped(); // a drop under the new limit cuts
    assert!(l.limit() < 10, "{}", l.limit());
}

#[test]
fn a_drop_cuts_and_ignore_is_no_sample() {
    let (l, clock) = limit(
        LimitConfig::new(Algorithm::Vegas)
            .initial(40)
            .window(Duration::from_secs(1), 5),
    );
    for _ in 0..10 {
        l.try_acquire().unwrap().ignore();
    }
    clock.advance(Duration::from_secs(2));
    l.try_acquire().unwrap().ignore();
    assert_eq!(
        l.snapshot().generation,
        0,
        "ignored answers close no window"
    );
    let permits: Vec<_> = (0..30).map(|_| l.try_acquire().unwrap()).collect();
    for p in permits {
        p.dropped();
    }
    assert_eq!(l.limit(), 36); // 40 x 0.9
}

fn settle_with_latency(a: Algorithm, latency: impl Fn(u32) -> Duration) -> Vec<u32> {
    let (l, clock) = limit(
        LimitConfig::new(a)
            .min(2)
            .max(100)
            .window(Duration::from_secs(1), 10),
    );
    let mut limits = Vec::new();
    for _ in 0..300 {
        // Saturated: a full limit in flight, answering after latency(limit).
        let n = l.limit();
        let rtt = latency(n);
        let rounds = (1000 / rtt.as_millis().max(1)).max(1);
        for _ in 0..rounds {
            round(&l, &clock, n as usize, rtt);
        }
        limits.push(l.limit());
        assert!((2..=100).contains(&l.limit()));
    }
    limits
}

#[test]
fn every_algorithm_rises_with_flat_latency() {
    for a in [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd] {
        let limits = settle_with_latency(a, |_| 20 * MS);
        assert_eq!(*limits.last().unwrap(), 100, "{a}: {limits:?}");
    }
}

#[test]
fn latency_algorithms_fall_when_latency_grows_with_load() {
    // Eight workers of 20 ms: above 8 in flight, calls queue.
    let knee = |n: u32| 20 * MS * n.max(8) / 8;
    // Gradient2 tolerates 50% more latency than its slowly following
    // baseline, so it settles well above the knee; it still stays below
    // where flat latency takes it.
    let limits = settle_with_latency(Algorithm::Gradient2, knee);
    assert!(*limits.last().unwrap() < 80, "{limits:?}");
    // Vegas lands near the server's concurrency.
    let limits = settle_with_latency(Algorithm::Vegas, knee);
    let mut tail = limits[100..].to_vec();
    tail.sort_unstable();
    assert!((8..=16).contains(&tail[tail.len() / 2]), "{tail:?}");
}

#[test]
fn shadow_admits_and_counts_off_counts_nothing() {
    let (l, _clock) = limit(LimitConfig::default().initial(1).mode(Mode::Shadow));
    let _a = l.try_acquire().unwrap();
    let _b = l.try_acquire().unwrap();
    assert_eq!((l.snapshot().shadowed, l.snapshot().in_flight), (1, 2));
    l.set_mode(Mode::Off);
    let c = l.try_acquire().unwrap();
    assert_eq!(c.in_flight(), 0);
    drop(c);
    assert_eq!(l.snapshot().in_flight, 2);
}

#[cfg(feature = "config")]
#[test]
fn a_file_builds_a_limit() {
    let c: LimitConfig =
        toml::from_str("algorithm = \"aimd\"\nmin = 2\nmax = 8\ninitial = 4").unwrap();
    let l = AdaptiveLimit::new(c).unwrap();
    assert_eq!((l.limit(), l.config().algorithm), (4, Algorithm::Aimd));
    let c: LimitConfig = toml::from_str("initial = 300").unwrap();
    let e = AdaptiveLimit::new(c).unwrap_err();
    assert_eq!(e.field(), "initial");
}

/// Threads acquire and settle with every verdict while the limit moves:
/// no admission above the limit in force, no slot lost, limit in bounds.
#[test]
fn stress_admission_never_exceeds_the_limit_and_loses_no_permit() {
    let clock = ManualClock::new();
    let l = AdaptiveLimit::builder()
        .config(
            LimitConfig::new(Algorithm::Aimd)
                .min(3)
                .max(12)
                .initial(6)
                .window(MS, 5),
        )
        .clock(clock.clone())
        .build()
        .unwrap();
    let admitted = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (l, clock, admitted) = (l.clone(), clock.clone(), admitted.clone());
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for i in 0..20_000u32 {
                    if let Ok(p) = l.try_acquire() {
                        assert!(
                            p.in_flight() <= p.limit(),
                            "{} > {}",
                            p.in_flight(),
                            p.limit()
                        );
                        assert!((3..=12).contains(&p.limit()));
                        admitted.fetch_add(1, Ordering::Relaxed);
                        held.push(p);
                    }
                    if t == 0 && i % 7 == 0 {
                        clock.advance(MS);
                    }
                    if held.len() > 2 || i % 3 == 0 {
                        if let Some(p) = held.pop() {
                            match i % 5 {
                                0 => p.dropped(),
                                1 => p.ignore(),
                                2 => drop(p),
                                _ => p.success(),
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = l.snapshot();
    assert_eq!(s.in_flight, 0, "every slot came back");
    assert_eq!(s.admitted, admitted.load(Ordering::Relaxed));
    assert!((3..=12).contains(&s.limit));
    assert!(s.generation > 0, "the limit moved during the run");
}

mod pipeline {
    use super::*;
    use fusebox::pipeline::Stage;
    use fusebox::{Bulkhead, CircuitBreaker, Pipeline, PipelineError};

    #[test]
    fn the_limit_sits_inside_the_breaker_and_outside_the_bulkhead() {
        let (l, clock) = limit(LimitConfig::default());
        let breaker = CircuitBreaker::builder().clock(clock).build().unwrap();
        let p = Pipeline::builder()
            .bulkhead(Bulkhead::new(4))
            .limit(l)
            .breaker(breaker)
            .build();
        let kinds: Vec<_> = p.stages().iter().map(Stage::kind).collect();
        assert_eq!(kinds, ["breaker", "limit", "bulkhead"]);
        assert!(p.adaptive_limit().is_some());
    }

    #[test]
    fn answers_are_samples_timeouts_drops_inner_refusals_nothing() {
        let (l, clock) = limit(
            LimitConfig::new(Algorithm::Aimd)
                .initial(2)
                .window(Duration::from_secs(1), 1),
        );
        let breaker = CircuitBreaker::builder()
            .clock(clock.clone())
            .build()
            .unwrap();
        let p = Pipeline::builder()
            .breaker(breaker)
            .limit(l.clone())
            .timeout(100 * MS)
            .build();
        // An answer in 40 ms: a sample.
        let c = clock.clone();
        p.call(|| {
            c.advance(40 * MS);
            Ok::<_, std::io::Error>(())
        })
        .unwrap();
        assert_eq!((l.snapshot().in_flight, l.snapshot().dropped), (0, 0));
        // An answer after the timeout: a drop.
        let c = clock.clone();
        let e = p
            .call(|| {
                c.advance(Duration::from_secs(1));
                Ok::<_, std::io::Error>(())
            })
            .unwrap_err();
        assert!(matches!(e, PipelineError::TimedOut(_)));
        assert_eq!(l.snapshot().dropped, 1);
        assert_eq!(l.snapshot().sample_rtt, 40 * MS, "the window closed");
        assert_eq!(l.limit(), 1, "2 x 0.9, floored; min 1");
        // Full: refused, the call does not run.
        let _held = l.try_acquire().unwrap();
        let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
        assert!(matches!(e, PipelineError::LimitExceeded(_)));
        assert!(e.is_refusal());
    }

    #[test]
    fn a_refusal_from_inside_and_a_panic_give_the_slot_back() {
        let (l, _clock) = limit(LimitConfig::default());
        let p = Pipeline::builder()
            .limit(l.clone())
            .bulkhead(Bulkhead::new(0))
            .build();
        let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
        assert!(matches!(e, PipelineError::BulkheadFull(_)));
        assert_eq!(l.snapshot().in_flight, 0);
        let p = Pipeline::builder().limit(l.clone()).build();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            p.call(|| -> Result<(), std::io::Error> { panic!("boom") })
        }));
        assert!(r.is_err());
        let s = l.snapshot();
        assert_eq!((s.in_flight, s.admitted, s.dropped), (0, 2, 0));
    }
}

//! `scenarios/eight-workers.toml` in virtual time: the adaptive limit
//! against static bulkheads on a dependency of 8 workers under a load that
//! ramps past its capacity. Prints each strategy's figures (run with
//! `--nocapture` to see them) and asserts the adaptive limit's median over
//! the overloaded phase and its goodput against the best static bulkhead
//! (a limit updated on every sample instead of once per window settles at
//! 6 with a quarter less goodput, and fails it), and its p99 against the
//! best static bulkhead's.
//!
//! With `scenarios/slow-reviews.toml` beside it: no static size but 8 is
//! within 30% of the best on both scenarios (4 is too small here, 16 and
//! 64 too big there; 8 is within 10% here and 1% there).

mod common;

use fusebox_lab::engine::{self, Mode, Outcome, RunResult};
use fusebox_lab::scenario::Scenario;
use std::time::Duration;

/// The overloaded phase: offered load above the dependency's capacity
/// (about 350 a second, reached near 90 s).
const FROM: Duration = Duration::from_secs(100);
const UNTIL: Duration = Duration::from_secs(160);

struct Figures {
    limit_median: Option<u32>,
    goodput: f64,
    p99_ms: f64,
    timeouts: usize,
}

fn figures(run: &RunResult) -> Figures {
    let phase = |d: Duration| d >= FROM && d < UNTIL;
    let mut ok: Vec<Duration> = run
        .requests
        .iter()
        .filter(|r| phase(r.arrival) && r.outcome == Outcome::Ok)
        .map(|r| r.latency())
        .collect();
    ok.sort_unstable();
    let p99 = ok
        .get((ok.len() * 99 / 100).min(ok.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    // The limit in force every 100 ms of the phase.
    let limit_median = (!run.limits.is_empty()).then(|| {
        let mut at: Vec<u32> = (0..600)
            .map(|k| FROM + Duration::from_millis(100 * k))
            .map(|t| {
                run.limits
                    .iter()
                    .take_while(|(when, _)| *when <= t)
                    .last()
                    .map_or(run.limits[0].1, |&(_, l)| l)
            })
            .collect();
        at.sort_unstable();
        at[at.len() / 2]
    });
    Figures {
        limit_median,
        goodput: ok.len() as f64 / (UNTIL - FROM).as_secs_f64(),
        p99_ms: p99.as_secs_f64() * 1e3,
        timeouts: run
            .requests
            .iter()
            .filter(|r| phase(r.arrival) && r.outcome == Outcome::Timeout)
            .count(),
    }
}

#[test]
fn the_adaptive_limit_settles_near_the_dependencys_concurrency() {
    let sc = common::shipped("eight-workers");
    let mut vegas = None;
    let mut best_static: f64 = 0.0;
    let mut best_p99 = 0.0;
    let mut statics = Vec::new();
    println!(
        "strategy                        limit median  goodput/s  p99 ms  timeouts (100-160 s)"
    );
    for spec in &sc.strategies {
        let run = engine::run(&sc, spec, Mode::Virtual, None).unwrap();
        let f = figures(&run);
        println!(
            "{:<32}{:>12}{:>11.1}{:>8.0}{:>10}",
            spec.name,
            f.limit_median.map_or("-".into(), |l| l.to_string()),
            f.goodput,
            f.p99_ms,
            f.timeouts
        );
        if spec.name.starts_with("bulkhead") {
            if f.goodput > best_static {
                (best_static, best_p99) = (f.goodput, f.p99_ms);
            }
            statics.push((spec.name.clone(), f.goodput));
        }
        if spec.name == "limit vegas" {
            vegas = Some(f);
        }
    }
    let vegas = vegas.expect("the scenario has a vegas strategy");
    let median = vegas.limit_median.expect("a limit trace");
    assert!((6..=12).contains(&median), "vegas median {median}");
    // The bar: within 10% of the best static size in hindsight.
    assert!(
        vegas.goodput >= 0.9 * best_static,
        "vegas goodput {:.1} vs best static {best_static:.1}",
        vegas.goodput
    );
    assert!(
        vegas.p99_ms <= 1.5 * best_p99,
        "vegas p99 {:.0} ms vs the best static's {best_p99:.0}",
        vegas.p99_ms
    );

    // The same sizes on slow-reviews: each one's shortfall from the best
    // static size of each scenario.
    let page = common::shipped("slow-reviews");
    let there: Vec<(String, f64)> = page
        .strategies
        .iter()
        .filter(|s| s.name.starts_with("bulkhead"))
        .map(|s| {
            let run = engine::run(&page, s, Mode::Virtual, None).unwrap();
            (s.name.clone(), page_goodput(&page, &run))
        })
        .collect();
    let best_there = there.iter().map(|(_, g)| *g).fold(0.0, f64::max);
    println!("static size    short of the best: eight-workers  slow-reviews");
    for (name, here) in &statics {
        let (_, g) = there.iter().find(|(n, _)| n == name).expect(name);
        let (a, b) = (1.0 - here / best_static, 1.0 - g / best_there);
        println!("{name:<14}{:>33.1}%{:>13.1}%", 100.0 * a, 100.0 * b);
        if name == "bulkhead 8" {
            // The exception: within 30% of the best on both.
            assert!(a < 0.3 && b < 0.3, "{name}: {a} {b}");
        } else {
            assert!(a >= 0.3 || b >= 0.3, "{name}: {a} {b}");
        }
    }
}

/// slow-reviews' goodput (as `tests/slow_reviews.rs` counts it): pages
/// arriving from 10 s to 40 s answered within their deadline, a second.
fn page_goodput(sc: &Scenario, run: &RunResult) -> f64 {
    let (from, until) = (Duration::from_secs(10), Duration::from_secs(40));
    let good = run
        .requests
        .iter()
        .filter(|r| r.arrival >= from && r.arrival < until)
        .filter(|r| sc.request.in_time(r.start, r.latency()))
        .count();
    good as f64 / (until - from).as_secs_f64()
}

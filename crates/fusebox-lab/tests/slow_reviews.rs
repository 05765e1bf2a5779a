//! `scenarios/slow-reviews.toml`: a product page's pool of 20 workers, each
//! page a 50 ms critical call and then a call to "reviews", which slows
//! from 50 ms to 5 s over 20 s. A page whose reviews call is refused or
//! fails is answered without reviews; goodput is the pages answered within
//! their 1 s deadline, with or without reviews.
//!
//! Prints each strategy's figures over the slowdown and the 10 s after it
//! (run with `--nocapture` to see them), and asserts the comparisons that
//! hold: a static bulkhead of 16 or 64 is more than 30% worse than the best
//! one here (4), while 4 is more than 30% worse than the best on
//! `eight-workers` (checked by `tests/eight_workers.rs`, with 8, the one
//! size within 30% of the best on both); breaker + timeout keeps the
//! page's goodput. The adaptive limits with their default windows (250 ms,
//! 5 answers at least) come within 10% of the best static goodput, which is
//! asserted, but not within 1.5x of its p99: each lets two to three times
//! as many pages wait for slow reviews. With windows of 1 s (10 answers)
//! they do *not* come within 10%: Vegas lowers its limit by 1 per window
//! and Gradient2 by at most a tenth, from 20, while a bulkhead above about
//! 12 leaves too few of the 20 workers for the critical calls; that miss is
//! asserted too (it is why the windows are 250 ms by default).

mod common;

use fusebox_lab::engine::{self, Mode, Outcome, RunResult};
use fusebox_lab::scenario::Scenario;
use std::time::Duration;

/// The figures' phase: the slowdown (10 s to 30 s) and the 10 s after it.
const FROM: Duration = Duration::from_secs(10);
const UNTIL: Duration = Duration::from_secs(40);

/// One strategy's figures over the phase.
#[derive(Debug, Clone, Copy)]
struct Figures {
    /// Pages answered within their deadline, a second.
    goodput: f64,
    /// Of which with reviews.
    with_reviews: f64,
    /// Page latency (arrival to answer) of the answered pages.
    p50_ms: f64,
    p99_ms: f64,
    /// Workers busy (of the pool), sampled every 10 ms: mean and most.
    pool_mean: f64,
    pool_max: usize,
    /// Calls to reviews that started during the slowdown.
    slow_calls: usize,
    /// From the end of the slowdown to the arrival of the last page that
    /// missed its deadline (0: none arrived after the end).
    recover_s: f64,
    /// The adaptive limit's median, sampled every 100 ms of the phase.
    limit_median: Option<u32>,
}

/// The limit in force at `t`.
fn limit_at(run: &RunResult, t: Duration) -> u32 {
    run.limit_at(t).expect("a limit trace")
}

fn figures(sc: &Scenario, run: &RunResult) -> Figures {
    let page = &sc.request;
    let in_phase: Vec<_> = run
        .requests
        .iter()
        .filter(|r| r.arrival >= FROM && r.arrival < UNTIL)
        .collect();
    let in_time = |r: &&&_| {
        let r: &fusebox_lab::engine::RequestRecord = r;
        page.in_time(r.start, r.latency())
    };
    let good = in_phase.iter().filter(in_time).count();
    let full = in_phase
        .iter()
        .filter(in_time)
        .filter(|r| r.outcome == Outcome::Ok)
        .count();
    let mut latency: Vec<Duration> = in_phase
        .iter()
        .filter(|r| r.start.is_some())
        .map(|r| r.latency())
        .collect();
    latency.sort_unstable();
    let quantile = |p: usize| {
        let i = (latency.len() * p / 100).min(latency.len().saturating_sub(1));
        latency.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    let busy: Vec<usize> = (0..(UNTIL - FROM).as_millis() as u64 / 10)
        .map(|k| FROM + Duration::from_millis(10 * k))
        .map(|t| {
            run.requests
                .iter()
                .filter(|r| r.start.is_some_and(|s| s <= t) && r.end > t)
                .count()
        })
        .collect();
    let (slow_from, slow_until) = sc.fault_span().expect("the scenario has its slowdown");
    let last_miss = run
        .requests
        .iter()
        .filter(|r| r.arrival >= slow_from && !page.in_time(r.start, r.latency()))
        .map(|r| r.arrival)
        .max();
    let limit_median = (!run.limits.is_empty()).then(|| {
        let mut at: Vec<u32> = (0..(UNTIL - FROM).as_millis() as u64 / 100)
            .map(|k| limit_at(run, FROM + Duration::from_millis(100 * k)))
            .collect();
        at.sort_unstable();
        at[at.len() / 2]
    });
    let secs = (UNTIL - FROM).as_secs_f64();
    Figures {
        goodput: good as f64 / secs,
        with_reviews: full as f64 / secs,
        p50_ms: quantile(50),
        p99_ms: quantile(99),
        pool_mean: busy.iter().sum::<usize>() as f64 / busy.len() as f64,
        pool_max: busy.iter().copied().max().unwrap_or(0),
        slow_calls: run
            .calls
            .iter()
            .filter(|c| c.start >= slow_from && c.start < slow_until)
            .count(),
        recover_s: last_miss.map_or(0.0, |t| t.saturating_sub(slow_until).as_secs_f64()),
        limit_median,
    }
}

/// Every strategy's figures, printed as they come.
fn run_all(sc: &Scenario) -> Vec<(String, Figures)> {
    println!(
        "strategy                        goodput/s  with reviews/s  p50 ms  p99 ms  pool mean  pool max  \
         calls to reviews  recovery s  limit median"
    );
    sc.strategies
        .iter()
        .map(|spec| {
            let run = engine::run(sc, spec, Mode::Virtual, None).unwrap();
            let f = figures(sc, &run);
            println!(
                "{:<32}{:>9.1}{:>16.1}{:>8.0}{:>8.0}{:>11.1}{:>10}{:>18}{:>12.1}{:>14}",
                spec.name,
                f.goodput,
                f.with_reviews,
                f.p50_ms,
                f.p99_ms,
                f.pool_mean,
                f.pool_max,
                f.slow_calls,
                f.recover_s,
                f.limit_median.map_or("-".into(), |l| l.to_string())
            );
            (spec.name.clone(), f)
        })
        .collect()
}

fn get<'a>(all: &'a [(String, Figures)], name: &str) -> &'a Figures {
    &all.iter().find(|(n, _)| n == name).expect(name).1
}

#[test]
fn a_slow_non_critical_dependency_and_what_each_strategy_keeps_of_the_page() {
    let sc = common::shipped("slow-reviews");
    let all = run_all(&sc);
    let statics: Vec<&(String, Figures)> = all
        .iter()
        .filter(|(n, _)| n.starts_with("bulkhead"))
        .collect();
    let (best_name, best) = statics
        .iter()
        .max_by(|a, b| a.1.goodput.total_cmp(&b.1.goodput))
        .map(|(n, f)| (n.as_str(), *f))
        .unwrap();
    println!(
        "best static bulkhead: {best_name} ({:.1}/s, p99 {:.0} ms)",
        best.goodput, best.p99_ms
    );
    for (name, f) in all.iter().filter(|(n, _)| n.starts_with("limit")) {
        println!(
            "{name}: goodput {:+.1}% of the best static (the bar: -10%), p99 {:.1}x (the bar: 1.5x)",
            100.0 * (f.goodput / best.goodput - 1.0),
            f.p99_ms / best.p99_ms
        );
    }

    // Without protection the pool fills with calls to reviews: pages
    // queue for seconds, and the backlog outlasts the slowdown.
    let none = get(&all, "none");
    assert!(none.goodput < 0.1 * best.goodput, "none: {none:?}");
    assert!(none.recover_s > 10.0, "none: {none:?}");
    assert_eq!(none.pool_max, sc.workers);
    // A bulkhead of 64 is no bulkhead in a pool of 20; one of 16 leaves 4
    // workers for 5 workers' worth of critical calls.
    assert_eq!(best_name, "bulkhead 4");
    for size in ["bulkhead 16", "bulkhead 64"] {
        let f = get(&all, size);
        assert!(f.goodput <= 0.7 * best.goodput, "{size}: {f:?}");
    }
    // A bulkhead of 8 keeps as much as 4 here.
    assert!(get(&all, "bulkhead 8").goodput >= 0.9 * best.goodput);
    // Breaker + timeout: the timeout frees the workers, the breaker stops
    // calling; the page keeps its goodput and the p99 of the best bulkhead.
    let breaker = get(&all, "breaker + timeout");
    assert!(breaker.goodput >= 0.99 * best.goodput, "{breaker:?}");
    assert!(breaker.p99_ms <= best.p99_ms, "{breaker:?}");
    // AIMD reacts to drops only, and without a timeout there are none: its
    // limit grows while the pool fills, as without protection.
    let aimd = get(&all, "limit aimd");
    assert!(aimd.goodput <= none.goodput * 1.01, "{aimd:?}");
    // With 1 s windows the latency-driven limits shrink, but too slowly
    // (see the docs above).
    for name in ["limit vegas (1 s windows)", "limit gradient2 (1 s windows)"] {
        let f = get(&all, name);
        assert!(f.goodput > 10.0 * none.goodput, "{name}: {f:?}");
        assert!(f.goodput < 0.9 * best.goodput, "{name}: {f:?}");
        assert!(f.limit_median.is_some_and(|l| l < 20), "{name}: {f:?}");
    }
    // Four windows a second (the default): within 10% of the best static goodput.
    for name in ["limit vegas", "limit gradient2"] {
        let f = get(&all, name);
        assert!(f.goodput >= 0.9 * best.goodput, "{name}: {f:?}");
    }
}

/// Real threads and sleeps against virtual time, on the first 40 s (the
/// figures' phase ends there): the two latency-driven limits, run side by
/// side. Goodput within 5%, and the limit's average over each 5 s of the
/// first 30 s (healthy, then the slowdown) within 20% of virtual mode's.
/// The last 10 s are printed, not asserted: there Vegas measures its
/// baseline again (the limit at 3 for a window) at a time that real
/// threads move by a few hundred ms, and returns to the limit in force
/// just before it, which the shift changes (20 against 14 in one run), so
/// a 5 s average there tests the timing of that one event. About 45 s: run with
/// `cargo test --release -p fusebox-lab --test slow_reviews -- --ignored --nocapture`.
#[test]
#[ignore]
fn real_mode_agrees_with_virtual_mode() {
    let mut sc = common::shipped("slow-reviews");
    sc.duration = UNTIL;
    let specs: Vec<_> = sc
        .strategies
        .iter()
        .filter(|s| s.name == "limit vegas" || s.name == "limit gradient2")
        .cloned()
        .collect();
    let real: Vec<RunResult> = std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .map(|spec| s.spawn(|| engine::run(&sc, spec, Mode::Real, None).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (spec, real) in specs.iter().zip(&real) {
        let virt = engine::run(&sc, spec, Mode::Virtual, None).unwrap();
        let (fv, fr) = (figures(&sc, &virt), figures(&sc, real));
        let goodput = fr.goodput / fv.goodput - 1.0;
        // The limit's time average over each 5 s of the run (sampled
        // every 100 ms), real against virtual.
        let block = |run: &RunResult, k: u64| {
            (0..50)
                .map(|i| f64::from(limit_at(run, Duration::from_millis(5000 * k + 100 * i))))
                .sum::<f64>()
                / 50.0
        };
        let blocks: Vec<(f64, f64)> = (0..UNTIL.as_secs() / 5)
            .map(|k| (block(real, k), block(&virt, k)))
            .collect();
        let off = |blocks: &[(f64, f64)]| {
            blocks
                .iter()
                .map(|(r, v)| (r / v - 1.0).abs())
                .fold(0.0, f64::max)
        };
        let worst = off(&blocks[..6]);
        println!(
            "{}: goodput real {:.1} virtual {:.1} ({:+.1}%); limit median real {:?} virtual {:?}; \
             the limit's 5 s averages within {:.1}% over 0-30 s, {:.1}% over 30-40 s",
            spec.name,
            fr.goodput,
            fv.goodput,
            100.0 * goodput,
            fr.limit_median,
            fv.limit_median,
            100.0 * worst,
            100.0 * off(&blocks[6..])
        );
        let averages: Vec<String> = blocks
            .iter()
            .map(|(r, v)| format!("{r:.1}/{v:.1}"))
            .collect();
        println!("  5 s averages, real/virtual: {}", averages.join(" "));
        let trace = |run: &RunResult| {
            run.limits
                .iter()
                .map(|(t, l)| format!("{:.1}s:{l}", t.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!("  real    {}\n  virtual {}", trace(real), trace(&virt));
        assert!(goodput.abs() <= 0.05, "{}: goodput {goodput}", spec.name);
        assert!(worst <= 0.2, "{}: limit off by {worst}", spec.name);
    }
}

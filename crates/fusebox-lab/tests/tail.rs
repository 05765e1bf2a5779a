//! `scenarios/tail.toml` in virtual time: against a dependency whose calls
//! take 10 ms but 1% of them 1 s, hedging at the p95 cuts the p99.9 of the
//! requests at least 5x for at most 10% more downstream calls, whatever the
//! seed; and what a hedge does, call by call: the loser is cancelled (a
//! downstream call, its breaker permit dropped without a verdict), a hedge
//! goes out only after its delay, only while an attempt still runs, and
//! the library's quantile delay waits for its samples. Run with
//! `--nocapture` to see the figures.

mod common;

use fusebox_lab::engine::{self, Mode, Outcome, RunResult};
use fusebox_lab::report::{html, json, model, table, ScenarioReport, Summary};
use fusebox_lab::scenario::Scenario;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The nearest-rank quantile `num / den` of the requests' latency, in ms.
fn quantile(run: &RunResult, num: usize, den: usize) -> f64 {
    let mut v: Vec<Duration> = run.requests.iter().map(|r| r.latency()).collect();
    v.sort_unstable();
    let rank = (v.len() * num).div_ceil(den);
    v[rank - 1].as_secs_f64() * 1e3
}

struct Figures {
    p50: f64,
    p99: f64,
    p999: f64,
    calls_per_request: f64,
}

fn figures(sc: &Scenario, run: &RunResult) -> Figures {
    assert!(run.requests.iter().all(|r| r.outcome == Outcome::Ok));
    let f = Figures {
        p50: quantile(run, 1, 2),
        p99: quantile(run, 99, 100),
        p999: quantile(run, 999, 1000),
        calls_per_request: run.calls.len() as f64 / run.requests.len() as f64,
    };
    // The report shows the same.
    let tail = Summary::of(sc, run)
        .tail
        .expect("a scenario about tail latency");
    assert_eq!(
        (
            tail.p50_ms,
            tail.p99_ms,
            tail.p999_ms,
            tail.calls_per_request
        ),
        (f.p50, f.p99, f.p999, f.calls_per_request)
    );
    f
}

/// The three strategies of `sc`: no hedging, a fixed delay, the p95.
fn run_all(sc: &Scenario) -> Vec<(String, RunResult)> {
    sc.strategies
        .iter()
        .map(|s| {
            let run = engine::run(sc, s, Mode::Virtual, None).unwrap();
            (s.name.clone(), run)
        })
        .collect()
}

#[test]
fn hedging_at_the_p95_cuts_the_p99_9_at_least_5x_for_at_most_10_percent_more_calls() {
    let shipped = common::shipped("tail");
    assert_eq!(shipped.request_count(), 10_000);
    println!("seed  strategy           p50 ms  p99 ms  p99.9 ms  calls/request");
    for seed in [shipped.seed, 2, 3, 4, 5] {
        let sc = Scenario {
            seed,
            ..shipped.clone()
        };
        let runs = run_all(&sc);
        let f: Vec<Figures> = runs.iter().map(|(_, r)| figures(&sc, r)).collect();
        for ((name, _), f) in runs.iter().zip(&f) {
            println!(
                "{seed:>4}  {name:<17}{:>8.1}{:>8.1}{:>10.1}{:>15.3}",
                f.p50, f.p99, f.p999, f.calls_per_request
            );
        }
        let [none, fixed, p95] = &f[..] else {
            panic!("three strategies")
        };
        // Without hedging the slow 1% is the p99.9, and every request is one call.
        assert_eq!(none.p50, 10.0);
        assert_eq!(none.p999, 1000.0, "seed {seed}");
        assert_eq!(none.calls_per_request, 1.0);
        // The p95 (about 10 ms here: the histogram's bucket of 10 ms) hedges
        // the slow calls only.
        assert!(p95.p999 * 5.0 <= none.p999, "seed {seed}: {}", p95.p999);
        assert!(
            p95.calls_per_request <= 1.10,
            "seed {seed}: {}",
            p95.calls_per_request
        );
        assert!(p95.calls_per_request > 1.0, "seed {seed}: it hedged");
        assert_eq!(p95.p50, 10.0, "seed {seed}: the median is not hedged");
        // A fixed 50 ms: a slow call answered by its hedge at 60 ms.
        assert_eq!(fixed.p999, 60.0, "seed {seed}");
        assert!(fixed.calls_per_request <= 1.10, "seed {seed}");
    }
}

/// The figures of the lab's README, as `run --clock virtual` prints them.
#[test]
fn the_readme_figures() {
    let sc = common::shipped("tail");
    let r = ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {}).unwrap();
    let rows: Vec<(&str, Vec<String>)> = r
        .summaries
        .iter()
        .map(|s| {
            let row = model::TAIL_FIGURES.iter().map(|f| (f.ours)(s).text());
            (s.name.as_str(), row.collect())
        })
        .collect();
    let want = |row: [&str; 7]| row.map(String::from).to_vec();
    assert_eq!(
        rows,
        [
            (
                "no hedging",
                want(["10.0", "10.0", "1000.0", "1.000", "0", "0", "0"])
            ),
            (
                "hedge after 50ms",
                want(["10.0", "10.0", "60.0", "1.010", "100", "98", "100"])
            ),
            (
                "hedge at p95",
                want(["10.0", "10.0", "20.2", "1.010", "99", "97", "99"])
            ),
        ]
    );
}

#[test]
fn the_same_seed_draws_the_same_slow_calls_and_another_seed_others() {
    let sc = common::shipped("tail");
    let none = &sc.strategies[0];
    let slow = |sc: &Scenario| -> Vec<usize> {
        let run = engine::run(sc, none, Mode::Virtual, None).unwrap();
        run.calls
            .iter()
            .filter(|c| c.end - c.start == ms(1000))
            .map(|c| c.request)
            .collect()
    };
    let first = slow(&sc);
    assert_eq!(first, slow(&sc));
    // About 1% of the 10 000 calls (a binomial's spread, well within).
    assert!((70..=130).contains(&first.len()), "{}", first.len());
    let other = slow(&Scenario {
        seed: 2,
        ..sc.clone()
    });
    assert!((70..=130).contains(&other.len()), "{}", other.len());
    assert_ne!(first, other);
    // The hedged strategies' first calls are the same draws.
    let p95 = engine::run(&sc, &sc.strategies[2], Mode::Virtual, None).unwrap();
    let slow_first: Vec<usize> = p95
        .calls
        .iter()
        .filter(|c| !c.hedge && sc.plan(c.request, 1, 0, c.start).duration == ms(1000))
        .map(|c| c.request)
        .collect();
    assert_eq!(slow_first, first);
}

/// A scenario of two requests (at 0 and 1 s) whose first call, started in
/// a 20 ms fault, fails after 1 s; a healthy call takes 10 ms. `strategy`
/// is the one fusebox strategy's extra keys, beside a breaker that opens
/// on one failure.
fn two_requests(strategy: &str) -> Scenario {
    let text = format!(
        r#"
name = "two"
duration = "2s"
rate = 1.0
workers = 1

[downstream]
latency = "10ms"
[[downstream.faults]]
from = "0s"
until = "20ms"
latency = "1s"
outcome = "error"

[[strategy]]
name = "breaker"
kind = "fusebox"
consecutive_failures = 1
open_for = "5s"
{strategy}
"#
    );
    Scenario::parse("two.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_loser_is_cancelled_a_call_whose_permit_is_dropped_without_a_verdict() {
    // Unhedged: the failure after 1 s opens the breaker, and the second
    // request, at 1 s, is fast-failed.
    let sc = two_requests("");
    let run = engine::run(&sc, &sc.strategies[0], Mode::Virtual, None).unwrap();
    let outcomes: Vec<Outcome> = run.requests.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [Outcome::Error, Outcome::FastFail]);
    assert_eq!(run.transitions.len(), 1, "{:?}", run.transitions);

    // Hedged after 50 ms: the hedge starts after the fault and answers at
    // 60 ms; the failing call is cancelled then, and the breaker never
    // hears of it.
    let sc = two_requests("hedge = { delay = \"50ms\" }");
    let run = engine::run(&sc, &sc.strategies[0], Mode::Virtual, None).unwrap();
    let outcomes: Vec<Outcome> = run.requests.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [Outcome::Ok, Outcome::Ok]);
    assert_eq!(run.requests[0].latency(), ms(60));
    assert_eq!(run.requests[0].attempts, 2);
    assert!(run.transitions.is_empty(), "{:?}", run.transitions);
    let calls: Vec<(Duration, Duration, bool, bool)> = run
        .calls
        .iter()
        .map(|c| (c.start, c.end, c.hedge, c.cancelled))
        .collect();
    assert_eq!(
        calls,
        [
            (ms(0), ms(60), false, true),
            (ms(50), ms(60), true, false),
            (ms(1000), ms(1010), false, false),
        ]
    );
    let s = Summary::of(&sc, &run);
    assert_eq!((s.downstream_calls, s.failed_calls), (3, 0));
    let tail = s.tail.unwrap();
    assert_eq!((tail.hedges, tail.won_by_hedge, tail.cancelled), (1, 1, 1));
}

#[test]
fn a_hedge_goes_out_only_while_an_attempt_runs_and_at_most_max_extra() {
    // A fixed delay longer than the failing call: it fails at 1 s, before
    // the hedge (2 s), and nothing is left to hedge.
    let sc = two_requests("hedge = { delay = \"1500ms\" }");
    let run = engine::run(&sc, &sc.strategies[0], Mode::Virtual, None).unwrap();
    assert!(run.calls.iter().all(|c| !c.hedge));
    assert_eq!(run.requests[0].outcome, Outcome::Error);

    // Three hedges 10 ms apart into a downstream failing for 35 ms: the
    // first three calls fail after 1 s, the third hedge (at 30 ms) does
    // too, and the call ends with the last to fail; max_extra = 2 stops at
    // two hedges.
    let mut sc35 = two_requests("hedge = { delay = \"10ms\", max_extra = 3 }");
    sc35.downstream.faults[0].until = ms(35);
    let run = engine::run(&sc35, &sc35.strategies[0], Mode::Virtual, None).unwrap();
    let starts: Vec<(Duration, bool)> = run
        .calls
        .iter()
        .filter(|c| c.request == 0)
        .map(|c| (c.start, c.hedge))
        .collect();
    assert_eq!(
        starts,
        [
            (ms(0), false),
            (ms(10), true),
            (ms(20), true),
            (ms(30), true)
        ]
    );
    assert_eq!(run.requests[0].outcome, Outcome::Error);
    assert_eq!(run.requests[0].end, ms(1030), "the last attempt to fail");

    let mut two = sc35.clone();
    let hedge = two.strategies[0].hedge.as_mut().unwrap();
    hedge.max_extra = Some(2);
    let run = engine::run(&two, &two.strategies[0], Mode::Virtual, None).unwrap();
    let hedges = run
        .calls
        .iter()
        .filter(|c| c.request == 0 && c.hedge)
        .count();
    assert_eq!(hedges, 2);
}

#[test]
fn a_quantile_delay_waits_for_its_samples() {
    // 100 samples before the first hedge (answers, which come 10 ms after
    // their request starts, 5 ms apart): the slow calls among the first 100
    // requests are not hedged; from the 200th on, every one is.
    let sc = common::shipped("tail");
    let p95 = &sc.strategies[2];
    let run = engine::run(&sc, p95, Mode::Virtual, None).unwrap();
    let slow_first = |range: std::ops::Range<usize>| {
        range
            .filter(|&i| sc.plan(i, 1, 0, Duration::ZERO).duration == ms(1000))
            .count()
    };
    let hedged = |range: std::ops::Range<usize>| {
        run.calls
            .iter()
            .filter(|c| c.hedge && range.contains(&c.request))
            .count()
    };
    assert!(slow_first(0..100) >= 1, "a slow call among the first 100");
    assert_eq!(hedged(0..100), 0);
    assert_eq!(hedged(200..10_000), slow_first(200..10_000));
    assert!(hedged(100..200) <= slow_first(100..200));
}

#[test]
fn the_report_shows_the_tail_figures_only_for_a_scenario_about_tail_latency() {
    let sc = common::shipped("tail");
    let r = ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {}).unwrap();
    let text = table::render_scenario(&r);
    assert!(
        text.contains("downstream 10ms healthy (1% of calls 1s)"),
        "{text}"
    );
    let doc = json::document(std::slice::from_ref(&r));
    let page = html::page(std::slice::from_ref(&r));
    for f in model::TAIL_FIGURES {
        assert!(text.contains(f.label), "table: {}", f.label);
        assert!(
            page.contains(&format!("<tr><td>{}</td>", f.label)),
            "page: {}",
            f.label
        );
    }
    let p95 = &doc["strategies"][2];
    assert_eq!(p95["name"], "hedge at p95");
    let summary = &r.summaries[2].tail.unwrap();
    assert_eq!(p95["latency_ms"]["p99_9"], summary.p999_ms);
    assert_eq!(p95["hedges_sent"], summary.hedges);
    assert_eq!(p95["calls_per_request"], summary.calls_per_request);

    // The article's scenario has none of them.
    let r = ScenarioReport::run(
        Scenario::embedded().remove(0),
        Mode::Virtual,
        None,
        |_| {},
        || {},
    )
    .unwrap();
    let text = table::render_scenario(&r);
    let doc = json::document(std::slice::from_ref(&r));
    for f in model::TAIL_FIGURES {
        assert!(!text.contains(f.label), "{}", f.label);
    }
    assert!(doc["strategies"][0].get("latency_ms").is_none());
    assert!(r.summaries.iter().all(|s| s.tail.is_none()));
}

#[test]
fn a_hedge_runs_in_virtual_mode_only() {
    let sc = common::shipped("tail");
    let e = engine::check(&sc, Mode::Real).unwrap_err();
    assert!(
        e.contains("\"hedge after 50ms\"") && e.contains("virtual mode only"),
        "{e}"
    );
    assert!(engine::check(&sc, Mode::Virtual).is_ok());
    // The tail alone runs in real mode.
    let unhedged = Scenario {
        strategies: sc.strategies[..1].to_vec(),
        ..sc
    };
    assert!(engine::check(&unhedged, Mode::Real).is_ok());
}

/// In real mode (threads, and over HTTP) a call takes at least what its
/// draw says: the slow calls are the virtual run's (asserts no upper
/// bound: the machine may be loaded).
#[test]
fn real_mode_calls_take_their_drawn_latency() {
    engine::use_lab_binary(env!("CARGO_BIN_EXE_fusebox-lab"));
    for transport in ["", "transport = \"http\""] {
        let text = format!(
            r#"
name = "tail-real"
duration = "200ms"
rate = 50.0
workers = 4
[downstream]
latency = "2ms"
{transport}
[[downstream.tail]]
share = 0.5
latency = "60ms"
[[strategy]]
name = "none"
kind = "none"
"#
        );
        let sc = Scenario::parse("tail-real.toml", &text).unwrap();
        let run = engine::run(&sc, &sc.strategies[0], Mode::Real, None).unwrap();
        assert_eq!(run.calls.len(), 10);
        let mut slow = 0;
        for c in &run.calls {
            let drawn = sc.plan(c.request, 1, 0, c.start).duration;
            assert!(
                c.end - c.start >= drawn,
                "{transport}: {c:?} drew {drawn:?}"
            );
            slow += usize::from(drawn == ms(60));
        }
        assert!((1..10).contains(&slow), "{transport}: {slow} slow of 10");
    }
}

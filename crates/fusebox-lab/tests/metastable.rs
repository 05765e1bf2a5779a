//! `scenarios/metastable.toml` in virtual time: a server of 8 workers
//! (about 100 calls a second) at 70 % load loses half of them from 30 s to
//! 50 s (a `capacity` fault, the trigger); its client gives up on a call
//! after 500 ms and retries at once, up to 3 times, and the server works
//! on every call it took, answered in time or not.
//!
//! Prints each strategy's goodput before, during and after the trigger,
//! its calls to the server, its retries and when it recovered (run with
//! `--nocapture` to see them), and asserts what holds:
//!
//! - naive retries stay degraded: after the trigger every request makes
//!   its 4 calls and every call times out, 280 calls a second against a
//!   server that serves about 100, and the goodput stays below half of
//!   what it was before (here 0) to the end of the run, 70 s;
//! - without retries the same trigger is no metastable failure: the
//!   server's backlog (the calls it took during the trigger, most of them
//!   given up on) drains 10 s after the trigger ends;
//! - a retry budget (10 % of the requests, 1 a second), the throttle, the
//!   adaptive limit (Vegas) and a breaker each get back within 10 % of
//!   their goodput before the trigger, the budget 21 s after it ends (it
//!   still retries into the backlog: slower than no retries at all), the
//!   throttle 13 s, the breaker 2 s; the adaptive limit never loses it:
//!   it keeps the server's queue short through the trigger and serves
//!   what the 4 workers can, about 50 a second, at the price of some
//!   2 % of the requests refused in healthy times.

mod common;

use fusebox_lab::engine::{self, Mode, Outcome, RunResult};
use fusebox_lab::scenario::{CallResult, Scenario};
use std::time::Duration;

/// The phases, in seconds: before the trigger (after 10 s of warm-up),
/// the trigger, and after it to the end of the run.
const BEFORE: (u64, u64) = (10, 30);
const DURING: (u64, u64) = (30, 50);
const AFTER: (u64, u64) = (50, 120);

/// One strategy's figures.
#[derive(Debug, Clone)]
struct Figures {
    /// Requests answered, a second, by arrival, in each phase.
    before: f64,
    during: f64,
    after: f64,
    /// Calls to the server a second, started in each phase.
    calls: [f64; 3],
    /// Retries (calls after a request's first) started in each phase.
    retries: [usize; 3],
    /// Retries in the whole run.
    retries_all: usize,
    /// The share of the calls started after the trigger that timed out:
    /// the server served them for nobody.
    timed_out_after: f64,
    /// Requests the strategy refused without a call.
    fast_fails: usize,
    /// Seconds from the end of the trigger to the first second after which
    /// every 5 s hold at least 90 % of the goodput before it (None: never).
    recovery: Option<u64>,
    /// Goodput in each 5 s of the run.
    per_5s: Vec<usize>,
}

fn figures(sc: &Scenario, run: &RunResult) -> Figures {
    let secs = sc.duration.as_secs() as usize;
    let mut per_second = vec![0usize; secs];
    for r in run.requests.iter().filter(|r| r.outcome == Outcome::Ok) {
        per_second[r.arrival.as_secs() as usize] += 1;
    }
    let mean = |(a, b): (u64, u64)| {
        per_second[a as usize..b as usize].iter().sum::<usize>() as f64 / (b - a) as f64
    };
    let before = mean(BEFORE);
    let window = |w: usize| per_second[w..w + 5].iter().sum::<usize>() as f64 / 5.0;
    let recovery = (DURING.1 as usize..=secs - 5)
        .find(|&s| (s..=secs - 5).all(|w| window(w) >= 0.9 * before))
        .map(|s| s as u64 - DURING.1);
    // A request's first call is its first in start order; the others are retries.
    let mut seen = vec![false; run.requests.len()];
    let mut retries = [0; 3];
    let mut calls = [0usize; 3];
    let (mut after, mut timed_out) = (0usize, 0usize);
    let phase = |start: Duration| {
        [BEFORE, DURING, AFTER]
            .iter()
            .position(|&(a, b)| start >= Duration::from_secs(a) && start < Duration::from_secs(b))
    };
    let mut retries_all = 0;
    for c in &run.calls {
        let retry = std::mem::replace(&mut seen[c.request], true);
        retries_all += usize::from(retry);
        if let Some(p) = phase(c.start) {
            calls[p] += 1;
            retries[p] += usize::from(retry);
            if p == 2 {
                after += 1;
                timed_out += usize::from(c.result == CallResult::Timeout);
            }
        }
    }
    let rate = |n: usize, (a, b): (u64, u64)| n as f64 / (b - a) as f64;
    Figures {
        before,
        during: mean(DURING),
        after: mean(AFTER),
        calls: [
            rate(calls[0], BEFORE),
            rate(calls[1], DURING),
            rate(calls[2], AFTER),
        ],
        retries,
        retries_all,
        timed_out_after: timed_out as f64 / after.max(1) as f64,
        fast_fails: run
            .requests
            .iter()
            .filter(|r| r.outcome == Outcome::FastFail)
            .count(),
        recovery,
        per_5s: per_second.chunks(5).map(|c| c.iter().sum()).collect(),
    }
}

/// Every strategy's figures, printed as they come.
fn run_all(sc: &Scenario) -> Vec<(String, Figures)> {
    println!(
        "strategy              goodput/s: before  during   after  recovered s   calls/s: before  \
         during   after  retries: during   after   in all  timed out after  fast-fails"
    );
    let all: Vec<(String, Figures)> = sc
        .strategies
        .iter()
        .map(|spec| {
            let run = engine::run(sc, spec, Mode::Virtual, None).unwrap();
            let f = figures(sc, &run);
            println!(
                "{:<22}{:>17.1}{:>8.1}{:>8.1}{:>13}{:>17.1}{:>8.1}{:>8.1}{:>17}{:>8}{:>9}{:>16.0}%{:>12}",
                spec.name,
                f.before,
                f.during,
                f.after,
                f.recovery.map_or("never".into(), |s| s.to_string()),
                f.calls[0],
                f.calls[1],
                f.calls[2],
                f.retries[1],
                f.retries[2],
                f.retries_all,
                100.0 * f.timed_out_after,
                f.fast_fails,
            );
            (spec.name.clone(), f)
        })
        .collect();
    println!("goodput in each 5 s (the trigger: the 7th to the 10th):");
    for (name, f) in &all {
        println!("{name:<22}{:?}", f.per_5s);
    }
    all
}

fn get<'a>(all: &'a [(String, Figures)], name: &str) -> &'a Figures {
    &all.iter().find(|(n, _)| n == name).expect(name).1
}

/// The server's calls a second at most: its workers over the mean of its
/// service times.
fn capacity(sc: &Scenario) -> f64 {
    let server = sc.downstream.server.expect("the scenario has a server");
    let n = 100_000;
    let mean = (0..n).map(|k| server.service(k).as_secs_f64()).sum::<f64>() / n as f64;
    server.workers as f64 / mean
}

#[test]
fn naive_retries_stay_degraded_and_the_limits_recover() {
    let sc = common::shipped("metastable");
    let capacity = capacity(&sc);
    println!("the server serves {capacity:.1} calls a second at most, half during the trigger");
    let all = run_all(&sc);

    // Healthy before the trigger: every request answered (the adaptive
    // limit refuses a few).
    for (name, f) in &all {
        let floor = if name == "limit vegas" { 0.95 } else { 0.999 };
        assert!(f.before >= floor * sc.rate, "{name}: {f:?}");
    }

    // Naive retries: degraded to the end of the run, sustained by retries
    // into a server busy with calls nobody waits for.
    let naive = get(&all, "naive retries");
    assert!(naive.after < 0.5 * naive.before, "{naive:?}");
    assert_eq!(naive.recovery, None, "{naive:?}");
    assert!(naive.calls[2] > 2.5 * capacity, "{naive:?}");
    assert!(naive.calls[2] >= 0.99 * 4.0 * sc.rate, "{naive:?}");
    assert!(naive.timed_out_after > 0.99, "{naive:?}");
    // The last 20 s as the first 20 s after the trigger.
    assert!(naive.per_5s[20..].iter().all(|&g| g == 0), "{naive:?}");

    // The same trigger without retries is over once the backlog drains.
    let none = get(&all, "no retries");
    assert!(none.recovery.is_some_and(|s| s <= 15), "{none:?}");
    assert_eq!(none.retries, [0, 0, 0]);

    // The budget: retries bounded by 10 % of the requests and 1 a second
    // (its floor: 10 in any 10 s), so the server's backlog drains, more
    // slowly than without retries.
    let budget = get(&all, "retry budget 10%");
    let requests = sc.request_count() as f64;
    assert!(
        (budget.retries_all as f64) <= 0.1 * requests + sc.duration.as_secs_f64(),
        "{budget:?}"
    );
    assert!(budget.recovery.is_some_and(|s| s <= 30), "{budget:?}");
    assert!(budget.recovery > none.recovery, "{budget:?}");

    let throttle = get(&all, "throttle K=2");
    assert!(throttle.recovery.is_some_and(|s| s <= 20), "{throttle:?}");
    let breaker = get(&all, "breaker");
    assert!(breaker.recovery.is_some_and(|s| s <= 5), "{breaker:?}");

    // The adaptive limit keeps the queue short: through the trigger it
    // serves about what 4 workers can, and loses nothing after it.
    let vegas = get(&all, "limit vegas");
    assert_eq!(vegas.recovery, Some(0), "{vegas:?}");
    assert!(vegas.during >= 0.9 * capacity / 2.0, "{vegas:?}");

    // Each recovering strategy: within 10 % of its goodput before, from
    // its recovery to the end of the run.
    for name in [
        "no retries",
        "retry budget 10%",
        "throttle K=2",
        "limit vegas",
        "breaker",
    ] {
        let f = get(&all, name);
        let from = (AFTER.0 + f.recovery.unwrap()).div_ceil(5) as usize;
        let tail = &f.per_5s[from..];
        let mean = tail.iter().sum::<usize>() as f64 / (5 * tail.len()) as f64;
        assert!(mean >= 0.9 * f.before, "{name}: {mean} vs {f:?}");
    }
}

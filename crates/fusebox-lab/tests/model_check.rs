//! Checks of the virtual mode: the article's published numbers, and agreement
//! with an independent model of the same rules on generated scenarios.

#![allow(missing_docs)]

use fusebox_lab::engine::{self, Mode, Outcome, RequestRecord, RunResult, TransitionRecord};
use fusebox_lab::guard::{self, Admission, Breakers, LabClock, Ticket};
use fusebox_lab::report::{article, Summary};
use fusebox_lab::scenario::fusebox::BreakerConfig;
use fusebox_lab::scenario::{
    CallResult, Client, Downstream, Fault, FaultOutcome, Fleet, Scenario, SeedConfig, Sharing,
    StrategyKind, StrategySpec,
};
mod common;

use common::shipped;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The virtual-time run of `spec`.
fn sim(sc: &Scenario, spec: &StrategySpec) -> RunResult {
    engine::run(sc, spec, Mode::Virtual, None).unwrap()
}

fn summary(sc: &Scenario, kind: &str) -> Summary {
    let spec = sc
        .strategies
        .iter()
        .find(|s| s.kind.as_str() == kind)
        .unwrap_or_else(|| panic!("{} has a {kind} strategy", sc.name));
    Summary::of(sc, &sim(sc, spec))
}

fn windows(s: &Summary) -> Vec<(usize, usize, usize)> {
    s.windows
        .iter()
        .map(|w| (w.ok, w.fail, w.fast_fail))
        .collect()
}

#[test]
fn seed000_50rps_seed_breaker_matches_the_article_exactly() {
    let sc = &Scenario::embedded()[0];
    let s = summary(sc, "seed");
    assert_eq!(
        (
            s.downstream_calls,
            s.successes,
            s.downstream_errors,
            s.fast_fails
        ),
        (86, 73, 13, 64)
    );
    let log: Vec<(u128, &str, &str)> = s
        .transitions
        .iter()
        .map(|t| (t.at.as_micros(), t.from, t.to))
        .collect();
    let want = [
        (730_000, "closed", "open"),
        (1_380_000, "open", "half_open"),
        (1_530_000, "half_open", "open"),
        (2_040_000, "open", "half_open"),
        (2_045_000, "half_open", "closed"),
    ];
    assert_eq!(log.len(), want.len(), "{log:?}");
    for (got, want) in log.iter().zip(want) {
        assert!(got.0.abs_diff(want.0) <= 1_000, "{got:?} vs {want:?}");
        assert_eq!((got.1, got.2), (want.1, want.2));
    }
    let a = article::published("seed000-50rps", "seed").unwrap();
    assert_eq!(windows(&s), a.windows);
    // The article's headline: recovery seen 0.54 s after the downstream recovered.
    assert_eq!(s.recovery_lag, Some(ms(540)));
}

#[test]
fn seed000_50rps_without_breaker_matches_the_article() {
    let sc = &Scenario::embedded()[0];
    let s = summary(sc, "none");
    let a = article::published("seed000-50rps", "none").unwrap();
    assert_eq!(
        (
            s.downstream_calls,
            s.successes,
            s.downstream_errors,
            s.fast_fails
        ),
        (
            a.downstream_calls,
            a.successes,
            a.downstream_errors,
            a.fast_fails
        )
    );
    assert_eq!(windows(&s), a.windows);
    assert!(s.transitions.is_empty());
}

#[test]
fn seed000_100rps_is_within_three_calls_of_the_article() {
    let sc = &Scenario::embedded()[1];
    for kind in ["none", "seed"] {
        let s = summary(sc, kind);
        let a = article::published("seed000-100rps", kind).unwrap();
        let got = [
            s.downstream_calls,
            s.successes,
            s.downstream_errors,
            s.fast_fails,
        ];
        let want = [
            a.downstream_calls,
            a.successes,
            a.downstream_errors,
            a.fast_fails,
        ];
        for (g, w) in got.iter().zip(want) {
            assert!(g.abs_diff(w) <= 3, "{kind}: {got:?} vs article {want:?}");
        }
        let (_, article_after) = a.backlog.unwrap();
        assert!(
            s.backlog
                .unwrap()
                .finished_after_fault
                .abs_diff(article_after)
                <= 3
        );
    }
    // Without a breaker the pool saturates: exact figures of the model.
    let s = summary(sc, "none");
    assert_eq!(
        (s.downstream_calls, s.successes, s.downstream_errors),
        (300, 244, 56)
    );
    assert_eq!(s.backlog.unwrap().finished_after_fault, 52);
    assert!(s.latency_fault.unwrap().median_ms > 300.0);
}

#[test]
fn virtual_mode_is_deterministic() {
    let sc = &Scenario::embedded()[1];
    for spec in &sc.strategies {
        let a = sim(sc, spec);
        let b = sim(sc, spec);
        assert_eq!(a.requests, b.requests);
        assert_eq!(a.transitions, b.transitions);
    }
}

/// The independent model: a per-request loop, valid for scenarios without
/// retries. Requests are taken FIFO by identical workers, so request `i`
/// starts at `max(arrival, earliest free worker)` and starts never go
/// backwards; every verdict with an end time at or before that start is
/// handed to the guard first (completions before starts; equal end times in
/// the order the calls started). A bounded queue rejects an arrival when the
/// requests still waiting after the idle workers took theirs would exceed it.
fn per_request_model(
    sc: &Scenario,
    spec: &StrategySpec,
) -> (Vec<RequestRecord>, Vec<TransitionRecord>) {
    assert_eq!(sc.client.retries, 0, "the per-request model has no retries");
    let clock = fusebox::ManualClock::new();
    let lab_clock = LabClock::Virtual(clock.clone());
    let guard = guard::build(spec, &lab_clock, &Breakers::for_run(&lab_clock), "model");
    let n = sc.request_count() as usize;
    let mut free = vec![Duration::ZERO; sc.workers];
    // (end, start order) -> (ticket, result); tickets kept aside by index.
    let mut pending: BinaryHeap<Reverse<(Duration, u64, usize)>> = BinaryHeap::new();
    let mut tickets: Vec<Option<(Box<dyn Ticket>, CallResult)>> = Vec::new();
    let mut out: Vec<RequestRecord> = Vec::with_capacity(n);
    let mut seq = 0;
    let settle = |upto: Option<Duration>,
                  pending: &mut BinaryHeap<Reverse<(Duration, u64, usize)>>,
                  tickets: &mut Vec<Option<(Box<dyn Ticket>, CallResult)>>| {
        while let Some(Reverse((end, _, k))) = pending.peek().copied() {
            if upto.is_some_and(|u| end > u) {
                break;
            }
            pending.pop();
            let (ticket, result) = tickets[k].take().expect("each verdict once");
            clock.set(end);
            ticket.finish(end, result);
        }
    };
    for i in 0..n {
        let t = Duration::from_nanos(sc.arrival_ns(i as u64));
        if sc.queue > 0 {
            let admitted = out.iter().filter(|r| r.outcome != Outcome::Rejected);
            let queued = admitted
                .clone()
                .filter(|r| r.start.is_some_and(|s| s >= t))
                .count();
            let busy = admitted
                .filter(|r| r.start.is_some_and(|s| s < t) && r.end > t && r.attempts > 0)
                .count();
            let idle = sc.workers - busy;
            if queued.saturating_sub(idle) >= sc.queue {
                out.push(RequestRecord {
                    arrival: t,
                    start: None,
                    end: t,
                    outcome: Outcome::Rejected,
                    attempts: 0,
                });
                continue;
            }
        }
        let (k, _) = free
            .iter()
            .enumerate()
            .min_by_key(|(_, f)| **f)
            .expect("workers >= 1");
        let start = t.max(free[k]);
        settle(Some(start), &mut pending, &mut tickets);
        clock.set(start);
        match guard.admit(start) {
            Admission::FastFail => {
                free[k] = start;
                out.push(RequestRecord {
                    arrival: t,
                    start: Some(start),
                    end: start,
                    outcome: Outcome::FastFail,
                    attempts: 0,
                });
            }
            Admission::Call(ticket) => {
                let plan = sc.downstream.plan(start, sc.client.timeout);
                let end = start + plan.duration;
                free[k] = end;
                seq += 1;
                tickets.push(Some((ticket, plan.result)));
                pending.push(Reverse((end, seq, tickets.len() - 1)));
                out.push(RequestRecord {
                    arrival: t,
                    start: Some(start),
                    end,
                    outcome: Outcome::of(plan.result),
                    attempts: 1,
                });
            }
        }
    }
    settle(None, &mut pending, &mut tickets);
    (out, guard.transitions())
}

/// A small deterministic generator (64-bit LCG; the high bits are good enough here).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.next(xs.len() as u64) as usize]
    }
}

fn fusebox_config(g: &mut Lcg) -> BreakerConfig {
    let mut c = BreakerConfig::default();
    match g.next(3) {
        0 => c.consecutive_failures = Some(1 + g.next(8) as u32),
        1 => {
            let window_calls = 2 + g.next(20) as usize;
            let min = 1 + g.next(window_calls as u64) as u32;
            c.failure_rate = Some(g.pick(&[0.2, 0.5, 0.8]));
            c.count_window = Some(window_calls);
            c.min_calls = Some(min);
        }
        _ => {
            c.failure_rate = Some(g.pick(&[0.2, 0.5, 0.8]));
            c.time_window = Some(ms(100 * (1 + g.next(10))));
            c.min_calls = Some(1 + g.next(5) as u32);
        }
    }
    c.open_for = Some(ms(50 + g.next(750)));
    c.half_open_probes = Some(1 + g.next(3) as u32);
    c.successes_to_close = Some(1 + g.next(3) as u32);
    c
}

/// Scenarios on a 1 ms grid with a fault or two, some hanging behind a client
/// timeout, some with a bounded queue; a `none`, a `seed` and a `fusebox` strategy each.
fn generated(seed: u64, count: usize) -> Vec<Scenario> {
    let mut g = Lcg(seed);
    (0..count)
        .map(|k| {
            let rate = g.pick(&[10.0, 20.0, 25.0, 40.0, 50.0, 80.0, 100.0, 125.0, 200.0]);
            let hang = g.next(3) == 0;
            let timeout = (hang || g.next(2) == 0).then(|| ms(50 + g.next(300)));
            let mut faults = Vec::new();
            let mut at = 100 + g.next(400);
            for _ in 0..1 + g.next(2) {
                let len = 100 + g.next(900);
                faults.push(Fault {
                    from: ms(at),
                    until: ms(at + len),
                    latency: ms(20 + g.next(280)),
                    outcome: if hang {
                        FaultOutcome::Hang
                    } else {
                        FaultOutcome::Error
                    },
                    replicas: None,
                });
                at += len + 100 + g.next(600);
            }
            let strategies = vec![
                StrategySpec {
                    name: "none".into(),
                    kind: StrategyKind::None,
                },
                StrategySpec {
                    name: "seed".into(),
                    kind: StrategyKind::Seed(SeedConfig {
                        failures: 1 + g.next(8) as u32,
                        open_for: ms(50 + g.next(750)),
                    }),
                },
                StrategySpec {
                    name: "fusebox".into(),
                    kind: StrategyKind::Fusebox(fusebox_config(&mut g)),
                },
            ];
            Scenario {
                name: format!("generated-{seed}-{k}"),
                duration: ms(1000 + g.next(3000)),
                rate,
                workers: 1 + g.next(12) as usize,
                queue: if g.next(3) == 0 {
                    1 + g.next(20) as usize
                } else {
                    0
                },
                window: ms(500),
                downstream: Downstream {
                    latency: ms(1 + g.next(20)),
                    faults,
                    transport: Default::default(),
                },
                client: Client {
                    timeout,
                    retries: 0,
                },
                strategies,
                fleet: None,
            }
        })
        .collect()
}

/// The simulation's requests are the model's, one by one.
fn assert_same_requests(
    sc: &Scenario,
    spec: &StrategySpec,
    sim: &RunResult,
    model: &[RequestRecord],
) {
    assert_eq!(
        sim.requests.len(),
        model.len(),
        "{} / {}",
        sc.name,
        spec.name
    );
    for (i, (a, b)) in sim.requests.iter().zip(model).enumerate() {
        assert_eq!(a, b, "{} / {}: request {i}", sc.name, spec.name);
    }
}

#[test]
fn event_simulation_matches_the_per_request_model() {
    let mut scenarios = Scenario::embedded();
    for name in ["rate-vs-consecutive", "probes-1-vs-3", "hang-timeout"] {
        scenarios.push(shipped(name));
    }
    scenarios.extend(generated(7, 40));
    let mut compared = 0;
    for sc in &scenarios {
        for spec in &sc.strategies {
            let sim = sim(sc, spec);
            let (requests, transitions) = per_request_model(sc, spec);
            assert_same_requests(sc, spec, &sim, &requests);
            assert_eq!(sim.transitions, transitions, "{} / {}", sc.name, spec.name);
            compared += 1;
        }
    }
    assert!(compared >= 120);
}

#[test]
fn generated_scenarios_exercise_every_rule() {
    // The comparison above is only worth something if the generated runs hit
    // the interesting cases.
    let mut seen = std::collections::HashSet::new();
    for sc in generated(7, 40) {
        for spec in &sc.strategies {
            let r = sim(&sc, spec);
            for q in &r.requests {
                seen.insert(q.outcome.as_str());
                if q.start.is_some_and(|s| s > q.arrival) {
                    seen.insert("queued");
                }
            }
            if r.transitions
                .iter()
                .any(|t| t.from == "half_open" && t.to == "open")
            {
                seen.insert("failed probe");
            }
            if r.transitions.iter().any(|t| t.to == "closed") {
                seen.insert("closed again");
            }
        }
    }
    for want in [
        "ok",
        "error",
        "timeout",
        "fast_fail",
        "rejected",
        "queued",
        "failed probe",
        "closed again",
    ] {
        assert!(
            seen.contains(want),
            "no generated run shows {want}: {seen:?}"
        );
    }
}

#[test]
fn fusebox_ignores_stale_failures_and_probes_earlier() {
    let sc = &Scenario::embedded()[0];
    let s = summary(sc, "fusebox");
    let log: Vec<(Duration, &str)> = s.transitions.iter().map(|t| (t.at, t.to)).collect();
    // Trips with the 5th failure like the article's breaker, but the seven
    // failures of calls admitted before the trip do not move its open period:
    // the first probe comes at 0.73 + 0.5 s (the next arrival, 1.24 s).
    assert_eq!(
        log,
        vec![
            (ms(730), "open"),
            (ms(1240), "half_open"),
            (ms(1390), "open"),
            (ms(1900), "half_open"),
            (ms(1905), "closed"),
        ]
    );
    let seed = summary(sc, "seed");
    assert!(s.successes > seed.successes);
    assert_eq!(s.downstream_errors, seed.downstream_errors);
}

#[test]
fn retries_multiply_load_unless_a_breaker_fast_fails_them() {
    let sc = shipped("retries");
    assert_eq!(sc.client.retries, 2);
    let none = sim(&sc, &sc.strategies[0]);
    let seed = sim(&sc, &sc.strategies[1]);
    for r in [&none, &seed] {
        let attempts: u32 = r.requests.iter().map(|q| q.attempts).sum();
        assert_eq!(attempts as usize, r.calls.len());
        assert!(r.requests.iter().all(|q| q.attempts <= 3));
    }
    let without_retries = summary(&Scenario::embedded()[0], "none");
    let (none, seed) = (Summary::of(&sc, &none), Summary::of(&sc, &seed));
    assert!(
        none.failed_calls > without_retries.failed_calls,
        "retries hit the failing downstream more"
    );
    assert!(
        none.latency_fault.unwrap().median_ms > without_retries.latency_fault.unwrap().median_ms,
        "retries hold workers longer: the pool saturates"
    );
    assert!(seed.failed_calls < none.failed_calls / 2);
}

#[test]
fn a_hanging_downstream_exhausts_the_pool_and_the_breaker_drains_it() {
    let sc = shipped("hang-timeout");
    let none = summary(&sc, "none");
    let fusebox = summary(&sc, "fusebox");
    assert!(none.timeouts > 0 && none.timeouts == none.downstream_errors);
    // Without a breaker requests queue behind hanging calls.
    assert!(none.latency_fault.unwrap().median_ms >= 1000.0);
    assert!(fusebox.latency_fault.unwrap().median_ms < none.latency_fault.unwrap().median_ms);
    assert!(
        fusebox.backlog.unwrap().finished_after_fault < none.backlog.unwrap().finished_after_fault
    );
}

#[test]
fn a_rate_breaker_trips_on_a_flapping_downstream_the_consecutive_one_misses() {
    let sc = shipped("rate-vs-consecutive");
    let first_open = |name: &str| {
        let spec = sc.strategies.iter().find(|s| s.name == name).unwrap();
        sim(&sc, spec).transitions.first().map(|t| t.at)
    };
    let flapping_ends = ms(1500);
    assert!(first_open("consecutive").unwrap() > flapping_ends);
    assert!(first_open("rate/20 calls").unwrap() < flapping_ends);
}

/// The independent model of a fleet, per request, for generated fleets
/// where every request starts at its arrival (workers to spare: no queue,
/// no retries). Replica `i % n` takes request `i`. Its own rules, written
/// from `fusebox::fleet`'s documentation: a replica's breaker opening is a
/// trip; the trip opens the fleet if the replicas that tripped within the
/// fleet's window (10 s) are at least `quorum`, or if it is a failed probe of
/// the replica probing for the fleet; an opened fleet holds every other
/// replica open from `propagation` after the trip to `open_for` after it,
/// and then rejecting until the prober's close arrives (`propagation` after
/// it). Holding a replica holds its breaker open (`Guard::hold`), the close
/// closes it (`Guard::release`). The tripping replica probes for the fleet
/// and is held no more.
/// Events at one time: verdicts (in call start order), then arrivals of
/// trips and closes, then requests.
///
/// Not modelled, here or in the lab: the fleet's window for rate policies,
/// probe leases (hand-over, expiry), lost messages caught up by a sync.
fn fleet_model(
    sc: &Scenario,
    spec: &StrategySpec,
) -> (Vec<RequestRecord>, Vec<Vec<TransitionRecord>>) {
    let fleet = sc.fleet.as_ref().expect("a fleet scenario");
    let n = fleet.replicas;
    let open_for = match &spec.kind {
        StrategyKind::Seed(c) => Some(c.open_for),
        StrategyKind::Fusebox(c) => c.open_for,
        _ => None,
    };
    let clock = fusebox::ManualClock::new();
    let lab_clock = LabClock::Virtual(clock.clone());
    let breakers = Breakers::for_run(&lab_clock);
    let guards: Vec<_> = (0..n)
        .map(|r| guard::build(spec, &lab_clock, &breakers, &format!("m{r}")))
        .collect();
    // Per replica: held open until (Some), or waiting for the prober (None).
    let mut hold: Vec<Option<Option<Duration>>> = vec![None; n];
    let mut seen = vec![0usize; n];
    let mut tripped_at: Vec<Option<Duration>> = vec![None; n];
    let mut prober: Option<usize> = None;
    // (time, order sent, from, Some(until) = trip / None = close)
    let mut messages: Vec<(Duration, usize, usize, Option<Duration>)> = Vec::new();
    let mut sent = 0;
    let mut pending: BinaryHeap<Reverse<(Duration, u64, usize)>> = BinaryHeap::new();
    // A call in flight: its ticket, its result, its replica.
    type InFlight = (Box<dyn Ticket>, CallResult, usize);
    let mut tickets: Vec<Option<InFlight>> = Vec::new();
    let mut busy: Vec<Vec<Duration>> = vec![Vec::new(); n];
    let mut out = Vec::new();
    let count = sc.request_count() as usize;
    let mut seq = 0u64;
    for i in 0..=count {
        let t = (i < count).then(|| Duration::from_nanos(sc.arrival_ns(i as u64)));
        // Verdicts and messages up to t, in time order (verdicts first at a tie).
        loop {
            let verdict = pending.peek().map(|Reverse((end, _, _))| *end);
            let message = messages.iter().map(|m| m.0).min();
            let take_verdict = match (verdict, message) {
                (Some(v), Some(m)) => v <= m,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let at = if take_verdict { verdict } else { message }.unwrap();
            if t.is_some_and(|t| at > t) {
                break;
            }
            if take_verdict {
                let Reverse((end, _, k)) = pending.pop().unwrap();
                let (ticket, result, r) = tickets[k].take().unwrap();
                clock.set(end);
                ticket.finish(end, result);
                let all = guards[r].transitions();
                for tr in all[seen[r]..].iter().copied() {
                    if tr.to == "open" {
                        let fleet_probe = tr.from == "half_open" && prober == Some(r);
                        let opens = fleet_probe || {
                            tripped_at[r] = Some(tr.at);
                            tripped_at
                                .iter()
                                .flatten()
                                .filter(|&&x| tr.at - x < Duration::from_secs(10))
                                .count()
                                >= fleet.quorum
                        };
                        if let (true, Some(o)) = (opens, open_for) {
                            prober = Some(r);
                            if hold[r].take().is_some() {
                                guards[r].release(tr.at);
                            }
                            sent += 1;
                            messages.push((tr.at + fleet.propagation, sent, r, Some(tr.at + o)));
                        }
                    } else if tr.from == "half_open" && tr.to == "closed" && prober == Some(r) {
                        prober = None;
                        sent += 1;
                        messages.push((tr.at + fleet.propagation, sent, r, None));
                    }
                }
                seen[r] = all.len();
            } else {
                let first = messages
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, m)| (m.0, m.1))
                    .unwrap()
                    .0;
                let (_, _, from, what) = messages.remove(first);
                clock.set(at);
                for r in 0..n {
                    if r == from {
                        continue;
                    }
                    match what {
                        Some(until) if prober != Some(r) => {
                            if hold[r].is_none() {
                                guards[r].hold(at);
                            }
                            hold[r] = Some(Some(until));
                        }
                        Some(_) => {}
                        None => {
                            if hold[r].take().is_some() {
                                guards[r].release(at);
                            }
                        }
                    }
                }
            }
        }
        let Some(t) = t else { break };
        let r = i % n;
        busy[r].retain(|&e| e > t);
        assert!(
            busy[r].len() < sc.workers,
            "the fleet model needs a free worker"
        );
        clock.set(t);
        let held = match hold[r] {
            None => false,
            Some(Some(until)) if t < until => true,
            Some(_) => {
                hold[r] = Some(None);
                true
            }
        };
        if held {
            out.push(RequestRecord {
                arrival: t,
                start: Some(t),
                end: t,
                outcome: Outcome::FastFail,
                attempts: 0,
            });
            continue;
        }
        match guards[r].admit(t) {
            Admission::FastFail => out.push(RequestRecord {
                arrival: t,
                start: Some(t),
                end: t,
                outcome: Outcome::FastFail,
                attempts: 0,
            }),
            Admission::Call(ticket) => {
                let plan = sc.downstream.plan_on(r, t, sc.client.timeout);
                seq += 1;
                tickets.push(Some((ticket, plan.result, r)));
                pending.push(Reverse((t + plan.duration, seq, tickets.len() - 1)));
                busy[r].push(t + plan.duration);
                out.push(RequestRecord {
                    arrival: t,
                    start: Some(t),
                    end: t + plan.duration,
                    outcome: Outcome::of(plan.result),
                    attempts: 1,
                });
            }
        }
    }
    (out, guards.iter().map(|g| g.transitions()).collect())
}

/// Fleets of 2 to 6 replicas with workers to spare, sharing trips, faults on
/// all replicas or on some, quorum 1 to the number of replicas.
fn generated_fleets(seed: u64, count: usize) -> Vec<Scenario> {
    let mut g = Lcg(seed);
    (0..count)
        .map(|k| {
            let replicas = 2 + g.next(5) as usize;
            let mut sc = generated(seed * 1000 + k as u64, 1).remove(0);
            sc.name = format!("fleet-{seed}-{k}");
            sc.queue = 0;
            sc.workers = 64;
            sc.client = Client::default();
            sc.rate = replicas as f64 * g.pick(&[5.0, 10.0, 20.0, 40.0]);
            for f in &mut sc.downstream.faults {
                f.outcome = FaultOutcome::Error;
                if g.next(2) == 0 {
                    let mut some: Vec<usize> = (1..=replicas).filter(|_| g.next(2) == 0).collect();
                    if some.is_empty() {
                        some.push(1 + g.next(replicas as u64) as usize);
                    }
                    f.replicas = Some(some);
                }
            }
            // Room for recovery after the last fault.
            sc.duration = sc.fault_span().unwrap().1 + ms(1000 + g.next(1000));
            sc.fleet = Some(Fleet {
                replicas,
                sharing: Sharing::Fleet,
                quorum: if g.next(2) == 0 {
                    1
                } else {
                    1 + g.next(replicas as u64) as usize
                },
                sync_every: ms(500),
                propagation: ms(g.next(20)),
                redis: None,
            });
            sc.strategies.retain(|s| s.kind.as_str() != "none");
            sc.check().unwrap_or_else(|p| panic!("{}: {p:?}", sc.name));
            sc
        })
        .collect()
}

#[test]
fn fleet_simulation_matches_the_fleet_model() {
    let mut compared = 0;
    let (mut held, mut quorum_held_back) = (0, 0);
    for sc in generated_fleets(11, 60) {
        for spec in &sc.strategies {
            let sim = sim(&sc, spec);
            let (requests, transitions) = fleet_model(&sc, spec);
            assert_same_requests(&sc, spec, &sim, &requests);
            let fleet = sim.fleet.as_ref().expect("a fleet run");
            assert_eq!(
                fleet.transitions, transitions,
                "{} / {}",
                sc.name, spec.name
            );
            held += fleet.held.iter().filter(|h| !h.is_empty()).count();
            let tripped = transitions
                .iter()
                .filter(|t| t.iter().any(|x| x.to == "open"))
                .count();
            let q = sc.fleet.as_ref().unwrap().quorum;
            if q > 1 && tripped > 0 && tripped < q {
                quorum_held_back += 1;
            }
            compared += 1;
        }
    }
    assert!(compared >= 100, "{compared}");
    // Worth something only if trips travelled, and some were held back by a quorum.
    assert!(held > 50, "replicas held by a travelling trip: {held}");
    assert!(
        quorum_held_back > 3,
        "runs where the quorum kept trips local: {quorum_held_back}"
    );
}

#[test]
fn a_real_mode_fleet_shares_fusebox_breakers_through_redis_only() {
    let mut sc = Scenario::embedded()[0].clone();
    sc.fleet = Some(Fleet {
        replicas: 2,
        sharing: Sharing::Fleet,
        quorum: 1,
        sync_every: ms(500),
        propagation: ms(0),
        redis: None,
    });
    assert!(engine::check(&sc, Mode::Virtual).is_ok());
    // The article's breaker cannot be shared through fusebox::fleet.
    let e = engine::check(&sc, Mode::Real).unwrap_err();
    assert!(e.contains("kind = \"seed\" cannot be shared"), "{e}");
    sc.strategies.retain(|s| s.kind.as_str() != "seed");
    let e = engine::check(&sc, Mode::Real).unwrap_err();
    assert!(e.contains("redis = \"local\""), "{e}");
    assert_eq!(
        engine::run(&sc, &sc.strategies[0], Mode::Real, None).unwrap_err(),
        e
    );
    sc.fleet.as_mut().unwrap().redis = Some(fusebox_lab::scenario::Redis::Local);
    assert!(engine::check(&sc, Mode::Real).is_ok());
    // Without sharing, every strategy runs (no Redis needed).
    sc = Scenario::embedded()[0].clone();
    sc.fleet = Some(Fleet {
        replicas: 2,
        sharing: Sharing::None,
        quorum: 1,
        sync_every: ms(500),
        propagation: ms(0),
        redis: None,
    });
    assert!(engine::check(&sc, Mode::Real).is_ok());
}

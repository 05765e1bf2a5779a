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
    let fleets = [
        "fleet20-shared",
        "fleet20-window-shared",
        "fleet20-path-quorum1",
    ];
    let scenarios = [Scenario::embedded().remove(1)]
        .into_iter()
        .chain(fleets.map(shipped));
    for sc in scenarios {
        for spec in &sc.strategies {
            let a = sim(&sc, spec);
            let b = sim(&sc, spec);
            assert_eq!(a.requests, b.requests);
            assert_eq!(a.transitions, b.transitions);
            assert_eq!(a.fleet, b.fleet);
        }
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
    let guard = guard::build(
        spec,
        &lab_clock,
        &Breakers::for_run(&lab_clock),
        "model",
        None,
    );
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
                    latency_dist: None,
                });
                at += len + 100 + g.next(600);
            }
            let strategies = vec![
                StrategySpec {
                    name: "none".into(),
                    kind: StrategyKind::None,
                    max_concurrent: None,
                    rate_limit: None,
                    limit: None,
                    throttle: None,
                    hosts: None,
                    hedge: None,
                    timeout: None,
                    retry_budget: None,
                },
                StrategySpec {
                    name: "seed".into(),
                    kind: StrategyKind::Seed(SeedConfig {
                        failures: 1 + g.next(8) as u32,
                        open_for: ms(50 + g.next(750)),
                    }),
                    max_concurrent: None,
                    rate_limit: None,
                    limit: None,
                    throttle: None,
                    hosts: None,
                    hedge: None,
                    timeout: None,
                    retry_budget: None,
                },
                StrategySpec {
                    name: "fusebox".into(),
                    kind: StrategyKind::Fusebox(Box::new(fusebox_config(&mut g))),
                    max_concurrent: None,
                    rate_limit: None,
                    limit: None,
                    throttle: None,
                    hosts: None,
                    hedge: None,
                    timeout: None,
                    retry_budget: None,
                },
            ];
            Scenario {
                name: format!("generated-{seed}-{k}"),
                duration: ms(1000 + g.next(3000)),
                rate,
                rate_until: None,
                workers: 1 + g.next(12) as usize,
                queue: if g.next(3) == 0 {
                    1 + g.next(20) as usize
                } else {
                    0
                },
                window: ms(500),
                downstream: Downstream {
                    latency: ms(1 + g.next(20)),
                    latency_dist: None,
                    faults,
                    transport: Default::default(),
                    server: None,
                    tail: Vec::new(),
                },
                client: Client {
                    timeout,
                    retries: 0,
                },
                request: Default::default(),
                strategies,
                fleet: None,
                hosts: 1,
                seed: fusebox_lab::scenario::DEFAULT_SEED,
                arrivals: fusebox_lab::scenario::Arrivals::Fixed,
                fault_jitter: Vec::new(),
                outages: Vec::new(),
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
/// from `fusebox::fleet`'s documentation and scripts, with Redis's keys as
/// fields of [`Redis`]:
///
/// - a replica's breaker opening is a trip: it counts toward the quorum
///   (distinct replicas within 10 s) unless it is a failed probe of a
///   replica that knows the fleet open, or the fleet window's; a trip that
///   makes it sets the fleet's open key (`open_for`, unless a longer one is
///   set), drops the probe lease and is published;
/// - a published trip opens every other replica `propagation` later for
///   `open_for` (a breaker open on its own longer stays as it is; a shorter
///   one is held open to the later end); the fleet
///   holds its breaker (`Guard::hold`) and, after the open period, acts as
///   half-open on it: probes only with the lease, up to `half_open_probes`,
///   closing after `successes_to_close`, reopening (a trip) on a failure;
/// - any replica's half-open -> closed clears the open key, the lease, the
///   quorum's trips and the window, and is published: it closes every
///   other replica's breaker (`Guard::release`) `propagation` later;
/// - a half-open replica without the lease rejects; the first call that
///   finds it half-open is rejected and then syncs at once; the lease is
///   given if nobody holds it and the open key is gone or expires within
///   `sync_every`;
/// - every `sync_every` (while requests are still to come or calls are in
///   flight) each replica in turn, without stepping into half-open: adds its
///   closed-state verdicts since its last sync to the window (buckets of a
///   tenth of the span); if calls found it open or half-open since its last
///   sync, notes the time; if it holds the lease, gives it back when it is
///   neither open nor half-open, or has no probe in flight and noted no
///   such calls for 3 x `sync_every`; else asks for it if such calls came
///   and it is half-open or its open period ends within `sync_every`;
///   catches up an open key it has not applied, or, knowing the fleet
///   open, finds no open key (a close it has not heard yet) and closes as
///   that close would; and trips
///   on the window's totals (rate policies, once `quorum` replicas reported
///   failures) if its breaker is closed;
/// - a replica that learnt when the fleet's open period ends (from its own
///   trip that opened the fleet, or a trip it heard or caught up; the later
///   end if several) makes that same sync, alone, at that time, unless a
///   close came first (one sync if the periodic one falls then too).
///
/// Events at one time: verdicts (in call start order), then trips and
/// closes arriving, then syncs, then the request.
struct FleetModel<'a> {
    fleet: &'a Fleet,
    open_for: Duration,
    probes: u32,
    successes: u32,
    rate: Option<RateRule>,
    guards: Vec<std::sync::Arc<dyn guard::Guard>>,
    reps: Vec<ModelReplica>,
    redis: Redis,
    /// (arrives at, order sent, from, Some(remaining) = trip / None = close)
    messages: Vec<(Duration, u64, usize, Option<Duration>)>,
    sent: u64,
    half_open_ids: u64,
    /// What the generated runs went through (for the coverage check).
    leases_to_non_trippers: usize,
    leases_given_back: usize,
    /// Leases taken before the open period ended.
    leases_ahead: usize,
    window_trips: usize,
    last_tripper: Option<usize>,
}

/// A rate policy's rule for the fleet's window.
#[derive(Clone, Copy)]
struct RateRule {
    span_ms: u64,
    bucket_ms: u64,
    min_calls: u64,
    failure_rate: Option<f64>,
    slow: Option<(Duration, f64)>,
}

#[derive(Default)]
struct Redis {
    open_until: Option<Duration>,
    lease: Option<(usize, Duration)>,
    trips: Vec<(usize, Duration)>,
    /// (bucket, calls, failures, slow)
    window: Vec<(u64, u64, u64, u64)>,
    /// (replica, last bucket it reported failures in)
    failing: Vec<(usize, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ByFleet {
    No,
    Open(Duration),
    HalfOpen { in_flight: u32, ok: u32, id: u64 },
}

struct ModelReplica {
    by_fleet: ByFleet,
    knows_open: bool,
    /// Its breaker is open on its own (its trip stayed below the quorum):
    /// it probes on its own, takes no lease, and no fleet close closes it.
    alone: bool,
    asked: bool,
    /// Calls found the breaker open or half-open since the replica's last
    /// sync; and the last sync that saw such calls.
    wanted: bool,
    wanted_at: Option<Duration>,
    /// When the fleet's open period ends, as the replica learnt it: it
    /// syncs then.
    sync_at_end: Option<Duration>,
    /// (calls, failures, slow) counted, and as last sent.
    counted: (u64, u64, u64),
    sent: (u64, u64, u64),
    sent_at: Duration,
    seen: usize,
    log: Vec<TransitionRecord>,
    held: usize,
}

/// How a call in flight was let through.
#[derive(Clone, Copy)]
enum Through {
    Breaker { counted: bool },
    FleetProbe(u64),
}

impl<'a> FleetModel<'a> {
    fn new(sc: &'a Scenario, spec: &StrategySpec, clock: &LabClock) -> Self {
        let fleet = sc.fleet.as_ref().expect("a fleet scenario");
        let breakers = Breakers::for_run(clock);
        let (open_for, probes, successes, rate) = match &spec.kind {
            StrategyKind::Seed(c) => (c.open_for, 1, 1, None),
            StrategyKind::Fusebox(c) => {
                let full = c.resolved().unwrap();
                let rate =
                    (full.failure_rate.is_some() || full.slow_call_rate.is_some()).then(|| {
                        let span_ms = full
                            .time_window
                            .unwrap_or(Duration::from_secs(10))
                            .as_millis() as u64;
                        RateRule {
                            span_ms,
                            bucket_ms: std::cmp::max(span_ms / 10, 1),
                            min_calls: u64::from(full.min_calls.unwrap()),
                            failure_rate: full.failure_rate,
                            slow: full.slow_call_duration.zip(full.slow_call_rate),
                        }
                    });
                (
                    full.open_for.unwrap(),
                    full.half_open_probes.unwrap(),
                    full.successes_to_close.unwrap(),
                    rate,
                )
            }
            _ => unreachable!("generated fleets have seed and fusebox strategies"),
        };
        FleetModel {
            fleet,
            open_for,
            probes,
            successes,
            rate,
            guards: (0..fleet.replicas)
                .map(|r| guard::build(spec, clock, &breakers, &format!("m{r}"), None))
                .collect(),
            reps: (0..fleet.replicas)
                .map(|_| ModelReplica {
                    by_fleet: ByFleet::No,
                    knows_open: false,
                    alone: false,
                    asked: false,
                    wanted: false,
                    wanted_at: None,
                    sync_at_end: None,
                    counted: (0, 0, 0),
                    sent: (0, 0, 0),
                    sent_at: Duration::ZERO,
                    seen: 0,
                    log: Vec::new(),
                    held: 0,
                })
                .collect(),
            redis: Redis::default(),
            messages: Vec::new(),
            sent: 0,
            half_open_ids: 0,
            leases_to_non_trippers: 0,
            leases_given_back: 0,
            leases_ahead: 0,
            window_trips: 0,
            last_tripper: None,
        }
    }

    fn note(&mut self, r: usize, at: Duration, from: &'static str, to: &'static str, remote: bool) {
        self.reps[r].log.push(TransitionRecord {
            at,
            from,
            to,
            remote,
        });
    }

    /// The state replica `r` is in at `t`; its fleet open period ends into
    /// half-open here.
    fn state(&mut self, r: usize, t: Duration) -> &'static str {
        match self.reps[r].by_fleet {
            ByFleet::Open(until) if t < until => "open",
            ByFleet::Open(_) => {
                self.half_open_ids += 1;
                self.reps[r].by_fleet = ByFleet::HalfOpen {
                    in_flight: 0,
                    ok: 0,
                    id: self.half_open_ids,
                };
                self.note(r, t, "open", "half_open", false);
                "half_open"
            }
            ByFleet::HalfOpen { .. } => "half_open",
            ByFleet::No => {
                let s = self.guards[r].state(t);
                self.own(r);
                s
            }
        }
    }

    /// The breaker's own new transitions of replica `r`.
    fn own(&mut self, r: usize) {
        let all = self.guards[r].transitions();
        for tr in all[self.reps[r].seen..].iter().copied() {
            self.reps[r].log.push(tr);
            if tr.to == "open" {
                self.reps[r].asked = false;
                let bypass = tr.from == "half_open" && self.reps[r].knows_open;
                self.trip(r, tr.at, bypass);
            } else if tr.from == "half_open" && tr.to == "closed" {
                if std::mem::replace(&mut self.reps[r].alone, false) {
                    continue; // its own probe: the fleet's breaker was never open
                }
                self.close(r, tr.at);
            }
        }
        self.reps[r].seen = all.len();
    }

    /// The lab's hold or release of replica `r`'s breaker (not its own transitions).
    fn lab(&mut self, r: usize, t: Duration, hold: bool) {
        self.own(r);
        if hold {
            self.guards[r].hold(t);
        } else {
            self.guards[r].release(t);
        }
        self.reps[r].seen = self.guards[r].transitions().len();
    }

    fn trip(&mut self, r: usize, at: Duration, bypass: bool) {
        if !bypass && self.fleet.quorum > 1 {
            self.redis
                .trips
                .retain(|&(n, x)| n != r && at - x < Duration::from_secs(10));
            self.redis.trips.push((r, at));
            if self.redis.trips.len() < self.fleet.quorum {
                if !self.reps[r].knows_open {
                    self.reps[r].alone = true;
                }
                return;
            }
        }
        self.reps[r].knows_open = true;
        self.reps[r].alone = false;
        self.learn_end(r, at + self.open_for);
        let longer = self
            .redis
            .open_until
            .is_some_and(|u| u > at && u - at >= self.open_for);
        if !longer {
            self.redis.open_until = Some(at + self.open_for);
            self.redis.lease = None;
            self.last_tripper = Some(r);
            self.sent += 1;
            self.messages.push((
                at + self.fleet.propagation,
                self.sent,
                r,
                Some(self.open_for),
            ));
        }
    }

    /// Replica `r` learnt the fleet's open period ends at `end` (the later
    /// of what it knew and this).
    fn learn_end(&mut self, r: usize, end: Duration) {
        let e = self.reps[r].sync_at_end.unwrap_or(end);
        self.reps[r].sync_at_end = Some(if end > e { end } else { e });
    }

    fn close(&mut self, r: usize, at: Duration) {
        self.reps[r].sync_at_end = None;
        self.redis = Redis::default();
        self.reps[r].knows_open = false;
        self.sent += 1;
        self.messages
            .push((at + self.fleet.propagation, self.sent, r, None));
    }

    fn opened_by_fleet(&mut self, r: usize, at: Duration, remaining: Duration) {
        self.learn_end(r, at + remaining);
        self.reps[r].knows_open = true;
        self.reps[r].alone = false;
        self.reps[r].asked = false;
        match self.reps[r].by_fleet {
            ByFleet::Open(u) => self.reps[r].by_fleet = ByFleet::Open(u.max(at + remaining)),
            ByFleet::HalfOpen { .. } => {
                self.reps[r].by_fleet = ByFleet::Open(at + remaining);
                self.note(r, at, "half_open", "open", true);
            }
            ByFleet::No => {
                let s = self.guards[r].state(at);
                self.own(r);
                let until = at + remaining;
                // Open on its own: only a later end changes it (no transition).
                let own_end = (s == "open").then(|| self.guards[r].open_until(at));
                if own_end.is_some_and(|end| end.is_none_or(|end| end >= until)) {
                    return;
                }
                self.lab(r, at, true);
                self.reps[r].by_fleet = ByFleet::Open(until);
                self.reps[r].held += 1;
                if s != "open" {
                    self.note(r, at, s, "open", true);
                }
            }
        }
    }

    fn closed_by_fleet(&mut self, r: usize, at: Duration) {
        self.reps[r].sync_at_end = None;
        self.reps[r].knows_open = false;
        self.reps[r].asked = false;
        let from = match self.reps[r].by_fleet {
            ByFleet::Open(_) => "open",
            ByFleet::HalfOpen { .. } => "half_open",
            ByFleet::No => {
                let s = self.guards[r].state(at);
                self.own(r);
                if s != "open" && s != "half_open" || self.reps[r].alone {
                    return;
                }
                s
            }
        };
        self.lab(r, at, false);
        self.reps[r].by_fleet = ByFleet::No;
        self.note(r, at, from, "closed", true);
    }

    /// Replica `r`'s state at `t` as a sync reads it (no step into
    /// half-open), with the time left of its open period.
    fn read_state(&self, r: usize, t: Duration) -> (&'static str, Duration) {
        match self.reps[r].by_fleet {
            ByFleet::Open(until) => ("open", until.saturating_sub(t)),
            ByFleet::HalfOpen { .. } => ("half_open", Duration::ZERO),
            ByFleet::No => {
                let all = self.guards[r].transitions();
                match all.last() {
                    None => ("closed", Duration::ZERO),
                    Some(tr) if tr.to != "open" => (tr.to, Duration::ZERO),
                    Some(tr) => ("open", (tr.at + self.open_for).saturating_sub(t)),
                }
            }
        }
    }

    /// The sync script's acquire: nobody holds the lease and the open key
    /// is gone or expires within `sync_every`.
    fn take_lease(&mut self, r: usize, t: Duration) {
        let soon = self
            .redis
            .open_until
            .is_none_or(|u| u.saturating_sub(t) <= self.fleet.sync_every);
        if self.redis.lease.is_none() && soon {
            self.redis.lease = Some((r, t));
            if self.redis.open_until.is_some_and(|u| u > t) {
                self.leases_ahead += 1;
            }
            if self.last_tripper != Some(r) {
                self.leases_to_non_trippers += 1;
            }
        }
    }

    fn sync(&mut self, r: usize, t: Duration) {
        let (state, left) = self.read_state(r, t);
        let mut judged = None;
        if let Some(RateRule {
            span_ms: span,
            bucket_ms: bucket,
            ..
        }) = self.rate
        {
            let rep = &mut self.reps[r];
            if t - rep.sent_at > Duration::from_millis(span) {
                rep.sent = rep.counted;
            }
            let d = (
                rep.counted.0 - rep.sent.0,
                rep.counted.1 - rep.sent.1,
                rep.counted.2 - rep.sent.2,
            );
            rep.sent = rep.counted;
            rep.sent_at = t;
            let b = t.as_millis() as u64 / bucket;
            if d.0 > 0 {
                match self.redis.window.iter_mut().find(|w| w.0 == b) {
                    Some(w) => {
                        w.1 += d.0;
                        w.2 += d.1;
                        w.3 += d.2;
                    }
                    None => self.redis.window.push((b, d.0, d.1, d.2)),
                }
                if d.1 + d.2 > 0 {
                    self.redis.failing.retain(|f| f.0 != r);
                    self.redis.failing.push((r, b));
                }
            }
            let oldest = (b + 1).saturating_sub(span.div_ceil(bucket));
            self.redis.window.retain(|w| w.0 >= oldest);
            self.redis.failing.retain(|f| f.1 >= oldest);
            let sum = self
                .redis
                .window
                .iter()
                .fold((0, 0, 0), |a, w| (a.0 + w.1, a.1 + w.2, a.2 + w.3));
            judged = Some((sum, self.redis.failing.len()));
        }
        let wanted = std::mem::replace(&mut self.reps[r].wanted, false);
        if wanted {
            self.reps[r].wanted_at = Some(t);
        }
        let open_or_half = state == "open" || state == "half_open";
        match self.redis.lease {
            Some((h, _)) if h == r => {
                let in_flight = match self.reps[r].by_fleet {
                    ByFleet::HalfOpen { in_flight, .. } => in_flight,
                    _ => self.guards[r].probes_in_flight(),
                };
                // The lease's life: 3 x sync_every (the default probe_lease).
                let quiet = match self.reps[r].wanted_at {
                    Some(at) => t - at >= self.fleet.sync_every * 3,
                    None => true,
                };
                if self.reps[r].alone || !open_or_half || (in_flight == 0 && quiet) {
                    self.redis.lease = None;
                    self.leases_given_back += 1;
                }
            }
            None if wanted
                && !self.reps[r].alone
                && (state == "half_open" || (state == "open" && left <= self.fleet.sync_every)) =>
            {
                self.take_lease(r, t)
            }
            _ => {}
        }
        if let Some(u) = self.redis.open_until.filter(|&u| u > t) {
            self.opened_by_fleet(r, t, u - t);
        } else if self.redis.open_until.is_none() && self.reps[r].knows_open {
            // No trip in the store (a close not heard yet): closed.
            self.closed_by_fleet(r, t);
        }
        let Some(((calls, failures, slow), failing)) = judged else {
            return;
        };
        let rule = self.rate.unwrap();
        let over = |part: u64, limit: f64| part as f64 / calls as f64 >= limit;
        let trips = calls >= rule.min_calls
            && (rule.failure_rate.is_some_and(|l| over(failures, l))
                || rule.slow.is_some_and(|(_, l)| over(slow, l)));
        if trips
            && self.fleet.quorum <= failing.max(1)
            && self.reps[r].by_fleet == ByFleet::No
            && self.read_state(r, t).0 == "closed"
        {
            self.window_trips += 1;
            self.lab(r, t, true);
            self.reps[r].by_fleet = ByFleet::Open(t + self.open_for);
            self.note(r, t, "closed", "open", false);
            self.trip(r, t, true);
        }
    }

    /// A fleet probe of replica `r` ended at `t`.
    fn fleet_probe_end(&mut self, r: usize, t: Duration, id: u64, ok: bool) {
        let ByFleet::HalfOpen {
            in_flight,
            ok: oks,
            id: now_id,
        } = self.reps[r].by_fleet
        else {
            return;
        };
        if now_id != id {
            return;
        }
        if !ok {
            self.reps[r].by_fleet = ByFleet::Open(t + self.open_for);
            self.note(r, t, "half_open", "open", false);
            let bypass = self.reps[r].knows_open;
            self.trip(r, t, bypass);
        } else if oks + 1 >= self.successes {
            self.lab(r, t, false);
            self.reps[r].by_fleet = ByFleet::No;
            self.note(r, t, "half_open", "closed", false);
            self.close(r, t);
        } else {
            self.reps[r].by_fleet = ByFleet::HalfOpen {
                in_flight: in_flight - 1,
                ok: oks + 1,
                id,
            };
        }
    }
}

fn fleet_model(
    sc: &Scenario,
    spec: &StrategySpec,
) -> (Vec<RequestRecord>, Vec<Vec<TransitionRecord>>, [usize; 4]) {
    let clock = fusebox::ManualClock::new();
    let lab_clock = LabClock::Virtual(clock.clone());
    let mut m = FleetModel::new(sc, spec, &lab_clock);
    let n = m.reps.len();
    let sync_every = m.fleet.sync_every;
    let mut next_sync = sync_every;
    // A call in flight: its ticket (none for a fleet probe), result, replica, start, how.
    type InFlight = (
        Option<Box<dyn Ticket>>,
        CallResult,
        usize,
        Duration,
        Through,
    );
    let mut calls: Vec<Option<InFlight>> = Vec::new();
    let mut ends: BinaryHeap<Reverse<(Duration, usize)>> = BinaryHeap::new();
    let mut last_end = Duration::ZERO;
    let mut out = Vec::new();
    let count = sc.request_count() as usize;
    let arrival = |i: usize| Duration::from_nanos(sc.arrival_ns(i as u64));
    for i in 0..=count {
        let t = (i < count).then(|| arrival(i));
        loop {
            let verdict = ends.peek().map(|Reverse((e, _))| *e);
            let message = m.messages.iter().map(|x| x.0).min();
            // A sync runs while requests are to come or calls are in flight;
            // so does a replica's sync at the end of an open period.
            let running = |x: Duration| t.is_some() || last_end >= x;
            let sync = running(next_sync).then_some(next_sync);
            let end_sync = m
                .reps
                .iter()
                .filter_map(|x| x.sync_at_end)
                .min()
                .filter(|&x| running(x));
            let Some(at) = [verdict, message, sync, end_sync]
                .into_iter()
                .flatten()
                .min()
            else {
                break;
            };
            if t.is_some_and(|t| at > t) {
                break;
            }
            clock.set(at);
            if verdict == Some(at) {
                let Reverse((end, k)) = ends.pop().unwrap();
                let (ticket, result, r, start, how) = calls[k].take().unwrap();
                if let Some(ticket) = ticket {
                    ticket.finish(end, result);
                }
                match how {
                    Through::Breaker { counted: true } => {
                        let slow = m
                            .rate
                            .and_then(|r| r.slow)
                            .is_some_and(|(d, _)| end - start >= d);
                        let c = &mut m.reps[r].counted;
                        c.0 += 1;
                        c.1 += u64::from(!result.is_ok());
                        c.2 += u64::from(slow);
                    }
                    Through::Breaker { counted: false } => {}
                    Through::FleetProbe(id) => m.fleet_probe_end(r, end, id, result.is_ok()),
                }
                m.own(r);
            } else if message == Some(at) {
                let k = (0..m.messages.len())
                    .min_by_key(|&k| (m.messages[k].0, m.messages[k].1))
                    .unwrap();
                let (_, _, from, what) = m.messages.remove(k);
                for r in (0..n).filter(|&r| r != from) {
                    match what {
                        Some(remaining) => m.opened_by_fleet(r, at, remaining),
                        None => m.closed_by_fleet(r, at),
                    }
                }
            } else {
                let periodic = sync == Some(at);
                if periodic {
                    next_sync += sync_every;
                }
                for r in 0..n {
                    let ends = m.reps[r].sync_at_end.is_some_and(|x| x <= at);
                    if ends {
                        m.reps[r].sync_at_end = None;
                    }
                    if periodic || ends {
                        m.sync(r, at);
                    }
                }
            }
        }
        let Some(t) = t else { break };
        let r = i % n;
        clock.set(t);
        let state = m.state(r, t);
        m.reps[r].wanted |= state == "open" || state == "half_open";
        let lease = m.redis.lease.is_some_and(|(h, _)| h == r);
        let how = match m.reps[r].by_fleet {
            ByFleet::Open(_) => None,
            ByFleet::HalfOpen { in_flight, ok, id } if lease && in_flight < m.probes => {
                m.reps[r].by_fleet = ByFleet::HalfOpen {
                    in_flight: in_flight + 1,
                    ok,
                    id,
                };
                Some(Through::FleetProbe(id))
            }
            ByFleet::HalfOpen { .. } => None,
            ByFleet::No if state == "half_open" && !lease && !m.reps[r].alone => None,
            ByFleet::No => Some(Through::Breaker {
                counted: m.rate.is_some() && state == "closed",
            }),
        };
        let ticket = match how {
            None => None,
            Some(Through::FleetProbe(_)) => Some(None),
            Some(Through::Breaker { .. }) => match m.guards[r].admit(t) {
                Admission::Call(ticket) => Some(Some(ticket)),
                Admission::FastFail => None,
            },
        };
        if state == "half_open" && !m.reps[r].asked && !m.reps[r].alone {
            m.reps[r].asked = true;
            m.sync(r, t);
        }
        m.reps[r].asked &= state == "half_open";
        m.own(r);
        match ticket {
            None => out.push(RequestRecord {
                arrival: t,
                start: Some(t),
                end: t,
                outcome: Outcome::FastFail,
                attempts: 0,
            }),
            Some(ticket) => {
                let plan = sc.downstream.plan_on(r, t, sc.client.timeout);
                let end = t + plan.duration;
                last_end = last_end.max(end);
                calls.push(Some((ticket, plan.result, r, t, how.unwrap())));
                ends.push(Reverse((end, calls.len() - 1)));
                out.push(RequestRecord {
                    arrival: t,
                    start: Some(t),
                    end,
                    outcome: Outcome::of(plan.result),
                    attempts: 1,
                });
            }
        }
    }
    for r in 0..n {
        m.own(r);
    }
    let seen = [
        m.leases_to_non_trippers,
        m.leases_given_back,
        m.leases_ahead,
        m.window_trips,
    ];
    (out, m.reps.into_iter().map(|r| r.log).collect(), seen)
}

/// Fleets of 2 to 6 replicas with workers to spare, sharing trips, faults on
/// all replicas or on some, quorum 1 to the number of replicas, syncs every
/// 20 ms to 0.5 s.
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
                sync_every: ms(g.pick(&[20, 50, 100, 250, 500])),
                propagation: ms(g.next(20)),
                redis: None,
            });
            sc.strategies.retain(|s| s.kind.as_str() != "none");
            // One fleet in three: a rate breaker one replica alone rarely
            // trips (more calls needed than it sees in its window), so the
            // fleet's window decides.
            if g.next(3) == 0 {
                for s in &mut sc.strategies {
                    if let StrategyKind::Fusebox(c) = &mut s.kind {
                        c.consecutive_failures = None;
                        c.count_window = None;
                        c.failure_rate = Some(g.pick(&[0.2, 0.5, 0.8]));
                        let window = ms(200 * (1 + g.next(5)));
                        c.time_window = Some(window);
                        let per_replica = sc.rate / replicas as f64 * window.as_secs_f64();
                        c.min_calls = Some((per_replica * 1.5).ceil() as u32 + 1);
                    }
                }
            }
            sc.check().unwrap_or_else(|p| panic!("{}: {p:?}", sc.name));
            sc
        })
        .collect()
}

/// A log without a lazy Open -> HalfOpen step taken at the instant the
/// fleet reopens or closes the breaker: `open -> half_open` then, at the
/// same instant, `half_open -> open` (remote) is dropped, and
/// `half_open -> closed` (remote) becomes `open -> closed`. The model reads
/// a replica's state the way a call does (`Guard::state`, which takes the
/// step) when a fleet trip or close reaches it, where the library does not;
/// and the library's breaker takes the step on a call that the model's
/// fleet rejects without asking it, then reopens at the sync that call
/// asks for. The requests, the figures, are the same either way.
fn without_fleet_steps(log: &[TransitionRecord]) -> Vec<TransitionRecord> {
    let mut out: Vec<TransitionRecord> = Vec::new();
    for t in log {
        match out.last() {
            Some(p)
                if t.remote
                    && t.from == "half_open"
                    && p.at == t.at
                    && (p.from, p.to, p.remote) == ("open", "half_open", false) =>
            {
                let p = out.pop().expect("matched");
                if t.to != "open" {
                    out.push(TransitionRecord { from: p.from, ..*t });
                }
            }
            _ => out.push(*t),
        }
    }
    out
}

#[test]
fn fleet_simulation_matches_the_fleet_model() {
    let mut compared = 0;
    let (mut held, mut quorum_held_back) = (0, 0);
    let mut seen = [0; 4];
    for sc in generated_fleets(11, 80) {
        // A virtual fleet shares fusebox breakers only (it drives the
        // library's fleet protocol, which acts through the library
        // breaker's fleet hooks); the article's breaker runs alone.
        for spec in sc
            .strategies
            .iter()
            .filter(|s| s.kind.as_str() == "fusebox")
        {
            let sim = sim(&sc, spec);
            let (requests, transitions, what) = fleet_model(&sc, spec);
            assert_same_requests(&sc, spec, &sim, &requests);
            let fleet = sim.fleet.as_ref().expect("a fleet run");
            for (r, (a, b)) in fleet.transitions.iter().zip(&transitions).enumerate() {
                assert_eq!(
                    without_fleet_steps(a),
                    without_fleet_steps(b),
                    "{} / {}: replica {}",
                    sc.name,
                    spec.name,
                    r + 1
                );
            }
            held += fleet.held.iter().filter(|h| !h.is_empty()).count();
            let tripped = transitions
                .iter()
                .filter(|t| t.iter().any(|x| x.to == "open"))
                .count();
            let q = sc.fleet.as_ref().unwrap().quorum;
            if q > 1 && tripped > 0 && tripped < q {
                quorum_held_back += 1;
            }
            for (s, w) in seen.iter_mut().zip(what) {
                *s += w;
            }
            compared += 1;
        }
    }
    assert!(compared >= 75, "{compared}");
    // Worth something only if trips travelled, some were held back by a
    // quorum, leases went to replicas that did not trip, were taken before
    // the open period ended and given back at a sync, and the fleet's window
    // tripped replicas.
    assert!(held > 50, "replicas held by a travelling trip: {held}");
    assert!(
        quorum_held_back > 3,
        "runs where the quorum kept trips local: {quorum_held_back}"
    );
    let [non_trippers, given_back, ahead, window_trips] = seen;
    println!("leases to non-trippers {non_trippers}, given back {given_back}, taken ahead {ahead}, window trips {window_trips}, held {held}, quorum {quorum_held_back}");
    assert!(non_trippers > 20, "leases to non-trippers: {non_trippers}");
    assert!(given_back > 20, "leases given back at a sync: {given_back}");
    assert!(
        ahead > 20,
        "leases taken before the open period ended: {ahead}"
    );
    assert!(
        window_trips > 5,
        "trips of the fleet's window: {window_trips}"
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

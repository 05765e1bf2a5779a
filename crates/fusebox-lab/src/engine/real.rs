//! Real mode: real OS threads, real sleeps, real (monotonic) time.
//!
//! The calling thread is the load generator: request `i` is scheduled at
//! `origin + i / rate` on the monotonic clock and released by sleeping until
//! that instant (absolute deadlines, so lateness never accumulates). `workers`
//! threads take requests FIFO from one queue, consult the guard when they start
//! a request (as in the article), and sleep for the downstream's latency
//! (again to an absolute deadline: call start + latency). Latency is measured
//! from the scheduled arrival, so time a request spent waiting for a late load
//! generator counts against the run, not for it.

use super::fleet::RealFleet;
use super::http::HttpDownstream;
use super::rules::{end_attempt, queue_admits, start_attempt};
use super::{CallRecord, FleetRun, RequestRecord, RunResult, TransitionRecord};
use crate::guard::{self, Breakers, Guard, LabClock};
use crate::scenario::{FaultOutcome, Scenario, StrategyKind, StrategySpec, Transport};
use crate::sync::lock;
use fusebox::Clock;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Time given to the worker threads to start before the first arrival.
const LEAD: Duration = Duration::from_millis(30);
/// Time given to a shared fleet's Redis and nodes to start, connect and
/// share first: this, and [`FLEET_LEAD_PER_REPLICA`] for each replica (200
/// nodes take about 70 ms here).
const FLEET_LEAD: Duration = Duration::from_millis(500);
const FLEET_LEAD_PER_REPLICA: Duration = Duration::from_millis(5);

struct Queue {
    waiting: VecDeque<usize>,
    /// Workers blocked waiting for a request.
    idle: usize,
    /// No more arrivals.
    closed: bool,
}

/// One replica: its breaker and its queue (one, the article's, without `[fleet]`).
struct Replica {
    guard: Arc<dyn Guard>,
    queue: Mutex<Queue>,
    ready: Condvar,
}

struct Shared<'a> {
    scenario: &'a Scenario,
    replicas: Vec<Replica>,
    clock: &'a LabClock,
    origin: Instant,
    requests: Mutex<Vec<RequestRecord>>,
    /// `transport = "http"`: the server and the client.
    http: Option<&'a HttpDownstream>,
}

fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        thread::sleep(deadline - now);
    }
}

/// Runs one strategy of `scenario` with real threads and sleeps; a fusebox
/// breaker goes in `shared` if given, else in a registry of the run's own.
///
/// A fleet's replicas each get `workers` threads, a queue and a breaker
/// (`name/replica-N` in the registry, where `--serve` exports it); with
/// `sharing = "fleet"` their breakers (each named `name` itself) share
/// through `fusebox::fleet` ([`RealFleet`]).
pub(super) fn run(
    scenario: &Scenario,
    spec: &StrategySpec,
    shared: Option<&Breakers>,
    name: &str,
) -> Result<RunResult, String> {
    // The server process starts before the run's clock does.
    let http = match scenario.downstream.transport {
        Transport::Call => None,
        Transport::Http(config) => Some(
            HttpDownstream::start(scenario, config)
                .map_err(|e| format!("scenario {:?}: {e}", scenario.name))?,
        ),
    };
    let count = scenario.replicas();
    // Only a library breaker is shared (`check` let through only fusebox
    // strategies, or none, in a shared real-mode fleet).
    let sharing = scenario.shares_trips() && matches!(spec.kind, StrategyKind::Fusebox(_));
    let lead = if sharing {
        FLEET_LEAD + FLEET_LEAD_PER_REPLICA * count as u32
    } else {
        LEAD
    };
    let origin = Instant::now() + lead;
    let clock = LabClock::Real { origin };
    // One registry (`shared`, where `--serve` exports it, or the run's own);
    // a fleet's replicas are `NAME/replica-N` in it, and a shared fleet's
    // breakers are all named `NAME` themselves: the fleet shares by name.
    let breakers = shared.cloned().unwrap_or_else(|| Breakers::for_run(&clock));
    let guards: Vec<Arc<dyn Guard>> = (0..count)
        .map(|r| match scenario.fleet {
            None => guard::build(spec, &clock, &breakers, name, None),
            Some(_) => {
                let replica = format!("{name}/replica-{}", r + 1);
                guard::build(spec, &clock, &breakers, &replica, sharing.then_some(name))
            }
        })
        .collect();
    // Nodes connect and share before the run's clock starts.
    let _fleet = if sharing {
        let breakers: Vec<_> = guards.iter().filter_map(|g| g.breaker()).collect();
        Some(RealFleet::start(scenario, &breakers)?)
    } else {
        None
    };
    if Instant::now() + Duration::from_millis(10) > origin {
        return Err(format!(
            "scenario {:?}: setting up the run (Redis, the fleet's nodes) took more than {} ms",
            scenario.name,
            lead.as_millis()
        ));
    }
    run_threads(scenario, spec, guards, &clock, http.as_ref())
}

fn run_threads(
    scenario: &Scenario,
    spec: &StrategySpec,
    guards: Vec<Arc<dyn Guard>>,
    clock: &LabClock,
    http: Option<&HttpDownstream>,
) -> Result<RunResult, String> {
    let LabClock::Real { origin } = *clock else {
        return Err("real mode runs on real time".into());
    };
    let n = scenario.request_count() as usize;
    let arrival = |i: usize| Duration::from_nanos(scenario.arrival_ns(i as u64));
    let shared = Shared {
        scenario,
        replicas: guards
            .into_iter()
            .map(|guard| Replica {
                guard,
                queue: Mutex::new(Queue {
                    waiting: VecDeque::new(),
                    idle: 0,
                    closed: false,
                }),
                ready: Condvar::new(),
            })
            .collect(),
        clock,
        origin,
        requests: Mutex::new((0..n).map(|i| RequestRecord::arrived(arrival(i))).collect()),
        http,
    };

    let mut calls: Vec<CallRecord> = thread::scope(|s| {
        let shared = &shared;
        let handles: Vec<_> = (0..shared.replicas.len())
            .flat_map(|r| (0..scenario.workers).map(move |_| r))
            .map(|r| s.spawn(move || worker(shared, r)))
            .collect();
        // Over HTTP, a `no_accept` fault really stops the server accepting.
        if let Some(http) = shared.http {
            s.spawn(move || {
                for f in &scenario.downstream.faults {
                    if f.outcome == FaultOutcome::NoAccept {
                        sleep_until(origin + f.from);
                        http.accept(false);
                        sleep_until(origin + f.until);
                        http.accept(true);
                    }
                }
            });
        }
        // Over HTTP, a `down` fault really stops the server process.
        if let Some(http) = shared.http {
            s.spawn(move || {
                for f in &scenario.downstream.faults {
                    if f.outcome == FaultOutcome::Down {
                        sleep_until(origin + f.from);
                        http.stop();
                        sleep_until(origin + f.until);
                        if let Err(e) = http.restart() {
                            eprintln!("scenario {}: {e}", scenario.name);
                        }
                    }
                }
            });
        }
        for i in 0..n {
            sleep_until(origin + arrival(i));
            let rep = &shared.replicas[scenario.replica_of(i)];
            let mut q = lock(&rep.queue);
            if queue_admits(scenario, q.waiting.len(), q.idle) {
                q.waiting.push_back(i);
                drop(q);
                rep.ready.notify_one();
            }
        }
        for rep in &shared.replicas {
            lock(&rep.queue).closed = true;
            rep.ready.notify_all();
        }
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker threads do not panic"))
            .collect()
    });
    calls.sort_by_key(|c| c.start);
    let per_replica: Vec<Vec<TransitionRecord>> = shared
        .replicas
        .iter()
        .map(|r| r.guard.transitions())
        .collect();
    Ok(RunResult {
        strategy: spec.name.clone(),
        kind: spec.kind.as_str(),
        requests: shared
            .requests
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
        calls,
        transitions: per_replica[0].clone(),
        fleet: scenario
            .fleet
            .is_some()
            .then(|| FleetRun::from_transitions(per_replica)),
        limits: shared.replicas[0].guard.limit_trace(),
        hosts: shared.replicas[0].guard.hosts(),
    })
}

fn worker(sh: &Shared<'_>, replica: usize) -> Vec<CallRecord> {
    let rep = &sh.replicas[replica];
    let mut calls = Vec::new();
    loop {
        let request = {
            let mut q = lock(&rep.queue);
            loop {
                if let Some(r) = q.waiting.pop_front() {
                    break r;
                }
                if q.closed {
                    return calls;
                }
                q.idle += 1;
                q = rep.ready.wait(q).unwrap_or_else(|p| p.into_inner());
                q.idle -= 1;
            }
        };
        let mut now = sh.clock.now();
        // Only this worker touches the request until it ends: work on a copy.
        let mut r = lock(&sh.requests)[request];
        // The critical call first (`[request] critical`), unguarded.
        let critical = sh.scenario.request.critical;
        if !critical.is_zero() {
            r.start = Some(now);
            sleep_until(sh.origin + now + critical);
            now = sh.clock.now();
        }
        while let Some((ticket, _)) = start_attempt(
            sh.scenario,
            rep.guard.as_ref(),
            &mut r,
            request,
            now,
            replica,
        ) {
            // The call starts once admitted: a breaker's transition at the
            // admission (open -> half-open) is not after its probe's start.
            now = sh.clock.now();
            let (result, waited, connect_failed, end) = match sh.http {
                None => {
                    let lane = ticket.host().unwrap_or(replica);
                    let plan = sh.scenario.plan(request, r.attempts, lane, now);
                    sleep_until(sh.origin + now + plan.duration);
                    (plan.result, Duration::ZERO, false, sh.clock.now())
                }
                Some(http) => {
                    let draw = sh.scenario.draw(request, r.attempts);
                    let c = http.call(sh.origin, now, replica, draw);
                    (c.result, c.waited, c.connect_failed, c.end)
                }
            };
            calls.push(CallRecord {
                request,
                start: now,
                end,
                result,
                hedge: false,
                cancelled: false,
                waited,
                connect_failed,
            });
            if !end_attempt(sh.scenario, rep.guard.as_ref(), ticket, &mut r, end, result) {
                break;
            }
            now = end;
        }
        lock(&sh.requests)[request] = r;
    }
}

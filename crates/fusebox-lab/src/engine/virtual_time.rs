//! Virtual mode: the scenario as a deterministic discrete-event simulation.
//!
//! The rules are [`super::rules`], as in real mode, without the jitter.
//! Request `i` arrives at `i / rate`; `workers` identical workers take
//! requests FIFO; a fast-fail frees the worker at once; a retry starts at
//! the failed call's end.
//! - at equal times: completions (in the order their calls started), then
//!   arrivals, then starts (retries first, then idle workers in index order).
//!
//! Before every admission and verdict the run's [`fusebox::ManualClock`] is set
//! to the event time, so fusebox sees exactly the simulated time.

use super::fleet_virtual::VirtualFleet;
use super::rules::{end_attempt, queue_admits, start_attempt};
use super::{CallRecord, FleetRun, RequestRecord, RunResult};
use crate::guard::{self, Breakers, LabClock, Ticket};
use crate::scenario::{CallResult, Scenario, ServerQueue, StrategySpec};
use std::collections::VecDeque;
use std::time::Duration;

struct Busy {
    request: usize,
    /// Order of the call's start, to order completions at equal times.
    seq: u64,
    end: Duration,
    result: CallResult,
    ticket: Box<dyn Ticket>,
}

enum Worker {
    Idle,
    Busy(Busy),
    /// Its call failed at the current time; it retries the request in the start phase.
    Retry(usize),
}

/// One replica: its workers, its queue, its breaker.
struct Replica {
    guard: std::sync::Arc<dyn guard::Guard>,
    workers: Vec<Worker>,
    queue: VecDeque<usize>,
}

/// Runs one strategy of `scenario` in virtual time.
///
/// A fleet runs its replicas on one timeline: request `i` goes to replica
/// `i % replicas`; each phase below runs replica after replica, and trips
/// and closes arrive ([`VirtualFleet::deliver`]) after the completions and
/// before the arrivals at their time.
pub(super) fn run(scenario: &Scenario, spec: &StrategySpec, name: &str) -> RunResult {
    let manual = fusebox::ManualClock::new();
    let clock = LabClock::Virtual(manual.clone());
    let breakers = Breakers::for_run(&clock);
    let count = scenario.replicas();
    let mut replicas: Vec<Replica> = (0..count)
        .map(|r| Replica {
            guard: if count == 1 {
                guard::build(spec, &clock, &breakers, name, None)
            } else {
                guard::build(spec, &clock, &breakers, &format!("{name}#{}", r + 1), None)
            },
            workers: (0..scenario.workers).map(|_| Worker::Idle).collect(),
            queue: VecDeque::new(),
        })
        .collect();
    let mut fleet = {
        let guards: Vec<&dyn guard::Guard> =
            replicas.iter().map(|rep| rep.guard.as_ref()).collect();
        VirtualFleet::new(scenario, spec, &guards)
    };
    let mut last = Duration::ZERO;
    let n = scenario.request_count() as usize;
    let arrival = |i: usize| Duration::from_nanos(scenario.arrival_ns(i as u64));

    let mut requests: Vec<RequestRecord> =
        (0..n).map(|i| RequestRecord::arrived(arrival(i))).collect();
    let mut calls: Vec<CallRecord> = Vec::new();
    let mut next_arrival = 0usize;
    let mut seq = 0u64;
    // One server behind every replica, when the dependency is modelled as one.
    let mut server = scenario.downstream.server.map(ServerQueue::new);

    loop {
        let next_completion = replicas
            .iter()
            .flat_map(|rep| rep.workers.iter())
            .filter_map(|w| match w {
                Worker::Busy(b) => Some(b.end),
                _ => None,
            })
            .min();
        let next_arr = (next_arrival < n).then(|| arrival(next_arrival));
        let active = next_completion.is_some() || next_arr.is_some();
        let fleet_next = fleet.as_ref().and_then(|f| f.next_event(active, last));
        let t = match [next_completion, next_arr, fleet_next]
            .into_iter()
            .flatten()
            .min()
        {
            Some(t) => t,
            None => break,
        };
        last = t;
        manual.set(t);

        // 1. Completions at t, in the order their calls started.
        let mut done: Vec<(u64, usize, usize)> = replicas
            .iter()
            .enumerate()
            .flat_map(|(r, rep)| {
                rep.workers
                    .iter()
                    .enumerate()
                    .filter_map(move |(w, s)| match s {
                        Worker::Busy(b) if b.end == t => Some((b.seq, r, w)),
                        _ => None,
                    })
            })
            .collect();
        done.sort_unstable();
        for (_, r, w) in done {
            let rep = &mut replicas[r];
            let Worker::Busy(b) = std::mem::replace(&mut rep.workers[w], Worker::Idle) else {
                unreachable!("selected busy workers above")
            };
            if end_attempt(scenario, b.ticket, &mut requests[b.request], t, b.result) {
                rep.workers[w] = Worker::Retry(b.request);
            }
            if let Some(f) = fleet.as_mut() {
                f.observe(r, t, rep.guard.as_ref());
            }
        }

        // 2. Trips and closes of other replicas arriving at t, then the
        //    replicas' syncs due at t.
        if let Some(f) = fleet.as_mut() {
            f.deliver(t, |r| replicas[r].guard.as_ref());
            if active && f.tick(t, |r| replicas[r].guard.as_ref()) {
                // What the syncs sent with no propagation arrives before the arrivals.
                f.deliver(t, |r| replicas[r].guard.as_ref());
            }
        }

        // 3. Arrivals at t.
        while next_arrival < n && arrival(next_arrival) == t {
            let rep = &mut replicas[scenario.replica_of(next_arrival)];
            let idle = rep
                .workers
                .iter()
                .filter(|w| matches!(w, Worker::Idle))
                .count();
            if queue_admits(scenario, rep.queue.len(), idle) {
                rep.queue.push_back(next_arrival);
            } // else: stays Rejected, end = arrival.
            next_arrival += 1;
        }

        // 4. Starts: retries first, then idle workers take queued requests.
        for (r, rep) in replicas.iter_mut().enumerate() {
            let Replica {
                guard,
                workers,
                queue,
            } = rep;
            let mut start = |w: usize, request: usize, workers: &mut Vec<Worker>| {
                let started = start_attempt(scenario, guard.as_ref(), &mut requests[request], t, r);
                if let Some(f) = fleet.as_mut() {
                    f.observe(r, t, guard.as_ref());
                }
                match started {
                    None => workers[w] = Worker::Idle,
                    Some((ticket, plan)) => {
                        let plan = match server.as_mut() {
                            Some(s) => s.plan(t, scenario.client.timeout),
                            None => plan,
                        };
                        seq += 1;
                        calls.push(CallRecord {
                            request,
                            start: t,
                            end: t + plan.duration,
                            result: plan.result,
                        });
                        workers[w] = Worker::Busy(Busy {
                            request,
                            seq,
                            end: t + plan.duration,
                            result: plan.result,
                            ticket,
                        });
                    }
                }
            };
            for w in 0..workers.len() {
                if let Worker::Retry(request) = workers[w] {
                    start(w, request, workers);
                }
            }
            for w in 0..workers.len() {
                if queue.is_empty() {
                    break;
                }
                if matches!(workers[w], Worker::Idle) {
                    let request = queue.pop_front().expect("checked non-empty");
                    start(w, request, workers);
                    // A fast-failed start leaves the worker idle: it takes the next request.
                    while matches!(workers[w], Worker::Idle) {
                        let Some(request) = queue.pop_front() else {
                            break;
                        };
                        start(w, request, workers);
                    }
                }
            }
        }
    }

    let per_replica: Vec<_> = replicas.iter().map(|rep| rep.guard.transitions()).collect();
    RunResult {
        strategy: spec.name.clone(),
        kind: spec.kind.as_str(),
        requests,
        calls,
        transitions: per_replica[0].clone(),
        fleet: scenario
            .fleet
            .is_some()
            .then(|| FleetRun::from_transitions(per_replica)),
        limits: replicas[0].guard.limit_trace(),
        hosts: replicas[0].guard.hosts(),
    }
}

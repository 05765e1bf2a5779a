//! Virtual mode: the scenario as a deterministic discrete-event simulation.
//!
//! The rules are [`super::rules`], as in real mode, without the jitter.
//! Request `i` arrives at `i / rate`; `workers` identical workers take
//! requests FIFO; a fast-fail frees the worker at once; a retry starts at
//! the failed call's end. A worker stays on its request while any of its
//! attempts runs: with a hedge, the request's first attempt and the hedges
//! sent after it (each `delay` later while one runs, up to `max_extra`;
//! the delay read from the library's [`fusebox::hedge::Hedge`] when the
//! call starts, and the winner's latency recorded in it).
//! - at equal times: completions (in the order their calls started), then
//!   arrivals, then starts (retries first, then the guarded calls of
//!   requests whose critical call ends, then hedges, then idle workers in
//!   index order).
//! - with `[request] critical`, a worker that takes a request is on its
//!   critical call that long before its guarded call starts.
//! - with `transport = "http"` and `[downstream] overhead`, every call takes
//!   that much longer than the dependency's answer (the HTTP hop's own
//!   cost, which real mode pays for real); the client's timeout cuts the
//!   sum.
//!
//! Before every admission and verdict the run's [`fusebox::ManualClock`] is set
//! to the event time, so fusebox sees exactly the simulated time.

use super::fleet_virtual::VirtualFleet;
use super::rules::{end_call, queue_admits, start_attempt, start_hedge, Next};
use super::{CallRecord, FleetRun, RequestRecord, RunResult};
use crate::guard::{self, Breakers, LabClock, Ticket};
use crate::scenario::{CallPlan, CallResult, Pool, PoolPlan, Scenario, ServerQueue, StrategySpec};
use fusebox::hedge::Hedge;
use std::collections::VecDeque;
use std::time::Duration;

/// A downstream call in flight.
struct Attempt {
    /// Order of the call's start, to order completions at equal times.
    seq: u64,
    start: Duration,
    end: Duration,
    result: CallResult,
    ticket: Box<dyn Ticket>,
    /// Its index in the run's calls.
    call: usize,
}

/// The request a worker is on.
struct Busy {
    request: usize,
    /// Its attempts in flight: one, or more once hedges went out.
    attempts: Vec<Attempt>,
    /// Its calls so far, this one included (retries count these).
    round: u32,
    /// The next hedge, while one may go out.
    hedge: Option<Timer>,
}

/// When a call's next hedge goes out.
#[derive(Debug, Clone, Copy)]
struct Timer {
    at: Duration,
    /// The call's hedge delay (read when it started).
    delay: Duration,
    /// Hedges sent so far.
    sent: u32,
}

enum Worker {
    Idle,
    Busy(Busy),
    /// Its call failed at the current time; it retries the request (call
    /// number `round` was the last) in the start phase.
    Retry {
        request: usize,
        round: u32,
    },
    /// On the critical call of a request it took at `since` (`[request]
    /// critical`); its guarded call starts at `until`, in the start phase.
    Critical {
        request: usize,
        since: Duration,
        until: Duration,
    },
}

/// One replica: its workers, its queue, its breaker, its hedge.
struct Replica {
    guard: std::sync::Arc<dyn guard::Guard>,
    workers: Vec<Worker>,
    queue: VecDeque<usize>,
    /// The strategy's hedge, if it hedges (each replica has its own, as it
    /// has its own client).
    hedge: Option<Hedge>,
    /// Its HTTP client's pool, when the scenario bounds it or refuses
    /// connections ([`Scenario::pool`]).
    pool: Option<Pool>,
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
            hedge: spec.hedge.map(|h| {
                h.build()
                    .expect("hedge settings checked when the scenario was read")
            }),
            pool: scenario.pool().map(Pool::new),
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
    let mut server = scenario
        .downstream
        .server
        .map(|s| ServerQueue::with_faults(s, &scenario.downstream.faults));

    loop {
        // Calls ending and hedges going out.
        let next_completion = replicas
            .iter()
            .flat_map(|rep| rep.workers.iter())
            .filter_map(|w| match w {
                Worker::Busy(b) => {
                    let ends = b.attempts.iter().map(|a| a.end);
                    ends.chain(b.hedge.map(|h| h.at)).min()
                }
                Worker::Critical { until, .. } => Some(*until),
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

        // 1. Completions at t, in the order their calls started. The first
        //    success answers its request and cancels its other attempts
        //    (their tickets are dropped without a verdict).
        let mut done: Vec<(u64, usize, usize)> = replicas
            .iter()
            .enumerate()
            .flat_map(|(r, rep)| {
                rep.workers.iter().enumerate().flat_map(move |(w, s)| {
                    match s {
                        Worker::Busy(b) => b.attempts.as_slice(),
                        _ => &[],
                    }
                    .iter()
                    .filter(move |a| a.end == t)
                    .map(move |a| (a.seq, r, w))
                })
            })
            .collect();
        done.sort_unstable();
        for (seq, r, w) in done {
            let rep = &mut replicas[r];
            let Worker::Busy(b) = &mut rep.workers[w] else {
                continue; // answered by an attempt that ended before it
            };
            let Some(k) = b.attempts.iter().position(|a| a.seq == seq) else {
                continue;
            };
            let a = b.attempts.remove(k);
            let (request, round, running) = (b.request, b.round, !b.attempts.is_empty());
            let req = &mut requests[request];
            let guard = rep.guard.as_ref();
            match end_call(
                scenario,
                guard,
                a.ticket,
                req,
                (t, a.result),
                running,
                round,
            ) {
                Next::Wait => {}
                Next::Retry => rep.workers[w] = Worker::Retry { request, round },
                Next::Done => {
                    if let Worker::Busy(b) = std::mem::replace(&mut rep.workers[w], Worker::Idle) {
                        for cancelled in b.attempts {
                            let c = &mut calls[cancelled.call];
                            (c.end, c.cancelled) = (t, true);
                        }
                    }
                    if let (Some(h), true) = (&rep.hedge, a.result.is_ok()) {
                        h.record(t - a.start);
                    }
                }
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

        // 4. Starts: retries first, then hedges, then idle workers take
        //    queued requests.
        for (r, rep) in replicas.iter_mut().enumerate() {
            let Replica {
                guard,
                workers,
                queue,
                hedge,
                pool,
            } = rep;
            // `call`: a new call of a request (and its number), or `None`
            // for a hedge of the call worker `w` is on; `taken`: when the
            // worker took the request.
            let mut start = |w: usize,
                             call: Option<(usize, u32)>,
                             taken: Duration,
                             workers: &mut Vec<Worker>| {
                let request = match (call, &workers[w]) {
                    (Some((request, _)), _) => request,
                    (None, Worker::Busy(b)) => b.request,
                    (None, _) => return,
                };
                let req = &mut requests[request];
                if req.start.is_none() {
                    req.start = Some(taken);
                }
                let started = match call {
                    Some(_) => start_attempt(scenario, guard.as_ref(), req, request, t, r),
                    None => start_hedge(scenario, guard.as_ref(), req, request, t, r),
                };
                if let Some(f) = fleet.as_mut() {
                    f.observe(r, t, guard.as_ref());
                }
                let attempt = started.map(|(ticket, plan)| {
                    let timeout = scenario.client.timeout;
                    let lane = ticket.host().unwrap_or(r);
                    let draw = scenario.draw(request, req.attempts);
                    // The HTTP hop's own cost (`[downstream] overhead`) is
                    // part of the call: the dependency's answer is cut at
                    // what the client's timeout leaves after it.
                    let overhead = scenario.downstream.overhead();
                    let mut answer = |at: Duration, left: Option<Duration>| {
                        let inner = match left {
                            Some(l) if l < overhead => {
                                return CallPlan {
                                    duration: l,
                                    result: CallResult::Timeout,
                                }
                            }
                            left => left.map(|l| l - overhead),
                        };
                        let plan = match server.as_mut() {
                            Some(s) => s.plan(at, inner),
                            None if at == t && overhead.is_zero() => plan,
                            None => scenario.downstream.plan_with(lane, at, inner, draw),
                        };
                        CallPlan {
                            duration: plan.duration + overhead,
                            ..plan
                        }
                    };
                    let pooled = match pool.as_mut() {
                        Some(p) => p.call(&scenario.downstream, lane, t, timeout, answer),
                        None => PoolPlan {
                            plan: answer(t, timeout),
                            waited: Duration::ZERO,
                            connect_failed: false,
                        },
                    };
                    let plan = pooled.plan;
                    seq += 1;
                    calls.push(CallRecord {
                        request,
                        start: t,
                        end: t + plan.duration,
                        result: plan.result,
                        hedge: call.is_none(),
                        cancelled: false,
                        waited: pooled.waited,
                        connect_failed: pooled.connect_failed,
                    });
                    Attempt {
                        seq,
                        start: t,
                        end: t + plan.duration,
                        result: plan.result,
                        ticket,
                        call: calls.len() - 1,
                    }
                });
                match (call, attempt) {
                    (Some(_), None) => workers[w] = Worker::Idle,
                    (Some((request, round)), Some(attempt)) => {
                        let delay = hedge.as_ref().and_then(Hedge::current_delay);
                        workers[w] = Worker::Busy(Busy {
                            request,
                            attempts: vec![attempt],
                            round,
                            hedge: delay.map(|delay| Timer {
                                at: t + delay,
                                delay,
                                sent: 0,
                            }),
                        });
                    }
                    // A hedge went out (or the guard refused it: not sent):
                    // the next one a delay later, while one may.
                    (None, attempt) => {
                        let Worker::Busy(b) = &mut workers[w] else {
                            return;
                        };
                        let max_extra = hedge.as_ref().map_or(0, Hedge::max_extra);
                        b.hedge = b.hedge.and_then(|h| {
                            let sent = h.sent + 1;
                            (sent < max_extra).then_some(Timer {
                                at: t + h.delay,
                                sent,
                                ..h
                            })
                        });
                        b.attempts.extend(attempt);
                    }
                }
            };
            for w in 0..workers.len() {
                if let Worker::Retry { request, round } = workers[w] {
                    start(w, Some((request, round + 1)), t, workers);
                }
            }
            // Critical calls ending: their guarded calls start.
            for w in 0..workers.len() {
                if let Worker::Critical {
                    request,
                    since,
                    until,
                } = workers[w]
                {
                    if until == t {
                        start(w, Some((request, 1)), since, workers);
                    }
                }
            }
            for w in 0..workers.len() {
                if matches!(&workers[w], Worker::Busy(b) if b.hedge.is_some_and(|h| h.at == t)) {
                    start(w, None, t, workers);
                }
            }
            // An idle worker takes the next queued request: its critical
            // call first, if it has one, else the guarded call now.
            let critical = scenario.request.critical;
            let mut take = |w: usize, request: usize, workers: &mut Vec<Worker>| {
                if critical.is_zero() {
                    start(w, Some((request, 1)), t, workers);
                } else {
                    workers[w] = Worker::Critical {
                        request,
                        since: t,
                        until: t + critical,
                    };
                }
            };
            for w in 0..workers.len() {
                if queue.is_empty() {
                    break;
                }
                if matches!(workers[w], Worker::Idle) {
                    let request = queue.pop_front().expect("checked non-empty");
                    take(w, request, workers);
                    // A fast-failed start leaves the worker idle: it takes the next request.
                    while matches!(workers[w], Worker::Idle) {
                        let Some(request) = queue.pop_front() else {
                            break;
                        };
                        take(w, request, workers);
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

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

use super::rules::{end_attempt, queue_admits, start_attempt};
use super::{CallRecord, RequestRecord, RunResult};
use crate::guard::{self, Breakers, LabClock, Ticket};
use crate::scenario::{CallResult, Scenario, StrategySpec};
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

/// Runs one strategy of `scenario` in virtual time.
pub(super) fn run(scenario: &Scenario, spec: &StrategySpec, name: &str) -> RunResult {
    let manual = fusebox::ManualClock::new();
    let clock = LabClock::Virtual(manual.clone());
    let guard = guard::build(spec, &clock, &Breakers::for_run(&clock), name);
    let n = scenario.request_count() as usize;
    let arrival = |i: usize| Duration::from_nanos(scenario.arrival_ns(i as u64));

    let mut requests: Vec<RequestRecord> =
        (0..n).map(|i| RequestRecord::arrived(arrival(i))).collect();
    let mut calls: Vec<CallRecord> = Vec::new();
    let mut workers: Vec<Worker> = (0..scenario.workers).map(|_| Worker::Idle).collect();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut next_arrival = 0usize;
    let mut seq = 0u64;

    loop {
        let next_completion = workers
            .iter()
            .filter_map(|w| match w {
                Worker::Busy(b) => Some(b.end),
                _ => None,
            })
            .min();
        let next_arr = (next_arrival < n).then(|| arrival(next_arrival));
        let t = match (next_completion, next_arr) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => break,
        };
        manual.set(t);

        // 1. Completions at t, in the order their calls started.
        let mut done: Vec<(u64, usize)> = workers
            .iter()
            .enumerate()
            .filter_map(|(w, s)| match s {
                Worker::Busy(b) if b.end == t => Some((b.seq, w)),
                _ => None,
            })
            .collect();
        done.sort_unstable();
        for (_, w) in done {
            let Worker::Busy(b) = std::mem::replace(&mut workers[w], Worker::Idle) else {
                unreachable!("selected busy workers above")
            };
            if end_attempt(scenario, b.ticket, &mut requests[b.request], t, b.result) {
                workers[w] = Worker::Retry(b.request);
            }
        }

        // 2. Arrivals at t.
        while next_arrival < n && arrival(next_arrival) == t {
            let idle = workers.iter().filter(|w| matches!(w, Worker::Idle)).count();
            if queue_admits(scenario, queue.len(), idle) {
                queue.push_back(next_arrival);
            } // else: stays Rejected, end = arrival.
            next_arrival += 1;
        }

        // 3. Starts: retries first, then idle workers take queued requests.
        let mut start = |w: usize, request: usize, workers: &mut Vec<Worker>| match start_attempt(
            scenario,
            guard.as_ref(),
            &mut requests[request],
            t,
        ) {
            None => workers[w] = Worker::Idle,
            Some((ticket, plan)) => {
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
        };
        for w in 0..workers.len() {
            if let Worker::Retry(request) = workers[w] {
                start(w, request, &mut workers);
            }
        }
        for w in 0..workers.len() {
            if queue.is_empty() {
                break;
            }
            if matches!(workers[w], Worker::Idle) {
                let request = queue.pop_front().expect("checked non-empty");
                start(w, request, &mut workers);
                // A fast-failed start leaves the worker idle: it takes the next request.
                while matches!(workers[w], Worker::Idle) {
                    let Some(request) = queue.pop_front() else {
                        break;
                    };
                    start(w, request, &mut workers);
                }
            }
        }
    }

    RunResult {
        strategy: spec.name.clone(),
        kind: spec.kind.as_str(),
        requests,
        calls,
        transitions: guard.transitions(),
    }
}

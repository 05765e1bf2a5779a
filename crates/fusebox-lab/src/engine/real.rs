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

use super::http::HttpDownstream;
use super::rules::{end_attempt, queue_admits, start_attempt};
use super::{CallRecord, RequestRecord, RunResult};
use crate::guard::{self, Breakers, Guard, LabClock};
use crate::scenario::{FaultOutcome, Scenario, StrategySpec, Transport};
use crate::sync::lock;
use fusebox::Clock;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Time given to the worker threads to start before the first arrival.
const LEAD: Duration = Duration::from_millis(30);

struct Queue {
    waiting: VecDeque<usize>,
    /// Workers blocked waiting for a request.
    idle: usize,
    /// No more arrivals.
    closed: bool,
}

struct Shared<'a> {
    scenario: &'a Scenario,
    guard: &'a dyn Guard,
    clock: &'a LabClock,
    origin: Instant,
    queue: Mutex<Queue>,
    ready: Condvar,
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
pub(super) fn run(
    scenario: &Scenario,
    spec: &StrategySpec,
    shared: Option<&Breakers>,
    name: &str,
) -> RunResult {
    // The server process starts before the run's clock does.
    let http = match scenario.downstream.transport {
        Transport::Call => None,
        Transport::Http(config) => Some(
            HttpDownstream::start(scenario, config)
                .unwrap_or_else(|e| panic!("scenario {}: {e}", scenario.name)),
        ),
    };
    let origin = Instant::now() + LEAD;
    let clock = LabClock::Real { origin };
    let breakers = match shared {
        Some(b) => b.clone(),
        None => Breakers::for_run(&clock),
    };
    let guard = guard::build(spec, &clock, &breakers, name);
    let n = scenario.request_count() as usize;
    let arrival = |i: usize| Duration::from_nanos(scenario.arrival_ns(i as u64));
    let shared = Shared {
        scenario,
        guard: guard.as_ref(),
        clock: &clock,
        origin,
        queue: Mutex::new(Queue {
            waiting: VecDeque::new(),
            idle: 0,
            closed: false,
        }),
        ready: Condvar::new(),
        requests: Mutex::new((0..n).map(|i| RequestRecord::arrived(arrival(i))).collect()),
        http: http.as_ref(),
    };

    let mut calls: Vec<CallRecord> = thread::scope(|s| {
        let handles: Vec<_> = (0..scenario.workers)
            .map(|_| s.spawn(|| worker(&shared)))
            .collect();
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
            let mut q = lock(&shared.queue);
            if queue_admits(scenario, q.waiting.len(), q.idle) {
                q.waiting.push_back(i);
                drop(q);
                shared.ready.notify_one();
            }
        }
        lock(&shared.queue).closed = true;
        shared.ready.notify_all();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker threads do not panic"))
            .collect()
    });
    calls.sort_by_key(|c| c.start);
    RunResult {
        strategy: spec.name.clone(),
        kind: spec.kind.as_str(),
        requests: shared
            .requests
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
        calls,
        transitions: guard.transitions(),
        fleet: None,
    }
}

fn worker(sh: &Shared<'_>) -> Vec<CallRecord> {
    let mut calls = Vec::new();
    loop {
        let request = {
            let mut q = lock(&sh.queue);
            loop {
                if let Some(r) = q.waiting.pop_front() {
                    break r;
                }
                if q.closed {
                    return calls;
                }
                q.idle += 1;
                q = sh.ready.wait(q).unwrap_or_else(|p| p.into_inner());
                q.idle -= 1;
            }
        };
        let mut now = sh.clock.now();
        // Only this worker touches the request until it ends: work on a copy.
        let mut r = lock(&sh.requests)[request];
        while let Some((ticket, plan)) =
            start_attempt(sh.scenario, sh.guard, &mut r, now, (0, false))
        {
            let result = match sh.http {
                None => {
                    sleep_until(sh.origin + now + plan.duration);
                    plan.result
                }
                Some(http) => http.call(now, 0),
            };
            let end = sh.clock.now();
            calls.push(CallRecord {
                request,
                start: now,
                end,
                result,
            });
            if !end_attempt(sh.scenario, ticket, &mut r, end, result) {
                break;
            }
            now = end;
        }
        lock(&sh.requests)[request] = r;
    }
}

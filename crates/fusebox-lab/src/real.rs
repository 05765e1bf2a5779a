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

use crate::run::{CallRecord, Outcome, RequestRecord, RunResult};
use crate::scenario::Scenario;
use crate::strategy::{self, Admission, Guard, LabClock, StrategySpec};
use fusebox::Clock;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Workers never panic while holding these locks; if one did, the data is
    // still consistent record by record, so poison is ignored.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn sleep_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        thread::sleep(deadline - now);
    }
}

/// Runs one strategy of `scenario` with real threads and sleeps.
pub fn run(scenario: &Scenario, spec: &StrategySpec) -> RunResult {
    let origin = Instant::now() + LEAD;
    let clock = LabClock::Real { origin };
    let guard = strategy::build(spec, &clock);
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
        requests: Mutex::new(
            (0..n)
                .map(|i| RequestRecord {
                    arrival: arrival(i),
                    start: None,
                    end: arrival(i),
                    outcome: Outcome::Rejected,
                    attempts: 0,
                })
                .collect(),
        ),
    };

    let mut calls: Vec<CallRecord> = thread::scope(|s| {
        let handles: Vec<_> = (0..scenario.workers)
            .map(|_| s.spawn(|| worker(&shared)))
            .collect();
        for i in 0..n {
            sleep_until(origin + arrival(i));
            let mut q = lock(&shared.queue);
            let waiting_after_starts = q.waiting.len().saturating_sub(q.idle);
            if scenario.queue == 0 || waiting_after_starts < scenario.queue {
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
        lock(&sh.requests)[request].start = Some(now);
        let mut attempts = 0u32;
        loop {
            match sh.guard.admit(now) {
                Admission::FastFail => {
                    let mut r = lock(&sh.requests);
                    r[request].end = now;
                    // A rejected retry keeps the failure the request already had.
                    if attempts == 0 {
                        r[request].outcome = Outcome::FastFail;
                    }
                    r[request].attempts = attempts;
                    break;
                }
                Admission::Call(ticket) => {
                    let plan = sh.scenario.downstream.plan(now, sh.scenario.client.timeout);
                    attempts += 1;
                    sleep_until(sh.origin + now + plan.duration);
                    let end = sh.clock.now();
                    ticket.finish(end, plan.result);
                    calls.push(CallRecord {
                        request,
                        start: now,
                        end,
                        result: plan.result,
                    });
                    if !plan.result.is_ok() && attempts <= sh.scenario.client.retries {
                        let mut r = lock(&sh.requests);
                        r[request].end = end;
                        r[request].outcome = Outcome::of(plan.result);
                        drop(r);
                        now = end;
                        continue;
                    }
                    let mut r = lock(&sh.requests);
                    r[request].end = end;
                    r[request].outcome = Outcome::of(plan.result);
                    r[request].attempts = attempts;
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Summary;

    /// A short real run: every request accounted for, times ordered, attempts
    /// matching calls. Asserts no timing (the machine may be loaded).
    #[test]
    fn real_run_accounts_for_every_request() {
        // 20 requests over 100 ms, 1 ms calls, a 40 ms fault of 5 ms failures.
        let text = crate::scenario::EMBEDDED[0]
            .1
            .replace("duration = \"3s\"", "duration = \"100ms\"")
            .replace("rate = 50.0", "rate = 200.0")
            .replace("latency = \"5ms\"", "latency = \"1ms\"")
            .replace("from = \"500ms\"", "from = \"20ms\"")
            .replace("until = \"1500ms\"", "until = \"60ms\"")
            .replace("latency = \"150ms\"", "latency = \"5ms\"")
            .replace("open_for = \"500ms\"", "open_for = \"20ms\"")
            .replace("queue = 0 ", "queue = 2 ");
        let sc = Scenario::parse("short", &text).unwrap();
        assert_eq!((sc.queue, sc.request_count()), (2, 20));
        for spec in &sc.strategies {
            let r = run(&sc, spec);
            assert_eq!(r.requests.len(), 20);
            let attempts: u32 = r.requests.iter().map(|q| q.attempts).sum();
            assert_eq!(attempts as usize, r.calls.len());
            for q in &r.requests {
                match q.start {
                    Some(s) => assert!(s <= q.end),
                    None => assert_eq!(q.outcome, Outcome::Rejected),
                }
                assert!(q.arrival <= q.end);
            }
            let s = Summary::of(&sc, &r);
            assert_eq!(
                s.successes + s.downstream_errors + s.fast_fails + s.queue_rejections,
                20
            );
        }
    }

    /// Real mode against virtual mode on both embedded scenarios: counts
    /// within ±5, transitions within ±30 ms. Takes ~20 s of real time and depends on the
    /// machine's scheduling, so it is not part of the default run:
    /// `cargo test --release -p fusebox-lab -- --ignored real_mode`.
    #[test]
    #[ignore = "real time: ~20 s, timing depends on machine load"]
    fn real_mode_matches_virtual_mode() {
        for sc in &Scenario::embedded() {
            for spec in &sc.strategies {
                let v = Summary::of(sc, &crate::sim::run(sc, spec));
                let r = Summary::of(sc, &run(sc, spec));
                let counts = |s: &Summary| {
                    [
                        s.downstream_calls,
                        s.successes,
                        s.downstream_errors,
                        s.fast_fails,
                    ]
                };
                println!(
                    "{}: virtual {:?} real {:?}",
                    spec.name,
                    counts(&v),
                    counts(&r)
                );
                for (a, b) in counts(&v).iter().zip(counts(&r)) {
                    assert!(
                        a.abs_diff(b) <= 5,
                        "{}: {:?} vs {:?}",
                        spec.name,
                        counts(&v),
                        counts(&r)
                    );
                }
                assert_eq!(v.transitions.len(), r.transitions.len(), "{}", spec.name);
                for (a, b) in v.transitions.iter().zip(&r.transitions) {
                    let d = a.at.abs_diff(b.at);
                    println!(
                        "  {} -> {}: virtual {:?} real {:?} ({:?})",
                        a.from, a.to, a.at, b.at, d
                    );
                    assert_eq!((a.from, a.to), (b.from, b.to));
                    assert!(
                        d <= Duration::from_millis(30),
                        "{}: {a:?} vs {b:?}",
                        spec.name
                    );
                }
            }
        }
    }
}

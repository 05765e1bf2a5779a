//! Each crate's guard, configured to the closest equivalent of one [`Spec`].
//!
//! How each peer is mapped (the peers do not all have the same policies):
//!
//! | fusebox policy | failsafe 1.3 | recloser 1.4 | tower-resilience 0.14 | seatbelt 0.11 |
//! |---|---|---|---|---|
//! | `consecutive_failures(n)` | `consecutive_failures(n, constant(open))` | ring of `n` calls, `error_rate(1.0)`: trips when the last `n` calls all failed, which is `n` consecutive failures | `consecutive_failures(n)` | no such policy: failure rate over its minimum 1 s sampling window, `failure_threshold(0.99)`, `min_throughput(n)` (approximation) |
//! | `failure_rate(r).count_window(n)` | no count window: its EMA success rate over a 1 s window, `required_success_rate = 1 - r`, `min_request_threshold = min_calls` (approximation) | `closed_len(n)`, `error_rate(r)` (it always waits for `n` calls: `min_calls = n`) | count-based window of `n`, `failure_rate_threshold(r)`, `minimum_number_of_calls(min_calls)` | failure rate over 1 s, `failure_threshold(r)`, `min_throughput(min_calls)` (approximation) |
//! | `failure_rate(r).time_window(t).buckets(b)` | EMA success rate over `t` (whole seconds) | none | time-based window of `t` (no buckets: one record per call) | `sampling_duration(t)`, `failure_threshold(r)`, `min_throughput(min_calls)` |
//! | `slow_calls(d, r)` on a count window | none | none | `slow_call_duration_threshold(d)`, `slow_call_rate_threshold(r)` on the same count window | none |
//!
//! Everywhere: open for `open_for` (constant backoff), one probe in
//! half-open where the crate lets us say so (recloser `half_open_len(1)`,
//! tower-resilience `permitted_calls_in_half_open(1)`, seatbelt
//! `HalfOpenMode::quick()`; failsafe admits every call in half-open and closes
//! on the first success), closed again after one successful probe.
//!
//! The async peers (tower-resilience, seatbelt, tower's `ConcurrencyLimit`,
//! tower-resilience-adaptive) are driven the way a user drives them:
//! tower-resilience, `ConcurrencyLimit` and tower-resilience-adaptive
//! through `ServiceExt::ready` + `call` inside a
//! current-thread tokio runtime (one per timing thread, as tower-resilience
//! needs tokio's timer when its lock is contended); seatbelt's `execute`
//! future is ready at once, so it is polled in place.

use std::fmt;
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::harness::{
    now, op, AsyncGuard, AsyncRunner, Batch, Guard, Load, Runner, Subject, SyncRunner, Tally,
    Verdict, Xorshift,
};

/// When a breaker trips.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Policy {
    /// After `failures` consecutive failures.
    Consecutive {
        /// Failures in a row that trip the breaker.
        failures: u32,
    },
    /// Failure rate over the last `size` calls.
    CountWindow {
        /// Calls in the window.
        size: usize,
        /// Failure rate that trips (0..=1).
        rate: f64,
    },
    /// Failure rate over the last `window` of time, kept in `buckets`.
    TimeWindow {
        /// Length of the window.
        window: Duration,
        /// Buckets the window is split into (fusebox only).
        buckets: usize,
        /// Failure rate that trips (0..=1).
        rate: f64,
    },
    /// Slow-call rate (and failure rate) over the last `size` calls.
    SlowCalls {
        /// Calls in the window.
        size: usize,
        /// A call at least this long is slow.
        threshold: Duration,
        /// Slow-call (and failure) rate that trips (0..=1).
        rate: f64,
    },
}

/// A breaker configuration, applied to every crate as closely as it allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// When to trip.
    pub policy: Policy,
    /// Minimum calls in a window before its rate counts.
    pub min_calls: u32,
    /// How long the breaker stays open.
    pub open_for: Duration,
}

impl Spec {
    /// The closed-path reference: 5 consecutive failures, open 30 s.
    pub const fn consecutive(failures: u32, open_for: Duration) -> Spec {
        Spec {
            policy: Policy::Consecutive { failures },
            min_calls: failures,
            open_for,
        }
    }

    /// Failure rate `rate` over the last `size` calls, all of them needed.
    pub const fn count_window(size: usize, rate: f64, open_for: Duration) -> Spec {
        Spec {
            policy: Policy::CountWindow { size, rate },
            min_calls: if size > 100 { 100 } else { size as u32 },
            open_for,
        }
    }

    /// Failure rate `rate` over `window` split into `buckets`, at least 10 calls.
    pub const fn time_window(
        window: Duration,
        buckets: usize,
        rate: f64,
        open_for: Duration,
    ) -> Spec {
        Spec {
            policy: Policy::TimeWindow {
                window,
                buckets,
                rate,
            },
            min_calls: 10,
            open_for,
        }
    }

    /// Slow calls (at least `threshold`) at rate `rate` over the last 100 calls.
    pub const fn slow_calls(threshold: Duration, rate: f64, open_for: Duration) -> Spec {
        Spec {
            policy: Policy::SlowCalls {
                size: 100,
                threshold,
                rate,
            },
            min_calls: 100,
            open_for,
        }
    }
}

/// The crates measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Crate {
    /// No guard: the operation called directly.
    Baseline,
    /// fusebox (this workspace).
    Fusebox,
    /// failsafe 1.3.
    Failsafe,
    /// recloser 1.4.
    Recloser,
    /// tower-resilience-circuitbreaker 0.14.
    TowerResilience,
    /// seatbelt 0.11 (breaker feature).
    Seatbelt,
}

impl Crate {
    /// Every breaker crate, fusebox first, then the baseline.
    pub const BREAKERS: [Crate; 6] = [
        Crate::Fusebox,
        Crate::Failsafe,
        Crate::Recloser,
        Crate::TowerResilience,
        Crate::Seatbelt,
        Crate::Baseline,
    ];

    /// Short name used in tables and benchmark ids.
    pub fn name(self) -> &'static str {
        match self {
            Crate::Baseline => "baseline",
            Crate::Fusebox => "fusebox",
            Crate::Failsafe => "failsafe",
            Crate::Recloser => "recloser",
            Crate::TowerResilience => "tower-resilience",
            Crate::Seatbelt => "seatbelt",
        }
    }

    /// This crate configured as close to `spec` as it allows; `None` when
    /// it has no equivalent policy (see the module docs).
    pub fn breaker(self, spec: &Spec) -> Option<Box<dyn Subject>> {
        match self {
            Crate::Baseline => Some(Box::new(Baseline)),
            Crate::Fusebox => Some(Box::new(fusebox_breaker(spec))),
            Crate::Failsafe => failsafe_breaker(spec),
            Crate::Recloser => recloser_breaker(spec),
            Crate::TowerResilience => tower_resilience_breaker(spec),
            Crate::Seatbelt => seatbelt_breaker(spec),
        }
    }
}

/// Drives `subject` with failing calls until it rejects one; returns whether
/// it did within `max_calls` calls (sleeping a little between tries, as
/// time-window breakers may need the window to age).
pub fn trip(subject: &dyn Subject, max_calls: u64) -> bool {
    let mut r = subject.runner(1);
    let mut calls = 0;
    while calls < max_calls {
        let b = r.run(10, Load::AllFail);
        calls += 10;
        if b.tally.rejected > 0 {
            return true;
        }
    }
    false
}

/// Runs `calls` successful calls, e.g. to fill a window before measuring.
pub fn prefill(subject: &dyn Subject, calls: u64) -> Tally {
    let mut r = subject.runner(1);
    r.run(calls, Load::AllOk).tally
}

// ---------------------------------------------------------------- baseline

#[derive(Debug)]
struct Baseline;

#[derive(Debug, Clone, Copy)]
struct BaselineGuard;

impl Guard for BaselineGuard {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match op(fail) {
            Ok(_) => Verdict::Ok,
            Err(_) => Verdict::Failed,
        }
    }
}

impl Subject for Baseline {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(BaselineGuard, seed))
    }
}

// ----------------------------------------------------------------- fusebox

impl Spec {
    /// The spec in fusebox's one settings vocabulary ([`fusebox::BreakerConfig`]):
    /// the policy, `open_for`, one half-open probe, closed again after one
    /// success.
    pub fn config(&self) -> fusebox::BreakerConfig {
        let mut c = fusebox::BreakerConfig {
            open_for: Some(self.open_for),
            half_open_probes: Some(1),
            successes_to_close: Some(1),
            ..Default::default()
        };
        match self.policy {
            Policy::Consecutive { failures } => c.consecutive_failures = Some(failures),
            Policy::CountWindow { size, rate } => {
                c.failure_rate = Some(rate);
                c.count_window = Some(size);
                c.min_calls = Some(self.min_calls);
            }
            Policy::TimeWindow {
                window,
                buckets,
                rate,
            } => {
                c.failure_rate = Some(rate);
                c.time_window = Some(window);
                c.buckets = Some(buckets);
                c.min_calls = Some(self.min_calls);
            }
            Policy::SlowCalls {
                size,
                threshold,
                rate,
            } => {
                c.failure_rate = Some(rate);
                c.slow_call_duration = Some(threshold);
                c.slow_call_rate = Some(rate);
                c.count_window = Some(size);
                c.min_calls = Some(self.min_calls);
            }
        }
        c
    }
}

/// fusebox's builder for `spec` (see [`Spec::config`]).
pub fn fusebox_builder(spec: &Spec) -> fusebox::Builder {
    spec.config().builder()
}

/// A fusebox breaker as a benchmark subject.
#[derive(Debug, Clone)]
pub struct Fusebox(pub fusebox::CircuitBreaker);

fn fusebox_breaker(spec: &Spec) -> Fusebox {
    Fusebox(
        fusebox_builder(spec)
            .build()
            .expect("benchmark spec is a valid fusebox config"),
    )
}

impl Guard for Fusebox {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match self.0.call(|| op(fail)) {
            Ok(_) => Verdict::Ok,
            Err(e) if e.is_rejected() => Verdict::Rejected,
            Err(_) => Verdict::Failed,
        }
    }
}

impl Subject for Fusebox {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

// ---------------------------------------------------------------- failsafe

struct Failsafe<P>(failsafe::StateMachine<P, ()>);

impl<P> Clone for Failsafe<P> {
    fn clone(&self) -> Self {
        Failsafe(self.0.clone())
    }
}

impl<P> fmt::Debug for Failsafe<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Failsafe")
    }
}

impl<P: failsafe::FailurePolicy + Send + 'static> Guard for Failsafe<P> {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        use failsafe::CircuitBreaker as _;
        match self.0.call(|| op(fail)) {
            Ok(_) => Verdict::Ok,
            Err(failsafe::Error::Rejected) => Verdict::Rejected,
            Err(failsafe::Error::Inner(_)) => Verdict::Failed,
        }
    }
}

impl<P: failsafe::FailurePolicy + Send + Sync + 'static> Subject for Failsafe<P> {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

fn failsafe_breaker(spec: &Spec) -> Option<Box<dyn Subject>> {
    use failsafe::{backoff, failure_policy, Config};
    let backoff = backoff::constant(spec.open_for);
    // failsafe's success-rate window counts whole seconds only.
    let ema = |window: Duration, rate: f64| {
        let window = Duration::from_secs(window.as_secs().max(1));
        let policy = failure_policy::success_rate_over_time_window(
            1.0 - rate,
            spec.min_calls,
            window,
            backoff.clone(),
        );
        let b: Box<dyn Subject> = Box::new(Failsafe(Config::new().failure_policy(policy).build()));
        b
    };
    match spec.policy {
        Policy::Consecutive { failures } => {
            let policy = failure_policy::consecutive_failures(failures, backoff.clone());
            Some(Box::new(Failsafe(
                Config::new().failure_policy(policy).build(),
            )))
        }
        Policy::CountWindow { rate, .. } => Some(ema(Duration::from_secs(1), rate)),
        Policy::TimeWindow { window, rate, .. } => Some(ema(window, rate)),
        Policy::SlowCalls { .. } => None,
    }
}

// ---------------------------------------------------------------- recloser

#[derive(Clone)]
struct Recloser(Arc<recloser::Recloser>);

impl fmt::Debug for Recloser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Recloser")
    }
}

impl Guard for Recloser {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match self.0.call(|| op(fail)) {
            Ok(_) => Verdict::Ok,
            Err(recloser::Error::Rejected) => Verdict::Rejected,
            Err(recloser::Error::Inner(_)) => Verdict::Failed,
        }
    }
}

impl Subject for Recloser {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

fn recloser_breaker(spec: &Spec) -> Option<Box<dyn Subject>> {
    let (len, rate) = match spec.policy {
        // n consecutive failures == the last n calls all failed.
        Policy::Consecutive { failures } => (failures as usize, 1.0),
        Policy::CountWindow { size, rate } => (size, rate),
        Policy::TimeWindow { .. } | Policy::SlowCalls { .. } => return None,
    };
    let r = recloser::Recloser::custom()
        .error_rate(rate as f32)
        .closed_len(len)
        .half_open_len(1)
        .open_wait(spec.open_for)
        .build();
    Some(Box::new(Recloser(Arc::new(r))))
}

// -------------------------------------------------------- tower-resilience

fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread tokio runtime")
}

/// A tower `Service<bool>` driven through `ready().await` + `call().await`
/// inside its own current-thread runtime, one per timing thread.
struct TowerRunner<S> {
    rt: tokio::runtime::Runtime,
    svc: S,
    rng: Xorshift,
}

impl<S, E> Runner for TowerRunner<S>
where
    S: tower::Service<bool, Response = u64, Error = E> + Send + 'static,
    E: IsRejected,
{
    fn run(&mut self, iters: u64, load: Load) -> Batch {
        use tower::ServiceExt;
        let svc = &mut self.svc;
        let rng = &mut self.rng;
        self.rt.block_on(async move {
            let mut tally = Tally::default();
            let start = Instant::now();
            for _ in 0..iters {
                let fail = load.fails(rng);
                let v = match svc.ready().await {
                    Ok(s) => match s.call(fail).await {
                        Ok(_) => Verdict::Ok,
                        Err(e) => e.verdict(),
                    },
                    Err(e) => e.verdict(),
                };
                tally.add(v);
            }
            Batch {
                elapsed: start.elapsed(),
                tally,
            }
        })
    }
}

/// How an error from a tower stack says "rejected" or "failed".
pub trait IsRejected {
    /// The verdict this error stands for.
    fn verdict(&self) -> Verdict;
}

impl IsRejected for tower_resilience_circuitbreaker::CircuitBreakerError<u64> {
    fn verdict(&self) -> Verdict {
        if self.is_circuit_open() {
            Verdict::Rejected
        } else {
            Verdict::Failed
        }
    }
}

impl IsRejected for u64 {
    fn verdict(&self) -> Verdict {
        Verdict::Failed
    }
}

struct TowerSubject<S>(S);

impl<S> fmt::Debug for TowerSubject<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TowerSubject")
    }
}

impl<S, E> Subject for TowerSubject<S>
where
    S: tower::Service<bool, Response = u64, Error = E> + Clone + Send + Sync + 'static,
    E: IsRejected,
{
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(TowerRunner {
            rt: current_thread_runtime(),
            svc: self.0.clone(),
            rng: Xorshift::new(seed),
        })
    }
}

/// The guarded operation as a tower service, its error mapped by `err`.
fn op_service_as<E: 'static>(
    err: fn(u64) -> E,
) -> impl tower::Service<bool, Response = u64, Error = E, Future = std::future::Ready<Result<u64, E>>>
       + Clone
       + Send
       + Sync
       + 'static {
    tower::service_fn(move |fail: bool| std::future::ready(op(fail).map_err(err)))
}

/// The guarded operation as a tower service (its error is `op`'s own).
fn op_service() -> impl tower::Service<
    bool,
    Response = u64,
    Error = u64,
    Future = std::future::Ready<Result<u64, u64>>,
> + Clone
       + Send
       + Sync
       + 'static {
    op_service_as(|e| e)
}

fn tower_resilience_breaker(spec: &Spec) -> Option<Box<dyn Subject>> {
    use tower::Layer;
    use tower_resilience_circuitbreaker::{CircuitBreakerLayer, SlidingWindowType};
    let b = CircuitBreakerLayer::builder()
        .wait_duration_in_open(spec.open_for)
        .permitted_calls_in_half_open(1);
    let b = match spec.policy {
        Policy::Consecutive { failures } => b.consecutive_failures(failures as usize),
        Policy::CountWindow { size, rate } => b
            .sliding_window_type(SlidingWindowType::CountBased)
            .sliding_window_size(size)
            .failure_rate_threshold(rate)
            .minimum_number_of_calls(spec.min_calls as usize),
        Policy::TimeWindow { window, rate, .. } => b
            .sliding_window_type(SlidingWindowType::TimeBased)
            .sliding_window_duration(window)
            .failure_rate_threshold(rate)
            .minimum_number_of_calls(spec.min_calls as usize),
        Policy::SlowCalls {
            size,
            threshold,
            rate,
        } => b
            .sliding_window_type(SlidingWindowType::CountBased)
            .sliding_window_size(size)
            .failure_rate_threshold(rate)
            .slow_call_duration_threshold(threshold)
            .slow_call_rate_threshold(rate)
            .minimum_number_of_calls(spec.min_calls as usize),
    };
    let layer = b.build().expect("valid tower-resilience config");
    Some(Box::new(TowerSubject(layer.layer(op_service()))))
}

// ---------------------------------------------------------------- seatbelt

#[derive(Clone)]
struct Seatbelt<S> {
    svc: S,
    // Keeps the clock's driver alive as long as any handle.
    _driver: Arc<tick::runtime::ClockDriver>,
}

impl<S> fmt::Debug for Seatbelt<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Seatbelt")
    }
}

impl<S> Guard for Seatbelt<S>
where
    S: layered::Service<bool, Out = Result<u64, u64>> + Send + Sync + 'static,
{
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match now(self.svc.execute(fail)) {
            Ok(_) => Verdict::Ok,
            Err(SEATBELT_REJECTED) => Verdict::Rejected,
            Err(_) => Verdict::Failed,
        }
    }
}

impl<S> Subject for Seatbelt<S>
where
    S: layered::Service<bool, Out = Result<u64, u64>> + Clone + Send + Sync + 'static,
{
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

const SEATBELT_REJECTED: u64 = u64::MAX;

/// seatbelt's breaker layer configured for `spec` (see the module docs), on
/// `context`; `None` when seatbelt has no equivalent policy.
fn seatbelt_layer<In: Send + 'static>(
    spec: &Spec,
    context: &seatbelt::ResilienceContext<In, Result<u64, u64>>,
) -> Option<seatbelt::breaker::BreakerLayer<In, Result<u64, u64>>> {
    use seatbelt::breaker::{Breaker, HalfOpenMode};
    use seatbelt::RecoveryInfo;
    let (threshold, min, sampling) = match spec.policy {
        // No consecutive policy: "nearly every call in the last second failed".
        Policy::Consecutive { failures } => (0.99, failures, Duration::from_secs(1)),
        Policy::CountWindow { rate, .. } => (rate as f32, spec.min_calls, Duration::from_secs(1)),
        Policy::TimeWindow { window, rate, .. } => (rate as f32, spec.min_calls, window),
        Policy::SlowCalls { .. } => return None,
    };
    Some(
        Breaker::layer("bench", context)
            .recovery_with(|out: &Result<u64, u64>, _| match out {
                Ok(_) => RecoveryInfo::never(),
                Err(_) => RecoveryInfo::retry(),
            })
            .rejected_input_error(|_, _| SEATBELT_REJECTED)
            .failure_threshold(threshold)
            .min_throughput(min)
            .sampling_duration(sampling)
            .break_duration(spec.open_for)
            .half_open_mode(HalfOpenMode::quick()),
    )
}

/// A real (system) clock for seatbelt: it only reads it; no timer is ever
/// set, so its driver need not run (it is kept alive with the service).
fn seatbelt_clock() -> (tick::Clock, tick::runtime::ClockDriver) {
    tick::runtime::InactiveClock::default().activate(Waker::noop().clone())
}

fn seatbelt_breaker(spec: &Spec) -> Option<Box<dyn Subject>> {
    use layered::{Execute, Stack};
    let (clock, driver) = seatbelt_clock();
    let context = seatbelt::ResilienceContext::<bool, Result<u64, u64>>::new(&clock);
    let layer = seatbelt_layer(spec, &context)?;
    let svc = (layer, Execute::new(|fail: bool| async move { op(fail) })).into_service();
    Some(Box::new(Seatbelt {
        svc,
        _driver: Arc::new(driver),
    }))
}

// ------------------------------------------------------------------- keyed

/// Keys the keyed entries cycle over; each has its breaker before the
/// first measured call (the subject makes them when it is built).
pub const KEYS: u64 = 100;

/// The key of this call, and the next one (0, 1, ..., KEYS - 1, 0, ...).
#[inline(always)]
fn next_key(key: &mut u64) -> u64 {
    let k = *key;
    *key = if k + 1 == KEYS { 0 } else { k + 1 };
    k
}

/// fusebox's `BreakerSet<u64>`: `set.call(&key, ..)`, the key cycling over
/// [`KEYS`] keys (each thread from its own start).
#[derive(Debug, Clone)]
struct FuseboxKeyed {
    set: fusebox::BreakerSet<u64>,
    key: u64,
}

impl Guard for FuseboxKeyed {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        let key = next_key(&mut self.key);
        match self.set.call(&key, || op(fail)) {
            Ok(_) => Verdict::Ok,
            Err(e) if e.is_rejected() => Verdict::Rejected,
            Err(_) => Verdict::Failed,
        }
    }
}

impl Subject for FuseboxKeyed {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        let guard = FuseboxKeyed {
            set: self.set.clone(),
            key: seed % KEYS,
        };
        Box::new(SyncRunner::new(guard, seed))
    }
}

fn fusebox_keyed(spec: &Spec) -> FuseboxKeyed {
    let set = fusebox::BreakerSet::builder(fusebox_builder(spec))
        .max_keys(1000)
        .build()
        .expect("benchmark spec is a valid fusebox config");
    for k in 0..KEYS {
        drop(set.get(&k));
    }
    assert_eq!(set.len() as u64, KEYS, "every key has its breaker");
    FuseboxKeyed { set, key: 0 }
}

/// seatbelt's breaker partitioned by key (`breaker_id`, one engine per
/// [`BreakerId`](seatbelt::breaker::BreakerId)); the input carries the key.
#[derive(Clone)]
struct SeatbeltKeyed<S> {
    svc: S,
    key: u64,
    _driver: Arc<tick::runtime::ClockDriver>,
}

impl<S> fmt::Debug for SeatbeltKeyed<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeatbeltKeyed")
    }
}

impl<S> Guard for SeatbeltKeyed<S>
where
    S: layered::Service<(u64, bool), Out = Result<u64, u64>> + Send + Sync + 'static,
{
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        let key = next_key(&mut self.key);
        match now(self.svc.execute((key, fail))) {
            Ok(_) => Verdict::Ok,
            Err(SEATBELT_REJECTED) => Verdict::Rejected,
            Err(_) => Verdict::Failed,
        }
    }
}

impl<S> Subject for SeatbeltKeyed<S>
where
    S: layered::Service<(u64, bool), Out = Result<u64, u64>> + Clone + Send + Sync + 'static,
{
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        let mut guard = self.clone();
        guard.key = seed % KEYS;
        Box::new(SyncRunner::new(guard, seed))
    }
}

fn seatbelt_keyed(spec: &Spec) -> Box<dyn Subject> {
    use layered::{Execute, Service as _, Stack};
    use seatbelt::breaker::BreakerId;
    let (clock, driver) = seatbelt_clock();
    let context = seatbelt::ResilienceContext::<(u64, bool), Result<u64, u64>>::new(&clock);
    let layer = seatbelt_layer(spec, &context)
        .expect("seatbelt has an equivalent of the keyed spec")
        .breaker_id(|input: &(u64, bool)| BreakerId::from(input.0));
    let svc = (
        layer,
        Execute::new(|(_, fail): (u64, bool)| async move { op(fail) }),
    )
        .into_service();
    // One successful call per key makes its engine.
    for k in 0..KEYS {
        assert_eq!(now(svc.execute((k, false))), Ok(42));
    }
    Box::new(SeatbeltKeyed {
        svc,
        key: 0,
        _driver: Arc::new(driver),
    })
}

// ----------------------------------------------------------------- hedging

/// fusebox's `Hedge::call` on a ready operation: the first attempt answers
/// at its first poll, so the hedge timer is made but never polled.
#[derive(Debug, Clone)]
struct FuseboxHedge(fusebox::hedge::Hedge);

impl AsyncGuard for FuseboxHedge {
    async fn call(&mut self, fail: bool) -> Verdict {
        match self.0.call(|| std::future::ready(op(fail))).await {
            Ok(_) => Verdict::Ok,
            Err(_) => Verdict::Failed,
        }
    }
}

impl Subject for FuseboxHedge {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(AsyncRunner::new(
            current_thread_runtime(),
            self.clone(),
            seed,
        ))
    }
}

fn fusebox_hedge(delay: fusebox::hedge::Delay) -> FuseboxHedge {
    FuseboxHedge(
        fusebox::hedge::Hedge::builder()
            .delay(delay)
            .build()
            .expect("a valid hedge"),
    )
}

/// The operation awaited directly, in the same loop and runtime as the
/// hedges: what the async runner itself costs.
#[derive(Debug, Clone, Copy)]
struct AsyncBaseline;

impl AsyncGuard for AsyncBaseline {
    async fn call(&mut self, fail: bool) -> Verdict {
        match std::future::ready(op(fail)).await {
            Ok(_) => Verdict::Ok,
            Err(_) => Verdict::Failed,
        }
    }
}

impl Subject for AsyncBaseline {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(AsyncRunner::new(current_thread_runtime(), *self, seed))
    }
}

/// tower's hedge policy for the bench: every request may be sent twice.
#[derive(Debug, Clone, Copy)]
struct Idempotent;

impl tower::hedge::Policy<bool> for Idempotent {
    fn clone_request(&self, req: &bool) -> Option<bool> {
        Some(*req)
    }

    fn can_retry(&self, _: &bool) -> bool {
        true
    }
}

/// tower's `Hedge` has no fixed delay: it hedges at a percentile of the
/// latencies it recorded over its last `period`, once it holds
/// `min_data_points`. Seeded with 100 latencies of `delay` (whole
/// milliseconds, tower's unit), p95, one data point needed and a period of
/// an hour, it holds a hedge armed `delay` after each call, as fusebox's
/// fixed delay does; the answers recorded during the run go into the
/// histogram's other half, which would be read only after a period.
/// Not `Clone`: each runner builds its own.
fn tower_hedge(delay: Duration) -> Box<dyn Subject> {
    let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX).max(1);
    Box::new(TowerBuilt(move || {
        tower::hedge::Hedge::new_with_mock_latencies(
            op_service_as(|_| OpFailed),
            Idempotent,
            1,
            0.95,
            Duration::from_secs(3600),
            &[ms; 100],
        )
    }))
}

/// A tower service that is not `Clone`, built anew for each runner by `F`
/// and driven as [`TowerSubject`] drives its services.
struct TowerBuilt<F>(F);

impl<F> fmt::Debug for TowerBuilt<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TowerBuilt")
    }
}

impl<F, S, E> Subject for TowerBuilt<F>
where
    F: Fn() -> S + Send + Sync,
    S: tower::Service<bool, Response = u64, Error = E> + Send + 'static,
    E: IsRejected,
{
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(TowerRunner {
            rt: current_thread_runtime(),
            svc: (self.0)(),
            rng: Xorshift::new(seed),
        })
    }
}

// ---------------------------------------------------------------- bulkheads

/// The bulkheads measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limiter {
    /// No limit: the operation called directly.
    Baseline,
    /// fusebox's `Bulkhead::try_acquire`, permit dropped after the call.
    Fusebox,
    /// `tokio::sync::Semaphore::try_acquire`, permit dropped after the call.
    TokioSemaphore,
    /// `tower::limit::ConcurrencyLimit`, driven by `ready().await` + `call().await`.
    TowerConcurrencyLimit,
    /// fusebox's `limit::AdaptiveLimit::try_acquire`, a success (its
    /// round-trip time read from the default clock) after the call.
    FuseboxAdaptive,
    /// fusebox's `throttle::Throttle::try_acquire`, an accept after the call.
    FuseboxThrottle,
    /// tower-resilience-adaptive 0.14's `AdaptiveLimiterLayer` with its
    /// `Vegas` algorithm, driven by `ready().await` + `call().await` as
    /// `ConcurrencyLimit` is (see [`tower_resilience_adaptive`]).
    TowerResilienceAdaptive,
}

impl Limiter {
    /// Every limiter, fusebox first.
    pub const ALL: [Limiter; 7] = [
        Limiter::Fusebox,
        Limiter::FuseboxAdaptive,
        Limiter::FuseboxThrottle,
        Limiter::TokioSemaphore,
        Limiter::TowerConcurrencyLimit,
        Limiter::TowerResilienceAdaptive,
        Limiter::Baseline,
    ];

    /// Short name used in tables and benchmark ids.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Baseline => "baseline",
            Limiter::Fusebox => "fusebox",
            Limiter::TokioSemaphore => "tokio-semaphore",
            Limiter::TowerConcurrencyLimit => "tower-concurrency-limit",
            Limiter::FuseboxAdaptive => "fusebox/adaptive_limit",
            Limiter::FuseboxThrottle => "fusebox/throttle",
            Limiter::TowerResilienceAdaptive => "tower-resilience-adaptive",
        }
    }

    /// This limiter with room for `limit` concurrent calls; `None` if not
    /// available in this build.
    pub fn build(self, limit: usize) -> Option<Box<dyn Subject>> {
        match self {
            Limiter::Baseline => Some(Box::new(Baseline)),
            Limiter::Fusebox => fusebox_bulkhead(limit),
            Limiter::TokioSemaphore => Some(Box::new(Semaphore(Arc::new(
                tokio::sync::Semaphore::new(limit),
            )))),
            Limiter::TowerConcurrencyLimit => Some(Box::new(TowerSubject(
                tower::limit::ConcurrencyLimit::new(op_service(), limit),
            ))),
            Limiter::TowerResilienceAdaptive => Some(tower_resilience_adaptive(limit)),
            #[cfg(not(feature = "adaptive"))]
            Limiter::FuseboxAdaptive | Limiter::FuseboxThrottle => None,
            #[cfg(feature = "adaptive")]
            Limiter::FuseboxAdaptive => {
                let config = fusebox::limit::LimitConfig::default()
                    .initial(u32::try_from(limit).unwrap_or(u32::MAX))
                    .max(u32::try_from(limit).unwrap_or(u32::MAX).max(1));
                Some(Box::new(FuseboxAdaptive(
                    fusebox::limit::AdaptiveLimit::new(config).expect("a valid limit"),
                )))
            }
            #[cfg(feature = "adaptive")]
            Limiter::FuseboxThrottle => Some(Box::new(FuseboxThrottle(
                fusebox::throttle::Throttle::builder()
                    .seed(1)
                    .build()
                    .expect("the default throttle"),
            ))),
        }
    }
}

/// tower-resilience-adaptive's limiter set as close to fusebox's default
/// `AdaptiveLimit` (`LimitConfig::default()` with `initial` and `max` at
/// `limit`, as the `FuseboxAdaptive` entry) as it allows: its `Vegas`
/// algorithm (fusebox's default one), `initial_limit(limit)`,
/// `min_limit(1)`, `max_limit(limit)`, `alpha(3)`, `beta(6)` (its defaults;
/// fusebox's Vegas grows below `3 * step` and shrinks above `6 * step`,
/// `step = max(1, floor(log10(limit)))`, which is 1 at 64). Unlike fusebox
/// it has no window: every success updates its RTT averages and its limit
/// (and every error halves the limit; `bulkhead_1t` has none).
fn tower_resilience_adaptive(limit: usize) -> Box<dyn Subject> {
    use tower::Layer;
    use tower_resilience_adaptive::{AdaptiveLimiterLayer, Vegas};
    let vegas = Vegas::builder()
        .initial_limit(limit)
        .min_limit(1)
        .max_limit(limit.max(1))
        .alpha(3)
        .beta(6)
        .build()
        .expect("a valid Vegas config");
    Box::new(TowerSubject(
        AdaptiveLimiterLayer::new(vegas).layer(op_service()),
    ))
}

impl IsRejected for tower_resilience_adaptive::AdaptiveError<u64> {
    fn verdict(&self) -> Verdict {
        match self {
            tower_resilience_adaptive::AdaptiveError::LimitReached => Verdict::Rejected,
            tower_resilience_adaptive::AdaptiveError::Service(_) => Verdict::Failed,
        }
    }
}

#[cfg(feature = "adaptive")]
#[derive(Debug, Clone)]
struct FuseboxAdaptive(fusebox::limit::AdaptiveLimit);

#[cfg(feature = "adaptive")]
impl Guard for FuseboxAdaptive {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match self.0.try_acquire() {
            Ok(permit) => match op(fail) {
                Ok(_) => {
                    permit.success();
                    Verdict::Ok
                }
                Err(_) => {
                    permit.dropped();
                    Verdict::Failed
                }
            },
            Err(_) => Verdict::Rejected,
        }
    }
}

#[cfg(feature = "adaptive")]
impl Subject for FuseboxAdaptive {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

#[cfg(feature = "adaptive")]
#[derive(Debug, Clone)]
struct FuseboxThrottle(fusebox::throttle::Throttle);

#[cfg(feature = "adaptive")]
impl Guard for FuseboxThrottle {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match self.0.try_acquire() {
            Ok(permit) => match op(fail) {
                Ok(_) => {
                    permit.accept();
                    Verdict::Ok
                }
                Err(_) => {
                    permit.overload();
                    Verdict::Failed
                }
            },
            Err(_) => Verdict::Rejected,
        }
    }
}

#[cfg(feature = "adaptive")]
impl Subject for FuseboxThrottle {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

#[derive(Debug, Clone)]
struct Semaphore(Arc<tokio::sync::Semaphore>);

impl Guard for Semaphore {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match self.0.try_acquire() {
            Ok(permit) => {
                let v = match op(fail) {
                    Ok(_) => Verdict::Ok,
                    Err(_) => Verdict::Failed,
                };
                drop(permit);
                v
            }
            Err(_) => Verdict::Rejected,
        }
    }
}

impl Subject for Semaphore {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

#[derive(Debug, Clone)]
struct FuseboxBulkhead(fusebox::Bulkhead);

impl Guard for FuseboxBulkhead {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match self.0.try_acquire() {
            Ok(permit) => {
                let v = match op(fail) {
                    Ok(_) => Verdict::Ok,
                    Err(_) => Verdict::Failed,
                };
                drop(permit);
                v
            }
            Err(_) => Verdict::Rejected,
        }
    }
}

impl Subject for FuseboxBulkhead {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

fn fusebox_bulkhead(limit: usize) -> Option<Box<dyn Subject>> {
    Some(Box::new(FuseboxBulkhead(fusebox::Bulkhead::new(limit))))
}

// ------------------------------------------------------------ whole stacks

/// Whole stacks of policies, and a breaker with metrics attached: what a
/// service runs, rather than one policy alone.
///
/// | stack | what one call goes through |
/// |---|---|
/// | `PipelineSync` | fusebox `Pipeline::call`: fallback, retry (3 attempts, no wait), breaker ([`REFERENCE`](crate::scenarios::REFERENCE)), bulkhead (64), timeout (1 s, a deadline on the answer) |
/// | `PipelineAsync` | the same pipeline, `call_async` (tokio timeout, async bulkhead) in a current-thread runtime |
/// | `FuseboxTower` | fusebox's tower layers: retry, breaker, bulkhead, timeout (as above), `ready` + `call` |
/// | `TowerStack` | tower's own `Retry` (3 attempts) + `ConcurrencyLimit` (64) + `Timeout` (1 s), `ready` + `call` |
/// | `Metrics(spec)` | a fusebox breaker for `spec` built by `fusebox::metrics::Metrics` (Prometheus counters and duration histogram; its default timing, one call in 16) |
/// | `MetricsEveryCall(spec)` | the same with `Metrics::with_timing(Timing::Every)`: every call timed for the histogram |
/// | `BreakerAsync(spec)` | a fusebox breaker for `spec`, `CircuitBreaker::call_async` on a ready future, polled in place (no runtime) |
/// | `BreakerSet(spec)` | fusebox `BreakerSet<u64>` of `spec`'s breakers (`max_keys(1000)`), `set.call(&key, ..)`, the key cycling over [`KEYS`] keys that all have their breaker |
/// | `SeatbeltKeyed(spec)` | seatbelt's breaker for `spec` partitioned by key (`breaker_id`), the input `(key, fail)`, keys as above |
/// | `HedgeFixed(d)` | fusebox `hedge::Hedge`, `Delay::Fixed(d)`, on a ready operation (the first attempt wins, no hedge is sent), awaited in a current-thread runtime with time |
/// | `HedgeQuantile(q)` | the same with `Delay::Quantile(q)` (min 100 samples, reached in the warm-up) |
/// | `FuseboxTowerHedge(d)` | fusebox's tower `HedgeLayer` over `Hedge` with `Delay::Fixed(d)`, `ready` + `call` in a current-thread runtime |
/// | `TowerHedge(d)` | tower's `hedge::Hedge`, its p95 delay seeded to `d` (see `tower_hedge`), `ready` + `call` in a current-thread runtime |
/// | `AsyncBaseline` | no guard: the ready operation awaited in the same loop and runtime as the hedges |
/// | `TowerBaseline` | no guard: the operation as a tower service, `ready` + `call` as the tower hedges are driven |
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stack {
    /// fusebox's 5-policy `Pipeline`, sync.
    PipelineSync,
    /// fusebox's 5-policy `Pipeline`, async.
    PipelineAsync,
    /// fusebox's tower layers: retry + breaker + bulkhead + timeout.
    FuseboxTower,
    /// tower's `Retry` + `ConcurrencyLimit` + `Timeout`.
    TowerStack,
    /// A fusebox breaker with the Prometheus `Metrics` listener.
    Metrics(Spec),
    /// The same, every call timed for the duration histogram.
    MetricsEveryCall(Spec),
    /// A fusebox breaker driven through `call_async`.
    BreakerAsync(Spec),
    /// fusebox's `BreakerSet<u64>`, keys cycling over [`KEYS`].
    BreakerSet(Spec),
    /// seatbelt's breaker partitioned by key, keys cycling over [`KEYS`].
    SeatbeltKeyed(Spec),
    /// fusebox's `Hedge` with a fixed delay; the first attempt wins.
    HedgeFixed(Duration),
    /// fusebox's `Hedge` with a quantile delay; the first attempt wins.
    HedgeQuantile(f64),
    /// fusebox's tower `HedgeLayer`, fixed delay; the first attempt wins.
    FuseboxTowerHedge(Duration),
    /// tower's `Hedge`, its delay seeded to this; the first attempt wins.
    TowerHedge(Duration),
    /// The ready operation awaited in the hedges' async runner.
    AsyncBaseline,
    /// The operation as a tower service, driven as the tower hedges are.
    TowerBaseline,
}

const STACK_LIMIT: usize = 64;
const STACK_TIMEOUT: Duration = Duration::from_secs(1);
const STACK_ATTEMPTS: u32 = 3;

fn stack_breaker() -> fusebox::CircuitBreaker {
    fusebox_builder(&crate::scenarios::REFERENCE)
        .build()
        .expect("benchmark spec is a valid fusebox config")
}

fn stack_retry() -> fusebox::retry::Retry<fusebox::retry::Constant> {
    fusebox::retry::Retry::builder()
        .max_attempts(STACK_ATTEMPTS)
        .backoff(fusebox::retry::Constant::new(Duration::ZERO))
        .build()
        .expect("valid retry")
}

impl Stack {
    /// Builds the stack, ready to be driven.
    pub fn build(self) -> Box<dyn Subject> {
        match self {
            Stack::PipelineSync | Stack::PipelineAsync => {
                let p: BenchPipeline = fusebox::Pipeline::builder()
                    .fallback(no_fallback as NoFallbackFn)
                    .retry(stack_retry())
                    .breaker(stack_breaker())
                    .bulkhead(fusebox::Bulkhead::new(STACK_LIMIT))
                    .timeout(STACK_TIMEOUT)
                    .build();
                Box::new(PipelineSubject {
                    pipeline: Arc::new(p),
                    sync: self == Stack::PipelineSync,
                })
            }
            Stack::FuseboxTower => {
                use fusebox::tower::{
                    BulkheadLayer, CircuitBreakerLayer, RetryLayer, TimeoutLayer,
                };
                let svc = tower::ServiceBuilder::new()
                    .layer(RetryLayer::new(stack_retry()))
                    .layer(CircuitBreakerLayer::new(stack_breaker()))
                    .layer(BulkheadLayer::new(fusebox::Bulkhead::new(STACK_LIMIT)))
                    .layer(TimeoutLayer::new(STACK_TIMEOUT))
                    .service(op_service_as(|_| OpFailed));
                Box::new(TowerSubject(svc))
            }
            Stack::TowerStack => {
                let svc = tower::ServiceBuilder::new()
                    .retry(Attempts(STACK_ATTEMPTS))
                    .concurrency_limit(STACK_LIMIT)
                    .timeout(STACK_TIMEOUT)
                    .service(op_service_as(|_| OpFailed));
                Box::new(TowerSubject(svc))
            }
            Stack::Metrics(spec) | Stack::MetricsEveryCall(spec) => {
                let mut registry = prometheus_client::registry::Registry::default();
                let mut metrics = fusebox::metrics::Metrics::new(&mut registry);
                if let Stack::MetricsEveryCall(_) = self {
                    metrics = metrics.with_timing(fusebox::Timing::Every);
                }
                let breaker = metrics
                    .build("bench", fusebox_builder(&spec))
                    .expect("benchmark spec is a valid fusebox config");
                Box::new(Fusebox(breaker))
            }
            Stack::BreakerAsync(spec) => Box::new(FuseboxAsync(fusebox_breaker(&spec).0)),
            Stack::BreakerSet(spec) => Box::new(fusebox_keyed(&spec)),
            Stack::SeatbeltKeyed(spec) => seatbelt_keyed(&spec),
            Stack::HedgeFixed(d) => Box::new(fusebox_hedge(fusebox::hedge::Delay::Fixed(d))),
            Stack::HedgeQuantile(q) => Box::new(fusebox_hedge(fusebox::hedge::Delay::Quantile(q))),
            Stack::FuseboxTowerHedge(d) => {
                use tower::Layer;
                let hedge = fusebox_hedge(fusebox::hedge::Delay::Fixed(d)).0;
                Box::new(TowerSubject(
                    fusebox::tower::HedgeLayer::new(hedge).layer(op_service_as(|_| OpFailed)),
                ))
            }
            Stack::TowerHedge(d) => tower_hedge(d),
            Stack::AsyncBaseline => Box::new(AsyncBaseline),
            Stack::TowerBaseline => Box::new(TowerSubject(op_service())),
        }
    }
}

/// A fusebox breaker driven through `call_async`: the future of a ready
/// operation, polled in place with a no-op waker (it never waits), so what
/// is measured is the breaker's async wrapper, not a runtime.
#[derive(Debug, Clone)]
struct FuseboxAsync(fusebox::CircuitBreaker);

impl Guard for FuseboxAsync {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        match now(self.0.call_async(|| std::future::ready(op(fail)))) {
            Ok(_) => Verdict::Ok,
            Err(e) if e.is_rejected() => Verdict::Rejected,
            Err(_) => Verdict::Failed,
        }
    }
}

impl Subject for FuseboxAsync {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        Box::new(SyncRunner::new(self.clone(), seed))
    }
}

/// The guarded operation's failure as an error type (boxed on tower paths).
#[derive(Debug, Clone, Copy)]
pub struct OpFailed;

impl fmt::Display for OpFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the operation failed")
    }
}

impl std::error::Error for OpFailed {}

/// tower's retry policy for the stack: up to [`STACK_ATTEMPTS`] attempts.
#[derive(Debug, Clone, Copy)]
struct Attempts(u32);

impl<E> tower::retry::Policy<bool, u64, E> for Attempts {
    type Future = std::future::Ready<()>;

    fn retry(&mut self, _: &mut bool, result: &mut Result<u64, E>) -> Option<Self::Future> {
        match result {
            Err(_) if self.0 > 1 => {
                self.0 -= 1;
                Some(std::future::ready(()))
            }
            _ => None,
        }
    }

    fn clone_request(&mut self, req: &bool) -> Option<bool> {
        Some(*req)
    }
}

impl IsRejected for tower::BoxError {
    fn verdict(&self) -> Verdict {
        if self.is::<fusebox::Rejected>() {
            Verdict::Rejected
        } else {
            Verdict::Failed
        }
    }
}

fn no_fallback(_: fusebox::Cause<'_, u64>) -> Option<u64> {
    None
}

type BenchPipeline =
    fusebox::Pipeline<fusebox::retry::Constant, fusebox::retry::AnyError, NoFallbackFn>;
type NoFallbackFn = for<'a> fn(fusebox::Cause<'a, u64>) -> Option<u64>;

#[derive(Clone)]
struct PipelineSubject {
    pipeline: Arc<BenchPipeline>,
    sync: bool,
}

impl fmt::Debug for PipelineSubject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PipelineSubject")
    }
}

fn pipeline_verdict(r: Result<u64, fusebox::PipelineError<u64>>) -> Verdict {
    match r {
        Ok(_) => Verdict::Ok,
        Err(e) if e.is_refusal() => Verdict::Rejected,
        Err(_) => Verdict::Failed,
    }
}

impl Guard for PipelineSubject {
    #[inline(always)]
    fn call(&mut self, fail: bool) -> Verdict {
        pipeline_verdict(self.pipeline.call(|| op(fail)))
    }
}

/// The async pipeline, driven inside its own current-thread runtime.
struct AsyncPipelineRunner {
    rt: tokio::runtime::Runtime,
    pipeline: Arc<BenchPipeline>,
    rng: Xorshift,
}

impl Runner for AsyncPipelineRunner {
    fn run(&mut self, iters: u64, load: Load) -> Batch {
        let p = &self.pipeline;
        let rng = &mut self.rng;
        self.rt.block_on(async move {
            let mut tally = Tally::default();
            let start = Instant::now();
            for _ in 0..iters {
                let fail = load.fails(rng);
                tally.add(pipeline_verdict(
                    p.call_async(|| std::future::ready(op(fail))).await,
                ));
            }
            Batch {
                elapsed: start.elapsed(),
                tally,
            }
        })
    }
}

impl Subject for PipelineSubject {
    fn runner(&self, seed: u64) -> Box<dyn Runner> {
        if self.sync {
            Box::new(SyncRunner::new(self.clone(), seed))
        } else {
            Box::new(AsyncPipelineRunner {
                rt: current_thread_runtime(),
                pipeline: Arc::clone(&self.pipeline),
                rng: Xorshift::new(seed),
            })
        }
    }
}

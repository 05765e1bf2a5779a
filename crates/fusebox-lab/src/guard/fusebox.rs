//! `kind = "fusebox"`: a [`fusebox::CircuitBreaker`] built by a fusebox
//! registry ([`Fusebox`]) from the scenario's [`BreakerConfig`], with the
//! strategy's bulkhead and rate limiter if it has them (and its adaptive
//! limit, throttle and retry budget, built on the run's clock).
//!
//! This is the one place where a scenario's fusebox strategy becomes a
//! breaker: [`Breakers::guard`] installs the config under the run's name
//! as one `[dependencies.NAME]` table and asks the registry for its
//! policies, so they are built exactly as a service's are (the rate limiter
//! on the registry's clock: the run's `ManualClock` in virtual mode), and
//! every observer of the registry (the metrics and dashboard of `run
//! --serve`) sees them.

use super::{Admission, Guard, LabClock, Ticket, TransitionRecord};
use crate::scenario::fusebox::BreakerConfig;
use crate::scenario::{CallResult, StrategySpec};
use crate::sync::lock;
use fusebox::limit::{AdaptiveLimit, LimitPermit};
use fusebox::ratelimit::RateLimiter;
use fusebox::registry::{
    BulkheadConfig, DependencyConfig, Fusebox, FuseboxBuilder, FuseboxConfig, Observer, Tags,
};
use fusebox::retry::RetryBudget;
use fusebox::throttle::{Throttle, ThrottlePermit};
use fusebox::{Builder, Bulkhead, BulkheadPermit};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Log = Arc<Mutex<Vec<TransitionRecord>>>;

/// Transition logs waiting for the breaker of their name to be built.
#[derive(Default)]
struct Logs {
    /// An entry lives from [`Breakers::guard`] to the build right after it.
    pending: Mutex<HashMap<String, Pending>>,
}

/// What the build of one breaker waits for.
struct Pending {
    log: Log,
    /// The run's time zero on the registry's clock.
    offset: Duration,
    /// The breaker's own name when it differs from its registry name: the
    /// name a real-mode fleet shares it by (`fusebox::fleet` shares by the
    /// breaker's name; each replica's has the same).
    shares_as: Option<String>,
}

/// The registry observer that hooks each run's transition log onto its breaker.
struct LogObserver(Arc<Logs>);

impl Observer for LogObserver {
    fn instrument(&self, name: &str, _tags: &Tags, builder: Builder) -> Builder {
        let Some(Pending {
            log,
            offset,
            shares_as,
        }) = lock(&self.0.pending).remove(name)
        else {
            return builder;
        };
        let builder = match shares_as {
            Some(n) => builder.name(n),
            None => builder,
        };
        builder.on_transition(move |t: &fusebox::Transition| {
            lock(&log).push(TransitionRecord {
                at: t.at.saturating_sub(offset),
                from: t.from.as_str(),
                to: t.to.as_str(),
                remote: matches!(t.reason, fusebox::Reason::Remote),
            });
        })
    }
}

/// Where the lab's fusebox breakers live: a fusebox registry, either one per
/// run on the run's clock ([`Breakers::for_run`]) or one shared by every run
/// of the process on real time ([`Breakers::shared`], for `run --serve`).
#[derive(Clone)]
pub struct Breakers {
    registry: Fusebox,
    /// Every run's dependency table (breaker, bulkhead, rate limit) so far:
    /// each run adds its own and reloads the registry with the whole.
    config: Arc<Mutex<FuseboxConfig>>,
    logs: Arc<Logs>,
    /// The registry clock's zero, when the registry is shared by real-time runs.
    origin: Option<Instant>,
}

impl fmt::Debug for Breakers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breakers")
            .field("names", &self.registry.names())
            .field("shared", &self.origin.is_some())
            .finish()
    }
}

impl Breakers {
    fn new(clock: LabClock, observe: impl FnOnce(FuseboxBuilder) -> FuseboxBuilder) -> Self {
        let logs = Arc::new(Logs::default());
        // No config budget: the registry keeps every run's breakers (a served
        // run's series stay), so a long session or a sweep adds up; what one
        // scenario may ask is the scenario's own limits' business.
        let builder = Fusebox::builder()
            .clock(clock.clone())
            .config_budget(usize::MAX)
            .observer(LogObserver(Arc::clone(&logs)));
        let registry = observe(builder)
            .build()
            .expect("the default registry config is valid");
        let origin = match clock {
            LabClock::Real { origin } => Some(origin),
            LabClock::Virtual(_) => None,
        };
        Breakers {
            registry,
            config: Arc::default(),
            logs,
            origin,
        }
    }

    /// A registry for one run, on the run's own clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::guard::{self, Admission, Breakers, LabClock};
    /// use fusebox_lab::scenario::Scenario;
    ///
    /// let sc = &Scenario::embedded()[0];
    /// let clock = LabClock::Virtual(fusebox::ManualClock::new());
    /// let breakers = Breakers::for_run(&clock);
    /// let g = guard::build(&sc.strategies[2], &clock, &breakers, "seed000-50rps/fusebox", None);
    /// assert!(matches!(g.admit(std::time::Duration::ZERO), Admission::Call(_)));
    /// assert_eq!(breakers.registry().names(), ["seed000-50rps/fusebox"]);
    /// ```
    pub fn for_run(clock: &LabClock) -> Self {
        let mut b = Breakers::new(clock.clone(), |b| b);
        b.origin = None;
        b
    }

    /// One registry for every real-time run of the process, on real time
    /// from now; `observe` adds its observers (e.g.
    /// `|b| b.observer(metrics)`).
    pub fn shared(observe: impl FnOnce(FuseboxBuilder) -> FuseboxBuilder) -> Self {
        Breakers::new(
            LabClock::Real {
                origin: Instant::now(),
            },
            observe,
        )
    }

    /// The registry.
    pub fn registry(&self) -> &Fusebox {
        &self.registry
    }

    /// The guard of one run: the breaker `name` built from `config`, behind
    /// the spec's bulkhead of `max_concurrent` slots, rate limiter of
    /// `rate_limit` (both of the same name) and adaptive `limit`, if given. A
    /// name already taken (the same scenario run twice) gets `#2`, `#3`,
    /// ...: each run starts with a fresh breaker. Both are tagged
    /// `service = SCENARIO` (a run's name is `SCENARIO/STRATEGY`; a
    /// scenario has one downstream), as a service tags its breakers.
    /// `shares_as`: the breaker's own name, if not `name` (a real-mode
    /// fleet's replicas, `SCENARIO/STRATEGY/replica-N` in the registry, all
    /// share `SCENARIO/STRATEGY`).
    pub(super) fn guard(
        &self,
        name: &str,
        shares_as: Option<&str>,
        config: &BreakerConfig,
        spec: &StrategySpec,
        clock: &LabClock,
    ) -> FuseboxGuard {
        let (max_concurrent, rate_limit, limit, throttle) = (
            spec.max_concurrent,
            spec.rate_limit,
            spec.limit,
            spec.throttle,
        );
        let mut unique = name.to_string();
        let mut k = 1;
        while self.registry.get(&unique).is_some() {
            k += 1;
            unique = format!("{name}#{k}");
        }
        // The registry's clock reads real time since its own zero; a run's
        // transitions are reported since the run's zero.
        let offset = match (self.origin, clock) {
            (Some(zero), LabClock::Real { origin }) => origin.saturating_duration_since(zero),
            _ => Duration::ZERO,
        };
        let log = Log::default();
        lock(&self.logs.pending).insert(
            unique.clone(),
            Pending {
                log: Arc::clone(&log),
                offset,
                shares_as: shares_as.map(str::to_owned),
            },
        );
        let service = name.split_once('/').map_or(name, |(scenario, _)| scenario);
        let tags = Tags::from([("service".to_owned(), service.to_owned())]);
        {
            let mut all = lock(&self.config);
            all.dependencies.insert(
                unique.clone(),
                DependencyConfig {
                    breaker: config.clone(),
                    bulkhead: max_concurrent.map(|n| BulkheadConfig {
                        max_concurrent: Some(n),
                        ..Default::default()
                    }),
                    rate_limit,
                    tags,
                    ..Default::default()
                },
            );
            // Validated when the scenario was loaded or a sweep set one of
            // its keys; the other entries were applied before.
            self.registry
                .reload(all.clone())
                .expect("fusebox configuration checked when loaded or swept");
        }
        let breaker = self.registry.breaker(&unique);
        let bulkhead = max_concurrent.map(|_| self.registry.bulkhead(&unique));
        let rate_limiter = self.registry.rate_limiter(&unique);
        // Not (yet) a registry policy: built here, on the run's clock.
        let limit = limit.map(|config| LimitTrace {
            limit: AdaptiveLimit::builder()
                .config(config)
                .clock(clock.clone())
                .build()
                .expect("limit configuration checked when loaded"),
            trace: Arc::default(),
        });
        // Built here too, on the run's clock; a fixed seed, so a virtual
        // run is the same every time.
        let throttle = throttle.map(|config| {
            Throttle::builder()
                .config(config)
                .clock(clock.clone())
                .seed(1)
                .build()
                .expect("throttle configuration checked when loaded")
        });
        // The library's retry budget, on the run's clock too.
        let retry_budget = spec.retry_budget.map(|config| {
            config
                .build(clock.clone())
                .expect("retry budget configuration checked when loaded")
        });
        FuseboxGuard {
            breaker,
            bulkhead,
            rate_limiter,
            limit,
            throttle,
            retry_budget,
            log,
        }
    }
}

/// `kind = "fusebox"`: a registry's breaker; its transitions are collected by
/// a listener the registry's [`LogObserver`] put on it.
#[derive(Debug)]
pub struct FuseboxGuard {
    breaker: fusebox::CircuitBreaker,
    bulkhead: Option<Bulkhead>,
    rate_limiter: Option<RateLimiter>,
    limit: Option<LimitTrace>,
    throttle: Option<Throttle>,
    retry_budget: Option<RetryBudget>,
    log: Log,
}

/// An adaptive limit and the record of its limit over time.
#[derive(Debug, Clone)]
struct LimitTrace {
    limit: AdaptiveLimit,
    trace: Arc<Mutex<Vec<(Duration, u32)>>>,
}

impl LimitTrace {
    /// Notes the limit in force at `now` if it changed.
    fn note(&self, now: Duration) {
        let mut trace = lock(&self.trace);
        let limit = self.limit.limit();
        if trace.last().is_none_or(|&(_, last)| last != limit) {
            trace.push((now, limit));
        }
    }
}

/// A call the guard let through: the breaker's permit, and the bulkhead's
/// slot (given back when the call ends).
struct FuseboxTicket {
    permit: fusebox::Permit,
    _slot: Option<BulkheadPermit>,
    /// The adaptive limit's permit: an answer is a sample, a timeout or a
    /// refusal as overloaded a drop, an error no sample.
    limit: Option<(LimitPermit, LimitTrace)>,
    /// The throttle's permit: an answer is an accept, an error or a
    /// timeout an overload.
    throttle: Option<ThrottlePermit>,
}

impl Ticket for FuseboxTicket {
    fn finish(self: Box<Self>, now: Duration, result: CallResult) {
        if result.is_ok() {
            self.permit.success()
        } else {
            self.permit.failure()
        }
        if let Some(permit) = self.throttle {
            match result {
                CallResult::Success => permit.accept(),
                CallResult::Timeout | CallResult::Error | CallResult::Overloaded => {
                    permit.overload()
                }
            }
        }
        if let Some((permit, trace)) = self.limit {
            match result {
                CallResult::Success => permit.success(),
                CallResult::Timeout | CallResult::Overloaded => permit.dropped(),
                CallResult::Error => permit.ignore(),
            }
            trace.note(now);
        }
    }
}

impl Guard for FuseboxGuard {
    fn admit(&self, now: Duration) -> Admission {
        // The breaker reads the run's clock itself (set by the simulation in
        // virtual mode), which is the same time as `now`.
        // The throttle first: a request it refuses is counted as a request
        // and goes no further.
        let throttle = match self.throttle.as_ref().map(Throttle::try_acquire) {
            None => None,
            Some(Ok(permit)) => Some(permit),
            Some(Err(_)) => return Admission::FastFail,
        };
        // The rate next: it is spent whatever happens next (a cell has
        // nothing to give back), and a call over the rate takes neither a
        // slot nor a permit. The limiter reads the run's clock too.
        if let Some(Err(_)) = self.rate_limiter.as_ref().map(RateLimiter::try_acquire) {
            return Admission::FastFail;
        }
        // The adaptive limit next (where the pipeline puts it: inside the
        // rate limiter, outside the bulkhead); a refused call takes nothing.
        let limit = match &self.limit {
            None => None,
            Some(l) => {
                l.note(now);
                match l.limit.try_acquire() {
                    Ok(permit) => Some((permit, l.clone())),
                    Err(_) => return Admission::FastFail,
                }
            }
        };
        // The slot next: a call the bulkhead refuses never takes a
        // breaker permit it would drop without a verdict.
        let slot = match self.bulkhead.as_ref().map(Bulkhead::try_acquire) {
            None => None,
            Some(Ok(slot)) => Some(slot),
            Some(Err(_)) => return Admission::FastFail,
        };
        match self.breaker.try_acquire() {
            Ok(permit) => Admission::Call(Box::new(FuseboxTicket {
                permit,
                _slot: slot,
                limit,
                throttle,
            })),
            Err(_) => Admission::FastFail,
        }
    }

    fn begin_request(&self, _now: Duration) {
        // As the library's `Retry` does once per call it runs.
        if let Some(b) = &self.retry_budget {
            b.deposit();
        }
    }

    fn allow_retry(&self, _now: Duration) -> bool {
        self.retry_budget
            .as_ref()
            .is_none_or(RetryBudget::try_withdraw)
    }

    fn limit_trace(&self) -> Vec<(Duration, u32)> {
        self.limit
            .as_ref()
            .map(|l| lock(&l.trace).clone())
            .unwrap_or_default()
    }

    fn transitions(&self) -> Vec<TransitionRecord> {
        lock(&self.log).clone()
    }

    fn hold(&self, _now: Duration) {
        self.breaker.force_open();
    }

    fn release(&self, _now: Duration) {
        self.breaker.reset();
    }

    fn state(&self, _now: Duration) -> &'static str {
        self.breaker.state().as_str()
    }

    fn probes_in_flight(&self) -> u32 {
        self.breaker.probes_in_flight()
    }

    fn open_until(&self, now: Duration) -> Option<Duration> {
        let snapshot = self.breaker.snapshot();
        let open_for = self.breaker.config().open_for?;
        (snapshot.state == fusebox::State::Open)
            .then(|| now.saturating_sub(snapshot.since_transition) + open_for)
    }

    fn breaker(&self) -> Option<fusebox::CircuitBreaker> {
        Some(self.breaker.clone())
    }
}

//! A dependency of several hosts: the client's balancer and what guards
//! each host.
//!
//! - [`Shared`]: one guard (whatever its kind) for every host; requests go
//!   round-robin, and the guard is asked before the host is called.
//! - [`PerHost`]: one fusebox breaker per host, a library
//!   [`fusebox::BreakerSet`] on the run's clock; requests go round-robin (a
//!   request bound for an open host fast-fails) or to the host
//!   [`BreakerSet::pick`] picks among all of them; with `outliers`, the
//!   set's outlier detection runs at the first admission at or after each
//!   `interval` boundary of the run's clock (the set's timer, driven by the
//!   run: virtual time in virtual mode).
//!
//! Both log, per admission asked for, the host chosen and whether the call
//! went ([`HostRun`]), for the report.

use super::{Admission, Guard, LabClock, Ticket, TransitionRecord};
use crate::scenario::{Balance, CallResult, HostPolicy, StrategyKind, StrategySpec};
use crate::sync::lock;
use fusebox::BreakerSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One admission asked for: when, the host chosen (from 0; `None`: no host
/// could be picked), and whether the call went to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostAttempt {
    /// When the worker started the attempt.
    pub at: Duration,
    /// The host it was bound for.
    pub host: Option<usize>,
    /// Admitted (a downstream call) or fast-failed.
    pub called: bool,
}

/// What one run did with the hosts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostRun {
    /// How many hosts.
    pub hosts: usize,
    /// One breaker per host.
    pub per_host: bool,
    /// Every admission asked for, in order.
    pub attempts: Vec<HostAttempt>,
    /// Outlier detection's settings' cap on hosts ejected at once (`None`
    /// without outlier detection).
    pub ejection_cap: Option<usize>,
    /// Most hosts ejected at once, seen after each round of detection.
    pub most_ejected: usize,
    /// Ejections in all.
    pub ejections: u64,
    /// Rounds of outlier detection run.
    pub rounds: u64,
}

/// The guard of a strategy over several hosts.
pub(super) fn build(
    policy: &HostPolicy,
    spec: &StrategySpec,
    clock: &LabClock,
    breakers: &super::Breakers,
    name: &str,
    shares_as: Option<&str>,
) -> Arc<dyn Guard> {
    match (&spec.kind, policy.per_host) {
        (StrategyKind::Fusebox(config), true) => {
            Arc::new(PerHost::new(policy, config, clock, name))
        }
        _ => {
            let one = StrategySpec {
                hosts: None,
                ..spec.clone()
            };
            Arc::new(Shared {
                inner: super::build(&one, clock, breakers, name, shares_as),
                hosts: policy.count,
                next: AtomicUsize::new(0),
                log: Mutex::default(),
            })
        }
    }
}

/// One guard for every host, requests round-robin.
pub struct Shared {
    inner: Arc<dyn Guard>,
    hosts: usize,
    next: AtomicUsize,
    log: Mutex<Vec<HostAttempt>>,
}

impl Guard for Shared {
    fn admit(&self, now: Duration) -> Admission {
        self.admit_on(now).0
    }
    fn begin_request(&self, now: Duration) {
        self.inner.begin_request(now);
    }
    fn allow_retry(&self, now: Duration) -> bool {
        self.inner.allow_retry(now)
    }
    fn admit_on(&self, now: Duration) -> (Admission, Option<usize>) {
        let host = self.next.fetch_add(1, Ordering::Relaxed) % self.hosts;
        let admission = match self.inner.admit(now) {
            Admission::Call(inner) => Admission::Call(Box::new(SharedTicket { inner, host })),
            Admission::FastFail => Admission::FastFail,
        };
        lock(&self.log).push(HostAttempt {
            at: now,
            host: Some(host),
            called: matches!(admission, Admission::Call(_)),
        });
        (admission, Some(host))
    }
    fn hosts(&self) -> Option<HostRun> {
        Some(HostRun {
            hosts: self.hosts,
            per_host: false,
            attempts: lock(&self.log).clone(),
            ..HostRun::default()
        })
    }
    fn transitions(&self) -> Vec<TransitionRecord> {
        self.inner.transitions()
    }
    fn state(&self, now: Duration) -> &'static str {
        self.inner.state(now)
    }
    fn probes_in_flight(&self) -> u32 {
        self.inner.probes_in_flight()
    }
    fn open_until(&self, now: Duration) -> Option<Duration> {
        self.inner.open_until(now)
    }
    fn breaker(&self) -> Option<fusebox::CircuitBreaker> {
        self.inner.breaker()
    }
    fn limit_trace(&self) -> Vec<(Duration, u32)> {
        self.inner.limit_trace()
    }
}

/// The shared guard's ticket, bound for `host`.
struct SharedTicket {
    inner: Box<dyn Ticket>,
    host: usize,
}

impl Ticket for SharedTicket {
    fn finish(self: Box<Self>, now: Duration, result: CallResult) {
        self.inner.finish(now, result)
    }
    fn host(&self) -> Option<usize> {
        Some(self.host)
    }
}

/// A breaker per host: a [`BreakerSet`] keyed by host (from 0).
pub struct PerHost {
    set: BreakerSet<usize>,
    keys: Vec<usize>,
    balance: Balance,
    next: AtomicUsize,
    /// The next round of outlier detection and the interval (with `outliers`).
    detection: Option<(Mutex<Duration>, Duration)>,
    ejection_cap: Option<usize>,
    most_ejected: AtomicUsize,
    rounds: AtomicU64,
    log: Mutex<Vec<HostAttempt>>,
    transitions: Arc<Mutex<Vec<TransitionRecord>>>,
}

impl PerHost {
    fn new(
        policy: &HostPolicy,
        config: &crate::scenario::fusebox::BreakerConfig,
        clock: &LabClock,
        name: &str,
    ) -> Self {
        let transitions: Arc<Mutex<Vec<TransitionRecord>>> = Arc::default();
        let log = Arc::clone(&transitions);
        let template =
            config
                .builder()
                .clock(clock.clone())
                .on_transition(move |t: &fusebox::Transition| {
                    lock(&log).push(TransitionRecord {
                        at: t.at,
                        from: t.from.as_str(),
                        to: t.to.as_str(),
                        remote: false,
                    });
                });
        let mut set = BreakerSet::builder(template)
            .name(name)
            .max_keys(policy.count);
        if let Some(o) = &policy.outliers {
            set = set.outliers(o.outliers());
        }
        let set = set
            .build()
            .expect("breaker and outlier settings checked when loaded");
        let detection = policy.outliers.as_ref().map(|o| {
            let every = o.outliers().interval_value();
            (Mutex::new(every), every)
        });
        PerHost {
            set,
            keys: (0..policy.count).collect(),
            balance: policy.balance,
            next: AtomicUsize::new(0),
            detection,
            ejection_cap: policy
                .outliers
                .as_ref()
                .map(|o| o.most_ejected(policy.count)),
            most_ejected: AtomicUsize::new(0),
            rounds: AtomicU64::new(0),
            log: Mutex::default(),
            transitions,
        }
    }

    /// A round of outlier detection if `now` reached the next boundary.
    fn detect(&self, now: Duration) {
        let Some((next, every)) = &self.detection else {
            return;
        };
        {
            let mut next = lock(next);
            if now < *next {
                return;
            }
            while *next <= now {
                *next += *every;
            }
        }
        self.set.detect_outliers();
        self.rounds.fetch_add(1, Ordering::Relaxed);
        let ejected = self.keys.iter().filter(|k| self.set.is_ejected(*k)).count();
        self.most_ejected.fetch_max(ejected, Ordering::Relaxed);
    }

    fn log(&self, at: Duration, host: Option<usize>, called: bool) {
        lock(&self.log).push(HostAttempt { at, host, called });
    }
}

/// A host's breaker's permit, and the host.
struct HostTicket(fusebox::Permit, usize);

impl Ticket for HostTicket {
    fn finish(self: Box<Self>, _now: Duration, result: CallResult) {
        if result.is_ok() {
            self.0.success()
        } else {
            self.0.failure()
        }
    }
    fn host(&self) -> Option<usize> {
        Some(self.1)
    }
}

impl Guard for PerHost {
    fn admit(&self, now: Duration) -> Admission {
        self.admit_on(now).0
    }
    fn admit_on(&self, now: Duration) -> (Admission, Option<usize>) {
        self.detect(now);
        let host = match self.balance {
            Balance::RoundRobin => {
                Some(self.next.fetch_add(1, Ordering::Relaxed) % self.keys.len())
            }
            Balance::Pick => self.set.pick(&self.keys).copied(),
        };
        let Some(host) = host else {
            self.log(now, None, false);
            return (Admission::FastFail, None);
        };
        match self.set.get(&host).try_acquire() {
            Ok(permit) => {
                self.log(now, Some(host), true);
                (
                    Admission::Call(Box::new(HostTicket(permit, host))),
                    Some(host),
                )
            }
            Err(_) => {
                self.log(now, Some(host), false);
                (Admission::FastFail, Some(host))
            }
        }
    }
    fn hosts(&self) -> Option<HostRun> {
        Some(HostRun {
            hosts: self.keys.len(),
            per_host: true,
            attempts: lock(&self.log).clone(),
            ejection_cap: self.ejection_cap,
            most_ejected: self.most_ejected.load(Ordering::Relaxed),
            ejections: self.set.ejections(),
            rounds: self.rounds.load(Ordering::Relaxed),
        })
    }
    fn transitions(&self) -> Vec<TransitionRecord> {
        let mut all = lock(&self.transitions).clone();
        all.sort_by_key(|t| t.at);
        all
    }
}

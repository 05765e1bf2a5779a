//! The request rules, written once (`rules`), and two drivers: a
//! discrete-event simulation in virtual time (`virtual_time`, whose fleets
//! drive the library's `fusebox::fleet::protocol` against its in-memory
//! store: `fleet_virtual`) and real OS threads with real sleeps (`real`),
//! which may call an HTTP downstream in a process of its own (`http`) and
//! share a fleet's breakers through `fusebox::fleet` and Redis (`fleet`).
//! Both produce a [`RunResult`].
//!
//! Imports `guard` and `scenario` (below it).

mod fleet;
mod fleet_virtual;
mod http;
mod real;
mod rules;
mod virtual_time;

pub use crate::guard::{Breakers, Mode, TransitionRecord};
pub use http::{serve_downstream, use_lab_binary};

use crate::scenario::{CallResult, Scenario, StrategyKind, StrategySpec};
use std::time::Duration;

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The downstream answered successfully.
    Ok,
    /// The downstream answered with an error.
    Error,
    /// The client's timeout fired.
    Timeout,
    /// The guard rejected the call (no downstream call).
    FastFail,
    /// The queue was full when the request arrived.
    Rejected,
}

impl Outcome {
    /// Lower-case name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Timeout => "timeout",
            Outcome::FastFail => "fast_fail",
            Outcome::Rejected => "rejected",
        }
    }

    /// The outcome of a request whose last downstream call ended with `r`.
    pub fn of(r: CallResult) -> Outcome {
        match r {
            CallResult::Success => Outcome::Ok,
            CallResult::Error | CallResult::Overloaded => Outcome::Error,
            CallResult::Timeout => Outcome::Timeout,
        }
    }
}

/// One request, from arrival to end. Times are since the start of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestRecord {
    /// Scheduled arrival (`i / rate`).
    pub arrival: Duration,
    /// When a worker took it (None if the queue rejected it).
    pub start: Option<Duration>,
    /// When it ended (its last attempt ended, or it was rejected).
    pub end: Duration,
    /// How it ended: the result of its last downstream call, or `FastFail`
    /// if it never reached the downstream.
    pub outcome: Outcome,
    /// Downstream calls it made (0 for a fast-fail on the first attempt).
    pub attempts: u32,
}

impl RequestRecord {
    /// A request that arrived at `arrival` and nothing else happened to yet
    /// (it stays `Rejected` unless a worker takes it).
    pub fn arrived(arrival: Duration) -> Self {
        RequestRecord {
            arrival,
            start: None,
            end: arrival,
            outcome: Outcome::Rejected,
            attempts: 0,
        }
    }

    /// End minus scheduled arrival.
    pub fn latency(&self) -> Duration {
        self.end.saturating_sub(self.arrival)
    }
}

/// One downstream call (an attempt that the guard let through).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallRecord {
    /// Index of the request it belongs to.
    pub request: usize,
    /// Start of the call.
    pub start: Duration,
    /// End of the call (of a cancelled one: when it was dropped).
    pub end: Duration,
    /// Its result (of a cancelled one: what it would have been; see
    /// [`succeeded`](Self::succeeded) and [`failed`](Self::failed)).
    pub result: CallResult,
    /// Sent by a hedge: an extra attempt of a request whose other attempt
    /// was still running after the hedge delay.
    pub hedge: bool,
    /// Dropped unanswered at `end`, because another attempt of the same
    /// request answered first: the downstream had the call, the guard heard
    /// no verdict (a breaker's permit was released without one).
    pub cancelled: bool,
    /// How long it waited for a connection of the HTTP client's pool
    /// (`[downstream] pool_max` reached) before it was sent: it was in
    /// flight downstream from `start + waited` to `end`.
    pub waited: Duration,
    /// Its connect timed out (a `no_accept` fault): an error at the
    /// `connect_timeout`.
    pub connect_failed: bool,
}

impl CallRecord {
    /// An answered call that succeeded.
    pub fn succeeded(&self) -> bool {
        !self.cancelled && self.result.is_ok()
    }

    /// An answered call that failed (an error or a timeout).
    pub fn failed(&self) -> bool {
        !self.cancelled && !self.result.is_ok()
    }
}

/// Everything one run of one strategy produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The strategy's `name`.
    pub strategy: String,
    /// The strategy's `kind`.
    pub kind: &'static str,
    /// Every request, in arrival order.
    pub requests: Vec<RequestRecord>,
    /// Every downstream call, in start order.
    pub calls: Vec<CallRecord>,
    /// The guard's state changes (of replica 1 in a fleet).
    pub transitions: Vec<TransitionRecord>,
    /// A fleet scenario's replicas (`None` without `[fleet]`).
    pub fleet: Option<FleetRun>,
    /// The adaptive limit in force over time (replica 1's): one entry at
    /// the start and one per change (empty without a `limit`).
    pub limits: Vec<(Duration, u32)>,
    /// A dependency of several hosts: which host each admission was bound
    /// for, and the ejections (`None` for one host).
    pub hosts: Option<crate::guard::HostRun>,
}

impl RunResult {
    /// The adaptive limit in force at `t` (its first value before the
    /// first change; `None` for a strategy without an adaptive limit).
    pub fn limit_at(&self, t: Duration) -> Option<u32> {
        let first = self.limits.first()?.1;
        Some(
            self.limits
                .iter()
                .take_while(|(when, _)| *when <= t)
                .last()
                .map_or(first, |&(_, l)| l),
        )
    }
}

/// What each replica of a fleet run went through; replica `r` (from 0)
/// served requests `r, r + replicas, ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetRun {
    /// Each replica's breaker's own state changes.
    pub transitions: Vec<Vec<TransitionRecord>>,
    /// Each replica's periods held open or waiting by another replica's
    /// trip.
    pub held: Vec<Held>,
}

/// The periods a fleet held one replica open: from, and until (`None`: to
/// the end of the run).
pub type Held = Vec<(Duration, Option<Duration>)>;

impl FleetRun {
    /// A real-mode fleet's run from its replicas' transitions: a replica is
    /// held from a transition the fleet made ([`TransitionRecord::remote`])
    /// to open or forced open until it is closed again (as in virtual mode).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::engine::{FleetRun, TransitionRecord};
    /// use std::time::Duration;
    ///
    /// let t = |ms, from, to, remote| TransitionRecord {
    ///     at: Duration::from_millis(ms), from, to, remote,
    /// };
    /// let run = FleetRun::from_transitions(vec![vec![
    ///     t(100, "closed", "open", true),
    ///     t(600, "open", "half_open", false),
    ///     t(700, "half_open", "closed", true),
    /// ]]);
    /// assert_eq!(run.held[0], [(Duration::from_millis(100), Some(Duration::from_millis(700)))]);
    /// ```
    pub fn from_transitions(transitions: Vec<Vec<TransitionRecord>>) -> FleetRun {
        let held = transitions
            .iter()
            .map(|log| {
                let mut periods: Held = Vec::new();
                for t in log {
                    let holding = periods.last().is_some_and(|p| p.1.is_none());
                    if !holding && t.remote && matches!(t.to, "open" | "forced_open") {
                        periods.push((t.at, None));
                    } else if holding && t.to == "closed" {
                        if let Some(p) = periods.last_mut() {
                            p.1 = Some(t.at);
                        }
                    }
                }
                periods
            })
            .collect();
        FleetRun { transitions, held }
    }
}

/// Whether `scenario` can run in `mode` here: a peer strategy needs real
/// mode and the feature `peers`, a hedge virtual mode; a real-mode fleet with `sharing = "fleet"`
/// shares fusebox breakers through `fusebox::fleet` (a `seed` or peer
/// strategy cannot be shared) and needs `[fleet] redis` (or `run --redis`).
///
/// # Examples
///
/// ```
/// use fusebox_lab::engine::{self, Mode};
/// use fusebox_lab::scenario::Scenario;
///
/// let sc = &Scenario::embedded()[0];
/// assert!(engine::check(sc, Mode::Virtual).is_ok());
/// ```
pub fn check(scenario: &Scenario, mode: Mode) -> Result<(), String> {
    crate::guard::peers::check(scenario, mode)?;
    if let Some(s) = scenario.strategies.iter().find(|s| s.hedge.is_some()) {
        if mode == Mode::Real {
            return Err(format!(
                "scenario {:?}, strategy {:?}: a hedge runs in virtual mode only (--clock virtual)",
                scenario.name, s.name
            ));
        }
    }
    if mode == Mode::Real && scenario.downstream.server.is_some() {
        // Its capacity faults with it.
        let capacity = scenario
            .downstream
            .faults
            .iter()
            .any(|f| matches!(f.outcome, crate::scenario::FaultOutcome::Capacity { .. }));
        let what = if capacity {
            "and its faults with outcome = \"capacity\" run"
        } else {
            "runs"
        };
        return Err(format!(
            "scenario {:?}: [downstream] server (a simulated server with workers) {what} in \
             virtual mode only (--clock virtual)",
            scenario.name
        ));
    }
    if mode == Mode::Real && scenario.shares_trips() {
        if let Some(s) = scenario
            .strategies
            .iter()
            .find(|s| !matches!(s.kind, StrategyKind::None | StrategyKind::Fusebox(_)))
        {
            return Err(format!(
                "scenario {:?}, strategy {:?}: a real-mode fleet with sharing = \"fleet\" shares \
                 fusebox breakers through fusebox::fleet; kind = \"{}\" cannot be shared \
                 (run it in virtual mode, or with sharing = \"none\")",
                scenario.name,
                s.name,
                s.kind.as_str()
            ));
        }
        if scenario.fleet.as_ref().is_some_and(|f| f.redis.is_none()) {
            return Err(fleet::needs_redis(scenario));
        }
    }
    Ok(())
}

/// Runs one strategy of `scenario` in `mode`.
///
/// A fusebox breaker is built in a registry of the run's own, or, in real
/// mode, in `shared` when given (where `run --serve` exports it), under the
/// name `SCENARIO/STRATEGY`.
///
/// # Examples
///
/// ```
/// use fusebox_lab::engine::{self, Mode, Outcome};
/// use fusebox_lab::scenario::Scenario;
///
/// let sc = &Scenario::embedded()[0];
/// let article = &sc.strategies[1]; // the article's breaker
/// let run = engine::run(sc, article, Mode::Virtual, None)?;
/// let fast_fails = run.requests.iter().filter(|r| r.outcome == Outcome::FastFail).count();
/// assert_eq!((run.calls.len(), fast_fails), (86, 64));
/// # Ok::<(), String>(())
/// ```
///
/// # Errors
///
/// What [`check`] refuses, or, in real mode, a part of the run that could
/// not start: the HTTP downstream's server, `redis-server`, the fleet's
/// connection to Redis. Virtual mode does not fail.
pub fn run(
    scenario: &Scenario,
    spec: &StrategySpec,
    mode: Mode,
    shared: Option<&Breakers>,
) -> Result<RunResult, String> {
    check(scenario, mode)?;
    let name = format!("{}/{}", scenario.name, spec.name);
    // A strategy's own client timeout stands for the scenario's.
    let own;
    let scenario = match spec.timeout {
        Some(t) if scenario.client.timeout != Some(t) => {
            own = Scenario {
                client: crate::scenario::Client {
                    timeout: Some(t),
                    ..scenario.client
                },
                ..scenario.clone()
            };
            &own
        }
        _ => scenario,
    };
    match mode {
        Mode::Virtual => Ok(virtual_time::run(scenario, spec, &name)),
        Mode::Real => real::run(scenario, spec, shared, &name),
    }
}

//! What stands in front of the call: `none`, the article's breaker (`seed`),
//! `fusebox`, or a peer crate's breaker.
//!
//! A strategy is a [`Guard`]: a worker asks it to [`admit`](Guard::admit) a
//! call when it starts the request; the guard answers with a [`Ticket`] (the
//! call goes to the downstream) or [`Admission::FastFail`]; when the call ends
//! the worker hands the ticket back with the result. [`build`] makes the guard
//! of one run from its [`StrategySpec`], on the run's [`LabClock`], with its
//! fusebox breakers in the [`Breakers`] it is given (where observers such as
//! the metrics of `run --serve` see them).
//!
//! A peer crate's breaker goes in [`peers`] behind a cargo feature: a type
//! implementing [`Guard`] whose tickets implement [`Ticket`].
//!
//! The lab holds no policy logic of its own except the faithful port of seed
//! 000's breaker ([`SeedBreaker`]), which exists to check the harness against
//! the article's published numbers.
//!
//! Imports only `scenario` (below it).

mod fusebox;
mod hosts;
pub mod peers;
mod seed;

pub use self::fusebox::Breakers;
pub use hosts::{HostAttempt, HostRun, PerHost, Shared};
pub use seed::{SeedBreaker, SeedState};

use crate::scenario::{CallResult, StrategyKind, StrategySpec};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Real threads and sleeps, or a deterministic simulation: which clock a run has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Real OS threads, real sleeps, a monotonic clock.
    Real,
    /// Discrete-event simulation in virtual time (deterministic, fast).
    Virtual,
}

impl Mode {
    /// `"real"` or `"virtual"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Real => "real",
            Mode::Virtual => "virtual",
        }
    }
}

/// A breaker state change, as the lab reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransitionRecord {
    /// Time since the start of the run.
    pub at: Duration,
    /// State before, lower case (`closed`, `open`, `half_open`, ...).
    pub from: &'static str,
    /// State after.
    pub to: &'static str,
    /// Made by a fleet: another replica's trip or close, applied by
    /// `fusebox::fleet` (real mode) or by the virtual fleet's rules, which
    /// log what the library's breaker would; a guard's own log (the lab's
    /// holds, `force_open`/`reset`) has it `false`.
    pub remote: bool,
}

impl TransitionRecord {
    /// A probe that failed: half-open back to open.
    pub fn is_failed_probe(&self) -> bool {
        self.from == "half_open" && self.to == "open"
    }
}

/// The answer to a worker that wants to start a call.
pub enum Admission {
    /// Go ahead; hand the ticket back with the result when the call ends.
    Call(Box<dyn Ticket>),
    /// Rejected without calling the downstream.
    FastFail,
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Admission::Call(_) => f.write_str("Call"),
            Admission::FastFail => f.write_str("FastFail"),
        }
    }
}

/// What guards the calls of one run. Shared by all workers.
///
/// `now` is the time since the start of the run, from the run's clock (the
/// same clock the guard was built with, see [`LabClock`]).
pub trait Guard: Send + Sync {
    /// Called when a worker starts a call.
    fn admit(&self, now: Duration) -> Admission;
    /// [`admit`](Guard::admit) for a dependency of several hosts: also the
    /// host (from 0) the call is bound for, which the guard's balancer
    /// chose (`None`: one host, or none could be chosen).
    fn admit_on(&self, now: Duration) -> (Admission, Option<usize>) {
        (self.admit(now), None)
    }
    /// What went to which host, for a dependency of several hosts.
    fn hosts(&self) -> Option<HostRun> {
        None
    }
    /// State changes so far, in order.
    fn transitions(&self) -> Vec<TransitionRecord>;
    /// A fleet holds this breaker open from `now` (another replica's trip
    /// arrived) until [`release`](Guard::release): it rejects every call and
    /// ignores the verdicts of calls still in flight (fusebox: `force_open`).
    /// Nothing for a guard that never opens.
    fn hold(&self, _now: Duration) {}
    /// The fleet's close arrived at `now`: closed again, counters cleared
    /// (fusebox: `reset`).
    fn release(&self, _now: Duration) {}
    /// Its state at `now` (`closed`, `open`, `half_open`, `forced_open`):
    /// `half_open` once an open period is over (for fusebox, the lazy step
    /// happens here, as `CircuitBreaker::state` does it). A virtual fleet
    /// asks this before it lets a half-open replica call.
    fn state(&self, _now: Duration) -> &'static str {
        "closed"
    }
    /// Half-open probes admitted and not finished.
    fn probes_in_flight(&self) -> u32 {
        0
    }
    /// When its open period ends, while it is open on its own (a fixed
    /// `open_for`, as a fleet needs); `None` in any other state.
    fn open_until(&self, _now: Duration) -> Option<Duration> {
        None
    }
    /// The library breaker behind it, for a real-mode fleet to share
    /// through `fusebox::fleet` (fusebox strategies only).
    fn breaker(&self) -> Option<::fusebox::CircuitBreaker> {
        None
    }
    /// The adaptive limit in force over time: one entry at the first
    /// admission and one per change (empty for a guard without one).
    fn limit_trace(&self) -> Vec<(Duration, u32)> {
        Vec::new()
    }
    /// A request is about to make its first attempt at `now` (a retry
    /// budget's deposit; nothing for a guard without one).
    fn begin_request(&self, _now: Duration) {}
    /// A failed request would retry at `now` (`[client] retries` allow
    /// it): whether it may (a retry budget's withdrawal; always for a
    /// guard without one).
    fn allow_retry(&self, _now: Duration) -> bool {
        true
    }
}

/// A call the guard let through; consumed by its verdict.
pub trait Ticket: Send {
    /// The call ended at `now` with `result`.
    fn finish(self: Box<Self>, now: Duration, result: CallResult);
    /// The host (from 0) the call is bound for, for a dependency of
    /// several hosts (see [`Guard::admit_on`]).
    fn host(&self) -> Option<usize> {
        None
    }
}

/// The clock of one run, as a [`::fusebox::Clock`]: manual in virtual mode
/// (the simulation sets it before every admission and verdict), or real time
/// since the run's origin.
#[derive(Debug, Clone)]
pub enum LabClock {
    /// Virtual time, moved by the simulation.
    Virtual(::fusebox::ManualClock),
    /// Real monotonic time since `origin`.
    Real {
        /// Time zero of the run (the first arrival).
        origin: Instant,
    },
}

impl ::fusebox::Clock for LabClock {
    fn now(&self) -> Duration {
        match self {
            LabClock::Virtual(c) => c.now(),
            // saturating: before the origin reads as zero.
            LabClock::Real { origin } => Instant::now().saturating_duration_since(*origin),
        }
    }
}

/// Builds the guard for one run of `spec` on `clock`; a fusebox breaker is
/// built in `breakers` under `name` (its own name `shares_as` if given: a
/// real-mode fleet's replicas share one name, see [`Breakers`]).
///
/// # Panics
///
/// For a peer strategy in virtual time or without the feature `peers`:
/// [`peers::check`] refuses those before any run.
pub fn build(
    spec: &StrategySpec,
    clock: &LabClock,
    breakers: &Breakers,
    name: &str,
    shares_as: Option<&str>,
) -> Arc<dyn Guard> {
    if let Some(policy) = &spec.hosts {
        return hosts::build(policy, spec, clock, breakers, name, shares_as);
    }
    match &spec.kind {
        StrategyKind::None => Arc::new(NoGuard),
        StrategyKind::Seed(c) => Arc::new(SeedBreaker::new(*c)),
        StrategyKind::Fusebox(c) => Arc::new(breakers.guard(name, shares_as, c, spec, clock)),
        StrategyKind::Peer(c) => peers::build(*c, clock)
            .unwrap_or_else(|| panic!("{}", peers::unavailable(&spec.name, c.peer))),
    }
}

/// `kind = "none"`: admits everything.
#[derive(Debug)]
pub struct NoGuard;

struct NoTicket;

impl Ticket for NoTicket {
    fn finish(self: Box<Self>, _now: Duration, _result: CallResult) {}
}

impl Guard for NoGuard {
    fn admit(&self, _now: Duration) -> Admission {
        Admission::Call(Box::new(NoTicket))
    }
    fn transitions(&self) -> Vec<TransitionRecord> {
        Vec::new()
    }
}

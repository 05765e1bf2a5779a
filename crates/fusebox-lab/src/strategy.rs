//! What guards the call: `none`, the article's breaker (`seed`), or `fusebox`.
//!
//! A strategy is a [`Guard`]: a worker asks it to [`admit`](Guard::admit) a
//! call when it starts the request; the guard answers with a [`Ticket`] (the
//! call goes to the downstream) or [`Admission::FastFail`]; when the call ends
//! the worker hands the ticket back with the result. Every kind of strategy is
//! named in [`StrategyKind`], parsed in [`RawStrategy::validate`] and built in
//! [`build`]: adding a kind means one variant and one arm in each (plus
//! `StrategyKind::as_str`, and `StrategyKind::set_param` if it can be swept).
//! A peer crate's breaker goes in its own module behind a cargo feature: a
//! type implementing [`Guard`] whose tickets implement [`Ticket`], built on the
//! run's [`LabClock`] when the peer accepts a clock (otherwise real mode only).
//!
//! The lab holds no policy logic of its own except the faithful port of seed
//! 000's breaker ([`SeedBreaker`]), which exists to check the harness against
//! the article's published numbers.

use crate::downstream::CallResult;
use crate::scenario::{int_in, Ctx, Dur, ScenarioError};
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toml::Spanned;

/// One `[[strategy]]`: a name for the report and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategySpec {
    /// `name`, shown in the report.
    pub name: String,
    /// `kind` and its parameters.
    pub kind: StrategyKind,
}

/// Every kind of strategy the lab can run. Matched in [`build`] (and in the
/// sweep's parameter setter); add new kinds here.
#[derive(Debug, Clone, PartialEq)]
pub enum StrategyKind {
    /// `kind = "none"`: every call goes to the downstream.
    None,
    /// `kind = "seed"`: seed 000's breaker, ported faithfully.
    Seed(SeedConfig),
    /// `kind = "fusebox"`: [`fusebox::CircuitBreaker`].
    Fusebox(FuseboxConfig),
    /// `kind = "failsafe" | "recloser" | "tower-resilience"`: a peer crate
    /// (runs only with the cargo feature `peers`, in real mode).
    Peer(crate::peers::PeerConfig),
}

impl StrategyKind {
    /// The `kind` string of this strategy.
    pub fn as_str(&self) -> &'static str {
        match self {
            StrategyKind::None => "none",
            StrategyKind::Seed(_) => "seed",
            StrategyKind::Fusebox(_) => "fusebox",
            StrategyKind::Peer(c) => c.peer.as_str(),
        }
    }
}

/// A value for a swept parameter: a duration, or a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamValue {
    /// Written with a unit, e.g. `0.5s`.
    Dur(Duration),
    /// Written as a plain number, e.g. `5` or `0.5`.
    Num(f64),
}

impl ParamValue {
    fn count(self, name: &str, min: u32) -> Result<u32, String> {
        match self {
            ParamValue::Num(x) if x.fract() == 0.0 && x >= f64::from(min) && x <= 1e6 => {
                Ok(x as u32)
            }
            _ => Err(format!(
                "{name} must be a whole number >= {min}, not {self}"
            )),
        }
    }

    fn duration(self, name: &str) -> Result<Duration, String> {
        match self {
            ParamValue::Dur(d) => Ok(d),
            ParamValue::Num(_) => Err(format!(
                "{name} is a duration (write e.g. 0.5s), not {self}"
            )),
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Dur(d) => f.write_str(&crate::scenario::format_duration(*d)),
            ParamValue::Num(x) => write!(f, "{x}"),
        }
    }
}

impl StrategyKind {
    /// Sets the strategy parameter `name` (a strategy key, as in scenario files)
    /// for a sweep. `Ok(false)`: this kind has no such parameter.
    pub fn set_param(&mut self, name: &str, value: ParamValue) -> Result<bool, String> {
        match (&mut *self, name) {
            (StrategyKind::Seed(c), "failures") => c.failures = value.count(name, 1)?,
            (StrategyKind::Seed(c), "open_for") => c.open_for = value.duration(name)?,
            (StrategyKind::Fusebox(c), "open_for") => c.open_for = value.duration(name)?,
            (StrategyKind::Fusebox(c), "probes") => c.probes = value.count(name, 1)?,
            (StrategyKind::Fusebox(c), "successes") => c.successes = value.count(name, 1)?,
            // As in scenario files, `min_calls` belongs to the rate policies only.
            (StrategyKind::Fusebox(c), "min_calls") => match c.policy {
                FuseboxPolicy::Consecutive { .. } => return Ok(false),
                _ => c.min_calls = Some(value.count(name, 1)?),
            },
            (StrategyKind::Fusebox(c), "failures") => match &mut c.policy {
                FuseboxPolicy::Consecutive { failures } => *failures = value.count(name, 1)?,
                _ => return Ok(false),
            },
            (StrategyKind::Fusebox(c), "rate") => match (&mut c.policy, value) {
                (
                    FuseboxPolicy::RateCount { rate, .. } | FuseboxPolicy::RateTime { rate, .. },
                    ParamValue::Num(x),
                ) if x > 0.0 && x <= 1.0 => *rate = x,
                (FuseboxPolicy::Consecutive { .. }, _) => return Ok(false),
                _ => return Err(format!("rate must be in (0, 1], not {value}")),
            },
            (StrategyKind::Fusebox(c), "window_calls") => match &mut c.policy {
                FuseboxPolicy::RateCount { window_calls, .. } => {
                    *window_calls = value.count(name, 1)? as usize
                }
                _ => return Ok(false),
            },
            (StrategyKind::Fusebox(c), "window_time") => match &mut c.policy {
                FuseboxPolicy::RateTime { window_time, .. } => {
                    *window_time = value.duration(name)?
                }
                _ => return Ok(false),
            },
            (StrategyKind::Peer(c), "failures") => c.failures = value.count(name, 1)?,
            (StrategyKind::Peer(c), "open_for") => c.open_for = value.duration(name)?,
            _ => return Ok(false),
        }
        // A value can contradict the strategy's other keys (`min_calls` above
        // `window_calls`, say): reject it here, as loading the scenario would,
        // rather than when the run builds the breaker.
        if let StrategyKind::Fusebox(c) = self {
            c.check().map_err(|e| e.to_string())?;
        }
        Ok(true)
    }
}

/// Parameters of the `seed` strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedConfig {
    /// `failures`: consecutive failures that open the breaker.
    pub failures: u32,
    /// `open_for`: how long it stays open before one probe is let through.
    pub open_for: Duration,
}

/// Parameters of the `fusebox` strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FuseboxConfig {
    /// `policy` and its keys.
    pub policy: FuseboxPolicy,
    /// `open_for`.
    pub open_for: Duration,
    /// `probes`: half-open probes at once (default 1).
    pub probes: u32,
    /// `successes`: probe successes that close the breaker (default 1).
    pub successes: u32,
    /// `min_calls` for the rate policies (default: fusebox's).
    pub min_calls: Option<u32>,
}

/// When the `fusebox` strategy trips.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FuseboxPolicy {
    /// `policy = "consecutive"`, `failures = N`.
    Consecutive {
        /// `failures`.
        failures: u32,
    },
    /// `policy = "rate-count"`: `rate` of failures over the last `window_calls` calls.
    RateCount {
        /// `rate`, in (0, 1].
        rate: f64,
        /// `window_calls`.
        window_calls: usize,
    },
    /// `policy = "rate-time"`: `rate` of failures over the last `window_time`.
    RateTime {
        /// `rate`, in (0, 1].
        rate: f64,
        /// `window_time`.
        window_time: Duration,
    },
}

impl FuseboxConfig {
    /// The breaker builder for this configuration (without clock or listeners).
    pub fn builder(&self) -> fusebox::Builder {
        let b = fusebox::CircuitBreaker::builder()
            .open_for(self.open_for)
            .half_open_probes(self.probes)
            .successes_to_close(self.successes);
        let b = match self.policy {
            FuseboxPolicy::Consecutive { failures } => b.consecutive_failures(failures),
            FuseboxPolicy::RateCount { rate, window_calls } => {
                b.failure_rate(rate).count_window(window_calls)
            }
            FuseboxPolicy::RateTime { rate, window_time } => {
                b.failure_rate(rate).time_window(window_time)
            }
        };
        match self.min_calls {
            Some(m) => b.min_calls(m),
            None => b,
        }
    }

    /// Whether fusebox accepts this configuration (by building it once on a
    /// throwaway clock).
    pub fn check(&self) -> Result<(), fusebox::ConfigError> {
        self.builder()
            .clock(fusebox::ManualClock::new())
            .build()
            .map(drop)
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
    /// State changes so far, in order.
    fn transitions(&self) -> Vec<TransitionRecord>;
}

/// A call the guard let through; consumed by its verdict.
pub trait Ticket: Send {
    /// The call ended at `now` with `result`.
    fn finish(self: Box<Self>, now: Duration, result: CallResult);
}

/// The clock of one run, as a [`fusebox::Clock`]: manual in virtual mode
/// (the simulation sets it before every admission and verdict), or real time
/// since the run's origin.
#[derive(Debug, Clone)]
pub enum LabClock {
    /// Virtual time, moved by the simulation.
    Virtual(fusebox::ManualClock),
    /// Real monotonic time since `origin`.
    Real {
        /// Time zero of the run (the first arrival).
        origin: Instant,
    },
}

impl fusebox::Clock for LabClock {
    fn now(&self) -> Duration {
        match self {
            LabClock::Virtual(c) => c.now(),
            // saturating: before the origin reads as zero.
            LabClock::Real { origin } => Instant::now().saturating_duration_since(*origin),
        }
    }
}

/// Builds the guard for one run of `spec` on `clock`.
pub fn build(spec: &StrategySpec, clock: &LabClock) -> Arc<dyn Guard> {
    match &spec.kind {
        StrategyKind::None => Arc::new(NoGuard),
        StrategyKind::Seed(c) => Arc::new(SeedBreaker::new(*c)),
        StrategyKind::Fusebox(c) => Arc::new(FuseboxGuard::new(c, clock)),
        // Refused before any run without the feature or in virtual mode
        // (`peers::check`).
        StrategyKind::Peer(c) => crate::peers::build(*c, clock)
            .unwrap_or_else(|| panic!("{}", crate::peers::unavailable(&spec.name, c.peer))),
    }
}

/// `kind = "fusebox"`: a [`fusebox::CircuitBreaker`] on the run's clock; its
/// transitions are collected by an `on_transition` hook.
#[derive(Debug)]
pub struct FuseboxGuard {
    breaker: fusebox::CircuitBreaker,
    log: Arc<Mutex<Vec<TransitionRecord>>>,
}

impl FuseboxGuard {
    /// Builds the breaker. The configuration was checked when the scenario
    /// was loaded or a sweep set one of its keys ([`FuseboxConfig::check`]),
    /// so this cannot fail.
    pub fn new(config: &FuseboxConfig, clock: &LabClock) -> Self {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        let builder =
            config
                .builder()
                .clock(clock.clone())
                .on_transition(move |t: &fusebox::Transition| {
                    lock_log(&sink).push(TransitionRecord {
                        at: t.at,
                        from: t.from.as_str(),
                        to: t.to.as_str(),
                    });
                });
        // Instrumented for `run --serve` when serving.
        let breaker = crate::serve::build(builder)
            .expect("fusebox configuration checked when loaded or swept");
        FuseboxGuard { breaker, log }
    }
}

fn lock_log(m: &Mutex<Vec<TransitionRecord>>) -> std::sync::MutexGuard<'_, Vec<TransitionRecord>> {
    // Pushing a record cannot leave the vector inconsistent; ignore poison.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Ticket for fusebox::Permit {
    fn finish(self: Box<Self>, _now: Duration, result: CallResult) {
        if result.is_ok() {
            self.success()
        } else {
            self.failure()
        }
    }
}

impl Guard for FuseboxGuard {
    fn admit(&self, _now: Duration) -> Admission {
        // The breaker reads the run's clock itself (set by the simulation in
        // virtual mode), which is the same time as `now`.
        match self.breaker.try_acquire() {
            Ok(permit) => Admission::Call(Box::new(permit)),
            Err(_) => Admission::FastFail,
        }
    }

    fn transitions(&self) -> Vec<TransitionRecord> {
        lock_log(&self.log).clone()
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

/// The state of seed 000's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedState {
    /// Calls pass; failures are counted.
    Closed,
    /// Calls fast-fail until `opened_at + open_for`.
    Open,
    /// One probe is in flight; everything else fast-fails.
    HalfOpen,
}

impl SeedState {
    /// Lower-case name, as in the article's log.
    pub fn as_str(self) -> &'static str {
        match self {
            SeedState::Closed => "closed",
            SeedState::Open => "open",
            SeedState::HalfOpen => "half_open",
        }
    }
}

#[derive(Debug)]
struct SeedInner {
    state: SeedState,
    failures: u32,
    opened_at: Duration,
    probing: bool,
    log: Vec<TransitionRecord>,
}

/// Seed 000's breaker, ported faithfully (the `seed` strategy).
///
/// The article's `Breaker.call`, step by step:
/// - under the lock, before the call: in `open`, if `now - opened_at >=
///   reset_timeout` and no probe is running, go `half_open`, set `probing`
///   and let this call through as the probe; otherwise raise `Open`. In
///   `half_open` with a probe running, raise `Open`.
/// - after the call, on failure: count it; `half_open -> open`, or reaching
///   the threshold -> `open`, and in both cases `opened_at = now`. The count is
///   not reset by opening, so a failure that arrives while already open (a
///   call admitted before the trip) sets `opened_at` again: stale failures
///   extend the open period. (fusebox's generations ignore them.)
/// - on success: the failure count is reset; `half_open -> closed`.
/// - the probing flag is cleared by the probe's own verdict.
///
/// A transition is logged only when the state actually changes.
#[derive(Debug)]
pub struct SeedBreaker {
    config: SeedConfig,
    inner: Arc<Mutex<SeedInner>>,
}

impl SeedBreaker {
    /// A closed breaker.
    pub fn new(config: SeedConfig) -> Self {
        SeedBreaker {
            config,
            inner: Arc::new(Mutex::new(SeedInner {
                state: SeedState::Closed,
                failures: 0,
                opened_at: Duration::ZERO,
                probing: false,
                log: Vec::new(),
            })),
        }
    }

    /// The current state (no transition happens on reading it).
    #[cfg(test)]
    pub fn state(&self) -> SeedState {
        lock(&self.inner).state
    }
}

fn lock(m: &Mutex<SeedInner>) -> std::sync::MutexGuard<'_, SeedInner> {
    // A panic while holding the lock cannot leave the state half-written
    // (every update is a few plain assignments), so poison is ignored.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl SeedInner {
    fn set(&mut self, to: SeedState, now: Duration) {
        if self.state != to {
            self.log.push(TransitionRecord {
                at: now,
                from: self.state.as_str(),
                to: to.as_str(),
            });
            self.state = to;
        }
    }
}

struct SeedTicket {
    inner: Arc<Mutex<SeedInner>>,
    threshold: u32,
    probe: bool,
}

impl Guard for SeedBreaker {
    fn admit(&self, now: Duration) -> Admission {
        let mut s = lock(&self.inner);
        let mut probe = false;
        match s.state {
            SeedState::Open => {
                if now.saturating_sub(s.opened_at) >= self.config.open_for && !s.probing {
                    s.set(SeedState::HalfOpen, now);
                    s.probing = true;
                    probe = true;
                } else {
                    return Admission::FastFail;
                }
            }
            SeedState::HalfOpen if s.probing => return Admission::FastFail,
            _ => {}
        }
        Admission::Call(Box::new(SeedTicket {
            inner: Arc::clone(&self.inner),
            threshold: self.config.failures,
            probe,
        }))
    }

    fn transitions(&self) -> Vec<TransitionRecord> {
        lock(&self.inner).log.clone()
    }
}

impl Ticket for SeedTicket {
    fn finish(self: Box<Self>, now: Duration, result: CallResult) {
        let mut s = lock(&self.inner);
        if self.probe {
            s.probing = false;
        }
        if result.is_ok() {
            s.failures = 0;
            if s.state == SeedState::HalfOpen {
                s.set(SeedState::Closed, now);
            }
        } else {
            s.failures = s.failures.saturating_add(1);
            if s.state == SeedState::HalfOpen || s.failures >= self.threshold {
                s.set(SeedState::Open, now);
                s.opened_at = now;
            }
        }
    }
}

/// The keys of one `[[strategy]]` table, before validation. Each kind takes
/// the keys it needs and rejects the others.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStrategy {
    name: Spanned<String>,
    kind: Spanned<String>,
    failures: Option<Spanned<i64>>,
    open_for: Option<Spanned<Dur>>,
    policy: Option<Spanned<String>>,
    rate: Option<Spanned<f64>>,
    window_calls: Option<Spanned<i64>>,
    window_time: Option<Spanned<Dur>>,
    min_calls: Option<Spanned<i64>>,
    probes: Option<Spanned<i64>>,
    successes: Option<Spanned<i64>>,
}

fn need<'a, T>(
    ctx: &Ctx<'_>,
    v: &'a Option<Spanned<T>>,
    key: &str,
    kind: &str,
    table: Range<usize>,
) -> Result<&'a Spanned<T>, ScenarioError> {
    v.as_ref().ok_or_else(|| {
        ctx.err(
            table,
            &format!("strategy.{key}"),
            format!("missing: kind = \"{kind}\" needs `{key}`"),
        )
    })
}

impl RawStrategy {
    /// Every optional key that is present, with its span.
    fn present(&self) -> Vec<(&'static str, Range<usize>)> {
        let mut v = Vec::new();
        macro_rules! p {
            ($($f:ident),*) => {$(
                if let Some(x) = &self.$f { v.push((stringify!($f), x.span())); }
            )*};
        }
        p!(
            failures,
            open_for,
            policy,
            rate,
            window_calls,
            window_time,
            min_calls,
            probes,
            successes
        );
        v
    }

    fn fusebox(
        &self,
        ctx: &Ctx<'_>,
        table: Range<usize>,
    ) -> Result<(&'static [&'static str], StrategyKind), ScenarioError> {
        let kind = "fusebox";
        let p = need(ctx, &self.policy, "policy", kind, table.clone())?;
        let o = need(ctx, &self.open_for, "open_for", kind, table.clone())?;
        let count = |v: &Option<Spanned<i64>>, key: &str, default: i64| match v {
            Some(v) => int_in(ctx, v, &format!("strategy.{key}"), 1, 1_000_000),
            None => Ok(default),
        };
        let rate = || -> Result<f64, ScenarioError> {
            let r = need(ctx, &self.rate, "rate", kind, table.clone())?;
            let x = *r.get_ref();
            if !(x > 0.0 && x <= 1.0) {
                return Err(ctx.err(r.span(), "strategy.rate", format!("{x} is not in (0, 1]")));
            }
            Ok(x)
        };
        let (allowed, policy): (&'static [&'static str], _) = match p.get_ref().as_str() {
            "consecutive" => {
                let f = need(
                    ctx,
                    &self.failures,
                    "failures",
                    "fusebox\", policy = \"consecutive",
                    table.clone(),
                )?;
                (
                    &["policy", "open_for", "probes", "successes", "failures"],
                    FuseboxPolicy::Consecutive {
                        failures: int_in(ctx, f, "strategy.failures", 1, 1_000_000)? as u32,
                    },
                )
            }
            "rate-count" => {
                let w = need(
                    ctx,
                    &self.window_calls,
                    "window_calls",
                    "fusebox\", policy = \"rate-count",
                    table.clone(),
                )?;
                (
                    &[
                        "policy",
                        "open_for",
                        "probes",
                        "successes",
                        "rate",
                        "window_calls",
                        "min_calls",
                    ],
                    FuseboxPolicy::RateCount {
                        rate: rate()?,
                        window_calls: int_in(ctx, w, "strategy.window_calls", 1, 10_000_000)?
                            as usize,
                    },
                )
            }
            "rate-time" => {
                let w = need(
                    ctx,
                    &self.window_time,
                    "window_time",
                    "fusebox\", policy = \"rate-time",
                    table.clone(),
                )?;
                (
                    &[
                        "policy",
                        "open_for",
                        "probes",
                        "successes",
                        "rate",
                        "window_time",
                        "min_calls",
                    ],
                    FuseboxPolicy::RateTime {
                        rate: rate()?,
                        window_time: w.get_ref().0,
                    },
                )
            }
            other => {
                return Err(ctx.err(
                    p.span(),
                    "strategy.policy",
                    format!(
                        "{other:?} is not one of \"consecutive\", \"rate-count\", \"rate-time\""
                    ),
                ))
            }
        };
        let config = FuseboxConfig {
            policy,
            open_for: o.get_ref().0,
            probes: count(&self.probes, "probes", 1)? as u32,
            successes: count(&self.successes, "successes", 1)? as u32,
            min_calls: match &self.min_calls {
                Some(m) => Some(int_in(ctx, m, "strategy.min_calls", 1, 1_000_000)? as u32),
                None => None,
            },
        };
        // Let fusebox validate the whole configuration now, so a bad one is an
        // input error naming the key rather than a failure during the run.
        if let Err(e) = config.check() {
            let (key, span) = match e.field() {
                "consecutive_failures" => ("failures", self.failures.as_ref().map(|s| s.span())),
                "failure_rate" => ("rate", self.rate.as_ref().map(|s| s.span())),
                "count_window" => ("window_calls", self.window_calls.as_ref().map(|s| s.span())),
                "time_window" | "buckets" => {
                    ("window_time", self.window_time.as_ref().map(|s| s.span()))
                }
                "min_calls" => ("min_calls", self.min_calls.as_ref().map(|s| s.span())),
                "half_open_probes" => ("probes", self.probes.as_ref().map(|s| s.span())),
                "successes_to_close" => ("successes", self.successes.as_ref().map(|s| s.span())),
                "open_for" => ("open_for", Some(o.span())),
                other => (other, None),
            };
            return Err(ctx.err(
                span.unwrap_or(table),
                &format!("strategy.{key}"),
                e.to_string(),
            ));
        }
        Ok((allowed, StrategyKind::Fusebox(config)))
    }

    /// Checks the keys against the kind and builds the spec.
    pub(crate) fn validate(
        &self,
        ctx: &Ctx<'_>,
        table: Range<usize>,
    ) -> Result<StrategySpec, ScenarioError> {
        let name = self.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(ctx.err(self.name.span(), "strategy.name", "must not be empty"));
        }
        let kind_str = self.kind.get_ref().as_str();
        let (allowed, kind): (&[&str], StrategyKind) = match kind_str {
            "none" => (&[], StrategyKind::None),
            "seed" => {
                let f = need(ctx, &self.failures, "failures", kind_str, table.clone())?;
                let o = need(ctx, &self.open_for, "open_for", kind_str, table.clone())?;
                (
                    &["failures", "open_for"],
                    StrategyKind::Seed(SeedConfig {
                        failures: int_in(ctx, f, "strategy.failures", 1, 1_000_000)? as u32,
                        open_for: o.get_ref().0,
                    }),
                )
            }
            "fusebox" => self.fusebox(ctx, table.clone())?,
            peer if crate::peers::Peer::parse(peer).is_some() => {
                let f = need(ctx, &self.failures, "failures", kind_str, table.clone())?;
                let o = need(ctx, &self.open_for, "open_for", kind_str, table.clone())?;
                (
                    &["failures", "open_for"],
                    StrategyKind::Peer(crate::peers::PeerConfig {
                        peer: crate::peers::Peer::parse(peer).expect("matched above"),
                        failures: int_in(ctx, f, "strategy.failures", 1, 1_000_000)? as u32,
                        open_for: o.get_ref().0,
                    }),
                )
            }
            other => {
                return Err(ctx.err(
                    self.kind.span(),
                    "strategy.kind",
                    format!("{other:?} is not one of \"none\", \"seed\", \"fusebox\", \"failsafe\", \"recloser\", \"tower-resilience\""),
                ))
            }
        };
        for (key, span) in self.present() {
            if !allowed.contains(&key) {
                return Err(ctx.err(
                    span,
                    &format!("strategy.{key}"),
                    format!("does not apply to kind = \"{kind_str}\""),
                ));
            }
        }
        Ok(StrategySpec { name, kind })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn seed() -> SeedBreaker {
        SeedBreaker::new(SeedConfig {
            failures: 3,
            open_for: ms(500),
        })
    }

    fn call(g: &dyn Guard, now: u64) -> Option<Box<dyn Ticket>> {
        match g.admit(ms(now)) {
            Admission::Call(t) => Some(t),
            Admission::FastFail => None,
        }
    }

    #[test]
    fn seed_opens_after_consecutive_failures_and_success_resets() {
        let b = seed();
        for t in [0, 1] {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        call(&b, 2).unwrap().finish(ms(2), CallResult::Success);
        for t in [3, 4] {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        assert_eq!(b.state(), SeedState::Closed);
        call(&b, 5).unwrap().finish(ms(5), CallResult::Timeout);
        assert_eq!(b.state(), SeedState::Open);
        assert!(call(&b, 504).is_none());
    }

    #[test]
    fn seed_single_probe_then_close_or_reopen() {
        let b = seed();
        for t in 0..3 {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        // opened at 2; probe allowed at 502.
        assert!(call(&b, 501).is_none());
        let probe = call(&b, 502).unwrap();
        assert_eq!(b.state(), SeedState::HalfOpen);
        assert!(call(&b, 503).is_none(), "one probe at a time");
        probe.finish(ms(600), CallResult::Error);
        assert_eq!(b.state(), SeedState::Open);
        assert!(call(&b, 1099).is_none());
        let probe = call(&b, 1100).unwrap();
        probe.finish(ms(1105), CallResult::Success);
        assert_eq!(b.state(), SeedState::Closed);
        let log: Vec<_> = b.transitions().iter().map(|t| (t.at, t.to)).collect();
        assert_eq!(
            log,
            vec![
                (ms(2), "open"),
                (ms(502), "half_open"),
                (ms(600), "open"),
                (ms(1100), "half_open"),
                (ms(1105), "closed")
            ]
        );
    }

    #[test]
    fn seed_stale_failures_extend_the_open_period() {
        let b = seed();
        let stale = call(&b, 0).unwrap();
        for t in 1..4 {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        assert_eq!(b.state(), SeedState::Open);
        // A call admitted before the trip fails at 300: opened_at moves to 300.
        stale.finish(ms(300), CallResult::Error);
        assert!(call(&b, 503).is_none(), "still open: opened_at was re-set");
        assert!(call(&b, 800).is_some());
        // Logged once: no open -> open entries.
        assert_eq!(b.transitions().len(), 2);
    }
}

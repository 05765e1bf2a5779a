//! Reports: the figures of a run ([`Summary`]), one model of rows and
//! series ([`model`]), rendered as a terminal table, JSON and HTML.
//!
//! Imports `engine` and `scenario` (below it).

pub mod article;
pub mod hosts;
pub mod html;
pub mod json;
pub mod model;
pub mod runs;
pub mod sweep;
pub mod table;

use crate::engine::{self, Breakers, CallRecord, Mode, Outcome, RunResult, TransitionRecord};
use crate::scenario::Scenario;
use article::ArticleFigures;
use std::time::Duration;

/// Median and maximum latency of a group of requests, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// Median (mean of the two middle values for an even count).
    pub median_ms: f64,
    /// Maximum.
    pub max_ms: f64,
    /// 99th percentile (nearest rank: the smallest latency that 99 % of
    /// the group do not exceed).
    pub p99_ms: f64,
}

/// The latency of every request of a run, and what its hedges cost: the
/// figures of a scenario about tail latency ([`Scenario::has_tail`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TailFigures {
    /// Median latency of all requests, in milliseconds (nearest rank).
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Downstream calls per request: 1 plus the extra load of retries and
    /// hedges.
    pub calls_per_request: f64,
    /// Calls sent by a hedge.
    pub hedges: usize,
    /// Requests answered by a hedge.
    pub won_by_hedge: usize,
    /// Calls dropped unanswered, another attempt having answered first.
    pub cancelled: usize,
}

/// What the HTTP client's pool did to a run's calls ([`Summary::pool`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolFigures {
    /// Calls that waited for a connection (`pool_max` reached).
    pub waited: usize,
    /// The longest of those waits, in milliseconds.
    pub wait_max_ms: f64,
    /// Calls whose connect timed out (a server that accepts no connection).
    pub connect_timeouts: usize,
    /// The most calls holding a connection at once (from the end of their
    /// wait to their end; over every replica's client in a fleet): at most
    /// `pool_max` in virtual time.
    pub peak_in_use: usize,
}

impl PoolFigures {
    /// The figures of `run`'s calls.
    pub fn of(run: &RunResult) -> PoolFigures {
        // A connection freed at `t` is taken again at `t`: ends before starts.
        let mut edges: Vec<(Duration, i64)> = run
            .calls
            .iter()
            .filter(|c| c.start + c.waited < c.end)
            .flat_map(|c| [(c.start + c.waited, 1), (c.end, -1)])
            .collect();
        edges.sort_unstable();
        let (mut now, mut peak) = (0i64, 0i64);
        for (_, d) in edges {
            now += d;
            peak = peak.max(now);
        }
        PoolFigures {
            waited: run.calls.iter().filter(|c| !c.waited.is_zero()).count(),
            wait_max_ms: run
                .calls
                .iter()
                .map(|c| c.waited.as_secs_f64() * 1e3)
                .fold(0.0, f64::max),
            connect_timeouts: run.calls.iter().filter(|c| c.connect_failed).count(),
            peak_in_use: usize::try_from(peak).unwrap_or(0),
        }
    }
}

impl TailFigures {
    fn of(run: &RunResult) -> TailFigures {
        let mut v: Vec<Duration> = run.requests.iter().map(|r| r.latency()).collect();
        v.sort_unstable();
        // Nearest rank: the smallest latency that `num / den` of the
        // requests do not exceed.
        let quantile = |num: usize, den: usize| {
            let rank = (v.len() * num).div_ceil(den).max(1);
            v.get(rank - 1).map_or(0.0, |d| d.as_secs_f64() * 1e3)
        };
        let count = |f: fn(&CallRecord) -> bool| run.calls.iter().filter(|c| f(c)).count();
        TailFigures {
            p50_ms: quantile(1, 2),
            p99_ms: quantile(99, 100),
            p999_ms: quantile(999, 1000),
            calls_per_request: run.calls.len() as f64 / run.requests.len().max(1) as f64,
            hedges: count(|c| c.hedge),
            won_by_hedge: count(|c| c.hedge && c.succeeded()),
            cancelled: count(|c| c.cancelled),
        }
    }
}

/// Outcomes of the requests that arrived in one report window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// Window start.
    pub from: Duration,
    /// Requests that succeeded.
    pub ok: usize,
    /// Requests that failed at the downstream (error or timeout).
    pub fail: usize,
    /// Of those, the ones that ended at the client's timeout.
    pub timeouts: usize,
    /// Requests the guard rejected.
    pub fast_fail: usize,
    /// Requests a full queue rejected.
    pub rejected: usize,
}

/// What happened after the fault ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backlog {
    /// When the last request that arrived during the fault finished.
    pub last_fault_request_done: Duration,
    /// Requests that arrived before the fault's end and finished after it.
    pub finished_after_fault: usize,
}

/// The figures of one strategy's run.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Strategy name.
    pub name: String,
    /// Strategy kind.
    pub kind: &'static str,
    /// Requests that arrived.
    pub requests: usize,
    /// Calls that reached the downstream (retries included).
    pub downstream_calls: usize,
    /// Downstream calls that failed (error or timeout; retries included).
    pub failed_calls: usize,
    /// Requests that ended in success.
    pub successes: usize,
    /// Requests that ended in a downstream failure (error or timeout).
    pub downstream_errors: usize,
    /// Of those, the ones that ended at the client's timeout.
    pub timeouts: usize,
    /// Requests the guard rejected before they reached the downstream.
    pub fast_fails: usize,
    /// Requests a full queue rejected.
    pub queue_rejections: usize,
    /// Latency of requests arriving during the fault.
    pub latency_fault: Option<Latency>,
    /// Latency of requests arriving in the first second after the fault.
    pub latency_after: Option<Latency>,
    /// The guard's transitions.
    pub transitions: Vec<TransitionRecord>,
    /// Per-window outcomes, by arrival time.
    pub windows: Vec<Window>,
    /// The backlog after the fault (None without faults).
    pub backlog: Option<Backlog>,
    /// When the last request finished.
    pub all_done: Duration,
    /// Downstream calls that started during the fault.
    pub calls_during_fault: usize,
    /// Requests arriving after the fault's end that did not succeed.
    pub lost_after_recovery: usize,
    /// Probes that failed (half_open -> open transitions).
    pub failed_probes: usize,
    /// From the fault's end to the start of the first successful call after it.
    pub recovery_lag: Option<Duration>,
    /// The most requests waiting at once for a worker (in all replicas'
    /// queues): arrived and not yet taken.
    pub queue_peak: usize,
    /// A fleet's figures per replica and in total (`None` without `[fleet]`).
    pub fleet: Option<FleetFigures>,
    /// A dependency of several hosts: the figures over the hosts (`None`
    /// for one host).
    pub hosts: Option<hosts::HostFigures>,
    /// The whole run's latency and the hedges' cost, in a scenario about
    /// tail latency (`None` in the others).
    pub tail: Option<TailFigures>,
    /// What the HTTP client's pool did, in a scenario whose pool is
    /// modelled ([`Scenario::models_pool`]; `None` in the others).
    pub pool: Option<PoolFigures>,
}

/// The figures of a fleet run that differ between replicas.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetFigures {
    /// Replica 1, 2, ...
    pub replicas: Vec<ReplicaFigures>,
    /// All replicas: sums, and the latest recovery.
    pub total: ReplicaFigures,
}

/// One replica's figures (or the fleet's total).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplicaFigures {
    /// Downstream calls that started during the fault span.
    pub calls_during_fault: usize,
    /// Downstream calls that failed (error or timeout).
    pub failing_calls: usize,
    /// Calls that started while the replica's own breaker was half-open
    /// (after the fault began): the probes of its recovery.
    pub recovery_probes: usize,
    /// From the fault's end to its first successful call after it (the
    /// total: the last replica's).
    pub recovery_lag: Option<Duration>,
    /// Requests fast-failed while no fault hit the replica's calls: the
    /// requests a breaker cost while its dependency was healthy.
    pub healthy_fast_fails: usize,
    /// State changes the fleet made on the replica's breaker (another
    /// replica's trip or close: [`TransitionRecord::remote`]); none without
    /// `sharing = "fleet"`.
    pub remote_transitions: usize,
}

impl FleetFigures {
    fn of(scenario: &Scenario, run: &RunResult) -> Option<FleetFigures> {
        let fleet = run.fleet.as_ref()?;
        let (from, until) = scenario
            .fault_span()
            .map_or((None, None), |(a, b)| (Some(a), Some(b)));
        let replicas: Vec<ReplicaFigures> = fleet
            .transitions
            .iter()
            .enumerate()
            .map(|(r, transitions)| {
                let calls = || {
                    run.calls
                        .iter()
                        .filter(move |c| scenario.replica_of(c.request) == r)
                };
                // The replica's half-open periods: [to half_open, next change).
                let half_open: Vec<(Duration, Duration)> = transitions
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.to == "half_open")
                    .map(|(i, t)| {
                        let end = transitions.get(i + 1).map_or(Duration::MAX, |n| n.at);
                        (t.at, end)
                    })
                    .collect();
                ReplicaFigures {
                    calls_during_fault: calls()
                        .filter(|c| {
                            from.is_some_and(|f| c.start >= f) && until.is_some_and(|u| c.start < u)
                        })
                        .count(),
                    failing_calls: calls().filter(|c| c.failed()).count(),
                    recovery_probes: calls()
                        .filter(|c| from.is_some_and(|f| c.start >= f))
                        .filter(|c| half_open.iter().any(|&(a, b)| c.start >= a && c.start < b))
                        .count(),
                    recovery_lag: until.and_then(|u| {
                        calls()
                            .filter(|c| c.start >= u && c.succeeded())
                            .map(|c| c.start - u)
                            .min()
                    }),
                    healthy_fast_fails: run
                        .requests
                        .iter()
                        .enumerate()
                        .filter(|(i, q)| {
                            scenario.replica_of(*i) == r && q.outcome == Outcome::FastFail
                        })
                        .filter(|(_, q)| {
                            let at = q.start.unwrap_or(q.arrival);
                            scenario.downstream.fault_on(r, at).is_none()
                        })
                        .count(),
                    remote_transitions: transitions.iter().filter(|t| t.remote).count(),
                }
            })
            .collect();
        let total = ReplicaFigures {
            calls_during_fault: replicas.iter().map(|r| r.calls_during_fault).sum(),
            failing_calls: replicas.iter().map(|r| r.failing_calls).sum(),
            recovery_probes: replicas.iter().map(|r| r.recovery_probes).sum(),
            recovery_lag: if replicas.iter().all(|r| r.recovery_lag.is_some()) {
                replicas.iter().filter_map(|r| r.recovery_lag).max()
            } else {
                None
            },
            healthy_fast_fails: replicas.iter().map(|r| r.healthy_fast_fails).sum(),
            remote_transitions: replicas.iter().map(|r| r.remote_transitions).sum(),
        };
        Some(FleetFigures { replicas, total })
    }
}

fn latency(mut v: Vec<Duration>) -> Option<Latency> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let n = v.len();
    let median = if n % 2 == 1 {
        ms(v[n / 2])
    } else {
        (ms(v[n / 2 - 1]) + ms(v[n / 2])) / 2.0
    };
    Some(Latency {
        median_ms: median,
        max_ms: ms(v[n - 1]),
        p99_ms: ms(v[(n * 99).div_ceil(100).max(1) - 1]),
    })
}

/// The most requests waiting at once: each waits from its arrival to its
/// start (a worker took it); at equal times starts come first, so a
/// request taken the instant it arrives never waited.
fn queue_peak(requests: &[engine::RequestRecord]) -> usize {
    let mut events: Vec<(Duration, bool)> = requests
        .iter()
        .filter_map(|r| r.start.map(|s| [(r.arrival, true), (s, false)]))
        .flatten()
        .collect();
    // `false` (a start) sorts before `true` (an arrival) at equal times:
    // the count may dip below the truth for an instant, never above it.
    events.sort_unstable();
    let (mut waiting, mut peak) = (0i64, 0i64);
    for (_, arrival) in events {
        waiting += if arrival { 1 } else { -1 };
        peak = peak.max(waiting);
    }
    peak as usize
}

impl Summary {
    /// Computes the figures of `run` (a run of `scenario`).
    pub fn of(scenario: &Scenario, run: &RunResult) -> Summary {
        let count = |o: Outcome| run.requests.iter().filter(|r| r.outcome == o).count();
        let fault = scenario.fault_span();
        let arriving = |from: Duration, until: Duration| {
            run.requests
                .iter()
                .filter(move |r| r.arrival >= from && r.arrival < until)
        };
        let (latency_fault, latency_after) = match fault {
            Some((from, until)) => (
                latency(arriving(from, until).map(|r| r.latency()).collect()),
                latency(
                    arriving(until, until + Duration::from_secs(1))
                        .map(|r| r.latency())
                        .collect(),
                ),
            ),
            None => (None, None),
        };
        let nwin = scenario
            .duration
            .as_nanos()
            .div_ceil(scenario.window.as_nanos()) as usize;
        let mut windows: Vec<Window> = (0..nwin)
            .map(|i| Window {
                from: scenario.window * i as u32,
                ..Window::default()
            })
            .collect();
        for r in &run.requests {
            let i = (r.arrival.as_nanos() / scenario.window.as_nanos()) as usize;
            let Some(w) = windows.get_mut(i) else {
                continue;
            };
            match r.outcome {
                Outcome::Ok => w.ok += 1,
                Outcome::Error => w.fail += 1,
                Outcome::Timeout => {
                    w.fail += 1;
                    w.timeouts += 1;
                }
                Outcome::FastFail => w.fast_fail += 1,
                Outcome::Rejected => w.rejected += 1,
            }
        }
        let backlog = fault.map(|(from, until)| Backlog {
            last_fault_request_done: arriving(from, until).map(|r| r.end).max().unwrap_or(until),
            finished_after_fault: run
                .requests
                .iter()
                .filter(|r| r.arrival < until && r.end > until)
                .count(),
        });
        let (calls_during_fault, lost_after_recovery, recovery_lag) = match fault {
            Some((from, until)) => (
                run.calls
                    .iter()
                    .filter(|c| c.start >= from && c.start < until)
                    .count(),
                run.requests
                    .iter()
                    .filter(|r| r.arrival >= until && r.outcome != Outcome::Ok)
                    .count(),
                run.calls
                    .iter()
                    .filter(|c| c.start >= until && c.succeeded())
                    .map(|c| c.start - until)
                    .min(),
            ),
            None => (run.calls.len(), 0, None),
        };
        Summary {
            name: run.strategy.clone(),
            kind: run.kind,
            requests: run.requests.len(),
            downstream_calls: run.calls.len(),
            failed_calls: run.calls.iter().filter(|c| c.failed()).count(),
            successes: count(Outcome::Ok),
            downstream_errors: count(Outcome::Error) + count(Outcome::Timeout),
            timeouts: count(Outcome::Timeout),
            fast_fails: count(Outcome::FastFail),
            queue_rejections: count(Outcome::Rejected),
            latency_fault,
            latency_after,
            transitions: run.transitions.clone(),
            windows,
            backlog,
            all_done: run.requests.iter().map(|r| r.end).max().unwrap_or_default(),
            calls_during_fault,
            lost_after_recovery,
            failed_probes: run
                .transitions
                .iter()
                .filter(|t| t.is_failed_probe())
                .count(),
            recovery_lag,
            queue_peak: queue_peak(&run.requests),
            fleet: FleetFigures::of(scenario, run),
            hosts: hosts::HostFigures::of(scenario, run),
            tail: scenario.has_tail().then(|| TailFigures::of(run)),
            pool: scenario.models_pool().then(|| PoolFigures::of(run)),
        }
    }
}

/// A scenario's runs, one per strategy, with their summaries.
#[derive(Debug, Clone)]
pub struct ScenarioReport {
    /// The scenario.
    pub scenario: Scenario,
    /// The mode it ran in.
    pub mode: Mode,
    /// One run per strategy, in the scenario's order.
    pub runs: Vec<RunResult>,
    /// Their summaries.
    pub summaries: Vec<Summary>,
    /// The article's published figures for each strategy, where it
    /// published them (the same experiment and the same strategy).
    pub article: Vec<Option<ArticleFigures>>,
}

impl ScenarioReport {
    /// Runs every strategy of `scenario` in `mode` (fusebox breakers in
    /// `shared` when given, see [`engine::run`]); `before` is called with
    /// each strategy's name before its run, `after` after it.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::engine::Mode;
    /// use fusebox_lab::report::{json, table, ScenarioReport};
    /// use fusebox_lab::scenario::Scenario;
    ///
    /// let sc = Scenario::embedded().remove(0);
    /// let report = ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {})?;
    /// assert_eq!(report.summaries[1].downstream_calls, 86);
    /// assert!(table::render_scenario(&report).contains(" published "));
    /// assert!(json::text(&[report]).contains("\"downstream_calls\": 86"));
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The first run that could not start ([`engine::run`]).
    pub fn run(
        scenario: Scenario,
        mode: Mode,
        shared: Option<&Breakers>,
        mut before: impl FnMut(&str),
        mut after: impl FnMut(),
    ) -> Result<Self, String> {
        let mut runs = Vec::with_capacity(scenario.strategies.len());
        for spec in &scenario.strategies {
            before(&spec.name);
            runs.push(engine::run(&scenario, spec, mode, shared)?);
            after();
        }
        Ok(ScenarioReport::new(scenario, mode, runs))
    }

    /// Bundles the runs of `scenario`.
    pub fn new(scenario: Scenario, mode: Mode, runs: Vec<RunResult>) -> Self {
        let summaries = runs.iter().map(|r| Summary::of(&scenario, r)).collect();
        let article = scenario
            .strategies
            .iter()
            .map(|spec| article::figures(&scenario, spec))
            .collect();
        ScenarioReport {
            scenario,
            mode,
            runs,
            summaries,
            article,
        }
    }
}

/// Seconds with millisecond precision, for display.
pub fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

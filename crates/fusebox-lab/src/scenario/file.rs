//! The TOML layout of a scenario file, and its validation into a [`Scenario`].

use super::downstream::{HttpConfig, Transport};
use super::duration::Dur;
use super::error::{int_in, Ctx, ScenarioError};
use super::strategy::RawStrategy;
use super::{
    Client, Downstream, Fault, FaultOutcome, Fleet, LatencyDist, Problem, Redis, Scenario, Sharing,
    StrategySpec, Tail, DEFAULT_SEED, MAX_QUEUE, MAX_REPLICAS, MAX_RETRIES, MAX_WORKERS,
};
use serde::Deserialize;
use std::ops::Range;
use std::time::Duration;
use toml::Spanned;

/// Parses and validates scenario text; `file` is only used in errors.
pub(super) fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { file, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| ctx.toml_error(&e))?;
    raw.validate(&ctx)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    duration: Spanned<Dur>,
    rate: Spanned<f64>,
    rate_until: Option<Spanned<f64>>,
    workers: Spanned<i64>,
    queue: Option<Spanned<i64>>,
    window: Option<Spanned<Dur>>,
    downstream: RawDownstream,
    client: Option<RawClient>,
    request: Option<RawRequest>,
    strategy: Vec<Spanned<RawStrategy>>,
    fleet: Option<Spanned<RawFleet>>,
    seed: Option<Spanned<i64>>,
    arrivals: Option<Spanned<String>>,
    burst: Option<Spanned<RawBurst>>,
    trace: Option<Spanned<RawTrace>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBurst {
    on: Spanned<Dur>,
    off: Spanned<Dur>,
    peak: Spanned<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    file: Spanned<String>,
    format: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFleet {
    replicas: Spanned<i64>,
    sharing: Spanned<String>,
    quorum: Option<Spanned<i64>>,
    sync_every: Option<Spanned<Dur>>,
    propagation: Option<Spanned<Dur>>,
    redis: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDownstream {
    /// Read by [`latency`]: a duration or a distribution.
    latency: Spanned<toml::Value>,
    hosts: Option<Spanned<i64>>,
    transport: Option<Spanned<String>>,
    pool_max_idle: Option<Spanned<i64>>,
    pool_max: Option<Spanned<i64>>,
    connect_timeout: Option<Spanned<Dur>>,
    /// Read by [`transport`], so that any bad value is named by its full key.
    overhead: Option<Spanned<toml::Value>>,
    server: Option<Spanned<RawServer>>,
    #[serde(default)]
    tail: Vec<Spanned<RawTail>>,
    #[serde(default)]
    faults: Vec<Spanned<RawFault>>,
}

/// One `[[downstream.tail]]` entry; its values are read by [`tail`], so
/// that a value of the wrong type is named by its full key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTail {
    share: Option<Spanned<toml::Value>>,
    latency: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    workers: Spanned<i64>,
    p90: Spanned<Dur>,
    p99: Spanned<Dur>,
    reject_after: Option<Spanned<Dur>>,
    latency_per_inflight: Option<Spanned<toml::Value>>,
    knee: Option<Spanned<toml::Value>>,
    knee_exp: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    /// A fixed start; or `onset`, a range it is drawn from.
    from: Option<Spanned<Dur>>,
    /// A fixed end; or `length`, a range the length is drawn from.
    until: Option<Spanned<Dur>>,
    /// Read by [`outage`], as `jitter` is.
    onset: Option<Spanned<toml::Value>>,
    length: Option<Spanned<toml::Value>>,
    length_dist: Option<Spanned<toml::Value>>,
    /// Every outcome but `capacity` needs it; read by [`latency`].
    latency: Option<Spanned<toml::Value>>,
    /// One outcome, or a list an outage's is drawn from: read by
    /// [`outcomes`].
    outcome: Spanned<toml::Value>,
    /// `capacity` only: the server's workers during the fault.
    workers: Option<Spanned<i64>>,
    replicas: Option<Spanned<Vec<i64>>>,
    hosts: Option<Spanned<Vec<i64>>>,
    /// Read by [`jitter`], so that a value of the wrong type is named by
    /// its full key.
    jitter: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    critical: Option<Spanned<Dur>>,
    deadline: Option<Spanned<Dur>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    timeout: Option<Spanned<Dur>>,
    retries: Option<Spanned<i64>>,
}

impl RawScenario {
    /// Where the value a [`Problem`] is about was written.
    fn span_of(&self, p: &Problem) -> Range<usize> {
        let fault = |i: Option<usize>| {
            i.and_then(|i| self.downstream.faults.get(i))
                .map(|f| f.get_ref())
        };
        let client = self.client.as_ref();
        let request = self.request.as_ref();
        let fleet = self.fleet.as_ref().map(|f| (f.span(), f.get_ref()));
        let tail = |i: Option<usize>| i.and_then(|i| self.downstream.tail.get(i));
        let span = match p.key {
            "downstream.tail" => tail(p.index).map(|t| t.span()),
            "downstream.tail.share" => tail(p.index)
                .and_then(|t| t.get_ref().share.as_ref())
                .map(|v| v.span()),
            "downstream.tail.latency" => tail(p.index)
                .and_then(|t| t.get_ref().latency.as_ref())
                .map(|v| v.span()),
            "fleet.replicas" => fleet.map(|f| f.1.replicas.span()),
            "fleet.quorum" => fleet.map(|f| f.1.quorum.as_ref().map_or(f.0.clone(), |q| q.span())),
            "fleet.sync_every" => fleet
                .and_then(|f| f.1.sync_every.as_ref())
                .map(|v| v.span()),
            "fleet.propagation" => fleet
                .and_then(|f| f.1.propagation.as_ref())
                .map(|v| v.span()),
            "fleet.redis" => fleet.and_then(|f| f.1.redis.as_ref()).map(|v| v.span()),
            "downstream.faults.replicas" => fault(p.index)
                .and_then(|f| f.replicas.as_ref())
                .map(|r| r.span()),
            "downstream.faults.hosts" => fault(p.index)
                .and_then(|f| f.hosts.as_ref())
                .map(|r| r.span()),
            "downstream.hosts" => self.downstream.hosts.as_ref().map(|h| h.span()),
            "rate" => Some(self.rate.span()),
            "workers" => Some(self.workers.span()),
            "queue" => self.queue.as_ref().map(|q| q.span()),
            "window" => self.window.as_ref().map(|w| w.span()),
            "client.timeout" => match fault(p.index) {
                // A hanging fault without a timeout: point at the fault.
                Some(f) => Some(f.outcome.span()),
                None => client.and_then(|c| c.timeout.as_ref()).map(|t| t.span()),
            },
            "client.retries" => client.and_then(|c| c.retries.as_ref()).map(|r| r.span()),
            "request.critical" => request.and_then(|r| r.critical.as_ref()).map(|v| v.span()),
            "request.deadline" => request.and_then(|r| r.deadline.as_ref()).map(|v| v.span()),
            "downstream.latency" => Some(self.downstream.latency.span()),
            "downstream.faults.from" => fault(p.index)
                .and_then(|f| f.from.as_ref())
                .map(|v| v.span()),
            "downstream.faults.until" => fault(p.index)
                .and_then(|f| f.until.as_ref())
                .map(|v| v.span()),
            "downstream.faults.onset" => fault(p.index)
                .and_then(|f| f.onset.as_ref())
                .map(|v| v.span()),
            "downstream.faults.length" => fault(p.index)
                .and_then(|f| f.length.as_ref())
                .map(|v| v.span()),
            "downstream.faults.latency" => fault(p.index)
                .and_then(|f| f.latency.as_ref())
                .map(|l| l.span()),
            "downstream.faults.outcome" => fault(p.index).map(|f| f.outcome.span()),
            "downstream.faults.workers" => fault(p.index)
                .and_then(|f| f.workers.as_ref())
                .map(|w| w.span()),
            "downstream.faults.jitter" => fault(p.index)
                .and_then(|f| f.jitter.as_ref())
                .map(|j| j.span()),
            _ => None,
        };
        span.unwrap_or_else(|| self.duration.span())
    }

    fn validate(self, ctx: &Ctx<'_>) -> Result<Scenario, ScenarioError> {
        let name = self.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(ctx.err(self.name.span(), "name", "must not be empty"));
        }
        let workers = int_in(ctx, &self.workers, "workers", 1, MAX_WORKERS as i64)? as usize;
        let queue = match &self.queue {
            Some(q) => int_in(ctx, q, "queue", 0, MAX_QUEUE as i64)? as usize,
            None => 0,
        };
        let client = match &self.client {
            None => Client::default(),
            Some(c) => Client {
                timeout: c.timeout.as_ref().map(|t| t.get_ref().0),
                retries: match &c.retries {
                    Some(r) => int_in(ctx, r, "client.retries", 0, i64::from(MAX_RETRIES))? as u32,
                    None => 0,
                },
            },
        };
        let mut faults = Vec::new();
        let mut fault_jitter = Vec::new();
        let mut outages = Vec::new();
        for (k, f) in self.downstream.faults.iter().enumerate() {
            let r = f.get_ref();
            let (from, until) = match outage(ctx, f, k)? {
                Times::Fixed(from, until) => (from, until),
                Times::Drawn(o) => {
                    outages.push(o);
                    // Drawn for the seed below (`draw_faults`); checked
                    // meanwhile at their earliest.
                    (o.onset.min, o.onset.min + o.length.min)
                }
            };
            if let Some(j) = &r.jitter {
                if outages.last().is_some_and(|o| o.fault == k) {
                    return Err(ctx.err(
                        j.span(),
                        "downstream.faults.jitter",
                        "moves the ends of a fault at fixed times: a fault with onset or \
                         length is drawn already, leave jitter out",
                    ));
                }
                fault_jitter.push(super::FaultJitter {
                    fault: k,
                    by: jitter(ctx, j)?,
                    from,
                    until,
                });
            }
            let listed = outcomes(ctx, &r.outcome)?;
            // A list is checked as each of its outcomes would be; the
            // fault keeps the first's (the seed's draw replaces it below).
            let mut keys = None;
            for &o in &listed {
                let k = fault_keys(ctx, f, o)?;
                keys.get_or_insert(k);
            }
            let (outcome, latency, latency_dist) = keys.expect("outcomes gives at least one");
            if listed.len() > 1 {
                if let Some(j) = &r.jitter {
                    return Err(ctx.err(
                        j.span(),
                        "downstream.faults.jitter",
                        "a fault whose outcome is drawn from a list is an outage model: give its \
                         start and length as onset = \"MIN..MAX\" and length = \"MIN..MAX\" \
                         in place of jitter",
                    ));
                }
                let kinds = super::Kinds::of(&listed);
                match outages.last_mut() {
                    Some(o) if o.fault == k => o.kinds = kinds,
                    _ => outages.push(super::Outage {
                        fault: k,
                        onset: super::DurRange {
                            min: from,
                            max: from,
                        },
                        length: super::DurRange {
                            min: until.saturating_sub(from),
                            max: until.saturating_sub(from),
                        },
                        length_dist: super::LengthDist::Uniform,
                        kinds,
                    }),
                }
            }
            // A fault's hosts are its lanes as a fleet's replicas are (a
            // scenario has one or the other, see `check`).
            let lanes = match (&r.replicas, &r.hosts) {
                (Some(_), Some(h)) => {
                    return Err(ctx.err(
                        h.span(),
                        "downstream.faults.hosts",
                        "a fault names replicas or hosts, not both",
                    ))
                }
                (None, Some(h)) if self.downstream.hosts.is_none() => {
                    return Err(ctx.err(
                        h.span(),
                        "downstream.faults.hosts",
                        "needs [downstream] hosts (hosts are numbered from 1 to downstream.hosts)",
                    ))
                }
                (Some(_), None) if self.downstream.hosts.is_some() => {
                    let span = r.replicas.as_ref().map(|v| v.span()).unwrap_or(f.span());
                    return Err(ctx.err(
                        span,
                        "downstream.faults.replicas",
                        "a dependency of several hosts names the hosts a fault hits with hosts = [..]",
                    ));
                }
                (replicas, hosts) => replicas.as_ref().or(hosts.as_ref()),
            };
            // Out of range (0 for a negative number) is refused by `check`.
            let replicas = lanes.map(|list| {
                list.get_ref()
                    .iter()
                    .map(|&n| usize::try_from(n).unwrap_or(0))
                    .collect()
            });
            faults.push(Fault {
                from,
                until,
                latency,
                outcome,
                replicas,
                latency_dist,
            });
        }
        let rate_until = match &self.rate_until {
            None => None,
            Some(r) => {
                let v = *r.get_ref();
                if !(v.is_finite() && v > 0.0 && v <= super::MAX_RATE) {
                    return Err(ctx.err(
                        r.span(),
                        "rate_until",
                        format!(
                            "{v} must be > 0 and at most {} (requests per second)",
                            super::MAX_RATE
                        ),
                    ));
                }
                Some(v)
            }
        };
        let server = match &self.downstream.server {
            None => None,
            Some(s) => {
                let r = s.get_ref();
                let workers = int_in(
                    ctx,
                    &r.workers,
                    "downstream.server.workers",
                    1,
                    MAX_WORKERS as i64,
                )? as usize;
                let (p90, p99) = (r.p90.get_ref().0, r.p99.get_ref().0);
                if p90.is_zero() {
                    return Err(ctx.err(
                        r.p90.span(),
                        "downstream.server.p90",
                        "must be above zero",
                    ));
                }
                if p99 < p90 {
                    return Err(ctx.err(
                        r.p99.span(),
                        "downstream.server.p99",
                        "must be at least p90",
                    ));
                }
                let reject_after = r.reject_after.as_ref().map(|d| d.get_ref().0);
                let (latency_per_inflight, knee) = server_growth(ctx, r)?;
                Some(super::Server {
                    workers,
                    p90,
                    p99,
                    reject_after,
                    latency_per_inflight,
                    knee,
                })
            }
        };
        let seed = match &self.seed {
            Some(s) => int_in(ctx, s, "seed", 0, i64::MAX)? as u64,
            None => DEFAULT_SEED,
        };
        let tail = self
            .downstream
            .tail
            .iter()
            .map(|t| self::tail(ctx, t))
            .collect::<Result<Vec<Tail>, _>>()?;
        let arrivals = self
            .arrivals
            .as_ref()
            .map(|a| (a.span(), a.get_ref().as_str()));
        let arrivals_span = arrivals.as_ref().map(|a| a.0.clone()).unwrap_or(0..0);
        let kind = match arrivals {
            None => "fixed",
            Some((_, k @ ("fixed" | "poisson" | "bursty" | "trace"))) => k,
            Some((span, other)) => {
                return Err(ctx.err(
                    span,
                    "arrivals",
                    format!(
                        "{other:?} is not one of \"fixed\", \"poisson\", \"bursty\", \"trace\""
                    ),
                ))
            }
        };
        let burst = match (&self.burst, kind) {
            (Some(b), "bursty") => Some(burst(ctx, b)?),
            (None, "bursty") => {
                return Err(ctx.err(
                    arrivals_span,
                    "burst",
                    "arrivals = \"bursty\" needs burst = { on = \"1s\", off = \"4s\", peak = 3.0 }",
                ))
            }
            (Some(b), _) => return Err(ctx.err(b.span(), "burst", "is for arrivals = \"bursty\"")),
            (None, _) => None,
        };
        if let (Some(_), Some(r)) = (&burst, &self.rate_until) {
            return Err(ctx.err(
                r.span(),
                "rate_until",
                "arrivals = \"bursty\" needs a constant rate",
            ));
        }
        let trace = match (&self.trace, kind) {
            (Some(t), "trace") => Some(trace(ctx, t)?),
            (None, "trace") => {
                return Err(ctx.err(
                    arrivals_span,
                    "trace",
                    "arrivals = \"trace\" needs trace = { file = \"arrivals.txt\" }",
                ))
            }
            (Some(t), _) => return Err(ctx.err(t.span(), "trace", "is for arrivals = \"trace\"")),
            (None, _) => None,
        };
        let healthy = latency(ctx, &self.downstream.latency, "downstream.latency")?;
        let mut scenario = Scenario {
            name,
            seed,
            arrivals: super::Arrivals::Fixed,
            fault_jitter,
            outages,
            duration: self.duration.get_ref().0,
            rate: *self.rate.get_ref(),
            rate_until,
            workers,
            queue,
            window: self
                .window
                .as_ref()
                .map_or(Duration::from_millis(500), |w| w.get_ref().0),
            downstream: Downstream {
                latency: healthy.0,
                latency_dist: healthy.1,
                tail,
                faults,
                transport: transport(ctx, &self.downstream)?,
                server,
            },
            client,
            request: match &self.request {
                None => super::RequestSpec::default(),
                Some(r) => super::RequestSpec {
                    critical: r
                        .critical
                        .as_ref()
                        .map_or(Duration::ZERO, |d| d.get_ref().0),
                    deadline: r.deadline.as_ref().map(|d| d.get_ref().0),
                },
            },
            strategies: Vec::new(),
            fleet: match &self.fleet {
                None => None,
                Some(f) => Some(fleet(ctx, f.get_ref())?),
            },
            hosts: match &self.downstream.hosts {
                None => 1,
                Some(h) => int_in(ctx, h, "downstream.hosts", 2, super::MAX_HOSTS as i64)? as usize,
            },
        };
        if let Err(p) = scenario.check() {
            return Err(ctx.err(self.span_of(&p), p.key, p.message));
        }
        // Drawn once the rate, duration and seed are known to be sound.
        scenario.arrivals = match (kind, burst, trace) {
            ("poisson", _, _) => super::Arrivals::Poisson(scenario.poisson_arrivals()),
            (_, Some(b), _) => super::Arrivals::Bursty(b, scenario.bursty_arrivals(b)),
            (_, _, Some(Trace::Times(file, times))) => {
                let end = u64::try_from(scenario.duration.as_nanos()).unwrap_or(u64::MAX);
                let times: Vec<u64> = times.into_iter().filter(|&t| t < end).collect();
                super::Arrivals::Trace(file, times.into())
            }
            (_, _, Some(Trace::PerSecond(file, counts))) => {
                super::Arrivals::Trace(file, scenario.per_second_arrivals(&counts))
            }
            _ => super::Arrivals::Fixed,
        };
        scenario.draw_faults();
        if self.strategy.is_empty() {
            return Err(ScenarioError {
                file: ctx.file.to_string(),
                line: None,
                key: Some("strategy".into()),
                message: "at least one [[strategy]] is required".into(),
            });
        }
        for s in &self.strategy {
            let mut spec: StrategySpec = s.get_ref().validate(ctx, s.span())?;
            spec.hosts = s.get_ref().host_keys(ctx)?.policy(ctx, scenario.hosts)?;
            if spec.hedge.is_some() && scenario.models_pool() {
                return Err(ctx.err(
                    s.span(),
                    "strategy.hedge",
                    "hedging does not go with downstream.pool_max or a no_accept fault (yet)",
                ));
            }
            if spec.hedge.is_some() && spec.hosts.is_some() {
                return Err(ctx.err(
                    s.span(),
                    "strategy.hedge",
                    "hedging does not go with several hosts (yet)",
                ));
            }
            let others = spec.max_concurrent.is_some()
                || spec.rate_limit.is_some()
                || spec.limit.is_some()
                || spec.throttle.is_some()
                || spec.retry_budget.is_some();
            if others && spec.hosts.as_ref().is_some_and(|h| h.per_host) {
                return Err(ctx.err(
                    s.span(),
                    "strategy.per_host",
                    "a breaker per host goes without max_concurrent, rate_limit, limit, throttle \
                     and retry_budget (yet)",
                ));
            }
            if scenario.strategies.iter().any(|o| o.name == spec.name) {
                return Err(ctx.err(
                    s.span(),
                    "strategy.name",
                    format!("{:?} is used by two strategies", spec.name),
                ));
            }
            if scenario.shares_trips() && spec.fleet_open_for().is_err() {
                let why = spec.fleet_open_for().unwrap_err();
                return Err(ctx.err(s.span(), "strategy", why));
            }
            scenario.strategies.push(spec);
        }
        // The outages' recovery needs the strategies' open periods.
        if let Err(p) = scenario.check() {
            return Err(ctx.err(self.span_of(&p), p.key, p.message));
        }
        // An outcome drawn from a list is checked as each of them would
        // be (a hang needs a client timeout, a slow fault a latency above
        // the healthy one, ...), so that no seed draws a scenario the file
        // could not have written.
        for o in scenario.outages.iter().filter(|o| o.kinds.len() > 1) {
            for kind in o.kinds.iter() {
                let mut each = scenario.clone();
                each.downstream.faults[o.fault].outcome = kind;
                if let Err(p) = each.check() {
                    return Err(ctx.err(
                        self.span_of(&p),
                        p.key,
                        format!(
                            "with outcome {:?} (of the list): {}",
                            kind.as_str(),
                            p.message
                        ),
                    ));
                }
            }
        }
        Ok(scenario)
    }
}

/// Reads one `[[downstream.tail]]` entry; its limits are checked with the
/// others in [`Scenario::check`].
fn tail(ctx: &Ctx<'_>, entry: &Spanned<RawTail>) -> Result<Tail, ScenarioError> {
    let get = |v: &Option<Spanned<toml::Value>>, key: &str| {
        v.clone().ok_or_else(|| {
            ctx.err(
                entry.span(),
                &format!("downstream.tail.{key}"),
                format!("missing: every [[downstream.tail]] needs `{key}`"),
            )
        })
    };
    let (share, latency) = (
        get(&entry.get_ref().share, "share")?,
        get(&entry.get_ref().latency, "latency")?,
    );
    let share = match share.get_ref() {
        toml::Value::Float(x) => *x,
        toml::Value::Integer(n) => *n as f64,
        other => {
            return Err(ctx.err(
                share.span(),
                "downstream.tail.share",
                format!("must be a fraction of the calls such as 0.01, not {other}"),
            ))
        }
    };
    let latency = latency
        .get_ref()
        .as_str()
        .ok_or_else(|| {
            format!(
                "must be a duration such as \"1s\", not {}",
                latency.get_ref()
            )
        })
        .and_then(super::duration::parse_value)
        .map_err(|e| ctx.err(latency.span(), "downstream.tail.latency", e))?;
    Ok(Tail { share, latency })
}

/// A number key of `server` (an integer is taken as a float too).
fn number(v: &Spanned<toml::Value>) -> Option<f64> {
    match v.get_ref() {
        toml::Value::Float(x) => Some(*x),
        toml::Value::Integer(n) => Some(*n as f64),
        _ => None,
    }
}

/// Reads `latency_per_inflight`, `knee` and `knee_exp` of `server`.
fn server_growth(
    ctx: &Ctx<'_>,
    r: &RawServer,
) -> Result<(Option<f64>, Option<super::Knee>), ScenarioError> {
    /// Largest `latency_per_inflight` and `knee_exp`: beyond, a few calls
    /// in service take longer than any run.
    const MAX_FACTOR: f64 = 100.0;
    let per_inflight = match &r.latency_per_inflight {
        None => None,
        Some(v) => match number(v) {
            Some(x) if x.is_finite() && (0.0..=MAX_FACTOR).contains(&x) => Some(x),
            _ => {
                return Err(ctx.err(
                    v.span(),
                    "downstream.server.latency_per_inflight",
                    format!(
                        "must be a number from 0 to {MAX_FACTOR} (the share of its service time \
                         each other call in service adds), not {}",
                        v.get_ref()
                    ),
                ))
            }
        },
    };
    let knee = match (&r.knee, &r.knee_exp) {
        (None, None) => None,
        (Some(k), None) => {
            return Err(ctx.err(
                k.span(),
                "downstream.server.knee_exp",
                "missing: a knee needs knee_exp (the factor each call in service above it adds)",
            ))
        }
        (None, Some(e)) => {
            return Err(ctx.err(
                e.span(),
                "downstream.server.knee",
                "missing: knee_exp needs knee (the calls in service where it starts)",
            ))
        }
        (Some(k), Some(e)) => {
            let start = match k.get_ref().as_integer() {
                Some(n) if (1..=MAX_WORKERS as i64).contains(&n) => n as u32,
                _ => {
                    return Err(ctx.err(
                        k.span(),
                        "downstream.server.knee",
                        format!(
                            "must be a whole number of calls in service from 1 to {MAX_WORKERS}, not {}",
                            k.get_ref()
                        ),
                    ))
                }
            };
            let exp = match number(e) {
                Some(x) if x.is_finite() && (1.0..=MAX_FACTOR).contains(&x) => x,
                _ => {
                    return Err(ctx.err(
                        e.span(),
                        "downstream.server.knee_exp",
                        format!(
                            "must be a number from 1 to {MAX_FACTOR}, not {}",
                            e.get_ref()
                        ),
                    ))
                }
            };
            Some(super::Knee { start, exp })
        }
    };
    Ok((per_inflight, knee))
}

/// A fault's `latency` and `workers`, checked against its `outcome`: a
/// `capacity` fault takes `workers` (its bound by the server's workers is
/// checked in [`Scenario::check`]) and no `latency`, every other outcome a
/// `latency` and no `workers`.
fn fault_keys(
    ctx: &Ctx<'_>,
    f: &Spanned<RawFault>,
    outcome: FaultOutcome,
) -> Result<(FaultOutcome, Duration, Option<LatencyDist>), ScenarioError> {
    let r = f.get_ref();
    let written = outcome.as_str();
    match (outcome, &r.latency, &r.workers) {
        (FaultOutcome::NoAccept, Some(l), _) => Err(ctx.err(
            l.span(),
            "downstream.faults.latency",
            "a fault with outcome = \"no_accept\" fails a new connection at the \
             [downstream] connect_timeout: leave latency out",
        )),
        (FaultOutcome::NoAccept, None, None) => Ok((outcome, Duration::ZERO, None)),
        (FaultOutcome::Capacity { .. }, Some(l), _) => Err(ctx.err(
            l.span(),
            "downstream.faults.latency",
            "a fault with outcome = \"capacity\" takes the server's service times: leave \
             latency out (workers = N says how many of the server's workers are left)",
        )),
        (FaultOutcome::Capacity { .. }, None, None) => Err(ctx.err(
            f.span(),
            "downstream.faults.workers",
            "missing: a fault with outcome = \"capacity\" needs workers (how many of the \
             server's workers are left during the fault)",
        )),
        (FaultOutcome::Capacity { .. }, None, Some(w)) => {
            let workers = int_in(ctx, w, "downstream.faults.workers", 0, MAX_WORKERS as i64)?;
            Ok((
                FaultOutcome::Capacity {
                    workers: workers as usize,
                },
                Duration::ZERO,
                None,
            ))
        }
        (_, _, Some(w)) => Err(ctx.err(
            w.span(),
            "downstream.faults.workers",
            format!(
                "is for outcome = \"capacity\" (the server's workers during the fault), not \
                 outcome = {written:?}"
            ),
        )),
        (_, None, None) => Err(ctx.err(
            f.span(),
            "downstream.faults.latency",
            format!("missing: a fault with outcome = {written:?} needs latency"),
        )),
        (_, Some(l), None) => {
            let (median, dist) = latency(ctx, l, "downstream.faults.latency")?;
            let drawn = matches!(outcome, FaultOutcome::Error | FaultOutcome::Reset);
            if dist.is_some() && !drawn {
                return Err(ctx.err(
                    l.span(),
                    "downstream.faults.latency",
                    format!(
                        "a distribution is for a fault whose calls fail after their latency \
                         (outcome = \"error\" or \"reset\"), not outcome = {written:?}: give \
                         one duration"
                    ),
                ));
            }
            Ok((outcome, median, dist))
        }
    }
}

/// Reads a `latency`: a duration (`"5ms"`, constant), `{ lognormal = {
/// p50, p99 } }` or `{ histogram = { le, counts } }` (or `cumulative` in
/// place of `counts`); with its median, the latency the lab takes where it
/// needs one. Its bound by the run is checked in [`Scenario::check`].
fn latency(
    ctx: &Ctx<'_>,
    v: &Spanned<toml::Value>,
    key: &str,
) -> Result<(Duration, Option<LatencyDist>), ScenarioError> {
    let bad = |k: &str, message: String| ctx.err(v.span(), &format!("{key}{k}"), message);
    let usage = || {
        format!(
            "must be a duration such as \"5ms\", {{ lognormal = {{ p50 = \"5ms\", p99 = \
             \"40ms\" }} }} or {{ histogram = {{ le = [\"1ms\", \"10ms\"], counts = [90, 10] \
             }} }}, not {}",
            v.get_ref()
        )
    };
    let dur = |k: &str, x: &toml::Value| {
        x.as_str()
            .ok_or_else(|| format!("must be a duration such as \"5ms\", not {x}"))
            .and_then(super::duration::parse_value)
            .map_err(|e| bad(k, e))
    };
    let table = match v.get_ref() {
        toml::Value::String(_) => return Ok((dur("", v.get_ref())?, None)),
        toml::Value::Table(t) if t.len() == 1 => t,
        _ => return Err(bad("", usage())),
    };
    let (kind, body) = table.iter().next().expect("one key");
    let Some(body) = body.as_table() else {
        return Err(bad(&format!(".{kind}"), usage()));
    };
    let keys = |allowed: &[&str]| match body.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(bad(
            &format!(".{kind}.{k}"),
            format!("unknown key (one of: {})", allowed.join(", ")),
        )),
        None => Ok(()),
    };
    let need = |k: &str| {
        body.get(k).ok_or_else(|| {
            bad(
                &format!(".{kind}.{k}"),
                format!("missing: a {kind} latency needs {k}"),
            )
        })
    };
    let dist = match kind.as_str() {
        "lognormal" => {
            keys(&["p50", "p99"])?;
            let p50 = dur(".lognormal.p50", need("p50")?)?;
            let p99 = dur(".lognormal.p99", need("p99")?)?;
            if p50.is_zero() {
                return Err(bad(".lognormal.p50", "must be above zero".into()));
            }
            if p99 < p50 {
                return Err(bad(
                    ".lognormal.p99",
                    format!(
                        "{} is below p50 = {}: must be at least p50",
                        super::format_duration(p99),
                        super::format_duration(p50)
                    ),
                ));
            }
            LatencyDist::LogNormal { p50, p99 }
        }
        "histogram" => {
            keys(&["le", "counts", "cumulative"])?;
            let list = |k: &str| {
                need(k)?.as_array().ok_or_else(|| {
                    bad(
                        &format!(".histogram.{k}"),
                        format!("must be a list, not {}", body[k]),
                    )
                })
            };
            let le_key = ".histogram.le";
            let le = list("le")?
                .iter()
                .map(|x| dur(le_key, x))
                .collect::<Result<Vec<_>, _>>()?;
            if le.is_empty() {
                return Err(bad(
                    le_key,
                    "must name at least one bucket (its upper bound)".into(),
                ));
            }
            if let Some(w) = le.windows(2).find(|w| w[1] <= w[0]) {
                return Err(bad(
                    le_key,
                    format!(
                        "the bounds must increase: {} after {}",
                        super::format_duration(w[1]),
                        super::format_duration(w[0])
                    ),
                ));
            }
            let (which, cumulative) = match (body.get("counts"), body.get("cumulative")) {
                (Some(_), Some(_)) => {
                    return Err(bad(
                        ".histogram.cumulative",
                        "a histogram takes counts (per bucket) or cumulative (Prometheus's \
                         _bucket values), not both"
                            .into(),
                    ))
                }
                (None, Some(_)) => ("cumulative", true),
                _ => ("counts", false),
            };
            let k = format!(".histogram.{which}");
            let numbers = list(which)?
                .iter()
                .map(|x| match x {
                    toml::Value::Integer(n) if *n >= 0 => Ok(*n as f64),
                    toml::Value::Float(f) if f.is_finite() && *f >= 0.0 => Ok(*f),
                    other => Err(bad(
                        &k,
                        format!("must be counts of calls, 0 or more, not {other}"),
                    )),
                })
                .collect::<Result<Vec<f64>, _>>()?;
            if numbers.len() != le.len() {
                return Err(bad(
                    &k,
                    format!(
                        "has {} values for {} buckets (le): one per bucket",
                        numbers.len(),
                        le.len()
                    ),
                ));
            }
            let counts = if cumulative {
                if let Some(w) = numbers.windows(2).find(|w| w[1] < w[0]) {
                    return Err(bad(
                        &k,
                        format!("must not decrease (each counts the calls up to its bound): {} after {}", w[1], w[0]),
                    ));
                }
                let mut prev = 0.0;
                numbers
                    .iter()
                    .map(|&c| {
                        let n = c - prev;
                        prev = c;
                        n
                    })
                    .collect()
            } else {
                numbers
            };
            if counts.iter().sum::<f64>() <= 0.0 {
                return Err(bad(
                    &k,
                    "has no calls: at least one bucket's count must be above 0".into(),
                ));
            }
            LatencyDist::Histogram { le, counts }
        }
        other => {
            return Err(bad(
                "",
                format!(
                    "{other:?} is not one of \"lognormal\", \"histogram\" ({})",
                    usage()
                ),
            ))
        }
    };
    Ok((dist.median(), Some(dist)))
}

/// A fault's times as written: fixed, or an outage drawn per seed.
enum Times {
    Fixed(Duration, Duration),
    Drawn(super::Outage),
}

/// Reads a fault's `from` or `onset`, `until` or `length`, and
/// `length_dist`; the limits against the run are checked in
/// [`Scenario::check`].
fn outage(ctx: &Ctx<'_>, f: &Spanned<RawFault>, k: usize) -> Result<Times, ScenarioError> {
    let r = f.get_ref();
    let range = |v: &Spanned<toml::Value>, key: &str| {
        v.get_ref()
            .as_str()
            .ok_or_else(|| {
                format!(
                    "must be a range of durations such as \"0.5s..5s\", not {}",
                    v.get_ref()
                )
            })
            .and_then(super::DurRange::parse)
            .map_err(|e| ctx.err(v.span(), key, e))
    };
    let onset =
        match (&r.from, &r.onset) {
            (Some(_), Some(o)) => {
                return Err(ctx.err(
                    o.span(),
                    "downstream.faults.onset",
                    "a fault starts at from or at a draw from onset, not both",
                ))
            }
            (Some(from), None) => super::DurRange {
                min: from.get_ref().0,
                max: from.get_ref().0,
            },
            (None, Some(o)) => range(o, "downstream.faults.onset")?,
            (None, None) => return Err(ctx.err(
                f.span(),
                "downstream.faults.from",
                "missing: every fault needs from (its start), or onset = \"MIN..MAX\" (a range \
                 its start is drawn from)",
            )),
        };
    let length =
        match (&r.until, &r.length) {
            (Some(_), Some(l)) => {
                return Err(ctx.err(
                    l.span(),
                    "downstream.faults.length",
                    "a fault ends at until or after a drawn length, not both",
                ))
            }
            (Some(until), None) if r.onset.is_some() => {
                return Err(ctx.err(
                    until.span(),
                    "downstream.faults.until",
                    "a fault with onset (a drawn start) needs length = \"MIN..MAX\" (or a fixed \
                 length such as \"1s\") in place of until",
                ))
            }
            (Some(until), None) => {
                if let Some(d) = &r.length_dist {
                    return Err(ctx.err(
                        d.span(),
                        "downstream.faults.length_dist",
                        "is for a fault with length = \"MIN..MAX\"",
                    ));
                }
                return Ok(Times::Fixed(onset.min, until.get_ref().0));
            }
            (None, Some(l)) => range(l, "downstream.faults.length")?,
            (None, None) => return Err(ctx.err(
                f.span(),
                "downstream.faults.until",
                "missing: every fault needs until (its end), or length = \"MIN..MAX\" (a range \
                 its length is drawn from)",
            )),
        };
    let length_dist = match r.length_dist.as_ref().map(|d| (d.span(), d.get_ref())) {
        None => super::LengthDist::Uniform,
        Some((_, toml::Value::String(s))) if s == "uniform" => super::LengthDist::Uniform,
        Some((_, toml::Value::String(s))) if s == "loguniform" => super::LengthDist::LogUniform,
        Some((span, other)) => {
            return Err(ctx.err(
                span,
                "downstream.faults.length_dist",
                format!("{other} is not one of \"uniform\", \"loguniform\""),
            ))
        }
    };
    Ok(Times::Drawn(super::Outage {
        fault: k,
        onset,
        length,
        length_dist,
        kinds: super::Kinds::default(),
    }))
}

/// Reads a fault's `outcome`: one name, or a list of the outcomes
/// ([`Kinds::DRAWABLE`](super::Kinds::DRAWABLE)) a run's is drawn from.
fn outcomes(ctx: &Ctx<'_>, v: &Spanned<toml::Value>) -> Result<Vec<FaultOutcome>, ScenarioError> {
    const KEY: &str = "downstream.faults.outcome";
    let one = |name: &str| {
        FaultOutcome::named(name).ok_or_else(|| {
            let names: Vec<String> = FaultOutcome::ALL
                .iter()
                .map(|o| format!("{:?}", o.as_str()))
                .collect();
            ctx.err(
                v.span(),
                KEY,
                format!("{name:?} is not one of {}", names.join(", ")),
            )
        })
    };
    match v.get_ref() {
        toml::Value::String(name) => Ok(vec![one(name)?]),
        toml::Value::Array(list) if !list.is_empty() => {
            let mut out = Vec::new();
            for x in list {
                let Some(name) = x.as_str() else {
                    return Err(ctx.err(
                        v.span(),
                        KEY,
                        format!("a list of outcome names, not {x}"),
                    ));
                };
                let o = one(name)?;
                if !super::Kinds::DRAWABLE.contains(&o) {
                    return Err(ctx.err(
                        v.span(),
                        KEY,
                        format!(
                            "{name:?} cannot be drawn from a list (a list takes \"error\", \"hang\", \
                             \"down\", \"reset\", \"slow\")"
                        ),
                    ));
                }
                if out.contains(&o) {
                    return Err(ctx.err(v.span(), KEY, format!("names {name:?} twice")));
                }
                out.push(o);
            }
            Ok(out)
        }
        other => Err(ctx.err(
            v.span(),
            KEY,
            format!(
                "must be an outcome such as \"error\", or a list a run's outcome is drawn \
                 from such as [\"error\", \"hang\"], not {other}"
            ),
        )),
    }
}

/// Reads a fault's `jitter` (a duration); its limits are checked with the
/// others in [`Scenario::check`].
fn jitter(ctx: &Ctx<'_>, v: &Spanned<toml::Value>) -> Result<Duration, ScenarioError> {
    v.get_ref()
        .as_str()
        .ok_or_else(|| format!("must be a duration such as \"250ms\", not {}", v.get_ref()))
        .and_then(super::duration::parse_value)
        .map_err(|e| ctx.err(v.span(), "downstream.faults.jitter", e))
}

/// Reads `[fleet]`; its limits are checked with the others in [`Scenario::check`].
fn fleet(ctx: &Ctx<'_>, f: &RawFleet) -> Result<Fleet, ScenarioError> {
    let sharing = match f.sharing.get_ref().as_str() {
        "none" => Sharing::None,
        "fleet" => Sharing::Fleet,
        other => {
            return Err(ctx.err(
                f.sharing.span(),
                "fleet.sharing",
                format!("{other:?} is not one of \"none\", \"fleet\""),
            ))
        }
    };
    let replicas = int_in(ctx, &f.replicas, "fleet.replicas", 1, MAX_REPLICAS as i64)? as usize;
    let redis = match &f.redis {
        None => None,
        Some(r) => {
            Some(Redis::parse(r.get_ref()).map_err(|e| ctx.err(r.span(), "fleet.redis", e))?)
        }
    };
    Ok(Fleet {
        redis,
        replicas,
        sharing,
        quorum: match &f.quorum {
            Some(q) => int_in(ctx, q, "fleet.quorum", 1, replicas as i64)? as usize,
            None => 1,
        },
        sync_every: f
            .sync_every
            .as_ref()
            .map_or(Duration::from_secs(1), |d| d.get_ref().0),
        propagation: f
            .propagation
            .as_ref()
            .map_or(Duration::ZERO, |d| d.get_ref().0),
    })
}

/// Reads `transport` and the HTTP pool's keys of `[downstream]`.
fn transport(ctx: &Ctx<'_>, d: &RawDownstream) -> Result<Transport, ScenarioError> {
    let http = match d
        .transport
        .as_ref()
        .map(|t| (t.span(), t.get_ref().as_str()))
    {
        None | Some((_, "call")) => false,
        Some((_, "http")) => true,
        Some((span, other)) => {
            return Err(ctx.err(
                span,
                "downstream.transport",
                format!("{other:?} is not one of \"call\", \"http\""),
            ))
        }
    };
    if !http {
        if let Some(p) = &d.pool_max_idle {
            return Err(ctx.err(p.span(), "downstream.pool_max_idle", NEEDS_HTTP));
        }
        if let Some(c) = &d.connect_timeout {
            return Err(ctx.err(c.span(), "downstream.connect_timeout", NEEDS_HTTP));
        }
        if let Some(p) = &d.pool_max {
            return Err(ctx.err(p.span(), "downstream.pool_max", NEEDS_HTTP));
        }
        if let Some(o) = &d.overhead {
            return Err(ctx.err(o.span(), "downstream.overhead", NEEDS_HTTP));
        }
        if let Some(f) = d
            .faults
            .iter()
            .find(|f| f.get_ref().outcome.get_ref().as_str() == Some("no_accept"))
        {
            return Err(ctx.err(
                f.get_ref().outcome.span(),
                "downstream.faults.outcome",
                "outcome = \"no_accept\" refuses the HTTP client's new connections: needs \
                 transport = \"http\"",
            ));
        }
        return Ok(Transport::Call);
    }
    let mut config = HttpConfig::default();
    if let Some(p) = &d.pool_max_idle {
        config.pool_max_idle =
            int_in(ctx, p, "downstream.pool_max_idle", 0, MAX_WORKERS as i64)? as usize;
    }
    if let Some(p) = &d.pool_max {
        config.pool_max =
            Some(int_in(ctx, p, "downstream.pool_max", 1, MAX_WORKERS as i64)? as usize);
    }
    if let Some(c) = &d.connect_timeout {
        let t = c.get_ref().0;
        if t.is_zero() || t > Duration::from_secs(60) {
            return Err(ctx.err(
                c.span(),
                "downstream.connect_timeout",
                "must be > 0 and at most 60s",
            ));
        }
        config.connect_timeout = t;
    }
    if let Some(o) = &d.overhead {
        let t = o
            .get_ref()
            .as_str()
            .ok_or_else(|| format!("must be a duration such as \"2ms\", not {}", o.get_ref()))
            .and_then(super::duration::parse_value)
            .and_then(|t| {
                if t > MAX_OVERHEAD {
                    Err("must be at most 1s (the HTTP hop's own cost per call)".to_string())
                } else {
                    Ok(t)
                }
            })
            .map_err(|e| ctx.err(o.span(), "downstream.overhead", e))?;
        config.overhead = t;
    }
    Ok(Transport::Http(config))
}

/// The largest `[downstream] overhead`: a hop's cost per call, not a latency.
const MAX_OVERHEAD: Duration = Duration::from_secs(1);

const NEEDS_HTTP: &str = "is a key of the HTTP transport: needs transport = \"http\"";

/// A trace file's arrivals: its times (sorted, ns), or its per-second
/// rates; with the file as written.
enum Trace {
    Times(String, Vec<u64>),
    PerSecond(String, Vec<f64>),
}

/// Most lines of a trace file.
const MAX_TRACE_LINES: usize = 10_000_000;

fn burst(ctx: &Ctx<'_>, b: &Spanned<RawBurst>) -> Result<super::Burst, ScenarioError> {
    let r = b.get_ref();
    let (on, off, peak) = (r.on.get_ref().0, r.off.get_ref().0, *r.peak.get_ref());
    for (d, span, key) in [
        (on, r.on.span(), "burst.on"),
        (off, r.off.span(), "burst.off"),
    ] {
        if d.is_zero() {
            return Err(ctx.err(span, key, "must be above zero"));
        }
    }
    // The calm's rate, rate x (on + off - peak x on) / off, may not be negative.
    let most = (on + off).as_secs_f64() / on.as_secs_f64();
    if !(peak.is_finite() && peak >= 1.0 && peak <= most) {
        return Err(ctx.err(
            r.peak.span(),
            "burst.peak",
            format!("{peak} is outside 1..={most} (at most (on + off) / on, which leaves nothing for the calm, keeps the mean rate)"),
        ));
    }
    Ok(super::Burst { on, off, peak })
}

fn trace(ctx: &Ctx<'_>, t: &Spanned<RawTrace>) -> Result<Trace, ScenarioError> {
    let r = t.get_ref();
    let written = r.file.get_ref().clone();
    let format = match r.format.as_ref().map(|f| (f.span(), f.get_ref().as_str())) {
        None | Some((_, "times")) => "times",
        Some((_, "per_second")) => "per_second",
        Some((span, other)) => {
            return Err(ctx.err(
                span,
                "trace.format",
                format!("{other:?} is not one of \"times\", \"per_second\""),
            ))
        }
    };
    // Relative to the scenario file's directory.
    let path = std::path::Path::new(ctx.file)
        .parent()
        .unwrap_or(std::path::Path::new(""))
        .join(&written);
    let bad = |message: String| ctx.err(r.file.span(), "trace.file", message);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
    let mut values = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if values.len() >= MAX_TRACE_LINES {
            return Err(bad(format!("{written}: more than {MAX_TRACE_LINES} lines")));
        }
        // A CSV line (a Prometheus export: timestamp,value): its last field.
        let field = line.rsplit(',').next().unwrap_or(line).trim();
        match field.parse::<f64>() {
            Ok(v) if (0.0..1e9).contains(&v) => values.push(v),
            _ => {
                return Err(bad(format!(
                    "{written} line {}: {field:?} is not a number of {} (0 or more)",
                    n + 1,
                    if format == "times" {
                        "seconds"
                    } else {
                        "arrivals a second"
                    }
                )))
            }
        }
    }
    if values.is_empty() {
        return Err(bad(format!("{written} has no arrivals")));
    }
    Ok(if format == "times" {
        let mut times: Vec<u64> = values.iter().map(|s| (s * 1e9).round() as u64).collect();
        times.sort_unstable();
        Trace::Times(written, times)
    } else {
        Trace::PerSecond(written, values)
    })
}

//! Scenario files (TOML) -> a validated [`Scenario`].
//!
//! The bottom layer of the lab: it imports nothing else from the crate.
//! Every key is checked: unknown keys, missing keys and bad values are errors
//! that name the file, the line and the key ([`ScenarioError`]); the values'
//! limits are checked once, in [`Scenario::check`], for files and sweeps alike.
//! Durations are strings such as `"150ms"`, `"1.5s"`, `"2s"` ([`duration`]).

pub mod downstream;
pub mod duration;
mod error;
mod file;
pub mod fusebox;
pub mod hosts;
mod param;
pub mod strategy;
pub mod sweep;

pub use downstream::{
    CallDraw, CallPlan, CallResult, Downstream, Fault, FaultOutcome, HttpConfig, Knee, LatencyDist,
    Pool, PoolPlan, Server, ServerQueue, Tail, Transport,
};
pub use duration::{format_duration, parse_duration};
pub use error::ScenarioError;
pub use hosts::{Balance, HostPolicy, OutlierSpec, MAX_HOSTS};
pub use param::ParamValue;
pub use strategy::{
    HedgeConfig, Peer, PeerConfig, RetryBudgetConfig, SeedConfig, StrategyKind, StrategySpec,
};

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// The scenarios compiled into the binary: `(file name, TOML text)`.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "seed000-50rps.toml",
        include_str!("../../scenarios/seed000-50rps.toml"),
    ),
    (
        "seed000-100rps.toml",
        include_str!("../../scenarios/seed000-100rps.toml"),
    ),
];

/// Largest number of arrivals one scenario may produce (keeps memory bounded).
pub const MAX_REQUESTS: u64 = 2_000_000;
/// Highest arrival rate, in requests per second.
pub const MAX_RATE: f64 = 1e6;
/// Longest duration any key may hold (a day).
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
/// Largest worker pool.
pub const MAX_WORKERS: usize = 4096;
/// Largest bounded queue.
pub const MAX_QUEUE: usize = 100_000_000;
/// Most retries per request.
pub const MAX_RETRIES: u32 = 100;
/// Most report windows per run.
pub const MAX_WINDOWS: u128 = 100_000;
/// The `seed` of a scenario that does not set one.
pub const DEFAULT_SEED: u64 = 1;

/// How requests arrive (`arrivals`).
#[derive(Clone, PartialEq)]
pub enum Arrivals {
    /// `"fixed"` (the default): request `i` at `i / rate` (on a ramp, where
    /// the ramp has had `i` requests).
    Fixed,
    /// `"poisson"`: independent arrivals at the same mean rate (exponential
    /// gaps, drawn from the scenario's `seed`); the arrival times, in
    /// nanoseconds from the start, all before `duration`.
    Poisson(std::sync::Arc<[u64]>),
    /// `"bursty"`: Poisson arrivals whose rate is `peak` times the mean for
    /// `on`, then lower for `off` (so that the mean stays `rate`), over and
    /// over from the start; the arrival times.
    Bursty(Burst, std::sync::Arc<[u64]>),
    /// `"trace"`: arrivals read from a file (`trace = { file, format }`):
    /// its times, or Poisson arrivals at its per-second counts; the file as
    /// written and the arrival times.
    Trace(String, std::sync::Arc<[u64]>),
}

/// `burst = { on, off, peak }` of bursty arrivals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    /// How long a burst lasts.
    pub on: Duration,
    /// How long the calm between two bursts lasts.
    pub off: Duration,
    /// The rate during a burst, in multiples of the mean `rate`.
    pub peak: f64,
}

impl Arrivals {
    /// The arrival times, in nanoseconds from the start (`None`: fixed
    /// arrivals, computed per request).
    pub fn times(&self) -> Option<&[u64]> {
        match self {
            Arrivals::Fixed => None,
            Arrivals::Poisson(t) | Arrivals::Bursty(_, t) | Arrivals::Trace(_, t) => Some(t),
        }
    }

    /// As the file says it (`"fixed"`, `"poisson"`, `"bursty"`, `"trace"`).
    pub fn name(&self) -> &'static str {
        match self {
            Arrivals::Fixed => "fixed",
            Arrivals::Poisson(_) => "poisson",
            Arrivals::Bursty(..) => "bursty",
            Arrivals::Trace(..) => "trace",
        }
    }
}

impl std::fmt::Debug for Arrivals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.times() {
            None => f.write_str("Fixed"),
            Some(t) => write!(f, "{}({} arrivals)", self.name(), t.len()),
        }
    }
}

/// SplitMix64's step: the lab's one hash for seeded draws.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash of `seed`, `a` and `b`: what a seeded draw is made from.
fn hash(seed: u64, a: u64, b: u64) -> u64 {
    splitmix(splitmix(splitmix(seed) ^ a) ^ b)
}

/// A uniform draw in [0, 1) from `seed`, `a` and `b`.
fn unit(seed: u64, a: u64, b: u64) -> f64 {
    (hash(seed, a, b) >> 11) as f64 / (1u64 << 53) as f64
}

/// What the draws of a healthy call's latency distribution and of a
/// fault's are tagged with (xor the request's index, below
/// [`MAX_REQUESTS`]).
const HEALTHY_LATENCY_DRAW: u64 = 0x1A7E_0000_0000_0000;
const FAULT_LATENCY_DRAW: u64 = 0xFA1A_0000_0000_0000;

/// A validated experiment: arrivals, worker pool, downstream, client, strategies.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// `name`.
    pub name: String,
    /// `duration`: arrivals stop here.
    pub duration: Duration,
    /// `rate`: request `i` arrives at `i / rate` seconds.
    pub rate: f64,
    /// `rate_until`: the rate at `duration`, when arrivals ramp linearly
    /// from `rate` (`None`: a constant rate).
    pub rate_until: Option<f64>,
    /// `workers`: size of the worker pool.
    pub workers: usize,
    /// `queue`: at most this many waiting requests; 0 = unbounded.
    pub queue: usize,
    /// `window`: width of the report's outcome windows.
    pub window: Duration,
    /// `[downstream]`.
    pub downstream: Downstream,
    /// `[client]`.
    pub client: Client,
    /// `[request]`: what a request does besides its guarded call, and
    /// its deadline.
    pub request: RequestSpec,
    /// `[[strategy]]`, in file order.
    pub strategies: Vec<StrategySpec>,
    /// `[fleet]`: several replicas, each with its own pool and breaker
    /// (`None`: one replica, as in the article).
    pub fleet: Option<Fleet>,
    /// `[downstream] hosts`: the dependency's hosts (1: one host); a
    /// fault's `hosts` names those it hits.
    pub hosts: usize,
    /// `seed`: what the latency tail's draws ([`Scenario::plan`]) and
    /// Poisson arrivals are made from ([`DEFAULT_SEED`] if not given).
    pub seed: u64,
    /// `arrivals`: `"fixed"` (the default) or `"poisson"`.
    pub arrivals: Arrivals,
    /// The `[[downstream.faults]]` entries with a `jitter`, as written:
    /// their drawn times are in [`Downstream::faults`]
    /// ([`Scenario::with_seed`] draws them again for another seed).
    pub fault_jitter: Vec<FaultJitter>,
    /// The `[[downstream.faults]]` entries with an `onset` or a `length`,
    /// as written: their drawn times are in [`Downstream::faults`]
    /// ([`Scenario::with_seed`] draws them again for another seed).
    pub outages: Vec<Outage>,
}

/// `onset = "0.5s..2s"` or `length = "0.5s..5s"`: a span of durations a
/// fault's start or length is drawn from, both ends included (`min ==
/// max`: a fixed value, as `"2s"` is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurRange {
    /// The shortest value.
    pub min: Duration,
    /// The longest value.
    pub max: Duration,
}

impl DurRange {
    /// Reads `"MIN..MAX"` or a single duration (`"2s"`: `2s..2s`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::DurRange;
    /// use std::time::Duration;
    ///
    /// let r = DurRange::parse("0.5s..5s")?;
    /// assert_eq!((r.min, r.max), (Duration::from_millis(500), Duration::from_secs(5)));
    /// assert_eq!(DurRange::parse("2s")?.to_string(), "2s");
    /// assert!(DurRange::parse("5s..0.5s").unwrap_err().contains("below"));
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A side that is not a duration (or is negative, or longer than a
    /// day), or `MAX` below `MIN`.
    pub fn parse(s: &str) -> Result<DurRange, String> {
        let usage = || format!("{s:?} is not a duration or a range such as \"0.5s..5s\"");
        let (a, b) = match s.split_once("..") {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (s.trim(), s.trim()),
        };
        if a.is_empty() || b.is_empty() {
            return Err(usage());
        }
        let side = |d: &str| duration::parse_value(d).map_err(|e| format!("{}: {e}", usage()));
        let (min, max) = (side(a)?, side(b)?);
        if max < min {
            return Err(format!(
                "{s:?}: the end of the range ({}) is below its start ({})",
                format_duration(max),
                format_duration(min)
            ));
        }
        Ok(DurRange { min, max })
    }

    /// Whether it is one value.
    pub fn is_fixed(&self) -> bool {
        self.min == self.max
    }

    /// The value at `u` in `[0, 1)` of the way from `min` to `max` (to the
    /// nanosecond), uniformly or, `log`, uniformly in the logarithm.
    fn at(&self, u: f64, log: bool) -> Duration {
        let (a, b) = (self.min.as_secs_f64(), self.max.as_secs_f64());
        if self.is_fixed() {
            return self.min;
        }
        let secs = if log && a > 0.0 {
            (a.ln() + u * (b.ln() - a.ln())).exp()
        } else {
            a + u * (b - a)
        };
        Duration::from_secs_f64(secs).clamp(self.min, self.max)
    }
}

impl std::fmt::Display for DurRange {
    /// `0.5s..5s`, or `2s` for a fixed value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_fixed() {
            write!(f, "{}", format_duration(self.min))
        } else {
            write!(
                f,
                "{}..{}",
                format_duration(self.min),
                format_duration(self.max)
            )
        }
    }
}

/// `length_dist`: how an outage's length is drawn from its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LengthDist {
    /// `"uniform"` (the default): every length in the range as likely.
    #[default]
    Uniform,
    /// `"loguniform"`: uniform in the logarithm: as many outages from
    /// 0.5 s to 1 s as from 1 s to 2 s, or from 2 s to 4 s.
    LogUniform,
}

impl LengthDist {
    /// As scenario files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            LengthDist::Uniform => "uniform",
            LengthDist::LogUniform => "loguniform",
        }
    }
}

/// An outage model: a fault whose start (`onset`) and length (`length`)
/// are drawn from ranges for each seed, so that many runs see outages of
/// many lengths. The fault starts at a uniform draw from `onset` and lasts
/// a draw from `length` (by `length_dist`); a fixed `from` is an onset of
/// one value, as a fixed `length` is. Validation keeps the latest possible
/// end, with time for the recovery, inside the run.
///
/// # Examples
///
/// ```
/// use fusebox_lab::scenario::{Scenario, EMBEDDED};
/// use std::time::Duration;
///
/// let text = EMBEDDED[0].1
///     .replace("duration = \"3s\"", "duration = \"8s\"")
///     .replace("from = \"500ms\"\nuntil = \"1500ms\"",
///              "onset = \"0.5s..2s\"\nlength = \"0.5s..5s\"");
/// let sc = Scenario::parse("outage.toml", &text)?;
/// assert_eq!(sc.outages[0].length.to_string(), "500ms..5s");
/// for seed in 0..100 {
///     let f = &sc.with_seed(seed).downstream.faults[0];
///     let length = f.until - f.from;
///     assert!(f.from >= Duration::from_millis(500) && f.from <= Duration::from_secs(2));
///     assert!(length >= Duration::from_millis(500) && length <= Duration::from_secs(5));
/// }
/// # Ok::<(), fusebox_lab::scenario::ScenarioError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// Which `[[downstream.faults]]` entry (from 0).
    pub fault: usize,
    /// `onset` (or a fixed `from`): when the fault starts.
    pub onset: DurRange,
    /// `length` (or a fixed `until - from`): how long it lasts.
    pub length: DurRange,
    /// `length_dist`.
    pub length_dist: LengthDist,
    /// `outcome = ["error", "hang", ..]`: the outcomes the fault's is drawn
    /// from for each run, one as likely as another (empty: the fault's
    /// own, as written).
    pub kinds: Kinds,
}

impl Outage {
    /// Whether anything in it is drawn (a range of more than one value, or
    /// more than one outcome).
    pub fn is_random(&self) -> bool {
        !(self.onset.is_fixed() && self.length.is_fixed() && self.kinds.len() <= 1)
    }

    /// The latest it can end: the latest onset plus the longest length.
    pub fn latest_end(&self) -> Duration {
        self.onset.max + self.length.max
    }

    /// `outage from 500ms..2s lasting 500ms..5s (log-uniform)`.
    pub fn describe(&self) -> String {
        let dist = match self.length_dist {
            LengthDist::LogUniform if !self.length.is_fixed() => " (log-uniform)",
            _ => "",
        };
        let kinds = if self.kinds.len() > 1 {
            let names: Vec<&str> = self.kinds.iter().map(FaultOutcome::as_str).collect();
            format!(", outcome drawn from {}", names.join(", "))
        } else {
            String::new()
        };
        format!(
            "outage from {} lasting {}{dist}{kinds}",
            self.onset, self.length
        )
    }
}

/// The outcomes an outage's is drawn from: `outcome = ["error", "hang",
/// "slow"]` (any of `error`, `hang`, `down`, `reset`, `slow`), kept in
/// that order whatever the file's.
///
/// # Examples
///
/// ```
/// use fusebox_lab::scenario::{FaultOutcome, Kinds};
///
/// let k = Kinds::of(&[FaultOutcome::Slow, FaultOutcome::Error]);
/// assert_eq!(k.len(), 2);
/// assert_eq!(k.iter().collect::<Vec<_>>(), [FaultOutcome::Error, FaultOutcome::Slow]);
/// // A draw `u` in [0, 1) picks one, each as likely.
/// assert_eq!((k.pick(0.3), k.pick(0.7)), (Some(FaultOutcome::Error), Some(FaultOutcome::Slow)));
/// assert!(Kinds::DRAWABLE.contains(&FaultOutcome::Hang));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Kinds(u8);

impl Kinds {
    /// The outcomes a list may name, in the order a set keeps them.
    pub const DRAWABLE: [FaultOutcome; 5] = [
        FaultOutcome::Error,
        FaultOutcome::Hang,
        FaultOutcome::Down,
        FaultOutcome::Reset,
        FaultOutcome::Slow,
    ];

    /// The set of `outcomes` (those not [`DRAWABLE`](Self::DRAWABLE) left out).
    pub fn of(outcomes: &[FaultOutcome]) -> Kinds {
        let mut bits = 0;
        for (i, k) in Self::DRAWABLE.iter().enumerate() {
            if outcomes.contains(k) {
                bits |= 1 << i;
            }
        }
        Kinds(bits)
    }

    /// How many.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether there are none.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The outcomes, in [`DRAWABLE`](Self::DRAWABLE)'s order.
    pub fn iter(self) -> impl Iterator<Item = FaultOutcome> {
        Self::DRAWABLE
            .into_iter()
            .enumerate()
            .filter(move |(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, k)| k)
    }

    /// The one a uniform draw `u` in `[0, 1)` picks (`None`: empty).
    pub fn pick(self, u: f64) -> Option<FaultOutcome> {
        let n = self.len();
        let i = ((u * n as f64) as usize).min(n.saturating_sub(1));
        self.iter().nth(i)
    }
}

/// What the outages' draws are tagged with (beside [`JITTER_DRAW`]).
const OUTAGE_DRAW: u64 = 0x0A7A_0000_0000;

/// What the draws of an outage's outcome ([`Kinds`]) are tagged with.
const KIND_DRAW: u64 = 0x0C1D_0000_0000;

/// A fault's `jitter`: its `from` and its `until` are each moved by an
/// independent uniform draw in `[-by, +by]` from the scenario's `seed`,
/// then clamped to the run (`0..=duration`). Validation keeps `2 x by`
/// shorter than the fault, so a drawn fault is never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultJitter {
    /// Which `[[downstream.faults]]` entry (from 0).
    pub fault: usize,
    /// `jitter`: how far each end may move, either way.
    pub by: Duration,
    /// `from`, as written.
    pub from: Duration,
    /// `until`, as written.
    pub until: Duration,
}

/// What the fault jitter's draws are tagged with (the latency tail's draws
/// are tagged with the request's index, at most [`MAX_REQUESTS`]).
const JITTER_DRAW: u64 = 0xFA17_0000_0000;

/// Most replicas in a `[fleet]`.
pub const MAX_REPLICAS: usize = 1000;

/// `[fleet]`: the service runs as `replicas` replicas; arrivals go to them
/// round-robin, and each has `workers` workers, its own queue and its own
/// breaker (one per strategy).
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    /// `replicas`.
    pub replicas: usize,
    /// `sharing`: whether the replicas' breakers share their trips.
    pub sharing: Sharing,
    /// `quorum`: the fleet opens once this many distinct replicas tripped
    /// within [`FLEET_WINDOW`] (`fusebox::fleet`'s rule); 1 by default.
    pub quorum: usize,
    /// `sync_every`: the fleet's sync interval (1 s by default): how often
    /// each replica adds its verdicts to the fleet's window and reads its
    /// totals, and keeps or gives back the probe lease (both modes).
    pub sync_every: Duration,
    /// `propagation`: how long a trip or a close takes to reach the other
    /// replicas (0 by default; virtual mode: real mode takes what Redis takes).
    pub propagation: Duration,
    /// `redis`: where a real-mode fleet shares its breakers (`None`: not
    /// given; `run --redis URL` sets it for every scenario).
    pub redis: Option<Redis>,
}

/// `redis` in `[fleet]`: the Redis a real-mode fleet shares its breakers
/// through (`fusebox::fleet`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redis {
    /// `"local"`: the lab starts a `redis-server` of its own on a free
    /// loopback port for each run, and kills it at the end.
    Local,
    /// `"redis://HOST:PORT"`: one that is already running.
    Url(String),
}

impl Redis {
    /// Reads `"local"` or a `redis://` URL (the `redis` key, `--redis`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::Redis;
    ///
    /// assert_eq!(Redis::parse("local"), Ok(Redis::Local));
    /// assert!(Redis::parse("redis://127.0.0.1:6379").is_ok());
    /// assert!(Redis::parse("127.0.0.1:6379").unwrap_err().contains("redis://"));
    /// ```
    pub fn parse(s: &str) -> Result<Redis, String> {
        match s.trim() {
            "local" => Ok(Redis::Local),
            url if url.starts_with("redis://") && url.len() > "redis://".len() => {
                Ok(Redis::Url(url.to_string()))
            }
            other => Err(format!(
                "{other:?} is neither \"local\" (the lab starts redis-server) nor a \
                 redis://HOST:PORT URL"
            )),
        }
    }
}

/// The window in which trips count toward the quorum (`fusebox::fleet`'s default).
pub const FLEET_WINDOW: Duration = Duration::from_secs(10);

/// `sharing` in `[fleet]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// `"none"`: every replica's breaker is on its own.
    None,
    /// `"fleet"`: trips travel, as with `fusebox::fleet`.
    Fleet,
}

impl Sharing {
    /// `"none"` or `"fleet"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Sharing::None => "none",
            Sharing::Fleet => "fleet",
        }
    }
}

/// The client side of each call: `[client]`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Client {
    /// A call running longer than this fails as a timeout.
    pub timeout: Option<Duration>,
    /// Extra attempts after a downstream failure (never after a fast-fail).
    pub retries: u32,
}

/// `[request]`: a request's own work around its guarded call, and when
/// it counts as answered in time.
///
/// A request is a page that calls a *critical* dependency (unguarded,
/// always healthy: `critical` long) and then the guarded one; a page whose
/// guarded call is refused, fails or times out is still answered, without
/// that part, when the call ends. `deadline` is what the page figures
/// count as answered in time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RequestSpec {
    /// `critical`: how long the worker spends on a request before its
    /// guarded call (the critical call; zero without `[request]`).
    pub critical: Duration,
    /// `deadline`: a request answered this long after its arrival or
    /// sooner, with or without its guarded call's answer, is answered in
    /// time (goodput).
    pub deadline: Option<Duration>,
}

impl RequestSpec {
    /// Whether request `r` of a run was answered in time: a worker took
    /// it (it was not refused by the queue) and it ended within the
    /// deadline of its arrival, whatever its guarded call did. Without a
    /// deadline, every answered request is.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::RequestSpec;
    /// use std::time::Duration;
    ///
    /// let page = RequestSpec { critical: Duration::ZERO, deadline: Some(Duration::from_secs(1)) };
    /// assert!(page.in_time(Some(Duration::from_millis(300)), Duration::from_millis(900)));
    /// assert!(!page.in_time(Some(Duration::from_millis(300)), Duration::from_millis(1100)));
    /// assert!(!page.in_time(None, Duration::ZERO)); // refused by the queue
    /// ```
    pub fn in_time(&self, start: Option<Duration>, latency: Duration) -> bool {
        start.is_some() && self.deadline.is_none_or(|d| latency <= d)
    }
}

impl Scenario {
    /// Number of replicas (1 without `[fleet]`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Scenario, EMBEDDED};
    ///
    /// let text = EMBEDDED[0].1.replace(
    ///     "[downstream]",
    ///     "[fleet]\nreplicas = 3\nsharing = \"fleet\"\n\n[downstream]",
    /// );
    /// let sc = Scenario::parse("fleet.toml", &text)?;
    /// assert_eq!((sc.replicas(), sc.replica_of(7)), (3, 1));
    /// assert!(sc.shares_trips());
    /// assert_eq!(Scenario::embedded()[0].replicas(), 1);
    /// # Ok::<(), fusebox_lab::scenario::ScenarioError>(())
    /// ```
    pub fn replicas(&self) -> usize {
        self.fleet.as_ref().map_or(1, |f| f.replicas)
    }

    /// Whether the replicas share their breakers' trips.
    pub fn shares_trips(&self) -> bool {
        self.fleet
            .as_ref()
            .is_some_and(|f| f.sharing == Sharing::Fleet && f.replicas > 1)
    }

    /// The replica (from 0) request `i` goes to: round-robin.
    pub fn replica_of(&self, i: usize) -> usize {
        i % self.replicas()
    }

    /// Arrival time of request `i`, in nanoseconds from the start.
    pub fn arrival_ns(&self, i: u64) -> u64 {
        if let Some(times) = self.arrivals.times() {
            return usize::try_from(i)
                .ok()
                .and_then(|i| times.get(i).copied())
                .unwrap_or(u64::try_from(self.duration.as_nanos()).unwrap_or(u64::MAX));
        }
        self.at_count(i as f64)
    }

    /// When the arrivals' count reaches `x` (the time `t` at which the rate
    /// integrated from 0 is `x`), in nanoseconds.
    fn at_count(&self, x: f64) -> u64 {
        match self.rate_until {
            Some(r1) if r1 != self.rate => {
                // n(t) = r0 t + (r1 - r0) t^2 / 2D: the t where n(t) = i.
                let (r0, d) = (self.rate, self.duration.as_secs_f64());
                let a = (r1 - r0) / (2.0 * d);
                let disc = (r0 * r0 + 4.0 * a * x).max(0.0);
                let t = (disc.sqrt() - r0) / (2.0 * a);
                (t * 1e9).round() as u64
            }
            _ => (x * 1e9 / self.rate).round() as u64,
        }
    }

    /// Poisson arrival times for this scenario's rate (or ramp), duration
    /// and seed: the count at time `t` is a Poisson process whose
    /// integrated rate is the fixed arrivals' count (unit exponential gaps
    /// on that count, mapped back to time).
    pub fn poisson_arrivals(&self) -> std::sync::Arc<[u64]> {
        self.arrivals_at(|count| self.at_count(count))
    }

    /// Arrival times: unit exponential gaps (drawn from the seed) on the
    /// integrated rate, mapped back to time by `at`, until `duration`.
    fn arrivals_at(&self, at: impl Fn(f64) -> u64) -> std::sync::Arc<[u64]> {
        let end = u64::try_from(self.duration.as_nanos()).unwrap_or(u64::MAX);
        let mut times =
            Vec::with_capacity((self.duration.as_secs_f64() * self.rate * 1.1) as usize + 16);
        let mut count = 0.0;
        for k in 0u64.. {
            // A unit exponential gap; 1 - u is in (0, 1].
            count += -(1.0 - unit(self.seed, 0xA771_7A15, k)).ln();
            let t = at(count);
            if t >= end || times.len() as u64 >= MAX_REQUESTS {
                break;
            }
            times.push(t);
        }
        times.into()
    }

    /// Bursty arrival times for this scenario's (constant) rate, duration
    /// and seed: a Poisson process whose rate is `peak x rate` for `on`,
    /// then `rate x (on + off - peak x on) / off` for `off` (the mean stays
    /// `rate`), from a burst at the start.
    pub fn bursty_arrivals(&self, b: Burst) -> std::sync::Arc<[u64]> {
        let (on, off) = (b.on.as_secs_f64(), b.off.as_secs_f64());
        let (r_on, per_period) = (b.peak * self.rate, self.rate * (on + off));
        let r_off = (per_period - r_on * on) / off;
        self.arrivals_at(|count| {
            let k = (count / per_period).floor();
            let rest = count - k * per_period;
            let into = if rest < r_on * on || r_off <= 0.0 {
                rest / r_on
            } else {
                on + (rest - r_on * on) / r_off
            };
            ((k * (on + off) + into) * 1e9).round() as u64
        })
    }

    /// Poisson arrival times at per-second counts (`counts[i]` the rate in
    /// second `i`; none after the last), from the seed.
    pub fn per_second_arrivals(&self, counts: &[f64]) -> std::sync::Arc<[u64]> {
        // cumulative[i]: the arrivals expected before second i.
        let mut cumulative = Vec::with_capacity(counts.len() + 1);
        cumulative.push(0.0);
        for c in counts {
            cumulative.push(cumulative.last().copied().unwrap_or(0.0) + c);
        }
        let total = cumulative.last().copied().unwrap_or(0.0);
        self.arrivals_at(|count| {
            if count >= total {
                return u64::MAX;
            }
            // The second whose span of the integrated rate holds `count`.
            let i = cumulative.partition_point(|&c| c <= count) - 1;
            let into = (count - cumulative[i]) / counts[i];
            ((i as f64 + into) * 1e9).round() as u64
        })
    }

    /// The arrivals drawn again for this scenario's seed and rate (fixed
    /// and trace-file times stay as they are; per-second counts of a trace
    /// are drawn once, when the file is read).
    pub fn redraw_arrivals(&mut self) {
        self.arrivals = match &self.arrivals {
            Arrivals::Poisson(_) => Arrivals::Poisson(self.poisson_arrivals()),
            Arrivals::Bursty(b, _) => Arrivals::Bursty(*b, self.bursty_arrivals(*b)),
            other => other.clone(),
        };
    }

    /// The faults' times drawn for this scenario's seed, as
    /// [`FaultJitter`] says: `from` and `until` of fault `k` each move by
    /// `(2u - 1) x jitter` (to the nanosecond), `u` a uniform draw in
    /// `[0, 1)` from the seed, then are clamped to `0..=duration`; and as
    /// [`Outage`] says: `from` a uniform draw from `onset`, `until` that
    /// plus a draw from `length`. Faults with neither keep their times.
    pub fn draw_faults(&mut self) {
        let end = self.duration.as_nanos() as i128;
        for j in &self.fault_jitter {
            let shift = |at: Duration, which: u64| {
                let u = unit(self.seed, JITTER_DRAW, 2 * j.fault as u64 + which);
                let by = ((2.0 * u - 1.0) * j.by.as_nanos() as f64).round() as i128;
                let t = (at.as_nanos() as i128 + by).clamp(0, end);
                Duration::from_nanos(t as u64)
            };
            if let Some(f) = self.downstream.faults.get_mut(j.fault) {
                f.from = shift(j.from, 0);
                f.until = shift(j.until, 1);
            }
        }
        for o in &self.outages {
            let u = |which: u64| unit(self.seed, OUTAGE_DRAW, 2 * o.fault as u64 + which);
            let from = o.onset.at(u(0), false);
            let length = o.length.at(u(1), o.length_dist == LengthDist::LogUniform);
            // A draw of its own: the times' draws are as they were without it.
            let kind = o.kinds.pick(unit(self.seed, KIND_DRAW, o.fault as u64));
            if let Some(f) = self.downstream.faults.get_mut(o.fault) {
                f.from = from;
                f.until = from + length;
                if let Some(k) = kind {
                    f.outcome = k;
                }
            }
        }
    }

    /// This scenario as its file with `seed = seed` would be: Poisson
    /// arrivals and jittered faults drawn again (the latency tail's draws
    /// follow the seed by themselves). The same seed gives the same
    /// scenario.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Scenario, EMBEDDED};
    ///
    /// let text = EMBEDDED[0].1.replace("outcome = \"error\"", "outcome = \"error\"\njitter = \"250ms\"");
    /// let sc = Scenario::parse("random.toml", &text)?;
    /// assert_eq!(sc.with_seed(sc.seed), sc);
    /// let other = sc.with_seed(2);
    /// assert_ne!(other.fault_span(), sc.fault_span());
    /// assert_eq!(other.with_seed(sc.seed), sc);
    /// # Ok::<(), fusebox_lab::scenario::ScenarioError>(())
    /// ```
    pub fn with_seed(&self, seed: u64) -> Scenario {
        let mut sc = self.clone();
        sc.seed = seed;
        sc.redraw_arrivals();
        sc.draw_faults();
        sc
    }

    /// Whether anything in the scenario is drawn from its `seed`: Poisson
    /// arrivals, a latency tail or distribution, a fault's jitter, an
    /// outage's onset or length. Without any, every seed
    /// gives the same run.
    pub fn is_random(&self) -> bool {
        matches!(self.arrivals, Arrivals::Poisson(_) | Arrivals::Bursty(..))
            || !self.downstream.tail.is_empty()
            || !self.fault_jitter.is_empty()
            || self.outages.iter().any(Outage::is_random)
            || self.downstream.latency_dist.is_some()
            || self
                .downstream
                .faults
                .iter()
                .any(|f| f.latency_dist.is_some())
    }

    /// Number of requests: every `i` with `arrival(i) < duration`.
    pub fn request_count(&self) -> u64 {
        if let Some(times) = self.arrivals.times() {
            return times.len() as u64;
        }
        let d = self.duration.as_nanos() as u64;
        let mean = (self.rate + self.rate_until.unwrap_or(self.rate)) / 2.0;
        let mut n = (self.duration.as_secs_f64() * mean).floor() as u64;
        // Fix up float rounding at the boundary.
        while n > 0 && self.arrival_ns(n - 1) >= d {
            n -= 1;
        }
        while self.arrival_ns(n) < d {
            n += 1;
        }
        n
    }

    /// What the `attempt`-th downstream call (from 1: retries and hedges
    /// count) of request `request`, made by `replica` (from 0) at `start`,
    /// does: the downstream's plan ([`Downstream::plan_with`]) with the
    /// client's timeout and a healthy latency drawn from the latency tail.
    /// The draw is a hash of the `seed`, the request and the attempt: the
    /// same call of the same request takes the same time in every strategy,
    /// every mode and every run.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Scenario, EMBEDDED};
    /// use std::time::Duration;
    ///
    /// let text = EMBEDDED[0].1.replace(
    ///     "[[downstream.faults]]",
    ///     "[[downstream.tail]]\nshare = 0.5\nlatency = \"100ms\"\n\n[[downstream.faults]]",
    /// );
    /// let sc = Scenario::parse("tail.toml", &text)?;
    /// let slow = (0..1000).filter(|&i| sc.plan(i, 1, 0, Duration::ZERO).duration
    ///     == Duration::from_millis(100)).count();
    /// assert!((450..550).contains(&slow), "{slow}");
    /// assert_eq!(sc.plan(7, 2, 0, Duration::ZERO), sc.plan(7, 2, 0, Duration::ZERO));
    /// # Ok::<(), fusebox_lab::scenario::ScenarioError>(())
    /// ```
    pub fn plan(&self, request: usize, attempt: u32, replica: usize, start: Duration) -> CallPlan {
        let d = &self.downstream;
        d.plan_with(
            replica,
            start,
            self.client.timeout,
            self.draw(request, attempt),
        )
    }

    /// The draws of the `attempt`-th call of request `request` (see
    /// [`plan`](Self::plan)): its healthy latency, and the key of its
    /// fault's latency.
    pub fn draw(&self, request: usize, attempt: u32) -> CallDraw {
        let (r, a) = (request as u64, u64::from(attempt));
        CallDraw {
            healthy: self.healthy_latency(request, attempt),
            fault_key: hash(self.seed, FAULT_LATENCY_DRAW ^ r, a),
        }
    }

    /// The healthy latency of the `attempt`-th call of request `request`
    /// (see [`plan`](Self::plan)): a tail entry's for the tail's shares of
    /// the calls, else a draw from `[downstream] latency`'s distribution,
    /// else `latency`.
    pub fn healthy_latency(&self, request: usize, attempt: u32) -> Duration {
        let d = &self.downstream;
        let (r, a) = (request as u64, u64::from(attempt));
        // Over the seed, the request and the attempt.
        let tail = if d.tail.is_empty() {
            None
        } else {
            d.tail_at(unit(self.seed, r, a))
        };
        tail.unwrap_or_else(|| match &d.latency_dist {
            None => d.latency,
            Some(dist) => dist.sample(hash(self.seed, HEALTHY_LATENCY_DRAW ^ r, a)),
        })
    }

    /// The HTTP client's pool as virtual mode models it ([`Pool`]): with
    /// `transport = "http"` and a `pool_max` or a `no_accept` fault; `None`
    /// otherwise (a pool without either leaves every call as it is).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Scenario, EMBEDDED};
    ///
    /// let text = EMBEDDED[0].1.replace(
    ///     "latency = \"5ms\"          # a healthy call succeeds after this",
    ///     "latency = \"5ms\"\ntransport = \"http\"\npool_max = 4",
    /// );
    /// let sc = Scenario::parse("pool.toml", &text).unwrap();
    /// assert_eq!(sc.pool().and_then(|p| p.pool_max), Some(4));
    /// ```
    pub fn pool(&self) -> Option<HttpConfig> {
        match self.downstream.transport {
            Transport::Http(c)
                if c.pool_max.is_some()
                    || self
                        .downstream
                        .faults
                        .iter()
                        .any(|f| f.outcome == FaultOutcome::NoAccept) =>
            {
                Some(c)
            }
            _ => None,
        }
    }

    /// Whether virtual mode models the HTTP client's pool ([`pool`](Self::pool)).
    pub fn models_pool(&self) -> bool {
        self.pool().is_some()
    }

    /// Whether the scenario is about tail latency: its downstream has a
    /// latency tail or distribution, or a strategy hedges. Its reports add the figures of
    /// the whole run's latency (p50, p99, p99.9) and of the hedges.
    pub fn has_tail(&self) -> bool {
        !self.downstream.tail.is_empty()
            || self.downstream.latency_dist.is_some()
            || self.strategies.iter().any(|s| s.hedge.is_some())
    }

    /// The fault period: from the earliest fault start to the latest fault end.
    pub fn fault_span(&self) -> Option<(Duration, Duration)> {
        let from = self.downstream.faults.iter().map(|f| f.from).min()?;
        let until = self.downstream.faults.iter().map(|f| f.until).max()?;
        Some((from, until))
    }

    /// Loads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: None,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(&file, &text)
    }

    /// Parses and validates scenario text; `file` is only used in errors.
    ///
    /// # Errors
    ///
    /// The first bad key, with the file, its line and the limit it broke.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Scenario, EMBEDDED};
    ///
    /// let sc = Scenario::parse("seed000-50rps.toml", EMBEDDED[0].1)?;
    /// assert_eq!((sc.request_count(), sc.strategies.len()), (150, 3));
    ///
    /// let bad = EMBEDDED[0].1.replace("duration = \"3s\"", "duration = \"-3s\"");
    /// let err = Scenario::parse("mine.toml", &bad).unwrap_err();
    /// assert_eq!((err.line, err.key.as_deref()), (Some(5), Some("duration")));
    /// # Ok::<(), fusebox_lab::scenario::ScenarioError>(())
    /// ```
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        file::parse(file, text)
    }

    /// The embedded default scenarios, parsed.
    pub fn embedded() -> Vec<Scenario> {
        embedded().to_vec()
    }

    /// Whether this scenario is `other` with another name: the same
    /// arrivals, pool, downstream, client and report windows (strategies
    /// are not compared).
    pub fn same_setup(&self, other: &Scenario) -> bool {
        (
            self.duration,
            self.rate,
            self.rate_until,
            self.workers,
            self.queue,
            self.window,
            &self.downstream,
            self.client,
            self.request,
            &self.fleet,
            self.seed,
            (&self.fault_jitter, &self.outages),
        ) == (
            other.duration,
            other.rate,
            other.rate_until,
            other.workers,
            other.queue,
            other.window,
            &other.downstream,
            other.client,
            other.request,
            &other.fleet,
            other.seed,
            (&other.fault_jitter, &other.outages),
        )
    }

    /// The checks of `[downstream] hosts` and the faults' `hosts` (a
    /// fault's hosts are its `replicas`, numbered from 1: a scenario of
    /// several hosts has no fleet).
    fn check_hosts(&self) -> Result<(), Problem> {
        let fail = |key: &'static str, index: Option<usize>, message: String| {
            Err(Problem {
                key,
                index,
                message,
            })
        };
        if !(1..=MAX_HOSTS).contains(&self.hosts) {
            return fail(
                "downstream.hosts",
                None,
                format!("{} is out of range (1..={MAX_HOSTS})", self.hosts),
            );
        }
        if self.hosts == 1 {
            return Ok(());
        }
        let why = if self.fleet.is_some() {
            Some("a fleet")
        } else if self.downstream.server.is_some() {
            Some("server")
        } else if self.downstream.transport != Transport::Call {
            Some("transport = \"http\"")
        } else {
            None
        };
        if let Some(other) = why {
            return fail(
                "downstream.hosts",
                None,
                format!("several hosts do not go with {other} (yet)"),
            );
        }
        for (i, f) in self.downstream.faults.iter().enumerate() {
            let Some(list) = &f.replicas else { continue };
            if list.is_empty() {
                return fail(
                    "downstream.faults.hosts",
                    Some(i),
                    "must name at least one host (leave it out for all)".into(),
                );
            }
            if let Some(bad) = list.iter().find(|&&h| !(1..=self.hosts).contains(&h)) {
                return fail(
                    "downstream.faults.hosts",
                    Some(i),
                    format!(
                        "host {bad} is out of range (1..=downstream.hosts = {})",
                        self.hosts
                    ),
                );
            }
        }
        Ok(())
    }

    /// How long a run must go on after an outage for its recovery to be
    /// seen: the longest open period of the strategies (a breaker opened
    /// at the outage's end probes after it), at least one report window.
    pub fn recovery(&self) -> Duration {
        self.strategies
            .iter()
            .filter_map(|s| s.fleet_open_for().ok().flatten())
            .fold(self.window, Duration::max)
    }

    /// Checks every value against the lab's limits and the other values.
    /// Scenario files and `sweep` values go through this one check.
    pub fn check(&self) -> Result<(), Problem> {
        let fail = |key: &'static str, index: Option<usize>, message: String| {
            Err(Problem {
                key,
                index,
                message,
            })
        };
        if !(self.rate.is_finite() && self.rate > 0.0 && self.rate <= MAX_RATE) {
            return fail(
                "rate",
                None,
                format!(
                    "{} must be > 0 and at most {MAX_RATE} (requests per second)",
                    self.rate
                ),
            );
        }
        if self.duration.is_zero() || self.duration > MAX_DURATION {
            return fail(
                "duration",
                None,
                format!(
                    "{} must be > 0 and at most a day (24h)",
                    format_duration(self.duration)
                ),
            );
        }
        if self.duration.as_secs_f64() * self.rate > MAX_REQUESTS as f64 {
            return fail(
                "rate",
                None,
                format!(
                    "rate x duration = {} x {} gives more than {MAX_REQUESTS} requests",
                    self.rate,
                    format_duration(self.duration)
                ),
            );
        }
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return fail(
                "workers",
                None,
                format!("{} is out of range (1..={MAX_WORKERS})", self.workers),
            );
        }
        if self.queue > MAX_QUEUE {
            return fail(
                "queue",
                None,
                format!("{} is out of range (0..={MAX_QUEUE})", self.queue),
            );
        }
        if self.window.is_zero() {
            return fail("window", None, "must be > 0".into());
        }
        if self.duration.as_nanos() / self.window.as_nanos() > MAX_WINDOWS {
            return fail(
                "window",
                None,
                format!("too small for the duration (more than {MAX_WINDOWS} windows)"),
            );
        }
        if let Some(t) = self.client.timeout {
            if t.is_zero() {
                return fail("client.timeout", None, "must be > 0".into());
            }
        }
        if self.client.retries > MAX_RETRIES {
            return fail(
                "client.retries",
                None,
                format!(
                    "{} is out of range (0..={MAX_RETRIES})",
                    self.client.retries
                ),
            );
        }
        let run = format_duration(self.duration);
        if self.request.critical > self.duration {
            return fail(
                "request.critical",
                None,
                format!(
                    "{} is longer than the run (duration = {run})",
                    format_duration(self.request.critical)
                ),
            );
        }
        if let Some(d) = self.request.deadline {
            if d.is_zero() || d > self.duration {
                return fail(
                    "request.deadline",
                    None,
                    format!(
                        "{} must be > 0 and at most the run (duration = {run})",
                        format_duration(d)
                    ),
                );
            }
        }
        if let Some(f) = &self.fleet {
            if !(1..=MAX_REPLICAS).contains(&f.replicas) {
                return fail(
                    "fleet.replicas",
                    None,
                    format!("{} is out of range (1..={MAX_REPLICAS})", f.replicas),
                );
            }
            if f.replicas * self.workers > MAX_WORKERS * 4 {
                return fail(
                    "fleet.replicas",
                    None,
                    format!(
                        "replicas x workers = {} x {} is more than {} workers in all",
                        f.replicas,
                        self.workers,
                        MAX_WORKERS * 4
                    ),
                );
            }
            if !(1..=f.replicas).contains(&f.quorum) {
                return fail(
                    "fleet.quorum",
                    None,
                    format!(
                        "{} is out of range (1..=replicas = {})",
                        f.quorum, f.replicas
                    ),
                );
            }
            if f.sync_every.is_zero() || f.sync_every > MAX_DURATION {
                return fail(
                    "fleet.sync_every",
                    None,
                    format!(
                        "{} must be > 0 and at most a day (24h)",
                        format_duration(f.sync_every)
                    ),
                );
            }
            if f.redis.is_some() && f.sharing == Sharing::None {
                return fail(
                    "fleet.redis",
                    None,
                    "sharing = \"none\" shares nothing: leave redis out".into(),
                );
            }
            if f.propagation > self.duration {
                return fail(
                    "fleet.propagation",
                    None,
                    format!(
                        "{} is longer than the run (duration = {run})",
                        format_duration(f.propagation)
                    ),
                );
            }
        }
        self.check_hosts()?;
        for (i, f) in self.downstream.faults.iter().enumerate() {
            if f.outcome == FaultOutcome::Down && f.replicas.is_some() && self.hosts == 1 {
                return fail(
                    "downstream.faults.replicas",
                    Some(i),
                    "a fault with outcome = \"down\" stops the dependency for every replica: \
                     leave replicas out"
                        .into(),
                );
            }
            let Some(list) = &f.replicas else { continue };
            if self.hosts > 1 {
                // A fault's `hosts`: see check_hosts.
                continue;
            }
            let n = self.replicas();
            if self.fleet.is_none() {
                return fail(
                    "downstream.faults.replicas",
                    Some(i),
                    "needs a [fleet] section (replicas are numbered from 1 to fleet.replicas)"
                        .into(),
                );
            }
            if list.is_empty() {
                return fail(
                    "downstream.faults.replicas",
                    Some(i),
                    "must name at least one replica (leave it out for all)".into(),
                );
            }
            if let Some(bad) = list.iter().find(|&&r| !(1..=n).contains(&r)) {
                return fail(
                    "downstream.faults.replicas",
                    Some(i),
                    format!("replica {bad} is out of range (1..=fleet.replicas = {n})"),
                );
            }
        }
        if self.downstream.latency > self.duration {
            return fail(
                "downstream.latency",
                None,
                format!(
                    "{} is longer than the run (duration = {run})",
                    format_duration(self.downstream.latency)
                ),
            );
        }
        if let Some(dist) = &self.downstream.latency_dist {
            if self.downstream.server.is_some() {
                return fail(
                    "downstream.latency",
                    None,
                    "the server draws its own service times (p90, p99): give latency as one \
                     duration"
                        .into(),
                );
            }
            if dist.quantile(0.99) > self.duration {
                return fail(
                    "downstream.latency",
                    None,
                    format!(
                        "its p99, {}, is longer than the run (duration = {run})",
                        format_duration(dist.quantile(0.99))
                    ),
                );
            }
        }
        for (i, f) in self.downstream.faults.iter().enumerate() {
            if let Some(dist) = &f.latency_dist {
                if dist.quantile(0.99) > self.duration {
                    return fail(
                        "downstream.faults.latency",
                        Some(i),
                        format!(
                            "its p99, {}, is longer than the run (duration = {run})",
                            format_duration(dist.quantile(0.99))
                        ),
                    );
                }
            }
        }
        let mut shares = 0.0;
        for (i, t) in self.downstream.tail.iter().enumerate() {
            if self.downstream.server.is_some() {
                return fail(
                    "downstream.tail",
                    Some(i),
                    "the server draws its own service times (p90, p99): leave tail out".into(),
                );
            }
            if !(t.share > 0.0 && t.share <= 1.0) {
                return fail(
                    "downstream.tail.share",
                    Some(i),
                    format!(
                        "{} must be > 0 and at most 1 (a fraction of the calls)",
                        t.share
                    ),
                );
            }
            shares += t.share;
            if shares > 1.0 + 1e-9 {
                return fail(
                    "downstream.tail.share",
                    Some(i),
                    format!(
                        "the shares add up to {shares} by this entry: at most 1 (the calls left \
                         take the downstream's latency)"
                    ),
                );
            }
            if t.latency > self.duration {
                return fail(
                    "downstream.tail.latency",
                    Some(i),
                    format!(
                        "{} is longer than the run (duration = {run})",
                        format_duration(t.latency)
                    ),
                );
            }
        }
        for o in &self.outages {
            let i = Some(o.fault);
            if o.length.min.is_zero() {
                return fail(
                    "downstream.faults.length",
                    i,
                    format!(
                        "{} may draw an empty fault: its shortest length must be > 0",
                        o.length
                    ),
                );
            }
            if o.onset.max >= self.duration {
                return fail(
                    "downstream.faults.onset",
                    i,
                    format!(
                        "{} is outside the run: a fault must start before duration = {run}",
                        o.onset
                    ),
                );
            }
            // A fault at fixed times that only draws its outcome is held to
            // the rules of such a fault, not to a drawn outage's recovery.
            let fixed_times = o.onset.is_fixed() && o.length.is_fixed() && o.kinds.len() > 1;
            let recovery = self.recovery();
            if !fixed_times && o.latest_end() + recovery > self.duration {
                return fail(
                    "duration",
                    None,
                    format!(
                        "{run} is too short for fault {} ({}): it may end as late as {} (the \
                         latest onset {} + the longest length {}), and the run must go on for \
                         the recovery after it, {} (the longest open_for of the strategies, at \
                         least one window): make duration at least {}",
                        o.fault + 1,
                        o.describe(),
                        format_duration(o.latest_end()),
                        format_duration(o.onset.max),
                        format_duration(o.length.max),
                        format_duration(recovery),
                        format_duration(o.latest_end() + recovery)
                    ),
                );
            }
        }
        for (i, f) in self.downstream.faults.iter().enumerate() {
            match (f.outcome, &self.downstream.server) {
                (FaultOutcome::Capacity { .. }, None) => {
                    return fail(
                        "downstream.faults.outcome",
                        Some(i),
                        "a fault with outcome = \"capacity\" takes workers away from the \
                         dependency's server: needs [downstream] server = { workers = .., \
                         p90 = .., p99 = .. }"
                            .into(),
                    )
                }
                (FaultOutcome::Capacity { workers }, Some(s)) if workers > s.workers => {
                    return fail(
                        "downstream.faults.workers",
                        Some(i),
                        format!(
                            "{workers} is more than the server has (downstream.server.workers = \
                             {}): a capacity fault leaves 0 to {} of them",
                            s.workers, s.workers
                        ),
                    )
                }
                (FaultOutcome::Capacity { .. }, Some(_)) if f.replicas.is_some() => {
                    return fail(
                        "downstream.faults.replicas",
                        Some(i),
                        "one server is behind every replica: a capacity fault hits them all, \
                         leave replicas out"
                            .into(),
                    )
                }
                (FaultOutcome::Capacity { .. }, Some(_)) | (_, None) => {}
                (other, Some(_)) => {
                    return fail(
                        "downstream.faults.outcome",
                        Some(i),
                        format!(
                            "a [downstream] server draws its own service times: of the faults \
                             only outcome = \"capacity\" applies to it, not {:?}",
                            other.as_str()
                        ),
                    )
                }
            }
            if f.outcome == FaultOutcome::Hang && self.client.timeout.is_none() {
                return fail(
                    "client.timeout",
                    Some(i),
                    "a fault with outcome = \"hang\" needs [client] timeout".into(),
                );
            }
            if f.from >= self.duration {
                return fail(
                    "downstream.faults.from",
                    Some(i),
                    format!(
                        "{} is outside the run: faults must start before duration = {run}",
                        format_duration(f.from)
                    ),
                );
            }
            if f.until <= f.from {
                return fail(
                    "downstream.faults.until",
                    Some(i),
                    format!(
                        "{} must be after from = {}",
                        format_duration(f.until),
                        format_duration(f.from)
                    ),
                );
            }
            if f.until > self.duration {
                return fail(
                    "downstream.faults.until",
                    Some(i),
                    format!(
                        "{} is outside the run: faults must end by duration = {run}",
                        format_duration(f.until)
                    ),
                );
            }
            if f.outcome == FaultOutcome::Slow && f.latency < self.downstream.latency {
                return fail(
                    "downstream.faults.latency",
                    Some(i),
                    format!(
                        "{} is below the healthy latency ({}): a slow fault's latency is \
                         what calls grow to",
                        format_duration(f.latency),
                        format_duration(self.downstream.latency)
                    ),
                );
            }
            if f.latency > self.duration {
                return fail(
                    "downstream.faults.latency",
                    Some(i),
                    format!(
                        "{} is longer than the run (duration = {run})",
                        format_duration(f.latency)
                    ),
                );
            }
        }
        for j in &self.fault_jitter {
            let length = j.until.saturating_sub(j.from);
            if j.by.is_zero() {
                return fail(
                    "downstream.faults.jitter",
                    Some(j.fault),
                    "must be > 0 (leave it out for a fault at fixed times)".into(),
                );
            }
            if j.by.saturating_mul(2) >= length {
                return fail(
                    "downstream.faults.jitter",
                    Some(j.fault),
                    format!(
                        "{} is too long for a fault of {} (from = {}, until = {}): 2 x jitter \
                         must be shorter than the fault, so that a drawn fault is never empty",
                        format_duration(j.by),
                        format_duration(length),
                        format_duration(j.from),
                        format_duration(j.until)
                    ),
                );
            }
        }
        Ok(())
    }
}

/// The embedded scenarios, parsed once.
fn embedded() -> &'static [Scenario] {
    static PARSED: OnceLock<Vec<Scenario>> = OnceLock::new();
    PARSED.get_or_init(|| {
        EMBEDDED
            .iter()
            .map(|(file, text)| {
                Scenario::parse(file, text).expect("embedded scenarios are valid (tested)")
            })
            .collect()
    })
}

/// A value outside its limits, found by [`Scenario::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key (dotted path), as in scenario files.
    pub key: &'static str,
    /// Which `[[downstream.faults]]` (or `[[downstream.tail]]`) entry, for
    /// one of its keys.
    pub index: Option<usize>,
    /// What is wrong, with the limit.
    pub message: String,
}

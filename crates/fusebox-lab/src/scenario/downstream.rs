//! The simulated dependency: a latency, and a schedule of faults.
//!
//! What a call does is decided by the time it starts (as in seed 000): a call
//! starting inside a fault takes the fault's latency and fails (or hangs until
//! the client's timeout); any other call succeeds after the healthy latency,
//! or, for the share of calls a `[[downstream.tail]]` entry names, after its
//! latency instead (drawn per call: [`Downstream::healthy`]).

use std::time::Duration;

/// What a faulty call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FaultOutcome {
    /// Fails with an error after the fault's latency.
    Error,
    /// Never answers: the call ends only at the client's timeout.
    Hang,
    /// The dependency's process is stopped: a call fails at once (connection
    /// refused). Over HTTP the lab stops the server process at the fault's
    /// start and starts it again at its end.
    Down,
    /// The connection is accepted, then dropped without an answer after the
    /// fault's latency: the call fails then. Over HTTP the server closes the
    /// connection (the client sees a transport error, not a status); in
    /// thread and virtual mode it is an error after the latency.
    Reset,
    /// The dependency slows down: a call still succeeds, but its latency
    /// grows linearly over the fault, from the healthy latency at `from` to
    /// the fault's `latency` at `until`; the client's timeout cuts the calls
    /// that grow past it. The same in every mode.
    Slow,
    /// `outcome = "capacity"` with `workers = 4`: the `[downstream] server`
    /// runs with that many of its workers from `from` to `until` (virtual
    /// mode, with a server only). A call in service when the fault starts
    /// finishes; the workers beyond `workers` take no call until the fault
    /// ends, and calls queue for the others.
    Capacity {
        /// The server's workers during the fault.
        workers: usize,
    },
    /// `outcome = "no_accept"` (`transport = "http"`): the server accepts no
    /// new connection from `from` to `until`; the connections it has keep
    /// being served (by the other faults, if any: a `no_accept` fault
    /// overlaps them, it does not hide them). A call that needs a new
    /// connection then fails with an error at the `connect_timeout`; one
    /// that finds an idle connection in the client's pool is served.
    NoAccept,
}

impl FaultOutcome {
    /// Every outcome, as a file names them (`capacity`'s workers at 0).
    pub const ALL: [FaultOutcome; 7] = [
        FaultOutcome::Error,
        FaultOutcome::Hang,
        FaultOutcome::Down,
        FaultOutcome::Reset,
        FaultOutcome::Slow,
        FaultOutcome::Capacity { workers: 0 },
        FaultOutcome::NoAccept,
    ];

    /// The outcome a file's `outcome` string names ([`as_str`](Self::as_str)
    /// read back).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::FaultOutcome;
    /// assert_eq!(FaultOutcome::named("hang"), Some(FaultOutcome::Hang));
    /// assert_eq!(FaultOutcome::named("stall"), None);
    /// ```
    pub fn named(name: &str) -> Option<FaultOutcome> {
        Self::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// The `outcome` string of scenario files.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::FaultOutcome;
    /// assert_eq!(FaultOutcome::Capacity { workers: 4 }.as_str(), "capacity");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            FaultOutcome::Error => "error",
            FaultOutcome::Hang => "hang",
            FaultOutcome::Down => "down",
            FaultOutcome::Reset => "reset",
            FaultOutcome::Slow => "slow",
            FaultOutcome::Capacity { .. } => "capacity",
            FaultOutcome::NoAccept => "no_accept",
        }
    }
}

/// A latency drawn per call: `latency = { lognormal = { p50 = "5ms", p99 =
/// "40ms" } }` or `latency = { histogram = { le = [..], counts = [..] } }`
/// of `[downstream]` (its healthy calls) or of a fault (its failing
/// calls). A plain `latency = "5ms"` is constant and has none.
///
/// A call's draw is a hash of the scenario's `seed`, the request and the
/// attempt ([`Scenario::plan`](super::Scenario::plan)): the same call
/// takes the same time in every strategy, mode and run of that seed.
///
/// # Examples
///
/// ```
/// use fusebox_lab::scenario::LatencyDist;
/// use std::time::Duration;
///
/// let ms = Duration::from_millis;
/// let h = LatencyDist::Histogram { le: vec![ms(10), ms(20)], counts: vec![50.0, 50.0] };
/// // Uniform inside a bucket: the median is the first bucket's end.
/// assert_eq!(h.quantile(0.5), ms(10));
/// assert_eq!(h.quantile(0.75), ms(15));
/// let l = LatencyDist::LogNormal { p50: ms(5), p99: ms(40) };
/// assert_eq!(l.median(), ms(5));
/// assert_eq!(l.sample(7), l.sample(7));
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LatencyDist {
    /// `lognormal = { p50, p99 }`: a log-normal with that median and 99th
    /// percentile (`p99 = p50`: constant).
    LogNormal {
        /// The median.
        p50: Duration,
        /// The 99th percentile, at least the median.
        p99: Duration,
    },
    /// `histogram = { le = ["1ms", "5ms", ..], counts = [..] }` (or
    /// `cumulative = [..]`, a Prometheus histogram's `_bucket` values): the
    /// buckets' upper bounds, increasing, and how many calls fell in each
    /// (the first from 0); a draw picks a bucket by its count, then a
    /// latency uniformly inside it.
    Histogram {
        /// The buckets' upper bounds, increasing.
        le: Vec<Duration>,
        /// The calls in each bucket (not cumulative), not all zero.
        counts: Vec<f64>,
    },
}

/// The longest latency a draw gives (a log-normal has no end).
const MAX_DRAW: Duration = Duration::from_secs(3600);

/// A standard normal from the hash `n` (Box-Muller over two of its
/// splitmix draws): the lab's one normal draw.
pub(crate) fn standard_normal(n: u64) -> f64 {
    let u = |k: u64| {
        let z = super::splitmix(n.wrapping_mul(2).wrapping_add(k));
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (-2.0 * u(0).ln()).sqrt() * (std::f64::consts::TAU * u(1)).cos()
}

/// The standard normal's 99th percentile.
const Z99: f64 = 2.326_347_874;

impl LatencyDist {
    /// The latency of the draw whose hash is `key`.
    pub fn sample(&self, key: u64) -> Duration {
        match self {
            LatencyDist::LogNormal { p50, p99 } => {
                let (a, b) = (p50.as_secs_f64().ln(), p99.as_secs_f64().ln());
                let sigma = ((b - a) / Z99).max(0.0);
                let secs = (a + sigma * standard_normal(key)).exp();
                Duration::from_secs_f64(secs.min(MAX_DRAW.as_secs_f64()))
            }
            LatencyDist::Histogram { .. } => {
                let z = super::splitmix(key);
                self.quantile((z >> 11) as f64 / (1u64 << 53) as f64)
            }
        }
    }

    /// The `q`-quantile (`q` in `[0, 1]`): for a histogram, exact (its
    /// buckets uniform inside); for a log-normal, from the normal's
    /// quantile function (an approximation to better than 1e-3 in `z`).
    pub fn quantile(&self, q: f64) -> Duration {
        let q = q.clamp(0.0, 1.0);
        match self {
            LatencyDist::LogNormal { p50, p99 } => {
                let (a, b) = (p50.as_secs_f64().ln(), p99.as_secs_f64().ln());
                let sigma = ((b - a) / Z99).max(0.0);
                let secs = (a + sigma * normal_quantile(q)).exp();
                Duration::from_secs_f64(secs.min(MAX_DRAW.as_secs_f64()))
            }
            LatencyDist::Histogram { le, counts } => {
                let total: f64 = counts.iter().sum();
                let target = q * total;
                let mut below = 0.0;
                let mut lower = Duration::ZERO;
                for (&upper, &n) in le.iter().zip(counts) {
                    if n > 0.0 && target < below + n {
                        let into = ((target - below) / n).clamp(0.0, 1.0);
                        return lower + (upper - lower).mul_f64(into);
                    }
                    below += n;
                    lower = upper;
                }
                // q = 1: the end of the last bucket with calls.
                le.iter()
                    .zip(counts)
                    .rev()
                    .find(|(_, &n)| n > 0.0)
                    .map_or(Duration::ZERO, |(&u, _)| u)
            }
        }
    }

    /// The median: what the lab takes as "the" latency where it needs one
    /// (a `slow` fault grows from the healthy median; reports print it).
    pub fn median(&self) -> Duration {
        match self {
            LatencyDist::LogNormal { p50, .. } => *p50,
            LatencyDist::Histogram { .. } => self.quantile(0.5),
        }
    }

    /// `lognormal p50 5ms p99 40ms`, or `histogram of 4 buckets to 100ms`.
    pub fn describe(&self) -> String {
        use super::duration::format_duration as f;
        match self {
            LatencyDist::LogNormal { p50, p99 } => {
                format!("lognormal p50 {} p99 {}", f(*p50), f(*p99))
            }
            LatencyDist::Histogram { le, .. } => format!(
                "histogram of {} buckets to {}",
                le.len(),
                le.last().map_or("0s".into(), |d| f(*d))
            ),
        }
    }
}

/// The standard normal's quantile function (Acklam's rational
/// approximation; relative error below 1.2e-9).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let low = 0.024_25;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < low {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - low {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// One `[[downstream.faults]]` entry: calls starting in `[from, until)` fail.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fault {
    /// Start of the fault (inclusive).
    pub from: Duration,
    /// End of the fault (exclusive): a call starting at `until` is healthy.
    pub until: Duration,
    /// How long a faulty call takes to fail (for `slow`: the latency it
    /// grows to by `until`).
    pub latency: Duration,
    /// What a call in it does.
    pub outcome: FaultOutcome,
    /// `replicas`: the replicas (numbered from 1) whose calls it hits; `None`
    /// = all of them (a fleet scenario's broken network path hits some only).
    pub replicas: Option<Vec<usize>>,
    /// `latency = { lognormal = .. }` or `{ histogram = .. }` (`error` and
    /// `reset` faults): a failing call's latency drawn per call, in place
    /// of `latency` (then its median). `None`: every call takes `latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_dist: Option<LatencyDist>,
}

impl Fault {
    /// A `slow` fault's latency for a call starting at `start` (within the
    /// fault): `healthy` at `from`, growing linearly to `latency` at `until`,
    /// rounded down to the nanosecond.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Fault, FaultOutcome};
    /// use std::time::Duration;
    ///
    /// let ms = Duration::from_millis;
    /// let f = Fault { from: ms(1000), until: ms(2000), latency: ms(105),
    ///                 outcome: FaultOutcome::Slow, replicas: None,
    ///                 latency_dist: None };
    /// assert_eq!(f.grown(ms(5), ms(1000)), ms(5));
    /// assert_eq!(f.grown(ms(5), ms(1500)), ms(55));
    /// ```
    pub fn grown(&self, healthy: Duration, start: Duration) -> Duration {
        let span = self.until.saturating_sub(self.from).as_nanos().max(1);
        let into = start.saturating_sub(self.from).as_nanos().min(span);
        let (a, b) = (healthy.as_nanos(), self.latency.as_nanos());
        let grown = if b >= a {
            a + (b - a) * into / span
        } else {
            a - (a - b) * into / span
        };
        Duration::from_nanos(grown as u64)
    }

    /// How long a failing call whose draw is `key` takes: its draw from
    /// [`latency_dist`](Self::latency_dist), or `latency`.
    pub fn latency_for(&self, key: u64) -> Duration {
        self.latency_dist
            .as_ref()
            .map_or(self.latency, |d| d.sample(key))
    }

    /// Whether it hits the calls of replica `replica` (numbered from 0).
    pub fn hits(&self, replica: usize) -> bool {
        self.replicas
            .as_ref()
            .is_none_or(|r| r.contains(&(replica + 1)))
    }
}

/// One `[[downstream.tail]]` entry: a `share` of the healthy calls
/// succeed after `latency` instead of the downstream's `latency`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tail {
    /// `share`: the fraction of calls, in `(0, 1]`.
    pub share: f64,
    /// `latency`: what those calls take.
    pub latency: Duration,
}

/// The dependency: `[downstream]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Downstream {
    /// A healthy call succeeds after this (but for the `tail`'s share);
    /// with a [`latency_dist`](Self::latency_dist), its median.
    pub latency: Duration,
    /// `latency = { lognormal = .. }` or `{ histogram = .. }`: a healthy
    /// call's latency drawn per call (the `tail`'s share aside). `None`:
    /// constant, `latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_dist: Option<LatencyDist>,
    /// `[[downstream.tail]]`: the shares of healthy calls that take longer
    /// (or shorter), in file order; their shares add up to at most 1. Empty:
    /// every healthy call takes `latency`.
    #[serde(default)]
    pub tail: Vec<Tail>,
    /// Fault schedule; the first fault containing a call's start applies.
    pub faults: Vec<Fault>,
    /// `transport`: how real mode reaches it.
    pub transport: Transport,
    /// `server`: the dependency as `workers` workers behind one FIFO
    /// queue, each call's service time drawn from a log-normal with the
    /// given p90 and p99, optionally growing with the calls in service
    /// (virtual mode only; of the faults only `capacity` applies).
    pub server: Option<Server>,
}

/// `[downstream] server = { workers = 8, p90 = "50ms", p99 = "150ms" }`:
/// a server whose latency grows with its load, because calls queue for its
/// workers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Server {
    /// `workers`: calls served at once.
    pub workers: usize,
    /// `p90` of the service time without queueing.
    pub p90: Duration,
    /// `p99` of the service time without queueing.
    pub p99: Duration,
    /// `reject_after`: a call that would wait longer than this for a worker
    /// is refused at once (an error after 1 ms, as a 503 would be; the
    /// server does no work for it). Unset: every call queues.
    #[serde(default)]
    pub reject_after: Option<Duration>,
    /// `latency_per_inflight`: every other call in service when a call's
    /// service starts adds this share of its service time (a link that
    /// slows down with concurrency: at 1.0 a call takes `n` times as long
    /// with `n` calls in service). Unset: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_per_inflight: Option<f64>,
    /// `knee` and `knee_exp`: past `knee` calls in service, each more one
    /// multiplies the service time by `knee_exp` (a knee: `knee_exp` to the
    /// power of the calls in service above `knee`). Unset: no knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<Knee>,
}

/// `knee = 10, knee_exp = 1.1` of a [`Server`]: where its latency starts
/// to grow exponentially with the calls in service.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Knee {
    /// `knee`: calls in service up to which the knee adds nothing.
    pub start: u32,
    /// `knee_exp`: the factor each call in service above `start` adds
    /// (at least 1).
    pub exp: f64,
}

impl Server {
    /// The service time of call number `n` (deterministic: a hash of `n`
    /// through the log-normal's quantile function).
    pub fn service(&self, n: u64) -> Duration {
        const Z90: f64 = 1.281_551_565_5;
        let (a, b) = (self.p90.as_secs_f64().ln(), self.p99.as_secs_f64().ln());
        let sigma = ((b - a) / (Z99 - Z90)).max(0.0);
        let mu = a - Z90 * sigma;
        let normal = standard_normal(n);
        Duration::from_secs_f64((mu + sigma * normal).exp().min(MAX_DRAW.as_secs_f64()))
    }

    /// How much longer than its service time alone a call takes when it
    /// starts with `inflight` calls in service, itself included: `1 +
    /// (inflight - 1) x latency_per_inflight + knee_exp^max(0, inflight -
    /// knee) - 1`; 1 when neither key is set.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Knee, Server};
    /// use std::time::Duration;
    ///
    /// let ms = Duration::from_millis;
    /// let link = Server { workers: 1000, p90: ms(100), p99: ms(100), reject_after: None,
    ///                     latency_per_inflight: Some(1.0), knee: None };
    /// assert_eq!((link.slowdown(1), link.slowdown(4)), (1.0, 4.0));
    /// let knee = Server { latency_per_inflight: None,
    ///                     knee: Some(Knee { start: 10, exp: 2.0 }), ..link };
    /// assert_eq!((knee.slowdown(10), knee.slowdown(12)), (1.0, 4.0));
    /// ```
    pub fn slowdown(&self, inflight: usize) -> f64 {
        let others = inflight.saturating_sub(1) as f64;
        let linear = others * self.latency_per_inflight.unwrap_or(0.0);
        let knee = self.knee.map_or(0.0, |k| {
            let above = inflight.saturating_sub(k.start as usize);
            k.exp.powi(i32::try_from(above).unwrap_or(i32::MAX)) - 1.0
        });
        1.0 + linear + knee
    }

    /// Whether the service time grows with the calls in service.
    fn grows(&self) -> bool {
        self.latency_per_inflight.is_some() || self.knee.is_some()
    }
}

/// A [`Server`]'s queue in virtual time: when each worker is next free.
#[derive(Debug, Clone)]
pub struct ServerQueue {
    server: Server,
    free_at: Vec<Duration>,
    calls: u64,
    /// The `capacity` faults: from, until, and the workers left.
    capacity: Vec<(Duration, Duration, usize)>,
}

impl ServerQueue {
    /// An idle server.
    pub fn new(server: Server) -> Self {
        ServerQueue {
            server,
            free_at: vec![Duration::ZERO; server.workers.max(1)],
            calls: 0,
            capacity: Vec::new(),
        }
    }

    /// An idle server whose capacity follows the `capacity` faults of
    /// `faults` (the others do not apply to a server).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Fault, FaultOutcome, Server, ServerQueue};
    /// use std::time::Duration;
    ///
    /// let ms = Duration::from_millis;
    /// let server = Server { workers: 2, p90: ms(100), p99: ms(100), reject_after: None,
    ///                       latency_per_inflight: None, knee: None };
    /// // One worker of the two from 0 to 1 s.
    /// let half = Fault { from: ms(0), until: ms(1000), latency: ms(0),
    ///                    outcome: FaultOutcome::Capacity { workers: 1 }, replicas: None,
    ///                    latency_dist: None };
    /// let mut queue = ServerQueue::with_faults(server, &[half]);
    /// assert_eq!(queue.plan(ms(0), None).duration, ms(100));
    /// assert_eq!(queue.plan(ms(0), None).duration, ms(200)); // waits for the one worker
    /// ```
    pub fn with_faults(server: Server, faults: &[Fault]) -> Self {
        let mut queue = ServerQueue::new(server);
        queue.capacity = faults
            .iter()
            .filter_map(|f| match f.outcome {
                FaultOutcome::Capacity { workers } => Some((f.from, f.until, workers)),
                _ => None,
            })
            .collect();
        queue
    }

    /// When worker `i`, free from `t`, can start a call: `t`, or the end
    /// of the capacity faults that leave it out at `t`.
    fn available(&self, i: usize, mut t: Duration) -> Duration {
        while let Some(&(_, until, _)) = self
            .capacity
            .iter()
            .find(|&&(from, until, workers)| i >= workers && from <= t && t < until)
        {
            t = until;
        }
        t
    }

    /// A call that reaches the server at `now` (calls arrive in time
    /// order): it waits for the first free worker, then is served; the
    /// client gives up after `timeout` (the server works on regardless).
    pub fn plan(&mut self, now: Duration, timeout: Option<Duration>) -> CallPlan {
        let service = self.server.service(self.calls);
        self.calls += 1;
        // The worker that starts it first (of those at once, the one free
        // the longest; of those, the first).
        let (i, begin) = self
            .free_at
            .iter()
            .enumerate()
            .map(|(i, &f)| (i, self.available(i, f.max(now)), f))
            .min_by_key(|&(_, begin, f)| (begin, f))
            .map(|(i, begin, _)| (i, begin))
            .expect("at least one worker");
        if let Some(limit) = self.server.reject_after {
            if begin - now > limit {
                return CallPlan {
                    duration: Duration::from_millis(1),
                    result: CallResult::Overloaded,
                };
            }
        }
        // Calls start service in the order they arrive: those still in
        // service at `begin` are the workers busy past it.
        let service = if self.server.grows() {
            let inflight = 1 + self.free_at.iter().filter(|&&f| f > begin).count();
            service.mul_f64(self.server.slowdown(inflight))
        } else {
            service
        };
        let end = begin + service;
        self.free_at[i] = end;
        let duration = end - now;
        match timeout {
            Some(t) if duration > t => CallPlan {
                duration: t,
                result: CallResult::Timeout,
            },
            _ => CallPlan {
                duration,
                result: CallResult::Success,
            },
        }
    }
}

/// `[downstream] transport`: how real mode reaches the downstream (virtual
/// mode always simulates it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Transport {
    /// `"call"` (the default): a function call that sleeps for the latency.
    #[default]
    Call,
    /// `"http"`: an HTTP server on 127.0.0.1 in a process of its own applies
    /// the latency and the fault schedule; the workers call it through one
    /// HTTP client with a connection pool.
    Http(HttpConfig),
}

/// The HTTP client's pool: `[downstream]` keys with `transport = "http"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HttpConfig {
    /// `pool_max_idle`: idle connections kept to the server (8 by default).
    pub pool_max_idle: usize,
    /// `connect_timeout`: a connection not set up by then fails the call
    /// (1 s by default).
    pub connect_timeout: Duration,
    /// `pool_max`: the most connections the client has open to the server
    /// at once; a call that finds none free waits for one (its wait counts
    /// against the client's timeout). Unset: no bound (reqwest's own pool
    /// has none: it opens a connection whenever no idle one is free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_max: Option<usize>,
    /// `overhead`: what the HTTP hop itself costs a call (the client's
    /// request and the server's answer on loopback), on top of the
    /// downstream's latency; 0 by default. Virtual mode adds it to every
    /// call ([`Downstream::overhead`]); real mode ignores it, since its
    /// calls pay the hop for real.
    #[serde(default, skip_serializing_if = "Duration::is_zero")]
    pub overhead: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            pool_max_idle: 8,
            connect_timeout: Duration::from_secs(1),
            pool_max: None,
            overhead: Duration::ZERO,
        }
    }
}

/// How a call went through a [`Pool`]: its plan from the moment it asked
/// for a connection, and what the pool did to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolPlan {
    /// The call's plan, its duration counted from its start (the wait for
    /// a connection included).
    pub plan: CallPlan,
    /// How long it waited for a free connection (`pool_max` reached).
    pub waited: Duration,
    /// Its connect timed out (a `no_accept` fault): an error at the
    /// `connect_timeout` (a call whose client's timeout comes first, while
    /// it connects, is a timeout, as any).
    pub connect_failed: bool,
}

/// A replica's HTTP client pool in virtual time: at most `pool_max`
/// connections, each free from a time on, open or closed then (a call that
/// timed out, or whose connection the server reset, closes it). A call
/// takes an idle open connection if there is one, else opens one (at once
/// on loopback; a `no_accept` fault fails it at the `connect_timeout`),
/// else, with `pool_max` reached, waits for the first to be free (calls
/// wait in the order they come).
///
/// # Examples
///
/// ```
/// use fusebox_lab::scenario::{CallPlan, CallResult, Downstream, HttpConfig, Pool, Transport};
/// use std::time::Duration;
///
/// let ms = Duration::from_millis;
/// let config = HttpConfig { pool_max: Some(1), ..HttpConfig::default() };
/// let d = Downstream { latency: ms(10), tail: vec![], faults: vec![],
///                      transport: Transport::Http(config), server: None,
///                      latency_dist: None };
/// let mut pool = Pool::new(config);
/// let answer = |_at: Duration, _left: Option<Duration>| CallPlan {
///     duration: ms(10), result: CallResult::Success };
/// assert_eq!(pool.call(&d, 0, ms(0), Some(ms(100)), answer).plan.duration, ms(10));
/// // The one connection is busy to 10 ms: the next call waits 6 ms for it.
/// let second = pool.call(&d, 0, ms(4), Some(ms(100)), answer);
/// assert_eq!((second.waited, second.plan.duration), (ms(6), ms(16)));
/// ```
#[derive(Debug, Clone)]
pub struct Pool {
    max: Option<usize>,
    connect_timeout: Duration,
    /// Each connection: when it is next free, and whether it is open then.
    conns: Vec<(Duration, bool)>,
}

impl Pool {
    /// An empty pool with `config`'s bound and connect timeout.
    pub fn new(config: HttpConfig) -> Self {
        Pool {
            max: config.pool_max,
            connect_timeout: config.connect_timeout,
            conns: Vec::new(),
        }
    }

    /// A call of `replica` to `d` at `now` (calls come in time order),
    /// with the client's `timeout`: it gets a connection, then `answer(at,
    /// left)` plans it from the time `at` it reaches the server, with the
    /// client's timeout `left` then.
    pub fn call(
        &mut self,
        d: &Downstream,
        replica: usize,
        now: Duration,
        timeout: Option<Duration>,
        answer: impl FnOnce(Duration, Option<Duration>) -> CallPlan,
    ) -> PoolPlan {
        // Free at `now`: an open connection first, then a closed one (to
        // open again); else a new one while the bound allows; else the
        // first to be free (of those at once, an open one).
        let free = |&(at, _): &(Duration, bool)| at <= now;
        let slot = self
            .conns
            .iter()
            .position(|c| free(c) && c.1)
            .or_else(|| self.conns.iter().position(free));
        let slot = match slot {
            Some(i) => i,
            None if self.max.is_none_or(|m| self.conns.len() < m) => {
                self.conns.push((now, false));
                self.conns.len() - 1
            }
            None => self
                .conns
                .iter()
                .enumerate()
                .min_by_key(|(_, &(at, open))| (at, !open))
                .map(|(i, _)| i)
                .expect("a full pool has connections"),
        };
        let (begin, open) = self.conns[slot];
        let begin = begin.max(now);
        let waited = begin - now;
        let left = timeout.map(|t| t.saturating_sub(waited));
        if left.is_some_and(|l| l.is_zero()) {
            // The client gave up waiting: the connection stays as it was.
            return PoolPlan {
                plan: CallPlan {
                    duration: waited,
                    result: CallResult::Timeout,
                },
                waited,
                connect_failed: false,
            };
        }
        if !open && d.refuses_connections(replica, begin) {
            let (duration, result) = match left {
                Some(l) if l < self.connect_timeout => (l, CallResult::Timeout),
                _ => (self.connect_timeout, CallResult::Error),
            };
            self.conns[slot] = (begin + duration, false);
            return PoolPlan {
                plan: CallPlan {
                    duration: waited + duration,
                    result,
                },
                waited,
                connect_failed: result == CallResult::Error,
            };
        }
        let plan = answer(begin, left);
        let reset = d
            .fault_on(replica, begin)
            .is_some_and(|f| matches!(f.outcome, FaultOutcome::Reset | FaultOutcome::Down));
        let kept = plan.result != CallResult::Timeout && !reset;
        self.conns[slot] = (begin + plan.duration, kept);
        PoolPlan {
            plan: CallPlan {
                duration: waited + plan.duration,
                result: plan.result,
            },
            waited,
            connect_failed: false,
        }
    }
}

/// The draws of one call ([`Scenario::draw`](super::Scenario::draw)):
/// its latency if healthy, and the hash its fault's latency is drawn with
/// ([`Fault::latency_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDraw {
    /// What it takes outside a fault.
    pub healthy: Duration,
    /// What a fault's latency distribution draws it with.
    pub fault_key: u64,
}

impl CallDraw {
    /// A call taking `healthy` outside a fault, and a fault's median (or
    /// constant) latency in one: what a call without a seed's draws takes.
    pub fn fixed(healthy: Duration) -> CallDraw {
        CallDraw {
            healthy,
            fault_key: MEDIAN_KEY,
        }
    }
}

/// [`CallDraw::fixed`]'s fault key. Not the median exactly for every
/// distribution: only where no draw is made (a call of
/// [`Downstream::plan`], outside a scenario).
const MEDIAN_KEY: u64 = 0;

/// How one downstream call ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallResult {
    /// The downstream answered successfully.
    Success,
    /// The downstream answered with an error.
    Error,
    /// The client gave up at its timeout.
    Timeout,
    /// The dependency refused the call as overloaded, at once (a 503): a
    /// failed call, as an error is, but a drop to an adaptive limit.
    Overloaded,
}

impl CallResult {
    /// Success or not.
    pub fn is_ok(self) -> bool {
        self == CallResult::Success
    }
}

/// What a call starting at a given time will do: how long it occupies the worker, and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPlan {
    /// Time from the call's start to its end.
    pub duration: Duration,
    /// Its result.
    pub result: CallResult,
}

impl Downstream {
    /// The healthy latency of a call whose draw is `u` (uniform in
    /// `[0, 1)`): the tail entries take the draws below their shares, in
    /// order, and the rest take `latency`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Downstream, Tail, Transport};
    /// use std::time::Duration;
    ///
    /// let ms = Duration::from_millis;
    /// let d = Downstream {
    ///     latency: ms(10), latency_dist: None,
    ///     tail: vec![Tail { share: 0.01, latency: ms(1000) }],
    ///     faults: vec![], transport: Transport::Call, server: None,
    /// };
    /// assert_eq!(d.healthy(0.005), ms(1000));
    /// assert_eq!(d.healthy(0.5), ms(10));
    /// ```
    pub fn healthy(&self, u: f64) -> Duration {
        self.tail_at(u).unwrap_or(self.latency)
    }

    /// Its healthy latency as reports say it: `5ms`, or its distribution
    /// (`lognormal p50 5ms p99 40ms`).
    pub fn latency_text(&self) -> String {
        match &self.latency_dist {
            None => super::format_duration(self.latency),
            Some(d) => d.describe(),
        }
    }

    /// The latency of the tail entry the draw `u` falls in, if any (see
    /// [`healthy`](Self::healthy)).
    pub fn tail_at(&self, u: f64) -> Option<Duration> {
        let mut below = 0.0;
        for t in &self.tail {
            below += t.share;
            if u < below {
                return Some(t.latency);
            }
        }
        None
    }

    /// What virtual mode adds to every call for the HTTP hop: `[downstream]
    /// overhead` with `transport = "http"`, else zero ([`HttpConfig::overhead`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox_lab::scenario::{Downstream, HttpConfig, Transport};
    /// use std::time::Duration;
    ///
    /// let ms = Duration::from_millis;
    /// let config = HttpConfig { overhead: ms(2), ..HttpConfig::default() };
    /// let mut d = Downstream { latency: ms(5), latency_dist: None, tail: vec![],
    ///                          faults: vec![], transport: Transport::Http(config),
    ///                          server: None };
    /// assert_eq!(d.overhead(), ms(2));
    /// d.transport = Transport::Call;
    /// assert_eq!(d.overhead(), Duration::ZERO);
    /// ```
    pub fn overhead(&self) -> Duration {
        match self.transport {
            Transport::Http(c) => c.overhead,
            Transport::Call => Duration::ZERO,
        }
    }

    /// The fault active at `start`, if any (for replica 0: the only one
    /// outside fleet scenarios).
    pub fn fault_at(&self, start: Duration) -> Option<&Fault> {
        self.fault_on(0, start)
    }

    /// The fault active at `start` on the calls of `replica` (from 0), if
    /// any (of those that decide a call's fate: not `no_accept`, which
    /// decides a connection's, [`refuses_connections`](Self::refuses_connections)).
    pub fn fault_on(&self, replica: usize, start: Duration) -> Option<&Fault> {
        self.faults.iter().find(|f| {
            f.from <= start
                && start < f.until
                && f.hits(replica)
                && f.outcome != FaultOutcome::NoAccept
        })
    }

    /// Whether a `no_accept` fault refuses the new connections of
    /// `replica` (from 0) at `at`.
    pub fn refuses_connections(&self, replica: usize, at: Duration) -> bool {
        self.faults.iter().any(|f| {
            f.outcome == FaultOutcome::NoAccept && f.from <= at && at < f.until && f.hits(replica)
        })
    }

    /// What the dependency does with a call of `replica` (from 0) starting at
    /// `start`, whatever the client's timeout: answers after `Some(latency)`
    /// with the result, or never (`None`: it hangs). The model's plans and
    /// the HTTP downstream's answers both come from here.
    pub fn answer(&self, replica: usize, start: Duration) -> (Option<Duration>, CallResult) {
        self.answer_with(replica, start, CallDraw::fixed(self.latency))
    }

    /// [`answer`](Self::answer) for a call of the draws `draw`: what it
    /// takes outside a fault (its draw from the tail and the latency's
    /// distribution, [`healthy`](Self::healthy); a `slow` fault grows from
    /// `latency`), and the key its fault's latency is drawn with.
    pub fn answer_with(
        &self,
        replica: usize,
        start: Duration,
        draw: CallDraw,
    ) -> (Option<Duration>, CallResult) {
        let healthy = draw.healthy;
        match self.fault_on(replica, start) {
            None => (Some(healthy), CallResult::Success),
            Some(f) => match f.outcome {
                FaultOutcome::Error | FaultOutcome::Reset => {
                    (Some(f.latency_for(draw.fault_key)), CallResult::Error)
                }
                FaultOutcome::Hang => (None, CallResult::Timeout),
                FaultOutcome::Down => (Some(Duration::ZERO), CallResult::Error),
                FaultOutcome::Slow => (Some(f.grown(self.latency, start)), CallResult::Success),
                // A server's capacity: the server's queue applies it
                // ([`ServerQueue`]); the latency model has no workers.
                FaultOutcome::Capacity { .. } => (Some(healthy), CallResult::Success),
                // A connection's fault ([`Pool`]): never a call's.
                FaultOutcome::NoAccept => (Some(healthy), CallResult::Success),
            },
        }
    }

    /// The plan for a call starting at `start`, given the client's timeout
    /// (of replica 0: the only one outside fleet scenarios).
    ///
    /// A call that would take longer than `timeout` ends at the timeout as a
    /// [`CallResult::Timeout`]; one taking exactly `timeout` completes.
    pub fn plan(&self, start: Duration, timeout: Option<Duration>) -> CallPlan {
        self.plan_on(0, start, timeout)
    }

    /// [`plan`](Self::plan) for a call of `replica` (from 0).
    pub fn plan_on(&self, replica: usize, start: Duration, timeout: Option<Duration>) -> CallPlan {
        self.plan_with(replica, start, timeout, CallDraw::fixed(self.latency))
    }

    /// [`plan_on`](Self::plan_on) for a call of the draws `draw`
    /// ([`answer_with`](Self::answer_with)).
    pub fn plan_with(
        &self,
        replica: usize,
        start: Duration,
        timeout: Option<Duration>,
        draw: CallDraw,
    ) -> CallPlan {
        let (latency, result) = self.answer_with(replica, start, draw);
        match (latency, timeout) {
            (Some(l), Some(t)) if l > t => CallPlan {
                duration: t,
                result: CallResult::Timeout,
            },
            (Some(l), _) => CallPlan {
                duration: l,
                result,
            },
            (None, Some(t)) => CallPlan {
                duration: t,
                result: CallResult::Timeout,
            },
            // Validation requires a timeout for hanging faults; without one the
            // call would never end, so treat it as failing at once rather than
            // hanging the run.
            (None, None) => CallPlan {
                duration: Duration::ZERO,
                result: CallResult::Timeout,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn ds() -> Downstream {
        Downstream {
            server: None,
            transport: Transport::Call,
            latency: ms(5),
            latency_dist: None,
            tail: Vec::new(),
            faults: vec![
                Fault {
                    from: ms(500),
                    until: ms(1500),
                    latency: ms(150),
                    outcome: FaultOutcome::Error,
                    replicas: None,
                    latency_dist: None,
                },
                Fault {
                    from: ms(2000),
                    until: ms(2500),
                    latency: ms(0),
                    outcome: FaultOutcome::Hang,
                    replicas: None,
                    latency_dist: None,
                },
            ],
        }
    }

    #[test]
    fn a_server_has_its_quantiles_and_queues() {
        let server = Server {
            workers: 2,
            p90: ms(50),
            p99: ms(150),
            reject_after: None,
            latency_per_inflight: None,
            knee: None,
        };
        let mut times: Vec<Duration> = (0..20_000).map(|n| server.service(n)).collect();
        times.sort_unstable();
        let q = |p: usize| times[times.len() * p / 100].as_secs_f64() * 1e3;
        assert!((45.0..55.0).contains(&q(90)), "{}", q(90));
        assert!((130.0..170.0).contains(&q(99)), "{}", q(99));
        let mut queue = ServerQueue::new(server);
        let a = queue.plan(ms(0), None).duration;
        let b = queue.plan(ms(0), None).duration;
        let c = queue.plan(ms(0), None).duration;
        assert!(c > a.min(b), "the third call waited for a worker");
        assert_eq!(
            queue.plan(ms(0), Some(Duration::ZERO)).result,
            CallResult::Timeout
        );
    }

    #[test]
    fn a_link_slows_with_the_calls_in_service_and_a_full_server_refuses() {
        let link = Server {
            workers: 100,
            p90: ms(100),
            p99: ms(100),
            reject_after: None,
            latency_per_inflight: Some(1.0),
            knee: None,
        };
        let mut queue = ServerQueue::new(link);
        // Alone, then with one and two others in service.
        assert_eq!(queue.plan(ms(0), None).duration, ms(100));
        assert_eq!(queue.plan(ms(50), None).duration, ms(200));
        assert_eq!(queue.plan(ms(60), None).duration, ms(300));
        // The first has ended by then: two in service with it.
        assert_eq!(queue.plan(ms(150), None).duration, ms(300));
        let full = Server {
            workers: 1,
            reject_after: Some(Duration::ZERO),
            latency_per_inflight: None,
            ..link
        };
        let mut queue = ServerQueue::new(full);
        assert_eq!(queue.plan(ms(0), None).result, CallResult::Success);
        let refused = queue.plan(ms(10), None);
        assert_eq!(
            (refused.duration, refused.result),
            (ms(1), CallResult::Overloaded)
        );
        assert!(!refused.result.is_ok());
    }

    #[test]
    fn a_capacity_fault_leaves_the_server_fewer_workers_for_a_while() {
        let server = Server {
            workers: 2,
            p90: ms(100),
            p99: ms(100),
            reject_after: None,
            latency_per_inflight: None,
            knee: None,
        };
        let fault = |workers| Fault {
            from: ms(50),
            until: ms(1000),
            latency: Duration::ZERO,
            outcome: FaultOutcome::Capacity { workers },
            replicas: None,
            latency_dist: None,
        };
        let mut queue = ServerQueue::with_faults(server, &[fault(1)]);
        // Both workers take a call before the fault; the second finishes
        // its call in the fault, then waits for its end.
        assert_eq!(queue.plan(ms(0), None).duration, ms(100));
        assert_eq!(queue.plan(ms(0), None).duration, ms(100));
        // In the fault: one worker, calls one after the other.
        assert_eq!(queue.plan(ms(100), None).duration, ms(100));
        assert_eq!(queue.plan(ms(100), None).duration, ms(200));
        // A call that would wait past the fault's end gets the second
        // worker back at the end.
        let mut late = ServerQueue::with_faults(server, &[fault(1)]);
        for _ in 0..10 {
            late.plan(ms(60), None);
        }
        // Worker 0 is busy to 1.06 s; worker 1 is back at 1 s.
        assert_eq!(late.plan(ms(60), None).duration, ms(1040));
        // No worker at all: every call waits for the end; a server that
        // refuses long waits refuses them.
        let mut none = ServerQueue::with_faults(server, &[fault(0)]);
        assert_eq!(none.plan(ms(100), None).duration, ms(1000));
        let refusing = Server {
            reject_after: Some(ms(500)),
            ..server
        };
        let mut none = ServerQueue::with_faults(refusing, &[fault(0)]);
        assert_eq!(none.plan(ms(100), None).result, CallResult::Overloaded);
        assert_eq!(none.plan(ms(600), None).result, CallResult::Success);
        // Without capacity faults, as a server without faults.
        let mut plain = ServerQueue::with_faults(server, &ds().faults);
        let mut other = ServerQueue::new(server);
        for t in 0..20 {
            assert_eq!(plain.plan(ms(10 * t), None), other.plan(ms(10 * t), None));
        }
    }

    #[test]
    fn outcome_is_decided_by_start_time() {
        let d = ds();
        assert_eq!(d.plan(ms(499), None).result, CallResult::Success);
        assert_eq!(
            d.plan(ms(500), None),
            CallPlan {
                duration: ms(150),
                result: CallResult::Error
            }
        );
        assert_eq!(d.plan(ms(1499), None).result, CallResult::Error);
        assert_eq!(
            d.plan(ms(1500), None),
            CallPlan {
                duration: ms(5),
                result: CallResult::Success
            }
        );
    }

    #[test]
    fn a_slow_fault_grows_and_a_reset_fails_after_its_latency() {
        let mut d = ds();
        d.faults[0].outcome = FaultOutcome::Slow;
        let plan = |at| d.plan(ms(at), Some(ms(100)));
        // 5 ms at 0.5 s, growing by 145 ms over the second: 77.5 ms halfway.
        assert_eq!(
            plan(500),
            CallPlan {
                duration: ms(5),
                result: CallResult::Success
            }
        );
        assert_eq!(
            plan(1000),
            CallPlan {
                duration: Duration::from_micros(77_500),
                result: CallResult::Success
            }
        );
        // Past 100 ms (from 0.5 + 95/145 s on) the client's timeout cuts it.
        assert_eq!(
            plan(1200),
            CallPlan {
                duration: ms(100),
                result: CallResult::Timeout
            }
        );
        assert_eq!(plan(1500).duration, ms(5));
        d.faults[0].outcome = FaultOutcome::Reset;
        assert_eq!(
            d.plan(ms(700), None),
            CallPlan {
                duration: ms(150),
                result: CallResult::Error
            }
        );
    }

    #[test]
    fn timeout_cuts_slow_and_hanging_calls() {
        let d = ds();
        assert_eq!(
            d.plan(ms(600), Some(ms(100))),
            CallPlan {
                duration: ms(100),
                result: CallResult::Timeout
            }
        );
        assert_eq!(d.plan(ms(600), Some(ms(150))).result, CallResult::Error);
        assert_eq!(
            d.plan(ms(2100), Some(ms(1000))),
            CallPlan {
                duration: ms(1000),
                result: CallResult::Timeout
            }
        );
        assert_eq!(d.plan(ms(0), Some(ms(1))).result, CallResult::Timeout);
    }
}

//! The standard stack: [`Standard`] and its builder.

#[cfg(feature = "reqwest")]
use super::BoxError;
use super::{
    Classifier, HttpError, HttpResponse, InvalidStandard, RetryPolicy, TransportError,
    UnknownDependency,
};
use crate::fallback::FallbackFn;
use crate::hedge::{Delay, Hedge};
use crate::pipeline::{Pipeline, PipelineError};
use crate::registry::Fusebox;
use crate::retry::{DefaultBackoff, Retry, RetryBudget, RetryIf};
use crate::stats::PolicyStats;
use crate::timeout::Elapsed;
use crate::{BreakerSet, Bulkhead, CircuitBreaker};
use ::http::Method;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What stopped a call through the [`Standard`] stack: a policy, or the
/// [`HttpError`] of the last attempt. `R` is the client's response type.
///
/// # Examples
///
/// ```
/// use fusebox::http::StandardError;
/// let e: StandardError<http::Response<()>> = fusebox::PipelineError::TimedOut(fusebox::Elapsed::new(std::time::Duration::from_secs(1)));
/// assert_eq!(e.stopped_by(), "timeout");
/// ```
pub type StandardError<R> = PipelineError<HttpError<R>>;

/// The standard HTTP stack for one dependency; see the [module docs](crate::http)
/// for its layers and defaults.
///
/// One type whatever the client: store it in a struct or axum state as is.
/// Cheap to clone (clones share the breaker, bulkhead, budget and counters).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use fusebox::http::Standard;
/// use http::{Method, Response};
///
/// let stack = Standard::builder("inventory").build();
/// let mut n = 0;
/// let r = stack
///     .run(&Method::GET, || {
///         n += 1;
///         let status = if n < 2 { 503 } else { 200 };
///         async move { Ok::<_, fusebox::http::BoxError>(Response::builder().status(status).body(()).unwrap()) }
///     })
///     .await;
/// assert_eq!(r.unwrap().status(), 200);
/// assert_eq!(n, 2);
/// # }
/// ```
#[derive(Clone)]
pub struct Standard {
    inner: Arc<StandardInner>,
}

/// How one request may be retried.
#[derive(Clone, Copy)]
enum Mode {
    /// As the [`RetryPolicy`] says (an idempotent method).
    Retry,
    /// Only after a refused connection: the request never left (another method).
    ConnectOnly,
    /// Never: the request cannot be sent twice (a streamed body).
    #[cfg_attr(not(feature = "reqwest"), allow(dead_code))]
    Single,
}

/// The retry predicate of requests that must not run twice: only a refused
/// connection is retried.
#[derive(Debug, Clone, Copy)]
struct ConnectOnly;

impl<R: HttpResponse> RetryIf<HttpError<R>> for ConnectOnly {
    fn retry_if(&self, error: &HttpError<R>) -> bool {
        error.is_connect()
    }
}

struct StandardInner {
    name: Box<str>,
    breaker: CircuitBreaker,
    /// One breaker per authority (or user key), when the stack has them.
    breakers: Option<BreakerSet<String>>,
    bulkhead: Bulkhead,
    retry: Retry<DefaultBackoff, RetryPolicy>,
    attempt: Duration,
    /// The policies above, in the pipeline's order, for idempotent requests.
    pipeline: Pipeline<DefaultBackoff, RetryPolicy>,
    /// The same layers for non-idempotent requests: retried only when the
    /// connection was refused, never after a timeout.
    sent_once: Pipeline<DefaultBackoff, ConnectOnly>,
    total: Duration,
    classifier: Classifier,
    retry_policy: RetryPolicy,
    stats: PolicyStats,
}

/// Builds a [`Standard`] stack; from [`Standard::builder`] (the defaults) or
/// [`Standard::from_registry`] (a registry entry). Every knob overrides.
///
/// # Default
///
/// See the table in the [module docs](crate::http).
///
/// # Examples
///
/// ```
/// use fusebox::http::{Classifier, Standard};
/// use std::time::Duration;
/// let stack = Standard::builder("search")
///     .total_timeout(Duration::from_secs(3))
///     .attempt_timeout(Duration::from_millis(500))
///     .classifier(Classifier::new().failure(http::StatusCode::CONFLICT))
///     .build();
/// assert_eq!(stack.total_timeout(), Duration::from_secs(3));
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct StandardBuilder {
    name: String,
    total: Duration,
    attempt: Duration,
    retry: Option<Retry>,
    breaker: Option<CircuitBreaker>,
    breakers: Option<BreakerSet<String>>,
    hedge: Option<Hedging>,
    bulkhead: Option<Bulkhead>,
    /// The optional stages (rate limiter, adaptive limit, throttle), each
    /// placed at its place in the pipeline's order.
    stages: Vec<crate::pipeline::Stage>,
    classifier: Classifier,
    retry_policy: RetryPolicy,
    stats: Option<PolicyStats>,
}

/// The hedge a builder was given, or the preset's (made at `build`, on the
/// retry's budget).
enum Hedging {
    Given(Hedge),
    Preset,
}

impl fmt::Debug for StandardBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StandardBuilder")
            .field("name", &self.name)
            .field("total", &self.total)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

/// The default total timeout.
///
/// # Examples
///
/// ```
/// let s = fusebox::http::Standard::builder("x").build();
/// assert_eq!(s.total_timeout(), fusebox::http::DEFAULT_TOTAL_TIMEOUT);
/// ```
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(10);
/// The default per-attempt timeout.
///
/// # Examples
///
/// ```
/// let s = fusebox::http::Standard::builder("x").build();
/// assert_eq!(s.attempt_timeout(), fusebox::http::DEFAULT_ATTEMPT_TIMEOUT);
/// ```
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
/// The default bulkhead limit.
///
/// # Examples
///
/// ```
/// let s = fusebox::http::Standard::builder("x").build();
/// assert_eq!(s.bulkhead().limit(), fusebox::http::DEFAULT_MAX_CONCURRENT);
/// ```
pub const DEFAULT_MAX_CONCURRENT: usize = 64;

fn default_retry() -> Retry {
    let budget = RetryBudget::builder()
        .ratio(0.2)
        .min_per_second(10)
        .build()
        .unwrap_or_else(|_| unreachable!("constant budget settings are valid"));
    Retry::builder()
        .budget(budget)
        .build()
        .unwrap_or_else(|_| unreachable!("3 attempts is valid"))
}

/// [`Standard::hedging`]'s hedge: the 95th percentile after 100 answers, one
/// extra attempt, on the retry's budget.
fn preset_hedge(budget: Option<&RetryBudget>) -> Hedge {
    let b = Hedge::builder()
        .delay(Delay::Quantile(0.95))
        .max_extra(1)
        .min_samples(100);
    let b = match budget {
        Some(budget) => b.shared_budget(budget.clone()),
        None => b,
    };
    b.build()
        .unwrap_or_else(|_| unreachable!("constant hedge settings are valid"))
}

fn default_breaker(name: &str) -> CircuitBreaker {
    CircuitBreaker::builder()
        .name(name)
        .failure_rate(0.5)
        .count_window(20)
        .min_calls(10)
        .open_for(Duration::from_secs(5))
        .build()
        .unwrap_or_else(|_| unreachable!("constant breaker settings are valid"))
}

impl Standard {
    /// A builder with the defaults, for the dependency `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.name(), "inventory");
    /// ```
    pub fn builder(name: impl Into<String>) -> StandardBuilder {
        StandardBuilder {
            name: name.into(),
            total: DEFAULT_TOTAL_TIMEOUT,
            attempt: DEFAULT_ATTEMPT_TIMEOUT,
            retry: None,
            breaker: None,
            breakers: None,
            hedge: None,
            bulkhead: None,
            stages: Vec::new(),
            classifier: Classifier::new(),
            retry_policy: RetryPolicy::new(),
            stats: None,
        }
    }

    /// A builder with the defaults and **hedging**, for a dependency whose
    /// tail latency matters: an idempotent request not answered after the
    /// 95th percentile of recent answers' latency (once 100 answers are in)
    /// is sent once more, the first answer wins and the other attempt is
    /// dropped (its breaker permit and bulkhead slot released without a
    /// verdict). Extra attempts spend from the retry's budget, so hedges and
    /// retries together stay within 20 % of the calls; a spent budget stops
    /// new hedges and cancels none in flight. The shape:
    ///
    /// ```text
    /// total timeout( retry( hedge( breaker( bulkhead( attempt timeout( request ) ) ) ) ) )
    /// ```
    ///
    /// Replace the hedge with [`StandardBuilder::hedge`]; the retry with
    /// [`StandardBuilder::retry`] (the preset's hedge then spends from that
    /// retry's budget; a retry without a budget leaves the hedges
    /// unbudgeted too).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::hedging("search").build();
    /// let hedge = s.hedge().unwrap();
    /// assert_eq!(hedge.delay(), fusebox::hedge::Delay::Quantile(0.95));
    /// assert!(hedge.budget().is_some());
    /// ```
    pub fn hedging(name: impl Into<String>) -> StandardBuilder {
        let mut b = Standard::builder(name);
        b.hedge = Some(Hedging::Preset);
        b
    }

    /// A builder from the registry's dependency `name` (its
    /// `[dependencies.NAME]` table, through [`Fusebox::pipeline`]): the
    /// registry's breaker and bulkhead (live: reconfigured in place), the
    /// entry's timeout and retry; what the entry leaves out takes the
    /// stack's defaults. The breaker and bulkhead are registered under
    /// `name`, so the registry's observers (metrics, tracing) see them.
    ///
    /// A name the registry does not know builds on the defaults (and adds
    /// a breaker of that name to the registry), so a misspelt name goes
    /// unnoticed: [`try_from_registry`](Self::try_from_registry) refuses it.
    ///
    /// # Reload
    ///
    /// **The timeout and retry are read once, here.** After
    /// [`Fusebox::reload`] the stack's breaker, bulkhead and rate limiter
    /// follow the new file (they are the registry's live policies), but its
    /// attempt timeout and retry stay as they were: build the stack again
    /// from the registry to take the new ones.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use fusebox::registry::Fusebox;
    /// let fusebox = Fusebox::new();
    /// let s = Standard::from_registry(&fusebox, "inventory").build();
    /// fusebox.force_open("inventory")?;
    /// assert_eq!(s.breaker().state(), fusebox::State::ForcedOpen);
    /// # Ok::<(), fusebox::registry::UnknownBreaker>(())
    /// ```
    pub fn from_registry(fusebox: &Fusebox, name: &str) -> StandardBuilder {
        Self::registry_builder(fusebox, name)
    }

    /// As [`from_registry`](Self::from_registry), for a dependency the
    /// registry knows only: one its configuration names (a
    /// `[dependencies.NAME]`, `[breakers.NAME]` or `[bulkheads.NAME]`
    /// table), or a policy the program has already asked it for.
    ///
    /// # Errors
    ///
    /// [`UnknownDependency`]: the name, the registry's names, and the
    /// closest of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use fusebox::registry::{Fusebox, FuseboxConfig};
    /// let fusebox = Fusebox::from_config(FuseboxConfig::from_toml(r#"
    ///     [dependencies.pricing]
    ///     timeout = "300ms"
    /// "#)?)?;
    /// let pricing = Standard::try_from_registry(&fusebox, "pricing")?.try_build()?;
    /// assert_eq!(pricing.attempt_timeout(), std::time::Duration::from_millis(300));
    /// let typo = Standard::try_from_registry(&fusebox, "pricng").unwrap_err();
    /// assert_eq!(typo.suggestion(), Some("pricing"));
    /// assert!(fusebox.get("pricng").is_none()); // nothing was added
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_from_registry(
        fusebox: &Fusebox,
        name: &str,
    ) -> Result<StandardBuilder, UnknownDependency> {
        if fusebox.get(name).is_some() {
            return Ok(Self::registry_builder(fusebox, name));
        }
        // Every name the registry has a policy for (a bulkhead or rate
        // limiter of its own counts).
        let mut known = fusebox.names();
        known.extend(fusebox.policies().into_iter().map(|p| p.name));
        known.sort();
        known.dedup();
        if known.iter().any(|k| k == name) {
            return Ok(Self::registry_builder(fusebox, name));
        }
        Err(UnknownDependency {
            name: name.to_owned(),
            known,
        })
    }

    fn registry_builder(fusebox: &Fusebox, name: &str) -> StandardBuilder {
        let p = fusebox.pipeline(name);
        let mut b = Standard::builder(name);
        b.breaker = p.breaker().cloned();
        b.bulkhead = Some(
            p.bulkhead()
                .cloned()
                .unwrap_or_else(|| fusebox.bulkhead(name)),
        );
        if let Some(t) = p.timeout() {
            b.attempt = t;
        }
        b.retry = p.retry().cloned();
        #[cfg(feature = "ratelimit")]
        {
            if let Some(limiter) = p.rate_limiter() {
                b = b.rate_limiter(limiter.clone());
            }
        }
        b
    }

    /// The dependency's name.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.name(), "inventory");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.breaker().state(), fusebox::State::Closed);
    /// ```
    pub fn breaker(&self) -> &CircuitBreaker {
        &self.inner.breaker
    }

    /// The hedge of idempotent requests, if the stack hedges (see
    /// [`Standard::hedging`]).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::http::Standard::builder("inventory").build().hedge().is_none());
    /// ```
    pub fn hedge(&self) -> Option<&Hedge> {
        self.inner.pipeline.hedge()
    }

    /// The breakers per authority, if the stack has them (see
    /// [`StandardBuilder::per_authority`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert!(s.breakers().is_none());
    /// ```
    pub fn breakers(&self) -> Option<&BreakerSet<String>> {
        self.inner.breakers.as_ref()
    }

    /// The bulkhead.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.bulkhead().limit(), 64);
    /// ```
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.inner.bulkhead
    }

    /// The rate limiter, if the stack has one (feature `ratelimit`).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert!(s.rate_limiter().is_none());
    /// ```
    #[cfg(feature = "ratelimit")]
    pub fn rate_limiter(&self) -> Option<&crate::ratelimit::RateLimiter> {
        self.inner.pipeline.rate_limiter()
    }

    /// The policies between the retry and the attempt timeout, outermost
    /// first: the breaker, the rate limiter if any, the bulkhead.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// let kinds: Vec<_> = s.stages().iter().map(|s| s.kind()).collect();
    /// assert_eq!(kinds, ["breaker", "bulkhead"]);
    /// ```
    pub fn stages(&self) -> &[crate::pipeline::Stage] {
        self.inner.pipeline.stages()
    }

    /// The retry policy (attempts, backoff, budget).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.retry().max_attempts(), 3);
    /// assert!(s.retry().budget().is_some());
    /// ```
    pub fn retry(&self) -> &Retry<DefaultBackoff, RetryPolicy> {
        &self.inner.retry
    }

    /// The deadline of one attempt.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.attempt_timeout(), std::time::Duration::from_secs(2));
    /// ```
    pub fn attempt_timeout(&self) -> Duration {
        self.inner.attempt
    }

    /// The deadline of the whole call, retries and waits included.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.total_timeout(), std::time::Duration::from_secs(10));
    /// ```
    pub fn total_timeout(&self) -> Duration {
        self.inner.total
    }

    /// The counters of this stack (export them with
    /// `fusebox::metrics::Metrics::track_stats`).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.stats().snapshot().calls, 0);
    /// ```
    pub fn stats(&self) -> &PolicyStats {
        &self.inner.stats
    }

    /// The classifier.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert!(s.classifier().is_failure(http::StatusCode::BAD_GATEWAY));
    /// ```
    pub fn classifier(&self) -> &Classifier {
        &self.inner.classifier
    }

    /// Runs one request through the stack: `attempt` sends it once (it is
    /// called again for each retry). A request whose method the
    /// [`RetryPolicy`] does not retry is tried again only when its
    /// connection was refused (the request never left), never after a
    /// timeout or an answer.
    ///
    /// The policies cover what `attempt`'s future does, and the breaker's
    /// verdict is given when it ends: read the body inside it and return
    /// the fully read response (e.g. `http::Response<Bytes>`) to put the
    /// body under the timeouts, the bulkhead and the breaker. A response
    /// whose body is still a stream is covered up to its headers only.
    ///
    /// # Errors
    ///
    /// [`StandardError`]: the breaker or bulkhead refused, a timeout (an
    /// attempt's or the total), or the last attempt's [`HttpError`] (a
    /// failing status, the response inside, or no response).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the attempt in progress; its bulkhead slot
    /// and breaker permit are released without a verdict.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use fusebox::http::{BoxError, Standard};
    /// let s = Standard::builder("inventory").build();
    /// let r = s
    ///     .run(&http::Method::GET, || async { Err::<http::Response<()>, BoxError>("reset".into()) })
    ///     .await;
    /// assert_eq!(s.stats().snapshot().attempts, 3); // retried: GET is idempotent
    /// assert!(r.is_err());
    /// # }
    /// ```
    pub async fn run<R, E, F, Fut>(
        &self,
        method: &Method,
        attempt: F,
    ) -> Result<R, StandardError<R>>
    where
        R: HttpResponse,
        E: TransportError,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
    {
        self.run_as(None, self.mode_of(method), attempt).await
    }

    /// As [`run`](Self::run), for the endpoint `key`: with
    /// [`per_authority`](StandardBuilder::per_authority), the attempts pass
    /// `key`'s own breaker instead of the stack's (without it, the stack's
    /// breaker, as `run`). `key` is an authority as [`authority`](super::authority)
    /// writes it (`"https://api.example.com:443"`) or any key of your own
    /// (a replica's name, a tenant).
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), fusebox::ConfigError> {
    /// use fusebox::http::{BoxError, Standard};
    /// use fusebox::{BreakerSet, CircuitBreaker, State};
    /// let hosts = BreakerSet::builder(CircuitBreaker::builder().consecutive_failures(1)).build()?;
    /// let s = Standard::builder("replicas").per_authority(hosts).build();
    /// let down = || async { Err::<http::Response<()>, BoxError>("reset".into()) };
    /// let _ = s.run_for("replica-2", &http::Method::GET, down).await;
    /// let breakers = s.breakers().unwrap();
    /// assert_eq!(breakers.get("replica-2").state(), State::Open);
    /// assert_eq!(breakers.get("replica-1").state(), State::Closed);
    /// assert_eq!(s.breaker().state(), State::Closed); // the stack's own breaker saw nothing
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_for<R, E, F, Fut>(
        &self,
        key: &str,
        method: &Method,
        attempt: F,
    ) -> Result<R, StandardError<R>>
    where
        R: HttpResponse,
        E: TransportError,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
    {
        self.run_as(Some(key), self.mode_of(method), attempt).await
    }

    /// [`run_for`](Self::run_for) with `uri`'s authority as the key when
    /// the stack has breakers per authority and `uri` has one; `run`
    /// otherwise (the tower layers' way in).
    #[cfg(feature = "tower")]
    pub(crate) async fn run_to<R, E, F, Fut>(
        &self,
        uri: &::http::Uri,
        method: &Method,
        attempt: F,
    ) -> Result<R, StandardError<R>>
    where
        R: HttpResponse,
        E: TransportError,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
    {
        let key = self
            .inner
            .breakers
            .as_ref()
            .and_then(|_| super::authority(uri));
        self.run_as(key.as_deref(), self.mode_of(method), attempt)
            .await
    }

    /// How a request of `method` may be retried.
    fn mode_of(&self, method: &Method) -> Mode {
        if self.inner.retry_policy.retries_method(method) {
            Mode::Retry
        } else {
            Mode::ConnectOnly
        }
    }

    async fn run_as<R, E, F, Fut>(
        &self,
        key: Option<&str>,
        mode: Mode,
        mut attempt: F,
    ) -> Result<R, StandardError<R>>
    where
        R: HttpResponse,
        E: TransportError,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
    {
        let classifier = self.inner.classifier;
        self.run_attempts(key, mode, || {
            let fut = attempt();
            async move {
                match fut.await {
                    Ok(r) if classifier.is_failure(r.status()) => Err(HttpError::from_response(r)),
                    Ok(r) => Ok(r),
                    Err(e) => Err(HttpError::transport(e)),
                }
            }
        })
        .await
    }

    /// The stack around `once`, one classified attempt: everything `once`'s
    /// future does (sending, reading the body, decoding) is inside the
    /// attempt timeout, the bulkhead slot and the breaker's permit, and its
    /// result is the breaker's verdict. With breakers per authority and a
    /// `key`, the key's breaker stands where the stack's would.
    async fn run_attempts<T, R, F, Fut>(
        &self,
        key: Option<&str>,
        mode: Mode,
        mut once: F,
    ) -> Result<T, StandardError<R>>
    where
        R: HttpResponse,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, HttpError<R>>>,
    {
        let inner = &*self.inner;
        let keyed = key.and_then(|k| Some(inner.breakers.as_ref()?.get(k)));
        #[cfg(feature = "tracing")]
        let span = crate::trace::call_span(&inner.name);
        let call = async {
            match mode {
                Mode::Retry => through(&inner.pipeline, keyed).call_async(&mut once).await,
                Mode::ConnectOnly => through(&inner.sent_once, keyed).call_async(&mut once).await,
                Mode::Single => through(&inner.pipeline, keyed).run_async(once()).await,
            }
        };
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(call, span.clone());
        let result = match tokio::time::timeout(inner.total, call).await {
            Ok(r) => r,
            Err(_) => {
                inner.stats.timeout();
                Err(PipelineError::TimedOut(Elapsed::new(inner.total)))
            }
        };
        #[cfg(feature = "tracing")]
        crate::trace::record_call(
            &span,
            &result
                .as_ref()
                .map(|_| ())
                .map_err(crate::policy::PolicyError::cause),
        );
        result
    }

    /// Answers a failed call with `fallback` (the one fallback shape: a
    /// [`Cause`](crate::Cause) in, `Some(value)` or `None` out), counting the answer in
    /// this stack's fallbacks by cause.
    ///
    /// # Errors
    ///
    /// The call's error when the fallback returns `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{HttpError, Standard, StandardError};
    /// use fusebox::Cause;
    /// type Resp = http::Response<()>;
    /// let stack = Standard::builder("inventory").build();
    /// stack.breaker().force_open();
    /// let failed: Result<String, StandardError<Resp>> =
    ///     Err(fusebox::PipelineError::Rejected(stack.breaker().try_acquire().unwrap_err()));
    /// let r = stack.recover(failed, |why: Cause<'_, HttpError<Resp>>| Some(format!("unknown ({why})")));
    /// assert_eq!(r.unwrap(), "unknown (rejected by breaker)");
    /// assert_eq!(stack.stats().snapshot().fallbacks[0], 1);
    /// ```
    pub fn recover<T, R, F>(
        &self,
        result: Result<T, StandardError<R>>,
        fallback: F,
    ) -> Result<T, StandardError<R>>
    where
        F: FallbackFn<HttpError<R>, T>,
    {
        result.or_else(|e| crate::pipeline::answer(&fallback, Some(&self.inner.stats), e))
    }
}

#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
impl Standard {
    /// Sends a reqwest request through the stack and returns once the
    /// response's **headers** have arrived (feature `reqwest`).
    ///
    /// The policies cover the attempt up to the headers only: reading the
    /// body afterwards (`response.text()`, `response.bytes()`) runs outside
    /// the timeouts and the bulkhead, and the breaker has already counted
    /// the call as a success. A dependency that answers `200 OK` and then
    /// stalls its body holds the caller as long as reqwest lets it. Prefer
    /// [`send_bytes`](Self::send_bytes) (or `send_json`, feature `json`),
    /// which read the body inside the attempt; use `send` for a body you
    /// stream yourself, with your own deadline.
    ///
    /// Each attempt sends a copy
    /// ([`RequestBuilder::try_clone`](reqwest::RequestBuilder::try_clone));
    /// a request whose body cannot be copied (a stream) is sent once.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() {
    /// let client = reqwest::Client::new();
    /// let inventory = fusebox::http::Standard::builder("inventory").build();
    /// let r = inventory.send(client.get("http://127.0.0.1:9/stock/42")).await;
    /// # }
    /// ```
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, StandardError<reqwest::Response>> {
        let classifier = self.inner.classifier;
        self.send_with(request, move |r: reqwest::Response| {
            std::future::ready(if classifier.is_failure(r.status()) {
                Err(HttpError::from_response(r))
            } else {
                Ok(r)
            })
        })
        .await
    }

    /// Sends a reqwest request through the stack and reads the **whole
    /// response** inside each attempt (feature `reqwest`): the attempt
    /// timeout, the total timeout, the bulkhead slot and the breaker's
    /// permit cover the body to its last byte, and the breaker's verdict is
    /// given when the body is complete. A body that stalls is the attempt's
    /// timeout; a body that breaks off (a reset, fewer bytes than
    /// `content-length`) is a transport error; both are failures, retried
    /// as the [`RetryPolicy`] says.
    ///
    /// The body of a failing status is read too (bounded by the same
    /// deadlines), so the error's [`response`](HttpError::response) carries
    /// it. The body is [`Bytes`](super::Bytes); `into_parts()` splits the
    /// response into its head and body. Retries as [`send`](Self::send).
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = reqwest::Client::new();
    /// let inventory = fusebox::http::Standard::builder("inventory").build();
    /// let response = inventory.send_bytes(client.get("http://127.0.0.1:9/stock/42")).await?;
    /// let (parts, body) = response.into_parts();
    /// println!("{}: {} bytes", parts.status, body.len());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn send_bytes(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<::http::Response<super::Bytes>, StandardError<::http::Response<super::Bytes>>> {
        let classifier = self.inner.classifier;
        self.send_with(request, move |r: reqwest::Response| async move {
            let full = read_full(r).await.map_err(HttpError::transport)?;
            if classifier.is_failure(full.status()) {
                Err(HttpError::from_response(full))
            } else {
                Ok(full)
            }
        })
        .await
    }

    /// As [`send_bytes`](Self::send_bytes), then decodes the body as JSON
    /// into `T`, inside the attempt (feature `json`). A body that does not
    /// decode is a failure for the breaker and is not retried (the answer
    /// would be the same): the error's
    /// [`is_invalid_body`](HttpError::is_invalid_body) is true and its
    /// response carries the body.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run), and an invalid body.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
    /// #[derive(serde::Deserialize)]
    /// struct Stock {
    ///     available: u32,
    /// }
    /// let client = reqwest::Client::new();
    /// let inventory = fusebox::http::Standard::builder("inventory").build();
    /// let stock: Stock = inventory.send_json(client.get("http://127.0.0.1:9/stock/42")).await?;
    /// println!("{} available", stock.available);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "json")]
    #[cfg_attr(docsrs, doc(cfg(feature = "json")))]
    pub async fn send_json<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, StandardError<::http::Response<super::Bytes>>> {
        let classifier = self.inner.classifier;
        self.send_with(request, move |r: reqwest::Response| async move {
            let full = read_full(r).await.map_err(HttpError::transport)?;
            if classifier.is_failure(full.status()) {
                return Err(HttpError::from_response(full));
            }
            match serde_json::from_slice::<T>(full.body()) {
                Ok(value) => Ok(value),
                Err(e) => Err(HttpError::invalid_body(full, e)),
            }
        })
        .await
    }

    /// Sends `request` through the stack; `finish` turns each attempt's
    /// response into its result inside the attempt.
    async fn send_with<T, R, F, Fut>(
        &self,
        request: reqwest::RequestBuilder,
        finish: F,
    ) -> Result<T, StandardError<R>>
    where
        R: HttpResponse,
        F: Fn(reqwest::Response) -> Fut + Clone,
        Fut: Future<Output = Result<T, HttpError<R>>>,
    {
        let (client, request) = request.build_split();
        let request = match request {
            Ok(r) => r,
            Err(e) => return Err(PipelineError::Failed(HttpError::transport(e))),
        };
        let mode = match request.try_clone() {
            Some(_) => self.mode_of(request.method()),
            None => Mode::Single, // a streamed body: it can be sent once
        };
        let key = self.inner.breakers.as_ref().and_then(|_| {
            let url = request.url();
            Some(super::authority_parts(
                url.scheme(),
                url.host_str()?,
                url.port_or_known_default(),
            ))
        });
        let mut first = Some(request);
        self.run_attempts(key.as_deref(), mode, || {
            // A copy per attempt while the request can be copied; the
            // original for the one attempt of a streamed body.
            let next = match first.as_ref().and_then(reqwest::Request::try_clone) {
                Some(copy) => Some(copy),
                None => first.take(),
            };
            let client = client.clone();
            let finish = finish.clone();
            async move {
                let Some(request) = next else {
                    // Not reached: a request that cannot be copied has one attempt.
                    return Err(HttpError::transport(BoxError::from(
                        "the request's body cannot be sent twice",
                    )));
                };
                match client.execute(request).await {
                    Ok(response) => finish(response).await,
                    Err(e) => Err(HttpError::transport(e)),
                }
            }
        })
        .await
    }
}

/// `pipeline`, or a copy with `breaker` in its breaker's place (a pipeline
/// is a few handles: the copy costs an allocation, next to an HTTP request).
fn through<P: Clone>(
    pipeline: &Pipeline<DefaultBackoff, P>,
    breaker: Option<CircuitBreaker>,
) -> Cow<'_, Pipeline<DefaultBackoff, P>> {
    match breaker {
        None => Cow::Borrowed(pipeline),
        Some(b) => Cow::Owned(pipeline.clone().into_builder().breaker(b).build()),
    }
}

/// Reads `response` to the end of its body.
#[cfg(feature = "reqwest")]
async fn read_full(
    response: reqwest::Response,
) -> Result<::http::Response<super::Bytes>, reqwest::Error> {
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let body = response.bytes().await?;
    let mut full = ::http::Response::new(body);
    *full.status_mut() = status;
    *full.version_mut() = version;
    *full.headers_mut() = headers;
    Ok(full)
}

impl StandardBuilder {
    /// The deadline of the whole call, retries and waits included (default
    /// 10 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use std::time::Duration;
    /// let s = Standard::builder("x").total_timeout(Duration::from_secs(1)).build();
    /// assert_eq!(s.total_timeout(), Duration::from_secs(1));
    /// ```
    pub fn total_timeout(mut self, total: Duration) -> Self {
        self.total = total;
        self
    }

    /// The deadline of one attempt (default 2 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use std::time::Duration;
    /// let s = Standard::builder("x").attempt_timeout(Duration::from_millis(250)).build();
    /// assert_eq!(s.attempt_timeout(), Duration::from_millis(250));
    /// ```
    pub fn attempt_timeout(mut self, attempt: Duration) -> Self {
        self.attempt = attempt;
        self
    }

    /// The retry's attempts, backoff and budget (its predicate is replaced
    /// by the [`RetryPolicy`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let retry = fusebox::retry::Retry::builder().max_attempts(5).build()?;
    /// let s = fusebox::http::Standard::builder("x").retry(retry).build();
    /// assert_eq!(s.retry().max_attempts(), 5);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn retry<P>(mut self, retry: Retry<DefaultBackoff, P>) -> Self {
        self.retry = Some(retry.with_retry_if(crate::retry::AnyError));
        self
    }

    /// The breaker (a shared handle).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().consecutive_failures(3).build()?;
    /// let s = fusebox::http::Standard::builder("x").breaker(b.clone()).build();
    /// b.force_open();
    /// assert_eq!(s.breaker().state(), fusebox::State::ForcedOpen);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// One breaker per endpoint instead of one for everything the stack
    /// sends: a host that fails opens its own breaker, and the requests to
    /// every other host go on. The key is the request's authority
    /// (`scheme://host:port`, see [`authority`](super::authority)) for
    /// `send`, `send_bytes`, `send_json` and the tower layers, or the key
    /// given to [`Standard::run_for`]; [`Standard::run`] (no URL) and a
    /// request without an authority use the stack's breaker.
    ///
    /// Per endpoint: the breaker (made from `breakers`' settings on first
    /// use, bounded by its `max_keys`, with its outlier detection if it has
    /// one). Shared by all endpoints: the total and attempt timeouts, the
    /// retry and its budget, the bulkhead (one pool for the dependency),
    /// the rate limiter, the adaptive limit and the throttle (one slow or
    /// overloaded host moves them for every host), the hedge (its delay is
    /// the quantile of all hosts' answers), the stats.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{BreakerSet, CircuitBreaker};
    /// let hosts = BreakerSet::builder(CircuitBreaker::builder().failure_rate(0.5))
    ///     .max_keys(100)
    ///     .build()?;
    /// let s = fusebox::http::Standard::builder("cdn").per_authority(hosts).build();
    /// assert_eq!(s.breakers().unwrap().max_keys(), 100);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn per_authority(mut self, breakers: BreakerSet<String>) -> Self {
        self.breakers = Some(breakers);
        self
    }

    /// Hedges idempotent requests with `hedge` (inside the retry, around
    /// the breaker; see [`Standard::hedging`] for the preset). For hedges to
    /// spend from the retry's budget, build `hedge` with
    /// [`shared_budget`](crate::hedge::Builder::shared_budget) and that
    /// budget. Requests that may not be retried are not hedged either.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::hedge::{Delay, Hedge};
    /// use std::time::Duration;
    /// let hedge = Hedge::builder().delay(Delay::Fixed(Duration::from_millis(80))).build()?;
    /// let s = fusebox::http::Standard::builder("search").hedge(hedge).build();
    /// assert_eq!(s.hedge().unwrap().delay(), Delay::Fixed(Duration::from_millis(80)));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn hedge(mut self, hedge: Hedge) -> Self {
        self.hedge = Some(Hedging::Given(hedge));
        self
    }

    /// The bulkhead (a shared handle).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("x").bulkhead(fusebox::Bulkhead::new(4)).build();
    /// assert_eq!(s.bulkhead().limit(), 4);
    /// ```
    pub fn bulkhead(mut self, bulkhead: Bulkhead) -> Self {
        self.bulkhead = Some(bulkhead);
        self
    }

    /// A rate limiter for every attempt (feature `ratelimit`; none by
    /// default), inside the breaker: an attempt over the rate is refused at
    /// once and counts for nothing to the breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// let limiter = RateLimiter::new(RateLimitConfig::per_second(100))?;
    /// let s = fusebox::http::Standard::builder("x").rate_limiter(limiter).build();
    /// assert!(s.rate_limiter().is_some());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[cfg(feature = "ratelimit")]
    pub fn rate_limiter(self, limiter: crate::ratelimit::RateLimiter) -> Self {
        self.with_stage(limiter.into())
    }

    /// An adaptive concurrency limit for every attempt (feature `limit`;
    /// none by default), inside the breaker and outside the bulkhead: a
    /// limit that follows the dependency's latency where the bulkhead's
    /// fixed size cannot be known (give the bulkhead a generous size, or
    /// leave its default, as the outer bound). An attempt over the limit is
    /// refused at once ([`PipelineError::LimitExceeded`]); an attempt that
    /// times out cuts the limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let limit = AdaptiveLimit::new(LimitConfig::default())?;
    /// let s = fusebox::http::Standard::builder("search").limit(limit).build();
    /// let kinds: Vec<_> = s.stages().iter().map(|s| s.kind()).collect();
    /// assert_eq!(kinds, ["breaker", "limit", "bulkhead"]);
    /// # Ok::<(), fusebox::limit::LimitConfigError>(())
    /// ```
    #[cfg(feature = "limit")]
    pub fn limit(self, limit: crate::limit::AdaptiveLimit) -> Self {
        self.with_stage(limit.into())
    }

    /// Adaptive throttling of every attempt (feature `throttle`; none by
    /// default), inside the breaker: an attempt the throttle refuses is
    /// refused at once ([`PipelineError::Throttled`]); an answer that is not
    /// a failure is an accept.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::throttle::{Throttle, ThrottleConfig};
    /// let s = fusebox::http::Standard::builder("search")
    ///     .throttle(Throttle::new(ThrottleConfig::default())?)
    ///     .build();
    /// let kinds: Vec<_> = s.stages().iter().map(|s| s.kind()).collect();
    /// assert_eq!(kinds, ["breaker", "throttle", "bulkhead"]);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[cfg(feature = "throttle")]
    pub fn throttle(self, throttle: crate::throttle::Throttle) -> Self {
        self.with_stage(throttle.into())
    }

    /// Keeps `stage`, replacing one of its kind.
    #[cfg(any(feature = "ratelimit", feature = "limit", feature = "throttle"))]
    fn with_stage(mut self, stage: crate::pipeline::Stage) -> Self {
        self.stages.retain(|s| s.kind() != stage.kind());
        self.stages.push(stage);
        self
    }

    /// Which statuses are failures.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{Classifier, Standard};
    /// let s = Standard::builder("x").classifier(Classifier::new().success(http::StatusCode::NOT_IMPLEMENTED)).build();
    /// assert!(!s.classifier().is_failure(http::StatusCode::NOT_IMPLEMENTED));
    /// ```
    pub fn classifier(mut self, classifier: Classifier) -> Self {
        self.classifier = classifier;
        self
    }

    /// Which failures are retried.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{RetryPolicy, Standard};
    /// let s = Standard::builder("x").retry_policy(RetryPolicy::new().all_methods(true)).build();
    /// # let _ = s;
    /// ```
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// Counts into `stats` (e.g. from `Metrics::stats`) instead of fresh
    /// counters.
    ///
    /// # Examples
    ///
    /// ```
    /// let stats = fusebox::PolicyStats::new();
    /// let s = fusebox::http::Standard::builder("x").stats(stats.clone()).build();
    /// assert_eq!(s.stats().snapshot(), stats.snapshot());
    /// ```
    pub fn stats(mut self, stats: PolicyStats) -> Self {
        self.stats = Some(stats);
        self
    }

    /// Builds the stack, checking its settings: both timeouts must be
    /// greater than zero (a zero deadline fails every call).
    ///
    /// # Errors
    ///
    /// [`InvalidStandard`]: the setting at fault and why.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use std::time::Duration;
    /// let s = Standard::builder("x").total_timeout(Duration::from_secs(1)).try_build()?;
    /// assert_eq!(s.total_timeout(), Duration::from_secs(1));
    /// assert!(Standard::builder("x").total_timeout(Duration::ZERO).try_build().is_err());
    /// # Ok::<(), fusebox::http::InvalidStandard>(())
    /// ```
    pub fn try_build(self) -> Result<Standard, InvalidStandard> {
        for (setting, value) in [
            ("total_timeout", self.total),
            ("attempt_timeout", self.attempt),
        ] {
            if value.is_zero() {
                return Err(InvalidStandard {
                    name: self.name,
                    setting,
                    problem: format!(
                        "is {}; it must be greater than zero (every call would time out)",
                        crate::duration::format(value)
                    ),
                });
            }
        }
        Ok(self.build())
    }

    /// Builds the stack without checking its settings: what the builder
    /// was given is what the stack runs on, so a zero timeout fails every
    /// call. Use [`try_build`](Self::try_build) when the settings come from
    /// outside the program.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("x").build();
    /// assert_eq!(s.name(), "x");
    /// ```
    pub fn build(self) -> Standard {
        let stats = self.stats.unwrap_or_default();
        let retry = self.retry.unwrap_or_else(default_retry);
        let breaker = self.breaker.unwrap_or_else(|| default_breaker(&self.name));
        let bulkhead = self.bulkhead.unwrap_or_else(|| {
            Bulkhead::builder(DEFAULT_MAX_CONCURRENT)
                .name(&*self.name)
                .build()
        });
        let retry = retry.with_retry_if(self.retry_policy);
        let once_retry = retry
            .clone()
            .without_timeout_retries()
            .with_retry_if(ConnectOnly);
        let policies = Pipeline::builder()
            .breaker(breaker.clone())
            .bulkhead(bulkhead.clone())
            .timeout(self.attempt)
            .stats(stats.clone());
        let policies = self
            .stages
            .into_iter()
            .fold(policies, |p, stage| p.place(stage));
        let policies = policies.build();
        let hedge = self.hedge.map(|h| match h {
            Hedging::Given(h) => h,
            Hedging::Preset => preset_hedge(retry.budget()),
        });
        let pipeline = policies.clone().into_builder().retry(retry.clone());
        let pipeline = match hedge {
            Some(h) => pipeline.hedge(h),
            None => pipeline,
        };
        Standard {
            inner: Arc::new(StandardInner {
                name: self.name.into(),
                breaker,
                breakers: self.breakers,
                bulkhead,
                attempt: self.attempt,
                sent_once: policies.into_builder().retry(once_retry).build(),
                pipeline: pipeline.build(),
                retry,
                total: self.total,
                classifier: self.classifier,
                retry_policy: self.retry_policy,
                stats,
            }),
        }
    }
}

impl fmt::Debug for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Standard")
            .field("name", &self.inner.name)
            .field("pipeline", &self.inner.pipeline)
            .field("total", &self.inner.total)
            .field("classifier", &self.inner.classifier)
            .field("retry_policy", &self.inner.retry_policy)
            .finish()
    }
}

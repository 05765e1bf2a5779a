//! Pipeline: the policies composed in one documented order.
//!
//! Outermost first:
//!
//! ```text
//! fallback( retry( breaker( rate_limiter( limit( bulkhead( timeout( call ) ) ) ) ) ) )
//! ```
//!
//! - **fallback** outermost, so it answers for whatever stopped the call,
//!   after retries gave up;
//! - **retry** outside the breaker, so every attempt asks the breaker again
//!   and an open breaker ends the retrying (it never hammers an open breaker;
//!   see [`Retry`]);
//! - **breaker** outside the bulkhead, so an open breaker fails fast without
//!   taking a slot; a full bulkhead releases the breaker's permit without a
//!   verdict (a full bulkhead says nothing about the dependency's health; the
//!   slow-call policy sees the slowness that fills it);
//! - **rate limiter** (feature `ratelimit`) inside the breaker, so an open
//!   breaker spends none of the rate, and outside the bulkhead, so a call
//!   over the rate takes no slot;
//! - **adaptive limit** (feature `limit`) where a bulkhead would be: inside
//!   the rate limiter, outside the bulkhead and the timeout, so it measures
//!   each attempt's round-trip time and hears a timeout as a drop;
//! - **bulkhead** outside the timeout, so a slot is held until the call is
//!   over or cancelled;
//! - **timeout** innermost, so a timed-out attempt is a failure to the breaker
//!   and a retryable error to the retry.
//!
//! Every layer is optional. Between the retry and the timeout the policies
//! are an ordered list of [`Stage`]s: the builder's `breaker`, `rate_limiter`
//! and `bulkhead` put each at its place in this order, and
//! [`PipelineBuilder::stage`] puts a stage where you want it (two rate
//! limiters, a bulkhead outside the breaker). One error type,
//! [`PipelineError`], says which policy stopped the call. The sync path ([`Pipeline::call`]) allocates
//! nothing and boxes nothing per call. The async path
//! (`Pipeline::call_async`) needs the `tokio` feature (for the timeout and
//! the waits between retries).
//!
//! A sync call cannot be interrupted (see [the timeout docs](mod@crate::timeout)
//! for why), so on the sync path the timeout is a deadline on the *answer*: a
//! call that returns after it is reported as [`PipelineError::TimedOut`] and
//! counted as a failure by the breaker.
//!
//! # Examples
//!
//! ```
//! use fusebox::retry::{Constant, Retry};
//! use fusebox::{Bulkhead, CircuitBreaker, Pipeline, PipelineError};
//! use std::time::Duration;
//!
//! let reviews = Pipeline::builder()
//!     .fallback(|_why| Some(Vec::<String>::new())) // no reviews beats no page
//!     .retry(Retry::builder().backoff(Constant::new(Duration::ZERO)).build()?)
//!     .breaker(CircuitBreaker::builder().consecutive_failures(5).build().unwrap())
//!     .bulkhead(Bulkhead::new(10))
//!     .timeout(Duration::from_millis(300))
//!     .build();
//!
//! let r = reviews.call(|| Err::<Vec<String>, _>(std::io::Error::other("reviews down")));
//! assert_eq!(r.unwrap(), Vec::<String>::new());
//! # Ok::<(), fusebox::retry::RetryConfigError>(())
//! ```

mod stage;

pub use stage::Stage;

use crate::breaker::{CircuitBreaker, Outcome, Rejected};
use crate::bulkhead::{Bulkhead, BulkheadFull};
use crate::clock::Stopwatch;
use crate::fallback::{FallbackFn, Value};
#[cfg(feature = "limit")]
use crate::limit::{AdaptiveLimit, LimitExceeded};
use crate::policy::{Cause, PolicyError};
#[cfg(feature = "ratelimit")]
use crate::ratelimit::{RateLimited, RateLimiter};
use crate::retry::{AnyError, BoxBackoff, DefaultBackoff, Retry, RetryIf};
use crate::stats::PolicyStats;
use crate::timeout::Elapsed;
use stage::{Entered, Verdict, HELD};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Which policy stopped a call through a [`Pipeline`], or the call's own error.
///
/// # Examples
///
/// ```
/// use fusebox::{Bulkhead, Pipeline, PipelineError};
/// let p = Pipeline::builder().bulkhead(Bulkhead::new(0)).build();
/// let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
/// assert!(matches!(e, PipelineError::BulkheadFull(_)));
/// assert_eq!(e.stopped_by(), "bulkhead");
/// assert_eq!(e.to_string(), "bulkhead is full (limit 0)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PipelineError<E> {
    /// The breaker refused the call; it never ran.
    Rejected(Rejected),
    /// The bulkhead was full; the call never ran.
    BulkheadFull(BulkheadFull),
    /// The rate limiter refused the call (feature `ratelimit`); it never ran.
    #[cfg(feature = "ratelimit")]
    RateLimited(RateLimited),
    /// The adaptive limit was reached (feature `limit`); the call never ran.
    #[cfg(feature = "limit")]
    LimitExceeded(LimitExceeded),
    /// The adaptive throttle refused the call (feature `throttle`); it
    /// never ran.
    #[cfg(feature = "throttle")]
    Throttled(crate::throttle::Throttled),
    /// The call did not answer within the timeout.
    TimedOut(Elapsed),
    /// The call ran and failed.
    Failed(E),
}

impl<E> PipelineError<E> {
    /// The policy that stopped the call: `"breaker"`, `"bulkhead"`,
    /// `"timeout"`, or `"call"` for the call's own error.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::PipelineError::Failed(()).stopped_by(), "call");
    /// ```
    pub fn stopped_by(&self) -> &'static str {
        self.cause().stopped_by()
    }

    /// The call's own error, if it ran and failed.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::PipelineError::Failed(7).into_inner(), Some(7));
    /// ```
    pub fn into_inner(self) -> Option<E> {
        match self {
            PipelineError::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the call never ran (breaker or bulkhead refused it).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!fusebox::PipelineError::Failed(()).is_refusal());
    /// ```
    pub fn is_refusal(&self) -> bool {
        self.cause().is_refusal()
    }
}

impl<E: std::error::Error + Send + Sync + 'static> PipelineError<E> {
    /// The error inside, boxed as tower services' errors are: the
    /// refusal, the [`Elapsed`], or the call's own error, not wrapped, so
    /// it downcasts to its own type.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, BulkheadFull, PipelineError};
    /// let e = PipelineError::<std::io::Error>::from(Bulkhead::new(0).try_acquire().unwrap_err());
    /// assert!(e.into_box_error().downcast_ref::<BulkheadFull>().is_some());
    /// ```
    pub fn into_box_error(self) -> Box<dyn std::error::Error + Send + Sync> {
        match self {
            PipelineError::Rejected(r) => Box::new(r),
            PipelineError::BulkheadFull(b) => Box::new(b),
            #[cfg(feature = "ratelimit")]
            PipelineError::RateLimited(r) => Box::new(r),
            #[cfg(feature = "limit")]
            PipelineError::LimitExceeded(l) => Box::new(l),
            #[cfg(feature = "throttle")]
            PipelineError::Throttled(t) => Box::new(t),
            PipelineError::TimedOut(t) => Box::new(t),
            PipelineError::Failed(f) => Box::new(f),
        }
    }
}

impl<E> PolicyError for PipelineError<E> {
    type Inner = E;
    fn cause(&self) -> Cause<'_, E> {
        match self {
            PipelineError::Rejected(r) => Cause::Rejected(r),
            PipelineError::BulkheadFull(b) => Cause::BulkheadFull(b),
            #[cfg(feature = "ratelimit")]
            PipelineError::RateLimited(r) => Cause::Refused(r),
            #[cfg(feature = "limit")]
            PipelineError::LimitExceeded(l) => Cause::Refused(l),
            #[cfg(feature = "throttle")]
            PipelineError::Throttled(t) => Cause::Refused(t),
            PipelineError::TimedOut(t) => Cause::TimedOut(t),
            PipelineError::Failed(e) => Cause::Failed(e),
        }
    }
}

impl<E: fmt::Display> fmt::Display for PipelineError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipelineError::Rejected(r) => fmt::Display::fmt(r, f),
            PipelineError::BulkheadFull(b) => fmt::Display::fmt(b, f),
            #[cfg(feature = "ratelimit")]
            PipelineError::RateLimited(r) => fmt::Display::fmt(r, f),
            #[cfg(feature = "limit")]
            PipelineError::LimitExceeded(l) => fmt::Display::fmt(l, f),
            #[cfg(feature = "throttle")]
            PipelineError::Throttled(t) => fmt::Display::fmt(t, f),
            PipelineError::TimedOut(t) => fmt::Display::fmt(t, f),
            PipelineError::Failed(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for PipelineError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PipelineError::Failed(e) => Some(e),
            _ => None,
        }
    }
}

impl<E> From<Rejected> for PipelineError<E> {
    fn from(r: Rejected) -> Self {
        PipelineError::Rejected(r)
    }
}

impl<E> From<BulkheadFull> for PipelineError<E> {
    fn from(b: BulkheadFull) -> Self {
        PipelineError::BulkheadFull(b)
    }
}

#[cfg(feature = "ratelimit")]
impl<E> From<RateLimited> for PipelineError<E> {
    fn from(r: RateLimited) -> Self {
        PipelineError::RateLimited(r)
    }
}

#[cfg(feature = "limit")]
impl<E> From<LimitExceeded> for PipelineError<E> {
    fn from(l: LimitExceeded) -> Self {
        PipelineError::LimitExceeded(l)
    }
}

#[cfg(feature = "throttle")]
impl<E> From<crate::throttle::Throttled> for PipelineError<E> {
    fn from(t: crate::throttle::Throttled) -> Self {
        PipelineError::Throttled(t)
    }
}

/// Decides what a call's error means to the breaker.
///
/// Implemented for [`AllErrors`] (the default: every error is a failure) and
/// for any `Fn(&E) -> Outcome` closure (or `fn`).
///
/// # Examples
///
/// ```
/// use fusebox::{pipeline::Classify, Outcome};
/// // 4xx are the caller's fault, not the dependency's.
/// let by_status = |status: &u16| if *status >= 500 { Outcome::Failure } else { Outcome::Ignore };
/// assert_eq!(by_status.classify(&503), Outcome::Failure);
/// assert_eq!(by_status.classify(&404), Outcome::Ignore);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot classify errors of type `{E}` for a pipeline's breaker",
    label = "this classifier takes another error type",
    note = "a pipeline classifier is a `Fn(&E) -> Outcome` over the call's own error `E` (not the `Result`, not `PipelineError<E>`)"
)]
pub trait Classify<E> {
    /// The breaker's verdict for a call that failed with `error`.
    fn classify(&self, error: &E) -> Outcome;
}

impl<E, C: Classify<E> + ?Sized> Classify<E> for Arc<C> {
    fn classify(&self, error: &E) -> Outcome {
        (**self).classify(error)
    }
}

impl<E, F: Fn(&E) -> Outcome + ?Sized> Classify<E> for F {
    fn classify(&self, error: &E) -> Outcome {
        self(error)
    }
}

/// Every error is a failure (the default [`Classify`]).
///
/// # Examples
///
/// ```
/// use fusebox::{pipeline::{AllErrors, Classify}, Outcome};
/// assert_eq!(AllErrors.classify(&"any"), Outcome::Failure);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AllErrors;

impl<E> Classify<E> for AllErrors {
    fn classify(&self, _: &E) -> Outcome {
        Outcome::Failure
    }
}

/// No fallback: errors come through (the default).
///
/// # Examples
///
/// ```
/// use fusebox::{fallback::FallbackFn, pipeline::NoFallback, PolicyError};
/// let e = std::io::Error::other("x");
/// assert_eq!(FallbackFn::<_, u8>::fallback(&NoFallback, e.cause()), None);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoFallback;

impl<E, T> FallbackFn<E, T> for NoFallback {
    fn fallback(&self, _: Cause<'_, E>) -> Option<T> {
        None
    }
}

/// The policies around calls to one dependency, composed in the documented
/// order (see the [module docs](self)).
///
/// Cheap to clone (the breaker, bulkhead and budget are shared handles) and
/// `Send + Sync` when its closures are: build one per dependency and share it
/// across handlers.
///
/// The type parameters are the retry's backoff `B` and predicate `P`, the
/// fallback `F` and the breaker classifier `C`; each has a default, so a
/// pipeline without closures is just `Pipeline`. To store one with closures in
/// a struct or axum state, [`boxed`](Pipeline::boxed) makes it a
/// [`BoxPipeline<T, E>`], a type you can write.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, Pipeline, State};
///
/// let breaker = CircuitBreaker::builder().consecutive_failures(2).build()?;
/// let prices = Pipeline::builder().breaker(breaker.clone()).build();
/// for _ in 0..2 {
///     let _ = prices.call(|| Err::<f64, _>(std::io::Error::other("down")));
/// }
/// assert_eq!(breaker.state(), State::Open);
/// let e = prices.call(|| Ok::<_, std::io::Error>(19.99)).unwrap_err();
/// assert_eq!(e.stopped_by(), "breaker");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Pipeline<B = DefaultBackoff, P = AnyError, F = NoFallback, C = AllErrors> {
    fallback: F,
    retry: Option<Retry<B, P>>,
    classify: C,
    layers: Layers,
}

/// What a pipeline holds whatever its type parameters.
#[derive(Clone, Debug, Default)]
struct Layers {
    stages: Box<[Stage]>,
    timeout: Option<Duration>,
    stats: Option<PolicyStats>,
    #[cfg(feature = "tokio")]
    hedge: Option<crate::hedge::Hedge>,
}

/// Builds a [`Pipeline`]; from [`Pipeline::builder`]. Every layer is
/// optional; the order of the named calls does not matter (each policy goes
/// to its place in the documented order); [`stage`](PipelineBuilder::stage)
/// places a policy where you put it.
///
/// # Default
///
/// No layer at all: the pipeline just runs the call. The classifier is
/// [`AllErrors`].
///
/// # Examples
///
/// ```
/// use fusebox::{Bulkhead, Pipeline};
/// let p = Pipeline::builder().bulkhead(Bulkhead::new(4)).build();
/// assert_eq!(p.call(|| Ok::<_, std::io::Error>(1)).unwrap(), 1);
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct PipelineBuilder<B, P, F, C> {
    inner: Pipeline<B, P, F, C>,
}

impl<B, P, F, C> fmt::Debug for PipelineBuilder<B, P, F, C>
where
    B: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PipelineBuilder").field(&self.inner).finish()
    }
}

impl Pipeline {
    /// A builder with no layers.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = fusebox::Pipeline::builder().build();
    /// assert_eq!(p.call(|| Ok::<_, std::io::Error>("direct")).unwrap(), "direct");
    /// ```
    pub fn builder() -> PipelineBuilder<DefaultBackoff, AnyError, NoFallback, AllErrors> {
        PipelineBuilder {
            inner: Pipeline {
                fallback: NoFallback,
                retry: None,
                classify: AllErrors,
                layers: Layers::default(),
            },
        }
    }
}

impl<B, P, F, C> PipelineBuilder<B, P, F, C> {
    /// The fallback (outermost layer): `Some(value)` answers instead of the
    /// error, `None` lets the error through. See [`Fallback`](crate::Fallback)
    /// for strategies.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Cause, Pipeline};
    /// let p = Pipeline::builder()
    ///     .fallback(|why: Cause<'_, std::io::Error>| Some(format!("degraded: {why}")))
    ///     .build();
    /// let r = p.call(|| Err::<String, _>(std::io::Error::other("x")));
    /// assert_eq!(r.unwrap(), "degraded: failed");
    /// ```
    pub fn fallback<F2, E, T>(self, fallback: F2) -> PipelineBuilder<B, P, F2, C>
    where
        F2: Fn(Cause<'_, E>) -> Option<T>,
    {
        self.with_fallback(fallback)
    }

    /// A fallback that always answers with a clone of `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = fusebox::Pipeline::builder().fallback_value(0u32).build();
    /// assert_eq!(p.call(|| Err::<u32, _>(std::io::Error::other("x"))).unwrap(), 0);
    /// ```
    pub fn fallback_value<T: Clone>(self, value: T) -> PipelineBuilder<B, P, Value<T>, C> {
        self.with_fallback(Value::new(value))
    }

    fn with_fallback<F2>(self, fallback: F2) -> PipelineBuilder<B, P, F2, C> {
        let i = self.inner;
        PipelineBuilder {
            inner: Pipeline {
                fallback,
                retry: i.retry,
                classify: i.classify,
                layers: i.layers,
            },
        }
    }

    /// The retry policy (inside the fallback, outside the breaker).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{retry::Retry, Pipeline};
    /// let p = Pipeline::builder()
    ///     .retry(Retry::builder().max_attempts(2).sleeper(|_: std::time::Duration| {}).build()?)
    ///     .build();
    /// let mut n = 0;
    /// let _ = p.call(|| { n += 1; Err::<(), _>(std::io::Error::other("x")) });
    /// assert_eq!(n, 2);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn retry<B2, P2>(self, retry: Retry<B2, P2>) -> PipelineBuilder<B2, P2, F, C> {
        let i = self.inner;
        PipelineBuilder {
            inner: Pipeline {
                fallback: i.fallback,
                retry: Some(retry),
                classify: i.classify,
                layers: i.layers,
            },
        }
    }

    /// Hedging for [`call_async`](Pipeline::call_async) (feature `tokio`;
    /// the sync path cannot hedge): inside the retry, around the stages, so
    /// each hedged attempt asks the breaker and takes a slot of its own,
    /// and a dropped one releases them without a verdict. For hedges and
    /// retries to spend from one budget, build the hedge with
    /// [`shared_budget`](crate::hedge::Builder::shared_budget) and the
    /// retry's budget.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), fusebox::ConfigError> {
    /// use fusebox::hedge::{Delay, Hedge};
    /// use fusebox::{CircuitBreaker, Pipeline};
    /// use std::time::Duration;
    /// let hedge = Hedge::builder().delay(Delay::Fixed(Duration::from_millis(50))).build()?;
    /// let p = Pipeline::builder()
    ///     .hedge(hedge.clone())
    ///     .breaker(CircuitBreaker::builder().build()?)
    ///     .build();
    /// let mut n = 0;
    /// let r = p
    ///     .call_async(|| {
    ///         n += 1;
    ///         let took = if n == 1 { 1_000 } else { 5 };
    ///         async move {
    ///             tokio::time::sleep(Duration::from_millis(took)).await;
    ///             Ok::<_, std::io::Error>(n)
    ///         }
    ///     })
    ///     .await;
    /// assert_eq!(r.unwrap(), 2);
    /// assert_eq!(hedge.stats().won_by_hedge, 1);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub fn hedge(mut self, hedge: crate::hedge::Hedge) -> Self {
        self.inner.layers.hedge = Some(hedge);
        self
    }

    /// The circuit breaker (a shared handle: clones see the same state).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().build()?;
    /// let p = fusebox::Pipeline::builder().breaker(b).build();
    /// assert!(p.breaker().is_some());
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn breaker(self, breaker: CircuitBreaker) -> Self {
        self.place(Stage::Breaker(breaker))
    }

    /// The rate limiter (feature `ratelimit`; a shared handle), inside the
    /// breaker and outside the bulkhead. In a pipeline it never waits: an
    /// attempt over the rate is refused at once with
    /// [`PipelineError::RateLimited`], whose `retry_after` a retry with
    /// `retry_rejections` waits for.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use fusebox::{Pipeline, PipelineError};
    /// let limiter = RateLimiter::new(RateLimitConfig::per_second(1).burst(1))?;
    /// let p = Pipeline::builder().rate_limiter(limiter).build();
    /// assert!(p.call(|| Ok::<_, std::io::Error>(())).is_ok());
    /// let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
    /// assert!(matches!(e, PipelineError::RateLimited(_)));
    /// assert_eq!(e.stopped_by(), "rate_limiter");
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[cfg(feature = "ratelimit")]
    pub fn rate_limiter(self, limiter: RateLimiter) -> Self {
        self.place(Stage::RateLimiter(limiter))
    }

    /// The adaptive concurrency limit (feature `limit`; a shared handle),
    /// inside the rate limiter and outside the bulkhead. It never waits: an
    /// attempt over the limit is refused at once with
    /// [`PipelineError::LimitExceeded`]. It hears each attempt: an answer
    /// is a sample of its round-trip time, a timeout is a drop.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// use fusebox::{Pipeline, PipelineError};
    /// let limit = AdaptiveLimit::new(LimitConfig::default().initial(1))?;
    /// let p = Pipeline::builder().limit(limit.clone()).build();
    /// assert!(p.call(|| Ok::<_, std::io::Error>(())).is_ok());
    /// let _held = limit.try_acquire().unwrap();
    /// let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
    /// assert!(matches!(e, PipelineError::LimitExceeded(_)));
    /// assert_eq!(e.stopped_by(), "limit");
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[cfg(feature = "limit")]
    pub fn limit(self, limit: AdaptiveLimit) -> Self {
        self.place(Stage::Limit(limit))
    }

    /// The adaptive throttle (feature `throttle`; a shared handle), inside
    /// the breaker and outside the rate limiter. It counts each attempt and
    /// refuses it at once with its rejection probability
    /// ([`PipelineError::Throttled`]); an attempt the dependency answered
    /// (a success, or an error the classifier ignores) is an accept; a
    /// failure, a timeout or a refusal from a stage inside is not.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::throttle::{Throttle, ThrottleConfig};
    /// use fusebox::Pipeline;
    /// let throttle = Throttle::new(ThrottleConfig::default())?;
    /// let p = Pipeline::builder().throttle(throttle.clone()).build();
    /// assert!(p.call(|| Ok::<_, std::io::Error>(())).is_ok());
    /// let _ = p.call(|| Err::<(), _>(std::io::Error::other("503")));
    /// let s = throttle.snapshot();
    /// assert_eq!((s.requests, s.accepts), (2, 1));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[cfg(feature = "throttle")]
    pub fn throttle(self, throttle: crate::throttle::Throttle) -> Self {
        self.place(Stage::Throttle(throttle))
    }

    /// Adds `stage` inside every stage added so far (outermost first): the
    /// order of `stage` calls is the order of the policies. The named
    /// setters ([`breaker`](Self::breaker), [`bulkhead`](Self::bulkhead),
    /// ...) place theirs by the documented order instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, CircuitBreaker, Pipeline, PipelineError};
    /// // A full bulkhead outside the breaker: the breaker is not asked.
    /// let breaker = CircuitBreaker::builder().build()?;
    /// let p = Pipeline::builder()
    ///     .stage(Bulkhead::new(0))
    ///     .stage(breaker.clone())
    ///     .build();
    /// let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
    /// assert!(matches!(e, PipelineError::BulkheadFull(_)));
    /// assert_eq!(breaker.snapshot().calls, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn stage(mut self, stage: impl Into<Stage>) -> Self {
        let mut stages = std::mem::take(&mut self.inner.layers.stages).into_vec();
        stages.push(stage.into());
        self.inner.layers.stages = stages.into_boxed_slice();
        self
    }

    /// Puts `stage` at its place in the default order, replacing the first
    /// stage of its kind (also the HTTP stack's way to add its stages).
    pub(crate) fn place(mut self, stage: Stage) -> Self {
        let mut stages = std::mem::take(&mut self.inner.layers.stages).into_vec();
        match stages.iter().position(|s| s.rank() == stage.rank()) {
            Some(i) => stages[i] = stage,
            None => {
                let i = stages
                    .iter()
                    .position(|s| s.rank() > stage.rank())
                    .unwrap_or(stages.len());
                stages.insert(i, stage);
            }
        }
        self.inner.layers.stages = stages.into_boxed_slice();
        self
    }

    /// What a call's error means to the breaker (default: every error is a
    /// failure).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, Outcome, Pipeline, State};
    /// let breaker = CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// let p = Pipeline::builder()
    ///     .breaker(breaker.clone())
    ///     .classify(|status: &u16| if *status >= 500 { Outcome::Failure } else { Outcome::Ignore })
    ///     .build();
    /// let _ = p.call(|| Err::<(), u16>(404));
    /// assert_eq!(breaker.state(), State::Closed);
    /// let _ = p.call(|| Err::<(), u16>(503));
    /// assert_eq!(breaker.state(), State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn classify<C2>(self, classify: C2) -> PipelineBuilder<B, P, F, C2> {
        let i = self.inner;
        PipelineBuilder {
            inner: Pipeline {
                fallback: i.fallback,
                retry: i.retry,
                classify,
                layers: i.layers,
            },
        }
    }

    /// The bulkhead (a shared handle). The sync path waits up to its
    /// `max_wait` blocking; the async path waits asynchronously.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = fusebox::Pipeline::builder().bulkhead(fusebox::Bulkhead::new(2)).build();
    /// assert_eq!(p.bulkhead().unwrap().limit(), 2);
    /// ```
    pub fn bulkhead(self, bulkhead: Bulkhead) -> Self {
        self.place(Stage::Bulkhead(bulkhead))
    }

    /// The deadline for each attempt (innermost layer). Zero times out
    /// every call.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = fusebox::Pipeline::builder().timeout(Duration::from_secs(1)).build();
    /// assert_eq!(p.timeout(), Some(Duration::from_secs(1)));
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.inner.layers.timeout = Some(timeout);
        self
    }

    /// Counts calls, attempts, timeouts and fallbacks into `stats` (export
    /// them with `fusebox::metrics`).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Pipeline, PolicyStats};
    /// let stats = PolicyStats::new();
    /// let p = Pipeline::builder().stats(stats.clone()).build();
    /// let _ = p.call(|| Ok::<_, std::io::Error>(()));
    /// assert_eq!(stats.snapshot().attempts, 1);
    /// ```
    pub fn stats(mut self, stats: PolicyStats) -> Self {
        self.inner.layers.stats = Some(stats);
        self
    }

    /// Builds the pipeline. Every combination is valid.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = fusebox::Pipeline::builder().build();
    /// assert!(p.breaker().is_none());
    /// ```
    pub fn build(self) -> Pipeline<B, P, F, C> {
        self.inner
    }
}

impl<B, P, F, C> Pipeline<B, P, F, C>
where
    B: Iterator<Item = Duration> + Clone,
{
    /// Runs `op` through every configured layer.
    ///
    /// `op` is `FnMut` because the retry may run it again. Nothing is boxed
    /// or allocated per call.
    ///
    /// # Errors
    ///
    /// A [`PipelineError`] saying which policy stopped the call, unless the
    /// fallback answered.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{CircuitBreaker, Pipeline, PipelineError};
    /// let breaker = CircuitBreaker::builder().build()?;
    /// breaker.force_open();
    /// let p = Pipeline::builder().breaker(breaker).build();
    /// let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
    /// assert!(matches!(e, PipelineError::Rejected(_)));
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn call<T, E, Op>(&self, mut op: Op) -> Result<T, PipelineError<E>>
    where
        Op: FnMut() -> Result<T, E>,
        P: RetryIf<E>,
        F: FallbackFn<E, T>,
        C: Classify<E>,
    {
        self.count(PolicyStats::call);
        let result = match &self.retry {
            None => self.attempt(&mut op),
            Some(retry) => retry.call(|| self.attempt(&mut op)),
        };
        result.or_else(|e| self.answer(e))
    }

    /// One attempt through the stages and the (sync) timeout.
    #[inline]
    fn attempt<T, E, Op>(&self, op: &mut Op) -> Result<T, PipelineError<E>>
    where
        Op: FnMut() -> Result<T, E>,
        C: Classify<E>,
    {
        self.count(PolicyStats::attempt);
        self.through(&self.layers.stages, op)
    }

    /// `stages` in order around the timeout and the call: each admits the
    /// attempt or refuses it, then hears the verdict innermost first (the
    /// breakers: a refusal from inside counts for nothing). Up to
    /// [`HELD`] stages are held in one frame; more nest.
    fn through<T, E, Op>(&self, stages: &[Stage], op: &mut Op) -> Result<T, PipelineError<E>>
    where
        Op: FnMut() -> Result<T, E>,
        C: Classify<E>,
    {
        let (here, rest) = stages.split_at(stages.len().min(HELD));
        let mut entered = Entered::new(here);
        entered.enter()?;
        let result = if rest.is_empty() {
            self.timed(op)
        } else {
            self.through(rest, op)
        };
        entered.leave(self.verdict(&result));
        result
    }

    /// The call, with the timeout as a deadline on its answer.
    #[inline]
    fn timed<T, E, Op>(&self, op: &mut Op) -> Result<T, PipelineError<E>>
    where
        Op: FnMut() -> Result<T, E>,
    {
        let Some(limit) = self.layers.timeout else {
            return op().map_err(PipelineError::Failed);
        };
        let watch = Stopwatch::start(self.breaker().and_then(CircuitBreaker::custom_clock));
        let result = op();
        if watch.exceeded(limit) {
            self.count(PolicyStats::timeout);
            return Err(PipelineError::TimedOut(Elapsed::new(limit)));
        }
        result.map_err(PipelineError::Failed)
    }

    /// Counts into the stats, if any (a relaxed add; nothing without stats).
    fn count(&self, counter: fn(&PolicyStats)) {
        if let Some(s) = &self.layers.stats {
            counter(s);
        }
    }

    /// The fallback's answer for `e`, or `e`; counts an answer by cause.
    fn answer<T, E>(&self, e: PipelineError<E>) -> Result<T, PipelineError<E>>
    where
        F: FallbackFn<E, T>,
    {
        answer(&self.fallback, self.layers.stats.as_ref(), e)
    }

    /// What an attempt means to the breaker: a refusal (a full bulkhead,
    /// a rate limit) says nothing about the dependency (no verdict); a
    /// timeout is a failure; the call's own error is what the classifier
    /// says.
    fn verdict<T, E>(&self, result: &Result<T, PipelineError<E>>) -> Verdict
    where
        C: Classify<E>,
    {
        let outcome = match result {
            Ok(_) => Outcome::Success,
            Err(PipelineError::Failed(e)) => self.classify.classify(e),
            Err(PipelineError::TimedOut(_)) => Outcome::Failure,
            Err(_) => Outcome::Ignore,
        };
        Verdict {
            outcome,
            #[cfg(feature = "limit")]
            timed_out: matches!(result, Err(PipelineError::TimedOut(_))),
            #[cfg(feature = "throttle")]
            accepted: match result {
                Ok(_) => Some(true),
                Err(PipelineError::Failed(_)) => Some(outcome != Outcome::Failure),
                Err(PipelineError::TimedOut(_)) => Some(false),
                Err(_) => None,
            },
        }
    }

    /// The breaker, if the pipeline has one.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().breaker().is_none());
    /// ```
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        self.layers.stages.iter().find_map(|s| match s {
            Stage::Breaker(b) => Some(b),
            _ => None,
        })
    }

    /// The bulkhead, if the pipeline has one.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().bulkhead().is_none());
    /// ```
    pub fn bulkhead(&self) -> Option<&Bulkhead> {
        self.layers.stages.iter().find_map(|s| match s {
            Stage::Bulkhead(b) => Some(b),
            _ => None,
        })
    }

    /// The (first) adaptive limit, if the pipeline has one (feature
    /// `limit`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().adaptive_limit().is_none());
    /// ```
    #[cfg(feature = "limit")]
    pub fn adaptive_limit(&self) -> Option<&AdaptiveLimit> {
        self.layers.stages.iter().find_map(|s| match s {
            Stage::Limit(l) => Some(l),
            _ => None,
        })
    }

    /// The (first) adaptive throttle, if the pipeline has one (feature
    /// `throttle`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().throttle().is_none());
    /// ```
    #[cfg(feature = "throttle")]
    pub fn throttle(&self) -> Option<&crate::throttle::Throttle> {
        self.layers.stages.iter().find_map(|s| match s {
            Stage::Throttle(t) => Some(t),
            _ => None,
        })
    }

    /// The (first) rate limiter, if the pipeline has one (feature
    /// `ratelimit`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().rate_limiter().is_none());
    /// ```
    #[cfg(feature = "ratelimit")]
    pub fn rate_limiter(&self) -> Option<&RateLimiter> {
        self.layers.stages.iter().find_map(|s| match s {
            Stage::RateLimiter(l) => Some(l),
            _ => None,
        })
    }

    /// The stages between the retry and the timeout, outermost first.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, CircuitBreaker, Pipeline};
    /// let p = Pipeline::builder()
    ///     .bulkhead(Bulkhead::new(4))
    ///     .breaker(CircuitBreaker::builder().build()?)
    ///     .build();
    /// let kinds: Vec<_> = p.stages().iter().map(|s| s.kind()).collect();
    /// assert_eq!(kinds, ["breaker", "bulkhead"]); // the documented order
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn stages(&self) -> &[Stage] {
        &self.layers.stages
    }

    /// The retry policy, if the pipeline has one.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().retry().is_none());
    /// ```
    pub fn retry(&self) -> Option<&Retry<B, P>> {
        self.retry.as_ref()
    }

    /// The per-attempt deadline, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Pipeline::builder().build().timeout(), None);
    /// ```
    pub fn timeout(&self) -> Option<Duration> {
        self.layers.timeout
    }

    /// The counters this pipeline counts into, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().stats().is_none());
    /// ```
    pub fn stats(&self) -> Option<&PolicyStats> {
        self.layers.stats.as_ref()
    }

    /// A builder holding this pipeline's layers, to change some: how a
    /// pipeline from a registry ([`Fusebox::pipeline`](crate::registry::Fusebox::pipeline))
    /// gets a classifier, a fallback or stats that only code can give.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Pipeline;
    /// let p = Pipeline::builder().timeout(std::time::Duration::from_secs(1)).build();
    /// let p = p.into_builder().fallback_value(7).build();
    /// assert_eq!(p.timeout(), Some(std::time::Duration::from_secs(1)));
    /// assert_eq!(p.call(|| Err::<i32, _>(std::io::Error::other("x"))).unwrap(), 7);
    /// ```
    pub fn into_builder(self) -> PipelineBuilder<B, P, F, C> {
        PipelineBuilder { inner: self }
    }
}

/// A [`Pipeline`] whose closures are boxed: one nameable type for calls
/// returning `Result<T, E>`, to store in a struct or in axum state.
///
/// Made by [`Pipeline::boxed`]. It costs one allocation per call (the
/// backoff's clone, with a retry) and a dynamic call per closure.
///
/// # Examples
///
/// ```
/// use fusebox::{BoxPipeline, Cause, Pipeline};
///
/// #[derive(Clone)]
/// struct AppState {
///     reviews: BoxPipeline<Vec<String>, std::io::Error>,
/// }
///
/// let state = AppState {
///     reviews: Pipeline::builder()
///         .fallback(|_why: Cause<'_, std::io::Error>| Some(Vec::new()))
///         .classify(|_e: &std::io::Error| fusebox::Outcome::Failure)
///         .build()
///         .boxed(),
/// };
/// let r = state.reviews.call(|| Err(std::io::Error::other("down")));
/// assert!(r.unwrap().is_empty());
/// ```
pub type BoxPipeline<T, E> = Pipeline<
    BoxBackoff,
    Arc<dyn RetryIf<E> + Send + Sync>,
    Arc<dyn FallbackFn<E, T> + Send + Sync>,
    Arc<dyn Classify<E> + Send + Sync>,
>;

impl<B, P, F, C> Pipeline<B, P, F, C> {
    /// This pipeline as a [`BoxPipeline`]: the same layers, closures boxed,
    /// so its type can be written down.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{BoxPipeline, Pipeline};
    /// let p: BoxPipeline<u32, std::io::Error> = Pipeline::builder().fallback_value(1).build().boxed();
    /// assert_eq!(p.call(|| Err(std::io::Error::other("x"))).unwrap(), 1);
    /// ```
    pub fn boxed<T, E>(self) -> BoxPipeline<T, E>
    where
        B: Iterator<Item = Duration> + Clone + Send + Sync + 'static,
        P: RetryIf<E> + Send + Sync + 'static,
        F: FallbackFn<E, T> + Send + Sync + 'static,
        C: Classify<E> + Send + Sync + 'static,
    {
        Pipeline {
            fallback: Arc::new(self.fallback),
            retry: self.retry.map(|r| {
                r.boxed_backoff()
                    .map_retry_if(|p| Arc::new(p) as Arc<dyn RetryIf<E> + Send + Sync>)
            }),
            classify: Arc::new(self.classify),
            layers: self.layers,
        }
    }
}

#[cfg(feature = "tokio")]
impl<B, P, F, C> Pipeline<B, P, F, C>
where
    B: Iterator<Item = Duration> + Clone,
{
    /// Runs the futures `op` makes through every configured layer (feature
    /// `tokio`): the timeout cancels a late attempt, the bulkhead waits
    /// asynchronously up to its `max_wait`, retries wait on tokio's timer.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future drops the attempt in progress: its
    /// bulkhead slot is freed and its breaker permit released without a
    /// verdict (a cancelled call says nothing about the dependency).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use fusebox::{Pipeline, PipelineError};
    /// use std::time::Duration;
    /// let p = Pipeline::builder().timeout(Duration::from_millis(100)).build();
    /// let e = p
    ///     .call_async(|| async {
    ///         tokio::time::sleep(Duration::from_secs(1)).await;
    ///         Ok::<_, std::io::Error>(())
    ///     })
    ///     .await
    ///     .unwrap_err();
    /// assert!(matches!(e, PipelineError::TimedOut(_)));
    /// # }
    /// ```
    pub async fn call_async<T, E, Op, Fut>(&self, mut op: Op) -> Result<T, PipelineError<E>>
    where
        Op: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
        P: RetryIf<E>,
        F: FallbackFn<E, T>,
        C: Classify<E>,
    {
        self.count(PolicyStats::call);
        let result = match (&self.retry, &self.layers.hedge) {
            (None, None) => self.attempt_async(op()).await,
            (Some(retry), None) => retry.call_async(|| self.attempt_async(op())).await,
            (retry, Some(hedge)) => {
                // Each retry hedges; the hedges make futures later, so the
                // caller's `op` is shared between them (a lock taken only to
                // make an attempt's future, never held across an await).
                let op = std::sync::Mutex::new(op);
                let next = || {
                    let mut op = op.lock().unwrap_or_else(|p| p.into_inner());
                    (*op)()
                };
                let hedged = || hedge.call(|| self.attempt_async(next()));
                match retry {
                    None => hedged().await,
                    Some(retry) => retry.call_async(hedged).await,
                }
            }
        };
        result.or_else(|e| self.answer(e))
    }

    /// The hedge, if the pipeline has one (feature `tokio`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::Pipeline::builder().build().hedge().is_none());
    /// ```
    pub fn hedge(&self) -> Option<&crate::hedge::Hedge> {
        self.layers.hedge.as_ref()
    }

    /// Runs one future through every layer but the retry (a future can run
    /// only once); the fallback still answers for it.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    ///
    /// # Cancel safety
    ///
    /// As [`call_async`](Self::call_async).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let p = fusebox::Pipeline::builder().fallback_value("cached").build();
    /// let r = p.run_async(async { Err::<&str, _>(std::io::Error::other("down")) }).await;
    /// assert_eq!(r.unwrap(), "cached");
    /// # }
    /// ```
    pub async fn run_async<T, E, Fut>(&self, fut: Fut) -> Result<T, PipelineError<E>>
    where
        Fut: std::future::Future<Output = Result<T, E>>,
        F: FallbackFn<E, T>,
        C: Classify<E>,
    {
        self.count(PolicyStats::call);
        let result = self.attempt_async(fut).await;
        result.or_else(|e| self.answer(e))
    }

    async fn attempt_async<T, E, Fut>(&self, fut: Fut) -> Result<T, PipelineError<E>>
    where
        Fut: std::future::Future<Output = Result<T, E>>,
        C: Classify<E>,
    {
        self.count(PolicyStats::attempt);
        self.through_async(&self.layers.stages, fut).await
    }

    /// [`through`](Self::through), asynchronously: the bulkheads wait
    /// asynchronously, the timeout cancels a late attempt.
    async fn through_async<T, E, Fut>(
        &self,
        stages: &[Stage],
        fut: Fut,
    ) -> Result<T, PipelineError<E>>
    where
        Fut: std::future::Future<Output = Result<T, E>>,
        C: Classify<E>,
    {
        let (here, rest) = stages.split_at(stages.len().min(HELD));
        let mut entered = Entered::new(here);
        while let Some(full) = entered.enter_until_wait()? {
            let taken = full.take_async().await;
            entered.admitted(taken.map_err(Into::into))?;
        }
        let result = if rest.is_empty() {
            self.timed_async(fut).await
        } else {
            Box::pin(self.through_async(rest, fut)).await
        };
        entered.leave(self.verdict(&result));
        result
    }

    async fn timed_async<T, E, Fut>(&self, fut: Fut) -> Result<T, PipelineError<E>>
    where
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        match self.layers.timeout {
            None => fut.await.map_err(PipelineError::Failed),
            Some(limit) => match crate::timeout::timeout(limit, fut).await {
                Ok(r) => r.map_err(PipelineError::Failed),
                Err(elapsed) => {
                    self.count(PolicyStats::timeout);
                    Err(PipelineError::TimedOut(elapsed))
                }
            },
        }
    }
}

/// `fallback`'s answer for `e`, or `e`; an answer is counted in `stats` by
/// cause.
pub(crate) fn answer<T, E, F>(
    fallback: &F,
    stats: Option<&PolicyStats>,
    e: PipelineError<E>,
) -> Result<T, PipelineError<E>>
where
    F: FallbackFn<E, T> + ?Sized,
{
    let cause = e.cause();
    match fallback.fallback(cause) {
        Some(v) => {
            if let Some(s) = stats {
                s.fallback(&cause);
            }
            Ok(v)
        }
        None => Err(e),
    }
}

impl<B: fmt::Debug, P, F, C> fmt::Debug for Pipeline<B, P, F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("retry", &self.retry)
            .field("layers", &self.layers)
            .finish_non_exhaustive()
    }
}

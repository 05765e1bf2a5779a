//! `.guarded(&policy)`: the Rust counterpart of seed 002's decorator.
//!
//! Seed 002 wraps a function in a breaker with a Python decorator. In Rust,
//! an extension trait reads the same way, like backon's `.retry(...)`:
//!
//! ```
//! use fusebox::{CircuitBreaker, GuardedFn};
//!
//! fn get_price(id: u32) -> Result<f64, std::io::Error> { Ok(f64::from(id) + 0.99) }
//!
//! let breaker = CircuitBreaker::builder().build()?;
//! let price = (|| get_price(18)).guarded(&breaker);
//! assert_eq!(price.unwrap(), 18.99);
//! # Ok::<(), fusebox::ConfigError>(())
//! ```
//!
//! Three shapes, one method name:
//!
//! | you have | trait | guards it can use |
//! |---|---|---|
//! | a closure returning `Result` | [`GuardedFn`] | breaker, bulkhead, retry, pipeline ([`Guard`]) |
//! | a future of a `Result` | [`GuardedFuture`] | breaker, bulkhead, timeout, pipeline ([`AsyncGuard`]): one attempt |
//! | a closure returning such a future | [`GuardedAsyncFn`] | breaker, bulkhead, retry, pipeline ([`AsyncGuardFn`]) |
//!
//! A future can run only once, so `fetch(id).guarded(&pipeline)` skips the
//! pipeline's retry; to retry, guard the closure that makes the future:
//! `(|| fetch(id)).guarded(&pipeline)`.
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! use fusebox::retry::{Constant, Retry};
//! use fusebox::{GuardedAsyncFn, GuardedFuture, Pipeline};
//! use std::time::Duration;
//!
//! async fn fetch_reviews(id: u32) -> Result<Vec<String>, std::io::Error> {
//!     Ok(vec![format!("review of {id}")])
//! }
//!
//! let pipeline = Pipeline::builder()
//!     .retry(Retry::builder().backoff(Constant::new(Duration::from_millis(10))).build().unwrap())
//!     .timeout(Duration::from_millis(300))
//!     .fallback_value(Vec::new())
//!     .build();
//!
//! let once = fetch_reviews(7).guarded(&pipeline).await;        // one attempt
//! let retried = (|| fetch_reviews(7)).guarded(&pipeline).await; // with retries
//! assert_eq!(once.unwrap(), retried.unwrap());
//! # }
//! # #[cfg(not(feature = "tokio"))]
//! # fn main() {}
//! ```

use crate::breaker::{CircuitBreaker, Error as BreakerError};
use crate::bulkhead::Bulkhead;
use crate::fallback::FallbackFn;
use crate::pipeline::{Classify, Pipeline, PipelineError};
use crate::policy::PolicyError;
use crate::retry::{Retry, RetryIf};
use std::future::Future;
use std::time::Duration;

/// A policy that can run a sync call: [`CircuitBreaker`], [`Bulkhead`],
/// [`Retry`], [`Pipeline`].
///
/// # Examples
///
/// ```
/// use fusebox::{Bulkhead, Guard};
/// let b = Bulkhead::new(1);
/// assert_eq!(b.guard(|| Ok::<_, std::io::Error>(3)).unwrap(), 3);
/// ```
pub trait Guard<T, E> {
    /// The error the guarded call returns.
    type Error;
    /// Runs `f` under the policy (`FnMut`: a retry may run it again).
    ///
    /// # Errors
    ///
    /// The policy's error type.
    fn guard<F: FnMut() -> Result<T, E>>(&self, f: F) -> Result<T, Self::Error>;
}

impl<T, E> Guard<T, E> for CircuitBreaker {
    type Error = BreakerError<E>;
    fn guard<F: FnMut() -> Result<T, E>>(&self, f: F) -> Result<T, BreakerError<E>> {
        self.call(f)
    }
}

/// Waits up to the bulkhead's `max_wait` (blocking).
impl<T, E> Guard<T, E> for Bulkhead {
    type Error = PipelineError<E>;
    fn guard<F: FnMut() -> Result<T, E>>(&self, mut f: F) -> Result<T, PipelineError<E>> {
        match self.call(&mut f) {
            Ok(r) => r.map_err(PipelineError::Failed),
            Err(full) => Err(PipelineError::BulkheadFull(full)),
        }
    }
}

impl<T, E, B, P> Guard<T, E> for Retry<B, P>
where
    B: Iterator<Item = Duration> + Clone,
    E: PolicyError,
    P: RetryIf<E::Inner>,
{
    type Error = E;
    fn guard<F: FnMut() -> Result<T, E>>(&self, f: F) -> Result<T, E> {
        self.call(f)
    }
}

impl<T, E, B, P, Fb, C> Guard<T, E> for Pipeline<B, P, Fb, C>
where
    B: Iterator<Item = Duration> + Clone,
    P: RetryIf<E>,
    Fb: FallbackFn<E, T>,
    C: Classify<E>,
{
    type Error = PipelineError<E>;
    fn guard<F: FnMut() -> Result<T, E>>(&self, f: F) -> Result<T, PipelineError<E>> {
        self.call(f)
    }
}

/// `.guarded(&policy)` for closures returning `Result`.
///
/// # Examples
///
/// ```
/// use fusebox::{Bulkhead, GuardedFn, PipelineError};
/// let full = Bulkhead::new(0);
/// let r = (|| Ok::<_, std::io::Error>("never runs")).guarded(&full);
/// assert!(matches!(r, Err(PipelineError::BulkheadFull(_))));
/// ```
pub trait GuardedFn<T, E>: FnMut() -> Result<T, E> + Sized {
    /// Runs this closure under `guard`.
    ///
    /// # Errors
    ///
    /// The guard's error type.
    fn guarded<G: Guard<T, E>>(self, guard: &G) -> Result<T, G::Error> {
        guard.guard(self)
    }
}

impl<T, E, F: FnMut() -> Result<T, E>> GuardedFn<T, E> for F {}

/// A policy that can run one future: [`CircuitBreaker`], [`Bulkhead`],
/// `Timeout` and [`Pipeline`] (the last two with feature
/// `tokio`).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use fusebox::{AsyncGuard, CircuitBreaker};
/// let b = CircuitBreaker::builder().build().unwrap();
/// let r = b.guard_future(async { Ok::<_, std::io::Error>(1) }).await;
/// assert_eq!(r.unwrap(), 1);
/// # }
/// ```
pub trait AsyncGuard<T, E> {
    /// The error the guarded future returns.
    type Error;
    /// Runs `fut` under the policy. Cancel-safe: dropping the returned
    /// future drops `fut` and releases whatever the policy holds.
    fn guard_future<Fut>(&self, fut: Fut) -> impl Future<Output = Result<T, Self::Error>>
    where
        Fut: Future<Output = Result<T, E>>;
}

impl<T, E> AsyncGuard<T, E> for CircuitBreaker {
    type Error = BreakerError<E>;
    fn guard_future<Fut>(&self, fut: Fut) -> impl Future<Output = Result<T, BreakerError<E>>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_async(move || fut)
    }
}

/// With feature `tokio`, waits up to the bulkhead's `max_wait`; without it,
/// never waits.
impl<T, E> AsyncGuard<T, E> for Bulkhead {
    type Error = PipelineError<E>;
    async fn guard_future<Fut>(&self, fut: Fut) -> Result<T, PipelineError<E>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        #[cfg(feature = "tokio")]
        let r = self.call_async(fut).await;
        #[cfg(not(feature = "tokio"))]
        let r = self.try_call_async(fut).await;
        match r {
            Ok(r) => r.map_err(PipelineError::Failed),
            Err(full) => Err(PipelineError::BulkheadFull(full)),
        }
    }
}

#[cfg(feature = "tokio")]
impl<T, E> AsyncGuard<T, E> for crate::timeout::Timeout {
    type Error = crate::timeout::TimeoutError<E>;
    fn guard_future<Fut>(
        &self,
        fut: Fut,
    ) -> impl Future<Output = Result<T, crate::timeout::TimeoutError<E>>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        self.call(fut)
    }
}

/// One attempt: a future cannot be retried.
#[cfg(feature = "tokio")]
impl<T, E, B, P, Fb, C> AsyncGuard<T, E> for Pipeline<B, P, Fb, C>
where
    B: Iterator<Item = Duration> + Clone,
    Fb: FallbackFn<E, T>,
    C: Classify<E>,
{
    type Error = PipelineError<E>;
    fn guard_future<Fut>(&self, fut: Fut) -> impl Future<Output = Result<T, PipelineError<E>>>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        self.run_async(fut)
    }
}

/// `.guarded(&policy)` for futures of a `Result` (one attempt).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use fusebox::{CircuitBreaker, GuardedFuture};
/// async fn fetch_reviews(id: u32) -> Result<String, std::io::Error> { Ok(format!("reviews of {id}")) }
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// assert_eq!(fetch_reviews(3).guarded(&breaker).await.unwrap(), "reviews of 3");
/// # }
/// ```
pub trait GuardedFuture<T, E>: Future<Output = Result<T, E>> + Sized {
    /// Runs this future under `guard`.
    fn guarded<G: AsyncGuard<T, E>>(self, guard: &G) -> impl Future<Output = Result<T, G::Error>> {
        guard.guard_future(self)
    }
}

impl<T, E, Fut: Future<Output = Result<T, E>>> GuardedFuture<T, E> for Fut {}

/// A policy that can run an async call made by a closure, retrying with a
/// fresh future: [`CircuitBreaker`] and [`Bulkhead`] (one attempt), and with
/// feature `tokio` [`Retry`] and [`Pipeline`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use fusebox::{AsyncGuardFn, Bulkhead};
/// let b = Bulkhead::new(1);
/// let r = b.guard_fn(|| async { Ok::<_, std::io::Error>(2) }).await;
/// assert_eq!(r.unwrap(), 2);
/// # }
/// ```
pub trait AsyncGuardFn<T, E> {
    /// The error the guarded call returns.
    type Error;
    /// Runs the futures `op` makes under the policy.
    fn guard_fn<Op, Fut>(&self, op: Op) -> impl Future<Output = Result<T, Self::Error>>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>;
}

impl<T, E> AsyncGuardFn<T, E> for CircuitBreaker {
    type Error = BreakerError<E>;
    fn guard_fn<Op, Fut>(&self, op: Op) -> impl Future<Output = Result<T, BreakerError<E>>>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_async(op)
    }
}

impl<T, E> AsyncGuardFn<T, E> for Bulkhead {
    type Error = PipelineError<E>;
    fn guard_fn<Op, Fut>(&self, mut op: Op) -> impl Future<Output = Result<T, PipelineError<E>>>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.guard_future(op())
    }
}

#[cfg(feature = "tokio")]
impl<T, E, B, P> AsyncGuardFn<T, E> for Retry<B, P>
where
    B: Iterator<Item = Duration> + Clone,
    E: PolicyError,
    P: RetryIf<E::Inner>,
{
    type Error = E;
    fn guard_fn<Op, Fut>(&self, op: Op) -> impl Future<Output = Result<T, E>>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_async(op)
    }
}

#[cfg(feature = "tokio")]
impl<T, E, B, P, Fb, C> AsyncGuardFn<T, E> for Pipeline<B, P, Fb, C>
where
    B: Iterator<Item = Duration> + Clone,
    P: RetryIf<E>,
    Fb: FallbackFn<E, T>,
    C: Classify<E>,
{
    type Error = PipelineError<E>;
    fn guard_fn<Op, Fut>(&self, op: Op) -> impl Future<Output = Result<T, PipelineError<E>>>
    where
        Op: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.call_async(op)
    }
}

/// `.guarded(&policy)` for closures that make a future, so the policy can
/// retry with a fresh one.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use fusebox::{CircuitBreaker, GuardedAsyncFn};
/// async fn fetch(id: u32) -> Result<u32, std::io::Error> { Ok(id * 2) }
/// let breaker = CircuitBreaker::builder().build().unwrap();
/// assert_eq!((|| fetch(21)).guarded(&breaker).await.unwrap(), 42);
/// # }
/// ```
pub trait GuardedAsyncFn<T, E, Fut>: FnMut() -> Fut + Sized
where
    Fut: Future<Output = Result<T, E>>,
{
    /// Runs the futures this closure makes under `guard`.
    fn guarded<G: AsyncGuardFn<T, E>>(
        self,
        guard: &G,
    ) -> impl Future<Output = Result<T, G::Error>> {
        guard.guard_fn(self)
    }
}

impl<T, E, Fut, F> GuardedAsyncFn<T, E, Fut> for F
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
}

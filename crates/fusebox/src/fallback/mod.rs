//! Fallback: what to return instead when a call is refused or fails, and why.
//!
//! A breaker that fails fast only helps if the caller has something better to
//! do than fail too (seed 004: "a circuit breaker without a fallback" is the
//! first mistake on its list). A [`Fallback`] turns a refused or failed call
//! into a value, and tells the fallback *why* with a [`Cause`]:
//!
//! | [`Cause`] | `Display` | the call... |
//! |---|---|---|
//! | [`Cause::Rejected`] | `rejected by breaker` | never ran: the breaker is open |
//! | [`Cause::BulkheadFull`] | `bulkhead full` | never ran: too many calls in flight |
//! | [`Cause::TimedOut`] | `timed out` | ran past its deadline and was cancelled |
//! | [`Cause::Failed`] | `failed` | ran and returned an error |
//!
//! The fallback returns `Some(value)` to answer instead, or `None` to let the
//! original error through (a cache miss, say).
//!
//! This is the one fallback shape, `Fn(Cause<'_, E>) -> Option<T>`, wherever
//! a fallback is taken: [`Fallback::new`], [`Pipeline`](crate::Pipeline)'s
//! `fallback`, the tower `FallbackLayer::new` (where `E` is the boxed error
//! and [`Cause::downcast_ref`] reaches the original) and the HTTP stack's
//! `recover`. A breaker's refusal carries its [`retry_after`](Cause::retry_after);
//! a failure carries the original error ([`Cause::error`]).
//!
//! # Seed 004's strategies
//!
//! **Cached value**: serve the last good answer, or the error on a miss.
//!
//! ```
//! use fusebox::{CircuitBreaker, Fallback};
//! use std::collections::HashMap;
//!
//! let cache: HashMap<u32, &str> = HashMap::from([(7, "cached product 7")]);
//! let product = Fallback::new(|_why| cache.get(&7).copied());
//! let breaker = CircuitBreaker::builder().build()?;
//! breaker.force_open();
//! let r = product.call(|| breaker.call(|| Err::<&str, _>("product service down")));
//! assert_eq!(r.unwrap(), "cached product 7");
//! # Ok::<(), fusebox::ConfigError>(())
//! ```
//!
//! **Default value**: popular items instead of personal recommendations.
//!
//! ```
//! use fusebox::Fallback;
//! let recommendations = Fallback::value(vec!["bestseller 1", "bestseller 2"]);
//! let r = recommendations.call(|| Err::<Vec<&str>, std::io::Error>(std::io::Error::other("down")));
//! assert_eq!(r.unwrap().len(), 2);
//! ```
//!
//! **Queue for later**: accept the payment now, charge it when the service is back.
//!
//! ```
//! use fusebox::{Cause, CircuitBreaker, Fallback};
//! use std::sync::Mutex;
//!
//! #[derive(Debug, PartialEq)]
//! enum Payment { Charged, Queued }
//! let later = Mutex::new(Vec::new());
//! let charge = Fallback::new(|why: Cause<'_, &str>| {
//!     later.lock().unwrap().push((19_99, why.to_string()));
//!     Some(Payment::Queued)
//! });
//! let breaker = CircuitBreaker::builder().build()?;
//! breaker.force_open();
//! let r = charge.call(|| breaker.call(|| Ok::<_, &str>(Payment::Charged)));
//! assert_eq!(r.unwrap(), Payment::Queued);
//! assert_eq!(later.lock().unwrap()[0], (19_99, "rejected by breaker".to_string()));
//! # Ok::<(), fusebox::ConfigError>(())
//! ```
//!
//! **Backup service**: when the primary is refused, ask the secondary.
//!
//! ```
//! use fusebox::{Cause, CircuitBreaker, Fallback};
//! fn backup_charge(cents: u32) -> Result<String, &'static str> { Ok(format!("backup charged {cents}")) }
//!
//! let primary = CircuitBreaker::builder().build()?;
//! primary.force_open();
//! let charge = Fallback::new(|why: Cause<'_, &str>| match why {
//!     // Only when the primary was not even tried; a real failure may have charged.
//!     Cause::Rejected(_) | Cause::BulkheadFull(_) => backup_charge(500).ok(),
//!     _ => None,
//! });
//! let r = charge.call(|| primary.call(|| Err::<String, _>("primary down")));
//! assert_eq!(r.unwrap(), "backup charged 500");
//! # Ok::<(), fusebox::ConfigError>(())
//! ```
//!
//! **Degraded page**: build the page from whatever answered.
//!
//! ```
//! use fusebox::{CircuitBreaker, Fallback};
//!
//! let shipping = CircuitBreaker::builder().build()?;
//! shipping.force_open();
//! let options = Fallback::value(vec!["standard (estimate unavailable)".to_string()]);
//! let page = format!(
//!     "cart: 3 items; shipping: {}",
//!     options
//!         .call(|| shipping.call(|| Ok::<_, &str>(vec!["express: 1 day".to_string()])))
//!         .unwrap()
//!         .join(", ")
//! );
//! assert_eq!(page, "cart: 3 items; shipping: standard (estimate unavailable)");
//! # Ok::<(), fusebox::ConfigError>(())
//! ```

pub use crate::policy::{Cause, PolicyError};
use std::fmt;
use std::future::Future;

/// A fallback policy: answers with `f(cause)` when a call is refused or fails.
///
/// `f` gets the [`Cause`] and returns `Some(value)` to answer instead, or
/// `None` to let the original error through. The module docs show seed 004's
/// strategies (cached value, default, queue for later, backup service,
/// degraded page).
///
/// # Examples
///
/// ```
/// use fusebox::{Bulkhead, Cause, Fallback};
///
/// let bulkhead = Bulkhead::new(0);
/// let price = Fallback::new(|why: Cause<'_, std::convert::Infallible>| {
///     Some(format!("price unavailable ({why})"))
/// });
/// let r = price.call(|| bulkhead.try_call(|| "19.99".to_string()));
/// assert_eq!(r.unwrap(), "price unavailable (bulkhead full)");
/// ```
#[derive(Clone, Copy)]
pub struct Fallback<F> {
    f: F,
}

impl<F> fmt::Debug for Fallback<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fallback").finish_non_exhaustive()
    }
}

/// What a [`Fallback`] runs: any `Fn(Cause<'_, E>) -> Option<T>` closure, or
/// [`Value`].
///
/// # Examples
///
/// ```
/// use fusebox::{fallback::FallbackFn, Cause, PolicyError};
/// let f = |why: Cause<'_, std::io::Error>| Some(why.to_string());
/// let e = std::io::Error::other("x");
/// assert_eq!(f.fallback(e.cause()), Some("failed".to_string()));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a fallback for calls returning `Result<{T}, {E}>`",
    note = "a fallback is a `Fn(Cause<'_, E>) -> Option<T>`: it gets why the call failed and answers `Some(value)` or `None`"
)]
pub trait FallbackFn<E, T> {
    /// The value to answer with for `cause`, or `None` to pass the error on.
    fn fallback(&self, cause: Cause<'_, E>) -> Option<T>;
}

impl<E, T, F: FallbackFn<E, T> + ?Sized> FallbackFn<E, T> for std::sync::Arc<F> {
    fn fallback(&self, cause: Cause<'_, E>) -> Option<T> {
        (**self).fallback(cause)
    }
}

impl<E, T, F> FallbackFn<E, T> for F
where
    F: Fn(Cause<'_, E>) -> Option<T> + ?Sized,
{
    fn fallback(&self, cause: Cause<'_, E>) -> Option<T> {
        self(cause)
    }
}

/// The fallback of [`Fallback::value`]: always a clone of one value.
///
/// # Examples
///
/// ```
/// use fusebox::{fallback::{FallbackFn, Value}, PolicyError};
/// let v = Value::new(3);
/// let e = std::io::Error::other("x");
/// assert_eq!(v.fallback(e.cause()), Some(3));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Value<T>(T);

impl<T> Value<T> {
    /// Always answers with a clone of `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// let _ = fusebox::fallback::Value::new("n/a");
    /// ```
    pub const fn new(value: T) -> Self {
        Value(value)
    }
}

impl<E, T: Clone> FallbackFn<E, T> for Value<T> {
    fn fallback(&self, _: Cause<'_, E>) -> Option<T> {
        Some(self.0.clone())
    }
}

impl<F> Fallback<F> {
    /// A fallback computed by `f` from the cause.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Cause, Fallback};
    /// let fb = Fallback::new(|why: Cause<'_, std::io::Error>| why.is_refusal().then_some(0));
    /// // A failure (not a refusal): no fallback, the error comes through.
    /// assert!(fb.call(|| Err::<i32, _>(std::io::Error::other("x"))).is_err());
    /// ```
    pub const fn new<E, T>(f: F) -> Self
    where
        // Stated here (not only on `call`) so an unannotated closure
        // `|why| ...` is inferred to accept a `Cause` of any lifetime.
        F: Fn(Cause<'_, E>) -> Option<T>,
    {
        Fallback { f }
    }

    /// The fallback function.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fallback::{FallbackFn, Value};
    /// let fb = fusebox::Fallback::value(2);
    /// let _: &Value<i32> = fb.get_ref();
    /// ```
    pub const fn get_ref(&self) -> &F {
        &self.f
    }

    /// Runs `op`; on error, answers with the fallback if it has one.
    ///
    /// # Errors
    ///
    /// `op`'s error when the fallback returns `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// let fb = fusebox::Fallback::value(1);
    /// assert_eq!(fb.call(|| Ok::<_, std::io::Error>(5)).unwrap(), 5);
    /// assert_eq!(fb.call(|| Err::<i32, _>(std::io::Error::other("x"))).unwrap(), 1);
    /// ```
    pub fn call<T, E, Op>(&self, op: Op) -> Result<T, E>
    where
        Op: FnOnce() -> Result<T, E>,
        E: PolicyError,
        F: FallbackFn<E::Inner, T>,
    {
        op().or_else(|e| self.recover(e))
    }

    /// Awaits `fut`; on error, answers with the fallback if it has one.
    ///
    /// # Errors
    ///
    /// `fut`'s error when the fallback returns `None`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future drops `fut`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let fb = fusebox::Fallback::value("default");
    /// let r = fb.call_async(async { Err(std::io::Error::other("down")) }).await;
    /// assert_eq!(r.unwrap(), "default");
    /// # }
    /// ```
    pub async fn call_async<T, E, Fut>(&self, fut: Fut) -> Result<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
        E: PolicyError,
        F: FallbackFn<E::Inner, T>,
    {
        fut.await.or_else(|e| self.recover(e))
    }

    /// The fallback's answer for the error `e`: `Ok` with the fallback value,
    /// or `Err(e)` when it has none.
    ///
    /// # Errors
    ///
    /// `e` itself when the fallback returns `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// let fb = fusebox::Fallback::value(0u8);
    /// assert_eq!(fb.recover(std::io::Error::other("x")).unwrap(), 0);
    /// ```
    pub fn recover<T, E>(&self, e: E) -> Result<T, E>
    where
        E: PolicyError,
        F: FallbackFn<E::Inner, T>,
    {
        match self.f.fallback(e.cause()) {
            Some(v) => Ok(v),
            None => Err(e),
        }
    }
}

impl<T: Clone> Fallback<Value<T>> {
    /// A fallback that always answers with a clone of `value`.
    ///
    /// # Examples
    ///
    /// ```
    /// let fb = fusebox::Fallback::value(vec![1, 2]);
    /// assert_eq!(fb.call(|| Err(std::io::Error::other("x"))).unwrap(), vec![1, 2]);
    /// ```
    pub const fn value(value: T) -> Self {
        Fallback { f: Value(value) }
    }
}

/// Runs `fut`; on error, awaits the async fallback `f(error)`, which gets
/// the owned error (call [`PolicyError::cause`] on it for the reason) and
/// returns `Ok` with a value or `Err` with the error to pass on. For
/// fallbacks that must await, such as a backup service.
///
/// # Errors
///
/// Whatever `f` returns.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use fusebox::{fallback::or_else_async, Cause, PolicyError};
///
/// async fn backup() -> Result<&'static str, std::io::Error> { Ok("from backup") }
/// let r = or_else_async(async { Err(std::io::Error::other("primary down")) }, |e| async move {
///     match e.cause() {
///         Cause::Failed(_) => backup().await,
///         _ => Err(e),
///     }
/// })
/// .await;
/// assert_eq!(r.unwrap(), "from backup");
/// # }
/// ```
pub async fn or_else_async<T, E, E2, Fut, F, FFut>(fut: Fut, f: F) -> Result<T, E2>
where
    Fut: Future<Output = Result<T, E>>,
    F: FnOnce(E) -> FFut,
    FFut: Future<Output = Result<T, E2>>,
{
    match fut.await {
        Ok(v) => Ok(v),
        Err(e) => f(e).await,
    }
}

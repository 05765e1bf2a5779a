//! The adaptive policies as tower middleware: [`AdaptiveLimitLayer`]
//! (feature `limit`) and [`ThrottleLayer`] (feature `throttle`) wrap a
//! service in [`Admission`], which asks the policy at each `call` and
//! refuses at once (the policy's error, boxed: `LimitExceeded`,
//! `Throttled`) or calls the inner service and tells the policy how it
//! went:
//!
//! | inner result | adaptive limit | throttle |
//! |---|---|---|
//! | a response | a sample (round-trip time from admission) | an accept |
//! | an [`Elapsed`](crate::Elapsed) (a timeout layer inside) | a drop (the limit is cut) | no accept |
//! | any other error | no sample | no accept |
//! | a fusebox refusal from a layer inside (a full bulkhead, an open breaker) | no sample | the request taken back |
//! | the future dropped | released, no sample | the request taken back |
//!
//! A service answering its overload with a response (an HTTP 429 or 503)
//! should turn it into an error inside these layers to count it as one.
//! A timeout is recognised as fusebox's [`Elapsed`](crate::Elapsed)
//! (`fusebox::tower::TimeoutLayer`), also as the source of another error;
//! tower's own `tower::timeout` error is not, and counts as another error.
//!
//! [`AdaptiveLimitLayer`]: super::AdaptiveLimitLayer
//! [`ThrottleLayer`]: super::ThrottleLayer

use super::BoxError;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tower::{Layer, Service};

/// The policy an [`Admission`] asks.
#[derive(Clone, Debug)]
enum Gate {
    #[cfg(feature = "limit")]
    Limit(crate::limit::AdaptiveLimit),
    #[cfg(feature = "throttle")]
    Throttle(crate::throttle::Throttle),
}

/// What an admitted call holds until it ends.
#[derive(Debug)]
enum Held {
    #[cfg(feature = "limit")]
    Limit(crate::limit::LimitPermit),
    #[cfg(feature = "throttle")]
    Throttle(crate::throttle::ThrottlePermit),
}

impl Gate {
    fn admit(&self) -> Result<Held, BoxError> {
        match self {
            #[cfg(feature = "limit")]
            Gate::Limit(l) => l.try_acquire().map(Held::Limit).map_err(Into::into),
            #[cfg(feature = "throttle")]
            Gate::Throttle(t) => t.try_acquire().map(Held::Throttle).map_err(Into::into),
        }
    }
}

impl Held {
    /// Tells the policy how the call ended: answered, timed out, refused
    /// by a fusebox policy further in (the dependency never judged it), or
    /// failed otherwise.
    fn settle(self, answered: bool, timed_out: bool, refused: bool) {
        let _ = (timed_out, refused); // not every policy tells them apart
        match self {
            #[cfg(feature = "limit")]
            Held::Limit(p) if answered => p.success(),
            #[cfg(feature = "limit")]
            Held::Limit(p) if timed_out => p.dropped(),
            #[cfg(feature = "limit")]
            Held::Limit(p) => p.ignore(),
            #[cfg(feature = "throttle")]
            Held::Throttle(p) if answered => p.accept(),
            #[cfg(feature = "throttle")]
            Held::Throttle(p) if refused => p.cancel(),
            #[cfg(feature = "throttle")]
            Held::Throttle(p) => p.overload(),
        }
    }

    /// The call was dropped before it ended: the limit gives its place
    /// back, the throttle takes its request back.
    fn abandon(self) {
        match self {
            #[cfg(feature = "limit")]
            Held::Limit(p) => drop(p),
            #[cfg(feature = "throttle")]
            Held::Throttle(p) => p.cancel(),
        }
    }
}

/// Wraps a service in an adaptive concurrency limit (feature `limit`); see
/// the [module docs](self).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fusebox::tower::BoxError> {
/// use fusebox::limit::{AdaptiveLimit, LimitConfig, LimitExceeded};
/// use fusebox::tower::AdaptiveLimitLayer;
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// let limit = AdaptiveLimit::new(LimitConfig::default().initial(1))?;
/// let mut svc = AdaptiveLimitLayer::new(limit.clone())
///     .layer(service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x + 1) }));
/// let held = limit.try_acquire().unwrap(); // the one slot, taken elsewhere
/// let refused = svc.ready().await?.call(1).await.unwrap_err();
/// assert!(refused.is::<LimitExceeded>());
/// drop(held);
/// assert_eq!(svc.ready().await?.call(1).await?, 2);
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "limit")]
#[derive(Debug, Clone)]
pub struct AdaptiveLimitLayer {
    limit: crate::limit::AdaptiveLimit,
}

#[cfg(feature = "limit")]
impl AdaptiveLimitLayer {
    /// A layer admitting calls through `limit` (a shared handle).
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = fusebox::limit::AdaptiveLimit::new(fusebox::limit::LimitConfig::default())?;
    /// let layer = fusebox::tower::AdaptiveLimitLayer::new(limit);
    /// assert_eq!(layer.limit().limit(), 20);
    /// # Ok::<(), fusebox::limit::LimitConfigError>(())
    /// ```
    pub fn new(limit: crate::limit::AdaptiveLimit) -> Self {
        AdaptiveLimitLayer { limit }
    }

    /// The limit.
    ///
    /// # Examples
    ///
    /// ```
    /// let limit = fusebox::limit::AdaptiveLimit::new(fusebox::limit::LimitConfig::default())?;
    /// assert_eq!(fusebox::tower::AdaptiveLimitLayer::new(limit).limit().snapshot().in_flight, 0);
    /// # Ok::<(), fusebox::limit::LimitConfigError>(())
    /// ```
    pub fn limit(&self) -> &crate::limit::AdaptiveLimit {
        &self.limit
    }
}

#[cfg(feature = "limit")]
impl<S> Layer<S> for AdaptiveLimitLayer {
    type Service = Admission<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Admission {
            inner,
            gate: Gate::Limit(self.limit.clone()),
        }
    }
}

/// Wraps a service in adaptive throttling (feature `throttle`); see the
/// [module docs](self).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fusebox::tower::BoxError> {
/// use fusebox::throttle::{Throttle, ThrottleConfig};
/// use fusebox::tower::ThrottleLayer;
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// let throttle = Throttle::new(ThrottleConfig::default())?;
/// let mut svc = ThrottleLayer::new(throttle.clone())
///     .layer(service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x) }));
/// svc.ready().await?.call(7).await?;
/// assert_eq!((throttle.snapshot().requests, throttle.snapshot().accepts), (1, 1));
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "throttle")]
#[derive(Debug, Clone)]
pub struct ThrottleLayer {
    throttle: crate::throttle::Throttle,
}

#[cfg(feature = "throttle")]
impl ThrottleLayer {
    /// A layer admitting calls through `throttle` (a shared handle).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// let layer = fusebox::tower::ThrottleLayer::new(t);
    /// assert_eq!(layer.throttle().rejection_probability(), 0.0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn new(throttle: crate::throttle::Throttle) -> Self {
        ThrottleLayer { throttle }
    }

    /// The throttle.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
    /// assert_eq!(fusebox::tower::ThrottleLayer::new(t).throttle().snapshot().requests, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn throttle(&self) -> &crate::throttle::Throttle {
        &self.throttle
    }
}

#[cfg(feature = "throttle")]
impl<S> Layer<S> for ThrottleLayer {
    type Service = Admission<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Admission {
            inner,
            gate: Gate::Throttle(self.throttle.clone()),
        }
    }
}

/// A service behind an adaptive limit or a throttle; made by
/// [`AdaptiveLimitLayer`] or
/// [`ThrottleLayer`].
///
/// Readiness is the inner service's; the policy is asked at `call`.
///
/// # Examples
///
/// ```
/// use tower::Layer;
/// let t = fusebox::throttle::Throttle::new(fusebox::throttle::ThrottleConfig::default())?;
/// let svc: fusebox::tower::admission::Admission<_> = fusebox::tower::ThrottleLayer::new(t)
///     .layer(tower::service_fn(|x: u8| async move { Ok::<_, std::io::Error>(x) }));
/// # let _ = svc;
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Admission<S> {
    inner: S,
    gate: Gate,
}

impl<S, Req> Service<Req> for Admission<S>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        match self.gate.admit() {
            Ok(held) => ResponseFuture {
                kind: Kind::Admitted {
                    future: self.inner.call(request),
                    held: Some(held),
                },
            },
            Err(refused) => ResponseFuture {
                kind: Kind::Refused {
                    refused: Some(refused),
                },
            },
        }
    }
}

pin_project! {
    /// Response future of [`Admission`]: holds the policy's permit until the
    /// inner call ends (dropped early: the limit's place given back, the
    /// throttle's request taken back).
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }

    impl<F> PinnedDrop for ResponseFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            if let KindProj::Admitted { held, .. } = this.project().kind.project() {
                if let Some(held) = held.take() {
                    held.abandon();
                }
            }
        }
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Admitted {
            #[pin]
            future: F,
            held: Option<Held>,
        },
        Refused {
            refused: Option<BoxError>,
        },
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Admitted { future, held } => {
                let result = ready!(future.poll(cx)).map_err(Into::into);
                if let Some(held) = held.take() {
                    let timed_out = result.as_ref().is_err_and(|e| timed_out(&**e));
                    let refused = result
                        .as_ref()
                        .is_err_and(|e| crate::policy::refusal_of_error(&**e).is_some());
                    held.settle(result.is_ok(), timed_out, refused);
                }
                Poll::Ready(result)
            }
            KindProj::Refused { refused } => match refused.take() {
                Some(e) => Poll::Ready(Err(e)),
                None => panic!("fusebox Admission ResponseFuture polled after completion"),
            },
        }
    }
}

/// Whether `error`, or an error it was caused by, is fusebox's timeout.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.is::<crate::Elapsed>() {
            return true;
        }
        cause = e.source();
    }
    false
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Admitted { held: Some(_), .. } => "running",
            Kind::Refused { refused: Some(_) } => "refused",
            _ => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

//! Hedging as tower middleware (feature `tokio`): [`HedgeLayer`] wraps a
//! service in [`Hedge`], which sends a request again when the first attempt
//! is slower than the [`hedge`](crate::hedge::Hedge)'s delay and answers with
//! the first success. See [`crate::hedge`] for the policy.
//!
//! The first attempt goes to the ready service when the request is called;
//! each extra attempt to a clone of the inner service, driven to readiness
//! first. The request must be `Clone` (hedge only requests that may run
//! twice). A dropped attempt is cancelled: a breaker layer inside releases
//! its permit without a verdict, a bulkhead its slot. The response future
//! ([`ResponseFuture`]) is not boxed; each call clones the request and the
//! service once (for the hedge it may send), and what those clones
//! allocate (an `http::Request`'s headers, say) is allocated per call.
//!
//! # Examples
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), fusebox::tower::BoxError> {
//! use fusebox::hedge::{Delay, Hedge};
//! use fusebox::tower::HedgeLayer;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use tower::{service_fn, Layer, Service, ServiceExt};
//!
//! let hedge = Hedge::builder().delay(Delay::Fixed(Duration::from_millis(50))).build()?;
//! let sent = Arc::new(AtomicU32::new(0));
//! let n = sent.clone();
//! let replica = service_fn(move |id: u32| {
//!     let first = n.fetch_add(1, Ordering::Relaxed) == 0; // the first attempt stalls
//!     async move {
//!         tokio::time::sleep(Duration::from_millis(if first { 5_000 } else { 10 })).await;
//!         Ok::<_, std::io::Error>(id * 2)
//!     }
//! });
//! let mut svc = HedgeLayer::new(hedge.clone()).layer(replica);
//! assert_eq!(svc.ready().await?.call(21).await?, 42);
//! assert_eq!(hedge.stats().won_by_hedge, 1);
//! # Ok(())
//! # }
//! ```

use super::BoxError;
use crate::hedge::Hedging;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::time::Sleep;
use tower::{Layer, Service};

/// Wraps a service in [`Hedge`]; see the [module docs](self).
///
/// # Examples
///
/// ```
/// let hedge = fusebox::hedge::Hedge::builder().build()?;
/// let layer = fusebox::tower::HedgeLayer::new(hedge);
/// assert_eq!(layer.hedge().max_extra(), 1);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct HedgeLayer {
    hedge: crate::hedge::Hedge,
}

impl HedgeLayer {
    /// A layer hedging with `hedge` (a shared handle: its delay histogram,
    /// counters and budget are the same for every service it wraps).
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = fusebox::tower::HedgeLayer::new(fusebox::hedge::Hedge::builder().build()?);
    /// # let _ = layer;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn new(hedge: crate::hedge::Hedge) -> Self {
        HedgeLayer { hedge }
    }

    /// The hedge.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = fusebox::tower::HedgeLayer::new(fusebox::hedge::Hedge::builder().build()?);
    /// assert_eq!(layer.hedge().stats().calls, 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn hedge(&self) -> &crate::hedge::Hedge {
        &self.hedge
    }
}

impl<S> Layer<S> for HedgeLayer {
    type Service = Hedge<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Hedge {
            inner,
            hedge: self.hedge.clone(),
        }
    }
}

/// A service whose slow requests are sent again; made by [`HedgeLayer`].
///
/// # Examples
///
/// ```
/// use tower::Layer;
/// let hedge = fusebox::hedge::Hedge::builder().build()?;
/// let svc: fusebox::tower::hedge::Hedge<_> =
///     fusebox::tower::HedgeLayer::new(hedge).layer(tower::service_fn(|x: u8| async move { Ok::<_, std::io::Error>(x) }));
/// # let _ = svc;
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Hedge<S> {
    inner: S,
    hedge: crate::hedge::Hedge,
}

impl<S, Req> Service<Req> for Hedge<S>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    Req: Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, Req>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The ready service takes the first attempt; clones, driven to
        // readiness in turn, take the others.
        let first = Attempt::Calling {
            future: self.inner.call(request.clone()),
        };
        ResponseFuture {
            hedge: self.hedge.clone(),
            hedging: None,
            spare: Spare {
                service: self.inner.clone(),
                request,
            },
            first,
            timer: None,
        }
    }
}

pin_project! {
    /// The future of a [`Hedge`] service's response: the hedged call (see
    /// [`crate::hedge::Hedge::call`]), allocating nothing unless a hedge
    /// is sent. The first attempt is sent by [`Service::call`]; the call is
    /// counted, and its hedge delay runs, from the future's first poll.
    ///
    /// Dropping it drops every attempt in flight.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), fusebox::tower::BoxError> {
    /// use fusebox::tower::HedgeLayer;
    /// use tower::{service_fn, Layer, Service, ServiceExt};
    /// let hedge = fusebox::hedge::Hedge::builder().build()?;
    /// let mut svc = HedgeLayer::new(hedge)
    ///     .layer(service_fn(|x: u8| async move { Ok::<_, std::io::Error>(x) }));
    /// let future: fusebox::tower::hedge::ResponseFuture<_, u8> = svc.ready().await?.call(7);
    /// assert_eq!(future.await?, 7);
    /// # Ok(())
    /// # }
    /// ```
    pub struct ResponseFuture<S, Req>
    where
        S: Service<Req>,
    {
        hedge: crate::hedge::Hedge,
        // The call, from its first poll on (as `Hedge::call`'s).
        hedging: Option<Hedging<BoxError, Attempt<S, Req>>>,
        // What the extra attempts are made from.
        spare: Spare<S, Req>,
        #[pin]
        first: Attempt<S, Req>,
        #[pin]
        timer: Option<Sleep>,
    }
}

impl<S, Req> Future for ResponseFuture<S, Req>
where
    S: Service<Req> + Clone,
    S::Error: Into<BoxError>,
    Req: Clone,
{
    type Output = Result<S::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let hedge = this.hedge;
        let spare = this.spare;
        this.hedging.get_or_insert_with(|| hedge.begin()).poll(
            hedge,
            this.first,
            this.timer,
            &mut || spare.attempt(),
            cx,
        )
    }
}

impl<S: Service<Req>, Req> fmt::Debug for ResponseFuture<S, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("hedge", &self.hedge)
            .finish_non_exhaustive()
    }
}

/// A clone of the service and the request, for extra attempts.
struct Spare<S, Req> {
    service: S,
    request: Req,
}

impl<S: Service<Req> + Clone, Req: Clone> Spare<S, Req> {
    fn attempt(&self) -> Attempt<S, Req> {
        Attempt::Readying {
            service: self.service.clone(),
            request: Some(self.request.clone()),
        }
    }
}

pin_project! {
    /// One attempt: a service driven to readiness, then its call.
    #[project = AttemptProj]
    enum Attempt<S, Req>
    where
        S: Service<Req>,
    {
        Readying {
            service: S,
            request: Option<Req>,
        },
        Calling {
            #[pin]
            future: S::Future,
        },
    }
}

impl<S, Req> Future for Attempt<S, Req>
where
    S: Service<Req>,
    S::Error: Into<BoxError>,
{
    type Output = Result<S::Response, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                AttemptProj::Readying { service, request } => {
                    if let Err(e) = ready!(service.poll_ready(cx)) {
                        return Poll::Ready(Err(e.into()));
                    }
                    let request = request
                        .take()
                        .expect("fusebox hedge: an attempt sends its request once");
                    let future = service.call(request);
                    self.set(Attempt::Calling { future });
                }
                AttemptProj::Calling { future } => return future.poll(cx).map_err(Into::into),
            }
        }
    }
}

//! Hedging as tower middleware (feature `tokio`): [`HedgeLayer`] wraps a
//! service in [`Hedge`], which sends a request again when the first attempt
//! is slower than the [`hedge`](crate::hedge::Hedge)'s delay and answers with
//! the first success. See [`crate::hedge`] for the policy.
//!
//! Each extra attempt goes to a clone of the inner service, driven to
//! readiness first; the request must be `Clone` (hedge only requests that
//! may run twice). A dropped attempt is cancelled: a breaker layer inside
//! releases its permit without a verdict, a bulkhead its slot.
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
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
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

/// The future of a [`Hedge`] service's response.
pub type ResponseFuture<R> = Pin<Box<dyn Future<Output = Result<R, BoxError>> + Send>>;

impl<S, Req> Service<Req> for Hedge<S>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    Req: Clone + Send + 'static,
    S::Response: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The ready service takes the first attempt; clones, driven to
        // readiness in turn, take the others.
        let spare = self.inner.clone();
        let mut first = Some(std::mem::replace(&mut self.inner, spare.clone()));
        let hedge = self.hedge.clone();
        Box::pin(async move {
            hedge
                .call(move || {
                    let request = request.clone();
                    let ready = first.take();
                    let mut other = spare.clone();
                    async move {
                        let mut svc = match ready {
                            Some(svc) => svc,
                            None => {
                                std::future::poll_fn(|cx| other.poll_ready(cx))
                                    .await
                                    .map_err(Into::into)?;
                                other
                            }
                        };
                        svc.call(request).await.map_err(Into::into)
                    }
                })
                .await
        })
    }
}

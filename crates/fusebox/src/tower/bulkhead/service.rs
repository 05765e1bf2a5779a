use super::future::ResponseFuture;
use crate::tower::BoxError;
use crate::{BulkheadFull, BulkheadPermit};
use std::fmt;
use std::task::{Context, Poll};
use tower::Service;

/// What `poll_ready` got from the bulkhead, waiting for `call`.
enum Slot {
    Taken(BulkheadPermit),
    Full(BulkheadFull),
}

/// Limits the requests in flight to the inner service with a
/// [bulkhead](crate::Bulkhead); see the [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::tower::bulkhead::Bulkhead;
/// use tower::{service_fn, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fusebox::tower::BoxError> {
/// let inner = service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x + 1) });
/// let mut svc = Bulkhead::new(inner, fusebox::Bulkhead::new(8));
/// assert_eq!(svc.ready().await?.call(1).await?, 2);
/// # Ok(())
/// # }
/// ```
pub struct Bulkhead<S> {
    inner: S,
    bulkhead: crate::Bulkhead,
    /// Taken in `poll_ready`, used (and cleared) by `call`.
    slot: Option<Slot>,
}

impl<S> Bulkhead<S> {
    /// Wraps `inner`, taking slots from `bulkhead`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::bulkhead::Bulkhead;
    ///
    /// let svc = Bulkhead::new((), fusebox::Bulkhead::new(8));
    /// # let _ = svc;
    /// ```
    pub fn new(inner: S, bulkhead: crate::Bulkhead) -> Self {
        Bulkhead {
            inner,
            bulkhead,
            slot: None,
        }
    }

    /// The bulkhead (shared with every clone).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::bulkhead::Bulkhead;
    ///
    /// let svc = Bulkhead::new((), fusebox::Bulkhead::new(8));
    /// assert_eq!(svc.bulkhead().limit(), 8);
    /// ```
    pub fn bulkhead(&self) -> &crate::Bulkhead {
        &self.bulkhead
    }

    /// Gets a reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::bulkhead::Bulkhead;
    ///
    /// let svc = Bulkhead::new(5, fusebox::Bulkhead::new(8));
    /// assert_eq!(*svc.get_ref(), 5);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Gets a mutable reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::bulkhead::Bulkhead;
    ///
    /// let mut svc = Bulkhead::new(5, fusebox::Bulkhead::new(8));
    /// *svc.get_mut() = 6;
    /// assert_eq!(*svc.get_ref(), 6);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service. A slot taken by
    /// `poll_ready` and not yet used is freed.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::bulkhead::Bulkhead;
    ///
    /// let svc = Bulkhead::new(5, fusebox::Bulkhead::new(8));
    /// assert_eq!(svc.into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for Bulkhead<S>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !matches!(self.slot, Some(Slot::Taken(_))) {
            // No slot yet, or a refusal that may be stale: try again, never wait.
            let slot = match self.bulkhead.try_acquire() {
                Ok(permit) => Slot::Taken(permit),
                // Ready, so that `call` can answer with the refusal
                // without touching the inner service.
                Err(full) => Slot::Full(full),
            };
            let refused = matches!(slot, Slot::Full(_));
            // What is replaced holds nothing to release (no value, or a
            // refusal): no drop glue to run.
            let old = self.slot.replace(slot);
            debug_assert!(matches!(old, None | Some(Slot::Full(_))));
            std::mem::forget(old);
            if refused {
                return Poll::Ready(Ok(()));
            }
        }
        // A slot is held: now, and only now, the inner service's readiness.
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    /// # Panics
    ///
    /// If `poll_ready` has not returned `Ready(Ok(()))` since the last call,
    /// like every tower service.
    fn call(&mut self, request: Request) -> Self::Future {
        match self.slot.take() {
            Some(Slot::Taken(permit)) => ResponseFuture::admitted(self.inner.call(request), permit),
            Some(Slot::Full(full)) => ResponseFuture::refused(full),
            None => panic!("fusebox Bulkhead: poll_ready must be called first"),
        }
    }
}

impl<S: Clone> Clone for Bulkhead<S> {
    /// The clone shares the bulkhead; it holds no slot.
    fn clone(&self) -> Self {
        Bulkhead::new(self.inner.clone(), self.bulkhead.clone())
    }
}

impl<S: fmt::Debug> fmt::Debug for Bulkhead<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slot = match &self.slot {
            None => "none",
            Some(Slot::Taken(_)) => "taken",
            Some(Slot::Full(_)) => "full",
        };
        f.debug_struct("Bulkhead")
            .field("inner", &self.inner)
            .field("bulkhead", &self.bulkhead)
            .field("slot", &slot)
            .finish()
    }
}

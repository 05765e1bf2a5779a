use super::future::ResponseFuture;
use super::layer::Mode;
use super::{Classify, DefaultClassifier};
use crate::tower::BoxError;
use crate::{Permit, Rejected};
use std::fmt;
#[cfg(feature = "tokio")]
use std::future::Future;
use std::task::{ready, Context, Poll};
use tower::Service;

/// In back-pressure mode, the shortest wait before the breaker is asked again
/// (used when the breaker says "now", e.g. half-open with every probe slot
/// taken, so readiness is not polled in a busy loop).
///
/// # Examples
///
/// ```
/// assert!(fusebox::tower::breaker::BACK_PRESSURE_MIN_WAIT > std::time::Duration::ZERO);
/// ```
#[cfg(feature = "tokio")]
pub const BACK_PRESSURE_MIN_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

/// What `poll_ready` got from the breaker, waiting for `call`, or the wait
/// it is in. One field for all three keeps the service (and the clone a
/// retry layer keeps of it for each request) small.
enum Admission {
    Admitted(Permit),
    Refused(Rejected),
    /// Back-pressure mode: the timer `poll_ready` waits on while the breaker
    /// is open.
    #[cfg(feature = "tokio")]
    Waiting(std::pin::Pin<Box<tokio::time::Sleep>>),
}

/// Guards the inner service with a [circuit breaker](crate::CircuitBreaker).
///
/// See the [module docs](super) for how requests are admitted, refused and
/// classified.
///
/// A service made ready (`poll_ready` returned `Ready(Ok(()))`) holds the
/// breaker's permit, in half-open a probe slot, until it is called or
/// dropped: drop a ready clone you will not call, and give a request whose
/// readiness may wait a deadline that owns the clone (see [the module
/// docs](super#a-ready-service-holds-its-permit)).
///
/// # Examples
///
/// ```
/// use fusebox::tower::breaker::CircuitBreaker;
/// use tower::{service_fn, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), fusebox::tower::BoxError> {
/// let breaker = fusebox::CircuitBreaker::builder().build()?;
/// let mut svc = CircuitBreaker::new(
///     service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x * 2) }),
///     breaker,
/// );
/// assert_eq!(svc.ready().await?.call(21).await?, 42);
/// # Ok(())
/// # }
/// ```
pub struct CircuitBreaker<S, C = DefaultClassifier> {
    inner: S,
    breaker: crate::CircuitBreaker,
    classifier: C,
    mode: Mode,
    /// Taken in `poll_ready`, used (and cleared) by `call`.
    admission: Option<Admission>,
}

impl<S> CircuitBreaker<S> {
    /// Wraps `inner` in `breaker`, with the [`DefaultClassifier`] and
    /// rejections answered in `call`. Use [`CircuitBreakerLayer`](super::CircuitBreakerLayer)
    /// for the other options.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::breaker::CircuitBreaker;
    /// use tower::service_fn;
    ///
    /// let inner = service_fn(|()| async { Ok::<_, std::io::Error>(()) });
    /// let svc = CircuitBreaker::new(inner, fusebox::CircuitBreaker::builder().build().unwrap());
    /// # let _ = svc;
    /// ```
    pub fn new(inner: S, breaker: crate::CircuitBreaker) -> Self {
        Self::with_parts(inner, breaker, DefaultClassifier, Mode::Reject)
    }
}

impl<S, C> CircuitBreaker<S, C> {
    pub(crate) fn with_parts(
        inner: S,
        breaker: crate::CircuitBreaker,
        classifier: C,
        mode: Mode,
    ) -> Self {
        CircuitBreaker {
            inner,
            breaker,
            classifier,
            mode,
            admission: None,
        }
    }

    /// The breaker guarding this service (shared with every clone).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::breaker::CircuitBreaker;
    /// use tower::service_fn;
    ///
    /// let inner = service_fn(|()| async { Ok::<_, std::io::Error>(()) });
    /// let svc = CircuitBreaker::new(inner, fusebox::CircuitBreaker::builder().build().unwrap());
    /// assert_eq!(svc.breaker().state(), fusebox::State::Closed);
    /// ```
    pub fn breaker(&self) -> &crate::CircuitBreaker {
        &self.breaker
    }

    /// Gets a reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::breaker::CircuitBreaker;
    ///
    /// let svc = CircuitBreaker::new(7, fusebox::CircuitBreaker::builder().build().unwrap());
    /// assert_eq!(*svc.get_ref(), 7);
    /// ```
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Gets a mutable reference to the inner service.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::breaker::CircuitBreaker;
    ///
    /// let mut svc = CircuitBreaker::new(7, fusebox::CircuitBreaker::builder().build().unwrap());
    /// *svc.get_mut() += 1;
    /// assert_eq!(*svc.get_ref(), 8);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Consumes `self`, returning the inner service. A permit taken by
    /// `poll_ready` and not yet used is released.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::breaker::CircuitBreaker;
    ///
    /// let svc = CircuitBreaker::new(7, fusebox::CircuitBreaker::builder().build().unwrap());
    /// assert_eq!(svc.into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Back-pressure mode: waits for the breaker's `retry_after` on a tokio
    /// timer. Returns `Some(rejected)` when the refusal must be answered in
    /// `call` instead (reject mode, or no time to wait for).
    #[cfg(feature = "tokio")]
    fn wait_or_refuse(
        &mut self,
        rejected: Rejected,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Rejected>> {
        match (self.mode, rejected.retry_after()) {
            (Mode::BackPressure, Some(wait)) => {
                let deadline = tokio::time::Instant::now() + wait.max(BACK_PRESSURE_MIN_WAIT);
                if !matches!(self.admission, Some(Admission::Waiting(_))) {
                    let sleep = Box::pin(tokio::time::sleep_until(deadline));
                    self.admission = Some(Admission::Waiting(sleep));
                }
                let Some(Admission::Waiting(sleep)) = self.admission.as_mut() else {
                    unreachable!("fusebox CircuitBreaker: the wait was just set")
                };
                sleep.as_mut().reset(deadline);
                match sleep.as_mut().poll(cx) {
                    // Registered with the timer: the task is woken at `deadline`.
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(()) => Poll::Ready(None),
                }
            }
            _ => Poll::Ready(Some(rejected)),
        }
    }

    #[cfg(not(feature = "tokio"))]
    fn wait_or_refuse(
        &mut self,
        rejected: Rejected,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Rejected>> {
        match self.mode {
            Mode::Reject => Poll::Ready(Some(rejected)),
        }
    }

    /// `poll_ready` while a back-pressure wait is running: once it is
    /// over, asks the breaker again. `Ready(true)`: admitted;
    /// `Ready(false)`: refused, to be answered in `call`.
    #[cfg(feature = "tokio")]
    #[cold]
    #[inline(never)]
    fn wait_and_ask(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        if let Some(Admission::Waiting(sleep)) = self.admission.as_mut() {
            ready!(sleep.as_mut().poll(cx));
        }
        match self.breaker.try_acquire() {
            Ok(permit) => Poll::Ready(self.admit(permit)),
            Err(rejected) => self.refused(rejected, cx),
        }
    }

    /// The breaker refused: waits and asks again (back-pressure mode, while
    /// it has a `retry_after`), or keeps the refusal for `call`. Returns as
    /// [`wait_and_ask`](Self::wait_and_ask).
    #[cold]
    #[inline(never)]
    fn refused(&mut self, mut rejected: Rejected, cx: &mut Context<'_>) -> Poll<bool> {
        loop {
            match self.wait_or_refuse(rejected, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(rejected)) => {
                    self.admission = Some(Admission::Refused(rejected));
                    return Poll::Ready(false);
                }
                // The wait is over already: ask the breaker again.
                Poll::Ready(None) => {}
            }
            match self.breaker.try_acquire() {
                Ok(permit) => return Poll::Ready(self.admit(permit)),
                Err(again) => rejected = again,
            }
        }
    }

    /// Keeps `permit` for `call` (a back-pressure wait is over). Returns
    /// `true`.
    #[inline]
    fn admit(&mut self, permit: Permit) -> bool {
        self.admission = Some(Admission::Admitted(permit));
        true
    }
}

impl<S, C, Request> Service<Request> for CircuitBreaker<S, C>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
    C: Classify<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let admitted = match self.admission {
            Some(Admission::Admitted(_)) => true,
            #[cfg(feature = "tokio")]
            Some(Admission::Waiting(_)) => ready!(self.wait_and_ask(cx)),
            // No admission yet, or an earlier refusal that may be stale: ask.
            None | Some(Admission::Refused(_)) => match self.breaker.try_acquire() {
                Ok(permit) => {
                    // What is replaced holds nothing to release (no value,
                    // or a refusal): no drop glue to run.
                    let old = self.admission.replace(Admission::Admitted(permit));
                    debug_assert!(matches!(old, None | Some(Admission::Refused(_))));
                    std::mem::forget(old);
                    true
                }
                Err(rejected) => ready!(self.refused(rejected, cx)),
            },
        };
        if !admitted {
            // Ready, so that `call` can answer with the rejection without
            // touching the inner service.
            return Poll::Ready(Ok(()));
        }
        // Admitted: now, and only now, the inner service's readiness.
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    /// # Panics
    ///
    /// If `poll_ready` has not returned `Ready(Ok(()))` since the last call,
    /// like every tower service.
    // Inlined into the caller (the retry layer's `call`, inlined in turn):
    // the whole response future is then built in its final place, where a
    // call returning it had it built aside and copied in.
    #[inline]
    fn call(&mut self, request: Request) -> Self::Future {
        match self.admission.take() {
            Some(Admission::Admitted(permit)) => {
                ResponseFuture::admitted(self.inner.call(request), permit, self.classifier.clone())
            }
            Some(Admission::Refused(rejected)) => ResponseFuture::refused(rejected),
            // Not ready: never asked, or waiting for the breaker.
            _ => panic!("fusebox CircuitBreaker: poll_ready must be called first"),
        }
    }
}

impl<S: Clone, C: Clone> Clone for CircuitBreaker<S, C> {
    /// The clone shares the breaker; it has not been polled ready.
    fn clone(&self) -> Self {
        Self::with_parts(
            self.inner.clone(),
            self.breaker.clone(),
            self.classifier.clone(),
            self.mode,
        )
    }
}

impl<S: fmt::Debug, C> fmt::Debug for CircuitBreaker<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let admission = match &self.admission {
            None => "none",
            Some(Admission::Admitted(_)) => "admitted",
            Some(Admission::Refused(_)) => "refused",
            #[cfg(feature = "tokio")]
            Some(Admission::Waiting(_)) => "waiting",
        };
        f.debug_struct("CircuitBreaker")
            .field("inner", &self.inner)
            .field("breaker", &self.breaker)
            .field("classifier", &std::any::type_name::<C>())
            .field("mode", &self.mode)
            .field("admission", &admission)
            .finish()
    }
}

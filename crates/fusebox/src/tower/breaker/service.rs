use super::future::ResponseFuture;
use super::layer::Mode;
use super::{Classify, DefaultClassifier};
use crate::tower::BoxError;
use crate::{Permit, Rejected};
use std::fmt;
#[cfg(feature = "tokio")]
use std::future::Future;
use std::task::{Context, Poll};
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

/// What `poll_ready` got from the breaker, waiting for `call`.
enum Admission {
    Admitted(Permit),
    Refused(Rejected),
}

/// Guards the inner service with a [circuit breaker](crate::CircuitBreaker).
///
/// See the [module docs](super) for how requests are admitted, refused and
/// classified.
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
    /// Back-pressure mode: the timer `poll_ready` waits on while open.
    #[cfg(feature = "tokio")]
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
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
            #[cfg(feature = "tokio")]
            sleep: None,
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
                let sleep = self
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
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
        loop {
            if let Some(Admission::Admitted(_)) = self.admission {
                // Admitted: now, and only now, the inner service's readiness.
                return self.inner.poll_ready(cx).map_err(Into::into);
            }
            #[cfg(feature = "tokio")]
            if let Some(sleep) = self.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            // No admission yet, or an earlier refusal that may be stale: ask.
            match self.breaker.try_acquire() {
                Ok(permit) => {
                    #[cfg(feature = "tokio")]
                    if self.sleep.is_some() {
                        self.sleep = None;
                    }
                    self.admission = Some(Admission::Admitted(permit));
                }
                Err(rejected) => match self.wait_or_refuse(rejected, cx) {
                    Poll::Pending => return Poll::Pending,
                    // The wait is over already: ask the breaker again.
                    Poll::Ready(None) => continue,
                    Poll::Ready(Some(rejected)) => {
                        // Ready, so that `call` can answer with the rejection
                        // without touching the inner service.
                        self.admission = Some(Admission::Refused(rejected));
                        return Poll::Ready(Ok(()));
                    }
                },
            }
        }
    }

    /// # Panics
    ///
    /// If `poll_ready` has not returned `Ready(Ok(()))` since the last call,
    /// like every tower service.
    // Not inlined: the caller's future then gets this one written straight
    // into its place, instead of built aside and copied in.
    #[inline(never)]
    fn call(&mut self, request: Request) -> Self::Future {
        match self.admission.take() {
            Some(Admission::Admitted(permit)) => {
                ResponseFuture::admitted(self.inner.call(request), permit, self.classifier.clone())
            }
            Some(Admission::Refused(rejected)) => ResponseFuture::refused(rejected),
            None => panic!("fusebox CircuitBreaker: poll_ready must be called first"),
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

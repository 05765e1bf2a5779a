//! [`Future`] types

use super::Classify;
use crate::tower::BoxError;
use crate::{Permit, Rejected};
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

pin_project! {
    /// Response future of the [`CircuitBreaker`](super::CircuitBreaker) service.
    ///
    /// Holds the breaker's permit while the inner call runs. When the call
    /// completes, its result is classified and recorded. Dropped before then,
    /// the permit is released without a verdict.
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
    /// let mut svc = CircuitBreaker::new(service_fn(|()| async { Ok::<_, std::io::Error>(1) }), breaker);
    /// let future = svc.ready().await?.call(()); // a ResponseFuture
    /// assert_eq!(future.await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub struct ResponseFuture<F, C> {
        // The inner call; `None` when the breaker refused the request.
        #[pin]
        future: Option<F>,
        verdict: Verdict<C>,
    }
}

/// What is left to do when the call ends.
enum Verdict<C> {
    /// Admitted and running: classify the result, record it with the permit.
    /// Dropped without a verdict, the permit is released.
    Owed { permit: Permit, classifier: C },
    /// Refused: answer with this.
    Refused(Rejected),
    /// Recorded or answered.
    Done,
}

/// Records a failure if dropped while armed: the inner future panicked
/// while being polled (as in
/// [`CircuitBreaker::call_async`](crate::CircuitBreaker::call_async)).
/// Forgotten once the poll has returned.
struct FailOnUnwind<'a, C>(&'a mut Verdict<C>);

impl<C> Drop for FailOnUnwind<'_, C> {
    fn drop(&mut self) {
        if let Verdict::Owed { permit, .. } = std::mem::replace(self.0, Verdict::Done) {
            permit.failure();
        }
    }
}

impl<F, C> ResponseFuture<F, C> {
    pub(crate) fn admitted(future: F, permit: Permit, classifier: C) -> Self {
        ResponseFuture {
            future: Some(future),
            verdict: Verdict::Owed { permit, classifier },
        }
    }

    pub(crate) fn refused(rejected: Rejected) -> Self {
        ResponseFuture {
            future: None,
            verdict: Verdict::Refused(rejected),
        }
    }
}

impl<F, C, T, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    C: Classify<T, E>,
{
    type Output = Result<T, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(future) = this.future.as_pin_mut() else {
            return match std::mem::replace(this.verdict, Verdict::Done) {
                Verdict::Refused(rejected) => Poll::Ready(Err(rejected.into())),
                _ => panic!("fusebox breaker ResponseFuture polled after completion"),
            };
        };
        // If this poll panics, the guard, dropped while unwinding, records a
        // failure.
        let guard = FailOnUnwind(&mut *this.verdict);
        let poll = future.poll(cx);
        std::mem::forget(guard);
        let result = ready!(poll);
        if let Verdict::Owed { permit, classifier } = std::mem::replace(this.verdict, Verdict::Done)
        {
            permit.record(classifier.classify(&result));
        }
        Poll::Ready(result.map_err(Into::into))
    }
}

impl<F, C> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.verdict {
            Verdict::Owed { .. } => "running",
            Verdict::Refused(_) => "refused",
            Verdict::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &kind)
            .finish()
    }
}

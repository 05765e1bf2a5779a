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
        #[pin]
        kind: Kind<F, C>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F, C> {
        Admitted {
            #[pin]
            future: F,
            permit: PermitGuard,
            classifier: C,
        },
        Refused {
            rejected: Option<Rejected>,
        },
    }
}

/// The permit of a running call. Dropped without a verdict it is released,
/// unless it is dropped in the middle of polling the inner future (that poll
/// panicked): that counts as a failure, as in
/// [`CircuitBreaker::call_async`](crate::CircuitBreaker::call_async).
struct PermitGuard {
    permit: Option<Permit>,
    /// Set while the inner future is being polled.
    polling: bool,
}

impl Drop for PermitGuard {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            if self.polling {
                permit.failure();
            }
            // Otherwise `permit` drops here: released, no verdict.
        }
    }
}

impl<F, C> ResponseFuture<F, C> {
    pub(crate) fn admitted(future: F, permit: Permit, classifier: C) -> Self {
        ResponseFuture {
            kind: Kind::Admitted {
                future,
                permit: PermitGuard {
                    permit: Some(permit),
                    polling: false,
                },
                classifier,
            },
        }
    }

    pub(crate) fn refused(rejected: Rejected) -> Self {
        ResponseFuture {
            kind: Kind::Refused {
                rejected: Some(rejected),
            },
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

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Admitted {
                future,
                permit,
                classifier,
            } => {
                // If this poll panics, `polling` stays set and the guard,
                // dropped while unwinding, records a failure.
                permit.polling = true;
                let poll = future.poll(cx);
                permit.polling = false;
                let result = ready!(poll);
                if let Some(permit) = permit.permit.take() {
                    permit.record(classifier.classify(&result));
                }
                Poll::Ready(result.map_err(Into::into))
            }
            KindProj::Refused { rejected } => match rejected.take() {
                Some(rejected) => Poll::Ready(Err(rejected.into())),
                None => panic!("fusebox breaker ResponseFuture polled after completion"),
            },
        }
    }
}

impl<F, C> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Admitted { permit, .. } if permit.permit.is_some() => "running",
            Kind::Admitted { .. } => "done",
            Kind::Refused { rejected: Some(_) } => "refused",
            Kind::Refused { rejected: None } => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &kind)
            .finish()
    }
}

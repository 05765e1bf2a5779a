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
            permit: Option<Permit>,
            classifier: C,
        },
        Refused {
            rejected: Option<Rejected>,
        },
    }
}

impl<F, C> ResponseFuture<F, C> {
    pub(crate) fn admitted(future: F, permit: Permit, classifier: C) -> Self {
        ResponseFuture {
            kind: Kind::Admitted {
                future,
                permit: Some(permit),
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
                let result = ready!(future.poll(cx));
                if let Some(permit) = permit.take() {
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
            Kind::Admitted { permit, .. } if permit.is_some() => "running",
            Kind::Admitted { .. } => "done",
            Kind::Refused { rejected: Some(_) } => "refused",
            Kind::Refused { rejected: None } => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &kind)
            .finish()
    }
}

//! [`Future`] types

use crate::tower::BoxError;
use crate::{BulkheadFull, BulkheadPermit};
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

pin_project! {
    /// Response future of the [`Bulkhead`](super::Bulkhead) service.
    ///
    /// Holds the bulkhead slot until the inner call completes or the future
    /// is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::bulkhead::Bulkhead;
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::tower::BoxError> {
    /// let bulkhead = fusebox::Bulkhead::new(1);
    /// let mut svc = Bulkhead::new(service_fn(|()| async { Ok::<_, std::io::Error>(1) }), bulkhead.clone());
    /// let future = svc.ready().await?.call(()); // holds the slot
    /// assert_eq!(bulkhead.snapshot().in_use, 1);
    /// drop(future);
    /// assert_eq!(bulkhead.snapshot().in_use, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Admitted {
            #[pin]
            future: F,
            permit: Option<BulkheadPermit>,
        },
        Refused {
            full: Option<BulkheadFull>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn admitted(future: F, permit: BulkheadPermit) -> Self {
        ResponseFuture {
            kind: Kind::Admitted {
                future,
                permit: Some(permit),
            },
        }
    }

    pub(crate) fn refused(full: BulkheadFull) -> Self {
        ResponseFuture {
            kind: Kind::Refused { full: Some(full) },
        }
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
            KindProj::Admitted { future, permit } => {
                let result = ready!(future.poll(cx));
                // The call is over: free the slot now, not when the future is dropped.
                drop(permit.take());
                Poll::Ready(result.map_err(Into::into))
            }
            KindProj::Refused { full } => match full.take() {
                Some(full) => Poll::Ready(Err(full.into())),
                None => panic!("fusebox bulkhead ResponseFuture polled after completion"),
            },
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Admitted {
                permit: Some(_), ..
            } => "running",
            Kind::Refused { full: Some(_) } => "refused",
            _ => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

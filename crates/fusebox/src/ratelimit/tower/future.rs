//! [`Future`] types

use crate::ratelimit::RateLimited;
use crate::tower::BoxError;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

pin_project! {
    /// Response future of the [`RateLimit`](super::RateLimit) service: the
    /// inner call's, or a refusal that resolves at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::ratelimit::tower::RateLimit;
    /// use fusebox::ratelimit::{RateLimitConfig, RateLimiter};
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::tower::BoxError> {
    /// let limiter = RateLimiter::new(RateLimitConfig::per_second(10))?;
    /// let mut svc = RateLimit::new(service_fn(|()| async { Ok::<_, std::io::Error>(1) }), limiter);
    /// let future = svc.ready().await?.call(());
    /// assert_eq!(future.await?, 1);
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
        },
        Refused {
            limited: Option<RateLimited>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn admitted(future: F) -> Self {
        ResponseFuture {
            kind: Kind::Admitted { future },
        }
    }

    pub(crate) fn refused(limited: RateLimited) -> Self {
        ResponseFuture {
            kind: Kind::Refused {
                limited: Some(limited),
            },
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
            KindProj::Admitted { future } => {
                Poll::Ready(ready!(future.poll(cx)).map_err(Into::into))
            }
            KindProj::Refused { limited } => match limited.take() {
                Some(limited) => Poll::Ready(Err(limited.into())),
                None => panic!("fusebox rate limit ResponseFuture polled after completion"),
            },
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Admitted { .. } => "admitted",
            Kind::Refused { limited: Some(_) } => "refused",
            Kind::Refused { limited: None } => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

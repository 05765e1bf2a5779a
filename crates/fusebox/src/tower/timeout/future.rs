//! [`Future`] types

use crate::timeout::Deadline;
use crate::tower::BoxError;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

pin_project! {
    /// Response future of [`Timeout`](super::Timeout).
    pub struct ResponseFuture<F> {
        #[pin]
        inner: Deadline<F>,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: Deadline<F>) -> Self {
        ResponseFuture { inner }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The response first (an answer that is ready wins a tie), the
        // timer armed only if it waits.
        Poll::Ready(match ready!(self.project().inner.poll(cx)) {
            Ok(result) => result.map_err(Into::into),
            Err(elapsed) => Err(elapsed.into()),
        })
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("timeout", &self.inner.after())
            .field("deadline", &self.inner.deadline())
            .finish()
    }
}

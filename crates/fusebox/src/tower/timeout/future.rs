//! [`Future`] types

use crate::tower::BoxError;
use crate::Elapsed;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

pin_project! {
    /// Response future of the [`Timeout`](super::Timeout) service: the inner
    /// call raced against a tokio timer.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::timeout::Timeout;
    /// use std::time::Duration;
    /// use tower::{service_fn, Service, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), fusebox::tower::BoxError> {
    /// let inner = service_fn(|()| async { Ok::<_, std::io::Error>(1) });
    /// let mut svc = Timeout::new(inner, Duration::from_secs(1));
    /// let future = svc.ready().await?.call(()); // the timer starts here
    /// assert_eq!(future.await?, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub struct ResponseFuture<F> {
        #[pin]
        response: F,
        #[pin]
        sleep: Sleep,
        timeout: Duration,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(response: F, sleep: Sleep, timeout: Duration) -> Self {
        ResponseFuture {
            response,
            sleep,
            timeout,
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
        let this = self.project();
        // The response first: an answer that is ready wins a tie.
        if let Poll::Ready(result) = this.response.poll(cx) {
            return Poll::Ready(result.map_err(Into::into));
        }
        match this.sleep.poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => Poll::Ready(Err(Elapsed::new(*this.timeout).into())),
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("timeout", &self.timeout)
            .field("deadline", &self.sleep.deadline())
            .finish()
    }
}

//! [`Future`] types

use crate::retry::RetryIf;
use crate::tower::BoxError;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;
use tower::Service;

pin_project! {
    /// Response future of the [`Retry`](super::Retry) service: attempts,
    /// and the waits between them.
    ///
    /// Dropping it cancels the attempt in flight (or the wait) and sends
    /// nothing more.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::retry::Retry;
    /// use fusebox::tower::{BoxError, RetryLayer};
    /// use tower::{service_fn, Layer, Service, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), BoxError> {
    /// let mut svc = RetryLayer::new(Retry::builder().max_attempts(3).build()?)
    ///     .layer(service_fn(|()| async { Err::<(), BoxError>("down".into()) }));
    /// let future = svc.ready().await?.call(());
    /// assert!(future.await.is_err()); // after 3 attempts
    /// # Ok(())
    /// # }
    /// ```
    pub struct ResponseFuture<S, Request, B, P>
    where
        S: Service<Request>,
    {
        // The attempt in flight, the wait after it, or neither.
        #[pin]
        state: State<S::Future>,
        // What a next attempt needs; `None` when the policy allows one attempt.
        again: Option<Again<S, Request>>,
        retry: Arc<crate::retry::Retry<B, P>>,
        backoff: B,
        attempts: u32,
    }
}

pin_project! {
    /// Where a response future is.
    #[project = StateProj]
    enum State<F> {
        /// An attempt in flight.
        Attempt {
            #[pin]
            future: F,
        },
        /// The backoff wait before the next attempt: boxed, so that only a
        /// request that waits pays for a timer's room.
        Waiting { sleep: Pin<Box<Sleep>> },
        /// The wait is over: readying the service for the next attempt.
        Retrying,
    }
}

/// A service (a clone, not yet ready) and the request, for the next attempt.
pub(crate) struct Again<S, Request> {
    service: S,
    request: Request,
}

impl<S, Request> Again<S, Request> {
    pub(crate) fn new(service: S, request: Request) -> Self {
        Again { service, request }
    }
}

impl<S, Request, B, P> ResponseFuture<S, Request, B, P>
where
    S: Service<Request>,
{
    pub(crate) fn new(
        future: S::Future,
        again: Option<Again<S, Request>>,
        retry: Arc<crate::retry::Retry<B, P>>,
        backoff: B,
    ) -> Self {
        ResponseFuture {
            state: State::Attempt { future },
            again,
            retry,
            backoff,
            attempts: 1,
        }
    }
}

impl<S, Request, B, P> Future for ResponseFuture<S, Request, B, P>
where
    S: Service<Request>,
    S::Error: Into<BoxError>,
    Request: Clone,
    B: Iterator<Item = Duration> + Clone,
    P: RetryIf<BoxError>,
{
    type Output = Result<S::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Attempt { future } => {
                    let error: BoxError = match ready!(future.poll(cx)) {
                        Ok(response) => return Poll::Ready(Ok(response)),
                        Err(error) => error.into(),
                    };
                    match this
                        .retry
                        .after_failure(this.backoff, *this.attempts, &error)
                    {
                        None => return Poll::Ready(Err(error)),
                        Some(delay) => {
                            let sleep = Box::pin(tokio::time::sleep(delay));
                            this.state.set(State::Waiting { sleep });
                        }
                    }
                }
                StateProj::Waiting { sleep } => {
                    ready!(sleep.as_mut().poll(cx));
                    this.state.set(State::Retrying);
                }
                StateProj::Retrying => {
                    // The policy allowed a next attempt, so it allows more
                    // than one: `again` was prepared.
                    let again = this
                        .again
                        .as_mut()
                        .expect("fusebox retry: a next attempt without a prepared request");
                    ready!(again.service.poll_ready(cx)).map_err(Into::into)?;
                    *this.attempts += 1;
                    let future = again.service.call(again.request.clone());
                    this.state.set(State::Attempt { future });
                }
            }
        }
    }
}

impl<S, Request, B, P> fmt::Debug for ResponseFuture<S, Request, B, P>
where
    S: Service<Request>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Attempt { .. } => "called",
            State::Waiting { .. } => "waiting",
            State::Retrying => "retrying",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("attempt", &self.attempts)
            .finish()
    }
}

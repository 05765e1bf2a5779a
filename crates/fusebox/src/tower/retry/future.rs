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
        #[pin]
        state: State<S::Future>,
        // What a next attempt needs; `None` when the policy allows one attempt.
        again: Option<Again<S, Request>>,
        retry: Arc<crate::retry::Retry<B, P>>,
        backoff: B,
        attempt: u32,
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

pin_project! {
    #[project = StateProj]
    enum State<F> {
        // An attempt is in flight.
        Called {
            #[pin]
            future: F,
        },
        // Waiting out the backoff delay.
        Waiting {
            #[pin]
            sleep: Sleep,
        },
        // Waiting for the service to be ready for the next attempt.
        Retrying,
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
    ) -> Self
    where
        B: Iterator<Item = Duration> + Clone,
    {
        // Deposits in the budget (once per request); this request's delays.
        let backoff = retry.begin();
        ResponseFuture {
            state: State::Called { future },
            again,
            retry,
            backoff,
            attempt: 1,
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
                StateProj::Called { future } => {
                    let error: BoxError = match ready!(future.poll(cx)) {
                        Ok(response) => return Poll::Ready(Ok(response)),
                        Err(error) => error.into(),
                    };
                    match this
                        .retry
                        .after_failure(this.backoff, *this.attempt, &error)
                    {
                        None => return Poll::Ready(Err(error)),
                        Some(delay) => this.state.set(State::Waiting {
                            sleep: tokio::time::sleep(delay),
                        }),
                    }
                }
                StateProj::Waiting { sleep } => {
                    ready!(sleep.poll(cx));
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
                    *this.attempt += 1;
                    let future = again.service.call(again.request.clone());
                    this.state.set(State::Called { future });
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
            State::Called { .. } => "called",
            State::Waiting { .. } => "waiting",
            State::Retrying => "retrying",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("attempt", &self.attempt)
            .finish()
    }
}

//! [`Future`] types

use super::Recover;
use crate::tower::BoxError;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

pin_project! {
    /// Response future of the [`Fallback`](super::Fallback) service: the
    /// inner call, then, if it failed, the fallback.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::{BoxError, FallbackLayer};
    /// use fusebox::Cause;
    /// use tower::{service_fn, Layer, Service, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), BoxError> {
    /// let mut svc = FallbackLayer::new(|_why: Cause<'_, BoxError>| Some(0))
    ///     .layer(service_fn(|()| async { Err::<u32, BoxError>("down".into()) }));
    /// let future = svc.ready().await?.call(());
    /// assert_eq!(future.await?, 0);
    /// # Ok(())
    /// # }
    /// ```
    pub struct ResponseFuture<F, R: Recover> {
        #[pin]
        state: State<F, R>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, R: Recover> {
        Primary {
            #[pin]
            future: F,
            recover: Option<R>,
        },
        Fallback {
            #[pin]
            future: R::Future,
        },
    }
}

impl<F, R: Recover> ResponseFuture<F, R> {
    pub(crate) fn new(future: F, recover: R) -> Self {
        ResponseFuture {
            state: State::Primary {
                future,
                recover: Some(recover),
            },
        }
    }
}

impl<F, E, R> Future for ResponseFuture<F, R>
where
    F: Future<Output = Result<R::Response, E>>,
    E: Into<BoxError>,
    R: Recover,
{
    type Output = Result<R::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                StateProj::Primary { future, recover } => {
                    let error = match ready!(future.poll(cx)) {
                        Ok(response) => return Poll::Ready(Ok(response)),
                        Err(error) => error.into(),
                    };
                    let recover = match recover.take() {
                        Some(recover) => recover,
                        None => panic!("fusebox fallback ResponseFuture polled after completion"),
                    };
                    let future = recover.recover(error);
                    state.set(State::Fallback { future });
                }
                StateProj::Fallback { future } => return future.poll(cx),
            }
        }
    }
}

impl<F, R: Recover> fmt::Debug for ResponseFuture<F, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Primary { .. } => "primary",
            State::Fallback { .. } => "fallback",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

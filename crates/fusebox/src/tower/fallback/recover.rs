use crate::policy::{Cause, PolicyError};
use crate::tower::BoxError;
use pin_project_lite::pin_project;
use std::fmt;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::task::{Context, Poll};

/// What a [`Fallback`](super::Fallback) does with a failed call's error.
///
/// Built by [`FallbackLayer::new`](super::FallbackLayer::new) (from a function
/// that answers at once) or [`FallbackLayer::with_future`](super::FallbackLayer::with_future)
/// (from a function that returns a future); implement it yourself for anything
/// else.
///
/// # Examples
///
/// ```
/// use fusebox::tower::fallback::Recover;
/// use fusebox::tower::BoxError;
/// use fusebox::Cause;
/// use std::future::{ready, Ready};
///
/// /// Always answers with the last good value.
/// #[derive(Clone)]
/// struct Cached(String);
///
/// impl Recover for Cached {
///     type Response = String;
///     type Future = Ready<Result<String, BoxError>>;
///     fn recover(&self, _error: BoxError) -> Self::Future {
///         ready(Ok(self.0.clone()))
///     }
/// }
/// # let _ = Cached("x".into()).recover("e".into());
/// ```
pub trait Recover {
    /// The response given in place of the failed one.
    type Response;
    /// The future that produces it.
    type Future: Future<Output = Result<Self::Response, BoxError>>;

    /// Answers a failed call: `Ok` replaces the failure, `Err` lets it (or
    /// another error) through.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::{FromFn, Recover};
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let zero = FromFn::new(|_why: Cause<'_, BoxError>| Some(0u32));
    /// assert_eq!(zero.recover("down".into()).await.unwrap(), 0);
    /// # }
    /// ```
    fn recover(&self, error: BoxError) -> Self::Future;
}

/// A [`Recover`] from a function that answers at once.
///
/// # Examples
///
/// ```
/// use fusebox::tower::fallback::{FromFn, Recover};
/// use fusebox::tower::BoxError;
/// use fusebox::Cause;
///
/// let default = FromFn::new(|_why: Cause<'_, BoxError>| Some(0_u32));
/// # let _ = default.recover("e".into());
/// ```
#[derive(Clone, Copy)]
pub struct FromFn<F>(F);

impl<F> FromFn<F> {
    /// Wraps `f`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::FromFn;
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// let _ = FromFn::new(|_why: Cause<'_, BoxError>| None::<()>);
    /// ```
    pub const fn new(f: F) -> Self {
        FromFn(f)
    }
}

impl<F, T> Recover for FromFn<F>
where
    F: Fn(Cause<'_, BoxError>) -> Option<T>,
{
    type Response = T;
    type Future = Ready<Result<T, BoxError>>;

    fn recover(&self, error: BoxError) -> Self::Future {
        ready((self.0)(error.cause()).ok_or(error))
    }
}

/// A [`Recover`] from a function that returns a future (a backup service, a
/// queue for later).
///
/// # Examples
///
/// ```
/// use fusebox::tower::fallback::{FromFuture, Recover};
/// use fusebox::tower::BoxError;
/// use fusebox::Cause;
///
/// let backup = FromFuture::new(|_why: Cause<'_, BoxError>| Some(async { Ok::<_, BoxError>("from the replica") }));
/// # let _ = backup.recover("e".into());
/// ```
#[derive(Clone, Copy)]
pub struct FromFuture<F>(F);

impl<F> FromFuture<F> {
    /// Wraps `f`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::FromFuture;
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// let _ = FromFuture::new(|_why: Cause<'_, BoxError>| None::<std::future::Ready<Result<(), BoxError>>>);
    /// ```
    pub const fn new(f: F) -> Self {
        FromFuture(f)
    }
}

impl<F, Fut, T> Recover for FromFuture<F>
where
    F: Fn(Cause<'_, BoxError>) -> Option<Fut>,
    Fut: Future<Output = Result<T, BoxError>>,
{
    type Response = T;
    type Future = OrError<Fut, T>;

    fn recover(&self, error: BoxError) -> Self::Future {
        match (self.0)(error.cause()) {
            Some(future) => OrError::answer(future),
            None => OrError::error(error),
        }
    }
}

pin_project! {
    /// The future of a [`FromFuture`]: the fallback's answer, or the original
    /// error when the fallback had none.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::fallback::{FromFuture, Recover};
    /// use fusebox::tower::BoxError;
    /// use fusebox::Cause;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let only_refusals = FromFuture::new(|why: Cause<'_, BoxError>| {
    ///     why.is_refusal().then(|| async { Ok::<_, BoxError>("backup") })
    /// });
    /// let passed_on = only_refusals.recover("the call failed".into()).await;
    /// assert_eq!(passed_on.unwrap_err().to_string(), "the call failed");
    /// # }
    /// ```
    #[derive(Debug)]
    pub struct OrError<Fut, T> {
        #[pin]
        state: OrErrorState<Fut, T>,
    }
}

pin_project! {
    #[project = OrErrorProj]
    #[derive(Debug)]
    enum OrErrorState<Fut, T> {
        Answer { #[pin] future: Fut },
        Error { error: Ready<Result<T, BoxError>> },
    }
}

impl<Fut, T> OrError<Fut, T> {
    fn answer(future: Fut) -> Self {
        OrError {
            state: OrErrorState::Answer { future },
        }
    }
    fn error(error: BoxError) -> Self {
        OrError {
            state: OrErrorState::Error {
                error: ready(Err(error)),
            },
        }
    }
}

impl<Fut, T> Future for OrError<Fut, T>
where
    Fut: Future<Output = Result<T, BoxError>>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            OrErrorProj::Answer { future } => future.poll(cx),
            OrErrorProj::Error { error } => Pin::new(error).poll(cx),
        }
    }
}

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FromFn")
            .field(&std::any::type_name::<F>())
            .finish()
    }
}

impl<F> fmt::Debug for FromFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FromFuture")
            .field(&std::any::type_name::<F>())
            .finish()
    }
}

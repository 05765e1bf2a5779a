use crate::tower::BoxError;
use std::fmt;
use std::future::{ready, Future, Ready};

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
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let zero = FromFn::new(|_e: BoxError| Ok::<u32, BoxError>(0));
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
///
/// let default = FromFn::new(|_err: BoxError| Ok::<_, BoxError>(0_u32));
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
    ///
    /// let _ = FromFn::new(|e: BoxError| Err::<(), _>(e));
    /// ```
    pub const fn new(f: F) -> Self {
        FromFn(f)
    }
}

impl<F, T> Recover for FromFn<F>
where
    F: Fn(BoxError) -> Result<T, BoxError>,
{
    type Response = T;
    type Future = Ready<Result<T, BoxError>>;

    fn recover(&self, error: BoxError) -> Self::Future {
        ready((self.0)(error))
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
///
/// let backup = FromFuture::new(|_err: BoxError| async { Ok::<_, BoxError>("from the replica") });
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
    ///
    /// let _ = FromFuture::new(|e: BoxError| async move { Err::<(), _>(e) });
    /// ```
    pub const fn new(f: F) -> Self {
        FromFuture(f)
    }
}

impl<F, Fut, T> Recover for FromFuture<F>
where
    F: Fn(BoxError) -> Fut,
    Fut: Future<Output = Result<T, BoxError>>,
{
    type Response = T;
    type Future = Fut;

    fn recover(&self, error: BoxError) -> Self::Future {
        (self.0)(error)
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

use crate::policy::PolicyError;
use crate::Outcome;
use std::any::Any;

/// Decides what a finished call means for the breaker.
///
/// Implemented for every `Fn(&Result<T, E>) -> Outcome`, so a closure is a
/// classifier. Closures usually need their argument type written out, because
/// the layer cannot know the service's types when the closure is built.
///
/// # Examples
///
/// ```
/// use fusebox::tower::breaker::Classify;
/// use fusebox::Outcome;
///
/// let http = |res: &Result<u16, std::io::Error>| match res {
///     Ok(status) if *status >= 500 => Outcome::Failure,
///     Ok(_) => Outcome::Success,
///     Err(_) => Outcome::Failure,
/// };
/// assert_eq!(http.classify(&Ok(503)), Outcome::Failure);
/// assert_eq!(http.classify(&Ok(404)), Outcome::Success);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot classify a `Result<{T}, {E}>`",
    label = "the classifier's argument type does not match the service",
    note = "behind another fusebox layer the error is `fusebox::tower::BoxError`: write `|r: &Result<Response, BoxError>|`",
    note = "for HTTP, `fusebox::http::Classifier` classifies any `Result<http::Response<B>, E>`"
)]
pub trait Classify<T, E> {
    /// The verdict for one result.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::breaker::{Classify, DefaultClassifier};
    ///
    /// let r: Result<(), std::io::Error> = Ok(());
    /// assert_eq!(DefaultClassifier.classify(&r), fusebox::Outcome::Success);
    /// ```
    fn classify(&self, result: &Result<T, E>) -> Outcome;
}

impl<F, T, E> Classify<T, E> for F
where
    F: Fn(&Result<T, E>) -> Outcome,
{
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        self(result)
    }
}

/// The classifier a [`CircuitBreakerLayer`](super::CircuitBreakerLayer) uses
/// unless told otherwise.
///
/// * `Ok(_)` is a success.
/// * An error that is a fusebox refusal from further in, boxed or not
///   (a full bulkhead, another breaker's rejection), is *ignored*: the
///   dependency never saw the request, so it says nothing about its health.
/// * Every other error is a failure, including a timeout from an inner
///   timeout layer.
///
/// # Examples
///
/// ```
/// use fusebox::tower::breaker::{Classify, DefaultClassifier};
/// use fusebox::Outcome;
///
/// let ok: Result<(), std::io::Error> = Ok(());
/// assert_eq!(DefaultClassifier.classify(&ok), Outcome::Success);
/// let err: Result<(), std::io::Error> = Err(std::io::ErrorKind::Other.into());
/// assert_eq!(DefaultClassifier.classify(&err), Outcome::Failure);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefaultClassifier;

impl<T, E: 'static> Classify<T, E> for DefaultClassifier {
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        match result {
            Ok(_) => Outcome::Success,
            Err(e) if is_local_refusal(e) => Outcome::Ignore,
            Err(_) => Outcome::Failure,
        }
    }
}

/// Whether `err` is a refusal made by fusebox itself, before the dependency
/// was reached.
pub(crate) fn is_local_refusal<E: 'static>(err: &E) -> bool {
    let any = err as &dyn Any;
    if crate::policy::refusal_of_any(any).is_some() {
        return true;
    }
    match any.downcast_ref::<crate::tower::BoxError>() {
        Some(boxed) => boxed.cause().is_refusal(),
        None => false,
    }
}

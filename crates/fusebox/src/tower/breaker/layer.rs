use super::{CircuitBreaker, DefaultClassifier};
use std::fmt;
use tower::Layer;

/// How the service answers while the breaker refuses requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `poll_ready` is ready; `call` fails at once with `Rejected`.
    Reject,
    /// `poll_ready` is pending until the breaker's `retry_after` has passed.
    #[cfg(feature = "tokio")]
    BackPressure,
}

/// Applies a [circuit breaker](crate::CircuitBreaker) to requests via the
/// supplied inner service.
///
/// Clones of the layer, and every service it builds, share the one breaker it
/// was given: one breaker per dependency, however many clones of the client.
///
/// # Examples
///
/// ```
/// use fusebox::tower::CircuitBreakerLayer;
/// use tower::ServiceBuilder;
///
/// # fn main() -> Result<(), fusebox::ConfigError> {
/// let breaker = fusebox::CircuitBreaker::builder()
///     .name("reviews")
///     .consecutive_failures(5)
///     .build()?;
/// let stack = ServiceBuilder::new().layer(CircuitBreakerLayer::new(breaker));
/// # let _ = stack;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CircuitBreakerLayer<C = DefaultClassifier> {
    breaker: crate::CircuitBreaker,
    classifier: C,
    mode: Mode,
}

impl CircuitBreakerLayer {
    /// Creates a layer guarded by `breaker`, with the [`DefaultClassifier`]
    /// (errors are failures, fusebox refusals are ignored) and rejections
    /// answered in `call`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::CircuitBreakerLayer;
    ///
    /// let layer = CircuitBreakerLayer::new(fusebox::CircuitBreaker::builder().build().unwrap());
    /// # let _ = layer;
    /// ```
    pub const fn new(breaker: crate::CircuitBreaker) -> Self {
        CircuitBreakerLayer {
            breaker,
            classifier: DefaultClassifier,
            mode: Mode::Reject,
        }
    }
}

impl<C> CircuitBreakerLayer<C> {
    /// Uses `classifier` to decide which results are failures.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::CircuitBreakerLayer;
    /// use fusebox::Outcome;
    ///
    /// let breaker = fusebox::CircuitBreaker::builder().build().unwrap();
    /// // Only server errors count; "not found" is an answer, not a fault.
    /// let layer = CircuitBreakerLayer::new(breaker).classify(
    ///     |res: &Result<u16, std::io::Error>| match res {
    ///         Ok(s) if *s >= 500 => Outcome::Failure,
    ///         Ok(_) => Outcome::Success,
    ///         Err(_) => Outcome::Failure,
    ///     },
    /// );
    /// # let _ = layer;
    /// ```
    pub fn classify<C2>(self, classifier: C2) -> CircuitBreakerLayer<C2> {
        CircuitBreakerLayer {
            breaker: self.breaker,
            classifier,
            mode: self.mode,
        }
    }

    /// Back-pressure mode: while the breaker is open, `poll_ready` stays
    /// pending and wakes (on a tokio timer) once the breaker's `retry_after`
    /// has passed, instead of answering requests with [`Rejected`](crate::Rejected).
    ///
    /// Needs a tokio runtime with the time driver. The timer runs in tokio's
    /// time; the breaker keeps its own clock. A breaker forced open (no
    /// `retry_after`) still rejects in `call`, since there is no time to wait
    /// for. While half-open with every probe slot taken, readiness is checked
    /// again every [`BACK_PRESSURE_MIN_WAIT`](super::BACK_PRESSURE_MIN_WAIT).
    ///
    /// # Panics
    ///
    /// The service's `poll_ready` panics if it must wait outside a tokio
    /// runtime with the time driver enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::CircuitBreakerLayer;
    ///
    /// let breaker = fusebox::CircuitBreaker::builder().build().unwrap();
    /// let layer = CircuitBreakerLayer::new(breaker).back_pressure();
    /// # let _ = layer;
    /// ```
    #[cfg(feature = "tokio")]
    pub fn back_pressure(mut self) -> Self {
        self.mode = Mode::BackPressure;
        self
    }

    /// The breaker this layer applies.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::CircuitBreakerLayer;
    ///
    /// let layer = CircuitBreakerLayer::new(fusebox::CircuitBreaker::builder().build().unwrap());
    /// assert_eq!(layer.breaker().state(), fusebox::State::Closed);
    /// ```
    pub fn breaker(&self) -> &crate::CircuitBreaker {
        &self.breaker
    }
}

impl<S, C: Clone> Layer<S> for CircuitBreakerLayer<C> {
    type Service = CircuitBreaker<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreaker::with_parts(
            inner,
            self.breaker.clone(),
            self.classifier.clone(),
            self.mode,
        )
    }
}

impl<C> fmt::Debug for CircuitBreakerLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreakerLayer")
            .field("breaker", &self.breaker)
            .field("classifier", &std::any::type_name::<C>())
            .field("mode", &self.mode)
            .finish()
    }
}

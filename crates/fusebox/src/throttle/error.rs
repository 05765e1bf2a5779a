//! [`Throttled`]: the throttle's refusal.

use crate::policy::{Cause, PolicyError, Refusal};
use std::convert::Infallible;
use std::fmt;
use std::time::Duration;

/// A request refused by a [`Throttle`](super::Throttle): the draw fell
/// under the rejection probability the backend's recent accepts set.
///
/// A [`Refusal`] with policy `"throttle"` and label `"throttled"`, so a
/// breaker's classifier ignores it and [`Cause`] reports it as
/// [`Cause::Refused`]. It names no time to retry after (`None`): the
/// probability falls as the backend's accepts rise, not at a known time.
///
/// # Examples
///
/// ```
/// use fusebox::policy::Refusal;
/// use fusebox::throttle::{Throttle, ThrottleConfig};
///
/// let t = Throttle::builder().config(ThrottleConfig::default().padding(0)).seed(1).build()?;
/// let refused = loop {
///     match t.try_acquire() {
///         Ok(permit) => permit.overload(),
///         Err(refused) => break refused,
///     }
/// };
/// assert!(refused.probability() > 0.0 && refused.probability() <= 0.8);
/// assert_eq!((refused.policy(), refused.label()), ("throttle", "throttled"));
/// assert_eq!(Refusal::retry_after(&refused), None);
/// assert!(refused.to_string().starts_with("throttled (rejection probability 0."));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throttled {
    probability: f64,
}

/// A refusal's probability is a number in (0, 1], never NaN (a NaN
/// probability refuses nothing), so equality is reflexive.
impl Eq for Throttled {}

impl Throttled {
    pub(crate) const LABEL: &'static str = "throttled";

    pub(crate) fn new(probability: f64) -> Self {
        Throttled { probability }
    }

    /// The rejection probability the request met.
    ///
    /// # Examples
    ///
    /// See [`Throttled`].
    pub fn probability(&self) -> f64 {
        self.probability
    }
}

impl fmt::Display for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "throttled (rejection probability {:.2})",
            self.probability
        )
    }
}

impl std::error::Error for Throttled {}

/// Policy `"throttle"`, label `"throttled"`, no `retry_after`.
///
/// # Examples
///
/// See [`Throttled`].
impl Refusal for Throttled {
    fn policy(&self) -> &'static str {
        "throttle"
    }

    fn label(&self) -> &'static str {
        Self::LABEL
    }

    fn retry_after(&self) -> Option<Duration> {
        None
    }

    fn summary(&self) -> &'static str {
        "throttled"
    }
}

/// A refused call never ran: [`Cause::Refused`].
///
/// # Examples
///
/// ```
/// use fusebox::PolicyError;
/// use fusebox::throttle::{Throttle, ThrottleConfig};
/// let t = Throttle::builder().config(ThrottleConfig::default().padding(0)).seed(1).build()?;
/// let refused = loop {
///     match t.try_acquire() {
///         Ok(permit) => permit.overload(),
///         Err(refused) => break refused,
///     }
/// };
/// assert_eq!(refused.cause().stopped_by(), "throttle");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl PolicyError for Throttled {
    type Inner = Infallible;
    fn cause(&self) -> Cause<'_, Infallible> {
        Cause::Refused(self)
    }
}

//! [`LimitExceeded`]: the adaptive limit's refusal.

use crate::policy::{Cause, PolicyError, Refusal};
use std::convert::Infallible;
use std::fmt;
use std::time::Duration;

/// A call refused by an [`AdaptiveLimit`](super::AdaptiveLimit): as many
/// calls as the limit in force were already in flight.
///
/// A [`Refusal`] with policy `"limit"` and label `"limit_exceeded"`, so a
/// breaker's classifier ignores it and [`Cause`] reports it as
/// [`Cause::Refused`]. A slot may free at any moment, so `retry_after` is
/// zero.
///
/// # Examples
///
/// ```
/// use fusebox::limit::{AdaptiveLimit, LimitConfig};
/// use fusebox::policy::Refusal;
///
/// let limit = AdaptiveLimit::new(LimitConfig::default().min(1).initial(1))?;
/// let _held = limit.try_acquire().unwrap();
/// let refused = limit.try_acquire().unwrap_err();
/// assert_eq!(refused.limit(), 1);
/// assert_eq!(refused.to_string(), "adaptive limit reached (limit 1)");
/// assert_eq!((refused.policy(), refused.label()), ("limit", "limit_exceeded"));
/// assert_eq!(Refusal::retry_after(&refused), Some(std::time::Duration::ZERO));
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitExceeded {
    limit: u32,
}

impl LimitExceeded {
    pub(crate) const LABEL: &'static str = "limit_exceeded";

    pub(crate) fn new(limit: u32) -> Self {
        LimitExceeded { limit }
    }

    /// The limit in force when the call was refused.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{AdaptiveLimit, LimitConfig};
    /// let limit = AdaptiveLimit::new(LimitConfig::default().initial(2))?;
    /// let _a = limit.try_acquire().unwrap();
    /// let _b = limit.try_acquire().unwrap();
    /// assert_eq!(limit.try_acquire().unwrap_err().limit(), 2);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn limit(&self) -> u32 {
        self.limit
    }
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "adaptive limit reached (limit {})", self.limit)
    }
}

impl std::error::Error for LimitExceeded {}

/// Policy `"limit"`, label `"limit_exceeded"`, `retry_after` zero.
///
/// # Examples
///
/// ```
/// use fusebox::policy::Refusal;
/// use fusebox::limit::{AdaptiveLimit, LimitConfig};
/// let limit = AdaptiveLimit::new(LimitConfig::default().initial(1))?;
/// let _held = limit.try_acquire().unwrap();
/// assert_eq!(limit.try_acquire().unwrap_err().summary(), "adaptive limit reached");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl Refusal for LimitExceeded {
    fn policy(&self) -> &'static str {
        "limit"
    }

    fn label(&self) -> &'static str {
        Self::LABEL
    }

    fn retry_after(&self) -> Option<Duration> {
        Some(Duration::ZERO)
    }

    fn summary(&self) -> &'static str {
        "adaptive limit reached"
    }
}

/// A refused call never ran: [`Cause::Refused`].
///
/// # Examples
///
/// ```
/// use fusebox::limit::{AdaptiveLimit, LimitConfig};
/// use fusebox::PolicyError;
/// let limit = AdaptiveLimit::new(LimitConfig::default().initial(1))?;
/// let _held = limit.try_acquire().unwrap();
/// let refused = limit.try_acquire().unwrap_err();
/// assert_eq!(refused.cause().stopped_by(), "limit");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
impl PolicyError for LimitExceeded {
    type Inner = Infallible;
    fn cause(&self) -> Cause<'_, Infallible> {
        Cause::Refused(self)
    }
}

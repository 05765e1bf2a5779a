//! What every policy shares: the [`Refusal`] trait (which policy turned a
//! call away, and when to come back), the [`Mode`] a policy runs in
//! (enforce, shadow or off), [`Cause`], why a guarded call produced no
//! value, and [`Inspect`], how observers read a policy's figures.
//!
//! A policy's refusal is any error type that implements [`Refusal`]; the
//! breaker's classifier, [`Cause`], retries and the pipeline's counters read
//! refusals through it, so none of them lists the policies by hand.
//!
//! # Examples
//!
//! ```
//! use fusebox::policy::Refusal;
//! use fusebox::{Bulkhead, PolicyError};
//!
//! let full = Bulkhead::new(0).try_acquire().unwrap_err();
//! let refusal = full.cause().refusal().unwrap();
//! assert_eq!(refusal.policy(), "bulkhead");
//! assert_eq!(refusal.label(), "bulkhead_full");
//! ```

pub(crate) mod cause;
mod inspect;
mod mode;

pub use cause::{Cause, PolicyError};
pub use inspect::{Figure, FigureKind, Inspect};
pub(crate) use mode::ModeCell;
pub use mode::{Mode, ParseModeError};

use crate::breaker::Rejected;
use crate::bulkhead::BulkheadFull;

use std::error::Error;
use std::time::Duration;

/// An error that says a policy turned a call away before it ran, which
/// policy did, and when trying again may succeed.
///
/// Every fusebox policy's refusal implements it ([`Rejected`],
/// [`BulkheadFull`], the rate limiter's `RateLimited`); so can a policy of
/// your own: its refusals then count as refusals for [`Cause::refusal`] and
/// [`Cause::is_refusal`] where your error type's [`PolicyError`] returns
/// [`Cause::Refused`]. (A boxed error, on the tower path, is recognised as a
/// refusal only when it is one of fusebox's own.)
///
/// # Examples
///
/// ```
/// use fusebox::policy::Refusal;
/// use std::time::Duration;
///
/// #[derive(Debug)]
/// struct QuotaSpent;
/// impl std::fmt::Display for QuotaSpent {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("daily quota spent")
///     }
/// }
/// impl std::error::Error for QuotaSpent {}
/// impl Refusal for QuotaSpent {
///     fn policy(&self) -> &'static str { "quota" }
///     fn label(&self) -> &'static str { "quota_spent" }
///     fn retry_after(&self) -> Option<Duration> { Some(Duration::from_secs(3600)) }
/// }
///
/// let r: &dyn Refusal = &QuotaSpent;
/// assert_eq!(r.summary(), "refused by a policy"); // the default
/// assert_eq!(r.retry_after(), Some(Duration::from_secs(3600)));
/// assert!(r.downcast_ref::<QuotaSpent>().is_some());
/// ```
pub trait Refusal: Error + Send + Sync + 'static {
    /// The kind of policy that refused, in lower snake case: `"breaker"`,
    /// `"bulkhead"`, ... (the `stopped_by` of traces).
    fn policy(&self) -> &'static str;

    /// The refusal's label in metrics, lower snake case: `"rejected"`,
    /// `"bulkhead_full"`, ... (the `cause` label of fallback counters).
    fn label(&self) -> &'static str;

    /// How long until a new attempt may be admitted: `Some(ZERO)` when it
    /// may be admitted at any moment, `None` when waiting will not help
    /// (e.g. a breaker forced open).
    fn retry_after(&self) -> Option<Duration>;

    /// A short lowercase phrase for the refusal, as [`Cause`]'s `Display`
    /// shows it.
    fn summary(&self) -> &'static str {
        "refused by a policy"
    }
}

impl dyn Refusal {
    /// The refusal as its own type, when it is a `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{Bulkhead, BulkheadFull, PolicyError};
    /// let full = Bulkhead::new(0).try_acquire().unwrap_err();
    /// let r = full.cause().refusal().unwrap();
    /// assert_eq!(r.downcast_ref::<BulkheadFull>().map(|b| b.limit()), Some(0));
    /// ```
    pub fn downcast_ref<T: Refusal>(&self) -> Option<&T> {
        (self as &dyn Error).downcast_ref::<T>()
    }
}

/// Every policy refusal fusebox knows by type, for the places that only
/// have a `dyn Any` or a `dyn Error` (a boxed error on the tower path, an
/// error type the classifier cannot name). A new policy adds its refusal
/// type here, once (an entry may carry a `#[cfg(...)]` for a policy behind
/// a feature).
macro_rules! known_refusals {
    ($($(#[$cfg:meta])* $t:ty),+ $(,)?) => {
        /// The refusal in `value`, if it is one of fusebox's refusal types.
        #[cfg(feature = "tower")]
        pub(crate) fn refusal_of_any(value: &dyn std::any::Any) -> Option<&dyn Refusal> {
            $($(#[$cfg])* if let Some(r) = value.downcast_ref::<$t>() {
                return Some(r);
            })+
            None
        }

        /// The refusal `err` is, if it is one of fusebox's refusal types.
        pub(crate) fn refusal_of_error<'a>(err: &'a (dyn Error + 'static)) -> Option<&'a dyn Refusal> {
            $($(#[$cfg])* if let Some(r) = err.downcast_ref::<$t>() {
                return Some(r);
            })+
            None
        }

        /// The metric labels of every known refusal, in list order.
        pub(crate) const REFUSAL_LABELS: [&str; [$($(#[$cfg])* stringify!($t)),+].len()] =
            [$($(#[$cfg])* <$t>::LABEL),+];
    };
}

known_refusals! { Rejected, BulkheadFull, #[cfg(feature = "ratelimit")] crate::ratelimit::RateLimited,
#[cfg(feature = "limit")] crate::limit::LimitExceeded,
#[cfg(feature = "throttle")] crate::throttle::Throttled }

/// SplitMix64's output function: a well-mixed 64-bit value of `z` (the
/// crate's one source of cheap, seeded randomness: retry jitter, the
/// adaptive limit's re-probe, the throttle's draws, a breaker set's picks).
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

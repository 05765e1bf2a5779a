//! [`Inspect`]: how an observer reads any policy it is told of, without
//! naming its type. A policy reports its kind, its mode and a list of
//! [`Figure`]s; metrics export each figure as `fusebox_{kind}_{figure}`.

use super::Mode;

/// Whether a [`Figure`] is a reading (goes up and down) or a count (only
/// grows).
///
/// # Examples
///
/// ```
/// assert_eq!(fusebox::policy::FigureKind::Counter.as_str(), "counter");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FigureKind {
    /// A reading now: slots in use, keys held.
    Gauge,
    /// A count since the policy was built: calls refused.
    Counter,
}

impl FigureKind {
    /// `"gauge"` or `"counter"`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::policy::FigureKind::Gauge.as_str(), "gauge");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            FigureKind::Gauge => "gauge",
            FigureKind::Counter => "counter",
        }
    }
}

/// One number a policy reports about itself.
///
/// # Examples
///
/// ```
/// use fusebox::policy::{Figure, FigureKind};
/// let f = Figure::counter("refused", "Calls refused", 3);
/// assert_eq!((f.name, f.kind, f.value), ("refused", FigureKind::Counter, 3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Figure {
    /// Lower snake case, unique within the policy's kind (`"in_use"`).
    pub name: &'static str,
    /// One line for people (a metric's help text).
    pub help: &'static str,
    /// Gauge or counter.
    pub kind: FigureKind,
    /// The value now.
    pub value: u64,
}

impl Figure {
    /// A reading now.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = fusebox::policy::Figure::gauge("in_use", "Slots taken", 2);
    /// assert_eq!(f.value, 2);
    /// ```
    pub const fn gauge(name: &'static str, help: &'static str, value: u64) -> Figure {
        Figure {
            name,
            help,
            kind: FigureKind::Gauge,
            value,
        }
    }

    /// A count that only grows.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = fusebox::policy::Figure::counter("refused", "Calls refused", 1);
    /// assert_eq!(f.kind, fusebox::policy::FigureKind::Counter);
    /// ```
    pub const fn counter(name: &'static str, help: &'static str, value: u64) -> Figure {
        Figure {
            name,
            help,
            kind: FigureKind::Counter,
            value,
        }
    }
}

/// A policy as an observer sees it: what kind it is, the mode it runs in,
/// and its figures now. Implemented by [`Bulkhead`](crate::Bulkhead) and by
/// the rate limiters; an observer told of a policy
/// ([`Observer::policy_added`](crate::observe::Observer::policy_added))
/// reads it through this trait alone, so a new policy needs no new code in
/// the observers.
///
/// # Examples
///
/// ```
/// use fusebox::policy::Inspect;
/// use fusebox::Bulkhead;
///
/// let b = Bulkhead::new(4);
/// let _slot = b.try_acquire().unwrap();
/// assert_eq!(b.kind(), "bulkhead");
/// let in_use = b.figures().into_iter().find(|f| f.name == "in_use").unwrap();
/// assert_eq!(in_use.value, 1);
/// ```
pub trait Inspect: Send + Sync + 'static {
    /// The kind of policy, lower snake case: `"bulkhead"`, `"rate_limiter"`.
    fn kind(&self) -> &'static str;
    /// The mode in force.
    fn mode(&self) -> Mode;
    /// The figures now, in a fixed order.
    fn figures(&self) -> Vec<Figure>;
}

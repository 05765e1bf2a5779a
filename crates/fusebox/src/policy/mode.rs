//! [`Mode`]: whether a policy enforces its decisions, only reports them, or
//! stands aside.

use crate::sync::{AtomicU8, Ordering};
use std::fmt;
use std::str::FromStr;

/// How a policy acts on its own decisions. The breaker, the bulkhead and the
/// rate limiters have one, set in code or in a registry file
/// (`mode = "shadow"`) and changeable live.
///
/// - `Enforce` (the default): a call the policy refuses does not run.
/// - `Shadow`: the policy decides as it would when enforcing and reports
///   every call it *would have* refused (to listeners and metrics), but lets
///   the call run. A policy in shadow never makes a call wait: a call that
///   enforcing would have made wait for a slot (a bulkhead's `max_wait`, a
///   rate limiter's `acquire_async`) runs at once and is counted as
///   shadowed. How a new breaker or limit is rolled out safely: run it in
///   shadow, read what it would have refused, then enforce.
/// - `Off`: the policy admits everything and counts nothing.
///
/// # Examples
///
/// ```
/// use fusebox::Mode;
/// assert_eq!(Mode::default(), Mode::Enforce);
/// assert_eq!("shadow".parse::<Mode>(), Ok(Mode::Shadow));
/// assert_eq!(Mode::Off.to_string(), "off");
/// assert!("loud".parse::<Mode>().unwrap_err().to_string().contains("`loud`"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum Mode {
    /// Refused calls do not run.
    #[default]
    Enforce,
    /// Refusals are decided and reported, but the call runs.
    Shadow,
    /// Nothing is refused and nothing is counted.
    Off,
}

impl Mode {
    /// Every mode, in a fixed order.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Mode::ALL[1], fusebox::Mode::Shadow);
    /// ```
    pub const ALL: [Mode; 3] = [Mode::Enforce, Mode::Shadow, Mode::Off];

    /// The mode's name, lower case, as in files and metrics.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::Mode::Enforce.as_str(), "enforce");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Shadow => "shadow",
            Mode::Off => "off",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no [`Mode`].
///
/// # Examples
///
/// ```
/// let e = "strict".parse::<fusebox::Mode>().unwrap_err();
/// assert_eq!(e.to_string(), "unknown mode `strict`: expected enforce, shadow or off");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseModeError(String);

impl fmt::Display for ParseModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown mode `{}`: expected enforce, shadow or off",
            self.0
        )
    }
}

impl std::error::Error for ParseModeError {}

impl FromStr for Mode {
    type Err = ParseModeError;

    fn from_str(s: &str) -> Result<Mode, ParseModeError> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ParseModeError(s.to_owned()))
    }
}

/// A policy's live mode, one byte: what every policy with a [`Mode`]
/// holds and changes in place.
#[derive(Debug)]
pub(crate) struct ModeCell(AtomicU8);

impl ModeCell {
    pub(crate) fn new(mode: Mode) -> Self {
        ModeCell(AtomicU8::new(Self::encode(mode)))
    }

    const fn encode(mode: Mode) -> u8 {
        match mode {
            Mode::Enforce => 0,
            Mode::Shadow => 1,
            Mode::Off => 2,
        }
    }

    #[inline]
    pub(crate) fn get(&self) -> Mode {
        // Relaxed: the mode publishes no other memory; a call racing a
        // change may see either mode.
        match self.0.load(Ordering::Relaxed) {
            0 => Mode::Enforce,
            1 => Mode::Shadow,
            _ => Mode::Off,
        }
    }

    pub(crate) fn set(&self, mode: Mode) {
        // Relaxed: see `get`.
        self.0.store(Self::encode(mode), Ordering::Relaxed);
    }
}

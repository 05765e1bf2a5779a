//! THE adaptive limit settings: one type ([`LimitConfig`]), its file form
//! (serde, feature `config`), its defaults and the only validation.

use crate::Mode;
use std::fmt;
use std::time::Duration;

/// The largest `max` accepted.
const MAX_LIMIT: u32 = 1_000_000;

/// How an [`AdaptiveLimit`](super::AdaptiveLimit) moves its limit, once per
/// window, from the window's round-trip times.
///
/// - `Vegas` (the default): estimates the queue as
///   `limit × (1 − baseline / rtt)`, where the baseline is the lowest
///   window average since the last re-probe; grows while the queue is below
///   `3·log10(limit)`, shrinks above `6·log10(limit)`. Converges on the
///   dependency's own concurrency plus a small queue.
/// - `Gradient2`: `limit × clamp(tolerance × long / short, 0.5, 1) + 4`,
///   smoothed by 0.2, where `long` is a slowly decaying average of window
///   RTTs (the baseline) and `short` this window's. Tolerates 50% more
///   latency before shrinking, so it settles higher.
/// - `Aimd`: `+1` per window while in use, `× backoff` after a drop. Reads no
///   latency at all: it only reacts to drops (timeouts, overload errors).
///
/// # Examples
///
/// ```
/// use fusebox::limit::Algorithm;
/// assert_eq!(Algorithm::default(), Algorithm::Vegas);
/// assert_eq!(Algorithm::Gradient2.as_str(), "gradient2");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum Algorithm {
    /// TCP Vegas's queue estimate against a re-probed no-load baseline.
    #[default]
    Vegas,
    /// Netflix's Gradient2: short against long average latency.
    Gradient2,
    /// Additive increase, multiplicative decrease on drops only.
    Aimd,
}

impl Algorithm {
    /// The algorithm's name as in files: `"vegas"`, `"gradient2"`, `"aimd"`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::limit::Algorithm::Aimd.as_str(), "aimd");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Algorithm::Vegas => "vegas",
            Algorithm::Gradient2 => "gradient2",
            Algorithm::Aimd => "aimd",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An adaptive limit's settings: the algorithm, the bounds of the limit, the
/// window it is updated over, and the [`Mode`].
///
/// The one description of an adaptive limit's settings: the
/// [`Builder`](super::Builder) writes into it, files deserialise into it
/// (feature `config`), and [`validate`](LimitConfig::validate) is the only
/// place its values are checked. Durations are strings in
/// [`fusebox::duration`](crate::duration)'s grammar.
///
/// ```toml
/// algorithm = "vegas"
/// min = 2
/// max = 200
/// initial = 20
/// window = "250ms"
/// ```
///
/// # Defaults, and why
///
/// - `algorithm`: [`Algorithm::Vegas`], the one that settled closest to the
///   dependency's real concurrency in the lab's eight-worker experiment.
/// - `min` 1, `max` 200, `initial` 20 (Netflix's initial limit): 1 so a
///   dependency that can serve one call at a time still gets one.
/// - `window` 250 ms and `min_samples` 5: the limit moves at most four
///   times a second, and never on fewer than five answers (one slow call
///   must not move it). In the lab's `slow-reviews` scenario (a
///   non-critical dependency slowing from 50 ms to 5 s in a pool of 20)
///   windows of 1 s and 10 answers let the limit come down too late: the
///   page lost a quarter to a third of its goodput against the best static
///   bulkhead, within 3% with these; on `eight-workers` both are within
///   4% of the best.
/// - `backoff` 0.9: a window with a drop (a timeout, an overload error) cuts
///   the limit to 90%, whatever the algorithm.
/// - `tolerance` 1.5 and `long_window` 600 (Gradient2): latency may grow by
///   half before the limit shrinks; the baseline averages about 600 windows
///   (150 s of default windows).
/// - `probe_every` 60 (Vegas): the baseline is forgotten and measured again
///   every 30 to 60 windows (8 to 15 s of default windows, jittered), so it
///   can neither stick at a lucky low nor stay stale after the dependency
///   changes; each time the limit drops to 3 (within `[min, max]`) for one
///   window, so more often costs capacity (every 4 to 8 s kept `eight-workers`
///   in range but made the limit's course depend on when those windows fell).
/// - `mode`: [`Mode::Enforce`].
///
/// # Examples
///
/// ```
/// use fusebox::limit::{Algorithm, LimitConfig};
/// let config = LimitConfig::new(Algorithm::Gradient2).min(2).max(50).initial(10);
/// assert!(config.validate().is_ok());
/// assert_eq!(config.window, std::time::Duration::from_millis(250));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct LimitConfig {
    /// How the limit moves.
    pub algorithm: Algorithm,
    /// The lowest limit (at least 1).
    pub min: u32,
    /// The highest limit.
    pub max: u32,
    /// The limit before the first window closes, in `[min, max]`.
    pub initial: u32,
    /// The shortest time between two updates of the limit.
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str"))]
    pub window: Duration,
    /// The fewest answers a window needs before it may update the limit.
    pub min_samples: u32,
    /// The factor a window with a drop multiplies the limit by, in `(0, 1)`.
    pub backoff: f64,
    /// Gradient2: how much slower than the baseline a window may be before
    /// the limit shrinks (at least 1).
    pub tolerance: f64,
    /// Gradient2: how many windows the decaying baseline averages over.
    pub long_window: u32,
    /// Vegas: the baseline is measured again every `probe_every / 2` to
    /// `probe_every` windows.
    pub probe_every: u32,
    /// Enforce, shadow or off.
    pub mode: Mode,
}

impl Default for LimitConfig {
    fn default() -> Self {
        LimitConfig::new(Algorithm::default())
    }
}

impl LimitConfig {
    /// Every key, in the order of the fields.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(fusebox::limit::LimitConfig::KEYS.contains(&"algorithm"));
    /// ```
    pub const KEYS: [&'static str; 11] = [
        "algorithm",
        "min",
        "max",
        "initial",
        "window",
        "min_samples",
        "backoff",
        "tolerance",
        "long_window",
        "probe_every",
        "mode",
    ];

    /// The defaults (see the type's docs) with `algorithm`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::{Algorithm, LimitConfig};
    /// let c = LimitConfig::new(Algorithm::Aimd);
    /// assert_eq!((c.min, c.max, c.initial), (1, 200, 20));
    /// ```
    pub const fn new(algorithm: Algorithm) -> Self {
        LimitConfig {
            algorithm,
            min: 1,
            max: 200,
            initial: 20,
            window: Duration::from_millis(250),
            min_samples: 5,
            backoff: 0.9,
            tolerance: 1.5,
            long_window: 600,
            probe_every: 60,
            mode: Mode::Enforce,
        }
    }

    /// The lowest limit.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::limit::LimitConfig::default().min(4).min, 4);
    /// ```
    pub const fn min(mut self, min: u32) -> Self {
        self.min = min;
        self
    }

    /// The highest limit.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::limit::LimitConfig::default().max(64).max, 64);
    /// ```
    pub const fn max(mut self, max: u32) -> Self {
        self.max = max;
        self
    }

    /// The limit to start from.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::limit::LimitConfig::default().initial(8).initial, 8);
    /// ```
    pub const fn initial(mut self, initial: u32) -> Self {
        self.initial = initial;
        self
    }

    /// The shortest time between two updates, and the fewest answers an
    /// update needs.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = fusebox::limit::LimitConfig::default().window(Duration::from_millis(500), 20);
    /// assert_eq!((c.window, c.min_samples), (Duration::from_millis(500), 20));
    /// ```
    pub const fn window(mut self, window: Duration, min_samples: u32) -> Self {
        self.window = window;
        self.min_samples = min_samples;
        self
    }

    /// The factor a drop cuts the limit by.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::limit::LimitConfig::default().backoff(0.5).backoff, 0.5);
    /// ```
    pub const fn backoff(mut self, backoff: f64) -> Self {
        self.backoff = backoff;
        self
    }

    /// The [`Mode`] to run in.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Mode;
    /// assert_eq!(fusebox::limit::LimitConfig::default().mode(Mode::Shadow).mode, Mode::Shadow);
    /// ```
    pub const fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Checks every setting, alone and against each other.
    ///
    /// # Errors
    ///
    /// A [`LimitConfigError`] naming the first key that cannot work.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::limit::LimitConfig;
    /// let err = LimitConfig::default().min(10).max(5).validate().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "invalid adaptive limit setting `max` = 5: must be at least `min`"
    /// );
    /// ```
    pub fn validate(&self) -> Result<(), LimitConfigError> {
        if self.min == 0 {
            return Err(invalid("min", self.min, "must be at least 1"));
        }
        if self.max > MAX_LIMIT {
            return Err(invalid("max", self.max, "must be at most 1000000"));
        }
        if self.max < self.min {
            return Err(invalid("max", self.max, "must be at least `min`"));
        }
        if self.initial < self.min || self.initial > self.max {
            return Err(invalid("initial", self.initial, "must be in [min, max]"));
        }
        if self.window.is_zero() {
            return Err(invalid("window", self.window, "must be above zero"));
        }
        if self.window > Duration::from_secs(3600) {
            return Err(invalid("window", self.window, "must be at most 1h"));
        }
        if self.min_samples == 0 {
            return Err(invalid(
                "min_samples",
                self.min_samples,
                "must be at least 1",
            ));
        }
        if !(self.backoff > 0.0 && self.backoff < 1.0) {
            return Err(invalid("backoff", self.backoff, "must be in (0, 1)"));
        }
        if !(self.tolerance >= 1.0 && self.tolerance <= 100.0) {
            return Err(invalid("tolerance", self.tolerance, "must be in [1, 100]"));
        }
        if self.long_window == 0 {
            return Err(invalid(
                "long_window",
                self.long_window,
                "must be at least 1",
            ));
        }
        if self.probe_every < 2 {
            return Err(invalid(
                "probe_every",
                self.probe_every,
                "must be at least 2",
            ));
        }
        Ok(())
    }
}

/// An adaptive limit setting that cannot work, found by
/// [`LimitConfig::validate`] (and so by every constructor): the crate's
/// [`ConfigError`](crate::ConfigError), naming the setting by its config key
/// and giving the value.
///
/// # Examples
///
/// ```
/// use fusebox::limit::LimitConfig;
/// let err = LimitConfig::default().backoff(1.5).validate().unwrap_err();
/// assert_eq!((err.field(), err.problem()), ("backoff", "must be in (0, 1)"));
/// ```
pub type LimitConfigError = crate::ConfigError;

fn invalid(field: &'static str, value: impl fmt::Debug, problem: &'static str) -> LimitConfigError {
    crate::ConfigError::of("adaptive limit", field, value, problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_value_names_its_key() {
        let d = LimitConfig::default();
        let cases = [
            (d.min(0), "min"),
            (d.max(2_000_000), "max"),
            (d.initial(500), "initial"),
            (d.window(Duration::ZERO, 10), "window"),
            (d.window(Duration::from_secs(1), 0), "min_samples"),
            (d.backoff(f64::NAN), "backoff"),
            (d.backoff(1.0), "backoff"),
            (
                LimitConfig {
                    tolerance: 0.5,
                    ..d
                },
                "tolerance",
            ),
            (
                LimitConfig {
                    long_window: 0,
                    ..d
                },
                "long_window",
            ),
            (
                LimitConfig {
                    probe_every: 1,
                    ..d
                },
                "probe_every",
            ),
        ];
        for (c, key) in cases {
            assert_eq!(c.validate().unwrap_err().field(), key, "{c:?}");
        }
        assert!(d.validate().is_ok());
    }

    #[cfg(feature = "config")]
    #[test]
    fn a_file_reads_defaults_durations_and_refuses_unknown_keys() {
        let c: LimitConfig =
            toml::from_str("algorithm = \"gradient2\"\nmin = 2\nwindow = \"500ms\"").unwrap();
        assert_eq!(c.algorithm, Algorithm::Gradient2);
        assert_eq!((c.min, c.max, c.initial), (2, 200, 20));
        assert_eq!(c.window, Duration::from_millis(500));
        let e = toml::from_str::<LimitConfig>("algoritm = \"vegas\"").unwrap_err();
        assert!(e.to_string().contains("algoritm"), "{e}");
        let e = toml::from_str::<LimitConfig>("algorithm = \"bbr\"").unwrap_err();
        assert!(e.to_string().contains("bbr"), "{e}");
    }
}

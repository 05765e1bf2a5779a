//! [`ThrottleConfig`]: a throttle's settings and their one validation.

use crate::policy::Mode;
use crate::ConfigError;
use std::time::Duration;

/// A [`Throttle`](super::Throttle)'s settings, each with a documented
/// default; set them with the chained methods and check them with
/// [`validate`](ThrottleConfig::validate) (the builder does).
///
/// | setting | default | why |
/// |---|---|---|
/// | `k` | 2.0 | the multiplier of Google's SRE book: a client sends up to twice what the backend accepts before it rejects locally |
/// | `window` | 30 s in 10 buckets | long enough to hold every call's answer (at least the call timeout), short enough to follow a recovery within a minute |
/// | `padding` | 8 | added to the requests in the denominator (as grpc-go does), so low traffic cannot reach full rejection |
/// | `max_rejection` | 0.8 | the largest share of calls ever refused (Envoy's admission control caps at 80 %): some always reach the backend and see it heal |
/// | `mode` | enforce | as every policy: `shadow` decides and counts refusals but lets the call run, `off` admits and counts nothing |
///
/// With the `config` feature it deserialises from the same keys:
/// `{ k = 2.0, window = "30s", buckets = 10, padding = 8, max_rejection = 0.8, mode = "enforce" }`
/// (each optional; validate after reading).
///
/// # Examples
///
/// ```
/// use fusebox::throttle::ThrottleConfig;
/// use std::time::Duration;
///
/// let config = ThrottleConfig::default()
///     .k(1.5)
///     .window(Duration::from_secs(10), 10)
///     .padding(4)
///     .max_rejection(0.9);
/// assert!(config.validate().is_ok());
/// assert_eq!(ThrottleConfig::default().k(0.5).validate().unwrap_err().field(), "k");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "config",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct ThrottleConfig {
    pub(crate) k: f64,
    #[cfg_attr(feature = "config", serde(with = "crate::duration::serde_str"))]
    pub(crate) window: Duration,
    pub(crate) buckets: u32,
    pub(crate) padding: u32,
    pub(crate) max_rejection: f64,
    pub(crate) mode: Mode,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            k: 2.0,
            window: Duration::from_secs(30),
            buckets: 10,
            padding: 8,
            max_rejection: 0.8,
            mode: Mode::Enforce,
        }
    }
}

impl ThrottleConfig {
    /// The multiplier `K`: requests may reach `K` times the accepts before
    /// any is refused (at least 1; 2 by default).
    ///
    /// # Examples
    ///
    /// ```
    /// let c = fusebox::throttle::ThrottleConfig::default().k(1.1);
    /// assert_eq!(c.k_value(), 1.1);
    /// ```
    pub fn k(mut self, k: f64) -> Self {
        self.k = k;
        self
    }

    /// The window the requests and accepts are counted over, and its
    /// buckets (30 s in 10 by default). Make it at least the call's timeout,
    /// so that a call's answer lands in the window that counted its
    /// request.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = fusebox::throttle::ThrottleConfig::default().window(Duration::from_secs(60), 12);
    /// assert_eq!(c.window_span(), Duration::from_secs(60));
    /// ```
    pub fn window(mut self, span: Duration, buckets: u32) -> Self {
        self.window = span;
        self.buckets = buckets;
        self
    }

    /// Added to the requests in the rejection probability's denominator
    /// (8 by default; 0 allows full rejection at any traffic).
    ///
    /// # Examples
    ///
    /// ```
    /// let c = fusebox::throttle::ThrottleConfig::default().padding(0);
    /// assert!(c.validate().is_ok());
    /// ```
    pub fn padding(mut self, padding: u32) -> Self {
        self.padding = padding;
        self
    }

    /// The largest rejection probability, in `[0, 1]` (0.8 by default).
    ///
    /// # Examples
    ///
    /// ```
    /// let c = fusebox::throttle::ThrottleConfig::default().max_rejection(1.5);
    /// assert_eq!(c.validate().unwrap_err().field(), "max_rejection");
    /// ```
    pub fn max_rejection(mut self, p: f64) -> Self {
        self.max_rejection = p;
        self
    }

    /// The mode the throttle starts in ([`Mode::Enforce`] by default; see
    /// [`Throttle::set_mode`](super::Throttle::set_mode)).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Mode;
    /// let c = fusebox::throttle::ThrottleConfig::default().mode(Mode::Shadow);
    /// assert_eq!(c.mode_value(), Mode::Shadow);
    /// ```
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The mode it starts in.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::throttle::ThrottleConfig::default().mode_value(), fusebox::Mode::Enforce);
    /// ```
    pub fn mode_value(&self) -> Mode {
        self.mode
    }

    /// `K`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::throttle::ThrottleConfig::default().k_value(), 2.0);
    /// ```
    pub fn k_value(&self) -> f64 {
        self.k
    }

    /// The largest rejection probability.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::throttle::ThrottleConfig::default().max_rejection_value(), 0.8);
    /// ```
    pub fn max_rejection_value(&self) -> f64 {
        self.max_rejection
    }

    /// The window's span.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fusebox::throttle::ThrottleConfig::default().window_span(), Duration::from_secs(30));
    /// ```
    pub fn window_span(&self) -> Duration {
        self.window
    }

    /// Checks every setting.
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the first setting that cannot work: `k`
    /// below 1 or not finite, a zero window or more buckets than
    /// milliseconds in it, zero buckets or more than 1000, a
    /// `max_rejection` outside `[0, 1]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::throttle::ThrottleConfig;
    /// use std::time::Duration;
    /// let e = ThrottleConfig::default().window(Duration::ZERO, 10).validate().unwrap_err();
    /// assert_eq!(e.to_string(), "invalid throttle setting `window` = 0ns: must be above zero");
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn bad(
            field: &'static str,
            value: impl std::fmt::Debug,
            problem: &'static str,
        ) -> Result<(), ConfigError> {
            Err(ConfigError::of("throttle", field, value, problem))
        }
        if !self.k.is_finite() || self.k < 1.0 {
            return bad("k", self.k, "must be a finite number >= 1");
        }
        if self.window.is_zero() {
            return bad("window", self.window, "must be above zero");
        }
        if self.buckets == 0 || self.buckets > 1000 {
            return bad("buckets", self.buckets, "must be between 1 and 1000");
        }
        if self.window.as_millis() < u128::from(self.buckets) {
            return bad(
                "buckets",
                self.buckets,
                "more buckets than milliseconds in the window",
            );
        }
        if !(0.0..=1.0).contains(&self.max_rejection) {
            return bad("max_rejection", self.max_rejection, "must be in [0, 1]");
        }
        Ok(())
    }
}

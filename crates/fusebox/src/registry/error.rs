//! What goes wrong with a registry: a config it cannot use, a name it does
//! not know.

use std::fmt;

/// A config that fusebox cannot use: which key, on which line (when it came
/// from a file), and why.
///
/// # Examples
///
/// ```
/// use fusebox::registry::{BreakerEntry, FuseboxConfig};
/// use fusebox::BreakerConfig;
/// let mut config = FuseboxConfig::default();
/// config.breakers.insert("db".into(), BreakerEntry::from(BreakerConfig {
///     failure_rate: Some(2.0),
///     ..Default::default()
/// }));
/// let err = config.validate().unwrap_err();
/// assert_eq!(err.key(), "breakers.db.failure_rate");
/// assert_eq!(err.line(), None); // not from a file
/// assert!(err.to_string().starts_with("breakers.db.failure_rate: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidConfig {
    pub(crate) key: String,
    pub(crate) line: Option<usize>,
    pub(crate) message: String,
}

impl InvalidConfig {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        InvalidConfig {
            key: key.into(),
            line: None,
            message: message.into(),
        }
    }

    pub(crate) fn under(mut self, prefix: &str) -> Self {
        self.key = if self.key.is_empty() {
            prefix.to_owned()
        } else {
            format!("{prefix}.{}", self.key)
        };
        self
    }

    #[cfg_attr(not(feature = "config"), allow(dead_code))]
    pub(crate) fn at(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }

    /// The full key at fault, e.g. `breakers.payments.open_for` (empty for a
    /// syntax error outside any key).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.defaults.breaker.settings.half_open_probes = Some(0);
    /// let err = config.validate().unwrap_err();
    /// assert_eq!(err.key(), "defaults.breaker.half_open_probes");
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The 1-based line in the config file, when known.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.defaults.breaker.settings.failure_rate = Some(-1.0);
    /// assert_eq!(config.validate().unwrap_err().line(), None); // not from a file
    /// ```
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong, without the key and line.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::FuseboxConfig;
    /// let mut config = FuseboxConfig::default();
    /// config.defaults.breaker.settings.slow_call_rate = Some(0.5);
    /// let err = config.validate().unwrap_err();
    /// assert!(err.message().contains("slow_call_rate is set but slow_call_duration is missing"));
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for InvalidConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.key.is_empty(), self.line) {
            (false, Some(line)) => write!(f, "{} (line {line}): {}", self.key, self.message),
            (false, None) => write!(f, "{}: {}", self.key, self.message),
            (true, Some(line)) => write!(f, "line {line}: {}", self.message),
            (true, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for InvalidConfig {}

impl From<crate::ConfigError> for InvalidConfig {
    /// A breaker setting's error under its config key.
    fn from(e: crate::ConfigError) -> Self {
        InvalidConfig::new(
            e.field(),
            format!("invalid value {}: {}", e.value(), e.problem()),
        )
    }
}

/// A name that the registry has no breaker for.
///
/// # Examples
///
/// ```
/// use fusebox::registry::Fusebox;
/// let err = Fusebox::new().force_open("nope").unwrap_err();
/// assert_eq!(err.name(), "nope");
/// assert_eq!(err.to_string(), "no breaker named `nope`");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBreaker {
    pub(crate) name: String,
}

impl UnknownBreaker {
    /// The name asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::registry::Fusebox;
    /// assert_eq!(Fusebox::new().reset("x").unwrap_err().name(), "x");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for UnknownBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no breaker named `{}`", self.name)
    }
}

impl std::error::Error for UnknownBreaker {}

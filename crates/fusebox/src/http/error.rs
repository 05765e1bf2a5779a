//! Why an HTTP attempt failed: [`HttpError`], and the [`TransportError`]
//! of an attempt without a response.

use super::{retry_after, BoxError, HttpResponse};
use crate::policy::{Cause, PolicyError};
use ::http::StatusCode;
use std::error::Error as StdError;
use std::fmt;
use std::time::{Duration, SystemTime};

/// An error with no response: the presets need to know whether the request
/// never left (a refused connection: safe to retry whatever the method).
/// Implemented for `reqwest::Error` (feature `reqwest`) and for a boxed
/// error (whose source chain is searched for a refused connection).
///
/// # Examples
///
/// ```
/// use fusebox::http::{BoxError, TransportError};
/// let e: BoxError = Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
/// assert!(e.is_connect());
/// ```
pub trait TransportError {
    /// Whether the request never reached the server.
    fn is_connect(&self) -> bool;
    /// The error, boxed.
    fn into_box(self) -> BoxError;
}

impl TransportError for BoxError {
    fn is_connect(&self) -> bool {
        let mut e: Option<&(dyn StdError + 'static)> = Some(&**self);
        while let Some(err) = e {
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                use std::io::ErrorKind::*;
                if matches!(
                    io.kind(),
                    ConnectionRefused | AddrNotAvailable | NotConnected
                ) {
                    return true;
                }
            }
            #[cfg(feature = "reqwest")]
            if err
                .downcast_ref::<reqwest::Error>()
                .is_some_and(|r| r.is_connect())
            {
                return true;
            }
            e = err.source();
        }
        false
    }
    fn into_box(self) -> BoxError {
        self
    }
}

#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
impl TransportError for reqwest::Error {
    fn is_connect(&self) -> bool {
        reqwest::Error::is_connect(self)
    }
    fn into_box(self) -> BoxError {
        Box::new(self)
    }
}

/// Why an HTTP attempt failed: a status the [`Classifier`](super::Classifier) counts as a
/// failure (the response is kept), or no response at all.
///
/// # Examples
///
/// ```
/// use fusebox::http::HttpError;
/// let r = http::Response::builder().status(503).header("retry-after", "2").body(()).unwrap();
/// let e = HttpError::from_response(r);
/// assert_eq!(e.status().map(|s| s.as_u16()), Some(503));
/// assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(2)));
/// assert_eq!(e.to_string(), "HTTP 503 Service Unavailable");
/// ```
pub struct HttpError<R> {
    kind: Kind<R>,
}

enum Kind<R> {
    Status(R),
    Body { response: R, error: BoxError },
    Transport { error: BoxError, connect: bool },
}

impl<R: HttpResponse> HttpError<R> {
    /// A failure answered with `response`.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = http::Response::builder().status(500).body(()).unwrap();
    /// assert!(fusebox::http::HttpError::from_response(r).response().is_some());
    /// ```
    pub fn from_response(response: R) -> Self {
        HttpError {
            kind: Kind::Status(response),
        }
    }

    /// A failure answered with `response` whose body is not what the caller
    /// expects (`error` says why, e.g. JSON that does not decode): the
    /// dependency's failure whatever the status.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::HttpError;
    /// let r = http::Response::builder().status(200).body("{").unwrap();
    /// let e = HttpError::invalid_body(r, "truncated JSON");
    /// assert!(e.is_invalid_body());
    /// assert_eq!(e.status(), Some(http::StatusCode::OK));
    /// assert_eq!(e.to_string(), "HTTP 200 OK with an invalid body: truncated JSON");
    /// ```
    pub fn invalid_body(response: R, error: impl Into<BoxError>) -> Self {
        HttpError {
            kind: Kind::Body {
                response,
                error: error.into(),
            },
        }
    }

    /// Whether the server answered with a body the caller could not use
    /// (see [`invalid_body`](Self::invalid_body)).
    ///
    /// # Examples
    ///
    /// ```
    /// let r = http::Response::builder().status(503).body(()).unwrap();
    /// assert!(!fusebox::http::HttpError::from_response(r).is_invalid_body());
    /// ```
    pub fn is_invalid_body(&self) -> bool {
        matches!(self.kind, Kind::Body { .. })
    }

    /// A failure without a response.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{BoxError, HttpError};
    /// let e: HttpError<http::Response<()>> = HttpError::transport(BoxError::from("reset"));
    /// assert!(e.status().is_none() && !e.is_connect());
    /// ```
    pub fn transport(error: impl TransportError) -> Self {
        let connect = error.is_connect();
        HttpError {
            kind: Kind::Transport {
                error: error.into_box(),
                connect,
            },
        }
    }

    /// The failing status, if the server answered.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = http::Response::builder().status(503).header("retry-after", "1").body(()).unwrap();
    /// let e = fusebox::http::HttpError::from_response(r);
    /// assert_eq!(e.status(), Some(http::StatusCode::SERVICE_UNAVAILABLE));
    /// ```
    pub fn status(&self) -> Option<StatusCode> {
        self.response().map(HttpResponse::status)
    }

    /// The failing response, if the server answered.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = http::Response::builder().status(503).header("retry-after", "1").body(()).unwrap();
    /// let e = fusebox::http::HttpError::from_response(r);
    /// assert_eq!(e.response().unwrap().status(), 503);
    /// ```
    pub fn response(&self) -> Option<&R> {
        match &self.kind {
            Kind::Status(r) | Kind::Body { response: r, .. } => Some(r),
            Kind::Transport { .. } => None,
        }
    }

    /// The failing response, owned.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = http::Response::builder().status(503).header("retry-after", "1").body(()).unwrap();
    /// let e = fusebox::http::HttpError::from_response(r);
    /// assert_eq!(e.into_response().unwrap().status(), 503);
    /// ```
    pub fn into_response(self) -> Option<R> {
        match self.kind {
            Kind::Status(r) | Kind::Body { response: r, .. } => Some(r),
            Kind::Transport { .. } => None,
        }
    }

    /// The transport error, if there was no response (downcast it to the
    /// client's type).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{BoxError, HttpError};
    /// let refused: BoxError = Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
    /// let e: HttpError<http::Response<()>> = HttpError::transport(refused);
    /// assert!(e.transport_error().unwrap().is::<std::io::Error>());
    /// ```
    pub fn transport_error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        match &self.kind {
            Kind::Transport { error, .. } => Some(&**error),
            Kind::Status(_) | Kind::Body { .. } => None,
        }
    }

    /// Whether the request never reached the server.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{BoxError, HttpError};
    /// let refused: BoxError = Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
    /// let e: HttpError<http::Response<()>> = HttpError::transport(refused);
    /// assert!(e.is_connect());
    /// ```
    pub fn is_connect(&self) -> bool {
        matches!(self.kind, Kind::Transport { connect: true, .. })
    }

    /// The response's `Retry-After`, if it has one that parses.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = http::Response::builder().status(503).header("retry-after", "1").body(()).unwrap();
    /// let e = fusebox::http::HttpError::from_response(r);
    /// assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(1)));
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        retry_after(self.response()?.headers(), SystemTime::now())
    }
}

impl<R: HttpResponse> fmt::Display for HttpError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Status(r) => write!(f, "HTTP {}", r.status()),
            Kind::Body { response, error } => {
                write!(
                    f,
                    "HTTP {} with an invalid body: {error}",
                    response.status()
                )
            }
            Kind::Transport { error, .. } => write!(f, "transport error: {error}"),
        }
    }
}

impl<R: HttpResponse> fmt::Debug for HttpError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Status(r) => f.debug_tuple("Status").field(&r.status()).finish(),
            Kind::Body { response, error } => f
                .debug_struct("Body")
                .field("status", &response.status())
                .field("error", error)
                .finish(),
            Kind::Transport { error, connect } => f
                .debug_struct("Transport")
                .field("error", error)
                .field("connect", connect)
                .finish(),
        }
    }
}

impl<R: HttpResponse> StdError for HttpError<R> {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match &self.kind {
            Kind::Transport { error, .. } | Kind::Body { error, .. } => Some(&**error),
            Kind::Status(_) => None,
        }
    }
}

impl<R> PolicyError for HttpError<R> {
    type Inner = Self;
    fn cause(&self) -> Cause<'_, Self> {
        Cause::Failed(self)
    }
}

/// A dependency the registry does not know, from
/// [`Standard::try_from_registry`](super::Standard::try_from_registry): the
/// name asked for, the names the registry has, and the closest of them.
///
/// # Examples
///
/// ```
/// use fusebox::http::Standard;
/// use fusebox::registry::{Fusebox, FuseboxConfig};
/// let fusebox = Fusebox::from_config(FuseboxConfig::from_toml("[dependencies.pricing]")?)?;
/// let e = Standard::try_from_registry(&fusebox, "pricng").unwrap_err();
/// assert_eq!(e.name(), "pricng");
/// assert_eq!(e.known(), ["pricing"]);
/// assert_eq!(
///     e.to_string(),
///     "no dependency `pricng` in the registry; did you mean `pricing`? (known: pricing)"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDependency {
    pub(super) name: String,
    pub(super) known: Vec<String>,
}

impl UnknownDependency {
    /// The name asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// let e = fusebox::http::Standard::try_from_registry(&fusebox, "pricing").unwrap_err();
    /// assert_eq!(e.name(), "pricing");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The names the registry knows, sorted.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// fusebox.breaker("db");
    /// let e = fusebox::http::Standard::try_from_registry(&fusebox, "pricing").unwrap_err();
    /// assert_eq!(e.known(), ["db"]);
    /// ```
    pub fn known(&self) -> &[String] {
        &self.known
    }

    /// The known name closest to the one asked for, if one is within two
    /// edits of it.
    ///
    /// # Examples
    ///
    /// ```
    /// let fusebox = fusebox::registry::Fusebox::new();
    /// fusebox.breaker("inventory");
    /// let e = fusebox::http::Standard::try_from_registry(&fusebox, "inventroy").unwrap_err();
    /// assert_eq!(e.suggestion(), Some("inventory"));
    /// ```
    pub fn suggestion(&self) -> Option<&str> {
        self.known
            .iter()
            .map(|k| (edit_distance(&self.name, k), k))
            .filter(|(d, _)| *d <= 2)
            .min_by_key(|(d, _)| *d)
            .map(|(_, k)| k.as_str())
    }
}

/// Levenshtein distance, counting an adjacent swap as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

impl fmt::Display for UnknownDependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no dependency `{}` in the registry", self.name)?;
        if let Some(s) = self.suggestion() {
            write!(f, "; did you mean `{s}`?")?;
        }
        if self.known.is_empty() {
            write!(f, " (it has none)")
        } else {
            write!(f, " (known: {})", self.known.join(", "))
        }
    }
}

impl StdError for UnknownDependency {}

/// Settings a [`Standard`](super::Standard) stack cannot work with, from
/// [`StandardBuilder::try_build`](super::StandardBuilder::try_build): which
/// stack, which setting and why.
///
/// # Examples
///
/// ```
/// use fusebox::http::Standard;
/// use std::time::Duration;
/// let e = Standard::builder("pricing").total_timeout(Duration::ZERO).try_build().unwrap_err();
/// assert_eq!(e.setting(), "total_timeout");
/// assert_eq!(
///     e.to_string(),
///     "stack `pricing`: total_timeout is 0s; it must be greater than zero (every call would time out)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidStandard {
    pub(super) name: String,
    pub(super) setting: &'static str,
    pub(super) problem: String,
}

impl InvalidStandard {
    /// The setting at fault: `"total_timeout"` or `"attempt_timeout"`.
    ///
    /// # Examples
    ///
    /// ```
    /// let e = fusebox::http::Standard::builder("x")
    ///     .attempt_timeout(std::time::Duration::ZERO)
    ///     .try_build()
    ///     .unwrap_err();
    /// assert_eq!(e.setting(), "attempt_timeout");
    /// ```
    pub fn setting(&self) -> &'static str {
        self.setting
    }
}

impl fmt::Display for InvalidStandard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stack `{}`: {} {}",
            self.name, self.setting, self.problem
        )
    }
}

impl StdError for InvalidStandard {}

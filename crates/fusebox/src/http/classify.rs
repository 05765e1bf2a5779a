//! Which HTTP answers are the dependency's failures: [`Classifier`], and
//! the [`HttpResponse`] it reads.

use crate::Outcome;
use ::http::{HeaderMap, StatusCode};
use std::fmt;

/// Statuses 0..640 as bits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct StatusSet([u64; 10]);

impl StatusSet {
    pub(super) fn new() -> Self {
        StatusSet([0; 10])
    }
    pub(super) fn with(mut self, code: u16, on: bool) -> Self {
        let (i, bit) = (usize::from(code / 64), 1u64 << (code % 64));
        if let Some(word) = self.0.get_mut(i) {
            if on {
                *word |= bit;
            } else {
                *word &= !bit;
            }
        }
        self
    }
    pub(super) fn contains(&self, code: u16) -> bool {
        self.0
            .get(usize::from(code / 64))
            .is_some_and(|w| w & (1u64 << (code % 64)) != 0)
    }
    /// 408, 429 and every 5xx.
    pub(super) fn standard_failures() -> Self {
        (500..600).fold(StatusSet::new().with(408, true).with(429, true), |s, c| {
            s.with(c, true)
        })
    }
}

impl fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries((0u16..640).filter(|c| self.contains(*c)))
            .finish()
    }
}

/// Which HTTP answers count as the dependency's failures.
///
/// # Default
///
/// Failures: every 5xx, 408 (request timeout), 429 (too many requests),
/// transport errors (no response) and timeouts. Everything else is a
/// success: 2xx, 3xx and the other 4xx (the caller's mistakes say nothing
/// about the dependency's health).
///
/// # Examples
///
/// ```
/// use fusebox::http::Classifier;
/// use http::StatusCode;
///
/// let c = Classifier::new().failure(StatusCode::CONFLICT).success(StatusCode::NOT_IMPLEMENTED);
/// assert!(c.is_failure(StatusCode::SERVICE_UNAVAILABLE));
/// assert!(c.is_failure(StatusCode::CONFLICT));
/// assert!(!c.is_failure(StatusCode::NOT_IMPLEMENTED));
/// assert!(!c.is_failure(StatusCode::NOT_FOUND));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classifier {
    failures: StatusSet,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier {
            failures: StatusSet::standard_failures(),
        }
    }
}

impl Classifier {
    /// The default classifier (see [`Classifier`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use http::StatusCode;
    /// assert!(fusebox::http::Classifier::new().is_failure(StatusCode::TOO_MANY_REQUESTS));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts `status` as a failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::StatusCode;
    /// let c = fusebox::http::Classifier::new().failure(StatusCode::CONFLICT);
    /// assert!(c.is_failure(StatusCode::CONFLICT));
    /// ```
    pub fn failure(mut self, status: StatusCode) -> Self {
        self.failures = self.failures.with(status.as_u16(), true);
        self
    }

    /// Counts `status` as a success.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::StatusCode;
    /// let c = fusebox::http::Classifier::new().success(StatusCode::NOT_IMPLEMENTED);
    /// assert!(!c.is_failure(StatusCode::NOT_IMPLEMENTED));
    /// ```
    pub fn success(mut self, status: StatusCode) -> Self {
        self.failures = self.failures.with(status.as_u16(), false);
        self
    }

    /// Whether `status` is the dependency's failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::StatusCode;
    /// assert!(!fusebox::http::Classifier::new().is_failure(StatusCode::BAD_REQUEST));
    /// ```
    pub fn is_failure(&self, status: StatusCode) -> bool {
        self.failures.contains(status.as_u16())
    }

    /// The breaker's verdict for one HTTP result: a response by its status,
    /// any error (no response, a timeout) a failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::{http::Classifier, Outcome};
    /// let c = Classifier::new();
    /// let ok = http::Response::builder().status(404).body(()).unwrap();
    /// assert_eq!(c.outcome(&Ok::<_, std::io::Error>(ok)), Outcome::Success);
    /// let err: Result<http::Response<()>, _> = Err(std::io::Error::other("reset"));
    /// assert_eq!(c.outcome(&err), Outcome::Failure);
    /// ```
    pub fn outcome<R: HttpResponse, E>(&self, result: &Result<R, E>) -> Outcome {
        match result {
            Ok(r) if self.is_failure(r.status()) => Outcome::Failure,
            Ok(_) => Outcome::Success,
            Err(_) => Outcome::Failure,
        }
    }
}

#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
impl<B, E> crate::tower::breaker::Classify<::http::Response<B>, E> for Classifier {
    fn classify(&self, result: &Result<::http::Response<B>, E>) -> Outcome {
        self.outcome(result)
    }
}

/// A response the presets can read: its status and headers. Implemented for
/// `http::Response<B>` and (feature `reqwest`) `reqwest::Response`.
///
/// # Examples
///
/// ```
/// use fusebox::http::HttpResponse;
/// let r = http::Response::builder().status(503).body(()).unwrap();
/// assert_eq!(HttpResponse::status(&r).as_u16(), 503);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an HTTP response fusebox's presets can read",
    note = "the HTTP presets take `http::Response<B>` or (feature `reqwest`) `reqwest::Response`"
)]
pub trait HttpResponse {
    /// The status code.
    fn status(&self) -> StatusCode;
    /// The headers (for `Retry-After`).
    fn headers(&self) -> &HeaderMap;
}

impl<B> HttpResponse for ::http::Response<B> {
    fn status(&self) -> StatusCode {
        self.status()
    }
    fn headers(&self) -> &HeaderMap {
        self.headers()
    }
}

#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
impl HttpResponse for reqwest::Response {
    fn status(&self) -> StatusCode {
        self.status()
    }
    fn headers(&self) -> &HeaderMap {
        self.headers()
    }
}

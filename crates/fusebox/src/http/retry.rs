//! Which failed HTTP attempts are tried again: [`RetryPolicy`], and
//! `Retry-After`.

use super::classify::StatusSet;
use super::{HttpError, HttpResponse};
use crate::retry::RetryIf;
use ::http::{HeaderMap, Method, StatusCode};
use std::time::{Duration, SystemTime};

/// The wait a `Retry-After` header asks for, read at `now`: delta-seconds
/// (`120`) or an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`; a date in the
/// past is no wait). `None` when absent or unreadable.
///
/// # Examples
///
/// ```
/// use fusebox::http::retry_after;
/// use std::time::{Duration, SystemTime};
/// let mut h = http::HeaderMap::new();
/// h.insert("retry-after", "120".parse().unwrap());
/// assert_eq!(retry_after(&h, SystemTime::now()), Some(Duration::from_secs(120)));
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers
        .get(::http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whether `method` is idempotent (RFC 9110 §9.2.2): GET, HEAD, OPTIONS,
/// TRACE, PUT, DELETE.
///
/// # Examples
///
/// ```
/// use http::Method;
/// assert!(fusebox::http::is_idempotent(&Method::PUT));
/// assert!(!fusebox::http::is_idempotent(&Method::POST));
/// ```
pub fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// Which failed HTTP attempts are tried again, and after how long.
///
/// # Default
///
/// - methods: idempotent only ([`is_idempotent`]); [`Standard`](super::Standard) retries a
///   request of another method only when its connection was refused (it
///   never left), and never after a timeout;
/// - statuses: 408, 429 and every 5xx;
/// - transport errors: retried;
/// - `Retry-After`: honoured (the next attempt waits at least that long) up
///   to 10 s; a longer one ends the retrying.
///
/// # Examples
///
/// ```
/// use fusebox::http::RetryPolicy;
/// use http::{HeaderMap, Method, StatusCode};
/// use std::time::Duration;
///
/// let p = RetryPolicy::new();
/// let none = HeaderMap::new();
/// assert_eq!(p.decide(&Method::GET, Some((StatusCode::BAD_GATEWAY, &none)), false), Some(Duration::ZERO));
/// assert_eq!(p.decide(&Method::POST, Some((StatusCode::BAD_GATEWAY, &none)), false), None);
/// assert_eq!(p.decide(&Method::POST, None, true), Some(Duration::ZERO)); // never sent
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    statuses: StatusSet,
    all_methods: bool,
    max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            statuses: StatusSet::standard_failures(),
            all_methods: false,
            max_retry_after: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The default policy (see [`RetryPolicy`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let _ = fusebox::http::RetryPolicy::new();
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Retries every method, not only idempotent ones (only for services
    /// that deduplicate requests, e.g. with an idempotency key).
    ///
    /// # Examples
    ///
    /// ```
    /// use http::{HeaderMap, Method, StatusCode};
    /// let p = fusebox::http::RetryPolicy::new().all_methods(true);
    /// assert!(p.decide(&Method::POST, Some((StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new())), false).is_some());
    /// ```
    pub fn all_methods(mut self, yes: bool) -> Self {
        self.all_methods = yes;
        self
    }

    /// Retries after `status` too (or, with `false`, not after it).
    ///
    /// # Examples
    ///
    /// ```
    /// use http::{HeaderMap, Method, StatusCode};
    /// let p = fusebox::http::RetryPolicy::new().status(StatusCode::NOT_IMPLEMENTED, false);
    /// assert!(p.decide(&Method::GET, Some((StatusCode::NOT_IMPLEMENTED, &HeaderMap::new())), false).is_none());
    /// ```
    pub fn status(mut self, status: StatusCode, retry: bool) -> Self {
        self.statuses = self.statuses.with(status.as_u16(), retry);
        self
    }

    /// The longest `Retry-After` honoured; a longer one ends the retrying.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = fusebox::http::RetryPolicy::new().max_retry_after(std::time::Duration::from_secs(1));
    /// assert_eq!(p.retry_after_cap(), std::time::Duration::from_secs(1));
    /// ```
    pub fn max_retry_after(mut self, cap: Duration) -> Self {
        self.max_retry_after = cap;
        self
    }

    /// The longest `Retry-After` honoured.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::http::RetryPolicy::new().retry_after_cap(), std::time::Duration::from_secs(10));
    /// ```
    pub fn retry_after_cap(&self) -> Duration {
        self.max_retry_after
    }

    /// Whether a request of `method` may be retried at all (beyond a
    /// connection that was refused).
    ///
    /// # Examples
    ///
    /// ```
    /// let p = fusebox::http::RetryPolicy::new();
    /// assert!(p.retries_method(&http::Method::GET));
    /// assert!(!p.retries_method(&http::Method::POST));
    /// ```
    pub fn retries_method(&self, method: &Method) -> bool {
        self.all_methods || is_idempotent(method)
    }

    /// The decision for one failed attempt of a `method` request: `answer`
    /// is the status and headers if the server answered, `connect` whether
    /// the request never left. `None`: do not retry; `Some(d)`: retry after
    /// at least `d`.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::{HeaderMap, Method, StatusCode};
    /// use std::time::Duration;
    /// let mut h = HeaderMap::new();
    /// h.insert("retry-after", "3".parse().unwrap());
    /// let p = fusebox::http::RetryPolicy::new();
    /// assert_eq!(p.decide(&Method::GET, Some((StatusCode::TOO_MANY_REQUESTS, &h)), false), Some(Duration::from_secs(3)));
    /// ```
    pub fn decide(
        &self,
        method: &Method,
        answer: Option<(StatusCode, &HeaderMap)>,
        connect: bool,
    ) -> Option<Duration> {
        self.decide_at(method, answer, connect, SystemTime::now())
    }

    /// As [`decide`](Self::decide), reading HTTP dates at `now`.
    ///
    /// # Examples
    ///
    /// ```
    /// use http::{HeaderMap, Method, StatusCode};
    /// use std::time::{Duration, UNIX_EPOCH};
    /// let mut h = HeaderMap::new();
    /// h.insert("retry-after", "Thu, 01 Jan 1970 00:00:05 GMT".parse().unwrap());
    /// let p = fusebox::http::RetryPolicy::new();
    /// let d = p.decide_at(&Method::GET, Some((StatusCode::SERVICE_UNAVAILABLE, &h)), false, UNIX_EPOCH);
    /// assert_eq!(d, Some(Duration::from_secs(5)));
    /// ```
    pub fn decide_at(
        &self,
        method: &Method,
        answer: Option<(StatusCode, &HeaderMap)>,
        connect: bool,
        now: SystemTime,
    ) -> Option<Duration> {
        if connect {
            return Some(Duration::ZERO);
        }
        if !self.retries_method(method) {
            return None;
        }
        let Some((status, headers)) = answer else {
            return Some(Duration::ZERO);
        };
        if !self.statuses.contains(status.as_u16()) {
            return None;
        }
        match retry_after(headers, now) {
            Some(d) if d > self.max_retry_after => None,
            Some(d) => Some(d),
            None => Some(Duration::ZERO),
        }
    }
}

/// The predicate as a [`Retry`](crate::retry::Retry)'s. An error does not know its request's
/// method, so here every request counts as idempotent: the caller chooses
/// (the standard stack gives a non-idempotent request a predicate that
/// retries only a refused connection).
impl<R: HttpResponse> RetryIf<HttpError<R>> for RetryPolicy {
    fn retry_if(&self, error: &HttpError<R>) -> bool {
        RetryIf::retry_after(self, error).is_some()
    }

    fn retry_after(&self, error: &HttpError<R>) -> Option<Duration> {
        let answer = error.response().map(|r| (r.status(), r.headers()));
        self.decide(&Method::GET, answer, error.is_connect())
    }
}

//! HTTP presets (feature `http`), on the [`http`](mod@::http) crate's types so
//! they fit reqwest, hyper and axum alike.
//!
//! - [`Classifier`]: which answers are the dependency's failures. By default
//!   5xx, 408 and 429 are failures, and so are transport errors and timeouts;
//!   every other status (other 4xx included: the caller's mistakes) is a
//!   success.
//! - [`RetryPolicy`]: which failures are worth another attempt. By default
//!   only idempotent methods are retried, after 408, 429, 5xx or a transport
//!   error; a `Retry-After` header (seconds or an HTTP date) is honoured up to
//!   a cap, and past the cap the call is not retried.
//! - [`Standard`]: the standard stack in one expression, for a
//!   `reqwest::Client` (`Standard::send`, feature `reqwest`) and for any
//!   tower HTTP client (`StandardLayer`, feature `tower`):
//!
//! ```text
//! total timeout( retry with budget( breaker( bulkhead( attempt timeout( request ) ) ) ) )
//! ```
//!
//! | knob | [`Standard::builder`] | [`Standard::from_registry`] (`[dependencies.NAME]`) |
//! |---|---|---|
//! | total timeout | 10 s | 10 s; code only ([`StandardBuilder::total_timeout`]) |
//! | retry | 3 attempts, 100 ms doubling to 10 s with full jitter, budget 20% of calls (at least 10/s) | the entry's `retry = { ... }`, else the same default |
//! | breaker | failure rate 50% over the last 20 calls, at least 10 calls, open 5 s | the registry's breaker `NAME`: the entry's `breaker`, then `[defaults.breaker]`, then the breaker's own defaults |
//! | bulkhead | 64 calls at once, no waiting | the registry's bulkhead `NAME`: the entry's `bulkhead`, then `[defaults.bulkhead]`, then 25 |
//! | attempt timeout | 2 s | the entry's `timeout`, else 2 s |
//! | classifier, retry predicate | as above | code only |
//!
//! A status the classifier counts as a failure comes out of the stack as an
//! error ([`HttpError`], the response inside), so a fallback sees the 503
//! and its `Retry-After`. One error type, [`StandardError`], says which
//! policy stopped the call; [`PolicyError::cause`] turns it into the one
//! [`Cause`] every fallback takes.
//!
//! # Examples
//!
//! The stack from a registry entry and a pipeline, stored in axum state
//! with one type name each (no closure types, no annotations):
//!
//! ```
//! use axum::{extract::State, routing::get, Router};
//! use fusebox::http::Standard;
//! use fusebox::registry::{Fusebox, FuseboxConfig};
//! use fusebox::{BoxPipeline, Cause};
//!
//! #[derive(Clone)]
//! struct AppState {
//!     inventory: Standard,
//!     reviews: BoxPipeline<Vec<String>, std::io::Error>,
//! }
//!
//! async fn page(State(app): State<AppState>) -> String {
//!     let reviews = app.reviews.call(|| Err(std::io::Error::other("reviews down")));
//!     format!("{}: {} reviews", app.inventory.name(), reviews.unwrap_or_default().len())
//! }
//!
//! let config = FuseboxConfig::from_toml(r#"
//!     [dependencies.inventory]
//!     timeout = "300ms"
//!     breaker = { consecutive_failures = 5 }
//!     retry = { max_attempts = 2, budget_ratio = 0.1 }
//! "#)?;
//! let fusebox = Fusebox::from_config(config)?;
//! let state = AppState {
//!     inventory: Standard::from_registry(&fusebox, "inventory").build(),
//!     reviews: fusebox
//!         .pipeline("reviews")
//!         .into_builder()
//!         .fallback(|_why: Cause<'_, std::io::Error>| Some(Vec::new()))
//!         .build()
//!         .boxed(),
//! };
//! assert_eq!(state.inventory.attempt_timeout(), std::time::Duration::from_millis(300));
//! assert_eq!(state.inventory.retry().max_attempts(), 2);
//! let app: Router = Router::new().route("/", get(page)).with_state(state);
//! # let _ = app;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::cause::{Cause, PolicyError};
use crate::fallback::FallbackFn;
use crate::pipeline::{Pipeline, PipelineError};
use crate::registry::Fusebox;
use crate::retry::{DefaultBackoff, Retry, RetryBudget, RetryIf};
use crate::stats::PolicyStats;
use crate::timeout::Elapsed;
use crate::{Bulkhead, CircuitBreaker, Outcome};
use ::http::{HeaderMap, Method, StatusCode};
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Any error, boxed (the same alias as `tower::BoxError`).
///
/// # Examples
///
/// ```
/// let e: fusebox::http::BoxError = "connection reset".into();
/// assert_eq!(e.to_string(), "connection reset");
/// ```
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// Statuses 0..640 as bits.
#[derive(Clone, Copy, PartialEq, Eq)]
struct StatusSet([u64; 10]);

impl StatusSet {
    fn new() -> Self {
        StatusSet([0; 10])
    }
    fn with(mut self, code: u16, on: bool) -> Self {
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
    fn contains(&self, code: u16) -> bool {
        self.0
            .get(usize::from(code / 64))
            .is_some_and(|w| w & (1u64 << (code % 64)) != 0)
    }
    /// 408, 429 and every 5xx.
    fn standard_failures() -> Self {
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

/// Why an HTTP attempt failed: a status the [`Classifier`] counts as a
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
            Kind::Status(r) => Some(r),
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
            Kind::Status(r) => Some(r),
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
            Kind::Status(_) => None,
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
            Kind::Transport { error, .. } => write!(f, "transport error: {error}"),
        }
    }
}

impl<R: HttpResponse> fmt::Debug for HttpError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Status(r) => f.debug_tuple("Status").field(&r.status()).finish(),
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
            Kind::Transport { error, .. } => Some(&**error),
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
/// - methods: idempotent only ([`is_idempotent`]); [`Standard`] retries a
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

/// The predicate as a [`Retry`]'s. An error does not know its request's
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

/// What stopped a call through the [`Standard`] stack: a policy, or the
/// [`HttpError`] of the last attempt. `R` is the client's response type.
///
/// # Examples
///
/// ```
/// use fusebox::http::StandardError;
/// let e: StandardError<http::Response<()>> = fusebox::PipelineError::TimedOut(fusebox::Elapsed::new(std::time::Duration::from_secs(1)));
/// assert_eq!(e.stopped_by(), "timeout");
/// ```
pub type StandardError<R> = PipelineError<HttpError<R>>;

/// The standard HTTP stack for one dependency; see the [module docs](self)
/// for its layers and defaults.
///
/// One type whatever the client: store it in a struct or axum state as is.
/// Cheap to clone (clones share the breaker, bulkhead, budget and counters).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use fusebox::http::Standard;
/// use http::{Method, Response};
///
/// let stack = Standard::builder("inventory").build();
/// let mut n = 0;
/// let r = stack
///     .run(&Method::GET, || {
///         n += 1;
///         let status = if n < 2 { 503 } else { 200 };
///         async move { Ok::<_, fusebox::http::BoxError>(Response::builder().status(status).body(()).unwrap()) }
///     })
///     .await;
/// assert_eq!(r.unwrap().status(), 200);
/// assert_eq!(n, 2);
/// # }
/// ```
#[derive(Clone)]
pub struct Standard {
    inner: Arc<StandardInner>,
}

/// How one request may be retried.
#[derive(Clone, Copy)]
enum Mode {
    /// As the [`RetryPolicy`] says (an idempotent method).
    Retry,
    /// Only after a refused connection: the request never left (another method).
    ConnectOnly,
    /// Never: the request cannot be sent twice (a streamed body).
    Single,
}

/// The retry predicate of requests that must not run twice: only a refused
/// connection is retried.
#[derive(Debug, Clone, Copy)]
struct ConnectOnly;

impl<R: HttpResponse> RetryIf<HttpError<R>> for ConnectOnly {
    fn retry_if(&self, error: &HttpError<R>) -> bool {
        error.is_connect()
    }
}

struct StandardInner {
    name: Box<str>,
    pipeline: Pipeline<DefaultBackoff, RetryPolicy>,
    /// The same layers for non-idempotent requests: retried only when the
    /// connection was refused, never after a timeout.
    sent_once: Pipeline<DefaultBackoff, ConnectOnly>,
    total: Duration,
    classifier: Classifier,
    retry_policy: RetryPolicy,
    stats: PolicyStats,
}

/// Builds a [`Standard`] stack; from [`Standard::builder`] (the defaults) or
/// [`Standard::from_registry`] (a registry entry). Every knob overrides.
///
/// # Default
///
/// See the table in the [module docs](self).
///
/// # Examples
///
/// ```
/// use fusebox::http::{Classifier, Standard};
/// use std::time::Duration;
/// let stack = Standard::builder("search")
///     .total_timeout(Duration::from_secs(3))
///     .attempt_timeout(Duration::from_millis(500))
///     .classifier(Classifier::new().failure(http::StatusCode::CONFLICT))
///     .build();
/// assert_eq!(stack.total_timeout(), Duration::from_secs(3));
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct StandardBuilder {
    name: String,
    total: Duration,
    attempt: Duration,
    retry: Option<Retry>,
    breaker: Option<CircuitBreaker>,
    bulkhead: Option<Bulkhead>,
    classifier: Classifier,
    retry_policy: RetryPolicy,
    stats: Option<PolicyStats>,
}

impl fmt::Debug for StandardBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StandardBuilder")
            .field("name", &self.name)
            .field("total", &self.total)
            .field("attempt", &self.attempt)
            .finish_non_exhaustive()
    }
}

/// The default total timeout.
///
/// # Examples
///
/// ```
/// let s = fusebox::http::Standard::builder("x").build();
/// assert_eq!(s.total_timeout(), fusebox::http::DEFAULT_TOTAL_TIMEOUT);
/// ```
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(10);
/// The default per-attempt timeout.
///
/// # Examples
///
/// ```
/// let s = fusebox::http::Standard::builder("x").build();
/// assert_eq!(s.attempt_timeout(), fusebox::http::DEFAULT_ATTEMPT_TIMEOUT);
/// ```
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
/// The default bulkhead limit.
///
/// # Examples
///
/// ```
/// let s = fusebox::http::Standard::builder("x").build();
/// assert_eq!(s.bulkhead().limit(), fusebox::http::DEFAULT_MAX_CONCURRENT);
/// ```
pub const DEFAULT_MAX_CONCURRENT: usize = 64;

fn default_retry() -> Retry {
    let budget = RetryBudget::builder()
        .ratio(0.2)
        .min_per_second(10)
        .build()
        .unwrap_or_else(|_| unreachable!("constant budget settings are valid"));
    Retry::builder()
        .budget(budget)
        .build()
        .unwrap_or_else(|_| unreachable!("3 attempts is valid"))
}

fn default_breaker(name: &str) -> CircuitBreaker {
    CircuitBreaker::builder()
        .name(name)
        .failure_rate(0.5)
        .count_window(20)
        .min_calls(10)
        .open_for(Duration::from_secs(5))
        .build()
        .unwrap_or_else(|_| unreachable!("constant breaker settings are valid"))
}

impl Standard {
    /// A builder with the defaults, for the dependency `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.name(), "inventory");
    /// ```
    pub fn builder(name: impl Into<String>) -> StandardBuilder {
        StandardBuilder {
            name: name.into(),
            total: DEFAULT_TOTAL_TIMEOUT,
            attempt: DEFAULT_ATTEMPT_TIMEOUT,
            retry: None,
            breaker: None,
            bulkhead: None,
            classifier: Classifier::new(),
            retry_policy: RetryPolicy::new(),
            stats: None,
        }
    }

    /// A builder from the registry's dependency `name` (its
    /// `[dependencies.NAME]` table, through [`Fusebox::pipeline`]): the
    /// registry's breaker and bulkhead (live: reconfigured in place), the
    /// entry's timeout and retry; what the entry leaves out takes the
    /// stack's defaults. The breaker and bulkhead are registered under
    /// `name`, so the registry's observers (metrics, tracing) see them.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use fusebox::registry::Fusebox;
    /// let fusebox = Fusebox::new();
    /// let s = Standard::from_registry(&fusebox, "inventory").build();
    /// fusebox.force_open("inventory")?;
    /// assert_eq!(s.breaker().state(), fusebox::State::ForcedOpen);
    /// # Ok::<(), fusebox::registry::UnknownBreaker>(())
    /// ```
    pub fn from_registry(fusebox: &Fusebox, name: &str) -> StandardBuilder {
        let p = fusebox.pipeline(name);
        let mut b = Standard::builder(name);
        b.breaker = p.breaker().cloned();
        b.bulkhead = Some(
            p.bulkhead()
                .cloned()
                .unwrap_or_else(|| fusebox.bulkhead(name)),
        );
        if let Some(t) = p.timeout() {
            b.attempt = t;
        }
        b.retry = p.retry().cloned();
        b
    }

    /// The dependency's name.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.name(), "inventory");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The breaker.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.breaker().state(), fusebox::State::Closed);
    /// ```
    pub fn breaker(&self) -> &CircuitBreaker {
        self.inner
            .pipeline
            .breaker()
            .unwrap_or_else(|| unreachable!("a standard stack always has a breaker"))
    }

    /// The bulkhead.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.bulkhead().limit(), 64);
    /// ```
    pub fn bulkhead(&self) -> &Bulkhead {
        self.inner
            .pipeline
            .bulkhead()
            .unwrap_or_else(|| unreachable!("a standard stack always has a bulkhead"))
    }

    /// The retry policy (attempts, backoff, budget).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.retry().max_attempts(), 3);
    /// assert!(s.retry().budget().is_some());
    /// ```
    pub fn retry(&self) -> &Retry<DefaultBackoff, RetryPolicy> {
        self.inner
            .pipeline
            .retry()
            .unwrap_or_else(|| unreachable!("a standard stack always has a retry"))
    }

    /// The deadline of one attempt.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.attempt_timeout(), std::time::Duration::from_secs(2));
    /// ```
    pub fn attempt_timeout(&self) -> Duration {
        self.inner
            .pipeline
            .timeout()
            .unwrap_or(DEFAULT_ATTEMPT_TIMEOUT)
    }

    /// The deadline of the whole call, retries and waits included.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.total_timeout(), std::time::Duration::from_secs(10));
    /// ```
    pub fn total_timeout(&self) -> Duration {
        self.inner.total
    }

    /// The counters of this stack (export them with
    /// `fusebox::metrics::Metrics::track_stats`).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert_eq!(s.stats().snapshot().calls, 0);
    /// ```
    pub fn stats(&self) -> &PolicyStats {
        &self.inner.stats
    }

    /// The classifier.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("inventory").build();
    /// assert!(s.classifier().is_failure(http::StatusCode::BAD_GATEWAY));
    /// ```
    pub fn classifier(&self) -> &Classifier {
        &self.inner.classifier
    }

    /// Runs one request through the stack: `attempt` sends it once (it is
    /// called again for each retry). A request whose method the
    /// [`RetryPolicy`] does not retry is tried again only when its
    /// connection was refused (the request never left), never after a
    /// timeout or an answer.
    ///
    /// # Errors
    ///
    /// [`StandardError`]: the breaker or bulkhead refused, a timeout (an
    /// attempt's or the total), or the last attempt's [`HttpError`] (a
    /// failing status, the response inside, or no response).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the attempt in progress; its bulkhead slot
    /// and breaker permit are released without a verdict.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use fusebox::http::{BoxError, Standard};
    /// let s = Standard::builder("inventory").build();
    /// let r = s
    ///     .run(&http::Method::GET, || async { Err::<http::Response<()>, BoxError>("reset".into()) })
    ///     .await;
    /// assert_eq!(s.stats().snapshot().attempts, 3); // retried: GET is idempotent
    /// assert!(r.is_err());
    /// # }
    /// ```
    pub async fn run<R, E, F, Fut>(
        &self,
        method: &Method,
        attempt: F,
    ) -> Result<R, StandardError<R>>
    where
        R: HttpResponse,
        E: TransportError,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
    {
        let mode = if self.inner.retry_policy.retries_method(method) {
            Mode::Retry
        } else {
            Mode::ConnectOnly
        };
        self.run_as(mode, attempt).await
    }

    async fn run_as<R, E, F, Fut>(&self, mode: Mode, mut attempt: F) -> Result<R, StandardError<R>>
    where
        R: HttpResponse,
        E: TransportError,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<R, E>>,
    {
        let inner = &*self.inner;
        #[cfg(feature = "tracing")]
        let span = crate::trace::call_span(&inner.name);
        let classifier = inner.classifier;
        let mut once = || {
            let fut = attempt();
            async move {
                match fut.await {
                    Ok(r) if classifier.is_failure(r.status()) => Err(HttpError::from_response(r)),
                    Ok(r) => Ok(r),
                    Err(e) => Err(HttpError::transport(e)),
                }
            }
        };
        let call = async {
            match mode {
                Mode::Retry => inner.pipeline.call_async(&mut once).await,
                Mode::ConnectOnly => inner.sent_once.call_async(&mut once).await,
                Mode::Single => inner.pipeline.run_async(once()).await,
            }
        };
        #[cfg(feature = "tracing")]
        let call = tracing::Instrument::instrument(call, span.clone());
        let result = match tokio::time::timeout(inner.total, call).await {
            Ok(r) => r,
            Err(_) => {
                inner.stats.timeout();
                Err(PipelineError::TimedOut(Elapsed::new(inner.total)))
            }
        };
        #[cfg(feature = "tracing")]
        crate::trace::record_call(
            &span,
            &result.as_ref().map(|_| ()).map_err(PolicyError::cause),
        );
        result
    }

    /// Answers a failed call with `fallback` (the one fallback shape: a
    /// [`Cause`] in, `Some(value)` or `None` out), counting the answer in
    /// this stack's fallbacks by cause.
    ///
    /// # Errors
    ///
    /// The call's error when the fallback returns `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{HttpError, Standard, StandardError};
    /// use fusebox::Cause;
    /// type Resp = http::Response<()>;
    /// let stack = Standard::builder("inventory").build();
    /// stack.breaker().force_open();
    /// let failed: Result<String, StandardError<Resp>> =
    ///     Err(fusebox::PipelineError::Rejected(stack.breaker().try_acquire().unwrap_err()));
    /// let r = stack.recover(failed, |why: Cause<'_, HttpError<Resp>>| Some(format!("unknown ({why})")));
    /// assert_eq!(r.unwrap(), "unknown (rejected by breaker)");
    /// assert_eq!(stack.stats().snapshot().fallbacks[0], 1);
    /// ```
    pub fn recover<T, R, F>(
        &self,
        result: Result<T, StandardError<R>>,
        fallback: F,
    ) -> Result<T, StandardError<R>>
    where
        F: FallbackFn<HttpError<R>, T>,
    {
        result.or_else(|e| {
            let cause = PolicyError::cause(&e);
            match fallback.fallback(cause) {
                Some(v) => {
                    self.inner.stats.fallback(&cause);
                    Ok(v)
                }
                None => Err(e),
            }
        })
    }
}

#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
impl Standard {
    /// Sends a reqwest request through the stack (feature `reqwest`). Each
    /// attempt sends a copy ([`RequestBuilder::try_clone`](reqwest::RequestBuilder::try_clone));
    /// a request whose body cannot be copied (a stream) is sent once.
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() {
    /// let client = reqwest::Client::new();
    /// let inventory = fusebox::http::Standard::builder("inventory").build();
    /// let r = inventory.send(client.get("http://127.0.0.1:9/stock/42")).await;
    /// # }
    /// ```
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, StandardError<reqwest::Response>> {
        let (client, request) = request.build_split();
        let request = match request {
            Ok(r) => r,
            Err(e) => return Err(PipelineError::Failed(HttpError::transport(e))),
        };
        let mode = match request.try_clone() {
            Some(_) if self.inner.retry_policy.retries_method(request.method()) => Mode::Retry,
            Some(_) => Mode::ConnectOnly,
            None => Mode::Single, // a streamed body: it can be sent once
        };
        let mut first = Some(request);
        self.run_as(mode, || {
            // A copy per attempt while the request can be copied; the
            // original for the one attempt of a streamed body.
            let next = match first.as_ref().and_then(reqwest::Request::try_clone) {
                Some(copy) => Some(copy),
                None => first.take(),
            };
            let client = client.clone();
            async move {
                match next {
                    Some(r) => client.execute(r).await,
                    None => unreachable!("a request that cannot be copied has one attempt"),
                }
            }
        })
        .await
    }
}

impl StandardBuilder {
    /// The deadline of the whole call, retries and waits included (default
    /// 10 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use std::time::Duration;
    /// let s = Standard::builder("x").total_timeout(Duration::from_secs(1)).build();
    /// assert_eq!(s.total_timeout(), Duration::from_secs(1));
    /// ```
    pub fn total_timeout(mut self, total: Duration) -> Self {
        self.total = total;
        self
    }

    /// The deadline of one attempt (default 2 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::Standard;
    /// use std::time::Duration;
    /// let s = Standard::builder("x").attempt_timeout(Duration::from_millis(250)).build();
    /// assert_eq!(s.attempt_timeout(), Duration::from_millis(250));
    /// ```
    pub fn attempt_timeout(mut self, attempt: Duration) -> Self {
        self.attempt = attempt;
        self
    }

    /// The retry's attempts, backoff and budget (its predicate is replaced
    /// by the [`RetryPolicy`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let retry = fusebox::retry::Retry::builder().max_attempts(5).build()?;
    /// let s = fusebox::http::Standard::builder("x").retry(retry).build();
    /// assert_eq!(s.retry().max_attempts(), 5);
    /// # Ok::<(), fusebox::retry::RetryConfigError>(())
    /// ```
    pub fn retry<P>(mut self, retry: Retry<DefaultBackoff, P>) -> Self {
        self.retry = Some(retry.with_retry_if(crate::retry::AnyError));
        self
    }

    /// The breaker (a shared handle).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().consecutive_failures(3).build()?;
    /// let s = fusebox::http::Standard::builder("x").breaker(b.clone()).build();
    /// b.force_open();
    /// assert_eq!(s.breaker().state(), fusebox::State::ForcedOpen);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn breaker(mut self, breaker: CircuitBreaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// The bulkhead (a shared handle).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("x").bulkhead(fusebox::Bulkhead::new(4)).build();
    /// assert_eq!(s.bulkhead().limit(), 4);
    /// ```
    pub fn bulkhead(mut self, bulkhead: Bulkhead) -> Self {
        self.bulkhead = Some(bulkhead);
        self
    }

    /// Which statuses are failures.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{Classifier, Standard};
    /// let s = Standard::builder("x").classifier(Classifier::new().success(http::StatusCode::NOT_IMPLEMENTED)).build();
    /// assert!(!s.classifier().is_failure(http::StatusCode::NOT_IMPLEMENTED));
    /// ```
    pub fn classifier(mut self, classifier: Classifier) -> Self {
        self.classifier = classifier;
        self
    }

    /// Which failures are retried.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::http::{RetryPolicy, Standard};
    /// let s = Standard::builder("x").retry_policy(RetryPolicy::new().all_methods(true)).build();
    /// # let _ = s;
    /// ```
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// Counts into `stats` (e.g. from `Metrics::stats`) instead of fresh
    /// counters.
    ///
    /// # Examples
    ///
    /// ```
    /// let stats = fusebox::PolicyStats::new();
    /// let s = fusebox::http::Standard::builder("x").stats(stats.clone()).build();
    /// assert_eq!(s.stats().snapshot(), stats.snapshot());
    /// ```
    pub fn stats(mut self, stats: PolicyStats) -> Self {
        self.stats = Some(stats);
        self
    }

    /// Builds the stack.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::http::Standard::builder("x").build();
    /// assert_eq!(s.name(), "x");
    /// ```
    pub fn build(self) -> Standard {
        let stats = self.stats.unwrap_or_default();
        let retry = self.retry.unwrap_or_else(default_retry);
        let breaker = self.breaker.unwrap_or_else(|| default_breaker(&self.name));
        let bulkhead = self.bulkhead.unwrap_or_else(|| {
            Bulkhead::builder(DEFAULT_MAX_CONCURRENT)
                .name(&*self.name)
                .build()
        });
        let once_retry = retry
            .clone()
            .without_timeout_retries()
            .with_retry_if(ConnectOnly);
        let pipeline = Pipeline::builder()
            .retry(retry.with_retry_if(self.retry_policy))
            .breaker(breaker)
            .bulkhead(bulkhead)
            .timeout(self.attempt)
            .stats(stats.clone())
            .build();
        Standard {
            inner: Arc::new(StandardInner {
                name: self.name.into(),
                sent_once: pipeline.clone().into_builder().retry(once_retry).build(),
                pipeline,
                total: self.total,
                classifier: self.classifier,
                retry_policy: self.retry_policy,
                stats,
            }),
        }
    }
}

impl fmt::Debug for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Standard")
            .field("name", &self.inner.name)
            .field("pipeline", &self.inner.pipeline)
            .field("total", &self.inner.total)
            .field("classifier", &self.inner.classifier)
            .field("retry_policy", &self.inner.retry_policy)
            .finish()
    }
}

#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use self::tower_stack::{StandardLayer, StandardService};

#[cfg(feature = "tower")]
mod tower_stack {
    use super::{HttpError, Standard, StandardError};
    use crate::tower::BoxError;
    use ::http::{Request, Response};
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tower::{Layer, Service};

    /// The [`Standard`] stack as a tower layer, for any HTTP client service
    /// (hyper's, axum's, another tower stack) whose request body can be
    /// cloned (each attempt sends a copy).
    ///
    /// Errors are boxed: fusebox's refusals as themselves
    /// ([`Rejected`](crate::Rejected), [`BulkheadFull`](crate::BulkheadFull),
    /// [`Elapsed`](crate::Elapsed)), a failing status as
    /// `HttpError<Response<B>>`, so `err.cause()` and downcasts work.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), fusebox::tower::BoxError> {
    /// use fusebox::http::{Standard, StandardLayer};
    /// use http::{Request, Response};
    /// use tower::{service_fn, Layer, ServiceExt};
    ///
    /// let client = service_fn(|_req: Request<String>| async {
    ///     Ok::<_, std::io::Error>(Response::new("in stock".to_string()))
    /// });
    /// let svc = StandardLayer::new(Standard::builder("inventory").build()).layer(client);
    /// let resp = svc.oneshot(Request::new(String::new())).await?;
    /// assert_eq!(resp.into_body(), "in stock");
    /// # Ok(())
    /// # }
    /// ```
    #[derive(Debug, Clone)]
    pub struct StandardLayer {
        stack: Standard,
    }

    impl StandardLayer {
        /// The layer of `stack`.
        ///
        /// # Examples
        ///
        /// ```
        /// let layer = fusebox::http::StandardLayer::new(fusebox::http::Standard::builder("x").build());
        /// # let _ = layer;
        /// ```
        pub fn new(stack: Standard) -> Self {
            StandardLayer { stack }
        }
    }

    impl<S> Layer<S> for StandardLayer {
        type Service = StandardService<S>;
        fn layer(&self, inner: S) -> StandardService<S> {
            StandardService {
                inner,
                stack: self.stack.clone(),
            }
        }
    }

    /// The service of a [`StandardLayer`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tower::Layer;
    /// let layer = fusebox::http::StandardLayer::new(fusebox::http::Standard::builder("x").build());
    /// let svc = layer.layer(tower::service_fn(|_: http::Request<()>| async {
    ///     Ok::<_, std::io::Error>(http::Response::new(()))
    /// }));
    /// assert_eq!(svc.stack().name(), "x");
    /// ```
    #[derive(Debug, Clone)]
    pub struct StandardService<S> {
        inner: S,
        stack: Standard,
    }

    impl<S> StandardService<S> {
        /// The stack.
        ///
        /// # Examples
        ///
        /// ```
        /// use tower::Layer;
        /// let svc = fusebox::http::StandardLayer::new(fusebox::http::Standard::builder("x").build()).layer(());
        /// assert_eq!(svc.stack().name(), "x");
        /// ```
        pub fn stack(&self) -> &Standard {
            &self.stack
        }
    }

    fn boxed<R>(e: StandardError<R>) -> BoxError
    where
        R: super::HttpResponse + Send + Sync + 'static,
    {
        match e {
            StandardError::Rejected(r) => Box::new(r),
            StandardError::BulkheadFull(b) => Box::new(b),
            StandardError::TimedOut(t) => Box::new(t),
            StandardError::Failed(f) => Box::new(f),
        }
    }

    impl<S, B, RB> Service<Request<B>> for StandardService<S>
    where
        S: Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send,
        B: Clone + Send + Sync + 'static,
        RB: Send + Sync + 'static,
    {
        type Response = Response<RB>;
        type Error = BoxError;
        type Future = Pin<Box<dyn Future<Output = Result<Response<RB>, BoxError>> + Send>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            // Each attempt drives its own clone of the client to readiness.
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<B>) -> Self::Future {
            let stack = self.stack.clone();
            let client = self.inner.clone();
            let (parts, body) = request.into_parts();
            Box::pin(async move {
                let method = parts.method.clone();
                stack
                    .run(&method, move || {
                        let req = Request::from_parts(parts.clone(), body.clone());
                        let mut client = client.clone();
                        async move {
                            std::future::poll_fn(|cx| client.poll_ready(cx))
                                .await
                                .map_err(Into::<BoxError>::into)?;
                            client.call(req).await.map_err(Into::<BoxError>::into)
                        }
                    })
                    .await
                    .map_err(boxed)
            })
        }
    }

    #[allow(dead_code)]
    fn _assert_error<RB: Send + Sync + 'static>(e: HttpError<Response<RB>>) -> BoxError {
        Box::new(e)
    }
}

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
//!   `reqwest::Client` (`Standard::send_bytes`, feature `reqwest`), for any
//!   client through [`Standard::run`], and for any tower HTTP client
//!   (`StandardLayer`, feature `tower`):
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
//! | adaptive limit, throttle (features `limit`, `throttle`) | none | code only ([`StandardBuilder`]'s `limit`, `throttle`) |
//! | classifier, retry predicate | as above | code only |
//!
//! # What the policies cover
//!
//! The timeouts, the bulkhead slot and the breaker's permit cover the
//! attempt's future, and the breaker's verdict is that future's result. How
//! much of the response that future holds depends on how the request is
//! sent:
//!
//! | way of sending | covered | the verdict is given |
//! |---|---|---|
//! | `Standard::send_bytes` (feature `reqwest`) | the request, the headers and the whole body | when the body is complete |
//! | `Standard::send_json` (feature `json`) | as `send_bytes`, and decoding the body | when the body is complete and decoded |
//! | [`Standard::run`], an attempt that returns a fully read response (e.g. `http::Response<Bytes>`) | everything the attempt's future does | when that future ends |
//! | `WholeBodyLayer` (feature `tower`) | the request, the headers and the whole body, up to its size limit | when the body is complete |
//! | `Standard::send`, `Standard::run` returning a streaming body, `StandardLayer` (feature `tower`) | the request and the headers only | when the headers arrive |
//!
//! Under the first four, a dependency that answers `200 OK` and then
//! stalls its body is the attempt timeout's failure (then retried as the
//! [`RetryPolicy`] says, within the total timeout), a body cut short is a
//! transport error, and both are failures for the breaker; the bulkhead
//! slot is held until the body is complete. Under the last row the body is
//! read after the stack has let go: no deadline of the stack bounds it,
//! the bulkhead slot is free again and the breaker has counted a success.
//!
//! # One breaker per host
//!
//! One breaker for everything a stack sends lets one sick host turn away
//! the requests to every healthy one. [`StandardBuilder::per_authority`]
//! gives the stack a [`BreakerSet`](crate::BreakerSet): each request passes
//! the breaker of its URL's authority ([`authority`]: `scheme://host:port`),
//! or of the key given to [`Standard::run_for`]. The timeouts, the retry and
//! its budget, the bulkhead and the rate limiter stay shared; the set bounds
//! how many hosts have a breaker (`max_keys`) and can eject outliers
//! ([`Outliers`](crate::set::Outliers)).
//!
//! ```text
//! total timeout( retry with budget( breaker of the host( bulkhead( attempt timeout( request ) ) ) ) )
//! ```
//!
//! # Hedging
//!
//! [`Standard::hedging`] is the standard stack with a hedge inside the
//! retry: an idempotent request still unanswered at the 95th percentile of
//! recent latencies is sent once more, the first answer wins, and extra
//! attempts spend from the retry's budget.
//!
//! ```text
//! total timeout( retry( hedge( breaker( bulkhead( attempt timeout( request ) ) ) ) ) )
//! ```
//!
//! # reqwest
//!
//! The `reqwest` feature supports reqwest **0.13** (`reqwest = "0.13"` in
//! the application's manifest; the request builder's type must be the
//! one fusebox was built against). fusebox enables no reqwest feature: the
//! application picks its TLS backend (`rustls`, `native-tls`) and the rest.
//!
//! A status the classifier counts as a failure comes out of the stack as an
//! error ([`HttpError`], the response inside), so a fallback sees the 503
//! and its `Retry-After`. One error type, [`StandardError`], says which
//! policy stopped the call; [`PolicyError::cause`](crate::PolicyError::cause) turns it into the one
//! [`Cause`](crate::Cause) every fallback takes.
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

mod classify;
mod error;
#[cfg(feature = "tower")]
mod layer;
mod retry;
mod standard;

pub use self::classify::{Classifier, HttpResponse};
pub use self::error::{HttpError, InvalidStandard, TransportError, UnknownDependency};
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use self::layer::{
    BodyTooLarge, StandardLayer, StandardService, WholeBodyLayer, WholeBodyService,
    DEFAULT_MAX_BODY,
};
pub use self::retry::{is_idempotent, retry_after, RetryPolicy};
pub use self::standard::{
    Standard, StandardBuilder, StandardError, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_MAX_CONCURRENT,
    DEFAULT_TOTAL_TIMEOUT,
};

/// The key [`StandardBuilder::per_authority`] gives a request:
/// `scheme://host:port`, with the scheme's port when the URI has none
/// (80 for `http`, 443 for `https`), the host in lower case; `None` for a URI
/// without a scheme or host (a path alone).
///
/// # Examples
///
/// ```
/// use fusebox::http::authority;
/// let uri: http::Uri = "https://API.example.com/v1/items?x=1".parse()?;
/// assert_eq!(authority(&uri).as_deref(), Some("https://api.example.com:443"));
/// let uri: http::Uri = "http://10.0.0.7:8080/".parse()?;
/// assert_eq!(authority(&uri).as_deref(), Some("http://10.0.0.7:8080"));
/// assert_eq!(authority(&"/v1/items".parse()?), None);
/// # Ok::<(), http::uri::InvalidUri>(())
/// ```
pub fn authority(uri: &::http::Uri) -> Option<String> {
    let scheme = uri.scheme_str()?;
    let port = uri.port_u16().or(match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    });
    Some(authority_parts(scheme, uri.host()?, port))
}

/// `scheme://host:port` (or `scheme://host` without a port), lower case.
fn authority_parts(scheme: &str, host: &str, port: Option<u16>) -> String {
    let mut key = match port {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    };
    key.make_ascii_lowercase();
    key
}

/// The body of a fully read response, as `Standard::send_bytes` (feature
/// `reqwest`) and `WholeBodyLayer` (feature `tower`) return it (the `bytes`
/// crate's type, re-exported so that a caller can name it without depending
/// on `bytes`).
///
/// # Examples
///
/// ```
/// let body = fusebox::http::Bytes::from_static(b"7 in stock");
/// let response = http::Response::new(body);
/// assert_eq!(&response.body()[..], b"7 in stock");
/// ```
pub use bytes::Bytes;

/// Any error, boxed (the same alias as `tower::BoxError`).
///
/// # Examples
///
/// ```
/// let e: fusebox::http::BoxError = "connection reset".into();
/// assert_eq!(e.to_string(), "connection reset");
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

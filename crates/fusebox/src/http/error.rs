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

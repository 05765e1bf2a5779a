//! Who may change a breaker from the page: off unless enabled; when enabled,
//! a token compared in constant time and a same-origin request.

use axum::http::{header, HeaderMap};
use std::fmt;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The shortest token [`Controls::token`] accepts, in bytes.
pub const MIN_TOKEN_LEN: usize = 16;

/// Whether the page and the POST endpoints can force open, disable and reset
/// breakers. Off by default ([`Controls::off`]): the dashboard is then
/// read-only and the control endpoints do not exist.
///
/// # Examples
///
/// ```
/// use fusebox::dashboard::Controls;
/// assert!(!Controls::default().enabled());
/// assert!(Controls::token("a-long-random-secret-value").enabled());
/// ```
#[derive(Clone, Default)]
pub struct Controls {
    token: Option<Arc<[u8]>>,
}

impl fmt::Debug for Controls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the token.
        f.debug_struct("Controls")
            .field("enabled", &self.enabled())
            .finish()
    }
}

impl Controls {
    /// Read-only: no control endpoint, no buttons (the default).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!fusebox::dashboard::Controls::off().enabled());
    /// ```
    pub fn off() -> Controls {
        Controls { token: None }
    }

    /// Controls enabled for requests that carry `Authorization: Bearer
    /// <token>` and come from the dashboard's own origin. The token must be
    /// at least [`MIN_TOKEN_LEN`] bytes, or
    /// [`DashboardBuilder::build`](super::DashboardBuilder::build) refuses it.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::Controls;
    /// let controls = Controls::token(std::env::var("FUSEBOX_TOKEN").unwrap_or_default());
    /// # let _ = controls;
    /// ```
    pub fn token(token: impl Into<String>) -> Controls {
        Controls {
            token: Some(Arc::from(token.into().into_bytes())),
        }
    }

    /// Whether the controls are on.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!fusebox::dashboard::Controls::off().enabled());
    /// ```
    pub fn enabled(&self) -> bool {
        self.token.is_some()
    }

    pub(crate) fn token_len(&self) -> Option<usize> {
        self.token.as_ref().map(|t| t.len())
    }

    /// Checks a control request's headers; `authority` is the request URI's
    /// (HTTP/2 sends it instead of a `Host` header). The origin is checked
    /// first, so a cross-site page cannot probe tokens.
    pub(crate) fn authorize(
        &self,
        headers: &HeaderMap,
        authority: Option<&str>,
    ) -> Result<(), Refusal> {
        let Some(token) = &self.token else {
            return Err(Refusal::Disabled);
        };
        same_origin(headers, authority)?;
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            .ok_or(Refusal::NoToken)?;
        // Constant time in the bytes compared; a length mismatch returns
        // early, which reveals at most the length (MIN_TOKEN_LEN and up).
        if bool::from(given.ct_eq(token)) {
            Ok(())
        } else {
            Err(Refusal::WrongToken)
        }
    }
}

/// Why a control request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Disabled,
    CrossOrigin,
    NoToken,
    WrongToken,
}

impl Refusal {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::Disabled => "controls are disabled",
            Refusal::CrossOrigin => "cross-origin request",
            Refusal::NoToken => "missing bearer token",
            Refusal::WrongToken => "wrong token",
        }
    }
}

/// CSRF protection: a browser request must come from the page's own origin.
///
/// - `Sec-Fetch-Site`, when sent (every current browser), must be `same-origin`.
/// - `Origin`, when sent, must be `http://<Host>` or `https://<Host>` (the
///   `Host` header, else the URI's authority as HTTP/2 sends it).
/// - A request with neither is not from a browser (curl, a script); the token
///   alone decides.
pub(crate) fn same_origin(headers: &HeaderMap, authority: Option<&str>) -> Result<(), Refusal> {
    if let Some(site) = headers.get("sec-fetch-site") {
        if site.as_bytes() != b"same-origin" {
            return Err(Refusal::CrossOrigin);
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers
            .get(header::HOST)
            .map(|h| h.as_bytes())
            .or(authority.map(str::as_bytes))
            .ok_or(Refusal::CrossOrigin)?;
        let origin = origin.as_bytes();
        let matches = [&b"http://"[..], b"https://"].iter().any(|scheme| {
            origin
                .strip_prefix(*scheme)
                .is_some_and(|rest| !rest.is_empty() && rest.eq_ignore_ascii_case(host))
        });
        if !matches {
            return Err(Refusal::CrossOrigin);
        }
    }
    Ok(())
}

//! The standard stack as a tower layer (feature `tower`).

use super::{Bytes, HttpError, Standard, StandardError};
use crate::tower::BoxError;
use ::http::{Request, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
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
        through(
            self.stack.clone(),
            self.inner.clone(),
            request,
            |response| std::future::ready(Ok(response)),
        )
    }
}

/// The [`Standard`] stack as a tower layer that reads each response's
/// **whole body** inside the attempt: the attempt timeout, the total
/// timeout, the bulkhead slot and the breaker's permit cover the body to its
/// last byte, and the breaker's verdict is given when it is complete (what
/// [`Standard::send_bytes`](Standard) does for reqwest, for any tower HTTP
/// client: hyper's, another stack). The response comes back as
/// `Response<Bytes>`.
///
/// A body that stalls is the attempt's timeout; a body that breaks off is a
/// transport error; a body longer than the size limit ([`max_body`], 16 MiB
/// unless set) is an error too, so memory stays bounded whatever the
/// dependency sends. All three are failures, retried as the stack's
/// [`RetryPolicy`](super::RetryPolicy) says. The body of a failing status
/// is read as well, so the error's response carries it.
///
/// [`max_body`]: WholeBodyLayer::max_body
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), fusebox::tower::BoxError> {
/// use fusebox::http::{Standard, WholeBodyLayer};
/// use http::{Request, Response};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let client = service_fn(|_req: Request<String>| async {
///     Ok::<_, std::io::Error>(Response::new("in stock".to_string()))
/// });
/// let svc = WholeBodyLayer::new(Standard::builder("inventory").build()).layer(client);
/// let resp = svc.oneshot(Request::new(String::new())).await?;
/// assert_eq!(&resp.into_body()[..], b"in stock");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct WholeBodyLayer {
    stack: Standard,
    max_body: usize,
}

/// [`WholeBodyLayer`]'s size limit unless [`WholeBodyLayer::max_body`] sets
/// another: 16 MiB.
///
/// # Examples
///
/// ```
/// assert_eq!(fusebox::http::DEFAULT_MAX_BODY, 16 * 1024 * 1024);
/// ```
pub const DEFAULT_MAX_BODY: usize = 16 << 20;

impl WholeBodyLayer {
    /// The layer of `stack`, with bodies of up to [`DEFAULT_MAX_BODY`].
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = fusebox::http::WholeBodyLayer::new(fusebox::http::Standard::builder("x").build());
    /// assert_eq!(layer.body_limit(), 16 << 20);
    /// ```
    pub fn new(stack: Standard) -> Self {
        WholeBodyLayer {
            stack,
            max_body: DEFAULT_MAX_BODY,
        }
    }

    /// Bodies longer than `bytes` are an error (a failure for the breaker).
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = fusebox::http::WholeBodyLayer::new(fusebox::http::Standard::builder("x").build())
    ///     .max_body(64 * 1024);
    /// assert_eq!(layer.body_limit(), 64 * 1024);
    /// ```
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// The size limit in force.
    ///
    /// # Examples
    ///
    /// ```
    /// let layer = fusebox::http::WholeBodyLayer::new(fusebox::http::Standard::builder("x").build());
    /// assert_eq!(layer.body_limit(), fusebox::http::DEFAULT_MAX_BODY);
    /// ```
    pub fn body_limit(&self) -> usize {
        self.max_body
    }
}

impl<S> Layer<S> for WholeBodyLayer {
    type Service = WholeBodyService<S>;
    fn layer(&self, inner: S) -> WholeBodyService<S> {
        WholeBodyService {
            inner,
            stack: self.stack.clone(),
            max_body: self.max_body,
        }
    }
}

/// The service of a [`WholeBodyLayer`].
///
/// # Examples
///
/// ```
/// use tower::Layer;
/// let layer = fusebox::http::WholeBodyLayer::new(fusebox::http::Standard::builder("x").build());
/// let svc = layer.layer(tower::service_fn(|_: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new(String::new()))
/// }));
/// assert_eq!(svc.stack().name(), "x");
/// ```
#[derive(Debug, Clone)]
pub struct WholeBodyService<S> {
    inner: S,
    stack: Standard,
    max_body: usize,
}

impl<S> WholeBodyService<S> {
    /// The stack.
    ///
    /// # Examples
    ///
    /// ```
    /// use tower::Layer;
    /// let svc = fusebox::http::WholeBodyLayer::new(fusebox::http::Standard::builder("x").build()).layer(());
    /// assert_eq!(svc.stack().name(), "x");
    /// ```
    pub fn stack(&self) -> &Standard {
        &self.stack
    }
}

impl<S, B, RB> Service<Request<B>> for WholeBodyService<S>
where
    S: Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: Clone + Send + Sync + 'static,
    RB: http_body::Body + Send + 'static,
    RB::Data: Send,
    RB::Error: Into<BoxError>,
{
    type Response = Response<Bytes>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Bytes>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Each attempt drives its own clone of the client to readiness.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let max_body = self.max_body;
        through(
            self.stack.clone(),
            self.inner.clone(),
            request,
            move |response: Response<RB>| async move {
                let (head, body) = response.into_parts();
                let body = Limited::new(body, max_body)
                    .collect()
                    .await
                    .map_err(|e| match e.downcast::<LengthLimitError>() {
                        Ok(_) => BodyTooLarge { limit: max_body }.into(),
                        Err(e) => e,
                    })?
                    .to_bytes();
                Ok(Response::from_parts(head, body))
            },
        )
    }
}

/// `request` through `stack`, each attempt on its own clone of `client`
/// (driven to readiness first) and its response made the attempt's answer
/// by `read`, inside the attempt's deadlines.
fn through<S, B, RB, R, F, Fut>(
    stack: Standard,
    client: S,
    request: Request<B>,
    read: F,
) -> Pin<Box<dyn Future<Output = Result<Response<R>, BoxError>> + Send>>
where
    S: Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
    B: Clone + Send + Sync + 'static,
    RB: Send + 'static,
    R: Send + Sync + 'static,
    F: Fn(Response<RB>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Response<R>, BoxError>> + Send,
{
    let (parts, body) = request.into_parts();
    Box::pin(async move {
        let (method, uri) = (parts.method.clone(), parts.uri.clone());
        stack
            .run_to(&uri, &method, move || {
                let req = Request::from_parts(parts.clone(), body.clone());
                let mut client = client.clone();
                let read = read.clone();
                async move {
                    std::future::poll_fn(|cx| client.poll_ready(cx))
                        .await
                        .map_err(Into::<BoxError>::into)?;
                    let response = client.call(req).await.map_err(Into::<BoxError>::into)?;
                    read(response).await
                }
            })
            .await
            .map_err(StandardError::into_box_error)
    })
}

/// A response body longer than a [`WholeBodyLayer`]'s limit.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use fusebox::http::{BodyTooLarge, Bytes, HttpError, Standard, WholeBodyLayer};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// let client = service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new("x".repeat(100)))
/// });
/// let stack = Standard::builder("x").build();
/// let svc = WholeBodyLayer::new(stack).max_body(10).layer(client);
/// let err = svc.oneshot(http::Request::new(())).await.unwrap_err();
/// let failed = err.downcast_ref::<HttpError<http::Response<Bytes>>>().unwrap();
/// let too_large = failed.transport_error().unwrap().downcast_ref::<BodyTooLarge>();
/// assert_eq!(too_large.map(BodyTooLarge::limit), Some(10));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTooLarge {
    limit: usize,
}

impl BodyTooLarge {
    /// The limit the body went past, in bytes.
    ///
    /// # Examples
    ///
    /// See [`BodyTooLarge`].
    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl std::fmt::Display for BodyTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "response body longer than the limit of {} bytes",
            self.limit
        )
    }
}

impl std::error::Error for BodyTooLarge {}

/// A compile-time check: the stack's error boxes into a [`BoxError`].
fn _assert_error<RB: Send + Sync + 'static>(e: HttpError<Response<RB>>) -> BoxError {
    Box::new(e)
}

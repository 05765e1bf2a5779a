//! The standard stack as a tower layer (feature `tower`).

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
                .map_err(StandardError::into_box_error)
        })
    }
}

/// A compile-time check: the stack's error boxes into a [`BoxError`].
fn _assert_error<RB: Send + Sync + 'static>(e: HttpError<Response<RB>>) -> BoxError {
    Box::new(e)
}

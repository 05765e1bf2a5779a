//! The routes: page, JSON, stream, controls.

use super::controls::Refusal;
use super::model::STATES;
use super::Inner;
use crate::sync::lock;
use axum::extract::{ConnectInfo, Path, RawQuery, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio_stream::wrappers::WatchStream;
use tokio_stream::StreamExt;

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// What the page may load: its own script and stylesheet, from its own
/// origin (no inline script or style: an injected one would not run), its
/// own API; nothing from elsewhere (the page is self-contained), and it may
/// not be framed (clickjacking of the controls).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// The dashboard's routes, for an app of any state `S`: they carry their
/// own state (`with_state` here), so they nest into a stateful app before
/// or after its `with_state`. Nested with `nest_service` they answer at the
/// mount path with and without a trailing slash (`/fusebox` and
/// `/fusebox/`); `nest` flattens them into the app's routes, where axum
/// matches the page at `/fusebox` only.
pub(super) fn router<S>(inner: Arc<Inner>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let mut router = Router::new()
        .route("/", get(page))
        .route("/api/state", get(state))
        .route("/api/breakers/{name}", get(breaker))
        .route("/api/stream", get(stream))
        .route("/api/fleet", get(fleet));
    if inner.controls.enabled() {
        router = router.route("/api/breakers/{name}/{action}", post(control));
    }
    router.with_state(inner)
}

/// `response` with `headers` set.
fn with(mut response: Response, headers: &[(header::HeaderName, &'static str)]) -> Response {
    for (name, value) in headers {
        response
            .headers_mut()
            .insert(name.clone(), HeaderValue::from_static(value));
    }
    response
}

fn json(status: StatusCode, value: serde_json::Value) -> Response {
    with(
        (status, value.to_string()).into_response(),
        &[
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
    )
}

/// The page, or with `?asset=page.js` / `?asset=page.css` its script and
/// stylesheet: a query-only URL resolves against the page's own path, so
/// the page finds them wherever the router is nested, with or without a
/// trailing slash, and nothing of the request is written into the page.
async fn page(State(inner): State<Arc<Inner>>, RawQuery(query): RawQuery) -> Response {
    let (body, content_type) = match query.as_deref() {
        Some("asset=page.js") => (SCRIPT, "text/javascript; charset=utf-8"),
        Some("asset=page.css") => (STYLE, "text/css; charset=utf-8"),
        Some(q) if q.starts_with("asset=") => {
            return json(
                StatusCode::NOT_FOUND,
                serde_json::json!({ "error": "no such asset: page.js or page.css" }),
            )
        }
        _ => {
            inner.start();
            (PAGE, "text/html; charset=utf-8")
        }
    };
    with(
        body.into_response(),
        &[
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
    )
}

async fn state(State(inner): State<Arc<Inner>>) -> Response {
    inner.start();
    let frame = inner.frame();
    let board = lock(&inner.board);
    json(
        StatusCode::OK,
        serde_json::json!({
            "interval_ms": inner.interval.as_millis() as u64,
            "controls": inner.controls.enabled(),
            "history_len": board.capacity(),
            "states": STATES,
            "frame": &*frame,
            "history": board.histories(),
        }),
    )
}

async fn breaker(State(inner): State<Arc<Inner>>, Path(name): Path<String>) -> Response {
    inner.start();
    let frame = inner.frame();
    let Some(view) = frame.breakers.iter().find(|b| b.name == name) else {
        return json(
            StatusCode::NOT_FOUND,
            serde_json::json!({ "error": format!("no breaker named {name:?}") }),
        );
    };
    let board = lock(&inner.board);
    json(
        StatusCode::OK,
        serde_json::json!({ "breaker": view, "history": board.history(&name) }),
    )
}

async fn fleet(State(inner): State<Arc<Inner>>) -> Response {
    match inner.fleet() {
        Some(view) => json(StatusCode::OK, serde_json::json!(view)),
        None => json(
            StatusCode::NOT_FOUND,
            serde_json::json!({ "error": "no fleet: see DashboardBuilder::fleet (feature `fleet`)" }),
        ),
    }
}

/// Counts a stream while it lives.
struct Client(Arc<Inner>);

impl Drop for Client {
    fn drop(&mut self) {
        // Relaxed: a count read-modify-written atomically; no other memory
        // is published through it.
        self.0.clients.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn stream(State(inner): State<Arc<Inner>>) -> Response {
    inner.start();
    // Relaxed: see `Client::drop`; the read-modify-write alone keeps the
    // count exact, so at most `max_clients` streams pass.
    if inner.clients.fetch_add(1, Ordering::Relaxed) >= inner.max_clients {
        inner.clients.fetch_sub(1, Ordering::Relaxed);
        return json(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({ "error": "too many dashboard streams" }),
        );
    }
    if lock(&inner.last_frame).is_none() {
        inner.sample();
    }
    let client = Client(inner.clone());
    // A watch stream yields the newest frame only: a client that falls
    // behind skips frames instead of queueing them.
    let frames = WatchStream::new(inner.latest.subscribe()).filter_map(move |json| {
        let _alive = &client;
        json.map(|j| Ok::<_, Infallible>(Event::default().event("frame").data(&*j)))
    });
    Sse::new(frames)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[derive(Clone, Copy)]
enum Action {
    ForceOpen,
    Disable,
    Reset,
}

impl Action {
    fn parse(s: &str) -> Option<Action> {
        match s {
            "force_open" => Some(Action::ForceOpen),
            "disable" => Some(Action::Disable),
            "reset" => Some(Action::Reset),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Action::ForceOpen => "force_open",
            Action::Disable => "disable",
            Action::Reset => "reset",
        }
    }
}

async fn control(
    State(inner): State<Arc<Inner>>,
    Path((name, action)): Path<(String, String)>,
    request: Request,
) -> Response {
    let caller = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "unknown".to_owned(), |c| c.0.to_string());
    let Some(action) = Action::parse(&action) else {
        return json(
            StatusCode::NOT_FOUND,
            serde_json::json!({ "error": format!("no action {action:?}: force_open, disable or reset") }),
        );
    };
    let refuse = |status: StatusCode, reason: &str| {
        tracing::warn!(
            target: "fusebox::dashboard",
            caller = %caller,
            breaker = %name,
            action = action.as_str(),
            reason,
            "dashboard control refused"
        );
        let r = json(status, serde_json::json!({ "error": reason }));
        if status == StatusCode::UNAUTHORIZED {
            return with(r, &[(header::WWW_AUTHENTICATE, "Bearer")]);
        }
        r
    };
    if let Err(refusal) = inner.controls.authorize(
        request.headers(),
        request.uri().authority().map(|a| a.as_str()),
    ) {
        let status = match refusal {
            Refusal::CrossOrigin => StatusCode::FORBIDDEN,
            Refusal::Disabled => StatusCode::NOT_FOUND,
            Refusal::NoToken | Refusal::WrongToken => StatusCode::UNAUTHORIZED,
        };
        return refuse(status, refusal.as_str());
    }
    let done = match action {
        Action::ForceOpen => inner.fusebox.force_open(&name),
        Action::Disable => inner.fusebox.disable(&name),
        Action::Reset => inner.fusebox.reset(&name),
    };
    if let Err(e) = done {
        return refuse(StatusCode::NOT_FOUND, &e.to_string());
    }
    tracing::info!(
        target: "fusebox::dashboard",
        caller = %caller,
        breaker = %name,
        action = action.as_str(),
        "dashboard control applied"
    );
    // Show the change at once rather than at the next tick.
    let frame = inner.sample();
    let state = frame
        .breakers
        .iter()
        .find(|b| b.name == name)
        .map_or("unknown", |b| b.state);
    json(
        StatusCode::OK,
        serde_json::json!({ "name": name, "action": action.as_str(), "state": state }),
    )
}

//! The dashboard nested into an app that has a state of its own, at a path
//! with and without a trailing slash.
#![cfg(feature = "dashboard")]

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use fusebox::dashboard::Dashboard;
use fusebox::registry::Fusebox;
use tower::ServiceExt;

#[derive(Clone)]
struct App {
    greeting: &'static str,
}

async fn hello(State(app): State<App>) -> &'static str {
    app.greeting
}

fn dashboard() -> Dashboard {
    let fusebox = Fusebox::new();
    fusebox.breaker("payments");
    Dashboard::builder(fusebox).manual().build().unwrap()
}

/// Status and body of `GET path`.
async fn get_text(app: &Router, path: &str) -> (StatusCode, String) {
    let request = Request::get(path).body(Body::empty()).unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

async fn assert_page(app: &Router, path: &str) {
    let (status, body) = get_text(app, path).await;
    assert_eq!(status, StatusCode::OK, "{path}");
    assert!(body.contains("<html"), "{path}: not the page: {body:.80}");
}

async fn assert_api(app: &Router, base: &str) {
    let (status, body) = get_text(app, &format!("{base}/api/state")).await;
    assert_eq!(status, StatusCode::OK, "{base}/api/state");
    assert!(body.contains("\"payments\""), "{body:.200}");
    // The page's script, as the page at `{base}` asks for it.
    let page = if base.is_empty() { "/" } else { base };
    let (status, body) = get_text(app, &format!("{page}?asset=page.js")).await;
    assert_eq!(status, StatusCode::OK, "{page}?asset=page.js");
    assert!(body.contains("api/state"));
}

/// `Router<App>::nest` takes the dashboard's routes before `with_state`
/// (the router is generic over the app's state).
#[tokio::test]
async fn nests_into_a_stateful_app_before_with_state() {
    let app: Router = Router::new()
        .route("/", get(hello))
        .nest("/fusebox", dashboard().router())
        .with_state(App { greeting: "hello" });
    assert_eq!(get_text(&app, "/").await, (StatusCode::OK, "hello".into()));
    assert_page(&app, "/fusebox").await;
    assert_api(&app, "/fusebox").await;
}

/// `nest_service` serves the page at the mount path with and without a
/// trailing slash, before or after the app's `with_state`.
#[tokio::test]
async fn nest_service_serves_the_path_with_and_without_a_slash() {
    let before: Router = Router::new()
        .route("/", get(hello))
        .nest_service("/fusebox", dashboard().router())
        .with_state(App { greeting: "hello" });
    let after: Router = Router::new()
        .route("/", get(hello))
        .with_state(App { greeting: "hello" })
        .nest_service("/fusebox", dashboard().router());
    for app in [before, after] {
        assert_eq!(get_text(&app, "/").await, (StatusCode::OK, "hello".into()));
        assert_page(&app, "/fusebox").await;
        assert_page(&app, "/fusebox/").await;
        assert_api(&app, "/fusebox").await;
        let (status, body) = get_text(&app, "/fusebox/?asset=page.css").await;
        assert_eq!(status, StatusCode::OK);
        assert!(!body.contains("<html"));
        let (status, _) = get_text(&app, "/fusebox/nothing-here").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}

/// Served on its own, the page is at `/`.
#[tokio::test]
async fn serves_on_its_own() {
    let app: Router = dashboard().router();
    assert_page(&app, "/").await;
    assert_api(&app, "").await;
}

//! The live dashboard's routes, driven in-process (no socket): JSON views,
//! rates on a `ManualClock`, bounded history, the stream, and the controls'
//! security (only a right token from the same origin acts).
#![cfg(feature = "dashboard")]

mod dashboard_routes;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use axum::Router;
use dashboard_routes::{get, send};
use fusebox::dashboard::{Controls, Dashboard};
use fusebox::metrics::Metrics;
use fusebox::registry::{BreakerEntry, Fusebox, FuseboxConfig, Tags};
use fusebox::{BreakerConfig, CircuitBreaker, ManualClock, State};
use proptest::prelude::*;
use serde_json::Value;
use std::net::SocketAddr;

use std::time::Duration;
use tokio_stream::StreamExt;
use tower::ServiceExt;

const TOKEN: &str = "0123456789abcdef-secret";
const HOST: &str = "ops.example:8080";

struct Rig {
    fusebox: Fusebox,
    clock: ManualClock,
    dashboard: Dashboard,
    router: Router,
}

fn rig(controls: Controls) -> Rig {
    log_per_thread();
    let clock = ManualClock::new();
    let mut config = FuseboxConfig::default();
    config.breakers.insert(
        "payments".into(),
        BreakerEntry {
            settings: BreakerConfig {
                failure_rate: Some(0.4),
                count_window: Some(10),
                min_calls: Some(4),
                ..Default::default()
            },
            tags: Tags::from([("service".to_owned(), "payments".to_owned())]),
        },
    );
    let metrics = Metrics::new(&mut prometheus_client::registry::Registry::default());
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .observer(metrics.clone())
        .build()
        .unwrap();
    fusebox.breaker("payments");
    fusebox.breaker("db");
    let dashboard = Dashboard::builder(fusebox.clone())
        .metrics(metrics)
        .controls(controls)
        .clock(clock.clone())
        .history(3)
        .manual()
        .build()
        .unwrap();
    let router = dashboard.router();
    Rig {
        fusebox,
        clock,
        dashboard,
        router,
    }
}

fn post(path: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut r = Request::post(path).header("host", HOST);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let mut r = r.body(Body::empty()).unwrap();
    let caller: SocketAddr = "192.0.2.7:51234".parse().unwrap();
    r.extensions_mut().insert(ConnectInfo(caller));
    r
}

/// POSTs with the bearer token and no browser headers; the status.
async fn post_with_token(router: &Router, path: &str) -> StatusCode {
    let auth = format!("Bearer {TOKEN}");
    send(router, post(path, &[("authorization", &auth)]))
        .await
        .0
}

fn breaker<'a>(state: &'a Value, name: &str) -> &'a Value {
    state["frame"]["breakers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("no breaker {name} in {state}"))
}

#[tokio::test]
async fn state_shows_rates_thresholds_tags_and_time_in_state() {
    let r = rig(Controls::off());
    r.dashboard.sample();
    let payments = r.fusebox.breaker("payments");
    for i in 0..10 {
        let _ = payments.call(|| if i % 2 == 0 { Ok(()) } else { Err("boom") });
    }
    r.clock.advance(Duration::from_secs(2));
    r.dashboard.sample();

    let (status, state) = get(&r.router, "/api/state").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["controls"], false);
    let p = breaker(&state, "payments");
    // 4 calls, 2 failed: the breaker tripped at 50% >= 40% after the 4th call;
    // the 6 calls after were rejected. Over 2 s: 2 calls/s, 1 failure/s, 3 rejections/s.
    assert_eq!(p["state"], "open");
    assert_eq!(p["call_rate"], 2.0);
    assert_eq!(p["failure_call_rate"], 1.0);
    assert_eq!(p["rejected_rate"], 3.0);
    assert_eq!(p["rejected"], 6);
    assert_eq!(p["failure_rate"], 0.5);
    assert_eq!(p["failure_threshold"], 0.4);
    assert_eq!(p["since_ms"], 2000);
    assert_eq!(p["tags"]["service"], "payments");
    // A consecutive-failures breaker has no failure-rate threshold.
    assert_eq!(breaker(&state, "db")["failure_threshold"], Value::Null);
    // History points: [t_ms, state index, calls/s, failure rate, rejections/s, slow-call rate].
    let h = &state["history"]["payments"];
    assert_eq!(h[1], serde_json::json!([2000, 1, 2.0, 0.5, 3.0, 0.0]));
    assert_eq!(state["states"][1], "open");
}

#[tokio::test]
async fn history_is_a_ring_of_fixed_size() {
    let r = rig(Controls::off());
    for _ in 0..10 {
        r.clock.advance(Duration::from_secs(1));
        r.dashboard.sample();
    }
    let (status, one) = get(&r.router, "/api/breakers/payments").await;
    assert_eq!(status, StatusCode::OK);
    let times: Vec<u64> = one["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_u64().unwrap())
        .collect();
    assert_eq!(times, [8000, 9000, 10_000]);
    assert_eq!(one["breaker"]["name"], "payments");
}

#[tokio::test]
async fn unknown_breaker_is_404() {
    let r = rig(Controls::token(TOKEN));
    let (status, body) = get(&r.router, "/api/breakers/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "no breaker named \"nope\"");
    let status = post_with_token(&r.router, "/api/breakers/nope/force_open").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let status = post_with_token(&r.router, "/api/breakers/payments/explode").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(r.fusebox.breaker("payments").state(), State::Closed);
}

/// GET `path`: status, content type, CSP header, body.
async fn fetch(router: &Router, path: &str) -> (StatusCode, String, String, String) {
    let response = router
        .clone()
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (content_type, csp) = (header("content-type"), header("content-security-policy"));
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        content_type,
        csp,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

#[tokio::test]
async fn page_is_self_contained_and_locked_down() {
    let r = rig(Controls::off());
    let (status, content_type, csp, html) = fetch(&r.router, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    // No inline script or style may run: only the page's own files.
    assert_eq!(
        csp,
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
         img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    assert!(!csp.contains("unsafe"), "{csp}");
    // Nothing inline for the CSP to refuse: one script and one stylesheet,
    // by query-only URLs (they resolve against the page's own path).
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert!(html.contains(r#"<script src="?asset=page.js" defer></script>"#));
    assert!(html.contains(r#"<link rel="stylesheet" href="?asset=page.css">"#));
    for inline in ["<style", "style=", " onclick=", " onload=", "javascript:"] {
        assert!(!html.contains(inline), "page has {inline}");
    }
    // No asset from anywhere else: the page works offline.
    for external in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(external), "page loads {external}");
    }
    let (status, content_type, csp, script) = fetch(&r.router, "/?asset=page.js").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "text/javascript; charset=utf-8");
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(script.contains("api/stream"));
    let (status, content_type, _, style) = fetch(&r.router, "/?asset=page.css").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "text/css; charset=utf-8");
    assert!(style.contains(".tile"), "{style}");
    for external in ["url(http", "@import"] {
        assert!(!style.contains(external) && !script.contains(external));
    }
    let (status, _, _, _) = fetch(&r.router, "/?asset=../secret").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn stream_sends_the_latest_frame_and_caps_clients() {
    let clock = ManualClock::new();
    let fusebox = Fusebox::builder().clock(clock.clone()).build().unwrap();
    fusebox.breaker("db");
    let dashboard = Dashboard::builder(fusebox.clone())
        .clock(clock.clone())
        .max_clients(1)
        .manual()
        .build()
        .unwrap();
    let router = dashboard.router();
    let response = router
        .clone()
        .oneshot(Request::get("/api/stream").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body().into_data_stream();
    let first = String::from_utf8(body.next().await.unwrap().unwrap().to_vec()).unwrap();
    assert!(first.starts_with("event: frame\ndata: {"), "{first}");
    assert!(first.contains("\"state\":\"closed\""), "{first}");

    // A second client while the first is connected: refused.
    let (status, _) = get(&router, "/api/stream").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);

    // Several samples while the client does not read: it gets the newest
    // only (nothing queued), here the forced-open state at t = 3 s.
    fusebox.force_open("db").unwrap();
    for _ in 0..3 {
        clock.advance(Duration::from_secs(1));
        dashboard.sample();
    }
    let next = String::from_utf8(body.next().await.unwrap().unwrap().to_vec()).unwrap();
    assert!(next.contains("\"t_ms\":3000"), "{next}");
    assert!(next.contains("\"state\":\"forced_open\""), "{next}");

    // The first client gone, a new one is served.
    drop(body);
    let response = router
        .clone()
        .oneshot(Request::get("/api/stream").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[test]
fn settings_are_checked() {
    let build = |b: fusebox::dashboard::DashboardBuilder| b.build().unwrap_err().field();
    let b = || Dashboard::builder(Fusebox::new());
    assert_eq!(build(b().interval(Duration::from_millis(10))), "interval");
    assert_eq!(build(b().history(0)), "history");
    assert_eq!(build(b().history(10_001)), "history");
    assert_eq!(build(b().max_clients(0)), "max_clients");
    assert_eq!(build(b().controls(Controls::token(""))), "controls.token");
    assert!(!format!("{:?}", Controls::token(TOKEN)).contains(TOKEN));
}

thread_local! {
    /// What the process-wide subscriber wrote on this thread.
    static LOG: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Writes into this thread's [`LOG`].
struct ThreadLog;

impl std::io::Write for ThreadLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.with(|log| log.borrow_mut().extend_from_slice(buf));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One subscriber for the whole test process, set before any test reaches
/// the dashboard (from [`rig`]), each thread's lines kept apart. A scoped
/// subscriber would not do: tracing caches a callsite's interest when it is
/// first hit, and another test's thread hitting it first, with no subscriber
/// of its own, would cache "never" for the process.
fn log_per_thread() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(|| ThreadLog)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

#[tokio::test]
async fn controls_act_only_for_the_right_token_from_the_same_origin() {
    let r = rig(Controls::token(TOKEN));
    let path = "/api/breakers/payments/force_open";
    let right = format!("Bearer {TOKEN}");
    let wrong = format!("Bearer {}x", &TOKEN[..TOKEN.len() - 1]);
    let same = format!("http://{HOST}");
    type Headers<'a> = Vec<(&'a str, &'a str)>;
    let refused: [(&str, Headers, StatusCode); 5] = [
        ("no token", vec![], StatusCode::UNAUTHORIZED),
        (
            "wrong token",
            vec![("authorization", &wrong), ("origin", &same)],
            StatusCode::UNAUTHORIZED,
        ),
        (
            "right token, another origin",
            vec![
                ("authorization", &right),
                ("origin", "https://evil.example"),
            ],
            StatusCode::FORBIDDEN,
        ),
        (
            "right token, cross-site fetch",
            vec![("authorization", &right), ("sec-fetch-site", "cross-site")],
            StatusCode::FORBIDDEN,
        ),
        (
            "right token, null origin",
            vec![("authorization", &right), ("origin", "null")],
            StatusCode::FORBIDDEN,
        ),
    ];
    for (case, headers, expected) in refused {
        let (status, body) = send(&r.router, post(path, &headers)).await;
        assert_eq!(status, expected, "{case}: {body}");
        assert_eq!(
            r.fusebox.breaker("payments").state(),
            State::Closed,
            "{case} acted"
        );
    }

    let (status, body) = send(
        &r.router,
        post(
            path,
            &[
                ("authorization", &right),
                ("origin", &same),
                ("sec-fetch-site", "same-origin"),
            ],
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["state"], "forced_open");
    assert_eq!(r.fusebox.breaker("payments").state(), State::ForcedOpen);

    // A non-browser client (no Origin, no Sec-Fetch-Site) with the token.
    for (action, state) in [("disable", State::Disabled), ("reset", State::Closed)] {
        let path = format!("/api/breakers/payments/{action}");
        assert_eq!(post_with_token(&r.router, &path).await, StatusCode::OK);
        assert_eq!(r.fusebox.breaker("payments").state(), state);
    }

    let log = String::from_utf8(LOG.with(|log| log.take())).unwrap();
    let applied: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("dashboard control applied"))
        .collect();
    assert_eq!(applied.len(), 3, "{log}");
    assert!(
        applied[0].contains("caller=192.0.2.7:51234")
            && applied[0].contains("action=\"force_open\""),
        "{}",
        applied[0]
    );
    assert_eq!(log.matches("dashboard control refused").count(), 5, "{log}");
    assert!(!log.contains(TOKEN), "the token is never logged");
}

#[tokio::test]
async fn controls_off_means_no_control_route() {
    let r = rig(Controls::off());
    let status = post_with_token(&r.router, "/api/breakers/payments/force_open").await;
    assert!(status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.fusebox.breaker("payments").state(), State::Closed);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Fuzzing the control endpoint's headers: whatever the token, origin,
    /// host and fetch-site, the breaker changes only for the exact token and
    /// a same-origin request.
    #[test]
    fn only_exact_token_and_same_origin_act(
        token in prop_oneof![Just(TOKEN.to_owned()), "[ -~]{0,40}", Just(format!("{TOKEN} "))],
        origin in prop_oneof![Just(None), Just(Some(format!("http://{HOST}"))), "[ -~]{0,30}".prop_map(Some)],
        site in prop_oneof![Just(None), Just(Some("same-origin".to_owned())), "[a-z-]{0,12}".prop_map(Some)],
        scheme in prop_oneof![Just("Bearer "), Just("bearer "), Just(""), Just("Basic ")],
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let r = rig(Controls::token(TOKEN));
        let auth = format!("{scheme}{token}");
        let mut headers = vec![("authorization", auth.as_str())];
        if let Some(o) = &origin { headers.push(("origin", o)); }
        if let Some(s) = &site { headers.push(("sec-fetch-site", s)); }
        let request = Request::post("/api/breakers/payments/force_open").header("host", HOST);
        let request = headers.iter().fold(request, |r, (k, v)| match axum::http::HeaderValue::from_str(v) {
            Ok(v) => r.header(*k, v),
            Err(_) => r,
        });
        let sent_origin = origin.as_deref().filter(|o| axum::http::HeaderValue::from_str(o).is_ok());
        let sent_site = site.as_deref().filter(|s| axum::http::HeaderValue::from_str(s).is_ok());
        let status = rt.block_on(async {
            r.router.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap().status()
        });
        let should_act = scheme == "Bearer "
            && token == TOKEN
            && sent_origin.is_none_or(|o| o.eq_ignore_ascii_case(&format!("http://{HOST}")) || o.eq_ignore_ascii_case(&format!("https://{HOST}")))
            && sent_site.is_none_or(|s| s == "same-origin");
        let acted = r.fusebox.breaker("payments").state() == State::ForcedOpen;
        prop_assert_eq!(acted, should_act, "status {}", status);
        prop_assert_eq!(status == StatusCode::OK, should_act);
    }
}

#[test]
fn thresholds_are_exported_for_the_rules_a_breaker_has_and_follow_reconfigure() {
    let mut config = FuseboxConfig::default();
    let rules = [
        (
            "rate",
            BreakerConfig {
                failure_rate: Some(0.3),
                ..Default::default()
            },
        ),
        (
            "slow",
            BreakerConfig {
                slow_call_duration: Some(Duration::from_millis(100)),
                slow_call_rate: Some(0.8),
                ..Default::default()
            },
        ),
        (
            "consecutive",
            BreakerConfig {
                consecutive_failures: Some(3),
                ..Default::default()
            },
        ),
    ];
    for (name, settings) in rules {
        config.breakers.insert(name.into(), settings.into());
    }
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = Metrics::new(&mut registry);
    let fusebox = Fusebox::builder()
        .config(config)
        .observer(metrics)
        .build()
        .unwrap();
    for name in ["rate", "slow", "consecutive"] {
        fusebox.breaker(name);
    }
    let thresholds = || {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text.lines()
            .filter(|l| l.contains("_threshold{"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        thresholds(),
        [
            r#"fusebox_failure_rate_threshold{name="rate"} 0.3"#,
            r#"fusebox_slow_call_rate_threshold{name="slow"} 0.8"#,
        ]
    );
    fusebox
        .breaker("consecutive")
        .reconfigure(CircuitBreaker::builder().failure_rate(0.6))
        .unwrap();
    assert_eq!(
        thresholds(),
        [
            r#"fusebox_failure_rate_threshold{name="consecutive"} 0.6"#,
            r#"fusebox_failure_rate_threshold{name="rate"} 0.3"#,
            r#"fusebox_slow_call_rate_threshold{name="slow"} 0.8"#,
        ]
    );
}

/// HTTP/2 carries the host in the URI's authority, not in a `Host` header.
#[tokio::test]
async fn same_origin_reads_the_authority_without_a_host_header() {
    let r = rig(Controls::token(TOKEN));
    let request = |origin: &str| {
        Request::post(format!("http://{HOST}/api/breakers/payments/force_open"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("origin", origin)
            .header("sec-fetch-site", "same-origin")
            .body(Body::empty())
            .unwrap()
    };
    let (status, _) = send(&r.router, request("https://elsewhere.example")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(r.fusebox.breaker("payments").state(), State::Closed);
    let (status, _) = send(&r.router, request(&format!("https://{HOST}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(r.fusebox.breaker("payments").state(), State::ForcedOpen);
}

/// Names may hold `/` (the lab names breakers `SCENARIO/STRATEGY`): the page
/// percent-encodes them, the routes decode them.
#[tokio::test]
async fn names_with_slashes_are_reachable_percent_encoded() {
    let r = rig(Controls::token(TOKEN));
    r.fusebox.breaker("seed/fusebox");
    let (status, one) = get(&r.router, "/api/breakers/seed%2Ffusebox").await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["breaker"]["name"], "seed/fusebox");
    let status = post_with_token(&r.router, "/api/breakers/seed%2Ffusebox/force_open").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(r.fusebox.breaker("seed/fusebox").state(), State::ForcedOpen);
}

/// Any policy of the registry but a breaker appears in `frame.policies`,
/// read through `Inspect`: kind, mode, figures, and counters' rates.
#[cfg(feature = "ratelimit")]
#[tokio::test]
async fn policies_the_dashboard_has_no_code_for_appear_in_state_and_stream() {
    use fusebox::ratelimit::RateLimitConfig;
    use fusebox::registry::{BulkheadConfig, DependencyConfig};

    let clock = ManualClock::new();
    let mut config = FuseboxConfig::default();
    config.dependencies.insert(
        "partner".into(),
        DependencyConfig {
            rate_limit: Some(RateLimitConfig::per_second(10).burst(2)),
            bulkhead: Some(BulkheadConfig {
                max_concurrent: Some(3),
                ..Default::default()
            }),
            tags: Tags::from([("service".to_owned(), "partner".to_owned())]),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::builder()
        .config(config)
        .clock(clock.clone())
        .build()
        .unwrap();
    let dashboard = Dashboard::builder(fusebox.clone())
        .clock(clock.clone())
        .manual()
        .build()
        .unwrap();
    let router = dashboard.router();
    dashboard.sample();
    let partner = fusebox.rate_limiter("partner").unwrap();
    for _ in 0..10 {
        let _ = partner.try_acquire();
    }
    clock.advance(Duration::from_secs(2));
    dashboard.sample();

    let (status, state) = get(&router, "/api/state").await;
    assert_eq!(status, StatusCode::OK);
    let policies = state["frame"]["policies"].as_array().unwrap();
    let kinds: Vec<_> = policies
        .iter()
        .map(|p| (p["kind"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [("bulkhead", "partner"), ("rate_limiter", "partner")],
        "every inspected policy, by kind then name"
    );
    let limiter = &policies[1];
    assert_eq!(limiter["mode"], "enforce");
    assert_eq!(limiter["tags"]["service"], "partner");
    let figure = |name: &str| {
        limiter["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no figure {name} in {limiter}"))
            .clone()
    };
    // 2 admitted (the burst), 8 refused, over 2 s.
    assert_eq!(figure("admitted")["value"], 2);
    assert_eq!(figure("admitted")["kind"], "counter");
    assert_eq!(figure("refused")["value"], 8);
    assert_eq!(figure("refused")["rate"], 4.0);
    assert_eq!(figure("admitted")["rate"], 1.0);
    let bulkhead_limit = policies[0]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "limit")
        .unwrap()
        .clone();
    assert_eq!(
        (
            bulkhead_limit["value"].clone(),
            bulkhead_limit["rate"].clone()
        ),
        (Value::from(3), Value::Null),
        "a gauge has no rate"
    );
    // The bulkhead keeps its own view as well.
    assert_eq!(state["frame"]["bulkheads"][0]["limit"], 3);

    // A reload to shadow shows in the next frame of the stream.
    let mut shadow = FuseboxConfig::default();
    shadow.dependencies.insert(
        "partner".into(),
        DependencyConfig {
            rate_limit: Some(
                RateLimitConfig::per_second(10)
                    .burst(2)
                    .mode(fusebox::Mode::Shadow),
            ),
            ..Default::default()
        },
    );
    fusebox.reload(shadow).unwrap();
    dashboard.sample();
    let response = router
        .clone()
        .oneshot(Request::get("/api/stream").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let mut body = response.into_body().into_data_stream();
    let frame = String::from_utf8(body.next().await.unwrap().unwrap().to_vec()).unwrap();
    let json: Value = serde_json::from_str(
        frame
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or_else(|| panic!("{frame}")),
    )
    .unwrap();
    let limiter = json["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "rate_limiter")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(limiter["mode"], "shadow");
}

/// The page draws a generic tile for each policy without a view of its own.
#[tokio::test]
async fn the_page_has_a_generic_policies_section() {
    let (status, _, _, script) = fetch(&rig(Controls::off()).router, "/?asset=page.js").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        script.contains("frame.policies"),
        "the script reads the generic list"
    );
    assert!(
        !script.contains("rate_limiter"),
        "and names no policy it has no view for"
    );
    let (_, _, _, page) = fetch(&rig(Controls::off()).router, "/").await;
    assert!(page.contains("id=\"policies\""));
}

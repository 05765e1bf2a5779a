//! Seed 002's API client, in Rust: a weather client built on reqwest (plain
//! HTTP, no TLS), guarded by fusebox, against a stand-in weather API that the
//! example starts itself on 127.0.0.1 (axum).
//!
//! What counts against the dependency: 5xx answers, transport errors and
//! timeouts. What does not: 4xx answers (an unknown city is the caller's
//! mistake, not a sign that the API is sick), so no number of 404s opens the
//! breaker.
//!
//! The stand-in API goes through four phases: healthy, failing (503),
//! slow (answers after 1 s; the client gives up after 150 ms), healthy again.
//! Every call is printed with what the client saw and the breaker's state.
//!
//! Run: `cargo run -p fusebox --example api_client --features tokio`

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use fusebox::{CircuitBreaker, Outcome};
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- the stand-in API

const HEALTHY: u8 = 0;
const FAILING: u8 = 1;
const SLOW: u8 = 2;

async fn weather(
    State(mode): State<Arc<AtomicU8>>,
    Path(city): Path<String>,
) -> (StatusCode, String) {
    if city == "atlantis" {
        return (StatusCode::NOT_FOUND, format!("no such city: {city}"));
    }
    match mode.load(Ordering::Relaxed) {
        FAILING => (
            StatusCode::SERVICE_UNAVAILABLE,
            "database unavailable".into(),
        ),
        SLOW => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            (StatusCode::OK, format!("{city}: 21°C (late)"))
        }
        _ => (StatusCode::OK, format!("{city}: 21°C")),
    }
}

/// Starts the stand-in API on an ephemeral port; returns its base URL.
async fn start_api(mode: Arc<AtomicU8>) -> std::io::Result<String> {
    let app = Router::new()
        .route("/v1/current/{city}", get(weather))
        .with_state(mode);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}"))
}

// ---------------------------------------------------------------- the client

/// What a weather lookup can fail with.
#[derive(Debug)]
enum ApiError {
    /// 4xx: our request was wrong. Not the API's fault.
    Client(StatusCode, String),
    /// 5xx: the API is in trouble.
    Server(StatusCode),
    /// Connection refused, reset, ...
    Transport(reqwest::Error),
    /// No answer in time.
    TimedOut(fusebox::Elapsed),
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Client(s, body) => write!(f, "{s}: {body}"),
            ApiError::Server(s) => write!(f, "server error {s}"),
            ApiError::Transport(e) => write!(f, "transport: {e}"),
            ApiError::TimedOut(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ApiError {}

/// The classification seed 002 asks for: 5xx, transport errors and timeouts
/// are failures, 4xx are not.
fn classify(result: &Result<String, ApiError>) -> Outcome {
    match result {
        Ok(_) => Outcome::Success,
        Err(ApiError::Client(..)) => Outcome::Ignore,
        Err(ApiError::Server(_) | ApiError::Transport(_) | ApiError::TimedOut(_)) => {
            Outcome::Failure
        }
    }
}

struct WeatherClient {
    http: reqwest::Client,
    base: String,
    breaker: CircuitBreaker,
    timeout: Duration,
}

impl WeatherClient {
    /// One unguarded request.
    async fn fetch(http: reqwest::Client, url: String) -> Result<String, ApiError> {
        let res = http.get(url).send().await.map_err(ApiError::Transport)?;
        let status = res.status();
        let body = res.text().await.map_err(ApiError::Transport)?;
        if status.is_client_error() {
            Err(ApiError::Client(status, body))
        } else if status.is_server_error() {
            Err(ApiError::Server(status))
        } else {
            Ok(body)
        }
    }

    /// The guarded lookup.
    async fn current(&self, city: &str) -> Result<String, String> {
        let url = format!("{}/v1/current/{city}", self.base);
        let http = self.http.clone();
        let timeout = self.timeout;
        let r = self
            .breaker
            .call_async_with(classify, || async move {
                match fusebox::timeout(timeout, Self::fetch(http, url)).await {
                    Ok(r) => r,
                    Err(elapsed) => Err(ApiError::TimedOut(elapsed)),
                }
            })
            .await;
        r.map_err(|e| e.to_string())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = Arc::new(AtomicU8::new(HEALTHY));
    let base = start_api(mode.clone()).await?;
    println!("stand-in weather API on {base}\n");

    let client = WeatherClient {
        http: reqwest::Client::builder().build()?,
        base,
        breaker: CircuitBreaker::builder()
            .name("weather-api")
            .consecutive_failures(3)
            .open_for(Duration::from_millis(400))
            .on_transition(|t| println!("      [breaker {} -> {}: {:?}]", t.from, t.to, t.reason))
            .build()?,
        timeout: Duration::from_millis(150),
    };

    let start = Instant::now();
    let lookup = |city: &'static str| {
        let client = &client;
        async move {
            let t = Instant::now();
            let r = client.current(city).await;
            let shown = match &r {
                Ok(body) => format!("ok    {body}"),
                Err(e) => format!("error {e}"),
            };
            println!(
                "t={:>4}ms  {city:<9} {:>4}ms  [{}]  {shown}",
                start.elapsed().as_millis(),
                t.elapsed().as_millis(),
                client.breaker.state(),
            );
        }
    };

    println!("phase 1: healthy; unknown cities get 404 (not failures):");
    for city in [
        "tokyo", "atlantis", "atlantis", "atlantis", "atlantis", "paris",
    ] {
        lookup(city).await;
    }
    println!("phase 2: the API answers 503:");
    mode.store(FAILING, Ordering::Relaxed);
    for city in ["tokyo", "paris", "berlin", "rome", "oslo"] {
        lookup(city).await;
    }
    println!(
        "phase 3: the API is slow (1 s; we give up after 150 ms); wait out the open period first:"
    );
    mode.store(SLOW, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(400)).await;
    for city in ["tokyo", "paris", "berlin"] {
        lookup(city).await;
    }
    println!("phase 4: healthy again; wait out the open period:");
    mode.store(HEALTHY, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(400)).await;
    for city in ["tokyo", "paris"] {
        lookup(city).await;
    }
    let s = client.breaker.snapshot();
    println!(
        "\nbreaker '{}' ends {} after {} transitions",
        client.breaker.name().unwrap_or("?"),
        s.state,
        s.generation
    );
    Ok(())
}

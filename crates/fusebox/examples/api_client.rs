//! Seed 002's API client, in Rust: a weather client built on reqwest (plain
//! HTTP, no TLS) behind a `fusebox::Pipeline` (retry with a budget, breaker,
//! timeout), against a stand-in weather API that the example starts itself on
//! 127.0.0.1 (axum).
//!
//! What counts against the dependency: 5xx answers, transport errors and
//! timeouts. What does not: 4xx answers (an unknown city is the caller's
//! mistake, not a sign that the API is sick), so no number of 404s opens the
//! breaker, and a 404 is not retried.
//!
//! The stand-in API goes through four phases: healthy, failing (503),
//! slow (answers after 1 s; the client gives up after 150 ms), healthy again.
//! Every lookup is printed with what the client got, how many requests the
//! API saw for it (retries included) and the breaker's state.
//!
//! Run: `cargo run -p fusebox --example api_client --features tokio`

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use fusebox::pipeline::NoFallback;
use fusebox::retry::{Constant, Retry, RetryBudget};
use fusebox::{CircuitBreaker, GuardedAsyncFn, Outcome, Pipeline, PipelineError};
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- the stand-in API

const HEALTHY: u8 = 0;
const FAILING: u8 = 1;
const SLOW: u8 = 2;

#[derive(Default)]
struct Api {
    mode: AtomicU8,
    /// Requests received, to show what retries and the breaker cost the API.
    hits: AtomicU64,
}

async fn weather(State(api): State<Arc<Api>>, Path(city): Path<String>) -> (StatusCode, String) {
    api.hits.fetch_add(1, Ordering::Relaxed);
    if city == "atlantis" {
        return (StatusCode::NOT_FOUND, format!("no such city: {city}"));
    }
    match api.mode.load(Ordering::Relaxed) {
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
async fn start_api(api: Arc<Api>) -> std::io::Result<String> {
    let app = Router::new()
        .route("/v1/current/{city}", get(weather))
        .with_state(api);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(format!("http://{addr}"))
}

// ---------------------------------------------------------------- the client

/// What a weather lookup can fail with (timeouts and refusals are the
/// pipeline's: [`PipelineError`]).
#[derive(Debug)]
enum ApiError {
    /// 4xx: our request was wrong. Not the API's fault.
    Client(StatusCode, String),
    /// 5xx: the API is in trouble.
    Server(StatusCode),
    /// Connection refused, reset, ...
    Transport(reqwest::Error),
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Client(s, body) => write!(f, "{s}: {body}"),
            ApiError::Server(s) => write!(f, "server error {s}"),
            ApiError::Transport(e) => write!(f, "transport: {e}"),
        }
    }
}

impl std::error::Error for ApiError {}

/// What an error means to the breaker, as seed 002 asks: 5xx and transport
/// errors are failures (timeouts too: the pipeline counts those itself), 4xx
/// are not.
fn classify(e: &ApiError) -> Outcome {
    match e {
        ApiError::Client(..) => Outcome::Ignore,
        ApiError::Server(_) | ApiError::Transport(_) => Outcome::Failure,
    }
}

/// Which errors are worth another try: not a 4xx (it would fail the same way).
fn retryable(e: &ApiError) -> bool {
    !matches!(e, ApiError::Client(..))
}

/// The pipeline's type, with `fn` items so it can be named in a struct.
type ApiPipeline = Pipeline<Constant, fn(&ApiError) -> bool, NoFallback, fn(&ApiError) -> Outcome>;

struct WeatherClient {
    http: reqwest::Client,
    base: String,
    pipeline: ApiPipeline,
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

    /// The guarded lookup: retry, breaker and timeout around each request
    /// (the closure makes a fresh request per attempt).
    async fn current(&self, city: &str) -> Result<String, PipelineError<ApiError>> {
        let url = format!("{}/v1/current/{city}", self.base);
        (|| Self::fetch(self.http.clone(), url.clone()))
            .guarded(&self.pipeline)
            .await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let api = Arc::new(Api::default());
    let base = start_api(api.clone()).await?;
    println!("stand-in weather API on {base}\n");

    let breaker = CircuitBreaker::builder()
        .name("weather-api")
        .consecutive_failures(3)
        .open_for(Duration::from_millis(400))
        .on_transition(|t| println!("      [breaker {} -> {}: {:?}]", t.from, t.to, t.reason))
        .build()?;
    let retry = Retry::builder()
        .max_attempts(3)
        .backoff(Constant::new(Duration::from_millis(20)))
        .retry_if(retryable as fn(&ApiError) -> bool)
        .budget(RetryBudget::builder().ratio(0.2).build()?)
        .build()?;
    let client = WeatherClient {
        http: reqwest::Client::builder().build()?,
        base,
        pipeline: Pipeline::builder()
            .retry(retry)
            .breaker(breaker.clone())
            .classify(classify as fn(&ApiError) -> Outcome)
            .timeout(Duration::from_millis(150))
            .build(),
    };

    let start = Instant::now();
    let lookup = |city: &'static str| {
        let (client, api, breaker) = (&client, &api, &breaker);
        async move {
            let t = Instant::now();
            let hits = api.hits.load(Ordering::Relaxed);
            let shown = match client.current(city).await {
                Ok(body) => format!("ok    {body}"),
                Err(e) => format!("error (stopped by {}) {e}", e.stopped_by()),
            };
            println!(
                "t={:>4}ms  {city:<9} {:>4}ms  API saw {}  [{}]  {shown}",
                start.elapsed().as_millis(),
                t.elapsed().as_millis(),
                api.hits.load(Ordering::Relaxed) - hits,
                breaker.state(),
            );
        }
    };

    println!("phase 1: healthy; unknown cities get 404 (not failures, not retried):");
    for city in [
        "tokyo", "atlantis", "atlantis", "atlantis", "atlantis", "paris",
    ] {
        lookup(city).await;
    }
    println!("phase 2: the API answers 503 (each lookup tries up to 3 times):");
    api.mode.store(FAILING, Ordering::Relaxed);
    for city in ["tokyo", "paris", "berlin", "rome"] {
        lookup(city).await;
    }
    println!("phase 3: the API is slow (1 s; we give up after 150 ms); after the open period:");
    api.mode.store(SLOW, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(400)).await;
    for city in ["tokyo", "paris"] {
        lookup(city).await;
    }
    println!("phase 4: healthy again; after the open period:");
    api.mode.store(HEALTHY, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(400)).await;
    for city in ["tokyo", "paris"] {
        lookup(city).await;
    }
    let s = breaker.snapshot();
    println!(
        "\nbreaker '{}' ends {} after {} transitions; the API saw {} requests in all",
        breaker.name().unwrap_or("?"),
        s.state,
        s.generation,
        api.hits.load(Ordering::Relaxed)
    );
    Ok(())
}

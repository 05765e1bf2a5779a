//! `fusebox-lab run --serve ADDR`: the lab's fusebox breakers over HTTP.
//!
//! The breakers of a served run live in one [`fusebox::registry::Fusebox`]
//! registry ([`Exported::breakers`]) observed by the library's own
//! [`fusebox::metrics::Metrics`]; [`router`] serves
//!
//! - `GET /metrics`: the OpenMetrics text of that registry's metrics;
//! - `GET /breakers`: a JSON list of the registry's breakers
//!   ([`fusebox::registry::Fusebox::snapshot`]);
//! - `GET /status`: the lab's progress, `{"runs": N, "done": K, "finished": bool}`;
//! - `GET /dashboard`: the library's live dashboard ([`fusebox::dashboard`])
//!   over the same registry, read-only unless [`Exported::controls`] enables
//!   its controls (`run --serve` does when [`CONTROL_TOKEN_ENV`] is set).
//!
//! [`router`] returns a plain [`axum::Router`]; [`Server::start`] serves any
//! router on its own thread until stopped.

use crate::guard::Breakers;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use fusebox::dashboard::{Controls, Dashboard, DashboardError};
use fusebox::metrics::Metrics;
use prometheus_client::registry::Registry;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The OpenMetrics content type of `/metrics`.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The environment variable whose value, when set, enables the served
/// dashboard's controls with that token (off otherwise).
pub const CONTROL_TOKEN_ENV: &str = "FUSEBOX_LAB_CONTROL_TOKEN";

/// Writes the dashboard's control log (every action and refusal, with the
/// caller's address: target `fusebox::dashboard`) to stderr, and nothing
/// else; once per process.
pub fn log_controls() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let only = Targets::new().with_target("fusebox::dashboard", LevelFilter::INFO);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(only);
    // Err: a subscriber is already set (a second call); keep it.
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

/// How far the lab's runs have got.
#[derive(Debug, Default)]
pub struct Progress {
    total: AtomicUsize,
    done: AtomicUsize,
}

impl Progress {
    /// `total` runs are planned.
    pub fn plan(&self, total: usize) {
        // Relaxed: a counter read by `/status`, nothing else depends on it.
        self.total.store(total, Ordering::Relaxed);
    }

    /// One more run is done.
    pub fn tick(&self) {
        // Relaxed: as above.
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    fn json(&self) -> serde_json::Value {
        // Relaxed: as above.
        let (total, done) = (
            self.total.load(Ordering::Relaxed),
            self.done.load(Ordering::Relaxed),
        );
        serde_json::json!({ "runs": total, "done": done, "finished": total > 0 && done >= total })
    }
}

/// What `run --serve` exports: the registry its fusebox breakers are built
/// in, the Prometheus registry the library's metrics write to, the progress.
#[derive(Clone)]
pub struct Exported {
    /// The registry of every served run's breakers (each named `SCENARIO/STRATEGY`).
    pub breakers: Breakers,
    prometheus: Arc<Registry>,
    /// The library's metrics over [`Exported::breakers`] (the dashboard
    /// reads its rates and thresholds from them).
    pub metrics: Metrics,
    /// The runs' progress, for `/status`.
    pub progress: Arc<Progress>,
    /// Who may force open, disable and reset breakers from the dashboard:
    /// nobody unless set ([`Controls::off`]).
    pub controls: Controls,
}

impl fmt::Debug for Exported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exported")
            .field("breakers", &self.breakers)
            .finish_non_exhaustive()
    }
}

impl Default for Exported {
    fn default() -> Self {
        Exported::new()
    }
}

impl Exported {
    /// A registry on real time, observed by [`Metrics`].
    pub fn new() -> Self {
        let mut prometheus = Registry::default();
        let metrics = Metrics::new(&mut prometheus);
        let observer = metrics.clone();
        Exported {
            breakers: Breakers::shared(|b| b.observer(observer)),
            prometheus: Arc::new(prometheus),
            metrics,
            progress: Arc::default(),
            controls: Controls::off(),
        }
    }
}

/// The lab's routes over `exported`: `/metrics`, `/breakers`, `/status`,
/// and the library's live dashboard at `/dashboard` (with
/// [`Exported::controls`]).
///
/// # Errors
///
/// A control token shorter than the dashboard accepts.
///
/// # Examples
///
/// ```
/// use fusebox_lab::cli::serve::{router, Exported, Server};
/// use std::io::{Read, Write};
///
/// let exported = Exported::new();
/// exported.breakers.registry().breaker("db");
/// let server = Server::start("127.0.0.1:0".parse()?, router(exported)?)?;
/// let mut conn = std::net::TcpStream::connect(server.local_addr())?;
/// conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
/// let mut answer = String::new();
/// conn.read_to_string(&mut answer)?;
/// assert!(answer.contains(r#"fusebox_circuit_state{name="db",state="closed"} 1"#));
/// server.stop();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn router(exported: Exported) -> Result<Router, DashboardError> {
    let dashboard = Dashboard::builder(exported.breakers.registry().clone())
        .metrics(exported.metrics.clone())
        .controls(exported.controls.clone())
        .build()?;
    Ok(Router::new()
        .route("/metrics", get(metrics))
        .route("/breakers", get(breakers))
        .route("/status", get(status))
        .with_state(exported)
        // `nest_service`: the page at /dashboard and /dashboard/.
        .nest_service("/dashboard", dashboard.router()))
}

async fn metrics(State(e): State<Exported>) -> Response {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &e.prometheus) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "encoding failed\n").into_response(),
    }
}

async fn breakers(State(e): State<Exported>) -> Json<serde_json::Value> {
    let list: Vec<serde_json::Value> = e
        .breakers
        .registry()
        .snapshot()
        .into_iter()
        .map(|b| {
            let s = b.snapshot;
            serde_json::json!({
                "name": b.name,
                "state": s.state.as_str(),
                "failure_rate": s.failure_rate,
                "slow_call_rate": s.slow_call_rate,
                "calls": s.calls,
                "failures": s.failures,
                "rejected": s.rejected,
                "seconds_in_state": s.since_transition.as_secs_f64(),
            })
        })
        .collect();
    Json(serde_json::Value::Array(list))
}

async fn status(State(e): State<Exported>) -> Json<serde_json::Value> {
    Json(e.progress.json())
}

/// A router served on its own thread (a one-thread tokio runtime); stops
/// when dropped or [`Server::stop`]ped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Server {
    /// Binds `addr` (listening when this returns) and serves `router`.
    pub fn start(addr: SocketAddr, router: Router) -> io::Result<Server> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("fusebox-lab-serve".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)?;
                    // With the caller's address: the dashboard logs it with
                    // every control action.
                    let service = router.into_make_service_with_connect_info::<SocketAddr>();
                    axum::serve(listener, service)
                        .with_graceful_shutdown(async {
                            let _ = rx.await;
                        })
                        .await
                })
            })?;
        Ok(Server {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Blocks until the server stops by itself (it does not, unless its
    /// listener fails: this is "serve until interrupted").
    pub fn wait(mut self) -> io::Result<()> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the server thread panicked")),
            None => Ok(()),
        }
    }

    /// Stops serving and waits for the server's thread.
    pub fn stop(mut self) {
        self.shutdown_now();
    }

    fn shutdown_now(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn status_line(addr: SocketAddr, path: &str) -> String {
        let mut conn = std::net::TcpStream::connect(addr).unwrap();
        write!(
            conn,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        answer.lines().next().unwrap_or_default().to_owned()
    }

    #[test]
    fn the_dashboard_answers_with_and_without_a_trailing_slash() {
        let server = Server::start(
            "127.0.0.1:0".parse().unwrap(),
            router(Exported::new()).unwrap(),
        )
        .unwrap();
        let addr = server.local_addr();
        for path in [
            "/dashboard",
            "/dashboard/",
            "/dashboard/api/state",
            "/dashboard/?asset=page.js",
        ] {
            assert_eq!(status_line(addr, path), "HTTP/1.1 200 OK", "{path}");
        }
        server.stop();
    }
}

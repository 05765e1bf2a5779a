//! A live dashboard of a [`Fusebox`] registry (feature `dashboard`): an
//! [axum](https://docs.rs/axum) [`Router`] to nest into your service.
//!
//! | route | what |
//! |---|---|
//! | `GET /` | one self-contained HTML page (its script and stylesheet at `?asset=page.js` and `?asset=page.css`, from the same origin; no external asset: works offline; a CSP without `unsafe-inline`) |
//! | `GET /api/state` | every breaker, bulkhead and other policy now, plus each breaker's recent history, as JSON |
//! | `GET /api/breakers/{name}` | one breaker and its history, as JSON (404 for an unknown name) |
//! | `GET /api/stream` | server-sent events: one `frame` event per sample with every breaker, bulkhead and other policy (one stream for all, like Hystrix's `hystrix.stream`) |
//! | `GET /api/fleet` | this node's fleet, as JSON (feature `fleet`, with [`DashboardBuilder::fleet`]; 404 otherwise) |
//! | `POST /api/breakers/{name}/{force_open,disable,reset}` | controls: only with [`Controls::token`]; otherwise the routes do not exist |
//!
//! Per breaker the page shows its state and time in it, calls and
//! rejections per second, the failure and slow-call rates against the
//! thresholds that trip it, a trend of the last minutes (calls/s and rates,
//! values on hover) and its tags;
//! per bulkhead, slots in use against the limit, waiters and rejections.
//! Every other policy of the registry (a rate limiter, say) has a tile in
//! the "Policies" section with its kind, mode and the figures it reports
//! through [`Inspect`](crate::policy::Inspect), counters with their rate
//! per second, and its gauges over time, one chart per unit (an adaptive
//! limit's limit and calls in flight together): the dashboard shows a
//! policy it has no code for. In the
//! JSON, `frame.policies` lists every policy but the breakers (bulkheads
//! too) as `{kind, name, tags, mode, figures: [{name, help, kind, value,
//! rate}]}`.
//! Call rates come from the [`Metrics`] counters when you pass them
//! ([`DashboardBuilder::metrics`]); without, the page shows rejections and
//! rates but no call rate.
//!
//! # Fleet
//!
//! With the feature `fleet` and [`DashboardBuilder::fleet`], every frame
//! (and `GET /api/fleet`) carries this node's fleet: namespace, node id,
//! connected or disconnected since when, and per shared breaker the fleet's
//! state as this node last learnt it ([`Fleet::shared_breakers`](crate::fleet::Fleet::shared_breakers));
//! the page shows it above the tiles and on each shared breaker's tile.
//! Neither the Redis address nor its errors are shown.
//!
//! # Memory
//!
//! Bounded whatever the clients do: a ring of [`DashboardBuilder::history`]
//! points per breaker of the registry; the stream holds only the latest
//! frame (a client that falls behind skips frames, nothing queues); at most
//! [`DashboardBuilder::max_clients`] streams at once (503 beyond).
//!
//! # Controls
//!
//! Off by default. With [`Controls::token`], a POST must carry
//! `Authorization: Bearer <token>` (compared in constant time) and come from
//! the page's own origin (`Sec-Fetch-Site: same-origin` and an `Origin`
//! equal to the `Host`, when a browser sends them): a page on another site
//! cannot drive the controls even from a logged-in operator's browser. Every
//! action and every refusal is logged with `tracing` (target
//! `fusebox::dashboard`) with the caller's address; serve with
//! [`into_make_service_with_connect_info::<SocketAddr>`](axum::Router::into_make_service_with_connect_info)
//! so the address is known (`unknown` otherwise).
//!
//! # Examples
//!
//! ```
//! use fusebox::dashboard::{Controls, Dashboard};
//! use fusebox::registry::Fusebox;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let fusebox = Fusebox::new();
//! fusebox.breaker("payments");
//! let dashboard = Dashboard::builder(fusebox.clone())
//!     .controls(Controls::token("change-me-to-a-long-random-secret"))
//!     .build()?;
//! // `nest_service`: the page at /fusebox and /fusebox/, in an app of any state.
//! let app: axum::Router = axum::Router::new().nest_service("/fusebox", dashboard.router());
//! // axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>()).await?;
//! # let _ = app;
//! # Ok(())
//! # }
//! ```

mod controls;
#[cfg(feature = "fleet")]
mod fleet;
mod http;
mod model;

pub use controls::{Controls, MIN_TOKEN_LEN};

use crate::metrics::{Metrics, Thresholds};
use crate::registry::Fusebox;
use crate::sync::{lock, Mutex};
use crate::{Clock, MonotonicClock};
use axum::Router;
use model::{Board, Extra, FleetView, Frame};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::watch;

/// A live dashboard over a [`Fusebox`]; see the [module docs](self).
///
/// Cheap to clone; clones share the history and the stream.
///
/// # Examples
///
/// ```
/// use fusebox::dashboard::Dashboard;
/// let dashboard = Dashboard::builder(fusebox::registry::Fusebox::new()).build()?;
/// # let _ = dashboard;
/// # Ok::<(), fusebox::dashboard::DashboardError>(())
/// ```
#[derive(Clone)]
pub struct Dashboard {
    inner: Arc<Inner>,
}

struct Inner {
    fusebox: Fusebox,
    metrics: Option<Metrics>,
    controls: Controls,
    #[cfg(feature = "fleet")]
    fleet: Option<crate::fleet::Fleet>,
    clock: Arc<dyn Clock>,
    interval: Duration,
    manual: bool,
    max_clients: usize,
    clients: AtomicUsize,
    started: AtomicBool,
    board: Mutex<Board>,
    /// The latest frame, as the JSON the stream sends. A watch channel keeps
    /// one value: a slow client skips to the newest, nothing queues.
    latest: watch::Sender<Option<Arc<str>>>,
    last_frame: Mutex<Option<Arc<Frame>>>,
}

impl fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dashboard")
            .field("interval", &self.inner.interval)
            .field("controls", &self.inner.controls)
            .finish_non_exhaustive()
    }
}

impl Dashboard {
    /// A builder over `fusebox`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::Dashboard;
    /// let builder = Dashboard::builder(fusebox::registry::Fusebox::new());
    /// # let _ = builder;
    /// ```
    pub fn builder(fusebox: Fusebox) -> DashboardBuilder {
        DashboardBuilder {
            fusebox,
            metrics: None,
            controls: Controls::off(),
            #[cfg(feature = "fleet")]
            fleet: None,
            clock: None,
            interval: Duration::from_millis(500),
            history: 360,
            max_clients: 64,
            manual: false,
        }
    }

    /// The routes, to serve or nest into an app of any state `S` (see the
    /// [module docs](self)). `app.nest_service("/fusebox", dashboard.router())`
    /// serves the page at `/fusebox` and `/fusebox/`; `app.nest(..)` works
    /// too, but axum then matches the page at `/fusebox` only. Starts the
    /// background sampler (every [`DashboardBuilder::interval`]) when called
    /// inside a tokio runtime, else at the first request; it stops when the
    /// last clone of the dashboard and its routers is dropped.
    ///
    /// # Panics
    ///
    /// The sampler and the stream's keep-alive use tokio's timers: serve the
    /// routes on a runtime with time enabled (`#[tokio::main]` does; a
    /// runtime from `Builder` needs `enable_time()` or `enable_all()`), or
    /// the first request panics.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::Dashboard;
    /// let dashboard = Dashboard::builder(fusebox::registry::Fusebox::new()).build()?;
    ///
    /// #[derive(Clone)]
    /// struct App { greeting: &'static str }
    /// let app = axum::Router::new()
    ///     .route("/", axum::routing::get(|s: axum::extract::State<App>| async move { s.greeting }))
    ///     .nest_service("/fusebox", dashboard.router())
    ///     .with_state(App { greeting: "hello" });
    /// # let _: axum::Router = app;
    /// # Ok::<(), fusebox::dashboard::DashboardError>(())
    /// ```
    pub fn router<S>(&self) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        if tokio::runtime::Handle::try_current().is_ok() {
            self.inner.start();
        }
        http::router(self.inner.clone())
    }

    /// Takes one sample now: reads every breaker, bulkhead and other
    /// policy, appends a point to each history ring and sends the frame to
    /// the stream. The background sampler calls this; call it yourself with
    /// [`DashboardBuilder::manual`] (tests, a [`ManualClock`](crate::ManualClock)).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::Dashboard;
    /// let dashboard = Dashboard::builder(fusebox::registry::Fusebox::new()).manual().build()?;
    /// dashboard.sample();
    /// # Ok::<(), fusebox::dashboard::DashboardError>(())
    /// ```
    pub fn sample(&self) {
        self.inner.sample();
    }
}

impl Inner {
    fn sample(&self) -> Arc<Frame> {
        let now = self.clock.now();
        let breakers = self.fusebox.snapshot();
        let bulkheads = self.fusebox.bulkhead_snapshot();
        let policies = self.fusebox.policies();
        let fleet = self.fleet();
        let frame = {
            let mut board = lock(&self.board);
            let mut frame = board.sample(now, breakers, bulkheads, policies, |name| Extra {
                calls: self.metrics.as_ref().and_then(|m| m.call_counts(name)),
                thresholds: self
                    .fusebox
                    .get(name)
                    .map_or_else(Thresholds::default, |b| Thresholds::of(&b)),
            });
            frame.fleet = fleet;
            Arc::new(frame)
        };
        *lock(&self.last_frame) = Some(frame.clone());
        if let Ok(json) = serde_json::to_string(&*frame) {
            self.latest.send_replace(Some(Arc::from(json)));
        }
        frame
    }

    /// This node's fleet now, if the dashboard has one.
    fn fleet(&self) -> Option<FleetView> {
        #[cfg(feature = "fleet")]
        return self.fleet.as_ref().map(fleet::view);
        #[cfg(not(feature = "fleet"))]
        None
    }

    /// The latest frame, sampling first if there is none yet.
    fn frame(&self) -> Arc<Frame> {
        let last = lock(&self.last_frame).clone();
        match last {
            Some(f) => f,
            None => self.sample(),
        }
    }

    /// Starts the background sampler once (not in manual mode).
    fn start(self: &Arc<Self>) {
        // Relaxed: the swap alone makes one caller the starter; the task
        // reads nothing the starter wrote through this flag.
        if self.manual || self.started.swap(true, Ordering::Relaxed) {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(self);
        let interval = self.interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { break };
                inner.sample();
            }
        });
    }
}

/// Settings of a [`Dashboard`]; from [`Dashboard::builder`].
///
/// # Default
///
/// | setting | default |
/// |---|---|
/// | [`metrics`](Self::metrics) | none: no call rates |
/// | [`controls`](Self::controls) | [`Controls::off`] |
/// | [`clock`](Self::clock) | [`MonotonicClock`] |
/// | [`interval`](Self::interval) | 500 ms |
/// | [`history`](Self::history) | 360 points (3 minutes at 500 ms) |
/// | [`max_clients`](Self::max_clients) | 64 streams |
///
/// # Examples
///
/// ```
/// use fusebox::dashboard::Dashboard;
/// use std::time::Duration;
/// let dashboard = Dashboard::builder(fusebox::registry::Fusebox::new())
///     .interval(Duration::from_secs(1))
///     .history(300)
///     .build()?;
/// # let _ = dashboard;
/// # Ok::<(), fusebox::dashboard::DashboardError>(())
/// ```
#[must_use]
pub struct DashboardBuilder {
    fusebox: Fusebox,
    metrics: Option<Metrics>,
    controls: Controls,
    #[cfg(feature = "fleet")]
    fleet: Option<crate::fleet::Fleet>,
    clock: Option<Arc<dyn Clock>>,
    interval: Duration,
    history: usize,
    max_clients: usize,
    manual: bool,
}

impl fmt::Debug for DashboardBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DashboardBuilder")
            .field("controls", &self.controls)
            .field("interval", &self.interval)
            .field("history", &self.history)
            .field("max_clients", &self.max_clients)
            .field("manual", &self.manual)
            .finish_non_exhaustive()
    }
}

impl DashboardBuilder {
    /// The [`Metrics`] observing the same registry: the page then shows
    /// calls per second (read from `fusebox_calls_total`, the one count).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::Dashboard;
    /// use fusebox::metrics::Metrics;
    /// use fusebox::registry::Fusebox;
    /// let metrics = Metrics::new(&mut prometheus_client::registry::Registry::default());
    /// let fusebox = Fusebox::builder().observer(metrics.clone()).build()?;
    /// let dashboard = Dashboard::builder(fusebox).metrics(metrics).build()?;
    /// # let _ = dashboard;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Who may force open, disable and reset breakers; see [`Controls`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::{Controls, Dashboard};
    /// let builder = Dashboard::builder(fusebox::registry::Fusebox::new())
    ///     .controls(Controls::token("a-long-random-secret-value"));
    /// # let _ = builder;
    /// ```
    pub fn controls(mut self, controls: Controls) -> Self {
        self.controls = controls;
        self
    }

    /// The fleet this node's breakers are shared with (feature `fleet`):
    /// the page and `GET /api/fleet` then show it; see the [module docs](self#fleet).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fusebox::dashboard::Dashboard;
    /// use fusebox::fleet::Fleet;
    /// let fleet = Fleet::builder().redis_url("redis://127.0.0.1:6379").namespace("shop").connect().await?;
    /// let fusebox = fusebox::registry::Fusebox::builder().fleet(fleet.clone()).build()?;
    /// let dashboard = Dashboard::builder(fusebox).fleet(fleet).build()?;
    /// # let _ = dashboard;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "fleet")]
    pub fn fleet(mut self, fleet: crate::fleet::Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// The clock that times samples (rates per second, history).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = fusebox::dashboard::Dashboard::builder(fusebox::registry::Fusebox::new())
    ///     .clock(fusebox::ManualClock::new());
    /// # let _ = builder;
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// How often the background sampler samples and the stream sends a frame
    /// (at least 50 ms).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = fusebox::dashboard::Dashboard::builder(fusebox::registry::Fusebox::new())
    ///     .interval(std::time::Duration::from_secs(1));
    /// # let _ = builder;
    /// ```
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Points kept per breaker for its trend (1 to 10 000).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = fusebox::dashboard::Dashboard::builder(fusebox::registry::Fusebox::new())
    ///     .history(120);
    /// # let _ = builder;
    /// ```
    pub fn history(mut self, points: usize) -> Self {
        self.history = points;
        self
    }

    /// Streams served at once (at least 1); one more gets `503`.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = fusebox::dashboard::Dashboard::builder(fusebox::registry::Fusebox::new())
    ///     .max_clients(8);
    /// # let _ = builder;
    /// ```
    pub fn max_clients(mut self, n: usize) -> Self {
        self.max_clients = n;
        self
    }

    /// No background sampler: frames are taken only by
    /// [`Dashboard::sample`] (and by a request when none was taken yet).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = fusebox::dashboard::Dashboard::builder(fusebox::registry::Fusebox::new())
    ///     .manual();
    /// # let _ = builder;
    /// ```
    pub fn manual(mut self) -> Self {
        self.manual = true;
        self
    }

    /// Checks the settings and makes the dashboard.
    ///
    /// # Errors
    ///
    /// A [`DashboardError`] naming the setting: an interval under 50 ms, a
    /// history of 0 or over 10 000 points, `max_clients` of 0, a token
    /// shorter than [`MIN_TOKEN_LEN`] bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::{Controls, Dashboard};
    /// let err = Dashboard::builder(fusebox::registry::Fusebox::new())
    ///     .controls(Controls::token("short"))
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(err.field(), "controls.token");
    /// ```
    pub fn build(self) -> Result<Dashboard, DashboardError> {
        if self.interval < Duration::from_millis(50) {
            return Err(DashboardError::new(
                "interval",
                format!("{:?} is under the minimum of 50ms", self.interval),
            ));
        }
        if !(1..=10_000).contains(&self.history) {
            return Err(DashboardError::new(
                "history",
                format!("{} points is outside 1 to 10000", self.history),
            ));
        }
        if self.max_clients == 0 {
            return Err(DashboardError::new(
                "max_clients",
                "must be at least 1".into(),
            ));
        }
        if let Some(len) = self.controls.token_len() {
            if len < MIN_TOKEN_LEN {
                return Err(DashboardError::new(
                    "controls.token",
                    format!("{len} bytes is shorter than the minimum of {MIN_TOKEN_LEN}"),
                ));
            }
        }
        let (latest, _) = watch::channel(None);
        Ok(Dashboard {
            inner: Arc::new(Inner {
                fusebox: self.fusebox,
                metrics: self.metrics,
                controls: self.controls,
                #[cfg(feature = "fleet")]
                fleet: self.fleet,
                clock: self.clock.unwrap_or_else(|| Arc::new(MonotonicClock)),
                interval: self.interval,
                manual: self.manual,
                max_clients: self.max_clients,
                clients: AtomicUsize::new(0),
                started: AtomicBool::new(false),
                board: Mutex::new(Board::new(self.history)),
                latest,
                last_frame: Mutex::new(None),
            }),
        })
    }
}

/// A setting [`DashboardBuilder::build`] refused, naming it.
///
/// # Examples
///
/// ```
/// use fusebox::dashboard::Dashboard;
/// let err = Dashboard::builder(fusebox::registry::Fusebox::new()).history(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "dashboard setting `history`: 0 points is outside 1 to 10000");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardError {
    field: &'static str,
    message: String,
}

impl DashboardError {
    fn new(field: &'static str, message: String) -> DashboardError {
        DashboardError { field, message }
    }

    /// The setting at fault.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::dashboard::Dashboard;
    /// let err = Dashboard::builder(fusebox::registry::Fusebox::new()).max_clients(0).build().unwrap_err();
    /// assert_eq!(err.field(), "max_clients");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }
}

impl fmt::Display for DashboardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dashboard setting `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for DashboardError {}

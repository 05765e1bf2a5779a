//! Alert conditions, watched in-process: a breaker open for too long, a
//! breaker flapping, and every breaker of one service open.
//!
//! [`Alerts`] listens to breakers (as a registry [`Observer`], or through
//! [`Alerts::listener`] for breakers built by hand) and turns what it hears
//! into [`AlertEvent`]s: one when a condition starts ([`AlertStatus::Firing`])
//! and one when it ends ([`AlertStatus::Resolved`]). The conditions and their
//! defaults (seed 004) are the same as the Prometheus rules in `ops/alerts.yml`:
//!
//! | alert | condition | default |
//! |---|---|---|
//! | [`Alert::OpenTooLong`] | open or half-open without closing in between | for 5 minutes or more |
//! | [`Alert::Flapping`] | transitions into or out of closed | more than 5 within 10 minutes |
//! | [`Alert::ServiceDown`] | every breaker tagged `service = X` open or half-open | at once |
//!
//! "Open" counts `Open` and `HalfOpen`: a breaker probing and re-opening has
//! not recovered. `ForcedOpen` (an operator's decision) and `Disabled` do not
//! count. Open <-> half-open cycles during one outage are not flapping.
//!
//! Flapping and service-down are detected as transitions happen (a breaker's
//! transition re-evaluates that breaker and its service). Open-too-long, and a
//! flapping alert ending because time passed, need time to pass with nothing
//! happening, so they are noticed by [`Alerts::check`], which a service calls
//! periodically (every few seconds); `check` also returns the events raised
//! since the previous call.
//!
//! # Memory
//!
//! An `Alerts` holds a fixed amount per breaker it watches, whatever its
//! caller does: events wait for `check` in a queue of at most
//! [`Alerts::MAX_PENDING`] (when it is full the oldest is dropped and counted
//! in [`Alerts::dropped`]), and a breaker's recent transitions are kept only
//! up to the `flapping_transitions + 1` newest, all the flapping rule needs.
//!
//! # Examples
//!
//! ```
//! use fusebox::alert::{Alert, AlertConfig, AlertStatus, Alerts};
//! use fusebox::registry::Fusebox;
//! use fusebox::ManualClock;
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let alerts = Alerts::new(AlertConfig::default(), clock.clone());
//! let fusebox = Fusebox::builder().clock(clock.clone()).observer(alerts.clone()).build()?;
//!
//! let db = fusebox.breaker("db");
//! for _ in 0..5 {
//!     let _ = db.call(|| Err::<(), _>("down"));
//! }
//! clock.advance(Duration::from_secs(5 * 60));
//! let events = alerts.check();
//! assert!(matches!(&events[..], [e] if e.status == AlertStatus::Firing
//!     && matches!(&e.alert, Alert::OpenTooLong { name, .. } if name == "db")));
//! # Ok::<(), fusebox::registry::InvalidConfig>(())
//! ```

use crate::observe::{Observer, Tags};
use crate::sync::{lock, Mutex};
use crate::{Builder, Clock, Listener, State, Transition};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::sync::Arc; // std even under loom: not modelled, and loom's Arc cannot hold `dyn` or be a `self` type
use std::time::Duration;

/// Thresholds of the three alerts.
///
/// # Default
///
/// - `open_longer_than`: 5 minutes
/// - `flapping_transitions`: 5 (more than this many fires)
/// - `flapping_window`: 10 minutes
/// - `service_tag`: `"service"`
///
/// # Examples
///
/// ```
/// use fusebox::alert::AlertConfig;
/// use std::time::Duration;
/// let config = AlertConfig { open_longer_than: Duration::from_secs(60), ..Default::default() };
/// assert_eq!(config.flapping_transitions, 5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertConfig {
    /// A breaker open (or half-open) for this long without closing fires
    /// [`Alert::OpenTooLong`].
    pub open_longer_than: Duration,
    /// More than this many transitions into or out of closed ...
    pub flapping_transitions: u32,
    /// ... within this window fire [`Alert::Flapping`].
    pub flapping_window: Duration,
    /// The tag that groups breakers into services for [`Alert::ServiceDown`].
    pub service_tag: String,
}

impl Default for AlertConfig {
    fn default() -> Self {
        AlertConfig {
            open_longer_than: Duration::from_secs(5 * 60),
            flapping_transitions: 5,
            flapping_window: Duration::from_secs(10 * 60),
            service_tag: "service".to_owned(),
        }
    }
}

/// One alert condition.
///
/// # Examples
///
/// ```
/// use fusebox::alert::Alert;
/// let a = Alert::Flapping { name: "db".into(), transitions: 6 };
/// assert_eq!(a.to_string(), "circuit breaker db is flapping (6 transitions)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Alert {
    /// Breaker `name` has been open for `open_for` (at the time of the event).
    OpenTooLong {
        /// The breaker.
        name: String,
        /// How long it had been open.
        open_for: Duration,
    },
    /// Breaker `name` made `transitions` transitions into or out of closed
    /// within the flapping window.
    Flapping {
        /// The breaker.
        name: String,
        /// Transitions counted in the window when the event was raised. At
        /// most `flapping_transitions + 1`: only that many are kept, which
        /// is what the alert needs (it fires on the transition that makes the
        /// count exceed `flapping_transitions`, so a firing event always
        /// carries exactly `flapping_transitions + 1`).
        transitions: u32,
    },
    /// Every breaker tagged with `service` is open.
    ServiceDown {
        /// The value of the service tag.
        service: String,
        /// The breakers of that service, sorted.
        breakers: Vec<String>,
    },
}

impl Alert {
    /// What identifies the condition: the alert kind and the breaker or
    /// service (the numbers in it change while it lasts).
    fn key(&self) -> Key {
        match self {
            Alert::OpenTooLong { name, .. } => Key::OpenTooLong(name.clone()),
            Alert::Flapping { name, .. } => Key::Flapping(name.clone()),
            Alert::ServiceDown { service, .. } => Key::ServiceDown(service.clone()),
        }
    }
}

impl fmt::Display for Alert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Alert::OpenTooLong { name, open_for } => {
                write!(f, "circuit breaker {name} has been open for {open_for:?}")
            }
            Alert::Flapping { name, transitions } => {
                write!(
                    f,
                    "circuit breaker {name} is flapping ({transitions} transitions)"
                )
            }
            Alert::ServiceDown { service, breakers } => write!(
                f,
                "every circuit breaker of service {service} is open ({})",
                breakers.join(", ")
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    OpenTooLong(String),
    Flapping(String),
    ServiceDown(String),
}

/// Whether an alert starts or ends.
///
/// # Examples
///
/// ```
/// use fusebox::alert::AlertStatus;
/// assert_ne!(AlertStatus::Firing, AlertStatus::Resolved);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlertStatus {
    /// The condition started.
    Firing,
    /// The condition ended.
    Resolved,
}

/// An alert starting or ending, at clock time `at`.
///
/// # Examples
///
/// ```
/// use fusebox::alert::{Alert, AlertEvent, AlertStatus};
/// use std::time::Duration;
/// let e = AlertEvent {
///     alert: Alert::Flapping { name: "db".into(), transitions: 6 },
///     status: AlertStatus::Firing,
///     at: Duration::from_secs(60),
/// };
/// assert_eq!(e.to_string(), "firing: circuit breaker db is flapping (6 transitions)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertEvent {
    /// The condition.
    pub alert: Alert,
    /// Starting or ending.
    pub status: AlertStatus,
    /// Clock time of the event (the alerts' clock).
    pub at: Duration,
}

impl fmt::Display for AlertEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.status {
            AlertStatus::Firing => "firing",
            AlertStatus::Resolved => "resolved",
        };
        write!(f, "{s}: {}", self.alert)
    }
}

type Sink = Arc<dyn Fn(&AlertEvent) + Send + Sync>;

/// Watches breakers for the three alert conditions; see the [module
/// docs](self).
///
/// Cheap to clone; clones share everything.
///
/// # Examples
///
/// A breaker built by hand, with an event callback:
///
/// ```
/// use fusebox::alert::{AlertConfig, Alerts};
/// use fusebox::{CircuitBreaker, ManualClock};
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let config = AlertConfig { flapping_transitions: 1, ..Default::default() };
/// let alerts = Alerts::new(config, clock.clone())
///     .on_event(move |e| sink.lock().unwrap().push(e.to_string()));
/// let breaker = CircuitBreaker::builder()
///     .consecutive_failures(1)
///     .clock(clock.clone())
///     .listener(alerts.listener("db", None))
///     .build()?;
/// let _ = breaker.call(|| Err::<(), _>("down")); // closed -> open: 1 transition
/// breaker.reset();                                 // open -> closed: 2 > 1
/// assert_eq!(seen.lock().unwrap().as_slice(), ["firing: circuit breaker db is flapping (2 transitions)"]);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Alerts {
    inner: Arc<AlertsInner>,
}

struct AlertsInner {
    config: AlertConfig,
    clock: Box<dyn Clock>,
    sink: Mutex<Option<Sink>>,
    state: Mutex<Watch>,
}

#[derive(Default)]
struct Watch {
    breakers: BTreeMap<String, Watched>,
    /// The breakers of each service, for [`Alert::ServiceDown`].
    services: BTreeMap<String, BTreeSet<String>>,
    /// Active conditions, with the alert as last evaluated.
    active: BTreeMap<Key, Alert>,
    /// Events not yet returned by `check`, at most `MAX_PENDING`.
    queue: VecDeque<AlertEvent>,
    /// Events pushed out of the full queue.
    dropped: u64,
}

#[derive(Default)]
struct Watched {
    service: Option<String>,
    /// When it last became open (Open or HalfOpen) from a non-open state.
    open_since: Option<Duration>,
    /// Times of the newest transitions into or out of closed, at most
    /// `flapping_transitions + 1`.
    edges: VecDeque<Duration>,
}

/// Which conditions an evaluation looks at.
enum Scope<'a> {
    /// Every breaker and service (from `check`).
    All,
    /// One breaker and its service (on its transition).
    Breaker(&'a str),
}

impl Watch {
    /// Queues `events` for `check`, dropping the oldest beyond `MAX_PENDING`.
    fn enqueue(&mut self, events: &[AlertEvent]) {
        for e in events {
            if self.queue.len() >= Alerts::MAX_PENDING {
                self.queue.pop_front();
                self.dropped += 1;
            }
            self.queue.push_back(e.clone());
        }
    }

    /// Moves breaker `name` into `service` (or none).
    fn set_service(&mut self, name: &str, service: Option<&str>) {
        let entry = self.breakers.entry(name.to_owned()).or_default();
        let old = std::mem::replace(&mut entry.service, service.map(str::to_owned));
        if let Some(old) = old {
            if let Some(members) = self.services.get_mut(&old) {
                members.remove(name);
                if members.is_empty() {
                    self.services.remove(&old);
                }
            }
        }
        if let Some(s) = service {
            self.services
                .entry(s.to_owned())
                .or_default()
                .insert(name.to_owned());
        }
    }

    /// Whether every breaker of `service` is open, with their names (sorted).
    fn service_down(&self, service: &str) -> Option<Alert> {
        let members = self.services.get(service)?;
        let all_open = members
            .iter()
            .all(|n| self.breakers.get(n).is_some_and(|b| b.open_since.is_some()));
        all_open.then(|| Alert::ServiceDown {
            service: service.to_owned(),
            breakers: members.iter().cloned().collect(),
        })
    }
}

impl Watched {
    /// Forgets transitions older than the flapping window, then adds this
    /// breaker's conditions at `now` to `current`.
    fn conditions(
        &mut self,
        name: &str,
        cfg: &AlertConfig,
        now: Duration,
        current: &mut BTreeMap<Key, Alert>,
    ) {
        while self
            .edges
            .front()
            .is_some_and(|&t| now.saturating_sub(t) >= cfg.flapping_window)
        {
            self.edges.pop_front();
        }
        if let Some(since) = self.open_since {
            let open_for = now.saturating_sub(since);
            if open_for >= cfg.open_longer_than {
                let a = Alert::OpenTooLong {
                    name: name.to_owned(),
                    open_for,
                };
                current.insert(a.key(), a);
            }
        }
        let n = u32::try_from(self.edges.len()).unwrap_or(u32::MAX);
        if n > cfg.flapping_transitions {
            let a = Alert::Flapping {
                name: name.to_owned(),
                transitions: n,
            };
            current.insert(a.key(), a);
        }
    }
}

fn is_open(s: State) -> bool {
    matches!(s, State::Open | State::HalfOpen)
}

impl fmt::Debug for Alerts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Alerts")
            .field("config", &self.inner.config)
            .field("active", &self.active())
            .finish_non_exhaustive()
    }
}

impl Alerts {
    /// Watches with `config`, reading time from `clock` (give it the clock
    /// the breakers use).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::alert::{AlertConfig, Alerts};
    /// let alerts = Alerts::new(AlertConfig::default(), fusebox::MonotonicClock);
    /// assert!(alerts.check().is_empty());
    /// ```
    pub fn new(config: AlertConfig, clock: impl Clock) -> Alerts {
        Alerts {
            inner: Arc::new(AlertsInner {
                config,
                clock: Box::new(clock),
                sink: Mutex::new(None),
                state: Mutex::new(Watch::default()),
            }),
        }
    }

    /// Also delivers every event to `f` as it is raised (from the thread
    /// that made the transition, or the one calling [`Alerts::check`]),
    /// outside the alerts' lock. Replaces an earlier callback; applies to
    /// every clone. Like a [`Listener`], `f` runs on the caller's path: keep
    /// it short and do not panic in it.
    ///
    /// `check` must still be called periodically: open-too-long is noticed
    /// only there (its events then reach `f` too). The events `check` would
    /// return are queued meanwhile, at most [`Alerts::MAX_PENDING`] of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::alert::{AlertConfig, Alerts};
    /// use std::time::Duration;
    ///
    /// let alerts = Alerts::new(AlertConfig::default(), fusebox::MonotonicClock)
    ///     .on_event(|e| eprintln!("{e}"));
    /// // Every few seconds, from a thread of its own: events reach the
    /// // callback, so what `check` returns can be dropped.
    /// let watcher = alerts.clone();
    /// std::thread::spawn(move || loop {
    ///     watcher.check();
    ///     std::thread::sleep(Duration::from_secs(5));
    /// });
    /// ```
    pub fn on_event(self, f: impl Fn(&AlertEvent) + Send + Sync + 'static) -> Alerts {
        *lock(&self.inner.sink) = Some(Arc::new(f));
        self
    }

    /// A listener for a breaker built by hand, named `name`, in `service`
    /// (for [`Alert::ServiceDown`]) if given.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::alert::{AlertConfig, Alerts};
    /// use fusebox::{CircuitBreaker, ManualClock};
    /// let alerts = Alerts::new(AlertConfig::default(), ManualClock::new());
    /// let breaker = CircuitBreaker::builder()
    ///     .listener(alerts.listener("db", Some("orders")))
    ///     .build()?;
    /// # let _ = breaker;
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn listener(&self, name: &str, service: Option<&str>) -> AlertListener {
        lock(&self.inner.state).set_service(name, service);
        AlertListener {
            name: name.into(),
            alerts: self.clone(),
        }
    }

    /// Most events kept for [`check`](Alerts::check): when more are raised
    /// between two calls, the oldest are dropped (and counted in
    /// [`dropped`](Alerts::dropped)), so an `Alerts` nobody checks does not
    /// grow.
    pub const MAX_PENDING: usize = 1024;

    /// Events raised and waiting for [`check`](Alerts::check) (at most
    /// [`MAX_PENDING`](Alerts::MAX_PENDING)).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::alert::{AlertConfig, Alerts};
    /// use fusebox::{CircuitBreaker, ManualClock};
    /// let clock = ManualClock::new();
    /// let config = AlertConfig { flapping_transitions: 1, ..Default::default() };
    /// let alerts = Alerts::new(config, clock.clone());
    /// let db = CircuitBreaker::builder()
    ///     .consecutive_failures(1)
    ///     .clock(clock)
    ///     .listener(alerts.listener("db", None))
    ///     .build()?;
    /// let _ = db.call(|| Err::<(), _>("down"));
    /// db.reset(); // a second edge: flapping
    /// assert_eq!(alerts.pending(), 1);
    /// alerts.check();
    /// assert_eq!(alerts.pending(), 0);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn pending(&self) -> usize {
        lock(&self.inner.state).queue.len()
    }

    /// Events dropped unreturned because more than
    /// [`MAX_PENDING`](Alerts::MAX_PENDING) were waiting for
    /// [`check`](Alerts::check), since this `Alerts` was made. They still
    /// reached the [`on_event`](Alerts::on_event) callback.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::alert::{AlertConfig, Alerts};
    /// let alerts = Alerts::new(AlertConfig::default(), fusebox::ManualClock::new());
    /// assert_eq!(alerts.dropped(), 0);
    /// ```
    pub fn dropped(&self) -> u64 {
        lock(&self.inner.state).dropped
    }

    /// How many items the alerts hold: queued events, kept transition
    /// times, watched breakers and active alerts. For tests of the memory
    /// bound.
    #[doc(hidden)]
    pub fn footprint(&self) -> usize {
        let w = lock(&self.inner.state);
        let edges: usize = w.breakers.values().map(|b| b.edges.len()).sum();
        w.queue.len() + edges + w.breakers.len() + w.active.len()
    }

    /// The alerts active now, sorted by kind and name.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::alert::{AlertConfig, Alerts};
    /// let alerts = Alerts::new(AlertConfig::default(), fusebox::ManualClock::new());
    /// assert!(alerts.active().is_empty());
    /// ```
    pub fn active(&self) -> Vec<Alert> {
        lock(&self.inner.state).active.values().cloned().collect()
    }

    /// Evaluates every condition at the clock's current time and returns the
    /// events raised since the previous call (including those raised by
    /// transitions in between), oldest first: the newest
    /// [`MAX_PENDING`](Alerts::MAX_PENDING) of them if more were raised.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::alert::{AlertConfig, AlertStatus, Alerts};
    /// use fusebox::{CircuitBreaker, ManualClock};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let alerts = Alerts::new(AlertConfig::default(), clock.clone());
    /// let db = CircuitBreaker::builder()
    ///     .consecutive_failures(1)
    ///     .open_for(Duration::from_secs(600))
    ///     .clock(clock.clone())
    ///     .listener(alerts.listener("db", None))
    ///     .build()?;
    /// let _ = db.call(|| Err::<(), _>("down"));
    /// clock.advance(Duration::from_secs(299));
    /// assert!(alerts.check().is_empty());
    /// clock.advance(Duration::from_secs(1));
    /// assert_eq!(alerts.check()[0].status, AlertStatus::Firing);
    /// db.reset();
    /// assert_eq!(alerts.check()[0].status, AlertStatus::Resolved);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    pub fn check(&self) -> Vec<AlertEvent> {
        let now = self.inner.clock.now();
        let (fresh, all) = {
            let mut w = lock(&self.inner.state);
            let fresh = self.evaluate(&mut w, Scope::All, now);
            let all = std::mem::take(&mut w.queue);
            (fresh, all)
        };
        self.deliver(&fresh);
        all.into()
    }

    fn deliver(&self, events: &[AlertEvent]) {
        if events.is_empty() {
            return;
        }
        let sink = lock(&self.inner.sink).clone();
        if let Some(sink) = sink {
            for e in events {
                sink(e);
            }
        }
    }

    /// Recomputes the conditions in `scope` at `now`; queues and returns the
    /// changes.
    fn evaluate(&self, w: &mut Watch, scope: Scope<'_>, now: Duration) -> Vec<AlertEvent> {
        let cfg = &self.inner.config;
        let mut current: BTreeMap<Key, Alert> = BTreeMap::new();
        // The keys looked at: every active one, or this breaker's and its service's.
        let in_scope: Vec<Key> = match scope {
            Scope::All => {
                for (name, b) in w.breakers.iter_mut() {
                    b.conditions(name, cfg, now, &mut current);
                }
                let services: Vec<&String> = w.services.keys().collect();
                let down: Vec<Alert> = services.iter().filter_map(|s| w.service_down(s)).collect();
                for a in down {
                    current.insert(a.key(), a);
                }
                w.active.keys().cloned().collect()
            }
            Scope::Breaker(name) => {
                let b = w.breakers.entry(name.to_owned()).or_default();
                b.conditions(name, cfg, now, &mut current);
                let mut keys = vec![
                    Key::OpenTooLong(name.to_owned()),
                    Key::Flapping(name.to_owned()),
                ];
                if let Some(service) = b.service.clone() {
                    if let Some(a) = w.service_down(&service) {
                        current.insert(a.key(), a);
                    }
                    keys.push(Key::ServiceDown(service));
                }
                keys
            }
        };
        let mut events = Vec::new();
        for (k, a) in &current {
            if !w.active.contains_key(k) {
                events.push(AlertEvent {
                    alert: a.clone(),
                    status: AlertStatus::Firing,
                    at: now,
                });
            }
        }
        let ended: BTreeSet<Key> = in_scope
            .into_iter()
            .filter(|k| !current.contains_key(k))
            .collect();
        for k in ended {
            if let Some(a) = w.active.remove(&k) {
                events.push(AlertEvent {
                    alert: a,
                    status: AlertStatus::Resolved,
                    at: now,
                });
            }
        }
        w.active.extend(current);
        w.enqueue(&events);
        events
    }

    fn on_transition(&self, name: &str, t: &Transition) {
        let now = self.inner.clock.now();
        let keep = usize::try_from(self.inner.config.flapping_transitions)
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        let events = {
            let mut w = lock(&self.inner.state);
            let b = w.breakers.entry(name.to_owned()).or_default();
            if is_open(t.to) {
                if !is_open(t.from) || b.open_since.is_none() {
                    b.open_since = Some(t.at.min(now));
                }
            } else {
                b.open_since = None;
            }
            if t.from == State::Closed || t.to == State::Closed {
                if b.edges.len() >= keep {
                    b.edges.pop_front();
                }
                b.edges.push_back(t.at.min(now));
            }
            self.evaluate(&mut w, Scope::Breaker(name), now)
        };
        self.deliver(&events);
    }
}

/// Feeds one breaker's transitions to an [`Alerts`]; from
/// [`Alerts::listener`].
///
/// # Examples
///
/// ```
/// use fusebox::alert::{AlertConfig, Alerts};
/// let alerts = Alerts::new(AlertConfig::default(), fusebox::ManualClock::new());
/// let listener = alerts.listener("db", None);
/// assert!(format!("{listener:?}").contains("db"));
/// ```
pub struct AlertListener {
    name: Box<str>,
    alerts: Alerts,
}

impl fmt::Debug for AlertListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlertListener")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Listener for AlertListener {
    fn on_transition(&self, t: &Transition) {
        self.alerts.on_transition(&self.name, t);
    }
}

impl Observer for Alerts {
    fn instrument(&self, name: &str, tags: &Tags, builder: Builder) -> Builder {
        let service = tags.get(&self.inner.config.service_tag).map(String::as_str);
        builder.listener(self.listener(name, service))
    }
}

//! The fleet's state machine without I/O: one node's side of one shared
//! breaker, for drivers and simulators (feature `fleet`).
//!
//! [`Fleet`](super::Fleet) drives a [`Node`] per shared breaker against
//! Redis (its scripts, its channel, reconnects); a simulator drives the same
//! [`Node`]s against a store of its own, such as
//! [`MemoryStore`](store::MemoryStore) in virtual time. The rules are the
//! ones of the [module docs](super#rules); this is where they are decided:
//!
//! - inputs ([`Input`]) are what happens: the local breaker's own
//!   transitions, a message heard on the channel, a sync's answer, the
//!   answer to a trip or a close this node told, the link going up or down;
//!   each comes with `now`, the driver's monotonic time (any origin, the
//!   same for every input of one node);
//! - outputs ([`Action`]) are what to do: apply something to the local
//!   breaker ([`Apply`], see [`apply`]), send a sync for this breaker
//!   ([`Request`]), tell the fleet a trip or a close ([`Tell`]), put back a
//!   control state, sync again soon.
//!
//! No clock is read and nothing waits in here: [`Node::handle`] is a pure
//! function of the node's state, `now` and the input. The driver reads the
//! breaker ([`Local::read`]) when an input needs it, and keeps what only it
//! can know (which of its calls a transition came from).
//!
//! **Unstable**: this module is for simulators (the lab's virtual fleet) and
//! may change with any release; a service uses [`Fleet`](super::Fleet).
//!
//! # Examples
//!
//! A trip heard from another node opens the local breaker for the rest of
//! the fleet's open period, and a sync is due when that period ends:
//!
//! ```
//! use fusebox::fleet::protocol::{Action, Apply, Input, Local, Node, Settings};
//! use fusebox::fleet::Kind;
//! use std::time::Duration;
//!
//! let breaker = fusebox::CircuitBreaker::builder().name("db").build()?;
//! let now = Duration::from_secs(10);
//! let mut node = Node::new(Settings::new(Duration::from_secs(1)), now, &Local::read(&breaker), true);
//! let remaining = Duration::from_secs(5);
//! let actions = node.handle(now, Input::Message(Kind::Trip { remaining }));
//! assert!(actions.contains(&Action::Apply(Apply::TripRemote(remaining))));
//! for action in &actions {
//!     if let Action::Apply(a) = action {
//!         fusebox::fleet::protocol::apply(&breaker, a);
//!     }
//! }
//! assert_eq!(breaker.state(), fusebox::State::Open);
//! assert_eq!(node.wake_at(now), Some(now + remaining));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod store;
#[cfg(all(test, not(loom)))]
mod tests;

use super::Kind;
use crate::breaker::ProbeGate;
use crate::{CircuitBreaker, Reason, State};
use std::time::Duration;

/// One node's fleet settings, as the protocol needs them.
///
/// # Default
///
/// As [`FleetBuilder`](super::FleetBuilder): `quorum` 1, `window` 10 s,
/// `lease` 3 x `sync_every`.
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::Settings;
/// use std::time::Duration;
/// let s = Settings::new(Duration::from_millis(500)).quorum(2);
/// assert_eq!(s.lease_for(), Duration::from_millis(1500));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    sync_every: Duration,
    quorum: u32,
    window: Duration,
    lease: Duration,
}

impl Settings {
    /// Syncs every `sync_every`, with the other settings at their defaults.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::fleet::protocol::Settings::new(std::time::Duration::from_secs(1));
    /// assert_eq!(s.quorum_of(), 1);
    /// ```
    pub fn new(sync_every: Duration) -> Settings {
        Settings {
            sync_every,
            quorum: 1,
            window: Duration::from_secs(10),
            lease: sync_every * 3,
        }
    }

    /// Distinct nodes whose trips open the fleet (and whose failures the
    /// fleet's window needs), at least 1.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::fleet::protocol::Settings::new(std::time::Duration::from_secs(1)).quorum(3);
    /// assert_eq!(s.quorum_of(), 3);
    /// ```
    pub fn quorum(mut self, quorum: u32) -> Settings {
        self.quorum = quorum.max(1);
        self
    }

    /// The fleet's window of count-window breakers, and the quorum's.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::fleet::protocol::Settings::new(std::time::Duration::from_secs(1))
    ///     .window(std::time::Duration::from_secs(30));
    /// ```
    pub fn window(mut self, window: Duration) -> Settings {
        self.window = window;
        self
    }

    /// How long a probe lease lasts without renewal.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = fusebox::fleet::protocol::Settings::new(Duration::from_secs(1)).lease(Duration::from_secs(5));
    /// assert_eq!(s.lease_for(), Duration::from_secs(5));
    /// ```
    pub fn lease(mut self, lease: Duration) -> Settings {
        self.lease = lease;
        self
    }

    /// The sync interval.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fusebox::fleet::protocol::Settings::new(Duration::from_secs(2)).sync_every_of(), Duration::from_secs(2));
    /// ```
    pub fn sync_every_of(&self) -> Duration {
        self.sync_every
    }

    /// The quorum.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::fleet::protocol::Settings::new(std::time::Duration::from_secs(1)).quorum_of(), 1);
    /// ```
    pub fn quorum_of(&self) -> u32 {
        self.quorum
    }

    /// The fleet's window (count-window breakers, the quorum).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fusebox::fleet::protocol::Settings::new(Duration::from_secs(1)).window_of(), Duration::from_secs(10));
    /// ```
    pub fn window_of(&self) -> Duration {
        self.window
    }

    /// The probe lease.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fusebox::fleet::protocol::Settings::new(Duration::from_secs(1)).lease_for(), Duration::from_secs(3));
    /// ```
    pub fn lease_for(&self) -> Duration {
        self.lease
    }
}

/// Closed-state verdicts: calls, failures, slow calls (cumulative in a
/// [`Local`], a delta in a [`Request`], the fleet window's totals in an
/// [`Answer`]).
///
/// # Examples
///
/// ```
/// let c = fusebox::fleet::protocol::Counts { calls: 10, failures: 4, slow: 0 };
/// assert_eq!(c.calls - c.failures, 6);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Calls with a verdict.
    pub calls: u64,
    /// Of which failed.
    pub failures: u64,
    /// Of which slow.
    pub slow: u64,
}

impl Counts {
    fn since(self, earlier: Counts) -> Counts {
        Counts {
            calls: self.calls.saturating_sub(earlier.calls),
            failures: self.failures.saturating_sub(earlier.failures),
            slow: self.slow.saturating_sub(earlier.slow),
        }
    }
}

/// The local breaker as read now, without stepping it (the lazy
/// Open -> HalfOpen step is a call's to take, not the fleet's).
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::Local;
/// let b = fusebox::CircuitBreaker::builder().failure_rate(0.5).build()?;
/// let local = Local::read(&b);
/// assert_eq!(local.state, fusebox::State::Closed);
/// assert!(local.window.is_some(), "a rate breaker uses the fleet's window");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Local {
    /// Its state.
    pub state: State,
    /// Its generation (bumped by every transition).
    pub generation: u64,
    /// Time left in its open period if open (zero once over).
    pub open_left: Option<Duration>,
    /// Calls that found it open or half-open so far (a counter that only
    /// grows, but for a reset).
    pub asks: u64,
    /// Probe permits dropped without a verdict so far.
    pub drops: u64,
    /// Closed-state verdicts counted for the fleet's window so far.
    pub tally: Counts,
    /// Half-open probes admitted and not finished.
    pub probes_in_flight: u32,
    /// The span of its fleet window if it trips on a rate (`failure_rate`,
    /// `slow_calls`): its `time_window`, `None` for a count window (the
    /// fleet's [`window`](Settings::window) then); `None` outside.
    pub window: Option<Option<Duration>>,
}

impl Local {
    /// Reads `breaker` (starting its tally if it trips on a rate, so that a
    /// reconfigure that added a rate is counted from now).
    ///
    /// # Examples
    ///
    /// ```
    /// let b = fusebox::CircuitBreaker::builder().build()?;
    /// assert_eq!(fusebox::fleet::protocol::Local::read(&b).window, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read(breaker: &CircuitBreaker) -> Local {
        let c = breaker.config();
        let window = (c.failure_rate.is_some() || c.slow_call_rate.is_some()).then(|| {
            breaker.enable_tally();
            c.time_window
        });
        let (state, generation) = breaker.peek();
        let (asks, drops) = breaker.demand();
        let t = breaker.tally();
        Local {
            state,
            generation,
            open_left: breaker.open_left(),
            asks,
            drops,
            tally: Counts {
                calls: t.calls,
                failures: t.failures,
                slow: t.slow,
            },
            probes_in_flight: breaker.probes_in_flight(),
            window,
        }
    }

    /// A closed breaker at generation 0 with nothing counted (for tests and
    /// simulators that model a breaker of their own).
    ///
    /// # Examples
    ///
    /// ```
    /// let l = fusebox::fleet::protocol::Local::closed();
    /// assert_eq!(l.state, fusebox::State::Closed);
    /// ```
    pub fn closed() -> Local {
        Local {
            state: State::Closed,
            generation: 0,
            open_left: None,
            asks: 0,
            drops: 0,
            tally: Counts::default(),
            probes_in_flight: 0,
            window: None,
        }
    }
}

/// Who admits the local breaker's half-open probes.
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::Gate;
/// assert_ne!(Gate::Allow, Gate::Deny);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The breaker decides alone (no fleet: disconnected).
    Local,
    /// This node holds the probe lease: probes as usual.
    Allow,
    /// Another node probes: half-open calls are rejected.
    Deny,
}

/// Something to do to the local breaker; [`apply`] does it to a
/// [`CircuitBreaker`].
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::{apply, Apply};
/// let b = fusebox::CircuitBreaker::builder().build()?;
/// apply(&b, &Apply::TripRemote(std::time::Duration::from_secs(1)));
/// assert_eq!(b.state(), fusebox::State::Open);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Apply {
    /// Open for the rest of the fleet's open period (from Closed or
    /// HalfOpen; a longer open period is kept; zero: half-open at the next
    /// call).
    TripRemote(Duration),
    /// Open or HalfOpen -> Closed: the fleet's probe closed it.
    CloseRemote,
    /// Forced open, disabled (unless already so), or closed with empty
    /// counters: the fleet's control.
    Control(State),
    /// Who admits half-open probes.
    Gate(Gate),
    /// Apply the breaker's rate policy to the fleet window's totals (it may
    /// trip: that transition is the fleet window's, see
    /// [`Input::Transition`]).
    Judge(Counts),
}

/// Applies `what` to `breaker` (its transitions have [`Reason::Remote`],
/// but a trip of [`Apply::Judge`], which is the breaker's own policy).
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::{apply, Apply};
/// let b = fusebox::CircuitBreaker::builder().build()?;
/// apply(&b, &Apply::Control(fusebox::State::ForcedOpen));
/// assert_eq!(b.state(), fusebox::State::ForcedOpen);
/// apply(&b, &Apply::Control(fusebox::State::Closed));
/// assert_eq!(b.state(), fusebox::State::Closed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn apply(breaker: &CircuitBreaker, what: &Apply) {
    match *what {
        Apply::TripRemote(d) => breaker.trip_remote(d),
        Apply::CloseRemote => breaker.close_remote(),
        Apply::Control(to) => {
            if to == State::Closed || breaker.peek().0 != to {
                breaker.set_remote(to);
            }
        }
        Apply::Gate(g) => breaker.set_probe_gate(match g {
            Gate::Local => ProbeGate::Local,
            Gate::Allow => ProbeGate::Allow,
            Gate::Deny => ProbeGate::Deny,
        }),
        Apply::Judge(t) => {
            breaker.judge_fleet(t.calls, t.failures, t.slow);
        }
    }
}

/// Hands `breaker` to a fleet that syncs every `sync_every`: a half-open
/// call the gate denies is told to come back then. (The driver also feeds
/// the breaker's transitions to the node, and sets the first gate.)
///
/// # Examples
///
/// ```
/// let b = fusebox::CircuitBreaker::builder().build()?;
/// fusebox::fleet::protocol::attach(&b, std::time::Duration::from_millis(200));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn attach(breaker: &CircuitBreaker, sync_every: Duration) {
    if breaker.config().failure_rate.is_some() || breaker.config().slow_call_rate.is_some() {
        breaker.enable_tally();
    }
    breaker.set_deny_retry(sync_every);
}

/// Gives `breaker` back to itself: probes decided locally again.
///
/// # Examples
///
/// ```
/// let b = fusebox::CircuitBreaker::builder().build()?;
/// fusebox::fleet::protocol::detach(&b);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn detach(breaker: &CircuitBreaker) {
    breaker.set_probe_gate(ProbeGate::Local);
}

/// What to do with the probe lease at a sync.
///
/// # Examples
///
/// ```
/// assert_eq!(fusebox::fleet::protocol::LeaseOp::Acquire as u8, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseOp {
    /// Nothing.
    None = 0,
    /// Take it if nobody holds it and the fleet's open period is over or
    /// ends within the request's `ahead`.
    Acquire = 1,
    /// Keep it (if held).
    Renew = 2,
    /// Give it back (if held).
    Release = 3,
}

/// This breaker's part of a sync, made by [`Input::Sync`]: hand it to the
/// store, and its answer back with [`Input::Synced`].
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::{Action, Input, Local, LeaseOp, Node, Settings};
/// use std::time::Duration;
/// let mut node = Node::new(Settings::new(Duration::from_secs(1)), Duration::ZERO, &Local::closed(), true);
/// let [Action::Sync(request)] = &node.handle(Duration::ZERO, Input::Sync(Local::closed()))[..] else { panic!() };
/// assert_eq!(request.lease, LeaseOp::None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// Verdicts for the fleet's window since the last sync.
    pub delta: Counts,
    /// The fleet window's span and bucket, if the breaker has one.
    pub window: Option<(Duration, Duration)>,
    /// What to do with the probe lease.
    pub lease: LeaseOp,
    /// How long before the fleet's open period ends an `Acquire` may take
    /// the lease ([`Node::lease_ahead`]).
    pub ahead: Duration,
    /// The tally read for this sync (sent once answered).
    tally: Counts,
    /// Messages heard when this was made.
    heard: u64,
    /// The generation if the breaker was closed, with no close of its
    /// own to tell.
    closed: Option<u64>,
    /// When it was made (its answer's arrival gives the round trip).
    made_at: Duration,
}

/// What a sync read from the store for one breaker.
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::Answer;
/// let a = Answer::default();
/// assert_eq!(a.open, None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// The fleet window's totals.
    pub totals: Counts,
    /// Distinct nodes that reported failures or slow calls in it.
    pub failing_nodes: u64,
    /// The fleet's open period: `None` if closed, `Some(ZERO)` once over but
    /// not closed since (half-open), else the rest of it.
    pub open: Option<Duration>,
    /// A control state in force (forced open, disabled).
    pub control: Option<State>,
    /// Whether this node holds the probe lease (after the request's lease
    /// operation).
    pub lease: bool,
    /// The fleet's trip epoch (`None`: not tripped).
    pub epoch: Option<u64>,
}

/// A trip or a close to tell the fleet, made by [`Input::Flush`]. The
/// driver tells the trip if the breaker is still open with time left
/// (answer: [`Input::Tripped`]), then the close if the breaker is still
/// closed ([`Input::Closed`]); if the store cannot be reached, it hands the
/// whole tell back ([`Input::Untold`]).
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::{Action, Input, Local, Node, Settings};
/// use fusebox::State;
/// use std::time::Duration;
/// let mut node = Node::new(Settings::new(Duration::from_secs(1)), Duration::ZERO, &Local::closed(), true);
/// let t = fusebox::fleet::protocol::Transition { from: State::Closed, to: State::Open, reason: fusebox::Reason::ConsecutiveFailures { count: 5 }, judged: false };
/// node.handle(Duration::ZERO, Input::Transition(t));
/// let [Action::Tell(tell)] = &node.handle(Duration::ZERO, Input::Flush)[..] else { panic!() };
/// assert_eq!(tell.trip.map(|t| t.quorum), Some(1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tell {
    /// A trip of this node's to tell.
    pub trip: Option<TripTell>,
    /// A close of this node's probe to tell, under this trip epoch (`None`:
    /// the node knew of none).
    pub close: Option<Option<u64>>,
    /// Sync this breaker once told (it went half-open here: ask for the
    /// lease; or it joined while the store was away).
    pub join: bool,
    pending: Pending,
}

/// How to tell a trip.
///
/// # Examples
///
/// ```
/// let t = fusebox::fleet::protocol::TripTell { quorum: 2, probed: None };
/// assert_eq!(t.quorum, 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TripTell {
    /// Distinct nodes needed (1: the fleet opens now).
    pub quorum: u32,
    /// A failed probe's trip epoch: if it is the fleet's current one, the
    /// quorum does not apply.
    pub probed: Option<u64>,
}

/// One transition of the local breaker.
///
/// # Examples
///
/// ```
/// use fusebox::{Reason, State};
/// let t = fusebox::fleet::protocol::Transition { from: State::Closed, to: State::Open, reason: Reason::ConsecutiveFailures { count: 5 }, judged: false };
/// assert_eq!(t.to, State::Open);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    /// From.
    pub from: State,
    /// To.
    pub to: State,
    /// Why (the fleet's own, [`Reason::Remote`], and local manual ones are
    /// not told).
    pub reason: Reason,
    /// Raised by the driver's [`Apply::Judge`]: the fleet window's trip.
    pub judged: bool,
}

/// What happens to one node's shared breaker; see [`Node::handle`].
///
/// # Examples
///
/// ```
/// let input = fusebox::fleet::protocol::Input::Connected(false);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The store answers (a sync went through) or not.
    Connected(bool),
    /// The local breaker's own transition.
    Transition(Transition),
    /// A message of another node, or this node's own control call once the
    /// store took it.
    Message(Kind),
    /// Time for a sync of this breaker, read now: answers [`Action::Sync`].
    Sync(Local),
    /// The store's answer to `request`, with the breaker read again.
    Synced {
        /// The request answered.
        request: Request,
        /// What the store holds.
        answer: Answer,
        /// The breaker now.
        local: Local,
    },
    /// The store lost every key (a restart, a flush): what the sync read
    /// is no state. Answers what this node knows to put back.
    KeysLost(Request),
    /// Tell what transitions left pending: answers [`Action::Tell`] if any.
    Flush,
    /// The store took (or not: below quorum, under control) a trip for
    /// `remaining`; `opened`: the fleet's breaker is open now.
    Tripped {
        /// What was told.
        remaining: Duration,
        /// The fleet is open.
        opened: bool,
        /// A trip put back after lost keys, not a tell.
        republished: bool,
    },
    /// The store took the close (or refused it: the fleet tripped again,
    /// or is open or under control).
    Closed {
        /// Taken.
        taken: bool,
    },
    /// A tell did not reach the store: pending again.
    Untold(Tell),
    /// Read the fleet's state at the next chance (joined while the store
    /// was away, or a join sync failed).
    JoinLater,
}

/// What the driver does; see [`Node::handle`].
///
/// # Examples
///
/// ```
/// use fusebox::fleet::protocol::{Action, Apply, Gate};
/// let a = Action::Apply(Apply::Gate(Gate::Local));
/// assert!(matches!(a, Action::Apply(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Apply this to the local breaker, in order.
    Apply(Apply),
    /// Send this breaker's part of a sync.
    Sync(Request),
    /// Tell the fleet this.
    Tell(Tell),
    /// Put back this control state (the store lost it).
    Control(Kind),
    /// Put back the fleet's open period (the store lost it): a trip for
    /// this long, quorum 1, answered with [`Input::Tripped`] (`republished`).
    Republish(Duration),
    /// Something is pending to tell: [`Input::Flush`] soon.
    Flush,
    /// Sync this breaker soon (its state may not be the fleet's).
    Join,
    /// A fleet open period to wait for ended later than known: see
    /// [`Node::wake_at`].
    Wake,
}

/// What transitions left to tell. Flags, merged: however many transitions
/// happen while the store is away, this stays a few booleans.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Pending {
    /// The breaker opened here: publish its open period.
    trip: bool,
    /// The trip was the fleet window's decision: no quorum.
    bypass_quorum: bool,
    /// The trip was a failed probe.
    probe_failed: bool,
    /// A probe here closed the breaker: close the fleet's.
    close: bool,
    /// The breaker went half-open here: ask for the lease now.
    lease: bool,
    /// Read the fleet's state for this breaker.
    join: bool,
}

impl Pending {
    fn merge(&mut self, o: Pending) {
        self.trip |= o.trip;
        self.bypass_quorum |= o.bypass_quorum;
        self.probe_failed |= o.probe_failed;
        self.close |= o.close;
        self.lease |= o.lease;
        self.join |= o.join;
    }

    fn is_empty(&self) -> bool {
        *self == Pending::default()
    }
}

/// One node's side of one shared breaker: the fleet's state machine.
///
/// # Memory
///
/// A fixed size whatever happens: pending tells are flags, verdicts a
/// running total.
///
/// # Examples
///
/// See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Node {
    settings: Settings,
    connected: bool,
    pending: Pending,
    /// The tally last sent to the fleet's window, and when.
    sent: Counts,
    sent_at: Duration,
    /// Since when this node holds the probe lease.
    lease_since: Option<Duration>,
    /// The breaker's demand counters as the last sync read them.
    asks_seen: u64,
    drops_seen: u64,
    /// When a sync last found new demand (calls that found the breaker
    /// open or half-open).
    demand_at: Option<Duration>,
    /// A control state applied from the fleet.
    remote_ctl: Option<State>,
    /// Until when the fleet's breaker is open as this node last learnt it.
    /// Stays set after that time until the fleet's breaker closes or is
    /// reset: while set, this node's probes are the fleet's.
    fleet_open_until: Option<Duration>,
    /// The fleet's trip epoch as last read.
    known_epoch: Option<u64>,
    /// The epoch known when this node's probe last closed or reopened.
    verdict_epoch: Option<u64>,
    /// Messages applied: a sync made before one does not apply its answer.
    heard: u64,
    /// The sync's round trip as last seen: the largest recent one, decaying
    /// by an eighth per sync.
    round_trip: Duration,
    /// The breaker is open (or half-open) on its own: its trip did not open
    /// the fleet (below the quorum). It probes on its own schedule (gate
    /// `Local`), asks for no lease, tells no close, and a fleet close
    /// leaves it be.
    alone: bool,
}

impl Node {
    /// A node for a breaker read as `local` at `now`, connected or not.
    /// Its first gate is [`Node::gate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Gate, Local, Node, Settings};
    /// use std::time::Duration;
    /// let node = Node::new(Settings::new(Duration::from_secs(1)), Duration::ZERO, &Local::closed(), false);
    /// assert_eq!(node.gate(), Gate::Local);
    /// ```
    pub fn new(settings: Settings, now: Duration, local: &Local, connected: bool) -> Node {
        Node {
            settings,
            connected,
            pending: Pending::default(),
            sent: local.tally,
            sent_at: now,
            lease_since: None,
            asks_seen: local.asks,
            drops_seen: local.drops,
            demand_at: None,
            remote_ctl: None,
            fleet_open_until: None,
            known_epoch: None,
            verdict_epoch: None,
            heard: 0,
            round_trip: Duration::ZERO,
            alone: false,
        }
    }

    /// The settings.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Local, Node, Settings};
    /// let s = Settings::new(std::time::Duration::from_secs(1));
    /// assert_eq!(*Node::new(s, Default::default(), &Local::closed(), true).settings(), s);
    /// ```
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How long before the fleet's open period ends this node may take the
    /// probe lease: one sync interval (the sync before the period ends),
    /// plus the sync's round trip as recently seen (at most one more
    /// interval), so that the lease is held when the period ends even when
    /// that sync falls just before the end.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Local, Node, Settings};
    /// use std::time::Duration;
    /// let node = Node::new(Settings::new(Duration::from_millis(100)), Duration::ZERO, &Local::closed(), true);
    /// assert_eq!(node.lease_ahead(), Duration::from_millis(100));
    /// ```
    pub fn lease_ahead(&self) -> Duration {
        self.settings.sync_every + self.round_trip.min(self.settings.sync_every)
    }

    /// The gate the local breaker should have: the lease holder probes,
    /// the others reject; a disconnected node decides alone.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Gate, Local, Node, Settings};
    /// let node = Node::new(Settings::new(std::time::Duration::from_secs(1)), Default::default(), &Local::closed(), true);
    /// assert_eq!(node.gate(), Gate::Deny);
    /// ```
    pub fn gate(&self) -> Gate {
        match (self.connected && !self.alone, self.lease_since.is_some()) {
            (false, _) => Gate::Local,
            (true, true) => Gate::Allow,
            (true, false) => Gate::Deny,
        }
    }

    /// Whether the breaker is open or half-open on its own: its trip did
    /// not open the fleet (below the quorum), so it probes on its own and
    /// only its own probe closes it.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Local, Node, Settings};
    /// let node = Node::new(Settings::new(std::time::Duration::from_secs(1)), Default::default(), &Local::closed(), true);
    /// assert!(!node.is_alone());
    /// ```
    pub fn is_alone(&self) -> bool {
        self.alone
    }

    /// Whether this node holds the probe lease, as it knows.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Local, Node, Settings};
    /// let node = Node::new(Settings::new(std::time::Duration::from_secs(1)), Default::default(), &Local::closed(), true);
    /// assert!(!node.holds_lease());
    /// ```
    pub fn holds_lease(&self) -> bool {
        self.lease_since.is_some()
    }

    /// When this node should sync next for this breaker, beyond its
    /// `sync_every`: the end of a fleet open period it knows of, if still
    /// to come after `now` (so that a node with calls takes the probe lease
    /// for its first half-open call).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Local, Node, Settings};
    /// let node = Node::new(Settings::new(std::time::Duration::from_secs(1)), Default::default(), &Local::closed(), true);
    /// assert_eq!(node.wake_at(Default::default()), None);
    /// ```
    pub fn wake_at(&self, now: Duration) -> Option<Duration> {
        self.fleet_open_until.filter(|&end| end > now)
    }

    /// The rest of the fleet's open period as this node knows it.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Local, Node, Settings};
    /// let node = Node::new(Settings::new(std::time::Duration::from_secs(1)), Default::default(), &Local::closed(), true);
    /// assert_eq!(node.fleet_open_remaining(Default::default()), None);
    /// ```
    pub fn fleet_open_remaining(&self, now: Duration) -> Option<Duration> {
        self.fleet_open_until
            .and_then(|until| until.checked_sub(now))
            .filter(|d| !d.is_zero())
    }

    /// The fleet's state of this breaker as this node last learnt it, and
    /// what remains of the fleet's open period (`Open` only).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Local, Node, Settings};
    /// let node = Node::new(Settings::new(std::time::Duration::from_secs(1)), Default::default(), &Local::closed(), true);
    /// assert_eq!(node.fleet_state(Default::default()), (fusebox::State::Closed, None));
    /// ```
    pub fn fleet_state(&self, now: Duration) -> (State, Option<Duration>) {
        let remaining = self.fleet_open_until.map(|until| until.saturating_sub(now));
        let state = match (self.remote_ctl, remaining) {
            (Some(control), _) => control,
            (None, Some(left)) if !left.is_zero() => State::Open,
            (None, Some(_)) => State::HalfOpen,
            (None, None) => State::Closed,
        };
        (state, remaining.filter(|_| state == State::Open))
    }

    /// Whether a close of this node's probe waits to be told.
    fn closing(&self) -> bool {
        self.pending.close
    }

    /// The generation if the breaker is closed and no close of this node's
    /// waits to be told: a closed state the fleet need not hear of.
    fn settled_closed(&self, local: &Local) -> Option<u64> {
        (local.state == State::Closed && !self.closing()).then_some(local.generation)
    }

    fn gate_action(&self) -> Action {
        Action::Apply(Apply::Gate(self.gate()))
    }

    /// The fleet's open period, as learnt `now`.
    fn fleet_open_for(&mut self, now: Duration, remaining: Duration) {
        let until = now + remaining;
        self.fleet_open_until = Some(self.fleet_open_until.map_or(until, |u| u.max(until)));
        self.lease_since = None;
        self.alone = false;
    }

    /// The fleet's breaker closed (or was reset): no trip to know of.
    fn fleet_closed(&mut self) {
        self.fleet_open_until = None;
        self.lease_since = None;
        self.known_epoch = None;
    }

    /// Records the request's tally as sent to the fleet's window.
    fn sent(&mut self, now: Duration, r: &Request) {
        if r.window.is_some() {
            self.sent = r.tally;
            self.sent_at = now;
        }
    }

    /// Handles one input at `now`; returns what to do, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::protocol::{Action, Apply, Gate, Input, Local, Node, Settings};
    /// use std::time::Duration;
    /// let mut node = Node::new(Settings::new(Duration::from_secs(1)), Duration::ZERO, &Local::closed(), true);
    /// assert_eq!(node.handle(Duration::ZERO, Input::Connected(false)), [Action::Apply(Apply::Gate(Gate::Local))]);
    /// ```
    pub fn handle(&mut self, now: Duration, input: Input) -> Vec<Action> {
        match input {
            Input::Connected(up) => self.connected(up),
            Input::Transition(t) => self.transition(t),
            Input::Message(kind) => self.message(now, kind),
            Input::Sync(local) => vec![Action::Sync(self.request(now, &local))],
            Input::Synced {
                request,
                answer,
                local,
            } => self.synced(now, &request, &answer, &local),
            Input::KeysLost(request) => {
                self.sent(now, &request);
                self.republish(now)
            }
            Input::Flush => self.flush(),
            Input::Tripped {
                remaining,
                opened,
                republished,
            } => {
                if opened {
                    self.fleet_open_for(now, remaining);
                } else if self.fleet_open_until.is_none() && !republished {
                    // Below the quorum: this breaker is open on its own.
                    self.alone = true;
                    self.lease_since = None;
                }
                if republished {
                    Vec::new()
                } else {
                    vec![self.gate_action()]
                }
            }
            Input::Closed { taken } => {
                if taken {
                    self.fleet_closed();
                }
                let mut out = vec![self.gate_action()];
                if !taken {
                    out.push(Action::Join);
                }
                out
            }
            Input::Untold(tell) => {
                self.pending.merge(tell.pending);
                Vec::new()
            }
            Input::JoinLater => {
                self.pending.join = true;
                vec![Action::Flush]
            }
        }
    }

    fn connected(&mut self, up: bool) -> Vec<Action> {
        if self.connected == up {
            return Vec::new();
        }
        self.connected = up;
        if !up {
            self.lease_since = None;
        }
        vec![self.gate_action()]
    }

    /// The breaker's own transition: what it leaves to tell.
    fn transition(&mut self, t: Transition) -> Vec<Action> {
        // What came from the fleet is not echoed back; a local manual
        // change stays local (`Fleet::force_open` is the fleet's).
        if matches!(t.reason, Reason::Remote | Reason::Manual) {
            return Vec::new();
        }
        if t.from == State::HalfOpen && matches!(t.to, State::Open | State::Closed) {
            self.verdict_epoch = self.known_epoch;
        }
        if self.alone {
            match t.to {
                // Its own probe closed it: nothing to tell the fleet, whose
                // breaker it never opened.
                State::Closed => {
                    self.alone = false;
                    return vec![self.gate_action()];
                }
                // Half-open on its own schedule: no lease to ask for.
                State::HalfOpen => return Vec::new(),
                _ => {}
            }
        }
        let p = match (t.from, t.to) {
            (from, State::Open) => Pending {
                trip: true,
                bypass_quorum: t.judged,
                probe_failed: from == State::HalfOpen,
                ..Pending::default()
            },
            (State::HalfOpen, State::Closed) => Pending {
                close: true,
                ..Pending::default()
            },
            // Half-open on a call's admission: if the call was denied, ask
            // for the lease now (one round trip) rather than at the next sync.
            (_, State::HalfOpen) => Pending {
                lease: true,
                ..Pending::default()
            },
            _ => return Vec::new(),
        };
        self.pending.merge(p);
        vec![Action::Flush]
    }

    /// A message (another node's, or this node's control once taken).
    fn message(&mut self, now: Duration, kind: Kind) -> Vec<Action> {
        self.heard += 1;
        let mut out = Vec::with_capacity(3);
        match kind {
            Kind::Trip { remaining } => {
                self.fleet_open_for(now, remaining);
                out.push(Action::Apply(Apply::TripRemote(remaining)));
                out.push(Action::Wake);
            }
            Kind::Close => {
                self.fleet_closed();
                // A breaker open on its own stays so: only its probe closes it.
                if !self.alone {
                    out.push(Action::Apply(Apply::CloseRemote));
                }
            }
            Kind::ForceOpen | Kind::Disable => {
                let state = if kind == Kind::Disable {
                    State::Disabled
                } else {
                    State::ForcedOpen
                };
                self.remote_ctl = Some(state);
                self.lease_since = None;
                self.alone = false;
                out.push(Action::Apply(Apply::Control(state)));
            }
            Kind::Reset => {
                self.remote_ctl = None;
                self.alone = false;
                self.fleet_closed();
                out.push(Action::Apply(Apply::Control(State::Closed)));
            }
        }
        out.push(self.gate_action());
        out
    }

    /// This breaker's part of a sync: the verdicts since the last one sent
    /// (merged, whatever time passed, unless older than the window) and
    /// what to do with the probe lease.
    fn request(&mut self, now: Duration, local: &Local) -> Request {
        let window = local.window.map(|span| {
            let span = ms(span.unwrap_or(self.settings.window));
            (
                Duration::from_millis(span),
                Duration::from_millis((span / 10).max(1)),
            )
        });
        let closed = self.settled_closed(local);
        // Open, and the period ends before the next sync (and its round
        // trip): the lease may be taken ahead, so that the first half-open
        // call here probes.
        let ahead = self.lease_ahead();
        let wants = !self.alone
            && match local.state {
                State::HalfOpen => true,
                State::Open => local.open_left.is_some_and(|left| left <= ahead),
                _ => false,
            };
        if let Some((span, _)) = window {
            if now.saturating_sub(self.sent_at) > span {
                // Verdicts from before the fleet's window: judged locally
                // already, too old for the fleet's.
                self.sent = local.tally;
                self.sent_at = now;
            }
        }
        let delta = local.tally.since(self.sent);
        // Demand: calls here since the last sync that found the breaker
        // open or half-open (rejected, or admitted as probes).
        let asked = local.asks != self.asks_seen;
        let dropped = local.drops != self.drops_seen;
        self.asks_seen = local.asks;
        self.drops_seen = local.drops;
        if asked {
            self.demand_at = Some(now);
        }
        let lease = match self.lease_since {
            // Open on its own: a lease the store may still hold for it (taken
            // before its trip) goes back.
            _ if self.alone => LeaseOp::Release,
            Some(_) if !matches!(local.state, State::Open | State::HalfOpen) => LeaseOp::Release,
            // No probe running, and a permit dropped without a verdict, or
            // no call here for a lease's life: let another node with calls
            // probe.
            Some(_)
                if local.probes_in_flight == 0
                    && (dropped
                        || self
                            .demand_at
                            .is_none_or(|at| now.saturating_sub(at) >= self.settings.lease)) =>
            {
                LeaseOp::Release
            }
            Some(_) => LeaseOp::Renew,
            None if wants && asked => LeaseOp::Acquire,
            None => LeaseOp::None,
        };
        Request {
            delta,
            window,
            lease,
            ahead,
            tally: local.tally,
            heard: self.heard,
            closed,
            made_at: now,
        }
    }

    /// Applies what a sync read.
    fn synced(&mut self, now: Duration, r: &Request, a: &Answer, local: &Local) -> Vec<Action> {
        // An answer: the store is there.
        self.connected = true;
        let took = now.saturating_sub(r.made_at);
        self.round_trip = took.max(self.round_trip - self.round_trip / 8);
        self.sent(now, r);
        if self.heard != r.heard {
            return Vec::new(); // a message arrived after this was read: it is newer
        }
        let mut out = Vec::new();
        if let Some(ctl) = a.control {
            self.remote_ctl = Some(ctl);
            self.lease_since = None;
            self.alone = false;
            out.push(Action::Apply(Apply::Control(ctl)));
            out.push(self.gate_action());
            return out;
        }
        if let Some(ctl) = self.remote_ctl.take() {
            // A reset this node missed.
            if local.state == ctl {
                out.push(Action::Apply(Apply::Control(State::Closed)));
            }
        }
        self.known_epoch = a.epoch;
        match a.open {
            Some(remaining) if !remaining.is_zero() => {
                self.fleet_open_for(now, remaining);
                out.push(Action::Apply(Apply::TripRemote(remaining)));
            }
            Some(_) if r.closed.is_some() && self.settled_closed(local) == r.closed => {
                // The fleet's breaker is half-open (its open period is over,
                // no probe closed it yet) and this one is closed without
                // having closed it itself: it joined late, or missed the
                // trip, or its close came too late. Half-open here too, so
                // that it rejects until the prober's verdict travels (or
                // takes the lease if the prober's expires).
                self.fleet_open_for(now, Duration::ZERO);
                out.push(Action::Apply(Apply::TripRemote(Duration::ZERO)));
            }
            None if self.fleet_open_until.is_some() && !self.pending.trip => {
                // The store holds no trip: the fleet's breaker is closed,
                // whatever a message said (a close this node missed, or a
                // forged or replayed trip). The store is the truth; a trip
                // of this node's own still to tell is not undone.
                self.fleet_closed();
                out.push(Action::Apply(Apply::CloseRemote));
            }
            _ => {}
        }
        self.lease_since = if a.lease && !self.alone {
            Some(self.lease_since.unwrap_or(now))
        } else {
            None
        };
        out.push(self.gate_action());
        if r.window.is_some() && u64::from(self.settings.quorum) <= a.failing_nodes.max(1) {
            out.push(Action::Apply(Apply::Judge(a.totals)));
        }
        out
    }

    /// The store lost its keys: what this node knows to put back.
    fn republish(&mut self, now: Duration) -> Vec<Action> {
        if let Some(ctl) = self.remote_ctl {
            let kind = if ctl == State::Disabled {
                Kind::Disable
            } else {
                Kind::ForceOpen
            };
            vec![Action::Control(kind)]
        } else if let Some(remaining) = self.fleet_open_remaining(now) {
            vec![Action::Republish(remaining)]
        } else {
            Vec::new()
        }
    }

    /// What is pending, as one tell.
    fn flush(&mut self) -> Vec<Action> {
        let p = std::mem::take(&mut self.pending);
        if p.is_empty() {
            return Vec::new();
        }
        let quorum = if p.bypass_quorum {
            1
        } else {
            self.settings.quorum
        };
        vec![Action::Tell(Tell {
            trip: p.trip.then_some(TripTell {
                quorum,
                probed: if p.probe_failed {
                    self.verdict_epoch
                } else {
                    None
                },
            }),
            close: p.close.then_some(self.verdict_epoch),
            join: p.lease || p.join,
            pending: p,
        })]
    }
}

/// Whole milliseconds, at least 1 (what the store's scripts count in).
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

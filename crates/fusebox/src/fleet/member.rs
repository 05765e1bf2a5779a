//! One shared breaker on this node: its keys, what its transitions left to
//! tell the fleet (merged flags, never a queue), and its sync bookkeeping.

use super::Shared;
use crate::breaker::{ProbeGate, Tally};
use crate::sync::{lock, Mutex};
use crate::{CircuitBreaker, Listener, Reason, State, Transition};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The Redis keys of one breaker in one namespace. The `{namespace}` hash
/// tag keeps a namespace's keys in one slot.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    pub(crate) open: String,
    pub(crate) ctl: String,
    pub(crate) win: String,
    pub(crate) probe: String,
    pub(crate) trips: String,
    pub(crate) tripped: String,
}

impl Keys {
    pub(crate) fn new(namespace: &str, name: &str) -> Keys {
        let key = |what: &str| format!("fusebox:{{{namespace}}}:{what}:{name}");
        Keys {
            open: key("open"),
            ctl: key("ctl"),
            win: key("win"),
            probe: key("probe"),
            trips: key("trips"),
            tripped: key("tripped"),
        }
    }
}

/// What a transition left to tell the fleet. Flags, merged: however many
/// transitions happen while Redis is away, this stays three booleans.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The breaker opened here: publish its open period.
    pub(crate) trip: bool,
    /// The trip was the fleet's window's decision: it does not wait for
    /// the quorum.
    pub(crate) bypass_quorum: bool,
    /// The trip was a failed probe: if it probed for the fleet (the fleet's
    /// breaker is still half-open in the trip epoch the probe ran under),
    /// the fleet reopens without waiting for the quorum.
    pub(crate) probe_failed: bool,
    /// A probe here closed the breaker: close the fleet's.
    pub(crate) close: bool,
    /// The breaker went half-open here: try for the probe lease now.
    pub(crate) lease: bool,
    /// Read the fleet's state for this breaker (it joined while the sync
    /// task was busy or Redis was away).
    pub(crate) join: bool,
}

impl Pending {
    fn merge(&mut self, other: Pending) {
        self.trip |= other.trip;
        self.bypass_quorum |= other.bypass_quorum;
        self.probe_failed |= other.probe_failed;
        self.close |= other.close;
        self.lease |= other.lease;
        self.join |= other.join;
    }
}

/// Sync bookkeeping, touched by the fleet's tasks only.
#[derive(Debug)]
pub(crate) struct Book {
    /// The tally last sent to the fleet's window.
    pub(crate) sent: Tally,
    /// When it was sent (a delta older than the window is dropped, not sent).
    pub(crate) sent_at: Instant,
    /// Since when this node holds the probe lease.
    pub(crate) lease_since: Option<Instant>,
    /// The breaker's demand counters as the last sync read them (see
    /// `CircuitBreaker::demand`).
    pub(crate) asks_seen: u64,
    pub(crate) dropped_seen: u64,
    /// When a sync last found new half-open demand on this node.
    pub(crate) demand_at: Option<Instant>,
    /// A control state (forced open, disabled) applied from the fleet.
    pub(crate) remote_ctl: Option<State>,
    /// Until when the fleet's breaker is open, as this node last learnt it
    /// (its own monotonic clock: republished after a Redis restart). Stays
    /// set after that time until the fleet's breaker closes or is reset:
    /// while set, this node's probes are the fleet's.
    pub(crate) fleet_open_until: Option<Instant>,
}

/// Which trip of the fleet's breaker (its epoch, from Redis) this node knows
/// of, and under which one its own probe last decided: a close, or a failed
/// probe's reopening, is told with the epoch it was decided under, so a late
/// one cannot close a later trip, nor skip the quorum for a trip that is
/// over. Never held while the breaker is called (the hook takes it).
#[derive(Debug, Default)]
pub(crate) struct Epochs {
    /// The fleet's breaker's epoch as last read (`None`: not tripped).
    pub(crate) known: Option<String>,
    /// The epoch known when this node's probe last closed or reopened the
    /// breaker.
    pub(crate) verdict: Option<String>,
}

/// One shared breaker.
pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) breaker: CircuitBreaker,
    pub(crate) keys: Keys,
    pending: Mutex<Pending>,
    /// Set while the fleet's task judges the fleet window on this breaker,
    /// so the hook knows the trip it hears is the fleet's decision.
    pub(crate) judging: AtomicBool,
    /// Bumped by every message applied; a sync whose answer was read before
    /// a message arrived does not apply that answer's (older) state.
    pub(crate) epoch: AtomicU64,
    pub(crate) book: Mutex<Book>,
    pub(crate) epochs: Mutex<Epochs>,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("pending", &*lock(&self.pending))
            .finish_non_exhaustive()
    }
}

impl Member {
    pub(crate) fn new(id: u64, name: String, breaker: CircuitBreaker, namespace: &str) -> Member {
        let keys = Keys::new(namespace, &name);
        let sent = breaker.tally();
        let (asks_seen, dropped_seen) = breaker.demand();
        Member {
            id,
            name,
            breaker,
            keys,
            pending: Mutex::new(Pending::default()),
            judging: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            book: Mutex::new(Book {
                sent,
                sent_at: Instant::now(),
                lease_since: None,
                asks_seen,
                dropped_seen,
                demand_at: None,
                remote_ctl: None,
                fleet_open_until: None,
            }),
            epochs: Mutex::new(Epochs::default()),
        }
    }

    pub(crate) fn add(&self, p: Pending) {
        lock(&self.pending).merge(p);
    }

    /// Takes what is pending (to put back with [`Member::add`] if it could
    /// not be told).
    pub(crate) fn take(&self) -> Pending {
        std::mem::take(&mut *lock(&self.pending))
    }

    pub(crate) fn book(&self) -> crate::sync::MutexGuard<'_, Book> {
        lock(&self.book)
    }

    /// The breaker's generation if it is closed and no close of this
    /// node's waits to be told: a closed state this node does not have to
    /// tell the fleet. (A probe's close is visible a moment before the hook
    /// flags it; a sync that falls in that moment puts the breaker
    /// half-open again, and the node, still holding the lease, probes once
    /// more.)
    pub(crate) fn settled_closed(&self) -> Option<u64> {
        let (state, generation) = self.breaker.peek();
        (state == State::Closed && !lock(&self.pending).close).then_some(generation)
    }

    pub(crate) fn epochs(&self) -> crate::sync::MutexGuard<'_, Epochs> {
        lock(&self.epochs)
    }

    /// The fleet's breaker closed (or was reset): no trip to know of.
    pub(crate) fn fleet_closed(&self) {
        {
            let mut book = self.book();
            book.fleet_open_until = None;
            book.lease_since = None;
        }
        self.epochs().known = None;
    }

    /// The gate for this node's half-open admissions: the lease holder
    /// probes, the others reject; a disconnected node decides alone.
    pub(crate) fn set_gate(&self, connected: bool) {
        let gate = match (connected, self.book().lease_since.is_some()) {
            (false, _) => ProbeGate::Local,
            (true, true) => ProbeGate::Allow,
            (true, false) => ProbeGate::Deny,
        };
        self.breaker.set_probe_gate(gate);
    }

    /// Notes the fleet's open period, as learnt now.
    pub(crate) fn fleet_open_for(&self, remaining: Duration) {
        let until = Instant::now() + remaining;
        let mut book = self.book();
        book.fleet_open_until = Some(book.fleet_open_until.map_or(until, |u| u.max(until)));
        book.lease_since = None;
    }

    /// The rest of the fleet's open period as this node knows it.
    pub(crate) fn fleet_open_remaining(&self) -> Option<Duration> {
        let until = self.book().fleet_open_until?;
        until
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    /// Stops sharing: the breaker is local again.
    pub(crate) fn detach(&self) {
        self.breaker.set_hook(None);
        self.breaker.set_probe_gate(ProbeGate::Local);
    }
}

/// The breaker's runtime listener: turns this node's own transitions into
/// pending flags and wakes the fleet's task. Runs on the caller's thread, so
/// it only sets flags (a short lock) and notifies: never a network call.
pub(crate) struct Hook {
    pub(crate) member: Weak<Member>,
    pub(crate) shared: Weak<Shared>,
}

impl Listener for Hook {
    fn on_transition(&self, t: &Transition) {
        let Some(member) = self.member.upgrade() else {
            return;
        };
        // What came from the fleet is not echoed back; a local manual
        // change stays local (`Fleet::force_open` is the fleet's).
        if matches!(t.reason, Reason::Remote | Reason::Manual) {
            return;
        }
        if t.from == State::HalfOpen && matches!(t.to, State::Open | State::Closed) {
            let mut epochs = member.epochs();
            epochs.verdict = epochs.known.clone();
        }
        let pending = match (t.from, t.to) {
            (from, State::Open) => Pending {
                trip: true,
                // Relaxed: set and read on the fleet's task, around the
                // judge call that raised this transition.
                bypass_quorum: member.judging.load(Ordering::Relaxed),
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
            _ => return,
        };
        member.add(pending);
        if let Some(shared) = self.shared.upgrade() {
            shared.wake.notify_one();
        }
    }
}

/// Hands a breaker to the fleet: installs the hook and the gate, starts the
/// tally if a rate policy needs the fleet's window.
pub(crate) fn attach(shared: &Arc<Shared>, member: &Arc<Member>, connected: bool) {
    if has_rate_policy(&member.breaker) {
        member.breaker.enable_tally();
        member.book().sent = member.breaker.tally();
    }
    // A half-open call denied here: asked again at the next sync at the
    // latest (see the module docs, "Probes fleet-wide").
    member.breaker.set_deny_retry(shared.settings.sync_every);
    member.breaker.set_hook(Some(Arc::new(Hook {
        member: Arc::downgrade(member),
        shared: Arc::downgrade(shared),
    })));
    member.set_gate(connected);
}

/// Whether the breaker trips on a rate (failure or slow-call), so the
/// fleet's window applies to it.
pub(crate) fn has_rate_policy(breaker: &CircuitBreaker) -> bool {
    let c = breaker.config();
    c.failure_rate.is_some() || c.slow_call_rate.is_some()
}

//! A virtual-mode fleet with `sharing = "fleet"`: each replica's fusebox
//! breaker is one node of `fusebox::fleet::protocol` (the library's own
//! fleet state machine, the one `fusebox::fleet` drives against Redis),
//! driven here in virtual time against the library's in-memory store
//! (`MemoryStore`, Redis's scripts), with no rule of the lab's own.
//!
//! What the lab models is only the network: a replica's exchanges with the
//! store take no time; what a script publishes reaches the other replicas
//! `propagation` later; every replica syncs every `sync_every` (all at the
//! same instants, replica 1 first) and at the end of a fleet open period it
//! knows of; a transition's tell (and the sync a half-open transition asks
//! for) happens at once. Left out: lost messages, Redis outages, a dead
//! replica's lease expiring (replicas never die here).
//!
//! Only fusebox breakers are shared (the protocol acts through the
//! library breaker's fleet hooks); the article's breaker and `none` run on
//! each replica alone, as in a fleet with `sharing = "none"`.

use super::TransitionRecord;
use crate::guard::Guard;
use crate::scenario::{Scenario, StrategyKind, StrategySpec, FLEET_WINDOW};
use fusebox::fleet::protocol::store::{MemoryStore, Published};
use fusebox::fleet::protocol::{self, Action, Apply, Input, Local, Node, Settings, Tell};
use fusebox::{CircuitBreaker, Reason, State};
use std::time::Duration;

/// The one breaker a run's fleet shares (every replica's has it).
const BREAKER: &str = "shared";

/// One replica's node.
struct Replica {
    node: Node,
    breaker: CircuitBreaker,
    /// Its breaker's transitions already handed to the node.
    seen: usize,
}

/// A message on its way.
struct Delivery {
    at: Duration,
    /// Sent in this order (equal times are delivered in it).
    seq: u64,
    message: Published,
}

/// The fleet of one virtual run (nothing if its breakers are not shared).
pub(super) struct VirtualFleet {
    settings: Settings,
    propagation: Duration,
    store: MemoryStore,
    replicas: Vec<Replica>,
    pending: Vec<Delivery>,
    seq: u64,
    next_sync: Duration,
}

fn state(s: &str) -> State {
    match s {
        "open" => State::Open,
        "half_open" => State::HalfOpen,
        "forced_open" => State::ForcedOpen,
        "disabled" => State::Disabled,
        _ => State::Closed,
    }
}

fn node_id(r: usize) -> String {
    format!("r{}", r + 1)
}

impl VirtualFleet {
    /// The fleet of `spec`'s replicas (`guards`, replica by replica), or
    /// `None` if they are not shared.
    pub(super) fn new(
        scenario: &Scenario,
        spec: &StrategySpec,
        guards: &[&dyn Guard],
    ) -> Option<VirtualFleet> {
        let fleet = scenario.fleet.as_ref()?;
        if !scenario.shares_trips() || !matches!(spec.kind, StrategyKind::Fusebox(_)) {
            return None;
        }
        let settings = Settings::new(fleet.sync_every)
            .quorum(u32::try_from(fleet.quorum).unwrap_or(u32::MAX))
            .window(FLEET_WINDOW);
        let replicas = guards
            .iter()
            .map(|g| {
                let breaker = g.breaker().expect("a fusebox strategy has a breaker");
                protocol::attach(&breaker, fleet.sync_every);
                let node = Node::new(settings, Duration::ZERO, &Local::read(&breaker), true);
                protocol::apply(&breaker, &Apply::Gate(node.gate()));
                Replica {
                    node,
                    breaker,
                    seen: g.transitions().len(),
                }
            })
            .collect();
        Some(VirtualFleet {
            settings,
            propagation: fleet.propagation,
            store: MemoryStore::new(FLEET_WINDOW),
            replicas,
            pending: Vec::new(),
            seq: 0,
            next_sync: fleet.sync_every,
        })
    }

    /// When the next message arrives, or the next sync is due (`active`:
    /// the run still has requests to come or calls in flight).
    pub(super) fn next_event(&self, active: bool, now: Duration) -> Option<Duration> {
        let delivery = self.pending.iter().map(|d| d.at).min();
        let sync = active.then_some(self.next_sync);
        let wake = self
            .replicas
            .iter()
            .filter_map(|r| r.node.wake_at(now))
            .min()
            .filter(|_| active);
        [delivery, sync, wake].into_iter().flatten().min()
    }

    /// Replica `r`'s breaker may have changed (a call was admitted or
    /// answered): its new transitions go to its node.
    pub(super) fn observe(&mut self, r: usize, now: Duration, guard: &dyn Guard) {
        self.heard(r, now, guard, false);
    }

    fn heard(&mut self, r: usize, now: Duration, guard: &dyn Guard, judged: bool) {
        let log = guard.transitions();
        let new: Vec<TransitionRecord> = log[self.replicas[r].seen.min(log.len())..].to_vec();
        self.replicas[r].seen = log.len();
        for t in new {
            let t = protocol::Transition {
                from: state(t.from),
                to: state(t.to),
                // The node tells its breaker's own transitions, not the
                // fleet's (the lab makes no manual ones).
                reason: if t.remote {
                    Reason::Remote
                } else {
                    Reason::CooldownElapsed
                },
                judged,
            };
            self.input(r, now, guard, Input::Transition(t));
        }
    }

    fn input(&mut self, r: usize, now: Duration, guard: &dyn Guard, input: Input) {
        let actions = self.replicas[r].node.handle(now, input);
        self.run(r, now, guard, actions);
    }

    /// Does what replica `r`'s node decided.
    fn run(&mut self, r: usize, now: Duration, guard: &dyn Guard, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Apply(what) => {
                    protocol::apply(&self.replicas[r].breaker, &what);
                    self.heard(r, now, guard, matches!(what, Apply::Judge(_)));
                }
                Action::Flush => self.input(r, now, guard, Input::Flush),
                Action::Tell(tell) => self.tell(r, now, guard, tell),
                Action::Join => self.sync(r, now, guard),
                // The store never loses its keys here; a wake is read from
                // the node (`next_event`).
                Action::Sync(_) | Action::Control(_) | Action::Republish(_) | Action::Wake => {}
            }
        }
    }

    fn publish(&mut self, now: Duration, message: Option<Published>) {
        if let Some(message) = message {
            self.seq += 1;
            self.pending.push(Delivery {
                at: now + self.propagation,
                seq: self.seq,
                message,
            });
        }
    }

    /// Tells the store replica `r`'s trip and close, as its breaker is now.
    fn tell(&mut self, r: usize, now: Duration, guard: &dyn Guard, tell: Tell) {
        let id = node_id(r);
        if let Some(trip) = tell.trip {
            let b = &self.replicas[r].breaker;
            b.state(); // the lazy Open -> HalfOpen step, as `open_remaining` takes it
            let remaining = Local::read(b).open_left;
            self.heard(r, now, guard, false);
            if let Some(remaining) = remaining.filter(|d| !d.is_zero()) {
                let (opened, message) = self.store.trip(now, &id, BREAKER, remaining, trip);
                self.publish(now, message);
                self.input(
                    r,
                    now,
                    guard,
                    Input::Tripped {
                        remaining,
                        opened,
                        republished: false,
                    },
                );
            }
        }
        if let Some(epoch) = tell.close {
            let closed = self.replicas[r].breaker.state() == State::Closed;
            self.heard(r, now, guard, false);
            if closed {
                let (taken, message) = self.store.close(now, &id, BREAKER, epoch);
                self.publish(now, message);
                self.input(r, now, guard, Input::Closed { taken });
            }
        }
        if tell.join {
            self.sync(r, now, guard);
        }
    }

    /// Replica `r`'s sync at `now`.
    fn sync(&mut self, r: usize, now: Duration, guard: &dyn Guard) {
        let local = Local::read(&self.replicas[r].breaker);
        let actions = self.replicas[r].node.handle(now, Input::Sync(local));
        let Some(request) = actions.into_iter().find_map(|a| match a {
            Action::Sync(request) => Some(request),
            _ => None,
        }) else {
            return;
        };
        let answer = self.store.sync(
            now,
            &node_id(r),
            BREAKER,
            &request,
            self.settings.lease_for(),
        );
        let local = Local::read(&self.replicas[r].breaker);
        self.input(
            r,
            now,
            guard,
            Input::Synced {
                request,
                answer,
                local,
            },
        );
        self.input(r, now, guard, Input::Flush);
    }

    /// Hands out every message due by `now`, in the order they were sent.
    pub(super) fn deliver<'a>(&mut self, now: Duration, guards: impl Fn(usize) -> &'a dyn Guard) {
        loop {
            let Some(k) = (0..self.pending.len())
                .filter(|&k| self.pending[k].at <= now)
                .min_by_key(|&k| (self.pending[k].at, self.pending[k].seq))
            else {
                return;
            };
            let d = self.pending.remove(k);
            for r in 0..self.replicas.len() {
                if node_id(r) != d.message.from {
                    self.input(r, d.at, guards(r), Input::Message(d.message.kind));
                }
            }
        }
    }

    /// Every replica's sync, if one is due at `now`, and the sync of each
    /// replica whose known fleet open period ends now (replica 1 first; one
    /// sync for a replica where both fall); whether any ran.
    pub(super) fn tick<'a>(
        &mut self,
        now: Duration,
        guards: impl Fn(usize) -> &'a dyn Guard,
    ) -> bool {
        let due = now >= self.next_sync;
        if due {
            self.next_sync += self.settings.sync_every_of();
        }
        let mut ran = false;
        for r in 0..self.replicas.len() {
            // Its wake is the end it knew before this instant.
            let woken = self.replicas[r]
                .node
                .wake_at(now.saturating_sub(Duration::from_nanos(1)))
                .is_some_and(|w| w <= now);
            if due || woken {
                self.sync(r, now, guards(r));
                ran = true;
            }
        }
        ran
    }
}

//! One shared breaker on this node: its keys, its protocol [`Node`], and
//! the glue that feeds the node what happens and applies what it decides.

use super::protocol::{self, Action, Apply, Input, Local, Node, Transition as Seen};
use super::Shared;
use crate::sync::{lock, Mutex};
use crate::{CircuitBreaker, Listener, Transition};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

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

/// One shared breaker.
pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) breaker: CircuitBreaker,
    pub(crate) keys: Keys,
    /// The fleet's state machine for this breaker. Never held while the
    /// breaker is called (the hook takes it).
    node: Mutex<Node>,
    /// Set while the fleet's task judges the fleet window on this breaker,
    /// so the hook knows the trip it hears is the fleet's decision.
    judging: AtomicBool,
    /// Set once the membership is dropped: what a sync or message already
    /// under way brings is no longer applied to the breaker.
    detached: AtomicBool,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("node", &*lock(&self.node))
            .finish_non_exhaustive()
    }
}

impl Member {
    pub(crate) fn new(
        id: u64,
        name: String,
        breaker: CircuitBreaker,
        namespace: &str,
        settings: protocol::Settings,
        now: Duration,
        connected: bool,
    ) -> Member {
        let keys = Keys::new(namespace, &name);
        protocol::attach(&breaker, settings.sync_every_of());
        let node = Node::new(settings, now, &Local::read(&breaker), connected);
        Member {
            id,
            name,
            breaker,
            keys,
            node: Mutex::new(node),
            judging: AtomicBool::new(false),
            detached: AtomicBool::new(false),
        }
    }

    /// Hands `input` to the node; applies to the breaker what it decides
    /// (after letting the node go: the breaker's transitions come back
    /// through the hook), and returns the rest, for the driver.
    pub(crate) fn run(&self, now: Duration, input: Input) -> Vec<Action> {
        let actions = {
            let mut node = lock(&self.node);
            if self.is_detached() {
                return Vec::new();
            }
            node.handle(now, input)
        };
        self.apply(actions)
    }

    /// Whether the membership was dropped.
    fn is_detached(&self) -> bool {
        // Acquire: pairs with the Release in `detach`.
        self.detached.load(Ordering::Acquire)
    }

    /// Applies the breaker's part of `actions`; returns the others.
    pub(crate) fn apply(&self, actions: Vec<Action>) -> Vec<Action> {
        let mut rest = Vec::new();
        for a in actions {
            if self.is_detached() {
                return Vec::new();
            }
            match a {
                Action::Apply(what @ Apply::Judge(_)) => {
                    // Relaxed (both): read back by the hook on this same
                    // thread, inside the judge call.
                    self.judging.store(true, Ordering::Relaxed);
                    protocol::apply(&self.breaker, &what);
                    self.judging.store(false, Ordering::Relaxed);
                }
                Action::Apply(what) => protocol::apply(&self.breaker, &what),
                other => rest.push(other),
            }
        }
        rest
    }

    /// The breaker's first gate.
    pub(crate) fn set_first_gate(&self) {
        let gate = lock(&self.node).gate();
        protocol::apply(&self.breaker, &Apply::Gate(gate));
    }

    /// Reads the node (for what it knows: the next wake, what to put back).
    pub(crate) fn node(&self) -> crate::sync::MutexGuard<'_, Node> {
        lock(&self.node)
    }

    /// Stops sharing: the breaker is local again.
    pub(crate) fn detach(&self) {
        {
            // Under the node's lock: an input being handled finishes first,
            // and none is handled after.
            let _node = lock(&self.node);
            // Release: pairs with the Acquire in `is_detached`.
            self.detached.store(true, Ordering::Release);
        }
        self.breaker.set_hook(None);
        protocol::detach(&self.breaker);
    }
}

/// The breaker's runtime listener: hands this node's own transitions to the
/// node and wakes the fleet's task. Runs on the caller's thread, so it only
/// takes a short lock and notifies: never a network call.
pub(crate) struct Hook {
    pub(crate) member: Weak<Member>,
    pub(crate) shared: Weak<Shared>,
}

impl Listener for Hook {
    fn on_transition(&self, t: &Transition) {
        // What came from the fleet is not echoed back (and costs no lock).
        if matches!(t.reason, crate::Reason::Remote) {
            return;
        }
        let (Some(member), Some(shared)) = (self.member.upgrade(), self.shared.upgrade()) else {
            return;
        };
        let seen = Seen {
            from: t.from,
            to: t.to,
            reason: t.reason,
            // Relaxed: set and read on the fleet's task, around the judge
            // call that raised this transition.
            judged: member.judging.load(Ordering::Relaxed),
        };
        let rest = member.run(shared.now(), Input::Transition(seen));
        if rest.contains(&Action::Flush) {
            shared.wake.notify_one();
        }
    }
}

/// Hands a breaker to the fleet: installs the hook and the first gate.
pub(crate) fn attach(shared: &Arc<Shared>, member: &Arc<Member>) {
    member.breaker.set_hook(Some(Arc::new(Hook {
        member: Arc::downgrade(member),
        shared: Arc::downgrade(shared),
    })));
    member.set_first_gate();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::codec::Kind;
    use crate::State;

    fn member() -> Member {
        let breaker = CircuitBreaker::builder().build().unwrap();
        let settings = protocol::Settings::new(Duration::from_millis(50));
        Member::new(
            1,
            "db".into(),
            breaker,
            "ns",
            settings,
            Duration::ZERO,
            true,
        )
    }

    #[test]
    fn a_message_handled_after_the_membership_is_dropped_changes_nothing() {
        let trip = Input::Message(Kind::Trip {
            remaining: Duration::from_secs(5),
        });
        let attached = member();
        attached.run(Duration::ZERO, trip.clone());
        assert_eq!(attached.breaker.state(), State::Open);

        let m = member();
        m.detach();
        assert_eq!(m.run(Duration::ZERO, trip), []);
        assert_eq!(m.breaker.state(), State::Closed);
    }
}

//! The protocol driven by scripted inputs, and a small fleet of real
//! breakers on a manual clock against the in-memory store (proptest).

use super::store::{MemoryStore, Published};
use super::*;
use crate::{ManualClock, Reason};
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn settings() -> Settings {
    Settings::new(ms(100))
}

fn node(connected: bool) -> Node {
    Node::new(settings(), Duration::ZERO, &Local::closed(), connected)
}

fn local(state: State) -> Local {
    Local {
        state,
        ..Local::closed()
    }
}

fn own(from: State, to: State) -> Input {
    Input::Transition(Transition {
        from,
        to,
        reason: Reason::CooldownElapsed,
        judged: false,
    })
}

fn request(n: &mut Node, now: Duration, l: Local) -> Request {
    match &n.handle(now, Input::Sync(l))[..] {
        [Action::Sync(r)] => r.clone(),
        other => panic!("{other:?}"),
    }
}

fn tell(n: &mut Node) -> Tell {
    match &n.handle(Duration::ZERO, Input::Flush)[..] {
        [Action::Tell(t)] => t.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_heard_trip_opens_for_the_rest_and_wakes_at_its_end() {
    let mut n = node(true);
    let now = ms(1000);
    let out = n.handle(now, Input::Message(Kind::Trip { remaining: ms(500) }));
    assert_eq!(
        out,
        [
            Action::Apply(Apply::TripRemote(ms(500))),
            Action::Wake,
            Action::Apply(Apply::Gate(Gate::Deny))
        ]
    );
    assert_eq!(n.wake_at(now), Some(ms(1500)));
    assert_eq!(n.fleet_state(ms(1200)), (State::Open, Some(ms(300))));
    assert_eq!(n.fleet_state(ms(1500)).0, State::HalfOpen);
    // A shorter trip keeps the later end.
    n.handle(now, Input::Message(Kind::Trip { remaining: ms(100) }));
    assert_eq!(n.wake_at(now), Some(ms(1500)));
    n.handle(now, Input::Message(Kind::Close));
    assert_eq!(
        (n.wake_at(now), n.fleet_state(now).0),
        (None, State::Closed)
    );
}

#[test]
fn own_trips_are_told_with_the_quorum_unless_the_fleet_window_decided() {
    let mut n = Node::new(settings().quorum(3), Duration::ZERO, &Local::closed(), true);
    assert_eq!(
        n.handle(Duration::ZERO, own(State::Closed, State::Open)),
        [Action::Flush]
    );
    let t = tell(&mut n);
    assert_eq!(
        t.trip,
        Some(TripTell {
            quorum: 3,
            probed: None
        })
    );
    assert_eq!((t.close, t.join), (None, false));
    assert_eq!(n.handle(Duration::ZERO, Input::Flush), [], "nothing left");
    n.handle(
        Duration::ZERO,
        Input::Transition(Transition {
            from: State::Closed,
            to: State::Open,
            reason: Reason::FailureRate { rate: 0.5 },
            judged: true,
        }),
    );
    assert_eq!(tell(&mut n).trip.unwrap().quorum, 1);
    // The fleet's own changes and local manual ones are not told.
    for reason in [Reason::Remote, Reason::Manual] {
        let t = Transition {
            from: State::Closed,
            to: State::Open,
            reason,
            judged: false,
        };
        assert_eq!(n.handle(Duration::ZERO, Input::Transition(t)), []);
    }
}

#[test]
fn a_probe_verdict_is_told_under_the_epoch_it_ran_under() {
    let mut n = node(true);
    let mut store = MemoryStore::new(ms(10_000));
    let r = request(&mut n, ms(0), local(State::Closed));
    let a = Answer {
        open: Some(ms(0)),
        epoch: Some(7),
        ..Answer::default()
    };
    n.handle(
        ms(0),
        Input::Synced {
            request: r,
            answer: a,
            local: local(State::HalfOpen),
        },
    );
    n.handle(ms(1), own(State::HalfOpen, State::Open));
    let t = tell(&mut n);
    assert_eq!(t.trip.unwrap().probed, Some(7));
    n.handle(ms(2), own(State::Open, State::HalfOpen));
    n.handle(ms(3), own(State::HalfOpen, State::Closed));
    let t = tell(&mut n);
    assert_eq!((t.close, t.join), (Some(Some(7)), true));
    // The store refuses a close for another epoch; the node then joins.
    store.trip(
        ms(0),
        "b",
        "db",
        ms(10),
        TripTell {
            quorum: 1,
            probed: None,
        },
    );
    let (taken, _) = store.close(ms(20), "a", "db", Some(7));
    assert!(!taken);
    assert_eq!(
        n.handle(ms(20), Input::Closed { taken }),
        [Action::Apply(Apply::Gate(Gate::Deny)), Action::Join]
    );
}

#[test]
fn the_lease_is_asked_on_demand_kept_while_calls_come_and_given_back() {
    let mut n = node(true);
    let half = |asks| Local {
        asks,
        ..local(State::HalfOpen)
    };
    // Half-open without calls here: no lease asked.
    assert_eq!(request(&mut n, ms(0), half(0)).lease, LeaseOp::None);
    // Calls found it half-open: ask.
    let r = request(&mut n, ms(100), half(1));
    assert_eq!(r.lease, LeaseOp::Acquire);
    let granted = Answer {
        open: Some(Duration::ZERO),
        lease: true,
        ..Answer::default()
    };
    let out = n.handle(
        ms(100),
        Input::Synced {
            request: r,
            answer: granted.clone(),
            local: half(1),
        },
    );
    assert_eq!(out, [Action::Apply(Apply::Gate(Gate::Allow))]);
    assert!(n.holds_lease());
    // Renewed while calls come, however far apart within a lease's life.
    let r = request(&mut n, ms(350), half(2));
    assert_eq!(r.lease, LeaseOp::Renew);
    n.handle(
        ms(350),
        Input::Synced {
            request: r,
            answer: granted.clone(),
            local: half(2),
        },
    );
    // No call for a lease's life (3 x sync_every) and no probe running: back.
    assert_eq!(request(&mut n, ms(600), half(2)).lease, LeaseOp::Renew);
    assert_eq!(request(&mut n, ms(650), half(2)).lease, LeaseOp::Release);
    // A probe running keeps it.
    let busy = Local {
        probes_in_flight: 1,
        ..half(2)
    };
    assert_eq!(request(&mut n, ms(700), busy).lease, LeaseOp::Renew);
    // A dropped probe permit gives it back at once.
    let dropped = Local {
        drops: 1,
        ..half(3)
    };
    assert_eq!(request(&mut n, ms(710), dropped).lease, LeaseOp::Release);
    // Closed: back.
    assert_eq!(
        request(&mut n, ms(720), local(State::Closed)).lease,
        LeaseOp::Release
    );
}

#[test]
fn the_lease_is_taken_ahead_when_the_open_period_ends_before_the_next_sync() {
    let mut n = node(true);
    let open = |left, asks| Local {
        open_left: Some(left),
        asks,
        ..local(State::Open)
    };
    assert_eq!(
        request(&mut n, ms(0), open(ms(150), 1)).lease,
        LeaseOp::None
    );
    assert_eq!(
        request(&mut n, ms(0), open(ms(100), 2)).lease,
        LeaseOp::Acquire
    );
}

#[test]
fn the_lease_is_asked_for_a_round_trip_earlier_when_syncs_are_slow() {
    let mut n = node(true);
    let open = |left, asks| Local {
        open_left: Some(left),
        asks,
        ..local(State::Open)
    };
    // A sync whose answer came 30 ms after it was made.
    let r = request(&mut n, ms(0), open(ms(400), 1));
    assert_eq!(r.ahead, ms(100));
    n.handle(
        ms(30),
        Input::Synced {
            request: r,
            answer: Answer::default(),
            local: open(ms(370), 1),
        },
    );
    assert_eq!(n.lease_ahead(), ms(130));
    let r = request(&mut n, ms(100), open(ms(131), 2));
    assert_eq!(r.lease, LeaseOp::None);
    let r = request(&mut n, ms(100), open(ms(130), 3));
    assert_eq!((r.lease, r.ahead), (LeaseOp::Acquire, ms(130)));
    // Fast answers again: the lead decays by an eighth per sync, and never
    // exceeds two intervals however slow one was.
    n.handle(
        ms(100),
        Input::Synced {
            request: r,
            answer: Answer::default(),
            local: open(ms(130), 3),
        },
    );
    assert_eq!(n.lease_ahead(), ms(100) + ms(30) * 7 / 8);
    let slow = request(&mut n, ms(200), local(State::Closed));
    n.handle(
        ms(700),
        Input::Synced {
            request: slow,
            answer: Answer::default(),
            local: local(State::Closed),
        },
    );
    assert_eq!(n.lease_ahead(), ms(200));
}

#[test]
fn a_trip_below_the_quorum_leaves_the_node_open_on_its_own() {
    let mut n = Node::new(settings().quorum(2), Duration::ZERO, &Local::closed(), true);
    assert_eq!(n.gate(), Gate::Deny);
    // Its own trip, told: the fleet stays closed (below the quorum).
    assert_eq!(
        n.handle(ms(0), own(State::Closed, State::Open)),
        [Action::Flush]
    );
    assert!(tell(&mut n).trip.is_some());
    let out = n.handle(
        ms(1),
        Input::Tripped {
            remaining: ms(500),
            opened: false,
            republished: false,
        },
    );
    assert!(n.is_alone());
    assert_eq!(out, [Action::Apply(Apply::Gate(Gate::Local))]);
    // Half-open on its own schedule: no lease asked for, now or at a sync
    // (where any the store still holds for it goes back).
    assert_eq!(n.handle(ms(600), own(State::Open, State::HalfOpen)), []);
    let half = Local {
        asks: 3,
        ..local(State::HalfOpen)
    };
    assert_eq!(request(&mut n, ms(700), half).lease, LeaseOp::Release);
    // A fleet close (another node's probe) leaves it open.
    let out = n.handle(ms(710), Input::Message(Kind::Close));
    assert!(!out.contains(&Action::Apply(Apply::CloseRemote)), "{out:?}");
    // Its own probe closes it: nothing to tell, the fleet's gate again.
    let out = n.handle(ms(720), own(State::HalfOpen, State::Closed));
    assert_eq!(out, [Action::Apply(Apply::Gate(Gate::Deny))]);
    assert!(!n.is_alone());
    assert_eq!(n.handle(ms(721), Input::Flush), []);
}

#[test]
fn a_node_open_on_its_own_is_the_fleets_again_once_the_fleet_opens() {
    let mut n = Node::new(settings().quorum(2), Duration::ZERO, &Local::closed(), true);
    n.handle(ms(0), own(State::Closed, State::Open));
    tell(&mut n);
    n.handle(
        ms(1),
        Input::Tripped {
            remaining: ms(500),
            opened: false,
            republished: false,
        },
    );
    assert!(n.is_alone());
    // Another node's trip makes the quorum: the fleet's trip, the fleet's lease.
    n.handle(ms(10), Input::Message(Kind::Trip { remaining: ms(500) }));
    assert!(!n.is_alone());
    assert_eq!(n.gate(), Gate::Deny);
    let open = Local {
        open_left: Some(ms(90)),
        asks: 1,
        ..local(State::Open)
    };
    assert_eq!(request(&mut n, ms(420), open).lease, LeaseOp::Acquire);
}

#[test]
fn a_trip_the_store_does_not_hold_is_undone_at_the_next_sync() {
    let mut n = node(true);
    // A trip message for a year (forged, replayed, or from a close this
    // node missed): open for the rest of it.
    let year = Duration::from_secs(365 * 24 * 3600);
    let out = n.handle(ms(0), Input::Message(Kind::Trip { remaining: year }));
    assert!(out.contains(&Action::Apply(Apply::TripRemote(year))));
    let open = Local {
        open_left: Some(year),
        ..local(State::Open)
    };
    // The next sync finds no trip in the store: closed again.
    let r = request(&mut n, ms(100), open);
    let out = n.handle(
        ms(101),
        Input::Synced {
            request: r,
            answer: Answer::default(),
            local: open,
        },
    );
    assert!(out.contains(&Action::Apply(Apply::CloseRemote)), "{out:?}");
    // Once closed, a sync finding no trip changes nothing.
    let r = request(&mut n, ms(200), local(State::Closed));
    let out = n.handle(
        ms(201),
        Input::Synced {
            request: r,
            answer: Answer::default(),
            local: local(State::Closed),
        },
    );
    assert!(!out.contains(&Action::Apply(Apply::CloseRemote)), "{out:?}");
}

#[test]
fn a_trip_of_its_own_still_to_tell_is_not_undone_by_a_sync() {
    let mut n = node(true);
    n.handle(ms(0), Input::Message(Kind::Trip { remaining: ms(500) }));
    let open = Local {
        open_left: Some(ms(500)),
        ..local(State::Open)
    };
    let r = request(&mut n, ms(10), open);
    // Meanwhile its own probe failed: its own trip, not yet told.
    n.handle(ms(20), own(State::HalfOpen, State::Open));
    let out = n.handle(
        ms(30),
        Input::Synced {
            request: r,
            answer: Answer::default(),
            local: open,
        },
    );
    assert!(!out.contains(&Action::Apply(Apply::CloseRemote)), "{out:?}");
}

#[test]
fn an_answer_read_before_a_message_is_not_applied() {
    let mut n = node(true);
    let r = request(&mut n, ms(0), local(State::Closed));
    n.handle(ms(1), Input::Message(Kind::Close));
    let a = Answer {
        open: Some(ms(500)),
        ..Answer::default()
    };
    assert_eq!(
        n.handle(
            ms(2),
            Input::Synced {
                request: r,
                answer: a,
                local: local(State::Closed)
            }
        ),
        []
    );
}

#[test]
fn control_is_kept_and_a_missed_reset_closes() {
    let mut n = node(true);
    let r = request(&mut n, ms(0), local(State::Closed));
    let forced = Answer {
        control: Some(State::ForcedOpen),
        ..Answer::default()
    };
    assert_eq!(
        n.handle(
            ms(0),
            Input::Synced {
                request: r,
                answer: forced,
                local: local(State::Closed)
            }
        ),
        [
            Action::Apply(Apply::Control(State::ForcedOpen)),
            Action::Apply(Apply::Gate(Gate::Deny))
        ]
    );
    assert_eq!(n.fleet_state(ms(0)).0, State::ForcedOpen);
    // The store lost its keys: the control state is put back.
    let r = request(&mut n, ms(1), local(State::ForcedOpen));
    assert_eq!(
        n.handle(ms(1), Input::KeysLost(r)),
        [Action::Control(Kind::ForceOpen)]
    );
    // A sync without control: the reset was missed.
    let r = request(&mut n, ms(2), local(State::ForcedOpen));
    let out = n.handle(
        ms(2),
        Input::Synced {
            request: r,
            answer: Answer::default(),
            local: local(State::ForcedOpen),
        },
    );
    assert_eq!(out[0], Action::Apply(Apply::Control(State::Closed)));
}

#[test]
fn a_closed_node_of_a_half_open_fleet_goes_half_open_unless_it_closed_it() {
    let mut n = node(true);
    let half_open = Answer {
        open: Some(Duration::ZERO),
        epoch: Some(1),
        ..Answer::default()
    };
    let r = request(&mut n, ms(0), local(State::Closed));
    let out = n.handle(
        ms(0),
        Input::Synced {
            request: r,
            answer: half_open.clone(),
            local: local(State::Closed),
        },
    );
    assert_eq!(out[0], Action::Apply(Apply::TripRemote(Duration::ZERO)));
    // Its own close, still to be told: left closed.
    let mut n = node(true);
    n.handle(ms(0), own(State::HalfOpen, State::Closed));
    let r = request(&mut n, ms(0), local(State::Closed));
    let out = n.handle(
        ms(0),
        Input::Synced {
            request: r,
            answer: half_open.clone(),
            local: local(State::Closed),
        },
    );
    assert_eq!(out, [Action::Apply(Apply::Gate(Gate::Deny))]);
    // Closed again in another generation meanwhile: left closed.
    let mut n = node(true);
    let r = request(&mut n, ms(0), local(State::Closed));
    let later = Local {
        generation: 2,
        ..local(State::Closed)
    };
    let out = n.handle(
        ms(0),
        Input::Synced {
            request: r,
            answer: half_open,
            local: later,
        },
    );
    assert_eq!(out, [Action::Apply(Apply::Gate(Gate::Deny))]);
}

#[test]
fn the_fleet_window_judges_once_the_quorum_reported_failures() {
    let mut n = Node::new(settings().quorum(2), Duration::ZERO, &Local::closed(), true);
    let rate = Local {
        window: Some(Some(ms(1000))),
        tally: Counts {
            calls: 10,
            failures: 6,
            slow: 0,
        },
        ..local(State::Closed)
    };
    let r = request(&mut n, ms(0), rate);
    assert_eq!(r.delta, rate.tally);
    assert_eq!(r.window, Some((ms(1000), ms(100))));
    let totals = Counts {
        calls: 30,
        failures: 20,
        slow: 0,
    };
    let one = Answer {
        totals,
        failing_nodes: 1,
        ..Answer::default()
    };
    let out = n.handle(
        ms(0),
        Input::Synced {
            request: r,
            answer: one.clone(),
            local: rate,
        },
    );
    assert!(!out
        .iter()
        .any(|a| matches!(a, Action::Apply(Apply::Judge(_)))));
    let r = request(&mut n, ms(100), rate);
    assert_eq!(r.delta, Counts::default(), "sent once");
    let two = Answer {
        failing_nodes: 2,
        ..one
    };
    let out = n.handle(
        ms(100),
        Input::Synced {
            request: r,
            answer: two,
            local: rate,
        },
    );
    assert_eq!(out.last(), Some(&Action::Apply(Apply::Judge(totals))));
    // Verdicts older than the window are not sent.
    let more = Local {
        tally: Counts {
            calls: 20,
            failures: 6,
            slow: 0,
        },
        ..rate
    };
    assert_eq!(request(&mut n, ms(1200), more).delta, Counts::default());
}

#[test]
fn a_disconnected_node_decides_alone_and_forgets_its_lease() {
    let mut n = node(true);
    let r = request(&mut n, ms(0), local(State::HalfOpen));
    let a = Answer {
        open: Some(Duration::ZERO),
        lease: true,
        ..Answer::default()
    };
    n.handle(
        ms(0),
        Input::Synced {
            request: r,
            answer: a,
            local: local(State::HalfOpen),
        },
    );
    assert_eq!(n.gate(), Gate::Allow);
    assert_eq!(
        n.handle(ms(1), Input::Connected(false)),
        [Action::Apply(Apply::Gate(Gate::Local))]
    );
    assert!(!n.holds_lease());
    assert_eq!(n.handle(ms(2), Input::Connected(false)), []);
    assert_eq!(
        n.handle(ms(3), Input::Connected(true)),
        [Action::Apply(Apply::Gate(Gate::Deny))]
    );
}

#[test]
fn an_untold_tell_is_pending_again_and_joining_later_syncs() {
    let mut n = node(true);
    n.handle(ms(0), own(State::Closed, State::Open));
    let t = tell(&mut n);
    assert_eq!(n.handle(ms(0), Input::Untold(t.clone())), []);
    assert_eq!(tell(&mut n), t);
    assert_eq!(n.handle(ms(0), Input::JoinLater), [Action::Flush]);
    assert!(tell(&mut n).join);
}

// ---- A fleet of real breakers against the in-memory store ----

/// One node: its protocol, its breaker, the transitions it heard.
struct Replica {
    node: Node,
    breaker: CircuitBreaker,
    heard: Arc<Mutex<Vec<crate::Transition>>>,
    connected: bool,
    /// The breaker last opened on its own (not from the fleet).
    own_open: bool,
}

struct Sim {
    clock: ManualClock,
    store: MemoryStore,
    replicas: Vec<Replica>,
    inbox: Vec<Published>,
    /// Every message published or forged, for replays.
    sent: Vec<Published>,
}

#[derive(Debug, Clone)]
enum Op {
    Call(usize, bool),
    Advance(u64),
    Sync(usize),
    Deliver,
    Link(usize, bool),
    Control(Kind),
    /// A stranger's message on the channel.
    Forge(Kind),
    /// The `n`-th message ever sent, again.
    Replay(usize),
    /// Only the latest message in flight, the others later.
    DeliverLast,
}

impl Sim {
    fn new(n: usize, quorum: u32, rate: bool) -> Sim {
        let clock = ManualClock::new();
        let replicas = (0..n)
            .map(|_| {
                let heard = Arc::new(Mutex::new(Vec::new()));
                let log = Arc::clone(&heard);
                let b = crate::CircuitBreaker::builder()
                    .name("db")
                    .open_for(ms(200))
                    .half_open_probes(1)
                    .clock(clock.clone())
                    .on_transition(move |t: &crate::Transition| log.lock().unwrap().push(*t));
                let b = if rate {
                    b.failure_rate(0.5).time_window(ms(1000)).min_calls(4)
                } else {
                    b.consecutive_failures(2)
                };
                let breaker = b.build().unwrap();
                attach(&breaker, ms(100));
                let node = Node::new(
                    Settings::new(ms(100)).quorum(quorum),
                    crate::Clock::now(&clock),
                    &Local::read(&breaker),
                    true,
                );
                apply(&breaker, &Apply::Gate(node.gate()));
                Replica {
                    node,
                    breaker,
                    heard,
                    connected: true,
                    own_open: false,
                }
            })
            .collect();
        Sim {
            clock,
            store: MemoryStore::new(ms(10_000)),
            replicas,
            inbox: Vec::new(),
            sent: Vec::new(),
        }
    }

    fn now(&self) -> Duration {
        crate::Clock::now(&self.clock)
    }

    fn name(i: usize) -> String {
        format!("n{i}")
    }

    fn check(&self) {
        for r in &self.replicas {
            assert_eq!(
                r.node.gate() == Gate::Local,
                !r.connected || r.node.is_alone(),
                "gate Local iff disconnected or open on its own"
            );
            // Open on its own: it holds no lease.
            assert!(!(r.node.is_alone() && r.node.holds_lease()));
        }
    }

    fn input(&mut self, i: usize, input: Input) {
        let now = self.now();
        let actions = self.replicas[i].node.handle(now, input);
        self.run(i, actions);
    }

    fn run(&mut self, i: usize, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Apply(what) => {
                    let judged = matches!(what, Apply::Judge(_));
                    apply(&self.replicas[i].breaker, &what);
                    self.heard(i, judged);
                }
                Action::Flush => self.flush(i),
                Action::Join => self.sync(i),
                Action::Tell(t) => self.tell(i, t),
                Action::Sync(_) | Action::Control(_) | Action::Republish(_) | Action::Wake => {}
            }
        }
    }

    /// Hands replica `i` its breaker's new transitions.
    fn heard(&mut self, i: usize, judged: bool) {
        let seen: Vec<_> = std::mem::take(&mut *self.replicas[i].heard.lock().unwrap());
        for t in seen {
            match t.to {
                State::Closed => self.replicas[i].own_open = false,
                State::Open if t.reason != crate::Reason::Remote => {
                    self.replicas[i].own_open = true;
                }
                State::Open => self.replicas[i].own_open = false,
                _ => {}
            }
            let t = Transition {
                from: t.from,
                to: t.to,
                reason: t.reason,
                judged,
            };
            self.input(i, Input::Transition(t));
        }
    }

    fn flush(&mut self, i: usize) {
        if !self.replicas[i].connected {
            return;
        }
        let now = self.now();
        let actions = self.replicas[i].node.handle(now, Input::Flush);
        self.run(i, actions);
    }

    fn tell(&mut self, i: usize, t: Tell) {
        let now = self.now();
        let name = Sim::name(i);
        if let Some(trip) = t.trip {
            let remaining = self.replicas[i].breaker.open_remaining();
            self.heard(i, false);
            if let Some(remaining) = remaining.filter(|d| !d.is_zero()) {
                let (opened, published) = self.store.trip(now, &name, "db", remaining, trip);
                self.inbox.extend(published);
                self.input(
                    i,
                    Input::Tripped {
                        remaining,
                        opened,
                        republished: false,
                    },
                );
                if opened {
                    assert!(
                        !self.replicas[i].node.holds_lease(),
                        "a trip that opened the fleet drops the lease"
                    );
                }
            }
        }
        if let Some(epoch) = t.close {
            let state = self.replicas[i].breaker.state();
            self.heard(i, false);
            if state == State::Closed {
                let (taken, published) = self.store.close(now, &name, "db", epoch);
                self.inbox.extend(published);
                self.input(i, Input::Closed { taken });
                if taken {
                    assert!(
                        !self.replicas[i].node.holds_lease(),
                        "a close drops the lease"
                    );
                }
            }
        }
        if t.join {
            self.sync(i);
        }
    }

    fn sync(&mut self, i: usize) {
        if !self.replicas[i].connected {
            return;
        }
        let now = self.now();
        let local = Local::read(&self.replicas[i].breaker);
        let request = request(&mut self.replicas[i].node, now, local);
        let answer = self.store.sync(now, &Sim::name(i), "db", &request, ms(300));
        let holds = answer.lease && answer.control.is_none();
        let local = Local::read(&self.replicas[i].breaker);
        let actions = self.replicas[i].node.handle(
            now,
            Input::Synced {
                request,
                answer,
                local,
            },
        );
        // No message comes between here: the answer is applied, and the
        // node holds the lease exactly if the store says so (and no
        // control state is in force).
        assert_eq!(self.replicas[i].node.holds_lease(), holds);
        self.run(i, actions);
        self.flush(i);
    }

    fn deliver(&mut self) {
        for p in std::mem::take(&mut self.inbox) {
            self.deliver_one(&p);
        }
    }

    fn deliver_one(&mut self, p: &Published) {
        for i in 0..self.replicas.len() {
            if Sim::name(i) != p.from && self.replicas[i].connected {
                self.input(i, Input::Message(p.kind));
            }
        }
    }

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Call(i, ok) => {
                let permit = self.replicas[i].breaker.try_acquire();
                self.heard(i, false);
                if let Ok(p) = permit {
                    if ok {
                        p.success()
                    } else {
                        p.failure()
                    }
                    self.heard(i, false);
                }
            }
            Op::Advance(n) => self.clock.advance(ms(n)),
            Op::Sync(i) => self.sync(i),
            Op::Deliver => self.deliver(),
            Op::Link(i, up) => {
                self.replicas[i].connected = up;
                self.input(i, Input::Connected(up));
                if up {
                    self.sync(i);
                }
            }
            Op::Control(kind) => {
                let p = self.store.control("ops", "db", kind);
                self.inbox.push(p);
            }
            Op::Forge(kind) => self.inbox.push(Published {
                from: "evil".into(),
                kind,
            }),
            Op::Replay(n) => {
                if !self.sent.is_empty() {
                    let p = self.sent[n % self.sent.len()].clone();
                    self.inbox.push(p);
                }
            }
            Op::DeliverLast => {
                if let Some(p) = self.inbox.pop() {
                    self.deliver_one(&p);
                }
            }
        }
        // Whatever reached the channel may be replayed.
        for p in &self.inbox {
            if !self
                .sent
                .iter()
                .any(|s| s.from == p.from && s.kind == p.kind)
            {
                self.sent.push(p.clone());
            }
        }
        self.check();
    }
}

fn op(n: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..n, any::<bool>()).prop_map(|(i, ok)| Op::Call(i, ok)),
        4 => (1u64..150).prop_map(Op::Advance),
        3 => (0..n).prop_map(Op::Sync),
        3 => Just(Op::Deliver),
        1 => (0..n, any::<bool>()).prop_map(|(i, up)| Op::Link(i, up)),
        1 => prop_oneof![Just(Kind::ForceOpen), Just(Kind::Disable), Just(Kind::Reset)].prop_map(Op::Control),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => (0u64..=31_536_000_000).prop_map(|n| Kind::Trip { remaining: ms(n) }),
        2 => Just(Kind::Close),
        1 => Just(Kind::ForceOpen),
        1 => Just(Kind::Disable),
        1 => Just(Kind::Reset),
    ]
}

/// A fleet under attack: the protocol's ops, and a stranger forging,
/// replaying and reordering messages on the channel.
fn hostile(n: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => op(n),
        2 => kind().prop_map(Op::Forge),
        1 => any::<usize>().prop_map(Op::Replay),
        1 => Just(Op::DeliverLast),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever a stranger sends, replays or reorders: once the store holds
    /// no trip, every node is closed within two syncs (the messages still
    /// in flight lost), unless its breaker last opened on its own (a trip
    /// made while disconnected whose period was over when it reconnected
    /// is not told: it probes on its own).
    #[test]
    fn forged_replayed_and_reordered_messages_are_undone_within_two_syncs(
        ops in proptest::collection::vec(hostile(3), 1..200),
    ) {
        let mut sim = Sim::new(3, 1, false);
        for op in &ops {
            sim.step(op);
        }
        sim.inbox.clear();
        for i in 0..3 {
            sim.step(&Op::Link(i, true));
        }
        for _ in 0..2 {
            sim.step(&Op::Advance(100));
            for i in 0..3 {
                sim.step(&Op::Sync(i));
            }
        }
        let now = sim.now();
        if !sim.store.holds_trip(now, "db") {
            for (i, r) in sim.replicas.iter().enumerate() {
                if !r.own_open {
                    prop_assert_eq!(r.breaker.peek().0, State::Closed, "node {}", i);
                }
            }
        }
    }

    /// Whatever happens: the gate is Local exactly while disconnected; a
    /// node whose trip opened the fleet, or whose close the store took,
    /// holds no lease (checked in `Sim::tell`); after a sync a node holds
    /// the lease exactly when the store says so (`Sim::sync`).
    #[test]
    fn a_fleet_keeps_the_protocols_invariants(
        quorum in 1u32..3,
        rate in any::<bool>(),
        ops in proptest::collection::vec(op(3), 1..200),
    ) {
        let mut sim = Sim::new(3, quorum, rate);
        for op in &ops {
            sim.step(op);
        }
        // A disconnected node holds no lease.
        for r in &sim.replicas {
            prop_assert!(r.connected || !r.node.holds_lease());
        }
    }

    /// Trips travel: with quorum 1 and every message delivered, once a
    /// node's trip opened the fleet every connected node is open, or
    /// half-open with the open period over.
    #[test]
    fn a_trip_opens_every_connected_node(ops in proptest::collection::vec((0usize..3, any::<bool>()), 1..60)) {
        let mut sim = Sim::new(3, 1, false);
        for (i, ok) in ops {
            sim.step(&Op::Call(i, ok));
            sim.step(&Op::Deliver);
            let now = sim.now();
            if sim.store.open_until(now, "db").is_some() {
                for r in &sim.replicas {
                    prop_assert_eq!(r.breaker.peek().0, State::Open);
                }
            }
        }
    }
}

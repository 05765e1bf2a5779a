//! The request rules, written once and driven by both modes:
//!
//! - a request joins one FIFO queue on arrival, or is rejected if the queue
//!   is bounded and would hold more than `queue` requests after the idle
//!   workers took theirs ([`queue_admits`]);
//! - the guard is consulted when a worker starts an attempt (as in the
//!   article); a fast-fail ends the request at once, and only a request that
//!   never reached the downstream counts as a fast-fail ([`start_attempt`]);
//! - a downstream call's result and duration are decided by its start time;
//!   after a failed call the same worker retries at once while retries
//!   remain ([`end_attempt`]).

use super::{Outcome, RequestRecord};
use crate::guard::{Admission, Guard, Ticket};
use crate::scenario::{CallPlan, CallResult, Scenario, StrategySpec, FLEET_WINDOW};
use std::time::Duration;

/// Whether an arriving request joins the queue, given the requests already
/// `waiting` and the `idle` workers about to take some of them.
pub(super) fn queue_admits(scenario: &Scenario, waiting: usize, idle: usize) -> bool {
    scenario.queue == 0 || waiting.saturating_sub(idle) < scenario.queue
}

/// A worker starts an attempt of request `r` at `now`: the guard admits it
/// (the call to make, and the ticket to hand back with its result) or
/// fast-fails it (the request ends now).
///
/// In a fleet, `replica` is the request's replica and `held` whether the
/// fleet holds its breaker open ([`FleetRules::admits`]): a held replica
/// fast-fails without asking its breaker.
pub(super) fn start_attempt(
    scenario: &Scenario,
    guard: &dyn Guard,
    r: &mut RequestRecord,
    now: Duration,
    (replica, held): (usize, bool),
) -> Option<(Box<dyn Ticket>, CallPlan)> {
    if r.start.is_none() {
        r.start = Some(now);
    }
    let admission = if held {
        Admission::FastFail
    } else {
        guard.admit(now)
    };
    match admission {
        Admission::FastFail => {
            r.end = now;
            // A retry rejected by the guard leaves the request with the
            // failure it already had.
            if r.attempts == 0 {
                r.outcome = Outcome::FastFail;
            }
            None
        }
        Admission::Call(ticket) => {
            r.attempts += 1;
            Some((
                ticket,
                scenario
                    .downstream
                    .plan_on(replica, now, scenario.client.timeout),
            ))
        }
    }
}

/// The call of request `r` ended at `end` with `result`: the guard hears the
/// verdict, the request takes the result; `true` if it is to be retried now.
pub(super) fn end_attempt(
    scenario: &Scenario,
    ticket: Box<dyn Ticket>,
    r: &mut RequestRecord,
    end: Duration,
    result: CallResult,
) -> bool {
    ticket.finish(end, result);
    r.end = end;
    r.outcome = Outcome::of(result);
    !result.is_ok() && r.attempts <= scenario.client.retries
}

/// What a replica's breaker is held to by the fleet, whatever its own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Its own breaker decides.
    Free,
    /// Another replica's trip reached it: open until then.
    Open(Duration),
    /// The fleet's open period is over and another replica probes for the
    /// fleet: half-open calls are rejected until its close (or trip) arrives.
    Waiting,
}

/// A trip or a close on its way to the other replicas.
#[derive(Debug, Clone, Copy)]
struct Delivery {
    at: Duration,
    from: usize,
    /// `Some(until)`: a trip; `None`: a close.
    open_until: Option<Duration>,
}

/// The fleet's rules, as `fusebox::fleet` documents them, in virtual time:
///
/// - **trips travel**: when the fleet opens (a replica's breaker opens and
///   that makes `quorum` distinct replicas that tripped within
///   [`FLEET_WINDOW`]), every other replica is held open `propagation` later,
///   until the end of the tripping replica's open period (carried as a
///   duration: `open_for` from the trip);
///   (its breaker is held open: [`Guard::hold`]);
/// - **probes fleet-wide**: the replica whose trip opened the fleet probes for
///   it; the others, once the open period is over, reject calls until its
///   close arrives (`propagation` after it closes; it closes their breakers,
///   [`Guard::release`]) or its failed probe, which
///   reopens the fleet at once (a trip that travels whatever the quorum);
/// - **quorum**: a replica's own trip always protects it; a trip that does
///   not make the quorum stays local (and a failed probe of a replica that
///   tripped alone is one more trip toward the quorum).
///
/// Left out: the fleet's window for rate policies (counts summed across
/// replicas every `sync_every`), probe leases handed over or expiring, lost
/// messages caught up at a sync, and `half_open_probes` > 1 split across
/// the fleet. A fleet without sharing (or of one replica) holds nothing.
pub(super) struct FleetRules {
    share: bool,
    quorum: usize,
    propagation: Duration,
    open_for: Option<Duration>,
    holds: Vec<Hold>,
    /// Trips toward the quorum: (replica, time).
    trips: Vec<(usize, Duration)>,
    /// The replica probing for the open fleet.
    prober: Option<usize>,
    pending: Vec<Delivery>,
    /// Transitions of each replica's breaker already seen.
    seen: Vec<usize>,
    /// When each replica was held, and until when it was released (`None`: still held).
    pub(super) held: Vec<Vec<(Duration, Option<Duration>)>>,
}

impl FleetRules {
    pub(super) fn new(scenario: &Scenario, spec: &StrategySpec) -> Self {
        let n = scenario.replicas();
        let fleet = scenario.fleet.as_ref();
        FleetRules {
            share: scenario.shares_trips(),
            quorum: fleet.map_or(1, |f| f.quorum),
            propagation: fleet.map_or(Duration::ZERO, |f| f.propagation),
            // Validation refused a strategy without a fixed open period.
            open_for: spec.fleet_open_for().ok().flatten(),
            holds: vec![Hold::Free; n],
            trips: Vec::new(),
            prober: None,
            pending: Vec::new(),
            seen: vec![0; n],
            held: vec![Vec::new(); n],
        }
    }

    /// Whether replica `r` may ask its breaker at `now` (else: a fast-fail).
    pub(super) fn admits(&mut self, r: usize, now: Duration) -> bool {
        match self.holds[r] {
            Hold::Free => true,
            Hold::Open(until) if now < until => false,
            Hold::Open(_) | Hold::Waiting => {
                self.holds[r] = Hold::Waiting;
                false
            }
        }
    }

    /// When the next trip or close arrives somewhere.
    pub(super) fn next_delivery(&self) -> Option<Duration> {
        self.pending.iter().map(|d| d.at).min()
    }

    /// Replica `r`'s breaker has these transitions so far: the new ones are
    /// trips or closes that may travel.
    pub(super) fn observe(&mut self, r: usize, guard: &dyn Guard) {
        if !self.share {
            return;
        }
        let transitions = guard.transitions();
        let new = transitions[self.seen[r]..].to_vec();
        self.seen[r] = transitions.len();
        for t in new {
            match (t.from, t.to) {
                (_, "open") => self.tripped(r, t.at, t.from == "half_open", guard),
                ("half_open", "closed") if self.prober == Some(r) => {
                    self.prober = None;
                    self.send(r, t.at, None);
                }
                _ => {}
            }
        }
    }

    fn tripped(&mut self, r: usize, at: Duration, failed_probe: bool, guard: &dyn Guard) {
        let Some(open_for) = self.open_for else {
            return;
        };
        let for_fleet = failed_probe && self.prober == Some(r);
        if !for_fleet {
            self.trips
                .retain(|&(n, t)| n != r && at.saturating_sub(t) < FLEET_WINDOW);
            self.trips.push((r, at));
            if self.trips.len() < self.quorum {
                return;
            }
        }
        self.prober = Some(r);
        self.release(r, at, guard);
        self.send(r, at, Some(at + open_for));
    }

    fn send(&mut self, from: usize, at: Duration, open_until: Option<Duration>) {
        self.pending.push(Delivery {
            at: at + self.propagation,
            from,
            open_until,
        });
    }

    fn release(&mut self, r: usize, at: Duration, guard: &dyn Guard) {
        if self.holds[r] != Hold::Free {
            guard.release(at);
        }
        self.holds[r] = Hold::Free;
        if let Some(last) = self.held[r].last_mut() {
            if last.1.is_none() {
                last.1 = Some(at);
            }
        }
    }

    /// Hands out every trip and close due by `now`, in the order they were
    /// sent: a trip holds a replica's breaker open ([`Guard::hold`]), a close
    /// releases it ([`Guard::release`]).
    pub(super) fn deliver<'a>(&mut self, now: Duration, guards: impl Fn(usize) -> &'a dyn Guard) {
        let (due, later): (Vec<Delivery>, Vec<Delivery>) =
            self.pending.drain(..).partition(|d| d.at <= now);
        self.pending = later;
        for d in due {
            for r in (0..self.holds.len()).filter(|&r| r != d.from) {
                match d.open_until {
                    Some(until) if self.prober != Some(r) => {
                        if self.holds[r] == Hold::Free {
                            self.held[r].push((d.at, None));
                            guards(r).hold(d.at);
                        }
                        self.holds[r] = Hold::Open(until);
                    }
                    Some(_) => {}
                    None => self.release(r, d.at, guards(r)),
                }
            }
        }
    }
}

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

use super::{Held, Outcome, RequestRecord, TransitionRecord};
use crate::guard::{Admission, Guard, Ticket};
use crate::scenario::{CallPlan, CallResult, Scenario, StrategyKind, StrategySpec, FLEET_WINDOW};
use std::collections::BTreeMap;
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
/// In a fleet, `replica` is the request's replica and `gate` what the fleet
/// says first ([`FleetRules::gate`]): ask the breaker, reject without
/// asking it, or let a fleet probe through.
pub(super) fn start_attempt(
    scenario: &Scenario,
    guard: &dyn Guard,
    r: &mut RequestRecord,
    now: Duration,
    (replica, gate): (usize, Gate),
) -> Option<(Box<dyn Ticket>, CallPlan)> {
    if r.start.is_none() {
        r.start = Some(now);
    }
    let admission = match gate {
        Gate::Ask { .. } => guard.admit(now),
        Gate::Reject => Admission::FastFail,
        Gate::Probe(_) => Admission::Call(Box::new(FleetProbe)),
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

/// A probe lease lasts this many `sync_every` (`fusebox::fleet`'s default
/// `probe_lease`): its holder gives it back after that long without a call.
const LEASE_SYNCS: u32 = 3;

/// What the fleet says before a replica's worker starts an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gate {
    /// The replica's own breaker decides; `counted`: a closed-state call
    /// whose verdict goes into the fleet's window.
    Ask {
        /// Counted for the fleet's window.
        counted: bool,
    },
    /// Rejected without asking the breaker: held open by the fleet, or
    /// half-open without the probe lease.
    Reject,
    /// A probe for the fleet by a replica the fleet opened (its breaker is
    /// held; the fleet's half-open is the lab's, numbered by the hold).
    Probe(u64),
}

/// The ticket of a fleet probe: its verdict goes to [`FleetRules::verdict`].
struct FleetProbe;

impl Ticket for FleetProbe {
    fn finish(self: Box<Self>, _now: Duration, _result: CallResult) {}
}

/// Where the fleet holds a replica, whatever its own breaker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Its own breaker decides.
    Free,
    /// Opened by the fleet until then (`fusebox::fleet`: `trip_remote`).
    Open(Duration),
    /// That open period is over: half-open, probing only with the lease.
    HalfOpen {
        in_flight: u32,
        successes: u32,
        /// Which half-open period (a probe of an older one is stale).
        id: u64,
    },
}

/// A trip or a close on its way to the other replicas.
#[derive(Debug, Clone, Copy)]
struct Delivery {
    at: Duration,
    from: usize,
    /// `Some(remaining)`: a trip; `None`: a close.
    trip: Option<Duration>,
}

/// The fleet's window: a rate policy's rule, and its span in buckets.
#[derive(Debug, Clone, Copy)]
struct WindowRule {
    span_ms: u64,
    bucket_ms: u64,
    min_calls: u64,
    failure_rate: Option<f64>,
    slow: Option<(Duration, f64)>,
}

impl WindowRule {
    fn of(spec: &StrategySpec) -> Option<WindowRule> {
        let StrategyKind::Fusebox(c) = &spec.kind else {
            return None;
        };
        let c = c.resolved().ok()?;
        if c.failure_rate.is_none() && c.slow_call_rate.is_none() {
            return None;
        }
        let span_ms = c.time_window.unwrap_or(FLEET_WINDOW).as_millis() as u64;
        Some(WindowRule {
            span_ms,
            bucket_ms: (span_ms / 10).max(1),
            min_calls: u64::from(c.min_calls.unwrap_or(1)),
            failure_rate: c.failure_rate,
            slow: c.slow_call_duration.zip(c.slow_call_rate),
        })
    }

    /// The library's rate rule on the fleet's totals.
    fn trips(&self, t: Tally) -> bool {
        let rate = |part: u64| part as f64 / t.calls as f64;
        t.calls >= self.min_calls
            && (self.failure_rate.is_some_and(|r| rate(t.failures) >= r)
                || self.slow.is_some_and(|(_, r)| rate(t.slow) >= r))
    }
}

/// Closed-state verdicts: calls, failures, slow calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    calls: u64,
    failures: u64,
    slow: u64,
}

/// One replica, as its fleet node sees it.
#[derive(Debug, Clone)]
struct Node {
    hold: Hold,
    /// It knows the fleet's breaker is open (until a close): a failed probe
    /// of its own then reopens the fleet whatever the quorum.
    fleet_open: bool,
    /// Its own breaker's half-open was seen (the lease was asked for).
    asked: bool,
    /// To ask for the lease after the call being admitted.
    ask: bool,
    /// A call found its breaker open or half-open since its last sync.
    demand: bool,
    /// The last sync that found such calls.
    demand_at: Option<Duration>,
    /// The end of the fleet's open period as it knows it: it syncs then.
    wake: Option<Duration>,
    tally: Tally,
    sent: Tally,
    sent_at: Duration,
    /// Its own breaker's transitions already seen.
    seen: usize,
    log: Vec<TransitionRecord>,
    held: Held,
}

/// The fleet's rules, as `fusebox::fleet` documents and implements them,
/// in virtual time, with Redis's keys as plain values:
///
/// - **trips travel**: a replica's breaker opening is a trip; it opens the
///   fleet when `quorum` distinct replicas tripped within [`FLEET_WINDOW`]
///   (or it bypasses the quorum: a failed probe of a replica that knew the
///   fleet open, a trip of the fleet's window); the fleet's open period
///   (Redis's key) runs `open_for` from the trip, and every other replica is
///   opened `propagation` later for `open_for` (a longer open period is kept;
///   a replica open on its own stays open to the later of the two ends);
/// - **probe leases**: a replica's breaker that is half-open (its own, or the
///   fleet's once its open period is over) rejects calls unless it holds the
///   fleet's one probe lease; it asks for it only on demand: at a sync, if
///   calls found it open or half-open since its last sync and it is half-open
///   or its open period ends within `sync_every` (a sync does not step it to
///   half-open), and at once when a call first finds it half-open (that call
///   is rejected: the lease comes back after it); the lease is given when
///   nobody holds it and the fleet's open period ends within `sync_every`
///   (so a replica with calls may hold it before the period ends, and its
///   first half-open call probes); a replica also syncs when the fleet's
///   open period it knows of ends (from the trip it made or heard, the
///   later end if several), even between `sync_every`s; its holder admits `half_open_probes`
///   probes at once and closes after `successes_to_close`; it gives the lease
///   back at a sync when it is neither open nor half-open, or has no probe in
///   flight and no sync found calls of its for a lease's life ([`LEASE_SYNCS`]
///   x `sync_every`); a trip that opens the fleet and a close drop it;
/// - **a close travels**: any replica's breaker closing from half-open
///   clears the fleet's open period, lease, quorum and window, and closes
///   every other replica's breaker `propagation` later;
/// - **the fleet's window** (rate policies): every `sync_every` (all
///   replicas at the same instants, replica 1 first) each replica adds the
///   closed-state verdicts since its last sync to buckets of `span / 10`
///   (span: the breaker's `time_window`, or [`FLEET_WINDOW`] for a count
///   window), reads the totals, and, once `quorum` replicas reported
///   failures in it, trips if its breaker is closed and the totals break its
///   rate with `min_calls`; a sync also catches up an open period a replica
///   has not heard of yet.
///
/// A replica's exchanges with Redis take no time; what it publishes reaches
/// the others `propagation` later. The lab can only hold a library breaker
/// (`force_open`) and release it (`reset`), so a replica the fleet opened
/// runs its fleet half-open in the lab (`Gate::Probe`); its log records what
/// the library's breaker would (`remote` for the fleet's own changes).
/// Left out: lost messages, lease expiry of a dead replica, slow probes.
pub(super) struct FleetRules {
    share: bool,
    quorum: usize,
    propagation: Duration,
    sync_every: Duration,
    open_for: Duration,
    probes: u32,
    successes: u32,
    window: Option<WindowRule>,
    nodes: Vec<Node>,
    /// Redis: the fleet's open period ends then.
    open_until: Option<Duration>,
    /// Redis: the probe lease's holder, since when.
    lease: Option<(usize, Duration)>,
    /// Redis: trips toward the quorum, by replica.
    trips: Vec<(usize, Duration)>,
    /// Redis: the fleet window's buckets, and the last bucket each replica
    /// reported failures in.
    buckets: BTreeMap<u64, Tally>,
    failing: BTreeMap<usize, u64>,
    pending: Vec<Delivery>,
    next_id: u64,
    next_sync: Duration,
}

impl FleetRules {
    pub(super) fn new(scenario: &Scenario, spec: &StrategySpec) -> Self {
        let n = scenario.replicas();
        let fleet = scenario.fleet.as_ref();
        let (probes, successes) = match &spec.kind {
            StrategyKind::Fusebox(c) => c.resolved().map_or((1, 1), |c| {
                (
                    c.half_open_probes.unwrap_or(1),
                    c.successes_to_close.unwrap_or(1),
                )
            }),
            _ => (1, 1),
        };
        // Validation refused a strategy without a fixed open period.
        let open_for = spec.fleet_open_for().ok().flatten();
        let sync_every = fleet.map_or(Duration::from_secs(1), |f| f.sync_every);
        FleetRules {
            share: scenario.shares_trips() && open_for.is_some(),
            quorum: fleet.map_or(1, |f| f.quorum),
            propagation: fleet.map_or(Duration::ZERO, |f| f.propagation),
            sync_every,
            open_for: open_for.unwrap_or_default(),
            probes,
            successes,
            window: WindowRule::of(spec),
            nodes: vec![
                Node {
                    hold: Hold::Free,
                    fleet_open: false,
                    asked: false,
                    ask: false,
                    demand: false,
                    demand_at: None,
                    wake: None,
                    tally: Tally::default(),
                    sent: Tally::default(),
                    sent_at: Duration::ZERO,
                    seen: 0,
                    log: Vec::new(),
                    held: Vec::new(),
                };
                n
            ],
            open_until: None,
            lease: None,
            trips: Vec::new(),
            buckets: BTreeMap::new(),
            failing: BTreeMap::new(),
            pending: Vec::new(),
            next_id: 0,
            next_sync: sync_every,
        }
    }

    /// Each replica's transitions (its breaker's, and the fleet's on it),
    /// and the periods the fleet held it open: the run's [`super::FleetRun`].
    pub(super) fn finish(
        mut self,
        guards: &[&dyn Guard],
    ) -> (Vec<Vec<TransitionRecord>>, Vec<Held>) {
        if !self.share {
            let logs = guards.iter().map(|g| g.transitions()).collect();
            return (logs, vec![Vec::new(); guards.len()]);
        }
        for (r, g) in guards.iter().enumerate() {
            self.observe(r, *g);
        }
        self.nodes.into_iter().map(|n| (n.log, n.held)).unzip()
    }

    /// When the next trip or close arrives, or the next sync is due
    /// (`active`: the run still has requests to come or calls in flight).
    pub(super) fn next_event(&self, active: bool) -> Option<Duration> {
        let delivery = self.pending.iter().map(|d| d.at).min();
        let wake = self.nodes.iter().filter_map(|n| n.wake).min();
        let sync = (self.share && active).then_some(self.next_sync);
        delivery
            .into_iter()
            .chain(sync.into_iter().chain(wake.filter(|_| active)))
            .min()
    }

    /// What replica `r` does with a call starting at `now` ([`Gate`]).
    pub(super) fn gate(&mut self, r: usize, now: Duration, guard: &dyn Guard) -> Gate {
        if !self.share {
            return Gate::Ask { counted: false };
        }
        let state = self.state(r, now, guard);
        if matches!(state, "open" | "half_open") {
            self.nodes[r].demand = true;
        }
        let holds_lease = self.lease.is_some_and(|(h, _)| h == r);
        let gate = match self.nodes[r].hold {
            Hold::Open(_) => Gate::Reject,
            Hold::HalfOpen { in_flight, id, .. } => {
                if holds_lease && in_flight < self.probes {
                    if let Hold::HalfOpen { in_flight, .. } = &mut self.nodes[r].hold {
                        *in_flight += 1;
                    }
                    Gate::Probe(id)
                } else {
                    Gate::Reject
                }
            }
            Hold::Free if state == "half_open" && !holds_lease => Gate::Reject,
            Hold::Free => Gate::Ask {
                counted: self.window.is_some() && state == "closed",
            },
        };
        // First found half-open: ask for the lease, once this call is answered.
        let half_open = state == "half_open";
        self.nodes[r].ask = half_open && !self.nodes[r].asked;
        self.nodes[r].asked = half_open;
        gate
    }

    /// After the admission [`gate`](Self::gate) led to: the lease asked
    /// for, the breaker's own transitions told.
    pub(super) fn admitted(&mut self, r: usize, now: Duration, guard: &dyn Guard) {
        if !self.share {
            return;
        }
        if std::mem::take(&mut self.nodes[r].ask) {
            self.sync(r, now, guard);
        }
        self.observe(r, guard);
    }

    /// The call of replica `r` that `gate` let through, started at
    /// `start`, ended at `now` with `result`; its ticket was handed back.
    pub(super) fn verdict(
        &mut self,
        r: usize,
        (start, now): (Duration, Duration),
        result: CallResult,
        gate: Gate,
        guard: &dyn Guard,
    ) {
        if !self.share {
            return;
        }
        match gate {
            Gate::Ask { counted: true } => {
                let w = self.window.expect("counted only with a window");
                let t = &mut self.nodes[r].tally;
                t.calls += 1;
                t.failures += u64::from(!result.is_ok());
                t.slow += u64::from(w.slow.is_some_and(|(d, _)| now - start >= d));
            }
            Gate::Probe(id) => self.probe_done(r, now, id, result.is_ok(), guard),
            _ => {}
        }
        self.observe(r, guard);
    }

    /// Replica `r`'s state at `now`: the fleet's hold, or its own breaker's
    /// (`half_open` once its open period is over); the lazy step of the
    /// fleet's open period to half-open happens here.
    fn state(&mut self, r: usize, now: Duration, guard: &dyn Guard) -> &'static str {
        match self.nodes[r].hold {
            Hold::Open(until) if now >= until => {
                self.next_id += 1;
                self.nodes[r].hold = Hold::HalfOpen {
                    in_flight: 0,
                    successes: 0,
                    id: self.next_id,
                };
                self.log(r, now, "open", "half_open", false);
                "half_open"
            }
            Hold::Open(_) => "open",
            Hold::HalfOpen { .. } => "half_open",
            Hold::Free => {
                let state = guard.state(now);
                self.observe(r, guard);
                state
            }
        }
    }

    /// Replica `r`'s state at `now` without the lazy step to half-open (a
    /// call's to take, not a sync's), and what is left of its open period.
    fn peek(&self, r: usize, now: Duration, guard: &dyn Guard) -> (&'static str, Duration) {
        match self.nodes[r].hold {
            Hold::Open(until) => ("open", until.saturating_sub(now)),
            Hold::HalfOpen { .. } => ("half_open", Duration::ZERO),
            Hold::Free => match guard.transitions().last() {
                Some(t) if t.to == "open" => ("open", (t.at + self.open_for).saturating_sub(now)),
                Some(t) => (t.to, Duration::ZERO),
                None => ("closed", Duration::ZERO),
            },
        }
    }

    fn log(&mut self, r: usize, at: Duration, from: &'static str, to: &'static str, remote: bool) {
        self.nodes[r].log.push(TransitionRecord {
            at,
            from,
            to,
            remote,
        });
    }

    /// Replica `r`'s breaker's new transitions: trips and closes travel.
    fn observe(&mut self, r: usize, guard: &dyn Guard) {
        let all = guard.transitions();
        let new = all[self.nodes[r].seen.min(all.len())..].to_vec();
        self.nodes[r].seen = all.len();
        for t in new {
            self.nodes[r].log.push(t);
            match (t.from, t.to) {
                (from, "open") => {
                    self.nodes[r].asked = false;
                    let bypass = from == "half_open" && self.nodes[r].fleet_open;
                    self.trip(r, t.at, self.open_for, bypass);
                }
                ("half_open", "closed") => self.close(r, t.at),
                _ => {}
            }
        }
    }

    /// Holds or releases replica `r`'s breaker (`fusebox`: force_open,
    /// reset): those transitions are the lab's means, not the breaker's.
    fn hold_breaker(&mut self, r: usize, now: Duration, guard: &dyn Guard, hold: bool) {
        self.observe(r, guard);
        if hold {
            guard.hold(now);
        } else {
            guard.release(now);
        }
        self.nodes[r].seen = guard.transitions().len();
    }

    /// Replica `r` tripped at `at` (its breaker opened for `remaining`):
    /// the trip script.
    fn trip(&mut self, r: usize, at: Duration, remaining: Duration, bypass: bool) {
        let quorum = if bypass { 1 } else { self.quorum };
        if quorum > 1 {
            self.trips.retain(|&(n, t)| n != r && at - t < FLEET_WINDOW);
            self.trips.push((r, at));
            if self.trips.len() < quorum {
                return;
            }
        }
        self.nodes[r].fleet_open = true;
        self.wake(r, at + remaining);
        if self
            .open_until
            .is_some_and(|u| u > at && u - at >= remaining)
        {
            return;
        }
        self.open_until = Some(at + remaining);
        self.lease = None;
        self.send(r, at, Some(remaining));
    }

    /// Replica `r` learnt that the fleet's open period ends at `end`.
    fn wake(&mut self, r: usize, end: Duration) {
        let wake = &mut self.nodes[r].wake;
        *wake = Some(wake.map_or(end, |w| w.max(end)));
    }

    /// Replica `r`'s breaker closed at `at`: the close script.
    fn close(&mut self, r: usize, at: Duration) {
        self.nodes[r].wake = None;
        self.open_until = None;
        self.lease = None;
        self.trips.clear();
        self.buckets.clear();
        self.failing.clear();
        self.nodes[r].fleet_open = false;
        self.send(r, at, None);
    }

    fn send(&mut self, from: usize, at: Duration, trip: Option<Duration>) {
        self.pending.push(Delivery {
            at: at + self.propagation,
            from,
            trip,
        });
    }

    /// The fleet opens replica `r` at `now` for `remaining` (a trip that
    /// arrived, or caught up at a sync): `trip_remote`.
    fn open(&mut self, r: usize, now: Duration, remaining: Duration, guard: &dyn Guard) {
        self.wake(r, now + remaining);
        let node = &mut self.nodes[r];
        node.fleet_open = true;
        node.asked = false;
        let until = now + remaining;
        match node.hold {
            Hold::Open(u) => node.hold = Hold::Open(u.max(until)),
            Hold::HalfOpen { .. } => {
                node.hold = Hold::Open(until);
                self.log(r, now, "half_open", "open", true);
            }
            Hold::Free => {
                let from = guard.state(now);
                self.observe(r, guard);
                if from == "open" && guard.open_until(now).is_none_or(|own| own >= until) {
                    // Open on its own at least as long: left alone.
                    return;
                }
                self.hold_breaker(r, now, guard, true);
                self.nodes[r].hold = Hold::Open(until);
                self.nodes[r].held.push((now, None));
                if from != "open" {
                    // Open already, it only stays open longer: no transition.
                    self.log(r, now, from, "open", true);
                }
            }
        }
    }

    /// The fleet closes replica `r` at `now` (a close arrived): `close_remote`.
    fn closed_by_fleet(&mut self, r: usize, now: Duration, guard: &dyn Guard) {
        self.nodes[r].fleet_open = false;
        self.nodes[r].wake = None;
        self.nodes[r].asked = false;
        let from = match self.nodes[r].hold {
            Hold::Open(_) => "open",
            Hold::HalfOpen { .. } => "half_open",
            Hold::Free => {
                let state = guard.state(now);
                self.observe(r, guard);
                if !matches!(state, "open" | "half_open") {
                    return;
                }
                state
            }
        };
        self.hold_breaker(r, now, guard, false);
        self.nodes[r].hold = Hold::Free;
        if let Some(last) = self.nodes[r].held.last_mut() {
            if last.1.is_none() {
                last.1 = Some(now);
            }
        }
        self.log(r, now, from, "closed", true);
    }

    /// A fleet probe of replica `r` (of half-open period `id`) ended at `now`.
    fn probe_done(&mut self, r: usize, now: Duration, id: u64, ok: bool, guard: &dyn Guard) {
        let Hold::HalfOpen {
            in_flight,
            successes,
            id: current,
        } = &mut self.nodes[r].hold
        else {
            return;
        };
        if *current != id {
            return;
        }
        *in_flight -= 1;
        if !ok {
            self.nodes[r].hold = Hold::Open(now + self.open_for);
            self.log(r, now, "half_open", "open", false);
            let bypass = self.nodes[r].fleet_open;
            self.trip(r, now, self.open_for, bypass);
            return;
        }
        *successes += 1;
        if *successes >= self.successes {
            self.hold_breaker(r, now, guard, false);
            self.nodes[r].hold = Hold::Free;
            if let Some(last) = self.nodes[r].held.last_mut() {
                if last.1.is_none() {
                    last.1 = Some(now);
                }
            }
            self.log(r, now, "half_open", "closed", false);
            self.close(r, now);
        }
    }

    /// Hands out every trip and close due by `now`, in the order they were sent.
    pub(super) fn deliver<'a>(&mut self, now: Duration, guards: impl Fn(usize) -> &'a dyn Guard) {
        let (due, later): (Vec<Delivery>, Vec<Delivery>) =
            self.pending.drain(..).partition(|d| d.at <= now);
        self.pending = later;
        for d in due {
            for r in (0..self.nodes.len()).filter(|&r| r != d.from) {
                match d.trip {
                    Some(remaining) => self.open(r, d.at, remaining, guards(r)),
                    None => self.closed_by_fleet(r, d.at, guards(r)),
                }
            }
        }
    }

    /// Every replica's sync, if one is due at `now`, and the sync of each
    /// replica whose known fleet open period ends now (replica 1 first;
    /// one sync for a replica where both fall); whether any ran.
    pub(super) fn tick<'a>(
        &mut self,
        now: Duration,
        guards: impl Fn(usize) -> &'a dyn Guard,
    ) -> bool {
        if !self.share {
            return false;
        }
        let due = now >= self.next_sync;
        if due {
            self.next_sync += self.sync_every;
        }
        let mut ran = false;
        for r in 0..self.nodes.len() {
            let woken = self.nodes[r].wake.is_some_and(|w| w <= now);
            if woken {
                self.nodes[r].wake = None;
            }
            if due || woken {
                self.sync(r, now, guards(r));
                ran = true;
            }
        }
        ran
    }

    /// One replica's sync at `now`: its window delta in, the totals out (a
    /// trip if they call for one), the probe lease asked for, kept or given
    /// back, an open period it missed caught up.
    fn sync(&mut self, r: usize, now: Duration, guard: &dyn Guard) {
        let (state, left) = self.peek(r, now, guard);
        let mut totals = None;
        if let Some(w) = self.window {
            let node = &mut self.nodes[r];
            if now - node.sent_at > Duration::from_millis(w.span_ms) {
                node.sent = node.tally;
            }
            let delta = Tally {
                calls: node.tally.calls - node.sent.calls,
                failures: node.tally.failures - node.sent.failures,
                slow: node.tally.slow - node.sent.slow,
            };
            node.sent = node.tally;
            node.sent_at = now;
            let b = now.as_millis() as u64 / w.bucket_ms;
            if delta.calls > 0 {
                let t = self.buckets.entry(b).or_default();
                t.calls += delta.calls;
                t.failures += delta.failures;
                t.slow += delta.slow;
                if delta.failures + delta.slow > 0 {
                    self.failing.insert(r, b);
                }
            }
            let oldest = (b + 1).saturating_sub(w.span_ms.div_ceil(w.bucket_ms));
            self.buckets.retain(|&k, _| k >= oldest);
            self.failing.retain(|_, &mut k| k >= oldest);
            let sum = self.buckets.values().fold(Tally::default(), |a, t| Tally {
                calls: a.calls + t.calls,
                failures: a.failures + t.failures,
                slow: a.slow + t.slow,
            });
            totals = Some((w, sum, self.failing.len()));
        }
        let asked = std::mem::take(&mut self.nodes[r].demand);
        if asked {
            self.nodes[r].demand_at = Some(now);
        }
        let open = matches!(state, "open" | "half_open");
        let ahead = state == "half_open" || left <= self.sync_every;
        match self.lease {
            Some((h, _)) if h == r => {
                let in_flight = match self.nodes[r].hold {
                    Hold::HalfOpen { in_flight, .. } => in_flight,
                    _ => guard.probes_in_flight(),
                };
                let idle = self.nodes[r]
                    .demand_at
                    .is_none_or(|at| now - at >= self.sync_every * LEASE_SYNCS);
                if !open || (in_flight == 0 && idle) {
                    self.lease = None;
                }
            }
            None if open
                && ahead
                && asked
                && self.open_until.is_none_or(|u| u <= now + self.sync_every) =>
            {
                self.lease = Some((r, now));
            }
            _ => {}
        }
        if let Some(until) = self.open_until.filter(|&u| u > now) {
            // The fleet's open period as Redis has it (a no-op where this
            // replica is open at least as long).
            self.open(r, now, until - now, guard);
        }
        if let Some((w, sum, failing)) = totals {
            let free = self.nodes[r].hold == Hold::Free;
            if free
                && self.quorum <= failing.max(1)
                && w.trips(sum)
                && self.peek(r, now, guard).0 == "closed"
            {
                // The fleet's window trips this replica's breaker.
                self.hold_breaker(r, now, guard, true);
                self.nodes[r].hold = Hold::Open(now + self.open_for);
                self.log(r, now, "closed", "open", false);
                self.trip(r, now, self.open_for, true);
            }
        }
    }
}

//! The request rules, written once and driven by both modes:
//!
//! - a request joins one FIFO queue on arrival, or is rejected if the queue
//!   is bounded and would hold more than `queue` requests after the idle
//!   workers took theirs ([`queue_admits`]);
//! - the guard is consulted when a worker starts an attempt (as in the
//!   article); a fast-fail ends the request at once, and only a request that
//!   never reached the downstream counts as a fast-fail ([`start_attempt`]);
//! - a downstream call's result and duration are decided by its start time
//!   (and its healthy latency by a draw for the request and the attempt,
//!   [`Scenario::plan`]); after a failed call the same worker retries at
//!   once while retries remain and the guard allows it (a retry budget:
//!   each request deposits, each retry withdraws; [`end_attempt`]);
//! - a hedged call (virtual mode) sends another attempt when the hedge
//!   delay passes while one still runs ([`start_hedge`]); the guard is
//!   consulted for it as for any attempt, a refused hedge is not sent. The
//!   first success answers the request and the other attempts are
//!   cancelled; a failure waits for the attempts still running, and the
//!   last to fail ends the call, retried like any ([`end_call`]).
//!
//! A fleet's rules are not here: a virtual fleet drives the library's own
//! `fusebox::fleet::protocol` ([`super::fleet_virtual`]).

use super::{Outcome, RequestRecord};
use crate::guard::{Admission, Guard, Ticket};
use crate::scenario::{CallPlan, CallResult, Scenario};
use std::time::Duration;

/// Whether an arriving request joins the queue, given the requests already
/// `waiting` and the `idle` workers about to take some of them.
pub(super) fn queue_admits(scenario: &Scenario, waiting: usize, idle: usize) -> bool {
    scenario.queue == 0 || waiting.saturating_sub(idle) < scenario.queue
}

/// A worker starts an attempt of request `r` at `now`: the guard admits it
/// (the call to make, and the ticket to hand back with its result) or
/// fast-fails it (the request ends now). In a fleet, `replica` is the
/// request's replica (its downstream may fail apart from the others').
pub(super) fn start_attempt(
    scenario: &Scenario,
    guard: &dyn Guard,
    r: &mut RequestRecord,
    request: usize,
    now: Duration,
    replica: usize,
) -> Option<(Box<dyn Ticket>, CallPlan)> {
    if r.start.is_none() {
        r.start = Some(now);
    }
    // Its first attempt (a retry follows a call made).
    if r.attempts == 0 {
        guard.begin_request(now);
    }
    // Several hosts: the guard's balancer chooses the host, whose faults apply.
    let (admission, host) = guard.admit_on(now);
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
                scenario.plan(request, r.attempts, host.unwrap_or(replica), now),
            ))
        }
    }
}

/// A hedge of request `r` (number `request`) goes out at `now`, while
/// another of its attempts runs: the guard admits it, as any attempt (the
/// call to make and its ticket), or refuses it, and then it is not sent and
/// the request goes on with the attempts it has.
pub(super) fn start_hedge(
    scenario: &Scenario,
    guard: &dyn Guard,
    r: &mut RequestRecord,
    request: usize,
    now: Duration,
    replica: usize,
) -> Option<(Box<dyn Ticket>, CallPlan)> {
    match guard.admit(now) {
        Admission::FastFail => None,
        Admission::Call(ticket) => {
            r.attempts += 1;
            Some((ticket, scenario.plan(request, r.attempts, replica, now)))
        }
    }
}

/// What a request does after one of its attempts ended ([`end_call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// It is over: answered (its other attempts, if any, are cancelled),
    /// or failed with no retry left.
    Done,
    /// It failed and another attempt still runs: it waits for that one.
    Wait,
    /// It failed and is retried now.
    Retry,
}

/// An attempt of request `r` ended at `end` with `result`, while `running`
/// others of it still run (hedges): the guard hears the verdict, the
/// request takes the result. `round`: the request's calls so far, each
/// with its hedges (its attempts when nothing hedges), which retries count;
/// a retry they allow is made if the guard allows it too.
pub(super) fn end_call(
    scenario: &Scenario,
    guard: &dyn Guard,
    ticket: Box<dyn Ticket>,
    r: &mut RequestRecord,
    (end, result): (Duration, CallResult),
    running: bool,
    round: u32,
) -> Next {
    ticket.finish(end, result);
    r.end = end;
    r.outcome = Outcome::of(result);
    if result.is_ok() {
        Next::Done
    } else if running {
        Next::Wait
    } else if round <= scenario.client.retries && guard.allow_retry(end) {
        Next::Retry
    } else {
        Next::Done
    }
}

/// The call of request `r` ended at `end` with `result` (nothing hedges):
/// [`end_call`]; `true` if it is to be retried now.
pub(super) fn end_attempt(
    scenario: &Scenario,
    guard: &dyn Guard,
    ticket: Box<dyn Ticket>,
    r: &mut RequestRecord,
    end: Duration,
    result: CallResult,
) -> bool {
    let round = r.attempts;
    end_call(scenario, guard, ticket, r, (end, result), false, round) == Next::Retry
}

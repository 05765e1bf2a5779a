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
    now: Duration,
    replica: usize,
) -> Option<(Box<dyn Ticket>, CallPlan)> {
    if r.start.is_none() {
        r.start = Some(now);
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
                scenario
                    .downstream
                    .plan_on(host.unwrap_or(replica), now, scenario.client.timeout),
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

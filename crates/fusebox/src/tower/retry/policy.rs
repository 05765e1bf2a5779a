use crate::retry::{RetryBudget, RetryIf};
use crate::tower::BoxError;
use crate::{Cause, PolicyError};
use std::time::Duration;

/// What to do after a failed attempt.
pub(crate) enum Next {
    /// Give the error to the caller.
    Stop,
    /// Wait this long, then send the request again.
    After(Duration),
}

/// The retry rules, shared by the layer, the service and its futures. The
/// same decisions as [`crate::retry::Retry`], on boxed errors.
#[derive(Debug, Clone)]
pub(crate) struct Rules<P> {
    pub(crate) max_attempts: u32,
    pub(crate) retry_if: P,
    pub(crate) rejections: bool,
    pub(crate) timeouts: bool,
    pub(crate) budget: Option<RetryBudget>,
}

impl<P: RetryIf<BoxError>> Rules<P> {
    /// Called once per request, before its first attempt.
    pub(crate) fn start(&self) {
        if let Some(budget) = &self.budget {
            budget.deposit();
        }
    }

    /// The decision after attempt number `attempt` (1-based) failed with
    /// `error`; `backoff` is this request's remaining delays. Takes a budget
    /// token only when everything else allows the retry.
    pub(crate) fn next(
        &self,
        attempt: u32,
        error: &BoxError,
        backoff: &mut impl Iterator<Item = Duration>,
    ) -> Next {
        let at_least = match error.cause() {
            // Refused by fusebox: the call never ran. Only when asked, never
            // sooner than the breaker says a call may pass, and never when
            // the breaker is forced open (waiting cannot help).
            Cause::Rejected(r) if self.rejections => match r.retry_after() {
                Some(after) => after,
                None => return Next::Stop,
            },
            Cause::BulkheadFull(_) if self.rejections => Duration::ZERO,
            Cause::Rejected(_) | Cause::BulkheadFull(_) => return Next::Stop,
            Cause::TimedOut(_) if self.timeouts => Duration::ZERO,
            Cause::TimedOut(_) => return Next::Stop,
            Cause::Failed(e) if self.retry_if.retry_if(e) => Duration::ZERO,
            _ => return Next::Stop,
        };
        if attempt >= self.max_attempts {
            return Next::Stop;
        }
        let Some(delay) = backoff.next() else {
            // The backoff is exhausted: so are the retries.
            return Next::Stop;
        };
        if let Some(budget) = &self.budget {
            if !budget.try_withdraw() {
                return Next::Stop;
            }
        }
        Next::After(delay.max(at_least))
    }
}

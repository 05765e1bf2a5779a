//! The admission stages of a pipeline: [`Stage`], one policy that admits or
//! refuses each attempt, and what an attempt holds while it runs.

use super::PipelineError;
use crate::breaker::{CircuitBreaker, Outcome, Ticket};
use crate::bulkhead::Bulkhead;
#[cfg(feature = "limit")]
use crate::limit::{AdaptiveLimit, LimitTicket};
use crate::policy::Inspect;
#[cfg(feature = "ratelimit")]
use crate::ratelimit::RateLimiter;
#[cfg(feature = "throttle")]
use crate::throttle::Throttle;
use std::sync::Arc;

/// One policy that admits or refuses each attempt of a [`Pipeline`](super::Pipeline)
/// call, between the retry (outside) and the timeout (inside).
///
/// A pipeline runs its stages in order, outermost first: each admits the
/// attempt or refuses it, and a refusal is seen by the stages outside it
/// (a breaker counts it for nothing: a local refusal says nothing about the
/// dependency). [`PipelineBuilder::breaker`](super::PipelineBuilder::breaker)
/// and its siblings place a stage at its place in the default order
/// (breaker, throttle, rate limiter, adaptive limit, bulkhead);
/// [`PipelineBuilder::stage`](super::PipelineBuilder::stage) places one
/// where you put it.
///
/// # Examples
///
/// ```
/// use fusebox::pipeline::Stage;
/// use fusebox::{Bulkhead, CircuitBreaker, Pipeline};
///
/// // The bulkhead outside the breaker: a full bulkhead refuses before the
/// // breaker is asked.
/// let p = Pipeline::builder()
///     .stage(Bulkhead::new(8))
///     .stage(CircuitBreaker::builder().build()?)
///     .build();
/// let kinds: Vec<_> = p.stages().iter().map(Stage::kind).collect();
/// assert_eq!(kinds, ["bulkhead", "breaker"]);
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Stage {
    /// A circuit breaker: refuses while open, and hears every attempt's
    /// verdict (a timeout is a failure, a refusal from a stage inside it
    /// counts for nothing).
    Breaker(CircuitBreaker),
    /// An adaptive throttle (feature `throttle`): counts the attempt, refuses
    /// it at once with its rejection probability, and counts an accept when
    /// the dependency answered (a success, or an error the classifier
    /// ignores); a failure, a timeout or a refusal from inside is no accept.
    #[cfg(feature = "throttle")]
    Throttle(Throttle),
    /// A rate limiter (feature `ratelimit`): refuses an attempt over its
    /// rate, at once, with the time until one would be admitted (it never
    /// waits inside a pipeline).
    #[cfg(feature = "ratelimit")]
    RateLimiter(RateLimiter),
    /// An adaptive concurrency limit (feature `limit`): refuses an attempt
    /// at once when its limit is reached, and hears every attempt's
    /// verdict (an answer is a sample of its round-trip time from
    /// admission, a timeout is a drop, a refusal from inside and the
    /// call's own errors are no sample).
    #[cfg(feature = "limit")]
    Limit(AdaptiveLimit),
    /// A bulkhead: holds a slot while the attempt runs; the sync path waits
    /// up to its `max_wait` blocking, the async path asynchronously.
    Bulkhead(Bulkhead),
}

#[cfg(feature = "throttle")]
impl From<Throttle> for Stage {
    fn from(throttle: Throttle) -> Self {
        Stage::Throttle(throttle)
    }
}

impl Stage {
    /// The kind of policy: `"breaker"`, `"throttle"`, `"rate_limiter"`,
    /// `"limit"` or `"bulkhead"`
    /// (the `policy` of its refusals).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::pipeline::Stage::from(fusebox::Bulkhead::new(1));
    /// assert_eq!(s.kind(), "bulkhead");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Stage::Breaker(_) => "breaker",
            #[cfg(feature = "throttle")]
            Stage::Throttle(_) => "throttle",
            #[cfg(feature = "ratelimit")]
            Stage::RateLimiter(_) => "rate_limiter",
            #[cfg(feature = "limit")]
            Stage::Limit(_) => "limit",
            Stage::Bulkhead(_) => "bulkhead",
        }
    }

    /// The policy as observers read it ([`Inspect`]): every stage but a
    /// breaker, which observers hear through its listeners.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = fusebox::pipeline::Stage::from(fusebox::Bulkhead::new(3));
    /// assert_eq!(s.inspect().unwrap().kind(), "bulkhead");
    /// ```
    pub fn inspect(&self) -> Option<Arc<dyn Inspect>> {
        match self {
            Stage::Breaker(_) => None,
            #[cfg(feature = "throttle")]
            Stage::Throttle(t) => Some(Arc::new(t.clone())),
            #[cfg(feature = "ratelimit")]
            Stage::RateLimiter(l) => Some(Arc::new(l.clone())),
            #[cfg(feature = "limit")]
            Stage::Limit(l) => Some(Arc::new(l.clone())),
            Stage::Bulkhead(b) => Some(Arc::new(b.clone())),
        }
    }

    /// Its place in the default order, outermost first.
    pub(super) fn rank(&self) -> u8 {
        match self {
            Stage::Breaker(_) => 0,
            #[cfg(feature = "throttle")]
            Stage::Throttle(_) => 1,
            #[cfg(feature = "ratelimit")]
            Stage::RateLimiter(_) => 2,
            #[cfg(feature = "limit")]
            Stage::Limit(_) => 3,
            Stage::Bulkhead(_) => 4,
        }
    }
}

impl From<CircuitBreaker> for Stage {
    fn from(breaker: CircuitBreaker) -> Self {
        Stage::Breaker(breaker)
    }
}

impl From<Bulkhead> for Stage {
    fn from(bulkhead: Bulkhead) -> Self {
        Stage::Bulkhead(bulkhead)
    }
}

#[cfg(feature = "ratelimit")]
impl From<RateLimiter> for Stage {
    fn from(limiter: RateLimiter) -> Self {
        Stage::RateLimiter(limiter)
    }
}

#[cfg(feature = "limit")]
impl From<AdaptiveLimit> for Stage {
    fn from(limit: AdaptiveLimit) -> Self {
        Stage::Limit(limit)
    }
}

/// What a stage that hears verdicts holds while the attempt runs (Copy
/// data: the frame has no destructor but [`Entered`]'s own).
#[derive(Clone, Copy)]
pub(super) enum Held {
    /// A breaker's ticket (also the filler of stages that hold nothing).
    Breaker(Ticket),
    /// An adaptive limit's ticket.
    #[cfg(feature = "limit")]
    Limit(LimitTicket),
    /// A throttle's admission: the period its request was counted in
    /// (`None` in off mode: nothing to count).
    #[cfg(feature = "throttle")]
    Throttle(Option<u64>),
}

/// The verdict of an attempt, as each kind of stage hears it.
#[derive(Clone, Copy)]
pub(super) struct Verdict {
    /// For the breakers.
    pub(super) outcome: Outcome,
    /// For the adaptive limits: the attempt timed out (a drop).
    #[cfg(feature = "limit")]
    pub(super) timed_out: bool,
    /// For the throttles: `Some(true)` the dependency answered, and not
    /// with a failure (an accept); `Some(false)` it failed or timed out (no
    /// accept); `None` it never judged the attempt (a refusal from inside:
    /// the request is taken back).
    #[cfg(feature = "throttle")]
    pub(super) accepted: Option<bool>,
}

impl Verdict {
    /// No verdict: a refusal from inside.
    pub(super) const IGNORE: Verdict = Verdict {
        outcome: Outcome::Ignore,
        #[cfg(feature = "limit")]
        timed_out: false,
        #[cfg(feature = "throttle")]
        accepted: None,
    };
}

/// How many stages one [`Entered`] holds; a longer list nests (see
/// `Pipeline::through`).
pub(super) const HELD: usize = 4;

/// The stages that admitted an attempt, outermost first, with the breakers'
/// tickets; settled in reverse order with [`Entered::leave`].
///
/// Dropped before [`leave`](Entered::leave) while a panic unwinds (out of
/// the caller's code), the breakers count a failure; dropped otherwise (a
/// cancelled future), they release their permits without a verdict. Slots
/// are given back either way.
pub(super) struct Entered<'a> {
    stages: &'a [Stage],
    /// `tickets[i]` is stage `i`'s, when it is a breaker or a limit.
    tickets: [Held; HELD],
    /// How many of `stages` admitted the attempt and are not settled.
    len: usize,
}

impl<'a> Entered<'a> {
    /// Nothing entered yet of `stages` (at most [`HELD`]).
    #[inline]
    pub(super) fn new(stages: &'a [Stage]) -> Self {
        debug_assert!(stages.len() <= HELD);
        Entered {
            stages,
            tickets: [Held::Breaker(Ticket::BYPASS); HELD],
            len: 0,
        }
    }

    /// Asks the stages in order to admit the attempt, a bulkhead waiting
    /// up to its `max_wait` blocking; after a refusal the stages that
    /// admitted it are settled with no verdict.
    #[inline]
    pub(super) fn enter<E>(&mut self) -> Result<(), PipelineError<E>> {
        while let Some(full) = self.enter_until_wait()? {
            self.admitted(full.take_blocking().map_err(Into::into))?;
        }
        Ok(())
    }

    /// Enters the stages in order without waiting, up to a full bulkhead
    /// that may be waited for, which it returns (not entered).
    #[inline]
    pub(super) fn enter_until_wait<E>(&mut self) -> Result<Option<&'a Bulkhead>, PipelineError<E>> {
        let stages = self.stages;
        while let Some(stage) = stages.get(self.len) {
            let admitted = match stage {
                Stage::Breaker(b) => b
                    .admit()
                    .map(|t| self.ticket(Held::Breaker(t)))
                    .map_err(Into::into),
                #[cfg(feature = "throttle")]
                Stage::Throttle(t) => t
                    .admit()
                    .map(|counted| self.ticket(Held::Throttle(counted)))
                    .map_err(Into::into),
                #[cfg(feature = "ratelimit")]
                Stage::RateLimiter(l) => l.try_acquire().map_err(Into::into),
                #[cfg(feature = "limit")]
                Stage::Limit(l) => l
                    .admit()
                    .map(|t| self.ticket(Held::Limit(t)))
                    .map_err(Into::into),
                Stage::Bulkhead(b) => match b.take_or_wait() {
                    Ok(true) => Ok(()),
                    Ok(false) => return Ok(Some(b)),
                    Err(full) => Err(full.into()),
                },
            };
            self.admitted(admitted)?;
        }
        Ok(None)
    }

    /// Keeps the ticket of the stage being entered.
    #[inline]
    fn ticket(&mut self, ticket: Held) {
        if let Some(cell) = self.tickets.get_mut(self.len) {
            *cell = ticket;
        }
    }

    /// Counts the stage being entered as admitted, or settles the ones
    /// before it after its refusal.
    #[inline]
    pub(super) fn admitted<E>(
        &mut self,
        admitted: Result<(), PipelineError<E>>,
    ) -> Result<(), PipelineError<E>> {
        match admitted {
            Ok(()) => {
                self.len += 1;
                Ok(())
            }
            Err(refused) => {
                self.leave(Verdict::IGNORE);
                Err(refused)
            }
        }
    }

    /// Settles every stage entered, innermost first: each breaker hears
    /// the outcome, each limit its sample, each bulkhead gets its slot
    /// back.
    #[inline]
    pub(super) fn leave(&mut self, verdict: Verdict) {
        while self.len > 0 {
            self.len -= 1;
            let i = self.len;
            match (self.stages.get(i), self.tickets.get(i)) {
                (Some(Stage::Breaker(b)), Some(&Held::Breaker(ticket))) => {
                    b.settle(ticket, verdict.outcome)
                }
                #[cfg(feature = "limit")]
                (Some(Stage::Limit(l)), Some(&Held::Limit(ticket))) => {
                    settle_limit(l, ticket, verdict)
                }
                #[cfg(feature = "throttle")]
                (Some(Stage::Throttle(t)), Some(&Held::Throttle(Some(period)))) => {
                    match verdict.accepted {
                        Some(true) => t.accepted(),
                        Some(false) => {}
                        None => t.uncount(period),
                    }
                }
                (Some(Stage::Bulkhead(b)), _) => b.give_back(),
                _ => {}
            }
        }
    }
}

impl Drop for Entered<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.len != 0 {
            self.abandon();
        }
    }
}

impl Entered<'_> {
    /// Dropped before [`leave`](Entered::leave): a panic (a failure to the
    /// breakers) or a cancelled future (no verdict).
    #[cold]
    #[inline(never)]
    fn abandon(&mut self) {
        let panicking = std::thread::panicking();
        while self.len > 0 {
            self.len -= 1;
            let i = self.len;
            match (self.stages.get(i), self.tickets.get(i)) {
                (Some(Stage::Breaker(b)), Some(&Held::Breaker(ticket))) if panicking => {
                    b.settle(ticket, Outcome::Failure)
                }
                (Some(Stage::Breaker(b)), Some(&Held::Breaker(ticket))) => b.release(ticket),
                #[cfg(feature = "limit")]
                (Some(Stage::Limit(l)), Some(&Held::Limit(ticket))) => l.release(ticket),
                // Cancelled: taken back; a panic: the call's failure, no accept.
                #[cfg(feature = "throttle")]
                (Some(Stage::Throttle(t)), Some(&Held::Throttle(Some(period)))) if !panicking => {
                    t.uncount(period)
                }
                (Some(Stage::Bulkhead(b)), _) => b.give_back(),
                _ => {}
            }
        }
    }
}

/// An adaptive limit hears an attempt: an answer is a sample (its
/// round-trip time from admission), a timeout is a drop, anything else
/// (a refusal from inside, the call's own error) is no sample.
#[cfg(feature = "limit")]
#[inline]
fn settle_limit(limit: &AdaptiveLimit, ticket: LimitTicket, verdict: Verdict) {
    use crate::limit::Verdict as Sample;
    match verdict.outcome {
        _ if verdict.timed_out => limit.settle(ticket, Sample::Dropped),
        Outcome::Success => limit.settle_success(ticket),
        _ => limit.settle(ticket, Sample::Ignore),
    }
}

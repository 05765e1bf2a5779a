//! The state machine: the only place where a breaker changes state.
//!
//! The state and its generation live in one atomic word, read without a lock
//! on every admission. Transitions happen under a mutex that is never taken
//! on the closed-state success path; they write everything the new state needs
//! and then publish the word with a release store.

use super::event::{Reason, Transition};
use super::permit::{Outcome, Rejected};
use super::policy::{OpenPeriod, TripPolicy, WindowSpec};
use super::window::{CountWindow, TimeWindow, Totals, Window};
use crate::sync::{lock, AtomicU64, Mutex, Ordering, Striped};
use std::fmt;
use std::time::Duration;

/// Where a breaker is.
///
/// # Examples
///
/// ```
/// use fusebox::{CircuitBreaker, State};
/// let breaker = CircuitBreaker::builder().build()?;
/// assert_eq!(breaker.state(), State::Closed);
/// assert_eq!(State::HalfOpen.to_string(), "half_open");
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls go through; outcomes are counted.
    Closed,
    /// Calls are rejected until the open period is over.
    Open,
    /// A limited number of probe calls go through; their outcomes decide.
    HalfOpen,
    /// Rejects everything until [`reset`](crate::CircuitBreaker::reset).
    ForcedOpen,
    /// Admits everything, counts nothing, never trips.
    Disabled,
}

impl State {
    /// Every state, in a fixed order (for metrics).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::State::ALL.len(), 5);
    /// ```
    pub const ALL: [State; 5] = [
        State::Closed,
        State::Open,
        State::HalfOpen,
        State::ForcedOpen,
        State::Disabled,
    ];

    /// The state's name in lower snake case, as in metrics and reports.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::State::ForcedOpen.as_str(), "forced_open");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
            State::ForcedOpen => "forced_open",
            State::Disabled => "disabled",
        }
    }

    fn tag(self) -> u64 {
        match self {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
            State::ForcedOpen => 3,
            State::Disabled => 4,
        }
    }

    fn from_tag(tag: u64) -> State {
        match tag {
            0 => State::Closed,
            1 => State::Open,
            2 => State::HalfOpen,
            3 => State::ForcedOpen,
            _ => State::Disabled,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Nanoseconds on the breaker's clock.
pub(crate) type Nanos = u64;

/// `Ticket::start` when the call is not timed.
pub(crate) const NO_START: Nanos = Nanos::MAX;

/// Bit of `Core::recorders` set while a close empties the window.
const SEAL: u64 = 1 << 63;

/// The clock, read at most once per operation and only if needed.
pub(crate) struct LazyNow<'a> {
    read: &'a dyn Fn() -> Nanos,
    at: std::cell::Cell<Option<Nanos>>,
}

impl<'a> LazyNow<'a> {
    pub(crate) fn new(read: &'a dyn Fn() -> Nanos) -> Self {
        LazyNow {
            read,
            at: std::cell::Cell::new(None),
        }
    }
    pub(crate) fn get(&self) -> Nanos {
        match self.at.get() {
            Some(t) => t,
            None => {
                let t = (self.read)();
                self.at.set(Some(t));
                t
            }
        }
    }
}

/// State word: generation in the high 32 bits, state tag in the low 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Word(u64);

impl Word {
    fn new(generation: u32, state: State) -> Word {
        Word((u64::from(generation) << 32) | state.tag())
    }
    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
    fn state(self) -> State {
        State::from_tag(self.0 & 0xff)
    }
}

/// What a permit remembers about its admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub(crate) generation: u32,
    pub(crate) kind: Kind,
    /// Admission time, when something needs the call's duration; `NO_START`
    /// otherwise (a sentinel rather than an `Option` keeps the ticket in two
    /// registers on the hot path).
    pub(crate) start: Nanos,
}

/// How an admitted call's verdict is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Closed state: the verdict feeds the trip policy.
    Normal,
    /// Half-open: the verdict decides whether to close or reopen.
    Probe,
    /// Disabled: the verdict counts for nothing.
    Bypass,
}

/// What the lock guards: half-open bookkeeping and the trip counter.
#[derive(Debug, Default)]
struct Slow {
    probes_in_flight: u32,
    probe_successes: u32,
    /// Slow successful probes in this half-open period.
    probe_slow: u32,
    /// Trips since the breaker last closed (drives the open backoff).
    trips: u32,
}

/// Validated breaker settings, as the state machine needs them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settings {
    pub(crate) policy: TripPolicy,
    pub(crate) open: OpenPeriod,
    pub(crate) probes: u32,
    pub(crate) successes: u32,
}

/// The figures behind a [`Snapshot`](crate::Snapshot).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Figures {
    pub(crate) state: State,
    pub(crate) generation: u32,
    pub(crate) totals: Totals,
    pub(crate) consecutive: u32,
    pub(crate) rejected: u64,
    pub(crate) since_transition: Nanos,
}

pub(crate) struct Core {
    word: AtomicU64,
    /// When the current open period ends (meaningful while Open).
    open_until: AtomicU64,
    /// Consecutive failures, tagged with the generation they belong to:
    /// generation in the high 32 bits, count in the low 32.
    consecutive: AtomicU64,
    window: Option<Window>,
    rejected: Striped,
    last_transition: AtomicU64,
    /// Closed-state verdicts between their generation check and the end of
    /// their window record, plus the `SEAL` bit while a close empties the
    /// window. Everything about the seal is one variable, so its read-modify-
    /// writes are totally ordered and no SeqCst reasoning is needed.
    recorders: Striped,
    slow: Mutex<Slow>,
    pub(crate) settings: Settings,
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.load();
        f.debug_struct("Core")
            .field("state", &w.state())
            .field("generation", &w.generation())
            .finish_non_exhaustive()
    }
}

fn tagged(generation: u32, count: u32) -> u64 {
    (u64::from(generation) << 32) | u64::from(count)
}

impl Core {
    pub(crate) fn new(settings: Settings, now: Nanos) -> Core {
        let window = settings.policy.window.map(|spec| match spec {
            WindowSpec::Count(n) => Window::Count(CountWindow::new(n)),
            WindowSpec::Time { span, buckets } => {
                Window::Time(Box::new(TimeWindow::new(span, buckets)))
            }
        });
        Core {
            word: AtomicU64::new(Word::new(0, State::Closed).0),
            open_until: AtomicU64::new(0),
            consecutive: AtomicU64::new(tagged(0, 0)),
            window,
            rejected: Striped::new(),
            last_transition: AtomicU64::new(now),
            recorders: Striped::new(),
            slow: Mutex::new(Slow::default()),
            settings,
        }
    }

    #[inline(always)]
    fn load(&self) -> Word {
        // Acquire: pairs with the Release store in `publish`, so whoever sees a
        // state also sees what the transition wrote for it (open_until,
        // emptied counters).
        Word(self.word.load(Ordering::Acquire))
    }

    /// Admission without the clock: succeeds in Closed and Disabled only.
    #[inline(always)]
    pub(crate) fn admit_fast(&self) -> Option<Ticket> {
        let w = self.load();
        let kind = match w.state() {
            State::Closed => Kind::Normal,
            State::Disabled => Kind::Bypass,
            _ => return None,
        };
        Some(Ticket {
            generation: w.generation(),
            kind,
            start: NO_START,
        })
    }

    /// Whether a success of `ticket` would change nothing: a closed-state
    /// permit of the current closed period with no failure counted. One load.
    #[inline]
    pub(crate) fn success_is_noop(&self, ticket: &Ticket) -> bool {
        // Relaxed: see `record_closed`; a stale answer only sends the verdict
        // down the full path.
        ticket.kind == Kind::Normal
            && self.consecutive.load(Ordering::Relaxed) == tagged(ticket.generation, 0)
    }

    /// The open path: a rejection decided from the word and the open period
    /// alone, without the lock (small enough to come back in registers).
    /// `None` means "ask [`Core::admit`]".
    #[inline]
    pub(crate) fn reject_fast(&self, now: Nanos) -> Option<Rejected> {
        let w = self.load();
        match w.state() {
            State::ForcedOpen => Some(self.reject(State::ForcedOpen, None)),
            State::Open => {
                // Relaxed: ordered after the Acquire load of the word (see `load`).
                let until = self.open_until.load(Ordering::Relaxed);
                (now < until).then(|| self.reject(State::Open, Some(until - now)))
            }
            _ => None,
        }
    }

    fn reject(&self, state: State, retry_after: Option<Nanos>) -> Rejected {
        // Relaxed: a statistic.
        self.rejected.mine().fetch_add(1, Ordering::Relaxed);
        Rejected::new(state, retry_after)
    }

    /// Admission under the lock, for whatever [`Core::admit_fast`] and
    /// [`Core::reject_fast`] could not decide: the lazy Open -> HalfOpen
    /// step, probe slots, and any state that changed in between.
    pub(crate) fn admit(&self, now: Nanos) -> (Result<Ticket, Rejected>, Option<Transition>) {
        let mut slow = lock(&self.slow);
        let (w, transition) = self.cool_down(&mut slow, now);
        let ticket = |kind| Ticket {
            generation: w.generation(),
            kind,
            start: NO_START,
        };
        let result = match w.state() {
            State::Closed => Ok(ticket(Kind::Normal)),
            State::Disabled => Ok(ticket(Kind::Bypass)),
            State::ForcedOpen => Err(self.reject(State::ForcedOpen, None)),
            State::Open => {
                // Relaxed: written under the lock we hold.
                let until = self.open_until.load(Ordering::Relaxed);
                Err(self.reject(State::Open, Some(until.saturating_sub(now))))
            }
            State::HalfOpen => {
                if slow.probes_in_flight < self.settings.probes {
                    slow.probes_in_flight += 1;
                    Ok(ticket(Kind::Probe))
                } else {
                    // A slot frees when a probe finishes; we cannot know when.
                    Err(self.reject(State::HalfOpen, Some(0)))
                }
            }
        };
        (result, transition)
    }

    /// Under the lock: Open -> HalfOpen if the open period is over.
    fn cool_down(&self, slow: &mut Slow, now: Nanos) -> (Word, Option<Transition>) {
        let w = self.load();
        // Relaxed: open_until is only written under the lock we hold.
        if w.state() == State::Open && now >= self.open_until.load(Ordering::Relaxed) {
            slow.probes_in_flight = 0;
            slow.probe_successes = 0;
            let t = self.publish(w, State::HalfOpen, now, Reason::CooldownElapsed);
            return (self.load(), Some(t));
        }
        (w, None)
    }

    /// Under the lock: moves to `to` with a new generation. Everything the new
    /// state reads must be written before this is called.
    fn publish(&self, from: Word, to: State, now: Nanos, reason: Reason) -> Transition {
        let generation = from.generation().wrapping_add(1);
        self.publish_as(generation, from.state(), to, now, reason)
    }

    fn publish_as(
        &self,
        generation: u32,
        from: State,
        to: State,
        now: Nanos,
        reason: Reason,
    ) -> Transition {
        // Relaxed: published by the Release store of the word just below.
        self.consecutive
            .store(tagged(generation, 0), Ordering::Relaxed);
        self.last_transition.store(now, Ordering::Relaxed);
        // Release: makes the writes above visible to every Acquire load that
        // sees the new word.
        self.word
            .store(Word::new(generation, to).0, Ordering::Release);
        Transition {
            from,
            to,
            at: Duration::from_nanos(now),
            reason,
            generation,
        }
    }

    /// Under the lock: opens for the period the trip count calls for.
    fn open(&self, slow: &mut Slow, from: Word, now: Nanos, reason: Reason) -> Transition {
        let period = self.settings.open.after(slow.trips);
        slow.trips = slow.trips.saturating_add(1);
        // Relaxed: published by the Release store of the word in `publish`.
        self.open_until
            .store(now.saturating_add(period), Ordering::Relaxed);
        self.publish(from, State::Open, now, reason)
    }

    /// Under the lock: closes with empty counters.
    fn close(&self, slow: &mut Slow, from: Word, now: Nanos, reason: Reason) -> Transition {
        *slow = Slow::default();
        let generation = from.generation().wrapping_add(1);
        let Some(window) = &self.window else {
            return self.publish_as(generation, from.state(), State::Closed, now, reason);
        };
        // Seal, drain, empty, publish, unseal. A verdict that announced itself
        // before the seal is waited for (Acquire: its window writes happen
        // before the emptying); one that comes later backs off until the
        // unseal, after which it sees the new generation and bails.
        for cell in self.recorders.all() {
            cell.fetch_or(SEAL, Ordering::Acquire);
        }
        for cell in self.recorders.all() {
            while cell.load(Ordering::Acquire) & !SEAL != 0 {
                crate::sync::spin_wait();
            }
        }
        window.clear();
        let t = self.publish_as(generation, from.state(), State::Closed, now, reason);
        // Release: whoever sees the seal gone also sees the new generation.
        for cell in self.recorders.all() {
            cell.fetch_and(!SEAL, Ordering::Release);
        }
        t
    }

    /// The current state at `now`, moving Open -> HalfOpen if it is due.
    pub(crate) fn state(&self, now: Nanos) -> (State, Option<Transition>) {
        let w = self.load();
        // Relaxed: ordered after the Acquire load of the word; a stale read only
        // sends us to the lock, which decides again.
        if w.state() == State::Open && now >= self.open_until.load(Ordering::Relaxed) {
            let mut slow = lock(&self.slow);
            let (w, t) = self.cool_down(&mut slow, now);
            return (w.state(), t);
        }
        (w.state(), None)
    }

    /// Records a verdict; the clock is read only if the verdict needs it (a
    /// time window, a transition).
    pub(crate) fn record(
        &self,
        ticket: Ticket,
        outcome: Outcome,
        slow_call: bool,
        now: &LazyNow<'_>,
    ) -> Option<Transition> {
        match ticket.kind {
            Kind::Bypass => None,
            Kind::Normal => self.record_closed(ticket.generation, outcome, slow_call, now),
            Kind::Probe => self.record_probe(ticket.generation, outcome, slow_call, now),
        }
    }

    fn record_closed(
        &self,
        generation: u32,
        outcome: Outcome,
        slow_call: bool,
        now: &LazyNow<'_>,
    ) -> Option<Transition> {
        let failed = match outcome {
            Outcome::Ignore => return None,
            Outcome::Failure => true,
            Outcome::Success => false,
        };
        let policy = &self.settings.policy;
        let mut trip = None;
        if let Some(n) = policy.consecutive {
            // Relaxed throughout: the counter is tagged with its generation, so
            // a stale verdict cannot touch a newer count; a trip it suggests
            // is re-validated under the lock.
            let mut cur = self.consecutive.load(Ordering::Relaxed);
            loop {
                if (cur >> 32) as u32 != generation {
                    return None; // stale: this permit's closed period is over
                }
                let count = cur as u32;
                let next = if failed { count.saturating_add(1) } else { 0 };
                if next == count {
                    break; // a success with nothing to reset: no write at all
                }
                match self.consecutive.compare_exchange_weak(
                    cur,
                    tagged(generation, next),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        if next >= n {
                            trip = Some(Reason::ConsecutiveFailures { count: next });
                        }
                        break;
                    }
                    Err(actual) => cur = actual,
                }
            }
        }
        if let Some(window) = &self.window {
            // A plain success over a plain success changes nothing but the
            // ring position: no write, no generation check needed.
            let Some(claim) = window.claim(failed, slow_call) else {
                return self.trip_checked(generation, trip, now);
            };
            // Announce, then check the generation (see `close`).
            // Acquire: a fetch_add that finds the seal gone synchronises with
            // the unseal, so the generation read below is the new one.
            // Each thread announces in its own cell; the closer seals them all.
            let cell = self.recorders.mine();
            while cell.fetch_add(1, Ordering::Acquire) & SEAL != 0 {
                // Relaxed: we wrote nothing the closer needs to see.
                cell.fetch_sub(1, Ordering::Relaxed);
                while cell.load(Ordering::Relaxed) & SEAL != 0 {
                    crate::sync::spin_wait();
                }
            }
            if self.load().generation() != generation {
                // Release (here and below): our window writes happen before
                // the closer's emptying that waits for this decrement.
                cell.fetch_sub(1, Ordering::Release);
                return None; // stale: this permit's closed period is over
            }
            let t = if window.needs_time() { now.get() } else { 0 };
            let totals = window.record(claim, t, failed, slow_call);
            cell.fetch_sub(1, Ordering::Release);
            if let Some(totals) = totals {
                trip = trip.or_else(|| policy.rate_trip(&totals));
            }
        }
        self.trip_checked(generation, trip, now)
    }

    /// Trips for `trip`, if any, once the lock confirms the breaker is still
    /// in the closed period `generation`.
    fn trip_checked(
        &self,
        generation: u32,
        trip: Option<Reason>,
        now: &LazyNow<'_>,
    ) -> Option<Transition> {
        let policy = &self.settings.policy;
        let mut reason = trip?;
        let mut slow = lock(&self.slow);
        let w = self.load();
        if w.generation() != generation || w.state() != State::Closed {
            return None; // someone else already moved the breaker on
        }
        if let (Reason::FailureRate { .. } | Reason::SlowCallRate { .. }, Some(window)) =
            (reason, &self.window)
        {
            // The totals were read one counter at a time while others
            // recorded; decide again on a fresh reading.
            reason = policy.rate_trip(&window.totals(now.get()))?;
        }
        Some(self.open(&mut slow, w, now.get(), reason))
    }

    fn record_probe(
        &self,
        generation: u32,
        outcome: Outcome,
        slow_call: bool,
        now: &LazyNow<'_>,
    ) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        if w.generation() != generation || w.state() != State::HalfOpen {
            return None; // stale: the half-open period this probe belonged to is over
        }
        slow.probes_in_flight = slow.probes_in_flight.saturating_sub(1);
        match outcome {
            Outcome::Ignore => None,
            Outcome::Failure => Some(self.open(&mut slow, w, now.get(), Reason::ProbeFailed)),
            Outcome::Success => {
                slow.probe_successes += 1;
                slow.probe_slow += u32::from(slow_call);
                if slow.probe_successes < self.settings.successes {
                    return None;
                }
                // Enough successes: slow ones are judged by the slow-call rate
                // over this half-open period's successes.
                let successes = slow.probe_successes;
                if let Some((_, limit)) = self.settings.policy.slow {
                    let rate = f64::from(slow.probe_slow) / f64::from(successes);
                    if rate >= limit {
                        let reason = Reason::SlowCallRate { rate };
                        return Some(self.open(&mut slow, w, now.get(), reason));
                    }
                }
                Some(self.close(
                    &mut slow,
                    w,
                    now.get(),
                    Reason::ProbesSucceeded { successes },
                ))
            }
        }
    }

    /// A permit was dropped without a verdict: free its probe slot, count nothing.
    pub(crate) fn release(&self, ticket: Ticket) {
        if ticket.kind != Kind::Probe {
            return;
        }
        let mut slow = lock(&self.slow);
        let w = self.load();
        if w.generation() == ticket.generation && w.state() == State::HalfOpen {
            slow.probes_in_flight = slow.probes_in_flight.saturating_sub(1);
        }
    }

    /// Manual control: moves to `to` (ForcedOpen, Disabled or Closed) with a
    /// new generation. Returns a transition only when the state changed.
    pub(crate) fn set(&self, to: State, now: Nanos) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        let t = if to == State::Closed {
            // Relaxed: a statistic; reset starts every count afresh.
            for cell in self.rejected.all() {
                cell.store(0, Ordering::Relaxed);
            }
            self.close(&mut slow, w, now, Reason::Manual)
        } else {
            *slow = Slow::default();
            self.publish(w, to, now, Reason::Manual)
        };
        (t.from != t.to).then_some(t)
    }

    /// The figures at `now`, without moving the state (call [`Core::state`]
    /// first for the lazy Open -> HalfOpen step).
    pub(crate) fn figures(&self, now: Nanos) -> Figures {
        let w = self.load();
        let state = w.state();
        let totals = self
            .window
            .as_ref()
            .map(|win| win.totals(now))
            .unwrap_or_default();
        // Relaxed here and below: statistics for a snapshot.
        let c = self.consecutive.load(Ordering::Relaxed);
        let consecutive = if (c >> 32) as u32 == w.generation() && state == State::Closed {
            c as u32
        } else {
            0
        };
        Figures {
            state,
            generation: w.generation(),
            totals,
            consecutive,
            rejected: self.rejected.sum(Ordering::Relaxed),
            since_transition: now.saturating_sub(self.last_transition.load(Ordering::Relaxed)),
        }
    }

    /// Probes admitted and not yet finished (for tests and models).
    pub(crate) fn probes_in_flight(&self) -> u32 {
        lock(&self.slow).probes_in_flight
    }
}

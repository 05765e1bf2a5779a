//! The reference model of one circuit breaker: its documented rules, one step
//! at a time, on plain data (no atomics, no locks, no fast paths).
//!
//! Sources of each rule: the docs of `CircuitBreaker` (breaker/mod.rs), of
//! `Builder` and its setters (breaker/config.rs), of `Rejected`, `Snapshot`
//! and `Permit`, and the README's "What the breaker does". Where a doc is
//! silent the rule follows `tests/breaker.rs`; each such choice is said where
//! it is made.
//!
//! Time is in nanoseconds on a clock that only moves forward.

use fusebox::{Outcome, Reason, State, Transition};
use std::collections::VecDeque;
use std::time::Duration;

/// What a builder was given (`None`: the setter was not called). The
/// model's own description of settings, so that it resolves defaults by the
/// docs rather than by the breaker's config code.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub consecutive: Option<u32>,
    pub failure_rate: Option<f64>,
    pub count_window: Option<usize>,
    /// `time_window(span)` in ns.
    pub time_window: Option<u64>,
    pub buckets: Option<usize>,
    pub min_calls: Option<u32>,
    /// `slow_calls(threshold ns, rate)`.
    pub slow: Option<(u64, f64)>,
    pub open: Open,
    pub probes: Option<u32>,
    pub successes: Option<u32>,
    /// `half_open_max_wait` in ns.
    pub max_wait: Option<u64>,
}

/// `open_for` or `open_backoff`, in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Open {
    Fixed(u64),
    Backoff { initial: u64, factor: f64, max: u64 },
}

impl Spec {
    /// A builder with exactly these settings.
    pub fn builder(&self) -> fusebox::Builder {
        let ns = Duration::from_nanos;
        let mut b = fusebox::CircuitBreaker::builder();
        if let Some(n) = self.consecutive {
            b = b.consecutive_failures(n);
        }
        if let Some(r) = self.failure_rate {
            b = b.failure_rate(r);
        }
        if let Some(n) = self.count_window {
            b = b.count_window(n);
        }
        if let Some(span) = self.time_window {
            b = b.time_window(ns(span));
        }
        if let Some(n) = self.buckets {
            b = b.buckets(n);
        }
        if let Some(m) = self.min_calls {
            b = b.min_calls(m);
        }
        if let Some((threshold, rate)) = self.slow {
            b = b.slow_calls(ns(threshold), rate);
        }
        b = match self.open {
            Open::Fixed(d) => b.open_for(ns(d)),
            Open::Backoff {
                initial,
                factor,
                max,
            } => b.open_backoff(ns(initial), factor, ns(max)),
        };
        if let Some(k) = self.probes {
            b = b.half_open_probes(k);
        }
        if let Some(s) = self.successes {
            b = b.successes_to_close(s);
        }
        if let Some(wait) = self.max_wait {
            b = b.half_open_max_wait(ns(wait));
        }
        b
    }
}

/// The settings in force, defaults filled in (the `Builder` docs' table).
#[derive(Debug, Clone, PartialEq)]
struct Rules {
    consecutive: Option<u32>,
    failure_rate: Option<f64>,
    slow: Option<(u64, f64)>,
    window: Option<Window>,
    min_calls: u64,
    open: Open,
    probes: u32,
    successes: u32,
    /// "default: none"
    max_wait: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Window {
    /// The last `n` calls.
    Count(usize),
    /// The calls of the last `buckets` buckets of `width` ns each (a call
    /// leaves when its whole bucket does).
    Time { width: u64, buckets: u64 },
}

impl Rules {
    fn of(spec: &Spec) -> Rules {
        let rated = spec.failure_rate.is_some() || spec.slow.is_some();
        // "trip policy: consecutive_failures(5) when no policy is set"
        let consecutive = match spec.consecutive {
            None if !rated => Some(5),
            c => c,
        };
        // "window of a rate policy: count_window(100); a time window has buckets(10)"
        let window = match (spec.count_window, spec.time_window) {
            (Some(n), _) => Some(Window::Count(n)),
            (None, Some(span)) => {
                let buckets = spec.buckets.unwrap_or(10) as u64;
                Some(Window::Time {
                    width: span / buckets,
                    buckets,
                })
            }
            (None, None) => rated.then_some(Window::Count(100)),
        };
        // "min_calls: 10, or the count window's size if smaller"
        let min_calls = match (spec.min_calls, window) {
            (Some(m), _) => u64::from(m),
            (None, Some(Window::Count(n))) => (n as u64).min(10),
            (None, _) => 10,
        };
        Rules {
            consecutive,
            failure_rate: spec.failure_rate,
            slow: spec.slow,
            window,
            min_calls,
            open: spec.open,
            probes: spec.probes.unwrap_or(1),
            successes: spec.successes.unwrap_or(1),
            max_wait: spec.max_wait,
        }
    }

    /// The open period after `trips` earlier trips without a close: `initial`
    /// times `factor` per earlier trip, at most `max` (whole nanoseconds,
    /// rounded down).
    fn open_period(&self, trips: u32) -> u64 {
        match self.open {
            Open::Fixed(d) => d,
            Open::Backoff {
                initial,
                factor,
                max,
            } => {
                let grown = initial as f64 * factor.powi(trips as i32);
                if grown < max as f64 {
                    grown as u64
                } else {
                    max
                }
            }
        }
    }
}

/// One counted call in the window of the current closed period.
#[derive(Debug, Clone, Copy)]
struct Call {
    /// Bucket number (`time / width`) for a time window; 0 for a count window.
    bucket: u64,
    failed: bool,
    slow: bool,
}

/// How an admitted call's verdict is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Admitted closed: the verdict feeds the trip policy.
    Normal,
    /// A half-open probe.
    Probe,
    /// Admitted disabled: counts for nothing.
    Bypass,
}

/// The model's permit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    pub generation: u64,
    pub kind: Kind,
    /// Admission time, if the call is timed.
    pub start: Option<u64>,
}

/// A rejection: the state that rejected and `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection {
    pub state: State,
    pub retry_after: Option<Duration>,
}

/// What `snapshot()` reports: `Snapshot`'s fields, in a type the model can
/// build (`Snapshot` is `#[non_exhaustive]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub state: State,
    pub calls: u64,
    pub failures: u64,
    pub slow_calls: u64,
    pub failure_rate: f64,
    pub slow_call_rate: f64,
    pub consecutive_failures: u32,
    pub rejected: u64,
    pub since_transition: Duration,
    pub generation: u64,
}

impl Figures {
    pub fn of(s: &fusebox::Snapshot) -> Figures {
        Figures {
            state: s.state,
            calls: s.calls,
            failures: s.failures,
            slow_calls: s.slow_calls,
            failure_rate: s.failure_rate,
            slow_call_rate: s.slow_call_rate,
            consecutive_failures: s.consecutive_failures,
            rejected: s.rejected,
            since_transition: s.since_transition,
            generation: s.generation,
        }
    }
}

fn rate(part: u64, calls: u64) -> f64 {
    if calls == 0 {
        0.0
    } else {
        part as f64 / calls as f64
    }
}

/// One breaker, as documented.
#[derive(Debug, Clone)]
pub struct Model {
    rules: Rules,
    /// Whether a listener is attached (it hears every call's duration).
    listened: bool,
    now: u64,
    state: State,
    /// Transitions (and manual moves) so far, wrapping.
    generation: u64,
    /// End of the open period (while Open).
    open_until: u64,
    last_transition: u64,
    /// Failures in a row in this closed period (kept by the consecutive policy).
    consecutive: u32,
    /// The window's calls in this closed period (kept by a rate policy).
    window: VecDeque<Call>,
    /// Trips since the last close (drives the backoff).
    trips: u32,
    in_flight: u32,
    /// Since when probes have been out without a break (while `in_flight > 0`).
    out_since: Option<u64>,
    /// The most probes ever in flight at once (for coverage checks).
    most_in_flight: u32,
    probe_successes: u32,
    /// Slow ones among this half-open period's successful probes.
    probe_slow: u32,
    rejected: u64,
    /// Every transition, in order.
    pub log: Vec<Transition>,
}

impl Model {
    /// A closed breaker built at `now`, with a listener or not.
    pub fn new(spec: &Spec, now: u64, listened: bool) -> Model {
        Model {
            rules: Rules::of(spec),
            listened,
            now,
            state: State::Closed,
            generation: 0,
            open_until: 0,
            last_transition: now,
            consecutive: 0,
            window: VecDeque::new(),
            trips: 0,
            in_flight: 0,
            out_since: None,
            most_in_flight: 0,
            probe_successes: 0,
            probe_slow: 0,
            rejected: 0,
            log: Vec::new(),
        }
    }

    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn advance(&mut self, ns: u64) {
        self.now += ns;
    }

    /// The end of the open period, if open (without the lazy step).
    pub fn open_until(&self) -> Option<u64> {
        (self.state == State::Open).then_some(self.open_until)
    }

    /// The most probes ever in flight at once.
    pub fn most_probes(&self) -> u32 {
        self.most_in_flight
    }

    /// Probes in flight, if half-open (without the lazy step).
    pub fn probes_in_flight(&self) -> Option<u32> {
        (self.state == State::HalfOpen).then_some(self.in_flight)
    }

    /// "Every transition starts a new generation" (manual control too, even
    /// when the state stays: `force_open` twice makes earlier permits stale).
    /// Only real changes of state are heard by listeners.
    fn move_to(&mut self, to: State, reason: Reason) {
        self.generation = self.generation.wrapping_add(1);
        let from = std::mem::replace(&mut self.state, to);
        self.last_transition = self.now;
        self.consecutive = 0;
        if from != to {
            self.log.push(Transition {
                from,
                to,
                at: Duration::from_nanos(self.now),
                reason,
                generation: self.generation,
            });
        }
    }

    /// "The open period counts from the verdict that tripped"; it grows with
    /// each trip without a close in between.
    fn open(&mut self, reason: Reason) {
        let period = self.rules.open_period(self.trips);
        self.trips = self.trips.saturating_add(1);
        self.open_until = self.now.saturating_add(period);
        self.move_to(State::Open, reason);
    }

    /// "Counters are empty after every transition to Closed"; a close resets
    /// the backoff.
    fn close(&mut self, reason: Reason) {
        self.window.clear();
        self.trips = 0;
        self.in_flight = 0;
        self.out_since = None;
        self.probe_successes = 0;
        self.probe_slow = 0;
        self.move_to(State::Closed, reason);
    }

    /// "Open becomes HalfOpen lazily, at the first admission attempt (or
    /// state call) at or after trip time plus the open period."
    fn cool_down(&mut self) {
        if self.state == State::Open && self.now >= self.open_until {
            // "Each half-open period judges only its own probes."
            self.in_flight = 0;
            self.out_since = None;
            self.probe_successes = 0;
            self.probe_slow = 0;
            self.move_to(State::HalfOpen, Reason::CooldownElapsed);
        }
    }

    /// `half_open_max_wait`: "once probes have been out for wait without a
    /// break, they count as failed: the breaker reopens for a new open
    /// period, as for a failed probe, their slots come back, and their
    /// verdicts, whenever they come, change nothing"; "the wait runs from
    /// the admission of a probe while none was out, until none is out
    /// again"; checked "when something happens in half-open". Whether it
    /// fired.
    fn expire(&mut self) -> bool {
        let (Some(since), Some(wait)) = (self.out_since, self.rules.max_wait) else {
            return false;
        };
        if self.state != State::HalfOpen || self.now < since.saturating_add(wait) {
            return false;
        }
        self.in_flight = 0;
        self.out_since = None;
        self.open(Reason::ProbeTimedOut);
        true
    }

    /// The lazy steps: Open -> HalfOpen, then the half-open deadline.
    fn lazy(&mut self) {
        self.cool_down();
        self.expire();
    }

    /// A probe of the current half-open period ends (verdict or drop).
    fn end_probe(&mut self) {
        self.in_flight -= 1;
        if self.in_flight == 0 {
            self.out_since = None;
        }
    }

    fn reject(&mut self, state: State, retry_after: Option<u64>) -> Rejection {
        self.rejected += 1;
        Rejection {
            state,
            retry_after: retry_after.map(Duration::from_nanos),
        }
    }

    /// `try_acquire`.
    pub fn acquire(&mut self) -> Result<Ticket, Rejection> {
        self.lazy();
        // The docs are silent on this one (it matters only when a
        // reconfigure adds slow_calls while a call runs): the breaker times a
        // call when, at its admission, a slow-call policy or a listener
        // wants its duration, and an untimed call is never slow.
        let timed = self.rules.slow.is_some() || self.listened;
        let ticket = |kind| Ticket {
            generation: self.generation,
            kind,
            start: timed.then_some(self.now),
        };
        match self.state {
            State::Closed => Ok(ticket(Kind::Normal)),
            State::Disabled => Ok(ticket(Kind::Bypass)),
            // "no retry_after" when forced open
            State::ForcedOpen => Err(self.reject(State::ForcedOpen, None)),
            // "the rest of the open period"
            State::Open => {
                let rest = self.open_until - self.now;
                Err(self.reject(State::Open, Some(rest)))
            }
            // "at most half_open_probes calls at once"; "zero in half-open"
            State::HalfOpen => {
                if self.in_flight < self.rules.probes {
                    if self.in_flight == 0 {
                        self.out_since = Some(self.now);
                    }
                    self.in_flight += 1;
                    self.most_in_flight = self.most_in_flight.max(self.in_flight);
                    Ok(ticket(Kind::Probe))
                } else {
                    Err(self.reject(State::HalfOpen, Some(0)))
                }
            }
        }
    }

    /// Whether `ticket`'s call, finishing now, is slow ("a call taking at
    /// least threshold is slow").
    pub fn is_slow(&self, ticket: &Ticket) -> bool {
        match (self.rules.slow, ticket.start) {
            (Some((threshold, _)), Some(start)) => self.now - start >= threshold,
            _ => false,
        }
    }

    /// Whether `ticket` is a probe of the current half-open period (its
    /// verdict decides something).
    pub fn is_live_probe(&self, ticket: &Ticket) -> bool {
        ticket.kind == Kind::Probe
            && ticket.generation == self.generation
            && self.state == State::HalfOpen
    }

    /// The window's calls at `now` (a time window forgets whole buckets).
    fn totals(&mut self) -> (u64, u64, u64) {
        if let Some(Window::Time { width, buckets }) = self.rules.window {
            let current = self.now / width;
            while self
                .window
                .front()
                .is_some_and(|c| c.bucket + buckets <= current)
            {
                self.window.pop_front();
            }
        }
        let calls = self.window.len() as u64;
        let failures = self.window.iter().filter(|c| c.failed).count() as u64;
        let slow = self.window.iter().filter(|c| c.slow).count() as u64;
        (calls, failures, slow)
    }

    /// "Trips when failures / calls in the window reach rate, once at least
    /// min_calls calls are in it"; the same for slow calls. When one call
    /// reaches several, the reason named is the first of: consecutive
    /// failures, failure rate, slow-call rate.
    fn rate_trip(&mut self) -> Option<Reason> {
        let (calls, failures, slow) = self.totals();
        if calls < self.rules.min_calls {
            return None;
        }
        if let Some(r) = self.rules.failure_rate {
            let rate = rate(failures, calls);
            if rate >= r {
                return Some(Reason::FailureRate { rate });
            }
        }
        if let Some((_, r)) = self.rules.slow {
            let rate = rate(slow, calls);
            if rate >= r {
                return Some(Reason::SlowCallRate { rate });
            }
        }
        None
    }

    /// A verdict for `ticket`, given now.
    pub fn verdict(&mut self, ticket: Ticket, outcome: Outcome) {
        let slow = self.is_slow(&ticket);
        match ticket.kind {
            // Disabled: "nothing is counted"
            Kind::Bypass => {}
            Kind::Normal => {
                // "a verdict from a permit of an older generation changes nothing"
                if outcome == Outcome::Ignore || ticket.generation != self.generation {
                    return;
                }
                let failed = outcome == Outcome::Failure;
                let mut reason = None;
                if let Some(n) = self.rules.consecutive {
                    // "any success resets the count"
                    self.consecutive = if failed {
                        self.consecutive.saturating_add(1)
                    } else {
                        0
                    };
                    if self.consecutive >= n {
                        reason = Some(Reason::ConsecutiveFailures {
                            count: self.consecutive,
                        });
                    }
                }
                if let Some(window) = self.rules.window {
                    let bucket = match window {
                        Window::Count(_) => 0,
                        Window::Time { width, .. } => self.now / width,
                    };
                    self.window.push_back(Call {
                        bucket,
                        failed,
                        slow,
                    });
                    if let Window::Count(n) = window {
                        // "sliding: the oldest drops out"
                        while self.window.len() > n {
                            self.window.pop_front();
                        }
                    }
                    reason = reason.or_else(|| self.rate_trip());
                }
                if let Some(reason) = reason {
                    self.open(reason);
                }
            }
            Kind::Probe => {
                if !self.is_live_probe(&ticket) {
                    return;
                }
                // "A probe that answers after the deadline is too late even
                // when nothing happened in between."
                if self.expire() {
                    return;
                }
                self.end_probe();
                match outcome {
                    // "counts for nothing (but its probe slot, if any, is freed)"
                    Outcome::Ignore => {}
                    // "any failed probe reopens"
                    Outcome::Failure => self.open(Reason::ProbeFailed),
                    // "closes after successes_to_close successes"; "slow probes
                    // are judged together when successes_to_close probes have
                    // succeeded: if slow ones / successful ones reach rate, the
                    // breaker reopens instead of closing"
                    Outcome::Success => {
                        self.probe_successes += 1;
                        self.probe_slow += u32::from(slow);
                        let successes = self.probe_successes;
                        if successes < self.rules.successes {
                            return;
                        }
                        match self.rules.slow {
                            Some((_, limit))
                                if rate(self.probe_slow.into(), successes.into()) >= limit =>
                            {
                                let rate = rate(self.probe_slow.into(), successes.into());
                                self.open(Reason::SlowCallRate { rate });
                            }
                            _ => self.close(Reason::ProbesSucceeded { successes }),
                        }
                    }
                }
            }
        }
    }

    /// A permit dropped without a verdict: "changes no counter and frees its
    /// half-open probe slot".
    pub fn release(&mut self, ticket: Ticket) {
        if self.is_live_probe(&ticket) && !self.expire() {
            self.end_probe();
        }
    }

    /// `state()`: the lazy steps, then the state.
    pub fn state(&mut self) -> State {
        self.lazy();
        self.state
    }

    /// `snapshot()`: the lazy step, then the figures. Window fields are zero
    /// without a window; `consecutive_failures` is kept by the consecutive
    /// policy only.
    pub fn snapshot(&mut self) -> Figures {
        self.lazy();
        let (calls, failures, slow) = if self.rules.window.is_some() {
            self.totals()
        } else {
            (0, 0, 0)
        };
        Figures {
            state: self.state,
            calls,
            failures,
            slow_calls: slow,
            failure_rate: rate(failures, calls),
            slow_call_rate: rate(slow, calls),
            consecutive_failures: self.consecutive,
            rejected: self.rejected,
            since_transition: Duration::from_nanos(self.now - self.last_transition),
            generation: self.generation,
        }
    }

    /// `force_open()`: "every call is rejected, with no retry_after", until
    /// reset. No lazy step first: an open breaker past its period is left
    /// from Open.
    pub fn force_open(&mut self) {
        self.manual(State::ForcedOpen);
    }

    /// `disable()`: "every call is admitted, nothing is counted, it never
    /// trips".
    pub fn disable(&mut self) {
        self.manual(State::Disabled);
    }

    fn manual(&mut self, to: State) {
        self.in_flight = 0;
        self.out_since = None;
        self.probe_successes = 0;
        self.probe_slow = 0;
        self.trips = 0;
        self.move_to(to, Reason::Manual);
    }

    /// `reconfigure(spec)`: the new settings decide from now on; the state,
    /// the generation, the open period in progress, the consecutive count,
    /// the backoff's trip count and the half-open bookkeeping stay; "the
    /// window keeps its counts when its shape (count or time, size, buckets)
    /// is unchanged, and starts empty when it changes" (in every state: the
    /// docs speak of Closed, the rule is the same while open). Closed:
    /// "counts that already reach them trip the breaker at once".
    pub fn reconfigure(&mut self, spec: &Spec) {
        let rules = Rules::of(spec);
        if rules.window != self.rules.window {
            self.window.clear();
        }
        self.rules = rules;
        if self.state != State::Closed {
            return;
        }
        let reason = match self.rules.consecutive {
            Some(n) if self.consecutive >= n => Some(Reason::ConsecutiveFailures {
                count: self.consecutive,
            }),
            _ if self.rules.window.is_some() => self.rate_trip(),
            _ => None,
        };
        if let Some(reason) = reason {
            self.open(reason);
        }
    }

    /// `reset()`: "closes the breaker with empty counters, from any state",
    /// the rejected count too (`Snapshot::rejected` says "since the breaker
    /// was built"; the two docs disagree and the breaker zeroes it).
    pub fn reset(&mut self) {
        self.rejected = 0;
        self.close(Reason::Manual);
    }
}

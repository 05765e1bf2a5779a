//! `kind = "seed"`: seed 000's breaker, ported faithfully.

use super::{Admission, Guard, Ticket, TransitionRecord};
use crate::scenario::{CallResult, SeedConfig};
use crate::sync::lock;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The state of seed 000's breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedState {
    /// Calls pass; failures are counted.
    Closed,
    /// Calls fast-fail until `opened_at + open_for`.
    Open,
    /// One probe is in flight; everything else fast-fails.
    HalfOpen,
    /// Held open by a fleet (not in the article): every call fast-fails,
    /// verdicts are ignored, until the fleet releases it.
    ForcedOpen,
}

impl SeedState {
    /// Lower-case name, as in the article's log.
    pub fn as_str(self) -> &'static str {
        match self {
            SeedState::Closed => "closed",
            SeedState::Open => "open",
            SeedState::HalfOpen => "half_open",
            SeedState::ForcedOpen => "forced_open",
        }
    }
}

#[derive(Debug)]
struct SeedInner {
    state: SeedState,
    failures: u32,
    opened_at: Duration,
    probing: bool,
    log: Vec<TransitionRecord>,
}

/// Seed 000's breaker, ported faithfully (the `seed` strategy).
///
/// The article's `Breaker.call`, step by step:
/// - under the lock, before the call: in `open`, if `now - opened_at >=
///   reset_timeout` and no probe is running, go `half_open`, set `probing`
///   and let this call through as the probe; otherwise raise `Open`. In
///   `half_open` with a probe running, raise `Open`.
/// - after the call, on failure: count it; `half_open -> open`, or reaching
///   the threshold -> `open`, and in both cases `opened_at = now`. The count is
///   not reset by opening, so a failure that arrives while already open (a
///   call admitted before the trip) sets `opened_at` again: stale failures
///   extend the open period. (fusebox's generations ignore them.)
/// - on success: the failure count is reset; `half_open -> closed`.
/// - the probing flag is cleared by the probe's own verdict.
///
/// A transition is logged only when the state actually changes.
#[derive(Debug)]
pub struct SeedBreaker {
    config: SeedConfig,
    inner: Arc<Mutex<SeedInner>>,
}

impl SeedBreaker {
    /// A closed breaker.
    pub fn new(config: SeedConfig) -> Self {
        SeedBreaker {
            config,
            inner: Arc::new(Mutex::new(SeedInner {
                state: SeedState::Closed,
                failures: 0,
                opened_at: Duration::ZERO,
                probing: false,
                log: Vec::new(),
            })),
        }
    }

    /// The current state (no transition happens on reading it).
    pub fn state(&self) -> SeedState {
        lock(&self.inner).state
    }
}

impl SeedInner {
    fn set(&mut self, to: SeedState, now: Duration) {
        if self.state != to {
            self.log.push(TransitionRecord {
                at: now,
                from: self.state.as_str(),
                to: to.as_str(),
                remote: false,
            });
            self.state = to;
        }
    }
}

struct SeedTicket {
    inner: Arc<Mutex<SeedInner>>,
    threshold: u32,
    probe: bool,
}

impl Guard for SeedBreaker {
    fn admit(&self, now: Duration) -> Admission {
        let mut s = lock(&self.inner);
        let mut probe = false;
        match s.state {
            SeedState::Open => {
                if now.saturating_sub(s.opened_at) >= self.config.open_for && !s.probing {
                    s.set(SeedState::HalfOpen, now);
                    s.probing = true;
                    probe = true;
                } else {
                    return Admission::FastFail;
                }
            }
            SeedState::HalfOpen if s.probing => return Admission::FastFail,
            SeedState::ForcedOpen => return Admission::FastFail,
            _ => {}
        }
        Admission::Call(Box::new(SeedTicket {
            inner: Arc::clone(&self.inner),
            threshold: self.config.failures,
            probe,
        }))
    }

    fn transitions(&self) -> Vec<TransitionRecord> {
        lock(&self.inner).log.clone()
    }

    fn state(&self, now: Duration) -> &'static str {
        let s = lock(&self.inner);
        // Its half-open begins with the probe it admits: due is half-open.
        if s.state == SeedState::Open && now.saturating_sub(s.opened_at) >= self.config.open_for {
            SeedState::HalfOpen.as_str()
        } else {
            s.state.as_str()
        }
    }

    fn probes_in_flight(&self) -> u32 {
        u32::from(lock(&self.inner).probing)
    }

    fn open_until(&self, _now: Duration) -> Option<Duration> {
        let s = lock(&self.inner);
        (s.state == SeedState::Open).then_some(s.opened_at + self.config.open_for)
    }

    fn hold(&self, now: Duration) {
        lock(&self.inner).set(SeedState::ForcedOpen, now);
    }

    fn release(&self, now: Duration) {
        let mut s = lock(&self.inner);
        s.set(SeedState::Closed, now);
        s.failures = 0;
        s.probing = false;
    }
}

impl Ticket for SeedTicket {
    fn finish(self: Box<Self>, now: Duration, result: CallResult) {
        let mut s = lock(&self.inner);
        if self.probe {
            s.probing = false;
        }
        if s.state == SeedState::ForcedOpen {
            return;
        }
        if result.is_ok() {
            s.failures = 0;
            if s.state == SeedState::HalfOpen {
                s.set(SeedState::Closed, now);
            }
        } else {
            s.failures = s.failures.saturating_add(1);
            if s.state == SeedState::HalfOpen || s.failures >= self.threshold {
                s.set(SeedState::Open, now);
                s.opened_at = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn seed() -> SeedBreaker {
        SeedBreaker::new(SeedConfig {
            failures: 3,
            open_for: ms(500),
        })
    }

    fn call(g: &dyn Guard, now: u64) -> Option<Box<dyn Ticket>> {
        match g.admit(ms(now)) {
            Admission::Call(t) => Some(t),
            Admission::FastFail => None,
        }
    }

    #[test]
    fn seed_opens_after_consecutive_failures_and_success_resets() {
        let b = seed();
        for t in [0, 1] {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        call(&b, 2).unwrap().finish(ms(2), CallResult::Success);
        for t in [3, 4] {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        assert_eq!(b.state(), SeedState::Closed);
        call(&b, 5).unwrap().finish(ms(5), CallResult::Timeout);
        assert_eq!(b.state(), SeedState::Open);
        assert!(call(&b, 504).is_none());
    }

    #[test]
    fn seed_single_probe_then_close_or_reopen() {
        let b = seed();
        for t in 0..3 {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        // opened at 2; probe allowed at 502.
        assert!(call(&b, 501).is_none());
        let probe = call(&b, 502).unwrap();
        assert_eq!(b.state(), SeedState::HalfOpen);
        assert!(call(&b, 503).is_none(), "one probe at a time");
        probe.finish(ms(600), CallResult::Error);
        assert_eq!(b.state(), SeedState::Open);
        assert!(call(&b, 1099).is_none());
        let probe = call(&b, 1100).unwrap();
        probe.finish(ms(1105), CallResult::Success);
        assert_eq!(b.state(), SeedState::Closed);
        let log: Vec<_> = b.transitions().iter().map(|t| (t.at, t.to)).collect();
        assert_eq!(
            log,
            vec![
                (ms(2), "open"),
                (ms(502), "half_open"),
                (ms(600), "open"),
                (ms(1100), "half_open"),
                (ms(1105), "closed")
            ]
        );
    }

    #[test]
    fn seed_stale_failures_extend_the_open_period() {
        let b = seed();
        let stale = call(&b, 0).unwrap();
        for t in 1..4 {
            call(&b, t).unwrap().finish(ms(t), CallResult::Error);
        }
        assert_eq!(b.state(), SeedState::Open);
        // A call admitted before the trip fails at 300: opened_at moves to 300.
        stale.finish(ms(300), CallResult::Error);
        assert!(call(&b, 503).is_none(), "still open: opened_at was re-set");
        assert!(call(&b, 800).is_some());
        // Logged once: no open -> open entries.
        assert_eq!(b.transitions().len(), 2);
    }
}

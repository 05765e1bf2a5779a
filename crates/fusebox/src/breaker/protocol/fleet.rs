//! What a fleet may do to the protocol (feature `fleet`): open or close it
//! for a decision taken elsewhere, hand its half-open probes to the lease
//! holder, and read its demand and verdict counts.

use super::{lock, Ordering, Reason, State, TallyCells};
use super::{Core, Nanos, ProbeGate, Totals, Transition};
use crate::breaker::tally::Tally;

impl Core {
    /// Open or HalfOpen -> Closed: a probe elsewhere closed the fleet's breaker.
    pub(crate) fn close_remote(&self, now: Nanos) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        matches!(w.state(), State::Open | State::HalfOpen)
            .then(|| self.close(&mut slow, w, now, Reason::Remote))
    }

    /// Time left in the open period, if Open.
    pub(crate) fn open_remaining(&self, now: Nanos) -> Option<Nanos> {
        let w = self.load();
        // Relaxed: ordered after the Acquire load of the word.
        (w.state() == State::Open)
            .then(|| self.open_until.load(Ordering::Relaxed).saturating_sub(now))
    }

    pub(crate) fn set_probe_gate(&self, gate: ProbeGate) {
        // Relaxed: see `admit`.
        self.gate.store(gate as u8, Ordering::Relaxed);
    }

    /// The `retry_after` of a half-open call [`ProbeGate::Deny`] rejects.
    pub(crate) fn set_deny_retry(&self, retry: Nanos) {
        // Relaxed: see `admit`.
        self.cold().deny_retry.store(retry, Ordering::Relaxed);
    }

    /// Calls that found the breaker open or half-open so far (rejected, or
    /// admitted as probes), and probe permits dropped without a verdict.
    /// Both only grow, until a reset zeroes the rejections.
    pub(crate) fn demand(&self) -> (u64, u64) {
        // Relaxed: counters; see `admit`.
        let (asks, dropped) = self.cold_written().map_or((0, 0), |c| {
            (
                c.half_open_asks.load(Ordering::Relaxed),
                c.probes_dropped.load(Ordering::Relaxed),
            )
        });
        (asks + self.rejected.sum(Ordering::Relaxed), dropped)
    }

    /// The state and generation now, without the lazy Open -> HalfOpen step.
    pub(crate) fn peek(&self) -> (State, u64) {
        let w = self.load();
        (w.state(), w.generation())
    }

    /// Starts counting closed-state verdicts (idempotent).
    pub(crate) fn enable_tally(&self) {
        self.tally.get_or(TallyCells::new);
    }

    /// Closed-state verdicts counted since [`Core::enable_tally`].
    pub(crate) fn tally(&self) -> Tally {
        self.tally.get().map(|t| t.read()).unwrap_or_default()
    }

    /// Trips a closed breaker if totals counted elsewhere (a fleet's window)
    /// call for it by this breaker's own rate rules (and `min_calls`).
    pub(crate) fn judge_totals(&self, totals: Totals, now: Nanos) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        if w.state() != State::Closed {
            return None;
        }
        let windowed = self.live.load().cells.windowed.as_ref()?.rule;
        let reason = windowed.judge(&totals)?;
        Some(self.open(&mut slow, w, now, reason))
    }
}

//! The hot path of the live handle: admission and verdicts as every handle
//! of one breaker shares them ([`Inner`]), the clock read once per call,
//! and the hot-path bits ([`Inner::path`]) derived from what the trip rules
//! in force declare, so that a closed-state success settles with as little
//! as one load. Every state change is the protocol's (`super::protocol`).

use super::listener::Listener;
use super::protocol::{Core, Kind, Live, Nanos, Now, Settings, Ticket, Tuning, NO_START};
use super::types::{CallEvent, Outcome, Rejected, Transition};
use crate::clock::{raw_now, raw_since, Clock, MonotonicClock};
use crate::policy::Mode;
#[cfg(feature = "fleet")]
use crate::sync::SwapOption;
use crate::sync::{AtomicU64, Ordering};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The breaker's time ([`Inner::now`]), read at most once per operation and
/// only if needed.
pub(crate) struct LazyNow<'a> {
    inner: &'a Inner,
    at: std::cell::Cell<Option<Nanos>>,
}

impl<'a> LazyNow<'a> {
    pub(crate) fn new(inner: &'a Inner) -> Self {
        LazyNow {
            inner,
            at: std::cell::Cell::new(None),
        }
    }
}

impl Now for LazyNow<'_> {
    #[inline]
    fn get(&self) -> Nanos {
        match self.at.get() {
            Some(t) => t,
            None => {
                let t = self.inner.now();
                self.at.set(Some(t));
                t
            }
        }
    }
}

/// The clock's reading: the default clock's directly, any other through its
/// `dyn Clock`.
#[inline(always)]
fn read_clock(clock: &OwnClock) -> Nanos {
    match clock {
        None => MonotonicClock.now_nanos(),
        Some(clock) => clock.now_nanos(),
    }
}

/// A clock of the breaker's own (`None`: [`MonotonicClock`], read without
/// a virtual call), boxed so that a breaker on the default clock keeps one
/// word for it rather than a fat pointer.
pub(crate) type OwnClock = Option<Box<Arc<dyn Clock>>>;

/// How far the breaker's time may run ahead of [`Inner::seen`] before it is
/// written again (1 ms).
const SEEN_STEP: Nanos = 1_000_000;

/// Bit of [`Inner::path`]: admission must read the clock (slow calls or
/// listeners need each call's duration).
const TIME_CALLS: u16 = 1;
/// Bit of [`Inner::path`]: a closed-state success may be settled by
/// [`Core::success_is_noop`] alone (no rule in force counts successes
/// beyond its tagged resident counts, as the consecutive rule does; no
/// listener).
const QUIET: u16 = 2;

/// Bit of [`Inner::path`]: the settings use a time window, which counts
/// every call (so [`Inner::changes_nothing`] need not look).
const TIME_WINDOW: u16 = 4;

/// Bit of [`Inner::path`]: as [`QUIET`], listeners aside: a closed-state
/// success that [`Core::success_is_noop`] approves changes nothing (no slow
/// rule, no window, no tally), so only the listeners hear of it.
const SETTLED: u16 = 8;

/// Bit of [`Inner::path`]: as [`QUIET`] for a count window (no slow rule,
/// no listener): a closed-state success that [`Core::success_is_noop`]
/// approves while [`Core::window_full`] holds changes nothing and tells no
/// one (it is counted, if the tally is on: see [`Core::tally_settled`]).
const FULL_QUIET: u16 = 16;

/// Bit of [`Inner::path`]: the breaker runs in [`Mode::Shadow`]: a call
/// it refuses is told to the listeners as shadowed and runs anyway, with a
/// permit that counts for nothing.
const SHADOW: u16 = 32;

/// Bit of [`Inner::path`]: the breaker runs in [`Mode::Off`]: every call
/// is admitted with a permit that counts for nothing.
const OFF: u16 = 64;

/// Bit of [`Inner::path`]: a refusal is heard (listeners, or [`SHADOW`]),
/// so the open path takes [`Inner::tell_refusal`].
const TELL_REFUSALS: u16 = 128;

/// Bit of [`Inner::path`], instead of [`TIME_CALLS`]: only the calls the
/// [`Sampler`] picks read the clock (every listener samples, no slow-call
/// rule).
const SAMPLED: u16 = 256;

/// Bit of [`Inner::path`]: as [`FULL_QUIET`] but for a breaker with
/// listeners: a closed-state success that [`Core::success_is_noop`]
/// approves while [`Core::window_full`] holds changes nothing, and only the
/// listeners hear of it ([`Inner::tell_settled`]).
const FULL_TOLD: u16 = 512;

/// Bit of [`Inner::path`]: the settings use a window (of either kind),
/// no slow rule, no listener and no tally: a closed-state success the
/// fast path did not settle is recorded on the direct path
/// ([`Inner::finish_success`]), nobody hearing of it and nothing counting
/// it but the rules.
const DIRECT: u16 = 1024;

/// Bit of [`Inner::path`]: as [`DIRECT`], the rules in force being
/// [`Core::ring`] alone: a closed-state success or failure over a call
/// of the same outcome is settled on that window without the live
/// settings ([`Inner::finish_ring`]).
const RING: u16 = 2048;

/// Bit of [`Inner::path`]: the breaker reads a clock of its own (not
/// [`MonotonicClock`]), so the open path takes [`Inner::acquire_heard`],
/// which reads it with [`Inner::now`]'s guard.
const OWN_CLOCK: u16 = 4096;

/// An untimed success, the same for every call: one shared event rather
/// than one written per call.
static UNTIMED: CallEvent = CallEvent {
    outcome: Outcome::Success,
    slow: false,
    timed: false,
    duration: Duration::ZERO,
};

/// Which calls of a breaker whose listeners sample are timed: it counts
/// the calls it is asked to admit, over all its threads (one atomic add
/// each; in off mode the calls it lets through), and times those counted
/// 1st, `n + 1`th, `2n + 1`th, ... that it admits (see
/// [`Timing::OneIn`](super::listener::Timing::OneIn) for the rest of the
/// rule). Whether the count is a multiple of `n` is found with a multiply
/// and a rotate rather than a division: with `n = d * 2^k`, `d` odd,
/// `c % n == 0` exactly when `(c * d⁻¹ mod 2^64)` rotated right by `k` is
/// at most `u64::MAX / n` (Hacker's Delight, 10-17).
struct Sampler {
    count: AtomicU64,
    /// The inverse of `n`'s odd part, mod 2^64.
    inverse: u64,
    /// `u64::MAX / n`: `u64::MAX` when every call is timed (`n` 0 or 1).
    limit: u64,
    /// `n`'s trailing zeros.
    shift: u8,
}

impl Sampler {
    fn new(n: u64) -> Sampler {
        let m = n.max(1);
        let shift = m.trailing_zeros();
        let odd = m >> shift;
        // Newton's iteration doubles the correct low bits: 3, 6, ... 96.
        let mut inverse = odd;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inverse)));
        }
        Sampler {
            count: AtomicU64::new(0),
            inverse,
            limit: u64::MAX / m,
            shift: shift as u8, // at most 63
        }
    }

    /// Whether it times fewer than every call.
    fn samples(&self) -> bool {
        self.limit != u64::MAX
    }

    /// Counts one call; whether it is one of the sample.
    #[inline(always)]
    fn due(&self) -> bool {
        // Relaxed: a count; the only thing it decides is which calls are timed.
        let c = self.count.fetch_add(1, Ordering::Relaxed);
        Sampler::multiple(c, self.inverse, u32::from(self.shift), self.limit)
    }

    /// Whether `c` is a multiple of the `n` that `inverse`, `shift` and
    /// `limit` were made for.
    #[inline(always)]
    fn multiple(c: u64, inverse: u64, shift: u32, limit: u64) -> bool {
        c.wrapping_mul(inverse).rotate_right(shift) <= limit
    }
}

/// What every handle of one breaker shares: the state machine, the clock,
/// the listeners and the name.
pub(crate) struct Inner {
    pub(crate) core: Core,
    /// See [`OwnClock`].
    pub(crate) clock: OwnClock,
    listeners: Box<[Arc<dyn Listener>]>,
    /// With [`SAMPLED`], which admissions are timed: one in the smallest
    /// [`Timing::one_in`](super::listener::Timing::one_in) of the
    /// listeners (1 if one of them times every call, 0 without listeners).
    /// Boxed, and only for a breaker whose listeners sample, so that no
    /// other breaker grows by it.
    sampler: Option<Box<Sampler>>,
    /// A listener set at runtime (a fleet's), told of transitions only;
    /// empty, it allocates nothing.
    #[cfg(feature = "fleet")]
    hook: SwapOption<Arc<dyn Listener>>,
    /// Added to every clock reading: the sum of every backward jump seen, so
    /// the breaker's time never runs backwards (see [`Inner::now`]).
    offset: AtomicU64,
    /// A recent reading of the breaker's time (at most [`SEEN_STEP`] behind
    /// the newest), against which backward jumps are detected.
    seen: AtomicU64,
    pub(crate) name: Option<Box<str>>,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inner")
            .field("name", &self.name)
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl Inner {
    pub(crate) fn new(
        settings: Settings,
        clock: Option<Arc<dyn Clock>>,
        listeners: Box<[Arc<dyn Listener>]>,
        name: Option<String>,
    ) -> Inner {
        let clock = clock.map(Box::new);
        let start = read_clock(&clock);
        let core = Core::new(settings, start);
        let sample = listeners
            .iter()
            .map(|l| u64::from(l.timing().one_in()))
            .min()
            .unwrap_or(0);
        let sampler = Some(Sampler::new(sample))
            .filter(Sampler::samples)
            .map(Box::new);
        let inner = Inner {
            core,
            clock,
            listeners,
            sampler,
            #[cfg(feature = "fleet")]
            hook: SwapOption::empty(),
            offset: AtomicU64::new(0),
            seen: AtomicU64::new(start),
            name: name.map(String::into_boxed_str),
        };
        inner.set_path();
        inner
    }

    /// Derives the hot-path bits from the settings in force, under the lock that
    /// puts settings in force: racing reconfigures (and a fleet's
    /// `enable_tally`) store their bits in the order their settings were
    /// installed, so the last bits stored is the one of the settings left
    /// in force, whichever thread stores last.
    fn set_path(&self) {
        self.core
            .with_live_locked(|live| self.core.path.store(self.path_for(live), Ordering::Relaxed));
    }

    /// The hot-path bits `settings` call for.
    fn path_for(&self, live: &Live) -> u16 {
        let needs = live.cells.needs();
        let heard = !self.listeners.is_empty();
        let sampled = heard && !needs.times_calls && self.sampler.is_some();
        let time_calls = (needs.times_calls || heard) && !sampled;
        let settled = !needs.counts_successes && !self.core.tallied();
        let quiet = settled && !needs.times_calls && !heard;
        let time_window = needs.records_every_call;
        let full = needs.counts_last_calls && !needs.times_calls && !heard;
        let full_told = heard && needs.counts_last_calls && !needs.times_calls;
        let direct = (needs.counts_last_calls || needs.records_every_call)
            && !needs.times_calls
            && !heard
            && !self.core.tallied();
        let ring = direct && self.core.ring_in_force(live);
        // Stored Relaxed (see `set_path`): a hint for the hot path. A call
        // that reads the old bits is timed (or settled) by the old
        // settings, as if it had finished just before the reconfigure.
        (if time_calls { TIME_CALLS } else { 0 })
            | if quiet { QUIET } else { 0 }
            | if full { FULL_QUIET } else { 0 }
            | if settled { SETTLED } else { 0 }
            | if time_window { TIME_WINDOW } else { 0 }
            | if sampled { SAMPLED } else { 0 }
            | if full_told { FULL_TOLD } else { 0 }
            | if direct { DIRECT } else { 0 }
            | if ring { RING } else { 0 }
            | match live.tuning.mode {
                Mode::Enforce => 0,
                Mode::Shadow => SHADOW | TELL_REFUSALS,
                Mode::Off => OFF,
            }
            | if self.listeners.is_empty() {
                0
            } else {
                TELL_REFUSALS
            }
            | if self.clock.is_some() { OWN_CLOCK } else { 0 }
    }

    #[inline(always)]
    fn path(&self) -> u16 {
        // Relaxed: see `set_path`.
        self.core.path.load(Ordering::Relaxed)
    }

    /// Puts `mode` in force, every other setting as it is (read and
    /// replaced under one lock: a racing reconfigure is kept whole, with
    /// this mode if it came first, with its own if it came after).
    pub(crate) fn set_policy_mode(&self, mode: Mode) {
        if self.core.live().tuning.mode == mode {
            return; // nothing to put in force (and no window cache to drop)
        }
        let t = self.core.update_settings(self.now(), |s| Settings {
            tuning: Tuning { mode, ..s.tuning },
            ..*s
        });
        self.set_path();
        self.emit(t);
    }

    /// Puts `settings` in force (see [`Core::reconfigure`]).
    pub(crate) fn reconfigure(&self, settings: Settings) {
        let t = self.core.reconfigure(settings, self.now());
        self.set_path();
        self.emit(t);
    }

    /// Starts the tally (see [`Core::enable_tally`]); every verdict then
    /// takes the counted path.
    #[cfg(feature = "fleet")]
    pub(crate) fn enable_tally(&self) {
        self.core.enable_tally();
        self.set_path();
    }

    /// Sets (or clears) the one listener slot that can change at runtime;
    /// it hears transitions only.
    #[cfg(feature = "fleet")]
    pub(crate) fn set_hook(&self, hook: Option<Arc<dyn Listener>>) {
        self.hook.store(hook.map(Arc::new));
    }

    /// The breaker's time: the clock's reading, except that it never runs
    /// backwards. A reading earlier than one already seen (a clock set back,
    /// a broken `Clock`) is shifted forward to carry on from where the
    /// breaker's time was, and so is every later reading: open periods,
    /// windows and `retry_after` keep their lengths instead of stretching by
    /// the size of the jump. Backward steps smaller than [`SEEN_STEP`] are
    /// absorbed by the saturating arithmetic instead. A reading that is
    /// only late (taken before another thread's newer one, and compared
    /// after it: the thread was descheduled in between) is no jump: the
    /// clock is read again, and only a reading still behind shifts the
    /// breaker's time.
    #[inline(always)]
    pub(crate) fn now(&self) -> Nanos {
        let raw = read_clock(&self.clock);
        // Relaxed (but for `seen`'s Release write here and Acquire read
        // in `behind`): `offset` and `seen` order nothing else; a stale
        // value only delays a step forward or retries the shift in
        // `behind`.
        let offset = self.offset.load(Ordering::Relaxed);
        let t = raw.saturating_add(offset);
        let seen = self.seen.load(Ordering::Relaxed);
        if t < seen {
            return self.behind(raw, offset);
        }
        if t - seen >= SEEN_STEP {
            // At most one shared write per step of time. Release: see
            // `behind`.
            self.seen.fetch_max(t, Ordering::Release);
        }
        t
    }

    /// [`Inner::now`] for a reading `raw` behind what another reading saw
    /// ([`Inner::seen`]): read again, and shifted (with `offset` and every
    /// later reading) only if it is still behind. Out of line: rare.
    #[cold]
    #[inline(never)]
    fn behind(&self, raw: Nanos, mut offset: Nanos) -> Nanos {
        // Acquire: pairs with the Release of the `fetch_max` that wrote
        // `seen` (as `now` found it, or later), so that the reading below
        // is taken after the one that wrote it, for a clock whose readings
        // are themselves atomics (a `ManualClock` shared between threads).
        let found = self.seen.load(Ordering::Acquire);
        let raw = read_clock(&self.clock).max(raw);
        if raw.saturating_add(offset) >= found {
            // The first reading was only late. (Compared with `found`, not
            // a later `seen`: another thread may have read a later time
            // meanwhile, which would make this reading late again.)
            return raw.saturating_add(offset);
        }
        loop {
            let t = raw.saturating_add(offset);
            let seen = self.seen.load(Ordering::Relaxed);
            if t >= seen {
                return t;
            }
            match self.offset.compare_exchange(
                offset,
                offset + (seen - t),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return seen,
                Err(actual) => offset = actual,
            }
        }
    }

    /// The breaker's time for the open path on the default clock: its
    /// reading plus [`Inner::offset`] without the look at [`Inner::seen`]
    /// (the default clock is monotonic, but for the cores' disagreement on
    /// the TSC, a fraction of a microsecond, which [`Inner::now`] would
    /// absorb into `offset` as well: a refusal decided on a reading that
    /// much behind is one the breaker could have made that much earlier).
    /// What the open path decides does not move the breaker's time: the
    /// next admission past the open period reads it with [`Inner::now`].
    /// A breaker with a clock of its own ([`OWN_CLOCK`]) never comes here:
    /// the open path sends it to [`Inner::acquire_heard`].
    #[inline(always)]
    fn refusal_now(&self) -> Nanos {
        debug_assert!(self.clock.is_none(), "refusal_now reads the default clock");
        // Relaxed: as in `now`.
        MonotonicClock
            .now_nanos()
            .saturating_add(self.offset.load(Ordering::Relaxed))
    }

    #[inline]
    pub(crate) fn acquire(&self) -> Result<Ticket, Rejected> {
        match self.fast_ticket() {
            Some(ticket) => Ok(ticket),
            None => self.acquire_slow(),
        }
    }

    /// The hot path's admission: a closed (or disabled) breaker, untimed,
    /// unless something needs this call's duration (with [`SAMPLED`],
    /// [`Inner::untimed`] says whether it is one of the sample).
    #[inline(always)]
    pub(crate) fn fast_ticket(&self) -> Option<Ticket> {
        let path = self.path();
        if path & (TIME_CALLS | OFF | SAMPLED) != 0 && !self.untimed(path) {
            return None;
        }
        self.core.admit_fast()
    }

    /// With [`SAMPLED`] (and neither [`TIME_CALLS`] nor [`OFF`]): whether
    /// this call is not one of the sample, counting it; `false` sends it to
    /// [`Inner::acquire_slow`], which times it.
    #[inline(always)]
    fn untimed(&self, path: u16) -> bool {
        path & (TIME_CALLS | OFF) == 0 && self.sampler.as_ref().is_some_and(|s| !s.due())
    }

    /// Admission when [`Inner::fast_ticket`] could not decide: a closed
    /// breaker timing its calls (every one; with [`SAMPLED`] one that
    /// `fast_ticket` found to be of the sample), the open path of a
    /// breaker on the default clock no one hears refusals of (the clock,
    /// the word, the open period), and the rest out of line ([`Inner::acquire_heard`]), so
    /// that this frame saves few registers.
    #[inline(never)]
    pub(crate) fn acquire_slow(&self) -> Result<Ticket, Rejected> {
        let path = self.path();
        if path & (TIME_CALLS | OFF | SAMPLED | TELL_REFUSALS | OWN_CLOCK) == 0 {
            let now = self.refusal_now();
            return match self.core.reject_fast(now) {
                Some(rejected) => Err(rejected),
                // Past the open period (or no longer open): the admission
                // reads the breaker's time with the full guard.
                None => self.admit_at(self.now()),
            };
        }
        if path & (TIME_CALLS | SAMPLED) != 0 && path & OFF == 0 {
            if let Some(mut ticket) = self.core.admit_fast() {
                ticket.start = self.start_time();
                return Ok(ticket);
            }
        }
        self.acquire_heard(path)
    }

    /// [`Inner::acquire_slow`] for a breaker that is off, tells refusals
    /// to someone, times calls outside the closed state, or reads a clock
    /// of its own.
    #[inline(never)]
    fn acquire_heard(&self, path: u16) -> Result<Ticket, Rejected> {
        if path & OFF != 0 {
            return Ok(self.bypass(path));
        }
        let now = self.now();
        if let Some(rejected) = self.core.reject_fast(now) {
            return self.refuse(rejected, path);
        }
        self.admit_at(now)
    }

    /// A timed admission's start (see [`Inner::stamp`]), out of line so
    /// that the open path does not pay for its registers.
    #[inline(never)]
    fn start_time(&self) -> Nanos {
        match &self.clock {
            None => raw_now(),
            Some(_) => self.now(),
        }
    }

    /// A timed admission's start when the breaker's time `now` was read
    /// for the admission anyway: the default clock's raw counter (see
    /// [`raw_now`]), any other clock's `now`.
    #[inline]
    fn stamp(&self, now: Nanos) -> Nanos {
        match &self.clock {
            None => raw_now(),
            Some(_) => now,
        }
    }

    /// A call's duration from its ticket's `start` ([`NO_START`]: not
    /// timed) to now, saturating at zero. The default clock measures it on
    /// its raw counter; any other clock on the breaker's time, `now`.
    #[inline(always)]
    fn elapsed(&self, start: Nanos, now: &LazyNow<'_>) -> Option<Nanos> {
        if start == NO_START {
            return None;
        }
        Some(match &self.clock {
            None => raw_since(start),
            Some(_) => now.get().saturating_sub(start),
        })
    }

    /// Kept out of [`Inner::acquire_slow`] so that the open path does not
    /// pay for this one's registers.
    #[inline(never)]
    fn admit_at(&self, now: Nanos) -> Result<Ticket, Rejected> {
        let (result, transition) = match self.core.admit_fast() {
            Some(ticket) => (Ok(ticket), None),
            None => self.core.admit(now),
        };
        self.emit(transition);
        match result {
            Ok(mut ticket) => {
                // Admitted outside the closed state (a probe, mostly): timed
                // even with `SAMPLED` (`fast_ticket` counted it already,
                // and such calls are few).
                if self.path() & (TIME_CALLS | SAMPLED) != 0 {
                    ticket.start = self.stamp(now);
                }
                Ok(ticket)
            }
            Err(rejected) => self.refuse(rejected, self.path()),
        }
    }

    /// A refusal: told to the listeners, and returned; in shadow mode told
    /// as shadowed, and the call admitted with a permit that counts for
    /// nothing. `path` is the [`Inner::path`] the admission read.
    #[inline(always)]
    fn refuse(&self, rejected: Rejected, path: u16) -> Result<Ticket, Rejected> {
        if path & TELL_REFUSALS != 0 {
            return self.tell_refusal(rejected, path);
        }
        Err(rejected)
    }

    /// A ticket that counts for nothing (off, or shadowed), timed when
    /// something needs the call's duration: with [`SAMPLED`], in off mode
    /// one in the sample (counted here: `fast_ticket` does not count in off
    /// mode), a shadowed call always (counted by `fast_ticket`, which could
    /// not tell whether it was one of the sample).
    #[inline(never)]
    fn bypass(&self, path: u16) -> Ticket {
        let mut ticket = Ticket::BYPASS;
        if path & TIME_CALLS != 0
            || (path & SAMPLED != 0
                && (path & OFF == 0 || self.sampler.as_ref().is_some_and(|s| s.due())))
        {
            ticket.start = self.start_time();
        }
        ticket
    }

    /// A refusal someone hears of: the listeners, and in shadow mode the
    /// call, which runs with a permit that counts for nothing.
    #[inline(never)]
    fn tell_refusal(&self, rejected: Rejected, path: u16) -> Result<Ticket, Rejected> {
        if path & SHADOW != 0 {
            // Relaxed: a statistic.
            self.core.cold().shadowed.fetch_add(1, Ordering::Relaxed);
            for l in self.listeners.iter() {
                l.on_shadowed(&rejected);
            }
            return Ok(self.bypass(path));
        }
        for l in self.listeners.iter() {
            l.on_rejected(&rejected);
        }
        Err(rejected)
    }

    /// The hot path: a success in a closed period with no failure pending
    /// (and, with a count window, the window full of plain successes)
    /// changes nothing and tells no one.
    #[inline(always)]
    pub(crate) fn settles_silently(&self, ticket: &Ticket, outcome: Outcome) -> bool {
        let path = self.path();
        (path & QUIET != 0 || (path & FULL_QUIET != 0 && self.core.window_full(ticket)))
            && outcome == Outcome::Success
            && self.core.success_is_noop(ticket)
            && (path & QUIET != 0 || self.core.tally_settled())
    }

    #[inline]
    pub(crate) fn finish(&self, ticket: Ticket, outcome: Outcome) {
        if !self.settles_silently(&ticket, outcome) {
            self.finish_slow(ticket, outcome)
        }
    }

    /// What [`Inner::settles_silently`] did not settle: a success that
    /// changes nothing, heard only by the listeners ([`SETTLED`], or
    /// [`FULL_TOLD`] over a full window with no tally), is told to them
    /// here ([`Inner::tell_settled`]); a plain success or a failure with
    /// [`RING`] goes to [`Inner::finish_ring`], a plain success with
    /// [`DIRECT`] to [`Inner::finish_success`]; the rest to
    /// [`Inner::finish_counted`]. Called by the guard of `call`, which
    /// asked `settles_silently` already.
    #[inline(never)]
    pub(crate) fn finish_slow(&self, ticket: Ticket, outcome: Outcome) {
        let path = self.path();
        if outcome == Outcome::Success
            && (path & SETTLED != 0
                || (path & FULL_TOLD != 0
                    && self.core.window_full(&ticket)
                    && !self.core.tallied()))
            && self.core.success_is_noop(&ticket)
        {
            return self.tell_settled(ticket.start);
        }
        if path & DIRECT != 0 && outcome == Outcome::Success && ticket.is_normal() {
            if path & RING != 0 {
                return self.finish_ring::<false>(ticket.generation());
            }
            return self.finish_success(ticket.generation());
        }
        if path & RING != 0 && outcome == Outcome::Failure && ticket.is_normal() {
            return self.finish_ring::<true>(ticket.generation());
        }
        self.finish_counted(ticket, outcome, path)
    }

    /// [`Inner::finish_slow`] past its first cases, out of line so that
    /// those need no frame: [`FULL_TOLD`] over a full window with a tally
    /// (never with [`DIRECT`], which has no listener), the rest.
    #[inline(never)]
    fn finish_counted(&self, ticket: Ticket, outcome: Outcome, path: u16) {
        if outcome == Outcome::Success
            && path & FULL_TOLD != 0
            && self.core.window_full(&ticket)
            && self.core.success_is_noop(&ticket)
            && self.core.tally_settled()
        {
            return self.tell_settled(ticket.start);
        }
        self.finish_full(ticket, outcome)
    }

    /// A closed-state success or (`FAILED`) failure with [`RING`]: over
    /// a call of the same outcome, settled on [`Core::ring`] itself (the
    /// generation check, the ring position and a compare: it writes
    /// nothing); over anything else, recorded at the position it took
    /// ([`Inner::finish_ring_changed`]). A stale permit's verdict changes
    /// nothing (the ring is the only rule). The bit may be stale (a
    /// reconfigure racing this verdict): then a verdict over one of the
    /// same outcome changes nothing in the window, as if it had come
    /// before the reconfigure, and any other is recorded under the live
    /// settings. One function per outcome, so that neither tests it.
    #[inline(never)]
    fn finish_ring<const FAILED: bool>(&self, generation: u64) {
        // `RING` is only ever set for a breaker that has its ring (see
        // `path_for`), which it keeps for its life.
        let Some(w) = self.core.ring() else { return };
        if self.core.generation() != generation {
            return;
        }
        let i = w.claim();
        if !w.unchanged(i, FAILED, false) {
            self.finish_ring_changed(generation, i, FAILED);
        }
    }

    /// [`Inner::finish_ring`] over a slot that held something else: the
    /// record proper at position `i` if [`Core::ring`] alone is still in
    /// force; otherwise the verdict is recorded by the rules in force (at
    /// another position, if in the same window). A success that leaves
    /// the window full of plain successes marks it so (see
    /// [`Core::mark_full`]): only such a success can, and the next
    /// successes then settle without the ring.
    #[inline(never)]
    fn finish_ring_changed(&self, generation: u64, i: usize, failed: bool) {
        self.core.with_live(|live| {
            let now = LazyNow::new(self);
            if !self.core.ring_in_force(live) {
                let outcome = if failed {
                    Outcome::Failure
                } else {
                    Outcome::Success
                };
                let transition = self
                    .core
                    .record_closed(live, generation, outcome, false, &now);
                return self.emit(transition);
            }
            let transition = self.core.record_claimed(live, generation, i, failed, &now);
            if !failed
                && transition.is_none()
                && self.core.ring().is_some_and(|w| w.all_plain_successes())
            {
                self.core.mark_full(live, generation);
            }
            self.emit(transition);
        })
    }

    /// A closed-state success with [`DIRECT`]: recorded by
    /// [`Core::record_plain_success`], in one visit to the live settings.
    #[inline(never)]
    fn finish_success(&self, generation: u64) {
        self.core.with_live(|live| {
            let transition = self
                .core
                .record_plain_success(live, generation, &LazyNow::new(self));
            self.emit(transition);
        })
    }

    /// A success that changes nothing, told to the listeners: untimed, to
    /// a breaker's one listener, as the last call of
    /// [`Inner::finish_slow`], which then needs no frame of its own; timed,
    /// or to several, out of line.
    #[inline(always)]
    fn tell_settled(&self, start: Nanos) {
        match &*self.listeners {
            [only] if start == NO_START => only.on_call(&UNTIMED),
            _ => self.tell_settled_timed(start),
        }
    }

    /// [`Inner::tell_settled`] for a timed call, or several listeners.
    #[inline(never)]
    fn tell_settled_timed(&self, start: Nanos) {
        self.tell_listeners(
            Outcome::Success,
            false,
            self.elapsed(start, &LazyNow::new(self)),
        );
    }

    #[inline(never)]
    fn finish_full(&self, ticket: Ticket, outcome: Outcome) {
        let path = self.path();
        if outcome == Outcome::Success
            && path & SETTLED == 0
            && ticket.start == NO_START
            && path & TIME_WINDOW == 0
            && self.listeners.is_empty()
        {
            // Untimed, not slow, told to no one: settled, or recorded, in
            // one visit to the live settings (a count window full of plain
            // successes changes nothing; one holding failures mostly takes
            // a success over a success, which writes nothing either).
            return self.core.with_live(|live| {
                self.core.count(&ticket, outcome, false);
                if self.changes_nothing(live, path, &ticket, outcome) {
                    if path & FULL_QUIET != 0 {
                        self.core.mark_full(live, ticket.generation());
                    }
                    return;
                }
                let transition =
                    self.core
                        .record(live, ticket, outcome, false, &LazyNow::new(self));
                self.emit(transition);
            });
        }
        let now = LazyNow::new(self);
        let elapsed = self.elapsed(ticket.start, &now);
        // Everyone is told inside, so that no transition is carried out of
        // the closure (a wide copy on every call, though rarely `Some`).
        self.core.with_live(|live| {
            let slow = live.cells.is_slow(elapsed);
            self.core.count(&ticket, outcome, slow);
            let transition = if !slow && self.changes_nothing(live, path, &ticket, outcome) {
                if path & FULL_TOLD != 0 {
                    self.core.mark_full(live, ticket.generation());
                }
                None
            } else {
                self.core.record(live, ticket, outcome, slow, &now)
            };
            if !self.listeners.is_empty() {
                self.tell_call(outcome, slow, elapsed);
            }
            self.emit(transition);
        })
    }

    /// A permit given up without a verdict (see [`Core::release`]): only a
    /// probe's frees anything.
    #[inline]
    pub(crate) fn release(&self, ticket: Ticket) {
        if ticket.kind() == Kind::Probe {
            self.release_probe(ticket);
        }
    }

    /// A probe given up without a verdict; tells the transition if the
    /// half-open deadline had passed.
    #[inline(never)]
    fn release_probe(&self, ticket: Ticket) {
        let t = self.core.release(ticket, &LazyNow::new(self));
        self.emit(t);
    }

    #[inline(never)]
    fn tell_call(&self, outcome: Outcome, slow: bool, elapsed: Option<Nanos>) {
        self.tell_listeners(outcome, slow, elapsed);
    }

    /// Tells every listener of one call; an untimed success, the same for
    /// every call, as one shared event rather than one written per call.
    #[inline(always)]
    fn tell_listeners(&self, outcome: Outcome, slow: bool, elapsed: Option<Nanos>) {
        let written;
        let call = if elapsed.is_none() && outcome == Outcome::Success && !slow {
            &UNTIMED
        } else {
            written = CallEvent {
                outcome,
                slow,
                timed: elapsed.is_some(),
                duration: elapsed.map_or(Duration::ZERO, Duration::from_nanos),
            };
            &written
        };
        for l in self.listeners.iter() {
            l.on_call(call);
        }
    }

    /// Whether a closed-state success that was not slow changes nothing, so
    /// that [`Core::record`] (which would find the same) can be skipped: no
    /// rule in force would change its cells ([`Core::settled`]: no
    /// consecutive failure to reset, no window or a count window full of
    /// plain successes). A time window counts every call. `path` is the
    /// [`Inner::path`] the verdict read.
    #[inline(always)]
    fn changes_nothing(&self, live: &Live, path: u16, ticket: &Ticket, outcome: Outcome) -> bool {
        outcome == Outcome::Success
            && ticket.is_normal()
            && path & TIME_WINDOW == 0
            && self.core.settled(live, ticket.generation())
    }

    #[inline(always)]
    pub(crate) fn emit(&self, transition: Option<Transition>) {
        if let Some(t) = transition {
            self.tell(&t);
        }
    }

    #[inline(never)]
    fn tell(&self, t: &Transition) {
        for l in self.listeners.iter() {
            l.on_transition(t);
        }
        #[cfg(feature = "fleet")]
        if let Some(hook) = Option::as_ref(&self.hook.load()) {
            hook.on_transition(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Ordering, Sampler, RING};
    use crate::CircuitBreaker;

    /// A stale `RING` bit, as a verdict racing a reconfigure may read it,
    /// on a breaker whose first count window is out of force for good (a
    /// resize and back): a verdict over one of the same outcome in the
    /// first window changes nothing, as if it had come before the
    /// reconfigure (which emptied the window); any other is recorded in
    /// the window in force.
    #[test]
    fn a_stale_ring_bit_records_into_the_window_in_force_or_nowhere() {
        let window = |n| {
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .min_calls(4)
                .count_window(n)
        };
        let b = window(4).build().unwrap();
        for _ in 0..3 {
            let _ = b.call(|| Err::<(), _>(()));
        }
        assert_eq!(b.snapshot().failures, 3, "min_calls not reached");
        b.reconfigure(window(8)).unwrap();
        b.reconfigure(window(4)).unwrap();
        let path = &b.inner().core.path;
        let bits = path.load(Ordering::Relaxed);
        assert_eq!(bits & RING, 0, "the first window out of force");
        path.store(bits | RING, Ordering::Relaxed);
        // The first window's next position is empty: a success over it is
        // recorded under the settings in force; the next position holds a
        // failure: a failure over it changes nothing.
        b.call(|| Ok::<_, ()>(())).unwrap();
        let _ = b.call(|| Err::<(), _>(()));
        let s = b.snapshot();
        assert_eq!(
            (s.calls, s.failures),
            (1, 0),
            "the success, in the new window"
        );
        // A success over a failure: recorded in the new window too.
        b.call(|| Ok::<_, ()>(())).unwrap();
        assert_eq!(b.snapshot().calls, 2);
        path.store(bits, Ordering::Relaxed);
        for _ in 0..2 {
            let _ = b.call(|| Err::<(), _>(()));
        }
        assert_eq!(
            b.state(),
            crate::State::Open,
            "2 failures of the new window's 4"
        );
    }

    #[test]
    fn the_sampler_finds_multiples_without_dividing() {
        for n in (1..=130).chain([
            1000,
            4096,
            65_536,
            1 << 31,
            u64::from(u32::MAX),
            3u64.pow(20),
        ]) {
            let s = Sampler::new(n);
            let counts = (0..3000)
                .chain((0..3000).map(|i| u64::MAX - i))
                .chain((0..3000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
            for c in counts {
                assert_eq!(
                    Sampler::multiple(c, s.inverse, u32::from(s.shift), s.limit),
                    c % n == 0,
                    "n {n}, c {c}"
                );
            }
        }
        for every in [Sampler::new(0), Sampler::new(1)] {
            assert!(!every.samples());
            assert!((0..10).all(|_| every.due()));
        }
        assert!(Sampler::new(2).samples());
        let four = Sampler::new(4);
        let due: Vec<bool> = (0..9).map(|_| four.due()).collect();
        assert_eq!(
            due,
            [true, false, false, false, true, false, false, false, true]
        );
    }
}

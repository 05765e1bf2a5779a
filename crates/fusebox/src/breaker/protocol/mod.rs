//! The protocol: the only place where a breaker changes state. It owns the
//! state word and its generations, admission, probe slots and the
//! publication of transitions; the trip rules (`super::rules`) decide on
//! numbers, and the handle (`super::fast`) reads the clock and tells the
//! listeners.
//!
//! The state and its generation live in one atomic word, read without a lock
//! on every admission. Transitions happen under a mutex that is never taken
//! on the closed-state success path; they write everything the new state needs
//! and then publish the word with a release store.

use super::open_period::OpenPeriod;
use super::rules::{Armed, Cells, Counted, Period, Resident, Rules, Verdict};
#[cfg(feature = "fleet")]
use super::tally::TallyCells;
use super::types::{Outcome, Reason, Rejected, State, Transition};
use super::window::{CountWindow, Totals, Window};
use crate::policy::Mode;
use crate::sync::{
    lock, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, LazyBox, Mutex, Ordering, Striped, Swap,
    SwapGuard,
};
use std::fmt;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "fleet")]
mod fleet;

/// `Live`s a thread keeps for [`Core::with_live`].
#[cfg(not(loom))]
const LIVE_SLOTS: usize = 8;

/// The `Live`s that breakers of equal settings share (see [`Live::arm`]),
/// each beside its settings: at most [`SHARED_MAX`] at once (the breakers
/// of more distinct settings than that get `Live`s of their own), dropped
/// ones purged at the next look.
static SHARED: std::sync::Mutex<Vec<(Settings, std::sync::Weak<Live>)>> =
    std::sync::Mutex::new(Vec::new());

/// See [`SHARED`].
const SHARED_MAX: usize = 64;

/// The `Live` of `settings` that breakers of equal settings share (its
/// rules armed with resident cells alone, `cells`: see [`Live::arm`]), made
/// from `cells` if none is left.
fn shared_live(settings: Settings, cells: Cells) -> Arc<Live> {
    let mut table = shared_table();
    if let Some(live) = table
        .iter()
        .find(|(s, _)| *s == settings)
        .and_then(|(_, live)| live.upgrade())
    {
        return live;
    }
    let live = Arc::new(Live {
        tuning: settings.tuning,
        cells,
    });
    if table.len() < SHARED_MAX {
        table.push((settings, Arc::downgrade(&live)));
    }
    live
}

/// [`SHARED`], locked, its dropped entries purged (`Weak::strong_count` is
/// a load: without touching the counts of the live ones).
fn shared_table() -> std::sync::MutexGuard<'static, Vec<(Settings, std::sync::Weak<Live>)>> {
    // Poison ignored: the table is a cache, whole after any panic.
    let mut table = SHARED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    table.retain(|(_, live)| live.strong_count() > 0);
    table
}

/// How many shared `Live`s are held (for tests).
#[cfg(test)]
pub(crate) fn shared_lives() -> usize {
    shared_table().len()
}

/// The address that identifies a `Live` in [`Core::current`].
fn live_addr(live: &Arc<Live>) -> usize {
    Arc::as_ptr(live) as usize
}

/// Nanoseconds on the breaker's clock.
pub(crate) type Nanos = u64;

/// `Ticket::start` when the call is not timed.
pub(crate) const NO_START: Nanos = Nanos::MAX;

/// Bit of `Core::recorders` set while a close empties the rules' cells.
const SEAL: u64 = 1 << 63;

/// The breaker's time, read at most once per operation and only if
/// needed (the handle's `LazyNow`): what a verdict passes in so that the
/// protocol never reads a clock itself.
pub(crate) trait Now {
    /// The breaker's time now (read on the first call, then kept).
    fn get(&self) -> Nanos;
}

/// A time already read.
impl Now for Nanos {
    #[inline(always)]
    fn get(&self) -> Nanos {
        *self
    }
}

/// State word: generation in the high 56 bits, state tag in the low 8. At a
/// billion transitions a second the generation would wrap after more than
/// two years, so a stale permit can never see its own generation again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Word(u64);

impl Word {
    fn new(generation: u64, state: State) -> Word {
        Word((generation << 8) | state.tag())
    }
    fn generation(self) -> u64 {
        self.0 >> 8
    }
    fn state(self) -> State {
        State::from_tag(self.0 & 0xff)
    }
}

/// What a permit remembers about its admission: two words, so that a
/// ticket travels in two registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    /// The generation it was admitted in, shifted left by 8, and its
    /// [`Kind`] in the low byte: the state word's layout, so that a
    /// closed-state (or disabled) admission's ticket is the word itself.
    tagged: u64,
    /// Admission time (see `Inner::stamp`: for the default clock a raw
    /// counter reading, not the breaker's time), when something needs the
    /// call's duration; `NO_START` otherwise (a sentinel rather than an
    /// `Option` keeps the ticket in two words).
    pub(crate) start: Nanos,
}

impl Ticket {
    /// A ticket whose verdict counts for nothing (any generation will do:
    /// a bypass is never counted and holds no probe slot).
    pub(crate) const BYPASS: Ticket = Ticket::new(0, Kind::Bypass);

    /// An untimed ticket of `generation` (below 2^56, as the word's) and
    /// `kind`.
    #[inline(always)]
    pub(crate) const fn new(generation: u64, kind: Kind) -> Ticket {
        Ticket {
            tagged: (generation << 8) | kind as u64,
            start: NO_START,
        }
    }

    /// The generation the ticket was admitted in.
    #[inline(always)]
    pub(crate) const fn generation(&self) -> u64 {
        self.tagged >> 8
    }

    /// How its verdict is treated.
    #[inline(always)]
    pub(crate) const fn kind(&self) -> Kind {
        match self.tagged as u8 {
            t if t == Kind::Normal as u8 => Kind::Normal,
            t if t == Kind::Probe as u8 => Kind::Probe,
            _ => Kind::Bypass,
        }
    }

    /// Whether it is a closed-state permit ([`Kind::Normal`]).
    #[inline(always)]
    pub(crate) const fn is_normal(&self) -> bool {
        self.tagged as u8 == Kind::Normal as u8
    }
}

/// How an admitted call's verdict is treated. Each kind's value is the
/// tag of the state that admits it ([`State::from_tag`]), so that
/// [`Core::admit_fast`]'s kind is the word's tag itself, with no select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// Closed state: the verdict feeds the trip rules.
    Normal = 0,
    /// Half-open: the verdict decides whether to close or reopen.
    Probe = 2,
    /// Disabled, in [`Mode::Off`], or admitted in [`Mode::Shadow`] though
    /// refused: the verdict counts for nothing.
    Bypass = 4,
}

// `Core::admit_fast` hands out the state word itself as a ticket's tag: the
// tag of each state it admits in is the kind of the tickets it admits.
const _: () = assert!(
    State::Closed.tag() == Kind::Normal as u64
        && State::HalfOpen.tag() == Kind::Probe as u64
        && State::Disabled.tag() == Kind::Bypass as u64
);

/// What the lock guards: half-open bookkeeping and the trip counter.
#[derive(Debug, Default)]
struct Slow {
    probes_in_flight: u32,
    /// Since when probes have been out without a break: set when a probe is
    /// admitted with none in flight, meaningful while `probes_in_flight > 0`
    /// (see [`Slow::out_since`]). What the half-open deadline
    /// ([`Tuning::max_wait`]) counts from.
    probes_out_since: Nanos,
    probe_successes: u32,
    /// Slow successful probes in this half-open period.
    probe_slow: u32,
    /// Trips since the breaker last closed (drives the open backoff).
    trips: u32,
}

impl Slow {
    /// A probe admitted at `now`.
    fn take_probe(&mut self, now: Nanos) {
        if self.probes_in_flight == 0 {
            self.probes_out_since = now;
        }
        self.probes_in_flight += 1;
    }

    /// A probe of the half-open period in force finished (or was dropped).
    fn end_probe(&mut self) {
        self.probes_in_flight = self.probes_in_flight.saturating_sub(1);
    }

    /// Since when probes have been out without a break, if any is out.
    fn out_since(&self) -> Option<Nanos> {
        (self.probes_in_flight > 0).then_some(self.probes_out_since)
    }

    /// No probe out: a new half-open period, or one that ended.
    fn clear_probes(&mut self) {
        self.probes_in_flight = 0;
    }
}

/// Validated breaker settings, as the state machine needs them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Settings {
    pub(crate) rules: Rules,
    pub(crate) tuning: Tuning,
}

/// The settings beside the trip rules: what a [`Live`] keeps as it is (its
/// rules it keeps armed, in its cells, and nowhere else).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tuning {
    pub(crate) open: OpenPeriod,
    pub(crate) probes: u32,
    pub(crate) successes: u32,
    pub(crate) mode: Mode,
    /// The half-open deadline: probes out for this long without a break
    /// count as failed (`None`: no deadline).
    pub(crate) max_wait: Option<NonZeroU64>,
}

/// The settings in force and their rules armed with their cells, replaced
/// whole by a reconfigure. A verdict reads one `Live` and decides by it
/// and the breaker's resident cells alone.
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) tuning: Tuning,
    /// The rules in force, each armed with its cells: the one copy of the
    /// rules a breaker keeps (see [`Live::settings`]; shared with the
    /// breakers of equal settings when they are all armed with resident
    /// cells, see [`Live::arm`]).
    pub(crate) cells: Cells,
}

impl Live {
    /// `settings` put in force, with the cells of `old` that still serve
    /// their rules (`old` is `None` at the breaker's build) and the
    /// breaker's `resident` ones: a `Live` of its own, or, when every rule
    /// finds its cells among the resident ones (the consecutive count, the
    /// window the breaker was built with), so that the `Live` keeps
    /// nothing of one breaker's, one that the breakers of equal settings
    /// share ([`SHARED`]).
    fn arm(settings: Settings, old: Option<&Cells>, resident: &Resident) -> Arc<Live> {
        let cells = settings.rules.arm(old, resident);
        if cells.all_resident() {
            return shared_live(settings, cells);
        }
        Arc::new(Live {
            tuning: settings.tuning,
            cells,
        })
    }

    /// The settings in force, rules and all.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            rules: self.cells.rules(),
            tuning: self.tuning,
        }
    }
}

/// The figures behind a [`Snapshot`](crate::Snapshot).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Figures {
    pub(crate) state: State,
    pub(crate) generation: u64,
    pub(crate) totals: Totals,
    pub(crate) consecutive: u32,
    pub(crate) rejected: u64,
    pub(crate) shadowed: u64,
    pub(crate) since_transition: Nanos,
}

/// Counters (and a setting) of the half-open state, for a fleet, and the
/// count of shadowed refusals: touched on the half-open path and in
/// [`Mode::Shadow`] only, so boxed on first use and a breaker that never
/// half-opens nor shadows carries one pointer instead of four counters.
#[derive(Debug)]
pub(crate) struct Cold {
    /// The `retry_after` of a half-open call the gate denies (nanoseconds).
    pub(crate) deny_retry: AtomicU64,
    /// Half-open admissions asked for (admitted or not): a fleet's demand
    /// for the probe lease.
    pub(crate) half_open_asks: AtomicU64,
    /// Probe permits dropped without a verdict.
    pub(crate) probes_dropped: AtomicU64,
    /// Refusals let through in [`Mode::Shadow`].
    pub(crate) shadowed: AtomicU64,
}

impl Cold {
    fn new() -> Cold {
        Cold {
            deny_retry: AtomicU64::new(0),
            half_open_asks: AtomicU64::new(0),
            probes_dropped: AtomicU64::new(0),
            shadowed: AtomicU64::new(0),
        }
    }
}

pub(crate) struct Core {
    word: AtomicU64,
    /// When the current open period ends (meaningful while Open).
    open_until: AtomicU64,
    /// The rules' cells kept for the breaker's life: the consecutive
    /// count, tagged with the generation it counts for, and the window the
    /// breaker was built with, its rules' cells for as long as a
    /// reconfigure keeps them, which the hot path reaches without the
    /// `Live` while it is a count window in force ([`Core::ring`]); a
    /// reconfigure to another window leaves it out of force for good.
    resident: Resident,
    /// Refusals decided, shadowed ones included (a fleet's demand).
    rejected: Striped,
    last_transition: AtomicU64,
    /// Closed-state verdicts between their generation check and the end of
    /// their record into the rules' cells ([`Period::while_current`]), plus
    /// the `SEAL` bit while a close empties the cells. Everything about the seal is one variable, so its read-modify-
    /// writes are totally ordered and no SeqCst reasoning is needed.
    recorders: Striped,
    slow: Mutex<Slow>,
    /// Replaced only under `slow`'s lock.
    live: Swap<Live>,
    /// The address of the `Live` in `live`, for [`Core::with_live`]'s
    /// per-thread cache (written with it, under the lock).
    current: AtomicUsize,
    /// Who decides half-open admissions (see [`ProbeGate`]).
    gate: AtomicU8,
    /// The breaker's hot-path bits (`Inner`'s `TIME_CALLS`, `QUIET`,
    /// `FULL_QUIET`, `SETTLED`, `TIME_WINDOW`, `SHADOW`, `OFF`,
    /// `TELL_REFUSALS`, `SAMPLED`, `FULL_TOLD`, `DIRECT`, `RING` and
    /// `OWN_CLOCK`), derived from the settings in force (and the listeners
    /// and the clock) and rewritten by a reconfigure; kept here beside
    /// `gate`, in the room its alignment leaves.
    pub(crate) path: AtomicU16,
    /// The half-open state's counters and the shadowed refusals,
    /// allocated on first use.
    cold: LazyBox<Cold>,
    /// Cumulative closed-state verdicts, once something asked for them.
    #[cfg(feature = "fleet")]
    tally: LazyBox<TallyCells>,
    /// `generation + 1` of a closed period whose rules' cells were found
    /// settled (a count window full of plain successes), or 0: lets such a
    /// success settle without the settings (see [`Core::window_full`]).
    /// Cleared by every record that can unsettle the cells
    /// ([`Period::unsettle`]) and by every reconfigure; a close needs no
    /// clearing, since the next closed period has another generation.
    full: AtomicU64,
}

/// Who may admit half-open probes. A fleet hands the decision to the one
/// replica holding its probe lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(feature = "fleet"),
    expect(dead_code, reason = "only a fleet hands the probes elsewhere")
)]
pub(crate) enum ProbeGate {
    /// This breaker decides alone (the default, and a disconnected fleet).
    Local,
    /// Another replica probes: reject half-open admissions.
    Deny,
    /// This replica holds the lease: admit probes as usual.
    Allow,
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

impl Core {
    pub(crate) fn new(settings: Settings, now: Nanos) -> Core {
        let resident = Resident::new(&settings.rules);
        let live = Swap::new(Live::arm(settings, None, &resident));
        let current = AtomicUsize::new(live_addr(&live.load()));
        let core = Core {
            word: AtomicU64::new(Word::new(0, State::Closed).0),
            open_until: AtomicU64::new(0),
            resident,
            rejected: Striped::new(),
            last_transition: AtomicU64::new(now),
            recorders: Striped::new(),
            slow: Mutex::new(Slow::default()),
            live,
            current,
            gate: AtomicU8::new(ProbeGate::Local as u8),
            path: AtomicU16::new(0),
            cold: LazyBox::new(),
            #[cfg(feature = "fleet")]
            tally: LazyBox::new(),
            full: AtomicU64::new(0),
        };
        // Under loom allocated at once, as `Striped` cells are: the models
        // check the protocol, not `LazyBox`.
        #[cfg(loom)]
        core.cold();
        core
    }

    /// The half-open counters, allocated if they were not (by the first
    /// half-open admission, probe dropped, shadowed refusal or fleet
    /// setting).
    #[inline]
    pub(crate) fn cold(&self) -> &Cold {
        self.cold.get_or(Cold::new)
    }

    /// The half-open counters if something allocated them.
    pub(crate) fn cold_written(&self) -> Option<&Cold> {
        self.cold.get()
    }

    /// The settings in force (and their cells).
    #[inline]
    pub(crate) fn live(&self) -> SwapGuard<Live> {
        self.live.load()
    }

    /// Puts `settings` in force for everything decided from now on. A
    /// rule's cells and their counts are kept if they serve the new rule
    /// (a window of the same shape); otherwise the rule starts empty. The
    /// state, the open period in progress and the resident counts (the
    /// consecutive one) are untouched. A closed breaker whose counts reach
    /// changed trip rules trips now.
    pub(crate) fn reconfigure(&self, settings: Settings, now: Nanos) -> Option<Transition> {
        self.update_settings(now, |_| settings)
    }

    /// Puts in force the settings `change` makes of those in force, both
    /// under the lock, so no reconfigure can come between the read and the
    /// write (see [`Core::reconfigure`]).
    pub(crate) fn update_settings(
        &self,
        now: Nanos,
        change: impl FnOnce(&Settings) -> Settings,
    ) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let old = self.live.load();
        let old_settings = old.settings();
        let settings = change(&old_settings);
        let same_rules = old_settings.rules == settings.rules;
        let new = Live::arm(settings, Some(&old.cells), &self.resident);
        let addr = live_addr(&new);
        self.live.store(new);
        // Relaxed: only compared with the address of a `Live` a thread already
        // holds (see `with_live`); the `Live` itself is read through `live`.
        self.current.store(addr, Ordering::Relaxed);
        // Release: a `mark_full` that reads this (or a later) value of `full`
        // sees the new `current` and withdraws its mark (see `mark_full`).
        self.full.swap(0, Ordering::Release);
        // A closed breaker whose kept counts already reach a tightened
        // threshold trips now, not at the next verdict that moves them.
        // Unchanged rules (a new mode, open period or probe count) judge
        // nothing anew.
        let w = self.load();
        let live = self.live.load();
        if w.state() == State::Closed
            && live.cells.needs().counts_last_calls
            && self.settled(&live, w.generation())
        {
            // A kept window full of plain successes stays marked so: the
            // next successes may not mark it (with `Inner`'s ring, a
            // success over a success never looks).
            self.mark_full(&live, w.generation());
        }
        if w.state() != State::Closed || same_rules {
            return None;
        }
        // We hold the lock: the closed period cannot end meanwhile.
        let period = ClosedPeriod::new(self, w.generation(), &now);
        let reason = live.cells.reached(&self.resident, &period)?;
        Some(self.open(&mut slow, w, now, reason))
    }

    /// Runs `f` on the `Live` in force while holding the lock under which
    /// it is replaced (see `Inner::set_path`).
    pub(crate) fn with_live_locked<R>(&self, f: impl FnOnce(&Live) -> R) -> R {
        let _slow = lock(&self.slow);
        f(&self.live.load())
    }

    /// The count window the breaker was built with, if any (in force or
    /// not: see [`Core::ring_in_force`]).
    #[inline(always)]
    pub(crate) fn ring(&self) -> Option<&CountWindow> {
        match self.resident.windowed.as_deref() {
            Some(Window::Count(w)) => Some(w),
            _ => None,
        }
    }

    /// Whether the rules of `live` are [`Core::ring`] alone: a count
    /// window, the one the breaker was built with, and no other rule.
    pub(crate) fn ring_in_force(&self, live: &Live) -> bool {
        let cells = &live.cells;
        self.ring().is_some()
            && cells.windowed.as_ref().is_some_and(Armed::in_resident)
            && cells.consecutive.is_none()
            && cells.failures_within.is_none()
    }

    /// The closed period (or other state's) generation in force.
    #[inline(always)]
    pub(crate) fn generation(&self) -> u64 {
        self.load().generation()
    }

    /// Runs `f` on the settings in force, without `live`'s load on the hot
    /// path: each thread keeps the `Live`s it last loaded (in a small
    /// per-thread table indexed by the `Live`'s address) and reuses one
    /// while the breaker's `current` still names it. The cached `Arc`
    /// keeps its `Live` alive, so the address cannot be reused for another
    /// `Live` while it is cached: equal addresses mean the same `Live`. A
    /// thread holds at most [`LIVE_SLOTS`] `Live`s (of breakers it used
    /// lately, dropped ones included) until it replaces them or exits.
    #[cfg(not(loom))]
    #[inline]
    pub(crate) fn with_live<R>(&self, f: impl FnOnce(&Live) -> R) -> R {
        use std::cell::Cell;
        thread_local! {
            static CACHE: [Cell<Option<Arc<Live>>>; LIVE_SLOTS] =
                const { [const { Cell::new(None) }; LIVE_SLOTS] };
        }
        // Relaxed: see `reconfigure`. A stale address only finds the old
        // `Live` (or none): the verdict is then decided by the settings it
        // raced with, as with a plain load.
        let current = self.current.load(Ordering::Relaxed);
        // By the `Live`'s address, not the breaker's: the breakers that
        // share a `Live` (see `Live::arm`) share its entry too.
        let slot = (current >> 6) % LIVE_SLOTS;
        // The entry is taken out while `f` runs and put back after, so a
        // breaker re-entered from `f` (through a `Clock`) finds it empty and
        // loads for itself; a thread being torn down loads every time. `f`
        // has one call site, so that it is inlined here.
        let taken = CACHE
            .try_with(|cache| match cache[slot].take() {
                Some(live) if live_addr(&live) == current => Some(live),
                _ => None,
            })
            .ok()
            .flatten();
        let live = match taken {
            Some(live) => live,
            None => self.live.load_full(),
        };
        let r = f(&live);
        let _ = CACHE.try_with(|cache| cache[slot].set(Some(live)));
        r
    }

    #[cfg(loom)]
    pub(crate) fn with_live<R>(&self, f: impl FnOnce(&Live) -> R) -> R {
        f(&self.live.load())
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
        // On the tag rather than `w.state()`, which reads every tag past
        // the last as Disabled: the kind is then the tag itself.
        const CLOSED: u64 = State::Closed.tag();
        const DISABLED: u64 = State::Disabled.tag();
        match w.0 & 0xff {
            // The kinds' values are these tags: the ticket is the word.
            CLOSED | DISABLED => Some(Ticket {
                tagged: w.0,
                start: NO_START,
            }),
            _ => None,
        }
    }

    /// Whether a success of `ticket` would change none of the rules'
    /// tagged resident counts (not the cells of a window held among them):
    /// a closed-state permit of the current closed period
    /// with no failure counted. One load.
    #[inline]
    pub(crate) fn success_is_noop(&self, ticket: &Ticket) -> bool {
        // A stale answer only sends the verdict down the full path.
        ticket.is_normal() && self.resident.settled(ticket.generation())
    }

    /// Whether a plain success of `generation` changes nothing by the rules
    /// of `live`: neither their resident cells nor their own.
    #[inline(always)]
    pub(crate) fn settled(&self, live: &Live, generation: u64) -> bool {
        live.cells.settled(&self.resident, generation)
    }

    /// Whether the rules' cells of `ticket`'s closed period were found
    /// settled (a count window full of plain successes) and nothing that
    /// could change that has been recorded since. One load. A stale `true` is a success settled just
    /// before the record that cleared it, as with a stale read of the
    /// window's sums.
    #[inline(always)]
    pub(crate) fn window_full(&self, ticket: &Ticket) -> bool {
        // Relaxed: see above; the mark is validated by `mark_full`.
        self.full.load(Ordering::Relaxed) == ticket.generation() + 1
    }

    /// Marks the rules' cells of `live` settled for the closed period
    /// `generation`, after a success found them so.
    ///
    /// The protocol (checked by the loom models `full_window_mark_*`): the
    /// mark is a read-modify-write of `full` followed by a check of the
    /// cells (a count window's sums) and of the `Live` in force; a record
    /// that unsettles the cells ([`Period::unsettle`]), and a reconfigure,
    /// change their data first and then swap `full` to 0. All of them write `full` by
    /// read-modify-writes, so they are ordered: if the clearing swap comes
    /// after the mark, the mark is gone; if before, the mark's Acquire
    /// synchronises with the clearing swap's Release (or with a later
    /// read-modify-write in its release sequence) and the check sees the
    /// failure or the new `Live`, and withdraws the mark. The argument needs
    /// every write of `full` to be a read-modify-write: a plain store would
    /// break the release sequences it rests on.
    #[inline(never)]
    pub(crate) fn mark_full(&self, live: &Live, generation: u64) {
        let token = generation + 1;
        // Relaxed: a hint that saves the swap when the mark is there.
        if self.full.load(Ordering::Relaxed) == token {
            return;
        }
        // A stale permit's mark would replace a current one with one no
        // current permit matches.
        if self.generation() != generation {
            return;
        }
        // AcqRel: see above.
        self.full.swap(token, Ordering::AcqRel);
        // Relaxed: ordered after the swap's Acquire.
        let valid = live.cells.cells_settled(&self.resident)
            && self.current.load(Ordering::Relaxed) == std::ptr::from_ref(live) as usize;
        if !valid {
            // Relaxed: withdrawing only ever makes calls take the full path.
            let _ = self
                .full
                .compare_exchange(token, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The open path: a rejection decided from the word and the open period
    /// alone, without the lock (small enough to come back in registers).
    /// `None` means "ask [`Core::admit`]".
    #[inline]
    pub(crate) fn reject_fast(&self, now: Nanos) -> Option<Rejected> {
        let w = self.load();
        // Open first: the state the open path is taken for.
        if w.0 & 0xff == State::Open.tag() {
            // Relaxed: ordered after the Acquire load of the word (see `load`).
            let until = self.open_until.load(Ordering::Relaxed);
            return (now < until).then(|| self.reject(State::Open, Some(until - now)));
        }
        (w.state() == State::ForcedOpen).then(|| self.reject(State::ForcedOpen, None))
    }

    #[inline]
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
        let (w, transition) = self.due(&mut slow, now);
        let ticket = |kind| Ticket::new(w.generation(), kind);
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
                // Relaxed (all three): a fleet's decision and counters it
                // reads at its next sync; nothing else rides on them.
                let cold = self.cold();
                cold.half_open_asks.fetch_add(1, Ordering::Relaxed);
                let denied = self.gate.load(Ordering::Relaxed) == ProbeGate::Deny as u8;
                if denied {
                    // Another replica probes: the fleet says when to ask again.
                    let retry = cold.deny_retry.load(Ordering::Relaxed);
                    Err(self.reject(State::HalfOpen, Some(retry)))
                } else if slow.probes_in_flight < self.live.load().tuning.probes {
                    slow.take_probe(now);
                    Ok(ticket(Kind::Probe))
                } else {
                    // A slot frees when a probe finishes; we cannot know when.
                    Err(self.reject(State::HalfOpen, Some(0)))
                }
            }
        };
        (result, transition)
    }

    /// Under the lock: the lazy steps due at `now`, at most one of them
    /// (a half-open period just begun has no probe out to time out).
    fn due(&self, slow: &mut Slow, now: Nanos) -> (Word, Option<Transition>) {
        match self.cool_down(slow, now) {
            (w, None) => match self.expire_probes(slow, w, &now) {
                Some(t) => (self.load(), Some(t)),
                None => (w, None),
            },
            moved => moved,
        }
    }

    /// Under the lock: HalfOpen -> Open if probes have been out without a
    /// break for the half-open deadline ([`Tuning::max_wait`]). They count
    /// as failed: a new open period starts (as for a failed probe), their
    /// slots come back, and their verdicts, of the generation that ends
    /// here, change nothing. `w` is the word in force; the clock is read
    /// only if probes are out and a deadline is set.
    fn expire_probes(&self, slow: &mut Slow, w: Word, now: &impl Now) -> Option<Transition> {
        if w.state() != State::HalfOpen {
            return None;
        }
        let since = slow.out_since()?;
        let wait = self.live.load().tuning.max_wait?.get();
        let now = now.get();
        if now < since.saturating_add(wait) {
            return None;
        }
        slow.clear_probes();
        Some(self.open(slow, w, now, Reason::ProbeTimedOut))
    }

    /// Under the lock: Open -> HalfOpen if the open period is over.
    fn cool_down(&self, slow: &mut Slow, now: Nanos) -> (Word, Option<Transition>) {
        let w = self.load();
        // Relaxed: open_until is only written under the lock we hold.
        if w.state() == State::Open && now >= self.open_until.load(Ordering::Relaxed) {
            // A new half-open period judges only its own probes.
            slow.clear_probes();
            slow.probe_successes = 0;
            slow.probe_slow = 0;
            let t = self.publish(w, State::HalfOpen, now, Reason::CooldownElapsed);
            return (self.load(), Some(t));
        }
        (w, None)
    }

    /// Under the lock: moves to `to` with a new generation. Everything the new
    /// state reads must be written before this is called.
    fn publish(&self, from: Word, to: State, now: Nanos, reason: Reason) -> Transition {
        self.publish_as(from.generation() + 1, from.state(), to, now, reason)
    }

    fn publish_as(
        &self,
        generation: u64,
        from: State,
        to: State,
        now: Nanos,
        reason: Reason,
    ) -> Transition {
        // Published by the Release store of the word just below.
        self.resident.reset(generation);
        // Relaxed: published likewise.
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
        let period = self.live.load().tuning.open.after(slow.trips);
        slow.trips = slow.trips.saturating_add(1);
        // Relaxed: published by the Release store of the word in `publish`.
        self.open_until
            .store(now.saturating_add(period), Ordering::Relaxed);
        self.publish(from, State::Open, now, reason)
    }

    /// Under the lock: closes with empty counters.
    fn close(&self, slow: &mut Slow, from: Word, now: Nanos, reason: Reason) -> Transition {
        *slow = Slow::default();
        let generation = from.generation() + 1;
        let live = self.live.load();
        if !live.cells.needs().empties_on_close {
            return self.publish_as(generation, from.state(), State::Closed, now, reason);
        }
        // Seal, drain, empty, publish, unseal. A verdict that announced itself
        // before the seal is waited for (Acquire: its writes into the cells happen
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
        live.cells.clear(&self.resident);
        let t = self.publish_as(generation, from.state(), State::Closed, now, reason);
        // Release: whoever sees the seal gone also sees the new generation.
        for cell in self.recorders.all() {
            cell.fetch_and(!SEAL, Ordering::Release);
        }
        t
    }

    /// The state in the word, without the lazy Open -> HalfOpen step (no
    /// transition to tell): an open breaker past its period still reads
    /// open.
    pub(crate) fn word_state(&self) -> State {
        self.load().state()
    }

    /// The current state at `now`, moving Open -> HalfOpen, or HalfOpen ->
    /// Open past the half-open deadline, if it is due.
    pub(crate) fn state(&self, now: Nanos) -> (State, Option<Transition>) {
        let w = self.load();
        let due = match w.state() {
            // Relaxed: ordered after the Acquire load of the word; a stale read
            // only sends us to the lock, which decides again.
            State::Open => now >= self.open_until.load(Ordering::Relaxed),
            // Whether probes are out, and since when, is known under the lock.
            State::HalfOpen => self.live.load().tuning.max_wait.is_some(),
            _ => false,
        };
        if due {
            let mut slow = lock(&self.slow);
            let (w, t) = self.due(&mut slow, now);
            return (w.state(), t);
        }
        (w.state(), None)
    }

    /// Records a verdict; the clock is read only if the verdict needs it (a
    /// time window, a transition).
    #[inline]
    pub(crate) fn record(
        &self,
        live: &Live,
        ticket: Ticket,
        outcome: Outcome,
        slow_call: bool,
        now: &impl Now,
    ) -> Option<Transition> {
        match ticket.kind() {
            Kind::Bypass => None,
            Kind::Normal => self.record_closed(live, ticket.generation(), outcome, slow_call, now),
            Kind::Probe => self.record_probe(ticket.generation(), outcome, slow_call, now),
        }
    }

    #[inline]
    pub(crate) fn record_closed(
        &self,
        live: &Live,
        generation: u64,
        outcome: Outcome,
        slow_call: bool,
        now: &impl Now,
    ) -> Option<Transition> {
        let failed = match outcome {
            Outcome::Ignore => return None,
            Outcome::Failure => true,
            Outcome::Success => false,
        };
        let verdict = Verdict {
            failed,
            slow: slow_call,
        };
        let period = ClosedPeriod::new(self, generation, now);
        let mut trip = None;
        match live
            .cells
            .record(&self.resident, verdict, &period, &mut trip)
        {
            // Stale: this permit's closed period is over.
            Counted::Stale => None,
            Counted::Fresh => self.trip_checked(generation, trip, now),
        }
    }

    /// Records a plain success (neither failed nor slow, not told to
    /// anyone) of a closed-state permit of `generation` on the direct path:
    /// without the verdict frame of [`Core::record`], each rule by its
    /// [`TripRule::record_success`](super::rules::TripRule::record_success)
    /// (a count window holding failures takes a success over a success
    /// with a claim and a compare). Cells found settled are marked so (see
    /// [`Core::mark_full`]), as a settled success on the full path marks
    /// them.
    #[inline(always)]
    pub(crate) fn record_plain_success(
        &self,
        live: &Live,
        generation: u64,
        now: &impl Now,
    ) -> Option<Transition> {
        if self.settled(live, generation) {
            self.mark_full(live, generation);
            return None;
        }
        let period = ClosedPeriod::new(self, generation, now);
        let mut trip = None;
        match live
            .cells
            .record_success(&self.resident, &period, &mut trip)
        {
            Counted::Stale => None,
            Counted::Fresh => self.trip_checked(generation, trip, now),
        }
    }

    /// The record proper of a verdict of `Inner::finish_ring_changed`:
    /// a plain success or (`failed`) a failure, not slow, at ring position
    /// `i` over something else, in the count window of `live` (the
    /// caller makes sure it is the one the position was claimed from),
    /// then the trip it calls for.
    #[inline(always)]
    pub(crate) fn record_claimed(
        &self,
        live: &Live,
        generation: u64,
        i: usize,
        failed: bool,
        now: &impl Now,
    ) -> Option<Transition> {
        let (rule, cells) = Armed::with_cells(&live.cells.windowed, &self.resident.windowed)?;
        let period = ClosedPeriod::new(self, generation, now);
        let mut trip = None;
        let verdict = Verdict {
            failed,
            slow: false,
        };
        match rule.record_claimed_inline(cells, i, verdict, &period, &mut trip) {
            Counted::Stale => None,
            Counted::Fresh => self.trip_checked(generation, trip, now),
        }
    }

    /// Trips for `trip`, if any, once the lock confirms the breaker is still
    /// in the closed period `generation`.
    #[inline(always)]
    fn trip_checked(
        &self,
        generation: u64,
        trip: Option<Reason>,
        now: &impl Now,
    ) -> Option<Transition> {
        self.trip_locked(generation, trip?, now)
    }

    #[inline(never)]
    fn trip_locked(&self, generation: u64, reason: Reason, now: &impl Now) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        if w.generation() != generation || w.state() != State::Closed {
            return None; // someone else already moved the breaker on
        }
        // Under the lock the settings cannot change: decide by those in
        // force (a reconfigure may have changed or removed the rule, or
        // replaced its cells).
        let live = self.live.load();
        let period = ClosedPeriod::new(self, generation, now);
        let reason = live.cells.confirm(reason, &self.resident, &period)?;
        Some(self.open(&mut slow, w, now.get(), reason))
    }

    fn record_probe(
        &self,
        generation: u64,
        outcome: Outcome,
        slow_call: bool,
        now: &impl Now,
    ) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        if w.generation() != generation || w.state() != State::HalfOpen {
            return None; // stale: the half-open period this probe belonged to is over
        }
        if let Some(t) = self.expire_probes(&mut slow, w, now) {
            return Some(t); // too late: this probe counts as failed with the others
        }
        slow.end_probe();
        match outcome {
            Outcome::Ignore => None,
            Outcome::Failure => Some(self.open(&mut slow, w, now.get(), Reason::ProbeFailed)),
            Outcome::Success => {
                slow.probe_successes += 1;
                slow.probe_slow += u32::from(slow_call);
                let live = self.live.load();
                if slow.probe_successes < live.tuning.successes {
                    return None;
                }
                // Enough successes: slow ones are judged by the slow-call rate
                // over this half-open period's successes.
                let successes = slow.probe_successes;
                if let Some(reason) = live.cells.judge_probes(successes, slow.probe_slow) {
                    return Some(self.open(&mut slow, w, now.get(), reason));
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

    /// A permit was dropped without a verdict: free its probe slot, count
    /// nothing; unless the half-open deadline has passed, in which case the
    /// probes out (this one too) count as failed (see
    /// [`Core::expire_probes`]).
    pub(crate) fn release(&self, ticket: Ticket, now: &impl Now) -> Option<Transition> {
        if ticket.kind() != Kind::Probe {
            return None;
        }
        let mut slow = lock(&self.slow);
        let w = self.load();
        if w.generation() == ticket.generation() && w.state() == State::HalfOpen {
            if let Some(t) = self.expire_probes(&mut slow, w, now) {
                return Some(t);
            }
            slow.end_probe();
            // Relaxed: a counter the fleet reads at its next sync.
            self.cold().probes_dropped.fetch_add(1, Ordering::Relaxed);
        }
        None
    }

    /// Opens from Closed or HalfOpen until `now + remaining`, for `reason`
    /// (a fleet's trip, an outlier ejection): no rule decided it, so the trip
    /// count that grows the open period is left alone. Extends an open period
    /// that would end sooner; leaves ForcedOpen and Disabled alone.
    pub(crate) fn open_for(
        &self,
        now: Nanos,
        remaining: Nanos,
        reason: Reason,
    ) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        let until = now.saturating_add(remaining);
        match w.state() {
            State::Closed | State::HalfOpen => {
                slow.clear_probes();
                // Relaxed: published by the Release store of the word.
                self.open_until.store(until, Ordering::Relaxed);
                Some(self.publish(w, State::Open, now, reason))
            }
            State::Open => {
                // Relaxed: written only under the lock we hold.
                if until > self.open_until.load(Ordering::Relaxed) {
                    self.open_until.store(until, Ordering::Relaxed);
                }
                None
            }
            State::ForcedOpen | State::Disabled => None,
        }
    }

    /// Manual control: moves to `to` (ForcedOpen, Disabled or Closed) with a
    /// new generation. Returns a transition only when the state changed.
    pub(crate) fn set(&self, to: State, now: Nanos, reason: Reason) -> Option<Transition> {
        let mut slow = lock(&self.slow);
        let w = self.load();
        let t = if to == State::Closed {
            // Relaxed: a statistic; reset starts every count afresh.
            for cell in self.rejected.written() {
                cell.store(0, Ordering::Relaxed);
            }
            if let Some(cold) = self.cold_written() {
                cold.shadowed.store(0, Ordering::Relaxed);
            }
            self.close(&mut slow, w, now, reason)
        } else {
            *slow = Slow::default();
            self.publish(w, to, now, reason)
        };
        (t.from != t.to).then_some(t)
    }

    /// Counts a success `Inner::settles_silently` settles, if the tally is
    /// on: `true` once counted (or with no tally), `false` if this thread
    /// has no cell of its own yet (the verdict then takes the full path,
    /// which counts it). No call, so the hot path keeps its registers.
    #[inline(always)]
    pub(crate) fn tally_settled(&self) -> bool {
        #[cfg(feature = "fleet")]
        if let Some(t) = self.tally.get() {
            return t.add_owned_success();
        }
        true
    }

    /// The fleet's hook on every verdict: counts a closed-state one if the
    /// tally is on (a plain store to this thread's own cell).
    #[inline(always)]
    pub(crate) fn count(&self, ticket: &Ticket, outcome: Outcome, slow: bool) {
        #[cfg(not(feature = "fleet"))]
        let _ = (ticket, outcome, slow);
        #[cfg(feature = "fleet")]
        if let Some(t) = self.tally.get() {
            if ticket.is_normal() && outcome != Outcome::Ignore {
                t.add(outcome == Outcome::Failure, slow);
            }
        }
    }

    /// The figures at `now`, without moving the state (call [`Core::state`]
    /// first for the lazy Open -> HalfOpen step).
    pub(crate) fn figures(&self, now: Nanos) -> Figures {
        let w = self.load();
        let state = w.state();
        let totals = self
            .live
            .load()
            .cells
            .windowed
            .as_ref()
            .and_then(|win| win.cells(&self.resident.windowed))
            .map(|window| window.totals(now))
            .unwrap_or_default();
        let consecutive = if state == State::Closed {
            self.resident.consecutive.count(w.generation())
        } else {
            0
        };
        // Relaxed here and below: statistics for a snapshot.
        let shadowed = self
            .cold_written()
            .map_or(0, |cold| cold.shadowed.load(Ordering::Relaxed));
        Figures {
            state,
            generation: w.generation(),
            totals,
            consecutive,
            rejected: self
                .rejected
                .sum(Ordering::Relaxed)
                .saturating_sub(shadowed),
            shadowed,
            since_transition: now.saturating_sub(self.last_transition.load(Ordering::Relaxed)),
        }
    }

    /// Whether closed-state verdicts are tallied (a fleet asked for them).
    pub(crate) fn tallied(&self) -> bool {
        #[cfg(feature = "fleet")]
        return self.tally.get().is_some();
        #[cfg(not(feature = "fleet"))]
        false
    }

    /// Probes of the half-open period in force admitted and not yet
    /// finished (for tests and models): none outside half-open, where the
    /// count of a period that ended (a probe failed while another was still
    /// out) is kept only until the next half-open period resets it.
    pub(crate) fn probes_in_flight(&self) -> u32 {
        let slow = lock(&self.slow);
        if self.load().state() == State::HalfOpen {
            slow.probes_in_flight
        } else {
            0
        }
    }
}

/// A closed period as the rules see it: the protocol's side of
/// [`Period`].
struct ClosedPeriod<'a, N> {
    core: &'a Core,
    generation: u64,
    now: &'a N,
}

impl<'a, N: Now> ClosedPeriod<'a, N> {
    #[inline(always)]
    fn new(core: &'a Core, generation: u64, now: &'a N) -> Self {
        ClosedPeriod {
            core,
            generation,
            now,
        }
    }
}

impl<N: Now> Period for ClosedPeriod<'_, N> {
    #[inline(always)]
    fn generation(&self) -> u64 {
        self.generation
    }

    #[inline(always)]
    fn now(&self) -> u64 {
        self.now.get()
    }

    #[inline(always)]
    fn is_current(&self) -> bool {
        self.core.load().generation() == self.generation
    }

    /// Announce, then check the generation (see [`Core::close`]).
    #[inline(always)]
    fn while_current<R>(&self, write: impl FnOnce() -> R) -> Option<R> {
        // Acquire: a fetch_add that finds the seal gone synchronises with
        // the unseal, so the generation read below is the new one.
        // Each thread announces in its own cell; the closer seals them all.
        let cell = self.core.recorders.mine();
        while cell.fetch_add(1, Ordering::Acquire) & SEAL != 0 {
            // Relaxed: we wrote nothing the closer needs to see.
            cell.fetch_sub(1, Ordering::Relaxed);
            while cell.load(Ordering::Relaxed) & SEAL != 0 {
                crate::sync::spin_wait();
            }
        }
        if !self.is_current() {
            // Release (here and below): our writes into the cells happen
            // before the closer's emptying that waits for this decrement.
            cell.fetch_sub(1, Ordering::Release);
            return None; // this permit's closed period is over
        }
        let written = write();
        cell.fetch_sub(1, Ordering::Release);
        Some(written)
    }

    #[inline(always)]
    fn unsettle(&self) {
        // Release: after the write into the cells (see `mark_full`).
        self.core.full.swap(0, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::CircuitBreaker;

    /// Moves `b` to `generation` as that many transitions would.
    fn jump(b: &CircuitBreaker, generation: u64, state: State) {
        b.inner()
            .core
            .word
            .store(Word::new(generation, state).0, Ordering::Release);
    }

    fn live_of(b: &CircuitBreaker) -> Arc<Live> {
        b.inner().core.live.load_full()
    }

    #[test]
    fn breakers_of_equal_settings_share_their_live_and_no_more() {
        let three = || CircuitBreaker::builder().consecutive_failures(3);
        let (a, b) = (three().build().unwrap(), three().build().unwrap());
        assert!(Arc::ptr_eq(&live_of(&a), &live_of(&b)), "equal settings");
        let four = CircuitBreaker::builder()
            .consecutive_failures(4)
            .build()
            .unwrap();
        assert!(
            !Arc::ptr_eq(&live_of(&a), &live_of(&four)),
            "other settings"
        );
        // A window's counts are a breaker's own (among its resident cells):
        // its settings are shared, its counts are not.
        let window = || {
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .min_calls(2)
                .count_window(4)
        };
        let (w1, w2) = (window().build().unwrap(), window().build().unwrap());
        assert!(Arc::ptr_eq(&live_of(&w1), &live_of(&w2)), "equal windows");
        let _ = w1.call(|| Err::<(), _>(()));
        assert_eq!(w1.snapshot().failures, 1);
        assert_eq!(w2.snapshot().failures, 0, "the other window's own count");
        let _ = w1.call(|| Err::<(), _>(()));
        assert_eq!(w1.state(), State::Open);
        assert_eq!(w2.state(), State::Closed);
        // Another window's cells are the breaker's own: its settings too.
        // Back to the window it was built with, its first cells stay out of
        // force (what they hold is stale): still a `Live` of its own, and an
        // empty window.
        let w3 = window().build().unwrap();
        let _ = w3.call(|| Err::<(), _>(()));
        w3.reconfigure(window().count_window(8)).unwrap();
        assert!(
            !Arc::ptr_eq(&live_of(&w3), &live_of(&w2)),
            "a resized window"
        );
        w3.reconfigure(window()).unwrap();
        assert!(!Arc::ptr_eq(&live_of(&w3), &live_of(&w2)));
        assert_eq!(w3.snapshot().failures, 0, "a new window, empty");
        let _ = w3.call(|| Err::<(), _>(()));
        assert_eq!(w3.state(), State::Closed, "one failure of 1 call");
        assert_eq!(w3.snapshot().failures, 1);
        let times = || {
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .time_window(std::time::Duration::from_secs(10))
        };
        let (t1, t2) = (times().build().unwrap(), times().build().unwrap());
        assert!(
            Arc::ptr_eq(&live_of(&t1), &live_of(&t2)),
            "equal time windows"
        );
        let _ = t1.call(|| Err::<(), _>(()));
        assert_eq!((t1.snapshot().failures, t2.snapshot().failures), (1, 0));
        // A time window reconfigured away (to a count window) and back: the
        // first stays out of force, its failure with it.
        t1.reconfigure(CircuitBreaker::builder().failure_rate(0.5).count_window(8))
            .unwrap();
        t1.reconfigure(times()).unwrap();
        assert!(!Arc::ptr_eq(&live_of(&t1), &live_of(&t2)));
        assert_eq!(t1.snapshot().failures, 0, "a new time window, empty");
        let _ = t1.call(|| Err::<(), _>(()));
        assert_eq!((t1.snapshot().failures, t2.snapshot().failures), (1, 0));
        // A rule with cells that cannot be resident (failure times): never
        // shared.
        let within =
            || CircuitBreaker::builder().failures_within(3, std::time::Duration::from_secs(1));
        let (f1, f2) = (within().build().unwrap(), within().build().unwrap());
        assert!(!Arc::ptr_eq(&live_of(&f1), &live_of(&f2)));
        // The count is each breaker's own.
        for _ in 0..3 {
            let _ = a.call(|| Err::<(), _>(()));
        }
        assert_eq!(a.state(), State::Open);
        assert_eq!(b.state(), State::Closed);
        // A reconfigure of one leaves the other's settings as they are, and
        // a reconfigure to equal settings joins the shared one again.
        a.reconfigure(CircuitBreaker::builder().consecutive_failures(5))
            .unwrap();
        assert_eq!(a.config().consecutive_failures, Some(5));
        assert_eq!(b.config().consecutive_failures, Some(3));
        a.reconfigure(three()).unwrap();
        assert!(Arc::ptr_eq(&live_of(&a), &live_of(&b)));
        // A breaker's mode is among the settings shared.
        b.set_mode(crate::Mode::Shadow);
        assert_eq!(b.mode(), crate::Mode::Shadow);
        assert_eq!(a.mode(), crate::Mode::Enforce);
    }

    #[test]
    fn breakers_sharing_a_window_s_settings_keep_their_own_counts_and_marks() {
        let window = || {
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .min_calls(4)
                .count_window(4)
        };
        let (a, b) = (window().build().unwrap(), window().build().unwrap());
        assert!(Arc::ptr_eq(&live_of(&a), &live_of(&b)));
        let full = |x: &CircuitBreaker| x.inner().core.full.load(Ordering::Relaxed);
        let ring = |x: &CircuitBreaker| {
            let core = &x.inner().core;
            core.ring_in_force(&core.live())
        };
        assert!(ring(&a) && ring(&b), "each on its own window, the ring");
        // In turn on one thread: the second finds the first's entry in the
        // per-thread cache of settings, and still counts into its own window.
        for _ in 0..4 {
            a.call(|| Ok::<_, ()>(())).unwrap();
            b.call(|| Ok::<_, ()>(())).unwrap();
        }
        assert_eq!(
            (full(&a), full(&b)),
            (1, 1),
            "both windows full of successes"
        );
        let _ = b.call(|| Err::<(), _>(()));
        assert_eq!((full(&a), full(&b)), (1, 0), "only b's mark withdrawn");
        assert_eq!((a.snapshot().failures, b.snapshot().failures), (0, 1));
        let _ = a.call(|| Err::<(), _>(()));
        let _ = a.call(|| Err::<(), _>(()));
        assert_eq!(a.state(), State::Open, "2 failures of a's last 4");
        assert_eq!(b.state(), State::Closed, "1 of b's");
        // A reconfigure that keeps the window's shape keeps its counts, and
        // its settings are those a breaker built with them gets.
        let c = window().build().unwrap();
        let _ = c.call(|| Err::<(), _>(()));
        c.reconfigure(window().failure_rate(0.9)).unwrap();
        assert_eq!(c.snapshot().failures, 1, "the window kept");
        assert!(ring(&c));
        let d = window().failure_rate(0.9).build().unwrap();
        assert!(Arc::ptr_eq(&live_of(&c), &live_of(&d)));
        // Resized and resized back: the ring is out of force for good.
        c.reconfigure(window().count_window(8)).unwrap();
        assert!(!ring(&c));
        c.reconfigure(window().failure_rate(0.9)).unwrap();
        assert!(!ring(&c), "the first window holds stale counts");
        assert_eq!(c.snapshot().failures, 0);
        // A consecutive rule beside the window keeps its count in the
        // breaker too: shared. Added later, the window is the breaker's own;
        // removed again, the settings are shared once more.
        let both = || window().consecutive_failures(3);
        let (e, f) = (both().build().unwrap(), both().build().unwrap());
        assert!(Arc::ptr_eq(&live_of(&e), &live_of(&f)));
        let plain = || CircuitBreaker::builder().consecutive_failures(3);
        let g = plain().build().unwrap();
        g.reconfigure(both()).unwrap();
        assert!(
            !Arc::ptr_eq(&live_of(&g), &live_of(&e)),
            "a window of its own"
        );
        g.reconfigure(plain()).unwrap();
        let h = plain().build().unwrap();
        assert!(Arc::ptr_eq(&live_of(&g), &live_of(&h)));
    }

    #[test]
    fn a_shared_live_is_let_go_with_its_last_breaker() {
        // Settings no other test builds.
        let unique = || {
            CircuitBreaker::builder()
                .consecutive_failures(977)
                .open_for(std::time::Duration::from_secs(977))
        };
        let settings = unique().config.settings().unwrap();
        let held = || {
            crate::sync::lock(&SHARED)
                .iter()
                .any(|(s, live)| *s == settings && live.strong_count() > 0)
        };
        let breakers: Vec<_> = (0..3).map(|_| unique().build().unwrap()).collect();
        assert!(held());
        let weak = Arc::downgrade(&live_of(&breakers[0]));
        drop(breakers);
        assert!(
            weak.upgrade().is_none(),
            "the breakers held the only references"
        );
        assert!(!held());
        // The next look purges the dropped entry itself.
        let _ = shared_lives();
        assert!(!crate::sync::lock(&SHARED)
            .iter()
            .any(|(s, _)| *s == settings));
        assert!(shared_lives() <= SHARED_MAX);
    }

    #[test]
    fn a_window_full_of_successes_stays_marked_through_a_reconfigure_and_a_stale_mark() {
        let settings = || CircuitBreaker::builder().failure_rate(0.5).count_window(4);
        let b = settings().build().unwrap();
        let full = || b.inner().core.full.load(Ordering::Relaxed);
        for _ in 0..3 {
            b.try_acquire().unwrap().success();
        }
        assert_eq!(full(), 0, "not full yet");
        b.try_acquire().unwrap().success();
        assert_eq!(full(), 1, "generation 0's window, full");
        b.reconfigure(settings()).unwrap();
        assert_eq!(full(), 1, "the kept window is still full");
        // A permit of another closed period cannot mark this one's.
        let core = &b.inner().core;
        core.full.swap(0, Ordering::Relaxed);
        core.mark_full(&core.live(), 7);
        assert_eq!(full(), 0, "a stale mark");
        core.mark_full(&core.live(), 0);
        assert_eq!(full(), 1);
        b.reconfigure(settings().count_window(5)).unwrap();
        assert_eq!(full(), 0, "a new window is empty");
    }

    #[test]
    fn a_stale_verdict_stays_stale_past_two_to_the_32_transitions() {
        // With a 32-bit generation, 2^32 - 1 force_opens and a reset brought
        // the breaker back to generation 0, and a permit from generation 0
        // then tripped it.
        for g in [(1u64 << 32) - 1, (1 << 40) - 1, (1 << 56) - 2] {
            let b = CircuitBreaker::builder()
                .consecutive_failures(1)
                .build()
                .unwrap();
            let p = b.try_acquire().unwrap();
            jump(&b, g, State::ForcedOpen);
            b.reset();
            assert_eq!(b.snapshot().generation, g + 1);
            p.failure();
            assert_eq!(b.state(), State::Closed, "stale at generation {}", g + 1);
        }
    }

    #[test]
    fn a_held_probe_cannot_close_a_later_half_open_period() {
        let clock = crate::ManualClock::new();
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .open_for(std::time::Duration::from_secs(1))
            .clock(clock.clone())
            .build()
            .unwrap();
        b.try_acquire().unwrap().failure();
        clock.advance(std::time::Duration::from_secs(1));
        let probe = b.try_acquire().unwrap(); // a probe of generation 2
        jump(&b, (1 << 32) + 1, State::Open);
        b.inner().core.open_until.store(0, Ordering::Relaxed);
        assert_eq!(b.state(), State::HalfOpen); // generation 2^32 + 2
        probe.success();
        assert_eq!(b.state(), State::HalfOpen, "the old probe is stale");
    }
}

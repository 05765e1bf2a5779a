//! The trip rules, one file each, behind one trait ([`TripRule`]), apart
//! from the lock-free protocol that carries out what they decide: a rule
//! owns its cells and decides on numbers; the protocol owns the state word,
//! generations and admission, and shows a rule the closed period a verdict
//! belongs to ([`Period`]).
//!
//! - [`consecutive`]: `n` failures in a row.
//! - [`windowed`]: the rules over one window of calls (the last N, or the
//!   last T) and its `min_calls`: [`failure_rate`] and [`slow_calls`].
//! - [`failures_within`]: `n` failures within a period.
//!
//! The rules in force are a [`Rules`]: one field per built-in rule, each
//! `None` or the rule, declared once by [`trip_rules!`], which derives the
//! rest (the cells, what the hot path needs, the dispatch) from that list.
//! Every call is static: a rule not in force costs one test of its field.
//!
//! A rule keeps its counts in one of two places, by what reads them:
//! [`TripRule::Resident`] cells live as long as the breaker: counts tagged
//! with the closed period they count for, so that the hot path can read
//! them without the settings (the consecutive count), and the rule's
//! `Cells` when they are held there (below); [`TripRule::Cells`] are
//! armed with the settings in force, are replaced when the rule's shape
//! changes and are emptied by every close (windows, failure times). A
//! rule's `Cells` may be held among its resident ones
//! ([`TripRule::resident_cells`]: the window a breaker is built with, for
//! as long as reconfigures keep it): settings whose rules all find their
//! cells there keep nothing of one breaker's, and the breakers of equal
//! settings share them.

pub(crate) mod failure_rate;
pub(crate) mod slow_calls;

use crate::breaker::types::Reason;
use std::fmt;
use std::sync::Arc;

/// What a rule asks of the hot path (see `breaker::fast`). Each is `false`
/// unless the rule says otherwise; the rules in force ask for the union.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// It needs every call's duration (the slow-call rule).
    pub(crate) times_calls: bool,
    /// A plain success may change its [`TripRule::Cells`] (wherever they
    /// are held): a closed-state success then cannot settle on the tagged
    /// resident counts alone ([`TripRule::resident_settled`]).
    pub(crate) counts_successes: bool,
    /// It records every call, successes over successes included (a time
    /// window: its buckets move with time), so a success never settles
    /// without it.
    pub(crate) records_every_call: bool,
    /// It looks at the last N calls: once they are all plain successes, a
    /// success over them changes nothing (but a position), and the
    /// protocol's mark of that lets such successes settle without the
    /// settings.
    pub(crate) counts_last_calls: bool,
    /// Its [`TripRule::Cells`] are emptied when the breaker closes: the close
    /// waits for the verdicts recording into them
    /// ([`Period::while_current`]).
    pub(crate) empties_on_close: bool,
}

impl Needs {
    /// What `self` and `other` ask for together.
    #[inline]
    pub(crate) const fn and(self, other: Needs) -> Needs {
        Needs {
            times_calls: self.times_calls || other.times_calls,
            counts_successes: self.counts_successes || other.counts_successes,
            records_every_call: self.records_every_call || other.records_every_call,
            counts_last_calls: self.counts_last_calls || other.counts_last_calls,
            empties_on_close: self.empties_on_close || other.empties_on_close,
        }
    }
}

/// A closed-state verdict, as the rules count it (an ignored call never
/// reaches them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) failed: bool,
    /// The call took at least a slow-call threshold ([`Cells::is_slow`]).
    pub(crate) slow: bool,
}

impl Verdict {
    /// A success that was not slow.
    pub(crate) const PLAIN_SUCCESS: Verdict = Verdict {
        failed: false,
        slow: false,
    };
}

/// What a rule did with a verdict. A rule that calls for a trip says why in
/// the `trip` its [`record`](TripRule::record) is given, unless an earlier
/// rule did (`trip.get_or_insert(reason)`); the verdict still counts for the
/// rules after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// Counted (or nothing to change).
    Fresh,
    /// The verdict's closed period is over: it counts for nothing (and no
    /// later rule sees it).
    Stale,
}

/// The closed period a verdict belongs to, as the protocol shows it to the
/// rules: its generation, the breaker's time, and the protocol's guard
/// against a close that empties the cells meanwhile.
pub(crate) trait Period {
    /// The generation of the closed period.
    fn generation(&self) -> u64;
    /// The breaker's time now, in ns (read on the first call, then kept).
    fn now(&self) -> u64;
    /// Whether the closed period is still the breaker's current one.
    fn is_current(&self) -> bool;
    /// Runs `write` while the closed period cannot end: `None`, without
    /// running it, if it has ended. A close that empties the cells waits
    /// for every `write` begun before it, so a verdict of an earlier period
    /// can never land in a later period's cells.
    fn while_current<R>(&self, write: impl FnOnce() -> R) -> Option<R>;
    /// Tells the protocol that a plain success may change the cells again
    /// (after a failure or a slow call in a window of the last N calls), so
    /// that it withdraws its mark of "a plain success changes nothing".
    /// Called inside [`while_current`](Period::while_current), after the
    /// write.
    fn unsettle(&self);
}

/// A trip rule: validated settings (built by `breaker::config`, the only
/// validation), the cells it counts in, and its decisions on them.
///
/// Only the protocol calls these, as it carries out their verdicts: a
/// closed-state verdict is [`record`](TripRule::record)ed by every rule in
/// force; a trip one suggests is [`confirm`](TripRule::confirm)ed under the
/// breaker's lock; a reconfigure asks whether the counts kept already
/// [`reach`](TripRule::reached) the new rules.
pub(crate) trait TripRule: Copy + PartialEq + fmt::Debug {
    /// The config keys (of `BreakerConfig`) that set this rule.
    const KEYS: &'static [&'static str];

    /// Cells kept for the breaker's life (`()` for none): counts tagged
    /// with the generation they count for, read by the hot path without
    /// the settings, and the rule's [`Cells`](TripRule::Cells) when they
    /// are held here ([`TripRule::resident_cells`]).
    type Resident: Default + fmt::Debug + Send + Sync;

    /// Cells kept with the settings in force (`()` for none).
    type Cells: fmt::Debug + Send + Sync;

    /// What the hot path must do for this rule.
    fn needs(&self) -> Needs;

    /// Empty cells for this rule.
    fn new_cells(&self) -> Self::Cells;

    /// The bytes [`new_cells`](TripRule::new_cells) allocates, the cells
    /// themselves included, without allocating them: what a registry
    /// checks a config's cost by. A rule whose cells grow with a setting
    /// (a window's size, a count of failures) says so here, next to where
    /// it builds them.
    fn cells_bytes(&self) -> usize {
        size_of::<Self::Cells>()
    }

    /// Whether the cells made for `old` serve this rule as they are (a
    /// reconfigure then keeps their counts).
    fn keeps_cells_of(&self, old: &Self) -> bool;

    /// Counts a closed-state verdict of `period`; the reason to trip, if
    /// the counts now call for one, goes to `trip` (see [`Counted`]).
    fn record(
        &self,
        resident: &Self::Resident,
        cells: &Self::Cells,
        verdict: Verdict,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted;

    /// Records a plain success (neither failed nor slow), as
    /// [`TripRule::record`] would: the direct path of a closed-state
    /// success ([`Cells::record_success`]). A rule overrides it where a
    /// success can be taken with less than the full record (a count
    /// window's success over a success).
    #[inline(always)]
    fn record_success(
        &self,
        resident: &Self::Resident,
        cells: &Self::Cells,
        period: &impl Period,
        trip: &mut Option<Reason>,
    ) -> Counted {
        self.record(resident, cells, Verdict::PLAIN_SUCCESS, period, trip)
    }

    /// The reason to trip on the counts of `period` as they are (asked
    /// under the breaker's lock, after a reconfigure).
    fn reached(
        &self,
        resident: &Self::Resident,
        cells: &Self::Cells,
        period: &impl Period,
    ) -> Option<Reason>;

    /// Whether `reason` is one this rule trips for.
    fn owns(reason: &Reason) -> bool;

    /// Under the breaker's lock: whether the trip for `reason` (one this
    /// rule [`owns`](TripRule::owns), suggested by a [`record`](TripRule::record)
    /// of `period`) still stands, and why. By default the counts are judged
    /// afresh.
    fn confirm(
        &self,
        reason: Reason,
        resident: &Self::Resident,
        cells: &Self::Cells,
        period: &impl Period,
    ) -> Option<Reason> {
        let _ = reason;
        self.reached(resident, cells, period)
    }

    /// Whether a call that took `elapsed` ns is slow by this rule.
    fn is_slow(&self, elapsed: u64) -> bool {
        let _ = elapsed;
        false
    }

    /// Whether the probes of a half-open period, `successes` of them
    /// successful and `slow` of those slow, reopen the breaker instead of
    /// closing it.
    fn judge_probes(&self, successes: u32, slow: u32) -> Option<Reason> {
        let _ = (successes, slow);
        None
    }

    /// Whether a plain success of `generation` leaves the tagged resident
    /// counts as they are (the hot path asks, without the settings); the
    /// rule's `Cells` held among the resident ones are asked by
    /// [`settled`](TripRule::settled), as anywhere else.
    #[inline(always)]
    fn resident_settled(resident: &Self::Resident, generation: u64) -> bool {
        let _ = (resident, generation);
        true
    }

    /// The resident cells of a breaker built with `rule` (`None`: not in
    /// force at its build).
    fn new_resident(rule: Option<&Self>) -> Self::Resident {
        let _ = rule;
        Self::Resident::default()
    }

    /// The rule's [`Cells`](TripRule::Cells) when the resident cells hold
    /// them (a window the breaker keeps for its life, from its build; `()`
    /// for a rule that has none), `None` when they cannot: a [`Live`]
    /// whose rules all find their cells there keeps nothing of a breaker's
    /// own, and breakers of equal settings share it.
    ///
    /// [`Live`]: crate::breaker::protocol::Live
    fn resident_cells(resident: &Self::Resident) -> Option<&Self::Cells> {
        let _ = resident;
        None
    }

    /// Starts the resident cells of `generation` (every transition does).
    #[inline(always)]
    fn reset_resident(resident: &Self::Resident, generation: u64) {
        let _ = (resident, generation);
    }

    /// Whether a plain success leaves `cells` as they are.
    #[inline(always)]
    fn settled(&self, cells: &Self::Cells) -> bool {
        let _ = cells;
        true
    }

    /// Empties `cells` for a new closed period (under the protocol's guard:
    /// no verdict is recording into them).
    fn clear(cells: &Self::Cells) {
        let _ = cells;
    }
}

/// A rule in force with its cells.
#[derive(Debug)]
pub(crate) struct Armed<R: TripRule> {
    pub(crate) rule: R,
    /// `None`: the cells are the breaker's resident ones
    /// ([`TripRule::resident_cells`]).
    own: Option<Arc<R::Cells>>,
}

impl<R: TripRule> Armed<R> {
    /// `rule` with the cells of `old` if they serve it; else, at the
    /// breaker's build (`building`) or for a rule without cells, the
    /// resident ones if they hold the rule's; new ones otherwise. Resident
    /// cells are only taken at the build and kept through reconfigures
    /// that keep them: cells out of force once hold stale counts.
    fn new(rule: R, old: Option<&Armed<R>>, resident: &R::Resident, building: bool) -> Self {
        let own = match old {
            Some(old) if rule.keeps_cells_of(&old.rule) => old.own.clone(),
            _ if (building || size_of::<R::Cells>() == 0)
                && R::resident_cells(resident).is_some() =>
            {
                None
            }
            _ => Some(Arc::new(rule.new_cells())),
        };
        Armed { rule, own }
    }

    /// The rule's cells: its own, or the breaker's resident ones (`None`
    /// never: a rule is armed on resident cells only where they are; not
    /// a panic, so that a use that ignores the cells costs nothing).
    #[inline(always)]
    pub(crate) fn cells<'a>(&'a self, resident: &'a R::Resident) -> Option<&'a R::Cells> {
        match &self.own {
            Some(cells) => Some(cells),
            None => R::resident_cells(resident),
        }
    }

    /// The rule and its cells, if it is in force (see [`Armed::cells`]).
    #[inline(always)]
    pub(crate) fn with_cells<'a>(
        armed: &'a Option<Armed<R>>,
        resident: &'a R::Resident,
    ) -> Option<(&'a R, &'a R::Cells)> {
        let armed = armed.as_ref()?;
        Some((&armed.rule, armed.cells(resident)?))
    }

    /// Whether a plain success leaves its cells as they are: never for a
    /// rule that records every call (decided on the rule, without looking
    /// for its cells).
    #[inline(always)]
    fn settled(&self, resident: &R::Resident) -> bool {
        !self.rule.needs().records_every_call
            && self
                .cells(resident)
                .is_none_or(|cells| self.rule.settled(cells))
    }

    /// Whether its cells are the breaker's resident ones.
    #[inline(always)]
    pub(crate) fn in_resident(&self) -> bool {
        self.own.is_none()
    }
}

/// Declares the built-in rules, one line each (`module: Type`, in the
/// order they judge a verdict: the rule `Type` of the file `module.rs`, and
/// the field `module` of [`Rules`]), and derives from that list the
/// modules, [`Rules`] (the rules in force), [`Resident`] (their resident
/// cells), [`Cells`] (the rules in force armed with their cells) and the
/// static dispatch over them.
macro_rules! trip_rules {
    ($( $(#[$doc:meta])* $name:ident: $ty:ident, )*) => {
        $( pub(crate) mod $name; )*

        trip_rules!(@ $( $(#[$doc])* $name: $name::$ty, )*);
    };
    (@ $( $(#[$doc:meta])* $name:ident: $rule:ty, )*) => {
        /// The trip rules in force: each built-in rule, or `None`.
        #[derive(Debug, Clone, Copy, Default, PartialEq)]
        pub(crate) struct Rules {
            $( $(#[$doc])* pub(crate) $name: Option<$rule>, )*
        }

        /// The rules' cells that live as long as the breaker.
        #[derive(Debug)]
        pub(crate) struct Resident {
            $( pub(crate) $name: <$rule as TripRule>::Resident, )*
        }

        /// The rules in force, each armed with its cells (`None` for a rule
        /// not in force).
        #[derive(Debug)]
        pub(crate) struct Cells {
            $( pub(crate) $name: Option<Armed<$rule>>, )*
        }

        impl Resident {
            /// The resident cells of a breaker built with `rules`.
            pub(crate) fn new(rules: &Rules) -> Resident {
                Resident {
                    $( $name: <$rule as TripRule>::new_resident(rules.$name.as_ref()), )*
                }
            }

            /// Whether a plain success of `generation` leaves every rule's
            /// tagged resident counts as they are (not the `Cells` held among
            /// them: see [`Cells::settled`]).
            #[inline(always)]
            pub(crate) fn settled(&self, generation: u64) -> bool {
                true $( && <$rule as TripRule>::resident_settled(&self.$name, generation) )*
            }

            /// Starts every resident cell of `generation`.
            #[inline(always)]
            pub(crate) fn reset(&self, generation: u64) {
                $( <$rule as TripRule>::reset_resident(&self.$name, generation); )*
            }
        }

        impl Rules {
            /// Every config key of every rule.
            pub(crate) fn keys() -> impl Iterator<Item = &'static str> {
                [$( <$rule as TripRule>::KEYS ),*].into_iter().flatten().copied()
            }

            /// At most the bytes [`arm`](Rules::arm) and [`Resident::new`]
            /// allocate for these rules' cells, from scratch: each counted in
            /// an `Arc` (cells among the resident ones are in a `Box`, 16
            /// bytes less; a rule without cells allocates nothing).
            pub(crate) fn cells_bytes(&self) -> usize {
                let arc = 2 * size_of::<usize>();
                0usize $( .saturating_add(
                    self.$name.map_or(0, |rule| arc.saturating_add(rule.cells_bytes()))
                ) )*
            }

            /// These rules armed: with the cells of `old` that still serve,
            /// else (`old` is `None` at the breaker's build) the resident
            /// ones that can, new ones for the rest.
            pub(crate) fn arm(&self, old: Option<&Cells>, resident: &Resident) -> Cells {
                Cells {
                    $( $name: self.$name.map(|rule| {
                        Armed::new(
                            rule,
                            old.and_then(|old| old.$name.as_ref()),
                            &resident.$name,
                            old.is_none(),
                        )
                    }), )*
                }
            }
        }

        impl Cells {
            /// The rules in force.
            pub(crate) fn rules(&self) -> Rules {
                Rules {
                    $( $name: self.$name.as_ref().map(|armed| armed.rule), )*
                }
            }

            /// Whether every rule in force finds its cells among the resident
            /// ones: these then keep nothing of one breaker's, and breakers of
            /// equal settings may share them.
            pub(crate) fn all_resident(&self) -> bool {
                true $( && self.$name.as_ref().is_none_or(Armed::in_resident) )*
            }

            /// What the hot path must do for the rules in force.
            pub(crate) fn needs(&self) -> Needs {
                let needs = Needs::default();
                $( let needs = match &self.$name {
                    Some(armed) => needs.and(armed.rule.needs()),
                    None => needs,
                }; )*
                needs
            }

            /// Whether a call that took `elapsed` ns (`None`: not timed) is
            /// slow by a rule in force.
            #[inline]
            pub(crate) fn is_slow(&self, elapsed: Option<u64>) -> bool {
                let Some(elapsed) = elapsed else { return false };
                false $( || self.$name.as_ref().is_some_and(|armed| armed.rule.is_slow(elapsed)) )*
            }

            /// Whether a half-open period's probes reopen the breaker (see
            /// [`TripRule::judge_probes`]).
            pub(crate) fn judge_probes(&self, successes: u32, slow: u32) -> Option<Reason> {
                None $( .or_else(|| self.$name.as_ref().and_then(|armed| armed.rule.judge_probes(successes, slow))) )*
            }

            /// Counts a closed-state verdict by every rule in force; the
            /// first reason to trip goes to `trip`.
            #[inline(always)]
            pub(crate) fn record(
                &self,
                resident: &Resident,
                verdict: Verdict,
                period: &impl Period,
                trip: &mut Option<Reason>,
            ) -> Counted {
                $( if let Some((rule, cells)) = Armed::with_cells(&self.$name, &resident.$name) {
                    let counted = rule.record(&resident.$name, cells, verdict, period, trip);
                    if counted == Counted::Stale {
                        return Counted::Stale;
                    }
                } )*
                Counted::Fresh
            }

            /// [`Cells::record`] of a plain success, by each rule's
            /// [`TripRule::record_success`].
            #[inline(always)]
            pub(crate) fn record_success(
                &self,
                resident: &Resident,
                period: &impl Period,
                trip: &mut Option<Reason>,
            ) -> Counted {
                $( if let Some((rule, cells)) = Armed::with_cells(&self.$name, &resident.$name) {
                    let counted = rule.record_success(&resident.$name, cells, period, trip);
                    if counted == Counted::Stale {
                        return Counted::Stale;
                    }
                } )*
                Counted::Fresh
            }

            /// The first reason to trip on the counts as they are.
            pub(crate) fn reached(&self, resident: &Resident, period: &impl Period) -> Option<Reason> {
                $( if let Some((rule, cells)) = Armed::with_cells(&self.$name, &resident.$name) {
                    if let Some(reason) = rule.reached(&resident.$name, cells, period) {
                        return Some(reason);
                    }
                } )*
                None
            }

            /// Whether the trip for `reason` still stands by the rule in
            /// force that trips for it (`None` if no rule in force does).
            pub(crate) fn confirm(
                &self,
                reason: Reason,
                resident: &Resident,
                period: &impl Period,
            ) -> Option<Reason> {
                $( if <$rule as TripRule>::owns(&reason) {
                    let (rule, cells) = Armed::with_cells(&self.$name, &resident.$name)?;
                    return rule.confirm(reason, &resident.$name, cells, period);
                } )*
                None
            }

            /// Whether a plain success of `generation` changes nothing: not
            /// in the resident cells of a rule in force, nor in its cells.
            #[inline(always)]
            pub(crate) fn settled(&self, resident: &Resident, generation: u64) -> bool {
                true $( && self.$name.as_ref().is_none_or(|armed| {
                    <$rule as TripRule>::resident_settled(&resident.$name, generation)
                        && armed.settled(&resident.$name)
                }) )*
            }

            /// Whether a plain success leaves the cells of every rule in
            /// force as they are, wherever they are held (the tagged resident
            /// counts aside).
            #[inline]
            pub(crate) fn cells_settled(&self, resident: &Resident) -> bool {
                true $( && self.$name.as_ref().is_none_or(|armed| armed.settled(&resident.$name)) )*
            }

            /// Empties the cells of every rule in force.
            pub(crate) fn clear(&self, resident: &Resident) {
                $( if let Some((_, cells)) = Armed::with_cells(&self.$name, &resident.$name) {
                    <$rule as TripRule>::clear(cells);
                } )*
            }
        }
    };
}

trip_rules! {
    /// `n` failures in a row.
    consecutive: Consecutive,
    /// The failure and slow-call rates over one window.
    windowed: Windowed,
    /// `n` failures within a period.
    failures_within: FailuresWithin,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_rule_key_is_a_config_key_and_every_trip_key_a_rule_key() {
        let config = crate::BreakerConfig::KEYS;
        for key in Rules::keys() {
            assert!(config.contains(&key), "{key} is no BreakerConfig key");
        }
        let not_trip = [
            "open_for",
            "open_backoff",
            "half_open_probes",
            "successes_to_close",
            "half_open_max_wait",
            "mode",
        ];
        for key in config.iter().filter(|k| !not_trip.contains(k)) {
            assert!(Rules::keys().any(|k| k == *key), "no rule reads {key}");
        }
    }
}

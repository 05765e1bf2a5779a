//! The trip rules, one file each, apart from the lock-free protocol that
//! carries out what they decide: a rule owns its cells and decides on
//! numbers; the protocol owns the state word, generations and admission.
//!
//! - [`consecutive`]: `n` failures in a row.
//! - The rate rules (failure rate and slow-call rate over a count or time
//!   window) decide in `breaker::policy` on the totals of
//!   `breaker::window`.

pub(crate) mod consecutive;

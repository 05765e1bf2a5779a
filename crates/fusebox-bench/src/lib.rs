//! Benchmarks of fusebox against the peer circuit-breaker crates.
//!
//! This crate is never published (`publish = false`): the peers it measures
//! (failsafe, recloser, tower-resilience-circuitbreaker, seatbelt, tower's
//! `ConcurrencyLimit`, tower-resilience-adaptive, tokio's `Semaphore`) are
//! dependencies of the benchmarks only, never of the library.
//!
//! The same harness drives the criterion benches (`cargo bench -p fusebox-bench`),
//! the quick comparison (`cargo run --release -p fusebox-bench --bin compare`)
//! and the tests that check every benchmark measures what it claims (a breaker
//! meant to be open rejects every call, one meant to be closed admits them all,
//! and fusebox allocates nothing per call).
//!
//! - [`harness`]: what one guarded call is ([`harness::Runner`]), and how
//!   calls are timed on one or several threads sharing one breaker.
//! - [`subjects`]: each crate configured to the closest equivalent policy.
//! - [`scenarios`]: the catalogue of groups (closed, open, mixed, policies,
//!   window sizes, stacks, bulkhead, per-key breakers, hedging) shared by the
//!   benches and the compare command.
//! - [`alloc`]: a counting global allocator, for allocations per call.
#![warn(missing_docs, missing_debug_implementations)]

pub mod alloc;
pub mod harness;
pub mod scenarios;
pub mod subjects;

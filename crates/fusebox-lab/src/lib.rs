//! `fusebox-lab`: reproduces seed 000's circuit-breaker experiment with real
//! threads (or in virtual time) and compares strategies side by side.
//!
//! A library with a thin binary. Its layers import one way, each only the
//! ones above it in this list:
//!
//! 1. [`scenario`]: scenario files -> a validated [`scenario::Scenario`];
//! 2. [`guard`]: what stands in front of the call, built from a strategy spec;
//! 3. [`engine`]: the request rules, once; a virtual-time and a real-thread driver;
//! 4. [`report`]: one model of figures and series -> terminal table, JSON, HTML;
//! 5. [`tune`]: a search for the breaker settings that meet an objective;
//! 6. [`cli`]: `run`, `sweep`, `tune`, `run --serve`.

#![warn(missing_docs)]

pub mod cli;
pub mod engine;
pub mod guard;
pub mod report;
pub mod scenario;
mod sync;
pub mod tune;

//! Seed 000's published figures, to print beside ours.
//!
//! Transcribed from the article (Python, macOS, `time.perf_counter`, a
//! `ThreadPoolExecutor` of 8 threads): it notes millisecond scheduler jitter,
//! so its times are a few ms later than the ideal model's (0.743 vs 0.73 s).
//!
//! The figures are shown only beside a run of the article's experiment: one
//! of the embedded scenarios with its values unchanged (whatever its name)
//! and the strategy the article ran, with its parameters ([`figures`]).

use crate::engine::TransitionRecord;
use crate::scenario::{Scenario, StrategySpec, EMBEDDED};
use std::time::Duration;

/// The article's figures for one strategy of one scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArticleFigures {
    /// Calls that reached the downstream.
    pub downstream_calls: usize,
    /// Successes.
    pub successes: usize,
    /// Downstream errors.
    pub downstream_errors: usize,
    /// Fast-fails.
    pub fast_fails: usize,
    /// Latency (median, max) in ms of requests arriving during the fault.
    pub latency_fault_ms: (f64, f64),
    /// Latency (median, max) in ms of requests arriving in the second after it.
    pub latency_after_ms: (f64, f64),
    /// When everything had finished, in seconds.
    pub all_done_s: f64,
    /// Backlog: (when the last request arriving during the fault finished, in
    /// seconds; requests arriving before the fault's end that finished after
    /// it). The article printed the second number counting every request that
    /// finished after 1.5 s; here the 150 that arrived after 1.5 s are
    /// subtracted so it compares with ours.
    pub backlog: Option<(f64, usize)>,
    /// Recovery lag in seconds, where the article gave it.
    pub recovery_lag_s: Option<f64>,
    /// Transition log.
    pub transitions: &'static [TransitionRecord],
    /// Per-0.5 s windows: (ok, fail, fast_fail).
    pub windows: &'static [(usize, usize, usize)],
}

/// The article's figures for `spec` run in `scenario`, if the scenario is
/// one of the embedded ones with every value unchanged (its name may differ)
/// and `spec` is the strategy of the same kind there, with the same values.
pub fn figures(scenario: &Scenario, spec: &StrategySpec) -> Option<ArticleFigures> {
    EMBEDDED
        .iter()
        .zip(Scenario::embedded())
        .find(|(_, e)| scenario.same_setup(e) && e.strategies.iter().any(|s| s.kind == spec.kind))
        .and_then(|((file, _), _)| published(file.trim_end_matches(".toml"), spec.kind.as_str()))
}

const fn tr(ms: u64, from: &'static str, to: &'static str) -> TransitionRecord {
    TransitionRecord {
        at: Duration::from_millis(ms),
        from,
        to,
        remote: false,
    }
}

/// The article's figures for strategy kind `kind` ("none" or "seed") of the
/// embedded scenario file `scenario` (without `.toml`), as published.
pub fn published(scenario: &str, kind: &str) -> Option<ArticleFigures> {
    const LOG: &[TransitionRecord] = &[
        tr(743, "closed", "open"),
        tr(1381, "open", "half_open"),
        tr(1531, "half_open", "open"),
        tr(2041, "open", "half_open"),
        tr(2047, "half_open", "closed"),
    ];
    match (scenario, kind) {
        ("seed000-50rps", "none") => Some(ArticleFigures {
            downstream_calls: 150,
            successes: 100,
            downstream_errors: 50,
            fast_fails: 0,
            latency_fault_ms: (155.0, 155.1),
            latency_after_ms: (6.3, 6.5),
            all_done_s: 2.99,
            backlog: None,
            recovery_lag_s: None,
            transitions: &[],
            windows: &[
                (25, 0, 0),
                (0, 25, 0),
                (0, 25, 0),
                (25, 0, 0),
                (25, 0, 0),
                (25, 0, 0),
            ],
        }),
        ("seed000-50rps", "seed") => Some(ArticleFigures {
            downstream_calls: 86,
            successes: 73,
            downstream_errors: 13,
            fast_fails: 64,
            latency_fault_ms: (0.1, 203.8),
            latency_after_ms: (0.2, 6.3),
            all_done_s: 2.99,
            backlog: None,
            // The article's headline: recovery seen 0.54 s after the downstream recovered.
            recovery_lag_s: Some(0.54),
            transitions: LOG,
            windows: &[
                (25, 0, 0),
                (0, 12, 13),
                (0, 1, 24),
                (0, 0, 25),
                (23, 0, 2),
                (25, 0, 0),
            ],
        }),
        ("seed000-100rps", "none") => Some(ArticleFigures {
            downstream_calls: 300,
            successes: 244,
            downstream_errors: 56,
            fast_fails: 0,
            latency_fault_ms: (373.2, 601.5),
            latency_after_ms: (6.3, 149.1),
            all_done_s: 3.00,
            backlog: Some((1.65, 202 - 150)),
            recovery_lag_s: None,
            transitions: &[],
            windows: &[],
        }),
        ("seed000-100rps", "seed") => Some(ArticleFigures {
            downstream_calls: 163,
            successes: 150,
            downstream_errors: 13,
            fast_fails: 137,
            latency_fault_ms: (0.1, 228.7),
            latency_after_ms: (2.7, 6.4),
            all_done_s: 3.00,
            // The article printed 150 (all after 1.5 s), i.e. none that arrived before.
            backlog: Some((1.49, 0)),
            recovery_lag_s: None,
            transitions: &[],
            windows: &[],
        }),
        _ => None,
    }
}

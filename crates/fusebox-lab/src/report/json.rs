//! `--json`: every figure and every request, machine-readable.
//!
//! One scenario gives `{scenario, mode, ..., strategies: [...]}`; several give
//! `{scenarios: [that, ...]}`. Each entry of `strategies` has the keys `name`,
//! `kind`, `downstream_calls`, `downstream_call_failures`, `successes`, `downstream_errors`, `timeouts`,
//! `fast_fails`, `queue_rejections`, `latency_fault_ms` and `latency_after_ms`
//! (`{median, max}` or null), `transitions` (`[{at_s, from, to}]`), `windows`
//! (`[{from_s, ok, fail, fast_fail, rejected}]`), `backlog`
//! (`{last_fault_request_done_s, finished_after_fault}` or null), `all_done_s`,
//! `calls_during_fault`, `failed_probes`, `recovery_lag_s`, and `requests`
//! (`[{arrival_s, start_s, end_s, outcome, attempts}]`).

use super::{Latency, ScenarioReport, Summary};
use crate::run::{Mode, RunResult};
use serde_json::{json, Value};
use std::time::Duration;

fn s(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn latency(l: Option<Latency>) -> Value {
    match l {
        Some(l) => json!({ "median": l.median_ms, "max": l.max_ms }),
        None => Value::Null,
    }
}

fn strategy(sum: &Summary, run: &RunResult) -> Value {
    json!({
        "name": sum.name,
        "kind": sum.kind,
        "downstream_calls": sum.downstream_calls,
        "downstream_call_failures": sum.failed_calls,
        "successes": sum.successes,
        "downstream_errors": sum.downstream_errors,
        "timeouts": sum.timeouts,
        "fast_fails": sum.fast_fails,
        "queue_rejections": sum.queue_rejections,
        "latency_fault_ms": latency(sum.latency_fault),
        "latency_after_ms": latency(sum.latency_after),
        "transitions": sum.transitions.iter().map(|t| json!({
            "at_s": s(t.at), "from": t.from, "to": t.to,
        })).collect::<Vec<_>>(),
        "windows": sum.windows.iter().map(|w| json!({
            "from_s": s(w.from), "ok": w.ok, "fail": w.fail,
            "fast_fail": w.fast_fail, "rejected": w.rejected,
        })).collect::<Vec<_>>(),
        "backlog": sum.backlog.map_or(Value::Null, |b| json!({
            "last_fault_request_done_s": s(b.last_fault_request_done),
            "finished_after_fault": b.finished_after_fault,
        })),
        "all_done_s": s(sum.all_done),
        "calls_during_fault": sum.calls_during_fault,
        "failed_probes": sum.failed_probes,
        "recovery_lag_s": sum.recovery_lag.map(s),
        "requests": run.requests.iter().map(|r| json!({
            "arrival_s": s(r.arrival),
            "start_s": r.start.map(s),
            "end_s": s(r.end),
            "outcome": r.outcome.as_str(),
            "attempts": r.attempts,
        })).collect::<Vec<_>>(),
    })
}

/// The JSON of one scenario's report.
pub fn scenario(report: &ScenarioReport) -> Value {
    let sc = &report.scenario;
    json!({
        "scenario": sc.name,
        "mode": match report.mode { Mode::Real => "real", Mode::Virtual => "virtual" },
        "rate": sc.rate,
        "workers": sc.workers,
        "requests": sc.request_count(),
        "fault": sc.fault_span().map(|(a, b)| json!({ "from_s": s(a), "until_s": s(b) })),
        "window_s": s(sc.window),
        "strategies": report.summaries.iter().zip(&report.runs)
            .map(|(sum, run)| strategy(sum, run)).collect::<Vec<_>>(),
    })
}

/// The JSON document for all the reports of one invocation.
pub fn document(reports: &[ScenarioReport]) -> Value {
    match reports {
        [one] => scenario(one),
        many => json!({ "scenarios": many.iter().map(scenario).collect::<Vec<_>>() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn every_strategy_entry_has_the_issue_keys() {
        let sc = Scenario::embedded().remove(0);
        let runs = sc
            .strategies
            .iter()
            .map(|s| crate::sim::run(&sc, s))
            .collect();
        let doc = document(&[ScenarioReport::new(sc, Mode::Virtual, runs)]);
        let strategies = doc["strategies"].as_array().unwrap();
        assert_eq!(strategies.len(), 3);
        for s in strategies {
            for key in [
                "name",
                "downstream_calls",
                "successes",
                "downstream_errors",
                "fast_fails",
                "queue_rejections",
                "latency_fault_ms",
                "latency_after_ms",
                "transitions",
                "windows",
                "backlog",
                "requests",
            ] {
                assert!(s.get(key).is_some(), "missing {key}");
            }
            assert!(s["latency_fault_ms"]["median"].is_number());
            assert!(s["backlog"]["last_fault_request_done_s"].is_number());
            assert!(s["backlog"]["finished_after_fault"].is_u64());
            assert_eq!(s["requests"].as_array().unwrap().len(), 150);
            for w in s["windows"].as_array().unwrap() {
                for k in ["from_s", "ok", "fail", "fast_fail"] {
                    assert!(w.get(k).is_some());
                }
            }
        }
        let seed = &strategies[1];
        assert_eq!(seed["downstream_calls"], 86);
        assert_eq!(seed["transitions"][0]["from"], "closed");
        assert_eq!(seed["transitions"][2]["from"], "half_open");
        assert_eq!(seed["transitions"][0]["at_s"], 0.73);
        // Two scenarios: wrapped in `scenarios`.
        let two: Vec<_> = Scenario::embedded()
            .into_iter()
            .map(|sc| {
                let runs = sc
                    .strategies
                    .iter()
                    .map(|s| crate::sim::run(&sc, s))
                    .collect();
                ScenarioReport::new(sc, Mode::Virtual, runs)
            })
            .collect();
        assert_eq!(document(&two)["scenarios"].as_array().unwrap().len(), 2);
    }
}

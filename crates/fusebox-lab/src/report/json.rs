//! `--json`: every figure and every request, machine-readable.
//!
//! One scenario gives `{scenario, mode, ..., strategies: [...]}`; several give
//! `{scenarios: [that, ...]}`. Each entry of `strategies` has `name`, `kind`,
//! the JSON key of every figure of the [model](super::model::FIGURES)
//! (`downstream_calls`, `latency_fault_ms: {median, max}`, `backlog`, ...;
//! an object whose values are all missing is `null`; a scenario about tail
//! latency adds those of the [tail figures](super::model::TAIL_FIGURES),
//! `latency_ms: {p50, p99, p99_9}`, `calls_per_request`, `hedges_sent`, ...), `transitions`
//! (`[{at_s, from, to}]`), `windows` (`[{from_s, ok, fail, fast_fail,
//! rejected}]`) and `requests` (`[{arrival_s, start_s, end_s, outcome,
//! attempts}]`). A `[fleet]` scenario adds `fleet: {replicas, sharing,
//! quorum, sync_every_s, propagation_s}`, and to each strategy `fleet:
//! {replicas: [...], total}` with the [fleet figures](super::model::FLEET_FIGURES)
//! (each replica also with its `transitions`); there every transition has
//! `remote` too: `true` when the fleet made it (another replica's trip or
//! close), not the replica's own breaker. (Without `[fleet]` no transition
//! is remote, and the key is left out: those documents are as they were.)

use super::model::{self, Cell, FLEET_FIGURES};
use super::{ReplicaFigures, ScenarioReport, Summary};
use crate::engine::{RunResult, TransitionRecord};
use serde_json::{json, Map, Value};
use std::time::Duration;

fn s(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Puts `value` at the dotted `path` of `obj`.
fn insert(obj: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            obj.insert(path.to_string(), value);
        }
        Some((head, rest)) => {
            let inner = obj
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(inner) = inner {
                insert(inner, rest, value);
            }
        }
    }
}

/// A transition; `remote` only in a fleet scenario.
fn transition(t: &TransitionRecord, fleet: bool) -> Value {
    let mut v = json!({ "at_s": Cell::Secs(t.at).json(), "from": t.from, "to": t.to });
    if let (true, Value::Object(obj)) = (fleet, &mut v) {
        obj.insert("remote".into(), json!(t.remote));
    }
    v
}

fn strategy(sum: &Summary, run: &RunResult) -> Value {
    let fleet = run.fleet.is_some();
    let mut obj = Map::new();
    obj.insert("name".into(), json!(sum.name));
    obj.insert("kind".into(), json!(sum.kind));
    for f in model::figures(sum.tail.is_some(), sum.pool.is_some()) {
        if let Some(path) = f.json {
            insert(&mut obj, path, (f.ours)(sum).json());
        }
    }
    // A group of figures that are all missing (no fault: no backlog) is null.
    for v in obj.values_mut() {
        if let Value::Object(inner) = v {
            if inner.values().all(Value::is_null) {
                *v = Value::Null;
            }
        }
    }
    let series = json!({
        "transitions": sum.transitions.iter().map(|t| transition(t, fleet)).collect::<Vec<_>>(),
        "windows": sum.windows.iter().map(|w| json!({
            "from_s": s(w.from), "ok": w.ok, "fail": w.fail,
            "fast_fail": w.fast_fail, "rejected": w.rejected,
        })).collect::<Vec<_>>(),
        "requests": run.requests.iter().map(|r| json!({
            "arrival_s": s(r.arrival),
            "start_s": r.start.map(s),
            "end_s": s(r.end),
            "outcome": r.outcome.as_str(),
            "attempts": r.attempts,
        })).collect::<Vec<_>>(),
    });
    if let Value::Object(series) = series {
        obj.extend(series);
    }
    // Only a scenario of several hosts has the key.
    if let Some(h) = &sum.hosts {
        obj.insert("hosts".into(), h.json());
    }
    if let (Some(rows), Some(runs)) = (model::fleet_rows(sum), &run.fleet) {
        let figures = |r: &ReplicaFigures| {
            FLEET_FIGURES
                .iter()
                .map(|f| (f.json.to_string(), (f.value)(r).json()))
                .collect::<Map<_, _>>()
        };
        let (total, replicas) = rows.split_last().expect("a total row");
        let replicas = replicas.iter().zip(&runs.transitions).map(|((_, r), log)| {
            let mut obj = figures(r);
            let log = log.iter().map(|t| transition(t, true)).collect();
            obj.insert("transitions".into(), Value::Array(log));
            Value::Object(obj)
        });
        obj.insert(
            "fleet".into(),
            json!({
                "replicas": replicas.collect::<Vec<_>>(),
                "total": Value::Object(figures(total.1)),
            }),
        );
    }
    Value::Object(obj)
}

/// The JSON of one scenario's report.
pub fn scenario(report: &ScenarioReport) -> Value {
    let sc = &report.scenario;
    let mut doc = json!({
        "scenario": sc.name,
        "mode": report.mode.as_str(),
        "rate": sc.rate,
        "workers": sc.workers,
        "requests": sc.request_count(),
        "fault": sc.fault_span().map(|(a, b)| json!({ "from_s": s(a), "until_s": s(b) })),
        "window_s": s(sc.window),
        "strategies": report.summaries.iter().zip(&report.runs)
            .map(|(sum, run)| strategy(sum, run)).collect::<Vec<_>>(),
    });
    // Only a scenario with other than fixed arrivals has the keys.
    if let (Some(_), Value::Object(obj)) = (sc.arrivals.times(), &mut doc) {
        obj.insert("arrivals".into(), json!(sc.arrivals.name()));
        obj.insert("seed".into(), json!(sc.seed));
    }
    // Only a scenario with a jittered fault or an outage model has the key
    // (its `fault` is the seed's draw).
    let drawn = !(sc.fault_jitter.is_empty() && sc.outages.is_empty());
    if let (true, Value::Object(obj)) = (drawn, &mut doc) {
        obj.insert("seed".into(), json!(sc.seed));
    }
    // Only a fleet scenario has the key: the others' JSON is as it was.
    if let (Some(f), Value::Object(obj)) = (&sc.fleet, &mut doc) {
        obj.insert(
            "fleet".into(),
            json!({
                "replicas": f.replicas,
                "sharing": f.sharing.as_str(),
                "quorum": f.quorum,
                "sync_every_s": s(f.sync_every),
                "propagation_s": s(f.propagation),
            }),
        );
    }
    doc
}

/// The JSON document for all the reports of one invocation.
pub fn document(reports: &[ScenarioReport]) -> Value {
    match reports {
        [one] => scenario(one),
        many => json!({ "scenarios": many.iter().map(scenario).collect::<Vec<_>>() }),
    }
}

/// The document as the file `--json` writes.
pub fn text(reports: &[ScenarioReport]) -> String {
    serde_json::to_string_pretty(&document(reports)).expect("JSON values always serialize")
}

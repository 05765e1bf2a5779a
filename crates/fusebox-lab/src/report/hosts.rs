//! The figures of a dependency of several hosts (`[downstream] hosts`):
//! per strategy, requests served and failed, fast-fails of requests bound
//! for a healthy host, calls to sick hosts, and ejections.
//!
//! A host is *sick* at a time when a fault of the schedule hits it then
//! (whatever it does: a slow host is sick before its calls time out).

use crate::engine::{Outcome, RunResult};
use crate::scenario::Scenario;
use serde_json::{json, Value};
use std::fmt::Write;

/// One strategy's figures over the hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFigures {
    /// How many hosts.
    pub hosts: usize,
    /// One breaker per host.
    pub per_host: bool,
    /// Requests that ended in success.
    pub served: usize,
    /// Requests that ended in a downstream failure (error or timeout).
    pub failed: usize,
    /// Requests fast-failed.
    pub fast_fails: usize,
    /// Of those, the ones bound for a host that was healthy then.
    pub healthy_fast_fails: usize,
    /// Of those, the ones bound for a host no fault hits in the whole run
    /// (the others are bound for a sick host after it healed, before its
    /// breaker closed again).
    pub bystander_fast_fails: usize,
    /// Of the fast-fails, the ones no host could be picked for.
    pub unbound_fast_fails: usize,
    /// Downstream calls to a host while it was sick.
    pub sick_calls: usize,
    /// The same per host hit by a fault: (host from 1, calls while sick).
    pub sick_calls_by_host: Vec<(usize, usize)>,
    /// Downstream calls per host (from 0).
    pub calls_by_host: Vec<usize>,
    /// Outlier detection's cap on hosts ejected at once (`None`: no
    /// outlier detection).
    pub ejection_cap: Option<usize>,
    /// Most hosts ejected at once.
    pub most_ejected: usize,
    /// Ejections in all.
    pub ejections: u64,
}

impl HostFigures {
    /// The figures of `run` (`None` for a dependency of one host).
    pub fn of(scenario: &Scenario, run: &RunResult) -> Option<HostFigures> {
        let h = run.hosts.as_ref()?;
        let sick = |host: usize, at| scenario.downstream.fault_on(host, at).is_some();
        let count = |o: Outcome| run.requests.iter().filter(|r| r.outcome == o).count();
        let mut calls_by_host = vec![0; h.hosts];
        let mut sick_by_host = vec![0; h.hosts];
        let ever_sick = |host: usize| scenario.downstream.faults.iter().any(|f| f.hits(host));
        let (mut healthy_ff, mut bystander_ff, mut unbound_ff, mut ff) = (0, 0, 0, 0);
        for a in &h.attempts {
            match (a.host, a.called) {
                (Some(host), true) => {
                    calls_by_host[host] += 1;
                    if sick(host, a.at) {
                        sick_by_host[host] += 1;
                    }
                }
                (Some(host), false) => {
                    ff += 1;
                    if !sick(host, a.at) {
                        healthy_ff += 1;
                    }
                    if !ever_sick(host) {
                        bystander_ff += 1;
                    }
                }
                (None, _) => {
                    ff += 1;
                    unbound_ff += 1;
                }
            }
        }
        let hit: Vec<usize> = (0..h.hosts).filter(|&host| ever_sick(host)).collect();
        Some(HostFigures {
            hosts: h.hosts,
            per_host: h.per_host,
            served: count(Outcome::Ok),
            failed: count(Outcome::Error) + count(Outcome::Timeout),
            fast_fails: ff,
            healthy_fast_fails: healthy_ff,
            bystander_fast_fails: bystander_ff,
            unbound_fast_fails: unbound_ff,
            sick_calls: sick_by_host.iter().sum(),
            sick_calls_by_host: hit.iter().map(|&x| (x + 1, sick_by_host[x])).collect(),
            calls_by_host,
            ejection_cap: h.ejection_cap,
            most_ejected: h.most_ejected,
            ejections: h.ejections,
        })
    }

    /// The JSON object of the figures.
    pub fn json(&self) -> Value {
        json!({
            "hosts": self.hosts,
            "per_host": self.per_host,
            "served": self.served,
            "failed": self.failed,
            "fast_fails": self.fast_fails,
            "healthy_fast_fails": self.healthy_fast_fails,
            "bystander_fast_fails": self.bystander_fast_fails,
            "unbound_fast_fails": self.unbound_fast_fails,
            "sick_calls": self.sick_calls,
            "sick_calls_by_host": self.sick_calls_by_host.iter()
                .map(|(h, n)| json!({"host": h, "calls": n})).collect::<Vec<_>>(),
            "calls_by_host": self.calls_by_host,
            "ejection_cap": self.ejection_cap,
            "most_ejected": self.most_ejected,
            "ejections": self.ejections,
        })
    }
}

/// The terminal table of a scenario's host figures (`None` for one host).
pub fn table(names: &[(&str, Option<&HostFigures>)]) -> Option<String> {
    if names.iter().all(|(_, h)| h.is_none()) {
        return None;
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  over the hosts (sick: a fault hits the host at the time; healthy-bound ff: fast-fails \
         of requests bound for a host not sick then; never-sick ff: bound for a host no fault hits):"
    );
    let _ = writeln!(
        out,
        "    {:<24} {:>7} {:>7} {:>10} {:>16} {:>13} {:>11} {:>12}",
        "strategy",
        "served",
        "failed",
        "fast-fails",
        "healthy-bound ff",
        "never-sick ff",
        "sick calls",
        "most ejected"
    );
    for (name, h) in names {
        let Some(h) = h else { continue };
        let by_host: Vec<String> = h
            .sick_calls_by_host
            .iter()
            .map(|(host, n)| format!("#{host} {n}"))
            .collect();
        let ejected = match h.ejection_cap {
            None => "-".to_string(),
            Some(cap) => format!("{} (cap {cap})", h.most_ejected),
        };
        let _ = writeln!(
            out,
            "    {:<24} {:>7} {:>7} {:>10} {:>16} {:>13} {:>11} {:>12}   sick calls per host: {}",
            name,
            h.served,
            h.failed,
            h.fast_fails,
            h.healthy_fast_fails,
            h.bystander_fast_fails,
            h.sick_calls,
            ejected,
            by_host.join(", ")
        );
    }
    Some(out)
}

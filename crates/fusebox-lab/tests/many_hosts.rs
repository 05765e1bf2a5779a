//! `scenarios/many-hosts.toml` in virtual time: one client, 10 hosts, host
//! 3 dead from 2 s to 6 s, host 7 slow from 3 s to 8 s; one breaker for all
//! hosts against one per host (a `fusebox::BreakerSet`), and per host with
//! outlier ejection and `BreakerSet::pick`. Prints each strategy's figures
//! (run with `--nocapture` to see them).

mod common;

use fusebox_lab::engine::{self, Mode};
use fusebox_lab::report::hosts::HostFigures;
use fusebox_lab::scenario::{OutlierSpec, Scenario, StrategyKind};

fn figures(sc: &Scenario, strategy: &str) -> HostFigures {
    let spec = sc
        .strategies
        .iter()
        .find(|s| s.name == strategy)
        .unwrap_or_else(|| panic!("no strategy {strategy:?}"));
    let run = engine::run(sc, spec, Mode::Virtual, None).unwrap();
    let h = HostFigures::of(sc, &run).expect("a scenario of several hosts");
    println!("{} / {strategy}: {h:?}", sc.name);
    h
}

#[test]
fn a_breaker_per_host_fast_fails_no_request_bound_for_a_host_that_never_failed() {
    let sc = common::shipped("many-hosts");
    let shared = figures(&sc, "one for all hosts");
    let per_host = figures(&sc, "per host");
    let ejection = figures(&sc, "per host + ejection");
    println!(
        "fast-fails of requests bound for a healthy host: one for all {} (of which {} bound for \
         a host no fault hits), per host {} ({}), per host + ejection {} ({})",
        shared.healthy_fast_fails,
        shared.bystander_fast_fails,
        per_host.healthy_fast_fails,
        per_host.bystander_fast_fails,
        ejection.healthy_fast_fails,
        ejection.bystander_fast_fails,
    );
    // One breaker for all: the sick hosts' failures open it for every host.
    assert!(shared.bystander_fast_fails > 0);
    assert!(shared.healthy_fast_fails > shared.bystander_fast_fails);
    // One per host: only the sick hosts' breakers open. What it fast-fails
    // while the host is healthy is bound for a sick host after it healed,
    // before its breaker's probe closed it.
    assert_eq!(per_host.bystander_fast_fails, 0);
    assert!(per_host.healthy_fast_fails < shared.healthy_fast_fails);
    // Picking among the hosts sends no request to an open one.
    assert_eq!(ejection.fast_fails, 0);
    assert!(ejection.served > per_host.served && per_host.served > shared.served);
}

#[test]
fn a_sick_host_gets_fewer_calls_with_a_breaker_of_its_own() {
    let sc = common::shipped("many-hosts");
    let none = figures(&sc, "no breaker");
    let shared = figures(&sc, "one for all hosts");
    let per_host = figures(&sc, "per host");
    let ejection = figures(&sc, "per host + ejection");
    for (i, &(host, calls)) in none.sick_calls_by_host.iter().enumerate() {
        let (s, p, e) = (
            shared.sick_calls_by_host[i].1,
            per_host.sick_calls_by_host[i].1,
            ejection.sick_calls_by_host[i].1,
        );
        println!(
            "calls to host {host} while sick: no breaker {calls}, one for all {s}, per host {p}, \
             per host + ejection {e}"
        );
        assert!(s <= calls);
        assert!(p < s, "host {host}: per host {p} against one for all {s}");
        assert!(
            e <= p,
            "host {host}: with ejection {e} against per host {p}"
        );
    }
}

/// The shipped scenario with the ejecting strategy's breakers tripping
/// only late (so outlier detection does the work), `sick` hosts failing
/// (`None`: all) and at most `percent` % ejected.
fn ejecting(sick: Option<Vec<usize>>, percent: u32) -> Scenario {
    let mut sc = common::shipped("many-hosts");
    for f in &mut sc.downstream.faults {
        f.replicas = sick.clone();
        f.outcome = fusebox_lab::scenario::FaultOutcome::Error;
        f.latency = std::time::Duration::from_millis(20);
    }
    let s = sc
        .strategies
        .iter_mut()
        .find(|s| s.name == "per host + ejection")
        .unwrap();
    if let StrategyKind::Fusebox(c) = &mut s.kind {
        c.min_calls = Some(1000);
    }
    let policy = s.hosts.as_mut().unwrap();
    policy.outliers = Some(OutlierSpec {
        max_ejection_percent: Some(percent),
        ..policy.outliers.clone().unwrap()
    });
    sc
}

#[test]
fn outlier_ejection_never_ejects_more_than_its_share_of_the_hosts() {
    let shipped = figures(&common::shipped("many-hosts"), "per host + ejection");
    assert_eq!(shipped.ejection_cap, Some(1));
    assert!((1..=1).contains(&shipped.most_ejected), "{shipped:?}");
    for percent in [10, 30, 50] {
        for sick in [None, Some(vec![1, 2, 3, 4, 5]), Some(vec![3])] {
            let sc = ejecting(sick.clone(), percent);
            let h = figures(&sc, "per host + ejection");
            let cap = (10 * percent as usize / 100).max(1);
            let hosts = sick.as_ref().map_or(10, Vec::len);
            println!(
                "{percent} %, {hosts} of 10 hosts failing: at most {} ejected at once (cap {cap}), \
                 {} ejections",
                h.most_ejected, h.ejections
            );
            assert_eq!(h.ejection_cap, Some(cap));
            assert!(h.most_ejected <= cap, "{percent} %, {sick:?}: {h:?}");
            // Detection did eject: as many as the cap allows, or every sick host.
            assert_eq!(h.most_ejected, cap.min(hosts), "{percent} %, {sick:?}");
            assert!(h.ejections > 0);
        }
    }
}

#[test]
fn host_keys_are_checked_and_named() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/many-hosts.toml"),
    )
    .unwrap();
    let key_of = |from: &str, to: &str| {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        Scenario::parse("many-hosts.toml", &text)
            .expect_err(to)
            .key
            .unwrap_or_default()
    };
    assert_eq!(key_of("hosts = 10", "hosts = 1"), "downstream.hosts");
    assert_eq!(
        key_of("hosts = [3]", "hosts = [11]"),
        "downstream.faults.hosts"
    );
    assert_eq!(
        key_of("hosts = [3]", "replicas = [3]"),
        "downstream.faults.replicas"
    );
    assert_eq!(
        key_of("balance = \"pick\"", "balance = \"random\""),
        "strategy.balance"
    );
    assert_eq!(
        key_of("max_ejection_percent = 10", "max_ejection_percent = 0"),
        "strategy.outliers.max_ejection_percent"
    );
    assert_eq!(
        key_of("interval = \"1s\"", "every = \"1s\""),
        "strategy.outliers.every"
    );
    assert_eq!(
        key_of("kind = \"none\"", "kind = \"none\"\nper_host = true"),
        "strategy.per_host"
    );
    // Without hosts, per_host has nothing to do.
    let one = base
        .replacen("hosts = 10", "", 1)
        .replace("hosts = [3]", "")
        .replace("hosts = [7]", "");
    let err = Scenario::parse("many-hosts.toml", &one).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("strategy.per_host"), "{err}");
}

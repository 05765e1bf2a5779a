//! Every benchmark measures the path it claims: a breaker meant to be open
//! rejects every call, one meant to be closed admits every call, the mixed
//! load really mixes, and every peer accepts its configuration.

use fusebox_bench::harness::{run_threads, Load};
use fusebox_bench::scenarios::{all, Guarded};

#[test]
fn every_scenario_measures_the_path_it_names() {
    for sc in all() {
        for e in &sc.entries {
            let s = e.build(sc.open);
            let (_, t) = run_threads(s.as_ref(), sc.threads, 300, sc.load);
            let id = format!("{}/{}", sc.name, e.id());
            assert_eq!(t.total(), 300 * sc.threads as u64, "{id}: calls counted");
            let guarded = e.krate != "baseline";
            if sc.open && guarded {
                assert_eq!(t.rejected, t.total(), "{id}: open breaker admitted a call");
            }
            if !sc.open && sc.load == Load::AllOk {
                assert_eq!(t.rejected, 0, "{id}: closed guard rejected a call");
                assert_eq!(t.ok, t.total(), "{id}: a call failed");
            }
            if sc.load == Load::Mixed20 {
                assert!(t.failed > 0 && t.ok > 0, "{id}: load is not mixed: {t:?}");
            }
        }
    }
}

#[test]
fn the_catalogue_compares_fusebox_with_every_peer() {
    let scenarios = all();
    let names: Vec<&str> = scenarios.iter().map(|s| s.name).collect();
    for want in [
        "closed_1t",
        "closed_2t",
        "open_1t",
        "open_2t",
        "mixed_1t",
        "policies",
        "window_count",
        "window_time",
        "time_window_fill",
        "bulkhead_1t",
        "bulkhead_2t",
        "keyed_1t",
        "keyed_2t",
        "hedge_1t",
    ] {
        assert!(names.contains(&want), "scenario {want} missing: {names:?}");
    }
    for sc in scenarios.iter().filter(|s| {
        s.name.starts_with("closed") || s.name.starts_with("open") || s.name.starts_with("mixed")
    }) {
        let crates: Vec<&str> = sc.entries.iter().map(|e| e.krate).collect();
        for k in [
            "fusebox",
            "failsafe",
            "recloser",
            "tower-resilience",
            "seatbelt",
            "baseline",
        ] {
            assert!(crates.contains(&k), "{}: {k} missing", sc.name);
        }
        assert!(sc
            .entries
            .iter()
            .all(|e| matches!(e.guarded, Guarded::Breaker(..))));
    }
}

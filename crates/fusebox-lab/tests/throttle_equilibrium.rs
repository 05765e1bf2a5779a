//! `scenarios/throttle-equilibrium.toml` in virtual time: against a backend
//! that refuses what its 8 workers cannot take, the throttle sends about K
//! times what the backend accepts (within 10%), refuses the rest itself, and
//! never refuses more than its cap; without it every request goes out.

mod common;

use fusebox_lab::engine::{self, Mode, Outcome};
use fusebox_lab::scenario::{CallResult, StrategyKind};

#[test]
fn the_throttle_sends_about_k_times_what_the_backend_accepts() {
    let sc = common::shipped("throttle-equilibrium");
    println!("strategy          sent  accepted  sent/accepted  fast-fails");
    let mut checked = 0;
    for spec in &sc.strategies {
        let run = engine::run(&sc, spec, Mode::Virtual, None).unwrap();
        let sent = run.calls.len();
        let accepted = run
            .calls
            .iter()
            .filter(|c| c.result == CallResult::Success)
            .count();
        let refused = run
            .requests
            .iter()
            .filter(|r| r.outcome == Outcome::FastFail)
            .count();
        let ratio = sent as f64 / accepted as f64;
        println!(
            "{:<16}{sent:>6}{accepted:>10}{ratio:>15.3}{refused:>12}",
            spec.name
        );
        match (&spec.kind, &spec.throttle) {
            (StrategyKind::None, _) => {
                assert_eq!(sent, run.requests.len(), "everything goes out");
                assert!(ratio > 2.0, "the backend refuses most: {ratio}");
            }
            (_, Some(throttle)) => {
                let k = throttle.k_value();
                assert!(
                    (ratio - k).abs() <= 0.1 * k,
                    "{}: {ratio} vs K = {k}",
                    spec.name
                );
                let cap = throttle.max_rejection_value();
                assert!(
                    (refused as f64) <= cap * run.requests.len() as f64,
                    "{}: refused {refused} of {}",
                    spec.name,
                    run.requests.len()
                );
                checked += 1;
            }
            _ => panic!("unexpected strategy {}", spec.name),
        }
    }
    assert_eq!(checked, 3);
}

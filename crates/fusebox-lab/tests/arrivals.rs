//! Poisson arrivals (`arrivals = "poisson"`): the mean rate holds, the gaps
//! are exponential, a seed replays them, the engine runs them, and a bad
//! value is an error naming the key.

use fusebox_lab::engine::Mode;
use fusebox_lab::report::ScenarioReport;
use fusebox_lab::scenario::{Arrivals, Scenario};

const SCENARIO: &str = r#"
name = "poisson"
duration = "10s"
rate = 1000
workers = 64
seed = SEED
arrivals = "poisson"

[downstream]
latency = "5ms"

[[strategy]]
name = "no protection"
kind = "none"
"#;

fn scenario(seed: u64) -> Scenario {
    Scenario::parse("poisson.toml", &SCENARIO.replace("SEED", &seed.to_string())).unwrap()
}

#[test]
fn the_mean_rate_holds_and_the_gaps_are_exponential() {
    let sc = scenario(1);
    let n = sc.request_count();
    // 10,000 expected; a Poisson count's sd is 100.
    assert!((9_700..=10_300).contains(&n), "{n} arrivals");
    let times: Vec<f64> = (0..n).map(|i| sc.arrival_ns(i) as f64 / 1e9).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in order");
    assert!(*times.last().unwrap() < 10.0);
    let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    // An exponential's coefficient of variation is 1; fixed arrivals give 0.
    assert!((0.95..1.05).contains(&(sd / mean)), "cv {}", sd / mean);
    assert!((0.00095..0.00105).contains(&mean), "mean gap {mean}");
}

#[test]
fn a_seed_replays_its_arrivals_and_another_seed_draws_others() {
    let (a, b, c) = (scenario(7), scenario(7), scenario(8));
    assert_eq!(a.arrivals, b.arrivals);
    assert_ne!(a.arrivals, c.arrivals);
    assert!(matches!(a.arrivals, Arrivals::Poisson(_)));
    let fixed = Scenario::parse(
        "fixed.toml",
        &SCENARIO
            .replace("SEED", "1")
            .replace("arrivals = \"poisson\"", ""),
    )
    .unwrap();
    assert_eq!(fixed.arrivals, Arrivals::Fixed);
    assert_eq!(
        (fixed.request_count(), fixed.arrival_ns(3)),
        (10_000, 3_000_000)
    );
}

#[test]
fn the_engine_runs_every_poisson_arrival() {
    let sc = scenario(3);
    let n = sc.request_count();
    let report = ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {}).unwrap();
    let json = fusebox_lab::report::json::text(&[report]);
    assert!(
        json.contains("\"arrivals\": \"poisson\""),
        "the report says how requests arrived"
    );
    assert!(
        json.contains(&format!("\"requests\": {n}")),
        "every arrival is a request"
    );
}

#[test]
fn an_unknown_arrival_process_is_an_error_naming_the_key() {
    let text = SCENARIO
        .replace("SEED", "1")
        .replace("\"poisson\"", "\"bursty\"");
    let err = Scenario::parse("bad.toml", &text).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("arrivals") && text.contains("\"bursty\" is not one of"),
        "{text}"
    );
}

#[test]
fn a_rate_sweep_redraws_poisson_arrivals_at_the_new_rate() {
    use fusebox_lab::scenario::{sweep, ParamValue};
    let sc = scenario(1);
    let half = sweep::apply(&sc, "rate", ParamValue::Num(500.0)).unwrap();
    let n = half.request_count();
    assert!(
        (4_780..=5_220).contains(&n),
        "{n} arrivals at 500/s for 10 s"
    );
    assert!(matches!(half.arrivals, Arrivals::Poisson(_)));
}

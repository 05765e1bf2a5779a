//! Poisson arrivals (`arrivals = "poisson"`): the mean rate holds, the gaps
//! are exponential, a seed replays them, the engine runs them, and a bad
//! value is an error naming the key. Bursty arrivals (`"bursty"`) and
//! traces (`"trace"`: a file of times or of per-second rates) likewise.

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
        .replace("\"poisson\"", "\"burst\"");
    let err = Scenario::parse("bad.toml", &text).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("arrivals") && text.contains("\"burst\" is not one of"),
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

/// Bursty arrivals: `burst = { on = "1s", off = "4s", peak = 3.0 }` at a
/// mean of 1000/s gives 3000/s in the bursts and 500/s in the calms.
fn bursty(extra: &str) -> Result<Scenario, String> {
    let text = SCENARIO.replace("SEED", "3").replace(
        "arrivals = \"poisson\"",
        &format!("arrivals = \"bursty\"\n{extra}"),
    );
    Scenario::parse("bursty.toml", &text).map_err(|e| e.to_string())
}

#[test]
fn bursty_arrivals_keep_the_mean_and_burst_at_the_peak() {
    let sc = bursty("burst = { on = \"1s\", off = \"4s\", peak = 3.0 }").unwrap();
    assert!(matches!(sc.arrivals, Arrivals::Bursty(..)));
    let n = sc.request_count();
    // 10,000 expected over two periods (sd 100).
    assert!((9_700..=10_300).contains(&n), "{n} arrivals");
    let seconds = |from: f64, to: f64| {
        (0..n)
            .map(|i| sc.arrival_ns(i) as f64 / 1e9)
            .filter(|t| (from..to).contains(t))
            .count() as f64
            / (to - from)
    };
    // Each burst (0-1 s, 5-6 s) at 3000/s, each calm at 500/s (3 sd bounds).
    for (from, to, rate) in [
        (0.0, 1.0, 3000.0),
        (5.0, 6.0, 3000.0),
        (1.0, 5.0, 500.0),
        (6.0, 10.0, 500.0),
    ] {
        let seen = seconds(from, to);
        let sd = (rate / (to - from)).sqrt();
        assert!(
            (seen - rate).abs() < 3.0 * sd,
            "{from}..{to} s: {seen}/s, not {rate}/s"
        );
    }
    // A seed replays them; the same rate with poisson arrivals has no bursts.
    assert_eq!(
        bursty("burst = { on = \"1s\", off = \"4s\", peak = 3.0 }")
            .unwrap()
            .arrivals,
        sc.arrivals
    );
    let again = sc.with_seed(4);
    assert_ne!(again.arrivals, sc.arrivals);
    assert!(matches!(again.arrivals, Arrivals::Bursty(..)));
}

#[test]
fn bad_bursts_are_errors_naming_the_key() {
    let cases = [
        ("", "burst"),
        (
            "burst = { on = \"1s\", off = \"4s\", peak = 6.0 }",
            "burst.peak",
        ),
        (
            "burst = { on = \"1s\", off = \"4s\", peak = 0.5 }",
            "burst.peak",
        ),
        (
            "burst = { on = \"0s\", off = \"4s\", peak = 2.0 }",
            "burst.on",
        ),
        ("burst = { on = \"1s\", off = \"4s\", peek = 2.0 }", "peek"),
        (
            "burst = { on = \"1s\", off = \"4s\", peak = 2.0 }\nrate_until = 2000",
            "rate_until",
        ),
    ];
    for (extra, key) in cases {
        let e = bursty(extra).unwrap_err();
        assert!(e.contains(&format!("key `{key}`")), "{extra}: {e}");
    }
    let text = SCENARIO.replace("SEED", "1").replace(
        "arrivals = \"poisson\"",
        "burst = { on = \"1s\", off = \"4s\", peak = 2.0 }",
    );
    let e = Scenario::parse("fixed.toml", &text)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("burst") && e.contains("is for arrivals = \"bursty\""),
        "{e}"
    );
}

/// A trace file next to the scenario: `times` (seconds from the start, any
/// order) or `per_second` (one rate a line, or Prometheus's CSV export,
/// `timestamp,value`).
fn traced(format: &str, body: &str) -> Result<Scenario, String> {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trace-{format}-{}", body.len()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("arrivals.txt"), body).unwrap();
    let text = SCENARIO.replace("SEED", "1").replace(
        "arrivals = \"poisson\"",
        &format!(
            "arrivals = \"trace\"\ntrace = {{ file = \"arrivals.txt\", format = \"{format}\" }}"
        ),
    );
    let path = dir.join("traced.toml");
    std::fs::write(&path, text).unwrap();
    Scenario::load(&path).map_err(|e| e.to_string())
}

#[test]
fn a_trace_of_times_is_replayed_as_written() {
    let sc = traced("times", "# seconds\n0.5\n0.25\n\n3\n12\n").unwrap();
    let times: Vec<u64> = (0..sc.request_count()).map(|i| sc.arrival_ns(i)).collect();
    assert_eq!(
        times,
        [250_000_000, 500_000_000, 3_000_000_000],
        "sorted, 12 s is past the run"
    );
    assert!(matches!(&sc.arrivals, Arrivals::Trace(file, _) if file == "arrivals.txt"));
    assert_eq!(sc.with_seed(9).arrivals, sc.arrivals, "times are not drawn");
    let report = ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {}).unwrap();
    assert_eq!(report.runs[0].requests.len(), 3);
}

#[test]
fn per_second_counts_from_a_prometheus_export_give_their_totals() {
    // Ten seconds of 100/s, then 1000/s, as `timestamp,value` rows.
    let body: String = (0..10)
        .map(|i| format!("{},{}\n", 1_700_000_000 + i, if i < 5 { 100 } else { 1000 }))
        .collect();
    let sc = traced("per_second", &body).unwrap();
    let count = |from: u64, to: u64| {
        (0..sc.request_count())
            .filter(|&i| (from * 1_000_000_000..to * 1_000_000_000).contains(&sc.arrival_ns(i)))
            .count() as f64
    };
    // 500 then 5000 expected (sd 22 and 71).
    assert!((count(0, 5) - 500.0).abs() < 70.0, "{}", count(0, 5));
    assert!((count(5, 10) - 5000.0).abs() < 220.0, "{}", count(5, 10));
}

#[test]
fn bad_traces_are_errors_naming_the_file_and_the_line() {
    let e = traced("times", "1.0\nsoon\n").unwrap_err();
    assert!(
        e.contains("trace.file") && e.contains("line 2") && e.contains("\"soon\""),
        "{e}"
    );
    let e = traced("per_second", "5\n-1\n").unwrap_err();
    assert!(e.contains("line 2"), "{e}");
    let e = traced("hourly", "5\n").unwrap_err();
    assert!(e.contains("trace.format"), "{e}");
    let e = traced("times", "# nothing\n").unwrap_err();
    assert!(e.contains("no arrivals"), "{e}");
    let text = SCENARIO.replace("SEED", "1").replace(
        "arrivals = \"poisson\"",
        "arrivals = \"trace\"\ntrace = { file = \"/nonexistent/arrivals.txt\" }",
    );
    let e = Scenario::parse("t.toml", &text).unwrap_err().to_string();
    assert!(e.contains("cannot read /nonexistent/arrivals.txt"), "{e}");
}

//! Latency distributions: `latency = { lognormal = { p50, p99 } }` and
//! `latency = { histogram = { le, counts } }` for the downstream's healthy
//! calls and a fault's failing ones, drawn per call from the seed: their
//! quantiles are the ones asked for, a seed replays its run, both modes
//! draw the same latencies, and bad distributions are named by their key.

use fusebox_lab::engine::{self, Mode};
use fusebox_lab::report::{json, ScenarioReport};
use fusebox_lab::scenario::{CallResult, LatencyDist, Scenario, EMBEDDED};
use std::time::Duration;

/// seed000-50rps with `[downstream] latency = healthy` and the fault's
/// `latency = faulty` (TOML values).
fn with_latencies(healthy: &str, faulty: &str) -> String {
    EMBEDDED[0]
        .1
        .replacen("latency = \"5ms\"", &format!("latency = {healthy}"), 1)
        .replacen("latency = \"150ms\"", &format!("latency = {faulty}"), 1)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `p`-th percentile (nearest rank) of `xs`, in ms.
fn percentile(xs: &mut [Duration], p: f64) -> f64 {
    xs.sort_unstable();
    let rank = ((p / 100.0 * xs.len() as f64).ceil() as usize).max(1);
    ms(xs[rank - 1])
}

const LOGNORMAL: &str = "{ lognormal = { p50 = \"5ms\", p99 = \"40ms\" } }";
const HISTOGRAM: &str =
    "{ histogram = { le = [\"1ms\", \"5ms\", \"10ms\", \"50ms\"], counts = [10, 60, 25, 5] } }";

#[test]
fn a_lognormal_latency_has_the_p50_and_p99_asked_for() {
    let sc = Scenario::parse("x.toml", &with_latencies(LOGNORMAL, "\"150ms\"")).unwrap();
    assert!(sc.is_random() && sc.has_tail());
    // The constant latency the lab takes where it needs one: the median.
    assert_eq!(sc.downstream.latency, Duration::from_millis(5));
    let mut draws: Vec<Duration> = (0..20_000).map(|i| sc.healthy_latency(i, 1)).collect();
    let (p50, p99) = (percentile(&mut draws, 50.0), percentile(&mut draws, 99.0));
    assert!((p50 - 5.0).abs() < 0.2, "p50 {p50} ms");
    assert!((p99 - 40.0).abs() < 4.0, "p99 {p99} ms");
    // Each attempt draws anew; the same attempt the same.
    assert_eq!(sc.healthy_latency(3, 1), sc.healthy_latency(3, 1));
    let differ = (0..100)
        .filter(|&i| sc.healthy_latency(i, 1) != sc.healthy_latency(i, 2))
        .count();
    assert_eq!(differ, 100);
    // Another seed, other draws, the same quantiles.
    let other = sc.with_seed(2);
    let same = (0..1000)
        .filter(|&i| other.healthy_latency(i, 1) == sc.healthy_latency(i, 1))
        .count();
    assert_eq!(same, 0);
    // The exact quantile function agrees.
    let d = sc.downstream.latency_dist.as_ref().unwrap();
    assert!((ms(d.quantile(0.99)) - 40.0).abs() < 0.01);
    assert!((ms(d.quantile(0.5)) - 5.0).abs() < 0.01);
}

#[test]
fn a_histogram_latency_is_uniform_inside_its_buckets() {
    let sc = Scenario::parse("x.toml", &with_latencies(HISTOGRAM, "\"150ms\"")).unwrap();
    let d = sc.downstream.latency_dist.clone().unwrap();
    // Exact: 10 % under 1 ms, then 60 % spread over 1..5 ms, and so on.
    let q = |x: f64| ms(d.quantile(x));
    assert!((q(0.1) - 1.0).abs() < 1e-6);
    assert!((q(0.4) - 3.0).abs() < 1e-6, "{}", q(0.4));
    assert!((q(0.7) - 5.0).abs() < 1e-6);
    assert!((q(0.95) - 10.0).abs() < 1e-6);
    assert!((q(0.99) - 42.0).abs() < 1e-6, "{}", q(0.99));
    assert!((q(1.0) - 50.0).abs() < 1e-6);
    // The median the lab takes: 1 ms + 4 ms x 40 / 60.
    assert!((ms(sc.downstream.latency) - 11.0 / 3.0).abs() < 1e-3);
    // Drawn: the buckets' shares, and the quantiles.
    let mut draws: Vec<Duration> = (0..20_000).map(|i| sc.healthy_latency(i, 1)).collect();
    let share = |a: f64, b: f64| {
        draws.iter().filter(|&&x| a < ms(x) && ms(x) <= b).count() as f64 / draws.len() as f64
    };
    for ((a, b), want) in [((0.0, 1.0), 0.10), ((1.0, 5.0), 0.60), ((5.0, 10.0), 0.25)] {
        let got = share(a, b);
        assert!((got - want).abs() < 0.015, "{a}..{b} ms: {got}");
    }
    assert!((share(1.0, 3.0) - 0.30).abs() < 0.015, "uniform inside");
    assert!(draws.iter().all(|&x| x <= Duration::from_millis(50)));
    for (p, want) in [(50.0, 11.0 / 3.0), (90.0, 9.0), (99.0, 42.0)] {
        let got = percentile(&mut draws, p);
        assert!(
            (got - want).abs() < want * 0.05,
            "p{p}: {got} ms, not {want}"
        );
    }
    // Prometheus's cumulative `_bucket` counts are the same histogram.
    let cumulative =
        HISTOGRAM.replace("counts = [10, 60, 25, 5]", "cumulative = [10, 70, 95, 100]");
    let same = Scenario::parse("x.toml", &with_latencies(&cumulative, "\"150ms\"")).unwrap();
    assert_eq!(same.downstream.latency_dist, Some(d));
    // An empty bucket is never drawn.
    let gap = HISTOGRAM.replace("counts = [10, 60, 25, 5]", "counts = [10, 0, 90, 0]");
    let sc = Scenario::parse("x.toml", &with_latencies(&gap, "\"150ms\"")).unwrap();
    for i in 0..2000 {
        let x = ms(sc.healthy_latency(i, 1));
        assert!(x <= 1.0 || (5.0..=10.0).contains(&x), "{x}");
    }
}

/// A fault's failing calls draw their latency from its distribution; the
/// healthy calls keep theirs.
#[test]
fn a_faults_latency_is_drawn_per_call() {
    let sc = Scenario::parse(
        "x.toml",
        &with_latencies(
            "\"5ms\"",
            "{ lognormal = { p50 = \"100ms\", p99 = \"400ms\" } }",
        ),
    )
    .unwrap();
    let at = Duration::from_millis(700);
    let mut failing: Vec<Duration> = (0..20_000)
        .map(|i| {
            let plan = sc.plan(i, 1, 0, at);
            assert_eq!(plan.result, CallResult::Error);
            plan.duration
        })
        .collect();
    let (p50, p99) = (
        percentile(&mut failing, 50.0),
        percentile(&mut failing, 99.0),
    );
    assert!((p50 - 100.0).abs() < 4.0, "p50 {p50}");
    assert!((p99 - 400.0).abs() < 40.0, "p99 {p99}");
    let healthy = sc.plan(1, 1, 0, Duration::from_millis(2000));
    assert_eq!(healthy.duration, Duration::from_millis(5));
    // The healthy draws and the fault's are independent of each other.
    let both = Scenario::parse(
        "x.toml",
        &with_latencies(
            LOGNORMAL,
            "{ lognormal = { p50 = \"5ms\", p99 = \"40ms\" } }",
        ),
    )
    .unwrap();
    let same = (0..1000)
        .filter(|&i| both.plan(i, 1, 0, at).duration == both.healthy_latency(i, 1))
        .count();
    assert!(same < 5, "{same}");
    // A client timeout still cuts them.
    let cut = with_latencies(
        "\"5ms\"",
        "{ lognormal = { p50 = \"100ms\", p99 = \"400ms\" } }",
    )
    .replacen(
        "[[strategy]]",
        "[client]\ntimeout = \"200ms\"\n\n[[strategy]]",
        1,
    );
    let sc = Scenario::parse("x.toml", &cut).unwrap();
    let timeouts = (0..1000)
        .filter(|&i| sc.plan(i, 1, 0, at).result == CallResult::Timeout)
        .count();
    // P(lognormal > 2 x median) with sigma = ln 4 / 2.326: about 13 %.
    assert!((90..=170).contains(&timeouts), "{timeouts}");
}

/// A seed replays its run byte for byte; another seed gives another; and
/// a virtual run's calls take exactly their draws.
#[test]
fn a_seed_replays_its_latencies_in_virtual_time() {
    let sc = Scenario::parse("x.toml", &with_latencies(LOGNORMAL, HISTOGRAM)).unwrap();
    let report = |seed| {
        let r = ScenarioReport::run(sc.with_seed(seed), Mode::Virtual, None, |_| {}, || {});
        json::text(&[r.unwrap()])
    };
    assert_eq!(report(7), report(7));
    assert_ne!(report(7), report(8));
    let sc = sc.with_seed(7);
    let r = engine::run(&sc, &sc.strategies[0], Mode::Virtual, None).unwrap();
    let mut distinct = std::collections::HashSet::new();
    for c in &r.calls {
        let plan = sc.plan(c.request, 1, 0, c.start);
        assert_eq!((c.end - c.start, c.result), (plan.duration, plan.result));
        distinct.insert(plan.duration);
    }
    assert!(
        distinct.len() > 100,
        "{} distinct latencies",
        distinct.len()
    );
}

/// Real mode (threads, and HTTP) draws the same latencies: every call takes
/// at least its draw (a sleep never ends early; asserts no upper bound, the
/// machine may be loaded), and a draw above the median is not cut to it.
#[test]
fn real_mode_draws_the_same_latencies() {
    engine::use_lab_binary(env!("CARGO_BIN_EXE_fusebox-lab"));
    let base = with_latencies(
        "{ lognormal = { p50 = \"2ms\", p99 = \"20ms\" } }",
        "{ histogram = { le = [\"5ms\", \"30ms\"], counts = [1, 1] } }",
    )
    .replacen("duration = \"3s\"", "duration = \"400ms\"", 1)
    .replacen("rate = 50.0", "rate = 200.0", 1)
    .replacen("from = \"500ms\"", "from = \"100ms\"", 1)
    .replacen("until = \"1500ms\"", "until = \"200ms\"", 1);
    let http = base.replacen(
        "[[downstream.faults]]",
        "transport = \"http\"\n\n[[downstream.faults]]",
        1,
    );
    for text in [base, http] {
        let sc = Scenario::parse("x.toml", &text).unwrap();
        let r = engine::run(&sc, &sc.strategies[0], Mode::Real, None).unwrap();
        assert_eq!(r.calls.len(), 80);
        let mut above = 0;
        for c in &r.calls {
            let plan = sc.plan(c.request, 1, 0, c.start);
            assert_eq!(c.result, plan.result, "call at {:?}", c.start);
            assert!(
                c.end - c.start >= plan.duration,
                "call of request {} took {:?}, its draw {:?}",
                c.request,
                c.end - c.start,
                plan.duration
            );
            above += usize::from(plan.duration > sc.downstream.latency * 2);
        }
        assert!(above > 10, "{above} draws above twice the median");
    }
}

#[test]
fn bad_distributions_are_named_by_their_key() {
    let cases = [
        (
            "{ lognormal = { p50 = \"40ms\", p99 = \"5ms\" } }",
            "downstream.latency.lognormal.p99",
            "at least p50",
        ),
        (
            "{ lognormal = { p50 = \"0ms\", p99 = \"5ms\" } }",
            "downstream.latency.lognormal.p50",
            "above zero",
        ),
        (
            "{ lognormal = { p50 = \"5ms\" } }",
            "downstream.latency.lognormal.p99",
            "missing",
        ),
        (
            "{ lognormal = { p50 = \"5ms\", p99 = \"40ms\", p90 = \"9ms\" } }",
            "downstream.latency.lognormal.p90",
            "unknown key",
        ),
        (
            "{ lognormal = { p50 = 5, p99 = \"40ms\" } }",
            "downstream.latency.lognormal.p50",
            "such as \"5ms\"",
        ),
        (
            "{ histogram = { le = [], counts = [] } }",
            "downstream.latency.histogram.le",
            "at least one bucket",
        ),
        (
            "{ histogram = { le = [\"10ms\", \"5ms\"], counts = [1, 1] } }",
            "downstream.latency.histogram.le",
            "must increase: 5ms after 10ms",
        ),
        (
            "{ histogram = { le = [\"5ms\", \"5ms\"], counts = [1, 1] } }",
            "downstream.latency.histogram.le",
            "must increase",
        ),
        (
            "{ histogram = { le = [\"5ms\", \"10ms\"], counts = [1] } }",
            "downstream.latency.histogram.counts",
            "one per bucket",
        ),
        (
            "{ histogram = { le = [\"5ms\", \"10ms\"], counts = [0, 0] } }",
            "downstream.latency.histogram.counts",
            "has no calls",
        ),
        (
            "{ histogram = { le = [\"5ms\", \"10ms\"], counts = [1, -1] } }",
            "downstream.latency.histogram.counts",
            "0 or more",
        ),
        (
            "{ histogram = { le = [\"5ms\", \"10ms\"], cumulative = [5, 3] } }",
            "downstream.latency.histogram.cumulative",
            "must not decrease",
        ),
        (
            "{ histogram = { le = [\"5ms\", \"10ms\"], counts = [1, 1], cumulative = [1, 2] } }",
            "downstream.latency.histogram.cumulative",
            "not both",
        ),
        (
            "{ histogram = { le = [\"5ms\", \"+Inf\"], counts = [1, 1] } }",
            "downstream.latency.histogram.le",
            "+Inf",
        ),
        (
            "{ histogram = { le = [\"5ms\"] } }",
            "downstream.latency.histogram.counts",
            "missing",
        ),
        (
            "{ normal = { p50 = \"5ms\" } }",
            "downstream.latency",
            "\"lognormal\", \"histogram\"",
        ),
        ("5", "downstream.latency", "must be a duration"),
        (
            "{ lognormal = { p50 = \"5ms\", p99 = \"10s\" } }",
            "downstream.latency",
            "longer than the run",
        ),
    ];
    for (value, key, says) in cases {
        let text = with_latencies(value, "\"150ms\"");
        let e = Scenario::parse("x.toml", &text).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{value}: {e}");
        assert!(e.message.contains(says), "{value}: {e}");
        assert_eq!(e.line, Some(12), "{value}: {e}");
    }
    // A fault's: the same checks under its key; only for failing calls.
    let e = Scenario::parse(
        "x.toml",
        &with_latencies(
            "\"5ms\"",
            "{ lognormal = { p50 = \"40ms\", p99 = \"5ms\" } }",
        ),
    )
    .unwrap_err();
    assert_eq!(
        e.key.as_deref(),
        Some("downstream.faults.latency.lognormal.p99"),
        "{e}"
    );
    let slow =
        with_latencies("\"5ms\"", LOGNORMAL).replace("outcome = \"error\"", "outcome = \"slow\"");
    let e = Scenario::parse("x.toml", &slow).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("downstream.faults.latency"), "{e}");
    assert!(e.message.contains("not outcome = \"slow\""), "{e}");
    // A server draws its own.
    let server = with_latencies(LOGNORMAL, "\"150ms\"").replacen(
        "[[downstream.faults]]",
        "server = { workers = 4, p90 = \"10ms\", p99 = \"20ms\" }\n[[downstream.faults]]",
        1,
    );
    let capacity: String = server
        .replace("outcome = \"error\"", "outcome = \"capacity\"\nworkers = 2")
        .lines()
        .filter(|l| !l.starts_with("latency = \"150ms\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = Scenario::parse("x.toml", &capacity).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("downstream.latency"), "{e}");
    assert!(e.message.contains("server draws its own"), "{e}");
    // A plain duration is constant, as before.
    let plain = Scenario::parse("x.toml", EMBEDDED[0].1).unwrap();
    assert!(plain.downstream.latency_dist.is_none());
    assert!(matches!(
        Scenario::parse("x.toml", &with_latencies(LOGNORMAL, "\"150ms\""))
            .unwrap()
            .downstream
            .latency_dist,
        Some(LatencyDist::LogNormal { .. })
    ));
}

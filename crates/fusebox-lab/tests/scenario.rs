//! Scenario files: what loads, and every bad input an error naming the
//! file, the line and the key, with the limit.

use fusebox_lab::scenario::{Redis, Scenario, ScenarioError, EMBEDDED};
use std::path::Path;
use std::time::Duration;

#[test]
fn embedded_scenarios_load() {
    let all = Scenario::embedded();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].name, "seed000-50rps");
    assert_eq!(all[0].request_count(), 150);
    assert_eq!(all[1].name, "seed000-100rps");
    assert_eq!(all[1].request_count(), 300);
    assert_eq!(
        all[0].fault_span(),
        Some((Duration::from_millis(500), Duration::from_millis(1500)))
    );
}

#[test]
fn shipped_scenario_files_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 6, "found {n} scenario files");
}

fn base() -> String {
    EMBEDDED[0].1.to_string()
}

fn error_of(text: &str) -> ScenarioError {
    Scenario::parse("x.toml", text).unwrap_err()
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let text = base().replace("workers = 8", "workers = 8\nwrokers = 3");
    let line = text.lines().position(|l| l.starts_with("wrokers")).unwrap() + 1;
    let e = error_of(&text);
    assert_eq!(e.file, "x.toml");
    assert_eq!(e.line, Some(line));
    assert_eq!(e.key.as_deref(), Some("wrokers"));
    assert!(e
        .to_string()
        .starts_with(&format!("x.toml:{line}: key `wrokers`")));
}

#[test]
fn missing_key_is_named() {
    let text: String = base()
        .lines()
        .filter(|l| !l.starts_with("rate"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("rate"), "{e}");
}

#[test]
fn bad_values_are_named_with_line() {
    let cases = [
        ("rate = 50.0", "rate = -1.0", "rate"),
        ("workers = 8", "workers = 0", "workers"),
        ("duration = \"3s\"", "duration = \"3 parsecs\"", "duration"),
        (
            "outcome = \"error\"",
            "outcome = \"boom\"",
            "downstream.faults.outcome",
        ),
        (
            "outcome = \"error\"",
            "outcome = \"hang\"",
            "client.timeout",
        ),
        (
            "until = \"1500ms\"",
            "until = \"100ms\"",
            "downstream.faults.until",
        ),
        ("kind = \"seed\"", "kind = \"nope\"", "strategy.kind"),
        (
            "consecutive_failures = 5",
            "consecutive_failures = 0",
            "strategy.consecutive_failures",
        ),
        ("window = \"500ms\"", "window = \"0s\"", "window"),
        ("rate = 50.0", "rate = \"fast\"", "rate"),
    ];
    for (from, to, key) in cases {
        let text = base().replacen(from, to, 1);
        assert_ne!(text, base(), "{from}");
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with(to))
            .unwrap()
            + 1;
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{to}: {e}");
        assert_eq!(e.line, Some(line), "{to}: {e}");
    }
}

/// The fusebox strategy takes the library's keys, and the library's checks.
#[test]
fn fusebox_keys_are_the_librarys_and_checked_by_it() {
    // The fusebox strategy of the embedded scenario (the third).
    let fusebox_at = |text: &str| text.match_indices("kind = \"fusebox\"").next().unwrap().0;
    let with = |keys: &str| {
        let b = base();
        let at = fusebox_at(&b);
        let end = b[at..].find("half_open_probes = 1").unwrap() + at + "half_open_probes = 1".len();
        format!("{}kind = \"fusebox\"\n{keys}{}", &b[..at], &b[end..])
    };
    let cases = [
        // The lab's old keys are not the library's.
        (
            "policy = \"consecutive\"",
            "strategy.policy",
            "unknown field",
        ),
        ("probes = 1", "strategy.probes", "unknown field"),
        (
            "half_open_probes = 0",
            "strategy.half_open_probes",
            "half_open_probes",
        ),
        ("failure_rate = 1.5", "strategy.failure_rate", "(0, 1]"),
        ("open_for = \"30h\"", "strategy.open_for", "24h"),
        (
            "half_open_max_wait = \"30h\"",
            "strategy.half_open_max_wait",
            "24h",
        ),
        (
            "half_open_max_wait = \"0s\"",
            "strategy.half_open_max_wait",
            "above zero",
        ),
        (
            "failure_rate = 0.5\ncount_window = 20\nmin_calls = 21",
            "strategy.min_calls",
            "min_calls",
        ),
        (
            "failure_rate = 0.5\ncount_window = 20\ntime_window = \"1s\"",
            "strategy.time_window",
            "not both",
        ),
        ("open_for = 5", "strategy.open_for", ""),
        // The bulkhead's key, checked by the lab.
        (
            "max_concurrent = 0",
            "strategy.max_concurrent",
            "1 to 10000",
        ),
        (
            "max_concurrent = \"8\"",
            "strategy.max_concurrent",
            "whole number",
        ),
    ];
    for (keys, key, says) in cases {
        let text = with(keys);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{keys}: {e}");
        assert!(e.message.contains(says), "{keys}: {e}");
        let bad = keys
            .lines()
            .find(|l| l.starts_with(&key["strategy.".len()..]))
            .unwrap();
        let line = text.lines().position(|l| l == bad).unwrap() + 1;
        assert_eq!(e.line, Some(line), "{keys}: {e}");
    }
    let ok = with("failure_rate = 0.5\ntime_window = \"1s\"\nmin_calls = 5\nopen_for = \"1m30s\"");
    let s = Scenario::parse("x", &ok).unwrap();
    let fusebox_lab::scenario::StrategyKind::Fusebox(c) = &s.strategies[2].kind else {
        panic!("{:?}", s.strategies[2]);
    };
    assert_eq!(c.time_window, Some(Duration::from_secs(1)));
    assert_eq!(c.open_for, Some(Duration::from_secs(90)));
    assert_eq!(c.min_calls, Some(5));
}

#[test]
fn key_of_another_kind_is_rejected() {
    let text = base().replacen(
        "kind = \"none\"",
        "kind = \"none\"\nconsecutive_failures = 3",
        1,
    );
    let e = error_of(&text);
    assert_eq!(
        e.key.as_deref(),
        Some("strategy.consecutive_failures"),
        "{e}"
    );
    assert!(e.message.contains("none"), "{e}");
}

#[test]
fn max_concurrent_is_a_fusebox_key_only() {
    let text = base().replacen("kind = \"none\"", "kind = \"none\"\nmax_concurrent = 3", 1);
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.max_concurrent"), "{e}");
    assert!(e.message.contains("kind = \"fusebox\""), "{e}");
}

/// The base scenario with `line` added to its fusebox strategy.
fn with(line: &str) -> String {
    base().replacen(
        "half_open_probes = 1",
        &format!("half_open_probes = 1\n{line}"),
        1,
    )
}

/// Each `(line, key, says)`: the scenario `with(line)` is refused with an
/// error naming `key`, saying `says`, at the line of `line`.
fn assert_key_errors(cases: &[(&str, &str, &str)]) {
    for &(line, key, says) in cases {
        let text = with(line);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{line}: {e}");
        assert!(e.message.contains(says), "{line}: {e}");
        let at = text.lines().position(|l| l == line).unwrap() + 1;
        assert_eq!(e.line, Some(at), "{line}: {e}");
    }
}

/// `limit` is the library's adaptive limit table, read and checked by it,
/// with the same error shape as `rate_limit`.
#[test]
fn limit_keys_are_the_librarys_and_checked_by_it() {
    let cases = [
        ("limit = { min = 0 }", "strategy.limit.min", "at least 1"),
        (
            "limit = { min = 10, max = 5 }",
            "strategy.limit.max",
            "at least `min`",
        ),
        (
            "limit = { algorithm = \"fast\" }",
            "strategy.limit.algorithm",
            "unknown variant",
        ),
        (
            "limit = { maxx = 5 }",
            "strategy.limit.maxx",
            "unknown field",
        ),
        ("limit = 20", "strategy.limit", "must be a table"),
    ];
    assert_key_errors(&cases);
    let text = base().replacen("kind = \"none\"", "kind = \"none\"\nlimit = { max = 5 }", 1);
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.limit"), "{e}");
    assert!(
        e.message
            .contains("an adaptive limit goes with kind = \"fusebox\""),
        "{e}"
    );
}

/// `throttle` is the library's throttle table, read and checked by it,
/// with the same error shape as `limit`.
#[test]
fn throttle_keys_are_the_librarys_and_checked_by_it() {
    let cases = [
        ("throttle = { k = 0.5 }", "strategy.throttle.k", ">= 1"),
        (
            "throttle = { max_rejection = 1.5 }",
            "strategy.throttle.max_rejection",
            "[0, 1]",
        ),
        (
            "throttle = { window = \"soon\" }",
            "strategy.throttle.window",
            "duration",
        ),
        (
            "throttle = { kk = 2 }",
            "strategy.throttle.kk",
            "unknown field",
        ),
        ("throttle = 2", "strategy.throttle", "must be a table"),
    ];
    assert_key_errors(&cases);
    let text = base().replacen(
        "kind = \"none\"",
        "kind = \"none\"\nthrottle = { k = 2.0 }",
        1,
    );
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.throttle"), "{e}");
    assert!(
        e.message
            .contains("a throttle goes with kind = \"fusebox\""),
        "{e}"
    );
}

/// `rate_limit` is the library's rate limiter table, read and checked by
/// the library: each bad value names the key inside it and its line.
#[test]
fn rate_limit_keys_are_the_librarys_and_checked_by_it() {
    let cases = [
        (
            "rate_limit = { per_second = 0 }",
            "strategy.rate_limit.per_second",
            "at least 1",
        ),
        (
            "rate_limit = { per_second = 40, burst = 0 }",
            "strategy.rate_limit.burst",
            "at least 1",
        ),
        (
            "rate_limit = { per_second = 40, burts = 5 }",
            "strategy.rate_limit.burts",
            "unknown field",
        ),
        (
            "rate_limit = { burst = 5 }",
            "strategy.rate_limit.per_second",
            "must be set",
        ),
        (
            "rate_limit = { per_second = 40, mode = \"loud\" }",
            "strategy.rate_limit.mode",
            "unknown variant",
        ),
        (
            "rate_limit = { period = \"30h\" }",
            "strategy.rate_limit.period",
            "24h",
        ),
        ("rate_limit = 40", "strategy.rate_limit", "must be a table"),
    ];
    assert_key_errors(&cases);
    let s = Scenario::parse(
        "x",
        &with("rate_limit = { per_second = 40, burst = 5, mode = \"shadow\" }"),
    )
    .unwrap();
    assert_eq!(
        s.strategies[2].rate_limit,
        Some(
            fusebox::ratelimit::RateLimitConfig::per_second(40)
                .burst(5)
                .mode(fusebox::Mode::Shadow)
        )
    );
    assert_eq!(s.strategies[1].rate_limit, None);
    // A rate limiter goes with a fusebox strategy only.
    let text = base().replacen(
        "kind = \"none\"",
        "kind = \"none\"\nrate_limit = { per_second = 1 }",
        1,
    );
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.rate_limit"), "{e}");
    assert!(e.message.contains("kind = \"fusebox\""), "{e}");
}

/// `hedge` takes a delay (a quantile or a duration), `max_extra` and
/// `min_samples`, each checked and named, with the error shape of `limit`.
#[test]
fn hedge_keys_are_checked_and_named() {
    let cases = [
        (
            "hedge = { delay = \"p100\" }",
            "strategy.hedge.delay",
            "below p100",
        ),
        (
            "hedge = { delay = \"p0\" }",
            "strategy.hedge.delay",
            "above p0",
        ),
        (
            "hedge = { delay = \"soon\" }",
            "strategy.hedge.delay",
            "such as \"p95\"",
        ),
        (
            "hedge = { delay = \"pfast\" }",
            "strategy.hedge.delay",
            "such as \"p95\"",
        ),
        (
            "hedge = { delay = 95 }",
            "strategy.hedge.delay",
            "a quantile",
        ),
        (
            "hedge = { delay = \"0ms\" }",
            "strategy.hedge.delay",
            "more than zero",
        ),
        ("hedge = { delay = \"25h\" }", "strategy.hedge.delay", "24h"),
        (
            "hedge = { max_extra = 0 }",
            "strategy.hedge.max_extra",
            "from 1 to 100",
        ),
        (
            "hedge = { max_extra = 1.5 }",
            "strategy.hedge.max_extra",
            "whole number",
        ),
        (
            "hedge = { min_samples = -1 }",
            "strategy.hedge.min_samples",
            "whole number",
        ),
        (
            "hedge = { dealy = \"p95\" }",
            "strategy.hedge.dealy",
            "unknown key",
        ),
        ("hedge = \"p95\"", "strategy.hedge", "must be a table"),
    ];
    assert_key_errors(&cases);
    use fusebox::hedge::Delay;
    let fusebox = |line: &str| Scenario::parse("x.toml", &with(line)).unwrap().strategies[2].hedge;
    let h = fusebox("hedge = { delay = \"p95\", max_extra = 2, min_samples = 10 }").unwrap();
    assert_eq!(
        (h.delay, h.max_extra, h.min_samples),
        (Some(Delay::Quantile(0.95)), Some(2), Some(10))
    );
    let h = fusebox("hedge = { delay = \"p99.9\" }").unwrap();
    assert!(matches!(h.delay, Some(Delay::Quantile(q)) if (q - 0.999).abs() < 1e-12));
    let h = fusebox("hedge = { delay = \"1.5s\" }").unwrap();
    assert_eq!(h.delay, Some(Delay::Fixed(Duration::from_millis(1500))));
    // The library's defaults for the keys left out.
    let built = fusebox("hedge = {}").unwrap().build().unwrap();
    assert_eq!(
        (built.delay(), built.max_extra()),
        (Delay::Quantile(0.95), 1)
    );
    assert_eq!(fusebox("max_concurrent = 2"), None);
    // A hedge goes with a fusebox strategy only.
    let text = base().replacen("kind = \"none\"", "kind = \"none\"\nhedge = {}", 1);
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.hedge"), "{e}");
    assert!(
        e.message.contains("a hedge goes with kind = \"fusebox\""),
        "{e}"
    );
}

/// The base scenario with a `[[downstream.tail]]` entry of these keys (and
/// `extra` lines before `[downstream]`).
fn with_tail(keys: &str, extra: &str) -> String {
    base()
        .replacen("[downstream]", &format!("{extra}\n[downstream]"), 1)
        .replacen(
            "[[downstream.faults]]",
            &format!("[[downstream.tail]]\n{keys}\n\n[[downstream.faults]]"),
            1,
        )
}

/// `[[downstream.tail]]` and `seed`: what loads, and each bad value named
/// by its key, at its line.
#[test]
fn tail_and_seed_keys_are_checked_and_named() {
    let sc = Scenario::parse("x.toml", &with_tail("share = 0.01\nlatency = \"1s\"", "")).unwrap();
    assert_eq!(sc.downstream.tail.len(), 1);
    assert_eq!(
        (
            sc.downstream.tail[0].share,
            sc.downstream.tail[0].latency,
            sc.seed
        ),
        (
            0.01,
            Duration::from_secs(1),
            fusebox_lab::scenario::DEFAULT_SEED
        )
    );
    assert_eq!(
        Scenario::parse("x.toml", &base()).unwrap().downstream.tail,
        []
    );
    let seeded = Scenario::parse(
        "x.toml",
        &with_tail("share = 1\nlatency = \"1s\"", "seed = 7"),
    )
    .unwrap();
    assert_eq!((seeded.seed, seeded.downstream.tail[0].share), (7, 1.0));
    assert!(!seeded.same_setup(&sc));

    let tail = "share = 0.01\nlatency = \"1s\"";
    let cases: [(String, &str, &str, &str); 11] = [
        (with_tail("share = 0\nlatency = \"1s\"", ""), "share = 0", "downstream.tail.share", "> 0 and at most 1"),
        (with_tail("share = 1.5\nlatency = \"1s\"", ""), "share = 1.5", "downstream.tail.share", "at most 1"),
        (with_tail("share = \"1%\"\nlatency = \"1s\"", ""), "share = \"1%\"", "downstream.tail.share", "such as 0.01"),
        (with_tail("share = 0.01\nlatency = \"5s\"", ""), "latency = \"5s\"", "downstream.tail.latency", "longer than the run"),
        (with_tail("share = 0.01\nlatency = 5", ""), "latency = 5", "downstream.tail.latency", "such as \"1s\""),
        (with_tail("share = 0.01\nlatency = \"soon\"", ""), "latency = \"soon\"", "downstream.tail.latency", "soon"),
        (with_tail("share = 0.01", ""), "[[downstream.tail]]", "downstream.tail.latency", "missing"),
        (
            with_tail("share = 0.6\nlatency = \"1s\"\n\n[[downstream.tail]]\nshare = 0.5\nlatency = \"2s\"", ""),
            "share = 0.5",
            "downstream.tail.share",
            "add up to 1.1",
        ),
        (with_tail(tail, "seed = -1"), "seed = -1", "seed", "out of range"),
        (with_tail(tail, "seed = \"x\""), "seed = \"x\"", "seed", "expected i64"),
        (
            with_tail(tail, "").replacen(
                "latency = \"5ms\"",
                "latency = \"5ms\"\nserver = { workers = 2, p90 = \"5ms\", p99 = \"9ms\" }",
                1,
            ),
            "[[downstream.tail]]",
            "downstream.tail",
            "leave tail out",
        ),
    ];
    for (text, line, key, says) in cases {
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{line}: {e}");
        assert!(e.message.contains(says), "{line}: {e}");
        let at = text.lines().position(|l| l.starts_with(line)).unwrap() + 1;
        assert_eq!(e.line, Some(at), "{line}: {e}");
    }
}

/// `max_concurrent` puts a bulkhead in front of the breaker: 50 ms calls
/// arriving every 10 ms find its one slot taken and fast-fail; without it
/// none does.
#[test]
fn a_fusebox_bulkhead_refuses_calls_beyond_its_slots() {
    let text = |bulkhead: &str| {
        format!(
            "name = \"bulkhead\"\nduration = \"1s\"\nrate = 100.0\nworkers = 8\nwindow = \"500ms\"\n\
             [downstream]\nlatency = \"50ms\"\n\
             [[strategy]]\nname = \"fusebox\"\nkind = \"fusebox\"\nconsecutive_failures = 5\n{bulkhead}"
        )
    };
    let fast_fails = |bulkhead: &str| {
        let s = Scenario::parse("x.toml", &text(bulkhead)).unwrap();
        let r = fusebox_lab::engine::run(
            &s,
            &s.strategies[0],
            fusebox_lab::engine::Mode::Virtual,
            None,
        )
        .unwrap();
        r.requests
            .iter()
            .filter(|q| q.outcome == fusebox_lab::engine::Outcome::FastFail)
            .count()
    };
    assert_eq!(fast_fails(""), 0);
    let refused = fast_fails("max_concurrent = 1");
    // One slot, a call every 10 ms lasting 50 ms: about 4 in 5 refused.
    assert!((60..=90).contains(&refused), "{refused} of 100 refused");
}

#[test]
fn arrivals_follow_the_rate() {
    let s = Scenario::parse("x", &base()).unwrap();
    assert_eq!(s.arrival_ns(0), 0);
    assert_eq!(s.arrival_ns(1), 20_000_000);
    assert_eq!(s.arrival_ns(149), 2_980_000_000);
    let odd = base().replace("rate = 50.0", "rate = 30.0");
    let s = Scenario::parse("x", &odd).unwrap();
    // 3 s at 30/s: 0, 1/30, ..., 89/30 < 3.
    assert_eq!(s.request_count(), 90);
}

/// Each bad value of the lab issue: the key, the line of the value, and the
/// limit in the message.
#[test]
fn values_outside_the_limits_name_key_line_and_limit() {
    let cases = [
        // A fault outside a 3 s run.
        (
            "from = \"500ms\"\nuntil = \"1500ms\"",
            "from = \"100s\"\nuntil = \"200s\"",
            "from = \"100s\"",
            "downstream.faults.from",
            "duration = 3s",
        ),
        // A fault that ends after the run.
        (
            "until = \"1500ms\"",
            "until = \"4s\"",
            "until = \"4s\"",
            "downstream.faults.until",
            "duration = 3s",
        ),
        // A duration beyond a day.
        (
            "duration = \"3s\"",
            "duration = \"25h\"",
            "duration = \"25h\"",
            "duration",
            "24h",
        ),
        // A latency of 18446744073 s.
        (
            "latency = \"5ms\"",
            "latency = \"18446744073s\"",
            "latency = \"18446744073s\"",
            "downstream.latency",
            "24h",
        ),
        // A latency longer than the run.
        (
            "latency = \"5ms\"",
            "latency = \"1h\"",
            "latency = \"1h\"",
            "downstream.latency",
            "duration = 3s",
        ),
        (
            "latency = \"150ms\"",
            "latency = \"10s\"",
            "latency = \"10s\"",
            "downstream.faults.latency",
            "duration = 3s",
        ),
        // A rate above the documented limit.
        ("rate = 50.0", "rate = 2e6", "rate = 2e6", "rate", "1000000"),
        (
            "rate = 50.0",
            "rate = 900000.0",
            "rate = 900000.0",
            "rate",
            "2000000 requests",
        ),
        // A negative duration: not "unknown unit".
        (
            "duration = \"3s\"",
            "duration = \"-3s\"",
            "duration = \"-3s\"",
            "duration",
            "negative",
        ),
    ];
    for (from, to, line_start, key, limit) in cases {
        let text = base().replacen(from, to, 1);
        assert_ne!(text, base(), "{from}");
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with(line_start))
            .unwrap()
            + 1;
        let e = error_of(&text);
        assert_eq!(e.file, "x.toml");
        assert_eq!(e.key.as_deref(), Some(key), "{to}: {e}");
        assert_eq!(e.line, Some(line), "{to}: {e}");
        assert!(e.message.contains(limit), "{to}: {e}");
        assert!(!e.message.contains("unknown unit"), "{to}: {e}");
    }
}

fn lab() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_fusebox-lab"))
}

/// The binary: a bad scenario file or `--param` is exit code 2, with one
/// line naming the file, the line and the key.
#[test]
fn bad_input_is_exit_2_naming_file_line_and_key() {
    let dir = std::env::temp_dir().join(format!("fusebox-lab-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "duration = \"3s\"",
            "duration = \"-3s\"",
            ":5: key `duration`: ",
        ),
        (
            "from = \"500ms\"",
            "from = \"100s\"",
            ":14: key `downstream.faults.from`: ",
        ),
        ("rate = 50.0", "rate = 2e6", ":6: key `rate`: "),
    ];
    for (k, (from, to, want)) in cases.into_iter().enumerate() {
        let path = dir.join(format!("bad{k}.toml"));
        std::fs::write(&path, base().replacen(from, to, 1)).unwrap();
        let out = lab()
            .args(["run", "--clock", "virtual", "-q"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{to}: {stderr}");
        assert!(
            stderr.contains(&format!("{}{want}", path.display())),
            "{to}: {stderr}"
        );
    }
    // A swept rate above the limit names the rate's limit, not another one.
    let path = dir.join("ok.toml");
    std::fs::write(&path, base()).unwrap();
    let out = lab()
        .args(["sweep", "-q"])
        .arg(&path)
        .args(["--param", "rate=10..1e9:1e8"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    assert!(stderr.contains("key `rate`"), "{stderr}");
    assert!(stderr.contains("at most 1000000"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_articles_breaker_is_checked_by_the_librarys_validation() {
    // Before, `seed` and the peers accepted an open period of zero.
    let text = base().replacen("open_for = \"500ms\"", "open_for = \"0s\"", 1);
    assert_ne!(text, base(), "the seed strategy sets open_for = \"500ms\"");
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.open_for"), "{e}");
    assert!(e.message.contains("must be above zero"), "{e}");
}

/// The article's scenario as a fleet: `[fleet]` with `fleet_keys`, and
/// `fault_keys` added to its fault.
fn fleet_text(fleet_keys: &str, fault_keys: &str) -> String {
    base()
        .replace(
            "[downstream]",
            &format!("[fleet]\n{fleet_keys}\n\n[downstream]"),
        )
        .replace(
            "outcome = \"error\"",
            &format!("outcome = \"error\"\n{fault_keys}"),
        )
}

fn line_of(text: &str, prefix: &str) -> usize {
    text.lines().position(|l| l.starts_with(prefix)).unwrap() + 1
}

#[test]
fn fleet_keys_load() {
    let text = fleet_text(
        "replicas = 4\nsharing = \"fleet\"\nquorum = 2\nsync_every = \"250ms\"\npropagation = \"2ms\"",
        "replicas = [3]",
    );
    let sc = Scenario::parse("x.toml", &text).unwrap();
    let f = sc.fleet.as_ref().unwrap();
    assert_eq!((f.replicas, f.quorum, &f.redis), (4, 2, &None));
    let with = |redis: &str| {
        let t = fleet_text(
            &format!("replicas = 2\nsharing = \"fleet\"\nredis = {redis:?}"),
            "",
        );
        Scenario::parse("x.toml", &t).unwrap().fleet.unwrap().redis
    };
    assert_eq!(with("local"), Some(Redis::Local));
    assert_eq!(
        with("redis://127.0.0.1:7000"),
        Some(Redis::Url("redis://127.0.0.1:7000".into()))
    );
    assert_eq!(f.sync_every, Duration::from_millis(250));
    assert_eq!(f.propagation, Duration::from_millis(2));
    assert!(sc.shares_trips());
    let fault = &sc.downstream.faults[0];
    assert!(fault.hits(2) && !fault.hits(0) && !fault.hits(3));
    assert_eq!(sc.replica_of(6), 2);
}

#[test]
fn bad_fleet_keys_name_file_line_and_key() {
    let ok = "replicas = 4\nsharing = \"fleet\"";
    let cases: &[(String, &str, &str, &str)] = &[
        (
            fleet_text("replicas = 0\nsharing = \"fleet\"", ""),
            "replicas = 0",
            "fleet.replicas",
            "out of range",
        ),
        (
            fleet_text("replicas = 4\nsharing = \"all\"", ""),
            "sharing",
            "fleet.sharing",
            "not one of",
        ),
        (
            fleet_text(&format!("{ok}\nquorum = 5"), ""),
            "quorum",
            "fleet.quorum",
            "1..=4",
        ),
        (
            fleet_text(&format!("{ok}\nsync_every = \"0s\""), ""),
            "sync_every",
            "fleet.sync_every",
            "> 0",
        ),
        (
            fleet_text(&format!("{ok}\npropagation = \"9s\""), ""),
            "propagation",
            "fleet.propagation",
            "longer than the run",
        ),
        (
            fleet_text(&format!("{ok}\nredis = \"127.0.0.1:6379\""), ""),
            "redis",
            "fleet.redis",
            "redis://HOST:PORT",
        ),
        (
            fleet_text("replicas = 4\nsharing = \"none\"\nredis = \"local\"", ""),
            "redis",
            "fleet.redis",
            "shares nothing",
        ),
        (
            fleet_text(ok, "")
                .replace("outcome = \"error\"", "outcome = \"slow\"")
                .replace("latency = \"150ms\"", "latency = \"1ms\""),
            "latency = \"1ms\"",
            "downstream.faults.latency",
            "below the healthy latency",
        ),
        (
            fleet_text(ok, "").replace("outcome = \"error\"", "outcome = \"resets\""),
            "outcome",
            "downstream.faults.outcome",
            "\"reset\", \"slow\"",
        ),
        (
            fleet_text(&format!("{ok}\nquroum = 1"), ""),
            "quroum",
            "quroum",
            "unknown field",
        ),
        (
            fleet_text(ok, "replicas = [5]"),
            "replicas = [5]",
            "downstream.faults.replicas",
            "replica 5 is out of range",
        ),
        (
            fleet_text(ok, "replicas = []"),
            "replicas = []",
            "downstream.faults.replicas",
            "at least one",
        ),
        (
            base().replace("outcome = \"error\"", "outcome = \"error\"\nreplicas = [1]"),
            "replicas = [1]",
            "downstream.faults.replicas",
            "needs a [fleet]",
        ),
        (
            {
                // The fusebox strategy (the last) with a backoff for open_for.
                let t = fleet_text(ok, "");
                let at = t.rfind("open_for = \"500ms\"").unwrap();
                format!(
                    "{}open_backoff = {{ initial = \"1s\", factor = 2.0, max = \"4s\" }}{}",
                    &t[..at],
                    &t[at + "open_for = \"500ms\"".len()..]
                )
            },
            "[[strategy]]",
            "strategy",
            "fixed open period",
        ),
    ];
    for (text, prefix, key, message) in cases {
        let e = error_of(text);
        let want_line = if *prefix == "[[strategy]]" {
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.starts_with(prefix))
                .last()
                .unwrap()
                .0
                + 1
        } else {
            line_of(text, prefix)
        };
        assert_eq!(e.key.as_deref(), Some(*key), "{e}");
        assert_eq!(e.line, Some(want_line), "{e}");
        assert!(e.message.contains(message), "{e}");
    }
}

#[test]
fn http_transport_keys_load_and_bad_ones_are_named() {
    use fusebox_lab::scenario::{HttpConfig, Transport};
    let with = |keys: &str| base().replace("[downstream]", &format!("[downstream]\n{keys}"));
    let sc = Scenario::parse(
        "x.toml",
        &with("transport = \"http\"\npool_max_idle = 3\nconnect_timeout = \"250ms\"\npool_max = 2"),
    )
    .unwrap();
    assert_eq!(
        sc.downstream.transport,
        Transport::Http(HttpConfig {
            pool_max_idle: 3,
            connect_timeout: Duration::from_millis(250),
            pool_max: Some(2),
            overhead: Duration::ZERO,
        })
    );
    let cases = [
        (
            "transport = \"grpc\"",
            "transport",
            "downstream.transport",
            "not one of",
        ),
        (
            "pool_max_idle = 3",
            "pool_max_idle",
            "downstream.pool_max_idle",
            "needs transport",
        ),
        (
            "transport = \"http\"\npool_max_idle = -1",
            "pool_max_idle",
            "downstream.pool_max_idle",
            "out of range",
        ),
        (
            "transport = \"http\"\nconnect_timeout = \"0s\"",
            "connect_timeout",
            "downstream.connect_timeout",
            "> 0",
        ),
        (
            "pool_max = 4",
            "pool_max",
            "downstream.pool_max",
            "needs transport",
        ),
        (
            "transport = \"http\"\npool_max = 0",
            "pool_max",
            "downstream.pool_max",
            "out of range",
        ),
    ];
    for (keys, prefix, key, message) in cases {
        let text = with(keys);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
        assert_eq!(e.line, Some(line_of(&text, prefix)), "{e}");
        assert!(e.message.contains(message), "{e}");
    }
}

/// `[downstream] overhead`: an HTTP key, zero unless set, a duration of at
/// most 1 s; in virtual mode every call takes exactly that much longer
/// (its result unchanged), the client's timeout still cutting the sum.
#[test]
fn http_overhead_parses_defaults_to_zero_and_shifts_virtual_calls() {
    use fusebox_lab::engine::{self, Mode};
    use fusebox_lab::scenario::Transport;
    let with = |keys: &str| base().replace("[downstream]", &format!("[downstream]\n{keys}"));
    let http = Scenario::parse("x.toml", &with("transport = \"http\"")).unwrap();
    let over =
        Scenario::parse("x.toml", &with("transport = \"http\"\noverhead = \"2ms\"")).unwrap();
    let ms = Duration::from_millis;
    let Transport::Http(config) = http.downstream.transport else {
        panic!("not http: {:?}", http.downstream.transport)
    };
    assert_eq!(
        (config.overhead, http.downstream.overhead()),
        (Duration::ZERO, Duration::ZERO)
    );
    assert_eq!(over.downstream.overhead(), ms(2));
    let cases = [
        ("overhead = \"2ms\"", "needs transport"),
        ("transport = \"http\"\noverhead = \"-2ms\"", "negative"),
        ("transport = \"http\"\noverhead = \"fast\"", "fast"),
        ("transport = \"http\"\noverhead = 2", "must be a duration"),
        ("transport = \"http\"\noverhead = \"2s\"", "at most 1s"),
    ];
    for (keys, message) in cases {
        let text = with(keys);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some("downstream.overhead"), "{keys}: {e}");
        assert_eq!(e.line, Some(line_of(&text, "overhead")), "{keys}: {e}");
        assert!(e.message.contains(message), "{keys}: {e}");
    }

    // One strategy, no breaker: call for call, the same start, the same
    // result, and an end exactly 2 ms later (the fault's 150 ms calls and
    // the healthy 5 ms ones alike; the workers are never short of idle
    // ones at 50 req/s, so the starts do not move).
    let none = &http.strategies[0];
    let a = engine::run(&http, none, Mode::Virtual, None).unwrap();
    let b = engine::run(&over, &over.strategies[0], Mode::Virtual, None).unwrap();
    assert_eq!(a.calls.len(), b.calls.len());
    assert!(a.calls.iter().any(|c| !c.result.is_ok()));
    for (x, y) in a.calls.iter().zip(&b.calls) {
        assert_eq!(
            (x.request, x.start, x.result),
            (y.request, y.start, y.result)
        );
        assert_eq!(
            y.end - y.start,
            x.end - x.start + ms(2),
            "call at {:?}",
            x.start
        );
    }
    // Without the HTTP transport's key, virtual mode is as before.
    let plain = Scenario::parse("x.toml", &base()).unwrap();
    let p = engine::run(&plain, &plain.strategies[0], Mode::Virtual, None).unwrap();
    assert!(p
        .calls
        .iter()
        .zip(&a.calls)
        .all(|(x, y)| (x.start, x.end) == (y.start, y.end)));

    // The client's timeout cuts the sum: a 150 ms failure with 2 ms of
    // overhead under a 151 ms timeout times out at 151 ms; at 152 ms it
    // fails as before, 2 ms later.
    let timed = |t: &str| {
        let text = with("transport = \"http\"\noverhead = \"2ms\"").replacen(
            "[[strategy]]",
            &format!("[client]\ntimeout = \"{t}\"\n\n[[strategy]]"),
            1,
        );
        let sc = Scenario::parse("x.toml", &text).unwrap();
        let r = engine::run(&sc, &sc.strategies[0], Mode::Virtual, None).unwrap();
        let c = *r.calls.iter().find(|c| c.start == ms(500)).unwrap();
        (c.end - c.start, c.result)
    };
    use fusebox_lab::scenario::CallResult;
    assert_eq!(timed("151ms"), (ms(151), CallResult::Timeout));
    assert_eq!(timed("152ms"), (ms(152), CallResult::Error));

    // The virtual report's header says what it added; without it, nothing.
    let header = |sc: Scenario| {
        let r = fusebox_lab::report::ScenarioReport::run(sc, Mode::Virtual, None, |_| {}, || {})
            .unwrap();
        let text = fusebox_lab::report::table::render_scenario(&r);
        text.lines().next().unwrap().to_string()
    };
    assert!(header(over).contains("5ms healthy + 2ms HTTP overhead per call"));
    assert!(!header(http).contains("overhead"));
}

/// `outcome = "no_accept"`: over HTTP only, without a latency (the
/// connect timeout is its latency), and not with a hedge.
#[test]
fn a_no_accept_fault_and_its_bad_keys_are_named() {
    let no_accept = |text: &str| {
        text.replace("outcome = \"error\"", "outcome = \"no_accept\"")
            .replace(
                "latency = \"150ms\"        # a faulty call fails after this\n",
                "",
            )
    };
    let http = |text: String| text.replace("[downstream]", "[downstream]\ntransport = \"http\"");
    let sc = Scenario::parse("x.toml", &http(no_accept(&base()))).unwrap();
    assert!(sc.models_pool());
    assert!(sc
        .downstream
        .refuses_connections(0, Duration::from_millis(600)));
    // A connection's fault: calls on a connection are healthy.
    assert!(sc.downstream.fault_at(Duration::from_millis(600)).is_none());

    let text = no_accept(&base());
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("downstream.faults.outcome"), "{e}");
    assert_eq!(
        e.line,
        Some(line_of(&text, "outcome = \"no_accept\"")),
        "{e}"
    );
    assert!(e.message.contains("transport = \"http\""), "{e}");

    let text = http(base().replace("outcome = \"error\"", "outcome = \"no_accept\""));
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("downstream.faults.latency"), "{e}");
    assert_eq!(e.line, Some(line_of(&text, "latency = \"150ms\"")), "{e}");
    assert!(e.message.contains("connect_timeout"), "{e}");

    let text = http(base()).replace("[downstream]", "[downstream]\npool_max = 4")
        + "\n[[strategy]]\nname = \"hedged\"\nkind = \"fusebox\"\nhedge = { delay = \"10ms\" }\n";
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.hedge"), "{e}");
    assert!(e.message.contains("pool_max"), "{e}");
}

#[test]
fn a_down_fault_is_instant_and_hits_every_replica() {
    let text = base().replace("outcome = \"error\"", "outcome = \"down\"");
    let sc = Scenario::parse("x.toml", &text).unwrap();
    let plan = sc.downstream.plan(Duration::from_millis(600), None);
    assert_eq!(plan.duration, Duration::ZERO);
    assert_eq!(plan.result, fusebox_lab::scenario::CallResult::Error);
    let text = fleet_text("replicas = 2\nsharing = \"none\"", "replicas = [1]")
        .replace("outcome = \"error\"", "outcome = \"down\"");
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("downstream.faults.replicas"));
    assert_eq!(e.line, Some(line_of(&text, "replicas = [1]")));
    assert!(e.message.contains("every replica"), "{e}");
}

/// `[downstream] server`'s link keys, `[request]` and a strategy's own
/// `timeout`: what loads, and each bad value named by its key and line.
#[test]
fn link_request_and_timeout_keys_load_and_bad_ones_are_named() {
    // A server takes capacity faults only: the base's error fault becomes one.
    let server = |keys: &str| {
        base()
            .replace(
                "latency = \"5ms\"",
                &format!(
                    "latency = \"5ms\"\nserver = {{ workers = 100, p90 = \"10ms\", p99 = \"10ms\"{keys} }}"
                ),
            )
            .replace(
                "latency = \"150ms\"        # a faulty call fails after this\noutcome = \"error\"",
                "outcome = \"capacity\"\nworkers = 50",
            )
    };
    let sc = Scenario::parse(
        "x.toml",
        &server(", latency_per_inflight = 0.5, knee = 10, knee_exp = 1.1"),
    )
    .unwrap();
    let s = sc.downstream.server.unwrap();
    assert_eq!(s.latency_per_inflight, Some(0.5));
    assert_eq!(s.knee.map(|k| (k.start, k.exp)), Some((10, 1.1)));
    for (keys, key) in [
        (
            ", latency_per_inflight = -1",
            "downstream.server.latency_per_inflight",
        ),
        (
            ", latency_per_inflight = \"x\"",
            "downstream.server.latency_per_inflight",
        ),
        (", knee = 10", "downstream.server.knee_exp"),
        (", knee_exp = 1.1", "downstream.server.knee"),
        (", knee = 0, knee_exp = 1.1", "downstream.server.knee"),
        (", knee = 10, knee_exp = 0.5", "downstream.server.knee_exp"),
    ] {
        let text = server(keys);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{keys}: {e}");
        assert_eq!(e.line, Some(line_of(&text, "server")), "{keys}: {e}");
    }

    let request = |keys: &str| {
        base().replace(
            "[downstream]",
            &format!("[request]\n{keys}\n\n[downstream]"),
        )
    };
    let sc = Scenario::parse("x.toml", &request("critical = \"30ms\"\ndeadline = \"1s\"")).unwrap();
    assert_eq!(sc.request.critical, Duration::from_millis(30));
    assert_eq!(sc.request.deadline, Some(Duration::from_secs(1)));
    assert_eq!(Scenario::embedded()[0].request.critical, Duration::ZERO);
    for (keys, key, at) in [
        ("deadline = \"0s\"", "request.deadline", "deadline"),
        ("deadline = \"4s\"", "request.deadline", "deadline"),
        ("critical = \"4s\"", "request.critical", "critical"),
        // A value of the wrong type or an unknown key: named as written.
        ("critical = 3", "critical", "critical"),
        ("late = \"1s\"", "late", "late"),
    ] {
        let text = request(keys);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{keys}: {e}");
        assert_eq!(e.line, Some(line_of(&text, at)), "{keys}: {e}");
    }

    let timeout = |v: &str| {
        base().replace(
            "kind = \"none\"",
            &format!("kind = \"none\"\ntimeout = {v}"),
        )
    };
    let sc = Scenario::parse("x.toml", &timeout("\"250ms\"")).unwrap();
    assert_eq!(sc.strategies[0].timeout, Some(Duration::from_millis(250)));
    assert_eq!(sc.strategies[1].timeout, None);
    for v in ["\"0s\"", "250", "\"soon\""] {
        let text = timeout(v);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some("strategy.timeout"), "{v}: {e}");
        assert_eq!(e.line, Some(line_of(&text, "timeout")), "{v}: {e}");
    }
}

/// `retry_budget` takes the settings of the library's `RetryBudget`,
/// checked by its builder, with the same error shape as `throttle`.
#[test]
fn retry_budget_keys_are_the_librarys_and_checked_by_it() {
    let sc = Scenario::parse(
        "x.toml",
        &with("retry_budget = { ratio = 0.1, min_per_second = 1, window = \"5s\" }"),
    )
    .unwrap();
    let b = sc.strategies[2].retry_budget.unwrap();
    assert_eq!(
        (b.ratio, b.min_per_second, b.window),
        (Some(0.1), Some(1), Some(Duration::from_secs(5)))
    );
    assert_eq!(sc.strategies[1].retry_budget, None);
    let cases = [
        (
            "retry_budget = { ratio = -0.5 }",
            "strategy.retry_budget.ratio",
            ">= 0",
        ),
        (
            "retry_budget = { ratio = \"10%\" }",
            "strategy.retry_budget.ratio",
            "such as 0.1",
        ),
        (
            "retry_budget = { min_per_second = -1 }",
            "strategy.retry_budget.min_per_second",
            "whole number",
        ),
        (
            "retry_budget = { window = \"1ms\" }",
            "strategy.retry_budget.window",
            "at least 10ms",
        ),
        (
            "retry_budget = { window = 10 }",
            "strategy.retry_budget.window",
            "duration",
        ),
        (
            "retry_budget = { ratoi = 0.1 }",
            "strategy.retry_budget.ratoi",
            "unknown key",
        ),
        (
            "retry_budget = 0.1",
            "strategy.retry_budget",
            "must be a table",
        ),
    ];
    assert_key_errors(&cases);
    let text = base().replacen(
        "kind = \"none\"",
        "kind = \"none\"\nretry_budget = { ratio = 0.1 }",
        1,
    );
    let e = error_of(&text);
    assert_eq!(e.key.as_deref(), Some("strategy.retry_budget"), "{e}");
    assert!(
        e.message
            .contains("a retry budget goes with kind = \"fusebox\""),
        "{e}"
    );
}

/// A retry budget of nothing makes no retry, one of 10 % of the requests
/// (and no floor) about a tenth of them, where `[client] retries` alone
/// retries every failure.
#[test]
fn a_retry_budget_limits_the_clients_retries() {
    let text = |budget: &str| {
        base()
            .replace(
                "[[strategy]]\nname = \"no breaker\"",
                "[client]\nretries = 3\n\n[[strategy]]\nname = \"no breaker\"",
            )
            .replace(
                "consecutive_failures = 5\nopen_for = \"500ms\"\nhalf_open_probes = 1",
                &format!("mode = \"off\"\n{budget}"),
            )
    };
    let retries = |budget: &str, strategy: &str| {
        let sc = Scenario::parse("x.toml", &text(budget)).unwrap();
        let spec = sc.strategies.iter().find(|s| s.name == strategy).unwrap();
        let run =
            fusebox_lab::engine::run(&sc, spec, fusebox_lab::engine::Mode::Virtual, None).unwrap();
        let made = run.requests.iter().filter(|r| r.attempts > 0).count();
        run.calls.len() - made
    };
    // Without a budget (and with the breaker off) the fusebox strategy
    // retries as the one without a breaker does.
    let all = retries("", "fusebox");
    assert_eq!(all, retries("", "no breaker"));
    assert!(all > 30, "{all}");
    let none = retries(
        "retry_budget = { ratio = 0.0, min_per_second = 0 }",
        "fusebox",
    );
    assert_eq!(none, 0);
    // 150 requests deposit 15 retries in all.
    let tenth = retries(
        "retry_budget = { ratio = 0.1, min_per_second = 0 }",
        "fusebox",
    );
    assert!((1..=15).contains(&tenth), "{tenth} of {all}");
    assert!(tenth < all, "{tenth} of {all}");
}

/// `outcome = "capacity"` takes workers away from a `[downstream] server`
/// for a while: what loads, and each misuse named by its key and line.
#[test]
fn a_capacity_fault_takes_workers_from_the_server() {
    let server = "latency = \"5ms\"\nserver = { workers = 4, p90 = \"10ms\", p99 = \"20ms\" }";
    let capacity =
        "latency = \"150ms\"        # a faulty call fails after this\noutcome = \"error\"";
    let text = |server_keys: &str, fault: &str| {
        base()
            .replacen("latency = \"5ms\"", server_keys, 1)
            .replacen(capacity, fault, 1)
    };
    let sc = Scenario::parse(
        "x.toml",
        &text(server, "outcome = \"capacity\"\nworkers = 2"),
    )
    .unwrap();
    let f = &sc.downstream.faults[0];
    assert_eq!(
        f.outcome,
        fusebox_lab::scenario::FaultOutcome::Capacity { workers: 2 }
    );
    assert_eq!(
        sc.fault_span(),
        Some((Duration::from_millis(500), Duration::from_millis(1500)))
    );
    // Real mode refuses the server, and says so of its capacity faults.
    let e = fusebox_lab::engine::check(&sc, fusebox_lab::engine::Mode::Real).unwrap_err();
    assert!(
        e.contains("outcome = \"capacity\"") && e.contains("virtual mode only"),
        "{e}"
    );
    for (server_keys, fault, key, at, says) in [
        (
            "latency = \"5ms\"",
            "outcome = \"capacity\"\nworkers = 2",
            "downstream.faults.outcome",
            "outcome",
            "needs [downstream] server",
        ),
        (
            server,
            "outcome = \"capacity\"\nworkers = 5",
            "downstream.faults.workers",
            "workers = 5",
            "more than the server has",
        ),
        (
            server,
            "outcome = \"capacity\"\nworkers = -1",
            "downstream.faults.workers",
            "workers = -1",
            "out of range",
        ),
        (
            server,
            "outcome = \"capacity\"",
            "downstream.faults.workers",
            "[[downstream.faults]]",
            "missing",
        ),
        (
            server,
            "outcome = \"capacity\"\nworkers = 2\nlatency = \"1s\"",
            "downstream.faults.latency",
            "latency = \"1s\"",
            "leave latency out",
        ),
        (
            server,
            "outcome = \"error\"\nlatency = \"150ms\"\nworkers = 2",
            "downstream.faults.workers",
            "workers = 2",
            "is for outcome = \"capacity\"",
        ),
        (
            "latency = \"5ms\"",
            "outcome = \"error\"",
            "downstream.faults.latency",
            "[[downstream.faults]]",
            "needs latency",
        ),
        (
            server,
            "outcome = \"error\"\nlatency = \"150ms\"",
            "downstream.faults.outcome",
            "outcome",
            "only outcome = \"capacity\" applies",
        ),
    ] {
        let text = text(server_keys, fault);
        let e = error_of(&text);
        assert_eq!(e.key.as_deref(), Some(key), "{fault}: {e}");
        assert!(e.message.contains(says), "{fault}: {e}");
        assert_eq!(e.line, Some(line_of(&text, at)), "{fault}: {e}");
    }
}

//! The `http_standard` example (issue 13's storefront): its `/metrics` shows
//! series for every policy, and its protection stays within 30 lines of Rust
//! and 12 of TOML.
#![cfg(all(
    feature = "reqwest",
    feature = "tower",
    feature = "config",
    feature = "prometheus",
    feature = "tracing"
))]

#[path = "../examples/http_standard.rs"]
mod example;

/// Lines between `// protection: KIND` and `// end protection`, without
/// blank lines and comments.
fn protection_lines(kind: &str) -> usize {
    let source = include_str!("../examples/http_standard.rs");
    let start = format!("// protection: {kind}");
    let mut counting = false;
    let mut n = 0;
    for line in source.lines().map(str::trim) {
        if line == start {
            counting = true;
        } else if line == "// end protection" {
            counting = false;
        } else if counting && !line.is_empty() && !line.starts_with("//") {
            n += 1;
        }
    }
    n
}

#[test]
fn the_protection_is_at_most_30_lines_of_rust_and_12_of_toml() {
    let rust = protection_lines("rust");
    // The TOML block: the lines of the string, without the two `const` lines.
    let toml = protection_lines("toml") - 2;
    assert!(rust > 0 && rust <= 30, "{rust} lines of Rust");
    assert!(toml > 0 && toml <= 12, "{toml} lines of TOML");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_series_for_every_policy() {
    let (answers, metrics) = example::run().await.expect("the example runs");
    // Flaky phase: retries and the attempt timeout hide the 503s and hangs.
    assert!(
        answers[..12].iter().all(|a| a.ends_with("in stock")),
        "{answers:#?}"
    );
    // Down phase: the fallback answers, and the breaker opens.
    assert!(answers[12..].iter().all(|a| a.contains("stock unknown")));
    assert!(answers
        .last()
        .is_some_and(|a| a.contains("rejected by breaker")));

    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no series {series} in\n{metrics}"))
    };
    let n = r#"{name="inventory"}"#;
    // breaker
    assert_eq!(
        value(r#"fusebox_circuit_state{name="inventory",state="open"}"#),
        1.0
    );
    assert!(value(r#"fusebox_transitions_total{name="inventory",from="closed",to="open"}"#) >= 1.0);
    // retry
    assert_eq!(value(&format!("fusebox_policy_calls_total{n}")), 24.0);
    assert!(value(&format!("fusebox_retries_total{n}")) >= 1.0);
    assert!(value(&format!("fusebox_retry_attempts_total{n}")) > 24.0);
    value(&format!("fusebox_retry_budget_refused_total{n}"));
    // timeouts: the hanging answers
    assert!(value(&format!("fusebox_timeouts_total{n}")) >= 1.0);
    // bulkhead
    assert_eq!(value(&format!("fusebox_bulkhead_limit{n}")), 16.0);
    value(&format!("fusebox_bulkhead_in_use{n}"));
    value(&format!("fusebox_bulkhead_waiting{n}"));
    value(&format!("fusebox_bulkhead_rejections_total{n}"));
    // fallbacks by cause
    assert!(value(r#"fusebox_fallbacks_total{name="inventory",cause="rejected"}"#) >= 1.0);
    assert!(value(r#"fusebox_fallbacks_total{name="inventory",cause="failed"}"#) >= 1.0);
    value(r#"fusebox_fallbacks_total{name="inventory",cause="bulkhead_full"}"#);
    value(r#"fusebox_fallbacks_total{name="inventory",cause="timed_out"}"#);
}

//! A real-mode run whose HTTP downstream cannot start is an error naming
//! the scenario and why, not a panic (its own test binary: the lab binary
//! it points at is set once per process).

use fusebox_lab::engine::{self, Mode};
use fusebox_lab::scenario::{self, Scenario};

#[test]
fn an_http_downstream_that_cannot_start_is_an_error() {
    engine::use_lab_binary("/nonexistent/fusebox-lab");
    let text = scenario::EMBEDDED[0].1.replace(
        "latency = \"5ms\"          # a healthy call succeeds after this",
        "latency = \"5ms\"\ntransport = \"http\"",
    );
    let sc = Scenario::parse("no-server.toml", &text).unwrap();
    let e = engine::run(&sc, &sc.strategies[0], Mode::Real, None).unwrap_err();
    assert!(
        e.contains("\"seed000-50rps\"") && e.contains("cannot start /nonexistent/fusebox-lab"),
        "{e}"
    );
}

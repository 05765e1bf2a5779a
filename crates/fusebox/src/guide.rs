//! The guide, a chapter per module: what each policy does, how to combine
//! them, and how to run them in a service. Each chapter is also a Markdown
//! file in the crate's `docs/` folder, and every Rust snippet in it is
//! compiled (and, unless it needs a server, run) by `cargo test`.
//!
//! - [`breaker`]: trip rules, open and half-open, generations, permits,
//!   manual control, concurrency.
//! - [`policies`]: bulkhead, rate limiter, modes, timeout, retry, fallback,
//!   pipeline; the adaptive limit, adaptive throttling, hedging.
//! - [`tower`]: every policy as tower middleware.
//! - [`http`]: the HTTP presets and the standard stack.
//! - [`registry`]: named policies from TOML or YAML files, reloaded live.
//! - [`observability`]: Prometheus series (also through the `metrics`
//!   facade or OpenTelemetry), tracing, alerts, `/metrics` with axum.
//! - [`fleet`]: replicas sharing their breakers through Redis.
//! - [`dashboard`]: the live page, exposing it safely, Grafana.
//!
//! A chapter whose snippets need a cargo feature shows only a line naming
//! the features unless they are on (docs.rs builds with every feature).
//!
//! Which policy suits which dependency is on the [crate root](crate#choosing-a-policy).

/// Declares a chapter: its docs are `docs/FILE.md` when `features` are on.
macro_rules! chapter {
    ($(#[$meta:meta])* $name:ident, $file:literal, [$($feature:literal),*]) => {
        $(#[$meta])*
        #[cfg_attr(all($(feature = $feature),*), doc = include_str!(concat!("../docs/", $file)))]
        #[cfg_attr(
            not(all($(feature = $feature),*)),
            doc = concat!(
                "This chapter needs the features ", $("`", $feature, "` ",)* "(docs.rs builds with every \
                 feature); its text is `docs/", $file, "` in the package."
            )
        )]
        pub mod $name {}
    };
}

chapter!(breaker, "breaker.md", []);
chapter!(policies, "policies.md", ["tokio"]);
chapter!(tower, "tower.md", ["tower", "tokio"]);
chapter!(http, "http.md", ["reqwest", "config"]);
chapter!(registry, "registry.md", ["config"]);
chapter!(
    observability,
    "observability.md",
    [
        "prometheus",
        "tracing",
        "config",
        "tokio",
        "metrics",
        "opentelemetry"
    ]
);
chapter!(fleet, "fleet.md", ["fleet"]);
chapter!(dashboard, "dashboard.md", ["dashboard"]);

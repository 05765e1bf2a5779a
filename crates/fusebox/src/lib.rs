//! fusebox keeps a service alive when what it depends on gets slow or dies.
//!
//! Its heart is a [`CircuitBreaker`]: it counts the failures of one
//! dependency, opens to fail fast instead of letting callers pile up behind a
//! sick dependency, lets a probe through after a cooldown, and closes when the
//! dependency is back. Time is read only through a [`Clock`], so every timing
//! rule is testable with a [`ManualClock`] instead of sleeps.
//!
//! Around it, each usable alone or composed in a [`Pipeline`] (outermost
//! first: fallback, retry, breaker, bulkhead, timeout):
//!
//! - [`Bulkhead`]: a limit on calls in flight to one dependency;
//! - [`timeout`](mod@timeout): an async deadline (feature `tokio`);
//! - [`Retry`]: backoff, jitter and a retry budget that never hammers an open breaker;
//! - [`Fallback`]: what to return instead, knowing why ([`Cause`]);
//! - `ratelimit::RateLimiter` (feature `ratelimit`): at most so many calls a
//!   second, direct or per key, on governor's GCRA.
//! - `limit::AdaptiveLimit` (feature `limit`): a concurrency limit that
//!   follows the dependency's latency (Vegas, Gradient2 or AIMD).
//! - `throttle::Throttle` (feature `throttle`): adaptive throttling, which
//!   refuses at random the share of calls a struggling backend would refuse
//!   anyway (the client-side throttling of Google's SRE book).
//!
//! The breaker, the bulkhead, the rate limiters, the adaptive limit and the throttle have a [`Mode`]: `enforce` (the default), `shadow` (decide
//! and report what it would have refused, but let every call run: how a new
//! breaker or limit is rolled out safely) or `off`; set in code (the
//! breaker, bulkhead and rate limiters also in a registry file) and
//! changeable live. Observers read any policy through
//! [`policy::Inspect`], and any refusal through [`policy::Refusal`].
//!
//! Integrations behind features: `tokio` (async waiting and timeouts),
//! `tower` (the same policies as tower middleware, in `fusebox::tower`),
//! `tracing`, `prometheus` (`fusebox::metrics`), `metrics` (the same series
//! through the `metrics` facade, `fusebox::facade`), `opentelemetry`
//! (`fusebox::otel`), `config` (a
//! [`registry`] of named breakers loaded from TOML or YAML), `http` (HTTP
//! presets and the standard stack, `fusebox::http`; `reqwest` adds
//! `Standard::send_bytes`; `json` adds `send_json`), `dashboard` (a live page of every breaker, an axum
//! `Router`), `fleet` (replicas sharing breaker state through Redis;
//! `fleet-tls` adds `rediss://`; `test-util` adds `fleet::LocalRedis`, a
//! throwaway `redis-server` for tests), `ratelimit` (rate limiters, on
//! `governor`), `limit` (the adaptive concurrency limit), `throttle` (adaptive throttling), `quanta` (on by default: a TSC clock, cheaper readings, see
//! [`MonotonicClock`]). With no
//! feature (`default-features = false`), fusebox depends on `arc-swap` alone (the breaker's live settings).
//!
//! The [`guide`] has a chapter per subject: the breaker's rules, the other
//! policies, tower, HTTP, registry files, observability, the fleet and the
//! dashboard.
//!
//! # A breaker's life
//!
//! Three failures in a row open the breaker; while open it fails fast; after
//! the cooldown it is half-open and lets one probe through; the probe
//! succeeds and the breaker closes.
//!
//! ```
//! use fusebox::{CircuitBreaker, Error, ManualClock, State};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let breaker = CircuitBreaker::builder()
//!     .consecutive_failures(3)
//!     .open_for(Duration::from_millis(150))
//!     .clock(clock.clone())
//!     .build()?;
//!
//! // fail, fail, fail -> OPEN
//! for _ in 0..3 {
//!     let r = breaker.call(|| Err::<(), _>("downstream timed out"));
//!     assert!(matches!(r, Err(Error::Inner(_))));
//! }
//! assert_eq!(breaker.state(), State::Open);
//!
//! // Fast-fail: the call is not even made.
//! let mut called = false;
//! let r = breaker.call(|| { called = true; Ok::<_, &str>(()) });
//! assert!(!called);
//! let rejected = r.unwrap_err().rejected().copied().unwrap();
//! assert_eq!(rejected.retry_after(), Some(Duration::from_millis(150)));
//!
//! // Cooldown -> HALF_OPEN: one probe may go through.
//! clock.advance(Duration::from_millis(150));
//! assert_eq!(breaker.state(), State::HalfOpen);
//!
//! // The probe succeeds -> CLOSED.
//! assert_eq!(breaker.call(|| Ok::<_, &str>("fresh data")).unwrap(), "fresh data");
//! assert_eq!(breaker.state(), State::Closed);
//! # Ok::<(), fusebox::ConfigError>(())
//! ```
//!
#![doc = include_str!("../docs/choosing.md")]
//!
//! # Names
//!
//! `use fusebox::prelude::*;` brings the policies, [`Cause`], the registry
//! and (with their features) the tower layers and the HTTP stack. The crate
//! root and `fusebox::tower` share no type name (tower's services stay in
//! their modules), so `use fusebox::*; use fusebox::tower::*;` is
//! unambiguous for every type; only the policy *modules* (`retry`,
//! `bulkhead`, `fallback`, `timeout`) exist on both sides: name those by
//! path (`fusebox::retry::Retry`).
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod breaker;
mod clock;
pub mod duration;
mod ext;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod facade;
pub mod policy;
mod stats;
mod sync;

pub mod alert;
pub mod bulkhead;
#[cfg(feature = "dashboard")]
#[cfg_attr(docsrs, doc(cfg(feature = "dashboard")))]
pub mod dashboard;
pub mod fallback;
#[cfg(feature = "fleet")]
#[cfg_attr(docsrs, doc(cfg(feature = "fleet")))]
pub mod fleet;
pub mod guide;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod hedge;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "limit")]
#[cfg_attr(docsrs, doc(cfg(feature = "limit")))]
pub mod limit;
#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub mod metrics;
#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
mod names;
pub mod observe;
#[cfg(feature = "opentelemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "opentelemetry")))]
pub mod otel;
pub mod pipeline;
pub mod prelude;
#[cfg(feature = "ratelimit")]
#[cfg_attr(docsrs, doc(cfg(feature = "ratelimit")))]
pub mod ratelimit;
pub mod registry;
pub mod retry;
#[cfg(feature = "throttle")]
#[cfg_attr(docsrs, doc(cfg(feature = "throttle")))]
pub mod throttle;
pub mod timeout;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub mod trace;
#[cfg(any(feature = "prometheus", feature = "metrics", feature = "opentelemetry"))]
mod track;

/// Breaker sets: one breaker per key with a bounded number of keys
/// ([`BreakerSet`]), and outlier detection across the keys ([`Outliers`](set::Outliers)).
pub mod set {
    pub use crate::breaker::set::{
        BreakerSet, Outliers, SetBuilder, DEFAULT_IDLE_AFTER, DEFAULT_MAX_KEYS,
    };
}

pub use breaker::set::BreakerSet;
pub use breaker::{
    Backoff, BreakerConfig, Builder, CallEvent, CircuitBreaker, ConfigError, Error, FailureBurst,
    Listener, Outcome, Permit, Reason, Rejected, Snapshot, State, Timing, Transition,
};
pub use bulkhead::{Bulkhead, BulkheadFull, BulkheadPermit, BulkheadSnapshot};
pub use clock::{Clock, ManualClock, MonotonicClock};
pub use ext::{AsyncGuard, AsyncGuardFn, Guard, GuardedAsyncFn, GuardedFn, GuardedFuture};
pub use fallback::Fallback;
pub use pipeline::{BoxPipeline, Pipeline, PipelineError};
pub use policy::{Cause, Mode, PolicyError, Refusal};
pub use retry::Retry;
pub use stats::{PolicyStats, StatsSnapshot};
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use timeout::{timeout, Timeout};
pub use timeout::{Elapsed, TimeoutError};

/// The README's snippets, compiled and run as doctests (they need these
/// features; `cargo test --all-features` has them).
#[cfg(all(doctest, feature = "reqwest", feature = "tokio"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

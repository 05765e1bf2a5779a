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
//!
//! The breaker, the bulkhead and the rate limiters have a [`Mode`]: `enforce` (the default), `shadow` (decide
//! and report what it would have refused, but let every call run: how a new
//! breaker or limit is rolled out safely) or `off`; set in code or in a
//! registry file and changeable live. Observers read any policy through
//! [`policy::Inspect`], and any refusal through [`policy::Refusal`].
//!
//! Integrations behind features: `tokio` (async waiting and timeouts),
//! `tower` (the same policies as tower middleware, in `fusebox::tower`),
//! `tracing`, `prometheus` (`fusebox::metrics`), `config` (a
//! [`registry`] of named breakers loaded from TOML or YAML), `http` (HTTP
//! presets and the standard stack, `fusebox::http`; `reqwest` adds
//! `Standard::send`), `dashboard` (a live page of every breaker, an axum
//! `Router`), `fleet` (replicas sharing breaker state through Redis;
//! `fleet-tls` adds `rediss://`; `test-util` adds `fleet::LocalRedis`, a
//! throwaway `redis-server` for tests), `ratelimit` (rate limiters, on
//! `governor`), `limit` (the adaptive concurrency limit), `quanta` (a TSC clock: cheaper readings, see
//! [`MonotonicClock`]). With no
//! feature, fusebox depends on `arc-swap` alone (the breaker's live settings).
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
//! # Choosing a policy
//!
//! The lab (`crates/fusebox-lab`) measures what each choice buys and costs;
//! every row links the scenario that shows it, and the figures come from the
//! command in the header.
//!
//! | your dependency... | use | measured in the lab (`cargo run --release -- run --clock virtual crates/fusebox-lab/scenarios/NAME.toml`) |
//! |---|---|---|
//! | can hang | a **timeout** on every call, and a **breaker** that counts timeouts | [`hang-timeout.toml`](https://example.invalid/fusebox/blob/main/crates/fusebox-lab/scenarios/hang-timeout.toml): 20 req/s, calls hang 1–3 s, 1 s timeout. Without a breaker, requests arriving during the fault wait a median 1000 ms (max 1.6 s) and 31 finish after the fault is over; with one, 5 timeouts trip it, the queue drains by fast-failing: median 275 ms, 4 late. The price: a probe into a hanging dependency takes the full timeout, so recovery lags 1.2 s. |
//! | fails outright (an outage) | **`consecutive_failures`** | [`seed000-50rps.toml`](https://example.invalid/fusebox/blob/main/crates/fusebox-lab/scenarios/seed000-50rps.toml): 5 failures in a row trip it within 0.73 s of the outage. Because verdicts from calls admitted before the trip are ignored, the open period counts from the trip: fusebox probes at 1.24 s instead of the article's 1.38 s and serves 80 requests instead of 73, with the same 13 downstream errors. |
//! | flaps (fails some calls, serves others) | **`failure_rate`** over a `count_window` or `time_window`, with `min_calls` | [`rate-vs-consecutive.toml`](https://example.invalid/fusebox/blob/main/crates/fusebox-lab/scenarios/rate-vs-consecutive.toml): 3 failures then 2 successes every 100 ms. Consecutive breakers never see 5 in a row and let all 30 flapping failures through; `failure_rate = 0.5` over 20 calls trips at 0.95 s (33 downstream errors instead of 43), over 1 s at 1.35 s (41). It costs successes the flapping dependency would have served (85 and 77 vs 100): choose it when a failed call costs more than a lost success. |
//! | needs testing before traffic returns | **one** half-open probe (`half_open_probes = 1`, the default) | [`probes-1-vs-3.toml`](https://example.invalid/fusebox/blob/main/crates/fusebox-lab/scenarios/probes-1-vs-3.toml): three probes send three failing calls per failed probe (21 downstream errors vs 15) and recover no faster (lag 0.34 s either way); `successes_to_close = 3` adds 20 ms. |
//! | is worth retrying | **retry** only **behind a breaker**, with a **budget** | [`retries.toml`](https://example.invalid/fusebox/blob/main/crates/fusebox-lab/scenarios/retries.toml): 2 retries without a breaker send 187 calls instead of 150 and hold workers 3x as long; the pool saturates and fault-time latency goes from 150 ms to a median 450 ms (max 740 ms). With a breaker: 87 calls, as without retries. `sweep ... --param rate=10..50:10`: 26 calls during the fault at 10 req/s and 47 at 20 req/s (10 and 20 without retries); the breaker keeps it at 8–10. |
//! | speaks HTTP | **`http::Standard`** (feature `http`): total timeout, retry with budget, breaker, bulkhead, attempt timeout | the presets above in one expression: 5xx/408/429 and transport errors are failures, other 4xx are not; idempotent requests retried with a budget, `Retry-After` honoured. |
//!
//! What the lab has not measured is not claimed here: the bulkhead's size and
//! the timeout's length depend on your latency distribution and worker pool
//! (a bulkhead limit near the dependency's capacity, a timeout above its p99).
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
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "limit")]
#[cfg_attr(docsrs, doc(cfg(feature = "limit")))]
pub mod limit;
#[cfg(feature = "prometheus")]
#[cfg_attr(docsrs, doc(cfg(feature = "prometheus")))]
pub mod metrics;
pub mod observe;
pub mod pipeline;
pub mod prelude;
#[cfg(feature = "ratelimit")]
#[cfg_attr(docsrs, doc(cfg(feature = "ratelimit")))]
pub mod ratelimit;
pub mod registry;
pub mod retry;
pub mod timeout;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub mod trace;

pub use breaker::{
    Backoff, BreakerConfig, Builder, CallEvent, CircuitBreaker, ConfigError, Error, Listener,
    Outcome, Permit, Reason, Rejected, Snapshot, State, Transition,
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

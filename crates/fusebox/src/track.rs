//! What every policy-reporting observer (Prometheus [`Metrics`](crate::metrics::Metrics),
//! the `metrics` facade, OpenTelemetry) does with a [`Pipeline`] or an HTTP
//! `Standard` stack: one decomposition into policies, counters and a breaker,
//! written once over the four things each observer knows how to track.

use crate::observe::Tags;
use crate::pipeline::Stage;
use crate::policy::Inspect;
use crate::retry::RetryBudget;
use crate::{CircuitBreaker, Pipeline, PolicyStats};
use std::sync::Arc;
use std::time::Duration;

/// An observer's own tracking, which [`pipeline`] and [`standard`] decompose into.
pub(crate) trait Track {
    fn policy(&self, name: &str, policy: Arc<dyn Inspect>);
    fn stats(&self, name: &str, stats: &PolicyStats, budget: Option<&RetryBudget>);
    // Only a standard stack's breaker is tracked through here.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn breaker(&self, name: &str, tags: &Tags, breaker: &CircuitBreaker);
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn is_tracked(&self, name: &str) -> bool;
}

/// `pipeline`, with its counters tracked under `name` (its own
/// [`PolicyStats`] if it has some, new ones otherwise), its retry budget's
/// refusals and its policies' figures.
pub(crate) fn pipeline<T, B, P, F, C>(
    observer: &T,
    name: &str,
    pipeline: Pipeline<B, P, F, C>,
) -> Pipeline<B, P, F, C>
where
    T: Track + ?Sized,
    B: Iterator<Item = Duration> + Clone,
{
    let stats = pipeline.stats().cloned().unwrap_or_default();
    let budget = pipeline.retry().and_then(|r| r.budget()).cloned();
    for policy in pipeline.stages().iter().filter_map(Stage::inspect) {
        observer.policy(name, policy);
    }
    #[cfg(feature = "tokio")]
    if let Some(hedge) = pipeline.hedge() {
        observer.policy(name, std::sync::Arc::new(hedge.clone()));
    }
    observer.stats(name, &stats, budget.as_ref());
    pipeline.into_builder().stats(stats).build()
}

/// A standard stack's counters, budget, policies and (unless tracked
/// already) breaker, under its name.
#[cfg(feature = "http")]
pub(crate) fn standard<T: Track + ?Sized>(observer: &T, stack: &crate::http::Standard) {
    let name = stack.name();
    observer.stats(name, stack.stats(), stack.retry().budget());
    for policy in stack.stages().iter().filter_map(Stage::inspect) {
        observer.policy(name, policy);
    }
    if let Some(set) = stack.breakers() {
        observer.policy(name, std::sync::Arc::new(set.clone()));
    }
    if !observer.is_tracked(name) {
        observer.breaker(name, &Tags::new(), stack.breaker());
    }
}

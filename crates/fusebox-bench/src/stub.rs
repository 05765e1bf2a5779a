//! TEMPORARY stand-in for the core breaker API until it lands on main.
#![allow(missing_docs, dead_code, clippy::all)]
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct CircuitBreaker(Arc<AtomicU32>, u32);
#[derive(Debug)]
pub struct Builder(u32);
#[derive(Debug)]
pub struct ConfigError;
#[derive(Debug)]
pub enum Error<E> { Rejected, Inner(E) }
impl<E> Error<E> { pub fn is_rejected(&self) -> bool { matches!(self, Error::Rejected) } }
impl CircuitBreaker {
    pub fn builder() -> Builder { Builder(5) }
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, Error<E>> {
        let c = self.0.load(Ordering::Acquire);
        if c >= self.1 { return Err(Error::Rejected); }
        match f() {
            Ok(v) => { if c != 0 { self.0.store(0, Ordering::Release); } Ok(v) }
            Err(e) => { self.0.fetch_add(1, Ordering::AcqRel); Err(Error::Inner(e)) }
        }
    }
}
impl Builder {
    pub fn open_for(self, _: Duration) -> Self { self }
    pub fn half_open_probes(self, _: u32) -> Self { self }
    pub fn successes_to_close(self, _: u32) -> Self { self }
    pub fn consecutive_failures(self, n: u32) -> Self { Builder(n) }
    pub fn failure_rate(self, _: f64) -> Self { self }
    pub fn count_window(self, _: usize) -> Self { self }
    pub fn time_window(self, _: Duration) -> Self { self }
    pub fn buckets(self, _: usize) -> Self { self }
    pub fn min_calls(self, _: u32) -> Self { self }
    pub fn slow_calls(self, _: Duration, _: f64) -> Self { self }
    pub fn build(self) -> Result<CircuitBreaker, ConfigError> { Ok(CircuitBreaker(Arc::new(AtomicU32::new(0)), self.0)) }
}

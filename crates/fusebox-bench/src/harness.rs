//! What one guarded call is, and how calls are timed.
//!
//! A [`Subject`] is one crate's breaker (or bulkhead), built once and shared.
//! Each timing thread asks it for its own [`Runner`] (a cheap handle: a clone
//! of the breaker, plus a current-thread tokio runtime for the tower-based
//! peers), then runs a batch of guarded calls in a monomorphic loop. The only
//! dynamic dispatch is one virtual call per batch.
//!
//! The guarded operation is the same for every crate: [`op`], a function that
//! returns `Ok(42)` or `Err(1)` at once, so what is measured is the guard.

use std::fmt;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// What a guarded call came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The guard admitted the call and it succeeded.
    Ok,
    /// The guard admitted the call and it failed.
    Failed,
    /// The guard rejected the call without running it.
    Rejected,
}

/// The guarded operation: succeeds with 42, or fails with 1.
#[inline(always)]
pub fn op(fail: bool) -> Result<u64, u64> {
    if black_box(fail) {
        Err(1)
    } else {
        Ok(black_box(42))
    }
}

/// Which calls fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Every call succeeds.
    AllOk,
    /// Every call fails (used to trip breakers).
    AllFail,
    /// A pseudo-random 20% of calls fail (xorshift, seeded per thread, so
    /// every crate sees the same sequence).
    Mixed20,
    /// A pseudo-random one call in `n` fails (1 in 100: a 1% background
    /// error rate; the same xorshift sequence for every crate).
    OneIn(u64),
}

impl Load {
    /// Whether the next call fails (drawing from `rng` for the mixed load).
    #[inline(always)]
    pub fn fails(self, rng: &mut Xorshift) -> bool {
        match self {
            Load::AllOk => false,
            Load::AllFail => true,
            Load::Mixed20 => rng.fail20(),
            Load::OneIn(n) => rng.one_in(n),
        }
    }
}

/// Tally of one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Admitted and succeeded.
    pub ok: u64,
    /// Admitted and failed.
    pub failed: u64,
    /// Rejected by the guard.
    pub rejected: u64,
}

impl Tally {
    /// Counts one verdict.
    #[inline(always)]
    pub fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Ok => self.ok += 1,
            Verdict::Failed => self.failed += 1,
            Verdict::Rejected => self.rejected += 1,
        }
    }

    /// Adds another tally.
    pub fn merge(&mut self, o: Tally) {
        self.ok += o.ok;
        self.failed += o.failed;
        self.rejected += o.rejected;
    }

    /// All calls counted.
    pub fn total(&self) -> u64 {
        self.ok + self.failed + self.rejected
    }
}

/// A batch: how long it took and what happened.
#[derive(Debug, Clone, Copy, Default)]
pub struct Batch {
    /// Time for the whole batch.
    pub elapsed: Duration,
    /// The verdicts.
    pub tally: Tally,
}

/// One thread's handle on a subject: runs batches of guarded calls.
pub trait Runner: Send {
    /// Runs `iters` guarded calls with failures per `load`, timing only the loop.
    fn run(&mut self, iters: u64, load: Load) -> Batch;
}

/// One crate's guard, built once, shared by the timing threads.
pub trait Subject: Send + Sync {
    /// A handle for one thread (shares the guard's state); `seed` seeds its
    /// failure sequence.
    fn runner(&self, seed: u64) -> Box<dyn Runner>;
}

/// A synchronous guard: one call at a time on a per-thread handle.
pub trait Guard: Send + 'static {
    /// One guarded call of [`op`]`(fail)`.
    fn call(&mut self, fail: bool) -> Verdict;
}

/// xorshift64: 20% failures without a shared RNG.
#[derive(Debug, Clone, Copy)]
pub struct Xorshift(u64);

impl Xorshift {
    /// A generator; a zero seed is replaced by a fixed odd constant.
    pub fn new(seed: u64) -> Self {
        Xorshift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// True for about 20% of draws.
    #[inline(always)]
    pub fn fail20(&mut self) -> bool {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.is_multiple_of(5)
    }

    /// One draw in `n`, on average.
    #[inline(always)]
    pub fn one_in(&mut self, n: u64) -> bool {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.is_multiple_of(n)
    }
}

/// Runs the standard timed loop over a per-call closure.
#[inline(always)]
pub fn timed_loop(
    iters: u64,
    load: Load,
    rng: &mut Xorshift,
    mut call: impl FnMut(bool) -> Verdict,
) -> Batch {
    let mut tally = Tally::default();
    let start = Instant::now();
    match load {
        Load::AllOk => {
            for _ in 0..iters {
                tally.add(call(false));
            }
        }
        Load::AllFail => {
            for _ in 0..iters {
                tally.add(call(true));
            }
        }
        Load::Mixed20 => {
            for _ in 0..iters {
                let fail = rng.fail20();
                tally.add(call(fail));
            }
        }
        Load::OneIn(n) => {
            for _ in 0..iters {
                let fail = rng.one_in(n);
                tally.add(call(fail));
            }
        }
    }
    Batch {
        elapsed: start.elapsed(),
        tally,
    }
}

/// A [`Runner`] for any synchronous [`Guard`].
pub struct SyncRunner<G> {
    guard: G,
    rng: Xorshift,
}

impl<G> fmt::Debug for SyncRunner<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncRunner").finish_non_exhaustive()
    }
}

impl<G: Guard> SyncRunner<G> {
    /// A runner for `guard`, with failures drawn from `seed`.
    pub fn new(guard: G, seed: u64) -> Self {
        SyncRunner {
            guard,
            rng: Xorshift::new(seed),
        }
    }
}

impl<G: Guard> Runner for SyncRunner<G> {
    fn run(&mut self, iters: u64, load: Load) -> Batch {
        let guard = &mut self.guard;
        timed_loop(iters, load, &mut self.rng, |fail| guard.call(fail))
    }
}

/// An asynchronous guard: one call awaited inside the runner's runtime.
pub trait AsyncGuard: Send + 'static {
    /// One guarded call of [`op`]`(fail)`, awaited.
    fn call(&mut self, fail: bool) -> impl Future<Output = Verdict>;
}

/// A [`Runner`] for any [`AsyncGuard`]: the whole batch is one loop inside
/// one `block_on` of the runner's own runtime (as the async pipeline is
/// driven), so a guard that needs the runtime (a timer) has it, and an
/// entry whose guard awaits the operation directly measures the loop and
/// the runtime alone.
pub struct AsyncRunner<G> {
    rt: tokio::runtime::Runtime,
    guard: G,
    rng: Xorshift,
}

impl<G> fmt::Debug for AsyncRunner<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncRunner").finish_non_exhaustive()
    }
}

impl<G: AsyncGuard> AsyncRunner<G> {
    /// A runner for `guard` in `rt`, with failures drawn from `seed`.
    pub fn new(rt: tokio::runtime::Runtime, guard: G, seed: u64) -> Self {
        AsyncRunner {
            rt,
            guard,
            rng: Xorshift::new(seed),
        }
    }
}

impl<G: AsyncGuard> Runner for AsyncRunner<G> {
    fn run(&mut self, iters: u64, load: Load) -> Batch {
        let guard = &mut self.guard;
        let rng = &mut self.rng;
        self.rt.block_on(async move {
            let mut tally = Tally::default();
            let start = Instant::now();
            for _ in 0..iters {
                let fail = load.fails(rng);
                tally.add(guard.call(fail).await);
            }
            Batch {
                elapsed: start.elapsed(),
                tally,
            }
        })
    }
}

/// Polls a future that is expected to be ready at once; spins if it is not
/// (only used for futures that never wait on a timer).
pub fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::hint::spin_loop();
    }
}

/// The failure-sequence seed for timing thread `thread`: the same for every
/// crate, so each sees the same failures in the same order.
pub fn seed_for_thread(thread: usize) -> u64 {
    0x2545_F491_4F6C_DD1D_u64.wrapping_mul(thread as u64 + 1)
}

/// Waits (at most 2 s) until fusebox's default clock reads its calibrated
/// source (see `fusebox::MonotonicClock::calibrated`), so that every
/// measurement is of the steady state, not of the readings taken while the
/// time-stamp counter is calibrated.
pub fn settle_clock() {
    use fusebox::Clock;
    let _ = fusebox::MonotonicClock.now();
    for _ in 0..200 {
        if fusebox::MonotonicClock::calibrated() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Times `iters` calls on each of `threads` threads sharing `subject`; all
/// threads start together (barrier) and the longest thread's time is returned,
/// as in governor's multi-threaded benchmarks. With one thread, runs on the
/// calling thread.
pub fn run_threads(
    subject: &dyn Subject,
    threads: usize,
    iters: u64,
    load: Load,
) -> (Duration, Tally) {
    if threads <= 1 {
        let mut r = subject.runner(seed_for_thread(0));
        let b = r.run(iters, load);
        return (b.elapsed, b.tally);
    }
    let barrier = Arc::new(Barrier::new(threads));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let mut r = subject.runner(seed_for_thread(i));
                let barrier = Arc::clone(&barrier);
                s.spawn(move || {
                    barrier.wait();
                    r.run(iters, load)
                })
            })
            .collect();
        let mut longest = Duration::ZERO;
        let mut tally = Tally::default();
        for h in handles {
            let b = h.join().expect("benchmark thread panicked");
            longest = longest.max(b.elapsed);
            tally.merge(b.tally);
        }
        (longest, tally)
    })
}

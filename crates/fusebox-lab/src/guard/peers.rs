//! The peer crates as lab strategies (cargo feature `peers`): `failsafe`,
//! `recloser` and `tower-resilience`, configured like the article's breaker
//! (`failures` consecutive failures open it, `open_for` later one probe).
//!
//! Real mode only: each crate reads the system clock itself and cannot take
//! the lab's virtual one.
//!
//! How each is configured, and what it cannot do like the article:
//!
//! - **failsafe 1.3**: `consecutive_failures(failures, constant(open_for))`.
//!   Half-open admits *every* call until the first verdict (no probe limit);
//!   the first success closes, a failure reopens. Transitions come from its
//!   `Instrument` hooks.
//! - **recloser 1.4**: a ring of `failures` calls with `error_rate(1.0)`: it
//!   opens when the last `failures` calls all failed, which is `failures`
//!   consecutive failures, except that a fresh (or just closed) ring yields
//!   a rate only from its (`failures` + 1)-th call, so right after closing it
//!   needs one failure more; `open_wait(open_for)`; `half_open_len(1)`,
//!   the shortest it has, which for the same reason decides on the *second*
//!   verdict after opening, and half-open admits every call meanwhile. It has no transition hook: transitions are inferred exactly at the
//!   points where recloser makes them (a failure verdict after which it
//!   rejects = open; an admission while open = half-open; a success in
//!   half-open = closed). Driven through its `AsyncRecloser`, whose future
//!   checks admission on first poll and records the verdict when the call's
//!   result arrives, so admission and verdict can be split across the
//!   worker's call like the other strategies.
//! - **tower-resilience 0.14**: `consecutive_failures(failures)`,
//!   `wait_duration_in_open(open_for)`, `permitted_calls_in_half_open(1)`.
//!   A tower service: each call runs as a task on a small tokio runtime
//!   owned by the guard (`ready().await`, then `call().await` whose inner
//!   future waits for the worker's result), so the worker blocks only for the
//!   admission decision and for the verdict to be recorded. Transitions come
//!   from `on_state_transition`.

use super::{Guard, LabClock, Mode};
use crate::scenario::{Peer, PeerConfig, Scenario, StrategyKind};
use std::sync::Arc;

/// Why `strategy` (a peer) cannot run in this build or in virtual time.
pub fn unavailable(strategy: &str, peer: Peer) -> String {
    if cfg!(feature = "peers") {
        format!(
            "strategy {strategy:?}: kind = \"{}\" runs in real mode only (the crate reads the system clock); use --clock real",
            peer.as_str()
        )
    } else {
        format!(
            "strategy {strategy:?}: kind = \"{}\" needs the lab built with the peer crates: cargo run --release -p fusebox-lab --features peers -- run ...",
            peer.as_str()
        )
    }
}

/// Refuses, before anything runs, a scenario with a peer strategy when the
/// lab was built without the feature `peers` or `mode` is virtual.
pub fn check(scenario: &Scenario, mode: Mode) -> Result<(), String> {
    for s in &scenario.strategies {
        if let StrategyKind::Peer(c) = &s.kind {
            if !cfg!(feature = "peers") || mode != Mode::Real {
                return Err(unavailable(&s.name, c.peer));
            }
        }
    }
    Ok(())
}

/// Builds the guard for one run; `None` in virtual mode or without the
/// feature `peers` (see [`unavailable`]).
pub fn build(config: PeerConfig, clock: &LabClock) -> Option<Arc<dyn Guard>> {
    if matches!(clock, LabClock::Virtual(_)) {
        return None;
    }
    imp::build(config, clock)
}

#[cfg(not(feature = "peers"))]
mod imp {
    use crate::guard::{Guard, LabClock};
    use crate::scenario::PeerConfig;
    use std::sync::Arc;

    pub(super) fn build(_: PeerConfig, _: &LabClock) -> Option<Arc<dyn Guard>> {
        None
    }
}

#[cfg(feature = "peers")]
mod imp {
    use crate::guard::{Admission, Guard, LabClock, Ticket, TransitionRecord};
    use crate::scenario::{CallResult, PeerConfig};
    use crate::sync::lock;
    use fusebox::Clock;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{mpsc, Arc, Mutex};
    use std::task::{Context, Poll, Wake, Waker};
    use std::time::Duration;

    pub(super) fn build(config: PeerConfig, clock: &LabClock) -> Option<Arc<dyn Guard>> {
        let log = Arc::new(Log::new(clock.clone()));
        Some(match config.peer {
            crate::scenario::Peer::Failsafe => Arc::new(FailsafeGuard::new(config, log)),
            crate::scenario::Peer::Recloser => Arc::new(RecloserGuard::new(config, log)),
            crate::scenario::Peer::TowerResilience => Arc::new(TowerGuard::new(config, log)),
        })
    }

    /// The transition log of one guard, timed by the run's clock.
    struct Log {
        clock: LabClock,
        inner: Mutex<(&'static str, Vec<TransitionRecord>)>,
    }

    impl Log {
        fn new(clock: LabClock) -> Log {
            Log {
                clock,
                inner: Mutex::new(("closed", Vec::new())),
            }
        }

        fn state(&self) -> &'static str {
            lock(&self.inner).0
        }

        /// Records a move to `to` (nothing if already there).
        fn to(&self, to: &'static str) {
            let at = self.clock.now();
            let mut g = lock(&self.inner);
            if g.0 != to {
                let from = g.0;
                g.1.push(TransitionRecord {
                    at,
                    from,
                    to,
                    remote: false,
                });
                g.0 = to;
            }
        }

        fn records(&self) -> Vec<TransitionRecord> {
            lock(&self.inner).1.clone()
        }
    }

    // ---------------------------------------------------------------- failsafe

    struct Hooks(Arc<Log>);

    impl failsafe::Instrument for Hooks {
        fn on_call_rejected(&self) {}
        fn on_open(&self) {
            self.0.to("open");
        }
        fn on_half_open(&self) {
            self.0.to("half_open");
        }
        fn on_closed(&self) {
            self.0.to("closed");
        }
    }

    type FailsafeMachine = failsafe::StateMachine<
        failsafe::failure_policy::ConsecutiveFailures<failsafe::backoff::Constant>,
        Hooks,
    >;

    struct FailsafeGuard {
        breaker: FailsafeMachine,
        log: Arc<Log>,
    }

    impl FailsafeGuard {
        fn new(c: PeerConfig, log: Arc<Log>) -> Self {
            use failsafe::{backoff, failure_policy, Config};
            let policy =
                failure_policy::consecutive_failures(c.failures, backoff::constant(c.open_for));
            let breaker = Config::new()
                .failure_policy(policy)
                .instrument(Hooks(Arc::clone(&log)))
                .build();
            FailsafeGuard { breaker, log }
        }
    }

    struct FailsafeTicket(FailsafeMachine);

    impl Ticket for FailsafeTicket {
        fn finish(self: Box<Self>, _now: Duration, result: CallResult) {
            if result.is_ok() {
                self.0.on_success();
            } else {
                self.0.on_error();
            }
        }
    }

    impl Guard for FailsafeGuard {
        fn admit(&self, _now: Duration) -> Admission {
            if self.breaker.is_call_permitted() {
                Admission::Call(Box::new(FailsafeTicket(self.breaker.clone())))
            } else {
                Admission::FastFail
            }
        }

        fn transitions(&self) -> Vec<TransitionRecord> {
            self.log.records()
        }
    }

    // ---------------------------------------------------------------- recloser

    /// Where a worker puts the result of a call that recloser's future awaits.
    type ResultSlot = Arc<Mutex<Option<CallResult>>>;

    /// Resolves once the worker has put the call's result in the slot.
    struct SlotFuture(ResultSlot);

    impl Future for SlotFuture {
        type Output = Result<(), CallResult>;
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
            match lock(&self.0).take() {
                Some(CallResult::Success) => Poll::Ready(Ok(())),
                Some(failed) => Poll::Ready(Err(failed)),
                None => Poll::Pending,
            }
        }
    }

    struct NoWake;

    impl Wake for NoWake {
        fn wake(self: Arc<Self>) {}
    }

    fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>) -> Poll<F::Output> {
        let waker = Waker::from(Arc::new(NoWake));
        f.poll(&mut Context::from_waker(&waker))
    }

    type RecloserCall = Pin<Box<recloser::RecloserFuture<SlotFuture, recloser::AnyError>>>;

    struct RecloserGuard {
        breaker: recloser::AsyncRecloser,
        log: Arc<Log>,
        /// Serialises admission, verdicts and inference, so the inferred log is
        /// in recloser's order; counts the verdicts since entering half-open.
        infer: Arc<Mutex<u32>>,
    }

    impl RecloserGuard {
        fn new(c: PeerConfig, log: Arc<Log>) -> Self {
            let r = recloser::Recloser::custom()
                .closed_len(c.failures as usize)
                .error_rate(1.0)
                .half_open_len(1)
                .open_wait(c.open_for)
                .build();
            RecloserGuard {
                breaker: recloser::AsyncRecloser::from(r),
                log,
                infer: Arc::new(Mutex::new(0)),
            }
        }
    }

    /// Would recloser admit a call now? Checks without recording anything: the
    /// probe's future is dropped before its inner call resolves.
    fn recloser_admits(breaker: &recloser::AsyncRecloser) -> bool {
        let mut probe = Box::pin(breaker.call(std::future::pending::<Result<(), ()>>()));
        !matches!(
            poll_once(probe.as_mut()),
            Poll::Ready(Err(recloser::Error::Rejected))
        )
    }

    struct RecloserTicket {
        call: RecloserCall,
        slot: ResultSlot,
        breaker: recloser::AsyncRecloser,
        log: Arc<Log>,
        infer: Arc<Mutex<u32>>,
    }

    impl Ticket for RecloserTicket {
        fn finish(mut self: Box<Self>, _now: Duration, result: CallResult) {
            let mut half_open_verdicts = lock(&self.infer);
            *lock(&self.slot) = Some(result);
            // The slot is full, so the future completes and records the verdict.
            let done = poll_once(self.call.as_mut()).is_ready();
            debug_assert!(done, "recloser's future completes once the result is in");
            let half_open = self.log.state() == "half_open";
            if half_open {
                *half_open_verdicts += 1;
            }
            if !result.is_ok() {
                if !recloser_admits(&self.breaker) {
                    self.log.to("open");
                }
            } else if half_open && *half_open_verdicts >= 2 {
                // Its half-open ring (length 1) yields a rate from its second
                // verdict on; a success there closes the breaker.
                self.log.to("closed");
            }
        }
    }

    impl Guard for RecloserGuard {
        fn admit(&self, _now: Duration) -> Admission {
            let mut half_open_verdicts = lock(&self.infer);
            let slot: ResultSlot = Arc::new(Mutex::new(None));
            let mut call = Box::pin(self.breaker.call(SlotFuture(Arc::clone(&slot))));
            match poll_once(call.as_mut()) {
                Poll::Ready(Err(recloser::Error::Rejected)) => {
                    self.log.to("open");
                    Admission::FastFail
                }
                // The slot is empty: the future waits for the worker.
                _ => {
                    if self.log.state() == "open" {
                        self.log.to("half_open");
                        *half_open_verdicts = 0;
                    }
                    Admission::Call(Box::new(RecloserTicket {
                        call,
                        slot,
                        breaker: self.breaker.clone(),
                        log: Arc::clone(&self.log),
                        infer: Arc::clone(&self.infer),
                    }))
                }
            }
        }

        fn transitions(&self) -> Vec<TransitionRecord> {
            self.log.records()
        }
    }

    // -------------------------------------------------------- tower-resilience

    /// The request: a future that tells the worker it was admitted, then waits
    /// for the worker's result.
    type Call = Pin<Box<dyn Future<Output = Result<(), CallResult>> + Send>>;

    type TowerBreaker = tower_resilience_circuitbreaker::CircuitBreaker<
        tower::util::ServiceFn<fn(Call) -> Call>,
        tower_resilience_circuitbreaker::DefaultClassifier,
    >;

    struct TowerGuard {
        rt: tokio::runtime::Runtime,
        svc: TowerBreaker,
        log: Arc<Log>,
    }

    impl TowerGuard {
        fn new(c: PeerConfig, log: Arc<Log>) -> Self {
            use tower::Layer;
            use tower_resilience_circuitbreaker::{CircuitBreakerLayer, CircuitState};
            let hook = Arc::clone(&log);
            let layer = CircuitBreakerLayer::builder()
                .consecutive_failures(c.failures as usize)
                .wait_duration_in_open(c.open_for)
                .permitted_calls_in_half_open(1)
                .on_state_transition(move |_from, to| {
                    hook.to(match to {
                        CircuitState::Closed => "closed",
                        CircuitState::Open => "open",
                        CircuitState::HalfOpen => "half_open",
                    })
                })
                .build()
                .expect("a valid tower-resilience config");
            let svc = layer.layer(tower::service_fn((|call: Call| call) as fn(Call) -> Call));
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_time()
                .thread_name("lab-tower-resilience")
                .build()
                .expect("a tokio runtime for tower-resilience");
            TowerGuard { rt, svc, log }
        }
    }

    struct TowerTicket {
        result: tokio::sync::oneshot::Sender<CallResult>,
        recorded: mpsc::Receiver<()>,
    }

    impl Ticket for TowerTicket {
        fn finish(self: Box<Self>, _now: Duration, result: CallResult) {
            let _ = self.result.send(result);
            // Wait until tower-resilience has recorded the verdict, so the next
            // admission sees it (as with every other strategy).
            let _ = self.recorded.recv();
        }
    }

    impl Guard for TowerGuard {
        fn admit(&self, _now: Duration) -> Admission {
            use tower::{Service, ServiceExt};
            let (admitted_tx, admitted_rx) = mpsc::sync_channel::<bool>(2);
            let (result_tx, result_rx) = tokio::sync::oneshot::channel::<CallResult>();
            let (recorded_tx, recorded_rx) = mpsc::sync_channel::<()>(1);
            let admitted = admitted_tx.clone();
            let call: Call = Box::pin(async move {
                let _ = admitted.send(true);
                match result_rx.await {
                    Ok(CallResult::Success) => Ok(()),
                    Ok(failed) => Err(failed),
                    Err(_) => Err(CallResult::Error), // ticket dropped: count as failed
                }
            });
            let mut svc = self.svc.clone();
            self.rt.spawn(async move {
                if let Ok(ready) = svc.ready().await {
                    let _ = ready.call(call).await;
                }
                // Rejected (or done): tell a worker still waiting for admission.
                let _ = admitted_tx.send(false);
                let _ = recorded_tx.send(());
            });
            match admitted_rx.recv() {
                Ok(true) => Admission::Call(Box::new(TowerTicket {
                    result: result_tx,
                    recorded: recorded_rx,
                })),
                _ => Admission::FastFail,
            }
        }

        fn transitions(&self) -> Vec<TransitionRecord> {
            self.log.records()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "peers")]
    use crate::guard::{Admission, Guard};
    #[cfg(feature = "peers")]
    use crate::scenario::CallResult;
    use std::time::{Duration, Instant};

    fn real() -> LabClock {
        LabClock::Real {
            origin: Instant::now(),
        }
    }

    fn cfg(peer: Peer) -> PeerConfig {
        PeerConfig {
            peer,
            failures: 5,
            // Real time (the peers read the system clock): long enough that a busy
            // test machine does not outlast it between two calls by accident.
            open_for: Duration::from_millis(100),
        }
    }

    #[cfg(feature = "peers")]
    fn call(g: &dyn Guard, r: CallResult) -> bool {
        match g.admit(Duration::ZERO) {
            Admission::Call(t) => {
                t.finish(Duration::ZERO, r);
                true
            }
            Admission::FastFail => false,
        }
    }

    #[cfg(feature = "peers")]
    #[test]
    fn every_peer_opens_after_five_consecutive_failures_probes_and_closes() {
        for peer in Peer::ALL {
            let g = build(cfg(peer), &real()).expect("real mode");
            // Four failures, a success: still closed.
            for _ in 0..4 {
                assert!(call(g.as_ref(), CallResult::Error), "{peer:?}");
            }
            assert!(call(g.as_ref(), CallResult::Success), "{peer:?}");
            for _ in 0..5 {
                assert!(
                    call(g.as_ref(), CallResult::Error),
                    "{peer:?}: opened early"
                );
            }
            assert!(!call(g.as_ref(), CallResult::Success), "{peer:?}: not open");
            std::thread::sleep(Duration::from_millis(120));
            assert!(call(g.as_ref(), CallResult::Success), "{peer:?}: no probe");
            assert!(
                call(g.as_ref(), CallResult::Success),
                "{peer:?}: not closed"
            );
            let log: Vec<_> = g.transitions().iter().map(|t| (t.from, t.to)).collect();
            assert_eq!(
                log,
                vec![
                    ("closed", "open"),
                    ("open", "half_open"),
                    ("half_open", "closed")
                ],
                "{peer:?}"
            );
        }
    }

    #[cfg(feature = "peers")]
    #[test]
    fn a_failed_probe_reopens() {
        for peer in Peer::ALL {
            let g = build(cfg(peer), &real()).expect("real mode");
            // On a fresh breaker recloser's ring yields a rate only from the
            // (len + 1)-th call on: it needs one failure more than the others.
            let mut failures = 0;
            while call(g.as_ref(), CallResult::Timeout) {
                failures += 1;
                assert!(failures <= 6, "{peer:?}: never opened");
            }
            let want = if peer == Peer::Recloser { 6 } else { 5 };
            assert_eq!(failures, want, "{peer:?}");
            std::thread::sleep(Duration::from_millis(120));
            assert!(call(g.as_ref(), CallResult::Error), "{peer:?}: no probe");
            if peer == Peer::Recloser {
                // Its half-open ring decides on the second verdict.
                assert!(call(g.as_ref(), CallResult::Error), "{peer:?}: 2nd probe");
            }
            assert!(
                !call(g.as_ref(), CallResult::Success),
                "{peer:?}: not reopened"
            );
            let log: Vec<_> = g.transitions().iter().map(|t| (t.from, t.to)).collect();
            assert_eq!(
                log,
                vec![
                    ("closed", "open"),
                    ("open", "half_open"),
                    ("half_open", "open")
                ],
                "{peer:?}"
            );
        }
    }

    #[test]
    fn peers_refuse_virtual_time_and_parse_their_kinds() {
        let clock = LabClock::Virtual(fusebox::ManualClock::new());
        for peer in Peer::ALL {
            assert!(build(cfg(peer), &clock).is_none());
            assert_eq!(build(cfg(peer), &real()).is_some(), cfg!(feature = "peers"));
            assert_eq!(Peer::parse(peer.as_str()), Some(peer));
            assert!(unavailable("x", peer).contains(peer.as_str()));
        }
        assert_eq!(Peer::parse("hystrix"), None);
    }

    #[test]
    fn the_shipped_peer_scenario_is_refused_in_virtual_time_and_without_the_feature() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join("peers-seed000-50rps.toml");
        let sc = Scenario::load(&path).expect("the shipped scenario loads in every build");
        let kinds: Vec<&str> = sc.strategies.iter().map(|s| s.kind.as_str()).collect();
        for peer in Peer::ALL {
            assert!(kinds.contains(&peer.as_str()), "{kinds:?}");
        }
        let err = check(&sc, Mode::Virtual).unwrap_err();
        assert!(err.contains("failsafe"), "{err}");
        assert_eq!(check(&sc, Mode::Real).is_ok(), cfg!(feature = "peers"));
    }
}

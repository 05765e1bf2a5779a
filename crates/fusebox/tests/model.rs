//! The breaker checked against a reference model of its documented rules
//! (`tests/model/reference.rs`): random settings for every policy, random
//! sequences of acquire / success / failure / ignore / drop / call / clock
//! advance / force_open / disable / reset / reconfigure, and after every step the two must
//! agree on admission, `retry_after`, transitions (when a listener is
//! attached), probes in flight, and, when asked, `state()` and `snapshot()`.
//!
//! Failures found by proptest are kept in `proptest-regressions/model.txt`
//! (commit it) and replayed first on every run.
//!
//! To add an operation: a variant of [`Op`], its weight in [`op`], and one
//! arm in [`Harness::apply`] calling the breaker and the model alike.

#[path = "model/reference.rs"]
mod reference;

use fusebox::{CircuitBreaker, Error, ManualClock, Outcome, Permit, Transition};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, FileFailurePersistence};
use reference::{Figures, Model, Open, Rejection, Spec, Ticket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// One step of a sequence.
#[derive(Debug, Clone)]
enum Op {
    /// `try_acquire`; an admitted permit is held.
    Acquire,
    /// A verdict for a held permit.
    Verdict(Index, Outcome),
    /// A held permit dropped without a verdict.
    Drop(Index),
    /// `call_with`: the call takes this many ms of clock time and has this outcome.
    Call(Outcome, u64),
    /// The clock moves by this many ns.
    Advance(u64),
    /// The clock moves to the end of the open period, plus this many ns (if
    /// open and that is ahead).
    ToOpenEnd(i8),
    State,
    Snapshot,
    ForceOpen,
    Disable,
    Reset,
    /// `reconfigure` with settings of any policy.
    Reconfigure(Box<Spec>),
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        4 => Just(Outcome::Success),
        4 => Just(Outcome::Failure),
        1 => Just(Outcome::Ignore),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Acquire),
        6 => (any::<Index>(), outcome()).prop_map(|(i, o)| Op::Verdict(i, o)),
        1 => any::<Index>().prop_map(Op::Drop),
        8 => (outcome(), prop_oneof![3 => Just(0u64), 1 => 1u64..=12]).prop_map(|(o, d)| Op::Call(o, d)),
        3 => prop_oneof![Just(1u64), (1u64..=20).prop_map(|m| m * MS), 0..=40 * MS].prop_map(Op::Advance),
        2 => (-1i8..=1).prop_map(Op::ToOpenEnd),
        2 => Just(Op::State),
        2 => Just(Op::Snapshot),
        1 => prop_oneof![Just(Op::ForceOpen), Just(Op::Disable)],
        1 => Just(Op::Reset),
        1 => any_spec().prop_map(|s| Op::Reconfigure(Box::new(s))),
    ]
}

/// Settings of any of the policies below.
fn any_spec() -> BoxedStrategy<Spec> {
    prop_oneof![
        consecutive(),
        count_rate(),
        time_rate(),
        slow_policy(),
        every_policy(),
        backoff_probes(),
        defaults_spec(),
    ]
    .boxed()
}

fn consecutive() -> BoxedStrategy<Spec> {
    base(open())
        .prop_flat_map(|s| {
            (1u32..=4).prop_map(move |n| Spec {
                consecutive: Some(n),
                ..s.clone()
            })
        })
        .boxed()
}

fn count_rate() -> BoxedStrategy<Spec> {
    base(open())
        .prop_flat_map(|s| {
            rate().prop_flat_map(move |r| {
                count_window(Spec {
                    failure_rate: Some(r),
                    ..s.clone()
                })
            })
        })
        .boxed()
}

fn time_rate() -> BoxedStrategy<Spec> {
    base(open())
        .prop_flat_map(|s| {
            rate().prop_flat_map(move |r| {
                time_window(Spec {
                    failure_rate: Some(r),
                    ..s.clone()
                })
            })
        })
        .boxed()
}

fn slow_policy() -> BoxedStrategy<Spec> {
    base(open())
        .prop_flat_map(slow)
        .prop_flat_map(window)
        .boxed()
}

fn every_policy() -> BoxedStrategy<Spec> {
    base(open())
        .prop_flat_map(slow)
        .prop_flat_map(|s| {
            (1u32..=4, rate()).prop_map(move |(n, r)| Spec {
                consecutive: Some(n),
                failure_rate: Some(r),
                ..s.clone()
            })
        })
        .prop_flat_map(window)
        .boxed()
}

fn backoff_probes() -> BoxedStrategy<Spec> {
    base(backoff())
        .prop_flat_map(|s| {
            (1u32..=2, 2u32..=3, 2u32..=3).prop_map(move |(n, k, c)| Spec {
                consecutive: Some(n),
                probes: Some(k),
                successes: Some(c),
                ..s.clone()
            })
        })
        .boxed()
}

fn defaults_spec() -> BoxedStrategy<Spec> {
    base(open())
        .prop_flat_map(|s| {
            prop::option::of(rate()).prop_map(move |r| Spec {
                failure_rate: r,
                ..s.clone()
            })
        })
        .boxed()
}

/// Rates that land on and between the fractions small windows produce.
fn rate() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![0.2, 0.25, 0.3, 0.5, 0.6, 0.75, 1.0])
}

fn open() -> impl Strategy<Value = Open> {
    prop_oneof![(1u64..=30).prop_map(|m| Open::Fixed(m * MS)), backoff(),]
}

fn backoff() -> impl Strategy<Value = Open> {
    (
        1u64..=10,
        prop::sample::select(vec![1.0, 1.5, 2.0, 3.0]),
        0u64..=40,
    )
        .prop_map(|(initial, factor, extra)| Open::Backoff {
            initial: initial * MS,
            factor,
            max: (initial + extra) * MS,
        })
}

/// The settings every policy shares: open period, probes, successes, the
/// half-open deadline (unset two times in three).
fn base(open: impl Strategy<Value = Open>) -> impl Strategy<Value = Spec> {
    let max_wait = prop_oneof![2 => Just(None), 1 => (1u64..=30).prop_map(|m| Some(m * MS))];
    (
        open,
        prop::option::of(1u32..=3),
        prop::option::of(1u32..=3),
        max_wait,
    )
        .prop_map(|(open, probes, successes, max_wait)| Spec {
            consecutive: None,
            failure_rate: None,
            count_window: None,
            time_window: None,
            buckets: None,
            min_calls: None,
            slow: None,
            open,
            probes,
            successes,
            max_wait,
        })
}

/// A count window of 1..=8 calls with `min_calls` unset or within it.
fn count_window(spec: Spec) -> impl Strategy<Value = Spec> {
    (1usize..=8)
        .prop_flat_map(|n| (Just(n), prop::option::of(1u32..=n as u32)))
        .prop_map(move |(n, min)| Spec {
            count_window: Some(n),
            min_calls: min,
            ..spec.clone()
        })
}

/// A time window of 1..=5 buckets (or the default 10) of 1..=10 ms.
fn time_window(spec: Spec) -> impl Strategy<Value = Spec> {
    (
        prop::option::of(1usize..=5),
        1u64..=10,
        prop::option::of(1u32..=6),
    )
        .prop_map(move |(buckets, width, min)| Spec {
            time_window: Some(buckets.unwrap_or(10) as u64 * width * MS),
            buckets,
            min_calls: min,
            ..spec.clone()
        })
}

fn window(spec: Spec) -> BoxedStrategy<Spec> {
    prop_oneof![count_window(spec.clone()), time_window(spec)].boxed()
}

fn slow(spec: Spec) -> impl Strategy<Value = Spec> {
    (1u64..=10, rate()).prop_map(move |(ms, r)| Spec {
        slow: Some((ms * MS, r)),
        ..spec.clone()
    })
}

/// The breaker and the model side by side.
struct Harness {
    breaker: CircuitBreaker,
    clock: ManualClock,
    /// Transitions the breaker's listener heard (when one is attached).
    heard: Option<Arc<Mutex<Vec<Transition>>>>,
    permits: Vec<(Permit, Ticket)>,
    model: Model,
}

impl Harness {
    fn new(spec: &Spec, listen: bool) -> Harness {
        let clock = ManualClock::new();
        let mut builder = spec.builder().clock(clock.clone());
        let heard = listen.then(|| {
            let heard = Arc::new(Mutex::new(Vec::new()));
            let log = heard.clone();
            builder =
                std::mem::take(&mut builder).on_transition(move |t| log.lock().unwrap().push(*t));
            heard
        });
        let breaker = builder.build().expect("the strategies make valid settings");
        Harness {
            breaker,
            clock,
            heard,
            permits: Vec::new(),
            model: Model::new(spec, 0, listen),
        }
    }

    fn advance(&mut self, ns: u64) {
        self.clock.advance(Duration::from_nanos(ns));
        self.model.advance(ns);
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Acquire => {
                let got = self.breaker.try_acquire();
                let want = self.model.acquire();
                match (got, want) {
                    (Ok(permit), Ok(ticket)) => self.permits.push((permit, ticket)),
                    (Err(r), Err(w)) => {
                        prop_assert_eq!(rejection(&r), w);
                    }
                    (got, want) => {
                        return Err(TestCaseError::fail(format!(
                            "try_acquire: breaker {got:?}, model {want:?}"
                        )))
                    }
                }
            }
            Op::Verdict(i, outcome) => {
                if self.permits.is_empty() {
                    return Ok(());
                }
                let (permit, ticket) = self.permits.remove(i.index(self.permits.len()));
                permit.record(outcome);
                self.model.verdict(ticket, outcome);
            }
            Op::Drop(i) => {
                if self.permits.is_empty() {
                    return Ok(());
                }
                let (permit, ticket) = self.permits.remove(i.index(self.permits.len()));
                drop(permit);
                self.model.release(ticket);
            }
            Op::Call(outcome, ms) => {
                let want = self.model.acquire();
                let took = ms * MS;
                let clock = self.clock.clone();
                let got = self.breaker.call_with(
                    |_: &Result<(), ()>| outcome,
                    || {
                        clock.advance(Duration::from_nanos(took));
                        match outcome {
                            Outcome::Failure => Err(()),
                            _ => Ok(()),
                        }
                    },
                );
                match (got, want) {
                    (Err(Error::Rejected(r)), Err(w)) => {
                        prop_assert_eq!(rejection(&r), w);
                    }
                    (Ok(()) | Err(Error::Inner(())), Ok(ticket)) => {
                        self.model.advance(took);
                        self.model.verdict(ticket, outcome);
                    }
                    (got, want) => {
                        return Err(TestCaseError::fail(format!(
                            "call: breaker {got:?}, model {want:?}"
                        )))
                    }
                }
            }
            Op::Advance(ns) => self.advance(ns),
            Op::ToOpenEnd(delta) => {
                if let Some(until) = self.model.open_until() {
                    let target = until.saturating_add_signed(i64::from(delta));
                    if target > self.model.now() {
                        self.advance(target - self.model.now());
                    }
                }
            }
            Op::State => {
                prop_assert_eq!(self.breaker.state(), self.model.state(), "state()");
            }
            Op::Snapshot => {
                let got = Figures::of(&self.breaker.snapshot());
                prop_assert_eq!(got, self.model.snapshot(), "snapshot()");
            }
            Op::ForceOpen => {
                self.breaker.force_open();
                self.model.force_open();
            }
            Op::Disable => {
                self.breaker.disable();
                self.model.disable();
            }
            Op::Reset => {
                self.breaker.reset();
                self.model.reset();
            }
            Op::Reconfigure(ref spec) => {
                self.breaker
                    .reconfigure(spec.builder())
                    .expect("the strategies make valid settings");
                self.model.reconfigure(spec);
            }
        }
        self.compare_quietly()
    }

    /// What can be compared without moving either side (no lazy step).
    fn compare_quietly(&self) -> Result<(), TestCaseError> {
        if let Some(heard) = &self.heard {
            prop_assert_eq!(&*heard.lock().unwrap(), &self.model.log, "transitions");
        }
        if let Some(n) = self.model.probes_in_flight() {
            prop_assert_eq!(self.breaker.probes_in_flight(), n, "probes in flight");
        }
        Ok(())
    }
}

fn rejection(r: &fusebox::Rejected) -> Rejection {
    Rejection {
        state: r.state(),
        retry_after: r.retry_after(),
    }
}

/// Runs `ops` on a fresh breaker and model, then compares a final snapshot.
/// On a disagreement, the message ends with the last steps and the model's
/// state before each.
fn agree(spec: &Spec, listen: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    run(spec, listen, ops, None).map(drop).map_err(|e| {
        let mut trace = Vec::new();
        let _ = run(spec, listen, ops, Some(&mut trace));
        let start = trace.len().saturating_sub(8);
        TestCaseError::fail(format!("{e}\nlast steps:\n{}", trace[start..].join("\n")))
    })
}

fn run(
    spec: &Spec,
    listen: bool,
    ops: &[Op],
    mut trace: Option<&mut Vec<String>>,
) -> Result<Model, TestCaseError> {
    let mut h = Harness::new(spec, listen);
    for (i, op) in ops.iter().enumerate() {
        if let Some(t) = trace.as_deref_mut() {
            t.push(format!("{i}: {op:?}, model before: {:?}", h.model));
        }
        h.apply(op)
            .map_err(|e| TestCaseError::fail(format!("step {i} ({op:?}): {e}")))?;
    }
    let end = Figures::of(&h.breaker.snapshot());
    prop_assert_eq!(end, h.model.snapshot(), "final snapshot");
    h.compare_quietly()?;
    Ok(h.model)
}

fn config() -> Config {
    // 256 cases per policy unless PROPTEST_CASES says otherwise.
    Config {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/model.txt",
        ))),
        ..Config::default()
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..160)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn consecutive_failures(spec in consecutive(), listen in any::<bool>(), ops in ops()) {
        agree(&spec, listen, &ops)?;
    }

    #[test]
    fn failure_rate_over_a_count_window(spec in count_rate(), listen in any::<bool>(), ops in ops()) {
        agree(&spec, listen, &ops)?;
    }

    #[test]
    fn failure_rate_over_a_time_window(spec in time_rate(), listen in any::<bool>(), ops in ops()) {
        agree(&spec, listen, &ops)?;
    }

    #[test]
    fn slow_calls(spec in slow_policy(), listen in any::<bool>(), ops in ops()) {
        agree(&spec, listen, &ops)?;
    }

    #[test]
    fn every_policy_at_once(spec in every_policy(), listen in any::<bool>(), ops in ops()) {
        agree(&spec, listen, &ops)?;
    }

    #[test]
    fn backoff_with_several_probes_and_successes(spec in backoff_probes(), listen in any::<bool>(), ops in ops()) {
        agree(&spec, listen, &ops)?;
    }

    #[test]
    fn defaults(spec in defaults_spec(), listen in any::<bool>(), ops in ops()) {
        agree(&spec, listen, &ops)?;
    }
}

/// The sequences reach what they are meant to check: over a fixed sample of
/// cases, every kind of transition happens (slow probes reopening too), and
/// half-open periods see several probes at once. A generator change that
/// made the property tests vacuous would fail here.
#[test]
fn sequences_reach_every_transition() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeSet;
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeSet::new();
    let mut most_probes = 0;
    for _ in 0..400 {
        let spec = any_spec().new_tree(&mut runner).unwrap().current();
        let ops = ops().new_tree(&mut runner).unwrap().current();
        let model = run(&spec, true, &ops, None).unwrap();
        for t in &model.log {
            let reason = format!("{:?}", t.reason);
            let kind = reason.split([' ', '{']).next().unwrap();
            seen.insert(format!("{kind} from {:?}", t.from));
        }
        most_probes = most_probes.max(model.most_probes());
    }
    for want in [
        "ConsecutiveFailures from Closed",
        "CooldownElapsed from Open",
        "FailureRate from Closed",
        "Manual from Open",
        "ProbeFailed from HalfOpen",
        "ProbeTimedOut from HalfOpen",
        "ProbesSucceeded from HalfOpen",
        "SlowCallRate from Closed",
        "SlowCallRate from HalfOpen",
    ] {
        assert!(seen.contains(want), "{want} never happened; seen: {seen:?}");
    }
    assert!(
        most_probes >= 3,
        "at most {most_probes} probe(s) in flight at once"
    );
}

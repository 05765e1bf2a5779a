//! The tracing adapter: levels and fields of transition and rejection events,
//! captured by a small recording subscriber.
#![cfg(feature = "tracing")]

use fusebox::registry::Fusebox;
use fusebox::trace::{Tracing, TracingListener};
use fusebox::{CircuitBreaker, Listener, ManualClock, Reason, State, Transition};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

#[derive(Debug, Clone)]
struct Captured {
    level: Level,
    target: String,
    fields: BTreeMap<String, String>,
}

#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Vec<Captured>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            fields,
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn capture(f: impl FnOnce()) -> Vec<Captured> {
    let rec = Recorder::default();
    let out = rec.0.clone();
    tracing::subscriber::with_default(rec, f);
    out.lock().unwrap().clone()
}

fn field<'a>(c: &'a Captured, k: &str) -> &'a str {
    c.fields
        .get(k)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no field {k} in {c:?}"))
}

#[test]
fn rate_trip_warns_with_the_rate_and_closing_is_info() {
    let clock = ManualClock::new();
    let events = capture(|| {
        let db = CircuitBreaker::builder()
            .failure_rate(0.5)
            .count_window(4)
            .min_calls(4)
            .open_for(Duration::from_secs(5))
            .clock(clock.clone())
            .listener(TracingListener::new("db"))
            .build()
            .unwrap();
        for ok in [true, false, true, false] {
            let _ = db.call(|| if ok { Ok(()) } else { Err("down") });
        }
        let _ = db.call(|| Ok::<_, ()>(())); // rejected
        clock.advance(Duration::from_secs(5));
        db.call(|| Ok::<_, ()>(())).unwrap(); // half-open probe closes it
    });
    let levels: Vec<(Level, &str)> = events
        .iter()
        .map(|e| (e.level, field(e, "message")))
        .collect();
    assert_eq!(
        levels,
        [
            (Level::WARN, "circuit breaker opened"),
            (Level::DEBUG, "call rejected"),
            (Level::INFO, "circuit breaker changed state"),
            (Level::INFO, "circuit breaker closed"),
        ]
    );
    let open = &events[0];
    assert_eq!(open.target, "fusebox");
    assert_eq!(field(open, "breaker"), "db");
    assert_eq!(field(open, "from"), "closed");
    assert_eq!(field(open, "to"), "open");
    assert_eq!(field(open, "reason"), "failure_rate");
    assert_eq!(field(open, "failure_rate"), "0.5");

    let rejected = &events[1];
    assert_eq!(field(rejected, "state"), "open");
    assert_eq!(field(rejected, "retry_after_ms"), "5000");

    assert_eq!(field(&events[2], "to"), "half_open");
    let closed = &events[3];
    assert_eq!(field(closed, "from"), "half_open");
    assert_eq!(field(closed, "to"), "closed");
    assert_eq!(field(closed, "reason"), "probes_succeeded");
    assert_eq!(field(closed, "successes"), "1");
}

#[test]
fn consecutive_and_slow_trips_carry_their_cause() {
    let clock = ManualClock::new();
    let events = capture(|| {
        let a = CircuitBreaker::builder()
            .consecutive_failures(2)
            .clock(clock.clone())
            .listener(TracingListener::new("a"))
            .build()
            .unwrap();
        for _ in 0..2 {
            let _ = a.call(|| Err::<(), _>("down"));
        }
        let b = CircuitBreaker::builder()
            .slow_calls(Duration::from_millis(100), 0.5)
            .count_window(2)
            .min_calls(2)
            .clock(clock.clone())
            .listener(TracingListener::new("b"))
            .build()
            .unwrap();
        for _ in 0..2 {
            let p = b.try_acquire().unwrap();
            clock.advance(Duration::from_millis(150));
            p.success();
        }
    });
    let warns: Vec<&Captured> = events.iter().filter(|e| e.level == Level::WARN).collect();
    assert_eq!(warns.len(), 2, "{events:?}");
    assert_eq!(field(warns[0], "breaker"), "a");
    assert_eq!(field(warns[0], "consecutive_failures"), "2");
    assert_eq!(field(warns[1], "breaker"), "b");
    assert_eq!(field(warns[1], "reason"), "slow_call_rate");
    assert_eq!(field(warns[1], "slow_call_rate"), "1");
}

#[test]
fn registry_observer_traces_every_breaker_and_manual_changes() {
    let events = capture(|| {
        let fusebox = Fusebox::builder()
            .clock(ManualClock::new())
            .observer(Tracing)
            .build()
            .unwrap();
        fusebox.breaker("x");
        fusebox.force_open("x").unwrap();
        let _ = fusebox.breaker("x").call(|| Ok::<_, ()>(()));
        fusebox.reset("x").unwrap();
    });
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0].level, Level::WARN);
    assert_eq!(field(&events[0], "breaker"), "x");
    assert_eq!(field(&events[0], "reason"), "manual");
    assert_eq!(field(&events[0], "to"), "forced_open");
    assert_eq!(events[1].level, Level::DEBUG);
    assert_eq!(field(&events[1], "breaker"), "x");
    assert_eq!(field(&events[1], "state"), "forced_open");
    assert!(
        !events[1].fields.contains_key("retry_after_ms"),
        "no retry time when forced open"
    );
    assert_eq!(events[2].level, Level::INFO);
    assert_eq!(field(&events[2], "reason"), "manual");
    assert_eq!(field(&events[2], "to"), "closed");
}

#[test]
fn fleet_transitions_carry_their_own_reason() {
    // What a fleet's trip and close look like to a listener; the label is
    // `Reason::as_str`'s, as everywhere a reason is named.
    let listener = TracingListener::new("payments");
    let t = |from, to| Transition {
        from,
        to,
        at: Duration::ZERO,
        reason: Reason::Remote,
        generation: 1,
    };
    let events = capture(|| {
        listener.on_transition(&t(State::Closed, State::Open));
        listener.on_transition(&t(State::Open, State::Closed));
    });
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].level, Level::WARN);
    assert_eq!(events[1].level, Level::INFO);
    for e in &events {
        assert_eq!(field(e, "reason"), "remote");
        assert_eq!(field(e, "reason"), Reason::Remote.as_str());
    }
}

#[test]
fn no_listener_no_events() {
    let events = capture(|| {
        let b = CircuitBreaker::builder()
            .consecutive_failures(1)
            .clock(ManualClock::new())
            .build()
            .unwrap();
        let _ = b.call(|| Err::<(), _>("down"));
        let _ = b.call(|| Ok::<_, ()>(()));
    });
    assert!(events.is_empty(), "{events:?}");
}

/// The HTTP stack's span per call. It lives here, not beside the other HTTP
/// tests: tracing caches each callsite's interest when the callsite is first
/// hit, and a test thread without a subscriber that hits it first, while the
/// one subscriber in the process is another thread's scoped default, caches
/// "never" for everyone. Every test in this file runs under its own
/// subscriber, and only this one reaches the HTTP stack's callsites.
#[cfg(feature = "http")]
mod spans {
    use super::*;
    use fusebox::http::{BoxError, Standard};
    use fusebox::retry::{Exponential, FullJitter, Retry};
    use http::{Method, Response};
    use std::future::Future;
    use std::pin::Pin;

    /// Records every span's name and fields, as `name key=value ...`.
    #[derive(Clone, Default)]
    struct Spans(Arc<Mutex<Vec<String>>>);

    struct Line<'a>(&'a mut String);
    impl Visit for Line<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!(" {}={:?}", field.name(), value));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push_str(&format!(" {}={}", field.name(), value));
        }
    }

    impl Subscriber for Spans {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, span: &Attributes<'_>) -> Id {
            let mut line = span.metadata().name().to_string();
            span.record(&mut Line(&mut line));
            let mut spans = self.0.lock().unwrap();
            spans.push(line);
            Id::from_u64(spans.len() as u64)
        }
        fn record(&self, id: &Id, values: &Record<'_>) {
            let mut spans = self.0.lock().unwrap();
            let line = &mut spans[id.into_u64() as usize - 1];
            values.record(&mut Line(line));
        }
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    type Sent = Pin<Box<dyn Future<Output = Result<Response<()>, BoxError>> + Send>>;

    /// An attempt that answers `codes` in turn (the last one after that).
    fn scripted(codes: &'static [u16]) -> impl FnMut() -> Sent {
        let mut i = 0;
        move || {
            let code = codes[i.min(codes.len() - 1)];
            i += 1;
            Box::pin(async move { Ok(Response::builder().status(code).body(()).unwrap()) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn one_span_per_call_says_which_policy_decided() {
        let spans = Spans::default();
        let _guard = tracing::subscriber::set_default(spans.clone());
        let no_wait = Exponential::new(Duration::ZERO, 1.0, Duration::ZERO).unwrap();
        let retry = Retry::builder()
            .backoff(FullJitter::new(no_wait))
            .build()
            .unwrap();
        let stack = Standard::builder("inventory").retry(retry).build();
        stack
            .run(&Method::GET, scripted(&[503, 200]))
            .await
            .unwrap();
        stack.breaker().force_open();
        let _ = stack.run(&Method::GET, scripted(&[200])).await;

        let spans = spans.0.lock().unwrap().clone();
        assert_eq!(
            spans,
            [
                "fusebox.call dependency=inventory outcome=success",
                "fusebox.call dependency=inventory outcome=rejected stopped_by=breaker",
            ]
        );
    }
}

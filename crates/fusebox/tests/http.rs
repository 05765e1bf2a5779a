//! HTTP presets (feature `http`): table tests for the classifier and the
//! retry predicate, and each layer of the standard stack on tokio's paused
//! time.
#![cfg(feature = "http")]

use fusebox::http::{
    is_idempotent, retry_after, BoxError, Classifier, HttpError, RetryPolicy, Standard,
    TransportError,
};
use fusebox::retry::{Exponential, FullJitter, Retry, RetryBudget};
use fusebox::{Bulkhead, Cause, CircuitBreaker, Outcome, PipelineError, PolicyError, State};
use http::{HeaderMap, Method, Response, StatusCode};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap()
}

#[test]
fn classifier_table() {
    let c = Classifier::new();
    // (status, is a failure)
    let table = [
        (200, false),
        (201, false),
        (204, false),
        (301, false),
        (304, false),
        (400, false),
        (401, false),
        (403, false),
        (404, false),
        (408, true),
        (409, false),
        (422, false),
        (429, true),
        (499, false),
        (500, true),
        (501, true),
        (502, true),
        (503, true),
        (504, true),
        (599, true),
    ];
    for (code, failure) in table {
        assert_eq!(c.is_failure(status(code)), failure, "status {code}");
        let response = Response::builder().status(code).body(()).unwrap();
        let expected = if failure {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        assert_eq!(c.outcome(&Ok::<_, BoxError>(response)), expected, "{code}");
    }
    // Transport errors and timeouts: no response, a failure.
    let refused: Result<Response<()>, BoxError> = Err(Box::new(std::io::Error::from(
        std::io::ErrorKind::ConnectionRefused,
    )));
    assert_eq!(c.outcome(&refused), Outcome::Failure);
    let timed_out: Result<Response<()>, fusebox::Elapsed> =
        Err(fusebox::Elapsed::new(Duration::from_secs(1)));
    assert_eq!(c.outcome(&timed_out), Outcome::Failure);
    // Configurable both ways.
    let custom = Classifier::new()
        .failure(StatusCode::CONFLICT)
        .success(StatusCode::NOT_IMPLEMENTED);
    assert!(custom.is_failure(StatusCode::CONFLICT));
    assert!(!custom.is_failure(StatusCode::NOT_IMPLEMENTED));
    assert!(custom.is_failure(StatusCode::BAD_GATEWAY));
}

#[test]
fn idempotent_methods() {
    for (m, idempotent) in [
        (Method::GET, true),
        (Method::HEAD, true),
        (Method::OPTIONS, true),
        (Method::TRACE, true),
        (Method::PUT, true),
        (Method::DELETE, true),
        (Method::POST, false),
        (Method::PATCH, false),
        (Method::CONNECT, false),
    ] {
        assert_eq!(is_idempotent(&m), idempotent, "{m}");
    }
}

fn headers(retry_after: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Some(v) = retry_after {
        h.insert("retry-after", v.parse().unwrap());
    }
    h
}

#[test]
fn retry_predicate_table() {
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let in_5s = httpdate::fmt_http_date(now + Duration::from_secs(5));
    let in_60s = httpdate::fmt_http_date(now + Duration::from_secs(60));
    let ago = httpdate::fmt_http_date(now - Duration::from_secs(30));
    let p = RetryPolicy::new();
    let s = Duration::from_secs;
    // (method, status (None: no response), connect error, Retry-After, expected)
    type Row<'a> = (Method, Option<u16>, bool, Option<&'a str>, Option<Duration>);
    #[rustfmt::skip]
    let table: Vec<Row<'_>> = vec![
        (Method::GET, Some(500), false, None, Some(s(0))),
        (Method::GET, Some(502), false, None, Some(s(0))),
        (Method::GET, Some(503), false, None, Some(s(0))),
        (Method::GET, Some(504), false, None, Some(s(0))),
        (Method::GET, Some(408), false, None, Some(s(0))),
        (Method::GET, Some(429), false, None, Some(s(0))),
        (Method::GET, Some(400), false, None, None),
        (Method::GET, Some(404), false, None, None),
        (Method::GET, Some(409), false, None, None),
        (Method::GET, Some(200), false, None, None),
        // Retry-After: delta-seconds, HTTP dates, the cap, junk.
        (Method::GET, Some(429), false, Some("3"), Some(s(3))),
        (Method::GET, Some(503), false, Some(" 7 "), Some(s(7))),
        (Method::GET, Some(503), false, Some("10"), Some(s(10))),
        (Method::GET, Some(503), false, Some("11"), None),
        (Method::GET, Some(503), false, Some(&in_5s), Some(s(5))),
        (Method::GET, Some(503), false, Some(&in_60s), None),
        (Method::GET, Some(503), false, Some(&ago), Some(s(0))),
        (Method::GET, Some(503), false, Some("soon"), Some(s(0))),
        (Method::GET, Some(503), false, Some("-1"), Some(s(0))),
        (Method::GET, Some(404), false, Some("1"), None),
        // Methods.
        (Method::HEAD, Some(503), false, None, Some(s(0))),
        (Method::PUT, Some(502), false, None, Some(s(0))),
        (Method::DELETE, Some(504), false, None, Some(s(0))),
        (Method::POST, Some(503), false, None, None),
        (Method::PATCH, Some(503), false, None, None),
        // Transport errors: retried when idempotent; a refused connection always.
        (Method::GET, None, false, None, Some(s(0))),
        (Method::POST, None, false, None, None),
        (Method::GET, None, true, None, Some(s(0))),
        (Method::POST, None, true, None, Some(s(0))),
    ];
    for (method, code, connect, ra, expected) in table {
        let h = headers(ra);
        let answer = code.map(|c| (status(c), &h));
        assert_eq!(
            p.decide_at(&method, answer, connect, now),
            expected,
            "{method} {code:?} connect={connect} retry-after={ra:?}"
        );
    }
    // Overrides.
    let h = headers(None);
    let all = RetryPolicy::new().all_methods(true);
    assert_eq!(
        all.decide_at(&Method::POST, Some((status(503), &h)), false, now),
        Some(s(0))
    );
    let long = RetryPolicy::new().max_retry_after(s(60));
    let h60 = headers(Some("60"));
    assert_eq!(
        long.decide_at(&Method::GET, Some((status(503), &h60)), false, now),
        Some(s(60))
    );
    let no_501 = RetryPolicy::new().status(StatusCode::NOT_IMPLEMENTED, false);
    assert_eq!(
        no_501.decide_at(&Method::GET, Some((status(501), &h)), false, now),
        None
    );
}

#[test]
fn retry_after_forms() {
    let now = SystemTime::now();
    assert_eq!(retry_after(&headers(None), now), None);
    assert_eq!(retry_after(&headers(Some("0")), now), Some(Duration::ZERO));
    assert_eq!(
        retry_after(&headers(Some("120")), now),
        Some(Duration::from_secs(120))
    );
    assert_eq!(retry_after(&headers(Some("1.5")), now), None);
    assert_eq!(
        retry_after(&headers(Some("Wed, 21 Oct 2015 07:28:00 GMT")), now),
        Some(Duration::ZERO),
        "a date in the past is no wait"
    );
}

#[test]
fn transport_errors_know_a_refused_connection() {
    #[derive(Debug)]
    struct Wrapper(std::io::Error);
    impl std::fmt::Display for Wrapper {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("client error")
        }
    }
    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    let refused: BoxError = Box::new(Wrapper(std::io::ErrorKind::ConnectionRefused.into()));
    assert!(refused.is_connect(), "found in the source chain");
    let reset: BoxError = Box::new(Wrapper(std::io::ErrorKind::ConnectionReset.into()));
    assert!(!reset.is_connect());
    let e: HttpError<Response<()>> = HttpError::transport(refused);
    assert!(e.is_connect() && e.status().is_none());
    assert_eq!(e.to_string(), "transport error: client error");
}

// ---- the standard stack, one layer at a time, on paused time ----

type Resp = Response<()>;

fn answer(code: u16) -> Resp {
    Response::builder().status(code).body(()).unwrap()
}

/// A stack without waits between retries (a zero backoff), 3 attempts.
fn quick_retry() -> Retry {
    Retry::builder()
        .backoff(FullJitter::new(
            Exponential::new(Duration::ZERO, 1.0, Duration::ZERO).unwrap(),
        ))
        .build()
        .unwrap()
}

/// An attempt that answers `codes` in turn (the last one after that), and
/// counts the requests sent (futures polled, not just made).
type Sent = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Resp, BoxError>> + Send>>;

fn scripted(codes: &'static [u16]) -> (Arc<AtomicU32>, impl FnMut() -> Sent) {
    let n = Arc::new(AtomicU32::new(0));
    let count = n.clone();
    let attempt = move || {
        let count = count.clone();
        Box::pin(async move {
            let i = count.fetch_add(1, Ordering::Relaxed) as usize;
            Ok(answer(codes[i.min(codes.len() - 1)]))
        }) as Sent
    };
    (n, attempt)
}

/// An attempt whose first call answers 200 after `first`, and every later
/// one after 10 ms; counts the attempts sent.
fn slow_first(first: Duration) -> (Arc<AtomicU32>, impl FnMut() -> Sent) {
    let n = Arc::new(AtomicU32::new(0));
    let count = n.clone();
    let attempt = move || {
        let i = count.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let took = if i == 0 {
                first
            } else {
                Duration::from_millis(10)
            };
            tokio::time::sleep(took).await;
            Ok(answer(200))
        }) as Sent
    };
    (n, attempt)
}

#[tokio::test(start_paused = true)]
async fn the_hedging_preset_hedges_the_tail_of_idempotent_requests_only() {
    let stack = Standard::hedging("search").build();
    // The quantile delay needs 100 answers before any hedge.
    for _ in 0..100 {
        let (_, quick) = slow_first(Duration::from_millis(10));
        stack.run(&Method::GET, quick).await.unwrap();
    }
    assert_eq!(stack.hedge().unwrap().stats().hedges, 0);
    let (sent, stalled) = slow_first(Duration::from_secs(1));
    let started = Instant::now();
    stack.run(&Method::GET, stalled).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "answered by the hedge: {:?}",
        started.elapsed()
    );
    assert_eq!(sent.load(Ordering::Relaxed), 2);
    assert_eq!(stack.hedge().unwrap().stats().won_by_hedge, 1);
    // The dropped attempt gave its breaker permit back without a verdict.
    assert_eq!(stack.breaker().snapshot().failures, 0);
    // A POST may not be sent twice: it waits for its one attempt.
    let (sent, stalled) = slow_first(Duration::from_secs(1));
    let started = Instant::now();
    stack.run(&Method::POST, stalled).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(sent.load(Ordering::Relaxed), 1);
    assert_eq!(stack.hedge().unwrap().stats().hedges, 1);
}

#[tokio::test(start_paused = true)]
async fn the_hedging_presets_extra_attempts_spend_the_retry_budget() {
    // A budget with no floor and 10 % of calls: after 30 calls, 3 hedges.
    let budget = RetryBudget::builder()
        .ratio(0.1)
        .min_per_second(0)
        .build()
        .unwrap();
    let retry = Retry::builder().budget(budget.clone()).build().unwrap();
    let stack = Standard::hedging("search").retry(retry).build();
    assert!(stack.hedge().unwrap().budget().is_some());
    for _ in 0..100 {
        let (_, quick) = slow_first(Duration::from_millis(10));
        stack.run(&Method::GET, quick).await.unwrap();
    }
    let mut hedged = 0;
    for _ in 0..40 {
        let (sent, stalled) = slow_first(Duration::from_millis(200));
        stack.run(&Method::GET, stalled).await.unwrap();
        hedged += u32::from(sent.load(Ordering::Relaxed) == 2);
    }
    let stats = stack.hedge().unwrap().stats();
    assert_eq!(stats.hedges, u64::from(hedged));
    assert!(stats.refused_by_budget > 0, "the budget ran out: {stats:?}");
    assert!(hedged < 40, "{hedged} of 40 hedged");
}

#[tokio::test(start_paused = true)]
async fn total_timeout_ends_the_whole_call() {
    let stack = Standard::builder("inventory")
        .total_timeout(Duration::from_secs(3))
        .attempt_timeout(Duration::from_secs(60))
        .build();
    let t0 = Instant::now();
    let r = stack
        .run(&Method::GET, || {
            std::future::pending::<Result<Resp, BoxError>>()
        })
        .await;
    match r {
        Err(PipelineError::TimedOut(e)) => assert_eq!(e.after(), Duration::from_secs(3)),
        other => panic!("expected the total timeout, got {other:?}"),
    }
    assert_eq!(t0.elapsed(), Duration::from_secs(3));
    assert_eq!(stack.stats().snapshot().timeouts, 1);
}

#[tokio::test(start_paused = true)]
async fn attempt_timeout_cancels_a_hanging_attempt_and_the_retry_tries_again() {
    let stack = Standard::builder("inventory")
        .attempt_timeout(Duration::from_millis(200))
        .retry(quick_retry())
        .build();
    let mut n = 0;
    let t0 = Instant::now();
    let r = stack
        .run(&Method::GET, || {
            n += 1;
            let hang = n == 1;
            async move {
                if hang {
                    std::future::pending::<()>().await;
                }
                Ok::<_, BoxError>(answer(200))
            }
        })
        .await;
    assert_eq!(r.unwrap().status(), 200);
    assert_eq!(n, 2);
    assert_eq!(t0.elapsed(), Duration::from_millis(200));
    let s = stack.stats().snapshot();
    assert_eq!((s.calls, s.attempts, s.timeouts), (1, 2, 1));
}

#[tokio::test(start_paused = true)]
async fn retry_recovers_from_a_503_and_honours_retry_after() {
    let stack = Standard::builder("inventory").retry(quick_retry()).build();
    let mut n = 0;
    let t0 = Instant::now();
    let r = stack
        .run(&Method::GET, || {
            n += 1;
            let resp = if n == 1 {
                Response::builder()
                    .status(503)
                    .header("retry-after", "2")
                    .body(())
                    .unwrap()
            } else {
                answer(200)
            };
            std::future::ready(Ok::<_, BoxError>(resp))
        })
        .await;
    assert_eq!(r.unwrap().status(), 200);
    assert_eq!(t0.elapsed(), Duration::from_secs(2), "waited Retry-After");
    assert_eq!(stack.stats().snapshot().retries(), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_gives_up_with_the_last_response_and_skips_non_idempotent_requests() {
    let stack = Standard::builder("inventory").retry(quick_retry()).build();
    let (n, attempt) = scripted(&[503]);
    let e = stack.run(&Method::GET, attempt).await.unwrap_err();
    assert_eq!(n.load(Ordering::Relaxed), 3);
    // The 503 is still there, response and all.
    let PipelineError::Failed(failed) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(failed.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
    assert!(matches!(e.cause(), Cause::Failed(_)));

    let (n, attempt) = scripted(&[503]);
    let _ = stack.run(&Method::POST, attempt).await.unwrap_err();
    assert_eq!(n.load(Ordering::Relaxed), 1, "POST is sent once");

    // A POST that timed out may have done its work: not tried again.
    let mut posts = 0;
    let e = stack
        .run(&Method::POST, || {
            posts += 1;
            std::future::pending::<Result<Resp, BoxError>>()
        })
        .await
        .unwrap_err();
    assert!(matches!(e, PipelineError::TimedOut(_)));
    assert_eq!(posts, 1);

    // A POST whose connection was refused never left: tried again.
    let mut posts = 0;
    let _ = stack
        .run(&Method::POST, || {
            posts += 1;
            let refused: BoxError =
                Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
            std::future::ready(Err::<Resp, _>(refused))
        })
        .await
        .unwrap_err();
    assert_eq!(posts, 3);

    // A 404 is the caller's: an answer, not an error, and not retried.
    let (n, attempt) = scripted(&[404]);
    assert_eq!(
        stack.run(&Method::GET, attempt).await.unwrap().status(),
        404
    );
    assert_eq!(n.load(Ordering::Relaxed), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_budget_refuses_retries_when_spent() {
    let budget = RetryBudget::builder()
        .ratio(0.0)
        .min_per_second(0)
        .build()
        .unwrap();
    let retry = Retry::builder()
        .backoff(FullJitter::new(
            Exponential::new(Duration::ZERO, 1.0, Duration::ZERO).unwrap(),
        ))
        .budget(budget.clone())
        .build()
        .unwrap();
    let stack = Standard::builder("inventory").retry(retry).build();
    let (n, attempt) = scripted(&[503, 200]);
    let e = stack.run(&Method::GET, attempt).await.unwrap_err();
    assert_eq!(n.load(Ordering::Relaxed), 1, "no token: no retry");
    assert!(matches!(e, PipelineError::Failed(_)));
    assert_eq!(budget.refused(), 1);
}

#[tokio::test(start_paused = true)]
async fn breaker_opens_on_failing_statuses_not_on_the_callers_4xx() {
    let breaker = CircuitBreaker::builder()
        .consecutive_failures(2)
        .open_for(Duration::from_secs(30))
        .clock(fusebox::ManualClock::new())
        .build()
        .unwrap();
    let once = Retry::builder().max_attempts(1).build().unwrap();
    let stack = Standard::builder("inventory")
        .breaker(breaker.clone())
        .retry(once)
        .build();
    for _ in 0..3 {
        let (_, attempt) = scripted(&[404]);
        let _ = stack.run(&Method::GET, attempt).await;
    }
    assert_eq!(breaker.state(), State::Closed);
    for _ in 0..2 {
        let (_, attempt) = scripted(&[500]);
        let _ = stack.run(&Method::GET, attempt).await;
    }
    assert_eq!(breaker.state(), State::Open);
    let (n, attempt) = scripted(&[200]);
    let e = stack.run(&Method::GET, attempt).await.unwrap_err();
    assert_eq!(n.load(Ordering::Relaxed), 0, "never sent");
    assert!(matches!(e, PipelineError::Rejected(_)));
    assert_eq!(e.cause().retry_after(), Some(Duration::from_secs(30)));
    // The fallback gets the same cause, and is counted.
    let r = stack.recover(Err::<String, _>(e), |why: Cause<'_, HttpError<Resp>>| {
        Some(format!("cached ({why})"))
    });
    assert_eq!(r.unwrap(), "cached (rejected by breaker)");
    assert_eq!(stack.stats().snapshot().fallbacks, [1, 0, 0, 0]);
}

#[tokio::test(start_paused = true)]
async fn bulkhead_refuses_beyond_its_limit() {
    let stack = Standard::builder("inventory")
        .bulkhead(Bulkhead::new(1))
        .build();
    let (release, wait) = tokio::sync::oneshot::channel::<()>();
    let busy = stack.clone();
    let first = tokio::spawn(async move {
        let mut wait = Some(wait);
        busy.run(&Method::GET, move || {
            let wait = wait.take();
            async move {
                if let Some(w) = wait {
                    let _ = w.await;
                }
                Ok::<_, BoxError>(answer(200))
            }
        })
        .await
    });
    tokio::task::yield_now().await;
    assert_eq!(stack.bulkhead().snapshot().in_use, 1);
    let (n, attempt) = scripted(&[200]);
    let e = stack.run(&Method::GET, attempt).await.unwrap_err();
    assert!(matches!(e, PipelineError::BulkheadFull(_)), "{e:?}");
    assert_eq!(n.load(Ordering::Relaxed), 0);
    release.send(()).unwrap();
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(stack.bulkhead().snapshot().rejected, 1);
}

#[cfg(feature = "tower")]
mod tower_stack {
    use super::*;
    use fusebox::http::StandardLayer;
    use tower::{service_fn, Layer, ServiceExt};

    #[tokio::test(start_paused = true)]
    async fn the_layer_retries_a_503_and_boxes_what_stopped_a_call() {
        let hits = Arc::new(AtomicU32::new(0));
        let counted = hits.clone();
        let client = service_fn(move |req: http::Request<String>| {
            let n = counted.fetch_add(1, Ordering::Relaxed);
            let code = if req.uri().path() == "/down" || n == 0 {
                503
            } else {
                200
            };
            async move {
                Ok::<_, std::io::Error>(
                    Response::builder()
                        .status(code)
                        .body(req.into_body())
                        .unwrap(),
                )
            }
        });
        let stack = Standard::builder("inventory").retry(quick_retry()).build();
        let svc = StandardLayer::new(stack.clone()).layer(client);

        let ok = svc
            .clone()
            .oneshot(http::Request::new("sku 7".to_string()))
            .await
            .unwrap();
        assert_eq!(ok.status(), 200);
        assert_eq!(
            ok.into_body(),
            "sku 7",
            "each attempt sends a copy of the body"
        );
        assert_eq!(hits.load(Ordering::Relaxed), 2);

        let down = http::Request::builder()
            .uri("/down")
            .body(String::new())
            .unwrap();
        let err = svc.clone().oneshot(down).await.unwrap_err();
        let failed = err
            .downcast_ref::<HttpError<Response<String>>>()
            .expect("the failing response, boxed");
        assert_eq!(failed.status(), Some(StatusCode::SERVICE_UNAVAILABLE));

        stack.breaker().force_open();
        let err = svc
            .oneshot(http::Request::new(String::new()))
            .await
            .unwrap_err();
        assert!(matches!(err.cause(), Cause::Rejected(_)));
    }

    #[test]
    fn the_classifier_plugs_into_the_breaker_layer() {
        use fusebox::tower::breaker::Classify;
        let c = Classifier::new();
        let r: Result<Response<()>, BoxError> = Ok(answer(502));
        assert_eq!(c.classify(&r), Outcome::Failure);
        let r: Result<Response<()>, BoxError> = Ok(answer(404));
        assert_eq!(c.classify(&r), Outcome::Success);
    }
}

#[cfg(feature = "reqwest")]
mod reqwest_client {
    use super::*;

    /// A loopback port nothing listens on.
    fn closed_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connect_error_retried_even_for_post_by_the_policy() {
        let url = format!("http://127.0.0.1:{}/stock/7", closed_port());
        let client = reqwest::Client::new();
        let stack = Standard::builder("inventory").retry(quick_retry()).build();

        let e = stack.send(client.get(&url)).await.unwrap_err();
        let PipelineError::Failed(failed) = &e else {
            panic!("{e:?}")
        };
        assert!(failed.is_connect(), "{failed:?}");
        assert!(failed.transport_error().unwrap().is::<reqwest::Error>());
        assert_eq!(stack.stats().snapshot().attempts, 3, "GET retried");

        // A POST whose connection was refused never left: tried again too.
        let _ = stack
            .send(client.post(&url).body("order"))
            .await
            .unwrap_err();
        assert_eq!(
            stack.stats().snapshot().attempts,
            6,
            "POST retried on connect"
        );
    }
}

#[cfg(all(feature = "ratelimit", feature = "config"))]
#[tokio::test(start_paused = true)]
async fn a_stack_from_the_registry_takes_its_rate_limit() {
    use fusebox::ratelimit::RateLimitConfig;
    use fusebox::registry::{DependencyConfig, Fusebox, FuseboxConfig};
    let mut config = FuseboxConfig::default();
    config.dependencies.insert(
        "partner".into(),
        DependencyConfig {
            rate_limit: Some(RateLimitConfig::per_second(1).burst(1)),
            ..Default::default()
        },
    );
    let fusebox = Fusebox::from_config(config).unwrap();
    let stack = Standard::from_registry(&fusebox, "partner").build();
    assert!(stack.rate_limiter().is_some());
    let ok = || async { Ok::<_, BoxError>(Response::builder().status(200).body(()).unwrap()) };
    assert!(stack.run(&Method::GET, ok).await.is_ok());
    let e = stack.run(&Method::GET, ok).await.unwrap_err();
    assert!(matches!(e, PipelineError::RateLimited(_)));
    assert_eq!(stack.breaker().state(), State::Closed);
}

/// The whole response under the policies: a real loopback server that
/// answers its headers and then stalls or cuts its body.
#[cfg(feature = "reqwest")]
mod whole_response {
    use super::*;
    use std::time::Instant as StdInstant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::Notify;

    /// What the server does after writing `head` and `body`.
    #[derive(Clone, Copy)]
    enum Then {
        /// Keeps the connection open and writes nothing more.
        Stall,
        /// Closes the connection.
        Close,
    }

    struct Server {
        url: String,
        /// Requests answered.
        hits: Arc<AtomicU32>,
        /// Notified each time a head has been written.
        headed: Arc<Notify>,
    }

    /// Serves every request on loopback with `head` (status line and
    /// headers), then `body`, then `then`.
    async fn server(head: &'static str, body: &'static [u8], then: Then) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/stock/7", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicU32::new(0));
        let headed = Arc::new(Notify::new());
        let (h, n) = (hits.clone(), headed.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (h, n) = (h.clone(), n.clone());
                tokio::spawn(async move {
                    // Reads the request's head (these tests send no body).
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => seen.extend_from_slice(&buf[..k]),
                        }
                    }
                    h.fetch_add(1, Ordering::Relaxed);
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(body).await;
                    let _ = socket.flush().await;
                    n.notify_one();
                    match then {
                        Then::Stall => std::future::pending::<()>().await,
                        Then::Close => drop(socket),
                    }
                });
            }
        });
        Server { url, hits, headed }
    }

    const STALLED_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n";

    fn breaker(failures: u32) -> CircuitBreaker {
        CircuitBreaker::builder()
            .consecutive_failures(failures)
            .build()
            .unwrap()
    }

    fn attempts(n: u32) -> Retry {
        Retry::builder()
            .max_attempts(n)
            .backoff(FullJitter::new(
                Exponential::new(Duration::ZERO, 1.0, Duration::ZERO).unwrap(),
            ))
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_body_stalled_after_200_is_a_timeout_and_a_failure_for_the_breaker() {
        let s = server(STALLED_HEAD, b"only a part", Then::Stall).await;
        let stack = Standard::builder("inventory")
            .attempt_timeout(Duration::from_millis(200))
            .total_timeout(Duration::from_secs(5))
            .retry(attempts(2))
            .breaker(breaker(3))
            .build();
        let client = reqwest::Client::new();

        let started = StdInstant::now();
        let e = stack.send_bytes(client.get(&s.url)).await.unwrap_err();
        let took = started.elapsed();
        assert!(matches!(e, PipelineError::TimedOut(_)), "{e:?}");
        // Two attempts of 200 ms each, nowhere near the server's stall.
        assert!(took >= Duration::from_millis(400), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert_eq!(s.hits.load(Ordering::Relaxed), 2, "the GET was retried");
        let b = stack.breaker().snapshot();
        assert_eq!(b.consecutive_failures, 2, "both attempts failed: {b:?}");
        assert_eq!(stack.bulkhead().snapshot().in_use, 0);
        // One more stalled attempt trips the breaker.
        let _ = stack.send_bytes(client.get(&s.url)).await.unwrap_err();
        assert_eq!(stack.breaker().state(), State::Open);
    }

    #[tokio::test]
    async fn send_covers_the_headers_only() {
        // The documented limit of `send`: the same stall is a success.
        let s = server(STALLED_HEAD, b"only a part", Then::Stall).await;
        let stack = Standard::builder("inventory")
            .attempt_timeout(Duration::from_millis(200))
            .breaker(breaker(1))
            .build();
        let r = stack.send(reqwest::Client::new().get(&s.url)).await;
        assert_eq!(r.unwrap().status(), 200);
        assert_eq!(stack.breaker().snapshot().failures, 0);
        assert_eq!(
            stack.bulkhead().snapshot().in_use,
            0,
            "slot released at the headers"
        );
    }

    #[tokio::test]
    async fn a_body_cut_short_is_a_transport_failure() {
        let s = server(STALLED_HEAD, b"only a part", Then::Close).await;
        let stack = Standard::builder("inventory")
            .retry(attempts(1))
            .breaker(breaker(5))
            .build();
        let e = stack
            .send_bytes(reqwest::Client::new().get(&s.url))
            .await
            .unwrap_err();
        let PipelineError::Failed(failed) = &e else {
            panic!("{e:?}")
        };
        assert!(
            failed.transport_error().unwrap().is::<reqwest::Error>(),
            "{failed:?}"
        );
        assert_eq!(stack.breaker().snapshot().consecutive_failures, 1);
    }

    /// reqwest as a tower HTTP client: `http::Request` in, `http::Response`
    /// with reqwest's streaming body out (what hyper's client gives).
    #[cfg(feature = "tower")]
    fn tower_client() -> impl tower::Service<
        http::Request<String>,
        Response = http::Response<reqwest::Body>,
        Error = reqwest::Error,
        Future = impl Send,
    > + Clone
           + Send
           + 'static {
        let client = reqwest::Client::new();
        tower::service_fn(move |req: http::Request<String>| {
            let client = client.clone();
            async move {
                let req = reqwest::Request::try_from(req)?;
                Ok(http::Response::from(client.execute(req).await?))
            }
        })
    }

    #[cfg(feature = "tower")]
    fn get(url: &str) -> http::Request<String> {
        http::Request::get(url).body(String::new()).unwrap()
    }

    #[cfg(feature = "tower")]
    #[tokio::test]
    async fn through_the_whole_body_layer_a_stalled_body_is_a_timeout_and_a_failure() {
        use fusebox::http::{StandardLayer, WholeBodyLayer};
        use tower::{Layer, ServiceExt};
        let s = server(STALLED_HEAD, b"only a part", Then::Stall).await;
        let stack = Standard::builder("inventory")
            .attempt_timeout(Duration::from_millis(200))
            .total_timeout(Duration::from_secs(5))
            .retry(attempts(2))
            .breaker(breaker(3))
            .build();
        let svc = WholeBodyLayer::new(stack.clone()).layer(tower_client());

        let started = StdInstant::now();
        let e = svc.clone().oneshot(get(&s.url)).await.unwrap_err();
        let took = started.elapsed();
        assert!(e.is::<fusebox::Elapsed>(), "{e:?}");
        assert!(took >= Duration::from_millis(400), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert_eq!(s.hits.load(Ordering::Relaxed), 2, "the GET was retried");
        assert_eq!(stack.breaker().snapshot().consecutive_failures, 2);
        assert_eq!(stack.bulkhead().snapshot().in_use, 0);
        let _ = svc.oneshot(get(&s.url)).await.unwrap_err();
        assert_eq!(stack.breaker().state(), State::Open);

        // The documented limit of the plain layer: the same stall is a
        // success at the headers.
        let plain = Standard::builder("plain")
            .attempt_timeout(Duration::from_millis(200))
            .breaker(breaker(1))
            .build();
        let r = StandardLayer::new(plain.clone())
            .layer(tower_client())
            .oneshot(get(&s.url))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(plain.breaker().snapshot().failures, 0);
    }

    #[cfg(feature = "tower")]
    #[tokio::test]
    async fn through_the_whole_body_layer_a_body_cut_short_or_too_long_is_a_failure() {
        use fusebox::http::{BodyTooLarge, WholeBodyLayer};
        use tower::{Layer, ServiceExt};
        let cut = server(STALLED_HEAD, b"only a part", Then::Close).await;
        let stack = Standard::builder("inventory")
            .retry(attempts(1))
            .breaker(breaker(5))
            .build();
        let svc = WholeBodyLayer::new(stack.clone()).layer(tower_client());
        let e = svc.oneshot(get(&cut.url)).await.unwrap_err();
        assert!(!e.is::<fusebox::Elapsed>(), "{e:?}");
        assert_eq!(stack.breaker().snapshot().consecutive_failures, 1);

        const HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n";
        let whole = server(HEAD, b"7 in stock!", Then::Close).await;
        let svc = WholeBodyLayer::new(stack.clone()).layer(tower_client());
        let r = svc.oneshot(get(&whole.url)).await.unwrap();
        assert_eq!(&r.body()[..], b"7 in stock!");
        assert_eq!(stack.breaker().snapshot().consecutive_failures, 0);

        let svc = WholeBodyLayer::new(stack.clone())
            .max_body(10)
            .layer(tower_client());
        let e = svc.oneshot(get(&whole.url)).await.unwrap_err();
        let failed = e
            .downcast_ref::<fusebox::http::HttpError<Response<fusebox::http::Bytes>>>()
            .expect("a failed attempt");
        let too_large = failed
            .transport_error()
            .unwrap()
            .downcast_ref::<BodyTooLarge>();
        assert_eq!(too_large.map(BodyTooLarge::limit), Some(10), "{e:?}");
        assert_eq!(
            too_large.unwrap().to_string(),
            "response body longer than the limit of 10 bytes"
        );
        assert_eq!(stack.breaker().snapshot().consecutive_failures, 1);
        assert_eq!(stack.bulkhead().snapshot().in_use, 0);
    }

    #[tokio::test]
    async fn the_bulkhead_slot_is_held_until_the_body_is_complete() {
        let s = server(STALLED_HEAD, b"", Then::Stall).await;
        let stack = Standard::builder("inventory")
            .attempt_timeout(Duration::from_millis(500))
            .retry(attempts(1))
            .bulkhead(Bulkhead::new(1))
            .build();
        let client = reqwest::Client::new();
        let first = tokio::spawn({
            let (stack, request) = (stack.clone(), client.get(&s.url));
            async move { stack.send_bytes(request).await }
        });
        s.headed.notified().await;
        // Time for the client to read the head the server has written.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(stack.bulkhead().snapshot().in_use, 1);
        let second = stack.send_bytes(client.get(&s.url)).await.unwrap_err();
        assert!(
            matches!(second, PipelineError::BulkheadFull(_)),
            "{second:?}"
        );
        let first = first.await.unwrap().unwrap_err();
        assert!(matches!(first, PipelineError::TimedOut(_)), "{first:?}");
        assert_eq!(stack.bulkhead().snapshot().in_use, 0);
    }

    #[tokio::test]
    async fn send_bytes_returns_the_whole_body_and_a_failing_status_keeps_its_body() {
        let ok = server(
            "HTTP/1.1 200 OK\r\ncontent-length: 10\r\nx-stock: 7\r\n\r\n",
            b"7 in stock",
            Then::Stall,
        )
        .await;
        let busy = server(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\n",
            b"busy",
            Then::Stall,
        )
        .await;
        let stack = Standard::builder("inventory").retry(attempts(1)).build();
        let client = reqwest::Client::new();

        let r = stack.send_bytes(client.get(&ok.url)).await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-stock"], "7");
        assert_eq!(&r.body()[..], b"7 in stock");

        let e = stack.send_bytes(client.get(&busy.url)).await.unwrap_err();
        let failed = e.into_inner().expect("the call's own error");
        assert_eq!(failed.status(), Some(StatusCode::SERVICE_UNAVAILABLE));
        assert_eq!(&failed.response().unwrap().body()[..], b"busy");
        assert_eq!(stack.breaker().snapshot().failures, 1);
    }

    /// Two real hosts, one answering 503: with one breaker per authority
    /// every request to the healthy host succeeds; with the one shared
    /// breaker, the sick host's failures turn the healthy host's requests
    /// away too.
    #[tokio::test]
    async fn per_authority_breakers_keep_a_healthy_host_served_while_another_fails() {
        const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n";
        const DOWN: &str = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n";
        let healthy = server(OK, b"ok", Then::Close).await;
        let sick = server(DOWN, b"", Then::Close).await;
        let client = reqwest::Client::new();
        // The same rule for both: half of the last 10 calls failing, from 6 calls.
        let rule = || {
            CircuitBreaker::builder()
                .failure_rate(0.5)
                .count_window(10)
                .min_calls(6)
                .open_for(Duration::from_secs(60))
        };
        let per_host = Standard::builder("inventory")
            .retry(attempts(1))
            .per_authority(fusebox::BreakerSet::builder(rule()).build().unwrap())
            .build();
        let shared = Standard::builder("inventory")
            .retry(attempts(1))
            .breaker(rule().build().unwrap())
            .build();
        let mut refused_healthy = [0u32; 2];
        for (i, stack) in [&per_host, &shared].into_iter().enumerate() {
            for _ in 0..20 {
                let _ = stack.send_bytes(client.get(&sick.url)).await;
                match stack.send_bytes(client.get(&healthy.url)).await {
                    Ok(r) => assert_eq!(&r.body()[..], b"ok"),
                    Err(e) if e.is_refusal() => refused_healthy[i] += 1,
                    Err(e) => panic!("the healthy host failed: {e}"),
                }
            }
        }
        assert_eq!(
            refused_healthy[0], 0,
            "per authority: no healthy request refused"
        );
        assert!(
            refused_healthy[1] >= 15,
            "shared: {} healthy requests refused",
            refused_healthy[1]
        );
        let breakers = per_host.breakers().unwrap();
        let key = |url: &str| fusebox::http::authority(&url.parse().unwrap()).unwrap();
        assert_eq!(breakers.get(&*key(&sick.url)).state(), State::Open);
        assert_eq!(breakers.get(&*key(&healthy.url)).state(), State::Closed);
        assert_eq!(breakers.len(), 2);
        assert_eq!(
            per_host.breaker().snapshot().calls,
            0,
            "the stack's own breaker is not used"
        );
        // Per authority, 6 failures opened the sick host's breaker; shared,
        // 3 failures and 3 successes opened the one breaker; neither called
        // the sick host again while open.
        assert_eq!(sick.hits.load(Ordering::Relaxed), 6 + 3);
    }

    /// The same through the tower layer: the request's URI selects the breaker.
    #[cfg(feature = "tower")]
    #[tokio::test]
    async fn through_the_tower_layer_the_request_uri_selects_the_breaker() {
        use fusebox::http::WholeBodyLayer;
        use tower::{Layer, ServiceExt};
        const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n";
        const DOWN: &str = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n";
        let healthy = server(OK, b"ok", Then::Close).await;
        let sick = server(DOWN, b"", Then::Close).await;
        let stack = Standard::builder("inventory")
            .retry(attempts(1))
            .per_authority(
                fusebox::BreakerSet::builder(CircuitBreaker::builder().consecutive_failures(2))
                    .build()
                    .unwrap(),
            )
            .build();
        let svc = WholeBodyLayer::new(stack.clone()).layer(tower_client());
        for _ in 0..10 {
            let _ = svc.clone().oneshot(get(&sick.url)).await;
            let r = svc
                .clone()
                .oneshot(get(&healthy.url))
                .await
                .expect("healthy host served");
            assert_eq!(&r.body()[..], b"ok");
        }
        assert_eq!(sick.hits.load(Ordering::Relaxed), 2);
        assert_eq!(stack.breakers().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn run_covers_an_attempt_that_reads_its_body() {
        let s = server(STALLED_HEAD, b"", Then::Stall).await;
        let stack = Standard::builder("inventory")
            .attempt_timeout(Duration::from_millis(200))
            .retry(attempts(1))
            .breaker(breaker(1))
            .build();
        let client = reqwest::Client::new();
        let e = stack
            .run(&Method::GET, || {
                let request = client.get(&s.url);
                async move {
                    let r = request.send().await?;
                    let status = r.status();
                    let body = r.bytes().await?;
                    let mut full = Response::new(body);
                    *full.status_mut() = status;
                    Ok::<_, reqwest::Error>(full)
                }
            })
            .await
            .unwrap_err();
        assert!(matches!(e, PipelineError::TimedOut(_)), "{e:?}");
        assert_eq!(stack.breaker().state(), State::Open);
    }

    #[cfg(feature = "json")]
    #[tokio::test]
    async fn send_json_decodes_inside_the_attempt_and_an_invalid_body_is_a_failure() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Stock {
            available: u32,
        }
        let good = server(
            "HTTP/1.1 200 OK\r\ncontent-length: 15\r\n\r\n",
            br#"{"available":7}"#,
            Then::Stall,
        )
        .await;
        let bad = server(
            "HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\n",
            br#"{"avail""#,
            Then::Stall,
        )
        .await;
        let stack = Standard::builder("inventory")
            .retry(attempts(3))
            .breaker(breaker(5))
            .build();
        let client = reqwest::Client::new();

        let stock: Stock = stack.send_json(client.get(&good.url)).await.unwrap();
        assert_eq!(stock, Stock { available: 7 });

        let e = stack
            .send_json::<Stock>(client.get(&bad.url))
            .await
            .unwrap_err();
        let failed = e.into_inner().expect("the call's own error");
        assert!(failed.is_invalid_body(), "{failed:?}");
        assert_eq!(&failed.response().unwrap().body()[..], br#"{"avail""#);
        assert_eq!(bad.hits.load(Ordering::Relaxed), 1, "not retried");
        assert_eq!(stack.breaker().snapshot().consecutive_failures, 1);

        // A stalled body under send_json is the attempt's timeout too.
        let stalled = server(STALLED_HEAD, b"{", Then::Stall).await;
        let stack = Standard::builder("inventory")
            .attempt_timeout(Duration::from_millis(100))
            .retry(attempts(1))
            .build();
        let e = stack
            .send_json::<Stock>(client.get(&stalled.url))
            .await
            .unwrap_err();
        assert!(matches!(e, PipelineError::TimedOut(_)), "{e:?}");
    }
}

#[test]
fn try_build_refuses_a_zero_timeout_and_build_keeps_what_it_was_given() {
    let e = Standard::builder("pricing")
        .total_timeout(Duration::ZERO)
        .try_build()
        .unwrap_err();
    assert_eq!(e.setting(), "total_timeout");
    assert!(e.to_string().contains("stack `pricing`"), "{e}");
    assert!(e.to_string().contains("greater than zero"), "{e}");
    let e = Standard::builder("pricing")
        .attempt_timeout(Duration::ZERO)
        .try_build()
        .unwrap_err();
    assert_eq!(e.setting(), "attempt_timeout");
    let ok = Standard::builder("pricing")
        .total_timeout(Duration::from_millis(1))
        .try_build()
        .unwrap();
    assert_eq!(ok.total_timeout(), Duration::from_millis(1));
    // The unchecked build keeps its signature and its settings.
    let unchecked: Standard = Standard::builder("pricing")
        .total_timeout(Duration::ZERO)
        .build();
    assert_eq!(unchecked.total_timeout(), Duration::ZERO);
}

#[cfg(feature = "config")]
mod registry {
    use super::*;
    use fusebox::registry::{Fusebox, FuseboxConfig};

    fn fusebox(toml: &str) -> Fusebox {
        Fusebox::from_config(FuseboxConfig::from_toml(toml).unwrap()).unwrap()
    }

    #[test]
    fn try_from_registry_refuses_an_unknown_dependency_and_names_the_known_ones() {
        let fb = fusebox(
            r#"
            [dependencies.pricing]
            timeout = "300ms"
            [dependencies.inventory]
            timeout = "100ms"
            "#,
        );
        let e = Standard::try_from_registry(&fb, "pricng").unwrap_err();
        assert_eq!(e.name(), "pricng");
        assert_eq!(e.known(), ["inventory", "pricing"]);
        assert_eq!(e.suggestion(), Some("pricing"));
        assert_eq!(
            e.to_string(),
            "no dependency `pricng` in the registry; did you mean `pricing`? (known: inventory, pricing)"
        );
        assert!(fb.get("pricng").is_none(), "the typo added nothing");
        let far = Standard::try_from_registry(&fb, "search").unwrap_err();
        assert_eq!(far.suggestion(), None);
        assert!(!far.to_string().contains("did you mean"), "{far}");

        let pricing = Standard::try_from_registry(&fb, "pricing").unwrap().build();
        assert_eq!(pricing.attempt_timeout(), Duration::from_millis(300));
        // A name with only a bulkhead table is known too.
        let fb2 = fusebox("[bulkheads.search]\nmax_concurrent = 3");
        let search = Standard::try_from_registry(&fb2, "search").unwrap().build();
        assert_eq!(search.bulkhead().limit(), 3);
        // The lenient constructor still builds a name it does not know.
        let lenient = Standard::from_registry(&fb, "search").build();
        assert_eq!(
            lenient.attempt_timeout(),
            fusebox::http::DEFAULT_ATTEMPT_TIMEOUT
        );
    }

    #[test]
    fn after_reload_the_breaker_follows_and_the_timeout_and_retry_stay() {
        let before = r#"
            [dependencies.pricing]
            timeout = "300ms"
            breaker = { consecutive_failures = 5 }
            retry = { max_attempts = 2 }
        "#;
        let after = r#"
            [dependencies.pricing]
            timeout = "900ms"
            breaker = { consecutive_failures = 1 }
            retry = { max_attempts = 4 }
        "#;
        let fb = fusebox(before);
        let stack = Standard::from_registry(&fb, "pricing").build();
        fb.reload(FuseboxConfig::from_toml(after).unwrap()).unwrap();

        // The breaker is the registry's: one failure opens it now.
        let permit = stack.breaker().try_acquire().unwrap();
        permit.record(Outcome::Failure);
        assert_eq!(stack.breaker().state(), State::Open);
        // The timeout and retry were read when the stack was built.
        assert_eq!(stack.attempt_timeout(), Duration::from_millis(300));
        assert_eq!(stack.retry().max_attempts(), 2);
        // Building again takes the new ones.
        let rebuilt = Standard::from_registry(&fb, "pricing").build();
        assert_eq!(rebuilt.attempt_timeout(), Duration::from_millis(900));
        assert_eq!(rebuilt.retry().max_attempts(), 4);
    }
}

/// The adaptive limit and the throttle as the stack's stages: a full limit
/// refuses at once, the throttle hears answers.
#[cfg(all(feature = "limit", feature = "throttle"))]
#[tokio::test(start_paused = true)]
async fn the_stack_takes_an_adaptive_limit_and_a_throttle() {
    use fusebox::limit::{AdaptiveLimit, LimitConfig};
    use fusebox::throttle::{Throttle, ThrottleConfig};
    let limit = AdaptiveLimit::new(LimitConfig::default().initial(1)).unwrap();
    let throttle = Throttle::new(ThrottleConfig::default()).unwrap();
    let stack = Standard::builder("search")
        .retry(quick_retry())
        .limit(limit.clone())
        .throttle(throttle.clone())
        .build();
    let (_, ok) = scripted(&[200]);
    assert!(stack.run(&Method::GET, ok).await.is_ok());
    let held = limit.try_acquire().unwrap(); // the one place, taken elsewhere
    let (sent, ok) = scripted(&[200]);
    let e = stack.run(&Method::GET, ok).await.unwrap_err();
    assert!(matches!(e, PipelineError::LimitExceeded(_)), "{e}");
    assert_eq!(
        sent.load(Ordering::Relaxed),
        0,
        "refused before the request"
    );
    drop(held);
    let (_, busy) = scripted(&[503, 503, 503]);
    let _ = stack.run(&Method::GET, busy).await;
    let s = throttle.snapshot();
    // 1 answer, 3 attempts answered 503; the one the limit refused inside
    // is taken back.
    assert_eq!((s.requests, s.accepts), (4, 1), "{s:?}");
}

//! `use fusebox::*; use fusebox::tower::*;` is unambiguous: the crate root and
//! `fusebox::tower` share no name (tower's services stay in their modules),
//! and `fusebox::prelude::*` brings both sides' common names at once.
#![cfg(all(feature = "tower", feature = "tokio"))]

mod both_globs {
    use fusebox::tower::*;
    use fusebox::*;

    #[test]
    fn every_policy_name_resolves_to_the_core_type() {
        let breaker: CircuitBreaker = CircuitBreaker::builder().build().unwrap();
        let bulkhead: Bulkhead = Bulkhead::new(1);
        // Modules are another matter: `retry`, `bulkhead`, `fallback` and
        // `timeout` are modules on both sides, so name them by path.
        let retry: fusebox::retry::Retry = fusebox::retry::Retry::builder().build().unwrap();
        let fallback = Fallback::value(0u8);
        let timeout = Timeout::new(std::time::Duration::from_secs(1));
        // The layers come from the tower glob.
        let _ = CircuitBreakerLayer::new(breaker.clone());
        let _ = BulkheadLayer::new(bulkhead.clone());
        let _ = RetryLayer::new(retry.clone());
        let _ = TimeoutLayer::new(std::time::Duration::from_secs(1));
        let _: BoxError = "x".into();
        assert_eq!(breaker.state(), State::Closed);
        assert_eq!(
            fallback
                .call(|| Err::<u8, _>(std::io::Error::other("x")))
                .unwrap(),
            0
        );
        let _ = timeout;
    }
}

mod prelude {
    use fusebox::prelude::*;

    #[test]
    fn the_prelude_has_policies_layers_and_cause() {
        let breaker = CircuitBreaker::builder().build().unwrap();
        let _ = CircuitBreakerLayer::new(breaker);
        let _ = FallbackLayer::new(|_why: Cause<'_, BoxError>| Some(1u8));
        let p = Pipeline::builder().bulkhead(Bulkhead::new(0)).build();
        let e = p.call(|| Ok::<_, std::io::Error>(())).unwrap_err();
        assert!(matches!(e.cause(), Cause::BulkheadFull(_)));
    }
}

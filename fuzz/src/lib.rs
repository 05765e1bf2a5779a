//! What every registry fuzz target does with a parsed config: build the
//! registry from it and use each breaker and bulkhead it names.
//!
//! The oracle, beyond "no panic, no hang": a config the parser accepted is
//! valid, so the registry builds from it, reloads it, and accepts each
//! breaker's own settings again through `reconfigure`.

use fusebox::registry::{Fusebox, FuseboxConfig, InvalidConfig};
use fusebox::ManualClock;
use std::time::Duration;

/// At most this many named breakers and bulkheads are used per input (a
/// config may name thousands).
const NAMES: usize = 8;

/// Uses the result of `FuseboxConfig::from_toml` / `from_yaml` on any input.
pub fn exercise(parsed: Result<FuseboxConfig, InvalidConfig>) {
    let config = match parsed {
        Ok(config) => config,
        Err(e) => {
            // The error is shown to a person: it must render.
            let _ = (e.to_string(), e.key(), e.line(), e.message());
            return;
        }
    };
    Fusebox::from_config(config.clone()).expect("an accepted config builds a registry");
    let clock = ManualClock::new();
    let fusebox = Fusebox::builder()
        .config(config.clone())
        .clock(clock.clone())
        .build()
        .expect("an accepted config builds a registry");
    let own: Vec<(String, fusebox::BreakerConfig)> = config
        .breakers
        .iter()
        .map(|(n, e)| (n.clone(), e.settings.clone()))
        .chain(
            config
                .dependencies
                .iter()
                .map(|(n, d)| (n.clone(), d.breaker.clone())),
        )
        .take(NAMES)
        .chain([("not-in-the-config".to_owned(), Default::default())])
        .collect();
    for name in config.dependencies.keys().take(NAMES) {
        // Built, not called: a configured retry may wait (real time).
        let _ = fusebox.pipeline(name);
    }
    for (name, settings) in own {
        let name = &name;
        let breaker = fusebox.breaker(name);
        for i in 0..16u32 {
            let _ = breaker.call(|| if i % 3 == 0 { Ok(()) } else { Err(()) });
        }
        let _ = breaker.state();
        // Far enough for any open period to end (the clock saturates).
        clock.advance(Duration::from_secs(u64::MAX / 4));
        if let Ok(permit) = breaker.try_acquire() {
            permit.success();
        }
        let _ = breaker.snapshot();
        fusebox.force_open(name).expect("a built breaker is known");
        fusebox.reset(name).expect("a built breaker is known");
        fusebox
            .reconfigure(name, settings)
            .expect("a breaker's accepted config is accepted again");
    }
    let _ = fusebox.snapshot();
    fusebox
        .reload(config.clone())
        .expect("an accepted config reloads");
    for name in config.bulkheads.keys().take(NAMES) {
        let bulkhead = fusebox.bulkhead(name);
        let held: Vec<_> = (0..4).filter_map(|_| bulkhead.try_acquire().ok()).collect();
        drop(held);
    }
    let _ = fusebox.bulkhead_snapshot();
}

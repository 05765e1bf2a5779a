//! The lab's scenario parser: `Scenario::parse` on any text, and, for a
//! scenario it accepts, a sweep parameter taken from the input's last line
//! applied to it (`--param NAME=FROM..TO:STEP`). Neither may panic; an
//! accepted scenario must stay accepted when re-checked through a sweep of
//! its own rate.
#![no_main]

use fusebox_lab::scenario::sweep::{apply, Sweep};
use fusebox_lab::scenario::{ParamValue, Scenario};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = Scenario::parse("fuzz.toml", text) else {
        return;
    };
    let rate = ParamValue::Num(scenario.rate);
    assert!(
        apply(&scenario, "rate", rate).is_ok(),
        "an accepted scenario refused its own rate"
    );
    // A last line such as `# open_for=0.1s..2s:0.1s` (a TOML comment).
    if let Some(spec) = text.lines().last().map(|l| l.trim_start_matches('#').trim()) {
        if let Ok(sweep) = Sweep::parse(spec) {
            for v in sweep.values.iter().take(16) {
                let _ = apply(&scenario, &sweep.name, *v);
            }
        }
    }
});

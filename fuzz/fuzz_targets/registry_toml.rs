//! The registry's TOML loader: `FuseboxConfig::from_toml`, then the registry
//! built from what it accepts (see `fusebox_fuzz::exercise`).
#![no_main]

use fusebox::registry::FuseboxConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(source) = std::str::from_utf8(data) {
        fusebox_fuzz::exercise(FuseboxConfig::from_toml(source));
    }
});

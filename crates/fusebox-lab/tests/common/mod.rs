//! Helpers shared by the lab's test files.

use fusebox_lab::scenario::Scenario;

/// The shipped scenario `scenarios/NAME.toml`.
pub fn shipped(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

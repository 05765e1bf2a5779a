//! What the dashboard's tests that run an external program share: finding
//! the program (skip with one line, or fail when CI requires it) and the
//! demo rig of `examples/dashboard.rs`.

#[path = "../../examples/dashboard.rs"]
#[allow(dead_code)] // the tests use `start`, not `main`
pub mod demo;

use std::path::PathBuf;

/// The path of `program` on `PATH`; `None` (after printing why) when it is
/// missing and the environment variable `require` is not `1`.
///
/// # Panics
///
/// When the program is missing and `require` is set to `1`.
pub fn external(program: &str, require: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let message = format!("{program} not found ({install})");
        if std::env::var(require).as_deref() == Ok("1") {
            panic!("{message}, and {require}=1 requires it");
        }
        eprintln!("skipping: {message}; set {require}=1 to make this a failure");
    }
    found
}

/// A fresh directory under the target dir, for a test's output.
pub fn out_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test's output dir");
    dir
}

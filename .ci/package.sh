#!/usr/bin/env bash
# The library as it would be published: `cargo package` and `cargo publish
# --dry-run` (each builds the packaged crate), then the unpacked package's
# tests built and a fast subset run, in a workspace of its own, so nothing
# outside crates/fusebox can leak into them (about 3 to 5 minutes on 2 cores
# after the workspace's own build, whose compiled dependencies it reuses).
#
#   bash .ci/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# A clean checkout (CI) packages as is; a working tree with changes needs
# --allow-dirty.
dirty=()
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then dirty=(--allow-dirty); fi
cargo package -p fusebox --locked "${dirty[@]}"
cargo publish --dry-run -p fusebox --locked "${dirty[@]}"

target="$(realpath "${CARGO_TARGET_DIR:-target}")"
# `cargo pkgid` ends in `#VERSION` (or `#fusebox@VERSION`).
version="$(cargo pkgid -p fusebox | sed 's/.*[#@]//')"
unpacked="$(mktemp -d)"
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$target/package/fusebox-$version.crate" -C "$unpacked"
pkg="$unpacked/fusebox-$version"
# The unpacked crate is a workspace root of its own wherever it lands, so its
# build artifacts have the same names in the shared target dir from one run
# to the next; its files keep the archive's times, which can be older than a
# previous package's build. New times make cargo build this package.
find "$pkg" -type f -exec touch {} +
printf '\n[workspace]\n' >>"$pkg/Cargo.toml"
test=(cargo test --manifest-path "$pkg/Cargo.toml" --all-features --locked)
export CARGO_TARGET_DIR="$target"
# Every test, example and benchmark target builds from the package alone.
"${test[@]}" --no-run
# A fast subset runs: the unit tests, the guide's registry file, the breaker's
# rules, the metrics and dashboard routes, and the README's and the guide's
# snippets (the packaged README is the one crates.io shows).
"${test[@]}" --lib --test readme_config --test breaker --test metrics --test dashboard_nest
"${test[@]}" --doc -- Readme guide

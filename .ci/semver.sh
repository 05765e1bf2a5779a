#!/usr/bin/env bash
# fusebox's public API against the last release, by cargo-semver-checks:
# a change that breaks the API without the version bump semver asks for
# (before 1.0: a minor bump) fails. The release's commit is in
# .ci/semver-baseline (RELEASING.md says how it gets there), so the check
# needs no tag in the clone.
#
#   bash .ci/semver.sh            # installs cargo-semver-checks if missing
#   bash .ci/semver.sh install    # only the install (CI starts it early)
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.51.0
tools="$(realpath -m "${CARGO_TARGET_DIR:-target}")/tools"
bin="$tools/bin/cargo-semver-checks"
if ! [ -x "$bin" ] || ! "$bin" --version | grep -q "$version"; then
  CARGO_TARGET_DIR="$tools/build" cargo install cargo-semver-checks --locked \
    --version "$version" --root "$tools" --quiet
  rm -rf "$tools/build"
fi
[ "${1:-}" = install ] && exit 0
read -r tag commit < .ci/semver-baseline
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "semver check: the baseline $tag ($commit) is not in this clone (a shallow clone?); fetch it or tag it" >&2
  exit 1
fi
echo "semver check: fusebox against $tag ($commit)"
PATH="$tools/bin:$PATH" cargo semver-checks check-release -p fusebox \
  --baseline-rev "$commit" --all-features

#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a fixed time on the nightly
# toolchain, starting from the committed seeds (fuzz/seeds/TARGET); fails on
# any crash, panic, leak or timeout (libFuzzer exits non-zero and leaves the
# input in fuzz/artifacts/TARGET/).
#
#   bash .ci/fuzz.sh            # 45 s per target
#   FUZZ_SECONDS=600 bash .ci/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-45}"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
for target in $(cargo +nightly fuzz list); do
  # New inputs go to a scratch corpus, so the committed seeds stay as they are.
  corpus="$(mktemp -d)"
  echo "fuzz: $target for ${seconds}s"
  cargo +nightly fuzz run "$target" "$corpus" "fuzz/seeds/$target" -- \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1
  rm -rf "$corpus"
done

#!/usr/bin/env bash
# Instructions per call on the closed path of a breaker shared through a
# fleet against the same breaker unshared, counted by valgrind's callgrind
# (BENCHMARKS.md, "Fleet").
#
#   bash crates/fusebox-bench/results/fleet-instructions.sh
#
# Each case runs twice under callgrind (CALLS and 2 x CALLS calls after the
# same set-up: a redis-server on loopback, a fleet node, a 1,000-call
# warm-up), counting only inside the calling loop (--toggle-collect on
# fleet::calls, so the fleet's own tasks on other threads are not counted);
# the difference divided by CALLS is one call, the loop included.
# Needs valgrind and redis-server (Debian: valgrind, redis-server).
set -euo pipefail
cd "$(dirname "$0")/../../.."
CALLS=${CALLS:-20000}
cargo build --release -p fusebox-bench --bin fleet >&2
BIN=target/release/fleet

count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        '--toggle-collect=fleet::calls' \
        "$BIN" --closed-path "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'
}

echo "# instructions per call (callgrind; ${CALLS} vs $((2 * CALLS)) calls, differenced); commit $(git rev-parse --short HEAD)"
for policy in consecutive rate; do
    for sharing in unshared shared; do
        a=$(count "$policy" "$sharing" "$CALLS")
        b=$(count "$policy" "$sharing" $((2 * CALLS)))
        awk -v p="$policy" -v s="$sharing" -v a="$a" -v b="$b" -v n="$CALLS" \
            'BEGIN { printf "%s\t%s\t%.1f\n", p, s, (b - a) / n }'
    done
done

#!/usr/bin/env bash
# Instructions per call, counted by valgrind's callgrind, for the
# single-thread entries of the benchmarks (fusebox and the peers).
#
#   bash crates/fusebox-bench/results/instructions.sh [OUT]   # default: results/instructions.txt
#   SCENARIOS="keyed_1t hedge_1t" STD_SCENARIOS="" bash crates/fusebox-bench/results/instructions.sh /tmp/new.txt
#
# SCENARIOS and STD_SCENARIOS (space-separated scenario names, see
# `instructions --list`) choose what is measured; an empty STD_SCENARIOS
# measures no `[std clock]` row and skips that build.
#
# Each entry runs twice under callgrind (CALLS and 2 x CALLS calls, after the
# same set-up and warm-up), counting only inside the timed loop
# (--toggle-collect on the Runner::run functions); the difference divided by
# CALLS is the cost of one call, the loop's own ~13 instructions included
# (the `baseline` entry). Counts do not move with the machine's load.
# Installs valgrind (Debian) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-crates/fusebox-bench/results/instructions.txt}
CALLS=${CALLS:-20000}
SCENARIOS=${SCENARIOS:-"closed_1t open_1t mixed_1t errors1_1t errors5_1t errors10_1t policies instrumented_1t stack_1t bulkhead_1t keyed_1t hedge_1t"}
# fusebox's entries of these scenarios again in a build without fusebox's
# default feature `quanta` (std's `Instant` as the clock instead of the
# time-stamp counter), as `ENTRY[std clock]`: the paths that read the clock
# per call. Set but empty: none (`-`, not `:-`, so that "" is not replaced
# by the default).
STD_SCENARIOS=${STD_SCENARIOS-"open_1t errors5_1t policies"}

if ! command -v valgrind >/dev/null 2>&1; then
    echo "instructions.sh: installing valgrind" >&2
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends valgrind
fi

TARGET=${CARGO_TARGET_DIR:-target}
STD_BIN=$TARGET/release/instructions-std-clock
if [ -n "${STD_SCENARIOS// /}" ]; then
    cargo build --release -p fusebox-bench --bin instructions --no-default-features --features adaptive >&2
    cp "$TARGET/release/instructions" "$STD_BIN"
fi
cargo build --release -p fusebox-bench --bin instructions >&2
BIN=$TARGET/release/instructions

# count BINARY SCENARIO ENTRY CALLS
count() {
    local bin=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        '--toggle-collect=*as fusebox_bench::harness::Runner>::run' \
        "$bin" "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'
}

# Which code is measured (before OUT is rewritten: it is under crates/ too).
COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates ':!'"$OUT" || echo ' + uncommitted changes')"

{
    echo "# instructions per call (callgrind; ${CALLS} vs $((2 * CALLS)) calls, differenced)"
    echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "# $(valgrind --version); $(uname -m); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "# commit: $COMMIT"
    # measure BINARY SCENARIOS ENTRY-GLOB SUFFIX: one line per entry.
    measure() {
        "$1" --list | while read -r scenario entry; do
            case " $2 " in *" $scenario "*) ;; *) continue ;; esac
            # shellcheck disable=SC2254 # a glob on purpose
            case "$entry" in $3) ;; *) continue ;; esac
            # tower-resilience's time window keeps one record per call and scans
            # them all: its cost grows with the fill, there is no steady state.
            case "$entry" in tower-resilience/time_window) continue ;; esac
            a=$(count "$1" "$scenario" "$entry" "$CALLS")
            b=$(count "$1" "$scenario" "$entry" $((2 * CALLS)))
            awk -v s="$scenario" -v e="$entry$4" -v a="$a" -v b="$b" -v n="$CALLS" \
                'BEGIN { printf "%s\t%s\t%.1f\n", s, e, (b - a) / n }'
        done
    }
    measure "$BIN" "$SCENARIOS" '*' ''
    if [ -n "${STD_SCENARIOS// /}" ]; then
        measure "$STD_BIN" "$STD_SCENARIOS" 'fusebox*' '[std clock]'
    fi
} >"$OUT"
echo "instructions.sh: wrote $OUT" >&2

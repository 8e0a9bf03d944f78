#!/usr/bin/env bash
# Runs the core's unit tests under Miri (undefined-behaviour checker), each test alone with a time
# limit, so one slow interpretation does not hide the rest. Default features: the no_std core
# (quantization, observers, requantization, kernels, model reader, interpreter). The Arm DSP and
# wasm SIMD modules are not compiled for the host, so Miri sees only portable code.
#
# Usage: scripts/miri.sh [SECONDS_PER_TEST] [FILTER]
#   SECONDS_PER_TEST (default 120); FILTER: only tests whose name contains it.
#   MQ_MIRI_JOBS (default 2) tests at once. Property tests run 8 cases each (PROPTEST_CASES).
# Summary: "miri: P passed, F failed (UB or test failure), T timed out, of N".
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT="${1:-120}"
FILTER="${2:-}"
JOBS="${MQ_MIRI_JOBS:-2}"
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri.sh: installing miri (rustup component add --toolchain nightly miri rust-src)" >&2
    rustup component add --toolchain nightly miri rust-src
fi
# libm detects FMA on x86-64 at run time with `cpuid` (inline asm, which Miri cannot run): under
# Miri it is built with its portable code only (`force-soft-floats`; the same correctly rounded
# results).
FEATURES=(--features libm/force-soft-floats)
export PROPTEST_CASES="${PROPTEST_CASES:-8}" MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
OUT=target/miri-results
rm -rf "$OUT" && mkdir -p "$OUT"
cargo +nightly miri test -q -p microquant --lib "${FEATURES[@]}" --no-run 2>&1 | tail -1
mapfile -t TESTS < <(cargo +nightly miri test -q -p microquant --lib "${FEATURES[@]}" -- --list 2>/dev/null | sed -n 's/: test$//p' | grep -F -- "$FILTER")
echo "miri: ${#TESTS[@]} tests, ${LIMIT} s each, $JOBS at once"
run_one() {
    local name=$1 rc=0 f
    f="$OUT/$(echo "$name" | tr ':' '_')"
    timeout "$LIMIT" cargo +nightly miri test -q -p microquant --lib $FEATURES_STR -- --exact "$name" >"$f.log" 2>&1 || rc=$?
    case $rc in
        0) echo passed ;;
        124) echo "timed out" ;;
        *) echo failed ;;
    esac >"$f.result"
    echo "$name: $(cat "$f.result")"
}
export -f run_one
export OUT LIMIT FEATURES_STR="${FEATURES[*]}"
printf '%s\n' "${TESTS[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {}
p=$(grep -lx passed "$OUT"/*.result | wc -l || true)
f=$(grep -lx failed "$OUT"/*.result | wc -l || true)
t=$(grep -lx "timed out" "$OUT"/*.result | wc -l || true)
echo "miri: $p passed, $f failed (UB or test failure), $t timed out, of ${#TESTS[@]}"
if [ "$f" -ne 0 ]; then
    grep -lx failed "$OUT"/*.result | sed 's/\.result$/.log/' | head -3 | xargs -r tail -20
    exit 1
fi

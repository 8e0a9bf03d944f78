#!/usr/bin/env bash
# Fuzzes every entry point that reads user input (fuzz/, libFuzzer through cargo-fuzz):
#   mq_load       .mq reader + Interpreter::new validation + one invoke (fixed 256 KiB arena)
#   onnx_import   microquant::onnx::import
#   tflite_import microquant::tflite::import_with_tensor_map
#   npy_read      core's .npy reader (the CLI's and the npm package's)
#   wasm_load     what the npm package's loadModel does, without JS (import, prepare, compile, load)
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET (default 60): each target stops at this time or at 10 million
#   executions, whichever comes first. MQ_FUZZ_JOBS (default 1) targets run at once.
# A crash, a panic, a hang (> MQ_FUZZ_TIMEOUT s on one input, default 10) or an OOM
# (> MQ_FUZZ_RSS_MB MiB, default 2048; also any single allocation that large) fails the run:
# the reproducer is in fuzz/artifacts/<target>/ (reproduce with
# `cd fuzz && cargo +nightly fuzz run <target> artifacts/<target>/<file>`).
# MQ_FUZZ_SANITIZER (default address): `none` runs the same targets without AddressSanitizer,
# 3-8 times faster (the code under test is safe Rust; overflow checks stay on).
# Summary lines: "<target>: <executions> executions in <seconds> s, <result>".
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(mq_load onnx_import tflite_import npy_read wasm_load)
fi
RUNS=10000000
TIMEOUT="${MQ_FUZZ_TIMEOUT:-10}"
RSS_MB="${MQ_FUZZ_RSS_MB:-2048}"
JOBS="${MQ_FUZZ_JOBS:-1}"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz.sh: needs the nightly toolchain (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

cd fuzz
# Seeds from the repository's models and data (fuzz/src/bin/make_seeds.rs), with a plain build.
cargo build --release --bin make_seeds
./target/release/make_seeds ..
# Release build with overflow checks on, so integer overflow in plain arithmetic is a finding
# too. Debug assertions stay off: the fixed-point helpers (core/src/requant.rs) debug-assert
# TFLite's contract that `x << shift` fits an i32, which TFLite itself leaves to wrap (see
# docs/ROBUSTNESS.md): a model may legitimately reach it on extreme inputs.
SANITIZER="${MQ_FUZZ_SANITIZER:-address}"
# One target at a time: `cargo fuzz build` alone would also instrument make_seeds, which has no
# libFuzzer entry point (it links only with a sanitizer runtime).
for t in "${TARGETS[@]}"; do
    RUSTFLAGS="${RUSTFLAGS:-} -C overflow-checks=on" cargo +nightly fuzz build -O -s "$SANITIZER" "$t"
done

BIN=target/x86_64-unknown-linux-gnu/release
mkdir -p artifacts logs
run_one() {
    local t="$1" max_len=()
    # .mq inputs are resealed and run: keep them small (the seeds are <= 64 KiB).
    [ "$t" = mq_load ] && max_len=(-max_len=65536)
    mkdir -p "artifacts/$t"
    local start end rc=0
    start=$(date +%s)
    "$BIN/$t" "corpus/$t" "${max_len[@]}" -runs="$RUNS" -max_total_time="$SECONDS_PER_TARGET" \
        -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" -malloc_limit_mb="$RSS_MB" -print_final_stats=1 \
        -artifact_prefix="artifacts/$t/" >"logs/$t.log" 2>&1 || rc=$?
    end=$(date +%s)
    local execs
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' | tail -1)
    local result="no crash, hang or OOM"
    if [ "$rc" -ne 0 ]; then
        result="FAILED (exit $rc): $(grep -m1 -E 'ERROR: libFuzzer|panicked|SUMMARY' "logs/$t.log" || true); see fuzz/logs/$t.log"
    fi
    echo "$t: ${execs:-?} executions in $((end - start)) s (sanitizer: $SANITIZER), $result" | tee "logs/$t.summary"
    return "$rc"
}

status=0
pids=()
for t in "${TARGETS[@]}"; do
    run_one "$t" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$JOBS" ]; then
        wait "${pids[0]}" || status=1
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
echo "--- summary (fuzz/logs/*.summary)"
for t in "${TARGETS[@]}"; do cat "logs/$t.summary"; done
exit "$status"

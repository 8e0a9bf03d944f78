#!/usr/bin/env bash
# The npm package benchmark: regenerates the "## wasm package" section of BENCHMARKS.md (the rest
# of the file is left as it is):
#   1. sizes: the release .wasm of the package (converter + runtime) and of the runtime alone
#      (--no-default-features), raw and gzipped, after wasm-opt from the npm `binaryen` package
#      (web-demo/node_modules/.bin; never Debian's); the same two built for size (opt-level "z",
#      fat LTO, wasm-opt -Oz); onnxruntime-web's wasm;
#   2. inference time per model in Node, one thread: the package's wasm against onnxruntime-web
#      (npm, wasm backend, SIMD, one thread) on the same int8 models, measured in one Node process
#      (wasm/bench/bench.mjs): the MLPerf Tiny int8 models (ours: the TFLite model compiled to .mq;
#      ORT: our QDQ ONNX export of it) and the digits CNN (ours: quantized by the package; ORT: our
#      QDQ export, and ONNX Runtime's own quantize_static model when Python is there);
#   3. calibration throughput (samples/s): the package in Node against ONNX Runtime's Python
#      quantize_static calibrator (wasm/bench/ort_python.py) on the digits CNN and its 100 images.
# Python (onnxruntime 1.32.0, .venv) is optional: without it the ORT-Python
# column and ORT's own QDQ model are left out. CI does not run benchmarks.
#
# Usage: scripts/bench-wasm.sh
# Environment: MQ_BENCH_OUT (default BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/benchmarks.sh
ROOT=$PWD
OUT="${MQ_BENCH_OUT:-BENCHMARKS.md}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
log() { printf '[bench-wasm] %s\n' "$*" >&2; }

[ -x web-demo/node_modules/.bin/wasm-opt ] || (cd web-demo && npm ci --no-audit --no-fund)
[ -d wasm/bench/node_modules/onnxruntime-web ] || (cd wasm/bench && npm ci --no-audit --no-fund)

log "building the package (release, wasm-opt -O3): converter + runtime, runtime alone"
bash wasm/build-npm.sh "$TMP/pkg" > "$TMP/build.log"
log "building for size (opt-level z, fat LTO, wasm-opt -Oz)"
MQ_WASM_SIZE=1 bash wasm/build-npm.sh "$TMP/pkg-small" > "$TMP/build-small.log"

log "exporting the QDQ ONNX models"
node wasm/bench/bench.mjs "$TMP/pkg" "$TMP" --export
PY=""
for p in "$ROOT/.venv/bin/python" .venv/bin/python; do [ -x "$p" ] && PY=$p && break; done
if [ -n "$PY" ]; then
  log "ONNX Runtime (Python, $PY): quantize_static calibration, its own QDQ model of the digits CNN"
  "$PY" wasm/bench/ort_python.py "$TMP" "$TMP/ort_python.json"
else
  log "no Python venv: the ONNX Runtime Python column is left out"
fi
log "measuring (one Node process, one thread)"
MQ_BENCH_SMALL_PKG="$TMP/pkg-small" node wasm/bench/bench.mjs "$TMP/pkg" "$TMP"

node wasm/bench/report.mjs "$TMP/bench.json" "$TMP/ort_python.json" > "$TMP/section.md"

# Replace the "## wasm package" section of $OUT (up to the next "## " heading), or append it.
replace_section "$OUT" "wasm package" "$TMP/section.md"
log "wrote the wasm package section of $OUT"

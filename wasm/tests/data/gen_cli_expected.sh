#!/usr/bin/env bash
# The CLI's output for the bundled digits example (web-demo/examples/), which wasm/tests/api.rs
# and the web demo's e2e test must reproduce byte for byte: the same model, samples and options
# through `microquant quantize` (the release build of this checkout) give these .mq, report and
# QDQ ONNX files. Regenerate after any change to the converter:
#   bash wasm/tests/data/gen_cli_expected.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build -q --release -p microquant-cli
MQ=target/release/microquant
EX=web-demo/examples
OUT=wasm/tests/data
run() {  # run NAME ARGS...: one configuration (MODEL: the float model, default the digits CNN)
  local name=$1; shift
  "$MQ" quantize "${MODEL:-$EX/digits_cnn.onnx}" --calib "$EX/digits_calib.npy" --labels "$EX/digits_labels.npy" \
    -o "$OUT/$name.mq" --report "$OUT/$name.report.json" --qdq "$OUT/$name.qdq.onnx" "$@" > /dev/null
  echo "$name: $(wc -c < "$OUT/$name.mq") bytes, sha256 $(sha256sum "$OUT/$name.mq" | cut -c1-16)"
}
mkdir -p "$OUT/portable"
run digits_default --qdq-portable "$OUT/portable/digits_default.qdq.onnx"
run digits_entropy_per_tensor --observer entropy --per-tensor
run digits_percentile_single --observer percentile:99.9 --layer-observer /fc2/Gemm=histogram --rounding single
run digits_int16_layers --observer histogram --int16 /pw/Conv /fc1/Gemm
# 4-bit weights rounded by AdaRound (its default steps, patches and seed).
run digits_w4_adaround --weight-bits 4 --adaround
# A QDQ ONNX model as input (the CLI's own portable QDQ export of the first case; --qdq writes
# the exact form, integer arithmetic for ONNX Runtime): its scales are kept.
MODEL=$OUT/portable/digits_default.qdq.onnx run digits_qdq_input
# Weight-only (int8 weights, float compute) and dynamic (int8 weights, inputs quantized per
# call): the reports (the ONNX models they write are tests/golden/hybrid/digits.onnx and
# dynamic_digits.onnx, checked against ONNX Runtime by tests/gen/gen_hybrid.py).
hybrid() {  # hybrid MODE NAME GOLDEN
  local wo
  wo=$(mktemp --suffix=.onnx)
  "$MQ" quantize "$EX/digits_cnn.onnx" --mode "$1" --calib "$EX/digits_calib.npy" --labels "$EX/digits_labels.npy" \
    -o "$wo" --report "$OUT/$2.report.json" > /dev/null
  cmp "$wo" "tests/golden/hybrid/$3" || { echo "the $1 export differs from tests/golden/hybrid/$3" >&2; exit 1; }
  rm -f "$wo"
  echo "$2: report written"
}
hybrid weight-only digits_weight_only digits.onnx
hybrid dynamic digits_dynamic dynamic_digits.onnx
# The producer metadata entry the CLI writes (the tests pass it to the npm package, whose own
# default names no front end).
"$MQ" inspect --json "$OUT/digits_default.mq" | sed -n 's/^ *"producer": "\(.*\)",\{0,1\}$/\1/p' > "$OUT/cli_producer.txt"
cat "$OUT/cli_producer.txt"

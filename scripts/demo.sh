#!/usr/bin/env bash
# The main job, on a fresh machine (set-up included):
#   1. quantize the bundled example, a float CNN exported from PyTorch to ONNX (8x8 digits from
#      scikit-learn, web-demo/examples/), on its 100 calibration samples: per-layer report;
#   2. run the int8 model on the host and on an emulated Cortex-M4F (QEMU mps2-an386), check the
#      outputs are identical, and print the prediction, arena (RAM), flash and instructions;
#   3. the same for an int8 TFLite model: the MLPerf Tiny keyword-spotting model, imported.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/setup.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
EX=web-demo/examples

cargo build -q --release -p microquant-cli
MQ=$ROOT/target/release/microquant

arena_of() { $MQ inspect "$1" --json | sed -n 's/^ *"arena_bytes": \([0-9]*\),*/\1/p'; }
insns_of() { sed -n 's/.*: \([0-9]*\) instructions per inference.*/\1/p' "$1" | tail -1; }

echo "=== 1. quantize $EX/digits_cnn.onnx (float, from PyTorch) on $EX/digits_calib.npy"
$MQ quantize "$EX/digits_cnn.onnx" --calib "$EX/digits_calib.npy" --labels "$EX/digits_labels.npy" \
  --observer histogram -o "$T/digits.mq" --report "$T/digits.json" --qdq "$T/digits_qdq.onnx" | tee "$T/quantize.log"

echo "=== 2. run it: host, then Cortex-M4F (QEMU mps2-an386, -icount shift=0)"
$MQ run "$T/digits.mq" --input "$EX/digits_calib.npy" -o "$T/digits_host.npy" 2>&1 | tee "$T/digits_host.log"
$MQ run "$T/digits.mq" --input "$EX/digits_calib.npy" -o "$T/digits_m4.npy" --target qemu-m4 2>&1 | tee "$T/digits_m4.log"

echo "=== 3. import models/mlperf-tiny/kws_ref_model_int8.tflite (int8 TFLite), run it on the host and the Cortex-M4F"
$MQ import models/mlperf-tiny/kws_ref_model_int8.tflite -o "$T/kws.mq"
$MQ run "$T/kws.mq" --input models/examples/kws_samples.npy -o "$T/kws_host.npy" > "$T/kws_host.log" 2>&1
$MQ run "$T/kws.mq" --input models/examples/kws_samples.npy -o "$T/kws_m4.npy" --target qemu-m4 2>&1 | tee "$T/kws_m4.log"

echo "=== strip names and metadata (what the firmware embeds)"
$MQ strip "$T/digits.mq" -o "$T/digits_lean.mq"
$MQ strip "$T/kws.mq" -o "$T/kws_lean.mq"

echo "=== firmware image for mps2-an386 with the quantized example embedded (stripped by its build)"
(cd firmware && MQ_MODEL="$T/digits.mq" cargo build -q --release --target thumbv7em-none-eabihf)
SIZE="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/host: //p')/bin/llvm-size"
ELF=firmware/target/thumbv7em-none-eabihf/release/microquant-firmware
flash=$("$SIZE" -A "$ELF" | awk '$1==".vector_table"||$1==".text"||$1==".rodata"||$1==".data"{s+=$2} END{print s}')

same() { if cmp -s "$1" "$2"; then echo "identical int8 outputs on the host and the Cortex-M4F"; else echo "OUTPUTS DIFFER"; fi; }
digits_same=$(same "$T/digits_host.npy" "$T/digits_m4.npy")
kws_same=$(same "$T/kws_host.npy" "$T/kws_m4.npy")
echo
echo "digits CNN (quantized here from float ONNX)"
printf '  %-30s %s\n' \
  "accuracy (calibration set)" "$(sed -n 's/^accuracy: //p' "$T/quantize.log" | head -1)" \
  "prediction (Cortex-M4F)" "$(grep -m1 '^sample 0:' "$T/digits_m4.log")" \
  "arena (RAM, planned)" "$(arena_of "$T/digits.mq") bytes" \
  "model (.mq)" "$(stat -c %s "$T/digits.mq") bytes; $(stat -c %s "$T/digits_lean.mq") stripped (flash)" \
  "firmware image (flash, total)" "$flash bytes (code + model)" \
  "instructions per inference" "$(insns_of "$T/digits_m4.log") (QEMU -icount, Cortex-M4F)" \
  "host vs device" "$digits_same"
echo "MLPerf Tiny KWS (int8 TFLite, imported)"
printf '  %-30s %s\n' \
  "prediction (Cortex-M4F)" "$(grep -m1 '^sample 0:' "$T/kws_m4.log")" \
  "arena (RAM, planned)" "$(arena_of "$T/kws.mq") bytes" \
  "model (.mq)" "$(stat -c %s "$T/kws.mq") bytes; $(stat -c %s "$T/kws_lean.mq") stripped (flash)" \
  "instructions per inference" "$(insns_of "$T/kws_m4.log") (QEMU -icount, Cortex-M4F)" \
  "host vs device" "$kws_same"
[ "$digits_same" != "OUTPUTS DIFFER" ] && [ "$kws_same" != "OUTPUTS DIFFER" ]

#!/usr/bin/env bash
# The main job: import the MLPerf Tiny keyword-spotting model (int8 TFLite), run it on the host
# and on an emulated Cortex-M4F (QEMU mps2-an386), and print the prediction, the arena (RAM),
# the flash and the instructions per inference beside the host's identical result.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/setup.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
MODEL=models/mlperf-tiny/kws_ref_model_int8.tflite
INPUT=models/examples/kws_samples.npy   # three golden inputs (tests/gen/gen_demo_inputs.py)

cargo build -q --release -p microquant-cli
MQ=$ROOT/target/release/microquant

echo "=== import $MODEL"
$MQ import "$MODEL" -o "$T/kws.mq"
arena=$($MQ inspect "$T/kws.mq" --json | sed -n 's/^ *"arena_bytes": \([0-9]*\),*/\1/p')
mq_bytes=$(stat -c %s "$T/kws.mq")

echo "=== host"
$MQ run "$T/kws.mq" --input "$INPUT" -o "$T/host.npy" 2>&1 | tee "$T/host.log"

echo "=== Cortex-M4F (QEMU mps2-an386, -icount shift=0)"
$MQ run "$T/kws.mq" --input "$INPUT" -o "$T/m4.npy" --target qemu-m4 2>&1 | tee "$T/m4.log"
insns=$(sed -n 's/.*: \([0-9]*\) instructions per inference.*/\1/p' "$T/m4.log" | tail -1)

echo "=== firmware image for mps2-an386 with this model embedded"
(cd firmware && cargo build -q --release --target thumbv7em-none-eabihf)
SIZE="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/host: //p')/bin/llvm-size"
ELF=firmware/target/thumbv7em-none-eabihf/release/microquant-firmware
flash=$("$SIZE" -A "$ELF" | awk '$1==".vector_table"||$1==".text"||$1==".rodata"||$1==".data"{s+=$2} END{print s}')

echo
if cmp -s "$T/host.npy" "$T/m4.npy"; then same="identical int8 outputs on the host and the Cortex-M4F"; else same="OUTPUTS DIFFER"; fi
pred=$(grep -m1 '^sample 0:' "$T/m4.log" || true)
printf '%-32s %s\n' "prediction (Cortex-M4F)" "$pred" \
  "arena (RAM, planned)" "$arena bytes" \
  "model (.mq, flash)" "$mq_bytes bytes" \
  "firmware image (flash, total)" "$flash bytes (code + model)" \
  "instructions per inference" "$insns (QEMU -icount, Cortex-M4F)" \
  "host vs device" "$same"
[ "$same" != "OUTPUTS DIFFER" ]

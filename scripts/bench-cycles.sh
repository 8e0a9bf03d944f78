#!/usr/bin/env bash
# scripts/bench-cycles.sh: the "## Cycles on the Cortex-M4" section of BENCHMARKS.md, regenerated.
#
# QEMU counts instructions, a Cortex-M4 spends cycles. For each MLPerf Tiny model this builds the
# firmware application for mps2-an386 (Cortex-M4F) with the model embedded, as scripts/bench-firmware.sh
# does, and runs it twice:
#   1. with `-icount shift=0`: instructions per inference, from the application's own count (SysTick);
#   2. the minimal image with `-d in_asm,exec,nochain`: every block QEMU translates and executes,
#      streamed through a FIFO into firmware/tools/cycle_estimate.py, which counts the executed instructions by class (ALU,
#      multiply, loads, stores, load/store multiple, branches taken and not taken, FPU) and applies the
#      Cortex-M4 TRM's cycle counts (zero wait states; a taken branch 1 + P with P = 1 to 3).
# Estimated cycles per inference = instructions per inference x the cycles per instruction of one
# inference, traced on the `minimal` image (src/bin/minimal.rs) built for 1 and for 3 inferences:
# the difference holds inferences only (no start-up, validation or logging). Beside them, the
# best published MLPerf Tiny Cortex-M4 results in cycles and TFLite Micro + CMSIS-NN's instructions
# (both from the issue tracker / ../shared/models/README.md, measured elsewhere).
#
# Environment: MQ_BENCH_MODELS (default "kws ic vww ad"), DRY=1 (print the section only).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/benchmarks.sh
ROOT=$PWD
FW=$ROOT/firmware
TD=$FW/target/bench-cycles
MODELS=${MQ_BENCH_MODELS:-"kws ic vww ad"}
BOARD=mps2-an386
TRIPLE=thumbv7em-none-eabihf
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
command -v qemu-system-arm >/dev/null || { echo "bench-cycles: qemu-system-arm not found (run scripts/setup.sh)" >&2; exit 127; }

file_of() { case $1 in
  kws) echo models/mlperf-tiny/kws_ref_model_int8.tflite ;; ic) echo models/mlperf-tiny/ic_resnet8_int8.tflite ;;
  vww) echo models/mlperf-tiny/vww_96_int8.tflite ;; ad) echo models/mlperf-tiny/ad01_int8.tflite ;; esac; }
# The best published MLPerf Tiny results on a Cortex-M4 (cycles = latency x clock): ST X-CUBE-AI 9.0
# on an STM32L4R5 at 120 MHz (v1.2) for KWS, IC, VWW; Plumerai for AD (v1.1).
mlperf_of() { case $1 in
  kws) echo "5,180,000|ST X-CUBE-AI" ;; ic) echo "19,800,000|ST X-CUBE-AI" ;;
  vww) echo "10,670,000|ST X-CUBE-AI" ;; ad) echo "486,000|Plumerai" ;; esac; }
fmt() { local n=$1 s=""; while [ ${#n} -gt 3 ]; do s=",${n: -3}$s"; n=${n:0:${#n}-3}; done; echo "$n$s"; }

ROWS=$WORK/rows.md
MIX=$WORK/mix.md
: >"$ROWS"; : >"$MIX"
for model in $MODELS; do
  echo "--- $model" >&2
  (cd "$FW" && MQ_BOARD=$BOARD MQ_MODEL="$ROOT/$(file_of "$model")" \
     cargo build -q --release --target $TRIPLE --target-dir "$TD" --bin microquant-firmware)
  elf=$TD/$TRIPLE/release/microquant-firmware
  # 1. Instructions per inference (the application checks every output against TFLite Micro's).
  (cd "$FW" && MQ_BOARD=$BOARD QEMU_EXTRA="-icount shift=0" QEMU_TIMEOUT=900 ./qemu-run.sh "$elf") >"$WORK/$model.log" 2>&1 \
    || { echo "bench-cycles: $model failed:" >&2; tail -n 5 "$WORK/$model.log" >&2; exit 1; }
  grep -q "bit-identical with TFLite Micro" "$WORK/$model.log" || { echo "bench-cycles: $model: outputs not checked" >&2; exit 1; }
  instr=$(grep -o "instructions_per_inference=[0-9]*" "$WORK/$model.log" | cut -d= -f2)
  # 2. The traces, streamed (they would be gigabytes on disk): the minimal image (the model, its
  #    kernels, nothing else) built to run 1 and 3 inferences; their difference is 2 inferences'
  #    instructions exactly, without start-up, validation or logging.
  for runs in 1 3; do
    (cd "$FW" && MQ_BOARD=$BOARD MQ_MODEL="$ROOT/$(file_of "$model")" MQ_MINIMAL_RUNS=$runs MQ_MINIMAL_SAME_INPUT=1 \
       cargo build -q --release --target $TRIPLE --target-dir "$TD" --bin minimal)
    fifo=$WORK/$model.$runs.fifo
    mkfifo "$fifo"
    python3 firmware/tools/cycle_estimate.py "$fifo" --exclude "" --label "$model x$runs" --json "$WORK/$model.$runs.json" &
    py=$!
    timeout 1800 qemu-system-arm -machine $BOARD -cpu cortex-m4 -nographic -monitor none -serial none \
      -semihosting-config enable=on,target=native -d in_asm,exec,nochain -D "$fifo" \
      -kernel "$TD/$TRIPLE/release/minimal" >/dev/null
    wait $py
  done
  python3 - "$WORK/$model" "$model" "$instr" "$(mlperf_of "$model")" >>"$ROWS" 2>>"$MIX" <<'EOF'
import json, sys
one, three = (json.load(open(f"{sys.argv[1]}.{k}.json")) for k in (1, 3))
# Two inferences: the 3-inference run minus the 1-inference run.
r = {k: three[k] - one[k] for k in ("instructions", "base_cycles", "taken", "not_taken")}
r["counts"] = {k: three["counts"][k] - one["counts"][k] for k in three["counts"]}
r["cycles"] = {p: three["cycles"][p] - one["cycles"][p] for p in three["cycles"]}
model, instr, (peer, who) = sys.argv[2], int(sys.argv[3]), sys.argv[4].split("|")
n = r["instructions"]
cpi = {p: r["cycles"][str(p)] / n for p in (1, 2, 3)}
c = {p: round(instr * cpi[p]) for p in (1, 2, 3)}
f = lambda v: f"{v:,}"
peer_n = int(peer.replace(",", ""))
print(f"| {model} | {f(instr)} | {f(n // 2)} | {cpi[2]:.3f} | {f(c[1])} – {f(c[3])} | **{f(c[2])}** | {peer} ({who}) | {c[2] / peer_n:.2f} |")
k = r["counts"]
sh = lambda key: f"{100 * k[key] / n:.1f} %"
print(f"| {model} | {sh('alu')} | {sh('mul')} | {sh('load')} | {sh('store')} | {100 * (k['load_multiple'] + k['store_multiple']) / n:.1f} % "
      f"| {100 * r['taken'] / n:.1f} % / {100 * r['not_taken'] / n:.1f} % | {100 * (k['fp'] + k['fp_slow'] + k['div']) / n:.1f} % |",
      file=sys.stderr)
EOF
done

SECTION=$WORK/section.md
{
  echo "## Cycles on the Cortex-M4"
  echo
  echo "Regenerated by \`scripts/bench-cycles.sh\` ($(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
  echo "QEMU $(qemu-system-arm --version | head -1 | awk '{print $4}')). QEMU counts instructions; a Cortex-M4 retires at most one per"
  echo "cycle and many take more. Each model's minimal image (mps2-an386; src/bin/minimal.rs) is traced under QEMU"
  echo "(\`-d in_asm,exec,nochain\`); \`firmware/tools/cycle_estimate.py\` counts the executed instructions of the"
  echo "inference code by class and applies the cycle counts of the Cortex-M4 Technical Reference Manual (Table 3-1,"
  echo "zero wait states): loads and stores 2 cycles, 1 when they follow another single load or store (pipelined),"
  echo "LDRD/STRD 3, LDM/STM/PUSH/POP 1 + N, a taken branch 1 + P with a pipeline refill P of 1 to 3 cycles, SDIV 2–12"
  echo "(counted 7), everything else in these kernels 1 (SMLAD, SMLAL, SXTB16, SSAT included). Cycles per inference ="
  echo "the instructions per inference (QEMU \`-icount shift=0\`, the application's count) × the cycles per instruction"
  echo "of one inference, traced on the \`minimal\` image (the model and its kernels only) built for 1 and for 3"
  echo "inferences on the same input window (the input is generated once, before both), the difference halved; the range"
  echo "is P = 1 to 3, the bold figure P = 2. The traced column is the minimal image's own count per inference, a check"
  echo "that the trace holds the inferences alone: it agrees with the application's count within 0.1–2.3 % (the minimal"
  echo "image's log line per inference on one side, the application's profiling hook on the other)."
  echo
  echo "| model | instructions / inference | traced (minimal image) | cycles / instruction (P = 2) | estimated cycles (P = 1 – 3) | estimated cycles (P = 2) | best published Cortex-M4 (cycles) | ratio |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  cat "$ROWS"
  echo
  echo "Instruction mix (share of the executed inference instructions):"
  echo
  echo "| model | ALU, extend, saturate | multiply / MAC | single load | single store | LDRD/STRD/LDM/STM/PUSH/POP | branches taken / not taken | FPU, divide |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  cat "$MIX"
  echo
  echo "What the estimate leaves out, because QEMU models none of it:"
  echo
  echo "- **Flash wait states.** The published figures ran on an STM32L4R5 at 120 MHz: 5 wait states on flash,"
  echo "  hidden for instructions in loops by ST's ART accelerator (instruction cache and prefetch), not always for"
  echo "  data read from flash, which here is every weight and per-channel multiplier. Our weights stay in flash"
  echo "  (read in place); a part that needs them at zero wait states can copy them to SRAM only if it has the room."
  echo "- **Memory and bus effects:** load-use cases that do not pipeline (an address computed by the previous load),"
  echo "  bus contention between instruction and data fetches, unaligned 32-bit instructions (an extra cycle in some"
  echo "  sequences) and branch-target alignment."
  echo "- **Interrupts** (none in these runs) and the application's own work (the sensor, logging), left out of the"
  echo "  trace's mix."
  echo
  echo "So the estimate is close to what a part running from zero-wait-state memory (TCM, SRAM, or flash behind a"
  echo "cache that hits) would take, and a lower bound otherwise. The published MLPerf figures include those effects"
  echo "on their board; ratio < 1 means fewer estimated cycles than the published result."
} >"$SECTION"
if [ "${DRY:-0}" = 1 ]; then cat "$SECTION"; else replace_section BENCHMARKS.md "Cycles on the Cortex-M4" "$SECTION"; cat "$SECTION"; fi

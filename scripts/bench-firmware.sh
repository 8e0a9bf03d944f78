#!/usr/bin/env bash
# scripts/bench-firmware.sh: the "## Firmware" section of BENCHMARKS.md, regenerated.
#
# For each MLPerf Tiny model and QEMU board it builds the firmware application (firmware/src/main.rs)
# with that model embedded (MQ_MODEL), runs it under `-icount shift=0` (SysTick then counts
# instructions), and reads:
#   - instructions per inference and each op kind's share, from the application's defmt log
#     (the interpreter's Profiler hook; mean over the 20 golden inputs, all checked bit for bit
#     against TFLite Micro by the application);
#   - flash split into weights (the embedded .mq), kernels (symbols under microquant::kernels) and
#     runtime code (everything else in .vector_table/.text/.rodata/.data), from the ELF's sections
#     (llvm-size) and symbols (llvm-nm); after LTO some kernel code is inlined into the
#     interpreter's op glue and counts as runtime;
#   - RAM split into the arena (the static the build sized from the model's plan), other statics
#     (.data/.bss) and the stack's measured peak (painted at start-up); and the inference's own
#     stack (the most one `invoke` took below its caller's stack pointer, painted before each).
# Beside the mps2-an386 (Cortex-M4F) rows: TFLite Micro's figures measured the same way, from
# ../shared/models/README.md.
#
# Reference-kernel column: set MQ_REFERENCE_FEATURE to a core cargo feature that forces the
# reference kernels (e.g. MQ_REFERENCE_FEATURE=force-reference); the application is then built a
# second time with `--features microquant/$MQ_REFERENCE_FEATURE`. Without it the column says n/a.
#
# Environment: MQ_BENCH_BOARDS (default "mps2-an386 mps2-an500 mps2-an505 mps3-an547 microbit"),
# MQ_BENCH_MODELS (default "kws ic vww ad"; the micro:bit runs the tiny M0 model instead), DRY=1
# (print the section, do not write BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FW=$ROOT/firmware
TD=$FW/target/bench-firmware        # its own target folder: does not disturb `cargo test-<board>`
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

BOARDS=${MQ_BENCH_BOARDS:-"mps2-an386 mps2-an500 mps2-an505 mps3-an547 microbit"}
MODELS=${MQ_BENCH_MODELS:-"kws ic vww ad"}
REF_FEATURE=${MQ_REFERENCE_FEATURE:-}
# Boards that get the reference-kernel column (the issue's comparison is on the M4F).
REF_BOARDS=${MQ_REFERENCE_BOARDS:-"mps2-an386"}

triple_of() { case $1 in
  mps2-an386|mps2-an500) echo thumbv7em-none-eabihf ;;
  mps2-an505|mps3-an547) echo thumbv8m.main-none-eabihf ;;
  microbit) echo thumbv6m-none-eabi ;;
  *) echo "unknown board $1" >&2; exit 2 ;; esac; }
core_of() { case $1 in
  mps2-an386) echo "Cortex-M4F" ;; mps2-an500) echo "Cortex-M7" ;; mps2-an505) echo "Cortex-M33" ;;
  mps3-an547) echo "Cortex-M55 (\`-C target-cpu=cortex-m55\`: Helium)" ;; microbit) echo "Cortex-M0" ;; esac; }
file_of() { case $1 in
  kws) echo models/mlperf-tiny/kws_ref_model_int8.tflite ;; ic) echo models/mlperf-tiny/ic_resnet8_int8.tflite ;;
  vww) echo models/mlperf-tiny/vww_96_int8.tflite ;; ad) echo models/mlperf-tiny/ad01_int8.tflite ;;
  tiny) echo tests/golden/models/tiny_m0_int8.tflite ;; esac; }
# TFLite Micro on Cortex-M4F (QEMU mps2-an386, -icount shift=0), from ../shared/models/README.md:
# instructions with CMSIS-NN, with its reference kernels, arena on M4.
tflm_of() { case $1 in
  kws) echo "7,699,880|43,043,800|22,820" ;; ic) echo "29,864,000|107,404,200|54,996" ;;
  vww) echo "24,101,960|100,250,760|100,708" ;; ad) echo "582,920|1,952,160|2,580" ;; *) echo "||" ;; esac; }
# The mps3-an547 before Helium: instructions per inference of the M33 image (Arm DSP path) on that board,
# measured by this script on 2026-12-07 (commit e898037), for the Helium subsection's comparison.
m33_on_m55_of() { case $1 in
  kws) echo 3965965 ;; ic) echo 13855268 ;; vww) echo 11646634 ;; ad) echo 406803 ;; *) echo "" ;; esac; }
# fmt N: N with thousands separators.
fmt() { local n=$1 s=""; while [ ${#n} -gt 3 ]; do s=",${n: -3}$s"; n=${n:0:${#n}-3}; done; echo "$n$s"; }
kb() { awk -v b="$1" 'BEGIN { printf "%.1f KB", b / 1024 }'; }

# run_app BOARD MODEL LOG [extra cargo args]: builds and runs the application, log to LOG.
run_app() {
  local board=$1 model=$2 log=$3; shift 3
  local t; t=$(triple_of "$board")
  local extra=()
  [ "$board" = mps3-an547 ] && extra=(--config "target.thumbv8m.main-none-eabihf.rustflags=['-C','target-cpu=cortex-m55']")
  echo "--- $model on $board $*" >&2
  (cd "$FW" && MQ_BOARD=$board MQ_MODEL="$ROOT/$(file_of "$model")" QEMU_EXTRA="-icount shift=0" QEMU_TIMEOUT=900 \
     cargo run -q --release --target "$t" --target-dir "$TD" --bin microquant-firmware "${extra[@]}" "$@") >"$log" 2>"$log.err" || {
    echo "bench-firmware: $model on $board failed:" >&2; tail -n 5 "$log" "$log.err" >&2; return 1; }
  grep -q "bit-identical with TFLite Micro" "$log" || { echo "bench-firmware: $model on $board: outputs not checked" >&2; return 1; }
}

# field KEY LOG: a key=value of the application's summary line.
field() { grep -o "summary: .*" "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

ROWS=$LOGS/rows.md
SHARES=$LOGS/shares.md
MINIMAL=$LOGS/minimal.md
: >"$ROWS"; : >"$SHARES"; : >"$MINIMAL"
for board in $BOARDS; do
  t=$(triple_of "$board")
  models=$MODELS; [ "$board" = microbit ] && models=tiny
  for model in $models; do
    log=$LOGS/$board-$model.log
    if ! run_app "$board" "$model" "$log"; then
      # A model that does not fit the board is a row saying so (the build prints the numbers).
      if grep -q "does not fit" "$log.err"; then
        need=$(grep -o "flash: model .* needed, board has [^ ]*" "$log.err" | head -1)
        echo "| $model | $board | does not fit: $need | | | | | | | | | | | |" >>"$ROWS"
        continue
      fi
      exit 1
    fi
    elf=$TD/$t/release/microquant-firmware
    insns=$(field instructions_per_inference "$log")
    stack=$(field stack_peak_bytes "$log")
    istack=$(field inference_stack_bytes "$log")
    arena=$(field arena_bytes "$log")
    # Flash: loadable sections; weights = the embedded model; kernels = microquant::kernels symbols.
    flash=$(llvm-size -A "$elf" | awk '$1 ~ /^\.(vector_table|text|rodata|data)$/ { s += $2 } END { print s }')
    weights=$(llvm-nm -S -C --radix=d "$elf" | awk '/APP_MODEL::ALIGNED/ { s += $2 } END { print s + 0 }')
    kernels=$(llvm-nm -S -C --radix=d "$elf" | awk '$3 ~ /^[tTrR]$/ && $4 ~ /^microquant::kernels::/ { s += $2 } END { print s + 0 }')
    golden=$(field golden_bytes "$log")     # TFLite Micro's outputs the application checks against
    runtime=$((flash - weights - kernels - golden))
    statics=$(llvm-size -A "$elf" | awk '$1 ~ /^\.(data|bss|uninit)$/ { s += $2 } END { print s }')
    other=$((statics - arena))
    ref="n/a"
    if [ -n "$REF_FEATURE" ] && [[ " $REF_BOARDS " == *" $board "* ]]; then
      run_app "$board" "$model" "$log.ref" --features "microquant/$REF_FEATURE"
      ref=$(fmt "$(field instructions_per_inference "$log.ref")")
    fi
    IFS='|' read -r tflm_fast tflm_ref tflm_arena <<<"$(tflm_of "$model")"
    if [ "$board" != mps2-an386 ]; then tflm_fast=""; tflm_ref=""; tflm_arena=""; fi
    echo "| $model | $board | $(kb "$flash") | $(kb "$runtime") | $(kb "$kernels") | $(kb "$weights") | $(fmt "$arena") | $(fmt "$((other + stack))") ($(fmt "$other") static + $(fmt "$stack") stack) | $(fmt "$istack") | **$(fmt "$insns")** | $ref | ${tflm_fast:-} | ${tflm_ref:-} | ${tflm_arena:-} |" >>"$ROWS"
    # The minimal image of the same model (src/bin/minimal.rs): the model, its kernels, a class per
    # inference; run to check it works.
    # (the same target flags as the application's build: the M55 image for mps3-an547)
    mextra=()
    [ "$board" = mps3-an547 ] && mextra=(--config "target.thumbv8m.main-none-eabihf.rustflags=['-C','target-cpu=cortex-m55']")
    (cd "$FW" && MQ_BOARD=$board MQ_MODEL="$ROOT/$(file_of "$model")" \
       cargo build -q --release --target "$t" --target-dir "$TD" --bin minimal "${mextra[@]}")
    melf=$TD/$t/release/minimal
    (cd "$FW" && MQ_BOARD=$board QEMU_TIMEOUT=900 ./qemu-run.sh "$melf") >"$log.min" 2>&1 \
      || { echo "bench-firmware: minimal $model on $board failed:" >&2; tail -n 5 "$log.min" >&2; exit 1; }
    mflash=$(llvm-size -A "$melf" | awk '$1 ~ /^\.(vector_table|text|rodata|data)$/ { s += $2 } END { print s }')
    mweights=$(llvm-nm -S -C --radix=d "$melf" | awk '/APP_MODEL::ALIGNED/ { s += $2 } END { print s + 0 }')
    mkernels=$(llvm-nm -S -C --radix=d "$melf" | awk '$3 ~ /^[tTrR]$/ && $4 ~ /^microquant::kernels::/ { s += $2 } END { print s + 0 }')
    mstatics=$(llvm-size -A "$melf" | awk '$1 ~ /^\.(data|bss|uninit)$/ { s += $2 } END { print s }')
    mclass=$(grep -o "inference 0: class [0-9]*" "$log.min" | awk '{print $NF}')
    echo "| $model | $board | $(kb "$mflash") | $(kb "$((mflash - mweights))") ($(kb "$mkernels") kernels) | $(kb "$mweights") | $(fmt "$mstatics") | ${mclass:-?} |" >>"$MINIMAL"
    shares=$(grep -o "op share: .*" "$log" | sed -E 's/op share: ([A-Z0-9_]+) x([0-9]+): [0-9]+ instructions per inference \(([0-9.]+) %\)/\1 ×\2 \3 %/' | paste -sd ';' - | sed 's/;/, /g')
    echo "| $model | $board | $shares |" >>"$SHARES"
  done
done

rustc_v=$(rustc --version | awk '{print $2}')
qemu_v=$(qemu-system-arm --version | head -1 | awk '{print $4}')
SECTION=$LOGS/section.md
{
  echo "## Firmware"
  echo
  echo "Regenerated by \`scripts/bench-firmware.sh\` ($(date -u +%Y-%m-%d), rustc $rustc_v, QEMU $qemu_v). The firmware application"
  echo "(\`firmware/src/main.rs\`) with each model embedded at build time (\`MQ_MODEL\`), release build (opt-level 2, fat LTO), run"
  echo "under QEMU with \`-icount shift=0\`: SysTick then counts instructions (not cycles: QEMU has no pipeline model). Every"
  echo "run checks all 20 golden inputs' outputs bit for bit against TFLite Micro. The MLPerf Tiny models do not fit the"
  echo "micro:bit (16 KB RAM), which runs the tiny M0 model (\`tests/golden/models/tiny_m0_int8.tflite\`) instead."
  echo
  echo "Flash = loadable sections (\`.vector_table\`, \`.text\`, \`.rodata\`, \`.data\`; \`llvm-size\`): weights = the embedded \`.mq\`"
  echo "(weights, biases, multipliers, tables), kernels = symbols under \`microquant::kernels\` (\`llvm-nm\`; after LTO some kernel"
  echo "code is inlined into the interpreter's op glue and counts as runtime), runtime = the rest (interpreter, model reader,"
  echo "application, embedded-hal playback, defmt, cortex-m-rt; not counted: the golden outputs the application checks"
  echo "against, 40 B to 12.5 KB, which are in the flash total). The interpreter links the kernels of the model's op kinds"
  echo "only (\`AppOps\`, written by the build from the embedded model; \`MQ_ALL_OPS=1\` links every kind), each with all its"
  echo "variants (int8 and 16x8, every fast path). RAM = the arena (a static sized exactly by the build) and the rest:"
  echo "other statics and the stack's measured peak (painted at start-up). Inference stack = the most stack one inference"
  echo "took below the stack pointer at its call (\`invoke\`; painted before each, the deepest of the 20): the interpreter's"
  echo "dispatch, the op's prepared form and the kernel's frames; the kernels' buffers are in the arena (the ops' scratch)."
  echo
  echo "mps2-an386 and mps2-an500 run the same thumbv7em image, so their instruction counts agree; mps2-an505 runs the"
  echo "thumbv8m.main image built with \`-C target-cpu=cortex-m33\` (Arm DSP path), mps3-an547 the one built with"
  echo "\`-C target-cpu=cortex-m55\` (Helium path, see below), as \`cargo run-an505\` / \`run-an547\` build them. Release profile: opt-level 2 (\`firmware/Cargo.toml\`):"
  echo "the same instruction counts as opt-level 3 with about 20 KB less code; opt-level \"s\" would save about 45 KB more"
  echo "for the same counts, but there LLVM keeps a few bounds checks it cannot prove (outlined \`Zip::new\` of"
  echo "\`chunks_exact\`), and the no-panic check (\`firmware/nopanic-check\`) fails. QEMU counts instructions and models"
  echo "neither the M7's dual issue nor caches; cycle figures need hardware."
  echo
  echo "TFLite Micro columns: TFLite Micro + CMSIS-NN and TFLite Micro's reference kernels on Cortex-M4F measured the same way"
  echo "(QEMU mps2-an386, \`-icount shift=0\`, instructions per inference), and its arena on M4 (\`arena_used_bytes\`); source:"
  echo "\`../shared/models/README.md\` (tflite-micro 90b983c, CMSIS-NN 4ab83cc, arm-none-eabi-gcc 12.2). Its runtime code for"
  echo "these models' 7 ops is 86.1 KB of flash (CMSIS-NN 53.7 KB, TFLM kernels 20.6 KB, TFLM core 10.8 KB)."
  if [ -z "$REF_FEATURE" ]; then
    echo
    echo "Reference-kernel column: n/a (run with \`MQ_REFERENCE_FEATURE=force-reference\` to fill it)."
  else
    echo
    echo "Reference-kernel column: the same application built with \`--features microquant/$REF_FEATURE\` (every op runs its"
    echo "safe reference kernel; the outputs are checked against TFLite Micro all the same), on $REF_BOARDS. The fast paths"
    echo "are compiled out (\`core/build.rs\` emits none of their cfgs): since 2026-12-05; before, they were skipped at run time"
    echo "and the reference conv was compiled inside the DSP conv's dispatch (kws 65.8 M, ic 136.3 M, vww 145.6 M then)."
  fi
  echo
  echo "| model | board | flash | runtime code | kernels | weights | arena (B) | RAM besides the arena (B) | inference stack (B) | instructions / inference (fast paths) | reference kernels | TFLM + CMSIS-NN | TFLM reference | TFLM arena (B) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  cat "$ROWS"
  echo
  echo "Boards: $(for b in $BOARDS; do printf '%s %s; ' "$b" "$(core_of "$b")"; done | sed 's/; $//')."
  echo
  echo "### The minimal image"
  echo
  echo "\`firmware/src/bin/minimal.rs\`, built for each model as the application is: the smallest image a user would ship"
  echo "(the \`.mq\`, the kernels of its op kinds, one defmt line per inference with the class; no sensor playback,"
  echo "profiling or golden checks). Code = flash − the model. RAM = statics (the arena and defmt's buffer), the stack"
  echo "not included. Class = its first inference's class on the first golden input (the application's is checked"
  echo "against TFLite Micro)."
  echo
  echo "| model | board | flash | code | model (.mq) | RAM statics (B) | class |"
  echo "|---|---|---|---|---|---|---|"
  cat "$MINIMAL"
  echo
  echo "### Share of each op kind (fast paths, from the interpreter's profiling hook)"
  echo
  echo "| model | board | op kind ×count share |"
  echo "|---|---|---|"
  cat "$SHARES"
  if [[ " $BOARDS " == *" mps3-an547 "* ]]; then
    echo
    echo "### Helium (MVE) on the Cortex-M55"
    echo
    echo "The mps3-an547 image is built for the Cortex-M55 (\`-C target-cpu=cortex-m55\`: cfg \`mq_mve\`), so conv, depthwise conv,"
    echo "fully connected and add run core's Helium kernels (\`core/src/kernels/arch/arm_mve/\`: \`VMLADAVA.S8\` dot products in"
    echo "tail-predicated loops, byte gathers for the depthwise taps, requantization 4 lanes at a time, bit-exact with the"
    echo "reference), falling back to the Arm DSP path outside their preconditions. Before: the same board running the M33 image"
    echo "(Arm DSP path, no Helium; 2026-12-07, the same command). Instructions per inference, QEMU \`-icount shift=0\`, every"
    echo "output checked bit for bit against TFLite Micro. Regenerate: \`DRY=1 MQ_BENCH_BOARDS=mps3-an547 scripts/bench-firmware.sh\`"
    echo "(or the whole section without \`DRY\`)."
    echo "The M55 image's code is a few KB larger than the M4F's (the whole image is compiled for the Cortex-M55; KWS: kernels"
    echo "84.0 KB instead of 81.4 KB), and its inference stack is up to 7.2 KB instead of 1.7 KB: the Helium kernels keep"
    echo "their tables on the stack (offset-folded biases, a depthwise channel's padded plane of up to 4 KB), where the Arm"
    echo "DSP kernels' buffers moved into the arena."
    echo
    echo "| model | M33 image (DSP) | M55 image (Helium) | ratio |"
    echo "|---|---:|---:|---:|"
    for model in $MODELS; do
      log=$LOGS/mps3-an547-$model.log
      [ -f "$log" ] || continue
      after=$(field instructions_per_inference "$log")
      before=$(m33_on_m55_of "$model")
      [ -n "$before" ] || continue
      echo "| $model | $(fmt "$before") | **$(fmt "$after")** | $(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.2fx fewer", b / a }') |"
    done
  fi
  if [ "${MQ_BENCH_BOOT:-1}" = 1 ]; then
    echo
    echo "### Model file and boot validation"
    echo
    echo "Regenerated by \`scripts/bench-boot.sh\` (\`scripts/bench-firmware.sh\` runs it; \`MQ_BENCH_BOOT=0\` skips it). The KWS application on"
    echo "mps2-an386 built three ways: the model with its names and metadata or stripped (\`microquant::model::strip\`, the"
    echo "firmware's default; \`MQ_KEEP_NAMES=1\` keeps them), and validated completely at boot (\`Interpreter::new\`,"
    echo "\`MQ_BOOT_VALIDATION=full\`) or at build time (\`build_model.rs\` runs \`Interpreter::new\` on the host; at boot"
    echo "\`Interpreter::new_prevalidated\` checks the header and the CRC-32 of every byte, the default). Boot check = the"
    echo "constructor's instructions (SysTick under \`-icount shift=0\`, the summary line's \`boot_check_instructions\`)."
    echo
    bash "$ROOT/scripts/bench-boot.sh"
  fi
} >"$SECTION"

if [ "${DRY:-0}" = 1 ]; then cat "$SECTION"; exit 0; fi
BM=$ROOT/BENCHMARKS.md
[ -f "$BM" ] || printf '# Benchmarks\n' >"$BM"
# Replace the "## Firmware" section (up to the next "## " heading) or append it.
awk -v sec="$SECTION" '
  BEGIN { while ((getline l < sec) > 0) s = s l "\n" }
  /^## / { if (skip) skip = 0; if ($0 == "## Firmware") { printf "%s", s; done = 1; skip = 1; next } }
  !skip { print }
  END { if (!done) { print ""; printf "%s", s } }
' "$BM" >"$BM.tmp" && mv "$BM.tmp" "$BM"
echo "bench-firmware: wrote the ## Firmware section of $BM" >&2

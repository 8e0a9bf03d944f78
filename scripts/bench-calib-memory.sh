#!/usr/bin/env bash
# scripts/bench-calib-memory.sh: the "Streaming calibration memory" figures of BENCHMARKS.md.
#
# Peak resident memory (VmHWM, from GNU time's "Maximum resident set size") and wall time of
# `microquant quantize` on a zoo model (MobileNetV3-Small, input [1, 3, 224, 224]) calibrated on
# N generated samples (standard normal float32, seed 0) for each N in MQ_BENCH_NS: the samples are
# written as .npy files of 1,000 samples each (602 MB per file; 10,000 samples are 6 GB) and given
# as one --calib glob, which the CLI streams a chunk at a time. Streaming means the peak does not
# grow with N.
#
# Environment:
#   MQ_ZOO_MODEL   the model (default target/zoo/mobilenet_v3_small/model.onnx; built by
#                  `python3 tests/zoo/build_zoo.py --out target/zoo`)
#   MQ_BENCH_NS    sample counts, multiples of 1000 (default "1000 10000")
#   MQ_CALIB_DIR   where the .npy files go (default a temporary folder, removed at the end; an
#                  existing folder is kept and its files reused when they are there)
#   PY             a Python with numpy (default .venv/bin/python)
# Needs about 0.6 GB of free disk per 1,000 samples: with less the largest N that fits is run,
# and the output says so. Prints the Markdown rows; a 10,000-sample run took 23 minutes on
# the 2-core CI machine kind, shared (two passes over the samples: min/max calibration, then the report).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODEL=${MQ_ZOO_MODEL:-$ROOT/target/zoo/mobilenet_v3_small/model.onnx}
NS=${MQ_BENCH_NS:-"1000 10000"}
PY=${PY:-$ROOT/.venv/bin/python}
PER_FILE=1000
FILE_BYTES=$((PER_FILE * 3 * 224 * 224 * 4 + 128))

[ -f "$MODEL" ] || { echo "no model at $MODEL (python3 tests/zoo/build_zoo.py --out target/zoo)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time): apt-get install time" >&2; exit 1; }

if [ -n "${MQ_CALIB_DIR:-}" ]; then
    DIR=$MQ_CALIB_DIR
    mkdir -p "$DIR"
else
    DIR=$(mktemp -d)
    trap 'rm -rf "$DIR"' EXIT
fi

cargo build -q --release -p microquant-cli
BIN=$ROOT/target/release/microquant

# The largest N of MQ_BENCH_NS whose files fit on the disk (files already there count as free).
max_n=0
for n in $NS; do [ "$n" -gt "$max_n" ] && max_n=$n; done
files_needed=$((max_n / PER_FILE))
have=$(find "$DIR" -maxdepth 1 -name 'calib_*.npy' -size "${FILE_BYTES}c" | wc -l)
free=$(($(df --output=avail -B1 "$DIR" | tail -1) + have * FILE_BYTES))
fits=$(((free - 2 * 1024 * 1024 * 1024) / FILE_BYTES))
if [ "$fits" -lt "$files_needed" ]; then
    echo "note: $((free / 1024 / 1024)) MB free in $DIR: $((fits * PER_FILE)) samples fit, not $max_n" >&2
    files_needed=$fits
fi

"$PY" - "$DIR" "$files_needed" "$PER_FILE" <<'EOF'
import os, sys
import numpy as np
out, files, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
for k in range(files):
    p = os.path.join(out, f"calib_{k:02d}.npy")
    want = per * 3 * 224 * 224 * 4
    if os.path.exists(p) and os.path.getsize(p) >= want:
        # Keep the stream of random numbers the same whether the file is reused or not.
        for i in range(0, per, 50):
            rng.standard_normal((min(50, per - i), 3, 224, 224), dtype=np.float32)
        continue
    m = np.lib.format.open_memmap(p, mode="w+", dtype=np.float32, shape=(per, 3, 224, 224))
    for i in range(0, per, 50):
        m[i : i + 50] = rng.standard_normal((min(50, per - i), 3, 224, 224), dtype=np.float32)
    m.flush()
    del m
EOF

echo "| samples | calibration data | peak RSS | wall time |"
echo "| ---: | ---: | ---: | ---: |"
for n in $NS; do
    k=$((n / PER_FILE))
    if [ "$k" -gt "$files_needed" ]; then
        echo "| $n | (does not fit on the disk) | | |"
        continue
    fi
    args=()
    for ((i = 0; i < k; i++)); do args+=(--calib "$(printf '%s/calib_%02d.npy' "$DIR" "$i")"); done
    log=$(mktemp)
    /usr/bin/time -v "$BIN" quantize "$MODEL" "${args[@]}" --quiet -o "$DIR/model_$n.mq" > /dev/null 2> "$log"
    rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
    wall=$(awk -F': ' '/Elapsed \(wall clock\) time/ {print $2}' "$log")
    gb=$(awk -v n="$n" 'BEGIN {printf "%.1f GB", n * 3 * 224 * 224 * 4 / 1e9}')
    printf '| %d | %s | %d MB | %s |\n' "$n" "$gb" $((rss_kb / 1024)) "$wall"
    rm -f "$log"
done

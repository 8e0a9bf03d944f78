#!/usr/bin/env bash
# The main job: quantize a small tensor on the host (the `microquant` CLI) and the same tensor on
# an emulated Cortex-M4F (QEMU mps2-an386, the firmware), print both and check they agree.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
X=(-1.0 -0.125 0.0 0.025 0.3 0.725 2.5 100.0)   # the same tensor as firmware/src/main.rs
echo "=== host (microquant CLI)"
host=$(cargo run -q --release -p microquant-cli -- qdq --scale 0.05 --zero-point -3 -- "${X[@]}")
echo "$host"
echo "=== Cortex-M4F (QEMU mps2-an386)"
dev=$(cd firmware && cargo run-an386 2>/dev/null)
echo "$dev"
hq=$(grep '^q ' <<<"$host" | sed 's/^q *= *//')
dq=$(grep -o 'q  = .*' <<<"$dev" | head -1 | sed 's/^q *= *//')
if [ "$hq" = "$dq" ]; then echo "=== same int8 on host and Cortex-M4F: $hq"; else echo "=== MISMATCH: host $hq, device $dq" >&2; exit 1; fi

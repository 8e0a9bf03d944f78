#!/usr/bin/env bash
# Regenerates the example outputs shown in the READMEs from the commands that print them. Each is
# a block between `<!-- output: NAME ... -->` and `<!-- /output -->` (a fenced code block); this
# script runs the block's command and writes what it printed in its place:
#   demo              README.md: the end of ./scripts/demo.sh (its summary)
#   firmware-kws      firmware/README.md: QEMU_EXTRA="-icount shift=0" cargo run-an386 (windows 2-19 and
#                     the per-op lines left out)
#   firmware-too-big  firmware/README.md: the error of building the VWW model for the micro:bit
# Usage: scripts/readme-outputs.sh [NAME...] (default: all). Needs scripts/setup.sh's tools.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(demo firmware-kws firmware-too-big)

# replace FILE NAME OUTPUT_FILE: the block NAME of FILE gets OUTPUT_FILE's lines in a ``` fence.
replace() {
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
path, name, out = sys.argv[1:]
text = open(path).read()
body = open(out).read().rstrip("\n")
pat = re.compile(r"(<!-- output: " + re.escape(name) + r"\b[^>]*-->\n).*?(<!-- /output -->)", re.S)
if not pat.search(text):
    sys.exit(f"{path}: no block `<!-- output: {name} ... -->`")
text = pat.sub(lambda m: m.group(1) + "```\n" + body + "\n```\n" + m.group(2), text, count=1)
open(path, "w").write(text)
PY
  echo "updated $1 ($2)"
}

for n in "${names[@]}"; do
  case $n in
    demo)
      ./scripts/demo.sh | tee "$T/demo.log"
      sed -n '/^digits CNN (quantized here/,$p' "$T/demo.log" > "$T/demo.out"
      replace README.md demo "$T/demo.out" ;;
    firmware-kws)
      (cd firmware && QEMU_EXTRA="-icount shift=0" cargo run -q --release 2>&1) | tee "$T/kws.log"
      # The log as defmt-print writes it, without the windows 2-19 and the per-op lines.
      grep -E '^(INFO|WARN|ERROR) ' "$T/kws.log" | grep -vE 'window ([2-9]|1[0-9]):|^INFO +op [0-9]+ ' > "$T/kws.out"
      replace firmware/README.md firmware-kws "$T/kws.out" ;;
    firmware-too-big)
      (cd firmware && MQ_MODEL=../models/mlperf-tiny/vww_96_int8.tflite \
        cargo build -q --release --target thumbv6m-none-eabi --config "env.MQ_BOARD='microbit'" 2>&1 || true) > "$T/big.log"
      sed -n '/microquant-firmware: the model/,/RAM:/p' "$T/big.log" | sed 's/^  //' > "$T/big.out"
      [ -s "$T/big.out" ] || { cat "$T/big.log"; echo "no 'does not fit' message" >&2; exit 1; }
      replace firmware/README.md firmware-too-big "$T/big.out" ;;
    *) echo "unknown output block: $n" >&2; exit 2 ;;
  esac
done

#!/usr/bin/env bash
# Builds the npm package `microquant` into wasm/npm/ (or the directory given):
#   web/        the converter + runtime: wasm-pack --target web (ES module glue, one .wasm that
#               browsers, bundlers and Node all load), release, then wasm-opt -O3
#   runtime/    the runtime alone (--no-default-features): .mq models, run, QTensor, exports
#   index.js, node.mjs, runtime*.{js,mjs}, worker*.{js,mjs}, workers.js, worker-protocol.js,
#   *.d.ts, package.json, README.md, licences: from wasm/js/ and the repository root.
# wasm-opt is the npm `binaryen` package's (web-demo/node_modules/.bin; `npm ci` in web-demo),
# never Debian's binaryen 108, which breaks wasm-bindgen output.
#
#   bash wasm/build-npm.sh [OUT_DIR] [--web-only]      # --web-only: skip the runtime-only build
# MQ_WASM_SIZE=1 builds for size instead of speed (opt-level "z", fat LTO, wasm-opt -Oz), in its
# own target directory (target/wasm-size, or $MQ_WASM_SIZE_TARGET_DIR) so the speed build's
# artifacts stay valid.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=""
RUNTIME=1
for a in "$@"; do
  case $a in
    --web-only) RUNTIME=0 ;;
    *) OUT=$a ;;
  esac
done
OUT=${OUT:-$HERE/npm}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WASM_OPT="$ROOT/web-demo/node_modules/.bin/wasm-opt"
if [ ! -x "$WASM_OPT" ]; then
  echo "build-npm.sh: $WASM_OPT is missing: run 'npm ci' in web-demo/ (npm binaryen)" >&2
  exit 1
fi
export PATH="$ROOT/web-demo/node_modules/.bin:$PATH"
OPT=-O3
if [ "${MQ_WASM_SIZE:-0}" = 1 ]; then
  OPT=-Oz
  export CARGO_TARGET_DIR="${MQ_WASM_SIZE_TARGET_DIR:-$ROOT/target/wasm-size}" CARGO_PROFILE_RELEASE_OPT_LEVEL=z \
    CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_DEBUG=0
fi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)

build() {  # build DIR NAME [cargo args]: one wasm-pack web build, optimized by wasm-opt
  local dir=$1 name=$2; shift 2
  rm -rf "$OUT/$dir"
  wasm-pack --quiet build "$HERE" --release --target web --out-dir "$OUT/$dir" --out-name "$name" "$@" 2>&1 \
    | grep -v 'failed to get wasm-pack version\|LICENSE file' || true
  [ -f "$OUT/$dir/${name}_bg.wasm" ] || { echo "build-npm.sh: wasm-pack produced no $dir/${name}_bg.wasm" >&2; exit 1; }
  "$WASM_OPT" "$OPT" "$OUT/$dir/${name}_bg.wasm" -o "$OUT/$dir/${name}_bg.wasm"
  rm -f "$OUT/$dir/package.json" "$OUT/$dir/.gitignore" "$OUT/$dir/README.md" "$OUT/$dir/${name}_bg.wasm.d.ts"
  echo "build-npm.sh: $dir/${name}_bg.wasm $(wc -c < "$OUT/$dir/${name}_bg.wasm") bytes"
}

build web microquant
if [ "$RUNTIME" = 1 ]; then build runtime microquant_runtime --no-default-features; fi
cp "$HERE"/js/*.js "$HERE"/js/*.mjs "$HERE"/js/*.d.ts "$HERE"/js/README.md "$OUT/"
sed "s/@VERSION@/$VERSION/" "$HERE/js/package.json" > "$OUT/package.json"
cp "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$OUT/"
echo "build-npm.sh: microquant $VERSION in $OUT"

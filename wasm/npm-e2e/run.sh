#!/usr/bin/env bash
# The npm package end to end, in a temporary directory, from the packed tarball (as a user gets it):
#   1. bash wasm/build-npm.sh, then `npm pack` (the file list is checked);
#   2. a Node 20 ES-module app installs the tarball and imports "microquant", "microquant/runtime"
#      and "microquant/worker" (node-app/test.mjs: quantizes the digits example to the CLI's exact
#      bytes, runs it, splits calibration over two worker_threads, exports C and Rust that a C
#      compiler and rustc accept);
#   3. a Vite 7 app (vite-app/) installs the tarball, `tsc --noEmit` checks it against the
#      package's types, `vite build` bundles it, and headless Chromium runs the bundle
#      (check-vite.mjs: the page quantizes the digits example in a Web Worker, and calibrateInWorkers
#      over two Web Workers running microquant/worker gives the same .mq as one calibration).
# Vite, TypeScript and playwright-core come from web-demo/node_modules (`npm ci` there); the
# tarball has no dependencies, so nothing is fetched from the registry.
#   bash wasm/npm-e2e/run.sh [--no-build]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN="$ROOT/web-demo/node_modules/.bin"
[ "${1:-}" = "--no-build" ] || bash "$ROOT/wasm/build-npm.sh"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "--- npm pack"
(cd "$ROOT/wasm/npm" && npm pack --pack-destination "$TMP" --json > "$TMP/pack.json")
TARBALL=$(ls "$TMP"/microquant-*.tgz)
node -e '
  const p = JSON.parse(require("fs").readFileSync(process.argv[1]))[0];
  const files = new Set(p.files.map((f) => f.path));
  const need = ["package.json", "README.md", "index.js", "index.d.ts", "node.mjs", "worker.js", "worker-node.mjs",
    "runtime.js", "runtime-node.mjs", "web/microquant_bg.wasm", "web/microquant.js", "web/microquant.d.ts",
    "runtime/microquant_runtime_bg.wasm", "LICENSE-MIT", "LICENSE-APACHE"];
  const missing = need.filter((f) => !files.has(f));
  if (missing.length) { console.error("npm pack: missing", missing); process.exit(1); }
  console.log(`npm pack: ${p.filename}, ${p.files.length} files, ${p.size} bytes packed, ${p.unpackedSize} unpacked`);
' "$TMP/pack.json"

echo "--- Node $(node --version): import from the installed tarball"
mkdir -p "$TMP/node-app"
cp "$HERE/node-app/"* "$TMP/node-app/"
(cd "$TMP/node-app" && npm install --offline --no-audit --no-fund --silent "$TARBALL")
(cd "$TMP/node-app" && MQ_ROOT="$ROOT" node test.mjs)

echo "--- Vite 7 app: tsc, vite build, Chromium"
mkdir -p "$TMP/vite-app"
cp -r "$HERE/vite-app/." "$TMP/vite-app/"
(cd "$TMP/vite-app" && npm install --offline --no-audit --no-fund --silent "$TARBALL")
mkdir -p "$TMP/vite-app/public"
cp "$ROOT/web-demo/examples/"digits_{cnn.onnx,calib.npy,labels.npy} "$TMP/vite-app/public/"
(cd "$TMP/vite-app" && "$BIN/tsc" --noEmit -p tsconfig.json && echo "tsc: the app type-checks against the package's types")
(cd "$TMP/vite-app" && "$BIN/vite" build --logLevel warn && ls dist/assets)
node "$HERE/check-vite.mjs" "$TMP/vite-app/dist" "$ROOT/wasm/tests/data/digits_default.mq" "$(cat "$ROOT/wasm/tests/data/cli_producer.txt")"
echo "npm package e2e: ok"

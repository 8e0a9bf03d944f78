#!/usr/bin/env bash
# Every test of microquant, after set-up: (1) host unit + integration tests and the no_std builds,
# (2) wasm tests in Node and in headless Chromium, (3) firmware tests under QEMU on Cortex-M4F
# (mps2-an386), Cortex-M0 (microbit), M7, M33 and M55, (4) the web demo end to end in headless
# Chromium and the npm package installed in a Node 20 app and a Vite app, (5) the everyday checks (lint):
# rustfmt, clippy with warnings denied (host, wasm32, the three thumb targets), rustdoc with warnings denied, and
# the builds of core's optional features (force-reference, npy, relaxed-simd).
# Two lanes share the 2 cores: host then web demo; firmware then wasm and the no_std checks. MQ_TEST_SERIAL=1 runs the
# kinds one after the other, MQ_TEST_KINDS="host wasm" runs only those. Prints one summary line per kind; exits
# non-zero if any kind failed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$ROOT/web-demo/node_modules/.bin:$PATH"   # wasm-opt from npm binaryen
# Test builds keep line tables (backtraces with file:line) but not full debug info: compiling and
# linking the test binaries (host, wasm, firmware) is most of this script's time. Cargo.toml's
# profiles stay as they are for development.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only CARGO_PROFILE_TEST_DEBUG=line-tables-only
# A fresh clone has nothing to reuse: incremental compilation only costs time here (its query
# cache and dependency graph are written for every crate, about 8% of the CPU of a test build).
export CARGO_INCREMENTAL=0
# The firmware's release images too (defmt locations stay; flash and RAM are the same, debug info
# is not loaded). Set for every kind, not only the firmware's: the CLI's `run --target qemu-*`
# tests (host kind) build the firmware runner with the same profile, so they reuse what the
# firmware kind builds in firmware/target instead of compiling core twice more.
export CARGO_PROFILE_RELEASE_DEBUG=line-tables-only
# Firmware test images without LTO, which changes size and speed, never results: a fat-LTO link
# re-optimizes the whole of core for every test image, and was half of the firmware kind's time.
# Built as shipped (fat LTO, Cargo.toml's profile): the M55 test images (its 512 KB ITCM holds
# the VWW image only so) and the no-panic check; the npm package keeps Cargo.toml's profile too.
export CARGO_PROFILE_RELEASE_LTO=off

# run_kind NAME: runs one kind of test in its own bash process (so `set -e` holds inside it), logs
# it to $LOGDIR/NAME.log (and to the console, each line prefixed with [NAME]), and writes
# "NAME: ok|FAILED (time) detail" to $LOGDIR/NAME.result.
run_kind() {
  local name=$1
  local t0=$(date +%s) st=0
  echo "=== $name"
  LOGDIR=$LOGDIR bash "$ROOT/scripts/test.sh" --kind "$name" 2>&1 | tee "$LOGDIR/$name.log" | prefix "$name" "$t0" || st=$?
  local dt=$(( $(date +%s) - t0 ))
  local detail
  detail=$(detail_for "$name")
  if [ $st = 0 ]; then echo "$name: ok (${dt}s) $detail"; else echo "$name: FAILED (exit $st, ${dt}s) $detail"; fi > "$LOGDIR/$name.result"
  echo "=== $(cat "$LOGDIR/$name.result")"
}

# prefix NAME T0: each line of stdin as "[NAME  SSSs] line", SSS the seconds since T0 (where the
# time of a test run goes, in the CI log).
prefix() {
  local line
  while IFS= read -r line; do printf '[%s %4ss] %s\n' "$1" $(( $(date +%s) - $2 )) "$line"; done
}

# Count "test result: ok. N passed" lines in a log.
count_passed() { grep -Eo 'test result: ok\. [0-9]+ passed' "$1" | awk '{s+=$4} END {print s+0}'; }

detail_for() {
  case $1 in
    host) echo "$(count_passed "$LOGDIR/host.log") tests passed" ;;
    lint) echo "rustfmt, clippy -D warnings (host, wasm32 incl. relaxed-simd, thumbv6m/v7em/v8m.main, v8m.main as M55 incl. core), rustdoc -D warnings, core features force-reference and npy" ;;
    no-std) echo "core without default features for wasm32 and x86_64, with alloc alone for x86_64 (cargo check; the thumb targets: nopanic-check)" ;;
    wasm) echo "node $(cat "$LOGDIR/wasm-node.count" 2>/dev/null || echo 0) + chromium $(cat "$LOGDIR/wasm-chrome.count" 2>/dev/null || echo 0) tests passed" ;;
    firmware) firmware_summary "$LOGDIR/firmware.log" ;;
    web-demo) grep -o 'web-demo e2e: .*' "$LOGDIR/web-demo.log" | tail -1 || true ;;
  esac
}

# firmware_summary LOG: "N test binaries passed on QEMU, M skipped (model: board, ...)". A model
# test on a board without room for the model prints "SKIPPED: <model> does not fit <board> (...)"
# and exits before its tests (no "all tests passed"): a skip, never a pass.
firmware_summary() {
  local passed skipped list
  passed=$(grep -c 'all tests passed' "$1" || true)
  skipped=$(grep -c 'SKIPPED: ' "$1" || true)
  list=$({ grep -o 'SKIPPED: [^ ]* does not fit [^ ]*' "$1" || true; } | awk '{print $2 ": " $6}' | paste -sd, - | sed 's/,/, /g')
  echo "$passed test binaries passed on QEMU, $skipped skipped${list:+ ($list)}"
}

host_tests() {
  bash scripts/check-safety.sh
  # The CLI's QEMU tests skip where qemu-system-arm is missing; here a missing QEMU is a failure.
  MQ_REQUIRE_QEMU=1 cargo test --workspace --exclude microquant-wasm
}

nostd_checks() {
  # core builds without std/alloc for every target, and with alloc for wasm and the host. Each
  # configuration is compiled once in the whole test command: the thumb targets without default
  # features by nopanic-check (with `defmt`, as the firmware), wasm32 and the host with std or
  # alloc by the wasm, web-demo and host kinds. Left: wasm32 and the host without default
  # features and the host with alloc alone, whose code is a subset of what those builds compile
  # for the same targets: `cargo check` proves their feature gating (what could break) without
  # compiling it all again.
  local targets=(wasm32-unknown-unknown x86_64-unknown-linux-gnu)
  echo "--- core, no default features: ${targets[*]}"
  cargo check -q -p microquant --no-default-features "${targets[@]/#/--target=}"
  echo "--- core, alloc: x86_64-unknown-linux-gnu"
  cargo check -q -p microquant --no-default-features --features alloc --target=x86_64-unknown-linux-gnu
}

wasm_tests() {
  # --node runs the tests in Node. WASM_BINDGEN_USE_BROWSER=1 makes the same tests run in Chromium
  # (without it, --chrome silently skips tests that are not configured for the browser), and the
  # passed counts are checked so a silent skip fails.
  # wasm-pack builds the tests twice, with `cargo build --tests` (dev profile) and then `cargo
  # test` (test profile, opt-level 1 in Cargo.toml): the same opt-level in both makes the second
  # build reuse the first instead of compiling everything again.
  export CARGO_PROFILE_DEV_OPT_LEVEL=1
  wasm-pack test --node wasm 2>&1 | tee "$LOGDIR/wasm-node.out"
  WASM_BINDGEN_USE_BROWSER=1 wasm-pack test --headless --chrome wasm 2>&1 | tee "$LOGDIR/wasm-chrome.out"
  local n c
  n=$(count_passed "$LOGDIR/wasm-node.out"); c=$(count_passed "$LOGDIR/wasm-chrome.out")
  echo "$n" > "$LOGDIR/wasm-node.count"; echo "$c" > "$LOGDIR/wasm-chrome.count"
  if [ "$n" = 0 ] || [ "$c" != "$n" ]; then echo "wasm: node ran $n tests, chromium ran $c: expected the same, non-zero" >&2; return 1; fi
  if grep -q 'skipping' "$LOGDIR/wasm-chrome.out"; then echo "wasm: chromium skipped tests" >&2; return 1; fi
}

firmware_tests() {
  cd "$ROOT/firmware"
  cargo test-an386
  # The inference's own stack under 2 KB on the M4F (issue 25), as shipped: fat LTO. (The test
  # images above are built without LTO, where the interpreter's generic dispatch, instantiated in
  # the test crate, calls core's prepare functions out of line: KWS 2,204 B there, 1,828 shipped.)
  echo "--- inference stack of the MLPerf Tiny models on mps2-an386, as shipped"
  env -u CARGO_PROFILE_RELEASE_LTO MQ_CHECK_INFERENCE_STACK=1 cargo test-an386 --test model_kws --test model_ic --test model_vww --test model_ad
  cargo test-microbit
  # The minimal image (only the model's kernels) for KWS on the M4F and the tiny model on the M0,
  # each output checked against TFLite Micro's.
  for board in an386 microbit; do
    echo "--- minimal image, $board"
    MQ_MINIMAL_CHECK=1 cargo "run-$board" -q --bin minimal | tee "$LOGDIR/minimal-$board.out"
    [ "$(grep -c 'bit-identical with TFLite Micro' "$LOGDIR/minimal-$board.out")" = 3 ] \
      || { echo "minimal image on $board: 3 checked inferences expected" >&2; return 1; }
  done
  # The application and the MLPerf Tiny models bit-exact with TFLite Micro on M7, M33 and M55 too
  # (M33 also runs the kernel golden cases on its DSP path); the M55 images with fat LTO, as shipped.
  local models=(--test app --test model_kws --test model_ic --test model_vww --test model_ad --test model_tiny)
  cargo test-an505 --test kernels --test kernels_random --test kernels_ops "${models[@]}"
  cargo test-an500 "${models[@]}"
  # The M55 images are built with `-C target-cpu=cortex-m55` (the alias): core's Helium path
  # (`arm_mve`), whose kernels the golden and random kernel tests check against the reference.
  env -u CARGO_PROFILE_RELEASE_LTO cargo test-an547 --test kernels --test kernels_random "${models[@]}"
  # No reachable panic on the device path: this image only links if none survives optimization.
  # Built as shipped (fat LTO) with core's `defmt` feature, as the firmware uses it: for
  # thumbv8m.main once as the M33 image (DSP) and once as the M55 image (Helium).
  for t in thumbv8m.main-none-eabihf thumbv6m-none-eabi thumbv7em-none-eabihf; do
    echo "--- nopanic-check, $t"; env -u CARGO_PROFILE_RELEASE_LTO cargo build --release -p nopanic-check --target "$t"
  done
  echo "--- nopanic-check, thumbv8m.main-none-eabihf with -C target-cpu=cortex-m55 (Helium)"
  env -u CARGO_PROFILE_RELEASE_LTO cargo build --release -p nopanic-check --target thumbv8m.main-none-eabihf \
    --config "target.thumbv8m.main-none-eabihf.rustflags=['-C','target-cpu=cortex-m55']"
  echo "nopanic-check: core without default features linked for 3 targets (thumbv8m.main as M33 and M55), no reachable panic"
  cd "$ROOT"
}

lint_checks() {
  # No machine-specific paths in what is committed (a path of the machine that generated a file,
  # in a README, a script or golden metadata): everything is relative to the repository.
  echo "--- no machine-specific absolute paths"
  if git grep -nE '(^|[^A-Za-z0-9_.])/(work|root|home)/' -- . ':!scripts/test.sh'; then
    echo "machine-specific paths above: make them relative to the repository" >&2
    return 1
  fi
  # The cycle estimator's instruction classes and branch accounting (scripts/bench-cycles.sh).
  echo "--- firmware/tools/cycle_estimate.py --self-test"
  python3 firmware/tools/cycle_estimate.py --self-test
  # Formatting: one rustfmt.toml for the three workspaces (root, firmware, fuzz).
  echo "--- cargo fmt --check (root, firmware, fuzz)"
  cargo fmt --all -- --check
  (cd firmware && cargo fmt --all -- --check)
  (cd fuzz && cargo fmt --all -- --check)
  # Clippy with warnings denied, everywhere the code is built: the host workspace (all targets:
  # tests, benches, examples), core alone with each optional feature, wasm32 (the npm package's
  # crate, and core's relaxed-SIMD path, which only builds with the relaxed-simd target feature),
  # and the firmware workspace for each thumb target it ships to.
  echo "--- clippy: host workspace"
  cargo clippy -q --workspace --exclude microquant-wasm --all-targets -- -D warnings
  for f in force-reference npy; do
    echo "--- clippy: core --no-default-features --features $f (host)"
    cargo clippy -q -p microquant --no-default-features --features "$f" --lib -- -D warnings
  done
  echo "--- clippy: core --features std,force-reference (host, with its tests)"
  cargo clippy -q -p microquant --features std,force-reference --all-targets -- -D warnings
  echo "--- clippy: wasm32 (microquant-wasm, all targets)"
  cargo clippy -q -p microquant-wasm --target wasm32-unknown-unknown --all-targets -- -D warnings
  echo "--- clippy: wasm32 core with relaxed-simd (+simd128,+relaxed-simd)"
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=+simd128,+relaxed-simd" \
    cargo clippy -q -p microquant --target wasm32-unknown-unknown --no-default-features --features relaxed-simd,npy --lib -- -D warnings
  for t in thumbv7em-none-eabihf thumbv6m-none-eabi thumbv8m.main-none-eabihf; do
    echo "--- clippy: firmware workspace, $t"
    (cd firmware && cargo clippy -q --release --target "$t" --workspace --all-targets -- -D warnings)
  done
  echo "--- clippy: firmware workspace, thumbv8m.main-none-eabihf with -C target-cpu=cortex-m55 (the M55 image)"
  (cd firmware && cargo clippy -q --release --target thumbv8m.main-none-eabihf --workspace --all-targets \
    --config "target.thumbv8m.main-none-eabihf.rustflags=['-C','target-cpu=cortex-m55']" -- -D warnings)
  # Core's Cortex-M fast paths (a path dependency of the firmware workspace, so not linted there):
  # the Arm DSP path and the Helium path, built for the M55 (both cfgs on).
  echo "--- clippy: core for thumbv8m.main-none-eabihf with -C target-cpu=cortex-m55 (arm_dsp + arm_mve)"
  CARGO_TARGET_THUMBV8M_MAIN_NONE_EABIHF_RUSTFLAGS="-C target-cpu=cortex-m55" \
    cargo clippy -q -p microquant --target thumbv8m.main-none-eabihf --no-default-features --features defmt --lib -- -D warnings
  # Rustdoc with warnings denied (broken intra-doc links, private items linked from public docs;
  # core's missing docs are denied by its #![deny(missing_docs)]).
  echo "--- cargo doc -D warnings"
  RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps --workspace --exclude microquant-wasm
  RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps -p microquant-wasm --target wasm32-unknown-unknown
}

web_demo_tests() {
  # One build of the npm package (wasm/npm/) serves both: the demo page loads it from pkg/. Its own
  # target folder, so it does not wait for the wasm kind's cargo lock in the other lane; no debug
  # info (wasm-opt drops it anyway).
  env -u CARGO_PROFILE_RELEASE_LTO CARGO_TARGET_DIR="$ROOT/target/npm" CARGO_PROFILE_RELEASE_DEBUG=0 bash wasm/build-npm.sh
  rm -rf web-demo/pkg && cp -r wasm/npm web-demo/pkg
  (cd web-demo && node e2e/run.mjs)
  # The npm package as a user installs it: packed tarball, a Node 20 app and a Vite app
  # (TypeScript types, `exports`, Web Workers) in headless Chromium.
  bash wasm/npm-e2e/run.sh --no-build
}

if [ "${1:-}" = "--kind" ]; then
  case $2 in
    host) host_tests ;; wasm) wasm_tests ;; firmware) firmware_tests ;; web-demo) web_demo_tests ;;
    no-std) nostd_checks ;; lint) lint_checks ;;
    *) echo "unknown kind $2" >&2; exit 2 ;;
  esac
  exit 0
fi

bash scripts/setup.sh
LOGDIR=$(mktemp -d)
T0=$(date +%s)
if [ -n "${MQ_TEST_KINDS:-}" ] || [ "${MQ_TEST_SERIAL:-0}" = 1 ]; then
  KINDS=${MQ_TEST_KINDS:-host wasm firmware web-demo no-std lint}
  for kind in $KINDS; do run_kind "$kind"; done
else
  # Two lanes, balanced on 2 cores (measured: host 360 + web demo 230 s against firmware 375 +
  # wasm 165 + no-std 25 s): host (target/) then the web demo (target/npm); firmware (its own
  # cargo workspace and target folder) then wasm and no-std (target/, free by then: the host
  # kind is the shorter of the two first ones; if not, cargo waits for its lock).
  KINDS="host lint web-demo firmware wasm no-std"
  ( for kind in host lint web-demo; do run_kind "$kind"; done ) &
  lane_a=$!
  ( for kind in firmware wasm no-std; do run_kind "$kind"; done ) &
  lane_b=$!
  wait $lane_a || true
  wait $lane_b || true
fi

echo
echo "=== summary ($(( $(date +%s) - T0 ))s)"
FAILED=0
for kind in $KINDS; do
  if [ -f "$LOGDIR/$kind.result" ]; then cat "$LOGDIR/$kind.result"; else echo "$kind: FAILED (no result)"; FAILED=1; fi
  grep -q "^$kind: ok" "$LOGDIR/$kind.result" 2>/dev/null || FAILED=1
done
exit $FAILED

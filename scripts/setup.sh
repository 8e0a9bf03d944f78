#!/usr/bin/env bash
# Installs everything microquant's build, demo and tests need, idempotently: only what is missing.
#   Debian: qemu-system-arm, chromium, chromium-driver (--no-install-recommends)
#   rustup targets: thumbv6m, thumbv7em, thumbv8m.main, wasm32; components rustfmt, clippy, llvm-tools
#   cargo tools: defmt-print, wasm-pack, wasm-bindgen-cli (= the wasm-bindgen pinned in wasm/Cargo.toml)
#   npm: web-demo's packages from its package-lock.json (playwright-core, binaryen for wasm-opt)
# Never installs Debian's binaryen (108): its wasm-opt breaks wasm-bindgen output.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
log() { printf '[setup] %s\n' "$*"; }
t0=$(date +%s)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# 1. Debian packages
pkgs=()
command -v qemu-system-arm >/dev/null || pkgs+=(qemu-system-arm)
command -v chromium >/dev/null || pkgs+=(chromium)
command -v chromedriver >/dev/null || pkgs+=(chromium-driver)
command -v node >/dev/null || pkgs+=(nodejs npm)
command -v python3 >/dev/null || pkgs+=(python3)
if [ ${#pkgs[@]} -gt 0 ]; then
  log "apt-get install ${pkgs[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${pkgs[@]}"
fi

# 2. Rust targets
want=(thumbv6m-none-eabi thumbv7em-none-eabihf thumbv8m.main-none-eabihf wasm32-unknown-unknown)
have=$(rustup target list --installed)
missing=()
for t in "${want[@]}"; do grep -qx "$t" <<<"$have" || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then log "rustup target add ${missing[*]}"; rustup target add "${missing[@]}"; fi

# rustfmt and clippy (the lint kind of scripts/test.sh)
for c in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$c"; then log "rustup component add $c"; rustup component add "$c"; fi
done

# llvm-size (flash figures in the demo and benchmarks)
if [ ! -x "$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/host: //p')/bin/llvm-size" ]; then
  log "rustup component add llvm-tools"; rustup component add llvm-tools
fi

# 3. cargo tools
WBG=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' wasm/Cargo.toml)
[ -n "$WBG" ] || { echo "setup: cannot read the pinned wasm-bindgen version from wasm/Cargo.toml" >&2; exit 1; }
command -v defmt-print >/dev/null || { log "cargo install defmt-print"; cargo install defmt-print --locked; }
command -v wasm-pack >/dev/null || { log "cargo install wasm-pack"; cargo install wasm-pack --locked; }
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WBG" ]; then
  log "cargo install wasm-bindgen-cli $WBG"
  # no --locked: its lockfile pins a webpki-roots the registry here cannot serve
  cargo install wasm-bindgen-cli --version "$WBG" --force
fi

# 4. npm packages (from the committed lockfile)
if [ ! -d web-demo/node_modules ] || [ web-demo/package-lock.json -nt web-demo/node_modules/.package-lock.json ]; then
  log "npm ci (web-demo)"
  (cd web-demo && npm ci --no-audit --no-fund)
fi
log "done in $(( $(date +%s) - t0 )) s"

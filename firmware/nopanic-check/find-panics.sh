#!/usr/bin/env bash
# find-panics.sh [TARGET]: when nopanic-check fails to link, lists the functions that call into
# panic code (with the source lines just before each call), from a build with a looping panic
# handler (`--features locate`) and its disassembly. Run from anywhere; TARGET defaults to
# thumbv7em-none-eabihf.
set -euo pipefail
T=${1:-thumbv7em-none-eabihf}
cd "$(dirname "$0")/.."
cargo build -q --release -p nopanic-check --features locate --target "$T"
ELF=target/$T/release/nopanic-check
llvm-objdump -d -l --demangle "$ELF" | awk '
  /^[0-9a-f]+ <.*>:$/ { name = substr($0, index($0, "<") + 1); sub(/>:$/, "", name); if (name !~ /^\$/) fn = name; next }
  /^; \// { src[n++ % 4] = substr($0, 3); next }
  /\t(bl|b|b\.w)\t/ && /<(core::panicking::|core::slice::index::|core::result::unwrap_failed|core::option::(unwrap|expect)_failed|bytemuck::internal::something_went_wrong)/ {
    if (fn ~ /^(core::panicking|core::slice::index|core::result|core::option|bytemuck::internal)/) next
    callee = $0; sub(/.*</, "", callee); sub(/[+>].*/, "", callee)
    print fn " -> " callee
    for (i = n - 4; i < n; i++) if (i >= 0) print "    " src[i % 4]
    found = 1
  }
  END { if (!found) print "no call into panic code found" }
'

#!/usr/bin/env bash
# Every `unsafe` block or function in our Rust sources (not the generated TFLite schema) must have
# a `SAFETY:` comment (`// SAFETY:` or a `# Safety` doc section) in the 14 lines above it, and
# the core may hold `unsafe` only in its arch modules. Prints each offender; exits 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while IFS= read -r f; do
    awk -v f="$f" '
        { line[NR] = $0 }
        /^[[:space:]]*\/\// { next }
        /(^|[^_[:alnum:]])unsafe([[:space:]]+(fn|impl)|[[:space:]]*\{)/ && !/#!\[|deny\(unsafe|forbid\(unsafe|allow\(unsafe/ {
            ok = 0
            for (k = NR; k >= NR - 14 && k > 0; k--) if (line[k] ~ /SAFETY:|# Safety/) ok = 1
            if (!ok) { printf "%s:%d: unsafe without a SAFETY: comment above it\n", f, NR; bad = 1 }
        }
        END { exit bad }' "$f" || status=1
done < <(git ls-files '*.rs' | grep -v 'schema_generated.rs')
if git grep -n -E '(^|[^_[:alnum:]])unsafe([[:space:]]+fn|[[:space:]]*\{)' -- 'core/src/*.rs' ':!core/src/kernels/arch/*' ':!core/src/tflite/schema_generated.rs' | grep -v '^\S*:[0-9]*:\s*//'; then
    echo "unsafe in core outside core/src/kernels/arch/" >&2; status=1
fi
n=$(git grep -c -E '(^|[^_[:alnum:]])unsafe([[:space:]]+(fn|impl)|[[:space:]]*\{)' -- '*.rs' ':!core/src/tflite/schema_generated.rs' | awk -F: '{s+=$2} END {print s+0}')
[ $status = 0 ] && echo "check-safety: $n unsafe sites, each with a SAFETY: comment"
exit $status

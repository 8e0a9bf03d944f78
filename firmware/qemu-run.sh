#!/usr/bin/env bash
# Cargo runner: qemu-run.sh <ELF> runs a firmware image on the QEMU board it was built for and
# decodes its defmt log on the host. The exit status is the firmware's semihosting exit code
# (124 = timed out). Environment: MQ_BOARD (else inferred from the target in the ELF's path),
# QEMU_EXTRA (e.g. "-icount shift=0"), QEMU_TIMEOUT (seconds, default 300), DEFMT_LOG_FORMAT.
set -uo pipefail
ELF="$1"; shift
BOARD="${MQ_BOARD:-}"
if [ -z "$BOARD" ]; then case "$ELF" in
  *thumbv7em-none-eabihf*)     BOARD=mps2-an386 ;;
  *thumbv6m-none-eabi*)        BOARD=microbit ;;
  *thumbv8m.main-none-eabihf*) BOARD=mps2-an505 ;;
  *) echo "qemu-run.sh: cannot infer the board from $ELF; set MQ_BOARD" >&2; exit 2 ;;
esac; fi
case "$BOARD" in
  mps2-an386) CPU=cortex-m4 ;;  mps2-an500) CPU=cortex-m7 ;;  mps2-an505) CPU=cortex-m33 ;;
  mps3-an547) CPU=cortex-m55 ;; microbit)   CPU=cortex-m0 ;;
  *) echo "qemu-run.sh: unknown board '$BOARD'" >&2; exit 2 ;;
esac
command -v qemu-system-arm >/dev/null || { echo "qemu-run.sh: qemu-system-arm not found (run scripts/setup.sh)" >&2; exit 127; }
command -v defmt-print >/dev/null || { echo "qemu-run.sh: defmt-print not found (run scripts/setup.sh)" >&2; exit 127; }
fmt=(); [ -n "${DEFMT_LOG_FORMAT:-}" ] && fmt=(--log-format "$DEFMT_LOG_FORMAT")
timeout "${QEMU_TIMEOUT:-300}" \
  qemu-system-arm -machine "$BOARD" -cpu "$CPU" -nographic -monitor none -serial none \
    -semihosting-config enable=on,target=native ${QEMU_EXTRA:-} -kernel "$ELF" \
  | defmt-print -e "$ELF" "${fmt[@]}"
st=("${PIPESTATUS[@]}")
[ "${st[0]}" = 124 ] && echo "qemu-run.sh: QEMU timed out after ${QEMU_TIMEOUT:-300} s on $BOARD" >&2
[ "${st[0]}" = 0 ] && [ "${st[1]}" != 0 ] && { echo "qemu-run.sh: defmt-print failed (${st[1]})" >&2; exit "${st[1]}"; }
exit "${st[0]}"

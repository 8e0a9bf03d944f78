#!/usr/bin/env python3
"""Instruction mix and estimated Cortex-M4 cycles of a firmware run under QEMU.

QEMU's `-icount shift=0` counts instructions; a Cortex-M4 spends more cycles than that: loads and
stores take 2 cycles unless they pipeline, LDM/STM/PUSH/POP 1 + N, a taken branch refills the
pipeline (1 + P, P = 1 to 3), a few instructions take longer (VDIV, SDIV). This reads the trace QEMU
writes with `-d in_asm,exec,nochain` (each translated block's instructions, then each block
executed, in order), counts every executed instruction by class, tells taken from not-taken
branches by where the next block starts, and applies the cycle counts of the Cortex-M4 Technical
Reference Manual (Table 3-1, "Processor instruction set summary"; zero wait states):

| class | cycles |
|---|---|
| data processing, extend, bit field, saturate, multiply and MAC (MUL, MLA, SMULL, SMLAL, SMLAD, SMMLA...) | 1 |
| single load (LDR, LDRB, LDRH, LDRSB, LDRSH, VLDR) | 2, or 1 right after another single load or store (they pipeline) |
| single store (STR, STRB, STRH, VSTR) | 2, or 1 right after another single load or store |
| LDRD, STRD | 3 (1 + N) |
| LDM, STM, PUSH, POP (VLDM, VSTM, VPUSH, VPOP: N single-precision registers) | 1 + N (+ P when POP loads the PC) |
| branch taken (B, BL, BX, BLX, CBZ, CBNZ, conditional B), TBB / TBH | 1 + P; TBB/TBH 2 + P |
| branch not taken | 1 |
| SDIV, UDIV | 2 to 12: counted as 7 |
| VDIV, VSQRT | 14 |
| VMLA, VMLS, VFMA, VFMS, VNMLA, VNMLS | 3 |

Left out, as QEMU models none of it: flash wait states (an STM32L4R5 at 120 MHz has 5; its ART
accelerator's instruction cache and prefetch hide them in loops, not for data read from flash such
as weights), bus contention, the load-use cases that do not pipeline, and unaligned-wide-instruction
and branch-target alignment penalties. The estimate is therefore a lower bound for a part that runs
from flash with wait states, and close to the truth from zero-wait-state memory (TCM, SRAM).

Usage: cycle_estimate.py TRACE [--json OUT] [--label NAME] [--exclude REGEX]
  TRACE: the QEMU log file or a FIFO QEMU writes to (read once, streaming).
       cycle_estimate.py --self-test: checks the classes and the branch accounting on known instructions
  and a small hand-written trace (run by scripts/test.sh, lint).
"""
import argparse
import json
import re
import sys

COND = "(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?"
WIDTH = r"(?:\.w|\.n)?"
BRANCH = re.compile(rf"^(b|bl|blx|bx){COND}{WIDTH}$")
CB = re.compile(r"^(cbz|cbnz)$")
TB_ = re.compile(rf"^(tbb|tbh){COND}{WIDTH}$")
LOAD1 = re.compile(rf"^(ldr|ldrb|ldrh|ldrsb|ldrsh|ldrex|ldrexb|ldrexh|ldrt|ldrbt|ldrht|ldrsbt|ldrsht|vldr|lda|ldab|ldah|ldaex){COND}{WIDTH}(?:\.\d+|\.f32|\.f64)?$")
STORE1 = re.compile(rf"^(str|strb|strh|strex|strexb|strexh|strt|strbt|strht|vstr|stl|stlb|stlh){COND}{WIDTH}(?:\.\d+|\.f32|\.f64)?$")
LDRD = re.compile(rf"^ldrd{COND}{WIDTH}$")
STRD = re.compile(rf"^strd{COND}{WIDTH}$")
LDM = re.compile(rf"^(ldm|ldmia|ldmfd|ldmdb|ldmea|pop|vldmia|vldmdb|vldm|vpop){COND}{WIDTH}$")
STM = re.compile(rf"^(stm|stmia|stmea|stmdb|stmfd|push|vstmia|vstmdb|vstm|vpush){COND}{WIDTH}$")
MUL = re.compile(rf"^(mul|muls|mla|mls|smull|umull|smlal|umlal|umaal|smla..|smlaw.|smlal..|smlad|smladx|smlsd|smlsdx|smlald|smlaldx|smlsld|smlsldx|smmla|smmlar|smmls|smmlsr|smmul|smmulr|smuad|smuadx|smusd|smusdx|smul..|smulw.){COND}{WIDTH}$")
DIV = re.compile(rf"^(sdiv|udiv){COND}{WIDTH}$")
VSLOW = re.compile(rf"^(vdiv|vsqrt){COND}(?:\.f32|\.f64)?$")
VMAC = re.compile(rf"^(vmla|vmls|vnmla|vnmls|vfma|vfms|vfnma|vfnms){COND}(?:\.f32|\.f64)?$")
FP = re.compile(r"^v")

# What the firmware application runs besides inference: start-up (stack painting, `Reset`), the
# simulated sensor (`playback`), defmt logging over semihosting, string formatting.
EXCLUDE = r"stack\d*paint|playback|defmt|semihosting|^Reset$|DefaultPreInit|from_utf8|core\d*fmt"

CLASSES = ["alu", "mul", "load", "store", "load_multiple", "store_multiple", "branch", "div", "fp", "fp_slow"]


def reglist_len(ops):
    """Registers in an LDM/STM/PUSH/POP list, and whether the PC is one of them."""
    m = re.search(r"\{([^}]*)\}", ops)
    if not m:
        return 1, False
    n, pc = 0, False
    for part in m.group(1).split(","):
        part = part.strip()
        if not part:
            continue
        if part == "pc":
            pc = True
        r = re.match(r"^([rsd])(\d+)\s*-\s*[rsd](\d+)$", part)
        if r:
            k = int(r.group(3)) - int(r.group(2)) + 1
            n += 2 * k if r.group(1) == "d" else k
        else:
            n += 2 if part.startswith("d") else 1
    return max(n, 1), pc


def classify(mnem, ops):
    """(class, base cycles, is a single load/store, can branch)."""
    writes_pc = re.match(r"^pc\b", ops.strip()) is not None
    if BRANCH.match(mnem) or CB.match(mnem):
        return "branch", 1, False, True
    if TB_.match(mnem):
        return "branch", 2, False, True
    if LDRD.match(mnem):
        return "load_multiple", 3, False, False
    if STRD.match(mnem):
        return "store_multiple", 3, False, False
    if LDM.match(mnem):
        n, pc = reglist_len(ops)
        return "load_multiple", 1 + n, False, pc
    if STM.match(mnem):
        n, _ = reglist_len(ops)
        return "store_multiple", 1 + n, False, False
    if LOAD1.match(mnem):
        return "load", 2, True, writes_pc
    if STORE1.match(mnem):
        return "store", 2, True, False
    if MUL.match(mnem):
        return "mul", 1, False, False
    if DIV.match(mnem):
        return "div", 7, False, False
    if VSLOW.match(mnem):
        return "fp_slow", 14, False, False
    if VMAC.match(mnem):
        return "fp", 3, False, False
    if FP.match(mnem):
        return "fp", 1, False, False
    # mov pc / add pc: an unconditional branch.
    return "alu", 1, False, writes_pc


class Block:
    """One translated block: its instructions' class counts, its cycles without the last
    instruction's branch penalty, and where it falls through to."""
    __slots__ = ("counts", "cycles", "end", "ends_in_branch", "n", "counted")

    def __init__(self, insns, counted=True):
        self.counted = counted
        self.counts = dict.fromkeys(CLASSES, 0)
        self.cycles = 0
        self.end = 0
        self.ends_in_branch = False
        self.n = len(insns)
        prev_single = False
        for addr, size, mnem, ops in insns:
            cls, cyc, single, branch = classify(mnem, ops)
            if single and prev_single:
                cyc = 1
            prev_single = single
            self.counts[cls] += 1
            self.cycles += cyc
            self.end = addr + size
            self.ends_in_branch = branch


def parse(stream, exclude=None):
    """Totals over the trace: class counts, instructions, base cycles, taken and not-taken
    branches (a block ends at a branch; the next block executed starts at its target when it was
    taken, at the next instruction when not)."""
    blocks = {}
    tot = dict.fromkeys(CLASSES, 0)
    insns = cycles = taken = not_taken = 0
    cur = None
    prev = None
    ins_re = re.compile(r"^0x([0-9a-f]+):\s+((?:[0-9a-f]{4}\s?)+?)\s{2,}(\S+)\s*(.*)$")
    for line in stream:
        if line.startswith("Trace "):
            if cur is not None:
                blocks[cur[0]] = Block(cur[1], cur[2])
                cur = None
            lb = line.index("[")
            pc = int(line[lb + 1:].split("/")[1], 16)
            b = blocks.get(pc)
            if b is None:
                continue
            if prev is not None and prev.counted and prev.ends_in_branch:
                if pc != prev.end:
                    taken += 1
                else:
                    not_taken += 1
            prev = b
            if not b.counted:
                continue
            for k, v in b.counts.items():
                tot[k] += v
            insns += b.n
            cycles += b.cycles
        elif line.startswith("IN:"):
            sym = line[3:].strip()
            cur = (None, [], exclude is None or not exclude.search(sym))
        elif cur is not None:
            m = ins_re.match(line)
            if m:
                addr = int(m.group(1), 16)
                size = 2 * len(m.group(2).split())
                if cur[0] is None:
                    cur = (addr, cur[1], cur[2])
                cur[1].append((addr, size, m.group(3), m.group(4)))
            elif not line.strip() or line.startswith("---"):
                if cur[0] is not None:
                    blocks[cur[0]] = Block(cur[1], cur[2])
                cur = None
    return {"counts": tot, "instructions": insns, "base_cycles": cycles, "taken": taken, "not_taken": not_taken}


def estimate(r):
    """Cycles for P = 1, 2, 3 (the taken branches' refill)."""
    return {p: r["base_cycles"] + p * r["taken"] for p in (1, 2, 3)}


def self_test():
    """The TRM's figures for known instructions (as QEMU 7.2 prints them), and a hand-written trace:
    a 3-instruction loop taken twice then left, behind an excluded start-up block."""
    cases = [
        ("ldr", "r0, [r1]", ("load", 2)), ("ldr.w", "r2, [r5, r9]", ("load", 2)), ("ldrsb.w", "r3, [r0, #1]", ("load", 2)),
        ("str", "r0, [r1], #4", ("store", 2)), ("ldrd", "r10, r11, [r4], #8", ("load_multiple", 3)),
        ("strd", "r0, r1, [sp]", ("store_multiple", 3)), ("push", "{r4, r5, r6, r7, lr}", ("store_multiple", 6)),
        ("pop", "{r4, r5, r6, r7, pc}", ("load_multiple", 6)), ("ldm.w", "r4, {r0, r1, r2}", ("load_multiple", 4)),
        ("vpush", "{d8, d9}", ("store_multiple", 5)), ("smlad", "r1, r10, lr, r1", ("mul", 1)),
        ("smlal", "r4, r11, r0, r8", ("mul", 1)), ("smmlar", "r0, r1, r2, r3", ("mul", 1)), ("mul", "r0, r1, r0", ("mul", 1)),
        ("sxtb16", "lr, r12, ror #8", ("alu", 1)), ("ssat", "r0, #8, r11, asr #1", ("alu", 1)), ("bfi", "r0, r1, #8, #8", ("alu", 1)),
        ("bic", "r0, r0, #3", ("alu", 1)), ("bne", "#0x400", ("branch", 1)), ("b.w", "#0x400", ("branch", 1)),
        ("bl", "#0x4319a", ("branch", 1)), ("bx", "lr", ("branch", 1)), ("cbz", "r0, #0x40", ("branch", 1)),
        ("tbb", "[pc, r0]", ("branch", 2)), ("sdiv", "r0, r1, r2", ("div", 7)), ("vdiv.f32", "s0, s1, s2", ("fp_slow", 14)),
        ("vmla.f32", "s0, s1, s2", ("fp", 3)), ("vadd.f32", "s0, s1, s2", ("fp", 1)), ("vldr", "s0, [r0]", ("load", 2)),
        ("add", "r0, r1, r2", ("alu", 1)),
    ]
    for mnem, ops, want in cases:
        got = classify(mnem, ops)[:2]
        assert got == want, f"{mnem} {ops}: {got}, want {want}"
    assert classify("pop", "{r4, pc}")[3] and not classify("pop", "{r4, r5}")[3]
    trace = """IN: Reset
0x00000400:  f000 f800  bl       #0x404

Trace 0: 0x7f0000000100 [00800408/00000400/00000110/ff020200] Reset
----------------
IN: kernel
0x00000404:  6808       ldr      r0, [r1]
0x00000406:  684a       ldr      r2, [r1, #4]
0x00000408:  3b01       subs     r3, #1
0x0000040a:  d1fb       bne      #0x404

Trace 0: 0x7f0000000200 [00800408/00000404/00000110/ff020200] kernel
Trace 0: 0x7f0000000200 [00800408/00000404/00000110/ff020200] kernel
Trace 0: 0x7f0000000200 [00800408/00000404/00000110/ff020200] kernel
----------------
IN: kernel
0x0000040c:  4770       bx       lr

Trace 0: 0x7f0000000300 [00800408/0000040c/00000110/ff020200] kernel
""".splitlines(keepends=True)
    r = parse(iter(trace), re.compile(EXCLUDE))
    # 3 passes of ldr (2) + ldr (1, pipelined) + subs (1) + bne (1), then bx (1); Reset left out.
    assert r["instructions"] == 13, r
    assert r["base_cycles"] == 3 * 5 + 1, r
    assert (r["taken"], r["not_taken"]) == (2, 1), r
    assert r["counts"]["load"] == 6 and r["counts"]["branch"] == 4, r
    assert estimate(r) == {1: 18, 2: 20, 3: 22}, estimate(r)
    print("cycle_estimate self-test: ok")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--json")
    ap.add_argument("--label", default="")
    ap.add_argument("--exclude", default=EXCLUDE, help="regex of the symbols left out (default: start-up, the "
                    "application's sensor playback and checks, logging)")
    a = ap.parse_args()
    with open(a.trace, "r", errors="replace") as f:
        r = parse(f, re.compile(a.exclude) if a.exclude else None)
    r["cycles"] = estimate(r)
    r["label"] = a.label
    n = max(r["instructions"], 1)
    shares = {k: round(100 * v / n, 1) for k, v in r["counts"].items()}
    print(f"{a.label}: {r['instructions']} instructions, taken branches {r['taken']} ({100 * r['taken'] / n:.1f} %), "
          f"shares {shares}, cycles/instruction {r['cycles'][1] / n:.3f} / {r['cycles'][2] / n:.3f} / {r['cycles'][3] / n:.3f} "
          f"(P = 1 / 2 / 3)", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()

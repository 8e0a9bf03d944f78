//! The fully connected rows of the Arm DSP path that read the input bytes directly
//! ([`fc_direct`]): 2 filters per pass, the input extended in registers, in one `asm!` block.

use super::conv::ZERO_BIAS;
use super::fully_connected::{FcArgs, fc_requant_one};
use super::{offset_pair, right_shift_scan};
use core::arch::asm;

/// Dot products of 2 filter rows (`w0`, `w1`) with the raw int8 input row `x`, extended with the
/// offset on the fly (`SXTAB16` twice per group of 4), over `4 * n` values: `(acc0 + x . w0,
/// acc1 + x . w1)`. The `n % 8` first groups one by one (16 instructions each with the loop
/// test), then 8 groups per loop iteration: 106 instructions for 64 MACs, or 102 when `aligned`
/// (the input read two words at a time with `LDRD`, which needs word alignment).
///
/// # Safety
/// `n >= 1`; `4 * n` bytes readable from each of `x`, `w0` and `w1`; `x` word aligned if
/// `aligned`.
#[inline(always)]
pub(super) unsafe fn dot_2x1_raw(
    x: *const i8,
    w0: *const i8,
    w1: *const i8,
    n: usize,
    off2: u32,
    aligned: bool,
    acc: (i32, i32),
) -> (i32, i32) {
    let (mut a0, mut a1) = acc;
    // SAFETY: (both blocks) `n` groups in all (the single-group loop runs `n % 8` times and
    // leaves a multiple of 8 in `n`, the 8-group loop the rest), each reading 4 bytes at each of
    // `px`, `p0` and `p1`: the `4 * n` bytes of each the caller guarantees. Unaligned word `LDR`s
    // are allowed on these cores; `LDRD` runs only when `x` is word aligned (the caller's), and
    // `px` stays so (it advances by 4 or 8). Every register written is declared; the flags are
    // not declared preserved.
    unsafe {
        if aligned {
            asm!(
                "tst {n}, #7",
                "beq 3f",
                "2:",
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "sub {n}, {n}, #1",
                "tst {n}, #7",
                "bne 2b",
                "3:",
                "cmp {n}, #0",
                "beq 5f",
                "4:",
                "ldrd {xa}, {xb}, [{px}], #8",
                dot2_half!("{xa}"),
                dot2_half!("{xb}"),
                "ldrd {xa}, {xb}, [{px}], #8",
                dot2_half!("{xa}"),
                dot2_half!("{xb}"),
                "ldrd {xa}, {xb}, [{px}], #8",
                dot2_half!("{xa}"),
                dot2_half!("{xb}"),
                "ldrd {xa}, {xb}, [{px}], #8",
                dot2_half!("{xa}"),
                dot2_half!("{xb}"),
                "subs {n}, {n}, #8",
                "bne 4b",
                "5:",
                px = inout(reg) x => _,
                p0 = inout(reg) w0 => _,
                p1 = inout(reg) w1 => _,
                n = inout(reg) n => _,
                off = in(reg) off2,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                xa = out(reg) _,
                xb = out(reg) _,
                xe = out(reg) _,
                xo = out(reg) _,
                e = out(reg) _,
                options(readonly, nostack),
            );
        } else {
            asm!(
                "tst {n}, #7",
                "beq 3f",
                "2:",
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "sub {n}, {n}, #1",
                "tst {n}, #7",
                "bne 2b",
                "3:",
                "cmp {n}, #0",
                "beq 5f",
                "4:",
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "ldr {xa}, [{px}], #4",
                dot2_half!("{xa}"),
                "subs {n}, {n}, #8",
                "bne 4b",
                "5:",
                px = inout(reg) x => _,
                p0 = inout(reg) w0 => _,
                p1 = inout(reg) w1 => _,
                n = inout(reg) n => _,
                off = in(reg) off2,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                xa = out(reg) _,
                xe = out(reg) _,
                xo = out(reg) _,
                e = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    (a0, a1)
}

/// One group of 4 input values (the word in `$x`) against 2 filter rows in [`dot_2x1_raw`] (12
/// instructions, 8 MACs, besides the input's load): the input word extended with the offset
/// (`SXTAB16` x 2), then `$x` reused for each row's word, extended (`SXTB16` x 2) into its
/// accumulator.
macro_rules! dot2_half {
    ($x:literal) => {
        concat!(
            "sxtab16 {xe}, {off}, ",
            $x,
            "\n",
            "sxtab16 {xo}, {off}, ",
            $x,
            ", ror #8\n",
            "ldr ",
            $x,
            ", [{p0}], #4\n",
            "sxtb16 {e}, ",
            $x,
            "\n",
            "smlad {a0}, {xe}, {e}, {a0}\n",
            "sxtb16 {e}, ",
            $x,
            ", ror #8\n",
            "smlad {a0}, {xo}, {e}, {a0}\n",
            "ldr ",
            $x,
            ", [{p1}], #4\n",
            "sxtb16 {e}, ",
            $x,
            "\n",
            "smlad {a1}, {xe}, {e}, {a1}\n",
            "sxtb16 {e}, ",
            $x,
            ", ror #8\n",
            "smlad {a1}, {xo}, {e}, {a1}\n",
        )
    };
}

use dot2_half;

/// The state [`fc_pairs_asm`] keeps in memory (`#[repr(C)]` words in the order of the
/// registers the block loads them into with `LDM`).
#[repr(C)]
pub(super) struct FcPairFrame {
    /// `+0`: the raw input row (`r2`).
    pub(super) x: *const i8,
    /// `+4`: the next pass's first filter row (`r3`, advanced by the block).
    pub(super) w: *const i8,
    /// `+8`: bytes from a pass's first filter row to its second (`r4`: `depth`; 0 for one row
    /// paired with itself).
    pub(super) row_step: usize,
    /// `+12`: the input offset in both halfwords (`r5`).
    pub(super) off2: u32,
    /// `+16`, `+20`: the next pass's first bias (`r8`, advanced by the block) and the bytes to
    /// its second (`r9`: 4, or 0 for one bias word used by every output).
    pub(super) bias: *const i32,
    pub(super) bias_step: usize,
    /// `+24`: groups of 4 values (`lr`: `depth / 4`, at least 1).
    pub(super) groups: usize,
    /// `+28`, `+32`, `+36`: the next pass's first multiplier and shift (`r2`, `r3`, advanced by
    /// the block), and the bytes to the second's (`r4`: 4, or 0 per tensor).
    pub(super) multiplier: *const i32,
    pub(super) shift: *const i32,
    pub(super) quant_step: usize,
    /// `+40`: `1 + 2 * output_offset` (`r5`).
    pub(super) one_off: i32,
    /// `+44`, `+48`: the clamp bounds in every byte.
    pub(super) lo4: u32,
    pub(super) hi4: u32,
    /// `+52`, `+56`, `+60`: the next pass's first output byte (`r2`, advanced by the block),
    /// where the passes end (`r3`), and the bytes from a pass's first output to its second
    /// (`r4`: 1; 0 for one row paired with itself, whose single pass ends at `out`).
    pub(super) out: *mut i8,
    pub(super) out_end: *mut i8,
    pub(super) out_step: usize,
}

/// One group of 4 input values (the word in `$x`) against the 2 filter rows of
/// [`fc_pairs_asm`] (12 instructions, 8 MACs, besides the input's load), as [`dot2_half!`]:
/// `r5` the offset pair, `r10`/`r11` the input's pairs, `r3`/`r4` the rows (post-incremented),
/// `r12` each row word's pairs, `r0`/`r1` the accumulators.
macro_rules! fc_pair_group {
    ($x:literal) => {
        concat!(
            "sxtab16 r10, r5, ",
            $x,
            "\n",
            "sxtab16 r11, r5, ",
            $x,
            ", ror #8\n",
            "ldr ",
            $x,
            ", [r3], #4\n",
            "sxtb16 r12, ",
            $x,
            "\n",
            "smlad r0, r10, r12, r0\n",
            "sxtb16 r12, ",
            $x,
            ", ror #8\n",
            "smlad r0, r11, r12, r0\n",
            "ldr ",
            $x,
            ", [r4], #4\n",
            "sxtb16 r12, ",
            $x,
            "\n",
            "smlad r1, r10, r12, r1\n",
            "sxtb16 r12, ",
            $x,
            ", ror #8\n",
            "smlad r1, r11, r12, r1\n",
        )
    };
}

/// Two groups of 4 input values against the 2 filter rows of [`fc_pairs_asm`] with the input
/// and the first row word aligned (24 instructions, 16 MACs): both groups' input words with
/// one `LDRD` (`r8`, `r9`), the first row's two words with another (`r8` once free, `lr`),
/// the second row's one by one.
macro_rules! fc_pair_2groups {
    () => {
        concat!(
            "ldrd r8, r9, [r2], #8\n",
            "sxtab16 r10, r5, r8\n",
            "sxtab16 r11, r5, r8, ror #8\n",
            "ldrd r8, lr, [r3], #8\n",
            "sxtb16 r12, r8\n",
            "smlad r0, r10, r12, r0\n",
            "sxtb16 r12, r8, ror #8\n",
            "smlad r0, r11, r12, r0\n",
            "ldr r8, [r4], #4\n",
            "sxtb16 r12, r8\n",
            "smlad r1, r10, r12, r1\n",
            "sxtb16 r12, r8, ror #8\n",
            "smlad r1, r11, r12, r1\n",
            "sxtab16 r10, r5, r9\n",
            "sxtab16 r11, r5, r9, ror #8\n",
            "sxtb16 r12, lr\n",
            "smlad r0, r10, r12, r0\n",
            "sxtb16 r12, lr, ror #8\n",
            "smlad r0, r11, r12, r0\n",
            "ldr r8, [r4], #4\n",
            "sxtb16 r12, r8\n",
            "smlad r1, r10, r12, r1\n",
            "sxtb16 r12, r8, ror #8\n",
            "smlad r1, r11, r12, r1\n",
        )
    };
}

/// Requantizes accumulator `$a` in [`fc_pairs_asm`] (`r2` the multiplier's address, `r3` the
/// shift's, `$idx` the register offset to them, `r5` `1 + 2 * offset`, `lr` `2^30`, `r9` -2):
/// the [`RightShiftRequant`] form as in `fc_requant_pc!`, 9 instructions.
///
/// [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant
macro_rules! fc_pair_requant {
    ($a:literal, $idx:literal) => {
        concat!(
            "ldr r10, [r2",
            $idx,
            "]\n",
            "asr r11, ",
            $a,
            ", #31\n",
            "orr r8, lr, r11, lsl #31\n",
            "smlal r8, r11, ",
            $a,
            ", r10\n",
            "ldr r10, [r3",
            $idx,
            "]\n",
            "sub r10, r9, r10\n",
            "asr r11, r11, r10\n",
            "add r11, r11, r5\n",
            "ssat ",
            $a,
            ", #8, r11, asr #1\n",
        )
    };
}

/// Passes of 2 fully connected outputs in one `asm!` block, from `f.out` until `f.out_end`
/// (once if `f.out_step` is 0): per pass, the accumulators start at the 2 biases, the raw input
/// row is extended with the offset on the fly against the 2 filter rows (12 instructions per
/// group of 4 values, 8 MACs: [`fc_pair_group!`]; the `groups % 8` first groups one by one, 16
/// instructions each with the loop test; then, with the input and the first row word aligned,
/// 16 groups per loop iteration ([`fc_pair_2groups!`]: 195 instructions for 128 MACs with the
/// loop test, entered half-way for an odd count of 8), otherwise 8 groups per iteration (106
/// instructions for 64 MACs)), each accumulator is requantized in the [`RightShiftRequant`]
/// form (9 instructions), the 2 bytes clamped together (`SSUB8` + `SEL`) and stored, and the
/// pointers advance to the next pass: 58 instructions per pass besides the MACs and the loop
/// tests.
///
/// # Safety
/// `f.groups >= 1`; with `k` passes (`2 * k * f.out_step = f.out_end - f.out`, or `k = 1` and
/// `f.out_end = f.out` if `f.out_step = 0`): `4 * f.groups` bytes readable from `f.x` and from
/// each `f.w + 2 * i * f.row_step` and that plus `f.row_step` (`i < k`); words readable at
/// `f.bias + 2 * i * f.bias_step` and that plus `f.bias_step`, and the same for `f.multiplier`
/// and `f.shift` with `f.quant_step` (every multiplier and shift in the [`RightShiftRequant`]
/// form); bytes `f.out + 2 * i * f.out_step` and that plus `f.out_step` writable.
///
/// [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant
#[inline(always)]
pub(super) unsafe fn fc_pairs_asm(f: &mut FcPairFrame) {
    // SAFETY: the caller's contract covers every access: per pass `groups` groups (the
    // single-group loop runs `groups % 8` times and leaves a multiple of 8, the 8-group loop the
    // rest), each reading 4 bytes from the input and each row (`r4` ends `row_step` past the
    // second row's start, which is the next pass's first row: `2 * row_step` past this one's);
    // `LDRD` on the input and the first row only when both addresses are word aligned (tested),
    // which the steps of 4 and 8 keep; unaligned `LDR`s are allowed on these cores. The end of
    // the input row and the frame's address pushed before the loops are popped after them.
    // Every register written is declared; the flags are not declared preserved.
    unsafe {
        asm!(
            "1:",
            "ldm r12, {{r2, r3, r4, r5, r8, r9, lr}}",
            "add r4, r3, r4",
            "ldr r0, [r8]",
            "ldr r1, [r8, r9]",
            "add r8, r8, r9, lsl #1",
            "str r8, [r12, #16]",
            "add r8, r2, lr, lsl #2",
            "push {{r8, r12}}",
            "orr r9, r2, r3",
            "tst lr, #7",
            "beq 3f",
            "2:",
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "sub lr, lr, #1",
            "tst lr, #7",
            "bne 2b",
            "cmp lr, #0",
            "beq 9f",
            "3:",
            "tst r9, #3",
            "bne 6f",
            "tst lr, #8",
            "bne 5f",
            "4:",
            fc_pair_2groups!(),
            fc_pair_2groups!(),
            fc_pair_2groups!(),
            fc_pair_2groups!(),
            "5:",
            fc_pair_2groups!(),
            fc_pair_2groups!(),
            fc_pair_2groups!(),
            fc_pair_2groups!(),
            "ldr r12, [sp]",
            "cmp r2, r12",
            "bne 4b",
            "b 9f",
            "6:",
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "ldr r8, [r2], #4",
            fc_pair_group!("r8"),
            "subs lr, lr, #8",
            "bne 6b",
            "9:",
            "pop {{r8, r12}}",
            "str r4, [r12, #4]",
            "add lr, r12, #28",
            "ldm lr, {{r2, r3, r4, r5}}",
            "mov lr, #0x40000000",
            "mvn r9, #1",
            fc_pair_requant!("r0", ""),
            fc_pair_requant!("r1", ", r4"),
            "add r2, r2, r4, lsl #1",
            "add r3, r3, r4, lsl #1",
            "strd r2, r3, [r12, #28]",
            "bfi r0, r1, #8, #8",
            "ldrd r8, r9, [r12, #44]",
            "ssub8 r10, r0, r8",
            "sel r0, r0, r8",
            "ssub8 r10, r9, r0",
            "sel r0, r0, r9",
            "add lr, r12, #52",
            "ldm lr, {{r2, r3, r4}}",
            "strb r0, [r2]",
            "lsr r0, r0, #8",
            "strb r0, [r2, r4]",
            "add r2, r2, r4, lsl #1",
            "str r2, [r12, #52]",
            "cmp r2, r3",
            "bne 1b",
            inout("r12") f as *mut FcPairFrame => _,
            out("r0") _,
            out("r1") _,
            out("r2") _,
            out("r3") _,
            out("r4") _,
            out("r5") _,
            out("r8") _,
            out("r9") _,
            out("r10") _,
            out("r11") _,
            out("lr") _,
        );
    }
}

/// [`fully_connected_right_shift`] on the raw input (fewer than 4 outputs, or no scratch), 2
/// filter rows at a time (the last of an odd count paired with itself). When every channel has
/// the common [`RightShiftRequant`] form ([`right_shift_scan`]), per input row the passes of
/// [`fc_pairs_asm`] (the whole pass in one block); otherwise [`fc_pairs`] from `c0 = 0`.
///
/// # Safety
/// The lengths of `a` and `output` fit `a.params` as [`fully_connected_right_shift`] checks
/// (`input_depth % 4 == 0` and at least 4; `batches * input_depth` input values, `output_depth *
/// input_depth` filter values, `batches * output_depth` outputs, `output_depth` biases if any,
/// `multiplier` and `shift` of the same length, 1 or `output_depth`).
///
/// [`fully_connected_right_shift`]: super::fully_connected::fully_connected_right_shift
/// [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant
#[inline(never)]
pub(super) unsafe fn fc_direct(a: &FcArgs<'_>, output: &mut [i8]) {
    let p = a.params;
    let (depth, out_d) = (p.input_depth, p.output_depth);
    let (m, s) = (a.multiplier, a.shift);
    let (bad, good) = right_shift_scan(m, s);
    if bad < 0 || good >= 0 {
        for row in 0..p.batches {
            fc_pairs(a, row, 0, output);
        }
        return;
    }
    let (bias, bias_step) = match a.bias {
        Some(b) => (b.as_ptr(), 4),
        None => (&ZERO_BIAS as *const i32, 0),
    };
    let mut f = FcPairFrame::new(a, bias, bias_step, 4 * (m.len() != 1) as usize, output.as_mut_ptr());
    for row in 0..p.batches {
        if row > 0 {
            f.x = a.input.as_ptr().wrapping_add(row * depth);
            f.w = a.filter.as_ptr();
            f.bias = bias;
            f.multiplier = m.as_ptr();
            f.shift = s.as_ptr();
            f.out = output.as_mut_ptr().wrapping_add(row * out_d);
        }
        // SAFETY: the frame points at output 0 of row `row < batches` (the input row, filter
        // row 0, bias 0 or the zero word, multiplier and shift 0); the `out_d` outputs from
        // there are the row's: their filter rows lie in `filter`, their biases in `bias`
        // (`out_d` entries) or are the zero word (step 0), their multipliers and shifts in `m`,
        // `s` (`out_d` entries, or one with step 0), all in the common form (scanned), their
        // bytes in `output` (the caller's contract); `depth / 4 >= 1` groups.
        unsafe { fc_pairs_run(&mut f, out_d) };
    }
}

impl FcPairFrame {
    /// The frame of layer `a` for passes of 2 consecutive outputs (`bias_step`, `quant_step`:
    /// 4, or 0 for one word used by every output), the pointers at the first output (`x` and
    /// `w` at the first rows, `bias`, the first multiplier and shift, `out`).
    pub(super) fn new(a: &FcArgs<'_>, bias: *const i32, bias_step: usize, quant_step: usize, out: *mut i8) -> Self {
        let p = a.params;
        FcPairFrame {
            x: a.input.as_ptr(),
            w: a.filter.as_ptr(),
            row_step: p.input_depth,
            off2: offset_pair(p.input_offset),
            bias,
            bias_step,
            groups: p.input_depth / 4,
            multiplier: a.multiplier.as_ptr(),
            shift: a.shift.as_ptr(),
            quant_step,
            one_off: 1 + 2 * p.output_offset,
            lo4: (p.activation.min as u8 as u32).wrapping_mul(0x0101_0101),
            hi4: (p.activation.max as u8 as u32).wrapping_mul(0x0101_0101),
            out,
            out_end: out,
            out_step: 1,
        }
    }
}

/// `count` outputs from the frame's pointers, 2 filter rows per pass of [`fc_pairs_asm`] (the
/// frame's steps those of consecutive outputs), the last of an odd count paired with itself;
/// the steps are left as they were.
///
/// # Safety
/// `f.groups >= 1`, `f.row_step = 4 * f.groups`, `f.out_step = 1`; for each of the `count`
/// outputs `j`: `4 * f.groups` bytes readable from `f.x` and `f.w + j * f.row_step`; words
/// readable at `f.bias + j * f.bias_step`, `f.multiplier + j * f.quant_step` and `f.shift + j *
/// f.quant_step` (those two in the [`RightShiftRequant`] form); byte `f.out + j` writable.
///
/// [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant
#[inline(always)]
pub(super) unsafe fn fc_pairs_run(f: &mut FcPairFrame, count: usize) {
    if count >= 2 {
        f.out_end = f.out.wrapping_add(count & !1);
        // SAFETY: `count / 2` passes of outputs `2i`, `2i + 1 < count`: the caller's.
        unsafe { fc_pairs_asm(f) };
    }
    if count % 2 != 0 {
        // The block left the frame at the last output: one pass of it with itself.
        let steps = (f.bias_step, f.quant_step);
        f.row_step = 0;
        f.bias_step = 0;
        f.quant_step = 0;
        f.out_step = 0;
        f.out_end = f.out;
        // SAFETY: one pass of output `count - 1` twice over (every step 0): the caller's.
        unsafe { fc_pairs_asm(f) };
        (f.bias_step, f.quant_step) = steps;
        f.row_step = 4 * f.groups;
        f.out_step = 1;
    }
}

/// Outputs `c0..output_depth` of input row `row` on the raw input, 2 filter rows at a time (the
/// last of an odd count paired with itself): [`dot_2x1_raw`] then [`fc_requant_one`] (which
/// checks each channel's form). Does nothing if a length does not fit `params`.
#[inline(never)]
pub(super) fn fc_pairs(a: &FcArgs<'_>, row: usize, c0: usize, output: &mut [i8]) {
    let p = a.params;
    let (depth, out_d) = (p.input_depth, p.output_depth);
    let groups = depth / 4;
    let (Some(x), Some(w), Some(out)) = (
        a.input.get(row * depth..(row + 1) * depth),
        a.filter.get(..out_d * depth),
        output.get_mut(row * out_d..(row + 1) * out_d),
    ) else {
        return;
    };
    if groups == 0 || depth % 4 != 0 {
        return;
    }
    let off2 = offset_pair(p.input_offset);
    let aligned = x.as_ptr() as usize % 4 == 0;
    let b = |c: usize| a.bias.and_then(|b| b.get(c)).copied().unwrap_or(0);
    let rq = |c: usize, acc: i32| fc_requant_one(a, c, acc);
    let mut c = c0;
    while c < out_d {
        let pair = c + 1 < out_d;
        let w0 = w.as_ptr().wrapping_add(c * depth);
        let w1 = if pair { w0.wrapping_add(depth) } else { w0 };
        // SAFETY: `groups >= 1` and `4 * groups = depth` bytes from `x` (row `row` of `input`, a
        // slice of that length), `w0` (row `c < out_d` of `w`, which holds `out_d` rows) and
        // `w1` (row `c + 1 < out_d`, or `w0`); `x` word aligned when `aligned`.
        let (a0, a1) = unsafe { dot_2x1_raw(x.as_ptr(), w0, w1, groups, off2, aligned, (b(c), b(c + 1))) };
        if let Some(o) = out.get_mut(c) {
            *o = rq(c, a0);
        }
        if pair {
            if let Some(o) = out.get_mut(c + 1) {
                *o = rq(c + 1, a1);
            }
        }
        c += 2;
    }
}

//! The fully connected rows of the Arm DSP path with the input row expanded to int16 pairs once
//! ([`fc_expanded`]): 4 filters per pass in one `asm!` block, requantized in it (`SMLAL`).

use super::fully_connected::{FcArgs, ZERO_BIAS4, expand_row};
use super::fully_connected_raw::{FcPairFrame, fc_pairs_run};
use super::fully_connected_wide::{BLOCK8_BYTES, BLOCKS, FcFrame8, fc_rows8_asm, wide_applies};
use super::{fc_group, fc_requant_pc, offset_pair};
use core::arch::asm;

/// The state [`fc_rows_asm`] copies onto its stack frame (`#[repr(C)]` words in frame order).
#[repr(C)]
pub(super) struct FcFrame {
    /// `sp + 0`, `sp + 4`: the next 4 biases (or 4 zero words) and the step per pass (16 or 0).
    pub(super) bias: *const i32,
    pub(super) bias_step: usize,
    /// `sp + 8`, `sp + 12`: per channel (`fc_rows_asm::<true>`), the next 4 multipliers' and
    /// shifts' addresses; per tensor (`fc_rows_asm::<false>`), the multiplier and `e - 2`
    /// (`-shift - 2`).
    pub(super) quant: [usize; 2],
    /// `sp + 16`, `sp + 20`: the next 4 outputs, and the end of the last pass's.
    pub(super) out: *mut i8,
    pub(super) out_end: *mut i8,
    /// `sp + 24`, `sp + 28`: the expanded input row and its end after `groups` groups.
    pub(super) x: *const u32,
    pub(super) x_end: *const u32,
    /// `sp + 32`: bytes of the 8-group loop body skipped on entry (84 per group); on the stack
    /// the block turns it into the entry address once.
    pub(super) entry: usize,
    /// `sp + 36`: from a pass's first row, after its `depth` bytes, to the next pass's (`3 *
    /// depth`).
    pub(super) filter_delta: usize,
    /// `sp + 40`: `1 + 2 * output_offset`.
    pub(super) one_off: i32,
    /// `sp + 44`, `sp + 48`: the clamp bounds in every byte.
    pub(super) lo4: u32,
    pub(super) hi4: u32,
    /// `sp + 52`: bytes per filter row (the depth).
    pub(super) depth: usize,
    /// Loaded into `r5`: the first pass's first row.
    pub(super) filter: *const i8,
}

/// Requantizes accumulator `$a` in [`fc_rows_asm`], per tensor: `r8` the multiplier, `r9` `e -
/// 2`, `r12` `1 + 2 * offset`, `lr` `2^30`: 6 instructions.
macro_rules! fc_requant_pt {
    ($a:literal) => {
        concat!(
            "asr r11, ",
            $a,
            ", #31\n",
            "orr r4, lr, r11, lsl #31\n",
            "smlal r4, r11, ",
            $a,
            ", r8\n",
            "asr r11, r11, r9\n",
            "add r11, r11, r12\n",
            "ssat ",
            $a,
            ", #8, r11, asr #1\n",
        )
    };
}

/// The requantization of the 4 accumulators of a pass: per channel (the multiplier and shift
/// addresses advanced and written back) or per tensor.
macro_rules! fc_requant4 {
    (pc) => {
        concat!(
            "ldrd r8, r9, [sp, #8]\n",
            fc_requant_pc!("r0"),
            fc_requant_pc!("r1"),
            fc_requant_pc!("r2"),
            fc_requant_pc!("r3"),
            "strd r8, r9, [sp, #8]\n",
        )
    };
    (pt) => {
        concat!(
            "ldrd r8, r9, [sp, #8]\n",
            fc_requant_pt!("r0"),
            fc_requant_pt!("r1"),
            fc_requant_pt!("r2"),
            fc_requant_pt!("r3"),
        )
    };
}

/// The whole [`fc_rows_asm`] block, with the requantization `$mode` (`pc` or `pt`).
macro_rules! fc_rows_block {
    ($f:expr, $mode:ident) => {
        asm!(
            "add r4, r4, #44",
            "ldm r4, {{r0, r1, r2}}",
            "push {{r0, r1, r2}}",
            "sub r4, r4, #44",
            "ldm r4, {{r0, r1, r2, r3, r5, r8, r9, r10, r11, r12, lr}}",
            "push {{r0, r1, r2, r3, r5, r8, r9, r10, r11, r12, lr}}",
            "ldr r5, [r4, #56]",
            "ldr r10, [sp, #32]",
            "adr r11, 2f",
            "add r10, r10, r11",
            "orr r10, r10, #1",
            "str r10, [sp, #32]",
            "3:",
            "ldr r8, [sp]",
            "ldm r8, {{r0, r1, r2, r3}}",
            "ldr r9, [sp, #4]",
            "add r8, r8, r9",
            "str r8, [sp]",
            "ldr r9, [sp, #52]",
            "add r8, r5, r9, lsl #1",
            "ldr r4, [sp, #24]",
            "ldr r10, [sp, #32]",
            "bx r10",
            ".p2align 2",
            "2:",
            fc_group!(),
            fc_group!(),
            fc_group!(),
            fc_group!(),
            fc_group!(),
            fc_group!(),
            fc_group!(),
            fc_group!(),
            "ldr r12, [sp, #28]",
            "cmp r4, r12",
            "bne 2b",
            "ldr r12, [sp, #36]",
            "add r5, r5, r12",
            "ldr r12, [sp, #40]",
            "mov lr, #0x40000000",
            fc_requant4!($mode),
            "bfi r0, r1, #8, #8",
            "bfi r0, r2, #16, #8",
            "bfi r0, r3, #24, #8",
            "ldrd r8, r9, [sp, #44]",
            "ssub8 r10, r0, r8",
            "sel r0, r0, r8",
            "ssub8 r10, r9, r0",
            "sel r0, r0, r9",
            "ldrd r10, r11, [sp, #16]",
            "str r0, [r10], #4",
            "str r10, [sp, #16]",
            "cmp r10, r11",
            "bne 3b",
            "add sp, sp, #56",
            inout("r4") $f => _,
            out("r0") _,
            out("r1") _,
            out("r2") _,
            out("r3") _,
            out("r5") _,
            out("r8") _,
            out("r9") _,
            out("r10") _,
            out("r11") _,
            out("r12") _,
            out("lr") _,
        )
    };
}

/// Passes of 4 consecutive fully connected outputs in one `asm!` block, from `f.out` to
/// `f.out_end`: per pass, the accumulators start at the 4 biases, every group of 4 input values
/// runs [`fc_group!`] (21 instructions, 16 MACs; an 8-group loop body entered part-way for the
/// first `groups % 8`), then each accumulator is requantized in the [`RightShiftRequant`] form
/// as in `conv::conv_tile_asm` (per channel 10 instructions with the multiplier and shift loads, per
/// tensor 6), the 4 bytes packed (`BFI`), clamped (`SSUB8` + `SEL`) and stored as one word.
/// 69 instructions per pass besides the MACs and the loop tests (3 per 8 groups) per channel,
/// 52 per tensor.
///
/// # Safety
/// `f.x` holds `2 * groups` words (`groups >= 1`, `f.x_end = f.x + 2 * groups`), `f.depth = 4 *
/// groups`, `f.entry = 84 * ((8 - groups % 8) % 8)`; `f.out_end = f.out + 4 * count` with
/// `count >= 1` passes; the `4 * count` filter rows from `f.filter` (`f.depth` bytes each,
/// consecutive) are readable; `f.bias` has `4 + (count - 1) * f.bias_step / 4` readable words;
/// with `PER_CHANNEL`, `f.quant` holds the addresses of `4 * count` readable multipliers and
/// shifts (each in the [`RightShiftRequant`] form); without, a multiplier and `e - 2` in that
/// form; the `4 * count` bytes from `f.out` are writable.
///
/// [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant
#[inline(always)]
pub(super) unsafe fn fc_rows_asm<const PER_CHANNEL: bool>(f: &FcFrame) {
    // SAFETY: the caller's contract covers every access; the 14-word frame pushed at the start
    // is popped at the end; `x` is word aligned for `LDRD`; the computed jump lands on a group
    // boundary of the 8-group body (all 32-bit instructions: 84 bytes per group), Thumb bit set.
    // Every register written is declared.
    unsafe {
        if PER_CHANNEL {
            fc_rows_block!(f as *const FcFrame, pc);
        } else {
            fc_rows_block!(f as *const FcFrame, pt);
        }
    }
}

/// [`fully_connected_right_shift`] (whose checks it relies on) with at least 4 outputs and `xw`
/// of `input_depth / 2` words: per input row, the row expanded into `xw`, the `output_depth / 4`
/// passes of [`fc_rows_asm`], then the last `output_depth % 4` outputs ([`fc_pairs`]).
///
/// [`fully_connected_right_shift`]: super::fully_connected::fully_connected_right_shift
/// [`fc_pairs`]: super::fully_connected_raw::fc_pairs
#[inline(never)]
pub(super) fn fc_expanded(a: &FcArgs<'_>, output: &mut [i8], xw: &mut [u32]) {
    let p = a.params;
    let (batches, depth, out_d) = (p.batches, p.input_depth, p.output_depth);
    let groups = depth / 4;
    if groups == 0 || out_d < 4 || xw.len() < 2 * groups {
        return;
    }
    let (m, s) = (a.multiplier, a.shift);
    let per_channel = m.len() != 1;
    let (bias, bias_step) = match a.bias {
        Some(b) => (b.as_ptr(), 16),
        None => (ZERO_BIAS4.as_ptr(), 0),
    };
    let passes = out_d / 4;
    let mut f = FcFrame {
        bias,
        bias_step,
        quant: match (m, s) {
            (&[m0], &[s0]) => [m0 as usize, s0.wrapping_neg().wrapping_sub(2) as usize],
            _ => [m.as_ptr() as usize, s.as_ptr() as usize],
        },
        out: output.as_mut_ptr(),
        out_end: output.as_mut_ptr(),
        x: xw.as_ptr(),
        x_end: xw.as_ptr().wrapping_add(2 * groups),
        entry: 84 * ((8 - groups % 8) % 8),
        filter_delta: 3 * depth,
        one_off: 1 + 2 * p.output_offset,
        lo4: (p.activation.min as u8 as u32).wrapping_mul(0x0101_0101),
        hi4: (p.activation.max as u8 as u32).wrapping_mul(0x0101_0101),
        depth,
        filter: a.filter.as_ptr(),
    };
    // Per tensor with biases, depths in blocks of 8 and a word-aligned filter: the 2-row
    // halves of `fc_rows8_asm` (19 instructions per 16 MACs instead of 21).
    let mut wide = match (a.bias, m, s) {
        (Some(b), &[m0], &[s0]) if wide_applies(a) => Some(FcFrame8 {
            bias: b.as_ptr(),
            x: f.x,
            cont_a: 0,
            entry: BLOCK8_BYTES * ((BLOCKS - (depth / 8) % BLOCKS) % BLOCKS),
            depth,
            cont_b: FcFrame8::epilogue(m0, f.lo4, f.hi4),
            filter: a.filter.as_ptr(),
            x_end: f.x_end,
            doubled: (m0 as u32).wrapping_mul(2),
            e1: s0.wrapping_neg().wrapping_sub(1),
            one_off: f.one_off,
            out: f.out,
            out_end: f.out_end,
            lo4: f.lo4,
            hi4: f.hi4,
            reserved: 0,
        }),
        _ => None,
    };
    let off2 = offset_pair(p.input_offset);
    for row in 0..batches {
        let x = a.input.get(row * depth..(row + 1) * depth).unwrap_or(&[]);
        expand_row(x, off2, xw);
        f.out = output.as_mut_ptr().wrapping_add(row * out_d);
        f.out_end = f.out.wrapping_add(4 * passes);
        // SAFETY: `xw` holds `2 * groups` words with `groups >= 1` (checked), `depth = 4 *
        // groups`, `entry` as required; `passes >= 1` passes from output 0 of row `row <
        // batches`: their `4 * passes <= out_d` filter rows lie in `filter`, their biases in
        // `bias` (`out_d` entries) or are the 4 zero words with step 0, their multipliers and
        // shifts in `m`, `s` (`out_d` entries, all in the right-shift form) or per tensor the one
        // pair, their outputs in the row's `out_d` bytes of `output` (the caller checked every
        // length and the form).
        unsafe {
            if let Some(f8) = wide.as_mut() {
                f8.x = f.x;
                f8.x_end = f.x_end;
                f8.out = f.out;
                f8.out_end = f.out_end;
                f8.bias = bias;
                f8.filter = a.filter.as_ptr();
                // The same contract with 8-value blocks: `depth = 8 * k`, the filter and the
                // biases (`out_d` of them) word aligned (checked with `wide`), `entry`,
                // `doubled`, `e1` and `cont_b` as required.
                fc_rows8_asm(f8);
            } else if per_channel {
                fc_rows_asm::<true>(&f);
            } else {
                fc_rows_asm::<false>(&f);
            }
        }
        if out_d % 4 != 0 {
            let c0 = 4 * passes;
            let qc = if per_channel { c0 } else { 0 };
            let (tb, ts) = (bias.wrapping_add(c0 * (bias_step / 16)), bias_step / 4);
            let mut t = FcPairFrame::new(a, tb, ts, 4 * per_channel as usize, f.out_end);
            t.x = a.input.as_ptr().wrapping_add(row * depth);
            t.w = a.filter.as_ptr().wrapping_add(c0 * depth);
            t.multiplier = m.as_ptr().wrapping_add(qc);
            t.shift = s.as_ptr().wrapping_add(qc);
            // SAFETY: the frame points at output `c0 = 4 * passes` of row `row < batches` (the
            // raw input row, filter row `c0`, bias `c0` or the zero word, multiplier and shift
            // `c0` or the only ones); the `out_d - c0` outputs from there are the row's last:
            // their filter rows lie in `filter`, their biases in `bias` (`out_d` entries, step
            // 4) or are the zero word (step 0), their multipliers and shifts in `m`, `s` (per
            // channel, step 4; else step 0), all in the right-shift form (the caller's scan),
            // their bytes in the row's `out_d` bytes of `output`; `groups >= 1`.
            unsafe { fc_pairs_run(&mut t, out_d - c0) };
        }
    }
}

//! The per-tensor fully connected passes of the Arm DSP path over an expanded input row with
//! depths that are multiples of 8 and word-aligned filters ([`fc_rows8_asm`]): 8 input values
//! (four expanded words, one `LDM`) against 2 filter rows (one `LDRD` each) per step, 19
//! instructions for 16 MACs instead of [`fc_group!`]'s 21.
//!
//! [`fc_group!`]: super::fc_group

use super::fully_connected::FcArgs;
use super::smmlar_requant;
use core::arch::asm;

/// Fewest outputs for which [`fully_connected_right_shift`] expands the input row when
/// [`wide_applies`] and the count is a multiple of 4: from 2 passes of [`fc_rows8_asm`] on, they
/// and the expansion cost less than the raw input's passes of 2 rows (12 instructions per 8
/// MACs); the last 1-3 outputs' passes would cost more (IC's 64 -> 10 layer: 30 instructions).
///
/// [`fully_connected_right_shift`]: super::fully_connected::fully_connected_right_shift
pub(super) const FC_WIDE_MIN_OUT: usize = 8;

/// Whether [`fc_rows8_asm`] can run layer `a` (whose lengths the caller checked): a per-tensor
/// requantization (its form the caller checks too), biases, depths in blocks of 8 and a
/// word-aligned filter (`LDRD`).
pub(super) fn wide_applies(a: &FcArgs<'_>) -> bool {
    a.multiplier.len() == 1 && a.bias.is_some() && a.params.input_depth % 8 == 0 && a.filter.as_ptr() as usize % 4 == 0
}

/// Bytes of code of one [`fc_block8!`] (19 instructions, all 32-bit).
pub(super) const BLOCK8_BYTES: usize = 76;

/// Blocks of 8 input values in the unrolled loop body of [`fc_rows8_asm`].
pub(super) const BLOCKS: usize = 16;

/// The state [`fc_rows8_asm`] copies onto its stack frame (`#[repr(C)]` words in frame order:
/// `sp + 4 * i` for field `i`).
#[repr(C)]
pub(super) struct FcFrame8 {
    /// `sp + 0`: the next pass's 4 biases.
    pub(super) bias: *const i32,
    /// `sp + 4`: the expanded input row.
    pub(super) x: *const u32,
    /// `sp + 8`: the code address after the first half of a pass (set by the block).
    pub(super) cont_a: usize,
    /// `sp + 12`: bytes of the loop body skipped on entry ([`BLOCK8_BYTES`] per block); the
    /// block turns it into the entry address.
    pub(super) entry: usize,
    /// `sp + 16`: bytes per filter row (the depth).
    pub(super) depth: usize,
    /// `sp + 20`: on entry the epilogue's kind ([`FcFrame8::epilogue`]); the block turns it into
    /// the code address after the second half of a pass.
    pub(super) cont_b: usize,
    /// `sp + 24`, `sp + 28`: on entry the first filter row and the input row's end (`x` plus
    /// `depth / 2` words); then the first half's two accumulators.
    pub(super) filter: *const i8,
    pub(super) x_end: *const u32,
    /// `sp + 32`, `sp + 36`, `sp + 40`: the multiplier doubled as a 32-bit word, `e - 1`
    /// (`-shift - 1`) and `1 + 2 * output_offset`.
    pub(super) doubled: u32,
    pub(super) e1: i32,
    pub(super) one_off: i32,
    /// `sp + 44`, `sp + 48`: the next 4 outputs, and the end of the last pass's.
    pub(super) out: *mut i8,
    pub(super) out_end: *mut i8,
    /// `sp + 52`, `sp + 56`: the clamp bounds in every byte.
    pub(super) lo4: u32,
    pub(super) hi4: u32,
    /// `sp + 60`: not read (the frame is 16 words).
    pub(super) reserved: u32,
}

impl FcFrame8 {
    /// The epilogue [`fc_rows8_asm`] runs for a per-tensor `(multiplier, shift)` in the
    /// [`RightShiftRequant`] form and the clamp bounds: bit 0 when the multiplier is at least
    /// `2^30` (its doubled word reads negative), bit 1 when the clamp is narrower than int8.
    ///
    /// [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant
    pub(super) fn epilogue(multiplier: i32, lo4: u32, hi4: u32) -> usize {
        usize::from(multiplier >= 1 << 30) | (2 * usize::from(lo4 != 0x8080_8080 || hi4 != 0x7f7f_7f7f))
    }
}

/// 8 input values against 2 filter rows in [`fc_rows8_asm`] (19 instructions, 16 MACs): the
/// four expanded input words (`r4`, post-incremented) into `r2`, `r3`, `r9`, `r10` with one
/// `LDM`, then per row (`r5`, `r8`, post-incremented) its 8 bytes with one `LDRD` into `r11`,
/// `r12`, each word's two halfword pairs (`SXTB16`, in `lr` then in place) into accumulator
/// `r0` or `r1`. All 32-bit encodings (the computed entry counts [`BLOCK8_BYTES`]).
macro_rules! fc_block8 {
    () => {
        concat!(
            "ldm.w r4!, {{r2, r3, r9, r10}}\n",
            "ldrd r11, r12, [r5], #8\n",
            "sxtb16 lr, r11\n",
            "smlad r0, r2, lr, r0\n",
            "sxtb16 r11, r11, ror #8\n",
            "smlad r0, r3, r11, r0\n",
            "sxtb16 lr, r12\n",
            "smlad r0, r9, lr, r0\n",
            "sxtb16 r12, r12, ror #8\n",
            "smlad r0, r10, r12, r0\n",
            "ldrd r11, r12, [r8], #8\n",
            "sxtb16 lr, r11\n",
            "smlad r1, r2, lr, r1\n",
            "sxtb16 r11, r11, ror #8\n",
            "smlad r1, r3, r11, r1\n",
            "sxtb16 lr, r12\n",
            "smlad r1, r9, lr, r1\n",
            "sxtb16 r12, r12, ror #8\n",
            "smlad r1, r10, r12, r1\n",
        )
    };
}

/// Requantizes accumulator `$a` in [`fc_rows8_asm`] ([`smmlar_requant!`] with `r10` the scratch,
/// `r4` the doubled multiplier, `r7` `e - 1`, `r8` `1 + 2 * offset`); `high` or `low` as there.
macro_rules! fc8_requant {
    ($a:literal, $mode:ident) => {
        smmlar_requant!($a, $mode, "r10", "r4", "r7", "r8")
    };
}

/// The epilogue of a pass in [`fc_rows8_asm`] after its label: the first half's accumulators
/// (rows 0-1; rows 2-3 are in `r1`, `r0`) and the constants loaded from the frame (`r2`, `r3`,
/// then `r4`, `r7`, `r8`, the output pointer `r9` and its end `r11`; `r5`, the next row, and
/// `r6`, the input's end, are kept), the 4 accumulators requantized ([`fc8_requant!`] in
/// mode `$mode`), packed (`BFI`), clamped (`SSUB8` + `SEL`) when `$clamp` is `clamp`, stored as
/// one word; back to the next pass (`3b`) or out (`9f`).
macro_rules! fc8_epilogue {
    ($label:literal, $mode:ident, $clamp:ident) => {
        concat!(
            ".p2align 2\n",
            $label,
            ":\n",
            "add r4, sp, #24\n",
            "ldm r4, {{r2, r3, r4, r7, r8, r9, r11}}\n",
            fc8_requant!("r2", $mode),
            fc8_requant!("r3", $mode),
            fc8_requant!("r0", $mode),
            fc8_requant!("r1", $mode),
            "bfi r2, r3, #8, #8\n",
            "bfi r2, r1, #16, #8\n",
            "bfi r2, r0, #24, #8\n",
            fc8_clamp!($clamp),
            "str r2, [r9], #4\n",
            "str r9, [sp, #44]\n",
            "cmp r9, r11\n",
            "bne 3b\n",
            "b 9f\n",
        )
    };
}

/// The clamp of [`fc8_epilogue!`]: none, or each byte of `r2` between the frame's bounds.
macro_rules! fc8_clamp {
    (none) => {
        ""
    };
    (clamp) => {
        concat!(
            "ldrd r4, r7, [sp, #52]\n",
            "ssub8 r10, r2, r4\n",
            "sel r2, r2, r4\n",
            "ssub8 r10, r7, r2\n",
            "sel r2, r2, r7\n",
        )
    };
}

/// Passes of 4 consecutive fully connected outputs in one `asm!` block, per-tensor
/// requantization, from `f.out` to `f.out_end`. Each pass runs two halves of 2 filter rows
/// (rows 0-1, then 3-2: the row pointers then need one `ADD` per half), the accumulators start
/// at the 2 biases, the loop body of
/// [`BLOCKS`] [`fc_block8!`]s (entered part-way for the first `(depth / 8) % BLOCKS`) runs
/// over the expanded input row (2 instructions per body for the loop test), and the half ends
/// with an indirect jump (`r7`, saved and restored by the block, as `r6`, which holds the
/// input's end) to its continuation. The 4 accumulators are then requantized with `SMMLAR` and
/// the doubled multiplier (5 instructions each), packed (`BFI`), clamped (`SSUB8` + `SEL`,
/// only if the bounds are narrower than int8) and stored as one word, by one of 4 epilogues
/// ([`fc8_epilogue!`], picked once from `f.cont_b`): 47 instructions per pass besides the MACs
/// (52 with the clamp).
///
/// # Safety
/// `f.x` holds `depth / 2` words, word aligned, with `f.depth = 8 * k` (`k >= 1`), `f.x_end =
/// f.x + depth / 2` and `f.entry = BLOCK8_BYTES * ((BLOCKS - k % BLOCKS) % BLOCKS)`; `f.out_end
/// = f.out + 4 * count` with `count >= 1` passes; the `4 * count` filter rows from `f.filter`
/// (`f.depth` bytes each, consecutive) are readable and `f.filter` is word aligned; `f.bias` is
/// word aligned with `4 * count` readable words; `f.doubled` and `f.e1` are `2 m` (wrapping)
/// and `-s - 1` of a per-tensor `(m, s)` in the [`RightShiftRequant`] form, `f.cont_b` is
/// [`FcFrame8::epilogue`] of `m` and the bounds; the `4 * count` bytes from `f.out` are
/// writable.
///
/// [`RightShiftRequant`]: crate::kernels::arch::requant::RightShiftRequant
#[inline(never)]
pub(super) unsafe fn fc_rows8_asm(f: &FcFrame8) {
    // SAFETY: the caller's contract covers every access: per half `depth / 8` blocks, each
    // reading 4 words of the input (`LDM`, word aligned) and 8 bytes of each of its 2 rows
    // (`LDRD`, word aligned: the filter is, and rows are `8 * k` bytes long); the second row
    // pointer ends at the next half's first row. The 16-word frame and `r6`, `r7` pushed at
    // the start are popped at the end (`r6`, `r7` restored, so the frame pointer is intact
    // when the block ends); the computed jumps land on a block boundary of the body or on the
    // continuations (word aligned, Thumb bit set). Every other register written is declared;
    // the flags are not declared preserved.
    unsafe {
        asm!(
            "push {{r6, r7}}",
            "sub sp, sp, #64",
            "ldm r4!, {{r0, r1, r2, r3, r5, r6, r7, r8}}",
            "stm sp, {{r0, r1, r2, r3, r5, r6, r7, r8}}",
            "ldm r4!, {{r0, r1, r2, r3, r5, r6, r7, r8}}",
            "add r9, sp, #32",
            "stm r9, {{r0, r1, r2, r3, r5, r6, r7, r8}}",
            "adr r0, 10f",
            "orr r0, r0, #1",
            "str r0, [sp, #8]",
            "ldr r1, [sp, #12]",
            "adr r0, 2f",
            "add r0, r0, r1",
            "orr r0, r0, #1",
            "str r0, [sp, #12]",
            "ldr r1, [sp, #20]",
            "adr r0, 11f",
            "cmp r1, #1",
            "bne 4f",
            "adr r0, 12f",
            "4:",
            "cmp r1, #2",
            "bne 5f",
            "adr r0, 13f",
            "5:",
            "cmp r1, #3",
            "bne 6f",
            "adr r0, 14f",
            "6:",
            "orr r0, r0, #1",
            "str r0, [sp, #20]",
            "ldrd r5, r6, [sp, #24]",
            // A pass: the first half, rows 0 (`r5`, there already) and 1 (`r8`).
            "3:",
            "ldm sp, {{r2, r4, r7, r9, r10}}",
            "ldrd r0, r1, [r2]",
            "add r8, r5, r10",
            "bx r9",
            // The second half, rows 3 (`r5`, accumulator `r0`) and 2 (`r8`, there already,
            // accumulator `r1`), so that `r5` ends at the next pass's row 0; the biases advance
            // to the next pass's.
            ".p2align 2",
            "10:",
            "strd r0, r1, [sp, #24]",
            "ldm sp, {{r2, r4, r7, r9, r10}}",
            "ldr r7, [sp, #20]",
            "ldrd r1, r0, [r2, #8]",
            "add r2, r2, #16",
            "str r2, [sp]",
            "add r5, r8, r10",
            "bx r9",
            ".p2align 2",
            "2:",
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            fc_block8!(),
            "cmp r4, r6",
            "bne 2b",
            "bx r7",
            // The epilogues: rows 0-1 in r2, r3 (from the frame), rows 2-3 in r1, r0.
            fc8_epilogue!("11", low, none),
            fc8_epilogue!("12", high, none),
            fc8_epilogue!("13", low, clamp),
            fc8_epilogue!("14", high, clamp),
            "9:",
            "add sp, sp, #64",
            "pop {{r6, r7}}",
            inout("r4") f as *const FcFrame8 => _,
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
        );
    }
}

//! The conv im2col block of the Arm DSP path ([`InterleavedTile`]): patch values in groups of 4,
//! sign-extended to int16 pairs with the input offset added and interleaved for `LDM`, gathered
//! with one `asm!` block per 4 pixels where the rows allow it ([`conv_im2col_tile`]).

use super::depthwise::tap_range;
use super::raw_patches::{copy_short, gather_raw_patches};
use super::{conv_group, offset_pair, smlad, sxtb16, sxtb16_ror8, word};
use crate::kernels::arch::scratch::{EDGE_ROW_WORDS, RAW_PATCH_WORDS, TILE};
use crate::kernels::arch::tiled_conv::{ConvTile, for_each_tap};
use crate::kernels::params::ConvParams;
use crate::kernels::window::input_coord;
use core::arch::asm;

/// The conv im2col block for the DSP tile: patch values `4g..4g+4` of the 4 pixels form group
/// `g`, 8 words `[e0 e1 e2 e3 o0 o1 o2 o3]` where `e_q = (x_q[4g], x_q[4g+2])` and `o_q =
/// (x_q[4g+1], x_q[4g+3])` (int16 halfwords, input offset added). One `LDM` of 4 words then
/// feeds 4 `SMLAD`s (one per pixel) with the same extended filter pair, so a group of 4 values
/// costs 13 instructions for 16 MACs: `LDR` + 2 `SXTB16` for the filter, 2 `LDM`, 8 `SMLAD`
/// (1.23 MACs per instruction; the physical bound of `SMLAD` is 2). All the filters of a block of
/// 16 run in one `asm!` block ([`ConvTile::dot_block`]), 8 groups per loop iteration (107
/// instructions for 128 MACs with the loop test). Scratch: the block, [`TILE`] x
/// `round_up(kh * kw * in_c, 8)` int16 values.
pub(crate) struct InterleavedTile;

/// Largest patch (`kh * kw * in_c`) the DSP im2col gathers on the stack when `in_c % 4 != 0`.
const RAW_PATCH_MAX: usize = 256;

/// Zeros one pixel's `e` and `o` slots of groups `from..to` (relative to `dst`, which starts at
/// the pixel's slot of a group).
#[inline(always)]
fn zero_slots(dst: &mut [u32], from: usize, to: usize) {
    for g in dst.get_mut(8 * from..).unwrap_or(&mut []).chunks_mut(8).take(to.saturating_sub(from)) {
        if let Some([e, _, _, _, o]) = g.get_mut(..5) {
            (*e, *o) = (0, 0);
        }
    }
}

/// Writes `words` words of `src` (4 values each), extended with the offset, into one pixel's
/// slots of consecutive groups: `dst[8 * j]` (the `e` pair) and `dst[8 * j + 4]` (the `o` pair).
/// 7 instructions per word. Does nothing if `src` or `dst` is too short.
#[inline(always)]
fn expand_run(src: &[i8], off2: u32, dst: &mut [u32], words: usize) {
    if words == 0 || src.len() < 4 * words || dst.len() < 8 * (words - 1) + 5 {
        return;
    }
    // SAFETY: reads `src[..4 * words]` and writes `dst[8 * j]`, `dst[8 * j + 4]` for `j <
    // words`, the last at `8 * (words - 1) + 4 < dst.len()`: all inside the slices (checked
    // above). `dst` is word aligned (`u32` slice); `LDR` from `src` may be unaligned.
    unsafe {
        asm!(
            "2:",
            "ldr {x}, [{s}], #4",
            "sxtab16 {e}, {off}, {x}",
            "sxtab16 {x}, {off}, {x}, ror #8",
            "str {x}, [{d}, #16]",
            "str {e}, [{d}], #32",
            "subs {n}, {n}, #1",
            "bne 2b",
            s = inout(reg) src.as_ptr() => _,
            d = inout(reg) dst.as_mut_ptr() => _,
            n = inout(reg) words => _,
            off = in(reg) off2,
            x = out(reg) _,
            e = out(reg) _,
            options(nostack),
        );
    }
}

/// Pixel `q` of an [`InterleavedTile`] block at `(oy, ox)` whose runs straddle groups (first
/// layers with 1 or 3 channels, dilation 1 across, `k <= RAW_PATCH_MAX`): the patch is gathered
/// raw, a filter row at a time, into a stack buffer whose padding holds the input zero point
/// (which the offset turns into 0), then expanded by words. Not inlined: its buffer stays out of
/// the frame of the block's other paths.
#[inline(never)]
#[cold]
fn raw_patch(
    p: &ConvParams,
    in_b: &[i8],
    (oy, ox): (usize, usize),
    q: usize,
    cols: &mut [u32],
    k: usize,
    groups: usize,
) {
    let c = p.input.c;
    let off = p.input_offset;
    let zp = (-off) as i8;
    let mut raw = [zp; RAW_PATCH_MAX + 4];
    let (kx0, kx1, ix0) = tap_range(ox, p.stride.w, 1, p.padding.left, p.input.w, p.filter.w);
    let row_len = c * p.filter.w;
    for (ky, dst_row) in raw.chunks_exact_mut(row_len.max(1)).take(p.filter.h).enumerate() {
        let Some(iy) = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, p.input.h) else {
            continue;
        };
        let start = (iy * p.input.w + ix0) * c;
        let n = (kx1.saturating_sub(kx0)) * c;
        if let (Some(src), Some(dst)) = (in_b.get(start..start + n), dst_row.get_mut(kx0 * c..kx0 * c + n)) {
            dst.copy_from_slice(src);
        }
    }
    let words = k.div_ceil(4);
    expand_run(&raw, offset_pair(off), cols.get_mut(q..).unwrap_or(&mut []), words);
    for g in cols.chunks_exact_mut(8).take(groups).skip(words) {
        if let Some([e, _, _, _, o]) = g.get_mut(q..q + 5) {
            (*e, *o) = (0, 0);
        }
    }
}

impl ConvTile for InterleavedTile {
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, kp: usize) {
        let c = p.input.c;
        let off = p.input_offset;
        let off2 = offset_pair(off);
        let groups = kp / 4;
        for q in 0..TILE {
            let Some(&(oy, ox)) = pixels.get(q) else {
                // A missing pixel (the last block of the image): zeros.
                for g in cols.chunks_exact_mut(8).take(groups) {
                    if let Some([e, _, _, _, o]) = g.get_mut(q..q + 5) {
                        (*e, *o) = (0, 0);
                    }
                }
                continue;
            };
            if c % 4 == 0 && p.dilation.w == 1 {
                // Whole words, a filter row at a time: its in-image taps are one contiguous run
                // of the input (dilation 1 across), the taps in the padding zeros.
                let words = c / 4;
                let (kx0, kx1, ix0) = tap_range(ox, p.stride.w, 1, p.padding.left, p.input.w, p.filter.w);
                let mut g0 = 0;
                for ky in 0..p.filter.h {
                    let row_words = words * p.filter.w;
                    let iy = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, p.input.h);
                    let dst = cols.get_mut(8 * g0 + q..).unwrap_or(&mut []);
                    match iy {
                        Some(iy) if kx1 > kx0 => {
                            let start = (iy * p.input.w + ix0) * c;
                            let src = in_b.get(start..start + (kx1 - kx0) * c).unwrap_or(&[]);
                            zero_slots(dst, 0, kx0 * words);
                            let (before, after) = (kx0 * words, kx1 * words);
                            expand_run(src, off2, dst.get_mut(8 * before..).unwrap_or(&mut []), after - before);
                            zero_slots(dst, after, row_words);
                        }
                        _ => zero_slots(dst, 0, row_words),
                    }
                    g0 += row_words;
                }
                for g in cols.chunks_exact_mut(8).take(groups).skip(g0) {
                    if let Some([e, _, _, _, o]) = g.get_mut(q..q + 5) {
                        (*e, *o) = (0, 0);
                    }
                }
            } else if c % 4 == 0 {
                // Whole words, tap by tap (dilated filters): every run starts at a multiple of 4
                // values (group `g0`).
                let words = c / 4;
                let mut g0 = 0;
                for_each_tap(p, in_b, oy, ox, |_, run| {
                    let dst = cols.get_mut(8 * g0 + q..).unwrap_or(&mut []);
                    match run {
                        Some(src) => expand_run(src, off2, dst, words),
                        None => {
                            for g in dst.chunks_mut(8).take(words) {
                                if let Some([e, _, _, _, o]) = g.get_mut(..5) {
                                    (*e, *o) = (0, 0);
                                }
                            }
                        }
                    }
                    g0 += words;
                });
                for g in cols.chunks_exact_mut(8).take(groups).skip(g0) {
                    if let Some([e, _, _, _, o]) = g.get_mut(q..q + 5) {
                        (*e, *o) = (0, 0);
                    }
                }
            } else if p.dilation.w == 1 && k <= RAW_PATCH_MAX {
                raw_patch(p, in_b, (oy, ox), q, cols, k, groups);
            } else {
                // Runs that straddle groups: value by value (first layers with 1 or 3 channels),
                // as halfwords: value `k` of pixel `q` is halfword `16 (k / 4) + 2 q + LANE[k % 4]`.
                const LANE: [usize; 4] = [0, 8, 1, 9];
                let cols16: &mut [u16] = bytemuck::cast_slice_mut(cols);
                let mut kpos = 0;
                for_each_tap(p, in_b, oy, ox, |_, run| {
                    for j in 0..c {
                        let v = run.and_then(|r| r.get(j)).map_or(0, |&x| (x as i32 + off) as i16);
                        let kk = kpos + j;
                        if let Some(h) = cols16.get_mut(16 * (kk / 4) + 2 * q + LANE[kk % 4]) {
                            *h = v as u16;
                        }
                    }
                    kpos += c;
                });
                for kk in k..kp {
                    if let Some(h) = cols16.get_mut(16 * (kk / 4) + 2 * q + LANE[kk % 4]) {
                        *h = 0;
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn dot(cols: &[u32], w: &[i8], k: usize, _kp: usize, _input_offset: i32, acc: [i32; TILE]) -> [i32; TILE] {
        let full = k / 4; // groups whose 4 filter values are all in `w`
        let quads = (full / 4).min(cols.len() / 32).min(w.len() / 16);
        let [mut a0, mut a1, mut a2, mut a3] = acc;
        if quads > 0 {
            let pin = cols.as_ptr();
            let pw = w.as_ptr();
            // SAFETY: the loop runs `quads` times; each iteration reads 32 words at `pin` (8 `LDM`s
            // of 4 words) and 16 bytes at `pw` (4 word `LDR`s), so it reads `cols[..32 * quads]`
            // and `w[..16 * quads]`, both within the slices (`quads` is bounded by their lengths
            // above). `pin` is word aligned (a `u32` slice), as `LDM` requires; `LDR` from `pw`
            // may be unaligned, which Armv7E-M/Armv8-M allow. The end pointer is pushed on the
            // stack (two words, popped before the end); every register written is declared.
            unsafe {
                let end = pw.add(16 * quads);
                asm!(
                    "push {{r8, r9}}",
                    "2:",
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    "ldr r8, [sp]",
                    "cmp r5, r8",
                    "bne 2b",
                    "add sp, sp, #8",
                    inout("r0") a0,
                    inout("r1") a1,
                    inout("r2") a2,
                    inout("r3") a3,
                    inout("r4") pin => _,
                    inout("r5") pw => _,
                    inout("r8") end => _,
                    out("r9") _,
                    out("r10") _,
                    out("r11") _,
                    out("r12") _,
                    out("lr") _,
                    options(readonly),
                );
            }
        }
        // The remaining groups (up to 3 full ones, and the partial last one, its filter tail
        // zero-filled; the block holds zeros past `k`).
        let mut acc = [a0, a1, a2, a3];
        let mut g = 4 * quads;
        while g * 4 < k {
            let wt = word(w.get(4 * g..).unwrap_or(&[]));
            let (we, wo) = (sxtb16(wt), sxtb16_ror8(wt));
            if let Some(&[e0, e1, e2, e3, o0, o1, o2, o3]) = cols.get(8 * g..8 * g + 8) {
                for (a, (e, o)) in acc.iter_mut().zip([(e0, o0), (e1, o1), (e2, o2), (e3, o3)]) {
                    *a = smlad(e, we, smlad(o, wo, *a));
                }
            }
            g += 1;
        }
        acc
    }

    /// All the filters of the block in one `asm!` block: per filter, the accumulators start at its
    /// bias, a loop of 8 groups per iteration (107 instructions for 128 MACs), then the 0-7 groups
    /// left one by one, then `STM` writes them out (about 25 instructions between filters instead
    /// of a call). A partial last group (`k % 4 != 0`) reads its filter word whole: the bytes past
    /// `k` belong to the next filter and meet the block's zeros past `k`, so they add nothing; the
    /// last filter of the whole layer, whose word would end past `filters`, takes [`Self::dot`].
    /// `filters` runs from the block's first filter to the end of the layer's filters.
    #[inline(always)]
    fn dot_block(
        cols: &[u32],
        filters: &[i8],
        k: usize,
        kp: usize,
        input_offset: i32,
        bias: &[i32],
        acc: &mut [[i32; TILE]],
    ) {
        let n = acc.len().min(bias.len());
        let groups = k.div_ceil(4);
        // Filters whose `4 * groups` bytes all lie inside `filters`.
        let readable = match filters.len().checked_sub(4 * groups) {
            Some(room) if k > 0 => (room / k + 1).min(n),
            _ => 0,
        };
        let fits = cols.len() >= 8 * groups && kp >= 4 * groups;
        let n_asm = if fits { readable } else { 0 };
        if n_asm > 0 {
            let (oct_bytes, rem_bytes) = (32 * (groups / 8), 4 * (groups % 8));
            // SAFETY: for each of the `n_asm` filters the loops read `cols[..8 * groups]` (8 words
            // per group of 4 values; `cols.len() >= 8 * groups` checked above) and `4 * groups`
            // bytes from the filter's start `f * k`; the last read ends at `(n_asm - 1) * k + 4 *
            // groups <= filters.len()` (`readable`), so every read is inside `filters`. `bias` is
            // read at `n_asm <= bias.len()` words; `acc` written at `n_asm * 4` words (`n_asm <=
            // acc.len()`, `[i32; 4]` entries, word aligned as `STM` needs; `cols` is word aligned
            // for `LDM`). The 10-word frame pushed at the start (cols start, k, bias pointer,
            // acc pointer, filters left, current filter start, bytes of the 8-group loop, bytes of
            // the groups left, a loop end, padding) is popped before the end. Every register
            // written is declared.
            unsafe {
                asm!(
                    "push {{r0, r2, r3, r4, r5, r8, r9, r10, r11, r12}}",
                    "3:",
                    "ldr r8, [sp, #8]",
                    "ldr r0, [r8], #4",
                    "str r8, [sp, #8]",
                    "mov r1, r0",
                    "mov r2, r0",
                    "mov r3, r0",
                    "ldr r4, [sp]",
                    "ldr r5, [sp, #20]",
                    "ldr r8, [sp, #24]",
                    "add r8, r5, r8",
                    "str r8, [sp, #32]",
                    "cmp r5, r8",
                    "beq 5f",
                    "2:",
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    conv_group!(),
                    "ldr r8, [sp, #32]",
                    "cmp r5, r8",
                    "bne 2b",
                    "5:",
                    "ldr r8, [sp, #28]",
                    "add r8, r5, r8",
                    "str r8, [sp, #32]",
                    "cmp r5, r8",
                    "beq 6f",
                    "7:",
                    conv_group!(),
                    "ldr r8, [sp, #32]",
                    "cmp r5, r8",
                    "bne 7b",
                    "6:",
                    "ldr r8, [sp, #12]",
                    "stm r8!, {{r0, r1, r2, r3}}",
                    "str r8, [sp, #12]",
                    "ldr r8, [sp, #20]",
                    "ldr r9, [sp, #4]",
                    "add r8, r8, r9",
                    "str r8, [sp, #20]",
                    "ldr r9, [sp, #16]",
                    "subs r9, r9, #1",
                    "str r9, [sp, #16]",
                    "bne 3b",
                    "add sp, sp, #40",
                    inout("r0") cols.as_ptr() => _,
                    out("r1") _,
                    inout("r2") k => _,
                    inout("r3") bias.as_ptr() => _,
                    inout("r4") acc.as_mut_ptr() => _,
                    inout("r5") n_asm => _,
                    inout("r8") filters.as_ptr() => _,
                    inout("r9") oct_bytes => _,
                    inout("r10") rem_bytes => _,
                    out("r11") _,
                    out("r12") _,
                    out("lr") _,
                );
            }
        }
        // Filters the asm block did not take (the layer's last one when its word would overread).
        let rest = acc.iter_mut().zip(filters.chunks(k.max(1))).zip(bias).take(n).skip(n_asm);
        for ((a, w), &b) in rest {
            *a = Self::dot(cols, w, k, kp, input_offset, [b; TILE]);
        }
    }
}

/// One group of [`im2col_gather4`] (15 instructions): the 4 pixels' words (`r8`-`r11`, from
/// `r4`, `r4 + r5` and `r4 + 2 * r5`, `r4 + 3 * r5`; `r4` post-incremented), their `(x0, x2)`
/// pairs with the offset (`lr`) added into `r0`-`r3` stored with one `STM`, then their `(x1,
/// x3)` pairs in place, another `STM` (`r12` the destination, post-incremented).
macro_rules! gather_group {
    () => {
        concat!(
            "ldr r9, [r4, r5]\n",
            "add r0, r4, r5, lsl #1\n",
            "ldr r10, [r0]\n",
            "ldr r11, [r0, r5]\n",
            "ldr r8, [r4], #4\n",
            "sxtab16 r0, lr, r8\n",
            "sxtab16 r1, lr, r9\n",
            "sxtab16 r2, lr, r10\n",
            "sxtab16 r3, lr, r11\n",
            "stm r12!, {{r0, r1, r2, r3}}\n",
            "sxtab16 r8, lr, r8, ror #8\n",
            "sxtab16 r9, lr, r9, ror #8\n",
            "sxtab16 r10, lr, r10, ror #8\n",
            "sxtab16 r11, lr, r11, ror #8\n",
            "stm r12!, {{r8, r9, r10, r11}}\n",
        )
    };
}

/// Writes `rows * n` groups (`rows >= 1`, `n >= 1`) of the interleaved im2col block
/// ([`InterleavedTile`]) from 4 pixel sources per row: in row `r`, pixel `q`'s values `4j..4j +
/// 4` are the word at `src + r * row_step + q * pstride + 4j`, extended with the input offset
/// (`SXTAB16`); group `j` of row `r` goes to `dst[8(rn + j)..][..8]` as `[e0 e1 e2 e3 o0 o1 o2
/// o3]`. Two groups per loop iteration ([`gather_group!`], entered half-way for an odd `n`): 33
/// instructions per 2 groups (32 values) with the loop test, 12 per row and 6 per call besides.
///
/// # Safety
/// `src + r * row_step + q * pstride + 4j .. + 4` readable for `r < rows`, `q < 4`, `j < n`;
/// `dst[..8 * rows * n]` writable and word aligned.
#[inline(always)]
unsafe fn im2col_gather4(
    src: *const i8,
    pstride: usize,
    row_step: usize,
    rows: usize,
    dst: *mut u32,
    n: usize,
    off2: u32,
) {
    // SAFETY: the caller's contract: per row `n` groups (the row ends when the destination
    // reaches the row's end, kept on the stack with the block's end, the row step, the row's
    // bytes of `dst` and the row's source; an odd `n` enters the body at its second group), each
    // reading the 4 pixels' words at the row's source plus `4j` and writing `dst[8j..8j + 8]`
    // of the row; the 5 words pushed at the start are popped at the end; `STM` needs word
    // alignment, which `dst` has. Every register written is declared; the flags are not
    // declared preserved.
    unsafe {
        asm!(
            "lsl r3, r0, #5",
            "mul r1, r1, r3",
            "add r1, r12, r1",
            "add r0, r12, r3",
            "push {{r0, r1, r2, r3, r4}}",
            "1:",
            "tst r3, #32",
            "bne 3f",
            "2:",
            gather_group!(),
            "3:",
            gather_group!(),
            "ldr r0, [sp]",
            "cmp r12, r0",
            "bne 2b",
            "ldr r0, [sp, #4]",
            "cmp r12, r0",
            "beq 4f",
            "ldrd r2, r3, [sp, #8]",
            "ldr r4, [sp, #16]",
            "add r4, r4, r2",
            "str r4, [sp, #16]",
            "add r0, r12, r3",
            "str r0, [sp]",
            "b 1b",
            "4:",
            "add sp, sp, #20",
            inout("r4") src => _,
            in("r5") pstride,
            inout("r12") dst => _,
            inout("r0") n => _,
            inout("r1") rows => _,
            inout("r2") row_step => _,
            in("lr") off2,
            out("r3") _,
            out("r8") _,
            out("r9") _,
            out("r10") _,
            out("r11") _,
        );
    }
}

/// The im2col block of the 4 output pixels from `p0` (at `(oy, ox)`) for [`conv_s8`]: with
/// whole words per pixel (`in_c % 4 == 0`), 1x1 convolutions that map output pixels to the same
/// input pixels gather 4 consecutive pixels, and any filter (dilation 1 across) whose 4 pixels
/// share a row and lie within the image's columns gathers each filter row's 4 runs
/// ([`im2col_gather4`], all rows in one call when none is in the padding; rows in the padding
/// are zeros), and from a copy of the rows' spans in `edge` (the zero point outside the
/// image) when they reach past its left or right edge; every other tile takes
/// [`InterleavedTile::im2col`]. Only the `ceil(k / 4)` groups the tile reads are written.
///
/// [`conv_s8`]: super::conv::conv_s8
#[allow(clippy::too_many_arguments)]
pub(super) fn conv_im2col_tile(
    p: &ConvParams,
    in_b: &[i8],
    p0: usize,
    oy: usize,
    ox: usize,
    cols: &mut [u32],
    k: usize,
    kp: usize,
    raw: &mut [u8],
    edge: &mut [u32],
) {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let off2 = offset_pair(p.input_offset);
    let wpp = c / 4; // words per input pixel
    if c % 4 == 0 && c > 0 {
        let same_grid = p.filter.h == 1
            && p.filter.w == 1
            && p.stride.h == 1
            && p.stride.w == 1
            && p.padding.top == 0
            && p.padding.left == 0
            && ind.h == outd.h
            && ind.w == outd.w;
        if same_grid {
            let start = p0 * c;
            if start + 4 * c <= in_b.len() && cols.len() >= 8 * wpp {
                // SAFETY: pixel q's `wpp` words lie in `in_b[start + q * c..start + (q + 1) * c]`,
                // inside `in_b` (checked); `cols` holds `8 * wpp` words (checked).
                unsafe { im2col_gather4(in_b.as_ptr().add(start), c, 0, 1, cols.as_mut_ptr(), wpp, off2) };
                return;
            }
        }
        let (sw, kh, kw) = (p.stride.w, p.filter.h, p.filter.w);
        let last_ox = ox + 3;
        let ix_first = (ox * sw) as isize - p.padding.left as isize;
        let run = kw * wpp; // words per filter row
        let pstride = sw * c;
        // The tile's rows of taps: the first input row and the rows' step.
        let iy_first = (oy * p.stride.h) as isize - p.padding.top as isize;
        let row_step = p.dilation.h * ind.w * c;
        let rows_inside = kh > 0 && iy_first >= 0 && iy_first as usize + (kh - 1) * p.dilation.h < ind.h;
        let cols_fit = cols.len() >= 8 * run * kh && kh > 0 && run > 0;
        let ix_last = (last_ox * sw + (kw - 1)) as isize - p.padding.left as isize;
        if p.dilation.w == 1 && last_ox < outd.w && cols_fit {
            if ix_first >= 0 && ix_last < ind.w as isize {
                // Every window inside the image's columns: the filter rows' 4 runs straight from
                // the input, all rows in one call when they are all inside the image too.
                let x0 = ix_first as usize * c;
                if rows_inside {
                    let start = iy_first as usize * ind.w * c + x0;
                    let end = start + (kh - 1) * row_step + 3 * pstride + 4 * run;
                    if end <= in_b.len() {
                        // SAFETY: row r's pixel q's run is `in_b[start + r * row_step + q *
                        // pstride..][..4 * run]`, the last ending at `end <= in_b.len()`
                        // (checked); `cols` holds `8 * run * kh` words (checked).
                        unsafe {
                            im2col_gather4(
                                in_b.as_ptr().add(start),
                                pstride,
                                row_step,
                                kh,
                                cols.as_mut_ptr(),
                                run,
                                off2,
                            )
                        };
                    }
                    return;
                }
                for (ky, dst) in cols.chunks_exact_mut((8 * run).max(1)).take(kh).enumerate() {
                    match input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h) {
                        Some(iy) => {
                            let start = iy * ind.w * c + x0;
                            if start + 3 * pstride + 4 * run <= in_b.len() {
                                // SAFETY: pixel q's run is `in_b[start + q * pstride..][..4 *
                                // run]`, the last ending within `in_b` (checked); `dst` holds `8 *
                                // run` words.
                                unsafe {
                                    im2col_gather4(in_b.as_ptr().add(start), pstride, 0, 1, dst.as_mut_ptr(), run, off2)
                                };
                            }
                        }
                        None => dst.fill(0),
                    }
                }
                return;
            }
            // Some window reaches past the image's left or right edge: each filter row's span of
            // input pixels copied to `edge` (the zero point outside the image, which extends
            // to zeros), then gathered as above.
            let span_px = 3 * sw + kw;
            let span = span_px * wpp;
            // As many filter rows per gather as `EDGE_ROW_WORDS` words hold (`edge` has room
            // for them: `conv_extra_words`).
            let per = (EDGE_ROW_WORDS / span.max(1)).max(1);
            if span <= EDGE_ROW_WORDS && edge.len() >= per.min(kh) * span {
                let zp = ((-p.input_offset) as u8 as u32).wrapping_mul(0x0101_0101);
                // Span pixels `lo..hi` lie in the image; the others are padding.
                let lo = if ix_first < 0 { ix_first.unsigned_abs().min(span_px) } else { 0 };
                let right = ind.w as isize - ix_first; // from the span's start to the image's end
                let hi = if right <= lo as isize { lo } else { (right as usize).min(span_px) };
                let first = (ix_first + lo as isize) as usize; // the first input column copied
                let mut ky0 = 0;
                while ky0 < kh {
                    let rows = per.min(kh - ky0);
                    for (r, row) in edge.chunks_exact_mut(span.max(1)).take(rows).enumerate() {
                        let iy = input_coord(oy, p.stride.h, ky0 + r, p.dilation.h, p.padding.top, ind.h);
                        let copied = match iy {
                            Some(iy) => {
                                let start = (iy * ind.w + first) * c;
                                match (in_b.get(start..start + (hi - lo) * c), row.get_mut(lo * wpp..hi * wpp)) {
                                    (Some(s), Some(d)) => {
                                        let n = 4 * d.len();
                                        copy_short(bytemuck::cast_slice_mut(d), s, n);
                                        true
                                    }
                                    _ => false,
                                }
                            }
                            None => false,
                        };
                        if copied {
                            row.iter_mut().take(lo * wpp).for_each(|w| *w = zp);
                            row.iter_mut().skip(hi * wpp).for_each(|w| *w = zp);
                        } else {
                            row.fill(zp);
                        }
                    }
                    if let Some(dst) = cols.get_mut(8 * run * ky0..8 * run * (ky0 + rows)) {
                        // SAFETY: row r's pixel q's run is the `4 * run` bytes from `4 * r * span
                        // + q * pstride` in `edge`, the last ending at `4 * (rows - 1) * span + 3
                        // * sw * c + 4 * run = 4 * rows * span` bytes, within its `per.min(kh) *
                        // span` words or more (checked; `rows <= per.min(kh)`); `dst` holds `8 *
                        // run * rows` words.
                        unsafe {
                            im2col_gather4(
                                edge.as_ptr() as *const i8,
                                pstride,
                                4 * span,
                                rows,
                                dst.as_mut_ptr(),
                                run,
                                off2,
                            )
                        };
                    }
                    ky0 += rows;
                }
                return;
            }
        }
    }
    let groups = k.div_ceil(4);
    if c % 4 != 0
        && p.dilation.w == 1
        && groups <= RAW_PATCH_WORDS
        && cols.len() >= 8 * groups
        && raw.len() >= 16 * groups
    {
        // Few channels: the 4 raw patches gathered in `raw` (prefilled with the zero point
        // by the caller), then expanded like whole words.
        let zp = (-p.input_offset) as u8;
        gather_raw_patches(p, in_b, oy, ox, raw, 4 * groups, zp);
        // SAFETY: patch q's `groups` words lie in `raw[16 * groups * q / 4..]`: the last ends at
        // `4 * (4 * groups) <= raw.len()`; `cols` holds `8 * groups` words (checked).
        unsafe { im2col_gather4(raw.as_ptr() as *const i8, 4 * groups, 0, 1, cols.as_mut_ptr(), groups, off2) };
        return;
    }
    let mut px = [(0usize, 0usize); TILE];
    let (mut y, mut x) = (oy, ox);
    for d in px.iter_mut() {
        *d = (y, x);
        x += 1;
        if x == outd.w {
            x = 0;
            y += 1;
        }
    }
    let _ = p0;
    InterleavedTile::im2col(p, in_b, &px, cols, k, kp);
}

//! The Arm DSP convolution ([`conv_s8`]): 1 filter x 4 pixels per pass of `SMLAD` over the
//! im2col block, 16 filters per `asm!` block, requantized in the same block.

use super::fully_connected::{ZERO_BIAS4, expand_row};
use super::fully_connected_expanded::{FcFrame, fc_rows_asm};
use super::im2col::{InterleavedTile, conv_im2col_tile};
use super::{clamp_bytes, conv_group, offset_pair, smmlar_requant};
use crate::kernels::arch::requant::RightShiftRequant;
use crate::kernels::arch::scratch::TILE;
use crate::kernels::arch::scratch::padded_patch_len;
use crate::kernels::arch::scratch::{LAST_FILTER_MAX, conv_extra_words, conv_scratch_words};
use crate::kernels::arch::tiled_conv::ConvOperands;
use crate::kernels::arch::tiled_conv::conv_s8_tiled;
use crate::kernels::params::ConvParams;
use core::arch::asm;

/// The state [`conv_tile_asm`] copies onto its stack frame (`#[repr(C)]` words, addressed by
/// offset; the field order is the frame's, words read together adjacent).
#[repr(C)]
struct ConvTileFrame {
    /// `sp + 0`: the im2col block.
    cols: *const u32,
    /// `sp + 4`, `sp + 8`: the current filter's bias (or a zero word when the layer has none)
    /// and the bytes the bias pointer steps per filter (4, or 0 without bias).
    bias: *const i32,
    bias_step: usize,
    /// `sp + 12`, `sp + 16`: the current filter's multiplier and shift.
    multiplier: *const i32,
    shift: *const i32,
    /// `sp + 20`: not read (keeps the other fields' offsets).
    reserved: i32,
    /// `sp + 24`: `1 + 2 * output_offset`, the requantization's last rounding and the offset.
    one_off: i32,
    /// `sp + 28`: the current filter's output byte in the tile's first pixel.
    out: *mut i8,
    /// `sp + 32`: bytes between output pixels (the output channels).
    out_c: usize,
    /// `sp + 36`: `out` after the last filter (`out + count`).
    out_end: *mut i8,
    /// `sp + 40`: bytes of the loop body ([`CONV_BODY_GROUPS`] groups) skipped on entry after
    /// the first group (52 per group: `CONV_BODY_GROUPS - (groups - 1) % CONV_BODY_GROUPS`
    /// groups, modulo `CONV_BODY_GROUPS`); on the stack the block turns it into the entry
    /// address once.
    entry: usize,
    /// `sp + 44`: whether the groups after the first need more than one pass of the loop body
    /// (`groups - 1 > CONV_BODY_GROUPS`: 1, else 0); on the stack the block turns it into the
    /// address the body continues at (the loop test, or the requantization).
    loops: usize,
    /// `sp + 48`: the im2col block's end after `groups` groups.
    cols_end: *const u32,
    /// `sp + 52`: added to the filter pointer after a filter's `4 * groups` bytes to reach the
    /// next filter (`k - 4 * groups`, wrapping; read only when `k % 4 != 0`).
    filter_delta: usize,
    /// Loaded into `r5`: the first filter.
    filter: *const i8,
}

/// Groups of 4 patch values in the loop body of [`conv_tile_asm`] (52 bytes of code each): one
/// pass per filter for patches up to `4 * 49 = 196` values (a 3x3 filter over 16 channels is
/// 144), at 2.5 KB of code.
const CONV_BODY_GROUPS: usize = 48;

/// The first group of a filter in [`conv_tile_asm`] (13 instructions, 16 MACs): as
/// [`conv_group!`], with the bias in `r0` as every accumulator's addend (no copies of it).
macro_rules! conv_first_group {
    () => {
        concat!(
            "ldr r12, [r5], #4\n",
            "ldm r4!, {{r8, r9, r10, r11}}\n",
            "sxtb16 lr, r12\n",
            "smlad r1, r9, lr, r0\n",
            "smlad r2, r10, lr, r0\n",
            "smlad r3, r11, lr, r0\n",
            "smlad r0, r8, lr, r0\n",
            "ldm r4!, {{r8, r9, r10, r11}}\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r0, r8, lr, r0\n",
            "smlad r1, r9, lr, r1\n",
            "smlad r2, r10, lr, r2\n",
            "smlad r3, r11, lr, r3\n",
        )
    };
}

/// The whole [`conv_tile_asm`] block; `$delta` the instructions that step the filter pointer
/// past a filter's last word (none when `k % 4 == 0`).
macro_rules! conv_tile_block {
    ($f:expr, $($delta:literal),*) => {
        asm!(
            "ldr r5, [r4, #44]",
            "ldrd r8, r9, [r4, #48]",
            "push {{r5, r8, r9}}",
            "ldm r4, {{r0, r1, r2, r3, r5, r8, r9, r10, r11, r12, lr}}",
            "push {{r0, r1, r2, r3, r5, r8, r9, r10, r11, r12, lr}}",
            "ldr r5, [r4, #56]",
            "adr r9, 2f",
            "add lr, lr, r9",
            "orr lr, lr, #1",
            "str lr, [sp, #40]",
            "ldr r8, [sp, #44]",
            "adr r9, 4f",
            "adr r10, 5f",
            "cmp r8, #0",
            "it eq",
            "moveq r9, r10",
            "orr r9, r9, #1",
            "str r9, [sp, #44]",
            "3:",
            "ldm sp, {{r4, r8, r9}}",
            "ldr r0, [r8]",
            "add r8, r8, r9",
            "str r8, [sp, #4]",
            conv_first_group!(),
            "ldr pc, [sp, #40]",
            ".p2align 2",
            "2:",
            conv_body!(),
            "ldr pc, [sp, #44]",
            "4:",
            "ldr r8, [sp, #48]",
            "cmp r4, r8",
            "bne 2b",
            "5:",
            $($delta,)*
            "ldrd r8, r9, [sp, #12]",
            "ldr r10, [r8], #4",
            "ldr r11, [r9], #4",
            "strd r8, r9, [sp, #12]",
            "mvn r11, r11",
            "ldr r12, [sp, #24]",
            "lsls r10, r10, #1",
            "bpl 6f",
            conv_requant!("r0", high),
            conv_requant!("r1", high),
            conv_requant!("r2", high),
            conv_requant!("r3", high),
            "7:",
            "ldrd r8, r9, [sp, #28]",
            "add r10, r8, r9, lsl #1",
            "strb r1, [r8, r9]",
            "strb r2, [r10]",
            "strb r3, [r10, r9]",
            "strb r0, [r8], #1",
            "str r8, [sp, #28]",
            "ldr r9, [sp, #36]",
            "cmp r8, r9",
            "bne 3b",
            "add sp, sp, #56",
            "b 9f",
            // A multiplier below 2^30 (its double has bit 31 clear).
            "6:",
            conv_requant!("r0", low),
            conv_requant!("r1", low),
            conv_requant!("r2", low),
            conv_requant!("r3", low),
            "b 7b",
            "9:",
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

/// The [`CONV_BODY_GROUPS`] groups of the [`conv_tile_asm`] loop body.
macro_rules! conv_body {
    () => {
        concat!(
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
            conv_group!(),
        )
    };
}

/// The conv tile of [`conv_s8`]: every filter from `f.out` to `f.out_end` against the im2col
/// block of 4 output pixels, requantized and stored, in one `asm!` block. Per filter: the first
/// group of 4 patch values starts the 4 accumulators from the bias ([`conv_first_group!`]); the
/// others run through a loop body of [`CONV_BODY_GROUPS`] groups (13 instructions per group, 16
/// MACs: [`conv_group!`]) entered part-way, in one pass for patches of up to `4 *
/// (CONV_BODY_GROUPS + 1)` values (else 3 instructions per pass for the loop test); then each
/// accumulator is requantized with `SMMLAR` and the doubled multiplier ([`conv_requant!`], 5
/// instructions; a multiplier below `2^30` branches to the block of the other form), the last
/// shift inside `SSAT`; the 4 bytes go to the 4 pixels' rows (`f.out_c` apart). 44 instructions
/// per filter besides the MACs and the loop tests (46 with `PAD`, the filter pointer then stepped
/// by `f.filter_delta`), 2 more for a multiplier below `2^30`.
///
/// # Safety
/// `f.cols` holds `8 * groups` words, `f.cols_end = f.cols + 8 * groups`, `groups >= 2`, `f.entry
/// = 52 * ((B - (groups - 1) % B) % B)` and `f.loops = (groups - 1 > B) as usize` with `B =
/// CONV_BODY_GROUPS`; `f.out_end = f.out + count` with `count >= 1` filters,
/// and for each filter `i < count`: bytes `[i * k, i * k + 4 * groups)` from `f.filter` are
/// readable (`k = 4 * groups` without `PAD`, else `4 * groups + f.filter_delta`, wrapping),
/// `f.multiplier` and `f.shift` have `count` readable words (in the [`RightShiftRequant`]
/// form), `f.bias` has `count` readable words or `f.bias_step == 0` and one, and bytes `f.out +
/// i + q * f.out_c` (q < 4) are writable.
#[inline(always)]
unsafe fn conv_tile_asm<const PAD: bool>(f: &ConvTileFrame) {
    // SAFETY: the caller's contract covers every access; the frame pushed at the start (14
    // words) is popped at the end; `cols` is word aligned for `LDM`; the computed jump lands on
    // a group boundary of the loop body (every instruction there is 32-bit: 52 bytes per group)
    // and the body continues at the loop test or past it (one pass suffices when `loops` is 0),
    // both addresses with the Thumb bit set. Every register written is declared; the flags are
    // not declared preserved.
    unsafe {
        if PAD {
            conv_tile_block!(f as *const ConvTileFrame, "ldr r8, [sp, #52]", "add r5, r5, r8");
        } else {
            conv_tile_block!(f as *const ConvTileFrame,);
        }
    }
}

/// Requantizes accumulator `$a` in [`conv_tile_asm`] ([`smmlar_requant!`] with `r8` the scratch,
/// `r10` the doubled multiplier, `r11` `e - 1`, `r12` `1 + 2 * offset`); `high` or `low` as there.
macro_rules! conv_requant {
    ($a:literal, $mode:ident) => {
        smmlar_requant!($a, $mode, "r8", "r10", "r11", "r12")
    };
}

use conv_requant;

/// A zero bias word for layers without bias (the tile then steps its bias pointer by 0).
pub(super) static ZERO_BIAS: i32 = 0;

/// Convolution on the Arm DSP path: output pixels in tiles of 4 (the image's last tile
/// overlaps the one before it instead of being partial), each tile's patches expanded once into
/// the im2col block ([`InterleavedTile::im2col`]), then every filter against it in one `asm!`
/// block ([`conv_tile_asm`]: MACs, requantization and stores, 44 instructions per filter
/// besides the 13 per 16 MACs). A clamp narrower than int8 is applied afterwards to the tile's
/// output bytes, 4 at a time (`SSUB8` + `SEL`). Layers outside this path's preconditions (a
/// requantization outside the `SMMLAR` epilogue's domain ([`RightShiftRequant::all_valid_smmlar`]), fewer than 4 output pixels per image,
/// a last filter too long to copy, a scratch without the gathering buffers that follow the
/// im2col block, [`conv_extra_words`]: edge rows, raw patches, the last filter) run the shared
/// tiled path (`conv_s8_tiled`); grouped convolutions and too little scratch return `false`
/// (the reference runs).
///
/// [`InterleavedTile::im2col`]: crate::kernels::arch::tiled_conv::ConvTile::im2col
pub(crate) fn conv_s8(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    let ConvOperands { p, multiplier, shift, input, filter, bias } = *a;
    let (ind, outd) = (p.input, p.output);
    let k = p.filter.h * p.filter.w * p.filter.c;
    let kp = padded_patch_len(k);
    let words = conv_scratch_words(k);
    let out_c = outd.c;
    let pixels = outd.h * outd.w;
    let groups = k.div_ceil(4);
    let last_pad = k % 4 != 0;
    // The gathering buffers after the im2col block in the scratch (`conv_extra_words`).
    let (edge_words, raw_words, last_words) =
        conv_extra_words(ind.c, (p.filter.h, p.filter.w), p.stride.w, p.dilation.w, (p.padding.left, p.padding.right));
    let extra_words = edge_words + raw_words + last_words;
    let fits = p.filter.c == ind.c
        && k > 4
        && out_c > 0
        && cols.len() >= words + extra_words
        && pixels >= 4
        && multiplier.len() == out_c
        && shift.len() == out_c
        && bias.is_none_or(|b| b.len() == out_c)
        && filter.len() >= out_c * k
        && (!last_pad || 4 * groups <= LAST_FILTER_MAX)
        && RightShiftRequant::all_valid_smmlar(multiplier, shift);
    if !fits {
        return conv_tiled(a, output, cols);
    }
    let in_image = ind.h * ind.w * ind.c;
    let out_image = pixels * out_c;
    if in_image == 0 {
        return true;
    }
    let Some((cols, extra)) = cols.split_at_mut_checked(words) else { return false };
    let Some((edge, extra)) = extra.split_at_mut_checked(edge_words) else { return false };
    let Some((raw, extra)) = extra.split_at_mut_checked(raw_words) else { return false };
    let raw: &mut [u8] = bytemuck::cast_slice_mut(raw);
    let last: &mut [i8] = bytemuck::cast_slice_mut(extra.get_mut(..last_words).unwrap_or(&mut []));
    // The layer's last filter, zero-padded to whole words, when its last word would overrun.
    let asm_filters = if last_pad {
        let src = filter.get((out_c - 1) * k..out_c * k).unwrap_or(&[]);
        last.fill(0);
        last.iter_mut().zip(src).for_each(|(d, &s)| *d = s);
        out_c - 1
    } else {
        out_c
    };
    let (bias_ptr, bias_step) = match bias {
        Some(b) => (b.as_ptr(), 4),
        None => (&ZERO_BIAS as *const i32, 0),
    };
    let full_range = p.activation.min <= -128 && p.activation.max >= 127;
    let lo4 = (p.activation.min as u8 as u32).wrapping_mul(0x0101_0101);
    let hi4 = (p.activation.max as u8 as u32).wrapping_mul(0x0101_0101);
    let entry = 52 * ((CONV_BODY_GROUPS - (groups - 1) % CONV_BODY_GROUPS) % CONV_BODY_GROUPS);
    // 1x1 over the same grid with whole words and whole passes: the last 1-2 pixels as rows.
    let same_grid_1x1 = p.filter.h == 1
        && p.filter.w == 1
        && p.stride.h == 1
        && p.stride.w == 1
        && p.padding.top == 0
        && p.padding.left == 0
        && ind.h == outd.h
        && ind.w == outd.w
        && k % 4 == 0
        && out_c % 4 == 0;
    // Raw patches of few-channel layers: the zero point wherever the gather writes nothing.
    raw.fill((-p.input_offset) as u8);
    // Every tile's frame; each tile sets its outputs.
    let mut base = ConvTileFrame {
        cols: cols.as_ptr(),
        bias: bias_ptr,
        bias_step,
        multiplier: multiplier.as_ptr(),
        shift: shift.as_ptr(),
        reserved: 0,
        one_off: 1 + 2 * p.output_offset,
        out: output.as_mut_ptr(),
        out_c,
        out_end: output.as_mut_ptr(),
        entry,
        loops: (groups - 1 > CONV_BODY_GROUPS) as usize,
        cols_end: cols.as_ptr().wrapping_add(8 * groups),
        filter_delta: k.wrapping_sub(4 * groups),
        filter: filter.as_ptr(),
    };
    for b in 0..ind.n {
        // (No zip of chunk iterators here: its out-of-line `Zip::new` keeps a division check.)
        let (Some(in_b), Some(out_b)) =
            (input.get(b * in_image..(b + 1) * in_image), output.get_mut(b * out_image..(b + 1) * out_image))
        else {
            break;
        };
        let (mut t, mut oy, mut ox) = (0, 0, 0);
        while t < pixels {
            if t + 4 > pixels && t + 2 >= pixels && same_grid_1x1 {
                // 1 or 2 pixels left of a 1x1 convolution: each as a fully connected row (4
                // filters per pass) rather than a tile of 4.
                for px in t..pixels {
                    conv_pixel_as_fc(p, multiplier, shift, in_b, filter, (bias_ptr, bias_step), out_b, px, cols);
                }
                break;
            }
            if t + 4 > pixels {
                // The last tile: the image's last 4 pixels (overlapping the tile before).
                t = pixels - 4;
                let w = outd.w.max(1);
                (oy, ox) = (t / w, t % w);
            }
            let p0 = t;
            conv_im2col_tile(p, in_b, p0, oy, ox, cols, k, kp, raw, edge);
            let tile_out = out_b.get_mut(p0 * out_c..(p0 + 4) * out_c).unwrap_or(&mut []);
            if tile_out.len() == 4 * out_c {
                // (Pointers derived after this tile's writes to `cols` and for its outputs.)
                base.cols = cols.as_ptr();
                base.cols_end = base.cols.wrapping_add(8 * groups);
                base.out = tile_out.as_mut_ptr();
                base.out_end = base.out.wrapping_add(asm_filters);
                if asm_filters > 0 {
                    // SAFETY: `cols` has `words >= 8 * groups` words; filter `i < asm_filters`
                    // reads `[i * k, i * k + 4 * groups)`, which ends within `filter` (`out_c *
                    // k <= filter.len()`, and when `k % 4 != 0` the last filter is not among
                    // them: `(out_c - 2) * k + 4 * groups <= (out_c - 1) * k`); multipliers,
                    // shifts and bias have `out_c` entries (checked, all in the right-shift
                    // form) or the bias is the zero word with step 0; the writes `out + i + q *
                    // out_c` lie in `tile_out` (4 pixels of `out_c` bytes).
                    unsafe {
                        if last_pad {
                            conv_tile_asm::<true>(&base);
                        } else {
                            conv_tile_asm::<false>(&base);
                        }
                    }
                }
                if last_pad {
                    let j = out_c - 1;
                    let out = tile_out.as_mut_ptr().wrapping_add(j);
                    let f = ConvTileFrame {
                        bias: bias_ptr.wrapping_add(if bias_step == 4 { j } else { 0 }),
                        multiplier: multiplier.as_ptr().wrapping_add(j),
                        shift: shift.as_ptr().wrapping_add(j),
                        out,
                        out_end: out.wrapping_add(1),
                        filter: last.as_ptr(),
                        ..base
                    };
                    // SAFETY: as above for filter `j = out_c - 1`, read from `last`, which holds
                    // `4 * last_words = 4 * groups` bytes (`conv_extra_words`, `4 * groups <=
                    // LAST_FILTER_MAX` checked; the scratch holds them, checked).
                    unsafe { conv_tile_asm::<false>(&f) };
                }
                if !full_range {
                    clamp_region(tile_out, lo4, hi4);
                }
            }
            t += TILE;
            ox += TILE;
            while ox >= outd.w && outd.w > 0 {
                ox -= outd.w;
                oy += 1;
            }
        }
    }
    true
}

/// The shared tiled path (`conv_s8_tiled`) for the layers outside [`conv_s8`]'s preconditions.
/// Not inlined: its accumulators stay out of [`conv_s8`]'s frame, under the tiles'.
#[inline(never)]
fn conv_tiled(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    conv_s8_tiled::<InterleavedTile>(a, output, cols)
}

/// Output pixel `px` of a 1x1 convolution over the same grid (`k = in_c`, both multiples of 4)
/// as a fully connected row: the pixel's input expanded into `cols`, then [`fc_rows_asm`] over
/// the `out_c / 4` passes of 4 filters (21 instructions per 16 MACs), requantized and clamped
/// like the tiles. Does nothing if a length does not fit.
#[allow(clippy::too_many_arguments)]
fn conv_pixel_as_fc(
    p: &ConvParams,
    multiplier: &[i32],
    shift: &[i32],
    in_b: &[i8],
    filter: &[i8],
    (bias_ptr, bias_step): (*const i32, usize),
    out_b: &mut [i8],
    px: usize,
    cols: &mut [u32],
) {
    let (k, out_c) = (p.input.c, p.output.c);
    let groups = k / 4;
    let (Some(x), Some(out)) = (in_b.get(px * k..(px + 1) * k), out_b.get_mut(px * out_c..(px + 1) * out_c)) else {
        return;
    };
    let xw = match cols.get_mut(..2 * groups) {
        Some(xw)
            if groups > 0
                && out_c >= 4
                && filter.len() >= out_c * k
                && multiplier.len() >= out_c
                && shift.len() >= out_c =>
        {
            xw
        }
        _ => return,
    };
    expand_row(x, offset_pair(p.input_offset), xw);
    let f = FcFrame {
        // Without bias: 4 zero words, step 0 (the conv's zero bias is a single word).
        bias: if bias_step == 0 { ZERO_BIAS4.as_ptr() } else { bias_ptr },
        bias_step: 4 * bias_step,
        quant: [multiplier.as_ptr() as usize, shift.as_ptr() as usize],
        out: out.as_mut_ptr(),
        out_end: out.as_mut_ptr().wrapping_add(4 * (out_c / 4)),
        x: xw.as_ptr(),
        x_end: xw.as_ptr().wrapping_add(2 * groups),
        entry: 84 * ((8 - groups % 8) % 8),
        filter_delta: 3 * k,
        one_off: 1 + 2 * p.output_offset,
        lo4: (p.activation.min as u8 as u32).wrapping_mul(0x0101_0101),
        hi4: (p.activation.max as u8 as u32).wrapping_mul(0x0101_0101),
        depth: k,
        filter: filter.as_ptr(),
    };
    // SAFETY: `xw` holds `2 * groups` words, `depth = k = 4 * groups`; `out_c / 4 >= 1` passes
    // (`out_c % 4 == 0`, the caller's); the `out_c` filter rows of `k` bytes lie in `filter`
    // (checked); multipliers and shifts have `out_c` entries (checked; all in the right-shift
    // form, the caller's precondition), the bias `out_c` or is the zero word with step 0 (the
    // caller's); the `out_c` output bytes lie in `out` (a slice of that length).
    unsafe { fc_rows_asm::<true>(&f) };
}

/// Clamps every byte of `out` (signed) to `[lo, hi]` (given in every byte of `lo4`, `hi4`), 4 at
/// a time with `SSUB8` + `SEL`.
#[inline(always)]
fn clamp_region(out: &mut [i8], lo4: u32, hi4: u32) {
    let mut chunks = out.chunks_exact_mut(4);
    for c in &mut chunks {
        let w = u32::from_le_bytes([c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8]);
        c.copy_from_slice(&clamp_bytes(w, lo4, hi4).to_le_bytes().map(|b| b as i8));
    }
    let (lo, hi) = (lo4 as u8 as i8, hi4 as u8 as i8);
    for b in chunks.into_remainder() {
        *b = (*b).max(lo).min(hi);
    }
}

//! The int8 convolution on Helium: output pixels in tiles of 4, each tile's patches copied once
//! into an interleaved block (16 bytes of pixel 0, 16 of pixel 1, ... then the next 16 of each),
//! then every filter against the 4 patches with `VMLADAVA.S8` (9 instructions per 64 MACs in a
//! tail-predicated loop), the input offset folded into the bias per call, and the 4 rows of
//! accumulators requantized 4 channels at a time ([`requant_row`]).

use super::{MAX_CHANNELS, RowQuant, clamp_bounds, fold_offset, requant_row};
use crate::kernels::arch::scratch::TILE;
use crate::kernels::arch::tiled_conv::ConvOperands;
use crate::kernels::params::ConvParams;
use core::arch::asm;

/// Filters per call of [`dot_block`] (its accumulator rows are this many words apart).
const FILTER_BLOCK: usize = 64;

/// `acc[q * FILTER_BLOCK + f] = sum_j filter[f * k + j] * block(q, j)` for the 4 pixels `q` and
/// the `n` filters from `filter`, 16 bytes of depth per pass: one filter load, then each
/// pixel's 16 bytes and a `VMLADAVA`.
///
/// # Safety
/// `1 <= n <= FILTER_BLOCK`, `k >= 1`; `n * k` bytes from `filter` are readable; the block
/// holds `64 * k.div_ceil(16)` readable bytes; `acc` has `4 * FILTER_BLOCK` writable words.
#[inline(always)]
unsafe fn dot_block(block: *const u8, filter: *const i8, k: usize, n: usize, acc: *mut i32) {
    // SAFETY: per filter, the tail-predicated loop reads `k` bytes of that filter (`n * k` in
    // all, readable) and `64 * k.div_ceil(16)` bytes of the block at most (the last pass only
    // its active lanes); the four stores per filter land at words `f`, `f + 64`, `f + 128`,
    // `f + 192` of `acc` with `f < n <= 64`. The accumulators are `r0`, `r2`, `r4`, `r8`
    // (VMLADAVA needs even registers), `lr` the loop counter; every `q` register used is
    // declared clobbered; the flags are not declared preserved.
    unsafe {
        asm!(
            "2:",
            "movs r0, #0",
            "movs r2, #0",
            "movs r4, #0",
            "mov.w r8, #0",
            "mov {cp}, {cols}",
            "mov {fp}, {fb}",
            "add {fb}, {fb}, {k}",
            "dlstp.8 lr, {k}",
            "3:",
            "vldrb.u8 q4, [{fp}], #16",
            "vldrb.u8 q0, [{cp}], #16",
            "vmladava.s8 r0, q0, q4",
            "vldrb.u8 q1, [{cp}], #16",
            "vmladava.s8 r2, q1, q4",
            "vldrb.u8 q2, [{cp}], #16",
            "vmladava.s8 r4, q2, q4",
            "vldrb.u8 q3, [{cp}], #16",
            "vmladava.s8 r8, q3, q4",
            "letp lr, 3b",
            "str r2, [{acc}, #256]",
            "str r4, [{acc}, #512]",
            "str r8, [{acc}, #768]",
            "str r0, [{acc}], #4",
            "subs {n}, {n}, #1",
            "bne 2b",
            cols = in(reg) block,
            cp = out(reg) _,
            fb = inout(reg) filter => _,
            fp = out(reg) _,
            k = in(reg) k,
            acc = inout(reg) acc => _,
            n = inout(reg) n => _,
            out("r0") _,
            out("r2") _,
            out("r4") _,
            out("r8") _,
            out("lr") _,
            out("q0") _,
            out("q1") _,
            out("q2") _,
            out("q3") _,
            out("q4") _,
            options(nostack),
        );
    }
}

/// Copies `n` bytes from `src`, 16 per pass, to `dst` advanced by `STEP` bytes per pass: 16 for
/// a plain copy, 64 to scatter a patch into the interleaved block (each 16 bytes to the next
/// 64-byte group, one pixel's column of the block).
///
/// # Safety
/// `n` bytes from `src` are readable; bytes `[STEP * j, STEP * j + 16)` from `dst` are writable
/// for every `j < n.div_ceil(16)` (the last pass only `n % 16` of them, if not 0).
#[inline(always)]
unsafe fn copy_bytes<const STEP: usize>(src: *const u8, dst: *mut u8, n: usize) {
    if n == 0 {
        return;
    }
    // SAFETY: the tail-predicated loop reads `n` bytes from `src` and writes 16 bytes per pass
    // at `dst`, `STEP` bytes apart (the last pass only its active lanes), as the caller
    // guarantees.
    unsafe {
        asm!(
            "dlstp.8 lr, {n}",
            "2:",
            "vldrb.u8 q0, [{s}], #16",
            "vstrb.8 q0, [{d}], #{step}",
            "letp lr, 2b",
            s = inout(reg) src => _,
            d = inout(reg) dst => _,
            n = in(reg) n,
            step = const STEP,
            out("lr") _,
            out("q0") _,
            options(nostack),
        );
    }
}

/// Writes `v` to the `n` bytes from `dst`, 16 per pass.
///
/// # Safety
/// `n` bytes from `dst` are writable.
#[inline(always)]
unsafe fn fill_bytes(dst: *mut u8, v: u8, n: usize) {
    if n == 0 {
        return;
    }
    // SAFETY: the tail-predicated loop writes `n` bytes from `dst` (the last pass only its
    // active lanes), as the caller guarantees.
    unsafe {
        asm!(
            "vdup.8 q0, {v}",
            "dlstp.8 lr, {n}",
            "2:",
            "vstrb.8 q0, [{d}], #16",
            "letp lr, 2b",
            v = in(reg) v as u32,
            d = inout(reg) dst => _,
            n = in(reg) n,
            out("lr") _,
            out("q0") _,
            options(nostack),
        );
    }
}

/// The patch of output pixel `(oy, ox)` (filter rows, then columns, then channels) into
/// `patch`, the zero point where a tap is in the padding: a filter row whose taps are all in
/// the image (dilation 1 across) as one run of the input, others tap by tap. Writes nothing
/// if `patch` is not one patch long.
fn im2col_patch(p: &ConvParams, in_b: &[i8], oy: usize, ox: usize, zero_point: i8, patch: &mut [u8]) {
    let (c, kw) = (p.input.c, p.filter.w);
    let row_len = kw * c;
    if patch.len() != p.filter.h * row_len {
        return;
    }
    let in_b: &[u8] = bytemuck::cast_slice(in_b);
    let zp = zero_point as u8;
    let (h, w) = (p.input.h as isize, p.input.w as isize);
    let ix0 = (ox * p.stride.w) as isize - p.padding.left as isize;
    for (ky, dst) in patch.chunks_exact_mut(row_len.max(1)).enumerate() {
        let iy = (oy * p.stride.h + ky * p.dilation.h) as isize - p.padding.top as isize;
        if iy < 0 || iy >= h {
            // SAFETY: `dst` is `row_len` bytes.
            unsafe { fill_bytes(dst.as_mut_ptr(), zp, row_len) };
            continue;
        }
        let row = iy as usize * p.input.w;
        if p.dilation.w == 1 && ix0 >= 0 && ix0 + kw as isize <= w {
            let start = (row + ix0 as usize) * c;
            if let Some(src) = in_b.get(start..start + row_len) {
                // SAFETY: `src` and `dst` are `row_len` bytes.
                unsafe { copy_bytes::<16>(src.as_ptr(), dst.as_mut_ptr(), row_len) };
            }
            continue;
        }
        for (kx, d) in dst.chunks_exact_mut(c.max(1)).enumerate() {
            let ix = ix0 + (kx * p.dilation.w) as isize;
            let src =
                if ix >= 0 && ix < w { in_b.get((row + ix as usize) * c..(row + ix as usize + 1) * c) } else { None };
            match src {
                // SAFETY: `s` and `d` are `c` bytes.
                Some(s) => unsafe { copy_bytes::<16>(s.as_ptr(), d.as_mut_ptr(), c) },
                // SAFETY: `d` is `c` bytes.
                None => unsafe { fill_bytes(d.as_mut_ptr(), zp, c) },
            }
        }
    }
}

/// Convolution on Helium. Preconditions (else `false`, nothing written): no groups, at least 4
/// output pixels per image, at most [`MAX_CHANNELS`] filters, shifts in `[-31, 30]`, a clamp
/// that overlaps int8, and scratch for the interleaved block (`64 * ceil(k / 16)` bytes) plus,
/// unless the patch is a run of the input (1x1 without padding), one patch of `k` bytes.
pub(crate) fn conv_s8(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    let ConvOperands { p, multiplier, shift, input, filter, bias } = *a;
    let (ind, outd) = (p.input, p.output);
    let k = p.filter.h * p.filter.w * p.filter.c;
    let out_c = outd.c;
    let pixels = outd.h * outd.w;
    let direct = p.filter.h == 1 && p.filter.w == 1 && p.padding.top == 0 && p.padding.left == 0;
    let chunks = k.div_ceil(16);
    let block_len = 64 * chunks;
    let need = block_len + if direct { 0 } else { k };
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(cols);
    let Some((lo, hi)) = clamp_bounds(p.activation) else { return false };
    let fits = p.filter.c == ind.c
        && k > 0
        && (1..=MAX_CHANNELS).contains(&out_c)
        && pixels >= TILE
        && bytes.len() >= need
        && multiplier.len() == out_c
        && shift.len() == out_c
        && bias.is_none_or(|b| b.len() == out_c)
        && filter.len() >= out_c * k
        && RowQuant::shifts_valid(shift);
    if !fits {
        return false;
    }
    let in_image = ind.h * ind.w * ind.c;
    let out_image = pixels * out_c;
    let mut folded = [0i32; MAX_CHANNELS];
    let Some(folded) = folded.get_mut(..out_c) else { return false };
    if !fold_offset(filter, k, bias, p.input_offset, folded) {
        return false;
    }
    let Some((block, patch)) = bytes.split_at_mut_checked(block_len) else { return false };
    let zero_point = (-p.input_offset) as i8;
    let mut acc = [0i32; TILE * FILTER_BLOCK];
    let q = RowQuant { multiplier, shift, bias: folded, output_offset: p.output_offset, lo, hi };
    for b in 0..ind.n {
        let (Some(in_b), Some(out_b)) =
            (input.get(b * in_image..(b + 1) * in_image), output.get_mut(b * out_image..(b + 1) * out_image))
        else {
            break;
        };
        let mut t = 0;
        while t < pixels {
            // The image's last tile: its last 4 pixels (overlapping the tile before).
            let t0 = t.min(pixels - TILE);
            for qx in 0..TILE {
                let px = t0 + qx;
                let ow = outd.w.max(1);
                let (oy, ox) = (px / ow, px % ow);
                let src = if direct {
                    let start = (oy * p.stride.h * ind.w + ox * p.stride.w) * ind.c;
                    in_b.get(start..start + k)
                } else {
                    let patch = patch.get_mut(..k).unwrap_or(&mut []);
                    im2col_patch(p, in_b, oy, ox, zero_point, patch);
                    Some(bytemuck::cast_slice::<u8, i8>(patch))
                };
                let Some(src) = src.filter(|s| s.len() == k) else { return true };
                // SAFETY: `src` holds `k` bytes; the block has `64 * chunks` bytes and pixel
                // `qx < 4` writes bytes `[64 * j + 16 * qx, +16)` for `j < chunks`.
                unsafe { copy_bytes::<64>(src.as_ptr().cast(), block.as_mut_ptr().wrapping_add(16 * qx), k) };
            }
            let Some(tile_out) = out_b.get_mut(t0 * out_c..(t0 + TILE) * out_c) else { return true };
            let mut f0 = 0;
            while f0 < out_c {
                let n = (out_c - f0).min(FILTER_BLOCK);
                // SAFETY: `1 <= n <= 64`, `k >= 1`; filters `f0..f0 + n` lie within `filter`
                // (`out_c * k <= filter.len()`); the block holds `64 * chunks` bytes, written
                // above; `acc` has `4 * FILTER_BLOCK` words.
                unsafe { dot_block(block.as_ptr(), filter.as_ptr().wrapping_add(f0 * k), k, n, acc.as_mut_ptr()) };
                let qb = RowQuant {
                    multiplier: multiplier.get(f0..).unwrap_or(&[]),
                    shift: shift.get(f0..).unwrap_or(&[]),
                    bias: q.bias.get(f0..).unwrap_or(&[]),
                    ..q
                };
                for (qx, row) in acc.chunks_exact(FILTER_BLOCK).enumerate() {
                    if let Some(out) = tile_out.get_mut(qx * out_c + f0..qx * out_c + f0 + n) {
                        requant_row(row, &qb, out);
                    }
                }
                f0 += n;
            }
            t = t0 + TILE;
        }
    }
    true
}

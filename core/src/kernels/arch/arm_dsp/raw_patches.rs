//! The raw patches of the Arm DSP conv's im2col ([`gather_raw_patches`]): the int8 windows of
//! 4 output pixels copied run by run, the input zero point where a tap falls in the padding,
//! for the tiles whose pixels cannot be gathered straight from the image.

use crate::kernels::arch::scratch::TILE;
use crate::kernels::params::ConvParams;
use crate::kernels::window::input_coord;
use core::arch::asm;

/// Copies `n` bytes from `src` to `dst` (word-wise, then byte-wise), `n` at most both lengths
/// (else nothing); 3 instructions per word, for the short runs of raw patches.
#[inline(always)]
pub(super) fn copy_short(dst: &mut [u8], src: &[i8], n: usize) {
    if n > dst.len() || n > src.len() || n == 0 {
        return;
    }
    // SAFETY: reads `src[..n]` and writes `dst[..n]`, both within their slices (checked);
    // unaligned word accesses are allowed on these cores. Every register written is declared.
    unsafe {
        asm!(
            "subs {n}, {n}, #4",
            "blt 3f",
            "2:",
            "ldr {t}, [{s}], #4",
            "str {t}, [{d}], #4",
            "subs {n}, {n}, #4",
            "bge 2b",
            "3:",
            "adds {n}, {n}, #4",
            "beq 5f",
            "4:",
            "ldrb {t}, [{s}], #1",
            "strb {t}, [{d}], #1",
            "subs {n}, {n}, #1",
            "bne 4b",
            "5:",
            s = inout(reg) src.as_ptr() => _,
            d = inout(reg) dst.as_mut_ptr() => _,
            n = inout(reg) n => _,
            t = out(reg) _,
            options(nostack),
        );
    }
}

/// Copies `rows` runs of `run` bytes, `row_step` bytes apart in `src`, one after the other
/// into `dst` (3 instructions per word, 4 per byte of a run's tail). Does nothing unless
/// `dst` holds `rows * run` bytes and `src` reaches the last run's end.
#[inline(always)]
fn copy_rows(dst: &mut [u8], src: &[i8], row_step: usize, run: usize, rows: usize) {
    let src_need = if rows == 0 { 0 } else { (rows - 1).saturating_mul(row_step).saturating_add(run) };
    if rows == 0 || run == 0 || rows.saturating_mul(run) > dst.len() || src_need > src.len() {
        return;
    }
    // SAFETY: reads `run` bytes at `src + r * row_step` for `r < rows`, the last ending at
    // `src_need <= src.len()`; writes `dst[..rows * run]` (checked); unaligned word accesses are
    // allowed on these cores. Every register written is declared.
    unsafe {
        asm!(
            "2:",
            "mov {sr}, {s}",
            "subs {n}, {run}, #4",
            "blt 4f",
            "3:",
            "ldr {t}, [{sr}], #4",
            "str {t}, [{d}], #4",
            "subs {n}, {n}, #4",
            "bge 3b",
            "4:",
            "adds {n}, {n}, #4",
            "beq 6f",
            "5:",
            "ldrb {t}, [{sr}], #1",
            "strb {t}, [{d}], #1",
            "subs {n}, {n}, #1",
            "bne 5b",
            "6:",
            "add {s}, {s}, {rs}",
            "subs {rows}, {rows}, #1",
            "bne 2b",
            s = inout(reg) src.as_ptr() => _,
            d = inout(reg) dst.as_mut_ptr() => _,
            rs = in(reg) row_step,
            run = in(reg) run,
            rows = inout(reg) rows => _,
            sr = out(reg) _,
            n = out(reg) _,
            t = out(reg) _,
            options(nostack),
        );
    }
}

/// The raw patches of 4 windows of 3 rows of 9 bytes (a 3x3 filter over 3 channels, dilation 1
/// across) that lie inside the image, rows `row_step` bytes apart, window `q` at `src + q *
/// pstride`: each window's 27 bytes and the zero point `zp` as 7 words at `dst + q * stride`, in
/// one `asm!` loop of 24 instructions per window (through [`copy_rows`] and the per-patch checks
/// a window costs some 110). The words that straddle two rows are one unaligned `LDR` of the
/// second row with its first bytes replaced (`BFI`) by the first row's last; the last word is
/// read one byte early and shifted, so nothing past a window is read. `false` (nothing written)
/// unless `dst` holds the 4 patches (`stride >= 28`) and `src` the windows (`row_step >= 9`).
#[inline(always)]
fn patches_3x9(dst: &mut [u8], stride: usize, src: &[i8], row_step: usize, pstride: usize, zp: u8) -> bool {
    let end =
        row_step.checked_mul(2).and_then(|v| v.checked_add(9)).and_then(|v| v.checked_add(pstride.checked_mul(3)?));
    let dst_end = stride.checked_mul(3).and_then(|v| v.checked_add(28));
    if stride < 28 || row_step < 9 || end.is_none_or(|e| e > src.len()) || dst_end.is_none_or(|e| e > dst.len()) {
        return false;
    }
    // SAFETY: window `q < 4` reads bytes `[0, 9)` of the three rows at `src + q * pstride + r *
    // row_step` (r < 3; the row loads at `-1` and `-2` stay after the row before's end: `row_step
    // >= 9`), the farthest ending at `3 * pstride + 2 * row_step + 9 <= src.len()` (checked), and
    // writes `dst[q * stride..][..28]`, the last ending at `3 * stride + 28 <= dst.len()`
    // (checked). Unaligned `LDR`/`LDRH`/`STR` are allowed on these cores. Every register written
    // is declared; the flags are not declared preserved.
    unsafe {
        asm!(
            "2:",
            "add {r1}, {s}, {rs}",
            "ldr {t}, [{s}]",
            "str {t}, [{d}]",
            "ldr {t}, [{s}, #4]",
            "str {t}, [{d}, #4]",
            "ldr {t}, [{r1}, #-1]",
            "ldrb {u}, [{s}, #8]",
            "bfi {t}, {u}, #0, #8",
            "str {t}, [{d}, #8]",
            "ldr {t}, [{r1}, #3]",
            "str {t}, [{d}, #12]",
            "add {r2}, {r1}, {rs}",
            "ldr {t}, [{r2}, #-2]",
            "ldrh {u}, [{r1}, #7]",
            "bfi {t}, {u}, #0, #16",
            "str {t}, [{d}, #16]",
            "ldr {t}, [{r2}, #2]",
            "str {t}, [{d}, #20]",
            "ldr {t}, [{r2}, #5]",
            "orr {t}, {z}, {t}, lsr #8",
            "str {t}, [{d}, #24]",
            "add {s}, {s}, {ps}",
            "add {d}, {d}, {ds}",
            "subs {n}, {n}, #1",
            "bne 2b",
            s = inout(reg) src.as_ptr() => _,
            rs = in(reg) row_step,
            ps = in(reg) pstride,
            d = inout(reg) dst.as_mut_ptr() => _,
            ds = in(reg) stride,
            n = inout(reg) 4usize => _,
            z = in(reg) (zp as u32) << 24,
            r1 = out(reg) _,
            r2 = out(reg) _,
            t = out(reg) _,
            u = out(reg) _,
            options(nostack),
        );
    }
    true
}

/// The raw patches (int8, the input zero point where a tap falls in the padding) of 4 output
/// pixels from `(oy, ox)`, one after the other, `stride` bytes each, into `raw`: filter row by
/// filter row, each row's taps one run of `kw * in_c` bytes (dilation 1 across). A window inside
/// the image is copied by [`copy_rows`]; 4 windows of 3 rows of 9 bytes inside the image along a
/// row by [`patches_3x9`]. Bytes past `k` in each patch are not written: the
/// caller fills `raw` with the zero point once.
#[inline(always)]
pub(super) fn gather_raw_patches(
    p: &ConvParams,
    in_b: &[i8],
    oy: usize,
    ox: usize,
    raw: &mut [u8],
    stride: usize,
    zp: u8,
) {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let run = p.filter.w * c;
    let row_step = p.dilation.h * ind.w * c;
    if run == 9 && p.filter.h == 3 && ox + 3 < outd.w {
        // 4 windows of 3 rows of 9 bytes along a row, all inside the image: one loop.
        let ix0 = (ox * p.stride.w) as isize - p.padding.left as isize;
        let iy0 = (oy * p.stride.h) as isize - p.padding.top as isize;
        let inside_w = ix0 >= 0 && ix0 as usize + 3 * p.stride.w + p.filter.w <= ind.w;
        let inside_h = iy0 >= 0 && iy0 as usize + 2 * p.dilation.h < ind.h;
        if inside_w && inside_h {
            let start = (iy0 as usize * ind.w + ix0 as usize) * c;
            let src = in_b.get(start..).unwrap_or(&[]);
            if patches_3x9(raw, stride, src, row_step, p.stride.w * c, zp) {
                return;
            }
        }
    }
    let (mut y, mut x) = (oy, ox);
    for patch in raw.chunks_exact_mut(stride.max(1)).take(TILE) {
        let ix0 = (x * p.stride.w) as isize - p.padding.left as isize;
        let iy0 = (y * p.stride.h) as isize - p.padding.top as isize;
        let inside_w = ix0 >= 0 && ix0 as usize + p.filter.w <= ind.w;
        let inside_h = iy0 >= 0 && iy0 as usize + (p.filter.h - 1) * p.dilation.h < ind.h;
        if inside_w && inside_h {
            let start = (iy0 as usize * ind.w + ix0 as usize) * c;
            copy_rows(patch, in_b.get(start..).unwrap_or(&[]), row_step, run, p.filter.h);
        } else {
            let mut at = 0;
            for ky in 0..p.filter.h {
                let dst = patch.get_mut(at..at + run).unwrap_or(&mut []);
                match input_coord(y, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h) {
                    Some(iy) => {
                        for (kx, d) in dst.chunks_exact_mut(c.max(1)).enumerate() {
                            let ix = ix0 + kx as isize;
                            if ix >= 0 && (ix as usize) < ind.w {
                                let start = (iy * ind.w + ix as usize) * c;
                                copy_short(d, in_b.get(start..).unwrap_or(&[]), c);
                            } else {
                                d.iter_mut().for_each(|b| *b = zp);
                            }
                        }
                    }
                    None => dst.iter_mut().for_each(|b| *b = zp),
                }
                at += run;
            }
        }
        x += 1;
        if x == outd.w {
            x = 0;
            y += 1;
        }
    }
}

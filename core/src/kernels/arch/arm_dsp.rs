//! Cortex-M fast paths with the DSP extension (Armv7E-M: M4, M7; Armv8-M Mainline with DSP: M33,
//! M35P, M55, M85), built when `core/build.rs` emits `mq_dsp`.
//!
//! The dual 16-bit multiply-accumulate `SMLAD` does two MACs per instruction; `SXTB16` /
//! `SXTAB16` sign-extend bytes 0 and 2 (or, rotated by 8, bytes 1 and 3) of a word into two
//! halfwords, the latter adding the input offset in the same instruction. An int8 word
//! `[v0 v1 v2 v3]` so becomes the pairs `(v0, v2)` and `(v1, v3)`; weights and inputs are
//! extended the same way, so the pairs line up without repacking. Stable Rust has no intrinsics
//! for these (`core::arch::arm` DSP intrinsics are nightly-only and lack `SXTB16`), so they are
//! written with `core::arch::asm!`; the convolution's inner loop is one `asm!` block, because
//! it needs explicit registers for `LDM`.
//!
//! Every result is the reference's: the products are exact (int16 x int16), the sums wrap
//! modulo 2^32 exactly like the reference's `wrapping_add` (`SMLAD`/`SMLABB` set the sticky Q
//! flag on overflow and wrap), and requantization is the same function.
#![allow(unsafe_code)]

use core::arch::asm;

use super::{ChannelRequant, ConvTile, OutputScale, TILE, for_each_tap};
use crate::kernels::PerChannelQuant;
use crate::kernels::conv::{ConvParams, input_coord};
use crate::kernels::depthwise_conv::DepthwiseConvParams;
use crate::kernels::fully_connected::FullyConnectedParams;

/// `SXTB16 r, x`: bytes 0 and 2 of `x`, sign-extended to two halfwords.
#[inline(always)]
fn sxtb16(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe { asm!("sxtb16 {r}, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags)) };
    r
}

/// `SXTB16 r, x, ROR #8`: bytes 1 and 3 of `x`, sign-extended to two halfwords.
#[inline(always)]
fn sxtb16_ror8(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtb16 {r}, {x}, ror #8", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTAB16 r, a, x`: `a`'s halfwords plus bytes 0 and 2 of `x`, sign-extended.
#[inline(always)]
fn sxtab16(a: u32, x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtab16 {r}, {a}, {x}", r = lateout(reg) r, a = in(reg) a, x = in(reg) x,
             options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTAB16 r, a, x, ROR #8`: `a`'s halfwords plus bytes 1 and 3 of `x`, sign-extended.
#[inline(always)]
fn sxtab16_ror8(a: u32, x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtab16 {r}, {a}, {x}, ror #8", r = lateout(reg) r, a = in(reg) a, x = in(reg) x,
             options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SMLAD r, a, b, acc`: `acc + a.lo * b.lo + a.hi * b.hi` (halfwords signed), wrapping.
#[inline(always)]
fn smlad(a: u32, b: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); it may set the sticky Q flag,
    // so flags are not declared preserved.
    unsafe {
        asm!("smlad {r}, {a}, {b}, {acc}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, acc = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SMLABB r, a, b, acc`: `acc + a.lo * b.lo`, wrapping.
#[inline(always)]
fn smlabb(a: u32, b: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); may set the sticky Q flag.
    unsafe {
        asm!("smlabb {r}, {a}, {b}, {acc}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, acc = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SMLATT r, a, b, acc`: `acc + a.hi * b.hi`, wrapping.
#[inline(always)]
fn smlatt(a: u32, b: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); may set the sticky Q flag.
    unsafe {
        asm!("smlatt {r}, {a}, {b}, {acc}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, acc = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SSAT r, #8, x`: `x` saturated to int8.
#[inline(always)]
fn ssat8(x: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instruction (no memory, no stack); it may set the sticky Q flag.
    unsafe { asm!("ssat {r}, #8, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack)) };
    r
}

/// Four int8 values (each already in [-128, 127]) packed into a word, `v[0]` in the low byte.
#[inline(always)]
fn pack4(v: [i32; 4]) -> u32 {
    let (b0, b1, b2, b3) = (v[0] as u32 & 0xff, v[1] as u32 & 0xff, v[2] as u32 & 0xff, v[3] as u32 & 0xff);
    b0 | b1 << 8 | b2 << 16 | b3 << 24
}

/// Per byte (signed): `min(max(x, lo), hi)`, with `SSUB8` + `SEL` (the GE flags they use stay
/// inside the block).
#[inline(always)]
fn clamp_bytes(x: u32, lo: u32, hi: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instructions (no memory, no stack); they write the GE flags, which
    // are not declared preserved.
    unsafe {
        asm!(
            "ssub8 {t}, {x}, {lo}",
            "sel {r}, {x}, {lo}",
            "ssub8 {t}, {hi}, {r}",
            "sel {r}, {r}, {hi}",
            x = in(reg) x,
            lo = in(reg) lo,
            hi = in(reg) hi,
            t = out(reg) _,
            r = out(reg) r,
            options(pure, nomem, nostack),
        )
    };
    r
}

/// The input offset in both halfwords, for `SXTAB16`.
#[inline(always)]
fn offset_pair(offset: i32) -> u32 {
    let h = offset as u16 as u32;
    h | (h << 16)
}

/// Four bytes as a little-endian word (an unaligned `LDR`, which these cores support).
#[inline(always)]
fn word(b: &[i8]) -> u32 {
    match b {
        [a, b, c, d, ..] => u32::from_le_bytes([*a as u8, *b as u8, *c as u8, *d as u8]),
        _ => {
            // A short tail (fewer than 4 bytes): zero-filled.
            let mut w = [0u8; 4];
            w.iter_mut().zip(b).for_each(|(d, &s)| *d = s as u8);
            u32::from_le_bytes(w)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Convolution: im2col in groups of 4 values, interleaved for LDM, 1 filter x 4 pixels per pass.
// ---------------------------------------------------------------------------------------------

/// One group of 4 patch values in the conv inner loop (13 instructions, 16 MACs): the filter
/// word (`r12`), extended to `(w0, w2)` then `(w1, w3)` (`lr`), against the 4 pixels' pairs
/// loaded with `LDM` (`r8`-`r11`) into the 4 accumulators (`r0`-`r3`). `r4`: im2col block,
/// `r5`: filter.
macro_rules! conv_group {
    () => {
        concat!(
            "ldr r12, [r5], #4\n",
            "ldm r4!, {{r8, r9, r10, r11}}\n",
            "sxtb16 lr, r12\n",
            "smlad r0, r8, lr, r0\n",
            "smlad r1, r9, lr, r1\n",
            "smlad r2, r10, lr, r2\n",
            "smlad r3, r11, lr, r3\n",
            "ldm r4!, {{r8, r9, r10, r11}}\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r0, r8, lr, r0\n",
            "smlad r1, r9, lr, r1\n",
            "smlad r2, r10, lr, r2\n",
            "smlad r3, r11, lr, r3\n",
        )
    };
}

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
                // Runs that straddle groups (first layers with 1 or 3 channels): the patch is
                // gathered raw, a filter row at a time, into a stack buffer whose padding holds
                // the input zero point (which the offset turns into 0), then expanded by words.
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
                expand_run(&raw, off2, cols.get_mut(q..).unwrap_or(&mut []), words);
                for g in cols.chunks_exact_mut(8).take(groups).skip(words) {
                    if let Some([e, _, _, _, o]) = g.get_mut(q..q + 5) {
                        (*e, *o) = (0, 0);
                    }
                }
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

// ---------------------------------------------------------------------------------------------
// Fully connected: the input row expanded once, 2 filters per pass.
// ---------------------------------------------------------------------------------------------

/// Expands one input row into `dst` as pairs `(x[4g] + off, x[4g+2] + off), (x[4g+1] + off,
/// x[4g+3] + off)` per group of 4 values, zeros past the end.
#[inline(always)]
fn expand_row(row: &[i8], off2: u32, dst: &mut [u32]) {
    let mut chunks = row.chunks(4);
    for pair in dst.chunks_exact_mut(2) {
        match chunks.next() {
            Some(x) => {
                // A short last chunk is zero-filled; its zeros must stay 0, not the offset.
                let w = word(x);
                let (mut e, mut o) = (sxtab16(off2, w), sxtab16_ror8(off2, w));
                if x.len() < 4 {
                    let keep = |lanes: usize| if lanes == 2 { u32::MAX } else if lanes == 1 { 0xffff } else { 0 };
                    e &= keep(x.len().div_ceil(2)); // values 0, 2 present
                    o &= keep(x.len() / 2); // values 1, 3 present
                }
                pair[0] = e;
                pair[1] = o;
            }
            None => {
                pair[0] = 0;
                pair[1] = 0;
            }
        }
    }
}

/// One group of 4 input values against 4 filter rows in the fully connected inner loop (21
/// instructions, 16 MACs): the expanded input pairs (`r10`, `r11`, one `LDRD`), then for each
/// row its word (`r12`) extended twice (`lr`) into its accumulator (`r0`-`r3`). Rows 0 and 2 are
/// read through `r5` and `r8` (post-incremented), rows 1 and 3 at the same places plus the row
/// stride `r9`.
macro_rules! fc_group {
    () => {
        concat!(
            "ldrd r10, r11, [r4], #8\n",
            "ldr r12, [r5, r9]\n",
            "sxtb16 lr, r12\n",
            "smlad r1, r10, lr, r1\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r1, r11, lr, r1\n",
            "ldr r12, [r5], #4\n",
            "sxtb16 lr, r12\n",
            "smlad r0, r10, lr, r0\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r0, r11, lr, r0\n",
            "ldr r12, [r8, r9]\n",
            "sxtb16 lr, r12\n",
            "smlad r3, r10, lr, r3\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r3, r11, lr, r3\n",
            "ldr r12, [r8], #4\n",
            "sxtb16 lr, r12\n",
            "smlad r2, r10, lr, r2\n",
            "sxtb16 lr, r12, ror #8\n",
            "smlad r2, r11, lr, r2\n",
        )
    };
}

/// Dot products of the 4 filter rows starting at `w` (row `j` at `j * stride`) with an expanded
/// input row, over the first `4 * groups` values: `acc[j] + x . w_j`.
#[inline(always)]
fn dot_4x1(x: &[u32], w: &[i8], stride: usize, groups: usize, acc: [i32; 4]) -> [i32; 4] {
    let groups = groups.min(x.len() / 2).min(stride / 4);
    let fits = stride.checked_mul(3).and_then(|v| v.checked_add(4 * groups)).is_some_and(|end| end <= w.len());
    if !fits {
        return acc;
    }
    let octs = groups / 8;
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    if octs > 0 {
        // SAFETY: `octs` iterations, each reading 16 words at `px` (eight `LDRD`s) and 32 bytes of
        // each of the 4 rows: `x[..16 * octs]` (<= `2 * groups` <= `x.len()`) and, for row `j`,
        // bytes `j * stride .. j * stride + 32 * octs` of `w`, within `w` because `3 * stride +
        // 4 * groups <= w.len()` (checked above). `px` is word aligned (`u32` slice), as `LDRD`
        // needs; `LDR` may be unaligned on these cores. The end pointer is pushed on the stack
        // (two words, popped before the end); every register written is declared.
        unsafe {
            let p0 = w.as_ptr();
            let end = p0.add(32 * octs);
            asm!(
                "push {{r12, lr}}",
                "2:",
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                fc_group!(),
                "ldr r12, [sp]",
                "cmp r5, r12",
                "bne 2b",
                "add sp, sp, #8",
                inout("r0") a0,
                inout("r1") a1,
                inout("r2") a2,
                inout("r3") a3,
                inout("r4") x.as_ptr() => _,
                inout("r5") p0 => _,
                inout("r8") p0.add(2 * stride) => _,
                in("r9") stride,
                out("r10") _,
                out("r11") _,
                inout("r12") end => _,
                out("lr") _,
                options(readonly),
            );
        }
    }
    let mut acc = [a0, a1, a2, a3];
    // The 0-7 groups left.
    for g in 8 * octs..groups {
        if let Some(&[xe, xo]) = x.get(2 * g..2 * g + 2) {
            for (j, a) in acc.iter_mut().enumerate() {
                let wt = word(w.get(j * stride + 4 * g..).unwrap_or(&[]));
                *a = smlad(xe, sxtb16(wt), smlad(xo, sxtb16_ror8(wt), *a));
            }
        }
    }
    acc
}

/// Dot products of 2 filter rows with an expanded input row: `(acc0 + x . w0, acc1 + x . w1)`
/// over the first `4 * groups` values (11 instructions per group of 4).
#[inline(always)]
fn dot_2x1(x: &[u32], w0: &[i8], w1: &[i8], groups: usize, acc: (i32, i32)) -> (i32, i32) {
    let n = groups.min(x.len() / 2).min(w0.len() / 4).min(w1.len() / 4);
    let (mut a0, mut a1) = acc;
    if n > 0 {
        // SAFETY: `n` iterations, each reading 2 words at `px` and 4 bytes at each of `p0` and
        // `p1`: `x[..2n]`, `w0[..4n]`, `w1[..4n]`, within the slices (`n` is bounded by their
        // lengths). `px` is word aligned (`u32` slice) as `LDRD` needs; the byte pointers may be
        // unaligned for `LDR`, which these cores allow. Every register written is declared.
        unsafe {
            let end = w0.as_ptr().add(4 * n);
            asm!(
                "2:",
                "ldrd {xe}, {xo}, [{px}], #8",
                "ldr {w}, [{p0}], #4",
                "sxtb16 {e}, {w}",
                "smlad {a0}, {xe}, {e}, {a0}",
                "sxtb16 {e}, {w}, ror #8",
                "smlad {a0}, {xo}, {e}, {a0}",
                "ldr {w}, [{p1}], #4",
                "sxtb16 {e}, {w}",
                "smlad {a1}, {xe}, {e}, {a1}",
                "sxtb16 {e}, {w}, ror #8",
                "smlad {a1}, {xo}, {e}, {a1}",
                "cmp {p0}, {end}",
                "bne 2b",
                px = inout(reg) x.as_ptr() => _,
                p0 = inout(reg) w0.as_ptr() => _,
                p1 = inout(reg) w1.as_ptr() => _,
                end = in(reg) end,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                xe = out(reg) _,
                xo = out(reg) _,
                w = out(reg) _,
                e = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    (a0, a1)
}

/// As [`dot_2x1`] on the raw int8 input row, extended with the offset on the fly (`SXTAB16`
/// twice per group of 4, 13 instructions per group): for few outputs, or without scratch.
#[inline(always)]
fn dot_2x1_direct(x: &[i8], off2: u32, w0: &[i8], w1: &[i8], groups: usize, acc: (i32, i32)) -> (i32, i32) {
    let n = groups.min(x.len() / 4).min(w0.len() / 4).min(w1.len() / 4);
    let (mut a0, mut a1) = acc;
    if n > 0 {
        // SAFETY: `n` iterations, each reading 4 bytes at each of `px`, `p0` and `p1`:
        // `x[..4n]`, `w0[..4n]`, `w1[..4n]`, within the slices (`n` is bounded by their
        // lengths). Unaligned word `LDR`s are allowed on these cores. Every register written is
        // declared.
        unsafe {
            let end = w0.as_ptr().add(4 * n);
            asm!(
                "2:",
                "ldr {w}, [{px}], #4",
                "sxtab16 {xe}, {off}, {w}",
                "sxtab16 {xo}, {off}, {w}, ror #8",
                "ldr {w}, [{p0}], #4",
                "sxtb16 {e}, {w}",
                "smlad {a0}, {xe}, {e}, {a0}",
                "sxtb16 {e}, {w}, ror #8",
                "smlad {a0}, {xo}, {e}, {a0}",
                "ldr {w}, [{p1}], #4",
                "sxtb16 {e}, {w}",
                "smlad {a1}, {xe}, {e}, {a1}",
                "sxtb16 {e}, {w}, ror #8",
                "smlad {a1}, {xo}, {e}, {a1}",
                "cmp {p0}, {end}",
                "bne 2b",
                px = inout(reg) x.as_ptr() => _,
                p0 = inout(reg) w0.as_ptr() => _,
                p1 = inout(reg) w1.as_ptr() => _,
                end = in(reg) end,
                off = in(reg) off2,
                a0 = inout(reg) a0,
                a1 = inout(reg) a1,
                xe = out(reg) _,
                xo = out(reg) _,
                w = out(reg) _,
                e = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    (a0, a1)
}

/// Fully connected, int8. With at least 4 outputs and the scratch ([`fully_connected_s8_scratch_len`]
/// bytes), each input row is expanded once into `scratch` (int16 pairs with the offset added) and
/// multiplied by 4 filter rows at a time (21 instructions for 16 MACs per group of 4 values, 8
/// groups per loop iteration),
/// the last 1-3 rows in pairs; otherwise 2 rows at a time on the raw input, extended on the fly
/// (13 instructions for 8 MACs). The `input_depth % 4` last values go through a scalar loop.
/// `scale` is the layer's requantization (either rounding mode). Always applies (returns `true`).
///
/// [`fully_connected_s8_scratch_len`]: crate::kernels::fully_connected::fully_connected_s8_scratch_len
pub(crate) fn fully_connected_s8(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u32],
    scale: &OutputScale<'_>,
) -> bool {
    let (depth, out_d) = (p.input_depth, p.output_depth);
    if depth == 0 || out_d == 0 {
        return false;
    }
    let words = super::padded_patch_len(depth) / 2;
    let expand = out_d >= 4 && scratch.len() >= words;
    let groups = depth / 4;
    let has_tail = depth % 4 != 0;
    let off2 = offset_pair(p.input_offset);
    let b = |c: usize| bias.and_then(|b| b.get(c)).copied().unwrap_or(0);
    // The last `depth % 4` values of a row, scalar.
    let tail = |x: &[i8], w: &[i8], mut acc: i32| {
        if has_tail {
            for (&x, &w) in x.iter().zip(w).skip(4 * groups) {
                acc = acc.wrapping_add(w as i32 * (x as i32 + p.input_offset));
            }
        }
        acc
    };
    let out = |c: usize, acc: i32| scale.output_s8(c, acc, p.output_offset, p.activation);
    let lo4 = (p.activation.min as u8 as u32) * 0x0101_0101;
    let hi4 = (p.activation.max as u8 as u32) * 0x0101_0101;
    for (row, out_row) in input.chunks_exact(depth.max(1)).zip(output.chunks_exact_mut(out_d.max(1))) {
        let mut c = 0;
        if expand {
            let xw = &mut scratch[..words];
            expand_row(row, off2, xw);
            let xw: &[u32] = xw;
            for (w4, o4) in filter.chunks_exact(depth.saturating_mul(4).max(1)).zip(out_row.chunks_exact_mut(4)) {
                let mut acc = dot_4x1(xw, w4, depth, groups, [b(c), b(c + 1), b(c + 2), b(c + 3)]);
                if has_tail {
                    for (a, wj) in acc.iter_mut().zip(w4.chunks_exact(depth.max(1))) {
                        *a = tail(row, wj, *a);
                    }
                }
                match scale.fixed_s8_x4(c, acc, p.output_offset) {
                    // Saturated to int8, clamped per byte, stored as one word.
                    Some(v) => o4.copy_from_slice(&clamp_bytes(pack4(v.map(ssat8)), lo4, hi4).to_le_bytes().map(|b| b as i8)),
                    None => {
                        for (j, (o, a)) in o4.iter_mut().zip(acc).enumerate() {
                            *o = out(c + j, a);
                        }
                    }
                }
                c += 4;
            }
            let rest = out_row.get_mut(c..).unwrap_or(&mut []);
            let rows = filter.get(c * depth..).unwrap_or(&[]);
            for (o2, w2) in rest.chunks_mut(2).zip(rows.chunks(depth.saturating_mul(2).max(1))) {
                let (w0, w1) = w2.split_at(depth.min(w2.len()));
                let w1 = if w1.is_empty() { w0 } else { w1 };
                let (a0, a1) = dot_2x1(xw, w0, w1, groups, (b(c), b(c + 1)));
                if let Some(o) = o2.get_mut(0) {
                    *o = out(c, tail(row, w0, a0));
                }
                if let Some(o) = o2.get_mut(1) {
                    *o = out(c + 1, tail(row, w1, a1));
                }
                c += 2;
            }
        } else {
            for (o2, w2) in out_row.chunks_mut(2).zip(filter.chunks(depth.saturating_mul(2).max(1))) {
                let (w0, w1) = w2.split_at(depth.min(w2.len()));
                let w1 = if w1.is_empty() { w0 } else { w1 };
                let (a0, a1) = dot_2x1_direct(row, off2, w0, w1, groups, (b(c), b(c + 1)));
                if let Some(o) = o2.get_mut(0) {
                    *o = out(c, tail(row, w0, a0));
                }
                if let Some(o) = o2.get_mut(1) {
                    *o = out(c + 1, tail(row, w1, a1));
                }
                c += 2;
            }
        }
    }
    true
}

// ---------------------------------------------------------------------------------------------
// Depthwise: 4 channels per word.
// ---------------------------------------------------------------------------------------------

/// Largest filter (taps) whose extended weights [`depthwise_conv_s8`] keeps on the stack.
const DW_MAX_TAPS: usize = 25;

/// `acc[j] += w[j] * (x[j] + off)` for the 4 channels of one tap.
#[inline(always)]
fn mac4(x: u32, off2: u32, we: u32, wo: u32, acc: [i32; 4]) -> [i32; 4] {
    let (xe, xo) = (sxtab16(off2, x), sxtab16_ror8(off2, x));
    [smlabb(xe, we, acc[0]), smlabb(xo, wo, acc[1]), smlatt(xe, we, acc[2]), smlatt(xo, wo, acc[3])]
}

/// The filter taps `[first, end)` of one axis whose input coordinate `o * stride + k * dilation
/// - before` lies in `[0, size)`, and the input coordinate of `first`.
#[inline(always)]
fn tap_range(o: usize, stride: usize, dilation: usize, before: usize, size: usize, taps: usize) -> (usize, usize, usize) {
    let origin = o * stride; // padded coordinate of tap 0
    let d = dilation.max(1);
    // First tap at or after the padding: ceil((before - origin) / d).
    let first = if origin >= before { 0 } else { (before - origin).div_ceil(d) };
    // Taps with origin + k * d < before + size: k < ceil((before + size - origin) / d).
    let end = if before + size > origin { (before + size - origin).div_ceil(d).min(taps) } else { 0 };
    let first = first.min(end);
    (first, end, (origin + first * d).saturating_sub(before))
}

/// Reads 4 bytes of `b` at `i` as a little-endian word; 0 if they are not all inside `b` (never
/// for the indices the depthwise loops compute, which are in the image).
#[inline(always)]
fn read4(b: &[i8], i: usize) -> u32 {
    if i.checked_add(4).is_some_and(|end| end <= b.len()) {
        // SAFETY: bytes `i..i + 4` are inside `b` (checked just above); unaligned read.
        u32::from_le(unsafe { core::ptr::read_unaligned(b.as_ptr().add(i) as *const u32) })
    } else {
        0
    }
}

/// One filter row of the 3x3 interior in [`dw_3x3_interior`]: 3 taps at `px`, `px + cs`,
/// `px + 2 cs`, each one input word (4 channels, raw: the offset is folded into the initial
/// accumulators) extended to `(x0, x2)` and `(x1, x3)`, the tap's pre-extended weights loaded
/// with `LDRD`, and 4 `SMLABB`/`SMLATT`; then `px` moves down a row.
macro_rules! dw_row {
    () => {
        concat!(
            "ldr {x}, [{px}]\n",
            "ldrd {we}, {wo}, [{wp}], #8\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
            "ldr {x}, [{px}, {cs}]\n",
            "ldrd {we}, {wo}, [{wp}], #8\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
            "ldr {x}, [{px}, {cs}, lsl #1]\n",
            "ldrd {we}, {wo}, [{wp}], #8\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
            "add {px}, {px}, {rs}\n",
        )
    };
}

/// The 9 taps of a 3x3 window that lies inside the image (any dilation: the steps carry it), in one
/// `asm!` block of 75 instructions: `base` indexes the top-left tap's first channel of the group,
/// rows are `row_step` apart, columns `col_step`. `acc` must already hold `bias + offset *
/// sum(weights)` per channel (the offset is folded out of the loop). One bounds check for the
/// whole window: `None` (nothing read) if it fails, which the callers' geometry rules out.
#[inline(always)]
fn dw_3x3_interior(
    in_b: &[i8],
    base: usize,
    row_step: usize,
    col_step: usize,
    w: &[[u32; 2]; 9],
    acc: [i32; 4],
) -> Option<[i32; 4]> {
    let last = base.checked_add(2 * row_step).and_then(|v| v.checked_add(2 * col_step)).and_then(|v| v.checked_add(4));
    if last.is_none_or(|end| end > in_b.len()) {
        return None;
    }
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    // SAFETY: the 9 words read start at `base + ky * row_step + kx * col_step` (ky, kx in 0..3)
    // and the last one ends at `base + 2 * row_step + 2 * col_step + 4 <= in_b.len()` (checked
    // above; steps are non-negative), so every read is inside `in_b` (`LDR` may be unaligned on
    // these cores); the 9 `LDRD`s read the 18 words of `w`, which is word aligned. Every
    // register written is declared.
    unsafe {
        asm!(
            dw_row!(),
            dw_row!(),
            dw_row!(),
            px = inout(reg) in_b.as_ptr().add(base) => _,
            cs = in(reg) col_step,
            rs = in(reg) row_step,
            wp = inout(reg) w.as_ptr() => _,
            a0 = inout(reg) a0,
            a1 = inout(reg) a1,
            a2 = inout(reg) a2,
            a3 = inout(reg) a3,
            x = out(reg) _,
            xe = out(reg) _,
            we = out(reg) _,
            wo = out(reg) _,
            options(readonly, nostack),
        );
    }
    Some([a0, a1, a2, a3])
}

/// Depthwise convolution, depth multiplier 1: channels in groups of 4 (one word of input and of
/// weights per tap: `SXTAB16` x 2 for the input with its offset, `SMLABB`/`SMLATT` x 4), the
/// group's weights extended once into a stack array and reused for every output pixel; the taps
/// inside the image computed once per row and column (no per-tap padding test); 3x3 filters
/// have a fully unrolled path for pixels whose window lies inside the image. The last `in_c % 4`
/// channels go through a per-channel loop. No scratch. Preconditions (else `false`):
/// `depth_multiplier == 1`, at most 25 taps, multipliers and shifts within [`ChannelRequant`]'s
/// contract.
pub(crate) fn depthwise_conv_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let (ind, outd) = (p.input, p.output);
    let (kh, kw) = (p.filter.h, p.filter.w);
    let taps = kh * kw;
    if p.depth_multiplier != 1 || taps > DW_MAX_TAPS || taps == 0 || !ChannelRequant::all_valid(quant.multiplier, quant.shift)
    {
        return false;
    }
    let c = ind.c;
    let in_image = ind.h * ind.w * c;
    let out_image = outd.h * outd.w * c;
    if in_image == 0 || out_image == 0 {
        return true;
    }
    let off = p.input_offset;
    let off2 = offset_pair(off);
    let unrolled_3x3 = kh == 3 && kw == 3;
    let row_step = p.dilation.h * ind.w * c; // input distance between filter rows
    let col_step = p.dilation.w * c; // between filter columns
    let bias_of = |ch: usize| bias.and_then(|b| b.get(ch)).copied().unwrap_or(0);
    let rq_of = |ch: usize| match (quant.multiplier.get(ch), quant.shift.get(ch)) {
        (Some(&m), Some(&s)) => ChannelRequant::new_valid(m, s),
        _ => ChannelRequant::new_valid(0, 0),
    };
    // The clamp bounds (within int8, validated) in every byte, for `clamp_bytes`.
    let lo4 = (p.activation.min as u8 as u32) * 0x0101_0101;
    let hi4 = (p.activation.max as u8 as u32) * 0x0101_0101;
    // Output columns whose whole window lies inside the image: `ox_lo <= ox < ox_hi`.
    let span_w = (kw - 1) * p.dilation.w; // window width - 1
    let sw = p.stride.w.max(1);
    let ox_lo = p.padding.left.div_ceil(sw);
    let ox_hi = if ind.w + p.padding.left > span_w { (ind.w + p.padding.left - span_w).div_ceil(sw) } else { 0 };
    for (in_b, out_b) in input.chunks_exact(in_image.max(1)).zip(output.chunks_exact_mut(out_image.max(1))) {
        for ch in (0..c / 4).map(|g| 4 * g) {
            let mut wexp = [[0u32; 2]; DW_MAX_TAPS];
            for (t, e) in wexp.iter_mut().take(taps).enumerate() {
                let w = word(filter.get(t * c + ch..).unwrap_or(&[]));
                *e = [sxtb16(w), sxtb16_ror8(w)];
            }
            let mut w3 = [[0u32; 2]; 9];
            w3.copy_from_slice(&wexp[..9]);
            let b = [bias_of(ch), bias_of(ch + 1), bias_of(ch + 2), bias_of(ch + 3)];
            // Interior 3x3 windows use all 9 taps: fold `offset * sum(w)` into their bias.
            let mut b_full = b;
            for (j, bf) in b_full.iter_mut().enumerate() {
                let wsum = (0..taps).filter_map(|t| filter.get(t * c + ch + j)).fold(0i32, |a, &w| a + w as i32);
                *bf = bf.wrapping_add(wsum.wrapping_mul(off));
            }
            let rq = [rq_of(ch), rq_of(ch + 1), rq_of(ch + 2), rq_of(ch + 3)];
            let mut out_px = out_b.chunks_exact_mut(c.max(1));
            for oy in 0..outd.h {
                let (ky0, ky1, iy0) = tap_range(oy, p.stride.h, p.dilation.h, p.padding.top, ind.h, kh);
                let full_rows = ky0 == 0 && ky1 == kh;
                for ox in 0..outd.w {
                    let Some(px) = out_px.next() else { break };
                    let interior = unrolled_3x3 && full_rows && ox >= ox_lo && ox < ox_hi;
                    // The whole 3x3 window in the image: 9 taps at fixed distances.
                    let fast = if interior {
                        let base = (iy0 * ind.w + ox * p.stride.w - p.padding.left) * c + ch;
                        dw_3x3_interior(in_b, base, row_step, col_step, &w3, b_full)
                    } else {
                        None
                    };
                    let mut acc = b;
                    if let Some(a) = fast {
                        acc = a;
                    } else {
                        let (kx0, kx1, ix0) = tap_range(ox, p.stride.w, p.dilation.w, p.padding.left, ind.w, kw);
                        let base = (iy0 * ind.w + ix0) * c + ch; // first in-image tap, channel `ch`
                        for (r, ky) in (ky0..ky1).enumerate() {
                            let row = base + r * row_step;
                            for (q, kx) in (kx0..kx1).enumerate() {
                                if let Some(&[we, wo]) = wexp.get(ky * kw + kx) {
                                    acc = mac4(read4(in_b, row + q * col_step), off2, we, wo, acc);
                                }
                            }
                        }
                    }
                    if let Some(o) = px.get_mut(ch..ch + 4) {
                        // clamp(x + offset) == clamp(ssat8(x + offset)): the clamp is within int8.
                        let v = [
                            ssat8(rq[0].apply(acc[0]).wrapping_add(p.output_offset)),
                            ssat8(rq[1].apply(acc[1]).wrapping_add(p.output_offset)),
                            ssat8(rq[2].apply(acc[2]).wrapping_add(p.output_offset)),
                            ssat8(rq[3].apply(acc[3]).wrapping_add(p.output_offset)),
                        ];
                        o.copy_from_slice(&clamp_bytes(pack4(v), lo4, hi4).to_le_bytes().map(|b| b as i8));
                    }
                }
            }
        }
        // The channels left over (in_c % 4), one at a time.
        for ch in (c / 4) * 4..c {
            let rq = rq_of(ch);
            let mut out_px = out_b.chunks_exact_mut(c.max(1));
            for oy in 0..outd.h {
                let (ky0, ky1, iy0) = tap_range(oy, p.stride.h, p.dilation.h, p.padding.top, ind.h, kh);
                for ox in 0..outd.w {
                    let Some(px) = out_px.next() else { break };
                    let (kx0, kx1, ix0) = tap_range(ox, p.stride.w, p.dilation.w, p.padding.left, ind.w, kw);
                    let base = (iy0 * ind.w + ix0) * c + ch;
                    let mut acc = bias_of(ch);
                    for (r, ky) in (ky0..ky1).enumerate() {
                        for (q, kx) in (kx0..kx1).enumerate() {
                            let x = in_b.get(base + r * row_step + q * col_step);
                            let w = filter.get((ky * kw + kx) * c + ch);
                            if let (Some(&x), Some(&w)) = (x, w) {
                                acc = acc.wrapping_add(w as i32 * (x as i32 + off));
                            }
                        }
                    }
                    if let Some(o) = px.get_mut(ch) {
                        *o = rq.output_s8(acc, p.output_offset, p.activation);
                    }
                }
            }
        }
    }
    true
}

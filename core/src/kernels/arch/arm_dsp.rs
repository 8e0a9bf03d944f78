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

use super::requant::{ChannelRequant, OutputScale, RightShiftRequant};
use super::scratch::TILE;
use super::tiled_conv::{ConvOperands, ConvTile, for_each_tap};
use crate::kernels::PerChannelQuant;
use crate::kernels::params::ConvParams;
use crate::kernels::params::DepthwiseConvParams;
use crate::kernels::params::FullyConnectedParams;
use crate::kernels::window::input_coord;

/// `SXTB16 r, x`: bytes 0 and 2 of `x`, sign-extended to two halfwords.
#[inline(always)]
fn sxtb16(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack, no flags), available with DSP.
    unsafe {
        asm!("sxtb16 {r}, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags))
    };
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

/// `SADD16 r, a, b`: the halfwords of `a` and `b` added (signed, wrapping).
#[inline(always)]
fn sadd16(a: u32, b: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction (no memory, no stack); it writes the GE flags, which
    // are not declared preserved.
    unsafe {
        asm!("sadd16 {r}, {a}, {b}", r = lateout(reg) r, a = in(reg) a, b = in(reg) b, options(pure, nomem, nostack))
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

/// The scan of [`RightShiftRequant`]'s common form over the `n = min(multiplier.len(),
/// shift.len())` channels: `(OR of every m | (s + 31), AND of every s + 1)`, 4 channels per
/// iteration (two `LDM`s, 24 instructions), then the `n % 4` others one by one (9 each).
#[inline(always)]
pub(crate) fn right_shift_scan(multiplier: &[i32], shift: &[i32]) -> (i32, i32) {
    let n = multiplier.len().min(shift.len());
    let (mut bad, mut good) = (0i32, -1i32);
    // SAFETY: `n / 4` iterations of the first loop, each reading 4 words at `pm` and at `ps`
    // (`LDM`, word aligned: `i32` slices), then `n % 4` of the second, one word at each: in all
    // `multiplier[..n]` and `shift[..n]`, within both. Every register written is declared; the
    // flags are not declared preserved.
    unsafe {
        asm!(
            "lsrs {q}, {n}, #2",
            "beq 3f",
            "2:",
            "ldm {pm}!, {{r0, r1, r2, r3}}",
            "orr {bad}, {bad}, r0",
            "orr {bad}, {bad}, r1",
            "orr {bad}, {bad}, r2",
            "orr {bad}, {bad}, r3",
            "ldm {ps}!, {{r0, r1, r2, r3}}",
            "add {t}, r0, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r0, #1",
            "and {good}, {good}, {t}",
            "add {t}, r1, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r1, #1",
            "and {good}, {good}, {t}",
            "add {t}, r2, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r2, #1",
            "and {good}, {good}, {t}",
            "add {t}, r3, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r3, #1",
            "and {good}, {good}, {t}",
            "subs {q}, {q}, #1",
            "bne 2b",
            "3:",
            "ands {n}, {n}, #3",
            "beq 5f",
            "4:",
            "ldr r0, [{pm}], #4",
            "ldr r1, [{ps}], #4",
            "orr {bad}, {bad}, r0",
            "add {t}, r1, #31",
            "orr {bad}, {bad}, {t}",
            "add {t}, r1, #1",
            "and {good}, {good}, {t}",
            "subs {n}, {n}, #1",
            "bne 4b",
            "5:",
            pm = inout(reg) multiplier.as_ptr() => _,
            ps = inout(reg) shift.as_ptr() => _,
            n = inout(reg) n => _,
            q = out(reg) _,
            bad = inout(reg) bad,
            good = inout(reg) good,
            t = out(reg) _,
            out("r0") _,
            out("r1") _,
            out("r2") _,
            out("r3") _,
            options(readonly, nostack),
        );
    }
    (bad, good)
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
                    if let (Some(src), Some(dst)) = (in_b.get(start..start + n), dst_row.get_mut(kx0 * c..kx0 * c + n))
                    {
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

/// Copies `n` bytes from `src` to `dst` (word-wise, then byte-wise), `n` at most both lengths
/// (else nothing); 3 instructions per word, for the short runs of raw patches.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[i8], n: usize) {
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

/// Words of the stack rows [`conv_im2col_tile`] copies the filter rows' spans of input pixels
/// into for a tile whose windows reach past the image.
const EDGE_ROW_WORDS: usize = 256;

/// Largest patch (`kh * kw * in_c`, rounded up to words) [`conv_im2col_tile`] gathers raw on the
/// stack for channel counts that are not a multiple of 4 (first layers: 1 or 3 channels).
const RAW_PATCH_WORDS: usize = 16;

/// Bytes of the raw patch buffer of [`conv_im2col_tile`]: 4 patches.
const RAW_BYTES: usize = 4 * 4 * RAW_PATCH_WORDS;

/// The raw patches (int8, the input zero point where a tap falls in the padding) of 4 output
/// pixels from `(oy, ox)`, one after the other, `stride` bytes each, into `raw`: filter row by
/// filter row, each row's taps one run of `kw * in_c` bytes (dilation 1 across). A window inside
/// the image is copied by [`copy_rows`]. Bytes past `k` in each patch are not written: the
/// caller fills `raw` with the zero point once.
#[inline(always)]
fn gather_raw_patches(p: &ConvParams, in_b: &[i8], oy: usize, ox: usize, raw: &mut [u8], stride: usize, zp: u8) {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let run = p.filter.w * c;
    let row_step = p.dilation.h * ind.w * c;
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

/// The im2col block of the 4 output pixels from `p0` (at `(oy, ox)`) for [`conv_s8`]: with
/// whole words per pixel (`in_c % 4 == 0`), 1x1 convolutions that map output pixels to the same
/// input pixels gather 4 consecutive pixels, and any filter (dilation 1 across) whose 4 pixels
/// share a row and lie within the image's columns gathers each filter row's 4 runs
/// ([`im2col_gather4`], all rows in one call when none is in the padding; rows in the padding
/// are zeros), and from a copy of the rows' spans on the stack (the zero point outside the
/// image) when they reach past its left or right edge; every other tile takes
/// [`InterleavedTile::im2col`]. Only the `ceil(k / 4)` groups the tile reads are written.
#[allow(clippy::too_many_arguments)]
fn conv_im2col_tile(
    p: &ConvParams,
    in_b: &[i8],
    p0: usize,
    oy: usize,
    ox: usize,
    cols: &mut [u32],
    k: usize,
    kp: usize,
    raw: &mut [u8; RAW_BYTES],
    edge: &mut [u32; EDGE_ROW_WORDS],
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
            // input pixels copied to the stack (the zero point outside the image, which extends
            // to zeros), then gathered as above.
            let span_px = 3 * sw + kw;
            let span = span_px * wpp;
            if span <= EDGE_ROW_WORDS {
                let zp = ((-p.input_offset) as u8 as u32).wrapping_mul(0x0101_0101);
                // Span pixels `lo..hi` lie in the image; the others are padding.
                let lo = if ix_first < 0 { ix_first.unsigned_abs().min(span_px) } else { 0 };
                let right = ind.w as isize - ix_first; // from the span's start to the image's end
                let hi = if right <= lo as isize { lo } else { (right as usize).min(span_px) };
                let first = (ix_first + lo as isize) as usize; // the first input column copied
                // As many filter rows per gather as the stack rows hold.
                let per = (EDGE_ROW_WORDS / span.max(1)).max(1);
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
                        // * sw * c + 4 * run = 4 * rows * span` bytes, within its
                        // `EDGE_ROW_WORDS` words (`rows <= EDGE_ROW_WORDS / span`); `dst` holds
                        // `8 * run * rows` words.
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
    if c % 4 != 0 && p.dilation.w == 1 && groups <= RAW_PATCH_WORDS && cols.len() >= 8 * groups {
        // Few channels: the 4 raw patches gathered on the stack (prefilled with the zero point
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
    /// `sp + 20`: `2^30`, the requantization's rounding term.
    round: i32,
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
            "sub r11, r11, #1",
            "ldrd r4, r12, [sp, #20]",
            conv_requant!("r0"),
            conv_requant!("r1"),
            conv_requant!("r2"),
            conv_requant!("r3"),
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
/// accumulator is requantized in the [`RightShiftRequant`] form with the shift applied as `((hi
/// >> (e - 2)) + 1 + 2 * offset) >> 1` (equal to `((hi + 2^(e-2)) >> (e-1)) + offset`; with a
/// zero multiplier any shift gives the offset), the last shift inside `SSAT`; the 4 bytes go to
/// the 4 pixels' rows (`f.out_c` apart). 47 instructions per filter besides the MACs and the
/// loop tests (49 with `PAD`, the filter pointer then stepped by `f.filter_delta`).
///
/// # Safety
/// `f.cols` holds `8 * groups` words, `f.cols_end = f.cols + 8 * groups`, `groups >= 2`, `f.entry
/// = 52 * ((B - (groups - 1) % B) % B)` and `f.loops = (groups - 1 > B) as usize` with `B =
/// CONV_BODY_GROUPS`, `f.round = 2^30`; `f.out_end = f.out + count` with `count >= 1` filters,
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

/// Requantizes accumulator `$a` in [`conv_tile_asm`] (`r10` multiplier, `r11` `e - 2`, `r12`
/// `1 + 2 * offset`, `r4` `2^30`): 6 instructions, the result saturated to int8 in `$a`.
macro_rules! conv_requant {
    ($a:literal) => {
        concat!(
            "asr r8, ",
            $a,
            ", #31\n",
            "orr r9, r4, r8, lsl #31\n",
            "smlal r9, r8, ",
            $a,
            ", r10\n",
            "asr r8, r8, r11\n",
            "add r8, r8, r12\n",
            "ssat ",
            $a,
            ", #8, r8, asr #1\n",
        )
    };
}
use conv_requant;

/// A zero bias word for layers without bias (the tile then steps its bias pointer by 0).
static ZERO_BIAS: i32 = 0;

/// Largest `4 * groups` for which [`conv_s8`] copies the last filter of a layer with `k % 4 !=
/// 0` to the stack (its last word would reach past the filters).
const LAST_FILTER_MAX: usize = 128;

/// Convolution on the Arm DSP path: output pixels in tiles of 4 (the image's last tile
/// overlaps the one before it instead of being partial), each tile's patches expanded once into
/// the im2col block ([`InterleavedTile::im2col`]), then every filter against it in one `asm!`
/// block ([`conv_tile_asm`]: MACs, requantization and stores, 47 instructions per filter
/// besides the 13 per 16 MACs). A clamp narrower than int8 is applied afterwards to the tile's
/// output bytes, 4 at a time (`SSUB8` + `SEL`). Layers outside this path's preconditions (a
/// requantization other than [`RightShiftRequant`]'s form, fewer than 4 output pixels per image,
/// a last filter too long to copy) run the shared tiled path (`conv_s8_tiled`); grouped
/// convolutions and too little scratch return `false` (the reference runs).
pub(crate) fn conv_s8(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    let ConvOperands { p, multiplier, shift, input, filter, bias } = *a;
    let (ind, outd) = (p.input, p.output);
    let k = p.filter.h * p.filter.w * p.filter.c;
    let kp = super::scratch::padded_patch_len(k);
    let words = super::scratch::conv_scratch_words(k);
    let out_c = outd.c;
    let pixels = outd.h * outd.w;
    let groups = k.div_ceil(4);
    let last_pad = k % 4 != 0;
    let fits = p.filter.c == ind.c
        && k > 4
        && out_c > 0
        && cols.len() >= words
        && pixels >= 4
        && multiplier.len() == out_c
        && shift.len() == out_c
        && bias.is_none_or(|b| b.len() == out_c)
        && filter.len() >= out_c * k
        && (!last_pad || 4 * groups <= LAST_FILTER_MAX)
        && RightShiftRequant::all_valid(multiplier, shift);
    if !fits {
        return super::tiled_conv::conv_s8_tiled::<InterleavedTile>(a, output, cols);
    }
    let in_image = ind.h * ind.w * ind.c;
    let out_image = pixels * out_c;
    if in_image == 0 {
        return true;
    }
    let Some(cols) = cols.get_mut(..words) else { return false };
    // The layer's last filter, zero-padded to whole words, when its last word would overrun.
    let mut last = [0i8; LAST_FILTER_MAX];
    let asm_filters = if last_pad {
        let src = filter.get((out_c - 1) * k..out_c * k).unwrap_or(&[]);
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
    let mut raw = [(-p.input_offset) as u8; RAW_BYTES];
    // The stack row of tiles at the image's left and right edges (`conv_im2col_tile`).
    let mut edge = [0u32; EDGE_ROW_WORDS];
    // Every tile's frame; each tile sets its outputs.
    let mut base = ConvTileFrame {
        cols: cols.as_ptr(),
        bias: bias_ptr,
        bias_step,
        multiplier: multiplier.as_ptr(),
        shift: shift.as_ptr(),
        round: 1 << 30,
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
            conv_im2col_tile(p, in_b, p0, oy, ox, cols, k, kp, &mut raw, &mut edge);
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
                    // `LAST_FILTER_MAX >= 4 * groups` bytes (checked).
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

// ---------------------------------------------------------------------------------------------
// Fully connected: the input row expanded once, 2 filters per pass.
// ---------------------------------------------------------------------------------------------

/// Expands one input row into `dst` as pairs `(x[4g] + off, x[4g+2] + off), (x[4g+1] + off,
/// x[4g+3] + off)` per group of 4 values, zeros past the end.
#[inline(always)]
fn expand_row(row: &[i8], off2: u32, dst: &mut [u32]) {
    let words = row.len() / 4;
    if row.len() % 4 == 0 && words > 0 && dst.len() >= 2 * words {
        // Whole words: 6 instructions per group, then zeros for the rest of `dst`.
        // SAFETY: reads `row[..4 * words]` (its whole length) and writes `dst[..2 * words]`
        // (checked), word aligned for `STRD`. Every register written is declared.
        unsafe {
            asm!(
                "2:",
                "ldr {x}, [{s}], #4",
                "sxtab16 {e}, {off}, {x}",
                "sxtab16 {x}, {off}, {x}, ror #8",
                "strd {e}, {x}, [{d}], #8",
                "subs {n}, {n}, #1",
                "bne 2b",
                s = inout(reg) row.as_ptr() => _,
                d = inout(reg) dst.as_mut_ptr() => _,
                n = inout(reg) words => _,
                off = in(reg) off2,
                x = out(reg) _,
                e = out(reg) _,
                options(nostack),
            );
        }
        dst.iter_mut().skip(2 * words).for_each(|w| *w = 0);
        return;
    }
    let mut chunks = row.chunks(4);
    for pair in dst.chunks_exact_mut(2) {
        match chunks.next() {
            Some(x) => {
                // A short last chunk is zero-filled; its zeros must stay 0, not the offset.
                let w = word(x);
                let (mut e, mut o) = (sxtab16(off2, w), sxtab16_ror8(off2, w));
                if x.len() < 4 {
                    let keep = |lanes: usize| {
                        if lanes == 2 {
                            u32::MAX
                        } else if lanes == 1 {
                            0xffff
                        } else {
                            0
                        }
                    };
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

/// As [`dot_2x1`] on the raw int8 input row, extended with the offset on the fly
/// ([`dot_2x1_raw`]): for few outputs, or without scratch.
#[inline(always)]
fn dot_2x1_direct(x: &[i8], off2: u32, w0: &[i8], w1: &[i8], groups: usize, acc: (i32, i32)) -> (i32, i32) {
    let n = groups.min(x.len() / 4).min(w0.len() / 4).min(w1.len() / 4);
    if n == 0 {
        return acc;
    }
    // SAFETY: `4 * n` bytes from each of `x`, `w0`, `w1`, within the slices (`n` is bounded by
    // their lengths), `n >= 1`.
    unsafe { dot_2x1_raw(x.as_ptr(), w0.as_ptr(), w1.as_ptr(), n, off2, false, acc) }
}

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
unsafe fn dot_2x1_raw(
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

/// The state [`fc_rows_asm`] copies onto its stack frame (`#[repr(C)]` words in frame order).
#[repr(C)]
struct FcFrame {
    /// `sp + 0`, `sp + 4`: the next 4 biases (or 4 zero words) and the step per pass (16 or 0).
    bias: *const i32,
    bias_step: usize,
    /// `sp + 8`, `sp + 12`: per channel (`fc_rows_asm::<true>`), the next 4 multipliers' and
    /// shifts' addresses; per tensor (`fc_rows_asm::<false>`), the multiplier and `e - 2`
    /// (`-shift - 2`).
    quant: [usize; 2],
    /// `sp + 16`, `sp + 20`: the next 4 outputs, and the end of the last pass's.
    out: *mut i8,
    out_end: *mut i8,
    /// `sp + 24`, `sp + 28`: the expanded input row and its end after `groups` groups.
    x: *const u32,
    x_end: *const u32,
    /// `sp + 32`: bytes of the 8-group loop body skipped on entry (84 per group); on the stack
    /// the block turns it into the entry address once.
    entry: usize,
    /// `sp + 36`: from a pass's first row, after its `depth` bytes, to the next pass's (`3 *
    /// depth`).
    filter_delta: usize,
    /// `sp + 40`: `1 + 2 * output_offset`.
    one_off: i32,
    /// `sp + 44`, `sp + 48`: the clamp bounds in every byte.
    lo4: u32,
    hi4: u32,
    /// `sp + 52`: bytes per filter row (the depth).
    depth: usize,
    /// Loaded into `r5`: the first pass's first row.
    filter: *const i8,
}

/// Requantizes accumulator `$a` in [`fc_rows_asm`], per channel: the multiplier and shift loaded
/// from `r8` and `r9` (post-incremented), `r12` `1 + 2 * offset`, `lr` `2^30`: 10 instructions.
macro_rules! fc_requant_pc {
    ($a:literal) => {
        concat!(
            "ldr r10, [r8], #4\n",
            "asr r11, ",
            $a,
            ", #31\n",
            "orr r4, lr, r11, lsl #31\n",
            "smlal r4, r11, ",
            $a,
            ", r10\n",
            "ldr r10, [r9], #4\n",
            "mvn r10, r10\n",
            "sub r10, r10, #1\n",
            "asr r11, r11, r10\n",
            "add r11, r11, r12\n",
            "ssat ",
            $a,
            ", #8, r11, asr #1\n",
        )
    };
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
/// as in [`conv_tile_asm`] (per channel 10 instructions with the multiplier and shift loads, per
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
#[inline(always)]
unsafe fn fc_rows_asm<const PER_CHANNEL: bool>(f: &FcFrame) {
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

/// Fewest outputs for which [`fully_connected_right_shift`] expands the input row
/// ([`fc_expanded`]): below, [`fc_direct`]'s passes of 2 rows on the raw input (12
/// instructions per 8 MACs, about 60 per pass) cost less than the expansion (6 instructions per
/// 4 values), the scan and the setup (a few hundred instructions) save.
const FC_EXPANDED_MIN_OUT: usize = 12;

/// Four zero words: the biases of a layer without bias.
static ZERO_BIAS4: [i32; 4] = [0; 4];

/// The operands of [`fully_connected_right_shift`], validated by the kernel (lengths as
/// `params` says; `multiplier` and `shift` one entry, or one per output).
pub(crate) struct FcArgs<'a> {
    pub(crate) params: &'a FullyConnectedParams,
    pub(crate) input: &'a [i8],
    pub(crate) filter: &'a [i8],
    pub(crate) bias: Option<&'a [i32]>,
    pub(crate) multiplier: &'a [i32],
    pub(crate) shift: &'a [i32],
}

/// Fully connected, int8, on the Arm DSP path, for the layers TFLite's converters produce: whole
/// words per row (`input_depth % 4 == 0`) and a fixed-point requantization (in the
/// [`RightShiftRequant`] form for the first path). Two lean paths, each an out-of-line function
/// that sets up only what it uses:
/// - at least [`FC_EXPANDED_MIN_OUT`] outputs and the scratch
///   ([`fully_connected_s8_scratch_len`] bytes, any alignment): [`fc_expanded`], each input row
///   expanded once into `scratch` (int16 pairs with the offset added), then multiplied by 4
///   filter rows per pass ([`fc_rows_asm`]: 21 instructions for 16 MACs per group of 4 values,
///   requantization and stores in the same block), the last `output_depth % 4` outputs in
///   passes of 2 rows on the raw input ([`fc_pairs_asm`]);
/// - otherwise [`fc_direct`]: passes of 2 rows on the raw input, extended on the fly (12
///   instructions for 8 MACs with the input row and the filter word aligned, 13 otherwise), the
///   whole pass (biases, MACs, requantization, clamp, stores) in one `asm!` block
///   ([`fc_pairs_asm`]) when every channel has the common form (else [`fc_pairs`]).
///
/// `false` (nothing written) for every other layer, which then takes [`fully_connected_s8`].
///
/// [`fully_connected_s8_scratch_len`]: crate::kernels::fully_connected::fully_connected_s8_scratch_len
pub(crate) fn fully_connected_right_shift(a: &FcArgs<'_>, output: &mut [i8], scratch: &mut [u8]) -> bool {
    let p = a.params;
    let (batches, depth, out_d) = (p.batches, p.input_depth, p.output_depth);
    let (m, s) = (a.multiplier, a.shift);
    // `len / depth >= batches` is `batches * depth <= len` (no overflow to rule out).
    let fits = depth > 0
        && depth % 4 == 0
        && out_d > 0
        && m.len() == s.len()
        && (m.len() == 1 || m.len() == out_d)
        && a.input.len() / depth >= batches
        && a.filter.len() / depth >= out_d
        && output.len() / out_d >= batches
        && a.bias.is_none_or(|b| b.len() >= out_d);
    if !fits {
        return false;
    }
    if out_d >= FC_EXPANDED_MIN_OUT {
        if let Some(xw) = super::scratch::scratch_words(scratch).get_mut(..depth / 2) {
            if !RightShiftRequant::all_valid(m, s) {
                return false;
            }
            fc_expanded(a, output, xw);
            return true;
        }
    }
    // SAFETY: the lengths fit (`fits`).
    unsafe { fc_direct(a, output) };
    true
}

/// Fully connected, int8, on the Arm DSP path, any layer [`fully_connected_right_shift`] declines
/// (a depth that is not a multiple of 4, another requantization): with at least 4 outputs and
/// the scratch, each input row expanded once and multiplied by 4 filter rows at a time
/// ([`dot_4x1`]), the last 1-3 rows in pairs ([`dot_2x1`]); otherwise 2 rows at a time on the
/// raw input ([`dot_2x1_direct`]). The `input_depth % 4` last values go through a scalar loop;
/// requantization through `scale` (either rounding mode). Always applies (returns `true`)
/// unless a depth is 0.
pub(crate) fn fully_connected_s8(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u32],
    scale: &OutputScale<'_>,
) -> bool {
    if p.input_depth == 0 || p.output_depth == 0 {
        return false;
    }
    fc_general(p, input, filter, bias, output, scratch, scale);
    true
}

/// [`fully_connected_right_shift`] (whose checks it relies on) with at least 4 outputs and `xw`
/// of `input_depth / 2` words: per input row, the row expanded into `xw`, the `output_depth / 4`
/// passes of [`fc_rows_asm`], then the last `output_depth % 4` outputs ([`fc_pairs`]).
#[inline(never)]
fn fc_expanded(a: &FcArgs<'_>, output: &mut [i8], xw: &mut [u32]) {
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
            if per_channel {
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

/// The state [`fc_pairs_asm`] keeps in memory (`#[repr(C)]` words in the order of the
/// registers the block loads them into with `LDM`).
#[repr(C)]
struct FcPairFrame {
    /// `+0`: the raw input row (`r2`).
    x: *const i8,
    /// `+4`: the next pass's first filter row (`r3`, advanced by the block).
    w: *const i8,
    /// `+8`: bytes from a pass's first filter row to its second (`r4`: `depth`; 0 for one row
    /// paired with itself).
    row_step: usize,
    /// `+12`: the input offset in both halfwords (`r5`).
    off2: u32,
    /// `+16`, `+20`: the next pass's first bias (`r8`, advanced by the block) and the bytes to
    /// its second (`r9`: 4, or 0 for one bias word used by every output).
    bias: *const i32,
    bias_step: usize,
    /// `+24`: groups of 4 values (`lr`: `depth / 4`, at least 1).
    groups: usize,
    /// `+28`, `+32`, `+36`: the next pass's first multiplier and shift (`r2`, `r3`, advanced by
    /// the block), and the bytes to the second's (`r4`: 4, or 0 per tensor).
    multiplier: *const i32,
    shift: *const i32,
    quant_step: usize,
    /// `+40`: `1 + 2 * output_offset` (`r5`).
    one_off: i32,
    /// `+44`, `+48`: the clamp bounds in every byte.
    lo4: u32,
    hi4: u32,
    /// `+52`, `+56`, `+60`: the next pass's first output byte (`r2`, advanced by the block),
    /// where the passes end (`r3`), and the bytes from a pass's first output to its second
    /// (`r4`: 1; 0 for one row paired with itself, whose single pass ends at `out`).
    out: *mut i8,
    out_end: *mut i8,
    out_step: usize,
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
/// the [`RightShiftRequant`] form as in [`fc_requant_pc!`], 9 instructions.
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
#[inline(always)]
unsafe fn fc_pairs_asm(f: &mut FcPairFrame) {
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
#[inline(never)]
unsafe fn fc_direct(a: &FcArgs<'_>, output: &mut [i8]) {
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
    fn new(a: &FcArgs<'_>, bias: *const i32, bias_step: usize, quant_step: usize, out: *mut i8) -> Self {
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
#[inline(always)]
unsafe fn fc_pairs_run(f: &mut FcPairFrame, count: usize) {
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
fn fc_pairs(a: &FcArgs<'_>, row: usize, c0: usize, output: &mut [i8]) {
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

/// Output `c`'s int8 value from its accumulator: [`requant_rs_s8`] when its multiplier and shift
/// have the [`RightShiftRequant`] form (checked here, with sign bits: a few instructions), else
/// the general fixed-point function ([`super::requant::requantize`]); plus the offset, clamped.
#[inline(always)]
fn fc_requant_one(a: &FcArgs<'_>, c: usize, acc: i32) -> i8 {
    let p = a.params;
    let i = if a.multiplier.len() == 1 { 0 } else { c };
    let (m, s) = (a.multiplier.get(i).copied().unwrap_or(0), a.shift.get(i).copied().unwrap_or(0));
    let v = if (m | s.wrapping_add(31) | !s.wrapping_add(1)) >= 0 {
        requant_rs_s8(acc, m, s, 1 + 2 * p.output_offset)
    } else {
        super::requant::requantize(acc, m, s).wrapping_add(p.output_offset)
    };
    p.activation.apply(v) as i8
}

/// `ssat8(multiply_by_quantized_multiplier(acc, m, s) + offset)` for a `(m, s)` in the
/// [`RightShiftRequant`] form, with `one_off = 1 + 2 * offset`: the epilogue of [`fc_rows_asm`]
/// for one value, `((hi(acc·m ± 2^30) >> (e - 2)) + one_off) >> 1` saturated (8 instructions;
/// with a zero multiplier `hi` is 0 or -1, which any shift keeps, giving the offset).
#[inline(always)]
fn requant_rs_s8(acc: i32, m: i32, s: i32, one_off: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only instructions (no memory, no stack); `SSAT` may set the sticky Q flag,
    // so flags are not declared preserved.
    unsafe {
        asm!(
            "asr {hi}, {a}, #31",
            "orr {lo}, {c}, {hi}, lsl #31",
            "smlal {lo}, {hi}, {a}, {m}",
            "mvn {lo}, {s}",
            "sub {lo}, {lo}, #1",
            "asr {hi}, {hi}, {lo}",
            "add {hi}, {hi}, {oo}",
            "ssat {hi}, #8, {hi}, asr #1",
            a = in(reg) acc,
            m = in(reg) m,
            s = in(reg) s,
            c = in(reg) 0x4000_0000u32,
            oo = in(reg) one_off,
            hi = out(reg) r,
            lo = out(reg) _,
            options(pure, nomem, nostack),
        )
    };
    r
}

/// [`fully_connected_s8`]: with at least 4 outputs and the scratch, each input row
/// expanded once and multiplied by 4 filter rows at a time ([`dot_4x1`]), the last 1-3 rows in
/// pairs ([`dot_2x1`]); otherwise 2 rows at a time on the raw input ([`dot_2x1_direct`]). The
/// `input_depth % 4` last values go through a scalar loop; requantization through `scale`.
#[inline(never)]
fn fc_general(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u32],
    scale: &OutputScale<'_>,
) {
    let (depth, out_d) = (p.input_depth, p.output_depth);
    let words = super::scratch::padded_patch_len(depth) / 2;
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
                    Some(v) => {
                        o4.copy_from_slice(&clamp_bytes(pack4(v.map(ssat8)), lo4, hi4).to_le_bytes().map(|b| b as i8))
                    }
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
}

// ---------------------------------------------------------------------------------------------
// Depthwise: 4 channels per word.
// ---------------------------------------------------------------------------------------------

/// Largest filter (taps) whose extended weights [`depthwise_conv_s8`] keeps on the stack.
const DW_MAX_TAPS: usize = 25;

/// The filter taps `[first, end)` of one axis whose input coordinate `o * stride + k * dilation
/// - before` lies in `[0, size)`, and the input coordinate of `first`.
#[inline(always)]
fn tap_range(
    o: usize,
    stride: usize,
    dilation: usize,
    before: usize,
    size: usize,
    taps: usize,
) -> (usize, usize, usize) {
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

/// `acc[j] += w[j] * x[j]` for the 4 channels of one tap: `x` raw (the input offset is folded
/// into the accumulators' start), `we`/`wo` the tap's weights extended by `SXTB16`.
#[inline(always)]
fn mac4_raw(x: u32, we: u32, wo: u32, acc: [i32; 4]) -> [i32; 4] {
    let (xe, xo) = (sxtb16(x), sxtb16_ror8(x));
    [smlabb(xe, we, acc[0]), smlabb(xo, wo, acc[1]), smlatt(xe, we, acc[2]), smlatt(xo, wo, acc[3])]
}

/// The taps of a `kh` x `kw` window whose every tap lies in `buf` (the image or a gathered
/// window), 4 channels: tap `(r, q)` reads the word at `base + r * row_step + q * col_step`.
/// `acc` starts at `bias + offset * sum(weights)` (the offset folded out of the loop).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dw_window(
    buf: &[i8],
    base: usize,
    row_step: usize,
    col_step: usize,
    kh: usize,
    kw: usize,
    wexp: &[[u32; 2]; DW_MAX_TAPS],
    w3: &[[u32; 2]; 9],
    acc: [i32; 4],
) -> [i32; 4] {
    if kh == 3 && kw == 3 {
        if let Some(a) = dw_3x3_interior(buf, base, row_step, col_step, w3, acc) {
            return a;
        }
    }
    let mut acc = acc;
    for (r, wrow) in wexp.chunks(kw.max(1)).take(kh).enumerate() {
        let row = base + r * row_step;
        for (q, &[we, wo]) in wrow.iter().enumerate() {
            acc = mac4_raw(read4(buf, row + q * col_step), we, wo, acc);
        }
    }
    acc
}

/// The requantization the DSP epilogues run per output channel: [`RightShiftRequant`] with
/// `SMLAL` (what TFLite's converters produce), or [`ChannelRequant`] for other shifts.
trait DspRequant: Copy {
    /// The prepared form of a channel whose `(multiplier, shift)` the caller checked
    /// (`all_valid`); anything else gives a wrong value, never undefined behaviour.
    fn of(multiplier: i32, shift: i32) -> Self;
    /// `multiply_by_quantized_multiplier(acc, multiplier, shift)`.
    fn apply(self, acc: i32) -> i32;
}

impl DspRequant for RightShiftRequant {
    #[inline(always)]
    fn of(multiplier: i32, shift: i32) -> Self {
        Self::new(multiplier, shift).unwrap_or_default()
    }

    /// `((hi(acc·m ± 2^30) + round) >> shift`: 5 instructions (the 64-bit start value comes from
    /// the sign of `acc`: `ASR` gives the high word, `ORR` the low one).
    #[inline(always)]
    fn apply(self, acc: i32) -> i32 {
        let r: i32;
        // SAFETY: register-only instructions (no memory, no stack, no flags: SMLAL without S).
        // `shift` is in [1, 30] for every prepared value (0 for the default, also fine).
        unsafe {
            asm!(
                "asr {hi}, {a}, #31",
                "orr {lo}, {c}, {hi}, lsl #31",
                "smlal {lo}, {hi}, {a}, {m}",
                "add {hi}, {hi}, {round}",
                "asr {hi}, {hi}, {sh}",
                a = in(reg) acc,
                m = in(reg) self.multiplier,
                c = in(reg) 0x4000_0000u32,
                round = in(reg) self.round,
                sh = in(reg) self.shift,
                hi = out(reg) r,
                lo = out(reg) _,
                options(pure, nomem, nostack, preserves_flags),
            )
        };
        r
    }
}

/// [`RightShiftRequant::apply`] with `SMLAL` (5 instructions), for the other kernels' fast paths.
#[inline(always)]
pub(crate) fn requant_right_shift(r: RightShiftRequant, acc: i32) -> i32 {
    DspRequant::apply(r, acc)
}

impl DspRequant for ChannelRequant {
    #[inline(always)]
    fn of(multiplier: i32, shift: i32) -> Self {
        Self::new_valid(multiplier, shift)
    }
    #[inline(always)]
    fn apply(self, acc: i32) -> i32 {
        ChannelRequant::apply(&self, acc)
    }
}

/// Words of the stack buffer [`depthwise_3x3_s8`] gathers windows into: a whole padded plane
/// of 4 channels when it fits (small images), else strips of 3 rows.
const DW_BUF_WORDS: usize = 256;

/// Columns (words) of a strip in [`depthwise_3x3_s8`]'s buffer.
const DW_STRIP_W: usize = DW_BUF_WORDS / 3;

/// Fewest pixels [`depthwise_3x3_s8`] runs in place (fewer: the whole row goes through strips).
const DW_RUN_MIN: usize = 8;

/// One row of a depthwise strip, 4 channels per word: `left` words of `zp` (the input zero
/// point in every byte), `n` words read from `src` `step` bytes apart, then `zp` up to the end
/// of `dst`. Does nothing if `dst` is shorter than `left + n` or `src` than its `n` words.
#[inline(always)]
fn strip_row(dst: &mut [u32], src: &[i8], step: usize, left: usize, n: usize, zp: u32) {
    let right = dst.len().wrapping_sub(left).wrapping_sub(n);
    let src_need = if n == 0 { 0 } else { (n - 1).saturating_mul(step).saturating_add(4) };
    if left.checked_add(n).is_none_or(|e| e > dst.len()) || src_need > src.len() {
        return;
    }
    // SAFETY: writes `left + n + right = dst.len()` words from the start of `dst` (word aligned);
    // reads `n` words at `src + i * step`, the last ending at `(n - 1) * step + 4 <= src.len()`
    // (checked above; unaligned `LDR` is allowed on these cores). Every register written is
    // declared.
    unsafe {
        asm!(
            "cmp {left}, #0",
            "beq 3f",
            "2:",
            "str {zp}, [{dst}], #4",
            "subs {left}, {left}, #1",
            "bne 2b",
            "3:",
            "cmp {n}, #0",
            "beq 5f",
            "4:",
            "ldr {t}, [{src}]",
            "add {src}, {src}, {step}",
            "str {t}, [{dst}], #4",
            "subs {n}, {n}, #1",
            "bne 4b",
            "5:",
            "cmp {right}, #0",
            "beq 7f",
            "6:",
            "str {zp}, [{dst}], #4",
            "subs {right}, {right}, #1",
            "bne 6b",
            "7:",
            dst = inout(reg) dst.as_mut_ptr() => _,
            src = inout(reg) src.as_ptr() => _,
            step = in(reg) step,
            left = inout(reg) left => _,
            n = inout(reg) n => _,
            right = inout(reg) right => _,
            zp = in(reg) zp,
            t = out(reg) _,
            options(nostack),
        );
    }
}

/// Everything the 3x3 depthwise run ([`dw3x3_run`]) reads besides the input and output
/// pointers, for one group of 4 channels; `asm!` addresses the fields by their offsets
/// (`#[repr(C)]`, all 4-byte words).
#[repr(C)]
struct Dw3x3Ctx {
    /// Offset 0: the 9 taps' weights extended by `SXTB16`: `(w0, w2)`, `(w1, w3)`.
    w: [[u32; 2]; 9],
    /// Offset 72: per channel `(multiplier, round + output_offset << shift, shift)`: a
    /// [`RightShiftRequant`] with the output offset folded into the rounding term.
    rq: [[i32; 3]; 4],
    /// Offset 120, 124: the clamp bounds in every byte.
    lo4: u32,
    hi4: u32,
    /// Offset 128: bytes between filter rows in the buffer read.
    row_step: usize,
    /// Offset 132: added to the input pointer after a pixel's taps (which leave it two rows
    /// down) to reach the next pixel's window (wrapping: may be negative).
    next: usize,
    /// Offset 136: bytes between output pixels.
    out_step: usize,
    /// Offset 140: where the output pointer stops (one step past the last pixel).
    out_end: usize,
    /// Offset 144: the accumulators' start, `bias + input_offset * sum(weights)` per channel.
    acc0: [i32; 4],
    /// Whether the clamp is the whole int8 range (the run then skips it; not read by `asm!`).
    full_range: bool,
}

/// One filter row of [`dw3x3_run`]: 3 taps at `px`, `px + cs`, `px + 2 cs`, each one input word
/// (4 channels, raw) extended to `(x0, x2)` and `(x1, x3)` against the tap's extended weights
/// (`LDRD` from the context at byte `$w`), 4 `SMLABB`/`SMLATT`.
macro_rules! dw_run_row {
    ($w0:literal, $w1:literal, $w2:literal) => {
        concat!(
            "ldr {x}, [{px}]\n",
            "ldrd {we}, {wo}, [{ctx}, #",
            $w0,
            "]\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
            "ldr {x}, [{px}, {cs}]\n",
            "ldrd {we}, {wo}, [{ctx}, #",
            $w1,
            "]\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
            "ldr {x}, [{px}, {cs}, lsl #1]\n",
            "ldrd {we}, {wo}, [{ctx}, #",
            $w2,
            "]\n",
            "sxtb16 {xe}, {x}\n",
            "sxtb16 {x}, {x}, ror #8\n",
            "smlabb {a0}, {xe}, {we}, {a0}\n",
            "smlatt {a2}, {xe}, {we}, {a2}\n",
            "smlabb {a1}, {x}, {wo}, {a1}\n",
            "smlatt {a3}, {x}, {wo}, {a3}\n",
        )
    };
}

/// Requantizes accumulator `$a` with the context's channel at byte `$m` (multiplier; round and
/// shift follow): `SMLAL` from `±2^30`, the folded rounding and offset, the shift, `SSAT` to
/// int8 (8 instructions). `{we}` holds `2^30`.
macro_rules! dw_run_requant {
    ($a:literal, $m:literal, $k:literal) => {
        concat!(
            "ldr {xe}, [{ctx}, #",
            $m,
            "]\n",
            "asr {x}, ",
            $a,
            ", #31\n",
            "orr {wo}, {we}, {x}, lsl #31\n",
            "smlal {wo}, {x}, ",
            $a,
            ", {xe}\n",
            "ldrd {xe}, {wo}, [{ctx}, #",
            $k,
            "]\n",
            "add {x}, {x}, {xe}\n",
            "asr ",
            $a,
            ", {x}, {wo}\n",
            "ssat ",
            $a,
            ", #8, ",
            $a,
            "\n",
        )
    };
}

/// The `asm!` body of [`dw3x3_run_raw`], with (`clamp`) or without the per-byte clamp.
macro_rules! dw3x3_asm {
    ($px:expr, $po:expr, $cs:expr, $ctx:expr $(, $clamp:literal)?) => {
        asm!(
            "2:",
            "ldrd {a0}, {a1}, [{ctx}, #144]",
            "ldrd {a2}, {a3}, [{ctx}, #152]",
            dw_run_row!("0", "8", "16"),
            "ldr {x}, [{ctx}, #128]",
            "add {px}, {px}, {x}",
            dw_run_row!("24", "32", "40"),
            "ldr {x}, [{ctx}, #128]",
            "add {px}, {px}, {x}",
            dw_run_row!("48", "56", "64"),
            "mov {we}, #0x40000000",
            dw_run_requant!("{a0}", "72", "76"),
            dw_run_requant!("{a1}", "84", "88"),
            dw_run_requant!("{a2}", "96", "100"),
            dw_run_requant!("{a3}", "108", "112"),
            "bfi {a0}, {a1}, #8, #8",
            "bfi {a0}, {a2}, #16, #8",
            "bfi {a0}, {a3}, #24, #8",
            $(
                $clamp,
                "ldrd {x}, {xe}, [{ctx}, #120]",
                "ssub8 {wo}, {a0}, {x}",
                "sel {a0}, {a0}, {x}",
                "ssub8 {wo}, {xe}, {a0}",
                "sel {a0}, {a0}, {xe}",
            )?
            "str {a0}, [{po}]",
            "ldr {x}, [{ctx}, #136]",
            "add {po}, {po}, {x}",
            "ldr {x}, [{ctx}, #132]",
            "add {px}, {px}, {x}",
            "ldr {x}, [{ctx}, #140]",
            "cmp {po}, {x}",
            "bne 2b",
            px = inout(reg) $px => _,
            po = inout(reg) $po => _,
            cs = in(reg) $cs,
            ctx = in(reg) $ctx,
            a0 = out(reg) _,
            a1 = out(reg) _,
            a2 = out(reg) _,
            a3 = out(reg) _,
            x = out(reg) _,
            xe = out(reg) _,
            we = out(reg) _,
            wo = out(reg) _,
            options(nostack),
        )
    };
}

/// Runs the 3x3 depthwise of one channel group over `n >= 1` consecutive output pixels, all in
/// one `asm!` block (122 instructions per pixel, 127 with the clamp: 72 for the 36 MACs, 32 for
/// the 4 requantizations, the rest to pack, clamp per byte, store and step): the window of the
/// first pixel starts at `px` (tap `(r, q)` at `r * ctx.row_step + q * col_step`), each next
/// one `2 * ctx.row_step + ctx.next` further; the 4 int8 results of pixel `i` go to `po + i *
/// ctx.out_step`. Sets `ctx.out_end`.
///
/// # Safety
/// Every tap word of the `n` windows is readable and every 4-byte output writable (pixel steps
/// are non-negative); `ctx.out_step > 0`.
#[inline(always)]
unsafe fn dw3x3_run_raw(px: *const i8, col_step: usize, po: *mut i8, n: usize, ctx: &mut Dw3x3Ctx) {
    ctx.out_end = po.wrapping_add(n * ctx.out_step) as usize;
    let c = ctx as *const Dw3x3Ctx;
    // SAFETY: the caller's contract; `ctx` is read at its `#[repr(C)]` fields' offsets (word
    // aligned for `LDRD`); the loop ends when the output pointer, starting `n * out_step` before
    // `out_end`, reaches it. Every register written is declared.
    unsafe {
        if ctx.full_range {
            dw3x3_asm!(px, po, col_step, c);
        } else {
            dw3x3_asm!(px, po, col_step, c, "");
        }
    }
}

/// [`dw3x3_run_raw`] on `buf` from `start` and `out` from `out_start`, after checking that
/// every read and write of the `n` pixels lies inside them (else nothing runs: the callers'
/// geometry rules it out).
#[inline(always)]
fn dw3x3_run(
    buf: &[i8],
    start: usize,
    col_step: usize,
    out: &mut [i8],
    out_start: usize,
    n: usize,
    ctx: &mut Dw3x3Ctx,
) {
    if n == 0 || ctx.out_step == 0 {
        return;
    }
    let pixel_step = ctx.next.wrapping_add(2usize.wrapping_mul(ctx.row_step));
    let reads_end = (n - 1)
        .checked_mul(pixel_step)
        .and_then(|v| v.checked_add(start))
        .and_then(|v| v.checked_add(2 * ctx.row_step))
        .and_then(|v| v.checked_add(2 * col_step))
        .and_then(|v| v.checked_add(4));
    let writes_end =
        (n - 1).checked_mul(ctx.out_step).and_then(|v| v.checked_add(out_start)).and_then(|v| v.checked_add(4));
    if reads_end.is_none_or(|e| e > buf.len()) || writes_end.is_none_or(|e| e > out.len()) || ctx.row_step > buf.len() {
        return;
    }
    // SAFETY: pixel `i < n` reads the words at `start + i * pixel_step + r * row_step + q *
    // col_step` (r, q < 3) of `buf`, the farthest ending at `reads_end <= buf.len()` (checked;
    // pixel steps are non-negative: a wrapped `next` only undoes part of the two row steps),
    // and writes the word at `out_start + i * out_step` of `out`, the last ending at `writes_end
    // <= out.len()` (checked).
    unsafe { dw3x3_run_raw(buf.as_ptr().add(start), col_step, out.as_mut_ptr().add(out_start), n, ctx) };
}

/// A run of output pixels of a row in [`depthwise_3x3_s8`], the same for every row and channel
/// group: read in place (`strip == false`: every window inside the image; only for rows whose
/// filter rows are all inside), or through a strip of `width` columns whose in-image columns
/// are `[q0, q1)`. `first_col`: the input column of the first pixel's window (in place), or of
/// strip column `q0`.
#[derive(Clone, Copy, Default)]
struct DwSegment {
    ox: u16,
    n: u16,
    strip: bool,
    width: u16,
    q0: u16,
    q1: u16,
    first_col: u16,
}

/// Segments per row kind in [`depthwise_3x3_s8`] (wider rows take the general path).
const DW_MAX_SEGMENTS: usize = 12;

/// The segments of a row: pixels `[run_lo, run_hi)` in place (if any), the others in strips.
fn dw_segments(
    p: &DepthwiseConvParams,
    run_lo: usize,
    run_hi: usize,
    segs: &mut [DwSegment; DW_MAX_SEGMENTS],
) -> Option<usize> {
    let (ow, iw) = (p.output.w, p.input.w);
    let sw = p.stride.w.max(1);
    let span = 2 * p.dilation.w;
    let per_strip = (DW_STRIP_W - 1 - span) / sw + 1;
    let mut count = 0;
    let mut ox = 0;
    let small = |v: usize| u16::try_from(v).ok();
    while ox < ow {
        let (n, seg) = if ox == run_lo && run_hi > run_lo {
            let n = run_hi - run_lo;
            let first_col = small(ox * sw - p.padding.left)?;
            (n, DwSegment { ox: small(ox)?, n: small(n)?, first_col, ..Default::default() })
        } else {
            let end = if ox < run_lo { run_lo } else { ow };
            let n = (end - ox).min(per_strip);
            let width = (n - 1) * sw + span + 1;
            let ix_left = (ox * sw) as isize - p.padding.left as isize;
            let q0 = ((-ix_left).max(0) as usize).min(width);
            let q1 = ((iw as isize - ix_left).max(0) as usize).min(width).max(q0);
            let first_col = small((ix_left + q0 as isize).max(0) as usize)?;
            let seg = DwSegment {
                ox: small(ox)?,
                n: small(n)?,
                strip: true,
                width: small(width)?,
                q0: small(q0)?,
                q1: small(q1)?,
                first_col,
            };
            (n, seg)
        };
        *segs.get_mut(count)? = seg;
        count += 1;
        ox += n;
    }
    Some(count)
}

/// The 3x3 depthwise convolution (depth multiplier 1, any stride and dilation) of
/// [`depthwise_conv_s8`] with every group of 4 channels in [`dw3x3_run`]: on rows whose filter
/// rows all lie inside the image, the pixels whose window lies inside too in one run on the
/// input in place (when there are at least [`DW_RUN_MIN`]); every other pixel through a strip:
/// its filter rows' words copied to the stack ([`strip_row`]), the input zero point wherever a
/// tap falls in the padding (so it adds `w * (zp + offset) = 0`; the offset is folded into the
/// accumulators' start). The column geometry (which pixels run where) is the same for every
/// row and channel group and is computed once. Preconditions (else `false`, nothing written):
/// every channel's requantization a [`RightShiftRequant`] whose rounding term can take the
/// output offset (`shift >= -23`, or a zero multiplier), windows of at most [`DW_STRIP_W`]
/// columns, rows of at most [`DW_MAX_SEGMENTS`] segments. Not inlined: its stack buffer stays
/// out of its callers' frames.
#[inline(never)]
fn depthwise_3x3_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let o_off = p.output_offset;
    // (multiplier, round + offset << shift, shift): |offset| << 22 plus the high word stays in i32.
    let folded = |ch: usize| -> Option<[i32; 3]> {
        let (&m, &s) = (quant.multiplier.get(ch)?, quant.shift.get(ch)?);
        let r = RightShiftRequant::new(m, s)?;
        (r.shift <= 22).then(|| [r.multiplier, r.round.wrapping_add(o_off << r.shift), r.shift as i32])
    };
    let sw = p.stride.w.max(1);
    let span_w = 2 * p.dilation.w;
    if p.filter.h != 3 || p.filter.w != 3 || span_w + 1 > DW_STRIP_W || (0..c).any(|ch| folded(ch).is_none()) {
        return false;
    }
    let in_image = ind.h * ind.w * c;
    let out_image = outd.h * outd.w * c;
    if in_image == 0 || out_image == 0 {
        return true;
    }
    // Output columns whose whole window lies inside the image: [ox_lo, ox_hi).
    let ox_lo = p.padding.left.div_ceil(sw).min(outd.w);
    let ox_hi =
        if ind.w + p.padding.left > span_w { (ind.w + p.padding.left - span_w).div_ceil(sw).min(outd.w) } else { 0 };
    let (run_lo, run_hi) = if ox_hi >= ox_lo + DW_RUN_MIN { (ox_lo, ox_hi) } else { (outd.w, outd.w) };
    let mut full_segs = [DwSegment::default(); DW_MAX_SEGMENTS];
    let mut edge_segs = [DwSegment::default(); DW_MAX_SEGMENTS];
    let (Some(n_full), Some(n_edge)) =
        (dw_segments(p, run_lo, run_hi, &mut full_segs), dw_segments(p, outd.w, outd.w, &mut edge_segs))
    else {
        return false;
    };
    let off = p.input_offset;
    let zp4 = ((-off) as u8 as u32).wrapping_mul(0x0101_0101);
    let row_step = p.dilation.h * ind.w * c;
    let col_step = p.dilation.w * c;
    let span_h = (2 * p.dilation.h) as isize;
    // The padded plane the windows cover: rows (and columns) from `-padding` on, when it fits.
    let hp = (outd.h - 1) * p.stride.h + span_h as usize + 1;
    let wp = (outd.w - 1) * sw + span_w + 1;
    let plane = (hp.checked_mul(wp).is_some_and(|n| n <= DW_BUF_WORDS)).then_some((hp, wp));
    let mut strip = [0u32; DW_BUF_WORDS];
    let mut ctx = Dw3x3Ctx {
        w: [[0; 2]; 9],
        rq: [[0; 3]; 4],
        lo4: (p.activation.min as u8 as u32).wrapping_mul(0x0101_0101),
        hi4: (p.activation.max as u8 as u32).wrapping_mul(0x0101_0101),
        row_step,
        next: 0,
        out_step: c,
        out_end: 0,
        acc0: [0; 4],
        full_range: p.activation.min <= -128 && p.activation.max >= 127,
    };
    for (in_b, out_b) in input.chunks_exact(in_image.max(1)).zip(output.chunks_exact_mut(out_image.max(1))) {
        for ch in (0..c / 4).map(|g| 4 * g) {
            // The weights extended, and summed per channel in halfword pairs (9 x 127 fits).
            let (mut sum_e, mut sum_o) = (0u32, 0u32);
            for (t, e) in ctx.w.iter_mut().enumerate() {
                let w = word(filter.get(t * c + ch..).unwrap_or(&[]));
                *e = [sxtb16(w), sxtb16_ror8(w)];
                sum_e = sadd16(sum_e, e[0]);
                sum_o = sadd16(sum_o, e[1]);
            }
            let wsum =
                [sum_e as i16 as i32, sum_o as i16 as i32, (sum_e >> 16) as i16 as i32, (sum_o >> 16) as i16 as i32];
            for j in 0..4 {
                ctx.acc0[j] =
                    bias.and_then(|b| b.get(ch + j)).copied().unwrap_or(0).wrapping_add(wsum[j].wrapping_mul(off));
                ctx.rq[j] = folded(ch + j).unwrap_or_default();
            }
            if let Some((hp, wp)) = plane {
                // Small image: the group's padded plane once, then one run per output row.
                let q0 = p.padding.left.min(wp);
                let q1 = (p.padding.left + ind.w).min(wp).max(q0);
                for (j, prow) in strip.chunks_exact_mut(wp.max(1)).take(hp).enumerate() {
                    let iy = j as isize - p.padding.top as isize;
                    if iy >= 0 && iy < ind.h as isize {
                        let first = iy as usize * ind.w * c + ch;
                        strip_row(prow, in_b.get(first..).unwrap_or(&[]), c, q0, q1 - q0, zp4);
                    } else {
                        strip_row(prow, &[], c, wp, 0, zp4);
                    }
                }
                ctx.row_step = 4 * wp * p.dilation.h;
                ctx.next = (4 * sw).wrapping_sub(2 * ctx.row_step);
                let cs = 4 * p.dilation.w;
                // The last row's last window and output word: every other lies before them.
                let last_read =
                    4 * ((outd.h - 1) * p.stride.h * wp + (outd.w - 1) * sw) + 2 * ctx.row_step + 2 * cs + 4;
                let last_write = (outd.h * outd.w - 1) * c + ch + 4;
                if last_read <= 4 * hp * wp && 4 * hp * wp <= 4 * strip.len() && last_write <= out_b.len() {
                    let plane = strip.as_ptr() as *const i8;
                    let out_p = out_b.as_mut_ptr();
                    for oy in 0..outd.h {
                        // SAFETY: the row's windows start at plane word `oy * sh * wp + ox * sw`
                        // and reach `2 * row_step + 2 * cs + 4` bytes further, at most to
                        // `last_read <= 4 * hp * wp`, inside `strip`; its outputs end at most at
                        // `last_write <= out_b.len()` (checked above); `out_step = c >= 4`.
                        unsafe {
                            dw3x3_run_raw(
                                plane.add(4 * oy * p.stride.h * wp),
                                cs,
                                out_p.add(oy * outd.w * c + ch),
                                outd.w,
                                &mut ctx,
                            )
                        };
                    }
                }
                continue;
            }
            for oy in 0..outd.h {
                // Input row of filter row 0 (may be in the padding).
                let iy_top = (oy * p.stride.h) as isize - p.padding.top as isize;
                let full = iy_top >= 0 && iy_top + span_h < ind.h as isize;
                let segs = if full { full_segs.get(..n_full) } else { edge_segs.get(..n_edge) }.unwrap_or(&[]);
                let row_out = oy * outd.w * c + ch;
                for seg in segs {
                    let (seg_ox, seg_n, width) = (seg.ox as usize, seg.n as usize, seg.width as usize);
                    let (q0, q1, first_col) = (seg.q0 as usize, seg.q1 as usize, seg.first_col as usize);
                    let out_start = row_out + seg_ox * c;
                    if !seg.strip {
                        ctx.row_step = row_step;
                        ctx.next = (sw * c).wrapping_sub(2 * row_step);
                        let start = (iy_top as usize * ind.w + first_col) * c + ch;
                        dw3x3_run(in_b, start, col_step, out_b, out_start, seg_n, &mut ctx);
                        continue;
                    }
                    for (r, srow) in strip.chunks_exact_mut(width.max(1)).take(3).enumerate() {
                        let iy = iy_top + (r * p.dilation.h) as isize;
                        if iy >= 0 && iy < ind.h as isize {
                            let first = (iy as usize * ind.w + first_col) * c + ch;
                            strip_row(srow, in_b.get(first..).unwrap_or(&[]), c, q0, q1 - q0, zp4);
                        } else {
                            strip_row(srow, &[], c, width, 0, zp4);
                        }
                    }
                    ctx.row_step = 4 * width;
                    ctx.next = (4 * sw).wrapping_sub(8 * width);
                    dw3x3_run(bytemuck::cast_slice(&strip[..]), 0, 4 * p.dilation.w, out_b, out_start, seg_n, &mut ctx);
                }
            }
        }
    }
    if c % 4 != 0 {
        dw_rest_channels::<RightShiftRequant>(p, quant, input, filter, bias, output);
    }
    true
}

/// Depthwise convolution, depth multiplier 1: channels in groups of 4 (one word of input and of
/// weights per tap: `SXTB16` x 2, `SMLABB`/`SMLATT` x 4), the group's weights extended once
/// into a stack array and reused for every output pixel, the input offset folded into the
/// accumulators' start (`bias + offset * sum(weights)`). A pixel whose window lies inside the
/// image reads the input in place (3x3: one unrolled `asm!` block of 75 instructions); a pixel
/// whose window meets the padding gathers its in-image taps into a window on the stack whose
/// other taps hold the input zero point (so they add `w * (zp + offset) = 0`), then runs the
/// same code. Requantization: [`RightShiftRequant`] (5 instructions) when every channel has that
/// form, else [`ChannelRequant`]; the 4 results are saturated (`SSAT`), packed, clamped per byte
/// (`SSUB8` + `SEL`, skipped for the full int8 range) and stored as one word. The last
/// `in_c % 4` channels go through a per-channel loop. No scratch. Preconditions (else `false`,
/// nothing written): `depth_multiplier == 1`, at most 25 taps, every multiplier and shift within
/// [`ChannelRequant`]'s contract.
pub(crate) fn depthwise_conv_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let taps = p.filter.h * p.filter.w;
    if p.depth_multiplier != 1 || taps > DW_MAX_TAPS || taps == 0 {
        return false;
    }
    if depthwise_3x3_s8(p, quant, input, filter, bias, output) {
        return true;
    }
    let (m, s) = (quant.multiplier, quant.shift);
    if RightShiftRequant::all_valid(m, s) {
        depthwise_s8_with::<RightShiftRequant>(p, quant, input, filter, bias, output);
    } else if ChannelRequant::all_valid(m, s) {
        depthwise_s8_with::<ChannelRequant>(p, quant, input, filter, bias, output);
    } else {
        return false;
    }
    true
}

/// [`depthwise_conv_s8`] with the requantization `R` (preconditions checked by the caller).
#[inline(never)]
fn depthwise_s8_with<R: DspRequant>(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) {
    let (ind, outd) = (p.input, p.output);
    let (kh, kw) = (p.filter.h, p.filter.w);
    let taps = kh * kw;
    let c = ind.c;
    let in_image = ind.h * ind.w * c;
    let out_row_len = outd.w * c;
    let out_image = outd.h * out_row_len;
    if in_image == 0 || out_image == 0 {
        return;
    }
    let off = p.input_offset;
    // The input zero point (`-offset`, within int8) in every byte: the padding of a gathered window.
    let zp4 = ((-off) as u8 as u32).wrapping_mul(0x0101_0101);
    let row_step = p.dilation.h * ind.w * c; // input distance between filter rows
    let col_step = p.dilation.w * c; // between filter columns
    let bias_of = |ch: usize| bias.and_then(|b| b.get(ch)).copied().unwrap_or(0);
    let rq_of = |ch: usize| match (quant.multiplier.get(ch), quant.shift.get(ch)) {
        (Some(&m), Some(&s)) => R::of(m, s),
        _ => R::of(0, 0),
    };
    let o_off = p.output_offset;
    let full_range = p.activation.min <= -128 && p.activation.max >= 127;
    // The clamp bounds (within int8, validated) in every byte, for `clamp_bytes`.
    let lo4 = (p.activation.min as u8 as u32).wrapping_mul(0x0101_0101);
    let hi4 = (p.activation.max as u8 as u32).wrapping_mul(0x0101_0101);
    // Output columns whose whole window lies inside the image: `ox_lo <= ox < ox_hi`.
    let span_w = (kw - 1) * p.dilation.w; // window width - 1
    let sw = p.stride.w.max(1);
    let ox_lo = p.padding.left.div_ceil(sw);
    let ox_hi = if ind.w + p.padding.left > span_w { (ind.w + p.padding.left - span_w).div_ceil(sw) } else { 0 };
    for (in_b, out_b) in input.chunks_exact(in_image.max(1)).zip(output.chunks_exact_mut(out_image.max(1))) {
        for ch in (0..c / 4).map(|g| 4 * g) {
            let mut wexp = [[0u32; 2]; DW_MAX_TAPS];
            let mut wsum = [0i32; 4];
            for (t, e) in wexp.iter_mut().take(taps).enumerate() {
                let w = word(filter.get(t * c + ch..).unwrap_or(&[]));
                *e = [sxtb16(w), sxtb16_ror8(w)];
                for (j, s) in wsum.iter_mut().enumerate() {
                    *s += ((w >> (8 * j)) as u8 as i8) as i32;
                }
            }
            let mut w3 = [[0u32; 2]; 9];
            w3.copy_from_slice(&wexp[..9]);
            // The offset folded out: every tap of every window contributes `w * (x + off)`.
            let acc0 = [0, 1, 2, 3].map(|j| bias_of(ch + j).wrapping_add(wsum[j].wrapping_mul(off)));
            let rq = [rq_of(ch), rq_of(ch + 1), rq_of(ch + 2), rq_of(ch + 3)];
            for (oy, out_row) in out_b.chunks_exact_mut(out_row_len.max(1)).enumerate() {
                let (ky0, ky1, iy0) = tap_range(oy, p.stride.h, p.dilation.h, p.padding.top, ind.h, kh);
                let full_rows = ky0 == 0 && ky1 == kh;
                for (ox, px) in out_row.chunks_exact_mut(c.max(1)).enumerate() {
                    let acc = if full_rows && ox >= ox_lo && ox < ox_hi {
                        let base = (iy0 * ind.w + ox * sw - p.padding.left) * c + ch;
                        dw_window(in_b, base, row_step, col_step, kh, kw, &wexp, &w3, acc0)
                    } else {
                        // The window meets the padding: its in-image taps, zero points elsewhere.
                        let (kx0, kx1, ix0) = tap_range(ox, sw, p.dilation.w, p.padding.left, ind.w, kw);
                        let base = (iy0 * ind.w + ix0) * c + ch; // first in-image tap
                        let mut win = [zp4; DW_MAX_TAPS];
                        for (r, wrow) in win.chunks_mut(kw.max(1)).skip(ky0).take(ky1 - ky0).enumerate() {
                            let row = base + r * row_step;
                            for (q, d) in wrow.iter_mut().skip(kx0).take(kx1 - kx0).enumerate() {
                                *d = read4(in_b, row + q * col_step);
                            }
                        }
                        let win: &[i8] = bytemuck::cast_slice(&win[..]);
                        dw_window(win, 0, 4 * kw, 4, kh, kw, &wexp, &w3, acc0)
                    };
                    let v = [0, 1, 2, 3].map(|j| ssat8(rq[j].apply(acc[j]).wrapping_add(o_off)));
                    let mut packed = pack4(v);
                    if !full_range {
                        packed = clamp_bytes(packed, lo4, hi4);
                    }
                    if let Some(o) = px.get_mut(ch..ch + 4) {
                        o.copy_from_slice(&packed.to_le_bytes().map(|b| b as i8));
                    }
                }
            }
        }
    }
    if c % 4 != 0 {
        dw_rest_channels::<R>(p, quant, input, filter, bias, output);
    }
}

/// The channels past the last group of 4 (`in_c % 4`), one at a time (requantization `R`).
fn dw_rest_channels<R: DspRequant>(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) {
    let (ind, outd) = (p.input, p.output);
    let (kh, kw) = (p.filter.h, p.filter.w);
    let c = ind.c;
    let in_image = ind.h * ind.w * c;
    let out_image = outd.h * outd.w * c;
    if in_image == 0 || out_image == 0 {
        return;
    }
    let off = p.input_offset;
    let o_off = p.output_offset;
    let row_step = p.dilation.h * ind.w * c;
    let col_step = p.dilation.w * c;
    let bias_of = |ch: usize| bias.and_then(|b| b.get(ch)).copied().unwrap_or(0);
    let rq_of = |ch: usize| match (quant.multiplier.get(ch), quant.shift.get(ch)) {
        (Some(&m), Some(&s)) => R::of(m, s),
        _ => R::of(0, 0),
    };
    for (in_b, out_b) in input.chunks_exact(in_image.max(1)).zip(output.chunks_exact_mut(out_image.max(1))) {
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
                        *o = p.activation.apply(rq.apply(acc).wrapping_add(o_off)) as i8;
                    }
                }
            }
        }
    }
}

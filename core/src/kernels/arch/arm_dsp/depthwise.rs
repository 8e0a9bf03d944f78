//! The Arm DSP depthwise convolution ([`depthwise_conv_s8`]): 4 channels per word (`SXTB16` +
//! `SMLABB`/`SMLATT`), the 3x3 interior unrolled; the 3x3 stride-1 kernel on tap pairs is in
//! `depthwise_3x3_s1`, the 3x3 strip kernel in `depthwise_3x3`.

use super::depthwise_3x3::depthwise_3x3_s8;
use super::depthwise_3x3_s1::depthwise_3x3_s1_s8;
use super::{DspRequant, clamp_bytes, pack4, smlabb, smlatt, ssat8, sxtb16, sxtb16_ror8, word};
use crate::kernels::PerChannelQuant;
use crate::kernels::arch::requant::{ChannelRequant, RightShiftRequant};
use crate::kernels::arch::scratch::{DW_S1_PLANE_MAX_WORDS, dw3x3_scratch_words, scratch_words};
use crate::kernels::params::DepthwiseConvParams;
use core::arch::asm;

/// Largest filter (taps) whose extended weights [`depthwise_conv_s8`] keeps on the stack.
const DW_MAX_TAPS: usize = 25;

/// The filter taps `[first, end)` of one axis whose input coordinate `o * stride + k * dilation
/// - before` lies in `[0, size)`, and the input coordinate of `first`.
#[inline(always)]
pub(super) fn tap_range(
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
/// `in_c % 4` channels go through a per-channel loop. Preconditions (else `false`, nothing
/// written): `depth_multiplier == 1`, at most 25 taps, every multiplier and shift within
/// [`ChannelRequant`]'s contract. First tried for a 3x3 filter: the stride-1 kernel on tap
/// pairs (`depthwise_3x3_s1`), then the strip kernel (`depthwise_3x3`), each declining outside
/// its own preconditions; both widen their input into `scratch`
/// ([`dw3x3_scratch_words`] words), or into a stack buffer when `scratch` is shorter (a direct
/// call without the planned scratch).
pub(crate) fn depthwise_conv_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scratch: &mut [u8],
) -> bool {
    let taps = p.filter.h * p.filter.w;
    if p.depth_multiplier != 1 || taps > DW_MAX_TAPS || taps == 0 {
        return false;
    }
    if p.filter.h == 3 && p.filter.w == 3 {
        let need = dw3x3_scratch_words(
            p.input.c,
            (p.output.h, p.output.w),
            (p.stride.h, p.stride.w),
            (p.dilation.h, p.dilation.w),
            (p.padding.top, p.padding.left),
        );
        // The stride-1 kernel on tap pairs, else the strip kernel (`false` when both decline).
        let mut run = |buf: &mut [u32]| {
            depthwise_3x3_s1_s8(p, quant, input, filter, bias, output, buf)
                || depthwise_3x3_s8(p, quant, input, filter, bias, output, buf)
        };
        let done = match scratch_words(scratch).get_mut(..need) {
            Some(buf) => run(buf),
            None => with_stack_buffer(run),
        };
        if done {
            return true;
        }
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

/// Runs `f` with a buffer on the stack (3 KB) in place of the planned scratch (a direct call
/// without it). Not inlined: the buffer stays out of the frame of the interpreter's path, which
/// passes scratch.
#[inline(never)]
#[cold]
fn with_stack_buffer(f: impl FnOnce(&mut [u32]) -> bool) -> bool {
    let mut buf = [0u32; 4 * DW_S1_PLANE_MAX_WORDS];
    f(&mut buf)
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
pub(super) fn dw_rest_channels<R: DspRequant>(
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

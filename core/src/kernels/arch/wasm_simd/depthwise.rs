//! The wasm SIMD depthwise convolution ([`depthwise_conv_s8`]): 16 channels per block, taps
//! paired and interleaved for `i32x4.dot_i16x8_s`, padding read as the zero point.

use core::arch::wasm32::*;

use super::{LaneRequant, load16, store_partial, store8, store16};
use crate::kernels::PerChannelQuant;
use crate::kernels::arch::requant::ChannelRequant;
use crate::kernels::params::DepthwiseConvParams;
use crate::kernels::window::input_coord;

/// Most filter taps [`depthwise_conv_s8`] handles (7x7); larger filters run the reference.
const DW_MAX_TAPS: usize = 49;

/// Tap offset standing for a tap in the padding.
const DW_PAD: usize = usize::MAX;

/// Depthwise convolution with depth multiplier 1, channels innermost, in blocks of 16 channels
/// (one `v128` of input bytes per tap). The taps go two by two: the 16 input bytes of both taps
/// are interleaved (`x_t0[c], x_t1[c]` side by side), widened to int16 and multiplied with the
/// weights laid out the same way by `i32x4.dot_i16x8_s`, which gives each channel's sum over the
/// two taps in its own int32 lane (exact: `|x w| <= 2^14`); an odd last tap is paired with a zero
/// weight. The input offset is not added per tap: a tap in the padding reads the input zero
/// point (`x = -offset`) instead of being skipped, so every pixel's sum is
/// `sum_t w_t x_t + offset * sum_t w_t`, where the padded taps give `w (-offset) + offset w = 0`,
/// exactly the reference's `sum_{t in image} w_t (x_t + offset)` (mod 2^32, as its wrapping sum);
/// `bias + offset * sum_t w_t` is computed once per block (with the same dot product). Per block,
/// the widened weights, those starting values and the requantization ([`LaneRequant`], 4
/// channels per `i32x4`) are prepared once; per pixel, the taps' input offsets (base plus a
/// per-layer table for pixels whose window is inside the image, tap by tap at the borders). A
/// block of at most 8 channels (`c = 8`, or the tail) computes only 8 lanes; a partial block
/// computes its lanes all the same (lanes past its channels read the next pixel's bytes, zeros
/// past the end of the data) and stores only its channels. No scratch
/// (about 1.6 KB of stack for the weights). Preconditions (else `false`, nothing written):
/// `depth_multiplier == 1`, at most [`DW_MAX_TAPS`] taps, every multiplier and shift within
/// [`ChannelRequant`]'s contract.
pub(crate) fn depthwise_conv_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let (ms, ss) = (quant.multiplier, quant.shift);
    let (fh, fw) = (p.filter.h, p.filter.w);
    let taps = fh * fw;
    if p.depth_multiplier != 1 || taps > DW_MAX_TAPS || !ChannelRequant::all_valid(ms, ss) {
        return false;
    }
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let in_image = ind.h * ind.w * c;
    let out_image = outd.h * outd.w * c;
    if in_image == 0 || out_image == 0 || taps == 0 {
        return true;
    }
    let mut rel = [0usize; DW_MAX_TAPS + 1];
    for (t, r) in rel.iter_mut().take(taps).enumerate() {
        let (ky, kx) = (t / fw.max(1), t % fw.max(1));
        *r = (ky * p.dilation.h * ind.w + kx * p.dilation.w) * c;
    }
    let rel_max = rel.iter().take(taps).copied().max().unwrap_or(0);
    let g = DwGeometry { p, ms, ss, input, filter, bias, taps, rel: &rel, rel_max };
    if c <= 8 {
        dw_narrow(&g, output);
        return true;
    }
    for c0 in (0..c).step_by(16) {
        let n = (c - c0).min(16);
        // A block of at most 8 channels computes only the first 8 lanes.
        if n <= 8 {
            dw_block::<2>(&g, output, c0, n);
        } else {
            dw_block::<4>(&g, output, c0, n);
        }
    }
    true
}

/// What every channel block of [`depthwise_conv_s8`] shares: the layer, its operands and the
/// taps' offsets.
#[derive(Clone, Copy)]
struct DwGeometry<'a> {
    p: &'a DepthwiseConvParams,
    ms: &'a [i32],
    ss: &'a [i32],
    input: &'a [i8],
    filter: &'a [i8],
    bias: Option<&'a [i32]>,
    taps: usize,
    /// Offsets of the taps from tap (0, 0), for pixels whose window is inside the image (and a
    /// 0 after the last tap: an odd last tap's partner, whose weights are 0, reads tap (0, 0)).
    rel: &'a [usize; DW_MAX_TAPS + 1],
    /// The largest of `rel`.
    rel_max: usize,
}

/// The channels `c0..c0 + n` (`n <= 4 * G`) of [`depthwise_conv_s8`], `G` groups of 4 channels
/// (with `G = 2`, only the low 8 bytes of each tap are used).
#[inline(always)]
fn dw_block<const G: usize>(g: &DwGeometry<'_>, output: &mut [i8], c0: usize, n: usize) {
    let DwGeometry { p, ms, ss, input, filter, bias, taps, .. } = *g;
    let (ind, outd) = (p.input, p.output);
    let (c, fh) = (ind.c, p.filter.h);
    let (in_image, out_image) = ((ind.h * ind.w * c).max(1), (outd.h * outd.w * c).max(1));
    let pairs = taps.div_ceil(2);
    let zp = i8x16_splat((-p.input_offset) as i8); // the input zero point, in [-128, 127]
    let off = i16x8_splat(p.input_offset as i16); // in [-127, 128]
    let (lo, hi, out_off) =
        (i32x4_splat(p.activation.min), i32x4_splat(p.activation.max), i32x4_splat(p.output_offset));
    let coord_y = |oy: usize, ky: usize| input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h);
    // The block's weights, tap pairs interleaved and widened as the inputs will be.
    let mut wv = [[i32x4_splat(0); G]; DW_MAX_TAPS.div_ceil(2)];
    for (j, w) in wv.iter_mut().take(pairs).enumerate() {
        let w0 = load16_at(filter, 2 * j * c + c0);
        let w1 = if 2 * j + 1 < taps { load16_at(filter, (2 * j + 1) * c + c0) } else { i8x16_splat(0) };
        *w = pair_widen::<G>(w0, w1);
    }
    let unused = LaneRequant::new(&[], &[], None, 0);
    let rq: [LaneRequant; G] =
        core::array::from_fn(|k| if 4 * k < n { LaneRequant::new(ms, ss, bias, c0 + 4 * k) } else { unused });
    let start: [v128; G] = core::array::from_fn(|k| {
        wv.iter().take(pairs).fold(rq[k].bias, |a, w| i32x4_add(a, i32x4_dot_i16x8(w[k], off)))
    });
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        let mut offs = [DW_PAD; DW_MAX_TAPS + 1];
        for oy in 0..outd.h {
            let row_in = coord_y(oy, 0).is_some() && coord_y(oy, fh.saturating_sub(1)).is_some();
            for ox in 0..outd.w {
                let last = dw_tap_offsets(g, oy, ox, row_in, c0, &mut offs);
                let mut acc = start;
                match last {
                    // Inside the image, all 16 bytes of every tap (the entries up to `taps`,
                    // none above `last`) inside `in_b`: loads without checks.
                    Some(m) if m.checked_add(16).is_some_and(|e| e <= in_b.len()) => {
                        for (w, o2) in wv.iter().take(pairs).zip(offs.chunks_exact(2)) {
                            // SAFETY: `o2` are entries `0..=taps` of `offs`, which
                            // `dw_tap_offsets` set to `base + rel[t]` <= `m` (rel[taps] = 0), and
                            // `m + 16 <= in_b.len()`.
                            let (x0, x1) = unsafe { (load16_unchecked(in_b, o2[0]), load16_unchecked(in_b, o2[1])) };
                            let x = pair_widen::<G>(x0, x1);
                            for ((a, &x), &w) in acc.iter_mut().zip(&x).zip(w) {
                                *a = i32x4_add(*a, i32x4_dot_i16x8(x, w));
                            }
                        }
                    }
                    _ => {
                        let tap = |o: usize| if o == DW_PAD { zp } else { load16_at(in_b, o) };
                        for (w, o2) in wv.iter().take(pairs).zip(offs.chunks_exact(2)) {
                            let x = pair_widen::<G>(tap(o2[0]), tap(o2[1]));
                            for ((a, &x), &w) in acc.iter_mut().zip(&x).zip(w) {
                                *a = i32x4_add(*a, i32x4_dot_i16x8(x, w));
                            }
                        }
                    }
                }
                let r: [v128; G] =
                    core::array::from_fn(|k| i32x4_min(i32x4_max(i32x4_add(rq[k].apply(acc[k]), out_off), lo), hi));
                let o = (oy * outd.w + ox) * c + c0;
                if G == 2 {
                    let bytes = i8x16_narrow_i16x8(i16x8_narrow_i32x4(r[0], r[G - 1]), i16x8_splat(0));
                    match out_b.get_mut(o..o + 8) {
                        Some(d) if n == 8 => store8(d, bytes),
                        _ => store_partial(out_b.get_mut(o..o + n).unwrap_or(&mut []), bytes),
                    }
                } else {
                    let bytes =
                        i8x16_narrow_i16x8(i16x8_narrow_i32x4(r[0], r[1 % G]), i16x8_narrow_i32x4(r[2 % G], r[3 % G]));
                    match out_b.get_mut(o..o + 16) {
                        Some(d) if n == 16 => store16(d, bytes),
                        _ => store_partial(out_b.get_mut(o..o + n).unwrap_or(&mut []), bytes),
                    }
                }
            }
        }
    }
}

/// The taps' input offsets of output pixel `(oy, ox)` plus `c0` into `offs` ([`DW_PAD`] for a
/// tap in the padding): from the per-layer table when the window is inside the image (then the
/// largest offset written is returned, and the entry after the last tap is set too), tap by tap
/// otherwise (`None`). `row_in`: the window's rows are all inside the image.
#[inline(always)]
fn dw_tap_offsets(
    g: &DwGeometry<'_>,
    oy: usize,
    ox: usize,
    row_in: bool,
    c0: usize,
    offs: &mut [usize; DW_MAX_TAPS + 1],
) -> Option<usize> {
    let p = g.p;
    let (ind, fw) = (p.input, p.filter.w.max(1));
    let c = ind.c;
    let coord_y = |ky: usize| input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h);
    let coord_x = |kx: usize| input_coord(ox, p.stride.w, kx, p.dilation.w, p.padding.left, ind.w);
    match (coord_y(0), coord_x(0)) {
        (Some(iy), Some(ix)) if row_in && coord_x(fw - 1).is_some() => {
            let base = (iy * ind.w + ix) * c + c0;
            offs.iter_mut().zip(g.rel).take(g.taps + 1).for_each(|(o, &r)| *o = base + r);
            Some(base + g.rel_max)
        }
        _ => {
            for (t, o) in offs.iter_mut().take(g.taps).enumerate() {
                *o = match (coord_y(t / fw), coord_x(t % fw)) {
                    (Some(iy), Some(ix)) => (iy * ind.w + ix) * c + c0,
                    _ => DW_PAD,
                };
            }
            None
        }
    }
}

/// The 8 bytes of `b` from `off` as a little-endian `u64`; zeros for the bytes past the end.
#[inline(always)]
fn load8_u64(b: &[i8], off: usize) -> u64 {
    match off.checked_add(8).and_then(|end| b.get(off..end)) {
        Some(s) => u64::from_le_bytes(bytemuck::cast_slice::<i8, u8>(s).try_into().unwrap_or([0; 8])),
        None => {
            let mut t = [0u8; 8];
            t.iter_mut().zip(b.get(off..).unwrap_or(&[])).for_each(|(d, &v)| *d = v as u8);
            u64::from_le_bytes(t)
        }
    }
}

/// [`depthwise_conv_s8`] for layers of at most 8 channels: two output pixels of a row per pass,
/// pixel `ox` in the low 8 lanes of every tap's bytes and pixel `ox + 1` in the high 8 (the
/// weights repeated in both halves), so the 16-lane arithmetic of `dw_block::<4>` serves two
/// pixels; with 8 channels, both pixels' 16 output bytes are stored at once.
fn dw_narrow(g: &DwGeometry<'_>, output: &mut [i8]) {
    let DwGeometry { p, ms, ss, input, filter, bias, taps, .. } = *g;
    let (ind, outd) = (p.input, p.output);
    let (c, fh) = (ind.c, p.filter.h);
    let (in_image, out_image) = ((ind.h * ind.w * c).max(1), (outd.h * outd.w * c).max(1));
    let pairs = taps.div_ceil(2);
    let zp = u64::from_le_bytes([(-p.input_offset) as u8; 8]); // the input zero point
    let off = i16x8_splat(p.input_offset as i16); // in [-127, 128]
    let (lo, hi, out_off) =
        (i32x4_splat(p.activation.min), i32x4_splat(p.activation.max), i32x4_splat(p.output_offset));
    let w8 = |t: usize| {
        if t < taps { u64x2_splat(load8_u64(filter.get(..taps * c).unwrap_or(&[]), t * c)) } else { u64x2_splat(0) }
    };
    let mut wv = [[i32x4_splat(0); 4]; DW_MAX_TAPS.div_ceil(2)];
    for (j, w) in wv.iter_mut().take(pairs).enumerate() {
        *w = pair_widen::<4>(w8(2 * j), w8(2 * j + 1));
    }
    // Only the first c bytes of a tap's 8 belong to the pixel; the weights past c are the next
    // taps' or zeros, and those lanes are not stored.
    let unused = LaneRequant::new(&[], &[], None, 0);
    let rq: [LaneRequant; 2] =
        core::array::from_fn(|k| if 4 * k < c { LaneRequant::new(ms, ss, bias, 4 * k) } else { unused });
    let start: [v128; 4] = core::array::from_fn(|k| {
        wv.iter().take(pairs).fold(rq[k % 2].bias, |a, w| i32x4_add(a, i32x4_dot_i16x8(w[k], off)))
    });
    let coord_y = |oy: usize, ky: usize| input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h);
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        let (mut offs_a, mut offs_b) = ([DW_PAD; DW_MAX_TAPS + 1], [DW_PAD; DW_MAX_TAPS + 1]);
        for oy in 0..outd.h {
            let row_in = coord_y(oy, 0).is_some() && coord_y(oy, fh.saturating_sub(1)).is_some();
            for ox in (0..outd.w).step_by(2) {
                let two = ox + 1 < outd.w;
                let last_a = dw_tap_offsets(g, oy, ox, row_in, 0, &mut offs_a);
                let last_b = dw_tap_offsets(g, oy, if two { ox + 1 } else { ox }, row_in, 0, &mut offs_b);
                let mut acc = start;
                let pairs_ab = wv.iter().take(pairs).zip(offs_a.chunks_exact(2)).zip(offs_b.chunks_exact(2));
                match (last_a, last_b) {
                    // Both windows inside the image, all 8 bytes of every tap inside `in_b`.
                    (Some(ma), Some(mb)) if ma.max(mb).checked_add(8).is_some_and(|e| e <= in_b.len()) => {
                        for ((w, oa), ob) in pairs_ab {
                            // SAFETY: `oa`, `ob` are entries `0..=taps` of `offs_a`, `offs_b`,
                            // which `dw_tap_offsets` set to at most `ma`, `mb` (see `dw_block`),
                            // and `max(ma, mb) + 8 <= in_b.len()`.
                            let (t0, t1) = unsafe {
                                (load8x2_unchecked(in_b, oa[0], ob[0]), load8x2_unchecked(in_b, oa[1], ob[1]))
                            };
                            let x = pair_widen::<4>(t0, t1);
                            for ((a, &x), &w) in acc.iter_mut().zip(&x).zip(w) {
                                *a = i32x4_add(*a, i32x4_dot_i16x8(x, w));
                            }
                        }
                    }
                    _ => {
                        let tap = |o: usize| if o == DW_PAD { zp } else { load8_u64(in_b, o) };
                        for ((w, oa), ob) in pairs_ab {
                            let t0 = u64x2(tap(oa[0]), tap(ob[0]));
                            let t1 = u64x2(tap(oa[1]), tap(ob[1]));
                            let x = pair_widen::<4>(t0, t1);
                            for ((a, &x), &w) in acc.iter_mut().zip(&x).zip(w) {
                                *a = i32x4_add(*a, i32x4_dot_i16x8(x, w));
                            }
                        }
                    }
                }
                let r: [v128; 4] =
                    core::array::from_fn(|k| i32x4_min(i32x4_max(i32x4_add(rq[k % 2].apply(acc[k]), out_off), lo), hi));
                let bytes = i8x16_narrow_i16x8(i16x8_narrow_i32x4(r[0], r[1]), i16x8_narrow_i32x4(r[2], r[3]));
                let o = (oy * outd.w + ox) * c;
                match out_b.get_mut(o..o + 16) {
                    Some(d) if c == 8 && two => store16(d, bytes),
                    _ => {
                        store_partial(out_b.get_mut(o..o + c).unwrap_or(&mut []), bytes);
                        if two {
                            let high = i64x2_shuffle::<1, 0>(bytes, bytes);
                            store_partial(out_b.get_mut(o + c..o + 2 * c).unwrap_or(&mut []), high);
                        }
                    }
                }
            }
        }
    }
}

/// The 8 bytes of `b` from `a` and the 8 from `c` as one `v128` (low, high), unchecked.
///
/// # Safety
/// `a + 8 <= b.len()` and `c + 8 <= b.len()`.
#[inline(always)]
unsafe fn load8x2_unchecked(b: &[i8], a: usize, c: usize) -> v128 {
    debug_assert!(a.max(c).checked_add(8).is_some_and(|e| e <= b.len()));
    // SAFETY: the caller guarantees both 8-byte runs are inside `b`; the 64-bit loads have no
    // alignment requirement.
    unsafe {
        let lo = v128_load64_zero(b.as_ptr().add(a) as *const u64);
        v128_load64_lane::<1>(lo, b.as_ptr().add(c) as *const u64)
    }
}

/// The 16 bytes of `b` from `off` as a `v128`, unchecked.
///
/// # Safety
/// `off + 16 <= b.len()`.
#[inline(always)]
unsafe fn load16_unchecked(b: &[i8], off: usize) -> v128 {
    debug_assert!(off.checked_add(16).is_some_and(|e| e <= b.len()));
    // SAFETY: the caller guarantees the 16 bytes from `off` are inside `b`; `v128_load` has no
    // alignment requirement.
    unsafe { v128_load(b.as_ptr().add(off) as *const v128) }
}

/// The 16 bytes of `b` from `off` as a `v128`; zeros for the bytes past the end of `b`.
#[inline(always)]
fn load16_at(b: &[i8], off: usize) -> v128 {
    match off.checked_add(16).and_then(|end| b.get(off..end)) {
        Some(s) => load16(s),
        None => {
            let mut t = [0i8; 16];
            t.iter_mut().zip(b.get(off..).unwrap_or(&[])).for_each(|(d, &v)| *d = v);
            load16(&t)
        }
    }
}

/// The bytes of `a` and `b` interleaved (`a[0], b[0], a[1], b[1], ...`) and widened to int16:
/// the `i16x8` of channels 0-3, 4-7, 8-11 and 12-15 (the first `G`), each channel's pair side by
/// side, ready for `i32x4.dot_i16x8_s`.
#[inline(always)]
fn pair_widen<const G: usize>(a: v128, b: v128) -> [v128; G] {
    let l = i8x16_shuffle::<0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23>(a, b);
    if G <= 2 {
        return core::array::from_fn(|k| if k == 0 { i16x8_extend_low_i8x16(l) } else { i16x8_extend_high_i8x16(l) });
    }
    let h = i8x16_shuffle::<8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31>(a, b);
    core::array::from_fn(|k| match k {
        0 => i16x8_extend_low_i8x16(l),
        1 => i16x8_extend_high_i8x16(l),
        2 => i16x8_extend_low_i8x16(h),
        _ => i16x8_extend_high_i8x16(h),
    })
}

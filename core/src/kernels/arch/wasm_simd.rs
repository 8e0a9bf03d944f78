//! wasm32 fast paths with the `simd128` feature (built when the crate is compiled with `-C
//! target-feature=+simd128`; the repository's `.cargo/config.toml` does that for
//! `wasm32-unknown-unknown`). Every browser with wasm SIMD and Node >= 16 run them.
//!
//! The multiply-accumulate is `i32x4.dot_i16x8_s` (two int16 products summed into each of 4 int32
//! lanes): int8 weights are sign-extended to int16 (`i16x8.extend_low_i8x16_s`), inputs are
//! int16 with the offset added (in the im2col block for conv, extended per chunk for fully
//! connected), so every product is exact and the lane sums wrap exactly like the reference's
//! `wrapping_add` (`i32x4.add` wraps). With the `relaxed-simd` feature (and `+relaxed-simd`), the
//! conv kernel uses relaxed SIMD's int8 dot product instead (`RelaxedTile`), with its operands
//! kept in the range where the result is deterministic; off by default (Safari lacks relaxed
//! SIMD, Node 20 needs a flag).
//!
//! The `v128` loads and stores are unaligned (wasm allows any alignment) on slices whose length
//! is checked first; they are the only `unsafe` here.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

#[cfg(all(feature = "relaxed-simd", not(target_feature = "relaxed-simd")))]
compile_error!("the `relaxed-simd` feature needs `-C target-feature=+simd128,+relaxed-simd` on wasm32");

use super::portable::{cols_i16, fill_patches, im2col_natural};
use super::{ChannelRequant, ConvTile, OutputScale, TILE};
use crate::kernels::PerChannelQuant;
use crate::kernels::conv::{ConvParams, input_coord};
use crate::kernels::depthwise_conv::DepthwiseConvParams;
use crate::kernels::fully_connected::FullyConnectedParams;

/// 16 bytes as a `v128` (`b.len() == 16`; zeros otherwise).
#[inline(always)]
fn load16(b: &[i8]) -> v128 {
    match b {
        // SAFETY: the 16 bytes of `b` are inside the slice; `v128_load` has no alignment
        // requirement.
        [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _] => unsafe { v128_load(b.as_ptr() as *const v128) },
        _ => i8x16_splat(0),
    }
}

/// Up to 16 bytes as a `v128`, zeros past the end of `b`.
#[cfg(all(feature = "relaxed-simd", target_feature = "relaxed-simd"))]
#[inline(always)]
fn load16_filled(b: &[i8]) -> v128 {
    match b.get(..16) {
        Some(b16) => load16(b16),
        None => {
            let mut t = [0i8; 16];
            t.iter_mut().zip(b).for_each(|(d, &v)| *d = v);
            load16(&t)
        }
    }
}

/// Up to 8 bytes sign-extended to `i16x8`, zeros past the end of `b`.
#[inline(always)]
fn load8_i16(b: &[i8]) -> v128 {
    match b {
        // SAFETY: the 8 bytes of `b` are inside the slice; no alignment requirement.
        [_, _, _, _, _, _, _, _, ..] => unsafe { i16x8_load_extend_i8x8(b.as_ptr()) },
        _ => {
            let mut t = [0i8; 8];
            t.iter_mut().zip(b).for_each(|(d, &v)| *d = v);
            // SAFETY: `t` is an 8-byte local array.
            unsafe { i16x8_load_extend_i8x8(t.as_ptr()) }
        }
    }
}

/// 8 int16 values (`a.len() >= 8`; zeros otherwise).
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))]
#[inline(always)]
fn load_i16x8(a: &[i16]) -> v128 {
    match a {
        // SAFETY: the first 8 values (16 bytes) of `a` are inside the slice; no alignment
        // requirement.
        [_, _, _, _, _, _, _, _, ..] => unsafe { v128_load(a.as_ptr() as *const v128) },
        _ => i16x8_splat(0),
    }
}

#[inline(always)]
fn hsum(v: v128) -> i32 {
    i32x4_extract_lane::<0>(v)
        .wrapping_add(i32x4_extract_lane::<1>(v))
        .wrapping_add(i32x4_extract_lane::<2>(v))
        .wrapping_add(i32x4_extract_lane::<3>(v))
}

/// Convolution tiles with natural-order int16 patches (as the portable tile), multiplied 8
/// values at a time with `i32x4.dot_i16x8_s`, two filters x the 4 patches per pass (each patch
/// chunk loaded once for both filters, each filter chunk once for the 4 patches: 8 accumulators,
/// which fit the 16 `xmm` registers V8 has on x86-64 with room for the operands). The im2col
/// copies each filter row's taps as one run when they are all inside the image, extending 8
/// values per step. (The output stage is `conv_s8_tiled`'s scalar one: requantizing the 4 pixels
/// of a channel as one `i32x4`, with the high multiply in `i64x2` halves, measured slower in V8.)
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))]
pub(crate) struct SimdTile;

impl ConvTile for SimdTile {
    #[inline(always)]
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, kp: usize) {
        im2col_rows(p, in_b, pixels, cols, k, kp);
    }

    #[inline(always)]
    fn dot(cols: &[u32], w: &[i8], k: usize, kp: usize, _input_offset: i32, acc: [i32; TILE]) -> [i32; TILE] {
        let x = cols_i16(cols);
        let (Some(w), Some(x)) = (w.get(..k), x.get(..TILE * kp)) else { return acc };
        let (x0, rest) = x.split_at(kp);
        let (x1, rest) = rest.split_at(kp);
        let (x2, x3) = rest.split_at(kp);
        let (mut s0, mut s1, mut s2, mut s3) = (i32x4_splat(0), i32x4_splat(0), i32x4_splat(0), i32x4_splat(0));
        let mut step = |wv: v128, a: &[i16], b: &[i16], c: &[i16], d: &[i16]| {
            s0 = i32x4_add(s0, i32x4_dot_i16x8(load_i16x8(a), wv));
            s1 = i32x4_add(s1, i32x4_dot_i16x8(load_i16x8(b), wv));
            s2 = i32x4_add(s2, i32x4_dot_i16x8(load_i16x8(c), wv));
            s3 = i32x4_add(s3, i32x4_dot_i16x8(load_i16x8(d), wv));
        };
        let wc = w.chunks_exact(8);
        let tail = wc.remainder();
        let xs = x0.chunks_exact(8).zip(x1.chunks_exact(8)).zip(x2.chunks_exact(8).zip(x3.chunks_exact(8)));
        let mut xs = xs.map(|((a, b), (c, d))| (a, b, c, d));
        for (wv, (a, b, c, d)) in wc.map(load8_i16).zip(xs.by_ref()) {
            step(wv, a, b, c, d);
        }
        if !tail.is_empty() {
            // The last k % 8 weights, zero-filled (the patches hold zeros past k).
            if let Some((a, b, c, d)) = xs.next() {
                step(load8_i16(tail), a, b, c, d);
            }
        }
        let s = i32x4_add(lane_sums(s0, s1, s2, s3), i32x4(acc[0], acc[1], acc[2], acc[3]));
        to_array(s)
    }

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
        let x = cols_i16(cols);
        let (Some(x), true) = (x.get(..TILE * kp), k > 0) else { return };
        let nf = acc.len().min(bias.len());
        let mut f = 0;
        // Two filters per pass while the second one's chunks, read `kp` values from its start,
        // are inside `filters`: the first one's last chunk then reads up to `kp - k` weights of
        // the second, which meet the zeros past `k` in the patches (products 0), so only the
        // layer's last filter needs the zero-filled tail of `dot`.
        while f + 2 <= nf {
            let (Some(wa), Some(wb)) = (filters.get(f * k..f * k + kp), filters.get((f + 1) * k..(f + 1) * k + kp)) else {
                break;
            };
            let (sa, sb) = dot_pair(x, kp, wa, wb);
            if let (Some(a), Some(&ba)) = (acc.get_mut(f), bias.get(f)) {
                *a = to_array(i32x4_add(sa, i32x4_splat(ba)));
            }
            if let (Some(a), Some(&bb)) = (acc.get_mut(f + 1), bias.get(f + 1)) {
                *a = to_array(i32x4_add(sb, i32x4_splat(bb)));
            }
            f += 2;
        }
        for ((a, w), &b) in acc.iter_mut().zip(filters.chunks_exact(k)).zip(bias).skip(f) {
            *a = Self::dot(cols, w, k, kp, input_offset, [b; TILE]);
        }
    }

}

/// The 4 lanes of an `i32x4`.
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))] // SimdTile's
#[inline(always)]
fn to_array(v: v128) -> [i32; 4] {
    [i32x4_extract_lane::<0>(v), i32x4_extract_lane::<1>(v), i32x4_extract_lane::<2>(v), i32x4_extract_lane::<3>(v)]
}

/// `[hsum(a), hsum(b), hsum(c), hsum(d)]` (wrapping), by two rounds of pairing lanes: first
/// `a0 + a2, b0 + b2, a1 + a3, b1 + b3` (and the same for `c`, `d`), then the halves of those.
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))] // SimdTile's
#[inline(always)]
fn lane_sums(a: v128, b: v128, c: v128, d: v128) -> v128 {
    let ab = i32x4_add(i32x4_shuffle::<0, 4, 1, 5>(a, b), i32x4_shuffle::<2, 6, 3, 7>(a, b));
    let cd = i32x4_add(i32x4_shuffle::<0, 4, 1, 5>(c, d), i32x4_shuffle::<2, 6, 3, 7>(c, d));
    i32x4_add(i32x4_shuffle::<0, 1, 4, 5>(ab, cd), i32x4_shuffle::<2, 3, 6, 7>(ab, cd))
}

/// Two filters (`wa`, `wb`: `kp` weights each, multiples of 8) times the [`TILE`] patches of `x`
/// (`kp` int16 values each): the sums of filter `wa` over patches 0..4 as one `i32x4`, and of
/// `wb`.
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))] // SimdTile's
#[inline(always)]
fn dot_pair(x: &[i16], kp: usize, wa: &[i8], wb: &[i8]) -> (v128, v128) {
    let (x0, rest) = x.split_at(kp.min(x.len()));
    let (x1, rest) = rest.split_at(kp.min(rest.len()));
    let (x2, x3) = rest.split_at(kp.min(rest.len()));
    let z = i32x4_splat(0);
    let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
    let (mut b0, mut b1, mut b2, mut b3) = (z, z, z, z);
    let xs = x0.chunks_exact(8).zip(x1.chunks_exact(8)).zip(x2.chunks_exact(8).zip(x3.chunks_exact(8)));
    let ws = wa.chunks_exact(8).zip(wb.chunks_exact(8));
    for (((p0, p1), (p2, p3)), (ca, cb)) in xs.zip(ws) {
        let (va, vb) = (load8_i16(ca), load8_i16(cb));
        let v = load_i16x8(p0);
        a0 = i32x4_add(a0, i32x4_dot_i16x8(v, va));
        b0 = i32x4_add(b0, i32x4_dot_i16x8(v, vb));
        let v = load_i16x8(p1);
        a1 = i32x4_add(a1, i32x4_dot_i16x8(v, va));
        b1 = i32x4_add(b1, i32x4_dot_i16x8(v, vb));
        let v = load_i16x8(p2);
        a2 = i32x4_add(a2, i32x4_dot_i16x8(v, va));
        b2 = i32x4_add(b2, i32x4_dot_i16x8(v, vb));
        let v = load_i16x8(p3);
        a3 = i32x4_add(a3, i32x4_dot_i16x8(v, va));
        b3 = i32x4_add(b3, i32x4_dot_i16x8(v, vb));
    }
    (lane_sums(a0, a1, a2, a3), lane_sums(b0, b1, b2, b3))
}

/// `((a * m + 2^30) >> 31) as i32` per lane (gemmlowp's doubling high multiply without its
/// saturation, which only `a == m == i32::MIN` reaches): exact in 64 bits (`|a * m| <= 2^62`).
#[inline(always)]
fn high_mul_x4(a: v128, m: v128) -> v128 {
    let round = i64x2_splat(1 << 30);
    let lo = u64x2_shr(i64x2_add(i64x2_extmul_low_i32x4(a, m), round), 31);
    let hi = u64x2_shr(i64x2_add(i64x2_extmul_high_i32x4(a, m), round), 31);
    i32x4_shuffle::<0, 2, 4, 6>(lo, hi)
}

/// 8 int16 values into `d` (`d.len() == 8`; nothing otherwise).
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))] // SimdTile's
#[inline(always)]
fn store_i16x8(d: &mut [i16], v: v128) {
    if let [_, _, _, _, _, _, _, _] = d {
        // SAFETY: the 8 values (16 bytes) of `d` are inside the slice, which is borrowed
        // mutably; `v128_store` has no alignment requirement.
        unsafe { v128_store(d.as_mut_ptr() as *mut v128, v) }
    }
}

/// `dst[i] = src[i] + offset` as int16 (`dst` and `src` of the same length), 8 values per step.
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))] // SimdTile's
#[inline(always)]
fn extend_with_offset(dst: &mut [i16], src: &[i8], offset: i16) {
    let off = i16x8_splat(offset);
    let mut d8 = dst.chunks_exact_mut(8);
    let mut s8 = src.chunks_exact(8);
    for (d, s) in d8.by_ref().zip(s8.by_ref()) {
        store_i16x8(d, i16x8_add(load8_i16(s), off));
    }
    for (d, &x) in d8.into_remainder().iter_mut().zip(s8.remainder()) {
        *d = x as i16 + offset;
    }
}

/// [`im2col_natural`]'s patches, written a filter row at a time: when the `filter.w` taps of
/// the row are all inside the image (and the filter is not dilated across), they are one run
/// of `filter.w * in_c` input values, extended 8 per step; rows above or below the image are
/// zeros; the others (at the left and right edges) go tap by tap. Same values as
/// [`im2col_natural`].
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))] // SimdTile's
#[inline(always)]
fn im2col_rows(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, kp: usize) {
    let c = p.input.c;
    let row_len = p.filter.w * c;
    if p.dilation.w != 1 || row_len == 0 || p.filter.h * row_len != k {
        im2col_natural(p, in_b, pixels, cols, k, kp);
        return;
    }
    let cols: &mut [i16] = bytemuck::cast_slice_mut(cols);
    let off = p.input_offset as i16; // in [-127, 128]: x + off fits int16
    fill_patches(cols, kp, pixels, k, 0, |oy, ox, body| {
        let x0 = ox * p.stride.w; // the first tap's column, in padded coordinates
        let interior = x0 >= p.padding.left && x0 - p.padding.left + p.filter.w <= p.input.w;
        for (ky, dst) in body.chunks_exact_mut(row_len).enumerate() {
            let Some(iy) = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, p.input.h) else {
                dst.fill(0);
                continue;
            };
            if interior {
                let start = (iy * p.input.w + x0 - p.padding.left) * c;
                match in_b.get(start..start + row_len) {
                    Some(src) => extend_with_offset(dst, src, off),
                    None => dst.fill(0), // unreachable: validated shapes
                }
                continue;
            }
            for (kx, d) in dst.chunks_exact_mut(c).enumerate() {
                let run = input_coord(ox, p.stride.w, kx, 1, p.padding.left, p.input.w).and_then(|ix| {
                    let s = (iy * p.input.w + ix) * c;
                    in_b.get(s..s + c)
                });
                match run {
                    Some(src) => extend_with_offset(d, src, off),
                    None => d.fill(0),
                }
            }
        }
    });
}

/// [`ChannelRequant::apply`] for 4 channels at once, one per lane, with each lane's constants
/// prepared: wasm SIMD shifts every lane by the same amount, so the per-channel shifts become
/// multiplies. The left shift is a wrapping multiply by `2^left`; the high multiply as
/// [`high_mul_x4`]; the rounding right shift as `(h >> right) + ((h & mask) > half + (h < 0))`
/// where `h >> right` (arithmetic) is computed unsigned: `u = h + 2^31` (the sign bit flipped)
/// is in `[0, 2^32)`, `floor(u / 2^right) = (u * 2^(31 - right)) >> 31` exactly in 64 bits
/// (`i64x2.extmul_*_i32x4_u`, `u * 2^(31 - right) < 2^63`), and `floor(u / 2^right) -
/// 2^(31 - right) = floor(h / 2^right)` because `2^31` is a multiple of `2^right` (`right` is in
/// `[0, 31]`; the subtraction wraps for `right = 0`, as `u - 2^31` must).
#[derive(Clone, Copy)]
struct LaneRequant {
    /// The channels' biases (0 without one), where their accumulators start.
    bias: v128,
    left_mul: v128,
    multiplier: v128,
    mask: v128,
    half: v128,
    /// `2^(31 - right)`, as `u32` lanes.
    right_mul: v128,
}

impl LaneRequant {
    /// The constants of channels `c0..c0 + 4` (validated pairs); lanes past the end of the
    /// slices get multiplier 0 and shift 0 (their results are not used).
    #[inline(always)]
    fn new(multiplier: &[i32], shift: &[i32], bias: Option<&[i32]>, c0: usize) -> Self {
        let b = |i: usize| bias.and_then(|b| b.get(c0 + i)).copied().unwrap_or(0);
        let rq: [ChannelRequant; 4] = core::array::from_fn(|i| match (multiplier.get(c0 + i), shift.get(c0 + i)) {
            (Some(&m), Some(&s)) => ChannelRequant::new_valid(m, s),
            _ => ChannelRequant::new_valid(0, 0),
        });
        let lanes = |f: &dyn Fn(&ChannelRequant) -> i32| i32x4(f(&rq[0]), f(&rq[1]), f(&rq[2]), f(&rq[3]));
        Self {
            bias: i32x4(b(0), b(1), b(2), b(3)),
            left_mul: lanes(&|r| (1u32 << (r.left & 31)) as i32),
            multiplier: lanes(&|r| r.multiplier),
            mask: lanes(&|r| r.mask),
            half: lanes(&|r| r.half),
            right_mul: lanes(&|r| (1u32 << (31 - (r.right & 31))) as i32),
        }
    }

    /// `ChannelRequant::apply` lane by lane.
    #[inline(always)]
    fn apply(&self, acc: v128) -> v128 {
        let a = i32x4_mul(acc, self.left_mul);
        let h = high_mul_x4(a, self.multiplier);
        let threshold = i32x4_add(self.half, u32x4_shr(h, 31));
        let up = i32x4_gt(v128_and(h, self.mask), threshold);
        let u = v128_xor(h, i32x4_splat(i32::MIN));
        let lo = u64x2_shr(u64x2_extmul_low_u32x4(u, self.right_mul), 31);
        let hi = u64x2_shr(u64x2_extmul_high_u32x4(u, self.right_mul), 31);
        let floor = i32x4_sub(i32x4_shuffle::<0, 2, 4, 6>(lo, hi), self.right_mul);
        i32x4_sub(floor, up)
    }
}

/// Depthwise convolution with depth multiplier 1, channels innermost, 8 channels per `i16x8`:
/// blocks of 32 channels (then of 8, the last one possibly partial) with their requantization
/// prepared once ([`LaneRequant`], 4 channels per `i32x4`), for each output pixel: the in-image
/// taps summed as `i16x8.mul` of the input plus offset (in `[-255, 255]`) and the weights (in
/// `[-128, 127]`), exact in int16 (`|product| <= 255 * 128 = 32640`), widened into two `i32x4`
/// accumulators per 8 channels (wrapping, like the reference's sums), which start at the biases;
/// then requantized, clamped, narrowed and stored. A partial block loads 8 values all the same
/// (lanes past its channels hold the next pixel's or tap's values, zeros past the end of the
/// data) and stores only its channels. No scratch. Preconditions (else `false`, nothing
/// written): `depth_multiplier == 1`, every multiplier and shift within [`ChannelRequant`]'s
/// contract.
pub(crate) fn depthwise_conv_s8(
    p: &DepthwiseConvParams,
    quant: &PerChannelQuant<'_>,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
) -> bool {
    let (ms, ss) = (quant.multiplier, quant.shift);
    if p.depth_multiplier != 1 || !ChannelRequant::all_valid(ms, ss) {
        return false;
    }
    let (ind, outd) = (p.input, p.output);
    let c = ind.c;
    let in_image = ind.h * ind.w * c;
    let out_image = outd.h * outd.w * c;
    if in_image == 0 || out_image == 0 {
        return true;
    }
    let out = DwOutput {
        off: i16x8_splat(p.input_offset as i16), // in [-127, 128]
        lo: i32x4_splat(p.activation.min),
        hi: i32x4_splat(p.activation.max),
        out_off: i32x4_splat(p.output_offset),
    };
    let unused = LaneRequant::new(&[], &[], None, 0);
    for c0 in (0..c).step_by(32) {
        let n = (c - c0).min(32);
        let rq: [LaneRequant; 8] =
            core::array::from_fn(|i| if 4 * i < n { LaneRequant::new(ms, ss, bias, c0 + 4 * i) } else { unused });
        for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
            for (px, out_px) in out_b.chunks_exact_mut(c).enumerate() {
                let (oy, ox) = (px / outd.w.max(1), px % outd.w.max(1));
                let Some(chunk) = out_px.get_mut(c0..c0 + n) else { continue };
                if n == 32 {
                    let mut acc: [[v128; 2]; 4] = core::array::from_fn(|g| [rq[2 * g].bias, rq[2 * g + 1].bias]);
                    dw_accumulate(p, in_b, filter, oy, ox, c0, out.off, &mut acc);
                    for ((a, o), r) in acc.iter().zip(chunk.chunks_exact_mut(8)).zip(rq.chunks_exact(2)) {
                        out.store(o, a, &r[0], &r[1]);
                    }
                } else {
                    for ((g, o), r) in chunk.chunks_mut(8).enumerate().zip(rq.chunks_exact(2)) {
                        let mut acc = [[r[0].bias, r[1].bias]];
                        dw_accumulate(p, in_b, filter, oy, ox, c0 + 8 * g, out.off, &mut acc);
                        out.store(o, &acc[0], &r[0], &r[1]);
                    }
                }
            }
        }
    }
    true
}

/// The output stage constants of [`depthwise_conv_s8`].
struct DwOutput {
    off: v128,
    lo: v128,
    hi: v128,
    out_off: v128,
}

impl DwOutput {
    /// Requantizes the 8 channels of `acc` (4 per `i32x4`), adds the output offset, clamps and
    /// writes the first `o.len()` (at most 8) of them to `o`.
    #[inline(always)]
    fn store(&self, o: &mut [i8], acc: &[v128; 2], r0: &LaneRequant, r1: &LaneRequant) {
        let r_lo = i32x4_min(i32x4_max(i32x4_add(r0.apply(acc[0]), self.out_off), self.lo), self.hi);
        let r_hi = i32x4_min(i32x4_max(i32x4_add(r1.apply(acc[1]), self.out_off), self.lo), self.hi);
        let r = i8x16_narrow_i16x8(i16x8_narrow_i32x4(r_lo, r_hi), i16x8_splat(0));
        let bytes = i64x2_extract_lane::<0>(r).to_le_bytes();
        for (o, &v) in o.iter_mut().zip(bytes.iter()) {
            *o = v as i8;
        }
    }
}

/// Adds the in-image taps of output pixel `(oy, ox)` for channels `c0..c0 + 8 * G` to `acc`
/// (two `i32x4` per 8 channels): `w * (x + offset)` per channel, the product in int16.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dw_accumulate<const G: usize>(
    p: &DepthwiseConvParams,
    in_b: &[i8],
    filter: &[i8],
    oy: usize,
    ox: usize,
    c0: usize,
    off: v128,
    acc: &mut [[v128; 2]; G],
) {
    let (ind, c) = (p.input, p.input.c);
    for ky in 0..p.filter.h {
        let Some(iy) = input_coord(oy, p.stride.h, ky, p.dilation.h, p.padding.top, ind.h) else {
            continue;
        };
        for kx in 0..p.filter.w {
            let Some(ix) = input_coord(ox, p.stride.w, kx, p.dilation.w, p.padding.left, ind.w) else {
                continue;
            };
            let xs = in_b.get((iy * ind.w + ix) * c + c0..).unwrap_or(&[]);
            let ws = filter.get((ky * p.filter.w + kx) * c + c0..).unwrap_or(&[]);
            for (g, a) in acc.iter_mut().enumerate() {
                let xv = i16x8_add(load8_i16(xs.get(8 * g..).unwrap_or(&[])), off);
                let wv = load8_i16(ws.get(8 * g..).unwrap_or(&[]));
                let prod = i16x8_mul(xv, wv);
                a[0] = i32x4_add(a[0], i32x4_extend_low_i16x8(prod));
                a[1] = i32x4_add(a[1], i32x4_extend_high_i16x8(prod));
            }
        }
    }
}

/// Convolution tiles with relaxed SIMD's int8 dot product (feature `relaxed-simd`, built with
/// `+relaxed-simd`): patches stored as raw int8 (no offset; padded taps hold the input zero point,
/// so `w * (x + offset)` is 0 for them), one after the other at a stride of `L = round_up(k, 16)`
/// bytes (the int16 block has room for it). `i32x4.relaxed_dot_i8x16_i7x16_add_s` is only
/// deterministic when every byte of its second operand is in [0, 127], so each weight is taken
/// as `u = w + 128` in [0, 255] and split into `u = 64 uh + ul` (`uh` in [0, 3], `ul` in [0, 63]):
/// `sum w x = 64 sum uh x + sum ul x - 128 sum x`, 2 dot products of 16 values per pixel; the
/// patch sums `sum x` once per block of filters, the weight sums (for `offset * sum w`) once per
/// filter, from the same split against ones. Every step is exact integer arithmetic (wrapping
/// like the reference), so the results are the reference's bit for bit. Zero weights past `k`
/// cancel (`u = 128`: `+128 x - 128 x`).
#[cfg(all(feature = "relaxed-simd", target_feature = "relaxed-simd"))]
pub(crate) struct RelaxedTile;

#[cfg(all(feature = "relaxed-simd", target_feature = "relaxed-simd"))]
impl ConvTile for RelaxedTile {
    #[inline(always)]
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, _kp: usize) {
        let cols: &mut [i8] = bytemuck::cast_slice_mut(cols);
        let stride = k.div_ceil(16) * 16;
        let zp = (-p.input_offset) as i8; // the input zero point, in [-128, 127]
        let c = p.input.c;
        fill_patches(cols, stride, pixels, k, zp, |oy, ox, body| {
            let mut runs = body.chunks_exact_mut(c.max(1));
            super::for_each_tap(p, in_b, oy, ox, |_, run| {
                let Some(dst) = runs.next() else { return };
                match run {
                    Some(src) => dst.copy_from_slice(src),
                    None => dst.fill(zp),
                }
            });
        });
    }

    #[inline(always)]
    fn dot(cols: &[u32], w: &[i8], k: usize, _kp: usize, input_offset: i32, acc: [i32; TILE]) -> [i32; TILE] {
        let x: &[i8] = bytemuck::cast_slice(cols);
        relaxed_dot(x, patch_sums(x, k), w, k, input_offset, acc)
    }

    #[inline(always)]
    fn dot_block(
        cols: &[u32],
        filters: &[i8],
        k: usize,
        _kp: usize,
        input_offset: i32,
        bias: &[i32],
        acc: &mut [[i32; TILE]],
    ) {
        let x: &[i8] = bytemuck::cast_slice(cols);
        let sums = patch_sums(x, k);
        for ((a, w), &b) in acc.iter_mut().zip(filters.chunks_exact(k.max(1))).zip(bias) {
            *a = relaxed_dot(x, sums, w, k, input_offset, [b; TILE]);
        }
    }
}

/// `sum x_q[j]` over each of the [`TILE`] raw patches (`L` values each, the tail included).
#[cfg(all(feature = "relaxed-simd", target_feature = "relaxed-simd"))]
#[inline(always)]
fn patch_sums(x: &[i8], k: usize) -> [i32; TILE] {
    let stride = k.div_ceil(16) * 16;
    let ones = i8x16_splat(1);
    core::array::from_fn(|q| {
        let mut s = i32x4_splat(0);
        for j in 0..stride / 16 {
            let xv = load16(x.get(q * stride + 16 * j..q * stride + 16 * j + 16).unwrap_or(&[]));
            s = i32x4_relaxed_dot_i8x16_i7x16_add(xv, ones, s);
        }
        hsum(s)
    })
}

/// `acc[q] + sum_j w[j] * (x_q[j] + offset)` for the raw int8 patches of [`RelaxedTile`], given
/// their sums.
#[cfg(all(feature = "relaxed-simd", target_feature = "relaxed-simd"))]
#[inline(always)]
fn relaxed_dot(x: &[i8], xsum: [i32; TILE], w: &[i8], k: usize, offset: i32, acc: [i32; TILE]) -> [i32; TILE] {
    let stride = k.div_ceil(16) * 16;
    let Some(x) = x.get(..TILE * stride) else { return acc };
    let (bias, lo6, ones) = (i8x16_splat(-128), i8x16_splat(0x3f), i8x16_splat(1));
    let mut sl = [i32x4_splat(0); TILE];
    let mut sh = [i32x4_splat(0); TILE];
    let (mut ul_sum, mut uh_sum) = (i32x4_splat(0), i32x4_splat(0));
    for j in 0..stride / 16 {
        let u = v128_xor(load16_filled(w.get(16 * j..k).unwrap_or(&[])), bias); // w + 128, as u8
        let (ul, uh) = (v128_and(u, lo6), u8x16_shr(u, 6));
        ul_sum = i32x4_relaxed_dot_i8x16_i7x16_add(ones, ul, ul_sum);
        uh_sum = i32x4_relaxed_dot_i8x16_i7x16_add(ones, uh, uh_sum);
        for q in 0..TILE {
            let xv = load16(x.get(q * stride + 16 * j..q * stride + 16 * j + 16).unwrap_or(&[]));
            sl[q] = i32x4_relaxed_dot_i8x16_i7x16_add(xv, ul, sl[q]);
            sh[q] = i32x4_relaxed_dot_i8x16_i7x16_add(xv, uh, sh[q]);
        }
    }
    // sum w = sum u - 128 L over the L values (zero weights past k included).
    let wsum = hsum(ul_sum).wrapping_add(hsum(uh_sum).wrapping_mul(64)).wrapping_sub((128 * stride) as i32);
    let off = offset.wrapping_mul(wsum);
    core::array::from_fn(|q| {
        let wx = hsum(sl[q]).wrapping_add(hsum(sh[q]).wrapping_mul(64)).wrapping_sub(xsum[q].wrapping_mul(128));
        acc[q].wrapping_add(wx).wrapping_add(off)
    })
}

/// Fully connected, int8: 4 filter rows per pass over the input row, 16 values per step (the
/// input extended once to two `i16x8` with the offset, each row's 16 weights extended and
/// dotted), then 8 values, then a scalar tail of up to 7; the last 1-3 rows one at a time.
/// `scale` is the layer's requantization. No scratch. Always applies.
pub(crate) fn fully_connected_s8(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    output: &mut [i8],
    scale: &OutputScale<'_>,
) -> bool {
    let (depth, out_d) = (p.input_depth, p.output_depth);
    if depth == 0 || out_d == 0 {
        return false;
    }
    let off = i16x8_splat(p.input_offset as i16); // in [-127, 128]
    let b = |c: usize| bias.and_then(|b| b.get(c)).copied().unwrap_or(0);
    let store = |c: usize, acc: i32| scale.output_s8(c, acc, p.output_offset, p.activation);
    let (n16, n8) = (depth / 16, (depth % 16) / 8);
    let t0 = 16 * n16 + 8 * n8; // start of the scalar tail
    // sum over the tail of w * (x + offset)
    let tail = |row: &[i8], w: &[i8]| -> i32 {
        let (Some(x), Some(w)) = (row.get(t0..), w.get(t0..)) else { return 0 };
        x.iter().zip(w).fold(0i32, |a, (&x, &w)| a.wrapping_add(w as i32 * (x as i32 + p.input_offset)))
    };
    for (row, out_row) in input.chunks_exact(depth.max(1)).zip(output.chunks_exact_mut(out_d.max(1))) {
        // The row extended with the offset, 16 values per step.
        let x16 = |j: usize| -> (v128, v128) {
            let x = load16(row.get(16 * j..16 * j + 16).unwrap_or(&[]));
            (i16x8_add(i16x8_extend_low_i8x16(x), off), i16x8_add(i16x8_extend_high_i8x16(x), off))
        };
        let x8 = i16x8_add(load8_i16(row.get(16 * n16..16 * n16 + 8).unwrap_or(&[])), off);
        let mut c = 0;
        let mut outs = out_row.iter_mut();
        for w4 in filter.chunks_exact(depth.saturating_mul(4).max(1)).take(out_d / 4) {
            let rows: [&[i8]; 4] = core::array::from_fn(|r| w4.get(r * depth..(r + 1) * depth).unwrap_or(&[]));
            let mut s = [i32x4_splat(0); 4];
            for j in 0..n16 {
                let (xl, xh) = x16(j);
                for (s, w) in s.iter_mut().zip(rows) {
                    let wv = load16(w.get(16 * j..16 * j + 16).unwrap_or(&[]));
                    let d = i32x4_add(
                        i32x4_dot_i16x8(xl, i16x8_extend_low_i8x16(wv)),
                        i32x4_dot_i16x8(xh, i16x8_extend_high_i8x16(wv)),
                    );
                    *s = i32x4_add(*s, d);
                }
            }
            if n8 == 1 {
                for (s, w) in s.iter_mut().zip(rows) {
                    let wv = load8_i16(w.get(16 * n16..16 * n16 + 8).unwrap_or(&[]));
                    *s = i32x4_add(*s, i32x4_dot_i16x8(x8, wv));
                }
            }
            for (r, (s, w)) in s.iter().zip(rows).enumerate() {
                if let Some(o) = outs.next() {
                    *o = store(c + r, b(c + r).wrapping_add(hsum(*s)).wrapping_add(tail(row, w)));
                }
            }
            c += 4;
        }
        for w in filter.get(c * depth..).unwrap_or(&[]).chunks_exact(depth.max(1)) {
            let mut s = i32x4_splat(0);
            for j in 0..n16 {
                let (xl, xh) = x16(j);
                let wv = load16(w.get(16 * j..16 * j + 16).unwrap_or(&[]));
                s = i32x4_add(s, i32x4_dot_i16x8(xl, i16x8_extend_low_i8x16(wv)));
                s = i32x4_add(s, i32x4_dot_i16x8(xh, i16x8_extend_high_i8x16(wv)));
            }
            if n8 == 1 {
                let wv = load8_i16(w.get(16 * n16..16 * n16 + 8).unwrap_or(&[]));
                s = i32x4_add(s, i32x4_dot_i16x8(x8, wv));
            }
            if let Some(o) = outs.next() {
                *o = store(c, b(c).wrapping_add(hsum(s)).wrapping_add(tail(row, w)));
            }
            c += 1;
        }
    }
    true
}

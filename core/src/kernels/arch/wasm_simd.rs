//! wasm32 fast paths with the `simd128` feature (built when the crate is compiled with `-C
//! target-feature=+simd128`; the repository's `.cargo/config.toml` does that for
//! `wasm32-unknown-unknown`). Every browser with wasm SIMD and Node >= 16 run them.
//!
//! The multiply-accumulate is `i32x4.dot_i16x8_s` (two int16 products summed into each of 4 int32
//! lanes): int8 weights are sign-extended to int16 (`i16x8.extend_low_i8x16_s`), inputs are
//! int16 with the offset added (in the im2col block for conv, extended per chunk for fully
//! connected) or raw int8 widened with the offset folded into the starting sums (depthwise), so
//! every product is exact and the lane sums wrap exactly like the reference's `wrapping_add`
//! (`i32x4.add` wraps). With the `relaxed-simd` feature (and `+relaxed-simd`), the
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
use super::requant::{AddInputScale, ChannelRequant, OutputScale};
use super::scratch::TILE;
use super::tiled_conv::{ConvOperands, ConvTile};
use crate::kernels::PerChannelQuant;
use crate::kernels::params::ConvParams;
use crate::kernels::params::DepthwiseConvParams;
use crate::kernels::params::FullyConnectedParams;
use crate::kernels::window::input_coord;

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
#[cfg(mq_relaxed_simd)]
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
#[cfg_attr(mq_relaxed_simd, allow(dead_code))]
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
#[cfg_attr(mq_relaxed_simd, allow(dead_code))]
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
            let (Some(wa), Some(wb)) = (filters.get(f * k..f * k + kp), filters.get((f + 1) * k..(f + 1) * k + kp))
            else {
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
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // SimdTile's
#[inline(always)]
fn to_array(v: v128) -> [i32; 4] {
    [i32x4_extract_lane::<0>(v), i32x4_extract_lane::<1>(v), i32x4_extract_lane::<2>(v), i32x4_extract_lane::<3>(v)]
}

/// `[hsum(a), hsum(b), hsum(c), hsum(d)]` (wrapping), by two rounds of pairing lanes: first
/// `a0 + a2, b0 + b2, a1 + a3, b1 + b3` (and the same for `c`, `d`), then the halves of those.
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // SimdTile's
#[inline(always)]
fn lane_sums(a: v128, b: v128, c: v128, d: v128) -> v128 {
    let ab = i32x4_add(i32x4_shuffle::<0, 4, 1, 5>(a, b), i32x4_shuffle::<2, 6, 3, 7>(a, b));
    let cd = i32x4_add(i32x4_shuffle::<0, 4, 1, 5>(c, d), i32x4_shuffle::<2, 6, 3, 7>(c, d));
    i32x4_add(i32x4_shuffle::<0, 1, 4, 5>(ab, cd), i32x4_shuffle::<2, 3, 6, 7>(ab, cd))
}

/// Two filters (`wa`, `wb`: `kp` weights each, multiples of 8) times the [`TILE`] patches of `x`
/// (`kp` int16 values each): the sums of filter `wa` over patches 0..4 as one `i32x4`, and of
/// `wb`.
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // SimdTile's
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
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // SimdTile's
#[inline(always)]
fn store_i16x8(d: &mut [i16], v: v128) {
    if let [_, _, _, _, _, _, _, _] = d {
        // SAFETY: the 8 values (16 bytes) of `d` are inside the slice, which is borrowed
        // mutably; `v128_store` has no alignment requirement.
        unsafe { v128_store(d.as_mut_ptr() as *mut v128, v) }
    }
}

/// `dst[i] = src[i] + offset` as int16 (`dst` and `src` of the same length), 8 values per step.
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // SimdTile's
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
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // SimdTile's
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
    /// Whether some lane shifts left (else `left_mul` is all ones and skipped).
    left: bool,
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
            left: rq.iter().any(|r| r.left != 0),
            multiplier: lanes(&|r| r.multiplier),
            mask: lanes(&|r| r.mask),
            half: lanes(&|r| r.half),
            right_mul: lanes(&|r| (1u32 << (31 - (r.right & 31))) as i32),
        }
    }

    /// One requantization in all 4 lanes (no bias).
    #[inline(always)]
    fn from_channel(r: ChannelRequant) -> Self {
        Self {
            bias: i32x4_splat(0),
            left_mul: i32x4_splat((1u32 << (r.left & 31)) as i32),
            left: r.left != 0,
            multiplier: i32x4_splat(r.multiplier),
            mask: i32x4_splat(r.mask),
            half: i32x4_splat(r.half),
            right_mul: i32x4_splat((1u32 << (31 - (r.right & 31))) as i32),
        }
    }

    /// `ChannelRequant::apply` lane by lane.
    #[inline(always)]
    fn apply(&self, acc: v128) -> v128 {
        let a = if self.left { i32x4_mul(acc, self.left_mul) } else { acc };
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

/// Largest patch length [`conv_s8_lanes`] takes (longer patches run [`SimdTile`], whose dot
/// products over a patch amortize their final sums better).
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // not with RelaxedTile
const LANES_MAX_K: usize = 640;

/// Convolution with the output channels in the lanes, for short patches (`k <=`
/// [`LANES_MAX_K`]: 1x1 layers, first layers with few input channels): the weights are widened
/// to int16 and packed once per call (on the stack, at most [`LANES_MAX_OC`] channels) so that
/// one `v128` holds the weights `2j, 2j + 1` of 4 consecutive filters; then, for each block of
/// [`TILE`] output pixels, the patches are copied as for [`SimdTile`] (int16, offset added; at a
/// stride of `k` rounded up to even, so no pair of only zeros is multiplied) and
/// each pair `2j, 2j + 1` of a patch, splat to the 4 lanes as one 32-bit word, is multiplied
/// with the packed weights by `i32x4.dot_i16x8_s`: 8 filters x 4 pixels per pass, the sums
/// already per channel (no reduction across lanes), starting at the biases. The 8 channels of a
/// pixel are requantized as two `i32x4` ([`LaneRequant`], prepared once per call), clamped,
/// narrowed and stored as 8 bytes. Exact: the same wrapping int32 sums of `w * (x + offset)`
/// as the reference, the same requantization. Preconditions (else `false`, nothing written): no
/// groups, `k <= LANES_MAX_K`, at most `LANES_MAX_OC` output channels, `cols` at least
/// [`conv_scratch_words`] long, every multiplier and shift within [`ChannelRequant`]'s contract.
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // not with RelaxedTile
pub(crate) fn conv_s8_lanes(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) -> bool {
    let ConvOperands { p, multiplier, shift, .. } = *a;
    let k = p.filter.h * p.filter.w * p.filter.c;
    let kp = super::scratch::padded_patch_len(k);
    let words = super::scratch::conv_scratch_words(k);
    let out_c = p.output.c;
    if p.filter.c != p.input.c
        || k == 0
        || k > LANES_MAX_K
        || out_c > LANES_MAX_OC
        || cols.len() < words
        || !ChannelRequant::all_valid(multiplier, shift)
    {
        return false;
    }
    let need = out_c.div_ceil(8) * kp; // packed v128s
    if need <= 64 && out_c <= 16 {
        conv_lanes_stack::<64, 4>(a, output, cols)
    } else if need <= 256 && out_c <= 32 {
        conv_lanes_stack::<256, 8>(a, output, cols)
    } else if need <= 1024 && out_c <= 64 {
        conv_lanes_stack::<1024, 16>(a, output, cols)
    } else if need <= 2048 && out_c <= 128 {
        conv_lanes_stack::<2048, 32>(a, output, cols)
    } else if need <= LANES_MAX_W {
        conv_lanes_stack::<LANES_MAX_W, { LANES_MAX_OC / 4 }>(a, output, cols)
    } else {
        return false;
    }
    true
}

/// [`conv_lanes_run`] with stack room for `W` packed `v128`s of weights and `R` groups of 4
/// channels: the size tiers keep small layers from zeroing 80 KB on every call, and only this
/// wrapper is instantiated per tier (the kernel itself once).
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // not with RelaxedTile
#[inline(never)]
fn conv_lanes_stack<const W: usize, const R: usize>(a: &ConvOperands<'_>, output: &mut [i8], cols: &mut [u32]) {
    let mut wp = [i32x4_splat(0); W];
    let unused = LaneRequant::new(&[], &[], None, 0);
    let mut rq = [unused; R];
    conv_lanes_run(a, &mut wp, &mut rq, output, cols);
}

/// Most output channels [`conv_s8_lanes`] takes.
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // not with RelaxedTile
const LANES_MAX_OC: usize = 256;
/// Most packed `v128`s of weights [`conv_s8_lanes`] keeps on the stack (80 KB).
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // not with RelaxedTile
const LANES_MAX_W: usize = 5120;

/// [`conv_s8_lanes`] with `wp` (zeros) for the packed weights and `rq` for the requantization
/// of every 4 channels, both large enough (checked by the caller's tiers).
#[cfg_attr(mq_relaxed_simd, allow(dead_code))] // not with RelaxedTile
fn conv_lanes_run(a: &ConvOperands<'_>, wp: &mut [v128], rq: &mut [LaneRequant], output: &mut [i8], cols: &mut [u32]) {
    let ConvOperands { p, multiplier, shift, input, filter, bias } = *a;
    let (ind, outd) = (p.input, p.output);
    let k = p.filter.h * p.filter.w * p.filter.c;
    let kp = super::scratch::padded_patch_len(k);
    let out_c = outd.c;
    let blocks = out_c.div_ceil(8);
    // Packed weights: block b (filters 8b..8b + 8), pair j: `wp[(b * kp / 2 + j) * 2 + h]` holds
    // the weights 2j, 2j + 1 of filters 8b + 4h .. 8b + 4h + 4 (zeros past k and past out_c).
    for (b, wb) in wp.chunks_exact_mut(kp.max(1)).take(blocks).enumerate() {
        for h in 0..2 {
            let row = |r: usize| -> &[i8] {
                let c = 8 * b + 4 * h + r;
                if c < out_c { filter.get(c * k..c * k + k).unwrap_or(&[]) } else { &[] }
            };
            let rows = [row(0), row(1), row(2), row(3)];
            for (k8, wj) in wb.chunks_exact_mut(8).enumerate() {
                // 8 weights of each of the 4 filters, widened; each i32 lane is one pair.
                let v: [v128; 4] = core::array::from_fn(|r| load8_i16(rows[r].get(8 * k8..).unwrap_or(&[])));
                let t0 = i32x4_shuffle::<0, 4, 1, 5>(v[0], v[1]);
                let t1 = i32x4_shuffle::<0, 4, 1, 5>(v[2], v[3]);
                let t2 = i32x4_shuffle::<2, 6, 3, 7>(v[0], v[1]);
                let t3 = i32x4_shuffle::<2, 6, 3, 7>(v[2], v[3]);
                let pairs = [
                    i32x4_shuffle::<0, 1, 4, 5>(t0, t1),
                    i32x4_shuffle::<2, 3, 6, 7>(t0, t1),
                    i32x4_shuffle::<0, 1, 4, 5>(t2, t3),
                    i32x4_shuffle::<2, 3, 6, 7>(t2, t3),
                ];
                // wj holds pairs 4 k8 .. 4 k8 + 4, two v128 (halves) each.
                for (jj, pr) in pairs.iter().enumerate() {
                    if let Some(d) = wj.get_mut(2 * jj + h) {
                        *d = *pr;
                    }
                }
            }
        }
    }
    for (g, r) in rq.iter_mut().take(out_c.div_ceil(4)).enumerate() {
        *r = LaneRequant::new(multiplier, shift, bias, 4 * g);
    }
    let (lo, hi, out_off) =
        (i32x4_splat(p.activation.min), i32x4_splat(p.activation.max), i32x4_splat(p.output_offset));
    let in_image = (ind.h * ind.w * ind.c).max(1);
    let out_image = (outd.h * outd.w * out_c).max(1);
    // The patches are copied at a stride of k rounded up to even (not to 8 as the packed
    // weights): the pairs past it would only meet zeros.
    let half = k.div_ceil(2);
    for (in_b, out_b) in input.chunks_exact(in_image).zip(output.chunks_exact_mut(out_image)) {
        let mut pos = (0usize, 0usize);
        for out_block in out_b.chunks_mut(TILE.saturating_mul(out_c).max(1)) {
            let (pixels, n, mut out_rows) = super::tiled_conv::tile_rows(out_block, out_c, outd.w, &mut pos);
            im2col_rows(p, in_b, &pixels[..n], cols, k, 2 * half);
            let (x0, rest) = cols.split_at(half.min(cols.len()));
            let (x1, rest) = rest.split_at(half.min(rest.len()));
            let (x2, rest) = rest.split_at(half.min(rest.len()));
            let x3 = rest.get(..half).unwrap_or(&[]);
            for (b, (wb, rq2)) in wp.chunks_exact(kp.max(1)).take(blocks).zip(rq.chunks_exact(2)).enumerate() {
                let mut acc = [[rq2[0].bias, rq2[1].bias]; TILE];
                let xs = x0.iter().zip(x1).zip(x2.iter().zip(x3));
                for (w, ((&a, &b1), (&c, &d))) in wb.chunks_exact(2).zip(xs) {
                    let (w0, w1) = (w[0], w[1]);
                    for (acc, x) in acc.iter_mut().zip([a, b1, c, d]) {
                        let xv = u32x4_splat(x);
                        acc[0] = i32x4_add(acc[0], i32x4_dot_i16x8(xv, w0));
                        acc[1] = i32x4_add(acc[1], i32x4_dot_i16x8(xv, w1));
                    }
                }
                let c0 = 8 * b;
                let nc = (out_c - c0).min(8);
                for (row, a) in out_rows.iter_mut().zip(&acc) {
                    let r0 = i32x4_min(i32x4_max(i32x4_add(rq2[0].apply(a[0]), out_off), lo), hi);
                    let r1 = i32x4_min(i32x4_max(i32x4_add(rq2[1].apply(a[1]), out_off), lo), hi);
                    let bytes = i8x16_narrow_i16x8(i16x8_narrow_i32x4(r0, r1), i16x8_splat(0));
                    match row.get_mut(c0..c0 + 8) {
                        Some(d) if nc == 8 => store8(d, bytes),
                        _ => store_partial(row.get_mut(c0..c0 + nc).unwrap_or(&mut []), bytes),
                    }
                }
            }
        }
    }
}

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

/// The first `d.len()` (at most 16) bytes of `v` into `d`.
#[inline(always)]
fn store_partial(d: &mut [i8], v: v128) {
    let mut t = [0i8; 16];
    store16(&mut t, v);
    d.iter_mut().zip(t).for_each(|(d, s)| *d = s);
}

/// The low 8 bytes of `v` into `d` (`d.len() == 8`; nothing otherwise).
#[inline(always)]
fn store8(d: &mut [i8], v: v128) {
    if let [_, _, _, _, _, _, _, _] = d {
        // SAFETY: the 8 bytes of `d` are inside the slice, which is borrowed mutably;
        // `v128_store64_lane` has no alignment requirement.
        unsafe { v128_store64_lane::<0>(v, d.as_mut_ptr() as *mut u64) }
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

/// 16 bytes into `d` (`d.len() == 16`; nothing otherwise).
#[inline(always)]
fn store16(d: &mut [i8], v: v128) {
    if let [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _] = d {
        // SAFETY: the 16 bytes of `d` are inside the slice, which is borrowed mutably;
        // `v128_store` has no alignment requirement.
        unsafe { v128_store(d.as_mut_ptr() as *mut v128, v) }
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
#[cfg(mq_relaxed_simd)]
pub(crate) struct RelaxedTile;

#[cfg(mq_relaxed_simd)]
impl ConvTile for RelaxedTile {
    #[inline(always)]
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, _kp: usize) {
        let cols: &mut [i8] = bytemuck::cast_slice_mut(cols);
        let stride = k.div_ceil(16) * 16;
        let zp = (-p.input_offset) as i8; // the input zero point, in [-128, 127]
        let c = p.input.c;
        fill_patches(cols, stride, pixels, k, zp, |oy, ox, body| {
            let mut runs = body.chunks_exact_mut(c.max(1));
            super::tiled_conv::for_each_tap(p, in_b, oy, ox, |_, run| {
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
#[cfg(mq_relaxed_simd)]
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
#[cfg(mq_relaxed_simd)]
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

/// int8 ADD without broadcasting (the wasm form of [`super::add::add_s8_elementwise`]). Each input's
/// rescaling depends on its byte alone, so it is tabulated once per call ([`AddInputScale::apply`]
/// for the 256 byte values of each input, 2 KB on the stack) when the tensor is long enough to
/// pay for it; then, 16 elements per step, the two table entries are summed (wrapping, as the
/// scalar `wrapping_add`), and the 16 sums are requantized as four `i32x4` by [`LaneRequant`]
/// with the output multiplier in every lane, offset, clamped to `[lo, hi]` (within int8, so the
/// saturating narrowing is exact) and stored. Short tensors and the last `len % 16` elements run
/// the scalar form. `r` is the output's requantization; `clamp` is `(output offset, lo, hi)`; the
/// slices have one length (checked by the caller).
pub(crate) fn add_s8(
    s1: &AddInputScale,
    s2: &AddInputScale,
    r: ChannelRequant,
    clamp: (i32, i32, i32),
    in1: &[i8],
    in2: &[i8],
    out: &mut [i8],
) {
    let (off, lo, hi) = clamp;
    let scalar = |o: &mut [i8], a: &[i8], b: &[i8]| {
        for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
            let sum = s1.apply(a).wrapping_add(s2.apply(b));
            *o = r.apply(sum).wrapping_add(off).max(lo).min(hi) as i8;
        }
    };
    if out.len() < 256 {
        scalar(out, in1, in2);
        return;
    }
    let (mut t1, mut t2) = ([0i32; 256], [0i32; 256]);
    for (i, (a, b)) in t1.iter_mut().zip(t2.iter_mut()).enumerate() {
        let x = i as u8 as i8;
        (*a, *b) = (s1.apply(x), s2.apply(x));
    }
    let rq = LaneRequant::from_channel(r);
    let (voff, vlo, vhi) = (i32x4_splat(off), i32x4_splat(lo), i32x4_splat(hi));
    let mut o16 = out.chunks_exact_mut(16);
    let (mut a16, mut b16) = (in1.chunks_exact(16), in2.chunks_exact(16));
    for ((o, a), b) in (&mut o16).zip(&mut a16).zip(&mut b16) {
        let mut sums = [0i32; 16];
        for ((d, &x1), &x2) in sums.iter_mut().zip(a).zip(b) {
            *d = t1[x1 as u8 as usize].wrapping_add(t2[x2 as u8 as usize]);
        }
        // SAFETY: `[i32; 16]` and `[v128; 4]` have the same size, and every bit pattern is a
        // valid `v128`.
        let v: [v128; 4] = unsafe { core::mem::transmute::<[i32; 16], [v128; 4]>(sums) };
        let q = v.map(|s| i32x4_min(i32x4_max(i32x4_add(rq.apply(s), voff), vlo), vhi));
        store16(o, i8x16_narrow_i16x8(i16x8_narrow_i32x4(q[0], q[1]), i16x8_narrow_i32x4(q[2], q[3])));
    }
    scalar(o16.into_remainder(), a16.remainder(), b16.remainder());
}

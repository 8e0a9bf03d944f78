//! The wasm SIMD convolution: output channels in the lanes ([`conv_s8_lanes`], weights packed per
//! call) for patches up to 640 values and up to 256 filters, else the tiled convolution with
//! [`SimdTile`] (2 filters x 4 pixels, sums across lanes).

use crate::kernels::arch::scratch::conv_scratch_words;
use crate::kernels::arch::scratch::padded_patch_len;
use crate::kernels::arch::tiled_conv::tile_rows;
use core::arch::wasm32::*;

use super::{LaneRequant, load_i16x8, load8_i16, store_partial, store8};
use crate::kernels::arch::portable::{cols_i16, fill_patches, im2col_natural};
use crate::kernels::arch::requant::ChannelRequant;
use crate::kernels::arch::scratch::TILE;
use crate::kernels::arch::tiled_conv::{ConvOperands, ConvTile};
use crate::kernels::params::ConvParams;
use crate::kernels::window::input_coord;

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
    let kp = padded_patch_len(k);
    let words = conv_scratch_words(k);
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
    let kp = padded_patch_len(k);
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
            let (pixels, n, mut out_rows) = tile_rows(out_block, out_c, outd.w, &mut pos);
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

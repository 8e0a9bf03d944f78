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
//! The `v128` loads are unaligned (wasm allows any alignment) from slices whose length is
//! checked first; they are the only `unsafe` here.
#![allow(unsafe_code)]

use core::arch::wasm32::*;

#[cfg(all(feature = "relaxed-simd", not(target_feature = "relaxed-simd")))]
compile_error!("the `relaxed-simd` feature needs `-C target-feature=+simd128,+relaxed-simd` on wasm32");

use super::portable::{cols_i16, im2col_natural};
use super::{ConvTile, OutputScale, TILE};
use crate::kernels::conv::ConvParams;
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
/// values at a time: one filter chunk extended once, `i32x4.dot_i16x8_s` with each of the 4
/// patches.
#[cfg_attr(all(feature = "relaxed-simd", target_feature = "relaxed-simd"), allow(dead_code))]
pub(crate) struct SimdTile;

impl ConvTile for SimdTile {
    #[inline(always)]
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, kp: usize) {
        im2col_natural(p, in_b, pixels, cols, k, kp);
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
        [
            acc[0].wrapping_add(hsum(s0)),
            acc[1].wrapping_add(hsum(s1)),
            acc[2].wrapping_add(hsum(s2)),
            acc[3].wrapping_add(hsum(s3)),
        ]
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
        for (q, patch) in cols.chunks_exact_mut(stride.max(1)).enumerate().take(TILE) {
            let Some(&(oy, ox)) = pixels.get(q) else {
                patch.fill(zp);
                continue;
            };
            let (body, tail) = patch.split_at_mut(k.min(patch.len()));
            tail.fill(zp);
            let mut runs = body.chunks_exact_mut(c.max(1));
            super::for_each_tap(p, in_b, oy, ox, |_, run| {
                let Some(dst) = runs.next() else { return };
                match run {
                    Some(src) => dst.copy_from_slice(src),
                    None => dst.fill(zp),
                }
            });
        }
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

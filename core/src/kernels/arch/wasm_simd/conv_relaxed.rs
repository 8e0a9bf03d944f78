//! The conv tile with relaxed SIMD's int8 dot product ([`RelaxedTile`]; the `relaxed-simd`
//! feature), beside its fixed-SIMD sibling in `conv`: the weights split into 7-bit halves so the
//! result is deterministic.

use crate::kernels::arch::tiled_conv::for_each_tap;
use core::arch::wasm32::*;

use super::{hsum, load16};
use crate::kernels::arch::portable::fill_patches;
use crate::kernels::arch::scratch::TILE;
use crate::kernels::arch::tiled_conv::ConvTile;
use crate::kernels::params::ConvParams;

/// Up to 16 bytes as a `v128`, zeros past the end of `b`.
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
pub(crate) struct RelaxedTile;

impl ConvTile for RelaxedTile {
    #[inline(always)]
    fn im2col(p: &ConvParams, in_b: &[i8], pixels: &[(usize, usize)], cols: &mut [u32], k: usize, _kp: usize) {
        let cols: &mut [i8] = bytemuck::cast_slice_mut(cols);
        let stride = k.div_ceil(16) * 16;
        let zp = (-p.input_offset) as i8; // the input zero point, in [-128, 127]
        let c = p.input.c;
        fill_patches(cols, stride, pixels, k, zp, |oy, ox, body| {
            let mut runs = body.chunks_exact_mut(c.max(1));
            for_each_tap(p, in_b, oy, ox, |_, run| {
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

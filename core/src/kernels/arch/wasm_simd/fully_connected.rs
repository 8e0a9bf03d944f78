//! The wasm SIMD fully connected kernel ([`fully_connected_s8`]): `i32x4.dot_i16x8_s`, 4 filters
//! per pass.

use core::arch::wasm32::*;

use super::{hsum, load8_i16, load16};
use crate::kernels::arch::requant::OutputScale;
use crate::kernels::params::FullyConnectedParams;

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

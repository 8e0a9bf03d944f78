//! The wasm SIMD int8 ADD ([`add_s8`]): each input's rescaling tabulated per call, the sums
//! requantized 16 at a time in `i32x4`.

use core::arch::wasm32::*;

use super::{LaneRequant, store16};
use crate::kernels::arch::requant::{AddInputScale, ChannelRequant};

/// int8 ADD without broadcasting (the wasm form of [`crate::kernels::arch::add::add_s8_elementwise`]). Each input's
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

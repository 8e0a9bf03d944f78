//! The entropy observer's KL window search ([`crate::observer::entropy`]) in `f32x4`: the
//! pairwise sums, the smoothing, the uniform-group test and the divergence terms (divisions,
//! logarithms) of each window, with the same `f32` operations in the same order as the portable
//! steps (`PortableLanes`: wasm has no fused multiply-add, and every operation here is correctly
//! rounded IEEE), so the same values bit for bit. The logarithm is `libm::logf`'s algorithm
//! (FreeBSD's `e_logf.c`) in every build, which is why host and wasm choose the same entropy
//! range. The only `unsafe` is the unaligned `v128` loads and stores of slices whose length is
//! checked first.

use core::arch::wasm32::*;

use crate::observer::entropy::logf_consts::{LG1, LG2, LG3, LG4, LN2_HI, LN2_LO};
use crate::observer::entropy::{KlLanes, LOG_LANES};

/// The window search's steps in `f32x4` ([`KlLanes`]).
pub(crate) struct KlSimd;

impl KlLanes for KlSimd {
    #[inline(always)]
    fn sum(a: &[f32]) -> f32 {
        numpy_sum(a)
    }

    #[inline(always)]
    fn smooth(p: &mut [f32]) -> bool {
        smooth(p)
    }

    #[inline(always)]
    fn uniform(a: &[f32; LOG_LANES], b: &[f32; LOG_LANES]) -> bool {
        let pa = u32x4_splat(a[0].to_bits());
        let pb = u32x4_splat(b[0].to_bits());
        let same = v128_and(
            v128_and(i32x4_eq(load4(a, 0), pa), i32x4_eq(load4(a, 4), pa)),
            v128_and(i32x4_eq(load4(b, 0), pb), i32x4_eq(load4(b, 4), pb)),
        );
        i32x4_all_true(same)
    }

    #[inline(always)]
    fn terms(a: &mut [f32; LOG_LANES], b: &[f32; LOG_LANES], sp: f32, sq: f32) {
        kl_terms(a, b, sp, sq);
    }
}

/// 4 values of `c` (`c.len() == 4`; zeros otherwise).
#[inline(always)]
fn load(c: &[f32]) -> v128 {
    match c {
        // SAFETY: the 4 values (16 bytes) of `c` are inside the slice; `v128_load` has no
        // alignment requirement.
        [_, _, _, _] => unsafe { v128_load(c.as_ptr() as *const v128) },
        _ => f32x4_splat(0.0),
    }
}

/// The lanes of `v` into `c` (`c.len() == 4`; nothing otherwise).
#[inline(always)]
fn store(c: &mut [f32], v: v128) {
    if let [_, _, _, _] = c {
        // SAFETY: the 4 values (16 bytes) of `c` are inside the slice, borrowed mutably;
        // `v128_store` has no alignment requirement.
        unsafe { v128_store(c.as_mut_ptr() as *mut v128, v) }
    }
}

/// `numpy_sum_f32` with its eight accumulators in two vectors: lane `j` of the pair is
/// accumulator `j`, added to in the same order, folded in the same order.
fn numpy_sum(a: &[f32]) -> f32 {
    let n = a.len();
    if n < 8 {
        let mut r = 0.0f32;
        for &v in a {
            r += v;
        }
        r
    } else if n <= 128 {
        let mut chunks = a.chunks_exact(8);
        let (mut lo, mut hi) = match chunks.next() {
            Some(c) => (load(c.get(..4).unwrap_or(&[])), load(c.get(4..).unwrap_or(&[]))),
            None => (f32x4_splat(0.0), f32x4_splat(0.0)),
        };
        for c in chunks.by_ref() {
            lo = f32x4_add(lo, load(c.get(..4).unwrap_or(&[])));
            hi = f32x4_add(hi, load(c.get(4..).unwrap_or(&[])));
        }
        let l = |v: v128| {
            (
                f32x4_extract_lane::<0>(v),
                f32x4_extract_lane::<1>(v),
                f32x4_extract_lane::<2>(v),
                f32x4_extract_lane::<3>(v),
            )
        };
        let ((r0, r1, r2, r3), (r4, r5, r6, r7)) = (l(lo), l(hi));
        let mut res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
        for &v in chunks.remainder() {
            res += v;
        }
        res
    } else {
        let n2 = n / 2 - (n / 2) % 8;
        match (a.get(..n2), a.get(n2..)) {
            (Some(l), Some(r)) => numpy_sum(l) + numpy_sum(r),
            _ => 0.0,
        }
    }
}

/// The entropy observer's `smooth` (ORT's `smooth_distribution`): the zeros counted 4 lanes at
/// a time, then `eps` added to each zero and `-eps1` to the others, the same sums.
fn smooth(p: &mut [f32]) -> bool {
    let zero = f32x4_splat(0.0);
    let mut zeros4 = i32x4_splat(0);
    let mut chunks = p.chunks_exact(4);
    for c in chunks.by_ref() {
        // A zero lane's comparison is -1: subtracting counts it.
        zeros4 = i32x4_sub(zeros4, f32x4_eq(load(c), zero));
    }
    let tail = chunks.remainder().iter().filter(|&&v| v == 0.0).count();
    let lanes = [
        i32x4_extract_lane::<0>(zeros4),
        i32x4_extract_lane::<1>(zeros4),
        i32x4_extract_lane::<2>(zeros4),
        i32x4_extract_lane::<3>(zeros4),
    ];
    let n_zeros = lanes.iter().map(|&c| c as usize).sum::<usize>() + tail;
    let n_nonzeros = p.len() - n_zeros;
    if n_nonzeros == 0 {
        return false;
    }
    let eps = 0.0001f64;
    let eps1 = eps * n_zeros as f64 / n_nonzeros as f64;
    if eps1 >= 1.0 {
        return false;
    }
    let (e, e1) = (eps as f32, (-eps1) as f32);
    let (ve, ve1) = (f32x4_splat(e), f32x4_splat(e1));
    let mut chunks = p.chunks_exact_mut(4);
    for c in chunks.by_ref() {
        let v = load(c);
        store(c, f32x4_add(v, v128_bitselect(ve, ve1, f32x4_eq(v, zero))));
    }
    for v in chunks.into_remainder() {
        *v += if *v == 0.0 { e } else { e1 };
    }
    true
}

/// `a[i..i + 4]` as a vector.
#[inline(always)]
fn load4(a: &[f32; LOG_LANES], i: usize) -> v128 {
    f32x4(a[i], a[i + 1], a[i + 2], a[i + 3])
}

/// The lanes of `v` into `a[i..i + 4]`.
#[inline(always)]
fn store4(a: &mut [f32; LOG_LANES], i: usize, v: v128) {
    a[i] = f32x4_extract_lane::<0>(v);
    a[i + 1] = f32x4_extract_lane::<1>(v);
    a[i + 2] = f32x4_extract_lane::<2>(v);
    a[i + 3] = f32x4_extract_lane::<3>(v);
}

/// The reduction and rational approximation of `libm::logf` on each lane of `x` (bits of
/// positive normal finite values), as `logf_lanes` computes them. Also exact for 1.0: it gives
/// `+0.0`, `libm::logf(1.0)`'s value.
#[inline(always)]
fn logf4_normal(x: v128) -> v128 {
    let ix = i32x4_add(x, u32x4_splat(0x3f80_0000 - 0x3f35_04f3));
    let k = i32x4_sub(u32x4_shr(ix, 23), i32x4_splat(0x7f));
    let f = f32x4_sub(i32x4_add(v128_and(ix, u32x4_splat(0x007f_ffff)), u32x4_splat(0x3f35_04f3)), f32x4_splat(1.0));
    let s = f32x4_div(f, f32x4_add(f32x4_splat(2.0), f));
    let z = f32x4_mul(s, s);
    let w = f32x4_mul(z, z);
    let t1 = f32x4_mul(w, f32x4_add(f32x4_splat(LG2), f32x4_mul(w, f32x4_splat(LG4))));
    let t2 = f32x4_mul(z, f32x4_add(f32x4_splat(LG1), f32x4_mul(w, f32x4_splat(LG3))));
    let r = f32x4_add(t2, t1);
    let hfsq = f32x4_mul(f32x4_mul(f32x4_splat(0.5), f), f);
    let dk = f32x4_convert_i32x4(k);
    // s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI, left to right.
    let mut o = f32x4_mul(s, f32x4_add(hfsq, r));
    o = f32x4_add(o, f32x4_mul(dk, f32x4_splat(LN2_LO)));
    o = f32x4_sub(o, hfsq);
    o = f32x4_add(o, f);
    f32x4_add(o, f32x4_mul(dk, f32x4_splat(LN2_HI)))
}

/// `libm::logf` of each lane of `x`, bit for bit: [`logf4_normal`], and `libm::logf` itself on
/// the lanes outside the positive normal finite values (zeros, negatives, subnormals,
/// infinities, NaN).
#[inline(always)]
fn logf4(x: v128) -> v128 {
    let special = v128_or(u32x4_lt(x, u32x4_splat(0x0080_0000)), u32x4_ge(x, u32x4_splat(0x7f80_0000)));
    let out = logf4_normal(x);
    if !v128_any_true(special) {
        return out;
    }
    let mut v = [0f32; LOG_LANES];
    let mut o = [0f32; LOG_LANES];
    store4(&mut v, 0, x);
    store4(&mut o, 0, out);
    for (o, &v) in o.iter_mut().zip(&v).take(4) {
        let ix = v.to_bits();
        if !(0x0080_0000..0x7f80_0000).contains(&ix) {
            *o = libm::logf(v);
        }
    }
    load4(&o, 0)
}

/// `libm::logf` of each value, bit for bit (`logf_lanes` in `f32x4`).
pub(crate) fn logf_lanes(x: [f32; LOG_LANES]) -> [f32; LOG_LANES] {
    let mut out = [0f32; LOG_LANES];
    for i in [0, 4] {
        store4(&mut out, i, logf4(load4(&x, i)));
    }
    out
}

/// `kl_terms_lanes` in `f32x4`: `a` (the smoothed `p`) becomes each position's term
/// `p · log(p / q)` of `p / sp` and `q / sq` (0 where `p` is 0 and `q` is not negative,
/// infinite where either is not positive otherwise).
#[inline(always)]
fn kl_terms(a: &mut [f32; LOG_LANES], b: &[f32; LOG_LANES], sp: f32, sq: f32) {
    let (vsp, vsq, zero, one) = (f32x4_splat(sp), f32x4_splat(sq), f32x4_splat(0.0), f32x4_splat(1.0));
    for i in [0, 4] {
        let p = f32x4_div(load4(a, i), vsp);
        let q = f32x4_div(load4(b, i), vsq);
        let both = v128_and(f32x4_gt(p, zero), f32x4_gt(q, zero));
        // The ratio where both are positive, 1 elsewhere (its logarithm unused there).
        let ratio = v128_bitselect(f32x4_div(p, q), one, both);
        let term = v128_bitselect(f32x4_mul(p, logf4(ratio)), f32x4_splat(f32::INFINITY), both);
        let nothing = v128_and(f32x4_eq(p, zero), f32x4_ge(q, zero));
        store4(a, i, v128_bitselect(zero, term, nothing));
    }
}

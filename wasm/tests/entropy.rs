//! The entropy observer's KL window search in wasm with `simd128` (the divergence terms in
//! `f32x4`, core's `kernels::arch::wasm_simd`) against the portable lanes, bit for bit: the same
//! least divergence and window on many histograms (dense, one-sided, sparse, spiky, random), and
//! the `f32x4` logarithm against `libm::logf` (every build's logarithm, so host and wasm choose
//! the same entropy range). Runs under `wasm-pack test --node wasm -- --test entropy`.
#![cfg(target_arch = "wasm32")]

use microquant::observer::{kl_search_dispatched, kl_search_portable, logf_lanes_dispatched};
use microquant_tests::rng::SplitMix64;
use wasm_bindgen_test::wasm_bindgen_test;

type Best = Option<(u32, usize, usize)>;

fn bits(r: Option<(f32, usize, usize)>) -> Best {
    r.map(|(d, a, b)| (d.to_bits(), a, b))
}

fn check<const N: usize>(hist: &[u64; N], nq: usize, what: &str) {
    let want = bits(kl_search_portable(hist, nq));
    assert_eq!(bits(kl_search_dispatched(hist, nq)), want, "{what}, nq {nq}");
}

#[wasm_bindgen_test]
fn simd_search_matches_the_portable_lanes() {
    let mut rng = SplitMix64::new(23);
    let mut next = move || rng.next_u64();
    for case in 0..48u64 {
        let mut h = [0u64; 2048];
        let width = 1.0 + (case % 7) as f64 * 3.0;
        let scale = [20_000.0, 500.0, 7.0, 3_000_000.0][(case / 7 % 4) as usize];
        for (k, v) in h.iter_mut().enumerate() {
            let x = (k as f64 - 1024.0) / (16.0 * width);
            let dense = (scale * (-x * x / 2.0).exp()) as u64;
            *v = match case % 6 {
                0 => dense + next() % 3,
                1 if k < 1024 => 0,
                1 => dense,
                2 => u64::from(next().is_multiple_of(7)) * (next() % 50),
                3 => dense / 8 + u64::from(k.is_multiple_of(97)) * 1000,
                4 => next() % 1000,
                _ => u64::from(k.abs_diff(1024) < 40) * (dense + next() % 5),
            };
        }
        if case.is_multiple_of(3) {
            h[2047] += 5; // an outlier at the end
            h[next() as usize % 2048] += 10_000;
        }
        check(&h, 128, &format!("case {case}"));
    }
    let mut small = [0u64; 128];
    for (k, v) in small.iter_mut().enumerate().skip(64) {
        *v = k as u64 + 7 * (k as u64 % 5);
    }
    check(&small, 128, "128 bins");
    check(&small, 16, "128 bins");
    check(&[0u64; 64], 8, "empty");
}

#[wasm_bindgen_test]
fn simd_logarithm_is_libm_bit_for_bit() {
    let mut values = vec![
        1.0f32,
        0.0,
        -0.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::MAX,
        1e-40,
        0.707_106_77,
        core::f32::consts::FRAC_1_SQRT_2,
        core::f32::consts::SQRT_2,
        1.000_000_1,
        0.999_999_94,
        2.0,
        0.5,
    ];
    let mut s = 0x1234_5678u32;
    for _ in 0..400_000 {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        // Positive normal numbers over every exponent, and some of everything else.
        let bits = if s.is_multiple_of(16) { s } else { (s % 0x7f00_0000) + 0x0080_0000 };
        values.push(f32::from_bits(bits));
    }
    for chunk in values.chunks(8) {
        let mut lanes = [1f32; 8];
        lanes[..chunk.len()].copy_from_slice(chunk);
        let got = logf_lanes_dispatched(lanes);
        for (&v, g) in lanes.iter().zip(got) {
            let want = libm::logf(v);
            assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "logf({v:e}): {g:e} vs {want:e}");
        }
    }
}

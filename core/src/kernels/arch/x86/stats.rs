//! The calibration statistics' per-value loops compiled a second time with AVX2 and chosen at
//! run time when the CPU has it: the candidate ranges' quantization errors of the automatic
//! observer ([`crate::ptq::auto::errors::error_sums`]) and the report's sums of squares
//! ([`crate::ptq::report::measure::squares`]). The same Rust code, the same `f64` operations in
//! the same order (AVX2 does not enable FMA and Rust fuses nothing): the same sums bit for bit,
//! with 4 lanes per instruction where the baseline build has 2.

use crate::ptq::auto::CANDIDATES;

/// [`crate::ptq::auto::errors::error_sums`] with AVX2 code generation.
#[target_feature(enable = "avx2")]
fn error_sums_avx2<const N: usize>(x: &[f32], step: usize, params: &[[f64; 4]; CANDIDATES]) -> [f64; N] {
    crate::ptq::auto::errors::error_sums::<N>(x, step, params)
}

/// [`error_sums_avx2`] when the CPU has AVX2, else `None`.
pub(crate) fn error_sums<const N: usize>(x: &[f32], step: usize, params: &[[f64; 4]; CANDIDATES]) -> Option<[f64; N]> {
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2, checked on the line above.
        return Some(unsafe { error_sums_avx2::<N>(x, step, params) });
    }
    None
}

/// [`crate::ptq::report::measure::squares`] with AVX2 code generation.
#[target_feature(enable = "avx2")]
fn squares_avx2(f: &[f32], q: &[f32]) -> (f64, f64, f32) {
    crate::ptq::report::measure::squares(f, q)
}

/// [`squares_avx2`] when the CPU has AVX2, else `None`.
pub(crate) fn squares(f: &[f32], q: &[f32]) -> Option<(f64, f64, f32)> {
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the only precondition of calling a `#[target_feature(enable = "avx2")]`
        // function is that the CPU supports AVX2, checked on the line above.
        return Some(unsafe { squares_avx2(f, q) });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::arch::test_rng::Rng;

    /// The AVX2 builds give the portable build's sums bit for bit (the CI machines have AVX2;
    /// elsewhere there is nothing to compare).
    #[test]
    fn avx2_sums_are_the_portable_sums() {
        let mut rng = Rng(41);
        let mut unit = move || (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
        for len in [0usize, 1, 7, 8, 9, 1000, 8193] {
            let x: std::vec::Vec<f32> = (0..len).map(|_| unit() * 12.0 - 6.0).collect();
            let y: std::vec::Vec<f32> = x.iter().map(|v| v + unit() * 0.1).collect();
            let params: [[f64; 4]; CANDIDATES] = core::array::from_fn(|c| {
                let scale = 0.01 + 0.007 * c as f64;
                [scale, (c as f64) - 3.0, -128.0, 127.0]
            });
            for step in [1, 3] {
                if let Some(fast) = error_sums::<CANDIDATES>(&x, step, &params) {
                    let portable = crate::ptq::auto::errors::error_sums::<CANDIDATES>(&x, step, &params);
                    assert_eq!(fast.map(f64::to_bits), portable.map(f64::to_bits), "{len} values, step {step}");
                }
                if let Some(fast) = error_sums::<3>(&x, step, &params) {
                    let portable = crate::ptq::auto::errors::error_sums::<3>(&x, step, &params);
                    assert_eq!(fast.map(f64::to_bits), portable.map(f64::to_bits), "{len} values, step {step}");
                }
            }
            if let Some((s, n, m)) = squares(&x, &y) {
                let (ps, pn, pm) = crate::ptq::report::measure::squares(&x, &y);
                assert_eq!(
                    (s.to_bits(), n.to_bits(), m.to_bits()),
                    (ps.to_bits(), pn.to_bits(), pm.to_bits()),
                    "{len}"
                );
            }
        }
    }
}

//! Pass 2 of the automatic observer: each candidate range's squared error of quantizing a
//! sample as the int8 model will, in one pass over the sample's values.

use super::{CANDIDATES, Errors, bits};
use crate::Error;
use crate::observer::ObserverConfig;

impl Errors {
    /// One sample of the error pass: `range` is the sample's ([`sample_range`]), `x` its values
    /// of which every `step`-th is measured. An outlier is counted, a sample without finite
    /// values skipped.
    pub(super) fn add_sample(
        &mut self,
        range: Option<(f32, f32)>,
        x: &[f32],
        step: usize,
        cfg: &ObserverConfig,
    ) -> Result<(), Error> {
        let Some((lo, hi)) = range else { return Ok(()) };
        if lo < self.fences.0 || hi > self.fences.1 {
            self.outliers += 1;
            return Ok(());
        }
        let row = sample_errors(x, step, &self.ranges, cfg)?;
        self.errors.push(row);
        Ok(())
    }
}

/// Elements of one sample that the statistics of pass 1 (the histograms; not the min and max)
/// and the errors of pass 2 take, at most: a larger tensor is measured on every `k`-th element
/// (`k = ceil(len / ERROR_ELEMENTS)`), an unbiased sample of its values at a fraction of the cost
/// (three histograms and seven candidates' errors of a 112×112×96 activation on every element
/// cost more than running the layer).
pub const ERROR_ELEMENTS: usize = 8192;

/// Each candidate's sum of squared errors of quantizing `x` (every `step`-th element: `k`, see
/// [`ERROR_ELEMENTS`], or 1 for values kept already strided) as the int8 model does (`quantize::quantize_values`: `round(x / scale)`
/// half away from zero, plus the zero point, clamped to int8; then `(q - zero_point) · scale`).
fn sample_errors(
    x: &[f32],
    step: usize,
    ranges: &[(f32, f32); CANDIDATES],
    cfg: &ObserverConfig,
) -> Result<[f64; CANDIDATES], Error> {
    // The distinct ranges' parameters (scale, zero point, qmin, qmax), and which of them each
    // candidate has: candidates with the range of an earlier one have its error, computed once.
    let mut params = [[0f64; 4]; CANDIDATES];
    let mut which = [0usize; CANDIDATES];
    let mut distinct = 0;
    for c in 0..CANDIDATES {
        if let Some(d) = (0..c).find(|&d| bits(ranges[d]) == bits(ranges[c])) {
            which[c] = which[d];
            continue;
        }
        let p = cfg.qparams_for(ranges[c].0, ranges[c].1)?;
        params[distinct] = [f64::from(p.scale()), f64::from(p.zero_point()), f64::from(p.qmin()), f64::from(p.qmax())];
        which[c] = distinct;
        distinct += 1;
    }
    let sums = match distinct {
        1 => spread(best_error_sums::<1>(x, step, &params)),
        2 => spread(best_error_sums::<2>(x, step, &params)),
        3 => spread(best_error_sums::<3>(x, step, &params)),
        4 => spread(best_error_sums::<4>(x, step, &params)),
        5 => spread(best_error_sums::<5>(x, step, &params)),
        6 => spread(best_error_sums::<6>(x, step, &params)),
        _ => best_error_sums::<CANDIDATES>(x, step, &params),
    };
    Ok(which.map(|d| sums[d]))
}

/// `N` sums widened to `CANDIDATES` (the rest 0, never read).
fn spread<const N: usize>(sums: [f64; N]) -> [f64; CANDIDATES] {
    let mut out = [0f64; CANDIDATES];
    out[..N].copy_from_slice(&sums);
    out
}

/// [`error_sums`], compiled with AVX2 on x86-64 when the CPU has it (the same operations in
/// the same order, none fused: the same sums bit for bit).
fn best_error_sums<const N: usize>(x: &[f32], step: usize, params: &[[f64; 4]; CANDIDATES]) -> [f64; N] {
    #[cfg(all(mq_portable, target_arch = "x86_64", feature = "std"))]
    if let Some(sums) = crate::kernels::arch::x86::stats::error_sums::<N>(x, step, params) {
        return sums;
    }
    error_sums::<N>(x, step, params)
}

/// The sums of squared errors of the first `N` parameter sets `[scale, zero point, qmin, qmax]`
/// over every `step`-th finite value of `x`, in one pass: each sum adds its terms in the values'
/// order (the same sums bit for bit as one candidate at a time), and the `N` chains of additions
/// overlap (`N` accumulators, kept in registers).
#[inline(always)]
pub(crate) fn error_sums<const N: usize>(x: &[f32], step: usize, params: &[[f64; 4]; CANDIDATES]) -> [f64; N] {
    let mut acc = [0f64; N];
    for &v in x.iter().step_by(step) {
        if !v.is_finite() {
            continue;
        }
        let v = f64::from(v);
        for (a, &[scale, zp, qmin, qmax]) in acc.iter_mut().zip(params) {
            // The clamp of a number (no NaN here: `v` is finite, the scale positive), written as
            // comparisons so that it compiles to plain min and max instructions.
            let q = round_half_away(v / scale) + zp;
            let q = if q < qmin { qmin } else { q };
            let q = if q > qmax { qmax } else { q };
            let d = v - (q - zp) * scale;
            *a += d * d;
        }
    }
    acc
}

/// Beyond this `|x / scale|` every candidate's quantized value is clamped (zero points and
/// bounds are within ±2^15): [`round_half_away`] takes values clamped to it.
const ROUND_LIMIT: f64 = (1u32 << 20) as f64;

/// `libm::round(y)` (half away from zero) of `y` clamped to `±ROUND_LIMIT`: the truncation
/// through `i32` and the fraction `y − trunc(y)` are exact there, so is the result, and the
/// code has no branches (it vectorizes). Zeros come out `+0.0` where `libm::round` keeps the
/// sign; adding the zero point erases the difference.
#[inline(always)]
fn round_half_away(y: f64) -> f64 {
    // The clamp as comparisons (plain min and max instructions; `y` is never NaN here).
    let y = if y < -ROUND_LIMIT { -ROUND_LIMIT } else { y };
    let y = if y > ROUND_LIMIT { ROUND_LIMIT } else { y };
    let t = f64::from(y as i32);
    let f = y - t;
    t + if f >= 0.5 {
        1.0
    } else if f <= -0.5 {
        -1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptq::auto::tests::{CFG, samples};
    use alloc::vec;
    use alloc::vec::Vec;

    /// The one-pass errors equal the candidate-by-candidate sums bit for bit (equal ranges,
    /// non-finite values skipped, strided).
    #[test]
    fn sample_errors_match_candidate_by_candidate_sums() -> Result<(), Error> {
        let reference = |x: &[f32], step: usize, ranges: &[(f32, f32); CANDIDATES]| -> Result<_, Error> {
            let mut out = [0f64; CANDIDATES];
            for c in 0..CANDIDATES {
                let p = CFG.qparams_for(ranges[c].0, ranges[c].1)?;
                let (scale, zp) = (f64::from(p.scale()), f64::from(p.zero_point()));
                let (qmin, qmax) = (f64::from(p.qmin()), f64::from(p.qmax()));
                for &v in x.iter().step_by(step).filter(|v| v.is_finite()) {
                    let v = f64::from(v);
                    let q = (libm::round(v / scale) + zp).clamp(qmin, qmax);
                    out[c] += (v - (q - zp) * scale) * (v - (q - zp) * scale);
                }
            }
            Ok(out)
        };
        let mut x: Vec<f32> = samples().concat();
        x[17] = f32::NAN;
        x[99] = f32::INFINITY;
        // 5 distinct ranges of 7, all 7 distinct, a single one.
        let range_sets = [
            [(0.0, 40.0), (0.0, 1.0), (-0.5, 0.9), (0.0, 1.0), (0.1, 0.2), (-3.0, 3.0), (0.0, 40.0)],
            [(0.0, 40.0), (0.0, 1.0), (-0.5, 0.9), (0.0, 2.0), (0.1, 0.2), (-3.0, 3.0), (0.0, 4.0)],
            [(-1.0, 1.0); CANDIDATES],
        ];
        for ranges in range_sets {
            for step in [1, 3, 64] {
                let got = sample_errors(&x, step, &ranges, &CFG)?;
                assert_eq!(got.map(f64::to_bits), reference(&x, step, &ranges)?.map(f64::to_bits), "step {step}");
            }
        }
        Ok(())
    }

    /// The branch-free rounding is `libm::round` (up to the sign of zero) below the limit, and
    /// clamps beyond it: random values of every magnitude, the halfway points and their
    /// neighbours.
    #[test]
    fn round_half_away_is_libm_round() {
        let mut s = 3u64;
        let mut values =
            vec![0.0f64, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 0.499_999_999_999_999_94, ROUND_LIMIT, -ROUND_LIMIT];
        for k in -1000i32..1000 {
            let h = f64::from(k) + 0.5;
            values.extend([h, f64::from_bits(h.to_bits() + 1), f64::from_bits(h.to_bits() - 1), f64::from(k)]);
        }
        for _ in 0..200_000 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let mag = f64::from((s >> 40) as u32 % 40) - 20.0;
            let frac = (s >> 11) as f64 / (1u64 << 53) as f64;
            let sign = if s & 1 == 0 { 1.0 } else { -1.0 };
            values.push(sign * libm::exp2(mag) * (1.0 + frac));
        }
        for &y in &values {
            let want = libm::round(y.clamp(-ROUND_LIMIT, ROUND_LIMIT));
            let got = round_half_away(y);
            assert!(got == want, "round({y:e}): {got:e} vs {want:e}");
        }
    }
}

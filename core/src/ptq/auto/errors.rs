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
    // Per candidate: scale, zero point, qmin, qmax. Candidates with the range of an earlier one
    // have its parameters, so its error.
    let mut scale = [1f64; CANDIDATES];
    let mut zp = [0f64; CANDIDATES];
    let mut qmin = [0f64; CANDIDATES];
    let mut qmax = [0f64; CANDIDATES];
    for c in 0..CANDIDATES {
        if let Some(d) = (0..c).find(|&d| bits(ranges[d]) == bits(ranges[c])) {
            (scale[c], zp[c], qmin[c], qmax[c]) = (scale[d], zp[d], qmin[d], qmax[d]);
            continue;
        }
        let p = cfg.qparams_for(ranges[c].0, ranges[c].1)?;
        (scale[c], zp[c]) = (f64::from(p.scale()), f64::from(p.zero_point()));
        (qmin[c], qmax[c]) = (f64::from(p.qmin()), f64::from(p.qmax()));
    }
    // The squared error of `v` under candidate `c` (`max` then `min`: the clamp of a number).
    let term = |v: f64, c: usize| {
        let q = (round_half_away(v / scale[c]) + zp[c]).max(qmin[c]).min(qmax[c]);
        let d = v - (q - zp[c]) * scale[c];
        d * d
    };
    // Every candidate's sum in one pass over the values: each sum still adds its terms in the
    // values' order (the same sums bit for bit), and the seven chains of additions overlap
    // (seven accumulators, kept in registers).
    let (mut e0, mut e1, mut e2, mut e3, mut e4, mut e5, mut e6) = (0f64, 0f64, 0f64, 0f64, 0f64, 0f64, 0f64);
    for &v in x.iter().step_by(step) {
        if !v.is_finite() {
            continue;
        }
        let v = f64::from(v);
        e0 += term(v, 0);
        e1 += term(v, 1);
        e2 += term(v, 2);
        e3 += term(v, 3);
        e4 += term(v, 4);
        e5 += term(v, 5);
        e6 += term(v, 6);
    }
    Ok([e0, e1, e2, e3, e4, e5, e6])
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
    let y = y.clamp(-ROUND_LIMIT, ROUND_LIMIT);
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
        let ranges = [(0.0, 40.0), (0.0, 1.0), (-0.5, 0.9), (0.0, 1.0), (0.1, 0.2), (-3.0, 3.0), (0.0, 40.0)];
        for step in [1, 3, 64] {
            let got = sample_errors(&x, step, &ranges, &CFG)?;
            assert_eq!(got.map(f64::to_bits), reference(&x, step, &ranges)?.map(f64::to_bits), "step {step}");
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

//! The int8 ADD fast path (equal shapes), on every target with a fast path: each input's
//! rescaling through [`AddInputScale`], the sum's through [`RightShiftRequant`] on the Arm DSP
//! path, through [`ChannelRequant`] elsewhere (16 lanes at a time in wasm SIMD).
//!
//! [`RightShiftRequant`]: super::requant::RightShiftRequant

#[cfg(mq_dsp)]
use super::requant::RightShiftRequant;
use super::requant::{AddInputScale, ChannelRequant};
use crate::kernels::params::AddParams;

/// int8 ADD without broadcasting (TFLite's `left_shift` of 20): the inputs' rescaling through
/// [`AddInputScale`], the sum's through `out_scale` (the output multiplier), plus the output
/// offset, clamped. `false` (nothing written) outside the preconditions: int8 parameters
/// (`left_shift == 20`), equal shapes, lengths matching them, multipliers in their forms.
pub(crate) fn add_s8_elementwise(p: &AddParams, in1: &[i8], in2: &[i8], out: &mut [i8]) -> bool {
    // Helium first where it is built (4 elements per pass); it declines to the code below.
    #[cfg(mq_mve)]
    if super::arm_mve::add_s8(p, in1, in2, out) {
        return true;
    }
    let (m1, m2) = (p.input1_multiplier, p.input2_multiplier);
    let (Some(s1), Some(s2)) = (
        AddInputScale::new(p.input1_offset, m1.multiplier, m1.shift),
        AddInputScale::new(p.input2_offset, m2.multiplier, m2.shift),
    ) else {
        return false;
    };
    let n = p.broadcast.output_len();
    if p.left_shift != 20 || !p.broadcast.is_elementwise() || in1.len() != n || in2.len() != n || out.len() != n {
        return false;
    }
    let mo = p.output_multiplier;
    let (lo, hi, off) = (p.activation.min, p.activation.max, p.output_offset);
    #[cfg(mq_dsp)]
    if let Some(r) = RightShiftRequant::new(mo.multiplier, mo.shift) {
        for ((o, &a), &b) in out.iter_mut().zip(in1).zip(in2) {
            let sum = s1.apply(a).wrapping_add(s2.apply(b));
            *o = super::arm_dsp::requant_right_shift(r, sum).wrapping_add(off).max(lo).min(hi) as i8;
        }
        return true;
    }
    let Some(r) = ChannelRequant::new(mo.multiplier, mo.shift) else { return false };
    #[cfg(mq_wasm_simd)]
    super::wasm_simd::add_s8(&s1, &s2, r, (off, lo, hi), in1, in2, out);
    #[cfg(not(mq_wasm_simd))]
    for ((o, &a), &b) in out.iter_mut().zip(in1).zip(in2) {
        let sum = s1.apply(a).wrapping_add(s2.apply(b));
        *o = r.apply(sum).wrapping_add(off).max(lo).min(hi) as i8;
    }
    true
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::super::test_rng::Rng;

    /// The int8 ADD fast path is the reference kernel on random scales, offsets, clamps and data.
    #[test]
    fn add_s8_elementwise_matches_reference() {
        use crate::kernels::ActivationRange;
        use crate::kernels::Rounding;
        use crate::kernels::add::{AddParams, add_s8_reference};
        use crate::kernels::tensor::PerTensorQuant;
        let mut rng = Rng(0xadd5);
        let mut checked = 0;
        let cases = crate::test_support::cases(400);
        for case in 0..cases {
            let scale = |r: &mut Rng| 0.001 + (r.next() % 10_000) as f32 * 1e-4;
            let zp = |r: &mut Rng| (r.next() % 256) as i32 - 128;
            let (q1, q2, qo) = (
                PerTensorQuant::new(scale(&mut rng), zp(&mut rng)),
                PerTensorQuant::new(if case % 5 == 0 { 0.0 } else { scale(&mut rng) }, zp(&mut rng)),
                PerTensorQuant::new(scale(&mut rng) * 2.0, zp(&mut rng)),
            );
            let q2 = if case % 5 == 0 { PerTensorQuant::new(q1.scale, q2.zero_point) } else { q2 };
            let (a, b) = ((rng.next() % 256) as i32 - 128, (rng.next() % 256) as i32 - 128);
            let act =
                if case % 3 == 0 { ActivationRange::INT8 } else { ActivationRange { min: a.min(b), max: a.max(b) } };
            let n = 1 + (rng.next() % 300) as usize;
            let Ok(p) = AddParams::prepare_s8(q1, q2, qo, act, &[n], &[n], Rounding::Double) else { continue };
            let (x1, x2) = (rng.bytes(n), rng.bytes(n));
            let (mut want, mut got) = (std::vec![0i8; n], std::vec![0i8; n]);
            add_s8_reference(&p, &x1, &x2, &mut want).unwrap();
            assert!(super::add_s8_elementwise(&p, &x1, &x2, &mut got), "case {case}: fast path declined");
            assert_eq!(want, got, "case {case}");
            checked += n;
        }
        assert!(checked > 25 * cases as usize, "{checked} values checked");
    }
}

//! Parametric ReLU of a quantized tensor with a quantized slope tensor, broadcasting (TFLite
//! `PRELU`): int8 input and output, or int16 (16x8: int16 input and output, int8 alpha).
//!
//! ```text
//! v = x − zp_in
//! y = clamp(zp_out + v · m1)                      v ≥ 0      m1 = s_in / s_out
//! y = clamp(zp_out + (v · (alpha − zp_a)) · m2)   v < 0      m2 = s_in · s_a / s_out
//! ```
//!
//! each product by `m` TFLite's `MultiplyByQuantizedMultiplier` (double rounding, any shift).
//!
//! | [`Rounding`] | matches | multipliers computed as |
//! |---|---|---|
//! | `Double` | TFLite Micro (`prelu_common.cc`) | `(f64)s_in · (f64)s_a / (f64)s_out` |
//! | `Single` | the TFLite interpreter's reference kernel | the same expressions in `f32` (its Prepare), then widened |
//!
//! The integer arithmetic is the same in both; the multipliers differ in their last bits, which
//! moves an output next to a rounding step (one element of the 16x8 golden cases).
#![forbid(unsafe_code)]

use super::Rounding;
use super::tensor::{Broadcast, PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, multiply_by_quantized_multiplier, quantize_multiplier};

/// Prepared parameters of [`prelu_s8`] / [`prelu_s16`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PreluParams {
    /// `-zero_point` of the input.
    pub input_offset: i32,
    /// `-zero_point` of alpha.
    pub alpha_offset: i32,
    /// Zero point of the output.
    pub output_offset: i32,
    /// `s_in / s_out` (the identity branch).
    pub identity_multiplier: QuantizedMultiplier,
    /// `s_in · s_a / s_out` (the slope branch).
    pub alpha_multiplier: QuantizedMultiplier,
    /// The broadcast of the input and alpha shapes.
    pub broadcast: Broadcast,
    /// The rounding mode the parameters were prepared for.
    pub rounding: Rounding,
}

impl PreluParams {
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        kernel: &'static str,
        (qmin, qmax): (i32, i32),
        input: PerTensorQuant,
        alpha: PerTensorQuant,
        output: PerTensorQuant,
        input_shape: &[usize],
        alpha_shape: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        input.check(qmin, qmax)?;
        alpha.check(-128, 127)?;
        output.check(qmin, qmax)?;
        let broadcast = Broadcast::new(input_shape, alpha_shape)?;
        // TFLite Micro divides in f64; the interpreter's Prepare (`activations.cc`) writes the
        // same expressions on the f32 scales, so they are computed in f32 there.
        let (real1, real2) = match rounding {
            Rounding::Double => (
                input.scale as f64 / output.scale as f64,
                input.scale as f64 * alpha.scale as f64 / output.scale as f64,
            ),
            Rounding::Single => {
                ((input.scale / output.scale) as f64, (input.scale * alpha.scale / output.scale) as f64)
            }
        };
        let (m1, m2) = (quantize_multiplier(real1), quantize_multiplier(real2));
        for m in [m1, m2] {
            if !(-31..=30).contains(&m.shift) {
                return Err(Error::BadKernelArgument { kernel, reason: "a multiplier is outside [2^-31, 2^30]" });
            }
        }
        Ok(Self {
            input_offset: -input.zero_point,
            alpha_offset: -alpha.zero_point,
            output_offset: output.zero_point,
            identity_multiplier: m1,
            alpha_multiplier: m2,
            broadcast,
            rounding,
        })
    }

    /// Prepares an int8 PRELU (TFLite `PRELU` Prepare: `CalculatePreluParams`) of an input of
    /// `input_shape` and an int8 alpha of `alpha_shape` (shapes that broadcast).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization parameters,
    /// [`Error::BadKernelArgument`] if the shapes do not broadcast or a multiplier is out of
    /// range.
    pub fn prepare_s8(
        input: PerTensorQuant,
        alpha: PerTensorQuant,
        output: PerTensorQuant,
        input_shape: &[usize],
        alpha_shape: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare("prelu_s8", (-128, 127), input, alpha, output, input_shape, alpha_shape, rounding)
    }

    /// Prepares a 16x8 PRELU: int16 input and output, int8 alpha (TFLite Micro requires alpha
    /// int8 when the output is int16).
    ///
    /// # Errors
    /// As [`PreluParams::prepare_s8`].
    pub fn prepare_s16(
        input: PerTensorQuant,
        alpha: PerTensorQuant,
        output: PerTensorQuant,
        input_shape: &[usize],
        alpha_shape: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare("prelu_s16", (-32768, 32767), input, alpha, output, input_shape, alpha_shape, rounding)
    }

    /// The per-element computation (TFLite's `BroadcastPrelu4DSlow` body), before the clamp.
    #[inline(always)]
    pub(crate) fn prelu_one(&self, x: i32, alpha: i32) -> i32 {
        let v = self.input_offset + x;
        let raw = if v >= 0 {
            let m = &self.identity_multiplier;
            multiply_by_quantized_multiplier(v, m.multiplier, m.shift)
        } else {
            let m = &self.alpha_multiplier;
            multiply_by_quantized_multiplier(v.wrapping_mul(self.alpha_offset + alpha), m.multiplier, m.shift)
        };
        raw.wrapping_add(self.output_offset)
    }

    fn check(&self, kernel: &'static str, len1: usize, len2: usize, out: usize) -> Result<(), Error> {
        check_same_len(kernel, "input length != its shape", len1, self.broadcast.input1_len())?;
        check_same_len(kernel, "alpha length != its shape", len2, self.broadcast.input2_len())?;
        check_same_len(kernel, "output length != broadcast shape", out, self.broadcast.output_len())
    }
}

/// int8 PRELU with broadcasting, bit-exact with TFLite Micro (`Double`) or the TFLite
/// interpreter (`Single`), as prepared. `input` and `alpha` have the
/// shapes given to [`PreluParams::prepare_s8`]; `output` has the broadcast shape. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn prelu_s8(params: &PreluParams, input: &[i8], alpha: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.check("prelu_s8", input.len(), alpha.len(), output.len())?;
    #[cfg(all(mq_portable, feature = "std"))]
    if super::arch::portable::prelu_s8_lut(params, input, alpha, output) {
        return Ok(());
    }
    params.broadcast.for_each(input, alpha, output, |x, a| params.prelu_one(x as i32, a as i32).clamp(-128, 127) as i8);
    Ok(())
}

/// 16x8 PRELU (int16 input and output, int8 alpha), bit-exact as [`prelu_s8`]. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn prelu_s16(params: &PreluParams, input: &[i16], alpha: &[i8], output: &mut [i16]) -> Result<(), Error> {
    params.check("prelu_s16", input.len(), alpha.len(), output.len())?;
    params
        .broadcast
        .for_each(input, alpha, output, |x, a| params.prelu_one(x as i32, a as i32).clamp(-32768, 32767) as i16);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn identity_and_slope_branches_per_channel() {
        // s_in = s_out = 0.5, alpha scale 1/4: slopes 0.25 and 0.5 per channel.
        let p = PreluParams::prepare_s8(q(0.5, 0), q(0.25, 0), q(0.5, 0), &[2, 2], &[2], Rounding::Double).unwrap();
        let mut out = [0i8; 4];
        prelu_s8(&p, &[8, -8, -8, 127], &[1, 2], &mut out).unwrap();
        assert_eq!(out, [8, -4, -2, 127]);
        let p16 = PreluParams::prepare_s16(q(0.5, 0), q(0.25, 0), q(0.5, 0), &[2], &[1], Rounding::Double).unwrap();
        let mut out16 = [0i16; 2];
        prelu_s16(&p16, &[-32768, 1000], &[3], &mut out16).unwrap();
        assert_eq!(out16, [-24576, 1000]);
    }

    /// Large tensors (the host's table path) and small ones, per-channel and per-tensor alpha,
    /// against the per-element computation, bit for bit.
    #[test]
    fn large_tensors_match_the_per_element_computation() -> Result<(), Error> {
        let mut s = 7u32;
        let mut next = move || {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 24) as u8 as i8
        };
        for (shape, ashape) in [
            (&[1usize, 24, 24, 16][..], &[1usize, 1, 16][..]),
            (&[1, 8, 8, 3], &[3]),
            (&[1, 40, 40, 8], &[1]),
            (&[2, 3], &[2, 3]),
        ] {
            let n: usize = shape.iter().product();
            let na: usize = ashape.iter().product();
            let x: alloc::vec::Vec<i8> = (0..n).map(|_| next()).collect();
            let a: alloc::vec::Vec<i8> = (0..na).map(|_| next()).collect();
            for rounding in [Rounding::Double, Rounding::Single] {
                let p = PreluParams::prepare_s8(q(0.05, -3), q(0.01, 4), q(0.04, 7), shape, ashape, rounding)?;
                let mut want = alloc::vec![0i8; n];
                p.broadcast.for_each(&x, &a, &mut want, |x, a| p.prelu_one(x as i32, a as i32).clamp(-128, 127) as i8);
                let mut got = alloc::vec![0i8; n];
                prelu_s8(&p, &x, &a, &mut got)?;
                assert_eq!(got, want, "{shape:?} {ashape:?}");
            }
        }
        Ok(())
    }

    #[test]
    fn errors() {
        let r = Rounding::Double;
        assert!(PreluParams::prepare_s8(q(0.5, 0), q(0.25, 0), q(0.5, 0), &[2, 3], &[2], r).is_err());
        assert_eq!(PreluParams::prepare_s8(q(0.0, 0), q(0.25, 0), q(0.5, 0), &[2], &[2], r), Err(Error::InvalidScale));
        assert!(PreluParams::prepare_s16(q(0.5, 0), q(0.25, 300), q(0.5, 0), &[2], &[2], r).is_err());
        let p = PreluParams::prepare_s8(q(0.5, 0), q(0.25, 0), q(0.5, 0), &[2], &[2], r).unwrap();
        assert!(prelu_s8(&p, &[1, 2], &[1], &mut [0; 2]).is_err());
        assert!(prelu_s8(&p, &[1, 2], &[1, 2], &mut [0; 3]).is_err());
    }
}

//! Elementwise multiplication of two quantized tensors with broadcasting (TFLite `MUL`): int8,
//! and int16 with zero points 0 (TFLite's 16x8 mode).
//!
//! ```text
//! y = clamp(zp_out + ((x1 − zp1) · (x2 − zp2)) · m)        m = s1 · s2 / s_out
//! ```
//!
//! the product by `m` a double-rounding `MultiplyByQuantizedMultiplier` (any shift).
//!
//! | [`Rounding`] | matches | multiplier computed as |
//! |---|---|---|
//! | `Double` | TFLite Micro (`reference_integer_ops::Mul`) | `(f64)s1 · (f64)s2 / (f64)s_out` |
//! | `Single` | the TFLite interpreter's reference kernel | `(f64)(s1 · s2 / s_out)` with the products in `f32`, as `mul.cc` Prepare does |
//!
//! The integer arithmetic is the same in both (the interpreter is built with double rounding);
//! only the multiplier can differ, by the rounding of the `f32` expression, which changes an
//! output when the product lands next to a rounding boundary.
#![forbid(unsafe_code)]

use super::tensor::{Broadcast, PerTensorQuant, check_same_len};
use super::{ActivationRange, Rounding};
use crate::Error;
use crate::requant::{QuantizedMultiplier, multiply_by_quantized_multiplier, quantize_multiplier};

/// Prepared parameters of [`mul_s8`] / [`mul_s16`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MulParams {
    /// `-zero_point` of input 1.
    pub input1_offset: i32,
    /// `-zero_point` of input 2.
    pub input2_offset: i32,
    /// Zero point of the output.
    pub output_offset: i32,
    /// `s1 · s2 / s_out` as a quantized multiplier.
    pub output_multiplier: QuantizedMultiplier,
    /// Output clamp (fused activation intersected with the type's range).
    pub activation: ActivationRange,
    /// The broadcast of the two input shapes.
    pub broadcast: Broadcast,
    /// The rounding mode the parameters were prepared for.
    pub rounding: Rounding,
}

impl MulParams {
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        kernel: &'static str,
        (qmin, qmax): (i32, i32),
        input1: PerTensorQuant,
        input2: PerTensorQuant,
        output: PerTensorQuant,
        activation: ActivationRange,
        shape1: &[usize],
        shape2: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        input1.check(qmin, qmax)?;
        input2.check(qmin, qmax)?;
        output.check(qmin, qmax)?;
        let broadcast = Broadcast::new(shape1, shape2)?;
        let real = match rounding {
            Rounding::Double => input1.scale as f64 * input2.scale as f64 / output.scale as f64,
            Rounding::Single => (input1.scale * input2.scale / output.scale) as f64,
        };
        if !(real.is_finite() && real > 0.0) {
            return Err(Error::InvalidScale);
        }
        let m = quantize_multiplier(real);
        if m.shift > 30 {
            return Err(Error::BadKernelArgument { kernel, reason: "multiplier s1·s2/s_out above 2^30" });
        }
        let activation = ActivationRange { min: activation.min.max(qmin), max: activation.max.min(qmax) };
        if activation.min > activation.max {
            return Err(Error::BadKernelArgument { kernel, reason: "activation min > max" });
        }
        Ok(Self {
            input1_offset: -input1.zero_point,
            input2_offset: -input2.zero_point,
            output_offset: output.zero_point,
            output_multiplier: m,
            activation,
            broadcast,
            rounding,
        })
    }

    /// Prepares an int8 multiply (TFLite `MUL` Prepare). `activation` is the output clamp.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization parameters,
    /// [`Error::BadKernelArgument`] if the shapes do not broadcast or the multiplier exceeds
    /// 2^30.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_s8(
        input1: PerTensorQuant,
        input2: PerTensorQuant,
        output: PerTensorQuant,
        activation: ActivationRange,
        shape1: &[usize],
        shape2: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare("mul_s8", (-128, 127), input1, input2, output, activation, shape1, shape2, rounding)
    }

    /// Prepares an int16 multiply. All zero points must be 0 (TFLite's check: the product of
    /// two offset int16 values could overflow an int32).
    ///
    /// # Errors
    /// As [`MulParams::prepare_s8`], and [`Error::BadKernelArgument`] for a nonzero zero point.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_s16(
        input1: PerTensorQuant,
        input2: PerTensorQuant,
        output: PerTensorQuant,
        activation: ActivationRange,
        shape1: &[usize],
        shape2: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        if input1.zero_point != 0 || input2.zero_point != 0 || output.zero_point != 0 {
            return Err(Error::BadKernelArgument { kernel: "mul_s16", reason: "int16 zero points must be 0" });
        }
        Self::prepare("mul_s16", (-32768, 32767), input1, input2, output, activation, shape1, shape2, rounding)
    }

    #[inline(always)]
    fn mul_one(&self, x1: i32, x2: i32) -> i32 {
        let prod = (self.input1_offset + x1).wrapping_mul(self.input2_offset + x2);
        let m = &self.output_multiplier;
        let raw = multiply_by_quantized_multiplier(prod, m.multiplier, m.shift).wrapping_add(self.output_offset);
        self.activation.apply(raw)
    }

    fn check(&self, kernel: &'static str, len1: usize, len2: usize, out: usize) -> Result<(), Error> {
        check_same_len(kernel, "input1 length != its shape", len1, self.broadcast.input1_len())?;
        check_same_len(kernel, "input2 length != its shape", len2, self.broadcast.input2_len())?;
        check_same_len(kernel, "output length != broadcast shape", out, self.broadcast.output_len())
    }
}

/// int8 elementwise multiply with broadcasting, bit-exact with TFLite Micro (`Double`) or the
/// TFLite interpreter (`Single`), as prepared.
///
/// Shapes as given to [`MulParams::prepare_s8`]; `output` has the broadcast shape.
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn mul_s8(params: &MulParams, input1: &[i8], input2: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.check("mul_s8", input1.len(), input2.len(), output.len())?;
    // Dispatch point: an optimized variant (kernels/arch/) slots in here, falling back to the
    // reference below.
    params.broadcast.for_each(input1, input2, output, |a, b| params.mul_one(a as i32, b as i32) as i8);
    Ok(())
}

/// int16 elementwise multiply (zero points 0), bit-exact as [`mul_s8`]. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn mul_s16(params: &MulParams, input1: &[i16], input2: &[i16], output: &mut [i16]) -> Result<(), Error> {
    params.check("mul_s16", input1.len(), input2.len(), output.len())?;
    // Dispatch point (see mul_s8).
    params.broadcast.for_each(input1, input2, output, |a, b| params.mul_one(a as i32, b as i32) as i16);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn exact_products() {
        // s1 s2 / s_out = 0.5 · 0.5 / 0.25 = 1: y = x1 · x2 (saturated).
        let p = MulParams::prepare_s8(
            q(0.5, 0),
            q(0.5, 0),
            q(0.25, 0),
            ActivationRange::INT8,
            &[4],
            &[1],
            Rounding::Double,
        )
        .unwrap();
        let mut out = [0i8; 4];
        mul_s8(&p, &[1, -3, 20, -100], &[3], &mut out).unwrap();
        assert_eq!(out, [3, -9, 60, -128]);
    }

    #[test]
    fn single_mode_computes_the_multiplier_in_f32() {
        // Scales whose f32 product rounds: the two modes' multipliers differ in the last bits.
        let (a, b, o) = (q(0.0123457, 0), q(0.0987654, 0), q(0.00311, 0));
        let d = MulParams::prepare_s8(a, b, o, ActivationRange::INT8, &[1], &[1], Rounding::Double).unwrap();
        let s = MulParams::prepare_s8(a, b, o, ActivationRange::INT8, &[1], &[1], Rounding::Single).unwrap();
        assert_eq!(
            d.output_multiplier,
            quantize_multiplier(0.0123457f32 as f64 * 0.0987654f32 as f64 / 0.00311f32 as f64)
        );
        assert_eq!(s.output_multiplier, quantize_multiplier((0.0123457f32 * 0.0987654f32 / 0.00311f32) as f64));
        assert_ne!(d.output_multiplier, s.output_multiplier);
    }

    #[test]
    fn int16_requires_zero_points_0() {
        let a = ActivationRange::INT16;
        assert!(MulParams::prepare_s16(q(0.1, 1), q(0.1, 0), q(0.1, 0), a, &[1], &[1], Rounding::Double).is_err());
        let p = MulParams::prepare_s16(
            q(1.0 / 4096.0, 0),
            q(1.0 / 4096.0, 0),
            q(1.0 / 4096.0, 0),
            a,
            &[2],
            &[2],
            Rounding::Double,
        )
        .unwrap();
        let mut out = [0i16; 2];
        // (4096 · 2048) / 4096 = 2048 (1.0 · 0.5 = 0.5)
        mul_s16(&p, &[4096, -4096], &[2048, 2048], &mut out).unwrap();
        assert_eq!(out, [2048, -2048]);
        assert!(mul_s16(&p, &[1], &[1, 2], &mut out).is_err());
    }
}

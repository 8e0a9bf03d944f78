//! Elementwise subtraction of two quantized tensors with rescaling and broadcasting (TFLite
//! `SUB`): int8, and int16 in TFLite's 16x8 general-scale mode.
//!
//! ADD's arithmetic ([`add`](super::add)) with the rescaled second input subtracted:
//!
//! ```text
//! a = (x1 − zp1) · 2^left_shift · m1        m1 = s1 / (2 · max(s1, s2))
//! b = (x2 − zp2) · 2^left_shift · m2        m2 = s2 / (2 · max(s1, s2))
//! y = clamp(zp_out + (a − b) · m_out)       m_out = 2 · max(s1, s2) / (2^left_shift · s_out)
//! ```
//!
//! `left_shift` is 20 for int8, 15 for int16. The three real multipliers are computed as ADD's,
//! in `f64` from the `f32` scales: that is what the pinned TFLite Micro and the interpreter's
//! reference kernel compute on every golden case (`tests/golden/kernels/sub*.json`). Some
//! tflite-micro sources (`sub_common.cc`) write the quotients in `float`; that variant misses 5
//! elements of the `sub_scales_tiny` case, so it is not the one the oracles run. The two oracles
//! agree on every case, so both [`Rounding`] modes compute the same integers.
#![forbid(unsafe_code)]

use super::tensor::PerTensorQuant;
use super::{ActivationRange, Rounding};
use crate::Error;
use crate::kernels::params::AddParams;
use crate::requant::multiply_by_quantized_multiplier;

/// Prepared parameters of [`sub_s8`] / [`sub_s16`]: the same fields as ADD's
/// ([`AddParams`]), the `.mq` words too ([`AddWords`](crate::model::words::AddWords)).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SubParams(pub AddParams);

impl SubParams {
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        kernel: &'static str,
        left_shift: i32,
        range: (i32, i32),
        input1: PerTensorQuant,
        input2: PerTensorQuant,
        output: PerTensorQuant,
        activation: ActivationRange,
        (shape1, shape2): (&[usize], &[usize]),
        rounding: Rounding,
    ) -> Result<Self, Error> {
        // As ADD: the larger scale picked in f32, doubled and divided in f64 (what the pinned
        // oracles compute; see the module docs).
        let twice_max_input_scale =
            2.0 * (if input1.scale > input2.scale { input1.scale } else { input2.scale }) as f64;
        let real1 = input1.scale as f64 / twice_max_input_scale;
        let real2 = input2.scale as f64 / twice_max_input_scale;
        let real_out = twice_max_input_scale / ((1i64 << left_shift) as f64 * output.scale as f64);
        AddParams::prepare_with_multipliers(
            kernel,
            left_shift,
            range,
            [input1, input2, output],
            [real1, real2, real_out],
            activation,
            (shape1, shape2),
            rounding,
        )
        .map(Self)
    }

    /// Prepares an int8 subtraction (TFLite `SUB` Prepare, `left_shift = 20`). `activation` is
    /// the output clamp (see [`ActivationRange::from_fused`](super::ActivationRange::from_fused)).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization parameters,
    /// [`Error::BadKernelArgument`] if the shapes do not broadcast or a multiplier is not in
    /// (0, 1) (output scale below `max(s1, s2) / 2^19`).
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
        Self::prepare("sub_s8", 20, (-128, 127), input1, input2, output, activation, (shape1, shape2), rounding)
    }

    /// Prepares an int16 subtraction in TFLite's general-scale 16-bit mode (`left_shift = 15`;
    /// TFLite Micro always uses it, the interpreter when `pot_scale_int16` is false). Zero points
    /// are normally 0 for int16.
    ///
    /// # Errors
    /// As [`SubParams::prepare_s8`].
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
        Self::prepare("sub_s16", 15, (-32768, 32767), input1, input2, output, activation, (shape1, shape2), rounding)
    }

    /// The per-element computation (TFLite's `SubElementwise` body).
    #[inline(always)]
    fn sub_one(&self, x1: i32, x2: i32) -> i32 {
        let p = &self.0;
        let shifted1 = (p.input1_offset + x1).wrapping_shl(p.left_shift as u32);
        let shifted2 = (p.input2_offset + x2).wrapping_shl(p.left_shift as u32);
        let (m1, m2, mo) = (&p.input1_multiplier, &p.input2_multiplier, &p.output_multiplier);
        let scaled1 = multiply_by_quantized_multiplier(shifted1, m1.multiplier, m1.shift);
        let scaled2 = multiply_by_quantized_multiplier(shifted2, m2.multiplier, m2.shift);
        let raw_sub = scaled1.wrapping_sub(scaled2);
        let raw_out = multiply_by_quantized_multiplier(raw_sub, mo.multiplier, mo.shift).wrapping_add(p.output_offset);
        p.activation.apply(raw_out)
    }
}

/// int8 elementwise subtraction `input1 − input2` with rescaling and broadcasting, bit-exact
/// with TFLite Micro and the TFLite interpreter.
///
/// `input1`, `input2` have the shapes given to [`SubParams::prepare_s8`]; `output` has the
/// broadcast shape. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn sub_s8(params: &SubParams, input1: &[i8], input2: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.0.check("sub_s8", input1.len(), input2.len(), output.len())?;
    // Dispatch point: an optimized variant (kernels/arch/) slots in here, falling back to the
    // reference below.
    params.0.broadcast.for_each(input1, input2, output, |a, b| params.sub_one(a as i32, b as i32) as i8);
    Ok(())
}

/// int16 elementwise subtraction (TFLite's 16x8 general-scale mode), bit-exact as [`sub_s8`].
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn sub_s16(params: &SubParams, input1: &[i16], input2: &[i16], output: &mut [i16]) -> Result<(), Error> {
    params.0.check("sub_s16", input1.len(), input2.len(), output.len())?;
    params.0.broadcast.for_each(input1, input2, output, |a, b| params.sub_one(a as i32, b as i32) as i16);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requant::{QuantizedMultiplier, quantize_multiplier};

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn exact_differences_on_equal_scales() {
        let p =
            SubParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(0.5, 0), ActivationRange::INT8, &[5], &[5], Rounding::Double)
                .unwrap();
        let mut out = [0i8; 5];
        sub_s8(&p, &[1, -3, 100, -100, 0], &[2, -4, -100, 100, 0], &mut out).unwrap();
        assert_eq!(out, [-1, 1, 127, -128, 0]);
    }

    #[test]
    fn multipliers_are_computed_in_f64() {
        let (a, b, o) = (q(0.0123457, 3), q(0.0987654, -2), q(0.00311, 1));
        let p = SubParams::prepare_s8(a, b, o, ActivationRange::INT8, &[1], &[1], Rounding::Double).unwrap();
        let tw = 2.0 * 0.0987654f32 as f64;
        assert_eq!(p.0.input1_multiplier, quantize_multiplier(0.0123457f32 as f64 / tw));
        assert_eq!(p.0.output_multiplier, quantize_multiplier(tw / (1048576.0 * 0.00311f32 as f64)));
        assert_eq!(p.0.input2_multiplier, QuantizedMultiplier { multiplier: 1 << 30, shift: 0 });
        assert_eq!((p.0.input1_offset, p.0.input2_offset, p.0.output_offset), (-3, 2, 1));
    }

    #[test]
    fn broadcast_int16_and_errors() {
        let s = 1.0 / 4096.0;
        let p =
            SubParams::prepare_s16(q(s, 0), q(s, 0), q(s, 0), ActivationRange::INT16, &[2, 2], &[2], Rounding::Double)
                .unwrap();
        let mut out = [0i16; 4];
        sub_s16(&p, &[4096, 0, -4096, 32767], &[1024, -32768], &mut out).unwrap();
        assert_eq!(out, [3072, 32767, -5120, 32767]);
        assert!(sub_s16(&p, &[1, 2, 3], &[1, 2], &mut out).is_err());
        let a = ActivationRange::INT8;
        assert!(SubParams::prepare_s8(q(0.1, 0), q(0.1, 0), q(0.1, 0), a, &[2, 3], &[2], Rounding::Double).is_err());
        assert!(SubParams::prepare_s8(q(1.0, 0), q(1.0, 0), q(1e-7, 0), a, &[2], &[2], Rounding::Double).is_err());
        assert_eq!(
            SubParams::prepare_s8(q(0.0, 0), q(0.1, 0), q(0.1, 0), a, &[2], &[2], Rounding::Double),
            Err(Error::InvalidScale)
        );
    }
}

//! Elementwise addition of two quantized tensors with rescaling and broadcasting (TFLite `ADD`):
//! int8, and int16 in TFLite's 16x8 mode.
//!
//! Both inputs are brought to a common scale `2 · max(s1, s2)` with `left_shift` bits of
//! headroom (20 for int8, 15 for int16), added, and the sum rescaled to the output:
//!
//! ```text
//! a = (x1 − zp1) · 2^left_shift · m1        m1 = s1 / (2 · max(s1, s2))
//! b = (x2 − zp2) · 2^left_shift · m2        m2 = s2 / (2 · max(s1, s2))
//! y = clamp(zp_out + (a + b) · m_out)       m_out = 2 · max(s1, s2) / (2^left_shift · s_out)
//! ```
//!
//! each product by `m` a double-rounding `MultiplyByQuantizedMultiplier` with a shift ≤ 0.
//!
//! | [`Rounding`] | matches |
//! |---|---|
//! | `Double` | TFLite Micro (`reference_integer_ops::Add`, `reference_ops::Add` general-scale int16) |
//! | `Single` | the TFLite interpreter's reference kernel, which computes exactly the same integers (it is built with double rounding) |
//!
//! Both oracles agree bit for bit on this op, so the two modes give the same output.
//! Broadcasting follows numpy (ranks up to [`MAX_DIMS`](super::tensor::MAX_DIMS)), as TFLite's
//! `BroadcastAdd6DSlow`.
#![forbid(unsafe_code)]

use super::tensor::{Broadcast, PerTensorQuant, check_same_len};
use super::{ActivationRange, Rounding};
use crate::Error;
pub use crate::kernels::params::AddParams;
use crate::requant::{QuantizedMultiplier, multiply_by_quantized_multiplier, quantize_multiplier};

/// TFLite's `QuantizeMultiplierSmallerThanOneExp`: `real ∈ (0, 1)`, shift ≤ 0.
fn quantize_multiplier_smaller_than_one(kernel: &'static str, real: f64) -> Result<QuantizedMultiplier, Error> {
    if !(real > 0.0 && real < 1.0) {
        return Err(Error::BadKernelArgument { kernel, reason: "a rescaling multiplier is outside (0, 1)" });
    }
    let q = quantize_multiplier(real);
    if q.shift > 0 {
        return Err(Error::BadKernelArgument { kernel, reason: "a rescaling multiplier is outside (0, 1)" });
    }
    Ok(q)
}

impl AddParams {
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        kernel: &'static str,
        left_shift: i32,
        range: (i32, i32),
        input1: PerTensorQuant,
        input2: PerTensorQuant,
        output: PerTensorQuant,
        activation: ActivationRange,
        shape1: &[usize],
        shape2: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        // As TFLite: the larger scale is picked in f32, then doubled in f64.
        let twice_max_input_scale =
            2.0 * (if input1.scale > input2.scale { input1.scale } else { input2.scale }) as f64;
        let real1 = input1.scale as f64 / twice_max_input_scale;
        let real2 = input2.scale as f64 / twice_max_input_scale;
        let real_out = twice_max_input_scale / ((1i64 << left_shift) as f64 * output.scale as f64);
        Self::prepare_with_multipliers(
            kernel,
            left_shift,
            range,
            [input1, input2, output],
            [real1, real2, real_out],
            activation,
            (shape1, shape2),
            rounding,
        )
    }

    /// The parameters of ADD and SUB (which share them) from the three real multipliers
    /// `[real1, real2, real_out]`, each of which must be in (0, 1).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn prepare_with_multipliers(
        kernel: &'static str,
        left_shift: i32,
        (qmin, qmax): (i32, i32),
        [input1, input2, output]: [PerTensorQuant; 3],
        [real1, real2, real_out]: [f64; 3],
        activation: ActivationRange,
        (shape1, shape2): (&[usize], &[usize]),
        rounding: Rounding,
    ) -> Result<Self, Error> {
        input1.check(qmin, qmax)?;
        input2.check(qmin, qmax)?;
        output.check(qmin, qmax)?;
        let broadcast = Broadcast::new(shape1, shape2)?;
        let activation = ActivationRange { min: activation.min.max(qmin), max: activation.max.min(qmax) };
        if activation.min > activation.max {
            return Err(Error::BadKernelArgument { kernel, reason: "activation min > max" });
        }
        Ok(Self {
            input1_offset: -input1.zero_point,
            input2_offset: -input2.zero_point,
            output_offset: output.zero_point,
            left_shift,
            input1_multiplier: quantize_multiplier_smaller_than_one(kernel, real1)?,
            input2_multiplier: quantize_multiplier_smaller_than_one(kernel, real2)?,
            output_multiplier: quantize_multiplier_smaller_than_one(kernel, real_out)?,
            activation,
            broadcast,
            rounding,
        })
    }

    /// Prepares an int8 add (TFLite `ADD` Prepare: `CalculateOpDataAdd` with `left_shift = 20`).
    /// `activation` is the output clamp (see
    /// [`ActivationRange::from_fused`](super::ActivationRange::from_fused)).
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
        Self::prepare("add_s8", 20, (-128, 127), input1, input2, output, activation, shape1, shape2, rounding)
    }

    /// Prepares an int16 add in TFLite's general-scale 16-bit mode (`left_shift = 15`; TFLite
    /// Micro always uses it, the interpreter when `pot_scale_int16` is false or a scale is not a
    /// power of two). Zero points are normally 0 for int16 (TFLite's 16x8 spec).
    ///
    /// # Errors
    /// As [`AddParams::prepare_s8`].
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
        Self::prepare("add_s16", 15, (-32768, 32767), input1, input2, output, activation, shape1, shape2, rounding)
    }

    /// The per-element computation (TFLite's `AddFunc`).
    #[inline(always)]
    fn add_one(&self, x1: i32, x2: i32) -> i32 {
        let shifted1 = (self.input1_offset + x1).wrapping_shl(self.left_shift as u32);
        let shifted2 = (self.input2_offset + x2).wrapping_shl(self.left_shift as u32);
        let m1 = &self.input1_multiplier;
        let m2 = &self.input2_multiplier;
        let mo = &self.output_multiplier;
        let scaled1 = multiply_by_quantized_multiplier(shifted1, m1.multiplier, m1.shift);
        let scaled2 = multiply_by_quantized_multiplier(shifted2, m2.multiplier, m2.shift);
        let raw_sum = scaled1.wrapping_add(scaled2);
        let raw_out =
            multiply_by_quantized_multiplier(raw_sum, mo.multiplier, mo.shift).wrapping_add(self.output_offset);
        self.activation.apply(raw_out)
    }

    pub(crate) fn check(&self, kernel: &'static str, len1: usize, len2: usize, out: usize) -> Result<(), Error> {
        check_same_len(kernel, "input1 length != its shape", len1, self.broadcast.input1_len())?;
        check_same_len(kernel, "input2 length != its shape", len2, self.broadcast.input2_len())?;
        check_same_len(kernel, "output length != broadcast shape", out, self.broadcast.output_len())
    }
}

/// int8 elementwise add with rescaling and broadcasting, bit-exact with TFLite Micro (and the
/// TFLite interpreter).
///
/// `input1`, `input2` have the shapes given to [`AddParams::prepare_s8`]; `output` has the
/// broadcast shape ([`Broadcast::output_shape`](super::tensor::Broadcast::output_shape)).
/// Output may not alias an input (Rust's borrows forbid it anyway).
///
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn add_s8(params: &AddParams, input1: &[i8], input2: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.check("add_s8", input1.len(), input2.len(), output.len())?;
    // Dispatch point: the elementwise fast path (see `kernels::arch`), which declines
    // (broadcasting, parameters outside its forms), then the reference.
    #[cfg(any(mq_dsp, mq_wasm_simd, mq_portable))]
    let done = super::arch::add::add_s8_elementwise(params, input1, input2, output);
    #[cfg(not(any(mq_dsp, mq_wasm_simd, mq_portable)))]
    let done = false; // `force-reference`: no fast path
    if !done {
        params.broadcast.for_each(input1, input2, output, |a, b| params.add_one(a as i32, b as i32) as i8);
    }
    Ok(())
}

/// [`add_s8`]'s reference kernel (TFLite's `AddElementwise` / `BroadcastAdd` as written),
/// whatever the target: the oracle of the fast paths in tests. Not covered by semver.
///
/// # Errors
/// As [`add_s8`].
#[doc(hidden)]
pub fn add_s8_reference(params: &AddParams, input1: &[i8], input2: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.check("add_s8", input1.len(), input2.len(), output.len())?;
    params.broadcast.for_each(input1, input2, output, |a, b| params.add_one(a as i32, b as i32) as i8);
    Ok(())
}

/// int16 elementwise add (TFLite's 16x8 general-scale mode), bit-exact with TFLite Micro and the
/// TFLite interpreter's general-scale path. Shapes and scratch as [`add_s8`] (none).
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn add_s16(params: &AddParams, input1: &[i16], input2: &[i16], output: &mut [i16]) -> Result<(), Error> {
    params.check("add_s16", input1.len(), input2.len(), output.len())?;
    // Dispatch point (see add_s8).
    params.broadcast.for_each(input1, input2, output, |a, b| params.add_one(a as i32, b as i32) as i16);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::common::FusedActivation;

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn multipliers_as_tflite_prepare() {
        let p = AddParams::prepare_s8(
            q(0.5, 0),
            q(0.25, 0),
            q(1.0, 0),
            ActivationRange::INT8,
            &[4],
            &[4],
            Rounding::Double,
        )
        .unwrap();
        // m1 = 0.5 / 1.0 = 0.5 -> (2^30, 0); m2 = 0.25 -> (2^30, -1); m_out = 1 / 2^20 -> (2^30, -19).
        assert_eq!(p.input1_multiplier, QuantizedMultiplier { multiplier: 1 << 30, shift: 0 });
        assert_eq!(p.input2_multiplier, QuantizedMultiplier { multiplier: 1 << 30, shift: -1 });
        assert_eq!(p.output_multiplier, QuantizedMultiplier { multiplier: 1 << 30, shift: -19 });
        assert_eq!(p.left_shift, 20);
    }

    #[test]
    fn exact_sums_on_power_of_two_scales() {
        // Equal scales, zero points 0: y = x1 + x2 exactly (saturated).
        let p =
            AddParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(0.5, 0), ActivationRange::INT8, &[5], &[5], Rounding::Double)
                .unwrap();
        let mut out = [0i8; 5];
        add_s8(&p, &[1, -3, 100, -100, 0], &[2, -4, 100, -100, 0], &mut out).unwrap();
        assert_eq!(out, [3, -7, 127, -128, 0]);
    }

    #[test]
    fn broadcast_and_activation() {
        let out_q = q(0.1, -20);
        let act =
            ActivationRange::from_fused(FusedActivation::Relu, out_q.scale, out_q.zero_point, ActivationRange::INT8)
                .unwrap();
        let p = AddParams::prepare_s8(q(0.1, 0), q(0.1, 0), out_q, act, &[2, 3], &[3], Rounding::Double).unwrap();
        let mut out = [0i8; 6];
        add_s8(&p, &[0, 1, 2, 3, 4, 5], &[-10, 0, 10], &mut out).unwrap();
        // real sums: -1.0, 0.1, 1.2, -0.7, 0.4, 1.5 -> q = -20 + 10·sum, ReLU clamps at -20.
        assert_eq!(out, [-20, -19, -8, -20, -16, -5]);
    }

    #[test]
    fn errors() {
        let a = ActivationRange::INT8;
        assert!(matches!(
            AddParams::prepare_s8(q(0.1, 0), q(0.1, 0), q(0.1, 0), a, &[2, 3], &[2], Rounding::Double),
            Err(Error::BadKernelArgument { .. })
        ));
        assert_eq!(
            AddParams::prepare_s8(q(0.0, 0), q(0.1, 0), q(0.1, 0), a, &[2], &[2], Rounding::Double),
            Err(Error::InvalidScale)
        );
        assert!(AddParams::prepare_s8(q(0.1, 200), q(0.1, 0), q(0.1, 0), a, &[2], &[2], Rounding::Double).is_err());
        // Output scale too small for the 2^20 headroom.
        assert!(AddParams::prepare_s8(q(1.0, 0), q(1.0, 0), q(1e-7, 0), a, &[2], &[2], Rounding::Double).is_err());
        let p = AddParams::prepare_s8(q(0.1, 0), q(0.1, 0), q(0.1, 0), a, &[2], &[2], Rounding::Double).unwrap();
        let mut out = [0i8; 2];
        assert!(add_s8(&p, &[1, 2, 3], &[1, 2], &mut out).is_err());
        assert!(add_s8(&p, &[1, 2], &[1, 2], &mut out[..1]).is_err());
    }
}

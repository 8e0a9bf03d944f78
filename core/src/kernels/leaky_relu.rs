//! LEAKY_RELU, int8 and int16, as TFLite Micro's reference kernel (`QuantizeLeakyRelu`):
//!
//! `y = clamp(zp_out + MultiplyByQuantizedMultiplier(x − zp_in, x ≥ zp_in ? m_identity : m_alpha))`,
//! `m_identity = s_in / s_out`, `m_alpha = s_in · alpha / s_out` (`QuantizeMultiplier`; `alpha`
//! may be negative or above 1).
//!
//! Both TFLite Micro and the TFLite interpreter round twice here (gemmlowp's
//! `MultiplyByQuantizedMultiplier`); they differ in how they prepare the two multipliers: the
//! pinned TFLite Micro (`tflite-micro==0.dev20261023182759`) divides in `double`, the interpreter
//! in `float` before widening (the golden file `leaky_relu.json` has a case where this shows).
//! [`Rounding::Double`] prepares as TFLite Micro, [`Rounding::Single`] as the interpreter.
//!
//! A negative `alpha` gives a negative multiplier: TFLite Micro scales by its absolute value and
//! negates the product (`reference_ops::QuantizeLeakyRelu`), which [`Rounding::Double`] does;
//! [`Rounding::Single`] multiplies by the negative multiplier as the interpreter's reference
//! kernel does (the two differ only where the doubling high multiply lands on a tie).
//!
//! ```
//! use microquant::kernels::Rounding;
//! use microquant::kernels::leaky_relu::{LeakyReluParams, leaky_relu_s8};
//! use microquant::kernels::tensor::PerTensorQuant;
//!
//! // Input and output at scale 0.1, zero point 0; alpha 0.5: -4 (-0.4) becomes -2 (-0.2).
//! let q = PerTensorQuant::new(0.1, 0);
//! let p = LeakyReluParams::prepare_s8(q, q, 0.5, Rounding::Double).unwrap();
//! let mut y = [0i8; 3];
//! leaky_relu_s8(&p, &[-4, 0, 7], &mut y).unwrap();
//! assert_eq!(y, [-2, 0, 7]);
//! ```
#![forbid(unsafe_code)]

use super::Rounding;
use super::common::ActivationElement;
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, clamp_i32, multiply_by_quantized_multiplier, quantize_multiplier};

const KERNEL: &str = "leaky_relu";

/// Prepared parameters of a LEAKY_RELU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LeakyReluParams {
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// `s_in / s_out`, for inputs at or above the zero point.
    pub identity: QuantizedMultiplier,
    /// `s_in · alpha / s_out`, for inputs below it (a negative mantissa for a negative alpha).
    pub alpha: QuantizedMultiplier,
    /// How the alpha product is taken for a negative multiplier: `Double` as TFLite Micro
    /// (`−MBQM(x, |m|)`), `Single` as the interpreter (`MBQM(x, m)`).
    pub rounding: Rounding,
}

impl LeakyReluParams {
    /// TFLite's Prepare for an int8 LEAKY_RELU.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad parameters;
    /// [`Error::BadKernelArgument`] if `alpha` is not finite or a multiplier is so large that
    /// `x − zp_in` would overflow 32 bits once shifted.
    pub fn prepare_s8(
        input: PerTensorQuant,
        output: PerTensorQuant,
        alpha: f32,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare::<i8>(input, output, alpha, rounding, 23)
    }

    /// TFLite's Prepare for an int16 LEAKY_RELU (zero points must be 0, as TFLite requires).
    ///
    /// # Errors
    /// As [`Self::prepare_s8`].
    pub fn prepare_s16(
        input: PerTensorQuant,
        output: PerTensorQuant,
        alpha: f32,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare::<i16>(input, output, alpha, rounding, 15)
    }

    fn prepare<T: ActivationElement>(
        input: PerTensorQuant,
        output: PerTensorQuant,
        alpha: f32,
        rounding: Rounding,
        max_left_shift: i32,
    ) -> Result<Self, Error> {
        let (lo, hi) = (T::RANGE.min, T::RANGE.max);
        input.check(lo, hi)?;
        output.check(lo, hi)?;
        if T::RANGE.max > 127 && (input.zero_point != 0 || output.zero_point != 0) {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "int16 zero points must be 0" });
        }
        if !alpha.is_finite() {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "alpha is not finite" });
        }
        let (identity, alpha_real) = match rounding {
            // TFLite Micro: `(double)s_in * (double)alpha / (double)s_out`.
            Rounding::Double => (
                f64::from(input.scale) / f64::from(output.scale),
                f64::from(input.scale) * f64::from(alpha) / f64::from(output.scale),
            ),
            // The TFLite interpreter: `s_in * alpha / s_out` in float, then widened.
            Rounding::Single => (f64::from(input.scale / output.scale), f64::from(input.scale * alpha / output.scale)),
        };
        if !(identity.is_finite() && alpha_real.is_finite()) {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "multiplier is not finite" });
        }
        let (identity, mut alpha) = (quantize_multiplier(identity), quantize_multiplier(alpha_real));
        if alpha.multiplier == i32::MIN {
            // A negative mantissa rounded to -1: the same value as -1/2 one shift up, whose
            // absolute value fits (TFLite would negate i32::MIN).
            alpha = QuantizedMultiplier { multiplier: -(1 << 30), shift: alpha.shift + 1 };
        }
        for m in [identity, alpha] {
            if m.shift > max_left_shift || m.shift < -31 {
                return Err(Error::BadKernelArgument {
                    kernel: KERNEL,
                    reason: "input scale / output scale (or times alpha) out of range",
                });
            }
        }
        Ok(Self { input_zero_point: input.zero_point, output_zero_point: output.zero_point, identity, alpha, rounding })
    }

    #[inline(always)]
    fn apply<T: ActivationElement>(&self, x: T) -> T {
        let d = x.to_i32() - self.input_zero_point;
        let scaled = if d >= 0 {
            multiply_by_quantized_multiplier(d, self.identity.multiplier, self.identity.shift)
        } else if self.alpha.multiplier < 0 && self.rounding == Rounding::Double {
            // |multiplier| fits: quantize_multiplier never returns i32::MIN.
            -multiply_by_quantized_multiplier(d, -self.alpha.multiplier, self.alpha.shift)
        } else {
            multiply_by_quantized_multiplier(d, self.alpha.multiplier, self.alpha.shift)
        };
        let y = scaled.saturating_add(self.output_zero_point);
        T::from_clamped(clamp_i32(y, T::RANGE.min, T::RANGE.max))
    }
}

/// int8 LEAKY_RELU.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn leaky_relu_s8(params: &LeakyReluParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    leaky_relu(params, input, output)
}

/// int16 LEAKY_RELU.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn leaky_relu_s16(params: &LeakyReluParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    leaky_relu(params, input, output)
}

fn leaky_relu<T: ActivationElement>(params: &LeakyReluParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    check_same_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
    for (y, &x) in output.iter_mut().zip(input) {
        *y = params.apply(x);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_alpha_and_saturation() {
        let q = PerTensorQuant::new(0.1, 0);
        let p = LeakyReluParams::prepare_s8(q, q, -2.0, Rounding::Double).unwrap();
        let mut y = [0i8; 4];
        leaky_relu_s8(&p, &[-100, -3, 3, 127], &mut y).unwrap();
        assert_eq!(y, [127, 6, 3, 127]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let q = PerTensorQuant::new(0.1, 0);
        assert!(LeakyReluParams::prepare_s8(q, q, f32::NAN, Rounding::Double).is_err());
        assert!(LeakyReluParams::prepare_s8(PerTensorQuant::new(1e9, 0), q, 0.1, Rounding::Double).is_err());
        let p = LeakyReluParams::prepare_s8(q, q, 0.1, Rounding::Double).unwrap();
        assert!(leaky_relu_s8(&p, &[0; 3], &mut [0; 2]).is_err());
    }
}

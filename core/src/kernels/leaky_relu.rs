//! LEAKY_RELU, int8 and int16, as TFLite Micro's reference kernel (`QuantizeLeakyRelu`):
//!
//! `y = clamp(zp_out + MultiplyByQuantizedMultiplier(x − zp_in, x ≥ zp_in ? m_identity : m_alpha))`,
//! `m_identity = s_in / s_out`, `m_alpha = s_in · alpha / s_out` (`QuantizeMultiplier`; `alpha`
//! may be negative or above 1).
//!
//! Both TFLite Micro and the TFLite interpreter round twice here (gemmlowp's
//! `MultiplyByQuantizedMultiplier`); they differ in how they prepare the two multipliers: TFLite
//! Micro divides in `double`, the interpreter in `float` before widening. [`Rounding::Double`]
//! prepares as TFLite Micro, [`Rounding::Single`] as the interpreter.
//!
//! ```
//! use microquant::kernels::Rounding;
//! use microquant::kernels::leaky_relu::{LeakyReluParams, leaky_relu_s8};
//! use microquant::kernels::tensor::TensorQuant;
//!
//! // Input and output at scale 0.1, zero point 0; alpha 0.5: -4 (-0.4) becomes -2 (-0.2).
//! let q = TensorQuant::new(0.1, 0);
//! let p = LeakyReluParams::prepare_s8(q, q, 0.5, Rounding::Double).unwrap();
//! let mut y = [0i8; 3];
//! leaky_relu_s8(&p, &[-4, 0, 7], &mut y).unwrap();
//! assert_eq!(y, [-2, 0, 7]);
//! ```
#![forbid(unsafe_code)]

use super::Rounding;
use super::common::Activation;
use super::tensor::{TensorQuant, check_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, clamp_i32, quantize_multiplier};

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
    /// `s_in · alpha / s_out`, for inputs below it.
    pub alpha: QuantizedMultiplier,
}

impl LeakyReluParams {
    /// TFLite's Prepare for an int8 LEAKY_RELU.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad parameters;
    /// [`Error::BadKernelArgument`] if `alpha` is not finite or a multiplier is so large that
    /// `x − zp_in` would overflow 32 bits once shifted.
    pub fn prepare_s8(input: TensorQuant, output: TensorQuant, alpha: f32, rounding: Rounding) -> Result<Self, Error> {
        Self::prepare::<i8>(input, output, alpha, rounding, 23)
    }

    /// TFLite's Prepare for an int16 LEAKY_RELU (zero points as given; TFLite's converter
    /// writes 0).
    ///
    /// # Errors
    /// As [`Self::prepare_s8`].
    pub fn prepare_s16(input: TensorQuant, output: TensorQuant, alpha: f32, rounding: Rounding) -> Result<Self, Error> {
        Self::prepare::<i16>(input, output, alpha, rounding, 15)
    }

    fn prepare<T: Activation>(
        input: TensorQuant,
        output: TensorQuant,
        alpha: f32,
        rounding: Rounding,
        max_left_shift: i32,
    ) -> Result<Self, Error> {
        let (lo, hi) = (T::RANGE.min, T::RANGE.max);
        input.check(lo, hi)?;
        output.check(lo, hi)?;
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
            Rounding::Single => {
                (f64::from(input.scale / output.scale), f64::from(input.scale * alpha / output.scale))
            }
        };
        let (identity, alpha) = (quantize_multiplier(identity), quantize_multiplier(alpha_real));
        for m in [identity, alpha] {
            if m.shift > max_left_shift || m.shift < -31 {
                return Err(Error::BadKernelArgument {
                    kernel: KERNEL,
                    reason: "input scale / output scale (or times alpha) out of range",
                });
            }
        }
        Ok(Self { input_zero_point: input.zero_point, output_zero_point: output.zero_point, identity, alpha })
    }

    #[inline(always)]
    fn apply<T: Activation>(&self, x: T) -> T {
        let d = x.to_i32() - self.input_zero_point;
        let m = if d >= 0 { self.identity } else { self.alpha };
        let y = m.apply(d, Rounding::Double).saturating_add(self.output_zero_point);
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

fn leaky_relu<T: Activation>(params: &LeakyReluParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
    check_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
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
        let q = TensorQuant::new(0.1, 0);
        let p = LeakyReluParams::prepare_s8(q, q, -2.0, Rounding::Double).unwrap();
        let mut y = [0i8; 4];
        leaky_relu_s8(&p, &[-100, -3, 3, 127], &mut y).unwrap();
        assert_eq!(y, [127, 6, 3, 127]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let q = TensorQuant::new(0.1, 0);
        assert!(LeakyReluParams::prepare_s8(q, q, f32::NAN, Rounding::Double).is_err());
        assert!(LeakyReluParams::prepare_s8(TensorQuant::new(1e9, 0), q, 0.1, Rounding::Double).is_err());
        let p = LeakyReluParams::prepare_s8(q, q, 0.1, Rounding::Double).unwrap();
        assert!(leaky_relu_s8(&p, &[0; 3], &mut [0; 2]).is_err());
    }
}

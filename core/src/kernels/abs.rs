//! ABS and NEG, int8 and int16, with requantization.
//!
//! ABS is TFLite Micro's (`AbsEvalQuantized`, the interpreter's is the same):
//! `y = clamp(zp_out + |x − zp_in|)` when the scales are equal, else
//! `y = clamp(zp_out + MultiplyByQuantizedMultiplier(|x − zp_in|, s_in / s_out))`. TFLite Micro
//! divides the scales in `double` ([`Rounding::Double`]), the interpreter in `float`
//! ([`Rounding::Single`]).
//!
//! NEG is the same with `−(x − zp_in)`. TFLite Micro has no int8 NEG; the interpreter's negates
//! the stored integers and ignores the quantization (wrapping `−(−128)` to −128), which is the
//! negation of the real values when the output has the input's scale and the opposite zero point.
//! This kernel is that negation for any quantization, saturating where the interpreter wraps (so
//! for an input of −128 it gives 127 where the interpreter gives −128).
//!
//! ```
//! use microquant::kernels::Rounding;
//! use microquant::kernels::abs::{SignParams, abs_s8, neg_s8};
//! use microquant::kernels::tensor::PerTensorQuant;
//!
//! let (qi, qo) = (PerTensorQuant::new(0.1, 10), PerTensorQuant::new(0.05, -128));
//! let p = SignParams::prepare_s8(qi, qo, Rounding::Double).unwrap();
//! let mut y = [0i8; 3];
//! abs_s8(&p, &[0, 10, 40], &mut y).unwrap(); // -1.0, 0.0, 3.0
//! assert_eq!(y, [-108, -128, -68]);
//! let q = PerTensorQuant::new(0.1, 0);
//! let p = SignParams::prepare_s8(q, q, Rounding::Double).unwrap();
//! let mut y = [0i8; 4];
//! neg_s8(&p, &[-128, -3, 0, 127], &mut y).unwrap();
//! assert_eq!(y, [127, 3, 0, -127]);
//! ```
#![forbid(unsafe_code)]

use super::Rounding;
use super::common::ActivationElement;
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, clamp_i32, multiply_by_quantized_multiplier, quantize_multiplier};

const KERNEL: &str = "abs/neg";

/// Prepared parameters of an ABS or NEG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SignParams {
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// `s_in / s_out`, `None` when the scales are equal (no rescale, as TFLite).
    pub rescale: Option<QuantizedMultiplier>,
}

impl SignParams {
    /// TFLite's Prepare of an int8 ABS (and of this crate's NEG).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization;
    /// [`Error::BadKernelArgument`] if `s_in / s_out` is out of range.
    pub fn prepare_s8(input: PerTensorQuant, output: PerTensorQuant, rounding: Rounding) -> Result<Self, Error> {
        Self::prepare::<i8>(input, output, rounding, 23)
    }

    /// As [`Self::prepare_s8`] for int16 (zero points must be 0, as TFLite requires).
    ///
    /// # Errors
    /// As [`Self::prepare_s8`].
    pub fn prepare_s16(input: PerTensorQuant, output: PerTensorQuant, rounding: Rounding) -> Result<Self, Error> {
        Self::prepare::<i16>(input, output, rounding, 15)
    }

    fn prepare<T: ActivationElement>(
        input: PerTensorQuant,
        output: PerTensorQuant,
        rounding: Rounding,
        max_left_shift: i32,
    ) -> Result<Self, Error> {
        let (tmin, tmax) = (T::RANGE.min, T::RANGE.max);
        input.check(tmin, tmax)?;
        output.check(tmin, tmax)?;
        if tmax > 127 && (input.zero_point != 0 || output.zero_point != 0) {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "int16 zero points must be 0" });
        }
        let rescale = if input.scale == output.scale {
            None
        } else {
            let real = match rounding {
                Rounding::Double => f64::from(input.scale) / f64::from(output.scale),
                Rounding::Single => f64::from(input.scale / output.scale),
            };
            if !real.is_finite() {
                return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "s_in / s_out is not finite" });
            }
            let m = quantize_multiplier(real);
            // |x - zp| < 2^8 (int8) or 2^16 (int16) must fit 32 bits once shifted.
            if m.shift > max_left_shift || m.shift < -31 {
                return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "s_in / s_out out of range" });
            }
            Some(m)
        };
        Ok(Self { input_zero_point: input.zero_point, output_zero_point: output.zero_point, rescale })
    }

    #[inline(always)]
    fn finish<T: ActivationElement>(&self, v: i32) -> T {
        let v = match self.rescale {
            None => v,
            Some(m) => multiply_by_quantized_multiplier(v, m.multiplier, m.shift),
        };
        T::from_clamped(clamp_i32(v.saturating_add(self.output_zero_point), T::RANGE.min, T::RANGE.max))
    }
}

/// int8 ABS.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn abs_s8(params: &SignParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    map(params, input, output, |d| d.abs())
}

/// int16 ABS.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn abs_s16(params: &SignParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    map(params, input, output, |d| d.abs())
}

/// int8 NEG.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn neg_s8(params: &SignParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    map(params, input, output, |d| -d)
}

/// int16 NEG.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn neg_s16(params: &SignParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    map(params, input, output, |d| -d)
}

#[inline(always)]
fn map<T: ActivationElement>(
    params: &SignParams,
    input: &[T],
    output: &mut [T],
    f: impl Fn(i32) -> i32,
) -> Result<(), Error> {
    check_same_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
    for (y, &x) in output.iter_mut().zip(input) {
        // |x - zp| <= 65535: no overflow.
        *y = params.finish(f(x.to_i32() - params.input_zero_point));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int16_saturates() {
        let q = PerTensorQuant::new(1e-3, 0);
        let p = SignParams::prepare_s16(q, PerTensorQuant::new(5e-4, 0), Rounding::Double).unwrap();
        let mut y = [0i16; 3];
        abs_s16(&p, &[-32768, -100, 20000], &mut y).unwrap();
        assert_eq!(y, [32767, 200, 32767]);
        neg_s16(&p, &[-32768, -100, 20000], &mut y).unwrap();
        assert_eq!(y, [32767, 200, -32768]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let q = PerTensorQuant::new(0.1, 0);
        assert!(SignParams::prepare_s8(PerTensorQuant::new(1e9, 0), q, Rounding::Double).is_err());
        assert!(SignParams::prepare_s8(PerTensorQuant::new(f32::NAN, 0), q, Rounding::Double).is_err());
        assert!(SignParams::prepare_s16(PerTensorQuant::new(0.1, 1), q, Rounding::Double).is_err());
        let p = SignParams::prepare_s8(q, q, Rounding::Double).unwrap();
        assert!(abs_s8(&p, &[0; 3], &mut [0; 2]).is_err());
    }
}

//! RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1 and any clamp `[lo, hi]`, int8 and int16, as one
//! kernel: TFLite Micro's RELU (`ReluQuantized`, prepared by `CalculateReluOpData`) with the
//! bounds as parameters:
//!
//! `y = clamp(zp_out + MultiplyByQuantizedMultiplier(x − zp_in, s_in / s_out), q_lo, q_hi)`,
//! `q_lo = max(type min, zp_out + roundf(lo / s_out))`, `q_hi = min(type max, zp_out + roundf(hi / s_out))`
//! (an infinite bound is the type's limit), as TFLite computes a fused activation's range.
//!
//! TFLite Micro prepares the multiplier dividing in `double` ([`Rounding::Double`]), the
//! interpreter in `float` ([`Rounding::Single`]); both requantize with gemmlowp's double-rounding
//! `MultiplyByQuantizedMultiplier`. The interpreter's RELU6 and RELU_N1_TO_1 (`QuantizedReluX`)
//! are this kernel with bounds [0, 6] and [-1, 1]. TFLite Micro's RELU6 is not: it clamps the
//! input to `[zp_in, zp_in + round(6 / s_in)]` and stores it unchanged, ignoring the output's
//! quantization ([`ReluParams::prepare_relu6_tflm`] prepares that form; it equals the general one
//! when input and output share their quantization). TFLite Micro has no RELU_N1_TO_1.
//!
//! ```
//! use microquant::kernels::Rounding;
//! use microquant::kernels::relu::{ReluParams, relu_s8};
//! use microquant::kernels::tensor::PerTensorQuant;
//!
//! // Clamp to [-1, 1]: input scale 0.1, output scale 0.01 (zero points 0).
//! let p = ReluParams::prepare_s8(
//!     PerTensorQuant::new(0.1, 0), PerTensorQuant::new(0.01, 0), -1.0, 1.0, Rounding::Double,
//! ).unwrap();
//! let mut y = [0i8; 4];
//! relu_s8(&p, &[-20, -5, 3, 50], &mut y).unwrap();
//! assert_eq!(y, [-100, -50, 30, 100]);
//! ```
#![forbid(unsafe_code)]

use super::Rounding;
use super::common::ActivationElement;
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, clamp_i32, multiply_by_quantized_multiplier, quantize_multiplier};

const KERNEL: &str = "relu";

/// Prepared parameters of a RELU-family clamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReluParams {
    /// Subtracted from each input.
    pub input_offset: i32,
    /// Added to each requantized value.
    pub output_offset: i32,
    /// `s_in / s_out`.
    pub multiplier: QuantizedMultiplier,
    /// The quantized lower bound.
    pub act_min: i32,
    /// The quantized upper bound.
    pub act_max: i32,
}

/// `zp + roundf(bound / scale)` clamped to `[lo, hi]` (TFLite's activation range, `roundf` of
/// a float quotient); an infinite bound gives the range's end.
fn quantize_bound(bound: f32, scale: f32, zp: i32, lo: i32, hi: i32) -> i32 {
    let q = libm::roundf(bound / scale);
    if q.is_nan() {
        return if bound < 0.0 { lo } else { hi };
    }
    // Clamped in float first: the quotient may be far outside i32 (max then min: no panic).
    let q = q.max((lo - zp) as f32 - 1.0).min((hi - zp) as f32 + 1.0) as i32;
    clamp_i32(zp + q, lo, hi)
}

impl ReluParams {
    /// TFLite's Prepare of an int8 clamp to `[lo, hi]` (`lo` may be `-inf`, `hi` `+inf`):
    /// RELU is `[0, inf]`, RELU6 `[0, 6]` (as the interpreter), RELU_N1_TO_1 `[-1, 1]`.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization;
    /// [`Error::BadKernelArgument`] if a bound is NaN, `lo > hi`, or `s_in / s_out` is out of
    /// range (the shifted input must fit 32 bits).
    pub fn prepare_s8(
        input: PerTensorQuant,
        output: PerTensorQuant,
        lo: f32,
        hi: f32,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare::<i8>(input, output, lo, hi, rounding, 23)
    }

    /// As [`Self::prepare_s8`] for int16 (zero points must be 0, as TFLite requires).
    ///
    /// # Errors
    /// As [`Self::prepare_s8`].
    pub fn prepare_s16(
        input: PerTensorQuant,
        output: PerTensorQuant,
        lo: f32,
        hi: f32,
        rounding: Rounding,
    ) -> Result<Self, Error> {
        Self::prepare::<i16>(input, output, lo, hi, rounding, 15)
    }

    /// TFLite Micro's RELU6 (`Relu6Prepare`, `Relu6Quantized`), int8 (`int16 = false`) or int16:
    /// the input clamped to `[zp_in, zp_in + round(6 / s_in)]` and stored as it is (the output's
    /// quantization is not used).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization.
    pub fn prepare_relu6_tflm(input: PerTensorQuant, int16: bool) -> Result<Self, Error> {
        let (lo, hi) = if int16 { (-32768, 32767) } else { (-128, 127) };
        input.check(lo, hi)?;
        // FloatToQuantizedType: zp + round(6 / s) in float, saturated to the type.
        let act_max = quantize_bound(6.0, input.scale, input.zero_point, lo, hi);
        Ok(Self {
            input_offset: 0,
            output_offset: 0,
            multiplier: QuantizedMultiplier { multiplier: 1 << 30, shift: 1 },
            act_min: input.zero_point,
            act_max,
        })
    }

    fn prepare<T: ActivationElement>(
        input: PerTensorQuant,
        output: PerTensorQuant,
        lo: f32,
        hi: f32,
        rounding: Rounding,
        max_left_shift: i32,
    ) -> Result<Self, Error> {
        let (tmin, tmax) = (T::RANGE.min, T::RANGE.max);
        input.check(tmin, tmax)?;
        output.check(tmin, tmax)?;
        if tmax > 127 && (input.zero_point != 0 || output.zero_point != 0) {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "int16 zero points must be 0" });
        }
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "clamp bounds are NaN or lo > hi" });
        }
        let real = match rounding {
            // TFLite Micro: `(double)s_in / (double)s_out`.
            Rounding::Double => f64::from(input.scale) / f64::from(output.scale),
            // The interpreter: `s_in / s_out` in float, then widened.
            Rounding::Single => f64::from(input.scale / output.scale),
        };
        if !real.is_finite() {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "s_in / s_out is not finite" });
        }
        let multiplier = quantize_multiplier(real);
        if multiplier.shift > max_left_shift || multiplier.shift < -31 {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "s_in / s_out out of range" });
        }
        let zp = output.zero_point;
        let act_min = if lo == f32::NEG_INFINITY { tmin } else { quantize_bound(lo, output.scale, zp, tmin, tmax) };
        let act_max = if hi == f32::INFINITY { tmax } else { quantize_bound(hi, output.scale, zp, tmin, tmax) };
        Ok(Self { input_offset: input.zero_point, output_offset: zp, multiplier, act_min, act_max })
    }

    #[inline(always)]
    fn apply<T: ActivationElement>(&self, x: T) -> T {
        let d = x.to_i32() - self.input_offset;
        let y = multiply_by_quantized_multiplier(d, self.multiplier.multiplier, self.multiplier.shift)
            .saturating_add(self.output_offset);
        // act_min / act_max may cross (an empty range): max then min, as TFLite.
        let y = y.max(self.act_min).min(self.act_max);
        T::from_clamped(clamp_i32(y, T::RANGE.min, T::RANGE.max))
    }
}

/// int8 RELU-family clamp.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn relu_s8(params: &ReluParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    relu(params, input, output)
}

/// int16 RELU-family clamp.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn relu_s16(params: &ReluParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    relu(params, input, output)
}

fn relu<T: ActivationElement>(params: &ReluParams, input: &[T], output: &mut [T]) -> Result<(), Error> {
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
    fn equal_quantization_is_a_plain_clamp() {
        let q = PerTensorQuant::new(0.05, 10);
        let p = ReluParams::prepare_s8(q, q, 0.0, 6.0, Rounding::Double).unwrap();
        assert_eq!((p.act_min, p.act_max), (10, 127));
        let p = ReluParams::prepare_s8(q, q, 0.0, 1.0, Rounding::Double).unwrap();
        assert_eq!((p.act_min, p.act_max), (10, 30));
        let mut y = [0i8; 5];
        relu_s8(&p, &[-128, 9, 10, 29, 127], &mut y).unwrap();
        assert_eq!(y, [10, 10, 10, 29, 30]);
    }

    #[test]
    fn huge_bounds_saturate() {
        let q = PerTensorQuant::new(1e-6, 0);
        let p = ReluParams::prepare_s8(q, q, -1e30, 1e30, Rounding::Single).unwrap();
        assert_eq!((p.act_min, p.act_max), (-128, 127));
    }

    #[test]
    fn bad_arguments_are_errors() {
        let q = PerTensorQuant::new(0.1, 0);
        assert!(ReluParams::prepare_s8(q, q, f32::NAN, 1.0, Rounding::Double).is_err());
        assert!(ReluParams::prepare_s8(q, q, 2.0, 1.0, Rounding::Double).is_err());
        assert!(ReluParams::prepare_s8(PerTensorQuant::new(1e9, 0), q, 0.0, 1.0, Rounding::Double).is_err());
        assert!(ReluParams::prepare_s16(PerTensorQuant::new(0.1, 3), q, 0.0, 1.0, Rounding::Double).is_err());
        assert!(ReluParams::prepare_relu6_tflm(PerTensorQuant::new(0.0, 100), false).is_err());
        let p = ReluParams::prepare_s8(q, q, 0.0, 1.0, Rounding::Double).unwrap();
        assert!(relu_s8(&p, &[0; 3], &mut [0; 2]).is_err());
    }
}

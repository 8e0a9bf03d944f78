//! RSQRT, int8, as TFLite Micro's `RsqrtEvalQuantized` (the interpreter's is the same
//! arithmetic): for `v = x − zp_in > 0`, `1/√v` as a quantized multiplier
//! (`GetInvSqrtQuantizedMultiplierExp`: five Newton–Raphson steps in gemmlowp fixed point),
//! applied to 1 with 20 extra bits, then scaled by `1 / (√s_in · s_out)`:
//!
//! `y = clamp(zp_out + MBQM(MBQM(1, inv_sqrt(v), shift_v + 20), m, shift − 20))`; `v = 0` gives
//! 127 (TFLite: "any value close to 0 represents the max output value").
//!
//! Inputs below the zero point (negative values) are refused, as TFLite refuses them
//! ("Rsqrt is only defined for positive values"). TFLite Micro computes `m` in `double`
//! (`1 / (√(double)s_in · (double)s_out)`, [`Rounding::Double`]), the interpreter with the square
//! root and the product in `float` ([`Rounding::Single`]).
//!
//! ```
//! use microquant::kernels::Rounding;
//! use microquant::kernels::rsqrt::{RsqrtParams, rsqrt_s8};
//! use microquant::kernels::tensor::PerTensorQuant;
//!
//! // Input 0.25 per step from 0; output 0.05 per step from -128.
//! let p = RsqrtParams::prepare_s8(
//!     PerTensorQuant::new(0.25, -128), PerTensorQuant::new(0.05, -128), Rounding::Double,
//! ).unwrap();
//! let mut y = [0i8; 3];
//! rsqrt_s8(&p, &[-124, -112, -128], &mut y).unwrap(); // 1/√1 = 1, 1/√4 = 0.5, 1/√0
//! assert_eq!(y, [-108, -118, 127]);
//! assert!(rsqrt_s8(&p, &[-124, -112, -128], &mut y[..2]).is_err());
//! ```
#![forbid(unsafe_code)]

use super::Rounding;
use super::fixedpoint::saturating_rounding_multiply_by_pot as srmpot;
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{
    QuantizedMultiplier, clamp_i32, multiply_by_quantized_multiplier, quantize_multiplier,
    saturating_rounding_doubling_high_mul as srdhm,
};

const KERNEL: &str = "rsqrt";
/// Extra bits kept between the two multiplications (TFLite's `kShift`).
const K_SHIFT: i32 = 20;

/// Prepared parameters of an int8 RSQRT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RsqrtParams {
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// `1 / (√s_in · s_out)`.
    pub multiplier: QuantizedMultiplier,
}

/// TFLite's `GetInvSqrtQuantizedMultiplierExp(input, kReverseShift = -1)` for `input > 1`:
/// `(multiplier, left shift)` with `multiplier · 2^shift / 2^31 ≈ 1/√input`.
fn inv_sqrt(mut input: i32) -> (i32, i32) {
    if input <= 1 {
        return (i32::MAX, 0);
    }
    let mut shift = 11;
    while input >= 1 << 29 {
        input /= 4;
        shift += 1;
    }
    let max_left_shift_bits = input.leading_zeros() as i32 - 1;
    let left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
    shift -= left_shift_bit_pairs;
    input <<= 2 * left_shift_bit_pairs;
    // Fixed point with 3 integer bits (F3): one is 2^28.
    let x_in = input >> 1;
    let half_input = srmpot(x_in, -1);
    let half_three = (1 << 28) + (1 << 27);
    let mut x: i32 = 1 << 28;
    for _ in 0..5 {
        // x·x is F6, (x·x)·x F9; Rescale<3> multiplies the raw value by 2^(9 − 3).
        let x3 = srmpot(srdhm(srdhm(x, x), x), 6);
        // F3·F3 products are F6; their difference rescaled to F3.
        x = srmpot(srdhm(half_three, x).wrapping_sub(srdhm(half_input, x3)), 3);
    }
    // · √2/2 in F0 (1518500250).
    let mut m = srdhm(x, 1_518_500_250);
    if shift < 0 {
        m = m.wrapping_shl((-shift) as u32);
        shift = 0;
    }
    (m, -shift)
}

impl RsqrtParams {
    /// TFLite's Prepare of an int8 RSQRT.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization;
    /// [`Error::BadKernelArgument`] if `1 / (√s_in · s_out)` is out of range.
    pub fn prepare_s8(input: PerTensorQuant, output: PerTensorQuant, rounding: Rounding) -> Result<Self, Error> {
        input.check(-128, 127)?;
        output.check(-128, 127)?;
        let real = match rounding {
            Rounding::Double => 1.0 / (libm::sqrt(f64::from(input.scale)) * f64::from(output.scale)),
            Rounding::Single => 1.0 / f64::from(libm::sqrtf(input.scale) * output.scale),
        };
        if !real.is_finite() {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "1 / (sqrt(s_in) s_out) is not finite" });
        }
        let multiplier = quantize_multiplier(real);
        // shift − 20 must stay a valid shift; the value carried is below 2^20 · 2^1.
        if multiplier.shift - K_SHIFT < -31 || multiplier.shift - K_SHIFT > 9 {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "1 / (sqrt(s_in) s_out) out of range" });
        }
        Ok(Self { input_zero_point: input.zero_point, output_zero_point: output.zero_point, multiplier })
    }
}

/// int8 RSQRT.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or an input is below the zero point.
pub fn rsqrt_s8(params: &RsqrtParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    check_same_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
    for (y, &x) in output.iter_mut().zip(input) {
        let v = x as i32 - params.input_zero_point;
        if v < 0 {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "input below zero (rsqrt of a negative)" });
        }
        *y = if v == 0 {
            127
        } else {
            let (m, s) = inv_sqrt(v);
            let data = multiply_by_quantized_multiplier(1, m, s + K_SHIFT);
            let out =
                multiply_by_quantized_multiplier(data, params.multiplier.multiplier, params.multiplier.shift - K_SHIFT)
                    .saturating_add(params.output_zero_point);
            clamp_i32(out, -128, 127) as i8
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inv_sqrt_is_close() {
        for v in 2..=255 {
            let (m, s) = inv_sqrt(v);
            let got = f64::from(m) * 2f64.powi(s) / 2f64.powi(31);
            let want = 1.0 / f64::from(v).sqrt();
            assert!((got - want).abs() < 1e-6 * want.max(1.0), "{v}: {got} vs {want}");
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        let q = PerTensorQuant::new(0.1, 0);
        assert!(RsqrtParams::prepare_s8(q, PerTensorQuant::new(1e-12, 0), Rounding::Double).is_err());
        assert!(RsqrtParams::prepare_s8(PerTensorQuant::new(-1.0, 0), q, Rounding::Double).is_err());
        let p = RsqrtParams::prepare_s8(q, q, Rounding::Double).unwrap();
        assert!(rsqrt_s8(&p, &[-1], &mut [0]).is_err());
        assert!(rsqrt_s8(&p, &[0; 3], &mut [0; 2]).is_err());
    }
}

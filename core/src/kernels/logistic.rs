//! Logistic (sigmoid) of an int8 tensor (TFLite `LOGISTIC`), through a 256-entry table built at
//! prepare time; the kernel is a table lookup.
//!
//! | [`Rounding`] | matches | table entry for input `x` |
//! |---|---|---|
//! | `Double` | TFLite Micro (`reference_integer_ops::Logistic`) | gemmlowp fixed point: `x − zp` scaled into Q4.27 by a frexp-derived multiplier, inputs beyond the radius saturate to −128 / 127, else `logistic` in Q0.31 rounded to Q0.8 minus 128 |
//! | `Single` | the TFLite interpreter's reference kernel (`LUTPopulate<int8_t>`) | `f32`: `round(1 / (1 + expf(−s_in · (x − zp))) · 256) − 128`, clamped |
//!
//! The fixed-point entry depends only on `x`, so tabulating it is exact. The output is
//! quantized `(1/256, −128)` as the TFLite spec fixes it.
#![forbid(unsafe_code)]

use super::Rounding;
use super::fixedpoint;
use super::lut::{LutS8, expf, lut_lookup_s8, lut_populate_s8};
use super::softmax::calculate_input_radius;
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{clamp_i32, multiply_by_quantized_multiplier, rounding_divide_by_pot};

/// TFLite Micro's prepared fixed-point parameters of an int8 logistic or tanh: the input scaled
/// into Q4.27 (`kInputIntegerBits = 4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Q4InputScaling {
    pub zero_point: i32,
    pub multiplier: i32,
    pub left_shift: i32,
    pub range_radius: i32,
}

impl Q4InputScaling {
    /// TFLite Micro's Prepare: `frexp(s_in · 2^27)`, mantissa rounded to Q31 (no carry, as
    /// TFLite), radius `CalculateInputRadius(4, shift, 31)`.
    pub(crate) fn new(kernel: &'static str, input: PerTensorQuant) -> Result<Self, Error> {
        input.check(-128, 127)?;
        let real = input.scale as f64 * (1i64 << 27) as f64;
        let (q, shift) = libm::frexp(real);
        let q_fixed = libm::round(q * (1i64 << 31) as f64) as i64;
        if q_fixed > i32::MAX as i64 || !(-31..=30).contains(&shift) {
            return Err(Error::BadKernelArgument { kernel, reason: "input scale out of range" });
        }
        Ok(Self {
            zero_point: input.zero_point,
            multiplier: q_fixed as i32,
            left_shift: shift,
            range_radius: calculate_input_radius(4, shift, 31),
        })
    }

    /// `(x − zp)` in Q4.27, or `Err(saturated output)` beyond the radius.
    #[inline]
    pub(crate) fn scale(&self, x: i8) -> Result<i32, i8> {
        let input = x as i32 - self.zero_point;
        if input <= -self.range_radius {
            Err(i8::MIN)
        } else if input >= self.range_radius {
            Err(i8::MAX)
        } else {
            Ok(multiply_by_quantized_multiplier(input, self.multiplier, self.left_shift))
        }
    }
}

/// TFLite Micro's int8 logistic of one value.
fn logistic_fixed_point(p: &Q4InputScaling, x: i8) -> i8 {
    match p.scale(x) {
        Err(sat) => sat,
        Ok(q4) => {
            let q0 = fixedpoint::logistic(q4, 4);
            let q23 = rounding_divide_by_pot(q0, 31 - 8) - 128;
            clamp_i32(q23, -128, 127) as i8
        }
    }
}

/// Prepared [`logistic_s8`]: the 256-entry table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogisticParams {
    /// Output for each input, indexed by the input as `u8`.
    pub lut: LutS8,
    /// The rounding mode (oracle) the table was built for.
    pub rounding: Rounding,
}

impl LogisticParams {
    /// Builds the table for an int8 logistic. The output must be quantized `(1/256, −128)`
    /// (TFLite Micro checks the zero point, the interpreter the scale).
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for other output parameters or an input scale out of range;
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for a bad input.
    pub fn prepare_s8(input: PerTensorQuant, output: PerTensorQuant, rounding: Rounding) -> Result<Self, Error> {
        const K: &str = "logistic_s8";
        if output.zero_point != -128 || output.scale != 1.0 / 256.0 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "output must be quantized (1/256, -128)" });
        }
        let lut = match rounding {
            Rounding::Double => {
                let p = Q4InputScaling::new(K, input)?;
                let mut lut = [0i8; 256];
                for (i, e) in lut.iter_mut().enumerate() {
                    *e = logistic_fixed_point(&p, i as u8 as i8);
                }
                lut
            }
            Rounding::Single => {
                input.check(-128, 127)?;
                lut_populate_s8(input, output, |v| 1.0f32 / (1.0f32 + expf(-v)))
            }
        };
        Ok(Self { lut, rounding })
    }
}

/// int8 logistic, bit-exact with TFLite Micro (`Double`) or the TFLite interpreter (`Single`),
/// as prepared. Any shape: `input` and `output` have the same length.
///
/// Scratch: none (the 256-byte table lives in the parameters).
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn logistic_s8(params: &LogisticParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    check_same_len("logistic_s8", "output length != input length", output.len(), input.len())?;
    // Dispatch point: an optimized table lookup (kernels/arch/) slots in here.
    lut_lookup_s8(&params.lut, input, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: PerTensorQuant = PerTensorQuant::new(1.0 / 256.0, -128);

    #[test]
    fn both_tables_follow_the_sigmoid() {
        for rounding in [Rounding::Double, Rounding::Single] {
            for (s, zp) in [(0.1f32, 0), (0.02, -128), (0.5, 127), (0.0625, 3)] {
                let p = LogisticParams::prepare_s8(PerTensorQuant::new(s, zp), OUT, rounding).unwrap();
                for x in -128i32..=127 {
                    let v = s as f64 * (x - zp) as f64;
                    let want = 1.0 / (1.0 + libm::exp(-v)) * 256.0 - 128.0;
                    let got = p.lut[x as i8 as u8 as usize] as f64;
                    assert!((got - want.min(127.0)).abs() <= 1.0, "{rounding:?} s {s} zp {zp} x {x}: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn fixed_point_saturates_beyond_the_radius() {
        let p = Q4InputScaling::new("t", PerTensorQuant::new(0.5, 0)).unwrap();
        // s · 2^27 = 2^26: shift 27, radius floor(15 · 2^27 / 2^27) = 15 (real 7.5).
        assert_eq!(p.range_radius, 15);
        assert_eq!(logistic_fixed_point(&p, 15), 127);
        assert_eq!(logistic_fixed_point(&p, -15), -128);
        assert_eq!(logistic_fixed_point(&p, 0), 0);
    }

    #[test]
    fn errors() {
        let i = PerTensorQuant::new(0.1, 0);
        assert!(LogisticParams::prepare_s8(i, PerTensorQuant::new(1.0 / 256.0, 0), Rounding::Double).is_err());
        assert!(LogisticParams::prepare_s8(i, PerTensorQuant::new(1.0 / 128.0, -128), Rounding::Single).is_err());
        let p = LogisticParams::prepare_s8(i, OUT, Rounding::Double).unwrap();
        assert!(logistic_s8(&p, &[0; 3], &mut [0; 2]).is_err());
    }
}

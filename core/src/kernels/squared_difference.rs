//! Elementwise squared difference `(x1 − x2)²` of two int8 tensors with broadcasting (TFLite
//! `SQUARED_DIFFERENCE`, which TensorFlow writes inside LayerNorm and variance computations).
//!
//! ADD's rescaling to a common scale (`left_shift = 7`), then the square:
//!
//! ```text
//! a = (x1 − zp1) · 2^7 · m1        m1 = s1 / (2 · max(s1, s2))
//! b = (x2 − zp2) · 2^7 · m2        m2 = s2 / (2 · max(s1, s2))
//! y = clamp(zp_out + (a − b)² · m_out)    m_out = (2 · max(s1, s2))² / (2^14 · s_out)
//! ```
//!
//! the first two products by a multiplier below one, the last TFLite's general
//! `MultiplyByQuantizedMultiplier` (double rounding), the multipliers computed in `f64` from the
//! `f32` scales (`squared_difference.cc`). Bit-exact with TFLite Micro and the interpreter (which
//! agree on every golden case), in both [`Rounding`] modes. int8 only: TFLite Micro's int16
//! kernel squares differences of up to 2^16 in 32 bits.
#![forbid(unsafe_code)]

use super::tensor::{Broadcast, PerTensorQuant, check_same_len};
use super::{ActivationRange, Rounding};
use crate::Error;
use crate::requant::{QuantizedMultiplier, multiply_by_quantized_multiplier, quantize_multiplier};

/// Prepared parameters of [`squared_difference_s8`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SquaredDifferenceParams {
    /// `-zero_point` of input 1.
    pub input1_offset: i32,
    /// `-zero_point` of input 2.
    pub input2_offset: i32,
    /// Zero point of the output.
    pub output_offset: i32,
    /// Headroom shift applied to both inputs (7).
    pub left_shift: i32,
    /// Multiplier of input 1 (shift ≤ 0).
    pub input1_multiplier: QuantizedMultiplier,
    /// Multiplier of input 2 (shift ≤ 0).
    pub input2_multiplier: QuantizedMultiplier,
    /// Multiplier of the squared difference (any shift in [-31, 30]).
    pub output_multiplier: QuantizedMultiplier,
    /// Output clamp (the int8 range).
    pub activation: ActivationRange,
    /// The broadcast of the two input shapes.
    pub broadcast: Broadcast,
    /// The rounding mode the parameters were prepared for.
    pub rounding: Rounding,
}

/// TFLite's `QuantizeMultiplierSmallerThanOneExp`: `real ∈ (0, 1)`, shift ≤ 0.
fn smaller_than_one(real: f64) -> Result<QuantizedMultiplier, Error> {
    let q = quantize_multiplier(real);
    if !(real > 0.0 && real < 1.0) || q.shift > 0 {
        return Err(Error::BadKernelArgument {
            kernel: "squared_difference_s8",
            reason: "a multiplier is outside (0, 1)",
        });
    }
    Ok(q)
}

impl SquaredDifferenceParams {
    /// Prepares an int8 squared difference (TFLite `SQUARED_DIFFERENCE` Prepare,
    /// `left_shift = 7`).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization parameters,
    /// [`Error::BadKernelArgument`] if the shapes do not broadcast or the output multiplier is
    /// outside `[2^-31, 2^30]`.
    pub fn prepare_s8(
        input1: PerTensorQuant,
        input2: PerTensorQuant,
        output: PerTensorQuant,
        shape1: &[usize],
        shape2: &[usize],
        rounding: Rounding,
    ) -> Result<Self, Error> {
        input1.check(-128, 127)?;
        input2.check(-128, 127)?;
        output.check(-128, 127)?;
        let broadcast = Broadcast::new(shape1, shape2)?;
        let left_shift = 7;
        let twice_max = 2.0 * (if input1.scale > input2.scale { input1.scale } else { input2.scale }) as f64;
        let real1 = input1.scale as f64 / twice_max;
        let real2 = input2.scale as f64 / twice_max;
        // `(1 << 2 · left_shift) * output_scale` is an int times a float in C++: f32.
        let real_out = twice_max * twice_max / ((1i32 << (2 * left_shift)) as f32 * output.scale) as f64;
        let mo = quantize_multiplier(real_out);
        if !(real_out.is_finite() && real_out > 0.0 && (-31..=30).contains(&mo.shift)) {
            return Err(Error::BadKernelArgument {
                kernel: "squared_difference_s8",
                reason: "output multiplier outside [2^-31, 2^30]",
            });
        }
        Ok(Self {
            input1_offset: -input1.zero_point,
            input2_offset: -input2.zero_point,
            output_offset: output.zero_point,
            left_shift,
            input1_multiplier: smaller_than_one(real1)?,
            input2_multiplier: smaller_than_one(real2)?,
            output_multiplier: mo,
            activation: ActivationRange::INT8,
            broadcast,
            rounding,
        })
    }

    /// The per-element computation (TFLite Micro's `SquaredDifference<int8_t>`).
    #[inline(always)]
    fn one(&self, x1: i32, x2: i32) -> i32 {
        let shifted1 = (self.input1_offset + x1).wrapping_shl(self.left_shift as u32);
        let shifted2 = (self.input2_offset + x2).wrapping_shl(self.left_shift as u32);
        let (m1, m2, mo) = (&self.input1_multiplier, &self.input2_multiplier, &self.output_multiplier);
        let scaled1 = multiply_by_quantized_multiplier(shifted1, m1.multiplier, m1.shift);
        let scaled2 = multiply_by_quantized_multiplier(shifted2, m2.multiplier, m2.shift);
        let diff = scaled1.wrapping_sub(scaled2);
        let raw = multiply_by_quantized_multiplier(diff.wrapping_mul(diff), mo.multiplier, mo.shift);
        self.activation.apply(raw.wrapping_add(self.output_offset))
    }
}

/// int8 elementwise squared difference with broadcasting, bit-exact with TFLite Micro. Shapes
/// as given to [`SquaredDifferenceParams::prepare_s8`]; `output` has the broadcast shape.
/// Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn squared_difference_s8(
    params: &SquaredDifferenceParams,
    input1: &[i8],
    input2: &[i8],
    output: &mut [i8],
) -> Result<(), Error> {
    let k = "squared_difference_s8";
    check_same_len(k, "input1 length != its shape", input1.len(), params.broadcast.input1_len())?;
    check_same_len(k, "input2 length != its shape", input2.len(), params.broadcast.input2_len())?;
    check_same_len(k, "output length != broadcast shape", output.len(), params.broadcast.output_len())?;
    params.broadcast.for_each(input1, input2, output, |a, b| params.one(a as i32, b as i32) as i8);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn squares_of_differences() {
        // s = 0.5 in, 0.25 out: y = (x1 - x2)^2 (real (0.5 d)^2 = 0.25 d^2).
        let p = SquaredDifferenceParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(0.25, -128), &[4], &[1], Rounding::Double)
            .unwrap();
        let mut out = [0i8; 4];
        squared_difference_s8(&p, &[3, -3, 10, 20], &[1], &mut out).unwrap();
        assert_eq!(out, [-124, -112, -47, 127]);
    }

    #[test]
    fn errors() {
        let r = Rounding::Double;
        assert!(SquaredDifferenceParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(0.25, 0), &[2, 3], &[2], r).is_err());
        assert_eq!(
            SquaredDifferenceParams::prepare_s8(q(0.0, 0), q(0.5, 0), q(0.25, 0), &[2], &[2], r),
            Err(Error::InvalidScale)
        );
        let p = SquaredDifferenceParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(0.25, 0), &[2], &[2], r).unwrap();
        assert!(squared_difference_s8(&p, &[1, 2], &[1], &mut [0; 2]).is_err());
    }
}

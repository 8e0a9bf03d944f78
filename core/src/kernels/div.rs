//! Elementwise division of two int8 tensors with broadcasting (TFLite `DIV`), as TFLite Micro's
//! `reference_ops::Div` computes it:
//!
//! ```text
//! a = x1 − zp1, b = x2 − zp2 (both negated when b < 0)
//! 1/b ≈ inv · 2^-r        inv: gemmlowp's Newton reciprocal (GetReciprocal), r = bits of b
//! q = SRDHM(a · 2^h, inv)  h: the redundant sign bits of a (its headroom)
//! y = clamp(zp_out + RoundingDivideByPOT(SRDHM(q, m), h + r − shift))     m · 2^shift = s1 / (s2 · s_out)
//! ```
//!
//! Where TFLite Micro leaves the result undefined, microquant defines it:
//! - a divisor equal to its zero point (`b = 0`): a debug check in TFLite Micro, an error in the
//!   interpreter; microquant divides by one step (`b = 1`), so `x / 0` saturates the way the
//!   real quotient grows;
//! - a final shift `h + r − shift` above 31 (a dividend near 0 over a large divisor): C++
//!   shifts by 32 or more, undefined (x86 TFLite Micro returns garbage); microquant rounds
//!   exactly, which gives the zero point (the quotient is below half a step).
//!
//! The golden cases (`tests/gen/kernels/gen_binary.py`) keep clear of both.
//!
//! | [`Rounding`] | matches | multiplier computed as |
//! |---|---|---|
//! | `Double` | TFLite Micro | `(f64)s1 / ((f64)s2 · (f64)s_out)` |
//! | `Single` | the TFLite interpreter's reference kernel | `s1 / (s2 · s_out)` in `f32`, then widened |
//!
//! The integer arithmetic is the same; the multipliers differ in their last bits, which moves a
//! quotient that lands on a rounding tie (62.5 steps in a golden case: TFLite Micro 63, the
//! interpreter 62).
#![forbid(unsafe_code)]

use super::fixedpoint::one_over_one_plus_x_for_x_in_0_1;
use super::tensor::{Broadcast, PerTensorQuant, check_same_len};
use super::{ActivationRange, Rounding};
use crate::Error;
use crate::requant::{QuantizedMultiplier, quantize_multiplier, saturating_rounding_doubling_high_mul};

/// Prepared parameters of [`div_s8`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DivParams {
    /// `-zero_point` of input 1.
    pub input1_offset: i32,
    /// `-zero_point` of input 2.
    pub input2_offset: i32,
    /// Zero point of the output.
    pub output_offset: i32,
    /// `s1 / (s2 · s_out)` as a quantized multiplier (shift ≤ 23).
    pub output_multiplier: QuantizedMultiplier,
    /// Output clamp (fused activation intersected with int8).
    pub activation: ActivationRange,
    /// The broadcast of the two input shapes.
    pub broadcast: Broadcast,
    /// The rounding mode the parameters were prepared for.
    pub rounding: Rounding,
}

/// The largest multiplier shift: the final shift `h + r − shift` is then never negative
/// (`h ≥ 23` for an int8 difference).
pub const DIV_MAX_SHIFT: i32 = 23;

impl DivParams {
    /// Prepares an int8 division (TFLite `DIV` Prepare: the multiplier `s1 / (s2 · s_out)`, in
    /// `f64` for `Double`, in `f32` for `Single`; see the module docs). `activation` is the
    /// output clamp.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization parameters,
    /// [`Error::BadKernelArgument`] if the shapes do not broadcast or the multiplier is 2^23 or
    /// more.
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
        let kernel = "div_s8";
        input1.check(-128, 127)?;
        input2.check(-128, 127)?;
        output.check(-128, 127)?;
        let broadcast = Broadcast::new(shape1, shape2)?;
        let real = match rounding {
            Rounding::Double => input1.scale as f64 / (input2.scale as f64 * output.scale as f64),
            Rounding::Single => (input1.scale / (input2.scale * output.scale)) as f64,
        };
        if !(real.is_finite() && real > 0.0) {
            return Err(Error::InvalidScale);
        }
        let m = quantize_multiplier(real);
        if m.shift > DIV_MAX_SHIFT {
            return Err(Error::BadKernelArgument { kernel, reason: "multiplier s1/(s2·s_out) of 2^23 or more" });
        }
        let activation = ActivationRange { min: activation.min.max(-128), max: activation.max.min(127) };
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

    /// The per-element computation (TFLite's `DivElementwise` body).
    #[inline(always)]
    fn div_one(&self, x1: i32, x2: i32) -> i32 {
        let (mut a, mut b) = (self.input1_offset + x1, self.input2_offset + x2);
        if b < 0 {
            a = -a;
            b = -b;
        }
        let b = b.max(1);
        // GetReciprocal(b, 31): 1/b = inv · 2^-recip_shift.
        let headroom_plus_one = (b as u32).leading_zeros();
        let recip_shift = 31 - headroom_plus_one as i32;
        let shifted_minus_one = ((b as u32) << headroom_plus_one).wrapping_sub(1 << 31) as i32;
        let inv = one_over_one_plus_x_for_x_in_0_1(shifted_minus_one);
        // CountLeadingSignBits(a), then MultiplyByQuantizedMultiplierGreaterThanOne(a, inv, h).
        let headroom = ((a ^ (a >> 31)) as u32).leading_zeros() as i32 - 1;
        let unscaled = saturating_rounding_doubling_high_mul(a.wrapping_shl(headroom as u32), inv);
        let m = &self.output_multiplier;
        let exponent = headroom + recip_shift - m.shift;
        let q = round_divide_by_pot_wide(saturating_rounding_doubling_high_mul(unscaled, m.multiplier), exponent);
        self.activation.apply(q.wrapping_add(self.output_offset))
    }

    fn check(&self, len1: usize, len2: usize, out: usize) -> Result<(), Error> {
        check_same_len("div_s8", "input1 length != its shape", len1, self.broadcast.input1_len())?;
        check_same_len("div_s8", "input2 length != its shape", len2, self.broadcast.input2_len())?;
        check_same_len("div_s8", "output length != broadcast shape", out, self.broadcast.output_len())
    }
}

/// gemmlowp's `RoundingDivideByPOT` (`x / 2^exponent`, ties away from zero) for any exponent
/// `≥ 0`: exact in 64 bits beyond 31, where the 32-bit version is undefined.
#[inline(always)]
fn round_divide_by_pot_wide(x: i32, exponent: i32) -> i32 {
    let e = exponent.clamp(0, 62);
    let x = x as i64;
    let mask = (1i64 << e) - 1;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i64::from(x < 0);
    ((x >> e) + i64::from(remainder > threshold)) as i32
}

/// int8 elementwise division with broadcasting, bit-exact with TFLite Micro (see the module docs
/// for the inputs where it is undefined). Shapes as given to [`DivParams::prepare_s8`]; `output`
/// has the broadcast shape. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn div_s8(params: &DivParams, input1: &[i8], input2: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.check(input1.len(), input2.len(), output.len())?;
    params.broadcast.for_each(input1, input2, output, |a, b| params.div_one(a as i32, b as i32) as i8);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requant::rounding_divide_by_pot;

    fn q(s: f32, z: i32) -> PerTensorQuant {
        PerTensorQuant::new(s, z)
    }

    #[test]
    fn quotients_round_to_nearest() {
        // s1 / (s2 s_out) = 1: y = round(x1 / x2).
        let p =
            DivParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(1.0, 0), ActivationRange::INT8, &[6], &[6], Rounding::Double)
                .unwrap();
        let mut out = [0i8; 6];
        div_s8(&p, &[100, -100, 20, 20, 127, -128], &[3, 3, 3, -3, 1, 1], &mut out).unwrap();
        assert_eq!(out, [33, -33, 7, -7, 127, -128]);
    }

    #[test]
    fn zero_divisors_and_tiny_quotients_are_defined() {
        let p =
            DivParams::prepare_s8(q(0.5, 0), q(0.5, 3), q(1.0, 0), ActivationRange::INT8, &[4], &[4], Rounding::Double)
                .unwrap();
        let mut out = [0i8; 4];
        // 5/0 and -5/0 divide by one step; 0/0 is 0; 1/124 rounds to 0.
        div_s8(&p, &[5, -5, 0, 1], &[3, 3, 3, 127], &mut out).unwrap();
        assert_eq!(out, [5, -5, 0, 0]);
    }

    #[test]
    fn wide_rounding_shift_agrees_below_32_and_is_exact_above() {
        for x in [0, 1, -1, 12345, -12345, i32::MAX, i32::MIN] {
            for e in 0..=31 {
                assert_eq!(round_divide_by_pot_wide(x, e), rounding_divide_by_pot(x, e), "{x} {e}");
            }
            assert_eq!(round_divide_by_pot_wide(x, 40), 0);
        }
        assert_eq!(round_divide_by_pot_wide(i32::MIN, 32), -1);
    }

    #[test]
    fn errors() {
        let a = ActivationRange::INT8;
        assert!(DivParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(1.0, 0), a, &[2, 3], &[2], Rounding::Double).is_err());
        assert!(DivParams::prepare_s8(q(100.0, 0), q(1e-4, 0), q(1e-4, 0), a, &[2], &[2], Rounding::Double).is_err());
        assert_eq!(
            DivParams::prepare_s8(q(0.0, 0), q(0.5, 0), q(1.0, 0), a, &[2], &[2], Rounding::Double),
            Err(Error::InvalidScale)
        );
        let p = DivParams::prepare_s8(q(0.5, 0), q(0.5, 0), q(1.0, 0), a, &[2], &[2], Rounding::Double).unwrap();
        assert!(div_s8(&p, &[1, 2], &[1], &mut [0; 2]).is_err());
    }
}

//! Hard-swish of an int8 tensor (TFLite `HARD_SWISH`: `x · relu6(x + 3) / 6`), through a
//! 256-entry table built at prepare time with TFLite's 16-bit fixed-point method; the kernel is
//! a table lookup.
//!
//! Per input (TFLite `reference_ops::HardSwish`): `x − zp` is shifted left 7 bits; one 16-bit
//! multiplier brings it to the output scale, a second one maps [−3, 3] onto the "relu-ish"
//! factor in [0, 1] (saturating, with TFLite's careful left shift); their product (truncating
//! doubling high multiply) is shifted right and offset by the output zero point.
//!
//! | [`Rounding`] | matches |
//! |---|---|
//! | `Double` | TFLite Micro |
//! | `Single` | the TFLite interpreter's reference kernel: the same code and the same `f32` Prepare |
//!
//! Both oracles compute the same table.
#![forbid(unsafe_code)]

use super::Rounding;
use super::fixedpoint::{rounding_divide_by_pot_i16, sdhm_i16, srdhm_i16};
use super::lut::{LutS8, lut_lookup_s8};
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{clamp_i32, quantize_multiplier};

/// TFLite's `HardSwishParams`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HardSwishQuant {
    input_zero_point: i16,
    output_zero_point: i16,
    reluish_multiplier_fixedpoint_int16: i16,
    reluish_multiplier_exponent: i32,
    output_multiplier_fixedpoint_int16: i16,
    output_multiplier_exponent: i32,
}

/// TFLite's `DownScaleInt32ToInt16Multiplier`: a Q31 multiplier rounded to Q15.
fn downscale_multiplier_to_i16(m: i32) -> i16 {
    const ROUNDING_OFFSET: i32 = 1 << 15;
    if m >= i32::MAX - ROUNDING_OFFSET {
        return i16::MAX;
    }
    ((m + ROUNDING_OFFSET) >> 16) as i16
}

/// TFLite's `SaturatingLeftShift(int16_t, amount)`.
fn saturating_left_shift_i16(value: i16, amount: i32) -> i16 {
    let amount = if amount < 0 {
        0
    } else if amount > 40 {
        40
    } else {
        amount as u32
    };
    let r = (value as i64) << amount;
    (if r > i16::MAX as i64 {
        i16::MAX as i64
    } else if r < i16::MIN as i64 {
        i16::MIN as i64
    } else {
        r
    }) as i16
}

impl HardSwishQuant {
    /// TFLite's Prepare (the same in TFLite Micro and the interpreter): multipliers from `f32`
    /// quotients, quantized then reduced to Q15.
    fn new(input: PerTensorQuant, output: PerTensorQuant) -> Result<Self, Error> {
        const K: &str = "hard_swish_s8";
        input.check(-128, 127)?;
        output.check(-128, 127)?;
        let hires_input_scale = (1.0f32 / 128.0f32) * input.scale;
        let reluish_scale = 3.0f32 / 32768.0f32;
        let out_m = quantize_multiplier((hires_input_scale / output.scale) as f64);
        if out_m.shift > 0 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "input scale above 64 × output scale" });
        }
        let relu_m = quantize_multiplier((hires_input_scale / reluish_scale) as f64);
        if !(-31..=31).contains(&relu_m.shift) || out_m.shift < -31 {
            return Err(Error::BadKernelArgument { kernel: K, reason: "scales out of range" });
        }
        Ok(Self {
            input_zero_point: input.zero_point as i16,
            output_zero_point: output.zero_point as i16,
            reluish_multiplier_fixedpoint_int16: downscale_multiplier_to_i16(relu_m.multiplier),
            reluish_multiplier_exponent: relu_m.shift,
            output_multiplier_fixedpoint_int16: downscale_multiplier_to_i16(out_m.multiplier),
            output_multiplier_exponent: out_m.shift,
        })
    }

    /// TFLite's per-element computation.
    fn eval(&self, x: i8) -> i8 {
        let input_value = (x as i16).wrapping_sub(self.input_zero_point);
        let input_value_on_hires_input_scale = input_value.wrapping_mul(1 << 7);
        let input_value_on_preshift_output_scale =
            srdhm_i16(input_value_on_hires_input_scale, self.output_multiplier_fixedpoint_int16);
        let mut reluish_value = input_value_on_hires_input_scale;
        if self.reluish_multiplier_exponent > 0 {
            reluish_value = saturating_left_shift_i16(reluish_value, self.reluish_multiplier_exponent - 1);
        }
        reluish_value = srdhm_i16(reluish_value, self.reluish_multiplier_fixedpoint_int16);
        if self.reluish_multiplier_exponent > 0 {
            reluish_value = saturating_left_shift_i16(reluish_value, 1);
        }
        if self.reluish_multiplier_exponent < 0 {
            reluish_value = rounding_divide_by_pot_i16(reluish_value, -self.reluish_multiplier_exponent);
        }
        // [-1, 1] -> [0, 1] in Q0.15 (computed in int, stored in int16).
        reluish_value = ((reluish_value as i32 + (1 << 15)) >> 1) as i16;
        let preshift_output_value = sdhm_i16(reluish_value, input_value_on_preshift_output_scale);
        let mut output_value = rounding_divide_by_pot_i16(preshift_output_value, -self.output_multiplier_exponent);
        output_value = (output_value as i32 + self.output_zero_point as i32) as i16;
        clamp_i32(output_value as i32, -128, 127) as i8
    }
}

/// Prepared [`hard_swish_s8`]: the 256-entry table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HardSwishParams {
    /// Output for each input, indexed by the input as `u8`.
    pub lut: LutS8,
    /// The rounding mode the table was built for (both compute the same).
    pub rounding: Rounding,
}

impl HardSwishParams {
    /// Builds the table for an int8 hard-swish.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] if the input scale exceeds 64 × the output scale (TFLite
    /// requires an output multiplier exponent ≤ 0) or scales are out of range;
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad parameters.
    pub fn prepare_s8(input: PerTensorQuant, output: PerTensorQuant, rounding: Rounding) -> Result<Self, Error> {
        let q = HardSwishQuant::new(input, output)?;
        let mut lut = [0i8; 256];
        for (i, e) in lut.iter_mut().enumerate() {
            *e = q.eval(i as u8 as i8);
        }
        Ok(Self { lut, rounding })
    }
}

/// int8 hard-swish, bit-exact with TFLite Micro and the TFLite interpreter. Any shape: `input`
/// and `output` have the same length.
///
/// Scratch: none (the 256-byte table lives in the parameters).
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn hard_swish_s8(params: &HardSwishParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    check_same_len("hard_swish_s8", "output length != input length", output.len(), input.len())?;
    // Dispatch point: an optimized table lookup (kernels/arch/) slots in here.
    lut_lookup_s8(&params.lut, input, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_hard_swish() {
        for (si, zi, so, zo) in
            [(0.05f32, 0, 0.03f32, -20), (0.1, -128, 0.1, -128), (0.02, 10, 0.01, 5), (0.5, 0, 0.2, -100)]
        {
            let p =
                HardSwishParams::prepare_s8(PerTensorQuant::new(si, zi), PerTensorQuant::new(so, zo), Rounding::Double)
                    .unwrap();
            for x in -128i32..=127 {
                let v = si as f64 * (x - zi) as f64;
                let hs = v * (v + 3.0).clamp(0.0, 6.0) / 6.0;
                let want = (hs / so as f64 + zo as f64).clamp(-128.0, 127.0);
                let got = p.lut[x as i8 as u8 as usize] as f64;
                assert!((got - want).abs() <= 1.5, "{si} {zi} {so} {zo} x {x}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn prepare_helpers() {
        assert_eq!(downscale_multiplier_to_i16(1 << 30), 1 << 14);
        assert_eq!(downscale_multiplier_to_i16(i32::MAX), i16::MAX);
        assert_eq!(saturating_left_shift_i16(1000, 6), 32767);
        assert_eq!(saturating_left_shift_i16(-1000, 6), -32768);
        assert_eq!(saturating_left_shift_i16(3, 2), 12);
        // Input scale 128 × the output scale: output multiplier exponent 2 > 0 is rejected.
        assert!(
            HardSwishParams::prepare_s8(PerTensorQuant::new(1.28, 0), PerTensorQuant::new(0.01, 0), Rounding::Double)
                .is_err()
        );
        let p = HardSwishParams::prepare_s8(PerTensorQuant::new(0.1, 0), PerTensorQuant::new(0.1, 0), Rounding::Double)
            .unwrap();
        assert!(hard_swish_s8(&p, &[0; 2], &mut [0; 3]).is_err());
    }
}

//! QUANTIZE between integer types: int8 ↔ int16 (and int8 → int8, int16 → int16) with new
//! parameters, as TFLite Micro's quantize kernel does it (`reference_ops::Requantize`):
//!
//! `y = clamp(zp_out + MultiplyByQuantizedMultiplier(x − zp_in, m), type range)`,
//! `m = (f64) s_in / (f64) s_out` (`QuantizeMultiplier`).
//!
//! This is what a model with some layers in 16x8 uses between its int8 and int16 layers. TFLite
//! Micro and the TFLite interpreter both round twice here (gemmlowp's `MultiplyByQuantized
//! Multiplier`), whatever the rounding of the model's other kernels: so does this kernel.
#![forbid(unsafe_code)]

use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{QuantizedMultiplier, clamp_i32, quantize_multiplier};

const KERNEL: &str = "requantize";

/// Prepared parameters of a requantization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequantizeParams {
    /// Input zero point.
    pub input_zero_point: i32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// `s_in / s_out`.
    pub multiplier: QuantizedMultiplier,
    /// Input type.
    pub input_type: IntType,
    /// Output type.
    pub output_type: IntType,
}

/// An integer type a requantization reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IntType {
    /// int8.
    I8,
    /// int16.
    I16,
}

impl IntType {
    fn range(self) -> (i32, i32) {
        match self {
            IntType::I8 => (i8::MIN as i32, i8::MAX as i32),
            IntType::I16 => (i16::MIN as i32, i16::MAX as i32),
        }
    }
    /// The largest left shift `x − zp_in` of this type survives in an i32.
    fn max_left_shift(self) -> i32 {
        match self {
            IntType::I8 => 23,
            IntType::I16 => 15,
        }
    }
}

impl RequantizeParams {
    /// TFLite's quantize Prepare for an integer input.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad parameters;
    /// [`Error::BadKernelArgument`] if `s_in / s_out` is so large that the shifted input would
    /// overflow 32 bits (TFLite's contract).
    pub fn prepare(
        input: PerTensorQuant,
        input_type: IntType,
        output: PerTensorQuant,
        output_type: IntType,
    ) -> Result<Self, Error> {
        let (imin, imax) = input_type.range();
        let (omin, omax) = output_type.range();
        input.check(imin, imax)?;
        output.check(omin, omax)?;
        let real = f64::from(input.scale) / f64::from(output.scale);
        let multiplier = quantize_multiplier(real);
        if multiplier.shift > input_type.max_left_shift() || multiplier.shift < -31 {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "input scale / output scale out of range" });
        }
        Ok(Self {
            input_zero_point: input.zero_point,
            output_zero_point: output.zero_point,
            multiplier,
            input_type,
            output_type,
        })
    }

    fn check(&self, input: IntType, output: IntType) -> Result<(), Error> {
        if self.input_type != input || self.output_type != output {
            return Err(Error::BadKernelArgument { kernel: KERNEL, reason: "the parameters are for other types" });
        }
        Ok(())
    }

    #[inline(always)]
    fn apply(&self, x: i32) -> i32 {
        let (lo, hi) = self.output_type.range();
        let v = self
            .multiplier
            .apply(x - self.input_zero_point, crate::requant::Rounding::Double)
            .saturating_add(self.output_zero_point);
        clamp_i32(v, lo, hi)
    }
}

/// int8 → int16.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or the parameters are for other types.
pub fn requantize_s8_s16(p: &RequantizeParams, input: &[i8], output: &mut [i16]) -> Result<(), Error> {
    check_same_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
    p.check(IntType::I8, IntType::I16)?;
    for (y, &x) in output.iter_mut().zip(input) {
        *y = p.apply(i32::from(x)) as i16;
    }
    Ok(())
}

/// int16 → int8.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or the parameters are for other types.
pub fn requantize_s16_s8(p: &RequantizeParams, input: &[i16], output: &mut [i8]) -> Result<(), Error> {
    check_same_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
    p.check(IntType::I16, IntType::I8)?;
    for (y, &x) in output.iter_mut().zip(input) {
        *y = p.apply(i32::from(x)) as i8;
    }
    Ok(())
}

/// int8 → int8 (new scale or zero point).
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or the parameters are for other types.
pub fn requantize_s8_s8(p: &RequantizeParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    check_same_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
    p.check(IntType::I8, IntType::I8)?;
    for (y, &x) in output.iter_mut().zip(input) {
        *y = p.apply(i32::from(x)) as i8;
    }
    Ok(())
}

/// int16 → int16 (new scale or zero point).
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ or the parameters are for other types.
pub fn requantize_s16_s16(p: &RequantizeParams, input: &[i16], output: &mut [i16]) -> Result<(), Error> {
    check_same_len(KERNEL, "input and output lengths differ", input.len(), output.len())?;
    p.check(IntType::I16, IntType::I16)?;
    for (y, &x) in output.iter_mut().zip(input) {
        *y = p.apply(i32::from(x)) as i16;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int8_to_int16_and_back() {
        // s_in = 0.02, zp -10; s_out = 0.02 / 256, zp 0: x - zp times 256 exactly.
        let p = RequantizeParams::prepare(
            PerTensorQuant::new(0.02, -10),
            IntType::I8,
            PerTensorQuant::new(0.02 / 256.0, 0),
            IntType::I16,
        )
        .unwrap();
        let mut y = [0i16; 3];
        requantize_s8_s16(&p, &[-128, -10, 127], &mut y).unwrap();
        assert_eq!(y, [-118 * 256, 0, i16::MAX]); // 137 * 256 saturates
        let back = RequantizeParams::prepare(
            PerTensorQuant::new(0.02 / 256.0, 0),
            IntType::I16,
            PerTensorQuant::new(0.02, -10),
            IntType::I8,
        )
        .unwrap();
        let mut z = [0i8; 3];
        requantize_s16_s8(&back, &y, &mut z).unwrap();
        assert_eq!(z, [-128, -10, 118]);
        // Saturation, and length / type checks.
        requantize_s16_s8(&back, &[i16::MAX, i16::MIN, 128], &mut z).unwrap();
        assert_eq!(z, [118, -128, -9]); // 32767/256 = 127.99 -> 128 - 10; 128/256 = 0.5 rounds away
        assert!(requantize_s16_s8(&back, &[0], &mut z).is_err());
        assert!(requantize_s8_s16(&back, &[0, 0, 0], &mut y).is_err());
    }

    #[test]
    fn rejects_overflowing_ratios() {
        let r = RequantizeParams::prepare(
            PerTensorQuant::new(1.0, 0),
            IntType::I16,
            PerTensorQuant::new(1.0 / 65536.0, 0),
            IntType::I16,
        );
        assert!(r.is_err());
    }
}

//! Elementwise minimum / maximum of two quantized tensors with broadcasting (TFLite `MINIMUM`,
//! `MAXIMUM`): int8 and int16.
//!
//! TFLite compares the stored integers, with no rescaling (`maximum_minimum.cc`), which is the
//! real-valued minimum / maximum only when both inputs and the output share one scale and zero
//! point: [`MinMaxParams::prepare`] requires that (the converter gives them shared parameters).
//! Bit-exact with TFLite Micro and the TFLite interpreter, in both [`Rounding`](super::Rounding)
//! modes (there is nothing to round).
#![forbid(unsafe_code)]

use super::tensor::{Broadcast, PerTensorQuant, check_same_len};
use crate::Error;

/// Which of the two ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MinMaxOp {
    /// `min(x1, x2)` (TFLite `MINIMUM`).
    Minimum,
    /// `max(x1, x2)` (TFLite `MAXIMUM`).
    Maximum,
}

/// Prepared parameters of [`min_max_s8`] / [`min_max_s16`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MinMaxParams {
    /// Which op.
    pub op: MinMaxOp,
    /// The broadcast of the two input shapes.
    pub broadcast: Broadcast,
}

impl MinMaxParams {
    /// Prepares a MINIMUM or MAXIMUM of inputs of `shape1` and `shape2`. The three tensors must
    /// share one quantization (`input1 == input2 == output`).
    ///
    /// # Errors
    /// [`Error::InvalidScale`] for a scale that is not finite and positive,
    /// [`Error::BadKernelArgument`] if the quantizations differ or the shapes do not broadcast.
    pub fn prepare(
        op: MinMaxOp,
        input1: PerTensorQuant,
        input2: PerTensorQuant,
        output: PerTensorQuant,
        shape1: &[usize],
        shape2: &[usize],
    ) -> Result<Self, Error> {
        if !(output.scale.is_finite() && output.scale > 0.0) {
            return Err(Error::InvalidScale);
        }
        if input1 != output || input2 != output {
            return Err(Error::BadKernelArgument {
                kernel: "min_max",
                reason: "inputs and output must share one scale and zero point",
            });
        }
        Ok(Self { op, broadcast: Broadcast::new(shape1, shape2)? })
    }

    fn check(&self, kernel: &'static str, len1: usize, len2: usize, out: usize) -> Result<(), Error> {
        check_same_len(kernel, "input1 length != its shape", len1, self.broadcast.input1_len())?;
        check_same_len(kernel, "input2 length != its shape", len2, self.broadcast.input2_len())?;
        check_same_len(kernel, "output length != broadcast shape", out, self.broadcast.output_len())
    }
}

/// int8 elementwise minimum / maximum with broadcasting. Shapes as given to
/// [`MinMaxParams::prepare`]; `output` has the broadcast shape. Scratch: none.
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn min_max_s8(params: &MinMaxParams, input1: &[i8], input2: &[i8], output: &mut [i8]) -> Result<(), Error> {
    params.check("min_max_s8", input1.len(), input2.len(), output.len())?;
    match params.op {
        MinMaxOp::Minimum => params.broadcast.for_each(input1, input2, output, |a: i8, b: i8| a.min(b)),
        MinMaxOp::Maximum => params.broadcast.for_each(input1, input2, output, |a: i8, b: i8| a.max(b)),
    }
    Ok(())
}

/// int16 elementwise minimum / maximum, as [`min_max_s8`].
///
/// # Errors
/// [`Error::BadKernelArgument`] if a slice length does not match the prepared shapes.
pub fn min_max_s16(params: &MinMaxParams, input1: &[i16], input2: &[i16], output: &mut [i16]) -> Result<(), Error> {
    params.check("min_max_s16", input1.len(), input2.len(), output.len())?;
    match params.op {
        MinMaxOp::Minimum => params.broadcast.for_each(input1, input2, output, |a: i16, b: i16| a.min(b)),
        MinMaxOp::Maximum => params.broadcast.for_each(input1, input2, output, |a: i16, b: i16| a.max(b)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_min_and_max() {
        let q = PerTensorQuant::new(0.1, 3);
        let p = MinMaxParams::prepare(MinMaxOp::Minimum, q, q, q, &[2, 2], &[2]).unwrap();
        let mut out = [0i8; 4];
        min_max_s8(&p, &[1, 5, -128, 127], &[3, 4], &mut out).unwrap();
        assert_eq!(out, [1, 4, -128, 4]);
        let p = MinMaxParams::prepare(MinMaxOp::Maximum, q, q, q, &[2, 2], &[2]).unwrap();
        let mut out16 = [0i16; 4];
        min_max_s16(&p, &[1, 5, -32768, 32767], &[3, 4], &mut out16).unwrap();
        assert_eq!(out16, [3, 5, 3, 32767]);
    }

    #[test]
    fn errors() {
        let (a, b) = (PerTensorQuant::new(0.1, 3), PerTensorQuant::new(0.1, 4));
        assert!(MinMaxParams::prepare(MinMaxOp::Maximum, a, b, a, &[2], &[2]).is_err());
        assert!(MinMaxParams::prepare(MinMaxOp::Maximum, a, a, b, &[2], &[2]).is_err());
        assert!(MinMaxParams::prepare(MinMaxOp::Maximum, a, a, a, &[2], &[3]).is_err());
        let z = PerTensorQuant::new(0.0, 0);
        assert_eq!(MinMaxParams::prepare(MinMaxOp::Maximum, z, z, z, &[2], &[2]), Err(Error::InvalidScale));
        let p = MinMaxParams::prepare(MinMaxOp::Maximum, a, a, a, &[2], &[2]).unwrap();
        assert!(min_max_s8(&p, &[1, 2], &[1], &mut [0; 2]).is_err());
        assert!(min_max_s8(&p, &[1, 2], &[1, 2], &mut [0; 3]).is_err());
    }
}

//! ELU, int8, as TFLite Micro (`elu.cc`): a 256-entry table built at prepare time from the float
//! function `x < 0 ? expf(x) − 1 : x` (TFLite's `PopulateLookupTable`, all in `f32`; see
//! [`super::lut::lut_populate_s8`] and [`super::lut::expf`]), then a lookup per element. The
//! interpreter builds the same table; the golden file has TFLite Micro's outputs (the
//! interpreter's reference resolver has no ELU). Both rounding modes build the same table.
//!
//! ```
//! use microquant::kernels::elu::{EluParams, elu_s8};
//! use microquant::kernels::tensor::PerTensorQuant;
//!
//! let q = PerTensorQuant::new(0.05, 0);
//! let p = EluParams::prepare_s8(q, q).unwrap();
//! let mut y = [0i8; 3];
//! elu_s8(&p, &[-128, 0, 50], &mut y).unwrap(); // elu(-6.4) = -0.998
//! assert_eq!(y, [-20, 0, 50]);
//! ```
#![forbid(unsafe_code)]

use super::lut::{LutS8, expf, lut_lookup_s8, lut_populate_s8};
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;

/// Prepared parameters of an int8 ELU: the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EluParams {
    /// `lut[x as u8]` is the output for input `x`.
    pub lut: LutS8,
}

/// ELU of one float value, in `f32` as TFLite (`std::exp(float) − 1.0f`).
pub fn elu_f32(v: f32) -> f32 {
    if v < 0.0 { expf(v) - 1.0 } else { v }
}

impl EluParams {
    /// TFLite Micro's Prepare of an int8 ELU.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization.
    pub fn prepare_s8(input: PerTensorQuant, output: PerTensorQuant) -> Result<Self, Error> {
        input.check(-128, 127)?;
        output.check(-128, 127)?;
        Ok(Self { lut: lut_populate_s8(input, output, elu_f32) })
    }

    /// As [`Self::prepare_s8`] with the negative part scaled by `alpha` (ONNX `Elu`; TFLite's is
    /// alpha 1, for which this is [`Self::prepare_s8`]).
    ///
    /// # Errors
    /// As [`Self::prepare_s8`].
    pub fn prepare_s8_alpha(input: PerTensorQuant, output: PerTensorQuant, alpha: f32) -> Result<Self, Error> {
        if alpha == 1.0 {
            return Self::prepare_s8(input, output);
        }
        input.check(-128, 127)?;
        output.check(-128, 127)?;
        Ok(Self { lut: lut_populate_s8(input, output, |v| if v < 0.0 { alpha * elu_f32(v) } else { v }) })
    }
}

/// int8 ELU.
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn elu_s8(params: &EluParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    check_same_len("elu_s8", "output length != input length", output.len(), input.len())?;
    lut_lookup_s8(&params.lut, input, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_are_errors() {
        let q = PerTensorQuant::new(0.1, 0);
        assert!(EluParams::prepare_s8(PerTensorQuant::new(0.0, 0), q).is_err());
        assert!(EluParams::prepare_s8(q, PerTensorQuant::new(0.1, 200)).is_err());
        let p = EluParams::prepare_s8(q, q).unwrap();
        assert!(elu_s8(&p, &[0; 3], &mut [0; 2]).is_err());
    }
}

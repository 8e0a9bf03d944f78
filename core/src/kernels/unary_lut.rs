//! Tables for the elementwise functions TFLite Micro has no int8 kernel for (`.mq` kind `LUT`,
//! [`crate::graph::UnaryFn`]): what ONNX Runtime computes for the function between a
//! `DequantizeLinear` and a `QuantizeLinear` in a QDQ model, one entry per int8 input:
//!
//! `table[q] = clamp(round_half_even(f((q − zp_in) · s_in) / s_out) + zp_out, −128, 127)`,
//!
//! all in `f32` (ONNX Runtime's `DequantizeLinear` multiplies `float(q − zp)` by the scale; its
//! `QuantizeLinear` divides by the scale and rounds with `nearbyintf`, ties to even). An input
//! whose function value is NaN (√ of a negative number, say) maps to the output zero point (the
//! real value 0). The function itself is evaluated with microquant's `f32` math (`libm`), which
//! can differ from ONNX Runtime's own `expf`, `erff`, ... in the last bits: where the scaled value
//! lies within that of a rounding midpoint the table can differ from ONNX Runtime's by one step.
//!
//! The kernel is [`crate::kernels::lut::lut_lookup_s8`].
#![forbid(unsafe_code)]

use super::lut::{LUT_S8_LEN, LutS8};
use super::tensor::PerTensorQuant;
use crate::Error;

/// The 256-entry int8 table of `f` for the given input and output quantization, as ONNX
/// Runtime's QDQ computes it (see the module documentation), indexed by the input as `u8`.
///
/// # Errors
/// [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad quantization parameters.
///
/// ```
/// use microquant::kernels::tensor::PerTensorQuant;
/// use microquant::kernels::unary_lut::table_s8;
///
/// // exp(x): input scale 0.05, output scale 0.1, zero point -128.
/// let t = table_s8(PerTensorQuant::new(0.05, 0), PerTensorQuant::new(0.1, -128), |x| x.exp()).unwrap();
/// assert_eq!(t[0], -118); // exp(0) = 1 = 10 steps above the zero point
/// assert_eq!(t[20], -101); // exp(1) = 2.718... ≈ 27 steps
/// ```
pub fn table_s8(input: PerTensorQuant, output: PerTensorQuant, f: impl Fn(f32) -> f32) -> Result<LutS8, Error> {
    input.check(-128, 127)?;
    output.check(-128, 127)?;
    let mut lut = [0i8; LUT_S8_LEN];
    for q in -128i32..=127 {
        let x = (q - input.zero_point) as f32 * input.scale;
        let y = f(x);
        let v = if y.is_nan() {
            output.zero_point
        } else {
            let r = libm::rintf(y / output.scale) + output.zero_point as f32;
            r.clamp(-128.0, 127.0) as i32
        };
        if let Some(e) = lut.get_mut(q as i8 as u8 as usize) {
            *e = v as i8;
        }
    }
    Ok(lut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_round_to_even_and_saturate() {
        // Identity with output scale 2 × input scale: q / 2 rounds half to even.
        let t = table_s8(PerTensorQuant::new(0.5, 0), PerTensorQuant::new(1.0, 0), |x| x).unwrap();
        assert_eq!([t[1], t[3], t[5]], [0, 2, 2]);
        assert_eq!(t[(-3i8) as u8 as usize], -2);
        let t = table_s8(PerTensorQuant::new(1.0, 0), PerTensorQuant::new(0.01, 0), |x| x).unwrap();
        assert_eq!((t[100], t[(-100i8) as u8 as usize]), (127, -128));
        let t = table_s8(PerTensorQuant::new(1.0, 0), PerTensorQuant::new(0.1, 5), libm::sqrtf).unwrap();
        assert_eq!(t[(-4i8) as u8 as usize], 5);
        assert!(table_s8(PerTensorQuant::new(0.0, 0), PerTensorQuant::new(1.0, 0), |x| x).is_err());
    }
}

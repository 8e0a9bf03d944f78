//! Hyperbolic tangent of an int8 tensor (TFLite `TANH`), through a 256-entry table built at
//! prepare time; the kernel is a table lookup.
//!
//! | [`Rounding`] | matches | table entry for input `x` |
//! |---|---|---|
//! | `Double` | TFLite Micro (`reference_integer_ops::Tanh`) | gemmlowp fixed point: `x − zp` in Q4.27 (frexp-derived multiplier), saturating beyond the radius, `tanh` in Q0.31 rounded to Q0.7; the output is taken to be `(1/128, 0)` |
//! | `Single` | the TFLite interpreter's reference kernel (`LUTPopulate<int8_t>`) | `f32`: `round(tanhf(s_in · (x − zp)) / s_out) + zp_out`, clamped, with glibc's `tanhf` |
//!
//! The TFLite spec quantizes the output `(1/128, 0)`; TFLite Micro does not check it and always
//! produces that quantization, so `Double` requires it.
#![forbid(unsafe_code)]

use super::Rounding;
use super::fixedpoint;
use super::logistic::Q4InputScaling;
use super::lut::{LutS8, lut_lookup_s8, lut_populate_s8, tanhf};
use super::tensor::{PerTensorQuant, check_same_len};
use crate::Error;
use crate::requant::{clamp_i32, rounding_divide_by_pot};

/// TFLite Micro's int8 tanh of one value.
fn tanh_fixed_point(p: &Q4InputScaling, x: i8) -> i8 {
    match p.scale(x) {
        Err(sat) => sat,
        Ok(q4) => {
            let q0 = fixedpoint::tanh(q4, 4);
            let q24 = rounding_divide_by_pot(q0, 31 - 7);
            clamp_i32(q24, -128, 127) as i8
        }
    }
}

/// Prepared [`tanh_s8`]: the 256-entry table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TanhParams {
    /// Output for each input, indexed by the input as `u8`.
    pub lut: LutS8,
    /// The rounding mode (oracle) the table was built for.
    pub rounding: Rounding,
}

impl TanhParams {
    /// Builds the table for an int8 tanh. With `Rounding::Double` the output must be quantized
    /// `(1/128, 0)`; with `Single` any output quantization works, as in the interpreter.
    ///
    /// # Errors
    /// [`Error::BadKernelArgument`] for other output parameters (`Double`) or an input scale out
    /// of range; [`Error::InvalidScale`] / [`Error::ZeroPointOutOfRange`] for bad parameters.
    pub fn prepare_s8(input: PerTensorQuant, output: PerTensorQuant, rounding: Rounding) -> Result<Self, Error> {
        const K: &str = "tanh_s8";
        output.check(-128, 127)?;
        let lut = match rounding {
            Rounding::Double => {
                if output.zero_point != 0 || output.scale != 1.0 / 128.0 {
                    return Err(Error::BadKernelArgument { kernel: K, reason: "output must be quantized (1/128, 0)" });
                }
                let p = Q4InputScaling::new(K, input)?;
                let mut lut = [0i8; 256];
                for (i, e) in lut.iter_mut().enumerate() {
                    *e = tanh_fixed_point(&p, i as u8 as i8);
                }
                lut
            }
            Rounding::Single => {
                input.check(-128, 127)?;
                lut_populate_s8(input, output, tanhf)
            }
        };
        Ok(Self { lut, rounding })
    }
}

/// int8 tanh, bit-exact with TFLite Micro (`Double`) or the TFLite interpreter (`Single`), as
/// prepared. Any shape: `input` and `output` have the same length.
///
/// Scratch: none (the 256-byte table lives in the parameters).
///
/// # Errors
/// [`Error::BadKernelArgument`] if the lengths differ.
pub fn tanh_s8(params: &TanhParams, input: &[i8], output: &mut [i8]) -> Result<(), Error> {
    check_same_len("tanh_s8", "output length != input length", output.len(), input.len())?;
    // Dispatch point: an optimized table lookup (kernels/arch/) slots in here.
    lut_lookup_s8(&params.lut, input, output);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: PerTensorQuant = PerTensorQuant::new(1.0 / 128.0, 0);

    #[test]
    fn both_tables_follow_tanh() {
        for rounding in [Rounding::Double, Rounding::Single] {
            for (s, zp) in [(0.1f32, 0), (0.02, -128), (0.5, 127), (0.0625, 3)] {
                let p = TanhParams::prepare_s8(PerTensorQuant::new(s, zp), OUT, rounding).unwrap();
                for x in -128i32..=127 {
                    let want = libm::tanh(s as f64 * (x - zp) as f64) * 128.0;
                    let got = p.lut[x as i8 as u8 as usize] as f64;
                    assert!((got - want.min(127.0)).abs() <= 1.0, "{rounding:?} s {s} zp {zp} x {x}: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn errors() {
        let i = PerTensorQuant::new(0.1, 0);
        assert!(TanhParams::prepare_s8(i, PerTensorQuant::new(1.0 / 128.0, 5), Rounding::Double).is_err());
        assert!(TanhParams::prepare_s8(i, PerTensorQuant::new(1.0 / 128.0, 5), Rounding::Single).is_ok());
        let p = TanhParams::prepare_s8(i, OUT, Rounding::Double).unwrap();
        assert!(tanh_s8(&p, &[0; 1], &mut [0; 2]).is_err());
    }
}

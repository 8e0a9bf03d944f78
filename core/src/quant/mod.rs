//! Quantization parameters and float <-> integer conversion.
//!
//! Rounding is half to even, as ONNX `QuantizeLinear` specifies
//! (`y = saturate(round_half_even(x / scale) + zero_point)`), computed in `f32` like the
//! ONNX reference implementation.

use crate::Error;

/// An integer data type that float values are quantized to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum QuantDType {
    /// Signed 8-bit, range [-128, 127].
    Int8,
    /// Unsigned 8-bit, range [0, 255].
    UInt8,
}

impl QuantDType {
    /// The smallest representable value.
    pub const fn min(self) -> i32 {
        match self {
            QuantDType::Int8 => i8::MIN as i32,
            QuantDType::UInt8 => 0,
        }
    }
    /// The largest representable value.
    pub const fn max(self) -> i32 {
        match self {
            QuantDType::Int8 => i8::MAX as i32,
            QuantDType::UInt8 => u8::MAX as i32,
        }
    }
}

/// Per-tensor affine quantization: `real = scale * (q - zero_point)`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AffineQuant {
    scale: f32,
    zero_point: i32,
    dtype: QuantDType,
}

impl AffineQuant {
    /// Checks and builds the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] if `scale` is not finite and positive;
    /// [`Error::ZeroPointOutOfRange`] if `zero_point` does not fit `dtype`.
    pub fn new(scale: f32, zero_point: i32, dtype: QuantDType) -> Result<Self, Error> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::InvalidScale);
        }
        if zero_point < dtype.min() || zero_point > dtype.max() {
            return Err(Error::ZeroPointOutOfRange { zero_point, min: dtype.min(), max: dtype.max() });
        }
        Ok(Self { scale, zero_point, dtype })
    }

    /// The scale (real value of one integer step).
    pub fn scale(&self) -> f32 {
        self.scale
    }
    /// The integer that represents real 0.0.
    pub fn zero_point(&self) -> i32 {
        self.zero_point
    }
    /// The quantized data type.
    pub fn dtype(&self) -> QuantDType {
        self.dtype
    }

    /// Quantizes one value: `clamp(round_half_even(x / scale) + zero_point, min, max)`.
    /// NaN maps to `zero_point` (as `np.rint` then a saturating cast would give no defined
    /// value; callers who must reject NaN use the slice functions, which do).
    pub fn quantize_one(&self, x: f32) -> i32 {
        let r = libm::rintf(x / self.scale);
        let (lo, hi) = (self.dtype.min(), self.dtype.max());
        if r.is_nan() {
            return self.zero_point;
        }
        // Clamp in float first: `r` may be far outside i32. (`max`/`min`, not `clamp`, which
        // asserts its bounds and would leave a panic path on the device.)
        let v = r.max((lo - self.zero_point) as f32).min((hi - self.zero_point) as f32);
        (v as i32 + self.zero_point).max(lo).min(hi)
    }

    /// Dequantizes one value: `(q - zero_point) * scale`.
    pub fn dequantize_one(&self, q: i32) -> f32 {
        (q - self.zero_point) as f32 * self.scale
    }

    fn check_dtype(&self, expected: QuantDType) -> Result<(), Error> {
        if self.dtype == expected { Ok(()) } else { Err(Error::DTypeMismatch { expected, actual: self.dtype }) }
    }

    /// Quantizes `input` into `out` (`dtype` must be [`QuantDType::Int8`]).
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] for other data types; [`Error::LengthMismatch`] if the lengths
    /// differ; [`Error::NonFinite`] on NaN or ±Inf.
    pub fn quantize_i8(&self, input: &[f32], out: &mut [i8]) -> Result<(), Error> {
        self.check_dtype(QuantDType::Int8)?;
        check_len(input.len(), out.len())?;
        for (i, (&x, o)) in input.iter().zip(out.iter_mut()).enumerate() {
            if !x.is_finite() {
                return Err(Error::NonFinite { index: i });
            }
            *o = self.quantize_one(x) as i8;
        }
        Ok(())
    }

    /// Dequantizes `input` into `out` (`dtype` must be [`QuantDType::Int8`]).
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] for other data types; [`Error::LengthMismatch`] if the lengths differ.
    pub fn dequantize_i8(&self, input: &[i8], out: &mut [f32]) -> Result<(), Error> {
        self.check_dtype(QuantDType::Int8)?;
        check_len(input.len(), out.len())?;
        for (&q, o) in input.iter().zip(out.iter_mut()) {
            *o = self.dequantize_one(q as i32);
        }
        Ok(())
    }
}

fn check_len(expected: usize, actual: usize) -> Result<(), Error> {
    if expected == actual { Ok(()) } else { Err(Error::LengthMismatch { expected, actual }) }
}

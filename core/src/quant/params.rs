//! Quantization parameters: per tensor ([`QParams`]), per channel along any axis and blocked
//! ([`ChannelQParams`]), and the rounding conventions of the tools microquant agrees with.

use super::dtype::QuantDType;
use crate::Error;

/// Whose arithmetic to reproduce when rounding to integers and choosing parameters.
///
/// The tools agree on `real = scale · (q - zero_point)` but not on the last bit. The module
/// docs of [`crate::quant`] have the full table; in short:
///
/// | convention | quantize | [`choose_qparams`](super::choose_qparams_with) |
/// |---|---|---|
/// | `Onnx` (default) | `rint(x / scale) + zp`, ties to even, `f32` | ONNX `DynamicQuantizeLinear`: `f32`, scale 1 when `max == min`, `zp = rint(clamp(qmin - min / scale))` |
/// | `OnnxRuntime` | as `Onnx` | ORT `quant_utils.compute_scale_zp`: scale in `f64` then `f32`, scale 1 below `f32::MIN_POSITIVE`, `zp = round_half_even(qmin - min / scale)` in `f64` |
/// | `PyTorch` | `nearbyint(x · (1 / scale)) + zp`, ties to even, `f32` reciprocal | `torch.ao` observers: `f32`, `scale = max(scale, eps)`, `zp = qmin - round_half_even(min / scale)` |
/// | `TfLite` | `round(x / scale) + zp`, ties away from zero | TFLite converter: `f32` scale after widening ranges narrower than 1e-6, zero point from the minimum in `f64`, `round` half away |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Convention {
    /// ONNX operators (`QuantizeLinear`, `DynamicQuantizeLinear`) as the ONNX reference
    /// evaluator computes them.
    #[default]
    Onnx,
    /// ONNX Runtime's quantization tools (`onnxruntime.quantization`).
    OnnxRuntime,
    /// PyTorch (`torch.ao.quantization` observers, `quantize_per_tensor`, `fake_quantize_*`).
    PyTorch,
    /// TensorFlow Lite (the converter and the `QUANTIZE` kernel).
    TfLite,
}

/// Per-tensor affine quantization: `real = scale · (q - zero_point)`, `q` clamped to
/// `[qmin, qmax]` (the data type's range unless narrowed, e.g. by `reduce_range` or the
/// restricted symmetric range).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QParams {
    scale: f32,
    zero_point: i32,
    dtype: QuantDType,
    qmin: i32,
    qmax: i32,
    convention: Convention,
}

pub(crate) fn check_scale(scale: f32) -> Result<(), Error> {
    if scale.is_finite() && scale > 0.0 { Ok(()) } else { Err(Error::InvalidScale) }
}

pub(crate) fn check_zero_point(zero_point: i32, dtype: QuantDType, qmin: i32, qmax: i32) -> Result<(), Error> {
    if dtype.is_float() {
        if zero_point != 0 {
            return Err(Error::ZeroPointOutOfRange { zero_point, min: 0, max: 0 });
        }
    } else if zero_point < qmin || zero_point > qmax {
        return Err(Error::ZeroPointOutOfRange { zero_point, min: qmin, max: qmax });
    }
    Ok(())
}

fn check_qrange(dtype: QuantDType, qmin: i32, qmax: i32) -> Result<(), Error> {
    if qmin < dtype.min() || qmax > dtype.max() || qmin >= qmax || qmin > 0 || qmax < 0 {
        return Err(Error::InvalidArgument {
            reason: "quantized range must lie in the data type, contain 0 and not be empty",
        });
    }
    Ok(())
}

impl QParams {
    /// Checks and builds per-tensor parameters with the full range of `dtype` and the
    /// [`Convention::Onnx`] rounding.
    ///
    /// # Errors
    /// [`Error::InvalidScale`] if `scale` is not finite and positive;
    /// [`Error::ZeroPointOutOfRange`] if `zero_point` does not fit `dtype` (float types need 0).
    pub fn new(scale: f32, zero_point: i32, dtype: QuantDType) -> Result<Self, Error> {
        check_scale(scale)?;
        check_zero_point(zero_point, dtype, dtype.min(), dtype.max())?;
        Ok(Self { scale, zero_point, dtype, qmin: dtype.min(), qmax: dtype.max(), convention: Convention::Onnx })
    }

    /// The same parameters with quantized values clamped to `[qmin, qmax]` instead of the
    /// data type's range (PyTorch's `quant_min`/`quant_max`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the range is empty, leaves the data type or excludes 0;
    /// [`Error::ZeroPointOutOfRange`] if the zero point falls outside it.
    pub fn with_range(self, qmin: i32, qmax: i32) -> Result<Self, Error> {
        if self.dtype.is_float() {
            return Err(Error::InvalidArgument { reason: "float8/float4 types have no integer range to narrow" });
        }
        check_qrange(self.dtype, qmin, qmax)?;
        check_zero_point(self.zero_point, self.dtype, qmin, qmax)?;
        Ok(Self { qmin, qmax, ..self })
    }

    /// The same parameters with another rounding convention (see [`Convention`]).
    pub fn with_convention(self, convention: Convention) -> Self {
        Self { convention, ..self }
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
    /// The smallest quantized value produced.
    pub fn qmin(&self) -> i32 {
        self.qmin
    }
    /// The largest quantized value produced.
    pub fn qmax(&self) -> i32 {
        self.qmax
    }
    /// The rounding convention.
    pub fn convention(&self) -> Convention {
        self.convention
    }
    /// The smallest and largest real values that quantize without clamping:
    /// `scale · (qmin - zero_point)` and `scale · (qmax - zero_point)` (for float types,
    /// `±scale · max_finite`).
    pub fn real_range(&self) -> (f32, f32) {
        (
            (self.qmin as i64 - self.zero_point as i64) as f32 * self.scale,
            (self.qmax as i64 - self.zero_point as i64) as f32 * self.scale,
        )
    }

    /// Quantizes one finite value to its code (the integer, or the float8/float4 bit pattern),
    /// saturating; see [`crate::quant`] for the formulas. NaN gives the zero point for integer
    /// types (the slice functions reject NaN before calling this).
    #[inline]
    pub fn quantize_one(&self, x: f32) -> i32 {
        super::convert::quantize_value(
            x,
            self.scale,
            self.zero_point,
            self.qmin,
            self.qmax,
            self.dtype,
            self.convention,
        )
        .0
    }

    /// Dequantizes one code: `(q - zero_point) · scale` (for float types: `decode(q) · scale`).
    #[inline]
    pub fn dequantize_one(&self, q: i32) -> f32 {
        super::convert::dequantize_value(q, self.scale, self.zero_point, self.dtype)
    }

    /// Quantizes `input` into `out` (`dtype` must be [`QuantDType::Int8`]).
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] for other data types; [`Error::LengthMismatch`] if the lengths
    /// differ; [`Error::NonFinite`] on NaN or ±Inf.
    pub fn quantize_i8(&self, input: &[f32], out: &mut [i8]) -> Result<(), Error> {
        super::convert::quantize_slice::<i8>(self, input, out)
    }

    /// Dequantizes `input` into `out` (`dtype` must be [`QuantDType::Int8`]).
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] for other data types; [`Error::LengthMismatch`] if the lengths differ.
    pub fn dequantize_i8(&self, input: &[i8], out: &mut [f32]) -> Result<(), Error> {
        super::convert::dequantize_slice::<i8>(self, input, out)
    }
}

/// Per-channel (one scale and zero point per index along `axis`) or blocked (one per
/// `block_size` consecutive indices along `axis`, as ONNX's `block_size` attribute) parameters,
/// borrowed from caller memory.
///
/// Per channel: `scales.len() == shape[axis]`. Blocked: the parameters have the tensor's shape
/// with `shape[axis]` replaced by `ceil(shape[axis] / block_size)`, row-major. `zero_points`
/// is either empty (all zero) or as long as `scales`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelQParams<'a> {
    scales: &'a [f32],
    zero_points: &'a [i32],
    dtype: QuantDType,
    axis: usize,
    block_size: usize,
    qmin: i32,
    qmax: i32,
    convention: Convention,
}

impl<'a> ChannelQParams<'a> {
    /// Per-channel parameters along `axis`, full range of `dtype`, [`Convention::Onnx`].
    ///
    /// # Errors
    /// [`Error::InvalidScale`] for a scale that is not finite and positive;
    /// [`Error::ZeroPointOutOfRange`] for a zero point outside `dtype`;
    /// [`Error::LengthMismatch`] if `zero_points` is neither empty nor as long as `scales`;
    /// [`Error::InvalidArgument`] if `scales` is empty.
    pub fn per_axis(scales: &'a [f32], zero_points: &'a [i32], dtype: QuantDType, axis: usize) -> Result<Self, Error> {
        Self::blocked(scales, zero_points, dtype, axis, 0)
    }

    /// Blocked parameters (ONNX `block_size`); `block_size == 0` means per axis.
    ///
    /// # Errors
    /// As [`ChannelQParams::per_axis`].
    pub fn blocked(
        scales: &'a [f32],
        zero_points: &'a [i32],
        dtype: QuantDType,
        axis: usize,
        block_size: usize,
    ) -> Result<Self, Error> {
        if scales.is_empty() {
            return Err(Error::InvalidArgument { reason: "per-channel parameters need at least one scale" });
        }
        if !zero_points.is_empty() && zero_points.len() != scales.len() {
            return Err(Error::LengthMismatch { expected: scales.len(), actual: zero_points.len() });
        }
        for &s in scales {
            check_scale(s)?;
        }
        for &z in zero_points {
            check_zero_point(z, dtype, dtype.min(), dtype.max())?;
        }
        Ok(Self {
            scales,
            zero_points,
            dtype,
            axis,
            block_size,
            qmin: dtype.min(),
            qmax: dtype.max(),
            convention: Convention::Onnx,
        })
    }

    /// The same parameters clamped to `[qmin, qmax]` (see [`QParams::with_range`]).
    ///
    /// # Errors
    /// As [`QParams::with_range`], for every zero point.
    pub fn with_range(self, qmin: i32, qmax: i32) -> Result<Self, Error> {
        if self.dtype.is_float() {
            return Err(Error::InvalidArgument { reason: "float8/float4 types have no integer range to narrow" });
        }
        check_qrange(self.dtype, qmin, qmax)?;
        for &z in self.zero_points {
            check_zero_point(z, self.dtype, qmin, qmax)?;
        }
        Ok(Self { qmin, qmax, ..self })
    }

    /// The same parameters with another rounding convention.
    pub fn with_convention(self, convention: Convention) -> Self {
        Self { convention, ..self }
    }

    /// The scales.
    pub fn scales(&self) -> &'a [f32] {
        self.scales
    }
    /// The zero points (empty: all zero).
    pub fn zero_points(&self) -> &'a [i32] {
        self.zero_points
    }
    /// The data type.
    pub fn dtype(&self) -> QuantDType {
        self.dtype
    }
    /// The quantization axis.
    pub fn axis(&self) -> usize {
        self.axis
    }
    /// The block size (0: per axis).
    pub fn block_size(&self) -> usize {
        self.block_size
    }
    /// Smallest quantized value produced.
    pub fn qmin(&self) -> i32 {
        self.qmin
    }
    /// Largest quantized value produced.
    pub fn qmax(&self) -> i32 {
        self.qmax
    }
    /// The rounding convention.
    pub fn convention(&self) -> Convention {
        self.convention
    }

    /// Scale and zero point of parameter `i`, or `None` past the end.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<(f32, i32)> {
        let s = *self.scales.get(i)?;
        let z = if self.zero_points.is_empty() { 0 } else { *self.zero_points.get(i)? };
        Some((s, z))
    }
}

/// Parameters of a quantized tensor: one set for the whole tensor, or per channel / per block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QuantParams<'a> {
    /// One scale and zero point.
    PerTensor(QParams),
    /// One per channel along an axis, or per block.
    PerChannel(ChannelQParams<'a>),
}

impl QuantParams<'_> {
    /// The data type.
    pub fn dtype(&self) -> QuantDType {
        match self {
            QuantParams::PerTensor(p) => p.dtype,
            QuantParams::PerChannel(p) => p.dtype,
        }
    }
    /// The clamp range `(qmin, qmax)`.
    pub fn qrange(&self) -> (i32, i32) {
        match self {
            QuantParams::PerTensor(p) => (p.qmin, p.qmax),
            QuantParams::PerChannel(p) => (p.qmin, p.qmax),
        }
    }
    /// The rounding convention.
    pub fn convention(&self) -> Convention {
        match self {
            QuantParams::PerTensor(p) => p.convention,
            QuantParams::PerChannel(p) => p.convention,
        }
    }
}

impl From<QParams> for QuantParams<'_> {
    fn from(p: QParams) -> Self {
        QuantParams::PerTensor(p)
    }
}

impl<'a> From<ChannelQParams<'a>> for QuantParams<'a> {
    fn from(p: ChannelQParams<'a>) -> Self {
        QuantParams::PerChannel(p)
    }
}

/// Builds per-tensor parameters without checks, for code in this crate that has already
/// validated them.
pub(crate) const fn qparams_unchecked(
    scale: f32,
    zero_point: i32,
    dtype: QuantDType,
    qmin: i32,
    qmax: i32,
    convention: Convention,
) -> QParams {
    QParams { scale, zero_point, dtype, qmin, qmax, convention }
}

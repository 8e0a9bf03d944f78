//! Choosing a scale and zero point from an observed range.

use super::convert::quantize_into;
use super::dtype::QuantDType;
use super::params::{Convention, QParams, QuantParams, qparams_unchecked};
use super::tensor::Shape;
use crate::Error;

/// How the real range maps onto the quantized range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum QScheme {
    /// Asymmetric: `[min, max]` (widened to contain 0) maps onto `[qmin, qmax]`; the zero
    /// point is wherever 0.0 lands. PyTorch `per_tensor_affine`, TFLite activations, ONNX
    /// `DynamicQuantizeLinear`.
    #[default]
    Affine,
    /// Symmetric over the full range of the type: `scale = amax / ((qmax - qmin) / 2)` with
    /// `amax = max(|min|, |max|)`, so int8 divides by **127.5** (PyTorch's
    /// `per_tensor_symmetric` default); zero point 0 (signed) or the middle of the range
    /// (unsigned: 128 for uint8).
    Symmetric,
    /// Symmetric over the restricted (narrow) range `[-(2^(b-1) - 1), 2^(b-1) - 1]`: int8
    /// divides by **127** and never produces -128 (TFLite's rule for int8 weights; ONNX
    /// Runtime's symmetric int8/int16). Signed types only.
    SymmetricRestricted,
}

/// Options of [`choose_qparams_with`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ChooseOptions {
    /// The scheme.
    pub scheme: QScheme,
    /// Whose formula (and rounding) to use; also stored in the returned [`QParams`].
    pub convention: Convention,
    /// Use one bit less of range (PyTorch `reduce_range`: int8 [-64, 63], uint8 [0, 127];
    /// with [`Convention::OnnxRuntime`] its table: int8 [-64, 64], uint8 [0, 127], int16
    /// [-16384, 16384], uint16 [0, 32767], int4 [-4, 3], uint4 [0, 7]).
    pub reduce_range: bool,
    /// PyTorch's lower bound on the scale (`torch.finfo(torch.float32).eps` by default).
    pub eps: f32,
    /// A custom quantized range (PyTorch `quant_min`/`quant_max`), replacing the scheme's.
    pub qrange: Option<(i32, i32)>,
}

impl ChooseOptions {
    /// Options for `scheme` with PyTorch's formula, no reduced range, `eps = f32::EPSILON`.
    pub const fn new(scheme: QScheme) -> Self {
        Self { scheme, convention: Convention::PyTorch, reduce_range: false, eps: f32::EPSILON, qrange: None }
    }
    /// The same options with another convention.
    pub const fn convention(mut self, convention: Convention) -> Self {
        self.convention = convention;
        self
    }
    /// The same options with `reduce_range` set.
    pub const fn reduce_range(mut self, reduce_range: bool) -> Self {
        self.reduce_range = reduce_range;
        self
    }
    /// The same options with a custom quantized range.
    pub const fn qrange(mut self, qmin: i32, qmax: i32) -> Self {
        self.qrange = Some((qmin, qmax));
        self
    }
}

/// The quantized range `(qmin, qmax)` that `opts` selects for `dtype` (integer types).
///
/// # Errors
/// [`Error::InvalidArgument`] for [`QScheme::SymmetricRestricted`] on an unsigned type, or a
/// custom range that leaves the type, is empty or excludes 0.
pub fn quant_range(dtype: QuantDType, opts: &ChooseOptions) -> Result<(i32, i32), Error> {
    if dtype.is_float() {
        return Ok((dtype.min(), dtype.max()));
    }
    let (lo, hi) = match (opts.qrange, opts.scheme) {
        (Some(r), _) => r,
        (None, QScheme::SymmetricRestricted) => dtype
            .restricted_range()
            .ok_or(Error::InvalidArgument { reason: "the restricted symmetric range needs a signed integer type" })?,
        (None, _) => (dtype.min(), dtype.max()),
    };
    if lo < dtype.min() || hi > dtype.max() || lo >= hi || lo > 0 || hi < 0 {
        return Err(Error::InvalidArgument {
            reason: "quantized range must lie in the data type, contain 0 and not be empty",
        });
    }
    if !opts.reduce_range {
        return Ok((lo, hi));
    }
    if opts.convention == Convention::OnnxRuntime && opts.qrange.is_none() {
        let t = match dtype {
            QuantDType::UInt8 => Some((0, 127)),
            QuantDType::Int8 => Some((-64, 64)),
            QuantDType::UInt16 => Some((0, 32767)),
            QuantDType::Int16 => Some((-16384, 16384)),
            QuantDType::UInt4 => Some((0, 7)),
            QuantDType::Int4 => Some((-4, 3)),
            _ => None,
        };
        if let Some(r) = t {
            return Ok(r);
        }
    }
    // PyTorch: quant_min // 2, quant_max // 2 (floor division).
    Ok((lo >> 1, hi >> 1))
}

/// Round half to even in `f64` (numpy's `round`).
fn round_half_even_f64(x: f64) -> f64 {
    libm::rint(x)
}

/// Chooses a scale and zero point for values in `[min, max]` with PyTorch's formulas
/// (`torch.ao.quantization` observers): see [`choose_qparams_with`] for the others.
///
/// The range is first widened to contain 0, so 0.0 is exactly representable (it quantizes to
/// the zero point, an integer in range). `min == max` gets the eps guard (`scale = eps`).
///
/// ```
/// use microquant::quant::{choose_qparams, QScheme, QuantDType};
/// let p = choose_qparams(-1.0, 3.0, QuantDType::UInt8, QScheme::Affine).unwrap();
/// assert_eq!((p.scale(), p.zero_point()), (4.0 / 255.0, 64));
/// let s = choose_qparams(-1.0, 3.0, QuantDType::Int8, QScheme::Symmetric).unwrap();
/// assert_eq!(s.scale(), 3.0 / 127.5); // PyTorch: full int8 range
/// let r = choose_qparams(-1.0, 3.0, QuantDType::Int8, QScheme::SymmetricRestricted).unwrap();
/// assert_eq!((r.scale(), r.qmin()), (3.0 / 127.0, -127)); // TFLite weights
/// ```
///
/// # Errors
/// As [`choose_qparams_with`].
pub fn choose_qparams(min: f32, max: f32, dtype: QuantDType, scheme: QScheme) -> Result<QParams, Error> {
    choose_qparams_with(min, max, dtype, &ChooseOptions::new(scheme))
}

/// Chooses a scale and zero point for values in `[min, max]` with the formula of
/// `opts.convention` (formulas in the [`crate::quant`] docs).
///
/// # Errors
/// [`Error::InvalidRange`] if `min` or `max` is not finite or `min > max`;
/// [`Error::InvalidArgument`] for a scheme the type does not support (affine float8/float4,
/// restricted unsigned) or a bad custom range; [`Error::InvalidScale`] if the range is so
/// wide that the scale overflows `f32`.
pub fn choose_qparams_with(min: f32, max: f32, dtype: QuantDType, opts: &ChooseOptions) -> Result<QParams, Error> {
    if !(min.is_finite() && max.is_finite()) || min > max {
        return Err(Error::InvalidRange);
    }
    let (qmin, qmax) = quant_range(dtype, opts)?;
    let conv = opts.convention;
    let min_neg = if min < 0.0 { min } else { 0.0 };
    let max_pos = if max > 0.0 { max } else { 0.0 };
    let symmetric = opts.scheme != QScheme::Affine;
    if dtype.is_float() {
        if !symmetric {
            return Err(Error::InvalidArgument { reason: "float8/float4 quantization is symmetric only" });
        }
        let amax = if -min_neg > max_pos { -min_neg } else { max_pos };
        let mut scale = amax / dtype.max() as f32;
        if conv == Convention::PyTorch {
            scale = if scale > opts.eps { scale } else { opts.eps };
        } else if scale.is_nan() || scale < f32::MIN_POSITIVE {
            scale = 1.0;
        }
        super::params::check_scale(scale)?;
        return Ok(qparams_unchecked(scale, 0, dtype, qmin, qmax, conv));
    }
    let full = (qmin, qmax) == (dtype.min(), dtype.max());
    let (scale, zp) = match conv {
        Convention::PyTorch => {
            if symmetric {
                let amax = if -min_neg > max_pos { -min_neg } else { max_pos };
                let s = amax / ((qmax as f64 - qmin as f64) / 2.0) as f32;
                let s = if s > opts.eps { s } else { opts.eps };
                let zp = if dtype.is_signed() {
                    0
                } else if full {
                    ((qmax as i64 + 1) / 2) as i32
                } else {
                    ((qmin as i64 + qmax as i64).div_euclid(2)) as i32
                };
                (s, zp)
            } else {
                let s = (max_pos - min_neg) / (qmax as f64 - qmin as f64) as f32;
                let s = if s > opts.eps { s } else { opts.eps };
                let zp = qmin as i64 - libm::rintf(min_neg / s) as i64;
                (s, zp.max(qmin as i64).min(qmax as i64) as i32)
            }
        }
        Convention::OnnxRuntime => {
            let (rmin, rmax) = if symmetric {
                let a = if -min_neg > max_pos { -min_neg } else { max_pos };
                (-a, a)
            } else {
                (min_neg, max_pos)
            };
            let s = (rmax as f64 - rmin as f64) / (qmax as f64 - qmin as f64);
            if s < f32::MIN_POSITIVE as f64 {
                (1.0, 0)
            } else {
                let z = if symmetric {
                    round_half_even_f64((qmin as f64 + qmax as f64) / 2.0)
                } else {
                    round_half_even_f64(qmin as f64 - rmin as f64 / s)
                };
                (s as f32, (z as i64).max(qmin as i64).min(qmax as i64) as i32)
            }
        }
        Convention::Onnx => {
            let (rmin, rmax) = if symmetric {
                let a = if -min_neg > max_pos { -min_neg } else { max_pos };
                (-a, a)
            } else {
                (min_neg, max_pos)
            };
            let s = if rmax == rmin { 1.0 } else { (rmax - rmin) / (qmax as f64 - qmin as f64) as f32 };
            let s = if s >= f32::MIN_POSITIVE { s } else { 1.0 };
            let z = (qmin as f32 - rmin / s).max(qmin as f32).min(qmax as f32);
            (s, libm::rintf(z) as i32)
        }
        Convention::TfLite => {
            if symmetric {
                // tools/optimize SymmetricPerChannelQuantization: max(|min|, |max|) / 127 in f32.
                let amax = if -min_neg > max_pos { -min_neg } else { max_pos };
                let s = amax / ((qmax as f64 - qmin as f64) / 2.0) as f32;
                let zp = if dtype.is_signed() { 0 } else { ((qmin as i64 + qmax as i64 + 1).div_euclid(2)) as i32 };
                (if s >= f32::MIN_POSITIVE { s } else { 1.0 }, zp)
            } else {
                // The converter widens a range narrower than 1e-6 by 1e-6 on both sides, then
                // GetAsymmetricQuantizationParams: scale in f32, zero point from the minimum,
                // rounded half away from zero.
                let (mut mn, mut mx) = (min_neg, max_pos);
                if mx as f64 - mn as f64 <= 1e-6 {
                    mn = (mn as f64 - 1e-6) as f32;
                    mx = (mx as f64 + 1e-6) as f32;
                }
                let s = (mx - mn) / (qmax as f64 - qmin as f64) as f32;
                let zd = qmin as f64 - mn as f64 / s as f64;
                let zp = if zd < qmin as f64 {
                    qmin
                } else if zd > qmax as f64 {
                    qmax
                } else {
                    libm::round(zd) as i32
                };
                (s, zp)
            }
        }
    };
    super::params::check_scale(scale)?;
    Ok(qparams_unchecked(scale, zp, dtype, qmin, qmax, conv))
}

/// ONNX `DynamicQuantizeLinear`: chooses uint8 parameters from the data
/// (`scale = (max(x, 0) - min(x, 0)) / 255`, or 1 when that range is empty;
/// `zero_point = rint(clamp(-min / scale, 0, 255))`) and quantizes `x` into `out` with them.
///
/// # Errors
/// [`Error::NoData`] for an empty `x`; [`Error::NonFinite`] on NaN or ±Inf;
/// [`Error::LengthMismatch`] if `out` is not as long as `x`.
pub fn dynamic_quantize_linear(x: &[f32], out: &mut [u8]) -> Result<QParams, Error> {
    if x.is_empty() {
        return Err(Error::NoData);
    }
    if x.len() != out.len() {
        return Err(Error::LengthMismatch { expected: x.len(), actual: out.len() });
    }
    let mut lo = 0.0f32;
    let mut hi = 0.0f32;
    for (i, &v) in x.iter().enumerate() {
        if !v.is_finite() {
            return Err(Error::NonFinite { index: i });
        }
        lo = if v < lo { v } else { lo };
        hi = if v > hi { v } else { hi };
    }
    let p = choose_qparams_with(
        lo,
        hi,
        QuantDType::UInt8,
        &ChooseOptions::new(QScheme::Affine).convention(Convention::Onnx),
    )?;
    quantize_into::<u8>(x, &Shape::vector(x.len()), &QuantParams::PerTensor(p), out, None)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_exact_and_ranges_are_widened() {
        for conv in [Convention::PyTorch, Convention::OnnxRuntime, Convention::Onnx, Convention::TfLite] {
            for (lo, hi) in [(-1.0f32, 3.0), (0.5, 2.0), (-7.0, -0.25), (0.0, 0.0), (-1e-30, 1e-30)] {
                for dt in [QuantDType::Int8, QuantDType::UInt8, QuantDType::Int16, QuantDType::UInt4] {
                    let o = ChooseOptions::new(QScheme::Affine).convention(conv);
                    let p = choose_qparams_with(lo, hi, dt, &o).unwrap();
                    assert!(p.zero_point() >= p.qmin() && p.zero_point() <= p.qmax());
                    assert_eq!(p.dequantize_one(p.quantize_one(0.0)), 0.0, "{conv:?} {lo} {hi} {dt:?}");
                }
            }
        }
    }

    #[test]
    fn pytorch_eps_guard_and_reduce_range() {
        let p = choose_qparams(0.0, 0.0, QuantDType::UInt8, QScheme::Affine).unwrap();
        assert_eq!((p.scale(), p.zero_point()), (f32::EPSILON, 0));
        let r =
            choose_qparams_with(-1.0, 1.0, QuantDType::Int8, &ChooseOptions::new(QScheme::Affine).reduce_range(true))
                .unwrap();
        assert_eq!((r.qmin(), r.qmax()), (-64, 63));
        let o = ChooseOptions::new(QScheme::Affine).reduce_range(true).convention(Convention::OnnxRuntime);
        let r = choose_qparams_with(-1.0, 1.0, QuantDType::Int8, &o).unwrap();
        assert_eq!((r.qmin(), r.qmax()), (-64, 64));
        assert_eq!(choose_qparams(1.0, 0.0, QuantDType::Int8, QScheme::Affine), Err(Error::InvalidRange));
        assert_eq!(choose_qparams(f32::NAN, 0.0, QuantDType::Int8, QScheme::Affine), Err(Error::InvalidRange));
        assert!(choose_qparams(-1.0, 1.0, QuantDType::UInt8, QScheme::SymmetricRestricted).is_err());
        assert!(choose_qparams(-1.0, 1.0, QuantDType::Float8E4M3FN, QScheme::Affine).is_err());
        let f = choose_qparams(-2.0, 896.0, QuantDType::Float8E4M3FN, QScheme::Symmetric).unwrap();
        assert_eq!(f.scale(), 2.0);
    }
}

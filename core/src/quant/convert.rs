//! Float <-> quantized conversions: quantize, dequantize, fake quantization (with the
//! straight-through-estimator mask) and requantization.

use super::dtype::{QuantDType, QuantElement, element_code, set_element_code};
use super::minifloat;
use super::params::{Convention, QParams, QuantParams};
use super::tensor::{ParamIndex, QTensor, QTensorMut, Shape, Tensor};
use crate::Error;
use crate::requant::{self, Rounding};

/// Per-parameter constants of the element conversion.
#[derive(Clone, Copy)]
pub(crate) struct Elem {
    scale: f32,
    inv_scale: f32,
    zp: i32,
    lo: f32,
    hi: f32,
    qmin: i32,
    qmax: i32,
    dtype: QuantDType,
    conv: Convention,
}

impl Elem {
    #[inline(always)]
    pub(crate) fn new(scale: f32, zp: i32, qmin: i32, qmax: i32, dtype: QuantDType, conv: Convention) -> Self {
        Self {
            scale,
            inv_scale: 1.0 / scale,
            zp,
            lo: (qmin as i64 - zp as i64) as f32,
            hi: (qmax as i64 - zp as i64) as f32,
            qmin,
            qmax,
            dtype,
            conv,
        }
    }

    /// The code of `x` and whether `x` fell inside the clamp range (the STE mask).
    #[inline(always)]
    pub(crate) fn quantize(&self, x: f32) -> (i32, bool) {
        if self.dtype.is_float() {
            return self.quantize_float(x);
        }
        let r = match self.conv {
            Convention::PyTorch => libm::rintf(x * self.inv_scale),
            Convention::TfLite => libm::roundf(x / self.scale),
            Convention::Onnx | Convention::OnnxRuntime => libm::rintf(x / self.scale),
        };
        if r.is_nan() {
            return (self.zp, false);
        }
        let inside = r >= self.lo && r <= self.hi;
        // Clamp in float first (`r` may be far outside i64), then saturate in integers.
        // (`max`/`min`, not `clamp`, which asserts its bounds and would leave a panic path.)
        let v = r.max(self.lo).min(self.hi) as i64 + self.zp as i64;
        (v.max(self.qmin as i64).min(self.qmax as i64) as i32, inside)
    }

    #[inline(always)]
    fn quantize_float(&self, x: f32) -> (i32, bool) {
        let t = x / self.scale;
        let max = self.dtype.max() as f32;
        let inside = t.abs() <= max;
        let code = match self.dtype {
            QuantDType::Float8E4M3FN => minifloat::f32_to_f8e4m3fn(t, true),
            QuantDType::Float8E5M2 => minifloat::f32_to_f8e5m2(t, true),
            // ONNX's reference adds the (float) zero point 0.0 before the cast, so -0.0 becomes +0.
            _ => minifloat::f32_to_f4e2m1(t + 0.0).unwrap_or(0),
        };
        (code as i32, inside)
    }

    #[inline(always)]
    pub(crate) fn dequantize(&self, q: i32) -> f32 {
        dequantize_value(q, self.scale, self.zp, self.dtype)
    }
}

/// See [`QParams::quantize_one`].
#[inline]
pub(crate) fn quantize_value(
    x: f32,
    scale: f32,
    zp: i32,
    qmin: i32,
    qmax: i32,
    dtype: QuantDType,
    conv: Convention,
) -> (i32, bool) {
    Elem::new(scale, zp, qmin, qmax, dtype, conv).quantize(x)
}

/// `(q - zp) · scale` for integer types (the difference is exact in `f32` for every type but
/// int32, where it is rounded once); `decode(q) · scale` for float types.
#[inline(always)]
pub(crate) fn dequantize_value(q: i32, scale: f32, zp: i32, dtype: QuantDType) -> f32 {
    match dtype {
        QuantDType::Float8E4M3FN => minifloat::f8e4m3fn_to_f32(q as u8) * scale,
        QuantDType::Float8E5M2 => minifloat::f8e5m2_to_f32(q as u8) * scale,
        QuantDType::Float4E2M1 => minifloat::f4e2m1_to_f32(q as u8) * scale,
        _ => (q as i64 - zp as i64) as f32 * scale,
    }
}

#[inline(always)]
fn param_at(params: &QuantParams<'_>, p: usize) -> Result<Elem, Error> {
    match params {
        QuantParams::PerTensor(q) => {
            Ok(Elem::new(q.scale(), q.zero_point(), q.qmin(), q.qmax(), q.dtype(), q.convention()))
        }
        QuantParams::PerChannel(c) => {
            let (s, z) = c.get(p).ok_or(Error::InvalidArgument { reason: "parameter index out of range" })?;
            Ok(Elem::new(s, z, c.qmin(), c.qmax(), c.dtype(), c.convention()))
        }
    }
}

fn check_len(expected: usize, actual: usize) -> Result<(), Error> {
    if expected == actual { Ok(()) } else { Err(Error::LengthMismatch { expected, actual }) }
}

/// Walks the elements with their parameters, rebuilding the per-parameter constants only when
/// the parameter index changes.
struct ElemWalk<'p, 'a> {
    idx: ParamIndex,
    params: &'p QuantParams<'a>,
    cur: usize,
    elem: Option<Elem>,
}

impl<'p, 'a> ElemWalk<'p, 'a> {
    fn new(shape: &Shape, params: &'p QuantParams<'a>) -> Result<Self, Error> {
        Ok(Self { idx: ParamIndex::new(shape, params)?, params, cur: usize::MAX, elem: None })
    }
    #[inline(always)]
    fn next(&mut self) -> Result<Elem, Error> {
        let p = self.idx.next().ok_or(Error::InvalidArgument { reason: "more elements than the shape holds" })?;
        match self.elem {
            Some(e) if p == self.cur => Ok(e),
            _ => {
                let e = param_at(self.params, p)?;
                self.cur = p;
                self.elem = Some(e);
                Ok(e)
            }
        }
    }
}

pub(crate) fn quantize_into<E: QuantElement>(
    x: &[f32],
    shape: &Shape,
    params: &QuantParams<'_>,
    out: &mut [E::Unit],
    mut mask: Option<&mut [bool]>,
) -> Result<(), Error> {
    if params.dtype() != E::DTYPE {
        return Err(Error::DTypeMismatch { expected: E::DTYPE, actual: params.dtype() });
    }
    check_len(shape.len(), x.len())?;
    check_len(E::DTYPE.storage_len(x.len()), out.len())?;
    if let Some(m) = mask.as_deref() {
        check_len(x.len(), m.len())?;
    }
    let mut walk = ElemWalk::new(shape, params)?;
    if E::PER_UNIT > 1 {
        // Deterministic padding bits in the last byte, as ONNX packs them.
        out.fill(E::Unit::default());
    }
    for (i, &v) in x.iter().enumerate() {
        let e = walk.next()?;
        if !v.is_finite() {
            return Err(Error::NonFinite { index: i });
        }
        let (code, inside) = e.quantize(v);
        set_element_code::<E>(out, i, code);
        if let Some(slot) = mask.as_deref_mut().and_then(|m| m.get_mut(i)) {
            *slot = inside;
        }
    }
    Ok(())
}

pub(crate) fn dequantize_into<E: QuantElement>(
    q: &[E::Unit],
    shape: &Shape,
    params: &QuantParams<'_>,
    out: &mut [f32],
) -> Result<(), Error> {
    if params.dtype() != E::DTYPE {
        return Err(Error::DTypeMismatch { expected: E::DTYPE, actual: params.dtype() });
    }
    check_len(shape.len(), out.len())?;
    check_len(E::DTYPE.storage_len(out.len()), q.len())?;
    let mut walk = ElemWalk::new(shape, params)?;
    for (i, o) in out.iter_mut().enumerate() {
        let e = walk.next()?;
        let code = element_code::<E>(q, i).ok_or(Error::LengthMismatch { expected: i + 1, actual: q.len() })?;
        *o = e.dequantize(code);
    }
    Ok(())
}

pub(crate) fn dequantize_f16_into<E: QuantElement>(
    q: &[E::Unit],
    shape: &Shape,
    params: &QuantParams<'_>,
    out: &mut [u16],
) -> Result<(), Error> {
    if params.dtype() != E::DTYPE {
        return Err(Error::DTypeMismatch { expected: E::DTYPE, actual: params.dtype() });
    }
    check_len(shape.len(), out.len())?;
    check_len(E::DTYPE.storage_len(out.len()), q.len())?;
    let mut walk = ElemWalk::new(shape, params)?;
    for (i, o) in out.iter_mut().enumerate() {
        let e = walk.next()?;
        let code = element_code::<E>(q, i).ok_or(Error::LengthMismatch { expected: i + 1, actual: q.len() })?;
        *o = minifloat::f32_to_f16_bits(e.dequantize(code));
    }
    Ok(())
}

pub(crate) fn quantize_slice<E: QuantElement>(p: &QParams, x: &[f32], out: &mut [E::Unit]) -> Result<(), Error> {
    if p.dtype() != E::DTYPE {
        return Err(Error::DTypeMismatch { expected: E::DTYPE, actual: p.dtype() });
    }
    check_len(x.len(), out.len())?;
    quantize_into::<E>(x, &Shape::vector(x.len()), &QuantParams::PerTensor(*p), out, None)
}

pub(crate) fn dequantize_slice<E: QuantElement>(p: &QParams, q: &[E::Unit], out: &mut [f32]) -> Result<(), Error> {
    if p.dtype() != E::DTYPE {
        return Err(Error::DTypeMismatch { expected: E::DTYPE, actual: p.dtype() });
    }
    check_len(q.len(), out.len())?;
    dequantize_into::<E>(q, &Shape::vector(out.len()), &QuantParams::PerTensor(*p), out)
}

/// Quantizes the float tensor `x` into `out`, whose parameters (per tensor, per channel or
/// blocked) and element type say how.
///
/// Integer types: `q = clamp(round(x / scale) + zero_point, qmin, qmax)` with the rounding of
/// the parameters' [`Convention`] (ONNX by default: ties to even). float8: `x / scale` cast
/// to the format, rounding to nearest even and saturating (ONNX `saturate = 1`); float4 the
/// same with `+ 0.0` first, as ONNX's reference.
///
/// # Errors
/// [`Error::NonFinite`] on NaN or ±Inf in `x` (`out` is then partly written);
/// [`Error::LengthMismatch`] if `x` and `out` have different element counts.
pub fn quantize<E: QuantElement>(x: &Tensor<'_>, out: &mut QTensorMut<'_, E>) -> Result<(), Error> {
    let (data, shape, params) = out.parts();
    if x.shape() != shape {
        return Err(Error::InvalidArgument { reason: "quantize: input and output shapes differ" });
    }
    quantize_into::<E>(x.data(), shape, params, data, None)
}

/// [`quantize`], also writing for each element whether it fell inside the clamp range
/// (`qmin <= round(x / scale) + zero_point <= qmax`; for float types `|x / scale| <= max`).
///
/// # Errors
/// As [`quantize`]; [`Error::LengthMismatch`] if `mask` is not one per element.
pub fn quantize_with_mask<E: QuantElement>(
    x: &Tensor<'_>,
    out: &mut QTensorMut<'_, E>,
    mask: &mut [bool],
) -> Result<(), Error> {
    let (data, shape, params) = out.parts();
    if x.shape() != shape {
        return Err(Error::InvalidArgument { reason: "quantize: input and output shapes differ" });
    }
    quantize_into::<E>(x.data(), shape, params, data, Some(mask))
}

/// Quantizes then dequantizes in float (the forward pass of quantization-aware training):
/// `out = (clamp(round(x / scale) + zero_point, qmin, qmax) - zero_point) · scale`, and, if
/// `mask` is given, the straight-through-estimator mask: `true` where the element fell inside
/// the clamp range (where the gradient passes), as PyTorch's `fake_quantize_*_cachemask`.
/// Works per tensor, per channel and blocked, for every data type.
///
/// # Errors
/// [`Error::NonFinite`] on NaN or ±Inf; [`Error::LengthMismatch`] if `out` (or `mask`) is not
/// one per element; shape errors as [`QTensor::new`].
pub fn fake_quantize(
    x: &Tensor<'_>,
    params: &QuantParams<'_>,
    out: &mut [f32],
    mut mask: Option<&mut [bool]>,
) -> Result<(), Error> {
    check_len(x.data().len(), out.len())?;
    if let Some(m) = mask.as_deref() {
        check_len(x.data().len(), m.len())?;
    }
    let mut walk = ElemWalk::new(x.shape(), params)?;
    for (i, (&v, o)) in x.data().iter().zip(out.iter_mut()).enumerate() {
        let e = walk.next()?;
        if !v.is_finite() {
            return Err(Error::NonFinite { index: i });
        }
        let (code, inside) = e.quantize(v);
        *o = e.dequantize(code);
        if let Some(slot) = mask.as_deref_mut().and_then(|m| m.get_mut(i)) {
            *slot = inside;
        }
    }
    Ok(())
}

/// Re-expresses a quantized tensor with other parameters (and possibly another integer
/// type), without floating point, as TFLite's `QUANTIZE` kernel does for integer inputs:
/// `m, shift = quantize_multiplier(input_scale / output_scale)` (in `f64`), then
/// `q_out = clamp(multiply_by_quantized_multiplier(q_in - zp_in, m, shift) + zp_out)`, with
/// the chosen [`Rounding`]. Per-channel parameters on either side are matched element by
/// element (the multiplier is recomputed when the pair of parameters changes). Tensors of
/// float8/float4 type go through float instead (`quantize(dequantize(q))`).
///
/// # Errors
/// [`Error::InvalidArgument`] if the shapes differ, or if a scale ratio is so large that
/// `(q_in - zp_in) · 2^shift` would overflow 32 bits (TFLite's contract for the left shift);
/// shape and length errors as [`QTensor::new`].
pub fn requantize<A: QuantElement, B: QuantElement>(
    input: &QTensor<'_, A>,
    out: &mut QTensorMut<'_, B>,
    rounding: Rounding,
) -> Result<(), Error> {
    let (data, shape, params) = out.parts();
    if input.shape() != shape {
        return Err(Error::InvalidArgument { reason: "requantize: input and output shapes differ" });
    }
    let n = shape.len();
    let mut win = ElemWalk::new(input.shape(), input.params())?;
    let mut wout = ElemWalk::new(shape, params)?;
    if B::PER_UNIT > 1 {
        data.fill(B::Unit::default());
    }
    let float_path = A::DTYPE.is_float() || B::DTYPE.is_float();
    let mut cache: Option<(u32, u32, requant::QuantizedMultiplier)> = None;
    for i in 0..n {
        let ei = win.next()?;
        let eo = wout.next()?;
        let code = element_code::<A>(input.data(), i)
            .ok_or(Error::LengthMismatch { expected: i + 1, actual: input.data().len() })?;
        let q = if float_path {
            eo.quantize(ei.dequantize(code)).0
        } else {
            let key = (ei.scale.to_bits(), eo.scale.to_bits());
            let m = match cache {
                Some((a, b, m)) if (a, b) == key => m,
                _ => {
                    let real = ei.scale as f64 / eo.scale as f64;
                    let m = match rounding {
                        Rounding::Double => requant::quantize_multiplier(real),
                        Rounding::Single => requant::quantize_multiplier_single_rounding(real),
                    };
                    if m.shift > 30 {
                        return Err(Error::InvalidArgument { reason: "requantize: scale ratio above 2^30" });
                    }
                    cache = Some((key.0, key.1, m));
                    m
                }
            };
            let x = (code as i64 - ei.zp as i64).max(i32::MIN as i64).min(i32::MAX as i64) as i32;
            if m.shift > 0 && x.checked_shl(m.shift as u32).map(|s| s >> m.shift as u32) != Some(x) {
                return Err(Error::InvalidArgument {
                    reason: "requantize: (q - zero_point) << shift overflows 32 bits",
                });
            }
            let y = m.apply(x, rounding) as i64 + eo.zp as i64;
            y.max(eo.qmin as i64).min(eo.qmax as i64) as i32
        };
        set_element_code::<B>(data, i, q);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{ChannelQParams, I4};

    #[test]
    fn conventions_differ_on_ties() {
        let p = QParams::new(1.0, 0, QuantDType::Int8).unwrap();
        assert_eq!(p.quantize_one(2.5), 2);
        assert_eq!(p.with_convention(Convention::TfLite).quantize_one(2.5), 3);
        assert_eq!(p.with_convention(Convention::TfLite).quantize_one(-2.5), -3);
        assert_eq!(p.with_convention(Convention::PyTorch).quantize_one(2.5), 2);
        assert_eq!(p.quantize_one(1e30), 127);
        assert_eq!(p.quantize_one(-1e30), -128);
    }

    #[test]
    fn per_axis_and_blocked_pick_the_right_parameters() {
        // ONNX test_quantizelinear_axis: x [1,3,3,2], scales [2,4,5], zps [84,24,196] (uint8).
        let x = [
            -162.0, 10.0, -100.0, 232.0, -20.0, -50.0, -76.0, 0.0, 0.0, 252.0, 32.0, -44.0, 245.0, -485.0, -960.0,
            -270.0, -375.0, -470.0,
        ];
        let scales = [2.0, 4.0, 5.0];
        let zps = [84, 24, 196];
        let shape = Shape::new(&[1, 3, 3, 2]).unwrap();
        let p = ChannelQParams::per_axis(&scales, &zps, QuantDType::UInt8, 1).unwrap();
        let mut out = [0u8; 18];
        let mut q = QTensorMut::<u8>::new(&mut out, shape, p.into()).unwrap();
        quantize(&Tensor::new(&x, shape).unwrap(), &mut q).unwrap();
        assert_eq!(out, [3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102]);
        // Blocked along axis 1 with block 2: x [3, 4], scales [3, 2].
        let x = [6.0, 12.0, 50.0, 5.0, 1.0, 8.0, 4.0, 5.0, 0.0, 20.0, 10.0, 4.0];
        let s = [1.5, 2.5, 3.0, 4.9, 5.1, 6.9];
        let z = [0, 1, 1, 0, 2, 3];
        let shape = Shape::new(&[3, 4]).unwrap();
        let p = ChannelQParams::blocked(&s, &z, QuantDType::UInt8, 1, 2).unwrap();
        let mut out = [0u8; 12];
        let mut q = QTensorMut::<u8>::new(&mut out, shape, p.into()).unwrap();
        quantize(&Tensor::new(&x, shape).unwrap(), &mut q).unwrap();
        assert_eq!(out, [4, 8, 21, 3, 1, 4, 1, 1, 2, 6, 4, 4]);
    }

    #[test]
    fn packed_int4_and_mask() {
        let p = QParams::new(1.0, 0, QuantDType::Int4).unwrap();
        let x = [1.0, -1.0, 7.4, 9.0, -20.0];
        let mut out = [0u8; 3];
        let mut mask = [false; 5];
        let shape = Shape::vector(5);
        let mut q = QTensorMut::<I4>::new(&mut out, shape, p.into()).unwrap();
        quantize_with_mask(&Tensor::new(&x, shape).unwrap(), &mut q, &mut mask).unwrap();
        assert_eq!(out, [0xF1, 0x77, 0x08]);
        assert_eq!(mask, [true, true, true, false, false]);
        let mut back = [0f32; 5];
        QTensor::<I4>::new(&out, shape, p.into()).unwrap().dequantize(&mut back).unwrap();
        assert_eq!(back, [1.0, -1.0, 7.0, 7.0, -8.0]);
    }

    #[test]
    fn requantize_int8_to_int8_and_errors() {
        let pin = QParams::new(0.5, 10, QuantDType::Int8).unwrap();
        let pout = QParams::new(0.25, -5, QuantDType::Int8).unwrap();
        let data = [10i8, 11, 12, 60, -128];
        let input = QTensor::<i8>::new(&data, Shape::vector(5), pin.into()).unwrap();
        let mut o = [0i8; 5];
        let mut out = QTensorMut::<i8>::new(&mut o, Shape::vector(5), pout.into()).unwrap();
        requantize(&input, &mut out, Rounding::Double).unwrap();
        // (q - 10) * 2 - 5, saturated.
        assert_eq!(o, [-5, -3, -1, 95, -128]);
        let nan = [f32::NAN];
        let mut q1 = [0i8; 1];
        assert_eq!(pin.quantize_i8(&nan, &mut q1), Err(Error::NonFinite { index: 0 }));
    }
}

//! Shapes, float tensor views and quantized tensor views.
//!
//! A [`QTensor`] is a different type from a [`Tensor`] of floats, and from a `QTensor` of
//! another element type, so quantized data cannot be passed where floats are expected:
//!
//! ```compile_fail,E0308
//! use microquant::quant::{QParams, QTensor, QuantDType, Shape, Tensor};
//! fn mean(t: Tensor<'_>) -> f32 { t.data().iter().sum::<f32>() / t.data().len() as f32 }
//! let p = QParams::new(0.1, 0, QuantDType::Int8).unwrap();
//! let q = QTensor::<i8>::new(&[1, 2, 3], Shape::vector(3), p.into()).unwrap();
//! mean(q); // error[E0308]: expected `Tensor<'_>`, found `QTensor<'_, i8>`
//! ```
//!
//! The way out is explicit: [`QTensor::dequantize`] into a float buffer.

use super::convert;
use super::dtype::QuantElement;
use super::params::QuantParams;
use crate::Error;
use core::marker::PhantomData;
use core::num::NonZeroUsize;

/// Largest tensor rank supported by [`Shape`].
pub const MAX_RANK: usize = 8;

/// A tensor shape (row-major), up to [`MAX_RANK`] dimensions, stored inline (`Copy`, no heap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shape {
    dims: [usize; MAX_RANK],
    rank: usize,
    len: usize,
}

impl Shape {
    /// A shape from its dimensions.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if there are more than [`MAX_RANK`] dimensions or the
    /// element count overflows `usize`.
    pub fn new(dims: &[usize]) -> Result<Self, Error> {
        if dims.len() > MAX_RANK {
            return Err(Error::InvalidArgument { reason: "tensor rank above MAX_RANK (8)" });
        }
        let mut d = [0usize; MAX_RANK];
        let mut len = 1usize;
        for (slot, &n) in d.iter_mut().zip(dims) {
            *slot = n;
            len =
                len.checked_mul(n).ok_or(Error::InvalidArgument { reason: "tensor element count overflows usize" })?;
        }
        Ok(Self { dims: d, rank: dims.len(), len })
    }

    /// A one-dimensional shape of `n` elements.
    pub const fn vector(n: usize) -> Self {
        let mut dims = [0usize; MAX_RANK];
        dims[0] = n;
        Self { dims, rank: 1, len: n }
    }

    /// The dimensions.
    pub fn dims(&self) -> &[usize] {
        self.dims.get(..self.rank).unwrap_or(&[])
    }
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// Number of elements (1 for a scalar).
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `(outer, dim, inner)`: the products of the dimensions before `axis`, at `axis`, and after.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `axis >= rank`.
    pub fn split_at_axis(&self, axis: usize) -> Result<(usize, usize, usize), Error> {
        let dims = self.dims();
        let dim = *dims.get(axis).ok_or(Error::InvalidArgument { reason: "quantization axis out of range" })?;
        let (before, after) = dims.split_at(axis);
        let outer = before.iter().product();
        let inner = after.iter().skip(1).product();
        Ok((outer, dim, inner))
    }
}

/// For each element of a tensor in row-major order, the index of its parameters.
#[derive(Debug, Clone)]
pub(crate) enum ParamIndex {
    PerTensor {
        remaining: usize,
    },
    Axis {
        dim: usize,
        inner: usize,
        a: usize,
        i: usize,
        remaining: usize,
    },
    Blocked {
        dim: usize,
        inner: usize,
        block: NonZeroUsize,
        nblocks: usize,
        o: usize,
        a: usize,
        i: usize,
        bi: usize,
        ba: usize,
        remaining: usize,
    },
}

impl ParamIndex {
    /// Checks `params` against `shape` and returns the element-to-parameter mapping.
    pub(crate) fn new(shape: &Shape, params: &QuantParams<'_>) -> Result<Self, Error> {
        let n = shape.len();
        let p = match params {
            QuantParams::PerTensor(_) => return Ok(ParamIndex::PerTensor { remaining: n }),
            QuantParams::PerChannel(p) => p,
        };
        let (outer, dim, inner) = shape.split_at_axis(p.axis())?;
        match NonZeroUsize::new(p.block_size()) {
            None => {
                if p.scales().len() != dim {
                    return Err(Error::LengthMismatch { expected: dim, actual: p.scales().len() });
                }
                Ok(ParamIndex::Axis { dim, inner, a: 0, i: 0, remaining: n })
            }
            Some(block) => {
                let nblocks = dim / block + (dim % block != 0) as usize;
                let expected = outer
                    .checked_mul(nblocks)
                    .and_then(|v| v.checked_mul(inner))
                    .ok_or(Error::InvalidArgument { reason: "blocked parameter count overflows usize" })?;
                if p.scales().len() != expected {
                    return Err(Error::LengthMismatch { expected, actual: p.scales().len() });
                }
                Ok(ParamIndex::Blocked { dim, inner, block, nblocks, o: 0, a: 0, i: 0, bi: 0, ba: 0, remaining: n })
            }
        }
    }
}

impl Iterator for ParamIndex {
    type Item = usize;
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        match self {
            ParamIndex::PerTensor { remaining } => {
                if *remaining == 0 {
                    return None;
                }
                *remaining -= 1;
                Some(0)
            }
            ParamIndex::Axis { dim, inner, a, i, remaining } => {
                if *remaining == 0 {
                    return None;
                }
                *remaining -= 1;
                let out = *a;
                *i += 1;
                if *i >= *inner {
                    *i = 0;
                    *a += 1;
                    if *a >= *dim {
                        *a = 0;
                    }
                }
                Some(out)
            }
            ParamIndex::Blocked { dim, inner, block, nblocks, o, a, i, bi, ba, remaining } => {
                if *remaining == 0 {
                    return None;
                }
                *remaining -= 1;
                let out = (*o * *nblocks + *bi) * *inner + *i;
                *i += 1;
                if *i >= *inner {
                    *i = 0;
                    *a += 1;
                    *ba += 1;
                    if *ba >= block.get() {
                        *ba = 0;
                        *bi += 1;
                    }
                    if *a >= *dim {
                        *a = 0;
                        *ba = 0;
                        *bi = 0;
                        *o += 1;
                    }
                }
                Some(out)
            }
        }
    }
}

/// A read-only float tensor: data and shape.
#[derive(Debug, Clone, Copy)]
pub struct Tensor<'a> {
    data: &'a [f32],
    shape: Shape,
}

impl<'a> Tensor<'a> {
    /// A view of `data` with `shape`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `data.len() != shape.len()`.
    pub fn new(data: &'a [f32], shape: Shape) -> Result<Self, Error> {
        if data.len() != shape.len() {
            return Err(Error::LengthMismatch { expected: shape.len(), actual: data.len() });
        }
        Ok(Self { data, shape })
    }
    /// A one-dimensional view of `data`.
    pub fn from_slice(data: &'a [f32]) -> Self {
        Self { data, shape: Shape::vector(data.len()) }
    }
    /// The elements.
    pub fn data(&self) -> &'a [f32] {
        self.data
    }
    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
}

/// A read-only quantized tensor: storage units of element type `E`, shape and parameters.
#[derive(Debug, Clone, Copy)]
pub struct QTensor<'a, E: QuantElement> {
    data: &'a [E::Unit],
    shape: Shape,
    params: QuantParams<'a>,
    _e: PhantomData<E>,
}

fn check_storage<E: QuantElement>(units: usize, shape: &Shape, params: &QuantParams<'_>) -> Result<(), Error> {
    if params.dtype() != E::DTYPE {
        return Err(Error::DTypeMismatch { expected: E::DTYPE, actual: params.dtype() });
    }
    let need = E::DTYPE.storage_len(shape.len());
    if units != need {
        return Err(Error::LengthMismatch { expected: need, actual: units });
    }
    ParamIndex::new(shape, params).map(|_| ())
}

impl<'a, E: QuantElement> QTensor<'a, E> {
    /// A view of `data` (`E::DTYPE.storage_len(shape.len())` units) with `shape` and `params`.
    ///
    /// # Errors
    /// [`Error::DTypeMismatch`] if `params` are for another data type;
    /// [`Error::LengthMismatch`] if `data` or the parameter count does not fit `shape`;
    /// [`Error::InvalidArgument`] for an axis out of range.
    pub fn new(data: &'a [E::Unit], shape: Shape, params: QuantParams<'a>) -> Result<Self, Error> {
        check_storage::<E>(data.len(), &shape, &params)?;
        Ok(Self { data, shape, params, _e: PhantomData })
    }
    /// The storage units.
    pub fn data(&self) -> &'a [E::Unit] {
        self.data
    }
    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The parameters.
    pub fn params(&self) -> &QuantParams<'a> {
        &self.params
    }
    /// Element `i` as its integer value (or float8/float4 bit pattern), or `None` past the end.
    pub fn code(&self, i: usize) -> Option<i32> {
        if i >= self.shape.len() {
            return None;
        }
        super::dtype::element_code::<E>(self.data, i)
    }

    /// Dequantizes into `out` (one `f32` per element): `(q - zero_point) · scale`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `out.len()` is not the element count.
    pub fn dequantize(&self, out: &mut [f32]) -> Result<(), Error> {
        convert::dequantize_into::<E>(self.data, &self.shape, &self.params, out)
    }

    /// Dequantizes into IEEE half-precision bits (computed in `f32`, then rounded to nearest
    /// even, as ONNX `DequantizeLinear` with a float16 scale).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] if `out.len()` is not the element count.
    pub fn dequantize_f16(&self, out: &mut [u16]) -> Result<(), Error> {
        convert::dequantize_f16_into::<E>(self.data, &self.shape, &self.params, out)
    }
}

/// A writable quantized tensor (the output of [`quantize`](super::quantize) and
/// [`requantize`](super::requantize)).
#[derive(Debug)]
pub struct QTensorMut<'a, E: QuantElement> {
    data: &'a mut [E::Unit],
    shape: Shape,
    params: QuantParams<'a>,
    _e: PhantomData<E>,
}

impl<'a, E: QuantElement> QTensorMut<'a, E> {
    /// A writable view; same checks as [`QTensor::new`].
    ///
    /// # Errors
    /// As [`QTensor::new`].
    pub fn new(data: &'a mut [E::Unit], shape: Shape, params: QuantParams<'a>) -> Result<Self, Error> {
        check_storage::<E>(data.len(), &shape, &params)?;
        Ok(Self { data, shape, params, _e: PhantomData })
    }
    /// The storage units.
    pub fn data(&self) -> &[E::Unit] {
        self.data
    }
    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// The parameters.
    pub fn params(&self) -> &QuantParams<'a> {
        &self.params
    }
    /// A read-only view of the same data.
    pub fn as_qtensor(&self) -> QTensor<'_, E> {
        QTensor { data: self.data, shape: self.shape, params: self.params, _e: PhantomData }
    }
    pub(crate) fn parts(&mut self) -> (&mut [E::Unit], &Shape, &QuantParams<'a>) {
        (self.data, &self.shape, &self.params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{ChannelQParams, QParams, QuantDType, U4};

    #[test]
    fn views_check_type_length_and_parameters() {
        let p = QParams::new(0.5, 0, QuantDType::Int8).unwrap();
        let shape = Shape::new(&[2, 3]).unwrap();
        assert_eq!(shape.split_at_axis(1), Ok((2, 3, 1)));
        assert!(shape.split_at_axis(2).is_err());
        let d = [0i8; 6];
        assert!(QTensor::<i8>::new(&d, shape, p.into()).is_ok());
        assert_eq!(
            QTensor::<i8>::new(&d[..5], shape, p.into()).err(),
            Some(Error::LengthMismatch { expected: 6, actual: 5 })
        );
        let u = [0u8; 6];
        assert!(matches!(QTensor::<u8>::new(&u, shape, p.into()), Err(Error::DTypeMismatch { .. })));
        // Packed: 6 uint4 elements in 3 bytes.
        let p4 = QParams::new(1.0, 8, QuantDType::UInt4).unwrap();
        assert!(QTensor::<U4>::new(&u[..3], shape, p4.into()).is_ok());
        assert!(QTensor::<U4>::new(&u[..4], shape, p4.into()).is_err());
        // Per-axis: one scale per index along the axis; blocked: ceil(dim / block) per row.
        let s3 = [1.0f32, 2.0, 3.0];
        let ax1 = ChannelQParams::per_axis(&s3, &[], QuantDType::Int8, 1).unwrap();
        assert!(QTensor::<i8>::new(&d, shape, ax1.into()).is_ok());
        let ax0 = ChannelQParams::per_axis(&s3, &[], QuantDType::Int8, 0).unwrap();
        assert_eq!(
            QTensor::<i8>::new(&d, shape, ax0.into()).err(),
            Some(Error::LengthMismatch { expected: 2, actual: 3 })
        );
        let ax5 = ChannelQParams::per_axis(&s3, &[], QuantDType::Int8, 5).unwrap();
        assert!(matches!(QTensor::<i8>::new(&d, shape, ax5.into()), Err(Error::InvalidArgument { .. })));
        let s4 = [1.0f32; 4];
        let blk = ChannelQParams::blocked(&s4, &[], QuantDType::Int8, 1, 2).unwrap();
        assert!(QTensor::<i8>::new(&d, shape, blk.into()).is_ok()); // 2 rows x ceil(3 / 2)
        assert!(ChannelQParams::per_axis(&[0.0], &[], QuantDType::Int8, 0).is_err());
        assert!(ChannelQParams::per_axis(&s3, &[1, 2], QuantDType::Int8, 0).is_err());
        assert!(ChannelQParams::per_axis(&s3, &[0, 300, 0], QuantDType::Int8, 0).is_err());
        assert!(Shape::new(&[1; 9]).is_err());
        assert!(Shape::new(&[usize::MAX, 2]).is_err());
    }

    #[test]
    fn blocked_parameter_index_follows_onnx_layout() {
        // x [2, 5, 3], axis 1, block 2: parameters [2, 3, 3]; element (o, a, i) uses
        // parameter (o * 3 + a / 2) * 3 + i.
        let shape = Shape::new(&[2, 5, 3]).unwrap();
        let s = [1.0f32; 18];
        let p = ChannelQParams::blocked(&s, &[], QuantDType::Int8, 1, 2).unwrap();
        let idx: Vec2 = ParamIndex::new(&shape, &p.into()).unwrap().collect();
        let mut k = 0;
        for o in 0..2 {
            for a in 0..5 {
                for i in 0..3 {
                    assert_eq!(idx.0[k], (o * 3 + a / 2) * 3 + i);
                    k += 1;
                }
            }
        }
        assert_eq!(k, 30);
    }

    /// A fixed-capacity collection (the crate is `no_std` without `alloc` in tests too).
    struct Vec2([usize; 64], usize);
    impl FromIterator<usize> for Vec2 {
        fn from_iter<I: IntoIterator<Item = usize>>(it: I) -> Self {
            let mut v = Vec2([0; 64], 0);
            for x in it {
                v.0[v.1] = x;
                v.1 += 1;
            }
            v
        }
    }
}

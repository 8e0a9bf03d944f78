//! Per-op glue: decode the op's parameter words, check them against its tensors (at load), and
//! run its kernel on arena slices (at invoke). Each family's file defines its parameter words
//! (`*Words`, written by the converter with `to_words` and read here with `read`), so the two
//! sides share one definition.

pub(crate) mod conv;
pub(crate) mod elementwise;
pub(crate) mod fully_connected;
pub(crate) mod lut;
pub(crate) mod pool;
pub(crate) mod quantize;
pub(crate) mod shape;

use super::arena::ReadOnly;
use super::params::Params;
use crate::kernels::{ActivationRange, Dims4, Rounding};
use crate::model::{DType, Model, OpInfo, OpKind, Quant, Storage, TensorInfo, ABSENT};
use crate::Error;

/// An arena region: `(offset, length)` in bytes.
pub(crate) type ArenaRange = (usize, usize);

pub use conv::{ConvWords, DepthwiseWords};
pub use elementwise::{AddWords, ConcatInputWords, MAX_CONCAT_INPUTS, MulWords, SoftmaxWords};
pub use fully_connected::FullyConnectedWords;
pub use pool::PoolWords;

/// Everything an op's glue needs to look at: the model, the op, and the rounding mode.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'x, 'm> {
    pub m: &'x Model<'m>,
    pub op: &'x OpInfo<'m>,
    pub rounding: Rounding,
}

impl<'m> Ctx<'_, 'm> {
    pub fn bad(&self, reason: &'static str) -> Error {
        Error::BadOp { index: self.op.index, reason }
    }

    pub fn params(&self) -> Params<'m> {
        Params::new(self.op.params(), self.op.index)
    }

    pub fn counts(&self, inputs: core::ops::RangeInclusive<usize>, outputs: usize) -> Result<(), Error> {
        if !inputs.contains(&self.op.num_inputs()) {
            return Err(self.bad("wrong number of inputs for its kind"));
        }
        if self.op.num_outputs() != outputs {
            return Err(self.bad("wrong number of outputs for its kind"));
        }
        Ok(())
    }

    /// Required input `k`.
    pub fn input(&self, k: usize) -> Result<TensorInfo<'m>, Error> {
        match self.op.input(k)? {
            ABSENT => Err(self.bad("a required input is absent")),
            t => self.m.tensor(t),
        }
    }

    /// Optional input `k` (absent, or beyond the op's inputs).
    pub fn opt_input(&self, k: usize) -> Result<Option<TensorInfo<'m>>, Error> {
        if k >= self.op.num_inputs() {
            return Ok(None);
        }
        match self.op.input(k)? {
            ABSENT => Ok(None),
            t => self.m.tensor(t).map(Some),
        }
    }

    pub fn output(&self) -> Result<TensorInfo<'m>, Error> {
        self.m.tensor(self.op.output(0)?)
    }

    /// A constant input's data as `T` (dtype checked).
    pub fn const_of<T: bytemuck::Pod>(&self, t: &TensorInfo<'m>, dtype: DType) -> Result<&'m [T], Error> {
        if t.dtype != dtype {
            return Err(self.bad("a constant input has the wrong dtype"));
        }
        t.const_data::<T>().map_err(|_| self.bad("an input that must be constant is not"))
    }

    /// The arena region of an activation.
    pub fn region(&self, t: &TensorInfo<'m>) -> Result<(usize, usize), Error> {
        match t.storage {
            Storage::Arena(off) => Ok((off as usize, t.byte_len as usize)),
            Storage::Const(_) => Err(self.bad("the output is stored as a constant")),
        }
    }

    /// The op's scratch region in the arena.
    pub fn scratch(&self) -> (usize, usize) {
        (self.op.scratch_offset as usize, self.op.scratch_len as usize)
    }

    /// The arena regions of the op's output and of its scratch.
    pub fn out_and_scratch(&self) -> Result<(ArenaRange, ArenaRange), Error> {
        Ok((self.region(&self.output()?)?, self.scratch()))
    }
}

/// The bytes of a tensor, wherever it lives: the model (constant) or the read-only arena.
pub(crate) fn bytes_of<'c>(t: &TensorInfo<'c>, ro: &ReadOnly<'c>, op: u32) -> Result<&'c [u8], Error> {
    match t.storage {
        Storage::Const(_) => t.const_bytes().ok_or(Error::BadTensor { index: t.index, reason: "outside the model" }),
        Storage::Arena(off) => ro.get(off as usize, t.byte_len as usize, op),
    }
}

pub(crate) fn as_i8(b: &[u8]) -> &[i8] {
    bytemuck::cast_slice(b)
}

pub(crate) fn as_pod<T: bytemuck::Pod>(b: &[u8], op: u32) -> Result<&[T], Error> {
    bytemuck::try_cast_slice(b).map_err(|_| Error::Misaligned { what: "tensor data", offset: op as u64 })
}

pub(crate) fn as_pod_mut<T: bytemuck::Pod>(b: &mut [u8], op: u32) -> Result<&mut [T], Error> {
    bytemuck::try_cast_slice_mut(b).map_err(|_| Error::Misaligned { what: "tensor data", offset: op as u64 })
}

/// A 4-D tensor's shape as NHWC.
pub(crate) fn dims4(ctx: &Ctx, t: &TensorInfo) -> Result<Dims4, Error> {
    match t.dims() {
        &[n, h, w, c] => Ok(Dims4::new(n as usize, h as usize, w as usize, c as usize)),
        _ => Err(ctx.bad("a tensor that must be 4-D (NHWC) is not")),
    }
}

/// The activation clamp stored as two words, checked against the dtype's range.
pub(crate) fn read_activation(ctx: &Ctx, p: &mut Params, dtype: DType) -> Result<ActivationRange, Error> {
    let (min, max) = (p.i32()?, p.i32()?);
    let (lo, hi) = match dtype {
        DType::I8 => (i8::MIN as i32, i8::MAX as i32),
        DType::I16 => (i16::MIN as i32, i16::MAX as i32),
        _ => return Err(ctx.bad("activation clamp on a non-integer tensor")),
    };
    if min > max || min < lo || max > hi {
        return Err(ctx.bad("activation clamp outside the output type"));
    }
    Ok(ActivationRange { min, max })
}

/// The shape as a `usize` array (rank <= 6).
pub(crate) fn shape_of(t: &TensorInfo) -> ([usize; 6], usize) {
    let mut d = [0usize; 6];
    for (o, &i) in d.iter_mut().zip(t.dims()) {
        *o = i as usize;
    }
    (d, t.dims().len())
}

/// Checks op `i` of `m` completely, so that [`eval`] cannot fail on it.
pub(crate) fn validate(m: &Model, i: u32, rounding: Rounding) -> Result<(), Error> {
    let op = m.op(i)?;
    let ctx = Ctx { m, op: &op, rounding };
    match op.kind {
        OpKind::Conv2d => conv::validate_conv(&ctx),
        OpKind::DepthwiseConv2d => conv::validate_depthwise(&ctx),
        OpKind::FullyConnected => fully_connected::validate(&ctx),
        OpKind::MaxPool2d | OpKind::AvgPool2d => pool::validate(&ctx),
        OpKind::Add => elementwise::validate_add(&ctx),
        OpKind::Mul => elementwise::validate_mul(&ctx),
        OpKind::Softmax => elementwise::validate_softmax(&ctx),
        OpKind::Concatenation => elementwise::validate_concat(&ctx),
        OpKind::Mean => elementwise::validate_mean(&ctx),
        OpKind::Logistic | OpKind::Tanh | OpKind::HardSwish => lut::validate(&ctx),
        OpKind::Reshape => shape::validate_reshape(&ctx),
        OpKind::Pad => shape::validate_pad(&ctx),
        OpKind::Transpose => shape::validate_transpose(&ctx),
        OpKind::Quantize => quantize::validate(&ctx),
        _ => Err(Error::UnsupportedOp { index: i, code: op.kind.code() }),
    }
}

/// Runs `op` on `arena`; [`validate`] has accepted it.
pub(crate) fn eval(m: &Model, op: &OpInfo, arena: &mut [u8], rounding: Rounding) -> Result<(), Error> {
    let ctx = Ctx { m, op, rounding };
    match op.kind {
        OpKind::Conv2d => conv::eval_conv(&ctx, arena),
        OpKind::DepthwiseConv2d => conv::eval_depthwise(&ctx, arena),
        OpKind::FullyConnected => fully_connected::eval(&ctx, arena),
        OpKind::MaxPool2d | OpKind::AvgPool2d => pool::eval(&ctx, arena),
        OpKind::Add => elementwise::eval_add(&ctx, arena),
        OpKind::Mul => elementwise::eval_mul(&ctx, arena),
        OpKind::Softmax => elementwise::eval_softmax(&ctx, arena),
        OpKind::Concatenation => elementwise::eval_concat(&ctx, arena),
        OpKind::Mean => elementwise::eval_mean(&ctx, arena),
        OpKind::Logistic | OpKind::Tanh | OpKind::HardSwish => lut::eval(&ctx, arena),
        OpKind::Reshape => shape::eval_reshape(&ctx, arena),
        OpKind::Pad => shape::eval_pad(&ctx, arena),
        OpKind::Transpose => shape::eval_transpose(&ctx, arena),
        OpKind::Quantize => quantize::eval(&ctx, arena),
        _ => Err(Error::UnsupportedOp { index: op.index, code: op.kind.code() }),
    }
}

/// Per-tensor quantization of a tensor as the kernels' `TensorQuant`.
pub(crate) fn tensor_quant(ctx: &Ctx, t: &TensorInfo) -> Result<crate::kernels::tensor::TensorQuant, Error> {
    match t.quant {
        Quant::PerTensor { scale, zero_point } => Ok(crate::kernels::tensor::TensorQuant::new(scale, zero_point)),
        _ => Err(ctx.bad("a tensor lacks per-tensor quantization")),
    }
}

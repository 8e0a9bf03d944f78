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

use super::arena::{ReadOnly, carve};
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

/// Checks op `i` of `m` completely (by preparing it), so that [`eval`] cannot fail on it.
pub(crate) fn validate(m: &Model, i: u32, rounding: Rounding) -> Result<(), Error> {
    prepare(m, i, rounding).map(|_| ())
}

/// Runs `op` on `arena`; [`validate`] has accepted it.
pub(crate) fn eval(m: &Model, op: &OpInfo, arena: &mut [u8], rounding: Rounding) -> Result<(), Error> {
    let ctx = Ctx { m, op, rounding };
    run_kernel(m, rounding, op.index, &prepare_kernel(&ctx)?, arena)
}

/// Where an op reads an input: constant bytes of the model, or a region of the arena.
#[derive(Clone, Copy)]
pub(crate) enum Src<'m> {
    Const(&'m [u8]),
    Arena(ArenaRange),
}

impl<'m> Src<'m> {
    /// The source of tensor `t`'s bytes.
    pub(crate) fn of(t: &TensorInfo<'m>) -> Result<Self, Error> {
        match t.storage {
            Storage::Const(_) => t
                .const_bytes()
                .map(Src::Const)
                .ok_or(Error::BadTensor { index: t.index, reason: "outside the model" }),
            Storage::Arena(off) => Ok(Src::Arena((off as usize, t.byte_len as usize))),
        }
    }

    /// The bytes, from the model or the read-only arena.
    pub(crate) fn bytes<'c>(self, ro: &ReadOnly<'c>, op: u32) -> Result<&'c [u8], Error>
    where
        'm: 'c,
    {
        match self {
            Src::Const(b) => Ok(b),
            Src::Arena((off, len)) => ro.get(off, len, op),
        }
    }

    /// An optional operand (a bias): its dtype and source.
    pub(crate) fn of_opt(t: Option<&TensorInfo<'m>>) -> Result<Option<(DType, Self)>, Error> {
        t.map(|t| Ok((t.dtype, Src::of(t)?))).transpose()
    }

    /// [`Self::bytes`] of an optional operand, with its dtype.
    pub(crate) fn bytes_opt<'c>(s: Option<(DType, Self)>, ro: &ReadOnly<'c>, op: u32) -> Result<Option<(DType, &'c [u8])>, Error>
    where
        'm: 'c,
    {
        s.map(|(d, s)| Ok((d, s.bytes(ro, op)?))).transpose()
    }
}

/// An op whose parameter words, tensors and quantization have been read and checked once
/// ([`Interpreter::prepare_op`](crate::interp::Interpreter::prepare_op)), so that running it
/// ([`Interpreter::invoke_prepared`](crate::interp::Interpreter::invoke_prepared)) only carves
/// the arena and calls the kernel. It borrows the model's bytes (weights, multipliers) and
/// belongs to the model it was prepared from.
pub struct PreparedOp<'m> {
    pub(crate) index: u32,
    /// The address of the model's bytes: a prepared op runs only with the model it came from.
    pub(crate) model: usize,
    pub(crate) kind: OpKind,
    kernel: Kernel<'m>,
}

impl core::fmt::Debug for PreparedOp<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PreparedOp").field("index", &self.index).field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// The prepared form of each op kind: its kernel's parameters, its operands' sources and its
/// arena regions (output, scratch).
pub(crate) enum Kernel<'m> {
    Conv(conv::ConvOp<'m, crate::kernels::conv::ConvParams>, ArenaRange, ArenaRange),
    Depthwise(conv::ConvOp<'m, crate::kernels::depthwise_conv::DepthwiseConvParams>, ArenaRange, ArenaRange),
    FullyConnected(fully_connected::FcOp<'m>, ArenaRange, ArenaRange),
    Pool(pool::PoolOp<'m>, ArenaRange),
    Add(elementwise::AddOp<'m>, ArenaRange),
    Mul(elementwise::MulOp<'m>, ArenaRange),
    Softmax(elementwise::SoftmaxOp<'m>, ArenaRange),
    Mean(elementwise::MeanOp<'m>, ArenaRange, ArenaRange),
    Lut(lut::LutOp<'m>, ArenaRange),
    Reshape(shape::ReshapeOp),
    Pad(shape::PadOp<'m>, ArenaRange),
    Transpose(shape::TransposeOp<'m>, ArenaRange),
    Quantize(quantize::QuantizeOp<'m>, ArenaRange),
    /// Read again at every run (it has up to 16 inputs; rare in the models we meet).
    Concat,
}

fn prepare_kernel<'m>(ctx: &Ctx<'_, 'm>) -> Result<Kernel<'m>, Error> {
    let out = || ctx.region(&ctx.output()?);
    Ok(match ctx.op.kind {
        OpKind::Conv2d => Kernel::Conv(conv::prepare_conv(ctx)?, out()?, ctx.scratch()),
        OpKind::DepthwiseConv2d => Kernel::Depthwise(conv::prepare_depthwise(ctx)?, out()?, ctx.scratch()),
        OpKind::FullyConnected => Kernel::FullyConnected(fully_connected::prepare_op(ctx)?, out()?, ctx.scratch()),
        OpKind::MaxPool2d | OpKind::AvgPool2d => Kernel::Pool(pool::prepare_op(ctx)?, out()?),
        OpKind::Add => Kernel::Add(elementwise::prepare_add(ctx)?, out()?),
        OpKind::Mul => Kernel::Mul(elementwise::prepare_mul(ctx)?, out()?),
        OpKind::Softmax => Kernel::Softmax(elementwise::prepare_softmax(ctx)?, out()?),
        OpKind::Concatenation => {
            elementwise::validate_concat(ctx)?;
            out()?;
            Kernel::Concat
        }
        OpKind::Mean => Kernel::Mean(elementwise::prepare_mean(ctx)?, out()?, ctx.scratch()),
        OpKind::Logistic | OpKind::Tanh | OpKind::HardSwish => Kernel::Lut(lut::prepare_op(ctx)?, out()?),
        OpKind::Reshape => Kernel::Reshape(shape::prepare_reshape(ctx)?),
        OpKind::Pad => Kernel::Pad(shape::prepare_pad(ctx)?, out()?),
        OpKind::Transpose => Kernel::Transpose(shape::prepare_transpose(ctx)?, out()?),
        OpKind::Quantize => Kernel::Quantize(quantize::prepare_op(ctx)?, out()?),
        _ => return Err(Error::UnsupportedOp { index: ctx.op.index, code: ctx.op.kind.code() }),
    })
}

/// An op's writable arena regions (output, scratch) and read-only views of the rest.
pub(crate) type Carved<'b> = (&'b mut [u8], &'b mut [u8], ReadOnly<'b>);

/// Runs the prepared kernel of op `idx` of `m` on `arena`.
fn run_kernel(m: &Model, rounding: Rounding, idx: u32, k: &Kernel, arena: &mut [u8]) -> Result<(), Error> {
    let none = (0, 0);
    match k {
        Kernel::Conv(o, out, scratch) => conv::run_conv(o, carve(arena, *out, *scratch, idx)?, idx),
        Kernel::Depthwise(o, out, scratch) => conv::run_depthwise(o, carve(arena, *out, *scratch, idx)?, idx),
        Kernel::FullyConnected(o, out, scratch) => fully_connected::run(o, carve(arena, *out, *scratch, idx)?, idx),
        Kernel::Pool(o, out) => pool::run(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Add(o, out) => elementwise::run_add(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Mul(o, out) => elementwise::run_mul(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Softmax(o, out) => elementwise::run_softmax(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Mean(o, out, scratch) => elementwise::run_mean(o, carve(arena, *out, *scratch, idx)?, idx),
        Kernel::Lut(o, out) => lut::run(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Reshape(o) => shape::run_reshape(o, arena, idx),
        Kernel::Pad(o, out) => shape::run_pad(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Transpose(o, out) => shape::run_transpose(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Quantize(o, out) => quantize::run(o, carve(arena, *out, none, idx)?, idx),
        Kernel::Concat => elementwise::eval_concat(&Ctx { m, op: &m.op(idx)?, rounding }, arena),
    }
}

/// Prepares op `i` of `m` (checking it as [`validate`] does).
pub(crate) fn prepare<'m>(m: &Model<'m>, i: u32, rounding: Rounding) -> Result<PreparedOp<'m>, Error> {
    let op = m.op(i)?;
    let ctx = Ctx { m, op: &op, rounding };
    let kernel = prepare_kernel(&ctx)?;
    Ok(PreparedOp { index: i, model: m.bytes().as_ptr() as usize, kind: op.kind, kernel })
}

/// Runs a prepared op of `m` on `arena`.
pub(crate) fn run_prepared(m: &Model, p: &PreparedOp, arena: &mut [u8], rounding: Rounding) -> Result<(), Error> {
    if p.model != m.bytes().as_ptr() as usize {
        return Err(Error::BadOp { index: p.index, reason: "prepared from another model" });
    }
    run_kernel(m, rounding, p.index, &p.kernel, arena)
}

/// Per-tensor quantization of a tensor as the kernels' `TensorQuant`.
pub(crate) fn tensor_quant(ctx: &Ctx, t: &TensorInfo) -> Result<crate::kernels::tensor::TensorQuant, Error> {
    match t.quant {
        Quant::PerTensor { scale, zero_point } => Ok(crate::kernels::tensor::TensorQuant::new(scale, zero_point)),
        _ => Err(ctx.bad("a tensor lacks per-tensor quantization")),
    }
}

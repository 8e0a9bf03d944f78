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
use crate::Error;
use crate::kernels::{ActivationRange, Dims4, Rounding};
use crate::model::{ABSENT, DType, Model, OpInfo, OpKind, Quant, Storage, TensorInfo};

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
            Storage::Const(_) => {
                t.const_bytes().map(Src::Const).ok_or(Error::BadTensor { index: t.index, reason: "outside the model" })
            }
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
    pub(crate) fn bytes_opt<'c>(
        s: Option<(DType, Self)>,
        ro: &ReadOnly<'c>,
        op: u32,
    ) -> Result<Option<(DType, &'c [u8])>, Error>
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
    /// Its arena regions: output, scratch (`(0, 0)` for kinds without one).
    regions: (ArenaRange, ArenaRange),
    kernel: Kernel<'m>,
}

impl core::fmt::Debug for PreparedOp<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PreparedOp").field("index", &self.index).field("kind", &self.kind).finish_non_exhaustive()
    }
}

/// An op's writable arena regions (output, scratch) and read-only views of the rest.
pub(crate) type Carved<'b> = (&'b mut [u8], &'b mut [u8], ReadOnly<'b>);

/// Each op kind once: its [`Kernel`] variant and prepared type, the functions that prepare and
/// run it, and whether it has a scratch region. From the list: `Kernel`, `prepare_kernel` and
/// `run_kernel` (the prepared path), and `eval` (the device's path: prepares the op's own kind
/// and runs it, so the stack holds that kind's prepared form only, not a `Kernel` sized for the
/// largest). RESHAPE (its input may be its output: no carving) and CONCATENATION (up to 16
/// inputs, read again at every run; rare in the models we meet) are written out beside.
macro_rules! op_kinds {
    ($($($kind:ident)|+ => $variant:ident($ty:ty), $prepare:path, $run:path, scratch: $scratch:expr;)*) => {
        /// The prepared form of each op kind: its kernel's parameters and its operands' sources.
        pub(crate) enum Kernel<'m> {
            $($variant($ty),)*
            Reshape(shape::ReshapeOp),
            Concat,
        }

        /// Whether ops of `kind` have a scratch region.
        fn has_scratch(kind: OpKind) -> bool {
            match kind {
                $($(OpKind::$kind)|+ => $scratch,)*
                _ => false,
            }
        }

        fn prepare_kernel<'m>(ctx: &Ctx<'_, 'm>) -> Result<Kernel<'m>, Error> {
            Ok(match ctx.op.kind {
                $($(OpKind::$kind)|+ => Kernel::$variant($prepare(ctx)?),)*
                OpKind::Reshape => Kernel::Reshape(shape::prepare_reshape(ctx)?),
                OpKind::Concatenation => {
                    elementwise::validate_concat(ctx)?;
                    Kernel::Concat
                }
                _ => return Err(Error::UnsupportedOp { index: ctx.op.index, code: ctx.op.kind.code() }),
            })
        }

        /// Runs prepared op `p` of `m` on `arena`.
        fn run_kernel(m: &Model, rounding: Rounding, p: &PreparedOp, arena: &mut [u8]) -> Result<(), Error> {
            let (idx, (out, scratch)) = (p.index, p.regions);
            match &p.kernel {
                $(Kernel::$variant(o) => run_one::<family::$variant>(o, carve(arena, out, scratch, idx)?, idx),)*
                Kernel::Reshape(o) => shape::run_reshape(o, arena, idx),
                Kernel::Concat => elementwise::eval_concat(&Ctx { m, op: &m.op(idx)?, rounding }, arena),
            }
        }

        /// Runs `op` on `arena`; [`validate`] has accepted it. Never inlined: one copy of the
        /// dispatch and its kernels, however many places run ops (`invoke`, `invoke_profiled`,
        /// `run_op`), which keeps the device's code small.
        #[inline(never)]
        pub(crate) fn eval(m: &Model, op: &OpInfo, arena: &mut [u8], rounding: Rounding) -> Result<(), Error> {
            let ctx = Ctx { m, op, rounding };
            match op.kind {
                $($(OpKind::$kind)|+ => eval_one::<family::$variant>(&ctx, arena),)*
                OpKind::Reshape => shape::run_reshape(&shape::prepare_reshape(&ctx)?, arena, op.index),
                OpKind::Concatenation => elementwise::eval_concat(&ctx, arena),
                _ => Err(Error::UnsupportedOp { index: op.index, code: op.kind.code() }),
            }
        }

        /// A marker type per kind, naming its prepare and run functions for [`eval_one`].
        mod family {
            $(pub(super) struct $variant;)*
        }
        $(impl Family for family::$variant {
            type Op<'m> = $ty;
            fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<$ty, Error> {
                $prepare(ctx)
            }
            fn run(o: &Self::Op<'_>, carved: Carved, idx: u32) -> Result<(), Error> {
                $run(o, carved, idx)
            }
        })*
    };
}

op_kinds! {
    Conv2d => Conv(conv::ConvOp<'m, crate::kernels::conv::ConvParams>), conv::prepare_conv, conv::run_conv, scratch: true;
    DepthwiseConv2d => Depthwise(conv::ConvOp<'m, crate::kernels::depthwise_conv::DepthwiseConvParams>),
        conv::prepare_depthwise, conv::run_depthwise, scratch: true;
    FullyConnected => FullyConnected(fully_connected::FcOp<'m>), fully_connected::prepare_op, fully_connected::run, scratch: true;
    MaxPool2d | AvgPool2d => Pool(pool::PoolOp<'m>), pool::prepare_op, pool::run, scratch: false;
    Add => Add(elementwise::AddOp<'m>), elementwise::prepare_add, elementwise::run_add, scratch: false;
    Mul => Mul(elementwise::MulOp<'m>), elementwise::prepare_mul, elementwise::run_mul, scratch: false;
    Softmax => Softmax(elementwise::SoftmaxOp<'m>), elementwise::prepare_softmax, elementwise::run_softmax, scratch: false;
    Mean => Mean(elementwise::MeanOp<'m>), elementwise::prepare_mean, elementwise::run_mean, scratch: true;
    Logistic | Tanh | HardSwish => Lut(lut::LutOp<'m>), lut::prepare_op, lut::run, scratch: false;
    Pad => Pad(shape::PadOp<'m>), shape::prepare_pad, shape::run_pad, scratch: false;
    Transpose => Transpose(shape::TransposeOp<'m>), shape::prepare_transpose, shape::run_transpose, scratch: false;
    Quantize => Quantize(quantize::QuantizeOp<'m>), quantize::prepare_op, quantize::run, scratch: false;
}

/// An op kind's prepare and run functions.
trait Family {
    type Op<'m>;
    fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<Self::Op<'m>, Error>;
    fn run(o: &Self::Op<'_>, carved: Carved, idx: u32) -> Result<(), Error>;
}

/// Prepares and runs one op of kind `F`: one function per kind (as the device's stack and
/// code size want), whose frame holds that kind's prepared form only.
fn eval_one<F: Family>(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let o = F::prepare(ctx)?;
    let (out, scratch) = regions(ctx)?;
    let idx = ctx.op.index;
    F::run(&o, carve(arena, out, scratch, idx)?, idx)
}

/// Runs one prepared op of kind `F`: one function per kind, never inlined into the dispatch
/// (a dispatch with every kernel inlined compiles to slower code in V8).
#[inline(never)]
fn run_one<F: Family>(o: &F::Op<'_>, carved: Carved, idx: u32) -> Result<(), Error> {
    F::run(o, carved, idx)
}

/// The arena regions of the op in `ctx`: its output, its scratch (`(0, 0)` for kinds without).
fn regions(ctx: &Ctx) -> Result<(ArenaRange, ArenaRange), Error> {
    let scratch = if has_scratch(ctx.op.kind) { ctx.scratch() } else { (0, 0) };
    Ok((ctx.region(&ctx.output()?)?, scratch))
}

/// Prepares op `i` of `m` (checking it as [`validate`] does).
pub(crate) fn prepare<'m>(m: &Model<'m>, i: u32, rounding: Rounding) -> Result<PreparedOp<'m>, Error> {
    let op = m.op(i)?;
    let ctx = Ctx { m, op: &op, rounding };
    let kernel = prepare_kernel(&ctx)?;
    Ok(PreparedOp { index: i, model: m.bytes().as_ptr() as usize, kind: op.kind, regions: regions(&ctx)?, kernel })
}

/// Runs a prepared op of `m` on `arena`.
pub(crate) fn run_prepared(m: &Model, p: &PreparedOp, arena: &mut [u8], rounding: Rounding) -> Result<(), Error> {
    if p.model != m.bytes().as_ptr() as usize {
        return Err(Error::BadOp { index: p.index, reason: "prepared from another model" });
    }
    run_kernel(m, rounding, p, arena)
}

/// Per-tensor quantization of a tensor as the kernels' `TensorQuant`.
pub(crate) fn tensor_quant(ctx: &Ctx, t: &TensorInfo) -> Result<crate::kernels::tensor::TensorQuant, Error> {
    match t.quant {
        Quant::PerTensor { scale, zero_point } => Ok(crate::kernels::tensor::TensorQuant::new(scale, zero_point)),
        _ => Err(ctx.bad("a tensor lacks per-tensor quantization")),
    }
}

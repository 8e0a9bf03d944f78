//! Per-op glue, one file per kernel of `crate::kernels` (`conv.rs` runs `kernels/conv.rs`, ...):
//! each reads its op's parameter words ([`crate::model::words`]) and tensors, checks them (at
//! load) and runs its kernel on arena slices (at invoke). Every file has the same three items:
//! the prepared type (`ConvOp`, ...), `prepare` (read and check) and `run` (call the kernel on the
//! carved arena). What several files share is in `common.rs`. The one table below (`op_kinds!
//! { ... }`) maps each op kind to its file.

mod abs;
mod add;
mod batch_matmul;
mod common;
mod concat;
mod conv;
mod depth_to_space;
mod depthwise_conv;
mod div;
mod fully_connected;
mod gather;
mod in_place;
mod leaky_relu;
mod lstm;
mod lut;
mod minimum_maximum;
mod mirror_pad;
mod mul;
mod pad;
mod pooling;
mod prelu;
mod reduce;
mod reduce_max;
mod relu;
mod requantize;
mod reshape;
mod resize;
mod rsqrt;
mod slice;
mod softmax;
mod squared_difference;
mod sub;
mod tile;
mod transpose;
mod transpose_conv;

use super::arena::{Pieces, carve};
use super::op_set::OpSet;
use crate::Error;
use crate::kernels::Rounding;
use crate::model::{Model, OpInfo, OpKind, Storage};
use common::{ArenaRange, Carved, Ctx};

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

/// The call of a module's `run`: with the op set (`gated`: its 16x8 kernels are left out of a set
/// without int16) or without.
macro_rules! run_call {
    (gated; $m:ident, $s:ident, $($a:expr),*) => {
        $m::run::<$s>($($a),*)
    };
    (; $m:ident, $s:ident, $($a:expr),*) => {
        $m::run($($a),*)
    };
}

/// Each op kind once: its [`Kernel`] variant, the file (module) that prepares and runs it (its
/// prepared type, `prepare` and `run`), and whether it has a scratch region. From the list:
/// `Kernel`, `prepare_kernel` and `run_kernel` (the prepared path), and `eval` (the device's path:
/// prepares the op's own kind and runs it, so the stack holds that kind's prepared form only, not
/// a `Kernel` sized for the largest). RESHAPE (its input may be its output: no carving) and
/// CONCATENATION (up to 16 inputs, read again at every run; rare in the models we meet) are
/// written out beside.
macro_rules! op_kinds {
    ($($($kind:ident)|+ => $variant:ident($module:ident::$ty:ident), scratch: $scratch:expr $(, $int16:ident)?;)*) => {
        /// The prepared form of each op kind: its kernel's parameters and its operands' sources.
        pub(crate) enum Kernel<'m> {
            $($variant($module::$ty<'m>),)*
            Reshape(reshape::ReshapeOp),
            Concat,
        }

        /// Whether ops of `kind` have a scratch region.
        fn has_scratch(kind: OpKind) -> bool {
            match kind {
                $($(OpKind::$kind)|+ => $scratch,)*
                _ => false,
            }
        }

        /// Prepares the op in `ctx`. Each kind's arm is there only when `S` holds the kind (a
        /// constant test), so a family outside the set is never referenced and not linked.
        fn prepare_kernel<'m, S: OpSet>(ctx: &Ctx<'_, 'm>) -> Result<Kernel<'m>, Error> {
            if !S::KINDS.contains(ctx.op.kind) {
                return Err(Error::OpNotInSet { index: ctx.op.index, kind: ctx.op.kind });
            }
            if const { !S::KINDS.int16() } && ctx.computes_in_int16()? {
                return Err(Error::Int16NotInSet { index: ctx.op.index });
            }
            if const { !S::KINDS.int4() } && ctx.has_int4_weights()? {
                return Err(Error::Int4NotInSet { index: ctx.op.index });
            }
            Ok(match ctx.op.kind {
                $($(OpKind::$kind)|+ if const { in_set::<S>(&[$(OpKind::$kind),+]) } => Kernel::$variant($module::prepare(ctx)?),)*
                OpKind::Reshape if const { S::KINDS.contains(OpKind::Reshape) } => Kernel::Reshape(reshape::prepare(ctx)?),
                OpKind::Concatenation if const { S::KINDS.contains(OpKind::Concatenation) } => {
                    concat::validate(ctx)?;
                    Kernel::Concat
                }
                _ => return Err(Error::UnsupportedOp { index: ctx.op.index, code: ctx.op.kind.code() }),
            })
        }

        /// Runs prepared op `p` of `m` on `arena` (families outside `S` as in [`prepare_kernel`]).
        fn run_kernel<S: OpSet>(m: &Model, rounding: Rounding, p: &PreparedOp, arena: &mut [u8]) -> Result<(), Error> {
            let (idx, (out, scratch)) = (p.index, p.regions);
            match &p.kernel {
                $(Kernel::$variant(o) if const { in_set::<S>(&[$(OpKind::$kind),+]) } => {
                    run_one::<S, family::$variant>(o, carve(arena, out, scratch, idx)?, idx)
                })*
                Kernel::Reshape(o) if const { S::KINDS.contains(OpKind::Reshape) } => reshape::run(o, arena, idx),
                Kernel::Concat if const { S::KINDS.contains(OpKind::Concatenation) } => {
                    concat::eval(&Ctx { m, op: &m.op(idx)?, rounding }, arena)
                }
                _ => Err(Error::OpNotInSet { index: idx, kind: p.kind }),
            }
        }

        /// Runs `op` on `arena`; [`validate`] has accepted it. Never inlined: one copy of the
        /// dispatch and its kernels, however many places run ops (`invoke`, `invoke_profiled`,
        /// `run_op`), which keeps the device's code small.
        #[inline(never)]
        pub(crate) fn eval<S: OpSet>(m: &Model, op: &OpInfo, arena: &mut [u8], rounding: Rounding) -> Result<(), Error> {
            let ctx = Ctx { m, op, rounding };
            match op.kind {
                $($(OpKind::$kind)|+ if const { in_set::<S>(&[$(OpKind::$kind),+]) } => eval_one::<S, family::$variant>(&ctx, arena),)*
                OpKind::Reshape if const { S::KINDS.contains(OpKind::Reshape) } => eval_reshape(&ctx, arena),
                OpKind::Concatenation if const { S::KINDS.contains(OpKind::Concatenation) } => concat::eval(&ctx, arena),
                k if !S::KINDS.contains(k) => Err(Error::OpNotInSet { index: op.index, kind: k }),
                _ => Err(Error::UnsupportedOp { index: op.index, code: op.kind.code() }),
            }
        }

        /// A marker type per kind, naming its prepare and run functions for [`eval_one`].
        mod family {
            $(pub(super) struct $variant;)*
        }
        $(impl Family for family::$variant {
            type Op<'m> = $module::$ty<'m>;
            // Not inlined: the reading and checking's locals stay in this frame, gone when the
            // kernel runs ([`eval_one`]).
            #[inline(never)]
            fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<Self::Op<'m>, Error> {
                $module::prepare(ctx)
            }
            fn run<S: OpSet>(o: &Self::Op<'_>, carved: Carved, idx: u32) -> Result<(), Error> {
                run_call!($($int16)?; $module, S, o, carved, idx)
            }
        })*
    };
}

op_kinds! {
    Conv2d => Conv(conv::ConvOp), scratch: true, gated;
    DepthwiseConv2d => DepthwiseConv(depthwise_conv::DepthwiseConvOp), scratch: true, gated;
    FullyConnected => FullyConnected(fully_connected::FullyConnectedOp), scratch: true, gated;
    MaxPool2d | AvgPool2d => Pool(pooling::PoolOp), scratch: false, gated;
    Add => Add(add::AddOp), scratch: false, gated;
    Mul => Mul(mul::MulOp), scratch: false, gated;
    Softmax => Softmax(softmax::SoftmaxOp), scratch: false, gated;
    Mean | Sum => Mean(reduce::MeanOp), scratch: true, gated;
    ReduceMax => ReduceMax(reduce_max::ReduceMaxOp), scratch: false;
    Logistic | Tanh | HardSwish | Lut | Elu => Lut(lut::LutOp), scratch: false;
    Pad => Pad(pad::PadOp), scratch: false;
    Transpose => Transpose(transpose::TransposeOp), scratch: false;
    Quantize => Requantize(requantize::RequantizeOp), scratch: false;
    ResizeNearestNeighbor | ResizeBilinear => Resize(resize::ResizeOp), scratch: false;
    StridedSlice => Slice(slice::SliceOp), scratch: false;
    DepthToSpace | SpaceToDepth => SpaceDepth(depth_to_space::SpaceDepthOp), scratch: false;
    Sub => Sub(sub::SubOp), scratch: false, gated;
    Minimum | Maximum => MinMax(minimum_maximum::MinMaxOpPrepared), scratch: false;
    Prelu => Prelu(prelu::PreluOp), scratch: false;
    LeakyRelu => LeakyRelu(leaky_relu::LeakyReluOp), scratch: false;
    Relu => Relu(relu::ReluOp), scratch: false;
    Abs | Neg => Sign(abs::SignOp), scratch: false;
    Rsqrt => Rsqrt(rsqrt::RsqrtOp), scratch: false;
    Div => Div(div::DivOp), scratch: false;
    SquaredDifference => SquaredDifference(squared_difference::SquaredDifferenceOp), scratch: false;
    MirrorPad => MirrorPad(mirror_pad::MirrorPadOp), scratch: false;
    Gather => Gather(gather::GatherOp), scratch: false;
    Tile => Tile(tile::TileOp), scratch: false;
    Lstm => Lstm(lstm::LstmOp), scratch: true, gated;
    TransposeConv => TransposeConv(transpose_conv::TransposeConvOp), scratch: true, gated;
    BatchMatMul => BatchMatMul(batch_matmul::BatchMatMulOp), scratch: false, gated;
}

/// Whether `S` holds any of `kinds` (a family's): a constant once `S` is known.
#[inline(always)]
const fn in_set<S: OpSet>(kinds: &[OpKind]) -> bool {
    let mut i = 0;
    while i < kinds.len() {
        if S::KINDS.contains(kinds[i]) {
            return true;
        }
        i += 1;
    }
    false
}

/// Sets the state of every stateful op of `m` (the LSTMs' scratch regions) in `arena` to its
/// start value (TFLite Micro's reset of its variable tensors). Ops were validated.
pub(crate) fn reset_states<S: OpSet>(m: &Model, arena: &mut [u8], rounding: Rounding) -> Result<(), Error> {
    if const { !S::KINDS.contains(OpKind::Lstm) } {
        return Ok(());
    }
    for i in 0..m.num_ops() as u32 {
        let op = m.op(i)?;
        if op.kind == OpKind::Lstm {
            let ctx = Ctx { m, op: &op, rounding };
            let o = lstm::prepare(&ctx)?;
            let (out, scratch) = regions(&ctx)?;
            let (_, state, _) = carve(arena, out, scratch, i)?;
            lstm::reset(&o, state, i)?;
        }
    }
    Ok(())
}

/// An op kind's prepare and run functions.
trait Family {
    type Op<'m>;
    fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<Self::Op<'m>, Error>;
    /// Runs the prepared op; `S` leaves the 16x8 kernels out unless it has int16.
    fn run<S: OpSet>(o: &Self::Op<'_>, carved: Carved, idx: u32) -> Result<(), Error>;
}

/// Prepares and runs one op of kind `F`: one function per kind (as the device's stack and
/// code size want), whose frame holds that kind's prepared form only (its preparing is out of
/// line: [`Family::prepare`]). Never inlined: inlined into [`eval`]'s dispatch, every kind's
/// prepared form and locals would share one frame there (880 bytes on the Cortex-M4F), under
/// every kernel's.
#[inline(never)]
fn eval_one<S: OpSet, F: Family>(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let idx = ctx.op.index;
    // The prepared form is used where `prepare` wrote it: moved out of its `Result` (`?`), it
    // took a second slot of its size in this frame (176 bytes for a depthwise convolution on
    // the Cortex-M4F), under every kernel's frame.
    let prepared = F::prepare(ctx);
    let o = match &prepared {
        Ok(o) => o,
        Err(e) => return Err(*e),
    };
    let (out, scratch) = regions(ctx)?;
    F::run::<S>(o, carve(arena, out, scratch, idx)?, idx)
}

/// Prepares and runs a RESHAPE for [`eval`]. Not inlined: its prepared form stays out of the
/// dispatch's frame, under every other op's kernel.
#[inline(never)]
fn eval_reshape(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    reshape::run(&reshape::prepare(ctx)?, arena, ctx.op.index)
}

/// Runs one prepared op of kind `F`: one function per kind, never inlined into the dispatch
/// (a dispatch with every kernel inlined compiles to slower code in V8).
#[inline(never)]
fn run_one<S: OpSet, F: Family>(o: &F::Op<'_>, carved: Carved, idx: u32) -> Result<(), Error> {
    F::run::<S>(o, carved, idx)
}

/// The arena regions of the op in `ctx`: its output, its scratch (`(0, 0)` for kinds without).
/// An op that runs in place by chunks (a convolution) writes the span of its input and output.
fn regions(ctx: &Ctx) -> Result<(ArenaRange, ArenaRange), Error> {
    let scratch = if has_scratch(ctx.op.kind) { ctx.scratch() } else { (0, 0) };
    let y = ctx.region(&ctx.output()?)?;
    let by_chunks = ctx.op.chunk_rows() > 0 && matches!(ctx.op.kind, OpKind::Conv2d | OpKind::DepthwiseConv2d);
    if !by_chunks {
        return Ok((y, scratch));
    }
    let x = ctx.region(&ctx.input(0)?)?;
    Ok((in_place::span(x, y).ok_or_else(|| ctx.bad("in-place convolution outside the arena"))?, scratch))
}

/// Prepares op `i` of `m` (checking it as [`validate`] does).
pub(crate) fn prepare<'m, S: OpSet>(m: &Model<'m>, i: u32, rounding: Rounding) -> Result<PreparedOp<'m>, Error> {
    let op = m.op(i)?;
    let ctx = Ctx { m, op: &op, rounding };
    let kernel = prepare_kernel::<S>(&ctx)?;
    Ok(PreparedOp { index: i, model: m.bytes().as_ptr() as usize, kind: op.kind, regions: regions(&ctx)?, kernel })
}

/// Runs a prepared op of `m` on `arena`.
pub(crate) fn run_prepared<S: OpSet>(
    m: &Model,
    p: &PreparedOp,
    arena: &mut [u8],
    rounding: Rounding,
) -> Result<(), Error> {
    if p.model != m.bytes().as_ptr() as usize {
        return Err(Error::BadOp { index: p.index, reason: "prepared from another model" });
    }
    run_kernel::<S>(m, rounding, p, arena)
}

/// Checks op `i` of `m` completely, so that [`eval`] cannot fail on it: prepares it (its words,
/// tensors and quantization), then checks its arena regions as [`carve`] will split them at run
/// time: its output and scratch apart, inside the arena, and every input it reads from the
/// arena outside both ([`Error::ArenaOverlap`] otherwise).
pub(crate) fn validate<S: OpSet>(m: &Model, i: u32, rounding: Rounding) -> Result<(), Error> {
    let op = m.op(i)?;
    let ctx = Ctx { m, op: &op, rounding };
    let kernel = prepare_kernel::<S>(&ctx)?;
    let (out, scratch) = regions(&ctx)?;
    let Some(pieces) = Pieces::around(m.arena_len(), out, scratch) else {
        return Err(Error::ArenaOverlap { op: i, tensor: op.output(0)? });
    };
    // Input 0 of an op that runs where its input stands (a table lookup in place, an aliased
    // reshape) is not read from the read-only arena.
    let in_place = match &kernel {
        Kernel::Lut(o) => o.in_place(),
        Kernel::Reshape(o) => o.aliased(),
        Kernel::Conv(o) => o.runs_in_place(),
        Kernel::DepthwiseConv(o) => o.runs_in_place(),
        _ => false,
    };
    for k in usize::from(in_place)..op.num_inputs() {
        if let Some(t) = ctx.opt_input(k)? {
            if let Storage::Arena(off) = t.storage {
                if !pieces.hold((off as usize, t.byte_len as usize)) {
                    return Err(Error::ArenaOverlap { op: i, tensor: t.index });
                }
            }
        }
    }
    Ok(())
}

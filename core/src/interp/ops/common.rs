//! What the ops' glue shares: the op's context ([`Ctx`]: its model, record and rounding), where
//! operands live ([`Src`]), byte views of tensors, the parameter words every family reads the same
//! way (activation clamps, multipliers, lists), and the prepared forms and checks that several
//! kinds share: binary ops (ADD, MUL), unary ops (SOFTMAX, MEAN), convolution windows (CONV_2D,
//! DEPTHWISE_CONV_2D).

use crate::Error;
use crate::interp::arena::ReadOnly;
use crate::kernels::common::{Hw, Padding, PaddingValues, compute_window};
use crate::kernels::int4;
use crate::kernels::row_chunks::ChunkedWindow;
use crate::kernels::tensor::{Broadcast, MAX_DIMS};
use crate::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
use crate::model::words::WordReader;
use crate::model::{ABSENT, ElementType, Model, OpInfo, Quant, Storage, TensorInfo};
use crate::requant::QuantizedMultiplier;

use super::in_place::{self, InPlace};

/// An arena region: `(offset, length)` in bytes.
pub(crate) type ArenaRange = (usize, usize);

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

    pub fn params(&self) -> WordReader<'m> {
        WordReader::new(self.op.params(), self.op.index)
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

    /// Whether the op has an int4 input (packed int4 weights).
    pub fn has_int4_weights(&self) -> Result<bool, Error> {
        for k in 0..self.op.num_inputs() {
            if self.opt_input(k)?.is_some_and(|t| t.dtype == ElementType::I4) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether the op computes with int16 activations (16x8): an int16 activation among its
    /// arena inputs or its outputs (constants such as int16 tables do not count).
    pub fn computes_in_int16(&self) -> Result<bool, Error> {
        for k in 0..self.op.num_inputs() {
            if let Some(t) = self.opt_input(k)? {
                if t.dtype == ElementType::I16 && matches!(t.storage, Storage::Arena(_)) {
                    return Ok(true);
                }
            }
        }
        for k in 0..self.op.num_outputs() {
            if self.m.tensor(self.op.output(k)?)?.dtype == ElementType::I16 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A constant input's data as `T` (dtype checked).
    pub fn const_of<T: bytemuck::Pod>(&self, t: &TensorInfo<'m>, dtype: ElementType) -> Result<&'m [T], Error> {
        if t.dtype != dtype {
            return Err(self.bad("a constant input has the wrong dtype"));
        }
        t.const_data::<T>().map_err(|_| self.bad("an input that must be constant is not"))
    }

    /// Input `k`, a constant of `dtype`, as values. Not inlined: the tensor's description stays
    /// in this frame, not in the caller's (the prepare path runs under the interpreter's
    /// frames on the device's stack).
    #[inline(never)]
    pub fn const_input<T: bytemuck::Pod>(&self, k: usize, dtype: ElementType) -> Result<&'m [T], Error> {
        self.const_of(&self.input(k)?, dtype)
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
}

/// An op's writable arena regions (output, scratch) and read-only views of the rest.
pub(crate) type Carved<'b> = (&'b mut [u8], &'b mut [u8], ReadOnly<'b>);

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
pub(crate) fn read_activation(ctx: &Ctx, p: &mut WordReader, dtype: ElementType) -> Result<ActivationRange, Error> {
    let (min, max) = (p.i32()?, p.i32()?);
    let (lo, hi) = match dtype {
        ElementType::I8 => (i8::MIN as i32, i8::MAX as i32),
        ElementType::I16 => (i16::MIN as i32, i16::MAX as i32),
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
    pub(crate) fn of_opt(t: Option<&TensorInfo<'m>>) -> Result<Option<(ElementType, Self)>, Error> {
        t.map(|t| Ok((t.dtype, Src::of(t)?))).transpose()
    }

    /// [`Self::bytes`] of an optional operand, with its dtype.
    pub(crate) fn bytes_opt<'c>(
        s: Option<(ElementType, Self)>,
        ro: &ReadOnly<'c>,
        op: u32,
    ) -> Result<Option<(ElementType, &'c [u8])>, Error>
    where
        'm: 'c,
    {
        s.map(|(d, s)| Ok((d, s.bytes(ro, op)?))).transpose()
    }
}

/// Per-tensor quantization of a tensor as the kernels' `PerTensorQuant`.
pub(crate) fn tensor_quant(ctx: &Ctx, t: &TensorInfo) -> Result<crate::kernels::tensor::PerTensorQuant, Error> {
    match t.quant {
        Quant::PerTensor { scale, zero_point } => Ok(crate::kernels::tensor::PerTensorQuant::new(scale, zero_point)),
        _ => Err(ctx.bad("a tensor lacks per-tensor quantization")),
    }
}

// ---- Parameter words read the same way by several kinds ----

/// A `(multiplier, shift)` pair of words.
pub(crate) fn qm(p: &mut WordReader) -> Result<QuantizedMultiplier, Error> {
    Ok(QuantizedMultiplier { multiplier: p.i32()?, shift: p.i32()? })
}

/// A list of words after a rank word: `rank` values, or `2 * rank` for `pairs` (PAD, TRANSPOSE).
pub(crate) fn read_list(ctx: &Ctx, pairs: bool) -> Result<([i32; 2 * MAX_DIMS], usize), Error> {
    let mut p = ctx.params();
    let rank = p.usize_max(MAX_DIMS, "rank above 6")?;
    let n = if pairs { 2 * rank } else { rank };
    let mut v = [0i32; 2 * MAX_DIMS];
    for slot in v.iter_mut().take(n) {
        *slot = p.i32()?;
    }
    Ok((v, rank))
}

// ---- Binary ops: ADD, MUL ----

/// The two inputs and the output of a binary op, checked: int8 or int16 alike, shapes that
/// broadcast to the output's.
pub(crate) fn binary_operands<'m>(
    ctx: &Ctx<'_, 'm>,
) -> Result<(TensorInfo<'m>, TensorInfo<'m>, TensorInfo<'m>, Broadcast), Error> {
    ctx.counts(2..=2, 1)?;
    let (a, b, y) = (ctx.input(0)?, ctx.input(1)?, ctx.output()?);
    if a.dtype != y.dtype || b.dtype != y.dtype || !matches!(y.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("inputs and output must all be int8 or all int16"));
    }
    let (sa, ra) = shape_of(&a);
    let (sb, rb) = shape_of(&b);
    let bc = Broadcast::new(&sa[..ra], &sb[..rb]).map_err(|_| ctx.bad("input shapes do not broadcast"))?;
    let (sy, ry) = shape_of(&y);
    if bc.output_shape().dims() != &sy[..ry] {
        return Err(ctx.bad("output shape is not the broadcast of the input shapes"));
    }
    Ok((a, b, y, bc))
}

/// [`binary_operands`]' output element type and broadcast (the same checks), for the ops that
/// read nothing else of the tensors, without holding the three tensors' descriptions at once
/// (the prepare path runs under the interpreter's frames on the device's stack).
pub(crate) fn binary_shapes(ctx: &Ctx<'_, '_>) -> Result<(ElementType, Broadcast), Error> {
    ctx.counts(2..=2, 1)?;
    // Each tensor's description read in its own frame ([`dtype_shape`]): as [`binary_operands`].
    let (da, sa, ra) = dtype_shape(ctx, Some(0))?;
    let (db, sb, rb) = dtype_shape(ctx, Some(1))?;
    let (dy, sy, ry) = dtype_shape(ctx, None)?;
    if da != dy || db != dy || !matches!(dy, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("inputs and output must all be int8 or all int16"));
    }
    let bc = Broadcast::new(sa.get(..ra).unwrap_or(&[]), sb.get(..rb).unwrap_or(&[]))
        .map_err(|_| ctx.bad("input shapes do not broadcast"))?;
    if bc.output_shape().dims() != sy.get(..ry).unwrap_or(&[]) {
        return Err(ctx.bad("output shape is not the broadcast of the input shapes"));
    }
    Ok((dy, bc))
}

/// The element type and shape ([`shape_of`]) of input `k` (the output for `None`). Not
/// inlined: the tensor's description stays in this frame.
#[inline(never)]
fn dtype_shape(ctx: &Ctx<'_, '_>, k: Option<usize>) -> Result<(ElementType, [usize; 6], usize), Error> {
    let t = match k {
        Some(k) => ctx.input(k)?,
        None => ctx.output()?,
    };
    let (s, r) = shape_of(&t);
    Ok((t.dtype, s, r))
}

/// The values of an int8 or int16 tensor.
pub(crate) fn int_range(dtype: ElementType) -> (i64, i64) {
    match dtype {
        ElementType::I8 => (i8::MIN.into(), i8::MAX.into()),
        _ => (i16::MIN.into(), i16::MAX.into()),
    }
}

/// `[min, max]` of `offset + x` over the values `x` of `dtype`, where `offset` (an input's
/// `-zero_point`) must come from a zero point the type can hold.
pub(crate) fn offset_input_range(ctx: &Ctx, offset: i32, dtype: ElementType) -> Result<(i64, i64), Error> {
    let (lo, hi) = int_range(dtype);
    let off = i64::from(offset);
    if !(-hi..=-lo).contains(&off) {
        return Err(ctx.bad("an input zero point is outside its type"));
    }
    Ok((lo + off, hi + off))
}

pub(crate) fn check_output_offset(ctx: &Ctx, offset: i32, dtype: ElementType) -> Result<(), Error> {
    let (lo, hi) = int_range(dtype);
    if !(lo..=hi).contains(&i64::from(offset)) {
        return Err(ctx.bad("the output zero point is outside its type"));
    }
    Ok(())
}

pub(crate) fn fits_i32(v: i64) -> bool {
    i64::from(i32::MIN) <= v && v <= i64::from(i32::MAX)
}

/// A binary op (ADD, MUL), prepared: the kernel's parameters and the two inputs.
pub(crate) struct BinaryOp<'m, P> {
    params: P,
    a: Src<'m>,
    b: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn binary_op<'m, P>(ctx: &Ctx<'_, 'm>, params: P) -> Result<BinaryOp<'m, P>, Error> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    Ok(BinaryOp { params, a: Src::of(&a)?, b: Src::of(&b)?, dtype: a.dtype })
}

/// A binary kernel of one element type: parameters, the two inputs, the output.
pub(crate) type BinaryKernel<P, T> = fn(&P, &[T], &[T], &mut [T]) -> Result<(), Error>;

impl<P> BinaryOp<'_, P> {
    /// Whether it computes in 16x8.
    pub(crate) fn is_int16(&self) -> bool {
        self.dtype != ElementType::I8
    }
}

/// Runs a prepared binary op with its int8 kernel `s8` or its int16 kernel `s16`.
#[inline(always)]
pub(crate) fn run_binary<P>(
    o: &BinaryOp<P>,
    carved: Carved,
    idx: u32,
    s8: BinaryKernel<P, i8>,
    s16: BinaryKernel<P, i16>,
) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let (ab, bb) = (o.a.bytes(&ro, idx)?, o.b.bytes(&ro, idx)?);
    match o.dtype {
        ElementType::I8 => s8(&o.params, as_i8(ab), as_i8(bb), bytemuck::cast_slice_mut(out)),
        _ => s16(&o.params, as_pod(ab, idx)?, as_pod(bb, idx)?, as_pod_mut(out, idx)?),
    }
}

// ---- Unary ops: SOFTMAX, MEAN ----

/// A unary op (SOFTMAX, MEAN), prepared: the kernel's parameters, the input, the output dtype.
pub(crate) struct UnaryOp<'m, P> {
    pub(crate) params: P,
    pub(crate) x: Src<'m>,
    pub(crate) x_dtype: ElementType,
    pub(crate) y_dtype: ElementType,
}

pub(crate) fn unary_op<'m, P>(ctx: &Ctx<'_, 'm>, params: P) -> Result<UnaryOp<'m, P>, Error> {
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    Ok(UnaryOp { params, x: Src::of(&x)?, x_dtype: x.dtype, y_dtype: y.dtype })
}

// ---- Convolution windows: CONV_2D, DEPTHWISE_CONV_2D ----

/// Largest window parameter (stride, dilation, padding, depth multiplier) a file may give.
pub(crate) const MAX_DIM: usize = 1 << 24;

/// The window words shared by CONV_2D and DEPTHWISE_CONV_2D ([`ConvWords`](crate::model::words::ConvWords)), read and
/// checked.
pub(crate) struct Window {
    pub(crate) stride: Hw,
    pub(crate) dilation: Hw,
    pub(crate) padding: PaddingValues,
    pub(crate) input_offset: i32,
    pub(crate) output_offset: i32,
    pub(crate) activation: ActivationRange,
}

pub(crate) fn read_window(ctx: &Ctx, p: &mut WordReader, dtype: ElementType) -> Result<Window, Error> {
    let mut next = || p.usize_max(MAX_DIM, "window parameter too large");
    let stride = Hw::new(next()?, next()?);
    let dilation = Hw::new(next()?, next()?);
    let (top, bottom, left, right) = (next()?, next()?, next()?, next()?);
    let input_offset = p.i32()?;
    let output_offset = p.i32()?;
    let activation = read_activation(ctx, p, dtype)?;
    Ok(Window {
        stride,
        dilation,
        padding: PaddingValues { top, bottom, left, right },
        input_offset,
        output_offset,
        activation,
    })
}

/// What a conv-like op keeps of one of its tensors: a few words, not its whole description
/// (the prepare path runs under the interpreter's frames on the device's stack).
#[derive(Clone, Copy)]
pub(crate) struct Slim<'m> {
    pub(crate) dtype: ElementType,
    index: u32,
    /// Number of elements.
    len: usize,
    /// The shape, when 4-D.
    dims: Option<Dims4>,
    /// The last extent (0 for a scalar).
    last: usize,
    /// Where its bytes are (`None`: a constant outside the model).
    src: Option<Src<'m>>,
}

impl<'m> Slim<'m> {
    fn of(t: &TensorInfo<'m>) -> Self {
        let dims = match t.dims() {
            &[n, h, w, c] => Some(Dims4::new(n as usize, h as usize, w as usize, c as usize)),
            _ => None,
        };
        Slim {
            dtype: t.dtype,
            index: t.index,
            len: t.len(),
            dims,
            last: t.dims().last().copied().unwrap_or(0) as usize,
            src: Src::of(t).ok(),
        }
    }

    /// Where its bytes are ([`Src::of`]).
    pub(crate) fn src(&self) -> Result<Src<'m>, Error> {
        self.src.ok_or(Error::BadTensor { index: self.index, reason: "outside the model" })
    }

    /// Its 4-D shape ([`dims4`]).
    fn dims4(&self, ctx: &Ctx) -> Result<Dims4, Error> {
        self.dims.ok_or_else(|| ctx.bad("a tensor that must be 4-D (NHWC) is not"))
    }
}

/// Input `k` (the output for `None`; an optional input for `Some(k)` with `optional`) in a few
/// words. Not inlined: the tensor's description stays in this frame.
#[inline(never)]
fn slim_operand<'m>(ctx: &Ctx<'_, 'm>, k: Option<usize>, optional: bool) -> Result<Option<Slim<'m>>, Error> {
    let t = match k {
        Some(k) if optional => ctx.opt_input(k)?,
        Some(k) => Some(ctx.input(k)?),
        None => Some(ctx.output()?),
    };
    Ok(t.as_ref().map(Slim::of))
}

/// The weights of a conv, depthwise or fully connected op, in place: int8, or int4 packed two
/// per byte ([`crate::kernels::int4`]).
#[derive(Clone, Copy)]
pub(crate) enum Filter<'m> {
    /// int8 weights.
    I8(&'m [i8]),
    /// int4 weights, packed.
    I4(&'m [u8]),
}

impl<'m> Filter<'m> {
    /// Bytes this filter of `weights` values takes at the front of its op's scratch: an int4
    /// filter's unpacked values ([`int4::unpacked_scratch_len`]), none for int8.
    pub(crate) fn scratch_len(&self, weights: usize) -> usize {
        match self {
            Filter::I8(_) => 0,
            Filter::I4(_) => int4::unpacked_scratch_len(weights),
        }
    }

    /// The int8 weights of `weights` values and the op's regions for its int8 kernel: int8
    /// weights as they are; int4 weights (when `S` has them) unpacked into the front of the
    /// scratch, the rest of which is the kernel's scratch (what TFLite Micro does at every
    /// invoke: the int8 kernels and their fast paths then run on them).
    pub(crate) fn int8<'b, S: crate::interp::OpSet>(
        self,
        carved: Carved<'b>,
        weights: usize,
        idx: u32,
    ) -> Result<(&'b [i8], Carved<'b>), Error>
    where
        'm: 'b,
    {
        match self {
            Filter::I8(f) => Ok((f, carved)),
            Filter::I4(packed) => {
                int4_gate::<S>(true, idx)?;
                let (out, scratch, ro) = carved;
                let Some((unpacked, rest)) = scratch.split_at_mut_checked(int4::unpacked_scratch_len(weights)) else {
                    return Err(Error::BadOp { index: idx, reason: "scratch smaller than the unpacked int4 filter" });
                };
                let unpacked: &mut [i8] = bytemuck::cast_slice_mut(unpacked);
                let Some(unpacked) = unpacked.get_mut(..weights) else {
                    return Err(Error::BadOp { index: idx, reason: "scratch smaller than the unpacked int4 filter" });
                };
                int4::unpack(packed, unpacked)
                    .map_err(|_| Error::BadOp { index: idx, reason: "int4 filter length does not match its shape" })?;
                Ok((unpacked, (out, rest, ro)))
            }
        }
    }
}

/// Checks at load that an op whose filter of `weights` values is `f` has scratch for it
/// ([`Filter::scratch_len`]) before `more` bytes for its kernel.
pub(crate) fn check_filter_scratch(ctx: &Ctx, f: &Filter, weights: usize, more: usize) -> Result<(), Error> {
    if (ctx.op.scratch_len as usize) < f.scratch_len(weights).saturating_add(more) {
        return Err(ctx.bad("scratch smaller than the unpacked int4 filter"));
    }
    Ok(())
}

/// A constant weight tensor as a [`Filter`] (int8, or packed int4 with int8 activations only).
pub(crate) fn const_filter<'m>(
    ctx: &Ctx<'_, 'm>,
    w: &TensorInfo<'m>,
    x_dtype: ElementType,
) -> Result<Filter<'m>, Error> {
    if w.dtype == ElementType::I4 {
        if x_dtype != ElementType::I8 {
            return Err(ctx.bad("int4 weights need int8 activations"));
        }
        return w.const_bytes().map(Filter::I4).ok_or_else(|| ctx.bad("an input that must be constant is not"));
    }
    ctx.const_of(w, ElementType::I8).map(Filter::I8)
}

/// Input 1, the filter: in a few words, and its values (or why not). Not inlined: the
/// tensor's description stays in this frame.
#[inline(never)]
fn filter_operand<'m>(ctx: &Ctx<'_, 'm>) -> Result<(Slim<'m>, Result<Filter<'m>, Error>), Error> {
    let w = ctx.input(1)?;
    let x_dtype = ctx.input(0)?.dtype;
    Ok((Slim::of(&w), const_filter(ctx, &w, x_dtype)))
}

/// The tensors and quantization of a conv-like op, checked.
pub(crate) struct Operands<'m> {
    pub(crate) x: Slim<'m>,
    pub(crate) filter: Filter<'m>,
    pub(crate) bias: Option<Slim<'m>>,
    pub(crate) quant: PerChannelQuant<'m>,
    pub(crate) in_dims: Dims4,
    pub(crate) filter_dims: Dims4,
    pub(crate) out_dims: Dims4,
}

pub(crate) fn operands<'m>(ctx: &Ctx<'_, 'm>) -> Result<Operands<'m>, Error> {
    ctx.counts(5..=5, 1)?;
    let absent = || ctx.bad("a required input is absent");
    let x = slim_operand(ctx, Some(0), false)?.ok_or_else(absent)?;
    let (w, filter) = filter_operand(ctx)?;
    let y = slim_operand(ctx, None, false)?.ok_or_else(absent)?;
    let filter = filter?;
    let bias = slim_operand(ctx, Some(2), true)?;
    let oc = y.last;
    let multiplier: &'m [i32] = ctx.const_input(3, ElementType::I32)?;
    let shift: &'m [i32] = ctx.const_input(4, ElementType::I32)?;
    if multiplier.len() != oc || shift.len() != oc {
        return Err(ctx.bad("multipliers and shifts must have one entry per output channel"));
    }
    if shift.iter().any(|&s| !(-31..=30).contains(&s)) || multiplier.iter().any(|&m| m < 0) {
        return Err(ctx.bad("a requantization shift or multiplier is out of range"));
    }
    let ok_dtypes = matches!(
        (x.dtype, y.dtype, bias.map(|b| b.dtype)),
        (ElementType::I8, ElementType::I8, None | Some(ElementType::I32))
            | (ElementType::I16, ElementType::I16, None | Some(ElementType::I32 | ElementType::I64))
    );
    if !ok_dtypes {
        return Err(ctx.bad("unsupported input/output/bias dtypes (int8 with int32 bias, or 16x8)"));
    }
    if let Some(b) = &bias {
        if b.len != oc || !matches!(b.src, Some(Src::Const(_))) {
            return Err(ctx.bad("bias must be a constant with one value per output channel"));
        }
    }
    let (in_dims, filter_dims, out_dims) = (x.dims4(ctx)?, w.dims4(ctx)?, y.dims4(ctx)?);
    Ok(Operands { x, filter, bias, quant: PerChannelQuant { multiplier, shift }, in_dims, filter_dims, out_dims })
}

/// Checks the output shape follows from the input, a `kh` x `kw` window and `oc` channels.
pub(crate) fn check_output(
    ctx: &Ctx,
    o: &Operands,
    win: &Window,
    kh: usize,
    kw: usize,
    oc: usize,
) -> Result<(), Error> {
    let w = compute_window(
        Padding::Explicit(win.padding),
        Hw::new(o.in_dims.h, o.in_dims.w),
        Hw::new(kh, kw),
        win.stride,
        win.dilation,
    )
    .map_err(|_| ctx.bad("the window does not fit the input"))?;
    let expected = Dims4::new(o.in_dims.n, w.output.h, w.output.w, oc);
    if expected != o.out_dims {
        return Err(ctx.bad("output shape does not follow from the input, filter, strides and padding"));
    }
    Ok(())
}

/// A convolution (`P`: [`ConvParams`](crate::kernels::conv::ConvParams)) or depthwise
/// convolution ([`DepthwiseConvParams`](crate::kernels::depthwise_conv::DepthwiseConvParams)),
/// prepared: the kernel's parameters and where its operands are.
pub(crate) struct ConvLikeOp<'m, P> {
    pub(crate) params: P,
    pub(crate) x: Src<'m>,
    pub(crate) dtype: ElementType,
    pub(crate) filter: Filter<'m>,
    /// The filter's values (its four extents' product).
    pub(crate) weights: usize,
    pub(crate) bias: Option<(ElementType, Src<'m>)>,
    pub(crate) quant: PerChannelQuant<'m>,
    /// Its in-place layout, when it runs over its input by chunks of rows.
    pub(crate) in_place: Option<InPlace>,
}

impl<P> ConvLikeOp<'_, P> {
    /// True if it runs in place (and does not read its input from the read-only arena).
    pub(crate) fn runs_in_place(&self) -> bool {
        self.in_place.is_some()
    }
}

/// The prepared form of a conv-like op, from its kernel's parameters and checked operands.
pub(crate) fn conv_like_op<'m, P>(params: P, o: Operands<'m>) -> Result<ConvLikeOp<'m, P>, Error> {
    let bias = o.bias.map(|b| Ok((b.dtype, b.src()?))).transpose()?;
    let weights = o.filter_dims.checked_len().ok_or(Error::InvalidArgument { reason: "filter shape overflows" })?;
    Ok(ConvLikeOp {
        params,
        x: o.x.src()?,
        dtype: o.x.dtype,
        filter: o.filter,
        weights,
        bias,
        quant: o.quant,
        in_place: None,
    })
}

/// [`conv_like_op`] for a CONV_2D or DEPTHWISE_CONV_2D, with its in-place layout when the op
/// runs in place ([`in_place::prepare`]).
pub(crate) fn conv_like_op_in_place<'m, P: ChunkedWindow>(
    ctx: &Ctx<'_, 'm>,
    params: P,
    o: Operands<'m>,
) -> Result<ConvLikeOp<'m, P>, Error> {
    let mut op = conv_like_op(params, o)?;
    let filter_scratch = op.filter.scratch_len(op.weights);
    check_filter_scratch(ctx, &op.filter, op.weights, 0)?;
    op.in_place = in_place::prepare(ctx, &op.params, op.dtype, filter_scratch)?;
    Ok(op)
}

/// Runs a conv-like op with int8 activations in place ([`in_place::run`]): `kernel` is its
/// whole-image kernel (int8 or int4 weights) given the parameters, quantization, input rows,
/// bias, output rows and scratch of each chunk.
pub(crate) fn run_in_place<P: ChunkedWindow>(
    o: &ConvLikeOp<P>,
    ip: &InPlace,
    carved: Carved,
    idx: u32,
    kernel: impl Fn(&P, &PerChannelQuant<'_>, &[i8], Option<&[i32]>, &mut [i8], &mut [u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    let (region, scratch, ro) = carved;
    let bias = match Src::bytes_opt(o.bias, &ro, idx)? {
        Some((_, b)) => Some(as_pod::<i32>(b, idx)?),
        None => None,
    };
    in_place::run(ip, &o.params, region, scratch, idx, |p, x, y, s| kernel(p, &o.quant, x, bias, y, s))
}

/// Runs a conv-like kernel with int8 weights `$filter`: `$s8` for int8, `$s16` for 16x8 (bias
/// i64 or i32).
macro_rules! run_conv {
    ($op:expr, $carved:expr, $idx:expr, $filter:expr, $s8:ident, $s16:ident) => {{
        let (o, idx, filter) = ($op, $idx, $filter);
        let (out, scratch, ro) = $carved;
        let x = o.x.bytes(&ro, idx)?;
        let bias = Src::bytes_opt(o.bias, &ro, idx)?;
        let q = &o.quant;
        match (o.dtype, bias) {
            (ElementType::I8, None) => {
                $s8(&o.params, q, as_i8(x), filter, None, bytemuck::cast_slice_mut(out), scratch)
            }
            (ElementType::I8, Some((_, b))) => $s8(
                &o.params,
                q,
                as_i8(x),
                filter,
                Some(as_pod::<i32>(b, idx)?),
                bytemuck::cast_slice_mut(out),
                scratch,
            ),
            (_, Some((ElementType::I32, b))) => {
                $s16::<i32>(&o.params, q, as_pod(x, idx)?, filter, Some(as_pod::<i32>(b, idx)?), as_pod_mut(out, idx)?)
            }
            (_, Some((_, b))) => {
                $s16::<i64>(&o.params, q, as_pod(x, idx)?, filter, Some(as_pod::<i64>(b, idx)?), as_pod_mut(out, idx)?)
            }
            (_, None) => $s16::<i64>(&o.params, q, as_pod(x, idx)?, filter, None, as_pod_mut(out, idx)?),
        }
    }};
}
pub(crate) use run_conv;

/// `Err` ([`Error::Int4NotInSet`]) for an op with int4 weights when `S` leaves them out (a
/// constant test, as [`int16_gate`]: without [`OpKinds::with_int4`](crate::interp::OpKinds::with_int4)
/// the int4 kernels are not linked).
#[inline(always)]
pub(crate) fn int4_gate<S: crate::interp::OpSet>(int4: bool, idx: u32) -> Result<(), Error> {
    if !S::KINDS.int4() && int4 { Err(Error::Int4NotInSet { index: idx }) } else { Ok(()) }
}

/// `Err` ([`Error::Int16NotInSet`]) for an op that computes in 16x8 when `S` has the int8 kernels
/// only. A constant test once `S` is known: after it, the compiler knows the op is int8 and
/// drops the 16x8 kernel calls that follow, so they are not linked. (At load, `validate` has
/// refused such an op already.)
#[inline(always)]
pub(crate) fn int16_gate<S: crate::interp::OpSet>(int16: bool, idx: u32) -> Result<(), Error> {
    if !S::KINDS.int16() && int16 { Err(Error::Int16NotInSet { index: idx }) } else { Ok(()) }
}

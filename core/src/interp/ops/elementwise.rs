//! ADD, MUL, SOFTMAX, CONCATENATION, MEAN.

use super::{Carved, Ctx, Src, as_i8, as_pod, as_pod_mut, bytes_of, read_activation, shape_of, tensor_quant};
use crate::Error;
use crate::interp::arena::carve;
use crate::interp::params::Params;
use crate::kernels::add::{AddParams, add_s8, add_s16};
use crate::kernels::concat::{ConcatInput, ConcatParams, Requantize, concat_s8};
use crate::kernels::mul::{MulParams, mul_s8, mul_s16};
use crate::kernels::reduce::{MeanParams, mean_s8, mean_s16};
use crate::kernels::softmax::{SoftmaxParams, softmax_s8, softmax_s8_s16};
use crate::kernels::tensor::Broadcast;
use crate::model::{DType, TensorInfo};
use crate::requant::QuantizedMultiplier;

fn qm(p: &mut Params) -> Result<QuantizedMultiplier, Error> {
    Ok(QuantizedMultiplier { multiplier: p.i32()?, shift: p.i32()? })
}

fn binary_operands<'m>(
    ctx: &Ctx<'_, 'm>,
) -> Result<(TensorInfo<'m>, TensorInfo<'m>, TensorInfo<'m>, Broadcast), Error> {
    ctx.counts(2..=2, 1)?;
    let (a, b, y) = (ctx.input(0)?, ctx.input(1)?, ctx.output()?);
    if a.dtype != y.dtype || b.dtype != y.dtype || !matches!(y.dtype, DType::I8 | DType::I16) {
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

/// Parameter words of ADD: offsets, left shift, the three multipliers, the clamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddWords {
    /// `-zero_point` of input 1 and 2, then `output_zero_point`.
    pub offsets: [i32; 3],
    /// Left shift applied to both inputs (20 for int8, 15 for int16).
    pub left_shift: i32,
    /// (multiplier, shift) of input 1, input 2 and the output.
    pub multipliers: [[i32; 2]; 3],
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl AddWords {
    /// Number of words.
    pub const LEN: usize = 12;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [o1, o2, oo] = self.offsets;
        let [[m1, s1], [m2, s2], [mo, so]] = self.multipliers;
        let [lo, hi] = self.activation;
        [o1, o2, oo, self.left_shift, m1, s1, m2, s2, mo, so, lo, hi].map(|v| v as u32)
    }
}

/// The values of an int8 or int16 tensor.
fn int_range(dtype: DType) -> (i64, i64) {
    match dtype {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        _ => (i16::MIN.into(), i16::MAX.into()),
    }
}

/// `[min, max]` of `offset + x` over the values `x` of `dtype`, where `offset` (an input's
/// `-zero_point`) must come from a zero point the type can hold.
fn offset_input_range(ctx: &Ctx, offset: i32, dtype: DType) -> Result<(i64, i64), Error> {
    let (lo, hi) = int_range(dtype);
    let off = i64::from(offset);
    if !(-hi..=-lo).contains(&off) {
        return Err(ctx.bad("an input zero point is outside its type"));
    }
    Ok((lo + off, hi + off))
}

fn check_output_offset(ctx: &Ctx, offset: i32, dtype: DType) -> Result<(), Error> {
    let (lo, hi) = int_range(dtype);
    if !(lo..=hi).contains(&i64::from(offset)) {
        return Err(ctx.bad("the output zero point is outside its type"));
    }
    Ok(())
}

fn fits_i32(v: i64) -> bool {
    i64::from(i32::MIN) <= v && v <= i64::from(i32::MAX)
}

fn add_params(ctx: &Ctx) -> Result<AddParams, Error> {
    let (_, _, y, broadcast) = binary_operands(ctx)?;
    let mut p = ctx.params();
    let (input1_offset, input2_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let left_shift = p.i32()?;
    if !(0..=20).contains(&left_shift) {
        return Err(ctx.bad("add left shift out of range"));
    }
    let (input1_multiplier, input2_multiplier, output_multiplier) = (qm(&mut p)?, qm(&mut p)?, qm(&mut p)?);
    // TFLite's ADD rescales with multipliers below one (shift <= 0), as the converter writes.
    for m in [input1_multiplier, input2_multiplier, output_multiplier] {
        if !(-31..=0).contains(&m.shift) || m.multiplier < 0 {
            return Err(ctx.bad("a requantization shift or multiplier is out of range"));
        }
    }
    // The kernel computes `(offset + x) << left_shift` for each input and the sum of the two
    // rescaled values (each no larger in magnitude) in i32, as TFLite does: parameters for
    // which that could overflow are refused here (a hostile file; the converter never writes
    // them), so the kernel never wraps.
    let (a_lo, a_hi) = offset_input_range(ctx, input1_offset, y.dtype)?;
    let (b_lo, b_hi) = offset_input_range(ctx, input2_offset, y.dtype)?;
    check_output_offset(ctx, output_offset, y.dtype)?;
    if ![(a_lo + b_lo) << left_shift, (a_hi + b_hi) << left_shift].into_iter().all(fits_i32) {
        return Err(ctx.bad("add parameters overflow 32-bit arithmetic"));
    }
    let activation = read_activation(ctx, &mut p, y.dtype)?;
    Ok(AddParams {
        input1_offset,
        input2_offset,
        output_offset,
        left_shift,
        input1_multiplier,
        input2_multiplier,
        output_multiplier,
        activation,
        broadcast,
        rounding: ctx.rounding,
    })
}

/// A binary op (ADD, MUL), prepared: the kernel's parameters and the two inputs.
pub(crate) struct BinaryOp<'m, P> {
    params: P,
    a: Src<'m>,
    b: Src<'m>,
    dtype: DType,
}

pub(crate) type AddOp<'m> = BinaryOp<'m, AddParams>;
pub(crate) type MulOp<'m> = BinaryOp<'m, MulParams>;

fn binary_op<'m, P>(ctx: &Ctx<'_, 'm>, params: P) -> Result<BinaryOp<'m, P>, Error> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    Ok(BinaryOp { params, a: Src::of(&a)?, b: Src::of(&b)?, dtype: a.dtype })
}

pub(crate) fn prepare_add<'m>(ctx: &Ctx<'_, 'm>) -> Result<AddOp<'m>, Error> {
    binary_op(ctx, add_params(ctx)?)
}

/// A binary kernel of one element type: parameters, the two inputs, the output.
type BinaryKernel<P, T> = fn(&P, &[T], &[T], &mut [T]) -> Result<(), Error>;

/// Runs a prepared binary op with its int8 kernel `s8` or its int16 kernel `s16`.
#[inline(always)]
fn run_binary<P>(
    o: &BinaryOp<P>,
    carved: Carved,
    idx: u32,
    s8: BinaryKernel<P, i8>,
    s16: BinaryKernel<P, i16>,
) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let (ab, bb) = (o.a.bytes(&ro, idx)?, o.b.bytes(&ro, idx)?);
    match o.dtype {
        DType::I8 => s8(&o.params, as_i8(ab), as_i8(bb), bytemuck::cast_slice_mut(out)),
        _ => s16(&o.params, as_pod(ab, idx)?, as_pod(bb, idx)?, as_pod_mut(out, idx)?),
    }
}

/// `add_s8` runs its elementwise fast path when the shapes are equal.
pub(crate) fn run_add(o: &AddOp, carved: Carved, idx: u32) -> Result<(), Error> {
    run_binary(o, carved, idx, add_s8, add_s16)
}

/// Parameter words of MUL: offsets, the output multiplier, the clamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MulWords {
    /// `-zero_point` of input 1 and 2, then `output_zero_point`.
    pub offsets: [i32; 3],
    /// (multiplier, shift) of `s1 · s2 / s_out`.
    pub multiplier: [i32; 2],
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl MulWords {
    /// Number of words.
    pub const LEN: usize = 7;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [o1, o2, oo] = self.offsets;
        let [m, s] = self.multiplier;
        let [lo, hi] = self.activation;
        [o1, o2, oo, m, s, lo, hi].map(|v| v as u32)
    }
}

fn mul_params(ctx: &Ctx) -> Result<MulParams, Error> {
    let (_, _, y, broadcast) = binary_operands(ctx)?;
    let mut p = ctx.params();
    let (input1_offset, input2_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let output_multiplier = qm(&mut p)?;
    if !(-31..=30).contains(&output_multiplier.shift) || output_multiplier.multiplier < 0 {
        return Err(ctx.bad("a requantization shift or multiplier is out of range"));
    }
    // The product `(offset1 + x1) · (offset2 + x2)`, shifted left by a positive shift, must fit
    // in i32 (TFLite's arithmetic): refused here otherwise, so the kernel never wraps.
    let (a_lo, a_hi) = offset_input_range(ctx, input1_offset, y.dtype)?;
    let (b_lo, b_hi) = offset_input_range(ctx, input2_offset, y.dtype)?;
    check_output_offset(ctx, output_offset, y.dtype)?;
    let left = output_multiplier.shift.max(0);
    if ![a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi].into_iter().all(|v| fits_i32(v << left)) {
        return Err(ctx.bad("mul parameters overflow 32-bit arithmetic"));
    }
    let activation = read_activation(ctx, &mut p, y.dtype)?;
    Ok(MulParams {
        input1_offset,
        input2_offset,
        output_offset,
        output_multiplier,
        activation,
        broadcast,
        rounding: ctx.rounding,
    })
}

pub(crate) fn prepare_mul<'m>(ctx: &Ctx<'_, 'm>) -> Result<MulOp<'m>, Error> {
    binary_op(ctx, mul_params(ctx)?)
}

pub(crate) fn run_mul(o: &MulOp, carved: Carved, idx: u32) -> Result<(), Error> {
    run_binary(o, carved, idx, mul_s8, mul_s16)
}

/// Parameter words of SOFTMAX (int8 input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftmaxWords {
    /// Q31 multiplier of `beta · s_in · 2^26`.
    pub input_multiplier: i32,
    /// Its left shift.
    pub input_left_shift: i32,
    /// Differences to the row maximum below this contribute 0.
    pub diff_min: i32,
}

impl SoftmaxWords {
    /// Number of words.
    pub const LEN: usize = 3;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        [self.input_multiplier as u32, self.input_left_shift as u32, self.diff_min as u32]
    }
}

fn softmax_params(ctx: &Ctx) -> Result<SoftmaxParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != DType::I8 || !matches!(y.dtype, DType::I8 | DType::I16) {
        return Err(ctx.bad("softmax supports int8 input with int8 or int16 output"));
    }
    if x.dims() != y.dims() {
        return Err(ctx.bad("softmax output shape differs from its input"));
    }
    let depth = x.dims().last().copied().unwrap_or(1) as usize;
    if depth == 0 {
        return Err(ctx.bad("softmax over an empty axis"));
    }
    let mut p = ctx.params();
    let (input_multiplier, input_left_shift, diff_min) = (p.i32()?, p.i32()?, p.i32()?);
    if !(0..=31).contains(&input_left_shift) || input_multiplier < 0 || diff_min > 0 {
        return Err(ctx.bad("softmax parameters out of range"));
    }
    Ok(SoftmaxParams { input_multiplier, input_left_shift, diff_min, depth, rounding: ctx.rounding })
}

/// A unary op (SOFTMAX, MEAN), prepared: the kernel's parameters, the input, the output dtype.
pub(crate) struct UnaryOp<'m, P> {
    params: P,
    x: Src<'m>,
    x_dtype: DType,
    y_dtype: DType,
}

pub(crate) type SoftmaxOp<'m> = UnaryOp<'m, SoftmaxParams>;
pub(crate) type MeanOp<'m> = UnaryOp<'m, MeanParams>;

fn unary_op<'m, P>(ctx: &Ctx<'_, 'm>, params: P) -> Result<UnaryOp<'m, P>, Error> {
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    Ok(UnaryOp { params, x: Src::of(&x)?, x_dtype: x.dtype, y_dtype: y.dtype })
}

pub(crate) fn prepare_softmax<'m>(ctx: &Ctx<'_, 'm>) -> Result<SoftmaxOp<'m>, Error> {
    unary_op(ctx, softmax_params(ctx)?)
}

pub(crate) fn run_softmax(o: &SoftmaxOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = as_i8(o.x.bytes(&ro, idx)?);
    match o.y_dtype {
        DType::I8 => softmax_s8(&o.params, xb, bytemuck::cast_slice_mut(out)),
        _ => softmax_s8_s16(&o.params, xb, as_pod_mut(out, idx)?),
    }
}

/// Most inputs a CONCATENATION may have.
pub const MAX_CONCAT_INPUTS: usize = 16;

/// Parameter words of one CONCATENATION input: whether it is requantized, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcatInputWords {
    /// 1 if the input's quantization differs from the output's.
    pub requantize: u32,
    /// Input zero point, output zero point.
    pub zero_points: [i32; 2],
    /// (multiplier, shift) of `s_in / s_out`.
    pub multiplier: [i32; 2],
}

impl ConcatInputWords {
    /// Number of words.
    pub const LEN: usize = 5;
    /// The words, in file order (after the op's first word, the axis).
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [zi, zo] = self.zero_points;
        let [m, s] = self.multiplier;
        [self.requantize, zi as u32, zo as u32, m as u32, s as u32]
    }
}

fn concat_inputs(ctx: &Ctx, inputs: &mut [ConcatInput; MAX_CONCAT_INPUTS]) -> Result<(usize, i32), Error> {
    let n = ctx.op.num_inputs();
    if n == 0 || n > MAX_CONCAT_INPUTS || ctx.op.num_outputs() != 1 {
        return Err(ctx.bad("concatenation needs 1 to 16 inputs and one output"));
    }
    let y = ctx.output()?;
    if y.dtype != DType::I8 {
        return Err(ctx.bad("concatenation supports int8"));
    }
    let rank = y.dims().len() as i32;
    let mut p = ctx.params();
    let axis = p.i32()?;
    let ax = if axis < 0 { axis + rank } else { axis };
    if ax < 0 || ax >= rank {
        return Err(ctx.bad("concatenation axis out of range"));
    }
    for (k, slot) in inputs.iter_mut().enumerate().take(n) {
        let t = ctx.input(k)?;
        if t.dtype != DType::I8 || t.dims().len() != y.dims().len() {
            return Err(ctx.bad("concatenation inputs must be int8 of the output's rank"));
        }
        let axis_len = t.dims().get(ax as usize).copied().unwrap_or(0) as usize;
        let flag = p.u32()?;
        let (zi, zo) = (p.i32()?, p.i32()?);
        let m = qm(&mut p)?;
        let requantize = match flag {
            0 => None,
            1 if (-31..=30).contains(&m.shift) && m.multiplier >= 0 => {
                Some(Requantize { input_zero_point: zi, output_zero_point: zo, multiplier: m })
            }
            _ => return Err(ctx.bad("bad concatenation requantization words")),
        };
        *slot = ConcatInput { axis_len, requantize };
    }
    Ok((n, axis))
}

pub(crate) fn validate_concat(ctx: &Ctx) -> Result<(), Error> {
    let mut inputs = [ConcatInput::copy(0); MAX_CONCAT_INPUTS];
    let (n, axis) = concat_inputs(ctx, &mut inputs)?;
    let (sy, ry) = shape_of(&ctx.output()?);
    ConcatParams::new(&sy[..ry], axis, inputs.get(..n).unwrap_or(&[]))
        .map_err(|_| ctx.bad("concatenation input shapes do not add up to the output"))?;
    for k in 0..n {
        let t = ctx.input(k)?;
        let (st, _) = shape_of(&t);
        for d in 0..ry {
            if d as i32 != (if axis < 0 { axis + ry as i32 } else { axis }) && st.get(d) != sy.get(d) {
                return Err(ctx.bad("concatenation inputs differ from the output off the axis"));
            }
        }
    }
    Ok(())
}

pub(crate) fn eval_concat(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let mut inputs = [ConcatInput::copy(0); MAX_CONCAT_INPUTS];
    let (n, axis) = concat_inputs(ctx, &mut inputs)?;
    let (sy, ry) = shape_of(&ctx.output()?);
    let params = ConcatParams::new(&sy[..ry], axis, inputs.get(..n).unwrap_or(&[]))?;
    let idx = ctx.op.index;
    let (out_r, scratch_r) = ctx.out_and_scratch()?;
    let (out, _, ro) = carve(arena, out_r, scratch_r, idx)?;
    let mut data: [&[i8]; MAX_CONCAT_INPUTS] = [&[]; MAX_CONCAT_INPUTS];
    for (k, d) in data.iter_mut().enumerate().take(n) {
        *d = as_i8(bytes_of(&ctx.input(k)?, &ro, idx)?);
    }
    concat_s8(&params, data.get(..n).unwrap_or(&[]), bytemuck::cast_slice_mut(out))
}

/// Most reduction axes a MEAN may name.
const MAX_AXES: usize = 6;

fn mean_params(ctx: &Ctx) -> Result<MeanParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, DType::I8 | DType::I16) {
        return Err(ctx.bad("mean supports int8 or int16 input and output of the same type"));
    }
    let mut p = ctx.params();
    let n = p.usize_max(MAX_AXES, "mean has more than 6 axes")?;
    let mut axes = [0i32; MAX_AXES];
    for a in axes.iter_mut().take(n) {
        *a = p.i32()?;
    }
    let (sx, rx) = shape_of(&x);
    let (qi, qo) = (tensor_quant(ctx, &x)?, tensor_quant(ctx, &y)?);
    let axes = axes.get(..n).unwrap_or(&[]);
    let params = match x.dtype {
        DType::I8 => MeanParams::prepare_s8(&sx[..rx], axes, qi, qo, ctx.rounding)?,
        _ => MeanParams::prepare_s16(&sx[..rx], axes, qi, qo, ctx.rounding)?,
    };
    if params.output_len() != y.len() {
        return Err(ctx.bad("mean output size does not match the kept dimensions"));
    }
    if (ctx.op.scratch_len as usize) < params.output_len() * 4 {
        return Err(ctx.bad("mean scratch smaller than one i32 per output"));
    }
    Ok(params)
}

pub(crate) fn prepare_mean<'m>(ctx: &Ctx<'_, 'm>) -> Result<MeanOp<'m>, Error> {
    unary_op(ctx, mean_params(ctx)?)
}

pub(crate) fn run_mean(o: &MeanOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, scratch, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    let scratch: &mut [i32] = as_pod_mut(scratch, idx)?;
    let scratch = scratch
        .get_mut(..o.params.output_len())
        .ok_or(Error::BadOp { index: idx, reason: "mean scratch too small" })?;
    match o.x_dtype {
        DType::I8 => mean_s8(&o.params, as_i8(xb), bytemuck::cast_slice_mut(out), scratch),
        _ => mean_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?, scratch),
    }
}

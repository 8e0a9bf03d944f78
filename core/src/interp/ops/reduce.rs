//! MEAN and SUM ([`crate::kernels::reduce`]). Inputs: `[input]` (int8 or int16). Parameter words:
//! `[n_axes, axis_0, ...]`. Scratch: one i32 per output element.

use super::common::{Carved, Ctx, UnaryOp, as_i8, as_pod, as_pod_mut, shape_of, tensor_quant, unary_op};
use crate::Error;
use crate::kernels::reduce::{MeanParams, mean_s8, mean_s16};
use crate::model::{ElementType, OpKind};

/// A MEAN, prepared.
pub(crate) type MeanOp<'m> = UnaryOp<'m, MeanParams>;

/// Most reduction axes a MEAN may name.
pub(super) const MAX_AXES: usize = 6;

/// The axes words and the input shape of a reduction.
pub(super) fn axes_and_shape(ctx: &Ctx) -> Result<([i32; MAX_AXES], usize, [usize; 6], usize), Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("a reduction supports int8 or int16 input and output of the same type"));
    }
    let mut p = ctx.params();
    let n = p.usize_max(MAX_AXES, "a reduction has more than 6 axes")?;
    let mut axes = [0i32; MAX_AXES];
    for a in axes.iter_mut().take(n) {
        *a = p.i32()?;
    }
    let (sx, rx) = shape_of(&x);
    Ok((axes, n, sx, rx))
}

fn mean_params(ctx: &Ctx) -> Result<MeanParams, Error> {
    let (axes, n, sx, rx) = axes_and_shape(ctx)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    let (qi, qo) = (tensor_quant(ctx, &x)?, tensor_quant(ctx, &y)?);
    let axes = axes.get(..n).unwrap_or(&[]);
    let shape = sx.get(..rx).unwrap_or(&[]);
    let sum = ctx.op.kind == OpKind::Sum;
    let params = match (x.dtype, sum) {
        (ElementType::I8, false) => MeanParams::prepare_s8(shape, axes, qi, qo, ctx.rounding)?,
        (_, false) => MeanParams::prepare_s16(shape, axes, qi, qo, ctx.rounding)?,
        (ElementType::I8, true) => MeanParams::prepare_sum_s8(shape, axes, qi, qo, ctx.rounding)?,
        (_, true) => MeanParams::prepare_sum_s16(shape, axes, qi, qo, ctx.rounding)?,
    };
    if params.output_len() != y.len() {
        return Err(ctx.bad("mean output size does not match the kept dimensions"));
    }
    if (ctx.op.scratch_len as usize) < params.output_len() * 4 {
        return Err(ctx.bad("mean scratch smaller than one i32 per output"));
    }
    Ok(params)
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<MeanOp<'m>, Error> {
    unary_op(ctx, mean_params(ctx)?)
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &MeanOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.x_dtype != ElementType::I8, idx)?;
    let (out, scratch, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    let scratch: &mut [i32] = as_pod_mut(scratch, idx)?;
    let scratch = scratch
        .get_mut(..o.params.output_len())
        .ok_or(Error::BadOp { index: idx, reason: "mean scratch too small" })?;
    match o.x_dtype {
        ElementType::I8 => mean_s8(&o.params, as_i8(xb), bytemuck::cast_slice_mut(out), scratch),
        _ => mean_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?, scratch),
    }
}

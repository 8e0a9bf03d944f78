//! MAX_POOL_2D and AVERAGE_POOL_2D ([`crate::kernels::pooling`]). Inputs: `[input]`. Parameter
//! words: [`PoolWords`](crate::model::words::PoolWords).

use super::common::{Carved, Ctx, Src, as_i8, as_pod, as_pod_mut, dims4, read_activation};
use crate::Error;
use crate::kernels::Dims4;
use crate::kernels::common::{Hw, Padding, PaddingValues, compute_window};
use crate::kernels::pooling::{PoolParams, avg_pool_s8, avg_pool_s16, max_pool_s8, max_pool_s16};
use crate::model::{ElementType, OpKind};

fn pool_params(ctx: &Ctx) -> Result<PoolParams, Error> {
    ctx.counts(1..=1, 1)?;
    let x = ctx.input(0)?;
    let y = ctx.output()?;
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("pooling needs int8 or int16 input and output of the same type"));
    }
    if x.per_tensor() != y.per_tensor() {
        return Err(ctx.bad("pooling input and output must share their quantization"));
    }
    let (input, output) = (dims4(ctx, &x)?, dims4(ctx, &y)?);
    let mut p = ctx.params();
    let mut next = || p.usize_max(1 << 24, "pooling parameter too large");
    let filter = Hw::new(next()?, next()?);
    let stride = Hw::new(next()?, next()?);
    let padding = PaddingValues { top: next()?, bottom: next()?, left: next()?, right: next()? };
    let activation = read_activation(ctx, &mut p, y.dtype)?;
    let w = compute_window(Padding::Explicit(padding), Hw::new(input.h, input.w), filter, stride, Hw::new(1, 1))
        .map_err(|_| ctx.bad("the pooling window does not fit the input"))?;
    if Dims4::new(input.n, w.output.h, w.output.w, input.c) != output {
        return Err(ctx.bad("output shape does not follow from the input, window, strides and padding"));
    }
    Ok(PoolParams { input, output, filter, stride, padding, activation })
}

/// A pooling op, prepared.
pub(crate) struct PoolOp<'m> {
    params: PoolParams,
    max: bool,
    x: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<PoolOp<'m>, Error> {
    let params = pool_params(ctx)?;
    let x = ctx.input(0)?;
    Ok(PoolOp { params, max: ctx.op.kind == OpKind::MaxPool2d, x: Src::of(&x)?, dtype: x.dtype })
}

pub(crate) fn run<S: crate::interp::OpSet>(p: &PoolOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(p.dtype != ElementType::I8, idx)?;
    let (out, _, ro) = carved;
    let xb = p.x.bytes(&ro, idx)?;
    let params = &p.params;
    match (p.max, p.dtype) {
        (true, ElementType::I8) => max_pool_s8(params, as_i8(xb), bytemuck::cast_slice_mut(out)),
        (true, _) => max_pool_s16(params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        (false, ElementType::I8) => avg_pool_s8(params, as_i8(xb), bytemuck::cast_slice_mut(out)),
        (false, _) => avg_pool_s16(params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

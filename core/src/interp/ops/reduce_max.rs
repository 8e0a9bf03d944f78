//! REDUCE_MAX ([`crate::kernels::reduce`]). Inputs: `[input]` (int8 or int16); words `[n_axes,
//! axis_0, ...]` (as MEAN); no scratch; input and output share their quantization.

use super::common::{Carved, Ctx, UnaryOp, as_i8, as_pod, as_pod_mut, unary_op};
use super::reduce::axes_and_shape;
use crate::Error;
use crate::kernels::reduce::{ReduceMaxParams, reduce_max_s8, reduce_max_s16};
use crate::model::ElementType;

/// A REDUCE_MAX, prepared.
pub(crate) type ReduceMaxOp<'m> = UnaryOp<'m, ReduceMaxParams>;

fn max_params(ctx: &Ctx) -> Result<ReduceMaxParams, Error> {
    let (axes, n, sx, rx) = axes_and_shape(ctx)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.quant != y.quant {
        return Err(ctx.bad("reduce max input and output must share their quantization"));
    }
    let params = ReduceMaxParams::new(sx.get(..rx).unwrap_or(&[]), axes.get(..n).unwrap_or(&[]))?;
    if params.output_len() != y.len() {
        return Err(ctx.bad("reduce max output size does not match the kept dimensions"));
    }
    Ok(params)
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<ReduceMaxOp<'m>, Error> {
    unary_op(ctx, max_params(ctx)?)
}

pub(crate) fn run(o: &ReduceMaxOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.x_dtype {
        ElementType::I8 => reduce_max_s8(&o.params, as_i8(xb), bytemuck::cast_slice_mut(out)),
        _ => reduce_max_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

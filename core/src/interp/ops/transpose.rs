//! TRANSPOSE ([`crate::kernels::transpose`]). Inputs: `[input]`, words `[rank, perm_0, ...]`.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, read_list, shape_of};
use crate::Error;
use crate::kernels::transpose::{TransposeParams, transpose_s8, transpose_s16, transpose_s32};

fn transpose_params(ctx: &Ctx) -> Result<TransposeParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype {
        return Err(ctx.bad("transpose changes the dtype"));
    }
    let (v, rank) = read_list(ctx, false)?;
    let ((sx, rx), (sy, ry)) = (shape_of(&x), shape_of(&y));
    let rank_err = || ctx.bad("rank above 6");
    let (sx, sy) = (sx.get(..rx).ok_or_else(rank_err)?, sy.get(..ry).ok_or_else(rank_err)?);
    let params = TransposeParams::new(sx, v.get(..rank).ok_or_else(rank_err)?)?;
    if params.output_shape().dims() != sy {
        return Err(ctx.bad("transpose output shape does not match the permutation"));
    }
    Ok(params)
}

/// A TRANSPOSE, prepared.
pub(crate) struct TransposeOp<'m> {
    params: TransposeParams,
    x: Src<'m>,
    elem_size: usize,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<TransposeOp<'m>, Error> {
    let params = transpose_params(ctx)?;
    let x = ctx.input(0)?;
    if !matches!(x.dtype.size(), 1 | 2 | 4) {
        return Err(ctx.bad("transpose of 8-byte elements is not supported"));
    }
    Ok(TransposeOp { params, x: Src::of(&x)?, elem_size: x.dtype.size() })
}

pub(crate) fn run(o: &TransposeOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.elem_size {
        1 => transpose_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        2 => transpose_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        _ => transpose_s32(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

//! PAD ([`crate::kernels::pad`]). Inputs: `[input]`, words `[rank, before_0, after_0, ...]`,
//! filled with the output zero point.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, read_list, shape_of};
use crate::Error;
use crate::kernels::pad::{PadParams, pad_s8, pad_s16};
use crate::kernels::tensor::MAX_DIMS;
use crate::model::ElementType;

fn pad_params(ctx: &Ctx) -> Result<PadParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("pad supports int8 and int16"));
    }
    let (v, rank) = read_list(ctx, true)?;
    let (sx, rx) = shape_of(&x);
    if rank != rx {
        return Err(ctx.bad("pad needs one [before, after] pair per dimension"));
    }
    let mut pairs = [[0i32; 2]; MAX_DIMS];
    for (k, pair) in pairs.iter_mut().enumerate().take(rank) {
        *pair = [v[2 * k], v[2 * k + 1]];
    }
    let zp = y.per_tensor().map(|q| q.1).unwrap_or(0);
    let params = PadParams::new(&sx[..rx], &pairs[..rank], zp)?;
    let (sy, ry) = shape_of(&y);
    if params.output_shape().dims() != &sy[..ry] {
        return Err(ctx.bad("pad output shape does not match the paddings"));
    }
    Ok(params)
}

/// A PAD, prepared.
pub(crate) struct PadOp<'m> {
    params: PadParams,
    x: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<PadOp<'m>, Error> {
    let params = pad_params(ctx)?;
    let x = ctx.input(0)?;
    Ok(PadOp { params, x: Src::of(&x)?, dtype: x.dtype })
}

pub(crate) fn run(o: &PadOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.dtype {
        ElementType::I8 => pad_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        _ => pad_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

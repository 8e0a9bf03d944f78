//! GATHER ([`crate::kernels::gather`]). Inputs: `[input, indices]` (the indices a constant int32
//! tensor), words `[axis]`. The output's shape is the input's with the axis replaced by the
//! indices' shape; it has the input's dtype and quantization.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut};
use crate::Error;
use crate::kernels::gather::{GatherParams, gather_s8, gather_s16};
use crate::kernels::tensor::MAX_DIMS;
use crate::model::ElementType;

/// A GATHER, prepared.
pub(crate) struct GatherOp<'m> {
    params: GatherParams,
    x: Src<'m>,
    indices: &'m [i32],
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<GatherOp<'m>, Error> {
    ctx.counts(2..=2, 1)?;
    let (x, t, y) = (ctx.input(0)?, ctx.input(1)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("gather supports int8 and int16, the output of the input's dtype"));
    }
    if x.per_tensor() != y.per_tensor() {
        return Err(ctx.bad("gather input and output must share their quantization"));
    }
    let indices: &'m [i32] = ctx.const_of(&t, ElementType::I32)?;
    let axis = ctx.params().usize_max(MAX_DIMS, "gather axis above 6")?;
    let (xd, td, yd) = (x.dims(), t.dims(), y.dims());
    let Some(before) = xd.get(..axis) else { return Err(ctx.bad("gather axis out of range")) };
    let after = xd.get(axis + 1..).unwrap_or(&[]);
    let shape_ok = yd.len() == before.len() + td.len() + after.len()
        && yd.iter().zip(before.iter().chain(td).chain(after)).all(|(a, b)| a == b);
    if !shape_ok {
        return Err(ctx.bad("gather output shape is not the input's with the axis replaced by the indices' shape"));
    }
    let mut shape = [0usize; MAX_DIMS];
    if xd.len() > MAX_DIMS {
        return Err(ctx.bad("gather input rank above 6"));
    }
    for (s, &d) in shape.iter_mut().zip(xd) {
        *s = d as usize;
    }
    let params = GatherParams::new(shape.get(..xd.len()).unwrap_or(&[]), axis, indices)?;
    Ok(GatherOp { params, x: Src::of(&x)?, indices, dtype: x.dtype })
}

pub(crate) fn run(o: &GatherOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.dtype {
        ElementType::I8 => gather_s8(&o.params, bytemuck::cast_slice(xb), o.indices, bytemuck::cast_slice_mut(out)),
        _ => gather_s16(&o.params, as_pod(xb, idx)?, o.indices, as_pod_mut(out, idx)?),
    }
}

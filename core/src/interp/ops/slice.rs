//! STRIDED_SLICE ([`crate::kernels::slice`]). Inputs: `[input]`, words `[rank, start_0, step_0,
//! count_0, ...]` (one triple per input dimension). The output has `Π count` elements in any
//! shape of that count (TFLite's shrunk and new axes only change the shape), the input's dtype
//! and quantization.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, shape_of};
use crate::Error;
use crate::kernels::slice::{SliceParams, slice_s8, slice_s16};
use crate::kernels::tensor::MAX_DIMS;
use crate::model::ElementType;

fn slice_params(ctx: &Ctx) -> Result<SliceParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("strided slice supports int8 and int16, the output of the input's dtype"));
    }
    if x.per_tensor() != y.per_tensor() {
        return Err(ctx.bad("strided slice input and output must share their quantization"));
    }
    let mut p = ctx.params();
    let rank = p.usize_max(MAX_DIMS, "rank above 6")?;
    let (sx, rx) = shape_of(&x);
    if rank != rx {
        return Err(ctx.bad("strided slice needs one (start, step, count) triple per input dimension"));
    }
    let (mut start, mut step, mut count) = ([0usize; MAX_DIMS], [1i32; MAX_DIMS], [0usize; MAX_DIMS]);
    for d in 0..rank {
        let (a, s, c) = (p.u32()?, p.i32()?, p.u32()?);
        if let (Some(sa), Some(ss), Some(sc)) = (start.get_mut(d), step.get_mut(d), count.get_mut(d)) {
            (*sa, *ss, *sc) = (a as usize, s, c as usize);
        }
    }
    let params = SliceParams::new(
        sx.get(..rx).unwrap_or(&[]),
        start.get(..rank).unwrap_or(&[]),
        step.get(..rank).unwrap_or(&[]),
        count.get(..rank).unwrap_or(&[]),
    )?;
    if params.output_len() != y.len() {
        return Err(ctx.bad("strided slice output size does not match its counts"));
    }
    Ok(params)
}

/// A STRIDED_SLICE, prepared.
pub(crate) struct SliceOp<'m> {
    params: SliceParams,
    x: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<SliceOp<'m>, Error> {
    let params = slice_params(ctx)?;
    let x = ctx.input(0)?;
    Ok(SliceOp { params, x: Src::of(&x)?, dtype: x.dtype })
}

pub(crate) fn run(o: &SliceOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.dtype {
        ElementType::I8 => slice_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        _ => slice_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

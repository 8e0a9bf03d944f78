//! MIRROR_PAD ([`crate::kernels::mirror_pad`]). Inputs: `[input]`, words `[mode, rank, before_0,
//! after_0, ...]` (mode 0: reflect, 1: symmetric, 2: edge). The output has the input's dtype and
//! quantization.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, shape_of};
use crate::Error;
use crate::kernels::mirror_pad::{MirrorPadMode, MirrorPadParams, mirror_pad_s8, mirror_pad_s16};
use crate::kernels::tensor::MAX_DIMS;
use crate::model::ElementType;

/// A MIRROR_PAD, prepared.
pub(crate) struct MirrorPadOp<'m> {
    params: MirrorPadParams,
    x: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<MirrorPadOp<'m>, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("mirror pad supports int8 and int16, the output of the input's dtype"));
    }
    if x.per_tensor() != y.per_tensor() {
        return Err(ctx.bad("mirror pad input and output must share their quantization"));
    }
    let mut p = ctx.params();
    let mode = MirrorPadMode::from_code(p.u32()?).ok_or_else(|| ctx.bad("mirror pad mode is not 0, 1 or 2"))?;
    let rank = p.usize_max(MAX_DIMS, "rank above 6")?;
    let (sx, rx) = shape_of(&x);
    if rank != rx {
        return Err(ctx.bad("mirror pad needs one [before, after] pair per dimension"));
    }
    let mut pairs = [[0i32; 2]; MAX_DIMS];
    for pair in pairs.iter_mut().take(rank) {
        *pair = [p.i32()?, p.i32()?];
    }
    let params = MirrorPadParams::new(sx.get(..rx).unwrap_or(&[]), pairs.get(..rank).unwrap_or(&[]), mode)?;
    let (sy, ry) = shape_of(&y);
    if params.output_shape().dims() != sy.get(..ry).unwrap_or(&[]) {
        return Err(ctx.bad("mirror pad output shape does not match the paddings"));
    }
    Ok(MirrorPadOp { params, x: Src::of(&x)?, dtype: x.dtype })
}

pub(crate) fn run(o: &MirrorPadOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.dtype {
        ElementType::I8 => mirror_pad_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        _ => mirror_pad_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

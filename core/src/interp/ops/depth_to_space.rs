//! DEPTH_TO_SPACE and SPACE_TO_DEPTH ([`crate::kernels::depth_to_space`]). Inputs: `[input]`
//! (NHWC), words `[block_size, mode]` (DEPTH_TO_SPACE; mode 0: TFLite's / ONNX `DCR` channel
//! order, 1: ONNX `CRD`) or `[block_size]` (SPACE_TO_DEPTH). The output has the input's dtype and
//! quantization.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, dims4};
use crate::Error;
use crate::kernels::depth_to_space::{SpaceDepthMode, SpaceDepthParams, space_depth_s8, space_depth_s16};
use crate::model::{ElementType, OpKind};

/// Largest block size a file may give.
const MAX_BLOCK: usize = 1 << 12;

/// A DEPTH_TO_SPACE or SPACE_TO_DEPTH, prepared.
pub(crate) struct SpaceDepthOp<'m> {
    params: SpaceDepthParams,
    x: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<SpaceDepthOp<'m>, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("depth to space supports int8 and int16, the output of the input's dtype"));
    }
    if x.per_tensor() != y.per_tensor() {
        return Err(ctx.bad("depth to space input and output must share their quantization"));
    }
    let mut p = ctx.params();
    let block = p.usize_max(MAX_BLOCK, "block size too large")?;
    let mode = if ctx.op.kind == OpKind::SpaceToDepth {
        SpaceDepthMode::SpaceToDepth
    } else {
        match p.u32()? {
            0 => SpaceDepthMode::DepthToSpaceDcr,
            1 => SpaceDepthMode::DepthToSpaceCrd,
            _ => return Err(ctx.bad("depth to space mode is neither DCR (0) nor CRD (1)")),
        }
    };
    let params = SpaceDepthParams::new(dims4(ctx, &x)?, block, mode)?;
    if params.output() != dims4(ctx, &y)? {
        return Err(ctx.bad("depth to space output shape does not follow from the input and block size"));
    }
    Ok(SpaceDepthOp { params, x: Src::of(&x)?, dtype: x.dtype })
}

pub(crate) fn run(o: &SpaceDepthOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.dtype {
        ElementType::I8 => space_depth_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        _ => space_depth_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

//! RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR ([`crate::kernels::resize`]). Inputs: `[input]`
//! (NHWC, int8, or int16 for nearest neighbour); words [`ResizeWords`]
//! (`[align_corners, half_pixel_centers]`); the output size is the output tensor's height and
//! width. Input and output share their quantization.

use super::common::{Carved, Ctx, UnaryOp, as_i8, as_pod, as_pod_mut, dims4, unary_op};
use crate::Error;
use crate::kernels::resize::{ResizeMethod, ResizeParams, resize_s8, resize_s16};
use crate::model::words::ResizeWords;
use crate::model::{ElementType, OpKind};

/// A resize, prepared.
pub(crate) type ResizeOp<'m> = UnaryOp<'m, ResizeParams>;

fn flag(ctx: &Ctx, w: u32) -> Result<bool, Error> {
    match w {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(ctx.bad("resize option word is neither 0 nor 1")),
    }
}

fn resize_params(ctx: &Ctx) -> Result<ResizeParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    let method =
        if ctx.op.kind == OpKind::ResizeBilinear { ResizeMethod::Bilinear } else { ResizeMethod::NearestNeighbor };
    match (x.dtype, y.dtype, method) {
        (ElementType::I8, ElementType::I8, _) | (ElementType::I16, ElementType::I16, ResizeMethod::NearestNeighbor) => {
        }
        _ => return Err(ctx.bad("resize runs int8 (or int16 nearest neighbour) in and out of the same type")),
    }
    if x.quant != y.quant {
        return Err(ctx.bad("resize input and output must share their quantization"));
    }
    let mut p = ctx.params();
    let words = ResizeWords { align_corners: flag(ctx, p.u32()?)?, half_pixel_centers: flag(ctx, p.u32()?)? };
    let (dx, dy) = (dims4(ctx, &x)?, dims4(ctx, &y)?);
    if dx.n != dy.n || dx.c != dy.c {
        return Err(ctx.bad("resize changes the batch or channel count"));
    }
    ResizeParams::prepare(method, [dx.n, dx.h, dx.w, dx.c], [dy.h, dy.w], words.align_corners, words.half_pixel_centers)
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<ResizeOp<'m>, Error> {
    unary_op(ctx, resize_params(ctx)?)
}

pub(crate) fn run(o: &ResizeOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.x_dtype {
        ElementType::I8 => resize_s8(&o.params, as_i8(xb), bytemuck::cast_slice_mut(out)),
        _ => resize_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

//! RESHAPE, PAD, TRANSPOSE.
//!
//! RESHAPE: inputs `[input]`, no words; the converter normally gives input and output the same
//! arena bytes, and then it costs nothing. PAD: inputs `[input]`, words `[rank, before_0,
//! after_0, ...]`, filled with the output zero point. TRANSPOSE: inputs `[input]`, words
//! `[rank, perm_0, ...]`.

use super::{Ctx, as_pod, as_pod_mut, bytes_of, shape_of};
use crate::interp::arena::carve;
use crate::kernels::pad::{PadParams, pad_s8, pad_s16};
use crate::kernels::tensor::MAX_DIMS;
use crate::kernels::transpose::{TransposeParams, transpose_s8, transpose_s16, transpose_s32};
use crate::model::DType;
use crate::Error;

pub(crate) fn validate_reshape(ctx: &Ctx) -> Result<(), Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.byte_len != y.byte_len || x.dtype != y.dtype {
        return Err(ctx.bad("reshape changes the element count or dtype"));
    }
    let (xo, _) = ctx.region(&x)?;
    let (yo, yl) = ctx.region(&y)?;
    if xo != yo && xo < yo + yl && yo < xo + yl {
        return Err(ctx.bad("reshape input and output partly overlap"));
    }
    Ok(())
}

pub(crate) fn eval_reshape(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    let (xo, xl) = ctx.region(&x)?;
    let (yo, yl) = ctx.region(&y)?;
    if xo == yo {
        return Ok(()); // aliased: nothing to move
    }
    let (out, _, ro) = carve(arena, (yo, yl), (0, 0), ctx.op.index)?;
    let src = ro.get(xo, xl, ctx.op.index)?;
    if src.len() != out.len() {
        return Err(ctx.bad("reshape input and output differ in size"));
    }
    out.copy_from_slice(src);
    Ok(())
}

fn read_list(ctx: &Ctx, pairs: bool) -> Result<([i32; 2 * MAX_DIMS], usize), Error> {
    let mut p = ctx.params();
    let rank = p.usize_max(MAX_DIMS, "rank above 6")?;
    let n = if pairs { 2 * rank } else { rank };
    let mut v = [0i32; 2 * MAX_DIMS];
    for slot in v.iter_mut().take(n) {
        *slot = p.i32()?;
    }
    Ok((v, rank))
}

fn pad_params(ctx: &Ctx) -> Result<PadParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, DType::I8 | DType::I16) {
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

pub(crate) fn validate_pad(ctx: &Ctx) -> Result<(), Error> {
    pad_params(ctx).map(|_| ())
}

pub(crate) fn eval_pad(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let params = pad_params(ctx)?;
    let idx = ctx.op.index;
    let x = ctx.input(0)?;
    let (out_r, scratch_r) = ctx.out_and_scratch()?;
    let (out, _, ro) = carve(arena, out_r, scratch_r, idx)?;
    let xb = bytes_of(&x, &ro, idx)?;
    match x.dtype {
        DType::I8 => pad_s8(&params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        _ => pad_s16(&params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

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

pub(crate) fn validate_transpose(ctx: &Ctx) -> Result<(), Error> {
    transpose_params(ctx).map(|_| ())
}

pub(crate) fn eval_transpose(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let params = transpose_params(ctx)?;
    let idx = ctx.op.index;
    let x = ctx.input(0)?;
    let (out_r, scratch_r) = ctx.out_and_scratch()?;
    let (out, _, ro) = carve(arena, out_r, scratch_r, idx)?;
    let xb = bytes_of(&x, &ro, idx)?;
    match x.dtype.size() {
        1 => transpose_s8(&params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        2 => transpose_s16(&params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        4 => transpose_s32(&params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        _ => Err(ctx.bad("transpose of 8-byte elements is not supported")),
    }
}

//! RESHAPE, PAD, TRANSPOSE.
//!
//! RESHAPE: inputs `[input]`, no words; the converter normally gives input and output the same
//! arena bytes, and then it costs nothing. PAD: inputs `[input]`, words `[rank, before_0,
//! after_0, ...]`, filled with the output zero point. TRANSPOSE: inputs `[input]`, words
//! `[rank, perm_0, ...]`.

use super::{ArenaRange, Carved, Ctx, Src, as_pod, as_pod_mut, shape_of};
use crate::Error;
use crate::interp::arena::carve;
use crate::kernels::pad::{PadParams, pad_s8, pad_s16};
use crate::kernels::tensor::MAX_DIMS;
use crate::kernels::transpose::{TransposeParams, transpose_s8, transpose_s16, transpose_s32};
use crate::model::DType;

/// A RESHAPE, prepared: the input's and output's arena regions (the same region when the
/// converter aliased them, and then it costs nothing).
pub(crate) struct ReshapeOp {
    x: ArenaRange,
    y: ArenaRange,
}

pub(crate) fn prepare_reshape(ctx: &Ctx) -> Result<ReshapeOp, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.byte_len != y.byte_len || x.dtype != y.dtype {
        return Err(ctx.bad("reshape changes the element count or dtype"));
    }
    let (xo, xl) = ctx.region(&x)?;
    let (yo, yl) = ctx.region(&y)?;
    if xo != yo && xo < yo + yl && yo < xo + yl {
        return Err(ctx.bad("reshape input and output partly overlap"));
    }
    Ok(ReshapeOp { x: (xo, xl), y: (yo, yl) })
}

pub(crate) fn run_reshape(o: &ReshapeOp, arena: &mut [u8], idx: u32) -> Result<(), Error> {
    let ((xo, xl), y) = (o.x, o.y);
    if xo == y.0 {
        return Ok(()); // aliased: nothing to move
    }
    let (out, _, ro) = carve(arena, y, (0, 0), idx)?;
    let src = ro.get(xo, xl, idx)?;
    if src.len() != out.len() {
        return Err(Error::BadOp { index: idx, reason: "reshape input and output differ in size" });
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

/// A PAD, prepared.
pub(crate) struct PadOp<'m> {
    params: PadParams,
    x: Src<'m>,
    dtype: DType,
}

pub(crate) fn prepare_pad<'m>(ctx: &Ctx<'_, 'm>) -> Result<PadOp<'m>, Error> {
    let params = pad_params(ctx)?;
    let x = ctx.input(0)?;
    Ok(PadOp { params, x: Src::of(&x)?, dtype: x.dtype })
}

pub(crate) fn run_pad(o: &PadOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.dtype {
        DType::I8 => pad_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        _ => pad_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
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

/// A TRANSPOSE, prepared.
pub(crate) struct TransposeOp<'m> {
    params: TransposeParams,
    x: Src<'m>,
    elem_size: usize,
}

pub(crate) fn prepare_transpose<'m>(ctx: &Ctx<'_, 'm>) -> Result<TransposeOp<'m>, Error> {
    let params = transpose_params(ctx)?;
    let x = ctx.input(0)?;
    if !matches!(x.dtype.size(), 1 | 2 | 4) {
        return Err(ctx.bad("transpose of 8-byte elements is not supported"));
    }
    Ok(TransposeOp { params, x: Src::of(&x)?, elem_size: x.dtype.size() })
}

pub(crate) fn run_transpose(o: &TransposeOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.elem_size {
        1 => transpose_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        2 => transpose_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        _ => transpose_s32(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

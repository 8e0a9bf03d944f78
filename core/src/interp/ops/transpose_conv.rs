//! TRANSPOSE_CONV ([`crate::kernels::transpose_conv`]).
//!
//! Inputs: `[input, filter, bias (optional), multipliers (i32 [out_c]), shifts (i32 [out_c])]`.
//! Parameter words: [`TransposeConvWords`](crate::model::words::TransposeConvWords). Scratch:
//! the accumulators ([`transpose_conv_s8_scratch_len`] / [`transpose_conv_s16_scratch_len`]
//! bytes).

use super::common::{
    Carved, ConvLikeOp, Ctx, Filter, Src, as_i8, as_pod, as_pod_mut, conv_like_op, operands, read_activation,
};
use crate::Error;
use crate::kernels::common::Hw;
use crate::kernels::transpose_conv::{
    TransposeConvParams, transpose_conv_s8, transpose_conv_s8_scratch_len, transpose_conv_s16,
    transpose_conv_s16_scratch_len,
};
use crate::model::ElementType;

/// A TRANSPOSE_CONV, prepared.
pub(crate) type TransposeConvOp<'m> = ConvLikeOp<'m, TransposeConvParams>;

/// Largest stride, padding or size a file may give.
const MAX_WORD: usize = 1 << 24;

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<TransposeConvOp<'m>, Error> {
    let o = operands(ctx)?;
    let mut p = ctx.params();
    let mut next = || p.usize_max(MAX_WORD, "transpose conv parameter too large");
    let stride = Hw::new(next()?, next()?);
    let padding = Hw::new(next()?, next()?);
    let out_hw = Hw::new(next()?, next()?);
    let input_offset = p.i32()?;
    let output_offset = p.i32()?;
    let activation = read_activation(ctx, &mut p, o.x.dtype)?;
    if matches!(o.filter, Filter::I4(_)) {
        return Err(ctx.bad("transpose conv has no int4-weight kernel"));
    }
    let (x, f, y) = (o.in_dims, o.filter_dims, o.out_dims);
    if stride.h == 0 || stride.w == 0 {
        return Err(ctx.bad("strides must be >= 1"));
    }
    if out_hw != Hw::new(y.h, y.w) || y.n != x.n || y.c != f.n || f.c != x.c {
        return Err(ctx.bad("output shape does not match the words, the input batch or the filter"));
    }
    if o.bias.is_some_and(|b| b.dtype == ElementType::I32) && o.x.dtype == ElementType::I16 {
        return Err(ctx.bad("16x8 transpose conv takes an int64 bias"));
    }
    let params = TransposeConvParams {
        input: x,
        filter: f,
        output: y,
        stride,
        padding,
        input_offset,
        output_offset,
        activation,
        rounding: ctx.rounding,
    };
    let need = if o.x.dtype == ElementType::I8 {
        transpose_conv_s8_scratch_len(&params)
    } else {
        transpose_conv_s16_scratch_len(&params)
    };
    if ctx.scratch().1 < need {
        return Err(ctx.bad("transpose conv scratch smaller than its accumulators"));
    }
    // The kernel's own checks (offsets, clamp, sizes), once, on empty data: only argument
    // errors that do not depend on the slices can remain, and those are caught here.
    check_params(ctx, &params, o.x.dtype)?;
    conv_like_op(params, o)
}

/// The parameter checks of the kernel that do not depend on data (offsets within the type,
/// sizes bounded).
fn check_params(ctx: &Ctx, p: &TransposeConvParams, dtype: ElementType) -> Result<(), Error> {
    let (lo, hi) = if dtype == ElementType::I8 { (-128, 127) } else { (0, 0) };
    if !(-hi..=-lo).contains(&p.input_offset) || !(lo..=hi).contains(&p.output_offset) {
        return Err(ctx.bad("a zero point is outside its type (16x8: zero points 0)"));
    }
    let sizes = [p.input.h, p.input.w, p.output.h, p.output.w, p.filter.h, p.filter.w, p.padding.h, p.padding.w];
    if sizes.iter().any(|&v| v > MAX_WORD) || p.filter.h == 0 || p.filter.w == 0 {
        return Err(ctx.bad("transpose conv sizes out of range"));
    }
    Ok(())
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &TransposeConvOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.dtype != ElementType::I8, idx)?;
    let (out, scratch, ro) = carved;
    let x = o.x.bytes(&ro, idx)?;
    let bias = Src::bytes_opt(o.bias, &ro, idx)?;
    let q = &o.quant;
    let p = &o.params;
    // `prepare` refused int4 weights.
    let Filter::I8(filter) = o.filter else {
        return Err(Error::BadOp { index: idx, reason: "transpose conv has no int4-weight kernel" });
    };
    match (o.dtype, bias) {
        (ElementType::I8, None) => {
            transpose_conv_s8(p, q, as_i8(x), filter, None, bytemuck::cast_slice_mut(out), scratch)
        }
        (ElementType::I8, Some((_, b))) => transpose_conv_s8(
            p,
            q,
            as_i8(x),
            filter,
            Some(as_pod::<i32>(b, idx)?),
            bytemuck::cast_slice_mut(out),
            scratch,
        ),
        (_, None) => transpose_conv_s16(p, q, as_pod(x, idx)?, filter, None, as_pod_mut(out, idx)?, scratch),
        (_, Some((_, b))) => transpose_conv_s16(
            p,
            q,
            as_pod(x, idx)?,
            filter,
            Some(as_pod::<i64>(b, idx)?),
            as_pod_mut(out, idx)?,
            scratch,
        ),
    }
}

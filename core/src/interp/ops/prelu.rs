//! PRELU ([`crate::kernels::prelu`]). Inputs: `[input, alpha]`: input and output int8 (alpha
//! int8) or int16 (alpha int8, 16x8), shapes that broadcast to the output's. Parameter words:
//! [`PreluWords`](crate::model::words::PreluWords).

use super::common::{
    Carved, Ctx, Src, as_i8, as_pod, as_pod_mut, check_output_offset, offset_input_range, qm, shape_of,
};
use crate::Error;
use crate::kernels::prelu::{PreluParams, prelu_s8, prelu_s16};
use crate::kernels::tensor::Broadcast;
use crate::model::ElementType;

/// A PRELU, prepared: the kernel's parameters, the input and alpha, the activation type.
pub(crate) struct PreluOp<'m> {
    params: PreluParams,
    x: Src<'m>,
    alpha: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<PreluOp<'m>, Error> {
    ctx.counts(2..=2, 1)?;
    let (x, a, y) = (ctx.input(0)?, ctx.input(1)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(y.dtype, ElementType::I8 | ElementType::I16) || a.dtype != ElementType::I8 {
        return Err(ctx.bad("prelu: input and output int8 or int16, alpha int8"));
    }
    let (sx, rx) = shape_of(&x);
    let (sa, ra) = shape_of(&a);
    let broadcast =
        Broadcast::new(&sx[..rx], &sa[..ra]).map_err(|_| ctx.bad("input and alpha shapes do not broadcast"))?;
    let (sy, ry) = shape_of(&y);
    if broadcast.output_shape().dims() != &sy[..ry] {
        return Err(ctx.bad("output shape is not the broadcast of the input and alpha shapes"));
    }
    let mut p = ctx.params();
    let (input_offset, alpha_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let (identity_multiplier, alpha_multiplier) = (qm(&mut p)?, qm(&mut p)?);
    for m in [identity_multiplier, alpha_multiplier] {
        if !(-31..=30).contains(&m.shift) || m.multiplier < 0 {
            return Err(ctx.bad("a requantization shift or multiplier is out of range"));
        }
    }
    // `(offset + x) · (alpha_offset + alpha)` (int16 · int8 offsets at most 65535 · 255),
    // shifted left by a positive shift, must fit in i32 (TFLite's arithmetic): refused here
    // otherwise, so the kernel never wraps.
    let (x_lo, x_hi) = offset_input_range(ctx, input_offset, x.dtype)?;
    let (a_lo, a_hi) = offset_input_range(ctx, alpha_offset, ElementType::I8)?;
    check_output_offset(ctx, output_offset, y.dtype)?;
    let l1 = identity_multiplier.shift.max(0);
    let l2 = alpha_multiplier.shift.max(0);
    let fits = |v: i64, l: i32| super::common::fits_i32(v << l);
    if ![x_lo, x_hi].into_iter().all(|v| fits(v, l1))
        || ![x_lo * a_lo, x_lo * a_hi, x_hi * a_lo, x_hi * a_hi].into_iter().all(|v| fits(v, l2))
    {
        return Err(ctx.bad("prelu parameters overflow 32-bit arithmetic"));
    }
    let params = PreluParams {
        input_offset,
        alpha_offset,
        output_offset,
        identity_multiplier,
        alpha_multiplier,
        broadcast,
        rounding: ctx.rounding,
    };
    Ok(PreluOp { params, x: Src::of(&x)?, alpha: Src::of(&a)?, dtype: y.dtype })
}

pub(crate) fn run(o: &PreluOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let (xb, ab) = (o.x.bytes(&ro, idx)?, o.alpha.bytes(&ro, idx)?);
    match o.dtype {
        ElementType::I8 => prelu_s8(&o.params, as_i8(xb), as_i8(ab), bytemuck::cast_slice_mut(out)),
        _ => prelu_s16(&o.params, as_pod(xb, idx)?, as_i8(ab), as_pod_mut(out, idx)?),
    }
}

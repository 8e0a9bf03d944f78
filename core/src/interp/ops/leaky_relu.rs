//! LEAKY_RELU, int8 or int16 ([`crate::kernels::leaky_relu`]). Inputs: `[input]`, per-tensor
//! quantized; output the same type and size. Parameter words
//! ([`LeakyReluWords`](crate::model::words::LeakyReluWords)): `[identity multiplier, identity
//! shift, alpha multiplier, alpha shift]`; the zero points are the tensors' (0 for int16).

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, qm, tensor_quant};
use crate::Error;
use crate::kernels::leaky_relu::{LeakyReluParams, leaky_relu_s8, leaky_relu_s16};
use crate::model::ElementType;

/// A LEAKY_RELU, prepared.
pub(crate) struct LeakyReluOp<'m> {
    params: LeakyReluParams,
    x: Src<'m>,
    int16: bool,
}

fn params(ctx: &Ctx) -> Result<(LeakyReluParams, bool), Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    let int16 = match (x.dtype, y.dtype) {
        (ElementType::I8, ElementType::I8) => false,
        (ElementType::I16, ElementType::I16) => true,
        _ => return Err(ctx.bad("leaky relu needs int8 or int16 input and output of the same type")),
    };
    if x.len() != y.len() {
        return Err(ctx.bad("leaky relu input and output differ in size"));
    }
    let (qx, qy) = (tensor_quant(ctx, &x)?, tensor_quant(ctx, &y)?);
    let (lo, hi) = if int16 { (-32768, 32767) } else { (-128, 127) };
    if int16 && (qx.zero_point != 0 || qy.zero_point != 0) {
        return Err(ctx.bad("int16 leaky relu needs zero points 0"));
    }
    if !(lo..=hi).contains(&qx.zero_point) || !(lo..=hi).contains(&qy.zero_point) {
        return Err(ctx.bad("a zero point is outside its type"));
    }
    let mut p = ctx.params();
    let (identity, alpha) = (qm(&mut p)?, qm(&mut p)?);
    // The shifted input must fit 32 bits: |x - zp| < 2^8 (int8) or 2^16 (int16).
    let max_shift = if int16 { 15 } else { 23 };
    let shift_ok = |s: i32| (-31..=max_shift).contains(&s);
    if identity.multiplier < 0 || alpha.multiplier == i32::MIN || !shift_ok(identity.shift) || !shift_ok(alpha.shift) {
        return Err(ctx.bad("leaky relu multiplier or shift out of range"));
    }
    let params = LeakyReluParams {
        input_zero_point: qx.zero_point,
        output_zero_point: qy.zero_point,
        identity,
        alpha,
        rounding: ctx.rounding,
    };
    Ok((params, int16))
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<LeakyReluOp<'m>, Error> {
    let (params, int16) = params(ctx)?;
    Ok(LeakyReluOp { params, x: Src::of(&ctx.input(0)?)?, int16 })
}

pub(crate) fn run(o: &LeakyReluOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    if o.int16 {
        leaky_relu_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?)
    } else {
        leaky_relu_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out))
    }
}

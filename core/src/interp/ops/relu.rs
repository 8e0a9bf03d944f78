//! RELU: a clamp with requantization, int8 or int16 ([`crate::kernels::relu`]). Inputs:
//! `[input]`, per-tensor quantized; output the same type and size. Parameter words
//! ([`ReluWords`](crate::model::words::ReluWords)): `[multiplier, shift, lower bound, upper
//! bound]`; the zero points are the tensors' (0 for int16).

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, qm, tensor_quant};
use crate::Error;
use crate::kernels::relu::{ReluParams, relu_s8, relu_s16};
use crate::model::ElementType;

/// A RELU, prepared.
pub(crate) struct ReluOp<'m> {
    params: ReluParams,
    x: Src<'m>,
    int16: bool,
}

fn params(ctx: &Ctx) -> Result<(ReluParams, bool), Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    let int16 = match (x.dtype, y.dtype) {
        (ElementType::I8, ElementType::I8) => false,
        (ElementType::I16, ElementType::I16) => true,
        _ => return Err(ctx.bad("relu needs int8 or int16 input and output of the same type")),
    };
    if x.len() != y.len() {
        return Err(ctx.bad("relu input and output differ in size"));
    }
    let (qx, qy) = (tensor_quant(ctx, &x)?, tensor_quant(ctx, &y)?);
    let (lo, hi) = if int16 { (-32768, 32767) } else { (-128, 127) };
    if int16 && (qx.zero_point != 0 || qy.zero_point != 0) {
        return Err(ctx.bad("int16 relu needs zero points 0"));
    }
    if !(lo..=hi).contains(&qx.zero_point) || !(lo..=hi).contains(&qy.zero_point) {
        return Err(ctx.bad("a zero point is outside its type"));
    }
    let mut p = ctx.params();
    let multiplier = qm(&mut p)?;
    let (act_min, act_max) = (p.i32()?, p.i32()?);
    // The shifted input must fit 32 bits: |x - zp| < 2^8 (int8) or 2^16 (int16).
    let max_shift = if int16 { 15 } else { 23 };
    if multiplier.multiplier < 0 || !(-31..=max_shift).contains(&multiplier.shift) {
        return Err(ctx.bad("relu multiplier or shift out of range"));
    }
    if !(lo..=hi).contains(&act_min) || !(lo..=hi).contains(&act_max) || act_min > act_max {
        return Err(ctx.bad("relu bounds outside the output type or crossed"));
    }
    let params = ReluParams { input_offset: qx.zero_point, output_offset: qy.zero_point, multiplier, act_min, act_max };
    Ok((params, int16))
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<ReluOp<'m>, Error> {
    let (params, int16) = params(ctx)?;
    Ok(ReluOp { params, x: Src::of(&ctx.input(0)?)?, int16 })
}

pub(crate) fn run(o: &ReluOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    if o.int16 {
        relu_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?)
    } else {
        relu_s8(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?)
    }
}

//! ABS and NEG, int8 or int16, with requantization ([`crate::kernels::abs`]). Inputs: `[input]`,
//! per-tensor quantized; output the same type and size. Parameter words
//! ([`SignWords`](crate::model::words::SignWords)): `[rescale, multiplier, shift]`; the zero
//! points are the tensors' (0 for int16).

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, qm, tensor_quant};
use crate::Error;
use crate::kernels::abs::{SignParams, abs_s8, abs_s16, neg_s8, neg_s16};
use crate::model::{ElementType, OpKind};

/// An ABS or NEG, prepared.
pub(crate) struct SignOp<'m> {
    params: SignParams,
    x: Src<'m>,
    int16: bool,
    neg: bool,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<SignOp<'m>, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    let int16 = match (x.dtype, y.dtype) {
        (ElementType::I8, ElementType::I8) => false,
        (ElementType::I16, ElementType::I16) => true,
        _ => return Err(ctx.bad("abs / neg needs int8 or int16 input and output of the same type")),
    };
    if x.len() != y.len() {
        return Err(ctx.bad("abs / neg input and output differ in size"));
    }
    let (qx, qy) = (tensor_quant(ctx, &x)?, tensor_quant(ctx, &y)?);
    let (lo, hi) = if int16 { (-32768, 32767) } else { (-128, 127) };
    if int16 && (qx.zero_point != 0 || qy.zero_point != 0) {
        return Err(ctx.bad("int16 abs / neg needs zero points 0"));
    }
    if !(lo..=hi).contains(&qx.zero_point) || !(lo..=hi).contains(&qy.zero_point) {
        return Err(ctx.bad("a zero point is outside its type"));
    }
    let mut p = ctx.params();
    let rescale = p.i32()?;
    let m = qm(&mut p)?;
    // |x - zp| < 2^8 (int8) or 2^16 (int16) must fit 32 bits once shifted.
    let max_shift = if int16 { 15 } else { 23 };
    let rescale = match rescale {
        0 => None,
        1 if m.multiplier >= 0 && (-31..=max_shift).contains(&m.shift) => Some(m),
        _ => return Err(ctx.bad("abs / neg rescale flag, multiplier or shift out of range")),
    };
    let params = SignParams { input_zero_point: qx.zero_point, output_zero_point: qy.zero_point, rescale };
    Ok(SignOp { params, x: Src::of(&x)?, int16, neg: ctx.op.kind == OpKind::Neg })
}

pub(crate) fn run(o: &SignOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match (o.int16, o.neg) {
        (true, false) => abs_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        (true, true) => neg_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        (false, false) => abs_s8(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        (false, true) => neg_s8(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

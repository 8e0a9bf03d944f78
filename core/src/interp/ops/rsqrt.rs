//! RSQRT, int8 ([`crate::kernels::rsqrt`]). Inputs: `[input]`, per-tensor quantized; output
//! int8 of the same size. Parameter words ([`RsqrtWords`](crate::model::words::RsqrtWords)):
//! `[multiplier, shift]`; the zero points are the tensors'. An input below its zero point (a
//! negative value) makes the run fail, as TFLite's does.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, qm, tensor_quant};
use crate::Error;
use crate::kernels::rsqrt::{RsqrtParams, rsqrt_s8};
use crate::model::ElementType;

/// An RSQRT, prepared.
pub(crate) struct RsqrtOp<'m> {
    params: RsqrtParams,
    x: Src<'m>,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<RsqrtOp<'m>, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != ElementType::I8 || y.dtype != ElementType::I8 || x.len() != y.len() {
        return Err(ctx.bad("rsqrt needs int8 input and output of the same size"));
    }
    let (qx, qy) = (tensor_quant(ctx, &x)?, tensor_quant(ctx, &y)?);
    if !(-128..=127).contains(&qx.zero_point) || !(-128..=127).contains(&qy.zero_point) {
        return Err(ctx.bad("a zero point is outside int8"));
    }
    let multiplier = qm(&mut ctx.params())?;
    // The kernel shifts by `shift - 20`; 2^20 carried values must not overflow.
    if multiplier.multiplier < 0 || !(-11..=29).contains(&multiplier.shift) {
        return Err(ctx.bad("rsqrt multiplier or shift out of range"));
    }
    let params = RsqrtParams { input_zero_point: qx.zero_point, output_zero_point: qy.zero_point, multiplier };
    Ok(RsqrtOp { params, x: Src::of(&x)? })
}

pub(crate) fn run(o: &RsqrtOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    rsqrt_s8(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?)
}

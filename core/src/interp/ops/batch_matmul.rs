//! BATCH_MATMUL, int8 or int16 ([`crate::kernels::batch_matmul`]). Inputs: `[lhs, rhs]`
//! (activations or constants, per-tensor quantized, both of the output's type), ranks 2 to 5 with
//! broadcast batch dimensions; the output's shape must be the one they give. Parameter words
//! ([`BatchMatMulWords`](crate::model::words::BatchMatMulWords)): `[adj_x, adj_y, multiplier,
//! shift]`; the zero points are the tensors' (0 for int16). No scratch: the kernel reads the
//! operands in place.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, qm, shape_of, tensor_quant};
use crate::Error;
use crate::kernels::ActivationRange;
use crate::kernels::batch_matmul::{BatchMatMulParams, BatchMatMulShape, batch_matmul_s8, batch_matmul_s16};
use crate::model::ElementType;

/// A BATCH_MATMUL, prepared.
pub(crate) struct BatchMatMulOp<'m> {
    params: BatchMatMulParams,
    lhs: Src<'m>,
    rhs: Src<'m>,
    int16: bool,
}

fn flag(ctx: &Ctx, w: u32) -> Result<bool, Error> {
    match w {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(ctx.bad("batch matmul adj_x / adj_y word is neither 0 nor 1")),
    }
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<BatchMatMulOp<'m>, Error> {
    ctx.counts(2..=2, 1)?;
    let (a, b, y) = (ctx.input(0)?, ctx.input(1)?, ctx.output()?);
    let int16 = match (a.dtype, b.dtype, y.dtype) {
        (ElementType::I8, ElementType::I8, ElementType::I8) => false,
        (ElementType::I16, ElementType::I16, ElementType::I16) => true,
        _ => return Err(ctx.bad("batch matmul needs int8 or int16 operands and output, all of one type")),
    };
    let (qa, qb, qy) = (tensor_quant(ctx, &a)?, tensor_quant(ctx, &b)?, tensor_quant(ctx, &y)?);
    let range = if int16 { ActivationRange::INT16 } else { ActivationRange::INT8 };
    for zp in [qa.zero_point, qb.zero_point, qy.zero_point] {
        if int16 && zp != 0 {
            return Err(ctx.bad("int16 batch matmul needs zero points 0"));
        }
        if !(range.min..=range.max).contains(&zp) {
            return Err(ctx.bad("a zero point is outside its type"));
        }
    }
    let mut p = ctx.params();
    let (adj_x, adj_y) = (flag(ctx, p.u32()?)?, flag(ctx, p.u32()?)?);
    let multiplier = qm(&mut p)?;
    // int8: the Q31 multiply (shift up to 30); int16: the 64-bit one, whose product must stay
    // within ±2^47 (shift up to 7 and depth below 2^16 keep it there).
    let max_shift = if int16 { 7 } else { 30 };
    if multiplier.multiplier < 0 || !(-31..=max_shift).contains(&multiplier.shift) {
        return Err(ctx.bad("batch matmul multiplier or shift out of range"));
    }
    let ((sa, ra), (sb, rb), (sy, ry)) = (shape_of(&a), shape_of(&b), shape_of(&y));
    let shape = BatchMatMulShape::new(sa.get(..ra).unwrap_or(&[]), sb.get(..rb).unwrap_or(&[]), adj_x, adj_y)
        .map_err(|_| ctx.bad("batch matmul operand shapes do not multiply"))?;
    if shape.output_shape() != sy.get(..ry).unwrap_or(&[]) {
        return Err(ctx.bad("batch matmul output shape differs from its operands'"));
    }
    let depth = if adj_x { sa.get(ra.wrapping_sub(2)) } else { sa.get(ra.wrapping_sub(1)) };
    if int16 && depth.copied().unwrap_or(0) >= 1 << 16 {
        return Err(ctx.bad("int16 batch matmul depth above 2^16"));
    }
    let params = BatchMatMulParams {
        lhs_offset: -qa.zero_point,
        rhs_offset: -qb.zero_point,
        output_offset: qy.zero_point,
        multiplier,
        range,
        shape,
    };
    Ok(BatchMatMulOp { params, lhs: Src::of(&a)?, rhs: Src::of(&b)?, int16 })
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &BatchMatMulOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.int16, idx)?;
    let (out, _, ro) = carved;
    let (ab, bb) = (o.lhs.bytes(&ro, idx)?, o.rhs.bytes(&ro, idx)?);
    // `as_pod` (a fallible cast) for int8 too: no panicking cast on the device path.
    if o.int16 {
        batch_matmul_s16(&o.params, as_pod(ab, idx)?, as_pod(bb, idx)?, as_pod_mut(out, idx)?)
    } else {
        batch_matmul_s8(&o.params, as_pod(ab, idx)?, as_pod(bb, idx)?, as_pod_mut(out, idx)?)
    }
}

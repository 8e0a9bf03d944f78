//! MINIMUM, MAXIMUM ([`crate::kernels::minimum_maximum`]). Inputs: `[input1, input2]` (int8 or
//! int16, shapes that broadcast; both inputs and the output share one quantization). No
//! parameter words.

use super::common::{BinaryOp, Carved, Ctx, binary_op, binary_operands, run_binary, tensor_quant};
use crate::Error;
use crate::kernels::minimum_maximum::{MinMaxOp, MinMaxParams, min_max_s8, min_max_s16};
use crate::model::OpKind;

fn min_max_params(ctx: &Ctx) -> Result<MinMaxParams, Error> {
    let (a, b, y, broadcast) = binary_operands(ctx)?;
    let (qa, qb, qy) = (tensor_quant(ctx, &a)?, tensor_quant(ctx, &b)?, tensor_quant(ctx, &y)?);
    if qa != qy || qb != qy {
        return Err(ctx.bad("minimum/maximum inputs and output must share one scale and zero point"));
    }
    let op = if ctx.op.kind == OpKind::Minimum { MinMaxOp::Minimum } else { MinMaxOp::Maximum };
    Ok(MinMaxParams { op, broadcast })
}

/// A MINIMUM or MAXIMUM, prepared.
pub(crate) type MinMaxOpPrepared<'m> = BinaryOp<'m, MinMaxParams>;
pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<MinMaxOpPrepared<'m>, Error> {
    binary_op(ctx, min_max_params(ctx)?)
}

pub(crate) fn run(o: &MinMaxOpPrepared, carved: Carved, idx: u32) -> Result<(), Error> {
    run_binary(o, carved, idx, min_max_s8, min_max_s16)
}

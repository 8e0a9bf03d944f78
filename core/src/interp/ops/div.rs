//! DIV ([`crate::kernels::div`]). Inputs: `[input1, input2]` (int8, shapes that broadcast).
//! Parameter words: MUL's layout ([`MulWords`](crate::model::words::MulWords): offsets, the
//! multiplier of `s1 / (s2 · s_out)`, the clamp).

use super::common::{
    BinaryOp, Carved, Ctx, binary_op, binary_shapes, check_output_offset, offset_input_range, qm, read_activation,
    run_binary,
};
use crate::Error;
use crate::kernels::div::{DIV_MAX_SHIFT, DivParams, div_s8};
use crate::model::ElementType;

fn div_params(ctx: &Ctx) -> Result<DivParams, Error> {
    let (y_dtype, broadcast) = binary_shapes(ctx)?;
    if y_dtype != ElementType::I8 {
        return Err(ctx.bad("div runs int8 only"));
    }
    let mut p = ctx.params();
    let (input1_offset, input2_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let output_multiplier = qm(&mut p)?;
    // The kernel's final shift is never negative for these (see kernels::div).
    if !(-31..=DIV_MAX_SHIFT).contains(&output_multiplier.shift) || output_multiplier.multiplier < 0 {
        return Err(ctx.bad("a requantization shift or multiplier is out of range"));
    }
    offset_input_range(ctx, input1_offset, y_dtype)?;
    offset_input_range(ctx, input2_offset, y_dtype)?;
    check_output_offset(ctx, output_offset, y_dtype)?;
    let activation = read_activation(ctx, &mut p, y_dtype)?;
    Ok(DivParams {
        input1_offset,
        input2_offset,
        output_offset,
        output_multiplier,
        activation,
        broadcast,
        rounding: ctx.rounding,
    })
}

/// A DIV, prepared.
pub(crate) type DivOp<'m> = BinaryOp<'m, DivParams>;
pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<DivOp<'m>, Error> {
    binary_op(ctx, div_params(ctx)?)
}

/// Never called: `prepare` accepts int8 only.
fn no_s16(_: &DivParams, _: &[i16], _: &[i16], _: &mut [i16]) -> Result<(), Error> {
    Err(Error::BadKernelArgument { kernel: "div_s8", reason: "div runs int8 only" })
}

pub(crate) fn run(o: &DivOp, carved: Carved, idx: u32) -> Result<(), Error> {
    run_binary(o, carved, idx, div_s8, no_s16)
}

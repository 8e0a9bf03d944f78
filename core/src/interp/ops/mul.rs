//! MUL ([`crate::kernels::mul`]). Inputs: `[input1, input2]` (int8 or int16, shapes that
//! broadcast). Parameter words: [`MulWords`](crate::model::words::MulWords).

use super::common::{
    BinaryOp, Carved, Ctx, binary_op, binary_shapes, check_output_offset, fits_i32, offset_input_range, qm,
    read_activation, run_binary,
};
use crate::Error;
use crate::kernels::mul::{MulParams, mul_s8, mul_s16};

/// A MUL, prepared.
pub(crate) type MulOp<'m> = BinaryOp<'m, MulParams>;

fn mul_params(ctx: &Ctx) -> Result<MulParams, Error> {
    let (y_dtype, broadcast) = binary_shapes(ctx)?;
    let mut p = ctx.params();
    let (input1_offset, input2_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let output_multiplier = qm(&mut p)?;
    if !(-31..=30).contains(&output_multiplier.shift) || output_multiplier.multiplier < 0 {
        return Err(ctx.bad("a requantization shift or multiplier is out of range"));
    }
    // The product `(offset1 + x1) · (offset2 + x2)`, shifted left by a positive shift, must fit
    // in i32 (TFLite's arithmetic): refused here otherwise, so the kernel never wraps.
    let (a_lo, a_hi) = offset_input_range(ctx, input1_offset, y_dtype)?;
    let (b_lo, b_hi) = offset_input_range(ctx, input2_offset, y_dtype)?;
    check_output_offset(ctx, output_offset, y_dtype)?;
    let left = output_multiplier.shift.max(0);
    if ![a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi].into_iter().all(|v| fits_i32(v << left)) {
        return Err(ctx.bad("mul parameters overflow 32-bit arithmetic"));
    }
    let activation = read_activation(ctx, &mut p, y_dtype)?;
    Ok(MulParams {
        input1_offset,
        input2_offset,
        output_offset,
        output_multiplier,
        activation,
        broadcast,
        rounding: ctx.rounding,
    })
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<MulOp<'m>, Error> {
    binary_op(ctx, mul_params(ctx)?)
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &MulOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.is_int16(), idx)?;
    run_binary(o, carved, idx, mul_s8, mul_s16)
}

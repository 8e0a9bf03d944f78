//! SUB ([`crate::kernels::sub`]). Inputs: `[input1, input2]` (int8 or int16, shapes that
//! broadcast). Parameter words: ADD's ([`AddWords`](crate::model::words::AddWords)).

use super::common::{
    BinaryOp, Carved, Ctx, binary_op, binary_shapes, check_output_offset, fits_i32, offset_input_range, qm,
    read_activation, run_binary,
};
use crate::Error;
use crate::kernels::params::AddParams;
use crate::kernels::sub::{SubParams, sub_s8, sub_s16};

fn sub_params(ctx: &Ctx) -> Result<SubParams, Error> {
    let (y_dtype, broadcast) = binary_shapes(ctx)?;
    let mut p = ctx.params();
    let (input1_offset, input2_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let left_shift = p.i32()?;
    if !(0..=20).contains(&left_shift) {
        return Err(ctx.bad("sub left shift out of range"));
    }
    let (input1_multiplier, input2_multiplier, output_multiplier) = (qm(&mut p)?, qm(&mut p)?, qm(&mut p)?);
    // TFLite's SUB rescales with multipliers below one (shift <= 0), as the converter writes.
    for m in [input1_multiplier, input2_multiplier, output_multiplier] {
        if !(-31..=0).contains(&m.shift) || m.multiplier < 0 {
            return Err(ctx.bad("a requantization shift or multiplier is out of range"));
        }
    }
    // The kernel computes `(offset + x) << left_shift` for each input and the difference of the
    // two rescaled values (each no larger in magnitude) in i32, as TFLite does: parameters for
    // which that could overflow are refused here, so the kernel never wraps.
    let (a_lo, a_hi) = offset_input_range(ctx, input1_offset, y_dtype)?;
    let (b_lo, b_hi) = offset_input_range(ctx, input2_offset, y_dtype)?;
    check_output_offset(ctx, output_offset, y_dtype)?;
    if ![(a_lo - b_hi) << left_shift, (a_hi - b_lo) << left_shift].into_iter().all(fits_i32) {
        return Err(ctx.bad("sub parameters overflow 32-bit arithmetic"));
    }
    let activation = read_activation(ctx, &mut p, y_dtype)?;
    Ok(SubParams(AddParams {
        input1_offset,
        input2_offset,
        output_offset,
        left_shift,
        input1_multiplier,
        input2_multiplier,
        output_multiplier,
        activation,
        broadcast,
        rounding: ctx.rounding,
    }))
}

/// A SUB, prepared.
pub(crate) type SubOp<'m> = BinaryOp<'m, SubParams>;
pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<SubOp<'m>, Error> {
    binary_op(ctx, sub_params(ctx)?)
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &SubOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.is_int16(), idx)?;
    run_binary(o, carved, idx, sub_s8, sub_s16)
}

//! ADD ([`crate::kernels::add`]). Inputs: `[input1, input2]` (int8 or int16, shapes that
//! broadcast). Parameter words: [`AddWords`](crate::model::words::AddWords).

use super::common::{
    BinaryOp, Carved, Ctx, binary_op, binary_shapes, check_output_offset, fits_i32, offset_input_range, qm,
    read_activation, run_binary,
};
use crate::Error;
use crate::kernels::add::{AddParams, add_s8, add_s16};

fn add_params(ctx: &Ctx) -> Result<AddParams, Error> {
    let (y_dtype, broadcast) = binary_shapes(ctx)?;
    let mut p = ctx.params();
    let (input1_offset, input2_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let left_shift = p.i32()?;
    if !(0..=20).contains(&left_shift) {
        return Err(ctx.bad("add left shift out of range"));
    }
    let (input1_multiplier, input2_multiplier, output_multiplier) = (qm(&mut p)?, qm(&mut p)?, qm(&mut p)?);
    // TFLite's ADD rescales with multipliers below one (shift <= 0), as the converter writes.
    for m in [input1_multiplier, input2_multiplier, output_multiplier] {
        if !(-31..=0).contains(&m.shift) || m.multiplier < 0 {
            return Err(ctx.bad("a requantization shift or multiplier is out of range"));
        }
    }
    // The kernel computes `(offset + x) << left_shift` for each input and the sum of the two
    // rescaled values (each no larger in magnitude) in i32, as TFLite does: parameters for
    // which that could overflow are refused here (a hostile file; the converter never writes
    // them), so the kernel never wraps.
    let (a_lo, a_hi) = offset_input_range(ctx, input1_offset, y_dtype)?;
    let (b_lo, b_hi) = offset_input_range(ctx, input2_offset, y_dtype)?;
    check_output_offset(ctx, output_offset, y_dtype)?;
    if ![(a_lo + b_lo) << left_shift, (a_hi + b_hi) << left_shift].into_iter().all(fits_i32) {
        return Err(ctx.bad("add parameters overflow 32-bit arithmetic"));
    }
    let activation = read_activation(ctx, &mut p, y_dtype)?;
    Ok(AddParams {
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
    })
}

/// An ADD, prepared.
pub(crate) type AddOp<'m> = BinaryOp<'m, AddParams>;
pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<AddOp<'m>, Error> {
    binary_op(ctx, add_params(ctx)?)
}

/// `add_s8` runs its elementwise fast path when the shapes are equal.
pub(crate) fn run<S: crate::interp::OpSet>(o: &AddOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.is_int16(), idx)?;
    run_binary(o, carved, idx, add_s8, add_s16)
}

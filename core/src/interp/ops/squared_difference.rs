//! SQUARED_DIFFERENCE ([`crate::kernels::squared_difference`]). Inputs: `[input1, input2]`
//! (int8, shapes that broadcast). Parameter words: ADD's layout
//! ([`AddWords`](crate::model::words::AddWords); left shift 7, the clamp the int8 range).

use super::common::{
    BinaryOp, Carved, Ctx, binary_op, binary_shapes, check_output_offset, fits_i32, offset_input_range, qm,
    read_activation, run_binary,
};
use crate::Error;
use crate::kernels::squared_difference::{SquaredDifferenceParams, squared_difference_s8};
use crate::model::ElementType;

fn params(ctx: &Ctx) -> Result<SquaredDifferenceParams, Error> {
    let (y_dtype, broadcast) = binary_shapes(ctx)?;
    if y_dtype != ElementType::I8 {
        return Err(ctx.bad("squared difference runs int8 only"));
    }
    let mut p = ctx.params();
    let (input1_offset, input2_offset, output_offset) = (p.i32()?, p.i32()?, p.i32()?);
    let left_shift = p.i32()?;
    if !(0..=7).contains(&left_shift) {
        return Err(ctx.bad("squared difference left shift out of range"));
    }
    let (input1_multiplier, input2_multiplier, output_multiplier) = (qm(&mut p)?, qm(&mut p)?, qm(&mut p)?);
    for m in [input1_multiplier, input2_multiplier] {
        if !(-31..=0).contains(&m.shift) || m.multiplier < 0 {
            return Err(ctx.bad("a requantization shift or multiplier is out of range"));
        }
    }
    if !(-31..=30).contains(&output_multiplier.shift) || output_multiplier.multiplier < 0 {
        return Err(ctx.bad("a requantization shift or multiplier is out of range"));
    }
    // The square of the rescaled difference, shifted left by the output shift, must fit in i32
    // (TFLite's arithmetic; the converter's multipliers of at most 1/2 keep it below 2^30): refused
    // here otherwise, so the kernel never wraps.
    let (a_lo, a_hi) = offset_input_range(ctx, input1_offset, y_dtype)?;
    let (b_lo, b_hi) = offset_input_range(ctx, input2_offset, y_dtype)?;
    check_output_offset(ctx, output_offset, y_dtype)?;
    let scaled = |lo: i64, hi: i64, m: crate::requant::QuantizedMultiplier| {
        (((lo.abs().max(hi.abs()) << left_shift) * i64::from(m.multiplier)) >> (31 + m.shift.min(0)).max(0)) + 1
    };
    let diff = scaled(a_lo, a_hi, input1_multiplier) + scaled(b_lo, b_hi, input2_multiplier);
    if !fits_i32((diff * diff) << output_multiplier.shift.max(0)) {
        return Err(ctx.bad("squared difference parameters overflow 32-bit arithmetic"));
    }
    let activation = read_activation(ctx, &mut p, y_dtype)?;
    Ok(SquaredDifferenceParams {
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

/// A SQUARED_DIFFERENCE, prepared.
pub(crate) type SquaredDifferenceOp<'m> = BinaryOp<'m, SquaredDifferenceParams>;
pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<SquaredDifferenceOp<'m>, Error> {
    binary_op(ctx, params(ctx)?)
}

/// Never called: `prepare` accepts int8 only.
fn no_s16(_: &SquaredDifferenceParams, _: &[i16], _: &[i16], _: &mut [i16]) -> Result<(), Error> {
    Err(Error::BadKernelArgument { kernel: "squared_difference_s8", reason: "squared difference runs int8 only" })
}

pub(crate) fn run(o: &SquaredDifferenceOp, carved: Carved, idx: u32) -> Result<(), Error> {
    run_binary(o, carved, idx, squared_difference_s8, no_s16)
}

//! LOGISTIC, TANH, HARD_SWISH: int8 table lookups. Inputs: `[input, table (int8 [256], indexed
//! by the input byte as u8)]`. No parameter words. The table is built at conversion time by the
//! kernels' prepare functions, which reproduce TFLite Micro (double rounding) or the TFLite
//! interpreter (single rounding) exactly.

use super::{Ctx, as_i8, bytes_of};
use crate::interp::arena::carve;
use crate::kernels::lut::{LUT_S8_LEN, LutS8, lut_lookup_s8};
use crate::model::DType;
use crate::Error;

fn table<'m>(ctx: &Ctx<'_, 'm>) -> Result<&'m LutS8, Error> {
    ctx.counts(2..=2, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != DType::I8 || y.dtype != DType::I8 || x.len() != y.len() {
        return Err(ctx.bad("table lookups need int8 input and output of the same size"));
    }
    let lut: &'m [i8] = ctx.const_of(&ctx.input(1)?, DType::I8)?;
    <&LutS8>::try_from(lut).map_err(|_| ctx.bad("the lookup table must have 256 entries"))
}

pub(crate) fn validate(ctx: &Ctx) -> Result<(), Error> {
    let _ = LUT_S8_LEN;
    table(ctx).map(|_| ())
}

pub(crate) fn eval(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let lut = table(ctx)?;
    let idx = ctx.op.index;
    let x = ctx.input(0)?;
    let (out_r, scratch_r) = ctx.out_and_scratch()?;
    if ctx.op.in_place() {
        // Output over the input: look each byte up where it stands.
        let data = arena.get_mut(out_r.0..out_r.0.saturating_add(out_r.1)).ok_or(ctx.bad("output outside the arena"))?;
        for v in data.iter_mut() {
            *v = lut[*v as usize] as u8;
        }
        return Ok(());
    }
    let (out, _, ro) = carve(arena, out_r, scratch_r, idx)?;
    let xb = as_i8(bytes_of(&x, &ro, idx)?);
    let out: &mut [i8] = bytemuck::cast_slice_mut(out);
    if xb.len() != out.len() {
        return Err(ctx.bad("table lookup input and output differ in size"));
    }
    lut_lookup_s8(lut, xb, out);
    Ok(())
}

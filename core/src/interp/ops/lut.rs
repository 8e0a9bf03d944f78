//! LOGISTIC, TANH, HARD_SWISH: int8 table lookups ([`crate::kernels::lut`]). Inputs: `[input,
//! table (int8 [256], indexed by the input byte as u8)]`. No parameter words. The table is built
//! at conversion time by the kernels' prepare functions ([`crate::kernels::logistic`],
//! [`crate::kernels::tanh`], [`crate::kernels::hard_swish`]), which reproduce TFLite Micro
//! (double rounding) or the TFLite interpreter (single rounding) exactly.

use super::common::{Carved, Ctx, Src, as_i8};
use crate::Error;
use crate::kernels::lut::{LutS8, lut_lookup_s8};
use crate::model::ElementType;

fn table<'m>(ctx: &Ctx<'_, 'm>) -> Result<&'m LutS8, Error> {
    ctx.counts(2..=2, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != ElementType::I8 || y.dtype != ElementType::I8 || x.len() != y.len() {
        return Err(ctx.bad("table lookups need int8 input and output of the same size"));
    }
    let lut: &'m [i8] = ctx.const_of(&ctx.input(1)?, ElementType::I8)?;
    <&LutS8>::try_from(lut).map_err(|_| ctx.bad("the lookup table must have 256 entries"))
}

/// A table lookup, prepared: the table and the input (`None` when the output is written over
/// the input, byte by byte where it stands).
pub(crate) struct LutOp<'m> {
    table: &'m LutS8,
    x: Option<Src<'m>>,
}

impl LutOp<'_> {
    /// True if the op writes its output over its input (and does not read the input's region).
    pub(crate) fn in_place(&self) -> bool {
        self.x.is_none()
    }
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<LutOp<'m>, Error> {
    let table = table(ctx)?;
    let x = if ctx.op.in_place() { None } else { Some(Src::of(&ctx.input(0)?)?) };
    Ok(LutOp { table, x })
}

pub(crate) fn run(p: &LutOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let lut = p.table;
    let Some(x) = p.x else {
        // Output over the input: look each byte up where it stands.
        for v in out.iter_mut() {
            *v = lut[*v as usize] as u8;
        }
        return Ok(());
    };
    let xb = as_i8(x.bytes(&ro, idx)?);
    let out: &mut [i8] = bytemuck::cast_slice_mut(out);
    if xb.len() != out.len() {
        return Err(Error::BadOp { index: idx, reason: "table lookup input and output differ in size" });
    }
    lut_lookup_s8(lut, xb, out);
    Ok(())
}

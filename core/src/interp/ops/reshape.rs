//! RESHAPE ([`crate::kernels::reshape`]). Inputs: `[input]`, no words; the converter normally
//! gives input and output the same arena bytes, and then it costs nothing.

use super::common::{ArenaRange, Ctx};
use crate::Error;
use crate::interp::arena::carve;

/// A RESHAPE, prepared: the input's and output's arena regions (the same region when the
/// converter aliased them, and then it costs nothing).
pub(crate) struct ReshapeOp {
    x: ArenaRange,
    y: ArenaRange,
}

impl ReshapeOp {
    /// True if input and output are the same arena bytes (nothing to move).
    pub(crate) fn aliased(&self) -> bool {
        self.x.0 == self.y.0
    }
}

pub(crate) fn prepare(ctx: &Ctx) -> Result<ReshapeOp, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.byte_len != y.byte_len || x.dtype != y.dtype {
        return Err(ctx.bad("reshape changes the element count or dtype"));
    }
    let (xo, xl) = ctx.region(&x)?;
    let (yo, yl) = ctx.region(&y)?;
    if xo != yo && xo < yo + yl && yo < xo + yl {
        return Err(ctx.bad("reshape input and output partly overlap"));
    }
    Ok(ReshapeOp { x: (xo, xl), y: (yo, yl) })
}

pub(crate) fn run(o: &ReshapeOp, arena: &mut [u8], idx: u32) -> Result<(), Error> {
    let ((xo, xl), y) = (o.x, o.y);
    if xo == y.0 {
        return Ok(()); // aliased: nothing to move
    }
    let (out, _, ro) = carve(arena, y, (0, 0), idx)?;
    let src = ro.get(xo, xl, idx)?;
    if src.len() != out.len() {
        return Err(Error::BadOp { index: idx, reason: "reshape input and output differ in size" });
    }
    out.copy_from_slice(src);
    Ok(())
}

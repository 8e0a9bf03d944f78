//! TILE ([`crate::kernels::tile`]: TFLite `TILE` and `BROADCAST_TO`). Inputs: `[input]`, no
//! words: the output's shape says it all (each extent a multiple of the input's, the input's
//! shape right-aligned). The output has the input's dtype and quantization.

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut, shape_of};
use crate::Error;
use crate::kernels::tile::{TileParams, tile_s8, tile_s16};
use crate::model::ElementType;

/// A TILE, prepared.
pub(crate) struct TileOp<'m> {
    params: TileParams,
    x: Src<'m>,
    dtype: ElementType,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<TileOp<'m>, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != y.dtype || !matches!(x.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("tile supports int8 and int16, the output of the input's dtype"));
    }
    if x.per_tensor() != y.per_tensor() {
        return Err(ctx.bad("tile input and output must share their quantization"));
    }
    let ((sx, rx), (sy, ry)) = (shape_of(&x), shape_of(&y));
    let params = TileParams::new(sx.get(..rx).unwrap_or(&[]), sy.get(..ry).unwrap_or(&[]))?;
    Ok(TileOp { params, x: Src::of(&x)?, dtype: x.dtype })
}

pub(crate) fn run(o: &TileOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let xb = o.x.bytes(&ro, idx)?;
    match o.dtype {
        ElementType::I8 => tile_s8(&o.params, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        _ => tile_s16(&o.params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

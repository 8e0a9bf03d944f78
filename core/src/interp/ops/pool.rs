//! MAX_POOL_2D and AVERAGE_POOL_2D. Inputs: `[input]`. Parameter words: [`PoolWords`].

use super::{Ctx, as_i8, as_pod, as_pod_mut, bytes_of, dims4, read_activation};
use crate::interp::arena::carve;
use crate::kernels::common::{Hw, Padding, PaddingValues, compute_window};
use crate::kernels::pooling::{PoolParams, avg_pool_s8, avg_pool_s16, max_pool_s8, max_pool_s16};
use crate::kernels::Dims4;
use crate::model::{DType, OpKind};
use crate::Error;

/// Parameter words of a pooling op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolWords {
    /// Window (height, width).
    pub filter: [u32; 2],
    /// Strides (height, width).
    pub stride: [u32; 2],
    /// Padding: top, bottom, left, right.
    pub padding: [u32; 4],
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl PoolWords {
    /// Number of words.
    pub const LEN: usize = 10;
    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [fh, fw] = self.filter;
        let [sh, sw] = self.stride;
        let [t, b, l, r] = self.padding;
        let [lo, hi] = self.activation;
        [fh, fw, sh, sw, t, b, l, r, lo as u32, hi as u32]
    }
}

fn prepare(ctx: &Ctx) -> Result<PoolParams, Error> {
    ctx.counts(1..=1, 1)?;
    let x = ctx.input(0)?;
    let y = ctx.output()?;
    if x.dtype != y.dtype || !matches!(x.dtype, DType::I8 | DType::I16) {
        return Err(ctx.bad("pooling needs int8 or int16 input and output of the same type"));
    }
    if x.per_tensor() != y.per_tensor() {
        return Err(ctx.bad("pooling input and output must share their quantization"));
    }
    let (input, output) = (dims4(ctx, &x)?, dims4(ctx, &y)?);
    let mut p = ctx.params();
    let mut next = || p.usize_max(1 << 24, "pooling parameter too large");
    let filter = Hw::new(next()?, next()?);
    let stride = Hw::new(next()?, next()?);
    let padding = PaddingValues { top: next()?, bottom: next()?, left: next()?, right: next()? };
    let activation = read_activation(ctx, &mut p, y.dtype)?;
    let w = compute_window(Padding::Explicit(padding), Hw::new(input.h, input.w), filter, stride, Hw::new(1, 1))
        .map_err(|_| ctx.bad("the pooling window does not fit the input"))?;
    if Dims4::new(input.n, w.output.h, w.output.w, input.c) != output {
        return Err(ctx.bad("output shape does not follow from the input, window, strides and padding"));
    }
    Ok(PoolParams { input, output, filter, stride, padding, activation })
}

pub(crate) fn validate(ctx: &Ctx) -> Result<(), Error> {
    prepare(ctx).map(|_| ())
}

pub(crate) fn eval(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let params = prepare(ctx)?;
    let idx = ctx.op.index;
    let x = ctx.input(0)?;
    let (out_r, scratch_r) = ctx.out_and_scratch()?;
    let (out, _, ro) = carve(arena, out_r, scratch_r, idx)?;
    let xb = bytes_of(&x, &ro, idx)?;
    match (ctx.op.kind, x.dtype) {
        (OpKind::MaxPool2d, DType::I8) => max_pool_s8(&params, as_i8(xb), bytemuck::cast_slice_mut(out)),
        (OpKind::MaxPool2d, _) => max_pool_s16(&params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
        (_, DType::I8) => avg_pool_s8(&params, as_i8(xb), bytemuck::cast_slice_mut(out)),
        (_, _) => avg_pool_s16(&params, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

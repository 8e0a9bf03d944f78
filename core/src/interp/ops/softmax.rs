//! SOFTMAX ([`crate::kernels::softmax`]). Inputs: `[input]` (int8; output int8 or int16), over
//! the last axis. Parameter words: [`SoftmaxWords`](crate::model::words::SoftmaxWords).

use super::common::{Carved, Ctx, UnaryOp, as_i8, as_pod_mut, unary_op};
use crate::Error;
use crate::kernels::softmax::{SoftmaxParams, softmax_s8, softmax_s8_s16};
use crate::model::ElementType;

fn softmax_params(ctx: &Ctx) -> Result<SoftmaxParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.dtype != ElementType::I8 || !matches!(y.dtype, ElementType::I8 | ElementType::I16) {
        return Err(ctx.bad("softmax supports int8 input with int8 or int16 output"));
    }
    if x.dims() != y.dims() {
        return Err(ctx.bad("softmax output shape differs from its input"));
    }
    let depth = x.dims().last().copied().unwrap_or(1) as usize;
    if depth == 0 {
        return Err(ctx.bad("softmax over an empty axis"));
    }
    let mut p = ctx.params();
    let (input_multiplier, input_left_shift, diff_min) = (p.i32()?, p.i32()?, p.i32()?);
    if !(0..=31).contains(&input_left_shift) || input_multiplier < 0 || diff_min > 0 {
        return Err(ctx.bad("softmax parameters out of range"));
    }
    Ok(SoftmaxParams { input_multiplier, input_left_shift, diff_min, depth, rounding: ctx.rounding })
}

/// A SOFTMAX, prepared.
pub(crate) type SoftmaxOp<'m> = UnaryOp<'m, SoftmaxParams>;

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<SoftmaxOp<'m>, Error> {
    unary_op(ctx, softmax_params(ctx)?)
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &SoftmaxOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.y_dtype != ElementType::I8, idx)?;
    let (out, _, ro) = carved;
    let xb = as_i8(o.x.bytes(&ro, idx)?);
    match o.y_dtype {
        ElementType::I8 => softmax_s8(&o.params, xb, bytemuck::cast_slice_mut(out)),
        _ => softmax_s8_s16(&o.params, xb, as_pod_mut(out, idx)?),
    }
}

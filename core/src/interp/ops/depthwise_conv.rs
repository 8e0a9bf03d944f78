//! DEPTHWISE_CONV_2D ([`crate::kernels::depthwise_conv`]).
//!
//! Inputs: `[input, filter, bias (optional), multipliers (i32 [out_c]), shifts (i32 [out_c])]`.
//! Parameter words: [`DepthwiseWords`](crate::model::words::DepthwiseWords).

use super::common::{
    Carved, ConvLikeOp, Ctx, MAX_DIM, Operands, Src, as_i8, as_pod, as_pod_mut, check_output, conv_like_op_in_place,
    operands, read_window, run_conv,
};
use crate::Error;
use crate::kernels::common::Hw;
use crate::kernels::depthwise_conv::{DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s16};
use crate::model::ElementType;

/// A DEPTHWISE_CONV_2D, prepared.
pub(crate) type DepthwiseConvOp<'m> = ConvLikeOp<'m, DepthwiseConvParams>;

fn depthwise_params<'m>(ctx: &Ctx<'_, 'm>) -> Result<(DepthwiseConvParams, Operands<'m>), Error> {
    let o = operands(ctx)?;
    let mut p = ctx.params();
    let win = read_window(ctx, &mut p, o.x.dtype)?;
    let depth_multiplier = p.usize_max(MAX_DIM, "depth multiplier too large")?;
    let f = o.filter_dims;
    if f.n != 1 || o.in_dims.c.checked_mul(depth_multiplier) != Some(f.c) {
        return Err(ctx.bad("depthwise filter must be [1, kh, kw, in_c * depth_multiplier]"));
    }
    check_output(ctx, &o, &win, f.h, f.w, f.c)?;
    let params = DepthwiseConvParams {
        input: o.in_dims,
        filter: Hw::new(f.h, f.w),
        output: o.out_dims,
        depth_multiplier,
        stride: win.stride,
        dilation: win.dilation,
        padding: win.padding,
        input_offset: win.input_offset,
        output_offset: win.output_offset,
        activation: win.activation,
        rounding: ctx.rounding,
    };
    Ok((params, o))
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<DepthwiseConvOp<'m>, Error> {
    let (params, o) = depthwise_params(ctx)?;
    conv_like_op_in_place(ctx, params, o)
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &DepthwiseConvOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.dtype != ElementType::I8, idx)?;
    let (f, carved) = o.filter.int8::<S>(carved, o.weights, idx)?;
    if let Some(ip) = &o.in_place {
        return super::common::run_in_place(o, ip, carved, idx, |p, q, x, b, y, s| {
            depthwise_conv_s8(p, q, x, f, b, y, s)
        });
    }
    run_conv!(o, carved, idx, f, depthwise_conv_s8, depthwise_conv_s16)
}

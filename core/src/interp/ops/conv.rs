//! CONV_2D ([`crate::kernels::conv`]).
//!
//! Inputs: `[input, filter, bias (optional), multipliers (i32 [out_c]), shifts (i32 [out_c])]`.
//! Parameter words: [`ConvWords`](crate::model::words::ConvWords).

use super::common::{
    Carved, ConvLikeOp, Ctx, Operands, Src, as_i8, as_pod, as_pod_mut, check_output, conv_like_op_in_place, operands,
    read_window, run_conv,
};
use crate::Error;
use crate::kernels::conv::{ConvParams, conv_s8, conv_s16};
use crate::model::ElementType;

/// A CONV_2D, prepared.
pub(crate) type ConvOp<'m> = ConvLikeOp<'m, ConvParams>;

fn conv_params<'m>(ctx: &Ctx<'_, 'm>) -> Result<(ConvParams, Operands<'m>), Error> {
    let o = operands(ctx)?;
    let mut p = ctx.params();
    let win = read_window(ctx, &mut p, o.x.dtype)?;
    let f = o.filter_dims;
    if f.c == 0 || o.in_dims.c % f.c != 0 {
        return Err(ctx.bad("filter input channels must divide the input channels"));
    }
    check_output(ctx, &o, &win, f.h, f.w, f.n)?;
    let params = ConvParams {
        input: o.in_dims,
        filter: f,
        output: o.out_dims,
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

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<ConvOp<'m>, Error> {
    let (params, o) = conv_params(ctx)?;
    conv_like_op_in_place(ctx, params, o)
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &ConvOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(o.dtype != ElementType::I8, idx)?;
    let (f, carved) = o.filter.int8::<S>(carved, o.weights, idx)?;
    if let Some(ip) = &o.in_place {
        return super::common::run_in_place(o, ip, carved, idx, |p, q, x, b, y, s| conv_s8(p, q, x, f, b, y, s));
    }
    run_conv!(o, carved, idx, f, conv_s8, conv_s16)
}

//! CONV_2D and DEPTHWISE_CONV_2D.
//!
//! Inputs: `[input, filter, bias (optional), multipliers (i32 [out_c]), shifts (i32 [out_c])]`.
//! Parameter words: [`ConvWords`] (conv) and [`DepthwiseWords`] (depthwise).

use super::{Carved, Ctx, Src, as_i8, as_pod, as_pod_mut, dims4, read_activation};
use crate::Error;
use crate::interp::params::Params;
use crate::kernels::common::{Hw, Padding, PaddingValues, compute_window};
use crate::kernels::conv::{ConvParams, conv_s8, conv_s16};
use crate::kernels::depthwise_conv::{DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s16};
use crate::kernels::{ActivationRange, Dims4, PerChannelQuant};
use crate::model::{DType, TensorInfo};

/// Parameter words of a convolution window (shared by conv and depthwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvWords {
    /// Strides (height, width).
    pub stride: [u32; 2],
    /// Dilations (height, width).
    pub dilation: [u32; 2],
    /// Padding: top, bottom, left, right.
    pub padding: [u32; 4],
    /// `-input_zero_point`.
    pub input_offset: i32,
    /// `output_zero_point`.
    pub output_offset: i32,
    /// Output clamp (min, max).
    pub activation: [i32; 2],
}

impl ConvWords {
    /// Number of words.
    pub const LEN: usize = 12;

    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let [sh, sw] = self.stride;
        let [dh, dw] = self.dilation;
        let [t, b, l, r] = self.padding;
        let [lo, hi] = self.activation;
        [sh, sw, dh, dw, t, b, l, r, self.input_offset as u32, self.output_offset as u32, lo as u32, hi as u32]
    }
}

/// Parameter words of a depthwise convolution: the window, then the depth multiplier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DepthwiseWords {
    /// The window and offsets.
    pub conv: ConvWords,
    /// Output channels per input channel.
    pub depth_multiplier: u32,
}

impl DepthwiseWords {
    /// Number of words.
    pub const LEN: usize = ConvWords::LEN + 1;

    /// The words, in file order.
    pub fn to_words(&self) -> [u32; Self::LEN] {
        let mut w = [0u32; Self::LEN];
        for (o, i) in w.iter_mut().zip(self.conv.to_words()) {
            *o = i;
        }
        w[ConvWords::LEN] = self.depth_multiplier;
        w
    }
}

const MAX_DIM: usize = 1 << 24;

struct Window {
    stride: Hw,
    dilation: Hw,
    padding: PaddingValues,
    input_offset: i32,
    output_offset: i32,
    activation: ActivationRange,
}

fn read_window(ctx: &Ctx, p: &mut Params, dtype: DType) -> Result<Window, Error> {
    let mut next = || p.usize_max(MAX_DIM, "window parameter too large");
    let stride = Hw::new(next()?, next()?);
    let dilation = Hw::new(next()?, next()?);
    let (top, bottom, left, right) = (next()?, next()?, next()?, next()?);
    let input_offset = p.i32()?;
    let output_offset = p.i32()?;
    let activation = read_activation(ctx, p, dtype)?;
    Ok(Window {
        stride,
        dilation,
        padding: PaddingValues { top, bottom, left, right },
        input_offset,
        output_offset,
        activation,
    })
}

/// The tensors and quantization of a conv-like op, checked.
struct Operands<'m> {
    x: TensorInfo<'m>,
    filter: &'m [i8],
    bias: Option<TensorInfo<'m>>,
    quant: PerChannelQuant<'m>,
    in_dims: Dims4,
    filter_dims: Dims4,
    out_dims: Dims4,
}

fn operands<'m>(ctx: &Ctx<'_, 'm>) -> Result<Operands<'m>, Error> {
    ctx.counts(5..=5, 1)?;
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    let y = ctx.output()?;
    let filter: &'m [i8] = ctx.const_of(&w, DType::I8)?;
    let bias = ctx.opt_input(2)?;
    let oc = y.dims().last().copied().unwrap_or(0) as usize;
    let multiplier: &'m [i32] = ctx.const_of(&ctx.input(3)?, DType::I32)?;
    let shift: &'m [i32] = ctx.const_of(&ctx.input(4)?, DType::I32)?;
    if multiplier.len() != oc || shift.len() != oc {
        return Err(ctx.bad("multipliers and shifts must have one entry per output channel"));
    }
    if shift.iter().any(|&s| !(-31..=30).contains(&s)) || multiplier.iter().any(|&m| m < 0) {
        return Err(ctx.bad("a requantization shift or multiplier is out of range"));
    }
    let ok_dtypes = matches!(
        (x.dtype, y.dtype, bias.map(|b| b.dtype)),
        (DType::I8, DType::I8, None | Some(DType::I32))
            | (DType::I16, DType::I16, None | Some(DType::I32 | DType::I64))
    );
    if !ok_dtypes {
        return Err(ctx.bad("unsupported input/output/bias dtypes (int8 with int32 bias, or 16x8)"));
    }
    if let Some(b) = &bias {
        if b.len() != oc || b.const_bytes().is_none() {
            return Err(ctx.bad("bias must be a constant with one value per output channel"));
        }
    }
    let (in_dims, filter_dims, out_dims) = (dims4(ctx, &x)?, dims4(ctx, &w)?, dims4(ctx, &y)?);
    Ok(Operands { x, filter, bias, quant: PerChannelQuant { multiplier, shift }, in_dims, filter_dims, out_dims })
}

fn check_output(ctx: &Ctx, o: &Operands, win: &Window, kh: usize, kw: usize, oc: usize) -> Result<(), Error> {
    let w = compute_window(
        Padding::Explicit(win.padding),
        Hw::new(o.in_dims.h, o.in_dims.w),
        Hw::new(kh, kw),
        win.stride,
        win.dilation,
    )
    .map_err(|_| ctx.bad("the window does not fit the input"))?;
    let expected = Dims4::new(o.in_dims.n, w.output.h, w.output.w, oc);
    if expected != o.out_dims {
        return Err(ctx.bad("output shape does not follow from the input, filter, strides and padding"));
    }
    Ok(())
}

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

/// A convolution (`P`: [`ConvParams`]) or depthwise convolution ([`DepthwiseConvParams`]),
/// prepared: the kernel's parameters and where its operands are.
pub(crate) struct ConvOp<'m, P> {
    params: P,
    x: Src<'m>,
    dtype: DType,
    filter: &'m [i8],
    bias: Option<(DType, Src<'m>)>,
    quant: PerChannelQuant<'m>,
}

fn conv_op<'m, P>(params: P, o: Operands<'m>) -> Result<ConvOp<'m, P>, Error> {
    let bias = Src::of_opt(o.bias.as_ref())?;
    Ok(ConvOp { params, x: Src::of(&o.x)?, dtype: o.x.dtype, filter: o.filter, bias, quant: o.quant })
}

pub(crate) fn prepare_conv<'m>(ctx: &Ctx<'_, 'm>) -> Result<ConvOp<'m, ConvParams>, Error> {
    let (params, o) = conv_params(ctx)?;
    conv_op(params, o)
}

pub(crate) fn prepare_depthwise<'m>(ctx: &Ctx<'_, 'm>) -> Result<ConvOp<'m, DepthwiseConvParams>, Error> {
    let (params, o) = depthwise_params(ctx)?;
    conv_op(params, o)
}

/// Runs a conv-like kernel: `$s8` for int8, `$s16` for 16x8 (bias i64 or i32).
macro_rules! run_conv {
    ($op:expr, $carved:expr, $idx:expr, $s8:ident, $s16:ident) => {{
        let (o, idx) = ($op, $idx);
        let (out, scratch, ro) = $carved;
        let x = o.x.bytes(&ro, idx)?;
        let bias = Src::bytes_opt(o.bias, &ro, idx)?;
        let q = &o.quant;
        match (o.dtype, bias) {
            (DType::I8, None) => $s8(&o.params, q, as_i8(x), o.filter, None, bytemuck::cast_slice_mut(out), scratch),
            (DType::I8, Some((_, b))) => $s8(
                &o.params,
                q,
                as_i8(x),
                o.filter,
                Some(as_pod::<i32>(b, idx)?),
                bytemuck::cast_slice_mut(out),
                scratch,
            ),
            (_, Some((DType::I32, b))) => $s16::<i32>(
                &o.params,
                q,
                as_pod(x, idx)?,
                o.filter,
                Some(as_pod::<i32>(b, idx)?),
                as_pod_mut(out, idx)?,
            ),
            (_, Some((_, b))) => $s16::<i64>(
                &o.params,
                q,
                as_pod(x, idx)?,
                o.filter,
                Some(as_pod::<i64>(b, idx)?),
                as_pod_mut(out, idx)?,
            ),
            (_, None) => $s16::<i64>(&o.params, q, as_pod(x, idx)?, o.filter, None, as_pod_mut(out, idx)?),
        }
    }};
}

pub(crate) fn run_conv(o: &ConvOp<ConvParams>, carved: Carved, idx: u32) -> Result<(), Error> {
    run_conv!(o, carved, idx, conv_s8, conv_s16)
}

pub(crate) fn run_depthwise(o: &ConvOp<DepthwiseConvParams>, carved: Carved, idx: u32) -> Result<(), Error> {
    run_conv!(o, carved, idx, depthwise_conv_s8, depthwise_conv_s16)
}

//! FULLY_CONNECTED ([`crate::kernels::fully_connected`]).
//!
//! Inputs: `[input, weights [out, in], bias (optional), multipliers (i32), shifts (i32),
//! exact multipliers (optional; i64 [n, 2] = (mantissa, exponent) pairs, needed for the TFLite
//! interpreter's rounding)]`, with one multiplier per output channel for per-channel weights or
//! one for per-tensor weights. Parameter words:
//! [`FullyConnectedWords`](crate::model::words::FullyConnectedWords).

use super::common::{Carved, Ctx, Filter, Src, as_i8, as_pod, as_pod_mut, const_filter, read_activation};
use crate::Error;
use crate::kernels::fully_connected::{
    ExactMultiplier, FullyConnectedMultiplier, FullyConnectedParams, FullyConnectedPerChannelQuant,
    fully_connected_per_channel_s8, fully_connected_per_channel_s16, fully_connected_s8, fully_connected_s16,
};
use crate::kernels::fully_connected_s4::{fully_connected_per_channel_s4, fully_connected_s4};
use crate::kernels::{PerChannelQuant, Rounding};
use crate::model::{ElementType, TensorInfo};
use crate::requant::QuantizedMultiplier;

enum Quant<'m> {
    Tensor(FullyConnectedMultiplier),
    Channel(PerChannelQuant<'m>, &'m [ExactMultiplier]),
}

/// A FULLY_CONNECTED's kernel parameters and checked operands.
struct Checked<'m> {
    params: FullyConnectedParams,
    quant: Quant<'m>,
    x: TensorInfo<'m>,
    filter: Filter<'m>,
    bias: Option<TensorInfo<'m>>,
}

fn check<'m>(ctx: &Ctx<'_, 'm>) -> Result<Checked<'m>, Error> {
    ctx.counts(5..=6, 1)?;
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    let y = ctx.output()?;
    let bias = ctx.opt_input(2)?;
    let filter = const_filter(ctx, &w, x.dtype)?;
    let (out_depth, in_depth) = match w.dims() {
        &[o, i] if o > 0 && i > 0 => (o as usize, i as usize),
        _ => return Err(ctx.bad("weights must be [out, in] with both > 0")),
    };
    if x.len() % in_depth != 0 {
        return Err(ctx.bad("input size is not a multiple of the weights' input depth"));
    }
    let batches = x.len() / in_depth;
    if batches.checked_mul(out_depth) != Some(y.len()) {
        return Err(ctx.bad("output size does not match batches x output depth"));
    }
    let ok = matches!(
        (x.dtype, y.dtype, bias.map(|b| b.dtype)),
        (ElementType::I8, ElementType::I8, None | Some(ElementType::I32))
            | (ElementType::I16, ElementType::I16, None | Some(ElementType::I32 | ElementType::I64))
    );
    if !ok {
        return Err(ctx.bad("unsupported input/output/bias dtypes (int8 with int32 bias, or 16x8)"));
    }
    if let Some(b) = &bias {
        if b.len() != out_depth || b.const_bytes().is_none() {
            return Err(ctx.bad("bias must be a constant with one value per output"));
        }
    }
    let multiplier: &'m [i32] = ctx.const_of(&ctx.input(3)?, ElementType::I32)?;
    let shift: &'m [i32] = ctx.const_of(&ctx.input(4)?, ElementType::I32)?;
    if multiplier.len() != shift.len() || !(multiplier.len() == 1 || multiplier.len() == out_depth) {
        return Err(ctx.bad("multipliers must be one per output or one for the tensor"));
    }
    if shift.iter().any(|&s| !(-31..=30).contains(&s)) || multiplier.iter().any(|&m| m < 0) {
        return Err(ctx.bad("a requantization shift or multiplier is out of range"));
    }
    let exact: &'m [ExactMultiplier] = match ctx.opt_input(5)? {
        Some(e) => bytemuck::try_cast_slice(ctx.const_of::<i64>(&e, ElementType::I64)?)
            .map_err(|_| ctx.bad("exact multipliers must be (mantissa, exponent) pairs"))?,
        None => &[],
    };
    if ctx.rounding == Rounding::Single && exact.len() != multiplier.len() {
        return Err(ctx.bad("single rounding needs one exact multiplier per multiplier"));
    }
    let mut p = ctx.params();
    let input_offset = p.i32()?;
    let output_offset = p.i32()?;
    let activation = read_activation(ctx, &mut p, y.dtype)?;
    let params = FullyConnectedParams {
        batches,
        input_depth: in_depth,
        output_depth: out_depth,
        input_offset,
        output_offset,
        activation,
        rounding: ctx.rounding,
    };
    let quant = match (multiplier, shift) {
        (&[m], &[s]) => Quant::Tensor(FullyConnectedMultiplier {
            fixed: QuantizedMultiplier { multiplier: m, shift: s },
            exact: exact.first().copied().unwrap_or_default(),
        }),
        _ => Quant::Channel(PerChannelQuant { multiplier, shift }, exact),
    };
    Ok(Checked { params, quant, x, filter, bias })
}

/// A fully connected layer, prepared.
pub(crate) struct FullyConnectedOp<'m> {
    params: FullyConnectedParams,
    quant: Quant<'m>,
    x: Src<'m>,
    dtype: ElementType,
    filter: Filter<'m>,
    bias: Option<(ElementType, Src<'m>)>,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<FullyConnectedOp<'m>, Error> {
    let p = check(ctx)?;
    let bias = Src::of_opt(p.bias.as_ref())?;
    Ok(FullyConnectedOp {
        params: p.params,
        quant: p.quant,
        x: Src::of(&p.x)?,
        dtype: p.x.dtype,
        filter: p.filter,
        bias,
    })
}

pub(crate) fn run<S: crate::interp::OpSet>(p: &FullyConnectedOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(p.dtype != ElementType::I8, idx)?;
    let (out, scratch, ro) = carved;
    let x = p.x.bytes(&ro, idx)?;
    let bias = Src::bytes_opt(p.bias, &ro, idx)?;
    let prm = &p.params;
    let filter = match p.filter {
        Filter::I8(f) => f,
        Filter::I4(f) => {
            // Read packed (each weight once per input row: unpacking would cost as much).
            super::common::int4_gate::<S>(true, idx)?;
            let b = match bias {
                Some((_, b)) => Some(as_pod::<i32>(b, idx)?),
                None => None,
            };
            let out = bytemuck::cast_slice_mut(out);
            return match &p.quant {
                Quant::Tensor(q) => fully_connected_s4(prm, q, as_i8(x), f, b, out, scratch),
                Quant::Channel(fixed, exact) => {
                    let q = FullyConnectedPerChannelQuant { fixed: *fixed, exact };
                    fully_connected_per_channel_s4(prm, &q, as_i8(x), f, b, out, scratch)
                }
            };
        }
    };
    match (&p.quant, p.dtype) {
        (Quant::Tensor(q), ElementType::I8) => {
            let b = match bias {
                Some((_, b)) => Some(as_pod::<i32>(b, idx)?),
                None => None,
            };
            fully_connected_s8(prm, q, as_i8(x), filter, b, bytemuck::cast_slice_mut(out), scratch)
        }
        (Quant::Channel(fixed, exact), ElementType::I8) => {
            let q = FullyConnectedPerChannelQuant { fixed: *fixed, exact };
            let b = match bias {
                Some((_, b)) => Some(as_pod::<i32>(b, idx)?),
                None => None,
            };
            fully_connected_per_channel_s8(prm, &q, as_i8(x), filter, b, bytemuck::cast_slice_mut(out), scratch)
        }
        (Quant::Tensor(q), _) => match bias {
            Some((ElementType::I32, b)) => fully_connected_s16::<i32>(
                prm,
                q,
                as_pod(x, idx)?,
                filter,
                Some(as_pod(b, idx)?),
                as_pod_mut(out, idx)?,
            ),
            Some((_, b)) => fully_connected_s16::<i64>(
                prm,
                q,
                as_pod(x, idx)?,
                filter,
                Some(as_pod(b, idx)?),
                as_pod_mut(out, idx)?,
            ),
            None => fully_connected_s16::<i64>(prm, q, as_pod(x, idx)?, filter, None, as_pod_mut(out, idx)?),
        },
        (Quant::Channel(fixed, exact), _) => {
            let q = FullyConnectedPerChannelQuant { fixed: *fixed, exact };
            match bias {
                Some((ElementType::I32, b)) => fully_connected_per_channel_s16::<i32>(
                    prm,
                    &q,
                    as_pod(x, idx)?,
                    filter,
                    Some(as_pod(b, idx)?),
                    as_pod_mut(out, idx)?,
                ),
                Some((_, b)) => fully_connected_per_channel_s16::<i64>(
                    prm,
                    &q,
                    as_pod(x, idx)?,
                    filter,
                    Some(as_pod(b, idx)?),
                    as_pod_mut(out, idx)?,
                ),
                None => fully_connected_per_channel_s16::<i64>(
                    prm,
                    &q,
                    as_pod(x, idx)?,
                    filter,
                    None,
                    as_pod_mut(out, idx)?,
                ),
            }
        }
    }
}

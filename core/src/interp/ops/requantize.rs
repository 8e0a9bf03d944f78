//! QUANTIZE between integer types (int8 ↔ int16, or a new scale in the same type): what a model
//! with some layers in 16x8 runs between its int8 and int16 layers. Inputs: `[input]`, per-tensor
//! quantized int8 or int16; output the same shape, int8 or int16. Parameter words:
//! `[multiplier, shift]`, the quantized `s_in / s_out` (TFLite's `QuantizeMultiplier`, written by
//! the converter); the zero points are the tensors'. Both rounding modes round twice here, as
//! TFLite Micro and the TFLite interpreter do. The kernel is
//! [`crate::kernels::requantize`] (TFLite's `reference_ops::Requantize`).

use super::common::{Carved, Ctx, Src, as_pod, as_pod_mut};
use crate::Error;
use crate::kernels::requantize::{
    IntType, RequantizeParams, requantize_s8_s8, requantize_s8_s16, requantize_s16_s8, requantize_s16_s16,
};
use crate::model::ElementType;
use crate::requant::QuantizedMultiplier;

fn int_type(ctx: &Ctx, d: ElementType) -> Result<IntType, Error> {
    match d {
        ElementType::I8 => Ok(IntType::I8),
        ElementType::I16 => Ok(IntType::I16),
        _ => Err(ctx.bad("quantize converts between int8 and int16")),
    }
}

fn requantize_params(ctx: &Ctx) -> Result<RequantizeParams, Error> {
    ctx.counts(1..=1, 1)?;
    let (x, y) = (ctx.input(0)?, ctx.output()?);
    if x.len() != y.len() {
        return Err(ctx.bad("quantize input and output differ in size"));
    }
    let (input_type, output_type) = (int_type(ctx, x.dtype)?, int_type(ctx, y.dtype)?);
    let (_, zin) = x.per_tensor().ok_or(ctx.bad("quantize input is not quantized per tensor"))?;
    let (_, zout) = y.per_tensor().ok_or(ctx.bad("quantize output is not quantized per tensor"))?;
    let in_range = |z: i32, t: IntType| match t {
        IntType::I8 => (-128..=127).contains(&z),
        IntType::I16 => (-32768..=32767).contains(&z),
    };
    if !in_range(zin, input_type) || !in_range(zout, output_type) {
        return Err(ctx.bad("a zero point is outside its type"));
    }
    let mut p = ctx.params();
    let multiplier = QuantizedMultiplier { multiplier: p.i32()?, shift: p.i32()? };
    // The shifted input must fit 32 bits: |x - zp| < 2^8 (int8) or 2^16 (int16).
    let max_shift = if input_type == IntType::I8 { 23 } else { 15 };
    if multiplier.multiplier < 0 || multiplier.shift < -31 || multiplier.shift > max_shift {
        return Err(ctx.bad("requantization multiplier or shift out of range"));
    }
    Ok(RequantizeParams { input_zero_point: zin, output_zero_point: zout, multiplier, input_type, output_type })
}

/// A requantization, prepared.
pub(crate) struct RequantizeOp<'m> {
    params: RequantizeParams,
    x: Src<'m>,
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<RequantizeOp<'m>, Error> {
    Ok(RequantizeOp { params: requantize_params(ctx)?, x: Src::of(&ctx.input(0)?)? })
}

pub(crate) fn run(o: &RequantizeOp, carved: Carved, idx: u32) -> Result<(), Error> {
    let (out, _, ro) = carved;
    let (p, xb) = (&o.params, o.x.bytes(&ro, idx)?);
    match (p.input_type, p.output_type) {
        (IntType::I8, IntType::I16) => requantize_s8_s16(p, bytemuck::cast_slice(xb), as_pod_mut(out, idx)?),
        (IntType::I16, IntType::I8) => requantize_s16_s8(p, as_pod(xb, idx)?, bytemuck::cast_slice_mut(out)),
        (IntType::I8, IntType::I8) => requantize_s8_s8(p, bytemuck::cast_slice(xb), bytemuck::cast_slice_mut(out)),
        (IntType::I16, IntType::I16) => requantize_s16_s16(p, as_pod(xb, idx)?, as_pod_mut(out, idx)?),
    }
}

//! CONCATENATION ([`crate::kernels::concat`]). Inputs: 1 to
//! [`MAX_CONCAT_INPUTS`] int8 tensors of the output's rank. Parameter words: `[axis]`, then one
//! [`ConcatInputWords`](crate::model::words::ConcatInputWords) per input. Its inputs are read
//! again at every run (not kept in a prepared form: the models we meet rarely have one).

use super::common::{Ctx, as_i8, bytes_of, qm, shape_of};
use super::regions;
use crate::Error;
use crate::interp::arena::carve;
use crate::kernels::concat::{ConcatInput, ConcatParams, Requantize, concat_s8};
use crate::model::ElementType;
use crate::model::words::MAX_CONCAT_INPUTS;

fn concat_inputs(ctx: &Ctx, inputs: &mut [ConcatInput; MAX_CONCAT_INPUTS]) -> Result<(usize, i32), Error> {
    let n = ctx.op.num_inputs();
    if n == 0 || n > MAX_CONCAT_INPUTS || ctx.op.num_outputs() != 1 {
        return Err(ctx.bad("concatenation needs 1 to 16 inputs and one output"));
    }
    let y = ctx.output()?;
    if y.dtype != ElementType::I8 {
        return Err(ctx.bad("concatenation supports int8"));
    }
    let rank = y.dims().len() as i32;
    let mut p = ctx.params();
    let axis = p.i32()?;
    let ax = if axis < 0 { axis + rank } else { axis };
    if ax < 0 || ax >= rank {
        return Err(ctx.bad("concatenation axis out of range"));
    }
    for (k, slot) in inputs.iter_mut().enumerate().take(n) {
        let t = ctx.input(k)?;
        if t.dtype != ElementType::I8 || t.dims().len() != y.dims().len() {
            return Err(ctx.bad("concatenation inputs must be int8 of the output's rank"));
        }
        let axis_len = t.dims().get(ax as usize).copied().unwrap_or(0) as usize;
        let flag = p.u32()?;
        let (zi, zo) = (p.i32()?, p.i32()?);
        let m = qm(&mut p)?;
        let requantize = match flag {
            0 => None,
            1 if (-31..=30).contains(&m.shift) && m.multiplier >= 0 => {
                Some(Requantize { input_zero_point: zi, output_zero_point: zo, multiplier: m })
            }
            _ => return Err(ctx.bad("bad concatenation requantization words")),
        };
        *slot = ConcatInput { axis_len, requantize };
    }
    Ok((n, axis))
}

/// Checks a CONCATENATION (it has no prepared form).
pub(crate) fn validate(ctx: &Ctx) -> Result<(), Error> {
    let mut inputs = [ConcatInput::copy(0); MAX_CONCAT_INPUTS];
    let (n, axis) = concat_inputs(ctx, &mut inputs)?;
    let (sy, ry) = shape_of(&ctx.output()?);
    ConcatParams::new(&sy[..ry], axis, inputs.get(..n).unwrap_or(&[]))
        .map_err(|_| ctx.bad("concatenation input shapes do not add up to the output"))?;
    for k in 0..n {
        let t = ctx.input(k)?;
        let (st, _) = shape_of(&t);
        for d in 0..ry {
            if d as i32 != (if axis < 0 { axis + ry as i32 } else { axis }) && st.get(d) != sy.get(d) {
                return Err(ctx.bad("concatenation inputs differ from the output off the axis"));
            }
        }
    }
    Ok(())
}

/// Reads a CONCATENATION's words and runs it. Not inlined: its locals (up to 16 inputs) stay
/// out of the interpreter's dispatch frame, under every other op's kernel.
#[inline(never)]
pub(crate) fn eval(ctx: &Ctx, arena: &mut [u8]) -> Result<(), Error> {
    let mut inputs = [ConcatInput::copy(0); MAX_CONCAT_INPUTS];
    let (n, axis) = concat_inputs(ctx, &mut inputs)?;
    let (sy, ry) = shape_of(&ctx.output()?);
    let params = ConcatParams::new(&sy[..ry], axis, inputs.get(..n).unwrap_or(&[]))?;
    let idx = ctx.op.index;
    let (out_r, scratch_r) = regions(ctx)?;
    let (out, _, ro) = carve(arena, out_r, scratch_r, idx)?;
    let mut data: [&[i8]; MAX_CONCAT_INPUTS] = [&[]; MAX_CONCAT_INPUTS];
    for (k, d) in data.iter_mut().enumerate().take(n) {
        *d = as_i8(bytes_of(&ctx.input(k)?, &ro, idx)?);
    }
    concat_s8(&params, data.get(..n).unwrap_or(&[]), bytemuck::cast_slice_mut(out))
}

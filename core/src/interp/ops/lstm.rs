//! UNIDIRECTIONAL_SEQUENCE_LSTM ([`crate::kernels::lstm`]), with its state kept between invokes.
//!
//! Inputs: `[input [batch, time, n_in] (or [time, batch, n_in] when time-major), input weights
//! [4, n_cell, n_in] (int8), recurrent weights [4, n_cell, n_cell] (int8), biases [4, n_cell]
//! (int32; int64 for 16x8)]`, gates in the order input, forget, cell, output; output
//! `[batch, time, n_cell]` (or time-major), int8 or int16 as the input. Parameter words:
//! [`LstmWords`](crate::model::words::LstmWords).
//!
//! **State.** The op's scratch region is its state, TFLite Micro's two variable tensors: the
//! int16 cell state `[batch, n_cell]`, then the hidden state `[batch, n_cell]` (the activation
//! type). The converter plans that region for the whole run (no other buffer ever shares its
//! bytes), so what one invoke leaves there is what the next starts from: a sequence fed in
//! consecutive slices (streaming audio, one frame per invoke) gives the outputs of one invoke on
//! the whole sequence. [`Interpreter::new`](crate::interp::Interpreter::new) and
//! [`Interpreter::reset_state`](crate::interp::Interpreter::reset_state) set the state TFLite
//! Micro starts from: hidden at its zero point, cell 0.

use super::common::{Carved, Ctx, Src, as_i8, as_pod, as_pod_mut};
use crate::Error;
use crate::kernels::lstm::{LstmDims, LstmParams, LstmWeights, TableInputScaling, lstm_reset_state, lstm_s8, lstm_s16};
use crate::model::ElementType;
use crate::model::words::LstmWords;
use crate::requant::QuantizedMultiplier;

/// An LSTM, prepared.
pub(crate) struct LstmOp<'m> {
    params: LstmParams,
    x: Src<'m>,
    input_weights: &'m [i8],
    recurrent_weights: &'m [i8],
    bias: Bias<'m>,
}

enum Bias<'m> {
    I32(&'m [i32]),
    I64(&'m [i64]),
}

fn multiplier(ctx: &Ctx, w: [i32; 2]) -> Result<QuantizedMultiplier, Error> {
    let [multiplier, shift] = w;
    if multiplier < 0 || !(-31..=30).contains(&shift) {
        return Err(ctx.bad("lstm: a multiplier or shift is out of range"));
    }
    Ok(QuantizedMultiplier { multiplier, shift })
}

fn read_words(ctx: &Ctx) -> Result<LstmWords, Error> {
    let mut p = ctx.params();
    let time_major = p.u32()?;
    let mut offsets = [0i32; 3];
    for o in offsets.iter_mut() {
        *o = p.i32()?;
    }
    let mut pairs = [[0i32; 2]; 4 + 4 + 3 + 1];
    for pair in pairs.iter_mut() {
        *pair = [p.i32()?, p.i32()?];
    }
    let cell_clip = p.i32()?;
    let [i0, i1, i2, i3, r0, r1, r2, r3, m0, m1, m2, cell_tanh] = pairs;
    Ok(LstmWords {
        time_major,
        offsets,
        input_fc: [i0, i1, i2, i3],
        recurrent_fc: [r0, r1, r2, r3],
        muls: [m0, m1, m2],
        cell_tanh,
        cell_clip,
    })
}

pub(crate) fn prepare<'m>(ctx: &Ctx<'_, 'm>) -> Result<LstmOp<'m>, Error> {
    ctx.counts(4..=4, 1)?;
    let (x, wi, wr, b, y) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?, ctx.input(3)?, ctx.output()?);
    let act_bytes = match (x.dtype, y.dtype) {
        (ElementType::I8, ElementType::I8) => 1,
        (ElementType::I16, ElementType::I16) => 2,
        _ => return Err(ctx.bad("lstm: input and output must both be int8 or both int16")),
    };
    let w = read_words(ctx)?;
    let time_major = match w.time_major {
        0 => false,
        1 => true,
        _ => return Err(ctx.bad("lstm: time_major must be 0 or 1")),
    };
    let (n_cell, n_in) = match wi.dims() {
        &[4, c, i] if c > 0 && i > 0 => (c as usize, i as usize),
        _ => return Err(ctx.bad("lstm: input weights must be [4, n_cell, n_input]")),
    };
    if wr.dims() != [4, n_cell as u32, n_cell as u32] {
        return Err(ctx.bad("lstm: recurrent weights must be [4, n_cell, n_cell]"));
    }
    if b.dims() != [4, n_cell as u32] {
        return Err(ctx.bad("lstm: biases must be [4, n_cell]"));
    }
    let (outer, inner) = match x.dims() {
        &[a, t, i] if i as usize == n_in && a > 0 && t > 0 => (a as usize, t as usize),
        _ => return Err(ctx.bad("lstm: input must be 3-D with the weights' input depth last")),
    };
    if y.dims() != [outer as u32, inner as u32, n_cell as u32] {
        return Err(ctx.bad("lstm: output must be the input's first two extents by n_cell"));
    }
    let (batch, time) = if time_major { (inner, outer) } else { (outer, inner) };
    let dims = LstmDims { batch, time, input: n_in, cell: n_cell, time_major };
    let [input_offset, hidden_offset, hidden_zero_point] = w.offsets;
    let (lo, hi) = if act_bytes == 1 { (-128, 127) } else { (0, 0) };
    if !(lo..=hi).contains(&hidden_zero_point)
        || hidden_offset != -hidden_zero_point
        || !(-hi..=-lo).contains(&input_offset)
    {
        return Err(ctx.bad("lstm: zero points out of range for the activation type"));
    }
    let mut input_fc = [QuantizedMultiplier { multiplier: 0, shift: 0 }; 4];
    let mut recurrent_fc = input_fc;
    for (q, &m) in input_fc.iter_mut().zip(&w.input_fc) {
        *q = multiplier(ctx, m)?;
    }
    for (q, &m) in recurrent_fc.iter_mut().zip(&w.recurrent_fc) {
        *q = multiplier(ctx, m)?;
    }
    let [fm, im, hm] = w.muls;
    let [tm, ts] = w.cell_tanh;
    // Within what TableInputScaling::for_power_of_two gives: no int32 overflow on int16 input.
    if !(1..=3 << 13).contains(&tm) || !(0..=31).contains(&ts) {
        return Err(ctx.bad("lstm: cell tanh scaling out of range"));
    }
    let cell_clip = match w.cell_clip {
        -1 => None,
        c @ 0..=32767 => Some(c as i16),
        _ => return Err(ctx.bad("lstm: cell clip out of range")),
    };
    let params = LstmParams {
        dims,
        input_offset,
        hidden_offset,
        hidden_zero_point,
        input_fc,
        recurrent_fc,
        forget_mul: multiplier(ctx, fm)?,
        input_mul: multiplier(ctx, im)?,
        hidden_mul: multiplier(ctx, hm)?,
        cell_tanh: TableInputScaling { multiplier: tm, shift: ts },
        cell_clip,
    };
    let input_weights: &'m [i8] = ctx.const_of(&wi, ElementType::I8)?;
    let recurrent_weights: &'m [i8] = ctx.const_of(&wr, ElementType::I8)?;
    let bias = match (act_bytes, b.dtype) {
        (1, ElementType::I32) => Bias::I32(ctx.const_of(&b, ElementType::I32)?),
        (2, ElementType::I64) => Bias::I64(ctx.const_of(&b, ElementType::I64)?),
        _ => return Err(ctx.bad("lstm: biases must be int32 (int8) or int64 (16x8)")),
    };
    if ctx.scratch().1 != dims.state_bytes(act_bytes) {
        return Err(ctx.bad("lstm: its scratch (the state) must be batch x n_cell x (2 + activation bytes)"));
    }
    Ok(LstmOp { params, x: Src::of(&x)?, input_weights, recurrent_weights, bias })
}

/// Splits the state region into the cell state and the hidden state's bytes.
fn split_state<'s>(o: &LstmOp, state: &'s mut [u8], idx: u32) -> Result<(&'s mut [i16], &'s mut [u8]), Error> {
    let (cell, hidden) = state
        .split_at_mut_checked(o.params.dims.state_len() * 2)
        .ok_or(Error::BadOp { index: idx, reason: "lstm: state region too short" })?;
    Ok((as_pod_mut(cell, idx)?, hidden))
}

pub(crate) fn run<S: crate::interp::OpSet>(o: &LstmOp, carved: Carved, idx: u32) -> Result<(), Error> {
    super::common::int16_gate::<S>(matches!(o.bias, Bias::I64(_)), idx)?;
    let (out, state, ro) = carved;
    let x = o.x.bytes(&ro, idx)?;
    let (cell, hidden) = split_state(o, state, idx)?;
    let (wi, wr) = (o.input_weights, o.recurrent_weights);
    match o.bias {
        Bias::I32(bias) => {
            let w = LstmWeights { input: wi, recurrent: wr, bias };
            lstm_s8(&o.params, &w, as_i8(x), bytemuck::cast_slice_mut(hidden), cell, bytemuck::cast_slice_mut(out))
        }
        Bias::I64(bias) => {
            let w = LstmWeights { input: wi, recurrent: wr, bias };
            lstm_s16(&o.params, &w, as_pod(x, idx)?, as_pod_mut(hidden, idx)?, cell, as_pod_mut(out, idx)?)
        }
    }
}

/// Sets the state of a prepared LSTM to TFLite Micro's reset values (hidden at its zero point,
/// cell 0) in `state`, its scratch region.
pub(crate) fn reset(o: &LstmOp, state: &mut [u8], idx: u32) -> Result<(), Error> {
    let (cell, hidden) = split_state(o, state, idx)?;
    match o.bias {
        Bias::I32(_) => lstm_reset_state::<i8>(&o.params, bytemuck::cast_slice_mut(hidden), cell),
        Bias::I64(_) => lstm_reset_state::<i16>(&o.params, as_pod_mut(hidden, idx)?, cell),
    }
}

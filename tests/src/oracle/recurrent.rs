//! UNIDIRECTIONAL_SEQUENCE_LSTM (int8 8x8→16 and 16x8) against TFLite Micro
//! (`tests/golden/kernels/lstm*.json`), bit for bit.
//!
//! Each case is a sequence TFLite Micro ran as `chunks` invokes on consecutive time slices, its
//! variable tensors carrying the state from one invoke to the next. The check runs
//! [`lstm_s8`] / [`lstm_s16`] the same way, from [`lstm_reset_state`], and compares every
//! output. Where the layout keeps a time slice contiguous (`time_major`, or one batch row) it
//! also runs the whole sequence one time step per call and in a single call: the state carried
//! by the kernel between calls must give the same outputs as one call on the whole sequence.
//!
//! TFLite Micro is the only oracle: the TFLite interpreter's integer LSTM needs the converter's
//! intermediate tensors and computes its gates at other scales (another algorithm); the
//! golden files store TFLite Micro's output under both names.

use microquant::kernels::Rounding;
use microquant::kernels::lstm::{
    LSTM_GATES, LstmDims, LstmParams, LstmQuant, LstmWeights, lstm_reset_state, lstm_s8, lstm_s16,
};
use microquant::kernels::tensor::PerTensorQuant;

use super::{At, Bias, Expected, Failure, Oracle, Tally, Values, Workspace, compare_values, kernel, take};

/// An LSTM case.
#[derive(Debug, Clone, Copy)]
pub struct LstmCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// `[batch, time, n_input, n_cell]` of the whole sequence.
    pub dims: [usize; 4],
    /// `[time, batch, ·]` layout.
    pub time_major: bool,
    /// Calls the sequence is split into (time slices).
    pub chunks: usize,
    /// The slices' inputs one after the other (int8, or int16 for 16x8).
    pub input: Values<'a>,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point.
    pub input_zero_point: i32,
    /// Input-to-gate weights `[4, n_cell, n_input]`.
    pub input_weights: &'a [i8],
    /// Their scales per gate.
    pub input_weight_scales: &'a [f32],
    /// Recurrent weights `[4, n_cell, n_cell]`.
    pub recurrent_weights: &'a [i8],
    /// Their scales per gate.
    pub recurrent_weight_scales: &'a [f32],
    /// Biases `[4, n_cell]`: int32 (int8) or int64 (16x8).
    pub bias: Bias<'a>,
    /// Hidden state scale.
    pub hidden_scale: f32,
    /// Hidden state zero point.
    pub hidden_zero_point: i32,
    /// Cell state scale.
    pub cell_scale: f32,
    /// Cell clip.
    pub cell_clip: f32,
    /// TFLite Micro's outputs.
    pub expected: Expected<'a>,
}

fn gates<'a>(case: &'a str, v: &[f32]) -> Result<[f32; LSTM_GATES], Failure<'a>> {
    v.try_into().map_err(|_| Failure::BadCase { case, reason: "one weight scale per gate expected" })
}

type PrepareFn = fn(LstmDims, &LstmQuant) -> Result<LstmParams, microquant::Error>;
type KernelFn<X, B> =
    fn(&LstmParams, &LstmWeights<'_, B>, &[X], &mut [X], &mut [i16], &mut [X]) -> Result<(), microquant::Error>;
type ResetFn<X> = fn(&LstmParams, &mut [X], &mut [i16]) -> Result<(), microquant::Error>;

/// Runs the kernel over the sequence in `calls` calls (equal time slices), from the reset
/// state, writing the slices' outputs one after the other into `out`.
#[allow(clippy::too_many_arguments)]
fn run_calls<'a, X: Copy, B: Copy>(
    c: &'a LstmCase<'a>,
    calls: usize,
    quant: &LstmQuant,
    prepare: PrepareFn,
    kernel_fn: KernelFn<X, B>,
    reset: ResetFn<X>,
    bias: &'a [B],
    input: &[X],
    hidden: &mut [X],
    cell: &mut [i16],
    out: &mut [X],
) -> Result<(), Failure<'a>> {
    let [batch, time, n_input, n_cell] = c.dims;
    let dims = LstmDims { batch, time: time / calls, input: n_input, cell: n_cell, time_major: c.time_major };
    let p = kernel(c.name, "prepare", prepare(dims, quant))?;
    kernel(c.name, "reset", reset(&p, hidden, cell))?;
    let w = LstmWeights { input: c.input_weights, recurrent: c.recurrent_weights, bias };
    let (n_in, n_out) = (dims.input_len(), dims.output_len());
    for k in 0..calls {
        let x = input.get(k * n_in..(k + 1) * n_in).ok_or(Failure::BadCase { case: c.name, reason: "input length" })?;
        let o = out.get_mut(k * n_out..(k + 1) * n_out).ok_or(Failure::BadCase { case: c.name, reason: "output" })?;
        kernel(c.name, "lstm", kernel_fn(&p, &w, x, hidden, cell, o))?;
    }
    Ok(())
}

/// Runs one case against TFLite Micro.
pub fn check<'a>(c: &'a LstmCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let [batch, time, _, n_cell] = c.dims;
    if c.chunks == 0 || time % c.chunks != 0 {
        return Err(Failure::BadCase { case: c.name, reason: "time not a multiple of chunks" });
    }
    let quant = LstmQuant {
        input: PerTensorQuant { scale: c.input_scale, zero_point: c.input_zero_point },
        input_weight_scales: gates(c.name, c.input_weight_scales)?,
        recurrent_weight_scales: gates(c.name, c.recurrent_weight_scales)?,
        hidden: PerTensorQuant { scale: c.hidden_scale, zero_point: c.hidden_zero_point },
        cell_scale: c.cell_scale,
        cell_clip: c.cell_clip,
    };
    // The golden calls; then, where a slice of time is contiguous, one step per call and the
    // whole sequence in one call.
    let mut calls = [c.chunks, time, 1];
    let n = if c.time_major || batch == 1 { 3 } else { 1 };
    calls[..n].sort_unstable();
    let expected = c.expected.get(Oracle::Tflm);
    let state = batch * n_cell;
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    for (i, &k) in calls[..n].iter().enumerate() {
        if i > 0 && calls[i - 1] == k {
            continue;
        }
        let path = match k {
            1 => "one call",
            k if k == time => "one step per call",
            _ => "golden calls",
        };
        let at = At { case: c.name, rounding: Rounding::Double, oracle: Oracle::Tflm, path };
        match (c.input, c.bias) {
            (Values::I8(input), Bias::I32(bias)) => {
                let out = take(c.name, "int8 output", ws.out_i8, expected.len() + state)?;
                let (out, hidden) = out.split_at_mut(expected.len());
                let cell = take(c.name, "int16 output", ws.out_i16, state)?;
                run_calls(
                    c,
                    k,
                    &quant,
                    LstmParams::prepare_s8,
                    lstm_s8,
                    lstm_reset_state,
                    bias,
                    input,
                    hidden,
                    cell,
                    out,
                )?;
                tally.elements[0] += compare_values(at, expected, Values::I8(out))?;
            }
            (Values::I16(input), Bias::I64(bias)) => {
                let out = take(c.name, "int16 output", ws.out_i16, expected.len() + 2 * state)?;
                let (out, rest) = out.split_at_mut(expected.len());
                let (hidden, cell) = rest.split_at_mut(state);
                let prepare = LstmParams::prepare_s16;
                run_calls(c, k, &quant, prepare, lstm_s16, lstm_reset_state, bias, input, hidden, cell, out)?;
                tally.elements[0] += compare_values(at, expected, Values::I16(out))?;
            }
            _ => return Err(Failure::BadCase { case: c.name, reason: "int8 with int32 bias or int16 with int64" }),
        }
    }
    Ok(tally)
}

/// The LSTM golden tests for one target, in module `$m`: `lstm_s8_matches_tflite_micro`
/// (`lstm.json`) and `lstm_s16_matches_tflite_micro` (`lstm_16x8.json`).
/// Same arguments as [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! lstm_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            lstm_s8_matches_tflite_micro => (lstm, $crate::oracle::recurrent::check),
            lstm_s16_matches_tflite_micro => (lstm_16x8, $crate::oracle::recurrent::check),
        );
    };
}

//! FULLY_CONNECTED (int8 and 16x8) against TFLite Micro and the TFLite interpreter's reference
//! kernels (`tests/golden/kernels/fully_connected*.json`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "Fully connected: Input 0: data
//! type int8, range [-128, 127], granularity per-tensor; Input 1 (Weight): data type int8, range
//! [-127, 127], granularity per-axis (dim = 0), restriction zero_point = 0; Input 2 (Bias): data
//! type int32, granularity per-axis, restriction (scale, zero_point) = (input0_scale *
//! input1_scale[...], 0); Output 0: int8, per-tensor."
//!
//! The two oracles round fully connected differently: `Rounding::Double` must reproduce TFLite
//! Micro's output and `Rounding::Single` the interpreter's on every element of every case.
//! Per-tensor cases run through both the per-tensor kernel and the per-channel kernel (its
//! multipliers prepared from the one broadcast scale); int8 through the dispatched kernels with
//! and without scratch and through the reference kernels.

use microquant::kernels::fully_connected::{
    FullyConnectedParams, FullyConnectedPerChannelQuant, fully_connected_multiplier,
    fully_connected_per_channel_multipliers, fully_connected_per_channel_s8, fully_connected_per_channel_s8_reference,
    fully_connected_per_channel_s16, fully_connected_s8, fully_connected_s8_reference, fully_connected_s8_scratch_len,
    fully_connected_s16,
};
use microquant::kernels::{ActivationRange, PerChannelQuant, Rounding};

use super::{
    Activation, At, Bias, Expected, Failure, MODES, Oracle, Tally, Values, Workspace, compare_values, kernel, take,
};

/// A FULLY_CONNECTED case: `output[b, o] = act(requant(sum_i (input[b, i] - input_zp) *
/// filter[o, i] + bias[o]))`, the input flattened to `[len / depth, depth]`.
#[derive(Debug, Clone, Copy)]
pub struct FullyConnectedCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input (int8, or int16 for 16x8), any rank; the last dimension is the depth.
    pub input: Values<'a>,
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point (0 for 16x8).
    pub input_zero_point: i32,
    /// Weights `[out, depth]`, symmetric.
    pub filter: &'a [i8],
    /// `[out, depth]`.
    pub filter_shape: [usize; 2],
    /// Weight scales: one (per-tensor) or `out` (per-channel).
    pub filter_scales: &'a [f32],
    /// Bias `[out]`, or none.
    pub bias: Bias<'a>,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Fused activation.
    pub activation: Activation,
    /// The oracles' outputs (they differ: double rounding vs single).
    pub expected: Expected<'a>,
}

/// Runs one case: double rounding against TFLite Micro, single against the interpreter, every
/// kernel path.
pub fn check<'a>(c: &'a FullyConnectedCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    check_modes(c, ws, &MODES)
}

/// [`check`] in `Rounding::Double` alone, against TFLite Micro.
pub fn check_double<'a>(c: &'a FullyConnectedCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    check_modes(c, ws, &MODES[..1])
}

/// [`check`] in `Rounding::Single` alone, against the TFLite interpreter.
pub fn check_single<'a>(c: &'a FullyConnectedCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    check_modes(c, ws, &MODES[1..])
}

fn check_modes<'a>(
    c: &'a FullyConnectedCase<'a>,
    ws: &mut Workspace<'_>,
    modes: &[(Rounding, Oracle)],
) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let [out_d, depth] = c.filter_shape;
    let m = take(c.name, "multiplier", ws.multiplier, out_d)?;
    let s = take(c.name, "shift", ws.shift, out_d)?;
    let exact = take(c.name, "exact multiplier", ws.exact, out_d)?;
    kernel(
        c.name,
        "multipliers",
        fully_connected_per_channel_multipliers(c.input_scale, c.filter_scales, c.output_scale, m, s, exact),
    )?;
    let dtype = if matches!(c.input, Values::I8(_)) { ActivationRange::INT8 } else { ActivationRange::INT16 };
    let activation = kernel(
        c.name,
        "activation range",
        ActivationRange::from_fused(c.activation.fused(), c.output_scale, c.output_zero_point, dtype),
    )?;
    let per_tensor = match c.filter_scales {
        [fs] => Some(kernel(c.name, "multiplier", fully_connected_multiplier(c.input_scale, *fs, c.output_scale))?),
        _ => None,
    };
    let pc = FullyConnectedPerChannelQuant { fixed: PerChannelQuant { multiplier: m, shift: s }, exact };
    for &(rounding, oracle) in modes {
        let i = usize::from(rounding == Rounding::Single);
        let p = FullyConnectedParams {
            batches: c.input.len() / depth.max(1),
            input_depth: depth,
            output_depth: out_d,
            input_offset: -c.input_zero_point,
            output_offset: c.output_zero_point,
            activation,
            rounding,
        };
        let expected = c.expected.get(oracle);
        let mut compare = |path: &'static str, out: Values<'_>| -> Result<(), Failure<'a>> {
            tally.elements[i] += compare_values(At { case: c.name, rounding, oracle, path }, expected, out)?;
            Ok(())
        };
        match (c.input, c.bias) {
            (Values::I8(input), Bias::I32(_) | Bias::None) => {
                let bias = if let Bias::I32(b) = c.bias { Some(b) } else { None };
                let out = take(c.name, "int8 output", ws.out_i8, expected.len())?;
                let scratch = take(c.name, "scratch", ws.scratch, fully_connected_s8_scratch_len(&p))?;
                // The dispatched kernels (the target's fast path, with and without scratch) and
                // the reference kernels must all match.
                for (path, scratch) in
                    [("per-channel dispatched", &mut scratch[..]), ("per-channel no scratch", &mut [][..])]
                {
                    let r = fully_connected_per_channel_s8(&p, &pc, input, c.filter, bias, out, scratch);
                    kernel(c.name, path, r)?;
                    compare(path, Values::I8(out))?;
                }
                let r = fully_connected_per_channel_s8_reference(&p, &pc, input, c.filter, bias, out);
                kernel(c.name, "per-channel reference", r)?;
                compare("per-channel reference", Values::I8(out))?;
                if let Some(q) = &per_tensor {
                    for (path, scratch) in
                        [("per-tensor dispatched", &mut scratch[..]), ("per-tensor no scratch", &mut [][..])]
                    {
                        kernel(c.name, path, fully_connected_s8(&p, q, input, c.filter, bias, out, scratch))?;
                        compare(path, Values::I8(out))?;
                    }
                    let r = fully_connected_s8_reference(&p, q, input, c.filter, bias, out);
                    kernel(c.name, "per-tensor reference", r)?;
                    compare("per-tensor reference", Values::I8(out))?;
                }
            }
            (Values::I16(input), bias) => {
                let out = take(c.name, "int16 output", ws.out_i16, expected.len())?;
                // No bias: TFLite's default 16x8 accumulator is 64-bit.
                let r = match bias {
                    Bias::I32(b) => fully_connected_per_channel_s16(&p, &pc, input, c.filter, Some(b), out),
                    Bias::I64(b) => fully_connected_per_channel_s16(&p, &pc, input, c.filter, Some(b), out),
                    Bias::None => fully_connected_per_channel_s16::<i64>(&p, &pc, input, c.filter, None, out),
                };
                kernel(c.name, "per-channel 16x8", r)?;
                compare("per-channel 16x8", Values::I16(out))?;
                if let Some(q) = &per_tensor {
                    let r = match bias {
                        Bias::I32(b) => fully_connected_s16(&p, q, input, c.filter, Some(b), out),
                        Bias::I64(b) => fully_connected_s16(&p, q, input, c.filter, Some(b), out),
                        Bias::None => fully_connected_s16::<i64>(&p, q, input, c.filter, None, out),
                    };
                    kernel(c.name, "per-tensor 16x8", r)?;
                    compare("per-tensor 16x8", Values::I16(out))?;
                }
            }
            (Values::I8(_), Bias::I64(_)) => {
                return Err(Failure::BadCase { case: c.name, reason: "int64 bias on int8" });
            }
        }
    }
    Ok(tally)
}

/// The FULLY_CONNECTED golden tests for one target, in module `$m`, one per file and mode:
/// `fully_connected_s8_double_rounding_matches_tflite_micro`,
/// `fully_connected_s8_single_rounding_matches_tflite_interpreter` (`fully_connected.json`) and
/// the same two for `s16` (`fully_connected_16x8.json`).
/// Same arguments as [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! fully_connected_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            fully_connected_s8_double_rounding_matches_tflite_micro =>
                (fully_connected, $crate::oracle::fully_connected::check_double),
            fully_connected_s8_single_rounding_matches_tflite_interpreter =>
                (fully_connected, $crate::oracle::fully_connected::check_single),
            fully_connected_s16_double_rounding_matches_tflite_micro =>
                (fully_connected_16x8, $crate::oracle::fully_connected::check_double),
            fully_connected_s16_single_rounding_matches_tflite_interpreter =>
                (fully_connected_16x8, $crate::oracle::fully_connected::check_single),
        );
    };
}

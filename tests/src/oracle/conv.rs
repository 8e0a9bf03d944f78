//! CONV_2D (int8 and 16x8) against TFLite Micro and the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/conv_2d*.json`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "CONV_2D: Input 0: data type
//! int8, range [-128, 127], granularity per-tensor; Input 1 (Weight): data type int8, range
//! [-127, 127], granularity per-axis (dim = 0), restriction zero_point = 0; Input 2 (Bias): data
//! type int32, granularity per-axis, restriction (scale, zero_point) = (input0_scale *
//! input1_scale[...], 0); Output 0: int8, per-tensor."
//!
//! Both oracles round conv twice, so `Rounding::Double` and `Rounding::Single` must each
//! reproduce both outputs (which agree) on every element: int8 through the dispatched kernel
//! (the target's fast path) with scratch, without scratch and through the reference kernel; 16x8
//! through its kernel with int32, int64 or no bias.

use microquant::kernels::common::{Hw, compute_window, per_channel_multipliers};
use microquant::kernels::conv::{ConvParams, conv_s8, conv_s8_reference, conv_s8_scratch_len, conv_s16};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};

use super::{
    Activation, At, Bias, Expected, Failure, ORACLES, Padding, Tally, Values, Workspace, compare_values, dims4, kernel,
    take,
};

/// A CONV_2D case (NHWC input, OHWI filter).
#[derive(Debug, Clone, Copy)]
pub struct ConvCase<'a> {
    /// Case name.
    pub name: &'a str,
    /// Input `[n, h, w, in_c]` (int8, or int16 for 16x8).
    pub input: Values<'a>,
    /// Input shape.
    pub input_shape: &'a [usize],
    /// Input scale.
    pub input_scale: f32,
    /// Input zero point (0 for 16x8).
    pub input_zero_point: i32,
    /// Filter `[out_c, kh, kw, in_c]`, symmetric.
    pub filter: &'a [i8],
    /// Filter shape.
    pub filter_shape: &'a [usize],
    /// Filter scales: `out_c` (per-channel) or one (per-tensor).
    pub filter_scales: &'a [f32],
    /// Bias `[out_c]`.
    pub bias: Bias<'a>,
    /// Output scale.
    pub output_scale: f32,
    /// Output zero point.
    pub output_zero_point: i32,
    /// Padding mode.
    pub padding: Padding,
    /// `[vertical, horizontal]` stride.
    pub stride: [usize; 2],
    /// `[vertical, horizontal]` dilation.
    pub dilation: [usize; 2],
    /// Fused activation.
    pub activation: Activation,
    /// The oracles' outputs `[n, oh, ow, out_c]`.
    pub expected: Expected<'a>,
}

/// TFLite's Prepare, done by microquant: output shape, padding, clamp (the multipliers are
/// written to `m` and `s`).
fn prepare<'a>(c: &ConvCase<'a>, rounding: Rounding, m: &mut [i32], s: &mut [i32]) -> Result<ConvParams, Failure<'a>> {
    let (input, filter) = (dims4(c.name, c.input_shape)?, dims4(c.name, c.filter_shape)?);
    let (stride, dilation) = (Hw::new(c.stride[0], c.stride[1]), Hw::new(c.dilation[0], c.dilation[1]));
    let window = kernel(
        c.name,
        "window",
        compute_window(c.padding.kernel(), Hw::new(input.h, input.w), Hw::new(filter.h, filter.w), stride, dilation),
    )?;
    let output = Dims4::new(input.n, window.output.h, window.output.w, filter.n);
    if output != dims4(c.name, c.expected.shape)? {
        return Err(Failure::Shape { case: c.name });
    }
    let dtype = if matches!(c.input, Values::I8(_)) { ActivationRange::INT8 } else { ActivationRange::INT16 };
    let activation = kernel(
        c.name,
        "activation range",
        ActivationRange::from_fused(c.activation.fused(), c.output_scale, c.output_zero_point, dtype),
    )?;
    kernel(c.name, "multipliers", per_channel_multipliers(c.input_scale, c.filter_scales, c.output_scale, m, s))?;
    Ok(ConvParams {
        input,
        filter,
        output,
        stride,
        dilation,
        padding: window.padding,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    })
}

/// Runs one case in both rounding modes through every kernel path against both oracles.
pub fn check<'a>(c: &'a ConvCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let channels = c.filter_shape.first().copied().unwrap_or(0);
    let m = take(c.name, "multiplier", ws.multiplier, channels)?;
    let s = take(c.name, "shift", ws.shift, channels)?;
    for (i, rounding) in [Rounding::Double, Rounding::Single].into_iter().enumerate() {
        let p = prepare(c, rounding, m, s)?;
        let q = PerChannelQuant { multiplier: m, shift: s };
        let mut compare = |path: &'static str, out: Values<'_>| -> Result<(), Failure<'a>> {
            for oracle in ORACLES {
                let at = At { case: c.name, rounding, oracle, path };
                tally.elements[i] += compare_values(at, c.expected.get(oracle), out)?;
            }
            Ok(())
        };
        match (c.input, c.bias) {
            (Values::I8(input), Bias::I32(_) | Bias::None) => {
                let bias = if let Bias::I32(b) = c.bias { Some(b) } else { None };
                let out = take(c.name, "int8 output", ws.out_i8, c.expected.len())?;
                let len = conv_s8_scratch_len(&p);
                let scratch = take(c.name, "scratch", ws.scratch, len)?;
                // With scratch the target's fast path runs, without it the reference; and the
                // reference kernel itself: all must match.
                for (path, scratch) in [("dispatched", &mut scratch[..]), ("no scratch", &mut [][..])] {
                    kernel(c.name, path, conv_s8(&p, &q, input, c.filter, bias, out, scratch))?;
                    compare(path, Values::I8(out))?;
                }
                kernel(c.name, "reference", conv_s8_reference(&p, &q, input, c.filter, bias, out))?;
                compare("reference", Values::I8(out))?;
            }
            (Values::I16(input), bias) => {
                let out = take(c.name, "int16 output", ws.out_i16, c.expected.len())?;
                let r = match bias {
                    Bias::I32(b) => conv_s16(&p, &q, input, c.filter, Some(b), out),
                    Bias::I64(b) => conv_s16(&p, &q, input, c.filter, Some(b), out),
                    Bias::None => conv_s16::<i64>(&p, &q, input, c.filter, None, out),
                };
                kernel(c.name, "16x8", r)?;
                compare("16x8", Values::I16(out))?;
            }
            (Values::I8(_), Bias::I64(_)) => {
                return Err(Failure::BadCase { case: c.name, reason: "int64 bias on int8" });
            }
        }
    }
    Ok(tally)
}

/// The CONV_2D golden tests for one target: `conv_s8_matches_tflite_micro_and_interpreter`
/// (`conv_2d.json`) and `conv_s16_matches_tflite_micro_and_interpreter` (`conv_2d_16x8.json`),
/// in module `$m`:
/// `conv_golden_tests!(mod golden; #[test] target Std; files microquant_tests::oracle::golden);`
/// (see [`oracle`](crate::oracle)).
#[macro_export]
macro_rules! conv_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            conv_s8_matches_tflite_micro_and_interpreter => (conv_2d, $crate::oracle::conv::check),
            conv_s16_matches_tflite_micro_and_interpreter => (conv_2d_16x8, $crate::oracle::conv::check),
        );
    };
}

//! DEPTHWISE_CONV_2D (int8 and 16x8) against TFLite Micro and the TFLite interpreter's reference
//! kernels (`tests/golden/kernels/depthwise_conv_2d*.json`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "DEPTHWISE_CONV_2D: Input 0: data
//! type int8, range [-128, 127], granularity per-tensor; Input 1 (Weight): data type int8, range
//! [-127, 127], granularity per-axis (dim = 3), restriction zero_point = 0; Input 2 (Bias): data
//! type int32, granularity per-axis, restriction (scale, zero_point) = (input0_scale *
//! input1_scale[...], 0); Output 0: int8, per-tensor."
//!
//! Both oracles round depthwise conv twice, so `Rounding::Double` and `Rounding::Single` must
//! each reproduce both outputs (which agree) on every element: int8 through the dispatched kernel
//! (the target's fast path) and the reference kernel; 16x8 through its kernel.

use microquant::kernels::common::{Hw, compute_window, per_channel_multipliers};
use microquant::kernels::depthwise_conv::{
    DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_reference, depthwise_conv_s8_scratch_len,
    depthwise_conv_s16,
};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};

use super::{
    Activation, At, Bias, Expected, Failure, ORACLES, Padding, Tally, Values, Workspace, compare_values, dims4, kernel,
    take,
};

/// A DEPTHWISE_CONV_2D case (NHWC input, filter `[1, kh, kw, in_c * depth_multiplier]`).
#[derive(Debug, Clone, Copy)]
pub struct DepthwiseConvCase<'a> {
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
    /// Filter `[1, kh, kw, out_c]`, symmetric.
    pub filter: &'a [i8],
    /// Filter shape.
    pub filter_shape: &'a [usize],
    /// Filter scales, `out_c` (per-channel, dimension 3).
    pub filter_scales: &'a [f32],
    /// Bias `[out_c]`, or none.
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
    /// Output channels per input channel.
    pub depth_multiplier: usize,
    /// Fused activation.
    pub activation: Activation,
    /// The oracles' outputs `[n, oh, ow, out_c]`.
    pub expected: Expected<'a>,
}

/// TFLite's Prepare, done by microquant: output shape, padding, clamp (the multipliers are
/// written to `m` and `s`).
fn prepare<'a>(
    c: &DepthwiseConvCase<'a>,
    rounding: Rounding,
    m: &mut [i32],
    s: &mut [i32],
) -> Result<DepthwiseConvParams, Failure<'a>> {
    let (input, filter) = (dims4(c.name, c.input_shape)?, dims4(c.name, c.filter_shape)?);
    if filter.n != 1 {
        return Err(Failure::BadCase { case: c.name, reason: "depthwise filter [1, kh, kw, out_c] expected" });
    }
    let (stride, dilation) = (Hw::new(c.stride[0], c.stride[1]), Hw::new(c.dilation[0], c.dilation[1]));
    let window = kernel(
        c.name,
        "window",
        compute_window(c.padding.kernel(), Hw::new(input.h, input.w), Hw::new(filter.h, filter.w), stride, dilation),
    )?;
    let output = Dims4::new(input.n, window.output.h, window.output.w, filter.c);
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
    Ok(DepthwiseConvParams {
        input,
        filter: Hw::new(filter.h, filter.w),
        output,
        depth_multiplier: c.depth_multiplier,
        stride,
        dilation,
        padding: window.padding,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    })
}

/// The scratch (bytes) the dispatched int8 kernel takes for case `c` (0 if the case is not a
/// valid one): what a device's workspace must hold.
#[cfg(feature = "std")]
pub fn scratch_len(c: &DepthwiseConvCase<'_>) -> usize {
    let n = c.filter_shape.iter().copied().max().unwrap_or(0).max(c.filter_scales.len());
    let (mut m, mut s) = (std::vec![0; n], std::vec![0; n]);
    prepare(c, Rounding::Double, &mut m, &mut s).map_or(0, |p| depthwise_conv_s8_scratch_len(&p))
}

/// Runs one case in both rounding modes through every kernel path against both oracles.
pub fn check<'a>(c: &'a DepthwiseConvCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
    let mut tally = Tally { cases: 1, elements: [0; 2] };
    let channels = c.filter_shape.last().copied().unwrap_or(0);
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
                let scratch = take(c.name, "scratch", ws.scratch, depthwise_conv_s8_scratch_len(&p))?;
                // The dispatched kernel (the target's fast path) and the reference kernel must
                // both match.
                kernel(c.name, "dispatched", depthwise_conv_s8(&p, &q, input, c.filter, bias, out, scratch))?;
                compare("dispatched", Values::I8(out))?;
                kernel(c.name, "reference", depthwise_conv_s8_reference(&p, &q, input, c.filter, bias, out))?;
                compare("reference", Values::I8(out))?;
            }
            (Values::I16(input), bias) => {
                let out = take(c.name, "int16 output", ws.out_i16, c.expected.len())?;
                let r = match bias {
                    Bias::I32(b) => depthwise_conv_s16(&p, &q, input, c.filter, Some(b), out),
                    Bias::I64(b) => depthwise_conv_s16(&p, &q, input, c.filter, Some(b), out),
                    Bias::None => depthwise_conv_s16::<i64>(&p, &q, input, c.filter, None, out),
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

/// The DEPTHWISE_CONV_2D golden tests for one target, in module `$m`:
/// `depthwise_conv_s8_matches_tflite_micro_and_interpreter` (`depthwise_conv_2d.json`) and
/// `depthwise_conv_s16_matches_tflite_micro_and_interpreter` (`depthwise_conv_2d_16x8.json`).
/// Same arguments as [`conv_golden_tests!`](crate::conv_golden_tests).
#[macro_export]
macro_rules! depthwise_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            depthwise_conv_s8_matches_tflite_micro_and_interpreter =>
                (depthwise_conv_2d, $crate::oracle::depthwise::check),
            depthwise_conv_s16_matches_tflite_micro_and_interpreter =>
                (depthwise_conv_2d_16x8, $crate::oracle::depthwise::check),
        );
    };
}

//! TRANSPOSE_CONV (int8 and 16x8) against TFLite Micro and the TFLite interpreter's reference
//! kernels (`tests/golden/kernels/transpose_conv*.json`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "TRANSPOSE_CONV: Input 0 (output
//! shape): int32; Input 1 (Weight): data type int8, range [-127, 127], granularity per-axis
//! (dim = 0), restriction zero_point = 0; Input 2 (Input): int8 per-tensor; Input 3 (Bias): int32
//! per-axis, restriction (scale, zero_point) = (input_scale * weight_scale[...], 0); Output 0:
//! int8 per-tensor."
//!
//! Both oracles run the same integer code, so `Rounding::Double` and `Rounding::Single` must each
//! reproduce both outputs (which agree) on every element.

use microquant::kernels::common::{Hw, per_channel_multipliers};
use microquant::kernels::transpose_conv::{
    TransposeConvParams, transpose_conv_padding, transpose_conv_s8, transpose_conv_s8_scratch_len, transpose_conv_s16,
    transpose_conv_s16_scratch_len,
};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};

use super::{
    Activation, At, Bias, Expected, Failure, ORACLES, Padding, Tally, Values, Workspace, compare_values, dims4, kernel,
    take,
};

/// A TRANSPOSE_CONV case (NHWC input, OHWI filter, given output shape).
#[derive(Debug, Clone, Copy)]
pub struct TransposeConvCase<'a> {
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
    /// The op's `output_shape` input `[n, oh, ow, out_c]`.
    pub output_shape: &'a [usize],
    /// Padding mode.
    pub padding: Padding,
    /// `[vertical, horizontal]` stride.
    pub stride: [usize; 2],
    /// Fused activation.
    pub activation: Activation,
    /// The oracles' outputs `[n, oh, ow, out_c]`.
    pub expected: Expected<'a>,
}

/// TFLite's Prepare, done by microquant: padding, clamp (the multipliers are written to `m`
/// and `s`).
fn prepare<'a>(
    c: &TransposeConvCase<'a>,
    rounding: Rounding,
    m: &mut [i32],
    s: &mut [i32],
) -> Result<TransposeConvParams, Failure<'a>> {
    let (input, filter, output) =
        (dims4(c.name, c.input_shape)?, dims4(c.name, c.filter_shape)?, dims4(c.name, c.output_shape)?);
    if output != dims4(c.name, c.expected.shape)? {
        return Err(Failure::Shape { case: c.name });
    }
    let stride = Hw::new(c.stride[0], c.stride[1]);
    let padding = kernel(
        c.name,
        "padding",
        transpose_conv_padding(c.padding.kernel(), Hw::new(output.h, output.w), Hw::new(filter.h, filter.w), stride),
    )?;
    let dtype = if matches!(c.input, Values::I8(_)) { ActivationRange::INT8 } else { ActivationRange::INT16 };
    let activation = kernel(
        c.name,
        "activation range",
        ActivationRange::from_fused(c.activation.fused(), c.output_scale, c.output_zero_point, dtype),
    )?;
    kernel(c.name, "multipliers", per_channel_multipliers(c.input_scale, c.filter_scales, c.output_scale, m, s))?;
    Ok(TransposeConvParams {
        input,
        filter,
        output: Dims4::new(output.n, output.h, output.w, output.c),
        stride,
        padding,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    })
}

/// Runs one case in both rounding modes against both oracles.
pub fn check<'a>(c: &'a TransposeConvCase<'a>, ws: &mut Workspace<'_>) -> Result<Tally, Failure<'a>> {
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
                let scratch = take(c.name, "scratch", ws.scratch, transpose_conv_s8_scratch_len(&p))?;
                kernel(c.name, "int8", transpose_conv_s8(&p, &q, input, c.filter, bias, out, scratch))?;
                compare("int8", Values::I8(out))?;
            }
            (Values::I16(input), Bias::I64(_) | Bias::None) => {
                let bias = if let Bias::I64(b) = c.bias { Some(b) } else { None };
                let out = take(c.name, "int16 output", ws.out_i16, c.expected.len())?;
                let scratch = take(c.name, "scratch", ws.scratch, transpose_conv_s16_scratch_len(&p))?;
                kernel(c.name, "16x8", transpose_conv_s16(&p, &q, input, c.filter, bias, out, scratch))?;
                compare("16x8", Values::I16(out))?;
            }
            _ => return Err(Failure::BadCase { case: c.name, reason: "bias dtype does not match the input's" }),
        }
    }
    Ok(tally)
}

/// The TRANSPOSE_CONV golden tests for one target:
/// `transpose_conv_s8_matches_tflite_micro_and_interpreter` (`transpose_conv.json`) and
/// `transpose_conv_s16_matches_tflite_micro_and_interpreter` (`transpose_conv_16x8.json`), in
/// module `$m` (see [`oracle`](crate::oracle)).
#[macro_export]
macro_rules! transpose_conv_golden_tests {
    (mod $m:ident; $(#[$attr:meta])* target $t:ty; files $files:path $(;)?) => {
        $crate::__golden_tests!(mod $m; $(#[$attr])* target $t; files $files;
            transpose_conv_s8_matches_tflite_micro_and_interpreter =>
                (transpose_conv, $crate::oracle::transpose_conv::check),
            transpose_conv_s16_matches_tflite_micro_and_interpreter =>
                (transpose_conv_16x8, $crate::oracle::transpose_conv::check),
        );
    };
}

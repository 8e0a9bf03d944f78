//! Depthwise conv2D kernels against the golden outputs of TFLite Micro and of the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/depthwise_conv_2d*.json`), bit for bit.
//!
//! The TFLite int8 quantization spec, as these cases follow it: "DEPTHWISE_CONV_2D: Input 0: data
//! type int8, range [-128, 127], granularity per-tensor; Input 1 (Weight): data type int8, range
//! [-127, 127], granularity per-axis (dim = 3), restriction zero_point = 0; Input 2 (Bias): data
//! type int32, granularity per-axis, restriction (scale, zero_point) = (input0_scale *
//! input1_scale[...], 0); Output 0: int8, per-tensor."
//!
//! Both oracles round depthwise conv twice, so `Rounding::Double` and `Rounding::Single` must
//! each reproduce `expected_tflm` and `expected_tflite_ref` (which agree) on every element.

use microquant::kernels::common::{Accumulator, FusedActivation, Hw, Padding, compute_window, per_channel_multipliers};
use microquant::kernels::depthwise_conv::{
    DepthwiseConvParams, depthwise_conv_s8, depthwise_conv_s8_reference, depthwise_conv_s8_scratch_len,
    depthwise_conv_s16,
};
use microquant::kernels::{ActivationRange, Dims4, PerChannelQuant, Rounding};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use microquant_tests::kernels::{self, Activation, DepthwiseConvCase, KernelCase, Oracle};

fn fused(a: Activation) -> FusedActivation {
    match a {
        Activation::None => FusedActivation::None,
        Activation::Relu => FusedActivation::Relu,
        Activation::Relu6 => FusedActivation::Relu6,
        Activation::ReluN1To1 => FusedActivation::ReluN1To1,
    }
}

fn padding(p: kernels::Padding) -> Padding {
    match p {
        kernels::Padding::Same => Padding::Same,
        kernels::Padding::Valid => Padding::Valid,
    }
}

fn dims(t: &Tensor) -> Dims4 {
    assert_eq!(t.shape.len(), 4, "4-D tensor expected");
    Dims4::new(t.shape[0], t.shape[1], t.shape[2], t.shape[3])
}

/// TFLite's Prepare, done by microquant: output shape, padding, multipliers, clamp.
fn prepare(
    c: &DepthwiseConvCase,
    rounding: Rounding,
    dtype: ActivationRange,
) -> (DepthwiseConvParams, Vec<i32>, Vec<i32>) {
    let (input, filter) = (dims(&c.input), dims(&c.filter));
    assert_eq!(filter.n, 1, "{}: depthwise filter [1, kh, kw, out_c]", c.name);
    let window = compute_window(
        padding(c.padding),
        Hw::new(input.h, input.w),
        Hw::new(filter.h, filter.w),
        Hw::new(c.stride_h, c.stride_w),
        Hw::new(c.dilation_h, c.dilation_w),
    )
    .unwrap_or_else(|e| panic!("{}: window: {e}", c.name));
    let output = Dims4::new(input.n, window.output.h, window.output.w, filter.c);
    assert_eq!(output, dims(&c.expected_tflm), "{}: output shape", c.name);
    let activation = ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, dtype)
        .unwrap_or_else(|e| panic!("{}: activation range: {e}", c.name));
    let (mut m, mut s) = (vec![0; filter.c], vec![0; filter.c]);
    per_channel_multipliers(c.input_scale, &c.filter_scales, c.output_scale, &mut m, &mut s)
        .unwrap_or_else(|e| panic!("{}: multipliers: {e}", c.name));
    let params = DepthwiseConvParams {
        input,
        filter: Hw::new(filter.h, filter.w),
        output,
        depth_multiplier: c.depth_multiplier,
        stride: Hw::new(c.stride_h, c.stride_w),
        dilation: Hw::new(c.dilation_h, c.dilation_w),
        padding: window.padding,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    };
    (params, m, s)
}

fn check_s8(c: &DepthwiseConvCase, rounding: Rounding, oracle: Oracle) -> usize {
    let (p, m, s) = prepare(c, rounding, ActivationRange::INT8);
    let quant = PerChannelQuant { multiplier: &m, shift: &s };
    let bias = c.bias.as_ref().map(Tensor::i32);
    let expected = c.expected(oracle).i8();
    let (input, filter) = (c.input.i8(), c.filter.i8());
    // The dispatched kernel (the target's fast path) and the reference kernel must both match.
    let mut out = vec![0i8; expected.len()];
    let mut scratch = vec![0u8; depthwise_conv_s8_scratch_len(&p)];
    depthwise_conv_s8(&p, &quant, &input, &filter, bias.as_deref(), &mut out, &mut scratch)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    assert_bit_exact(&format!("{} {rounding:?} vs {oracle:?} (dispatched)", c.name), &expected, &out);
    let mut out = vec![0i8; expected.len()];
    depthwise_conv_s8_reference(&p, &quant, &input, &filter, bias.as_deref(), &mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    assert_bit_exact(&format!("{} {rounding:?} vs {oracle:?} (reference)", c.name), &expected, &out)
}

fn run_s16<B: Accumulator>(c: &DepthwiseConvCase, rounding: Rounding, oracle: Oracle, bias: Option<&[B]>) -> usize {
    let (p, m, s) = prepare(c, rounding, ActivationRange::INT16);
    let quant = PerChannelQuant { multiplier: &m, shift: &s };
    let expected = c.expected(oracle).i16();
    let mut out = vec![0i16; expected.len()];
    depthwise_conv_s16(&p, &quant, &c.input.i16(), &c.filter.i8(), bias, &mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    assert_bit_exact(&format!("{} {rounding:?} vs {oracle:?}", c.name), &expected, &out)
}

fn check_s16(c: &DepthwiseConvCase, rounding: Rounding, oracle: Oracle) -> usize {
    match c.bias.as_ref().map(|b| b.dtype.as_str()) {
        Some("int32") => run_s16(c, rounding, oracle, c.bias.as_ref().map(Tensor::i32).as_deref()),
        Some(_) => run_s16(c, rounding, oracle, c.bias.as_ref().map(Tensor::i64).as_deref()),
        None => run_s16::<i64>(c, rounding, oracle, None),
    }
}

fn run_file(file: &str, cases: &[DepthwiseConvCase], check: fn(&DepthwiseConvCase, Rounding, Oracle) -> usize) {
    assert!(!cases.is_empty(), "{file} has no cases");
    for rounding in [Rounding::Double, Rounding::Single] {
        for oracle in [Oracle::Tflm, Oracle::TfliteRef] {
            let elements: usize = cases.iter().map(|c| check(c, rounding, oracle)).sum();
            println!(
                "{file}: {} cases, {elements} elements, Rounding::{rounding:?} vs {oracle:?}: all bit-exact",
                cases.len()
            );
        }
    }
}

#[test]
fn depthwise_conv_s8_matches_tflite_micro_and_interpreter_in_both_modes() {
    run_file("depthwise_conv_2d.json", &kernels::depthwise_conv_2d_cases(), check_s8);
}

#[test]
fn depthwise_conv_s16_matches_tflite_micro_and_interpreter_in_both_modes() {
    run_file("depthwise_conv_2d_16x8.json", &kernels::depthwise_conv_2d_16x8_cases(), check_s16);
}

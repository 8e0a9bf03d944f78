//! Fully connected kernels against the golden outputs of TFLite Micro and of the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/fully_connected*.json`), bit for bit.
//!
//! The TFLite int8 quantization spec, as these cases follow it: "Fully connected: Input 0: data
//! type int8, range [-128, 127], granularity per-tensor; Input 1 (Weight): data type int8, range
//! [-127, 127], granularity per-axis (dim = 0), restriction zero_point = 0; Input 2 (Bias): data
//! type int32, granularity per-axis, restriction (scale, zero_point) = (input0_scale *
//! input1_scale[...], 0); Output 0: int8, per-tensor."
//!
//! `Rounding::Double` must reproduce `expected_tflm` and `Rounding::Single` `expected_tflite_ref`
//! on every element of every case. Per-tensor cases run through both the per-tensor kernel and
//! the per-channel kernel (its multipliers prepared from the one broadcast scale).

use microquant::kernels::common::{Accumulator, FusedActivation};
use microquant::kernels::fully_connected::{
    ExactMultiplier, FullyConnectedParams, FullyConnectedPerChannelQuant, fully_connected_multiplier,
    fully_connected_per_channel_multipliers, fully_connected_per_channel_s8, fully_connected_per_channel_s8_reference,
    fully_connected_per_channel_s16, fully_connected_s8, fully_connected_s8_reference, fully_connected_s8_scratch_len,
    fully_connected_s16,
};
use microquant::kernels::{ActivationRange, PerChannelQuant, Rounding};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use microquant_tests::kernels::{self, Activation, FullyConnectedCase, KernelCase, Oracle};

fn fused(a: Activation) -> FusedActivation {
    match a {
        Activation::None => FusedActivation::None,
        Activation::Relu => FusedActivation::Relu,
        Activation::Relu6 => FusedActivation::Relu6,
        Activation::ReluN1To1 => FusedActivation::ReluN1To1,
    }
}

fn oracle(rounding: Rounding) -> Oracle {
    match rounding {
        Rounding::Double => Oracle::Tflm,
        Rounding::Single => Oracle::TfliteRef,
    }
}

/// Prepared parameters of one case (TFLite's Prepare, done by microquant).
struct Prepared {
    params: FullyConnectedParams,
    multiplier: Vec<i32>,
    shift: Vec<i32>,
    exact: Vec<ExactMultiplier>,
}

fn prepare(c: &FullyConnectedCase, rounding: Rounding, dtype: ActivationRange) -> Prepared {
    let (out, depth) = (c.filter.shape[0], c.filter.shape[1]);
    let activation = ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, dtype)
        .unwrap_or_else(|e| panic!("{}: activation range: {e}", c.name));
    let params = FullyConnectedParams {
        batches: c.input.len() / depth,
        input_depth: depth,
        output_depth: out,
        input_offset: -c.input_zero_point,
        output_offset: c.output_zero_point,
        activation,
        rounding,
    };
    let (mut multiplier, mut shift, mut exact) = (vec![0; out], vec![0; out], vec![ExactMultiplier::default(); out]);
    fully_connected_per_channel_multipliers(
        c.input_scale,
        &c.filter_scales,
        c.output_scale,
        &mut multiplier,
        &mut shift,
        &mut exact,
    )
    .unwrap_or_else(|e| panic!("{}: multipliers: {e}", c.name));
    Prepared { params, multiplier, shift, exact }
}

impl Prepared {
    fn per_channel(&self) -> FullyConnectedPerChannelQuant<'_> {
        FullyConnectedPerChannelQuant {
            fixed: PerChannelQuant { multiplier: &self.multiplier, shift: &self.shift },
            exact: &self.exact,
        }
    }
}

/// Runs one int8 case; returns the number of elements checked.
fn check_s8(c: &FullyConnectedCase, rounding: Rounding) -> usize {
    let p = prepare(c, rounding, ActivationRange::INT8);
    let (input, filter) = (c.input.i8(), c.filter.i8());
    let bias = c.bias.as_ref().map(Tensor::i32);
    let expected = c.expected(oracle(rounding)).i8();
    let mut checked = 0;
    // The dispatched kernels (the target's fast path, with and without scratch) and the
    // reference kernels must all match.
    let scratch_len = fully_connected_s8_scratch_len(&p.params);
    for len in [scratch_len, 0] {
        let mut scratch = vec![0u8; len];
        let mut out = vec![0i8; expected.len()];
        fully_connected_per_channel_s8(
            &p.params,
            &p.per_channel(),
            &input,
            &filter,
            bias.as_deref(),
            &mut out,
            &mut scratch,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        checked +=
            assert_bit_exact(&format!("{} per-channel kernel {rounding:?} scratch {len}", c.name), &expected, &out);
    }
    let mut out = vec![0i8; expected.len()];
    fully_connected_per_channel_s8_reference(&p.params, &p.per_channel(), &input, &filter, bias.as_deref(), &mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    checked += assert_bit_exact(&format!("{} per-channel reference {rounding:?}", c.name), &expected, &out);
    if c.filter_scales.len() == 1 {
        let q = fully_connected_multiplier(c.input_scale, c.filter_scales[0], c.output_scale).unwrap();
        for len in [scratch_len, 0] {
            let mut scratch = vec![0u8; len];
            let mut out = vec![0i8; expected.len()];
            fully_connected_s8(&p.params, &q, &input, &filter, bias.as_deref(), &mut out, &mut scratch)
                .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked +=
                assert_bit_exact(&format!("{} per-tensor kernel {rounding:?} scratch {len}", c.name), &expected, &out);
        }
        let mut out = vec![0i8; expected.len()];
        fully_connected_s8_reference(&p.params, &q, &input, &filter, bias.as_deref(), &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        checked += assert_bit_exact(&format!("{} per-tensor reference {rounding:?}", c.name), &expected, &out);
    }
    checked
}

fn run_s16<B: Accumulator>(
    c: &FullyConnectedCase,
    p: &Prepared,
    bias: Option<&[B]>,
    expected: &[i16],
    rounding: Rounding,
) -> usize {
    let (input, filter) = (c.input.i16(), c.filter.i8());
    let mut checked = 0;
    let mut out = vec![0i16; expected.len()];
    fully_connected_per_channel_s16(&p.params, &p.per_channel(), &input, &filter, bias, &mut out)
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    checked += assert_bit_exact(&format!("{} per-channel kernel {rounding:?}", c.name), expected, &out);
    if c.filter_scales.len() == 1 {
        let q = fully_connected_multiplier(c.input_scale, c.filter_scales[0], c.output_scale).unwrap();
        let mut out = vec![0i16; expected.len()];
        fully_connected_s16(&p.params, &q, &input, &filter, bias, &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        checked += assert_bit_exact(&format!("{} per-tensor kernel {rounding:?}", c.name), expected, &out);
    }
    checked
}

/// Runs one 16x8 case (int64 or int32 bias); returns the number of elements checked.
fn check_s16(c: &FullyConnectedCase, rounding: Rounding) -> usize {
    let p = prepare(c, rounding, ActivationRange::INT16);
    let expected = c.expected(oracle(rounding)).i16();
    match c.bias.as_ref().map(|b| b.dtype.as_str()) {
        Some("int32") => run_s16(c, &p, c.bias.as_ref().map(Tensor::i32).as_deref(), &expected, rounding),
        Some(_) => run_s16(c, &p, c.bias.as_ref().map(Tensor::i64).as_deref(), &expected, rounding),
        // No bias: TFLite's default 16x8 accumulator is 64-bit.
        None => run_s16::<i64>(c, &p, None, &expected, rounding),
    }
}

fn run_file(
    file: &str,
    cases: &[FullyConnectedCase],
    rounding: Rounding,
    check: fn(&FullyConnectedCase, Rounding) -> usize,
) {
    assert!(!cases.is_empty(), "{file} has no cases");
    let elements: usize = cases.iter().map(|c| check(c, rounding)).sum();
    let outputs: usize = cases.iter().map(|c| c.expected_tflm.len()).sum();
    println!(
        "{file}: {} cases, {outputs} output elements, {elements} elements checked (kernel runs), \
         Rounding::{rounding:?} vs {:?}: all bit-exact",
        cases.len(),
        oracle(rounding)
    );
}

#[test]
fn fully_connected_s8_double_rounding_matches_tflite_micro() {
    run_file("fully_connected.json", &kernels::fully_connected_cases(), Rounding::Double, check_s8);
}

#[test]
fn fully_connected_s8_single_rounding_matches_tflite_interpreter() {
    run_file("fully_connected.json", &kernels::fully_connected_cases(), Rounding::Single, check_s8);
}

#[test]
fn fully_connected_s16_double_rounding_matches_tflite_micro() {
    run_file("fully_connected_16x8.json", &kernels::fully_connected_16x8_cases(), Rounding::Double, check_s16);
}

#[test]
fn fully_connected_s16_single_rounding_matches_tflite_interpreter() {
    run_file("fully_connected_16x8.json", &kernels::fully_connected_16x8_cases(), Rounding::Single, check_s16);
}

/// The oracles really disagree in these files, so the two tests above, each bit-exact with its
/// own oracle, show that each rounding mode reproduces its oracle and not the other.
#[test]
fn the_two_oracles_differ_and_each_mode_picks_its_own() {
    for (file, cases) in [
        ("fully_connected.json", kernels::fully_connected_cases()),
        ("fully_connected_16x8.json", kernels::fully_connected_16x8_cases()),
    ] {
        let differing = cases.iter().filter(|c| c.expected_tflm.b64 != c.expected_tflite_ref.b64).count();
        assert!(differing > 0, "{file}: the oracles agree everywhere; the rounding modes are not discriminated");
        println!("{file}: {differing} of {} cases differ between TFLite Micro and the interpreter", cases.len());
    }
}

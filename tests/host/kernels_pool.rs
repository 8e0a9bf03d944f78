//! Pooling kernels against the golden outputs of TFLite Micro and of the TFLite interpreter's
//! reference kernels (`tests/golden/kernels/{max,average}_pool_2d.json`), bit for bit.
//!
//! The TFLite int8 quantization spec, as these cases follow it: "AVERAGE_POOL_2D / MAX_POOL_2D:
//! Input 0: data type int8, range [-128, 127], granularity per-tensor; Output 0: data type int8,
//! range [-128, 127], granularity per-tensor, restriction input and outputs must all have same
//! scale/zero_point."
//!
//! Pooling does not requantize: both oracles agree, and the kernels must reproduce both on every
//! element.

use microquant::kernels::common::{FusedActivation, Hw, Padding, compute_window};
use microquant::kernels::pooling::{PoolParams, avg_pool_s8, max_pool_s8};
use microquant::kernels::{ActivationRange, Dims4};
use microquant_tests::golden::{Tensor, assert_bit_exact};
use microquant_tests::kernels::{self, Activation, KernelCase, Oracle, PoolCase};

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

/// TFLite's Prepare, done by microquant: output shape, padding, clamp.
fn prepare(c: &PoolCase) -> PoolParams {
    assert_eq!(
        (c.input_scale, c.input_zero_point),
        (c.output_scale, c.output_zero_point),
        "{}: pooling keeps the quantization",
        c.name
    );
    let input = dims(&c.input);
    let (filter, stride) = (Hw::new(c.filter_h, c.filter_w), Hw::new(c.stride_h, c.stride_w));
    let window = compute_window(padding(c.padding), Hw::new(input.h, input.w), filter, stride, Hw::square(1))
        .unwrap_or_else(|e| panic!("{}: window: {e}", c.name));
    let output = Dims4::new(input.n, window.output.h, window.output.w, input.c);
    assert_eq!(output, dims(&c.expected_tflm), "{}: output shape", c.name);
    let activation =
        ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, ActivationRange::INT8)
            .unwrap_or_else(|e| panic!("{}: activation range: {e}", c.name));
    PoolParams { input, output, filter, stride, padding: window.padding, activation }
}

type Kernel = fn(&PoolParams, &[i8], &mut [i8]) -> Result<(), microquant::Error>;

fn run_file(file: &str, cases: &[PoolCase], kernel: Kernel) {
    assert!(!cases.is_empty(), "{file} has no cases");
    for oracle in [Oracle::Tflm, Oracle::TfliteRef] {
        let mut elements = 0;
        for c in cases {
            let p = prepare(c);
            let expected = c.expected(oracle).i8();
            let mut out = vec![0i8; expected.len()];
            kernel(&p, &c.input.i8(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            elements += assert_bit_exact(&format!("{} vs {oracle:?}", c.name), &expected, &out);
        }
        println!("{file}: {} cases, {elements} elements vs {oracle:?}: all bit-exact", cases.len());
    }
}

#[test]
fn max_pool_s8_matches_tflite_micro_and_interpreter() {
    run_file("max_pool_2d.json", &kernels::max_pool_2d_cases(), max_pool_s8);
}

#[test]
fn avg_pool_s8_matches_tflite_micro_and_interpreter() {
    run_file("average_pool_2d.json", &kernels::average_pool_2d_cases(), avg_pool_s8);
}

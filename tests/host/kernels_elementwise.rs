//! ADD (int8 and 16x8) and MUL (int8) against the golden outputs of TFLite Micro and of the
//! TFLite interpreter's reference kernels (`tests/golden/kernels/{add,add_16x8,mul}.json`), bit
//! for bit, in both rounding modes: `Rounding::Double` against TFLite Micro, `Rounding::Single`
//! against the interpreter (`BUILTIN_REF`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "ADD / MUL: Input 0 and Input 1:
//! data type int8, range [-128, 127], granularity per-tensor; Output 0: data type int8, range
//! [-128, 127], granularity per-tensor." In 16x8 mode activations are int16 with zero point 0.
//!
//! Every case runs through microquant's prepare (multipliers from the float scales, the
//! activation clamp, the broadcast) and kernel; every element of every case must match: the
//! tests of `microquant_tests::oracle::binary`, instantiated for the host.

use microquant::kernels::mul::MulParams;
use microquant::kernels::tensor::PerTensorQuant;
use microquant::kernels::{ActivationRange, Rounding};
use microquant_tests::kernels;

microquant_tests::binary_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

/// The two ways of computing MUL's multiplier (`f64` products in TFLite Micro, `f32` in the
/// interpreter) are both exercised: report on how many golden cases they differ.
#[test]
fn mul_multiplier_modes_are_both_exercised() {
    let cases = kernels::mul_cases();
    let differing = cases
        .iter()
        .filter(|c| {
            let (q1, q2, qo) = (
                PerTensorQuant::new(c.input1_scale, c.input1_zero_point),
                PerTensorQuant::new(c.input2_scale, c.input2_zero_point),
                PerTensorQuant::new(c.output_scale, c.output_zero_point),
            );
            let a = ActivationRange::INT8;
            let d = MulParams::prepare_s8(q1, q2, qo, a, &c.input1.shape, &c.input2.shape, Rounding::Double).unwrap();
            let s = MulParams::prepare_s8(q1, q2, qo, a, &c.input1.shape, &c.input2.shape, Rounding::Single).unwrap();
            d.output_multiplier != s.output_multiplier
        })
        .count();
    println!("MUL: the f32 and f64 multipliers differ in {differing} of {} golden cases", cases.len());
}

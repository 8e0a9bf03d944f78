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
//! activation clamp, the broadcast) and kernel; every element of every case must match.

use microquant::kernels::add::{AddParams, add_s8, add_s16};
use microquant::kernels::common::FusedActivation;
use microquant::kernels::mul::{MulParams, mul_s8};
use microquant::kernels::tensor::TensorQuant;
use microquant::kernels::{ActivationRange, Rounding};
use microquant_tests::golden::assert_bit_exact;
use microquant_tests::kernels::{self, Activation, BinaryCase, KernelCase, KernelFile, Oracle};

fn fused(a: Activation) -> FusedActivation {
    match a {
        Activation::None => FusedActivation::None,
        Activation::Relu => FusedActivation::Relu,
        Activation::Relu6 => FusedActivation::Relu6,
        Activation::ReluN1To1 => FusedActivation::ReluN1To1,
    }
}

const MODES: [(Rounding, Oracle); 2] = [(Rounding::Double, Oracle::Tflm), (Rounding::Single, Oracle::TfliteRef)];

struct Quant {
    q1: TensorQuant,
    q2: TensorQuant,
    qo: TensorQuant,
}

fn quant(c: &BinaryCase) -> Quant {
    Quant {
        q1: TensorQuant::new(c.input1_scale, c.input1_zero_point),
        q2: TensorQuant::new(c.input2_scale, c.input2_zero_point),
        qo: TensorQuant::new(c.output_scale, c.output_zero_point),
    }
}

/// Runs every case of `file` in both modes; returns the elements checked per mode.
fn run_file(
    file: KernelFile<BinaryCase>,
    dtype: ActivationRange,
    mut run: impl FnMut(&BinaryCase, Rounding, ActivationRange, Oracle) -> usize,
) -> [usize; 2] {
    assert!(!file.cases.is_empty());
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let act = ActivationRange::from_fused(fused(c.activation), c.output_scale, c.output_zero_point, dtype)
            .unwrap_or_else(|e| panic!("{}: activation range: {e}", c.name));
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            checked[i] += run(c, rounding, act, oracle);
        }
    }
    // The golden file's own count of elements: every one was compared, in each mode.
    assert_eq!(checked, [file.stats.elements; 2], "{}: elements checked", file.op);
    checked
}

fn report(name: &str, cases: usize, checked: [usize; 2]) {
    println!(
        "{name}: {cases} cases, {} elements bit-exact vs TFLite Micro (Double), {} vs TFLite BUILTIN_REF (Single)",
        checked[0], checked[1]
    );
}

#[test]
fn add_int8_matches_both_oracles() {
    let file = kernels::add_file();
    let n = file.cases.len();
    let checked = run_file(file, ActivationRange::INT8, |c, rounding, act, oracle| {
        let q = quant(c);
        let p = AddParams::prepare_s8(q.q1, q.q2, q.qo, act, &c.input1.shape, &c.input2.shape, rounding)
            .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
        let expected = c.expected(oracle);
        assert_eq!(p.broadcast.output_shape().dims(), &expected.shape[..], "{}: output shape", c.name);
        let mut out = vec![0i8; expected.len()];
        add_s8(&p, &c.input1.i8(), &c.input2.i8(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out)
    });
    report("ADD int8", n, checked);
}

#[test]
fn add_16x8_matches_both_oracles() {
    let file = kernels::add_16x8_file();
    let n = file.cases.len();
    let checked = run_file(file, ActivationRange::INT16, |c, rounding, act, oracle| {
        let q = quant(c);
        let p = AddParams::prepare_s16(q.q1, q.q2, q.qo, act, &c.input1.shape, &c.input2.shape, rounding)
            .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
        let expected = c.expected(oracle);
        assert_eq!(p.broadcast.output_shape().dims(), &expected.shape[..], "{}: output shape", c.name);
        let mut out = vec![0i16; expected.len()];
        add_s16(&p, &c.input1.i16(), &c.input2.i16(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i16(), &out)
    });
    report("ADD 16x8", n, checked);
}

#[test]
fn mul_int8_matches_both_oracles() {
    let file = kernels::mul_file();
    let n = file.cases.len();
    let checked = run_file(file, ActivationRange::INT8, |c, rounding, act, oracle| {
        let q = quant(c);
        let p = MulParams::prepare_s8(q.q1, q.q2, q.qo, act, &c.input1.shape, &c.input2.shape, rounding)
            .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
        let expected = c.expected(oracle);
        assert_eq!(p.broadcast.output_shape().dims(), &expected.shape[..], "{}: output shape", c.name);
        let mut out = vec![0i8; expected.len()];
        mul_s8(&p, &c.input1.i8(), &c.input2.i8(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out)
    });
    report("MUL int8", n, checked);
}

/// The two ways of computing MUL's multiplier (`f64` products in TFLite Micro, `f32` in the
/// interpreter) are both exercised: report on how many golden cases they differ.
#[test]
fn mul_multiplier_modes_are_both_exercised() {
    let cases = kernels::mul_cases();
    let differing = cases
        .iter()
        .filter(|c| {
            let q = quant(c);
            let a = ActivationRange::INT8;
            let d =
                MulParams::prepare_s8(q.q1, q.q2, q.qo, a, &c.input1.shape, &c.input2.shape, Rounding::Double).unwrap();
            let s =
                MulParams::prepare_s8(q.q1, q.q2, q.qo, a, &c.input1.shape, &c.input2.shape, Rounding::Single).unwrap();
            d.output_multiplier != s.output_multiplier
        })
        .count();
    println!("MUL: the f32 and f64 multipliers differ in {differing} of {} golden cases", cases.len());
}

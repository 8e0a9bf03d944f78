//! SOFTMAX (int8 and 16x8) against the golden outputs of TFLite Micro and of the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/{softmax,softmax_16x8}.json`), bit for
//! bit, in both rounding modes: `Rounding::Double` against TFLite Micro, `Rounding::Single`
//! against the interpreter (`BUILTIN_REF`).
//!
//! The TFLite int8 quantization spec, as these cases follow it: "SOFTMAX: Input 0: data type
//! int8, range [-128, 127], granularity per-tensor; Output 0: data type int8, range [-128, 127],
//! granularity per-tensor, restriction (scale, zero_point) = (1.0 / 256.0, -128)". In 16x8 mode
//! the output is `(1/32768, 0)`.
//!
//! The int16 softmax uses two tables TFLite generates with float math at prepare time: TFLite
//! Micro in `f32` (with the C library's `expf`), the interpreter in `f64`. microquant builds
//! both ([`SoftmaxS16Luts`]); the cases below check the kernels built on each.

use microquant::kernels::Rounding;
use microquant::kernels::softmax::{SoftmaxParams, SoftmaxS16Luts, SoftmaxS16Params, softmax_s8, softmax_s16};
use microquant::kernels::tensor::TensorQuant;
use microquant_tests::golden::assert_bit_exact;
use microquant_tests::kernels::{self, KernelCase, Oracle};

const MODES: [(Rounding, Oracle); 2] = [(Rounding::Double, Oracle::Tflm), (Rounding::Single, Oracle::TfliteRef)];

#[test]
fn softmax_int8_matches_both_oracles() {
    let file = kernels::softmax_file();
    assert!(!file.cases.is_empty());
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let depth = *c.input.shape.last().expect("softmax input has a last dimension");
        let input = TensorQuant::new(c.input_scale, c.input_zero_point);
        let output = TensorQuant::new(c.output_scale, c.output_zero_point);
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            let p = SoftmaxParams::prepare_s8(input, output, c.beta, depth, rounding)
                .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
            let expected = c.expected(oracle);
            let mut out = vec![0i8; expected.len()];
            softmax_s8(&p, &c.input.i8(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i8(), &out);
        }
    }
    assert_eq!(checked, [file.stats.elements; 2]);
    println!(
        "SOFTMAX int8: {} cases, {} elements bit-exact vs TFLite Micro (Double), {} vs TFLite BUILTIN_REF (Single)",
        file.cases.len(),
        checked[0],
        checked[1]
    );
}

#[test]
fn softmax_16x8_matches_both_oracles() {
    let file = kernels::softmax_16x8_file();
    assert!(!file.cases.is_empty());
    let luts = [SoftmaxS16Luts::new(Rounding::Double), SoftmaxS16Luts::new(Rounding::Single)];
    let mut checked = [0usize; 2];
    for c in &file.cases {
        let depth = *c.input.shape.last().expect("softmax input has a last dimension");
        let input = TensorQuant::new(c.input_scale, c.input_zero_point);
        let output = TensorQuant::new(c.output_scale, c.output_zero_point);
        for (i, &(rounding, oracle)) in MODES.iter().enumerate() {
            let p = SoftmaxS16Params::prepare(input, output, c.beta, depth, rounding, &luts[i])
                .unwrap_or_else(|e| panic!("{}: prepare: {e}", c.name));
            let expected = c.expected(oracle);
            let mut out = vec![0i16; expected.len()];
            softmax_s16(&p, &c.input.i16(), &mut out).unwrap_or_else(|e| panic!("{}: {e}", c.name));
            checked[i] += assert_bit_exact(&format!("{} ({rounding:?} vs {oracle:?})", c.name), &expected.i16(), &out);
        }
    }
    assert_eq!(checked, [file.stats.elements; 2]);
    println!(
        "SOFTMAX 16x8: {} cases, {} elements bit-exact vs TFLite Micro (Double), {} vs TFLite BUILTIN_REF (Single)",
        file.cases.len(),
        checked[0],
        checked[1]
    );
}

/// How far apart the two oracles' int16 tables are (they agree on every golden output; the
/// tables themselves differ in a few entries by one).
#[test]
fn softmax_16x8_tables_of_the_two_oracles() {
    let d = SoftmaxS16Luts::new(Rounding::Double);
    let s = SoftmaxS16Luts::new(Rounding::Single);
    let diff = |a: &[i16], b: &[i16]| a.iter().zip(b).filter(|(x, y)| x != y).count();
    let max = |a: &[i16], b: &[i16]| a.iter().zip(b).map(|(&x, &y)| (x as i32 - y as i32).abs()).max().unwrap_or(0);
    println!(
        "int16 softmax tables, f32 (TFLite Micro) vs f64 (interpreter): exp differs in {} of 513 entries (max {}), 1/(1+x) in {} (max {})",
        diff(&d.exp, &s.exp),
        max(&d.exp, &s.exp),
        diff(&d.one_over_one_plus_x, &s.one_over_one_plus_x),
        max(&d.one_over_one_plus_x, &s.one_over_one_plus_x)
    );
    assert!(max(&d.exp, &s.exp) <= 1 && max(&d.one_over_one_plus_x, &s.one_over_one_plus_x) <= 1);
}

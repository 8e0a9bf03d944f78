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
//! both ([`SoftmaxS16Luts`]); the golden tests (`microquant_tests::oracle::softmax`,
//! instantiated for the host) check the kernels built on each.

use microquant::kernels::Rounding;
use microquant::kernels::softmax::SoftmaxS16Luts;

microquant_tests::softmax_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

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

//! LEAKY_RELU (int8 and 16x8) against the golden outputs of TFLite Micro and of the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/leaky_relu{,_16x8}.json`), bit for
//! bit, in both rounding modes: `Rounding::Double` against TFLite Micro (multipliers divided in
//! `double`), `Rounding::Single` against the interpreter (multipliers divided in `float`). The
//! tests are those of `microquant_tests::oracle::leaky_relu`, instantiated for the host.

microquant_tests::leaky_relu_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

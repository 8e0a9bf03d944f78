//! TRANSPOSE_CONV kernels (int8 and 16x8) against the golden outputs of TFLite Micro and of the
//! TFLite interpreter's reference kernels (`tests/golden/kernels/transpose_conv*.json`), bit for
//! bit, in both rounding modes: the tests of `microquant_tests::oracle::transpose_conv`,
//! instantiated for the host.

microquant_tests::transpose_conv_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

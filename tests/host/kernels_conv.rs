//! Conv2D kernels (int8 and 16x8) against the golden outputs of TFLite Micro and of the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/conv_2d*.json`), bit for bit, in both
//! rounding modes and through every kernel path: the tests of `microquant_tests::oracle::conv`,
//! instantiated for the host.

microquant_tests::conv_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

//! Depthwise conv2D kernels (int8 and 16x8) against the golden outputs of TFLite Micro and of the
//! TFLite interpreter's reference kernels (`tests/golden/kernels/depthwise_conv_2d*.json`), bit
//! for bit, in both rounding modes and through every kernel path: the tests of
//! `microquant_tests::oracle::depthwise`, instantiated for the host.

microquant_tests::depthwise_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

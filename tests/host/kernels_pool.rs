//! Pooling kernels against the golden outputs of TFLite Micro and of the TFLite interpreter's
//! reference kernels (`tests/golden/kernels/{max,average}_pool_2d.json`), bit for bit: the tests
//! of `microquant_tests::oracle::pooling`, instantiated for the host.

microquant_tests::pool_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

//! Data movement and reduction: CONCATENATION, PAD, MEAN, RESHAPE and TRANSPOSE (int8) against
//! the golden outputs of TFLite Micro and of the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/{concatenation,pad,mean,reshape,transpose}.json`), bit for bit, in both
//! rounding modes: the tests of `microquant_tests::oracle::shape`, instantiated for the host.

microquant_tests::shape_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

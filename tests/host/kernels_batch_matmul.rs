//! BATCH_MATMUL (int8 and 16x16) against the golden outputs of TFLite Micro and of the TFLite
//! interpreter's reference kernels (`tests/golden/kernels/batch_matmul{,_16x8}.json`), bit for
//! bit. The tests are those of `microquant_tests::oracle::batch_matmul`, instantiated for the host.

microquant_tests::batch_matmul_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

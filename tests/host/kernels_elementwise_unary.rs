//! RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, ABS (int8, int16), NEG, RSQRT, ELU (int8) against the
//! golden outputs of TFLite Micro and of the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/{relu,relu_16x8,abs,abs_16x8,neg,rsqrt,elu}.json`, from
//! `tests/gen/kernels/gen_unary.py`), bit for bit, in both rounding modes. The tests are
//! those of `microquant_tests::oracle::elementwise_unary`, instantiated for the host.

microquant_tests::elementwise_unary_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

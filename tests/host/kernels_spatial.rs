//! Spatial ops: RESIZE_NEAREST_NEIGHBOR (int8, int16) and RESIZE_BILINEAR (int8) against the
//! golden outputs of TFLite Micro and of the TFLite interpreter's reference kernels
//! (`tests/golden/kernels/resize_*.json`), bit for bit, in both rounding modes: the tests of
//! `microquant_tests::oracle::spatial`, instantiated for the host.

microquant_tests::spatial_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

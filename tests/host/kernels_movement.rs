//! Data movement: SLICE, STRIDED_SLICE and BROADCAST_TO (int8 and int16), DEPTH_TO_SPACE, SPACE_TO_DEPTH,
//! MIRROR_PAD and GATHER (int8: TFLite Micro has no int16 kernel) against the golden outputs of TFLite Micro and of the
//! TFLite interpreter's reference kernels (`tests/golden/kernels/{slice,strided_slice,broadcast_to}{,_16}.json`,
//! `{depth_to_space,space_to_depth,mirror_pad,gather}.json`), bit for bit, in both rounding modes: the tests of `microquant_tests::oracle::movement`, instantiated for the host.

microquant_tests::movement_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

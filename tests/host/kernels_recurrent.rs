//! UNIDIRECTIONAL_SEQUENCE_LSTM (int8 8x8→16 and 16x8) against TFLite Micro's outputs
//! (`tests/golden/kernels/{lstm,lstm_16x8}.json`), bit for bit, including sequences TFLite Micro
//! ran as several invokes with the state carried between them (streaming), and the same
//! sequences through our kernel in one call and one step per call
//! (`microquant_tests::oracle::recurrent`).

microquant_tests::lstm_golden_tests!(
    mod golden;
    #[test]
    target microquant_tests::oracle::Std;
    files microquant_tests::oracle::golden
);

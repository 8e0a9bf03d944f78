//! On the device: the MLPerf Tiny anomaly-detection model (FC autoencoder), converted by
//! `build.rs`, gives outputs bit-identical to TFLite Micro on its seeded inputs
//! (`tests/golden/models/`). On a board without room for it the binary prints `SKIPPED: ad does not
//! fit <board> (...)` and runs nothing. The test is `microquant_firmware::model_test!`.
#![no_std]
#![no_main]

microquant_firmware::model_test!(ad: AD, AD_ARENA_LEN);

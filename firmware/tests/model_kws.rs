//! On the device: the MLPerf Tiny keyword-spotting model (DS-CNN), converted by `build.rs`, gives
//! outputs bit-identical to TFLite Micro on its seeded inputs (`tests/golden/models/`). On a board
//! without room for it the binary prints `SKIPPED: kws does not fit <board> (...)` and runs
//! nothing. The test is `microquant_firmware::model_test!`.
#![no_std]
#![no_main]

microquant_firmware::model_test!(kws: KWS, KWS_ARENA_LEN);

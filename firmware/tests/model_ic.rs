//! On the device: the MLPerf Tiny image-classification model (ResNet-8), converted by `build.rs`,
//! gives outputs bit-identical to TFLite Micro on its seeded inputs (`tests/golden/models/`). On a
//! board without room for it the binary prints `SKIPPED: ic does not fit <board> (...)` and runs
//! nothing. The test is `microquant_firmware::model_test!`.
#![no_std]
#![no_main]

microquant_firmware::model_test!(ic: IC, IC_ARENA_LEN);
